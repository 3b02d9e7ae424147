"""The squared hinge (L2-loss SVM) in the engine: dual coordinate descent
(cpsvm.engine.dcd_squared) and OCAS's exact line search and cuts
(cpsvm.engine.ocas_squared), against an independent reference — the primal minimised by
scipy's L-BFGS on tiny data, its gradient written here — and against each other."""

import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp
from conftest import SAMPLES

from cpsvm.engine.dcd import DcdParams, path_start
from cpsvm.engine.dcd_squared import squared_hinge_dcd
from cpsvm.engine.ocas_squared import squared_hinge_line_search, squared_hinge_move
from cpsvm.io.svmlight import read_svmlight

TIGHT = DcdParams(tol_rel=1e-10)


def tiny(seed=0, n=60, d=8, density=0.5):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=seed + 1, format="csr")
    y = np.where(rng.standard_normal(n) + X @ rng.standard_normal(d) > 0, 1.0, -1.0)
    return X, y, rng.uniform(0.2, 3.0, n)


def with_bias(X, bias):
    return sp.hstack([X, np.full((X.shape[0], 1), bias)]).tocsr() if bias else X


def primal(X, y, costs, w):
    slack = np.maximum(0.0, 1.0 - y * (X @ w))
    return 0.5 * w @ w + costs @ (slack * slack)


def reference(X, y, costs):
    """min ½|w|² + Σ C_i·max(0, 1 − y_i·⟨w, x_i⟩)² by L-BFGS (smooth: its gradient is
    w − Σ 2·C_i·ξ_i·y_i·x_i)."""

    def gradient(w):
        slack = np.maximum(0.0, 1.0 - y * (X @ w))
        return w - X.T @ (2.0 * costs * slack * y)

    found = so.minimize(
        lambda w: primal(X, y, costs, w),
        np.zeros(X.shape[1]),
        jac=gradient,
        method="L-BFGS-B",
        options=dict(gtol=1e-12, ftol=1e-15, maxiter=100000),
    )
    return found.x, found.fun


@pytest.mark.parametrize("bias", [0.0, 1.0, 2.5])
@pytest.mark.parametrize("seed", [0, 1])
def test_dcd_reaches_the_reference_optimum(seed, bias):
    X, y, costs = tiny(seed)
    w_ref, f_ref = reference(with_bias(X, bias), y, costs)
    r = squared_hinge_dcd(X, y, costs, bias=bias, params=TIGHT)
    assert r.status == "converged"
    assert len(r.w) == X.shape[1] + (bias != 0)
    # a true duality gap: D ≤ optimum ≤ P, and P is the objective of the weights returned
    assert r.dual <= f_ref + 1e-9 * f_ref <= r.primal + 2e-9 * f_ref
    assert abs(r.primal - f_ref) <= 1e-8 * f_ref
    assert np.isclose(primal(with_bias(X, bias), y, costs, r.w), r.primal, rtol=1e-12)
    assert np.allclose(r.w, w_ref, atol=1e-4)
    # the optimum's α_i = 2·C_i·ξ_i (each example's part of the gap is
    # C_i·(ξ_i − α_i/(2·C_i))², so the gap bounds the difference)
    slack = np.maximum(0.0, 1.0 - y * (with_bias(X, bias) @ r.w_alpha))
    gap = primal(with_bias(X, bias), y, costs, r.w_alpha) - r.dual  # at w(α)
    bound = 2.0 * costs * np.sqrt(max(gap, 0.0) / costs) + 1e-9
    assert np.all(np.abs(r.alpha - 2.0 * costs * slack) <= bound)


def test_dcd_one_cost_equals_every_cost_and_merges_costs():
    X, y, _ = tiny(3)
    one = squared_hinge_dcd(X, y, 0.7, params=TIGHT)
    every = squared_hinge_dcd(X, y, np.full(len(y), 0.7), params=TIGHT)
    assert np.isclose(one.primal, every.primal, rtol=1e-9)
    # an example twice at C is the example once at 2C (per-example C_i honoured)
    twice = sp.vstack([X, X[:10]]).tocsr()
    doubled = np.full(len(y), 0.7)
    doubled[:10] *= 2
    a = squared_hinge_dcd(twice, np.append(y, y[:10]), 0.7, params=TIGHT)
    b = squared_hinge_dcd(X, y, doubled, params=TIGHT)
    assert np.isclose(a.primal, b.primal, rtol=1e-8)


