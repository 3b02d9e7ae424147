"""Huge and hashed feature indices on a cluster (--scheduler): the shards' distinct
columns are merged and the run renumbered to them by the single machine's rule, so that
it is the run of the file's compact twin (indices 1..d in the same order), byte for byte,
and the model file holds the original indices.

In-process for the rules (any sharding, shards that renumber and shards that do not, a
width that does not pay); through the commands on real local clusters for the promise.
"""

import functools
import gzip
import re

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import run_cli
from test_distributed import (
    InProcessSession,
    file_shards,
    make_binary,
    make_multiclass,
    model_bytes,
)

from cpsvm import columns
from cpsvm.cluster import session as cluster_session
from cpsvm.cluster import shards as cluster_shards
from cpsvm.cluster.session import ShardedData
from cpsvm.cluster.solver import train_ocas, train_struct
from cpsvm.data import Dataset
from cpsvm.io.model_file import read_model
from cpsvm.io.svmlight import read_examples, write_svmlight
from cpsvm.solvers.ocas import OcasParams
from cpsvm.solvers.one_slack import StructParams

pytestmark = pytest.mark.usefixtures("own_tmpdir")  # tests/conftest.py

# The compact columns' original 0-based indices: the first 15 below 2^20 (a shard of rows
# using only those keeps the file's indices), the others huge; the largest is 9e15 - 1.
SMALL = np.array(
    [0, 2, 6, 40, 99, 500, 1000, 4096, 9999, 20000, 65535, 100000, 300000, 2**19, 2**20 - 2]
)
HUGE = np.array(
    [2**31 + 4, 2**32, 2**33 + 7, 5 * 10**10, 2**36, 2**38 + 1, 2**39, 2**40 - 1, 2**45,
     10**15, 2**50, 4 * 10**15, 2**52 + 3, 2**52 + 2**51, 9 * 10**15 - 1]
)  # fmt: skip
IDS = np.concatenate([SMALL, HUGE])
assert np.all(np.diff(IDS) > 0)
NARROW_ROWS = 150  # rows 0..149 use the SMALL columns only


def shaped(X):
    """X with the rows of the narrow part limited to the SMALL columns."""
    X = sp.csr_matrix(X, copy=True)
    narrow = np.zeros(X.shape[1], bool)
    narrow[: len(SMALL)] = True
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    X.data[(rows < NARROW_ROWS) & ~narrow[X.indices]] = 0.0
    X.eliminate_zeros()
    return X


def hashed(X):
    """X's columns j at their original indices IDS[j]."""
    return sp.csr_matrix((X.data, IDS[X.indices], X.indptr), shape=(X.shape[0], IDS[-1] + 1))


def write_pair(root, name, X, y):
    write_svmlight(str(root / f"{name}.compact.svm"), X, y)
    write_svmlight(str(root / f"{name}.hashed.svm"), hashed(X), y)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Binary and multiclass sets, each with a compact and a hashed file; the hashed binary
    also as three shard files (the first narrow, the second gzipped)."""
    root = tmp_path_factory.mktemp("hashed")
    X, y = make_binary(d=len(IDS))
    write_pair(root, "binary", shaped(X), y)
    text = (root / "binary.hashed.svm").read_bytes().splitlines(keepends=True)
    for i, (a, b) in enumerate([(0, NARROW_ROWS), (NARROW_ROWS, 420), (420, len(text))]):
        part = b"".join(text[a:b])
        if i == 1:
            (root / f"part-{i}.svm.gz").write_bytes(gzip.compress(part))
        else:
            (root / f"part-{i}.svm").write_bytes(part)
    Xm, ym = make_multiclass(d=len(IDS))
    write_pair(root, "multi", Xm, ym)
    return root


def with_ids(model, tmp_path):
    """The compact run's model file, written with the original indices."""
    model.feature_ids = IDS
    return model_bytes(model, tmp_path, "compact-as-hashed")


def train(kind, data):
    if kind == "ocas":
        return train_ocas(data, OcasParams(C=1.0))
    return train_struct(data, StructParams(C=10.0, algorithm=int(kind)))


