"""--init-model (issue 46, item 3): warm starts from a model file, in ocas_learn's every
method, binary and multiclass. References: the cold run, and a brute-force QP on tiny
data; the objectives recomputed here from the models' weights."""

import dataclasses

import numpy as np
import pytest
import quadprog
import scipy.sparse as sp
from conftest import crammer_singer_objective, hinge_objective

from cpsvm.data import Dataset
from cpsvm.errors import InputError
from cpsvm.io.svmlight import read_svmlight
from cpsvm.models import KernelModel, LinearModel, MulticlassModel, start_weights
from cpsvm.solvers.ocas import OcasParams, OcasPath, train

TOL = 1e-3


def objective(model, data, C):
    if isinstance(model, MulticlassModel):
        return crammer_singer_objective(model.W, data.X, data.y, C)
    w = model.w
    X = data.X
    if model.b != 0:  # the bias feature's weight is -b/B (B = 1 here), regularised too
        w = np.append(w, -model.b)
        X = sp.hstack([X, np.ones((X.shape[0], 1))]).tocsr()
    return hinge_objective(w, X, data.y, C)


@pytest.fixture(scope="module")
def binary(request):
    return read_svmlight(request.config.rootpath / "data/samples/a9a3k.train")


@pytest.fixture(scope="module")
def multiclass(request):
    return read_svmlight(request.config.rootpath / "data/samples/dna1k.train")


@pytest.mark.parametrize("method", [0, 1, 2])
@pytest.mark.parametrize("which", ["binary", "multiclass"])
def test_warm_run_reaches_the_cold_objective(method, which, binary, multiclass):
    """From the model at C = 1, the run at C = 2 reaches the cold run's objective within
    the stopping rule (each within TolRel of the optimum: a gap below TolRel·Q_P), in no
    more iterations than the cold run."""
    data = binary if which == "binary" else multiclass
    params = OcasParams(C=1.0, method=method, tol_rel=TOL)
    first, _ = train(data, params)
    cold, cold_info = train(data, dataclasses.replace(params, C=2.0))
    warm, warm_info = train(data, dataclasses.replace(params, C=2.0, init_model=first))
    f_cold, f_warm = objective(cold, data, 2.0), objective(warm, data, 2.0)
    for info, f in ((cold_info, f_cold), (warm_info, f_warm)):
        assert info.result.status == "converged"
        assert info.result.dual <= f * (1 + 1e-9)  # a lower bound of the optimum
        assert f - info.result.dual <= TOL * f * (1 + 1e-9)  # the rule, absolute
    assert abs(f_warm - f_cold) <= TOL * f_cold
    assert warm_info.result.iterations <= cold_info.result.iterations


def brute_force_hinge(X, y, C):
    """min ½|w|² + C·Σ ξ_i, ξ_i ≥ 1 − y_i·⟨w, x_i⟩, ξ ≥ 0, over (w, ξ) by quadprog."""
    n, d = X.shape
    G = np.eye(d + n)
    G[d:, d:] *= 1e-12
    a = np.concatenate([np.zeros(d), -C * np.ones(n)])
    A = np.vstack(
        [np.hstack([y[:, None] * X, np.eye(n)]), np.hstack([np.zeros((n, d)), np.eye(n)])]
    )
    b = np.concatenate([np.ones(n), np.zeros(n)])
    w = quadprog.solve_qp(G, a, A.T, b, 0)[0][:d]
    return hinge_objective(w, sp.csr_matrix(X), y, C)


