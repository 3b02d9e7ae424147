"""The shards' partial results added on the workers (cpsvm/cluster/partials.py and
rounds.py): exact in any order, sparse where a shard touches few rows, bounded samples;
and a round's traffic as the client sees it: w sent once, one result received."""

import itertools
import math

import numpy as np
import pytest
from test_distributed import InProcessClient, InProcessSession, make_binary, model_bytes, sharded

from cpsvm.cluster import numerics, partials, rounds
from cpsvm.cluster.solver import train_ocas
from cpsvm.solvers.ocas import OcasParams

pytestmark = pytest.mark.usefixtures("own_tmpdir")  # tests/conftest.py


def shard_partial(rng, sig, rows, terms):
    """A packed accumulator with ``terms`` random terms deposited into ``rows``."""
    acc, shift = numerics.packed_accumulator(sig)
    values = rng.standard_normal(terms) * np.exp(rng.uniform(-30, 5, terms))
    at = rng.choice(rows, terms)
    for j, v in zip(at, values):
        numerics.deposit(acc[:, 1:], sig, j, v, 1.0)
    return acc, at, values


def tree_sum(parts, order):
    """The parts added pairwise along the tree of ``order`` (a permutation)."""
    level = [parts[i] for i in order]
    while len(level) > 1:
        paired = [partials.add_folds(a, b) for a, b in zip(level[::2], level[1::2])]
        level = paired + level[len(paired) * 2 :]
    return partials.dense_folds(level[0])


def test_folds_add_to_the_same_bits_in_any_order_dense_or_sparse():
    """Six shards, some touching few rows (sparse), some many (dense): every order of
    the tree gives the bits of the plain dense sum, and each row's total is the exact
    sum of its terms (math.fsum) to the grid's last fold."""
    rng = np.random.default_rng(3)
    size = 400
    sig = numerics.fold_grid(np.full(size, 40.0), 10_000)
    parts, terms = [], {}
    for k in range(6):
        rows = np.sort(rng.choice(size, 20 if k % 2 else 350, replace=False))
        acc, at, values = shard_partial(rng, sig, rows, 300)
        parts.append(partials.cut_folds(acc, partials.touched_rows(rows, size)))
        for j, v in zip(at, values):
            terms.setdefault(j, []).append(v)
    assert [isinstance(p, partials.SparseFolds) for p in parts] == [False, True] * 3
    dense = sum(partials.dense_folds(p) for p in parts)
    for order in itertools.islice(itertools.permutations(range(6)), 0, 720, 37):
        assert tree_sum(parts, order).tobytes() == dense.tobytes()
    total = numerics.fold_value(dense)
    for j in range(size):
        exact = math.fsum(terms.get(j, []))
        assert abs(total[j] - exact) <= 2 * sig[j, -1] * 2.0**-52 * 10_000


def test_sparse_partials_stay_sparse_while_the_union_is_small():
    a = partials.SparseFolds(np.array([1, 5]), np.ones((2, 2)), 100)
    b = partials.SparseFolds(np.array([5, 9]), np.ones((2, 2)), 100)
    both = partials.add_folds(a, b)
    assert isinstance(both, partials.SparseFolds) and both.rows.tolist() == [1, 5, 9]
    assert both.values[:, 0].tolist() == [1.0, 2.0, 1.0]
    wide = partials.SparseFolds(np.arange(0, 100, 2), np.ones((50, 2)), 100)
    assert not isinstance(partials.add_folds(wide, b), partials.SparseFolds)
    # the rows a shard can touch: Crammer-Singer's k per column, the bias row
    assert partials.touched_rows([0, 3], 40, n_classes=3).tolist() == [0, 1, 2, 9, 10, 11]
    assert partials.touched_rows([2, 7], 11, bias_row=10).tolist() == [2, 7, 10]
    assert partials.touched_rows(np.arange(6), 11) is None  # more than half: dense


def test_samples_are_thinned_to_the_cap_keeping_the_ends():
    rng = np.random.default_rng(1)
    samples = np.full((4, 40), np.nan)
    samples[0, :30] = rng.uniform(0, 1, 30)
    samples[1, :3] = [0.5, 0.2, 0.9]
    samples[3, 5:25] = rng.uniform(2, 3, 20)
    thin = partials.thin_samples(samples, 8)
    assert thin.shape == (4, 8)
    for row, kept in zip(samples, thin):
        valid = row[~np.isnan(row)]
        got = kept[~np.isnan(kept)]
        assert set(got) <= set(valid)
        if len(valid):
            assert got.min() == valid.min() and got.max() == valid.max()
            assert len(set(got)) == min(8, len(valid))
        else:
            assert not len(got)