@pytest.mark.parametrize(
    "kind,name", [("ocas", "binary"), ("ocas", "multi"), ("3", "binary"), ("9", "multi")]
)
def test_hashed_shards_train_the_compact_twin(files, tmp_path, kind, name):
    """1, 2 and 3 byte ranges of the hashed file (and, binary, its three shard files, the
    first of small indices only: a shard that keeps the file's indices beside ones that
    renumber their own) renumber to the file's distinct columns, as a plain run reads
    it, and write the compact twin's model, in the original indices, byte for byte."""
    hashed_file = files / f"{name}.hashed.svm"
    assert read_examples(str(hashed_file)).feature_ids.tolist() == IDS.tolist()
    models = set()
    for parts in (1, 2, 3, "glob") if name == "binary" else (1, 2, 3):
        if parts == "glob":
            data = file_shards(files / "part-*.svm*", 1)
            assert [x["width"] < columns.REMAP_MIN_WIDTH for x in data.summaries] == [
                True,
                False,
                False,
            ]
        else:
            data = file_shards(hashed_file, parts)
        assert data.feature_ids.tolist() == IDS.tolist() and data.n_features == len(IDS)
        model, info = train(kind, data)
        models.add(model_bytes(model, tmp_path))
    assert len(models) == 1
    compact, _ = train(kind, file_shards(files / f"{name}.compact.svm", 2))
    assert models == {with_ids(compact, tmp_path)}
    written = read_model(str(tmp_path / "m"))
    assert written.feature_ids.tolist() == IDS.tolist()


def block(rng, n, cols, width, zero_below=-1):
    """n rows over the columns ``cols`` (half of them each), values stored as 0 in the
    columns below ``zero_below``."""
    X = sp.random(n, len(cols), density=0.5, random_state=rng, format="csr")
    X.data = rng.standard_normal(X.nnz)
    indices = np.asarray(cols)[X.indices]
    X.data[indices < zero_below] = 0.0
    return sp.csr_matrix((X.data, indices, X.indptr), shape=(n, width))


def threshold(monkeypatch, width):
    for module in (columns, cluster_session, cluster_shards):
        monkeypatch.setattr(module, "REMAP_MIN_WIDTH", width)


def in_process(X, y, cuts):
    return ShardedData(
        InProcessSession(), [functools.partial(as_read, X, y, a, b) for a, b in zip(cuts, cuts[1:])]
    )


@pytest.mark.parametrize("case", ["union pays", "dense", "union does not pay"])
def test_union_and_width_rules(monkeypatch, tmp_path, case):
    """The single machine's rule on the union of the shards (REMAP_MIN_WIDTH 64 here):
    - a width of 1000 over 25 distinct columns: renumbered, though one shard (20 columns
      in 0..41) keeps its columns and lists them (a column of stored zeros only counts);
      the other renumbers its own;
    - a dense file (two shards over 0..99): kept, settled by the shards' bounds without
      asking them for their columns;
    - a width of 100 over 52 columns, half of one shard's stored as zeros (so the bounds
      cannot settle it): kept, and the shard that had renumbered its own goes back.
    The model is the compact twin's (renumbered) or the run's that never renumbers."""
    threshold(monkeypatch, 64)
    rng = np.random.default_rng(4)
    bitmaps = []
    if case == "union pays":
        top = block(rng, 100, [*range(0, 40, 2), 41], 1000, zero_below=-1)
        top.data[top.indices == 41] = 0.0
        bottom = block(rng, 30, [7, 45, 300, 999], 1000)
        bottom.data[bottom.indices == 7] = 0.0
        expected = [*range(0, 40, 2), 41, 7, 45, 300, 999]
        own = [False, True]
    elif case == "dense":
        top, bottom = block(rng, 100, range(100), 100), block(rng, 100, range(100), 100)
        expected, own = None, [False, False]

        def refused(*args):
            raise AssertionError("the bounds settle a dense file")

        monkeypatch.setattr(cluster_session, "shard_columns", refused)
        summarize = cluster_session.summarize_shard

        def noting_bitmaps(shard):
            summary = summarize(shard)
            bitmaps.append(summary["present"] is not None)
            return summary

        monkeypatch.setattr(cluster_session, "summarize_shard", noting_bitmaps)
    else:
        top = block(rng, 100, range(50), 100, zero_below=25)
        bottom = block(rng, 20, [1, 50, 99], 100)
        expected, own = None, [False, True]
    X = sp.csr_matrix(sp.vstack([top, bottom]))
    assert X.nnz == top.nnz + bottom.nnz  # (the zeros stored)
    y = np.where(rng.standard_normal(X.shape[0]) > 0, 1.0, -1.0)
    cuts = [0, top.shape[0], X.shape[0]]
    data = in_process(X, y, cuts)
    assert [f.value.columns is not None for f in data.loaded] == own
    if case == "dense":  # wide shards that kept their columns: each sent its bitmap
        assert bitmaps == [True, True]
    model, _ = train_ocas(data, OcasParams(C=1.0))
    if expected is not None:
        expected = np.unique(expected)
        assert data.feature_ids.tolist() == model.feature_ids.tolist() == expected.tolist()
        compact = sp.csr_matrix(
            (X.data, np.searchsorted(expected, X.indices), X.indptr),
            shape=(X.shape[0], len(expected)),
        )
        reference, _ = train_ocas(in_process(compact, y, [0, X.shape[0]]), OcasParams(C=1.0))
        reference.feature_ids = expected
    else:
        assert data.feature_ids is None and model.feature_ids is None
        assert model.n_features == X.indices.max() + 1
        threshold(monkeypatch, 1 << 20)
        reference, _ = train_ocas(in_process(X, y, cuts), OcasParams(C=1.0))
    assert model_bytes(model, tmp_path, "a") == model_bytes(reference, tmp_path, "b")


