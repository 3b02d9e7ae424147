"""Dual coordinate descent (cpsvm.engine.dcd): the optimum against independent solvers
(an exact QP of the dual on tiny data, scikit-learn's LinearSVC at a tiny tolerance),
true duality gaps, per-example costs, the bias, warm starts, shrinking, seeds, limits."""

import numpy as np
import pytest
import quadprog
import scipy.sparse as sp
from conftest import FIXTURES, SAMPLES, crammer_singer_objective, hinge_objective
from sklearn.svm import LinearSVC

from cpsvm.engine.dcd import DcdParams, binary_hinge_dcd, crammer_singer_dcd, path_start
from cpsvm.io.svmlight import read_svmlight

TIGHT = DcdParams(tol_rel=1e-7)


def data(name, rows=None):
    ds = read_svmlight((FIXTURES if name == "heart_scale" else SAMPLES) / name)
    X, y = ds.X, ds.y
    return (X, y) if rows is None else (X[:rows], y[:rows])


def svc_binary(X, y, C, costs=None, bias=0.0):
    """LinearSVC's optimum (w, with the bias weight last when ``bias``)."""
    svc = LinearSVC(
        loss="hinge",
        C=C,
        tol=1e-10,
        max_iter=10**6,
        fit_intercept=bias != 0,
        intercept_scaling=bias or 1.0,
    )
    svc.fit(X, y, sample_weight=costs)
    w = svc.coef_.ravel()
    return np.append(w, svc.intercept_[0] / bias) if bias else w


def svc_crammer_singer(X, y, C, costs=None):
    svc = LinearSVC(multi_class="crammer_singer", C=C, tol=1e-9, max_iter=10**6)
    svc.set_params(fit_intercept=False).fit(X, y, sample_weight=costs)
    return svc.coef_  # (k, d)


def hinge_cost_objective(w, X, y, costs):
    return 0.5 * w @ w + costs @ np.maximum(0.0, 1.0 - y * (X @ w))


def cs_cost_objective(W, X, y, costs):
    """Crammer-Singer with per-example costs; W (d, k)."""
    S = np.asarray(X @ W)
    rows, true = np.arange(len(y)), y.astype(int) - 1
    margins = S - S[rows, true][:, None] + 1.0
    margins[rows, true] = 0.0
    return 0.5 * np.sum(W * W) + costs @ np.maximum(0.0, margins.max(axis=1))


def with_bias(X, b):
    return sp.hstack([X, np.full((X.shape[0], 1), b)], format="csr")


def binary_dual(alpha, X, y):
    """D(α) = Σα − ½|Σ α_i y_i x_i|², w recomputed from α."""
    w = X.T @ (alpha * y)
    return alpha.sum() - 0.5 * w @ w, w


def cs_dual(alpha, X, y):
    W = np.asarray(X.T @ alpha)
    return alpha[np.arange(len(y)), y.astype(int) - 1].sum() - 0.5 * np.sum(W * W), W


def assert_brackets(result, optimum, slack=1e-9):
    """The run's dual ≤ the independent optimum ≤ its primal (a true gap), and that gap
    within the run's tolerance."""
    scale = max(1.0, abs(optimum))
    assert result.dual <= optimum + slack * scale
    assert optimum <= result.primal + slack * scale
    assert result.gap <= max(1e-7 * result.primal, 0.0) + slack * scale


def check_true_gap(result, X, y, costs, multiclass=False):
    """P recomputed from the returned w, D from the returned α, and w_alpha the weights
    α implies (rebuilt here)."""
    if multiclass:
        P = cs_cost_objective(result.w, X, y, costs)
        D, W = cs_dual(result.alpha, X, y)
        np.testing.assert_allclose(W, result.w_alpha, atol=1e-9)
    else:
        P = hinge_cost_objective(result.w, X, y, costs)
        D, w = binary_dual(result.alpha, X, y)
        np.testing.assert_allclose(w, result.w_alpha, atol=1e-9)
    assert result.primal == pytest.approx(P, rel=1e-10)
    assert result.dual == pytest.approx(D, rel=1e-9)
    assert result.primal >= result.dual


# -- against a brute-force QP of the dual on tiny data -----------------------------------


