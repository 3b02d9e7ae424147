"""Crammer-Singer cuts kept as labellings (ClassCuts) against their dense vectors: the
table's products equal a dense matrix of the cuts kept beside it, and training with it
takes the same iterations to the same objectives as training with the cuts stored as
vectors (CutVectors, the storage of every other problem)."""

import sys

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import ROOT, SAMPLES, crammer_singer_objective

from cpsvm.engine.cuts import ClassCuts
from cpsvm.io.svmlight import read_svmlight
from cpsvm.problems.multiclass import problem as multiclass
from cpsvm.problems.multiclass.problem import MulticlassProblem
from cpsvm.solvers.ocas import OcasParams
from cpsvm.solvers.ocas import train as ocas_train
from cpsvm.solvers.one_slack import StructParams
from cpsvm.solvers.one_slack import train as struct_train

sys.path.insert(0, str(ROOT / "benchmarks"))
from many_classes import many_classes  # noqa: E402


def _delta_psi(X, y, i, c, k):
    """δΨ_i(c) in the (d, k) layout, from its definition."""
    out = np.zeros((X.shape[1], k))
    out[:, y[i] - 1] += X[i]
    out[:, c - 1] -= X[i]
    return out.ravel()


@pytest.mark.parametrize("ones", [False, True])
def test_class_cuts_match_their_dense_vectors(ones):
    rng = np.random.default_rng(5 + ones)
    n, d, k = 40, 15, 5
    X = sp.random(n, d, density=0.3, format="csr", random_state=rng)
    if ones:
        X.data[:] = 1.0
    y = rng.integers(1, k + 1, n)
    weights = rng.uniform(0.5, 2.0, n) * (rng.random(n) < 0.9)  # some weigh nothing
    problem = MulticlassProblem(X, y, n_classes=k)
    table = problem.cut_table(weights)
    assert isinstance(table, ClassCuts)
    dense = X.toarray()
    reference = np.zeros((0, d * k))
    for step in range(30):
        if step % 3 == 2:  # n-slack's cut: one example, its own weight and loss
            i = int(rng.integers(n))
            label = np.array([rng.integers(1, k + 1)])
            cut = table.cut(label, scale=3.0, rows=[i], losses=np.array([7.0]))
            vector = (
                21.0 * weights[i] * _delta_psi(dense, y, i, label[0], k)
                if label[0] != y[i]
                else np.zeros(d * k)
            )
        else:  # 1-slack's: every example
            labels = np.where(rng.random(n) < 0.6, rng.integers(1, k + 1, n), y)
            cut = table.cut(labels, losses=np.where(labels != y, 4.0, 0.0))
            vector = sum(
                4.0 * weights[i] * _delta_psi(dense, y, i, labels[i], k)
                for i in range(n)
                if labels[i] != y[i]
            )
        np.testing.assert_allclose(table.dense(cut), vector, rtol=1e-12, atol=1e-12)
        # The Gram row, both ways of forming it (the same sums in the same order).
        rows_out = []
        for pair_cost in (0.0, np.inf):
            table.PAIR_COST = pair_cost
            rows_out.append(table.gram_row(cut))
        del table.PAIR_COST
        assert np.array_equal(rows_out[0][0], rows_out[1][0])
        assert rows_out[0][1] == rows_out[1][1]
        np.testing.assert_allclose(rows_out[0][0], reference @ vector, rtol=1e-10, atol=1e-12)
        assert rows_out[0][1] == pytest.approx(vector @ vector, rel=1e-10, abs=1e-12)
        table.append(cut)
        reference = np.vstack([reference, vector])
        if step % 7 == 6:  # drop most cuts now and then: the buffers compact
            keep = rng.random(len(reference)) < 0.4
            table.keep(keep)
            reference = reference[keep]
        assert table.size == len(reference)
        np.testing.assert_allclose(table.rows, reference, rtol=1e-12, atol=1e-12)
        alpha = rng.random(len(reference)) * (rng.random(len(reference)) < 0.7)
        np.testing.assert_allclose(table.combine(alpha), alpha @ reference, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="one loss"):
        table.cut(np.where(y == 1, 2, 1), losses=rng.uniform(1.0, 2.0, n))


def _sets():
    small_text = many_classes(300, n_classes=12, n_features=3000, tokens=60, seed=3)
    return {
        "dna": read_svmlight(SAMPLES / "dna1k.train"),
        "satimage": read_svmlight(SAMPLES / "satimage500.train"),
        "text": small_text,
    }


@pytest.fixture(scope="module")
def sets():
    return _sets()


# Runs short enough to be compared bit for bit in effect: OCAS amplifies rounding (the
# two storages sum in other orders) about tenfold every ten iterations, so runs of a
# hundred or more iterations end a few iterations apart.
RUNS = [
    ("dna", "ocas", 0.1),
    ("satimage", "ocas", 1.0),
    ("text", "ocas", 1.0),
    ("dna", 3, 100.0),
    ("satimage", 4, 1000.0),
    ("text", 9, 1e5),
    ("text", 3, 1e5),
    ("satimage", 0, 100.0),
]


@pytest.mark.parametrize("name, solver, C", RUNS)
def test_training_with_class_cuts_equals_dense_cut_vectors(sets, monkeypatch, name, solver, C):
    data = sets[name]

    def run():
        if solver == "ocas":
            return ocas_train(data, OcasParams(C=C, method=1))  # OCAS, libocas's TolRel 0.01
        return struct_train(data, StructParams(C=C, algorithm=solver, epsilon=0.1))

    with monkeypatch.context() as m:
        # dna's and satimage's cut vectors are small: kept so unless told otherwise.
        m.setattr(multiclass, "VECTOR_CUTS", np.inf)
        assert isinstance(
            MulticlassProblem(data.X, data.y).cut_table(np.ones(len(data.y))), ClassCuts
        )
        model, info = run()
    with monkeypatch.context() as m:
        m.delattr(MulticlassProblem, "cut_table")  # the default: the cuts as dense vectors
        model_dense, info_dense = run()
    r, rd = info.result, info_dense.result
    assert r.status == rd.status == "converged"
    assert (r.iterations, r.cuts_added, r.working_set) == (
        rd.iterations,
        rd.cuts_added,
        rd.working_set,
    )
    assert r.primal == pytest.approx(rd.primal, rel=1e-9)
    assert r.dual == pytest.approx(rd.dual, rel=1e-9)
    np.testing.assert_allclose(
        model.W, model_dense.W, rtol=1e-6, atol=1e-9 * np.abs(model_dense.W).max()
    )
    if solver == "ocas":  # and the objective is the model's (no scale mix-up)
        objective = crammer_singer_objective(model.W, data.X, data.y, C)
        assert objective == pytest.approx(r.primal, rel=1e-9)