def as_read(X, y, lo, hi):
    """Rows lo..hi-1 of X as a file of them reads: its width the largest index + 1."""
    X = sp.csr_matrix(X[lo:hi])
    X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(hi - lo, X.indices.max() + 1))
    return Dataset(X=X, y=y[lo:hi], source="<memory>", line_numbers=np.arange(lo, hi) + 1)


def classify(model_path, test_file, out):
    r = run_cli("classify", test_file, model_path, out)
    assert r.returncode == 0, r.stderr
    return np.loadtxt(out, ndmin=1), r.stdout


@pytest.mark.parametrize(
    "command,name", [("ocas", "binary"), ("learn", "binary"), ("learn", "multi")]
)
def test_cli_hashed_file_on_a_local_cluster(files, tmp_path, command, name):
    """ocas_learn and cp_learn (-w 9, binary and multiclass) with --scheduler local:2 on
    the hashed file (two byte ranges): the model file is the compact twin's cluster
    model in the original indices; against the plain run on the same file, the same
    columns and header and, within the difference the README states for local:1 (exact
    sums against the single machine's float ones), the same objective and predictions
    of the original file."""
    source = files / f"{name}.hashed.svm"
    options = ["-c", 1] if command == "ocas" else ["-c", 10, "-w", 9]
    cluster_model, plain_model = tmp_path / "cluster.model", tmp_path / "plain.model"
    r = run_cli(command, "--scheduler", "local:2", *options, source, cluster_model)
    assert r.returncode == 0, r.stderr
    assert "Cluster: 2 shards" in r.stdout
    if command == "ocas":
        compact, _ = train_ocas(file_shards(files / f"{name}.compact.svm", 1), OcasParams(C=1.0))
    else:
        compact, _ = train_struct(
            file_shards(files / f"{name}.compact.svm", 1), StructParams(C=10.0, algorithm=9)
        )
    assert cluster_model.read_bytes() == with_ids(compact, tmp_path)
    plain = run_cli(command, *options, source, plain_model)
    assert plain.returncode == 0, plain.stderr
    key = "Q_P" if command == "ocas" else "pval"
    tolerance = 0.01 if command == "ocas" else 10 * 0.1
    assert abs(objective(r.stdout, key) - objective(plain.stdout, key)) <= tolerance * (
        objective(plain.stdout, key) if command == "ocas" else 1
    )
    ours, theirs = read_model(str(cluster_model)), read_model(str(plain_model))
    assert ours.feature_ids.tolist() == theirs.feature_ids.tolist() == IDS.tolist()

    # the header (highest feature index, classes, ...): all but the weights (the line of
    # the support vector, and b, which the bias feature gives cp_learn's binary models)
    def header(path):
        return [line for line in path.read_text().splitlines()[:-1] if "threshold b" not in line]

    assert header(cluster_model) == header(plain_model)
    ours_pred, ours_out = classify(cluster_model, source, tmp_path / "a.pred")
    theirs_pred, theirs_out = classify(plain_model, source, tmp_path / "b.pred")
    if name == "binary":
        assert np.array_equal(np.sign(ours_pred), np.sign(theirs_pred))
        assert np.allclose(ours_pred, theirs_pred, rtol=1e-3, atol=1e-3)
    else:
        assert np.array_equal(ours_pred[:, 0], theirs_pred[:, 0])
    assert accuracy_line(ours_out) == accuracy_line(theirs_out)


def objective(stdout, key):
    return float(re.search(rf"{key}[:=]\s*([-0-9.e+]+)", stdout).group(1))


def accuracy_line(stdout):
    return [line for line in stdout.splitlines() if "ccuracy" in line]