def qp_binary_optimum(X, y, costs):
    """The primal QP min ½|w|² + Σ C_i·ξ_i, y_i·⟨w, x_i⟩ ≥ 1 − ξ_i, ξ ≥ 0 by quadprog
    (ξ's quadratic term 1e-12 makes G definite); P at its w."""
    Xd = X.toarray()
    n, d = Xd.shape
    G = np.diag(np.concatenate([np.ones(d), np.full(n, 1e-12)]))
    margins = np.hstack([Xd * y[:, None], np.eye(n)])  # y_i·x_i·w + ξ_i ≥ 1
    positive = np.hstack([np.zeros((n, d)), np.eye(n)])  # ξ_i ≥ 0
    constraints = np.vstack([margins, positive]).T
    bounds = np.concatenate([np.ones(n), np.zeros(n)])
    z = quadprog.solve_qp(G, np.concatenate([np.zeros(d), -costs]), constraints, bounds)[0]
    return hinge_cost_objective(z[:d], Xd, y, costs)


def qp_crammer_singer_optimum(X, y, costs, k):
    """The Crammer-Singer dual by quadprog on n·k variables: Σ_m α_im = 0, α_im ≤ 0
    (m ≠ y_i), α_iy ≤ C_i; returns P at the W it implies."""
    n = len(y)
    Xd = X.toarray()
    G = np.kron(Xd @ Xd.T, np.eye(k)) + 1e-10 * np.eye(n * k)
    true = np.zeros(n * k)
    true[np.arange(n) * k + y.astype(int) - 1] = 1.0
    equalities = np.kron(np.eye(n), np.ones((k, 1)))  # (n·k, n)
    upper = np.where(true > 0, np.repeat(costs, k), 0.0)
    constraints = np.hstack([equalities, -np.eye(n * k)])
    bounds = np.concatenate([np.zeros(n), -upper])
    alpha = quadprog.solve_qp(G, true, constraints, bounds, meq=n)[0].reshape(n, k)
    return cs_cost_objective(Xd.T @ alpha, Xd, y, costs)


def test_binary_matches_a_qp_of_the_dual():
    X, y = data("heart_scale", 60)
    costs = np.random.default_rng(1).uniform(0.2, 3.0, len(y))
    r = binary_hinge_dcd(X, y, costs, params=TIGHT)
    assert r.status == "converged" and r.criterion == "tol_rel"
    assert_brackets(r, qp_binary_optimum(X, y, costs), slack=1e-7)
    check_true_gap(r, X, y, costs)


def test_crammer_singer_matches_a_qp_of_the_dual():
    X, y = data("dna1k.train", 30)
    costs = np.random.default_rng(2).uniform(0.05, 0.5, len(y))
    r = crammer_singer_dcd(X, y, costs, params=TIGHT)
    assert r.status == "converged"
    assert_brackets(r, qp_crammer_singer_optimum(X, y, costs, 3), slack=1e-7)
    check_true_gap(r, X, y, costs, multiclass=True)


# -- against scikit-learn's LinearSVC (liblinear at tol 1e-10) ---------------------------


@pytest.mark.parametrize("name,C", [("heart_scale", 1.0), ("a9a3k.train", 0.1)])
def test_binary_reaches_linearsvc_optimum(name, C):
    X, y = data(name)
    r = binary_hinge_dcd(X, y, C, params=TIGHT)
    assert_brackets(r, hinge_objective(svc_binary(X, y, C), X, y, C), slack=1e-8)
    check_true_gap(r, X, y, np.full(len(y), C))


@pytest.mark.parametrize("name,C", [("dna1k.train", 0.1), ("satimage500.train", 1.0)])
def test_crammer_singer_reaches_linearsvc_optimum(name, C):
    X, y = data(name)
    r = crammer_singer_dcd(X, y, C, params=TIGHT)
    optimum = crammer_singer_objective(svc_crammer_singer(X, y, C), X, y, C)
    assert_brackets(r, optimum, slack=1e-8)
    assert r.w.shape == (X.shape[1], int(y.max()))
    check_true_gap(r, X, y, np.full(len(y), C), multiclass=True)