@pytest.mark.parametrize("method", [0, 1, 2])
@pytest.mark.parametrize("seed", range(4))
def test_warm_run_reaches_the_brute_force_optimum(method, seed):
    """On tiny data, from a random model (far from the optimum), every method reaches the
    optimum of an independent QP solver within the stopping rule."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((12, 3))
    y = np.where(X @ rng.standard_normal(3) + 0.5 * rng.standard_normal(12) > 0, 1.0, -1.0)
    y[:2] = 1.0, -1.0
    data = Dataset(sp.csr_matrix(X), y)
    start = LinearModel(rng.standard_normal(3) * 3, 0.0)
    C = 0.7
    model, info = train(data, OcasParams(C=C, method=method, tol_rel=1e-6, init_model=start))
    optimum = brute_force_hinge(X, y, C)
    assert objective(model, data, C) <= optimum * (1 + 1e-6) + 1e-9


@pytest.mark.parametrize("method", [0, 1, 2])
def test_warm_start_at_the_optimum_stops_early(method, binary):
    """The model trained at this very C: the run stops within a few iterations (the
    first cut, or the first dual pass, already closes the gap)."""
    params = OcasParams(C=1.0, method=method, tol_rel=0.01)
    model, cold = train(binary, dataclasses.replace(params, tol_rel=1e-4))
    again, warm = train(binary, dataclasses.replace(params, init_model=model))
    assert warm.result.iterations <= max(3, cold.result.iterations // 5)
    assert objective(again, binary, 1.0) <= objective(model, binary, 1.0) * 1.01


def test_bias_starts_from_the_model_threshold(binary):
    params = OcasParams(C=1.0, bias=1.0, method=1, tol_rel=TOL)
    first, _ = train(binary, params)
    assert first.b != 0
    cold, _ = train(binary, dataclasses.replace(params, C=2.0))
    warm, info = train(binary, dataclasses.replace(params, C=2.0, init_model=first))
    assert abs(objective(warm, binary, 2.0) - objective(cold, binary, 2.0)) <= TOL * objective(
        cold, binary, 2.0
    )


def test_a_model_with_fewer_features_starts_the_new_ones_at_zero(binary):
    small = LinearModel(np.ones(10) * 0.1, 0.0)
    placed = start_weights(small, (LinearModel,), binary.n_features)
    assert placed.shape == (1, binary.n_features)
    assert np.all(placed[0, :10] == 0.1) and not placed[0, 10:].any()
    model, info = train(binary, OcasParams(C=1.0, method=2, init_model=small))
    assert info.result.status == "converged"


def test_renumbered_columns_map_by_original_index():
    model = LinearModel(np.array([1.0, 2.0, 3.0]), 0.0, feature_ids=np.array([4, 9, 20]))
    placed = start_weights(model, (LinearModel,), 3, feature_ids=np.array([9, 20, 30]))
    assert placed.tolist() == [[2.0, 3.0, 0.0]]


@pytest.mark.parametrize(
    "which, start, expected",
    [
        ("binary", MulticlassModel(np.zeros((3, 5))), "binary linear model, got a multi"),
        ("binary", LinearModel(np.zeros(500)), "the model's features go up to index 500"),
        ("binary", LinearModel(np.zeros(5), b=0.5), "has a threshold b = 0.5"),
        ("multiclass", LinearModel(np.zeros(5)), "expected a multiclass model, got a binary"),
        ("multiclass", MulticlassModel(np.zeros((4, 5))), "has 4 classes, the training data 3"),
    ],
)  # fmt: skip
def test_a_model_that_does_not_fit_is_refused(which, start, expected, binary, multiclass):
    data = binary if which == "binary" else multiclass
    for method in (0, 1, 2):
        with pytest.raises(InputError, match=expected):
            train(data, OcasParams(C=1.0, method=method, init_model=start))


def test_a_kernel_model_is_refused(binary):
    kernel = KernelModel(sp.csr_matrix(np.ones((1, 3))), np.ones(1), 0.0, kernel=None)
    with pytest.raises(InputError, match="got a kernel model"):
        train(binary, OcasParams(C=1.0, init_model=kernel))


@pytest.mark.parametrize("method", [None, 1, 2])
def test_a_path_starts_its_first_c_from_the_model(method, binary):
    """--c-path: the model starts the path's first C; later Cs go on warm as before."""
    first, _ = train(binary, OcasParams(C=0.5, method=method or 2, tol_rel=TOL))
    params = OcasParams(C=1.0, method=method, tol_rel=TOL)
    cold_path = OcasPath(binary, params)
    warm_path = OcasPath(binary, dataclasses.replace(params, init_model=first))
    for C in (1.0, 2.0):
        cold, cold_info = cold_path.fit(C)
        warm, warm_info = warm_path.fit(C)
        assert abs(objective(warm, binary, C) - objective(cold, binary, C)) <= TOL * objective(
            cold, binary, C
        )


# -- cp_learn (-w 5, -w 9) ------------------------------------------------------------------


@pytest.mark.parametrize("algorithm", [5, 9])
@pytest.mark.parametrize("which", ["binary", "multiclass"])
def test_cp_learn_warm_run_reaches_the_cold_objective(algorithm, which, binary, multiclass):
    """cp_learn from the model at C, at 2C: the cold run's objective (its own, in
    cp_learn's scale) within the stopping rule: each run's gap is at most C·ε."""
    from cpsvm.solvers.one_slack import StructParams
    from cpsvm.solvers.one_slack import train as train_struct

    data = binary if which == "binary" else multiclass
    C = 10.0 if which == "binary" else 1000.0
    params = StructParams(C=C, epsilon=0.01, algorithm=algorithm)
    first, _ = train_struct(data, params)
    cold, cold_info = train_struct(data, dataclasses.replace(params, C=2 * C))
    warm, warm_info = train_struct(data, dataclasses.replace(params, C=2 * C, init_model=first))
    for info in (cold_info, warm_info):
        assert info.result.primal - info.result.dual <= 2 * C * 0.01 * (1 + 1e-9)
    tolerance = 2 * C * 0.01
    assert abs(warm_info.result.primal - cold_info.result.primal) <= tolerance
    assert warm_info.result.primal >= cold_info.result.dual - 1e-9 * abs(cold_info.result.dual)


