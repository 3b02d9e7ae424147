"""The cut working set (cpsvm.engine.working_set) against references that share no code
with it: the primal QP of the cut vectors over (w, ξ), solved here with quadprog and
re-evaluated exactly (its optimum is the dual's, and its w is unique), weak duality,
idle counters kept by hand across the solves, and a fresh working set at new bounds.
The master QP solver itself: test_qp.py."""

import numpy as np
import pytest
import quadprog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpsvm.engine.qp import IDLE_THRESHOLD, solve_dual
from cpsvm.engine.working_set import CutWorkingSet, PrimalCutWorkingSet


def primal_value(V, h, groups, bounds, w):
    """½|w|² + Σ_j C_j·ξ_j with each group's slack ξ_j = max(0, max_{k in j} h_k − V_k·w)."""
    residual = h - V @ w
    slack = np.zeros(len(bounds))
    np.maximum.at(slack, groups, residual)
    return 0.5 * float(w @ w) + float(np.asarray(bounds) @ slack)


def primal_optimum(V, h, groups, bounds):
    """(value, w) of min ½|w|² + Σ_j C_j ξ_j s.t. V_k·w + ξ_{g_k} ≥ h_k, ξ ≥ 0, by quadprog
    over (w, ξ), re-evaluated at w: a feasible point, so an upper bound on the optimum,
    and within about 1e-6 of it (the curvature that makes quadprog's problem strictly
    convex, 1e-6 on ξ: at 1e-12 its answers were off by up to twice the optimum)."""
    m, d = V.shape
    n_groups = len(bounds)
    G = np.eye(d + n_groups)
    G[d:, d:] *= 1e-6
    linear = np.concatenate([np.zeros(d), -np.asarray(bounds, dtype=float)])
    A = np.zeros((m + n_groups, d + n_groups))
    A[:m, :d] = V
    A[np.arange(m), d + groups] = 1.0
    A[m:, d:] = np.eye(n_groups)
    b = np.concatenate([h, np.zeros(n_groups)])
    w = quadprog.solve_qp(G, linear, A.T, b, 0)[0][:d]
    return primal_value(V, h, groups, bounds, w), w


def dual_value(V, h, alpha):
    w = V.T @ alpha
    return float(h @ alpha - 0.5 * w @ w)


def fill(working_set, V, h, groups):
    """Add the rows of V as cuts in order, as the cutting-plane loop does."""
    for k in range(len(h)):
        assert working_set.add(h[k], V[:k] @ V[k], V[k] @ V[k], int(groups[k])) == k
    return working_set


def random_cuts(rng, m, d, n_groups, c_scale=1.0):
    V = rng.standard_normal((m, d))
    h = rng.uniform(-0.5, 1.5, m)
    groups = rng.integers(0, n_groups, m)
    bounds = c_scale * rng.uniform(0.5, 2.0, n_groups)
    return V, h, groups, bounds


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 12),
    d=st.integers(1, 6),
    n_groups=st.integers(1, 3),
    c_exponent=st.sampled_from([-2.0, 0.0, 2.0]),
)
def test_solve_is_the_optimum_of_the_cut_vectors_qp(seed, m, d, n_groups, c_exponent):
    rng = np.random.default_rng(seed)
    V, h, groups, bounds = random_cuts(rng, m, d, n_groups, 10.0**c_exponent)
    optimum, w_star = primal_optimum(V, h, groups, bounds)
    working_set = fill(CutWorkingSet(bounds, capacity=1), V, h, groups)
    result = working_set.solve()
    alpha = np.asarray(working_set.alpha)
    scale = 1.0 + abs(optimum) + float(np.abs(h) @ alpha)
    assert result.converged and working_set.last_result is result
    assert np.all(alpha >= 0)
    assert np.all(np.bincount(groups, weights=alpha, minlength=n_groups) <= bounds * (1 + 1e-14))
    assert result.dual == pytest.approx(dual_value(V, h, alpha), abs=1e-12 * scale)
    # Optimal: the primal at its own w closes the gap (a certificate: D(α) ≤ optimum ≤
    # P(w)); weak duality against the reference's feasible point, which is near.
    w = V.T @ alpha
    at_w = primal_value(V, h, groups, bounds, w)
    assert result.dual - 1e-14 * scale <= at_w <= result.dual + 1e-9 * scale
    assert result.dual <= optimum + 1e-12 * scale
    assert optimum - result.dual <= 1e-5 * scale
    # ½|w − w*|² ≤ P(w) − P(w*) (strong convexity): both points near the unique w*.
    rounding = 1e-14 * scale
    distance = np.sqrt(2 * (max(at_w - result.dual, 0.0) + rounding)) + np.sqrt(
        2 * (max(optimum - result.dual, 0.0) + rounding)
    )
    assert np.linalg.norm(w - w_star) <= distance
    # Each group's slack at that w.
    slack = np.zeros(n_groups)
    np.maximum.at(slack, groups, h - V @ w)
    np.testing.assert_allclose(result.xi, slack, atol=1e-9 * scale)