def test_per_example_costs():
    X, y = data("heart_scale")
    costs = np.random.default_rng(3).uniform(0.1, 2.0, len(y))
    r = binary_hinge_dcd(X, y, costs, params=TIGHT)
    reference = hinge_cost_objective(svc_binary(X, y, 1.0, costs), X, y, costs)
    assert_brackets(r, reference, slack=1e-8)
    assert np.all(r.alpha <= costs) and np.all(r.alpha >= 0)
    X, y = data("satimage500.train")
    costs = np.random.default_rng(4).uniform(0.1, 2.0, len(y))
    r = crammer_singer_dcd(X, y, costs, params=TIGHT)
    reference = cs_cost_objective(svc_crammer_singer(X, y, 1.0, costs).T, X, y, costs)
    assert_brackets(r, reference, slack=1e-8)


@pytest.mark.parametrize("bias", [1.0, 2.5])
def test_bias_is_a_regularised_constant_feature(bias):
    X, y = data("heart_scale")
    r = binary_hinge_dcd(X, y, 1.0, bias=bias, params=TIGHT)
    assert r.w.shape == (X.shape[1] + 1,)
    Xb = with_bias(X, bias)
    reference = hinge_objective(svc_binary(X, y, 1.0, bias=bias), Xb, y, 1.0)
    assert_brackets(r, reference, slack=1e-8)
    check_true_gap(r, Xb, y, np.ones(len(y)))
    X, y = data("dna1k.train", 200)
    r = crammer_singer_dcd(X, y, 0.1, bias=bias, params=TIGHT)
    plain = crammer_singer_dcd(with_bias(X, bias), y, 0.1, params=TIGHT)
    assert r.primal == pytest.approx(plain.primal, rel=1e-6)
    check_true_gap(r, with_bias(X, bias), y, np.full(len(y), 0.1), multiclass=True)


# -- warm starts, shrinking, seeds -------------------------------------------------------


@pytest.mark.parametrize("multiclass", [False, True])
def test_warm_starts_along_a_c_path(multiclass):
    """Each warm run reaches the cold run's optimum within their gaps, in fewer passes
    over the path; a step down clips α into the smaller box."""
    X, y = data("satimage500.train" if multiclass else "a9a3k.train")
    solve = crammer_singer_dcd if multiclass else binary_hinge_dcd
    params = DcdParams(tol_rel=1e-2)
    Cs = [0.05, 0.15, 0.5, 1.5]
    previous = solve(X, y, Cs[0], params=params)
    warm_passes = cold_passes = 0
    for C_old, C in zip(Cs, Cs[1:]):
        cold = solve(X, y, C, params=params)
        alpha, w = path_start(previous, C / C_old, multiclass)
        start = {"alpha": alpha, ("W" if multiclass else "w"): w}
        warm = solve(X, y, C, params=params, **start)
        assert warm.status == cold.status == "converged"
        assert warm.primal >= cold.dual and cold.primal >= warm.dual
        check_true_gap(warm, X, y, np.full(len(y), C), multiclass)
        warm_passes += warm.iterations
        cold_passes += cold.iterations
        previous = warm
    assert warm_passes < cold_passes  # satimage 99 against 138, a9a3k 43 against 122
    start = {"alpha": previous.alpha, ("W" if multiclass else "w"): previous.w_alpha}
    down = solve(X, y, 0.05, params=params, **start)
    assert down.status == "converged"
    check_true_gap(down, X, y, np.full(len(y), 0.05), multiclass)
    if multiclass:
        assert np.all(down.alpha[np.arange(len(y)), y.astype(int) - 1] <= 0.05)
        np.testing.assert_allclose(down.alpha.sum(axis=1), 0.0, atol=1e-12)
    else:
        assert np.all(down.alpha <= 0.05)


@pytest.mark.parametrize("multiclass", [False, True])
def test_shrinking_on_and_off_reach_the_same_optimum(multiclass):
    X, y = data("satimage500.train" if multiclass else "a9a3k.train")
    solve = crammer_singer_dcd if multiclass else binary_hinge_dcd
    runs = [solve(X, y, 0.5, params=DcdParams(tol_rel=1e-6, shrinking=s)) for s in (True, False)]
    on, off = runs
    assert on.primal >= off.dual and off.primal >= on.dual
    assert on.status == off.status == "converged"