@pytest.mark.parametrize(
    "options, algorithm, expected",
    [
        ({}, 3, "starts -w 5 and -w 9"),
        ({"basis_method": 1}, None, "linear binary"),
    ],
)
def test_cp_learn_refuses_what_it_cannot_start(options, algorithm, expected, binary):
    from cpsvm.kernels import Kernel
    from cpsvm.solvers.one_slack import StructParams
    from cpsvm.solvers.one_slack import train as train_struct

    kernel = Kernel(2, gamma=0.1) if options else Kernel()
    params = StructParams(
        C=1.0, algorithm=algorithm, kernel=kernel, options=options,
        init_model=LinearModel(np.zeros(3)),
    )  # fmt: skip
    with pytest.raises(InputError, match=expected):
        train_struct(binary, params)


# -- asset_learn ------------------------------------------------------------------------------


@pytest.mark.parametrize("approx", ["none", "rff", "nystrom"])
def test_asset_starts_from_its_own_model(approx, binary):
    """ASSET from the model a cold run wrote: its first check's objective is near the
    model's (not the zero model's), and it ends no worse than the cold run, within
    the stochastic runs' spread."""
    from cpsvm.kernels import Kernel
    from cpsvm.solvers.asset import AssetParams
    from cpsvm.solvers.asset import train as train_asset

    data = binary.subset(slice(0, 1000))
    kernel = Kernel() if approx == "none" else Kernel(2, gamma=0.05)
    params = AssetParams(C=1.0, approx=approx, kernel=kernel, basis_size=64, epochs=4, seed=3)
    first, first_info = train_asset(data, params)
    checks = []
    warm, warm_info = train_asset(
        data, dataclasses.replace(params, init_model=first), callback=checks.append
    )
    cold_checks = []
    train_asset(data, params, callback=cold_checks.append)
    assert abs(checks[0].objective - first_info.objective) < abs(
        cold_checks[0].objective - first_info.objective
    )
    assert warm_info.objective <= first_info.objective * 1.05


def test_asset_refuses_a_model_of_another_map(binary):
    from cpsvm.kernels import Kernel
    from cpsvm.solvers.asset import AssetParams
    from cpsvm.solvers.asset import train as train_asset

    data = binary.subset(slice(0, 300))
    params = AssetParams(C=1.0, approx="rff", kernel=Kernel(2, gamma=0.05), basis_size=32)
    first, _ = train_asset(data, params)
    other = dataclasses.replace(params, seed=5, init_model=first)
    with pytest.raises(InputError, match="random-features model of this run's map"):
        train_asset(data, other)
    with pytest.raises(InputError, match="ASSET"):
        AssetParams(C=1.0, approx="none", star=True, init_model=first).validate()


def test_margin_bounds_start_from_the_model_too(binary):
    """OCAS with the margin bounds (its pruned oracle) from a model: the cold objective."""
    params = OcasParams(C=1.0, method=1, tol_rel=TOL, margin_bounds=True)
    first, _ = train(binary, params)
    cold, cold_info = train(binary, dataclasses.replace(params, C=2.0))
    warm, warm_info = train(binary, dataclasses.replace(params, C=2.0, init_model=first))
    f_cold = objective(cold, binary, 2.0)
    assert abs(objective(warm, binary, 2.0) - f_cold) <= TOL * f_cold
    assert warm_info.result.iterations <= cold_info.result.iterations


def squared_hinge_objective(w, data, C):
    margins = np.where(data.y > 0, 1.0, -1.0) * (data.X @ w)
    return 0.5 * float(w @ w) + C * float(np.sum(np.maximum(0.0, 1.0 - margins) ** 2))


@pytest.mark.parametrize("method", [1, 2])
def test_squared_hinge_warm_run_reaches_the_cold_objective(method, binary):
    """--loss squared-hinge from the model at C = 1 (OCAS: its first point and cut, as
    -m 0's; dual coordinate descent: α_i =
    2·C_i·max(0, 1 − m_i), the loss's KKT relation): the run at C = 2 reaches the cold
    run's objective within the stopping rule, alone and as a path's first C."""
    params = OcasParams(C=1.0, method=method, tol_rel=TOL, loss="squared-hinge")
    first, _ = train(binary, params)
    cold, _ = train(binary, dataclasses.replace(params, C=2.0))
    warm, warm_info = train(binary, dataclasses.replace(params, C=2.0, init_model=first))
    assert warm_info.result.status == "converged"
    f_cold = squared_hinge_objective(cold.w, binary, 2.0)
    f_warm = squared_hinge_objective(warm.w, binary, 2.0)
    assert abs(f_warm - f_cold) <= TOL * f_cold
    path = OcasPath(binary, dataclasses.replace(params, init_model=first))
    pathed, _ = path.fit(2.0)
    assert abs(squared_hinge_objective(pathed.w, binary, 2.0) - f_cold) <= TOL * f_cold