class RecordingClient(InProcessClient):
    """The in-process client, recording what each submit carried and each gather
    asked."""

    def __init__(self):
        self.submitted, self.gathered = [], []

    def submit(self, fn, *args, **kw):
        self.submitted.append((fn, args))
        return super().submit(fn, *args, **kw)

    def gather(self, futures):
        self.gathered.append(len(futures))
        return super().gather(futures)

    def who_has(self, futures):
        """Each shard on a worker of its own."""
        return {f.key: [f"worker-{i}"] for i, f in enumerate(futures)}


@pytest.mark.parametrize("shards", [2, 5])
def test_a_round_sends_w_once_and_receives_one_result(tmp_path, monkeypatch, shards):
    """w over SHIP_INLINE travels inside one task, whatever the number of shards (the
    others copy it from a worker), and the client receives one result a round; the
    model is the one of a run that ships every w inline to every shard."""
    X, y = make_binary(n=1200, d=9000, seed=4)
    X.data *= 3.0
    session = InProcessSession()
    session.client = RecordingClient()
    cuts = np.linspace(0, len(y), shards + 1).astype(int)
    data = sharded(X, y, cuts, session)
    params = OcasParams(C=1.0, max_iterations=8)
    session.client.submitted.clear()
    session.client.gathered.clear()
    model, info = train_ocas(data, params)
    assert info.result.iterations == 8
    big = [a for _, args in session.client.submitted for a in args if getattr(a, "nbytes", 0)]
    vectors = [a for a in big if a.nbytes > rounds.SHIP_INLINE]
    assert vectors  # w_t each iteration (and w_b every few)
    for v in vectors:
        assert sum(any(a is v for a in args) for _, args in session.client.submitted) == 1
    assert set(session.client.gathered[1:]) == {1}  # after prepare's: one result a round
    # each w copied onto the workers with workers below them in the tree (the root's
    # copy from the client): the others' tasks fetch it from the copy above them
    copies = [args[0] for fn, args in session.client.submitted if fn is rounds._copy]
    assert len(copies) == (shards // 2) * len(vectors)
    assert sum(c is v for c in copies for v in vectors) == len(vectors)
    monkeypatch.setattr(rounds, "SHIP_INLINE", 1 << 40)
    inline, _ = train_ocas(sharded(X, y, cuts), params)
    assert model_bytes(model, tmp_path) == model_bytes(inline, tmp_path, "inline")


@pytest.mark.parametrize("classes", [0, 3])
def test_shards_of_few_columns_send_sparse_partials(tmp_path, monkeypatch, classes):
    """Four shards, each of its own quarter of the columns (hashed data split by
    source): their cuts travel sparse, and the model is the one of dense partials."""
    import scipy.sparse as sp

    rng = np.random.default_rng(8)
    n, d = 800, 400
    X = sp.random(n, d // 4, density=0.1, random_state=8, format="csr")
    X.data = rng.standard_normal(X.nnz)
    block = np.repeat(np.arange(4), n // 4)  # rows of shard k in columns k·d/4..
    X = sp.csr_matrix(
        (
            X.data,
            X.indices + (d // 4) * block[np.repeat(np.arange(n), np.diff(X.indptr))],
            X.indptr,
        ),
        shape=(n, d),
    )
    scores = X @ rng.standard_normal((d, max(classes, 1)))
    y = np.argmax(scores, axis=1) + 1.0 if classes else np.where(scores[:, 0] > 0, 1.0, -1.0)
    cuts = [0, 200, 400, 600, 800]
    data = sharded(X, y, cuts)
    model, _ = train_ocas(data, OcasParams(C=1.0))
    assert all(s.value.touched is not None for s in data.shards)
    monkeypatch.setattr(partials, "SPARSE_SHARE", 0.0)
    dense_data = sharded(X, y, cuts)
    dense, _ = train_ocas(dense_data, OcasParams(C=1.0))
    assert all(s.value.touched is None for s in dense_data.shards)
    assert model_bytes(model, tmp_path) == model_bytes(dense, tmp_path, "dense")