@pytest.mark.parametrize("multiclass", [False, True])
def test_seeds_make_runs_reproducible(multiclass):
    X, y = data("dna1k.train" if multiclass else "a9a3k.train", 600)
    solve = crammer_singer_dcd if multiclass else binary_hinge_dcd
    a, b = (solve(X, y, 0.3, params=DcdParams(seed=7)) for _ in range(2))
    np.testing.assert_array_equal(a.alpha, b.alpha)
    np.testing.assert_array_equal(a.w, b.w)
    assert (a.primal, a.dual, a.iterations) == (b.primal, b.dual, b.iterations)
    c = solve(X, y, 0.3, params=DcdParams(seed=8))
    assert not np.array_equal(a.alpha, c.alpha)
    generator = solve(X, y, 0.3, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(generator.w, a.w)  # params.seed is the Generator's seed


# -- stopping --------------------------------------------------------------------------


@pytest.mark.parametrize("multiclass", [False, True])
def test_interrupted_run_returns_a_consistent_pair(multiclass):
    X, y = data("satimage500.train" if multiclass else "a9a3k.train")
    solve = crammer_singer_dcd if multiclass else binary_hinge_dcd
    asked = []
    seen = []

    def should_stop():
        asked.append(1)
        return len(asked) > 3

    r = solve(X, y, 1.0, params=TIGHT, should_stop=should_stop, callback=seen.append)
    assert r.status == "interrupted" and r.iterations == 3
    assert [p.iteration for p in seen] == [1, 2, 3]
    check_true_gap(r, X, y, np.ones(len(y)), multiclass=multiclass)


def test_iteration_and_time_limits():
    X, y = data("a9a3k.train")
    r = binary_hinge_dcd(X, y, 1.0, params=DcdParams(tol_rel=1e-9, max_iterations=5))
    assert r.status == "max_iterations" and r.iterations == 5
    check_true_gap(r, X, y, np.ones(len(y)))
    r = binary_hinge_dcd(X, y, 1.0, params=DcdParams(tol_rel=1e-9, time_limit=0.0))
    assert r.status == "time_limit" and r.iterations == 0 and r.primal == len(y)


@pytest.mark.parametrize("multiclass", [False, True])
def test_liblinear_rule_and_absolute_gap(multiclass):
    X, y = data("dna1k.train" if multiclass else "heart_scale")
    solve = crammer_singer_dcd if multiclass else binary_hinge_dcd
    r = solve(X, y, 0.5, params=DcdParams(stopping="pg", eps=0.01))
    assert r.status == "converged" and r.criterion == "pg" and r.violation <= 0.01
    assert multiclass or r.active == len(y)  # the rule holds on a pass over every example
    r = solve(X, y, 0.5, params=DcdParams(tol_rel=0.0, tol_abs=1e-3))
    assert r.criterion == "tol_abs" and r.gap <= 1e-3


def test_progress_reports_each_pass():
    X, y = data("heart_scale")
    seen = []
    r = binary_hinge_dcd(X, y, 1.0, params=DcdParams(tol_rel=1e-6), callback=seen.append)
    assert [p.iteration for p in seen] == list(range(1, r.iterations + 1))
    updates = [p.oracle_calls for p in seen]
    assert updates == sorted(updates) and r.updates >= updates[-1]
    assert all(p.primal >= r.dual - 1e-9 for p in seen if np.isfinite(p.primal))


def test_empty_rows_and_unused_classes():
    X, y = data("dna1k.train", 100)
    X = X.tolil()
    X[:5] = 0.0
    X = X.tocsr()
    r = crammer_singer_dcd(X, y, 0.2, n_classes=5, params=TIGHT)
    assert r.w.shape == (X.shape[1], 5)
    np.testing.assert_allclose(r.alpha[:5].sum(axis=1), 0.0, atol=1e-15)
    assert np.all(r.alpha[np.arange(5), y[:5].astype(int) - 1] == 0.2)  # loss 1 whatever W
    check_true_gap(r, X, y, np.full(len(y), 0.2), multiclass=True)
    yb = np.where(y == 1, 1.0, -1.0)
    r = binary_hinge_dcd(X, yb, 0.2, params=TIGHT)
    assert np.all(r.alpha[:5] == 0.2)  # an empty row's loss is 1 whatever w
    check_true_gap(r, X, yb, np.full(len(y), 0.2))