def test_dcd_stopping_rules_and_shrinking_agree():
    ds = read_svmlight(SAMPLES / "a9a3k.train")
    X, y = ds.X, ds.y
    base = squared_hinge_dcd(X, y, 1.0, params=DcdParams(tol_rel=1e-6))
    plain = squared_hinge_dcd(X, y, 1.0, params=DcdParams(tol_rel=1e-6, shrinking=False))
    pg = squared_hinge_dcd(X, y, 1.0, params=DcdParams(stopping="pg", eps=1e-3))
    for r in (base, plain, pg):
        assert r.status == "converged"
        assert r.gap >= -1e-9 * r.primal
    assert np.isclose(base.primal, plain.primal, rtol=2e-6)
    assert np.isclose(base.primal, pg.primal, rtol=1e-4)
    assert base.gap <= 1e-6 * base.primal
    # the same seed gives the same run
    again = squared_hinge_dcd(X, y, 1.0, params=DcdParams(tol_rel=1e-6))
    assert np.array_equal(again.w, base.w)


def test_dcd_warm_start_along_c():
    ds = read_svmlight(SAMPLES / "a9a3k.train")
    X, y = ds.X, ds.y
    params = DcdParams(tol_rel=1e-5)
    low = squared_hinge_dcd(X, y, 0.5, params=params)
    alpha, w = path_start(low, 2.0, multiclass=False)
    warm = squared_hinge_dcd(X, y, 1.0, params=params, alpha=alpha, w=w)
    cold = squared_hinge_dcd(X, y, 1.0, params=params)
    assert np.isclose(warm.primal, cold.primal, rtol=2e-5)
    assert warm.iterations <= cold.iterations
    # a negative α is brought back into the box (α ≥ 0)
    bad = squared_hinge_dcd(X, y, 1.0, params=params, alpha=-np.ones(len(y)))
    assert np.isclose(bad.primal, cold.primal, rtol=2e-5)


def brute_step(A0, B0, y, out_from, out_to, costs):
    """The line search's minimum by bounded scalar minimisation over a wide bracket."""

    def f(step):
        slack = np.maximum(0.0, 1.0 - y * (out_from + step * (out_to - out_from)))
        return 0.5 * A0 * step * step + B0 * step + costs @ (slack * slack)

    found = so.minimize_scalar(f, bounds=(0.0, 50.0), method="bounded", options={"xatol": 1e-12})
    return found.x, f


@pytest.mark.parametrize("seed", range(8))
def test_line_search_is_exact(seed):
    rng = np.random.default_rng(seed)
    n = 200
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    out_from = rng.normal(0.5, 1.0, n)
    out_to = out_from + rng.normal(0.0, 2.0, n)
    costs = rng.uniform(0.1, 2.0, n)
    A0, B0 = rng.uniform(0.1, 50.0), -rng.uniform(0.0, 200.0)
    step = squared_hinge_line_search(A0, B0, y, out_from, out_to, costs)
    expected, f = brute_step(A0, B0, y, out_from, out_to, costs)
    assert step >= 0.0
    assert f(step) <= f(expected) + 1e-9 * abs(f(expected))
    assert abs(step - expected) <= 1e-5 * max(1.0, expected)


def test_line_search_stays_at_zero_uphill():
    y = np.array([1.0, -1.0])
    out = np.array([2.0, -2.0])  # both beyond the margin, moving further
    assert squared_hinge_line_search(1.0, 0.5, y, out, 2 * out, np.ones(2)) == 0.0


def test_move_and_cut_are_the_tangent():
    """The cut at w_c is the risk's tangent there: c − ⟨g, w⟩ is exact at w_c and below
    the risk elsewhere (convexity), g the gradient's negative."""
    X, y, costs = tiny(5, n=40, d=6)
    rng = np.random.default_rng(5)
    w_b, w_t = rng.normal(size=6), rng.normal(size=6)
    out_b, out_t = X @ w_b, X @ w_t
    coef = np.empty(len(y))
    risk, c, n_violated = squared_hinge_move(y, costs, out_b.copy(), out_t, 0.3, 0.1, coef)
    w_new = w_b + 0.3 * (w_t - w_b)
    w_c = 0.9 * w_new + 0.1 * w_t
    g = X.T @ coef

    def risk_at(w):
        slack = np.maximum(0.0, 1.0 - y * (X @ w))
        return costs @ (slack * slack)

    assert np.isclose(risk, risk_at(w_new))
    assert np.isclose(c - g @ w_c, risk_at(w_c))
    assert n_violated == np.count_nonzero(1.0 - y * (X @ w_c) > 0)
    for _ in range(20):
        w = rng.normal(size=6) * 3
        assert c - g @ w <= risk_at(w) + 1e-9