def test_warm_started_solves_equal_cold_ones():
    """Solving after every cut (warm from the last α, SVMstruct's loop) reaches what a
    cold quadprog solve of the same cuts reaches, at every step."""
    rng = np.random.default_rng(3)
    V, h, groups, bounds = random_cuts(rng, 25, 6, 2)
    warm = CutWorkingSet(bounds)
    cold = CutWorkingSet(bounds, method="quadprog")
    for k in range(len(h)):
        for working_set in (warm, cold):
            working_set.add(h[k], V[:k] @ V[k], V[k] @ V[k], int(groups[k]))
        warm_result, cold_result = warm.solve(), cold.solve()
        if k:  # (one cut: a closed form for both)
            assert cold_result.method.startswith("quadprog")
            assert not warm_result.method.startswith("quadprog")
        assert warm_result.converged and cold_result.converged
        reference = solve_dual(V[: k + 1] @ V[: k + 1].T, h[: k + 1], groups[: k + 1], bounds)
        scale = 1.0 + abs(reference.dual)
        assert warm_result.dual == pytest.approx(reference.dual, abs=1e-10 * scale)
        assert cold_result.dual == pytest.approx(reference.dual, abs=1e-10 * scale)
        # Same w (unique), whichever α each found.
        np.testing.assert_allclose(
            V[: k + 1].T @ warm.alpha, V[: k + 1].T @ cold.alpha, atol=1e-5 * np.sqrt(scale)
        )


def test_idle_counters_and_remove_idle_follow_the_solves():
    """idle[k] counts the consecutive solves, latest first, after which α_k was zero
    (at most IDLE_THRESHOLD times its group's sum); remove_idle(m) drops exactly the
    cuts counted m or more, which were unused: the optimum does not move."""
    rng = np.random.default_rng(8)
    d, n_groups = 4, 2
    bounds = np.array([1.0, 3.0])
    working_set = CutWorkingSet(bounds)
    V = np.zeros((0, d))
    h = np.zeros(0)
    groups = np.zeros(0, dtype=np.int64)
    expected_idle = np.zeros(0, dtype=np.int64)
    removed_some = False
    for step in range(30):
        v = rng.standard_normal(d)
        # Many cuts with negative or low offsets: they stay unused for a while.
        offset = rng.uniform(-1.0, 1.0)
        group = int(rng.integers(n_groups))
        working_set.add(offset, V @ v, v @ v, group)
        V, h = np.vstack([V, v]), np.append(h, offset)
        groups, expected_idle = np.append(groups, group), np.append(expected_idle, 0)
        result = working_set.solve()
        alpha = result.alpha
        sums = np.bincount(groups, weights=alpha, minlength=n_groups)
        unused = alpha <= IDLE_THRESHOLD * sums[groups]
        expected_idle = np.where(unused, expected_idle + 1, 0)
        np.testing.assert_array_equal(working_set.idle, expected_idle)
        if step % 5 == 4:
            keep = working_set.remove_idle(3)
            np.testing.assert_array_equal(keep, expected_idle < 3)
            removed_some |= not keep.all()
            V, h, groups = V[keep], h[keep], groups[keep]
            expected_idle, kept_alpha = expected_idle[keep], alpha[keep]
            assert working_set.size == keep.sum() and working_set.last_result is None
            np.testing.assert_allclose(working_set.G, V @ V.T, rtol=1e-13, atol=1e-13)
            np.testing.assert_array_equal(working_set.h, h)
            np.testing.assert_array_equal(working_set.groups, groups)
            np.testing.assert_array_equal(working_set.alpha, kept_alpha)
            again = working_set.solve()
            sums = np.bincount(groups, weights=again.alpha, minlength=n_groups)
            unused = again.alpha <= IDLE_THRESHOLD * sums[groups]
            expected_idle = np.where(unused, expected_idle + 1, 0)
            np.testing.assert_array_equal(working_set.idle, expected_idle)
            assert again.dual == pytest.approx(result.dual, rel=1e-9, abs=1e-12)
    assert removed_some


