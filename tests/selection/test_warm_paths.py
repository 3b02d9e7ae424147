"""A path over C started warm reaches, at every C, the objective a cold run reaches at
that C, within the tolerance both report (the cuts of the risk do not depend on C)."""

import numpy as np
import pytest

from cpsvm.data import Dataset
from cpsvm.solvers.ocas import OcasParams, OcasPath
from cpsvm.solvers.ocas import train as ocas_train
from cpsvm.solvers.one_slack import StructParams, StructPath
from cpsvm.solvers.one_slack import train as struct_train

VALUES = [0.01, 0.1, 1.0, 10.0, 100.0]


def _data(n=300, d=20, classes=0, seed=0):
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.4)
    if classes:
        W = rng.normal(size=(d, classes))
        y = np.argmax(X @ W + 0.5 * rng.normal(size=(n, classes)), axis=1) + 1.0
    else:
        y = np.sign(X @ rng.normal(size=d) + 0.5 * rng.normal(size=n))
        y[y == 0] = 1.0
    return Dataset(sp.csr_matrix(X), y.astype(np.float64))


@pytest.mark.parametrize(("method", "classes"), [(0, 0), (1, 0), (2, 0), (1, 3), (2, 3)])
def test_ocas_path_matches_cold_runs(method, classes):
    data = _data(classes=classes)
    tol = 1e-3
    path = OcasPath(data, OcasParams(method=method, tol_rel=tol))
    for C in VALUES:
        _, warm = path.fit(C)
        _, cold = ocas_train(data, OcasParams(C=C, method=method, tol_rel=tol))
        assert warm.result.status == "converged"
        # each is within tol·P of the optimum: they differ by at most that much
        assert abs(warm.result.primal - cold.result.primal) <= 2 * tol * cold.result.primal


def test_ocas_path_needs_fewer_iterations_than_cold_runs():
    data = _data(n=600, d=40)
    path = OcasPath(data, OcasParams(method=1))
    warm = sum(path.fit(C)[1].result.iterations for C in VALUES)
    cold = sum(ocas_train(data, OcasParams(C=C, method=1))[1].result.iterations for C in VALUES)
    assert warm < cold


@pytest.mark.parametrize("algorithm", [3, 4, 5, 9])
@pytest.mark.parametrize("classes", [0, 3])
def test_struct_path_matches_cold_runs(algorithm, classes):
    data = _data(classes=classes)
    epsilon = 1e-3
    path = StructPath(data, StructParams(C=1.0, algorithm=algorithm, epsilon=epsilon))
    for C in [1.0, 10.0, 100.0, 1000.0]:
        _, warm = path.fit(C)
        _, cold = struct_train(data, StructParams(C=C, algorithm=algorithm, epsilon=epsilon))
        # both are ε-optimal: P − P* <= C·ε (the 1-slack guarantee)
        assert warm.result.status == "converged"
        assert abs(warm.result.primal - cold.result.primal) <= C * epsilon * 1.01