def test_set_bounds_scales_each_groups_alpha_and_solves_as_a_fresh_set():
    rng = np.random.default_rng(5)
    V, h, groups, _ = random_cuts(rng, 15, 5, 3)
    groups[:3] = [0, 1, 2]
    h = h + 1.0  # every group spends its budget: the scaling shows
    old = np.array([1.0, 2.0, 0.5])
    working_set = fill(CutWorkingSet(old), V, h, groups)
    working_set.solve()
    alpha = working_set.alpha.copy()
    new = np.array([3.0, 0.5, 0.5])
    working_set.set_bounds(new)
    assert working_set.last_result is None
    np.testing.assert_array_equal(working_set.bounds, new)
    np.testing.assert_allclose(working_set.alpha, alpha * (new / old)[groups], rtol=1e-15)
    sums = np.bincount(groups, weights=working_set.alpha, minlength=3)
    assert np.all(sums <= new * (1 + 1e-14))
    warm = working_set.solve()
    fresh = fill(CutWorkingSet(new, method="quadprog"), V, h, groups).solve()
    optimum, _ = primal_optimum(V, h, groups, new)
    assert warm.converged
    assert warm.dual == pytest.approx(fresh.dual, rel=1e-9)
    assert warm.dual <= optimum <= warm.dual + 1e-5 * (1 + optimum)
    # A group bounded by 0 has no budget; raising it again starts that group from 0.
    working_set.set_bounds([3.0, 0.0, 0.5])
    assert np.all(working_set.alpha[groups == 1] == 0.0)
    working_set.set_bounds([3.0, 2.0, 0.5])
    assert np.all(working_set.alpha[groups == 1] == 0.0)
    again = working_set.solve().dual
    assert again <= primal_optimum(V, h, groups, [3.0, 2.0, 0.5])[0] <= again + 1e-5 * (1 + again)


@pytest.mark.parametrize("seed", range(3))
def test_primal_form_agrees_with_the_dual_form(seed):
    """SVMstruct's -w 2 working set (quadprog on (w, ξ), from the cut vectors) against the
    dual one and the reference: the same optimum, its α a feasible dual point whose
    value it reports, ξ and the gap as defined."""
    rng = np.random.default_rng(seed)
    C = [0.1, 1.0, 50.0][seed]
    V, h, _, _ = random_cuts(rng, 12, 4, 1)
    groups = np.zeros(12, dtype=np.int64)
    kept = list(range(12))
    primal_set = fill(PrimalCutWorkingSet(C, lambda: V[kept]), V, h, groups)
    dual_set = fill(CutWorkingSet([C]), V, h, groups)
    result, reference = primal_set.solve(), dual_set.solve()
    optimum, _ = primal_optimum(V, h, groups, [C])
    alpha = np.asarray(primal_set.alpha)
    assert result.method == "primal_quadprog" and primal_set.last_result is result
    assert np.all(alpha >= 0) and alpha.sum() <= C * (1 + 1e-15)
    assert result.dual == pytest.approx(dual_value(V, h, alpha), rel=1e-12, abs=1e-14)
    assert result.dual == pytest.approx(reference.dual, rel=1e-7, abs=1e-9)
    assert reference.dual - 1e-9 <= optimum <= reference.dual + 1e-5 * (1 + abs(optimum))
    np.testing.assert_allclose(V.T @ alpha, V.T @ reference.alpha, atol=1e-4)
    assert result.xi[0] == pytest.approx(max(0.0, np.max(h - V @ (V.T @ alpha))), abs=1e-12)
    w = V.T @ alpha
    assert result.gap == pytest.approx(0.5 * w @ w + C * result.xi[0] - result.dual, abs=1e-12)
    assert -1e-9 <= result.gap <= 1e-6 * (1 + abs(optimum))
    assert result.n_active == np.count_nonzero(alpha)
    # Dropping its unused cuts (the caller's vectors dropped alike) keeps the optimum.
    np.testing.assert_array_equal(primal_set.idle, (alpha <= IDLE_THRESHOLD * alpha.sum()) * 1)
    keep = primal_set.remove_idle(1)
    kept = [k for k in kept if keep[k]]
    assert primal_set.size == len(kept) < 12
    assert primal_set.solve().dual == pytest.approx(result.dual, rel=1e-9, abs=1e-12)


def test_invalid_construction_and_updates_are_refused():
    for bounds in ([], [-1.0], [np.inf], [1.0, np.nan]):
        with pytest.raises(ValueError, match="bounds"):
            CutWorkingSet(bounds)
    with pytest.raises(ValueError, match="method"):
        CutWorkingSet([1.0], method="simplex")
    working_set = CutWorkingSet([1.0, 2.0])
    working_set.add(1.0, [], 1.0)
    for h_new, cross, own in ((np.nan, [0.5], 1.0), (1.0, [np.inf], 1.0), (1.0, [0.5], np.inf)):
        with pytest.raises(ValueError, match="finite"):
            working_set.add(h_new, cross, own)
    for bounds in ([1.0], [1.0, -2.0], [1.0, np.inf]):
        with pytest.raises(ValueError, match="2 finite bounds"):
            working_set.set_bounds(bounds)
    for mask in (np.array([1]), np.array([True, False]), [1.0]):
        with pytest.raises(ValueError, match="keep_mask"):
            working_set.remove(mask)
    assert working_set.size == 1
    np.testing.assert_array_equal(working_set.bounds, [1.0, 2.0])
    for view in (working_set.h, working_set.groups, working_set.idle, working_set.bounds):
        assert not view.flags.writeable
