"""OCAS and the plain cutting plane (BMRM) for the squared hinge (the L2-loss SVM):
F(w) = ½|w|² + C·Σ_i costs_i·max(0, 1 − y_i·⟨w, x_i⟩)², binary, libocas's scale.

The risk R(w) = Σ_i costs_i·ξ_i(w)² is convex and differentiable; its cut at w_c (ξ_i its
slacks there) is the tangent R(w) ≥ c − ⟨g, w⟩ with g = Σ_i 2·costs_i·ξ_i·y_i·x_i and
c = Σ_i costs_i·(2ξ_i − ξ_i²) — the engine's cut form, independent of C, so a path over C
keeps them as it keeps the hinge's. OCAS's line search along w_b → w_t is exact: F is
piecewise quadratic in the step λ, its derivative A0·λ + B0 + Σ_i 2·C_i·s_i·max(0, a_i +
λ·s_i) continuous, piecewise linear and non-decreasing, and its zero is found between the
breakpoints −a_i/s_i by selection, as the hinge's (:func:`cpsvm.engine.ocas._subgradient_zero`).
"""

from __future__ import annotations

import time

import numpy as np

from ..compiled import njit
from .ocas import OcasOracle


@njit(cache=True)
def squared_hinge_line_search(A0, B0, y, out_from, out_to, costs):
    """argmin over λ ≥ 0 of ½A0·λ² + B0·λ + Σ_i costs_i·max(0, a_i + λ·s_i)², a_i = 1 −
    y_i·out_from_i, s_i = −y_i·(out_to_i − out_from_i) (see the module docstring)."""
    n = len(y)
    at, d_slope, d_value = np.empty(n), np.empty(n), np.empty(n)
    n_bp = 0
    slope, value = A0, B0  # the derivative's slope and its value at 0 on the segment
    for i in range(n):
        a = 1.0 - y[i] * out_from[i]
        s = -y[i] * (out_to[i] - out_from[i])
        on = (a > 0.0) | ((a == 0.0) & (s > 0.0))  # on the hinge at λ = 0+
        twice_cs = 2.0 * costs[i] * s
        slope += twice_cs * s if on else 0.0
        value += twice_cs * a if on else 0.0
        # It leaves the hinge (s < 0) or reaches it (s > 0) at λ = −a/s.
        crosses = (s < 0.0) if on else (s > 0.0)
        sign = -1.0 if on else 1.0
        at[n_bp] = -a / s if s != 0.0 else 0.0
        d_slope[n_bp] = sign * twice_cs * s
        d_value[n_bp] = sign * twice_cs * a
        n_bp += 1 if crosses else 0
    return _piecewise_linear_zero(slope, value, at[:n_bp], d_slope[:n_bp], d_value[:n_bp])


@njit(cache=True)
def _piecewise_linear_zero(slope, value, at, d_slope, d_value):
    """Smallest λ ≥ 0 where f'(λ) = (slope + Σ_{at_p ≤ λ} d_slope_p)·λ + value +
    Σ_{at_p ≤ λ} d_value_p — continuous and non-decreasing — is 0 (λ = 0 if f'(0) ≥ 0).
    Quickselect over the breakpoints (reordered in place), pivots by position."""
    if value >= 0.0:
        return 0.0
    lo, hi = 0, len(at)  # unresolved breakpoints; slope/value include those left of lo
    while lo < hi:
        a, b, c = at[lo], at[(lo + hi) // 2], at[hi - 1]
        pivot = max(min(a, b), min(max(a, b), c))  # median of three
        lt = lo
        below_s = below_v = equal_s = equal_v = 0.0
        for i in range(lo, hi):
            v, js, jv = at[i], d_slope[i], d_value[i]
            below_s += js if v < pivot else 0.0
            below_v += jv if v < pivot else 0.0
            equal_s += js if v == pivot else 0.0
            equal_v += jv if v == pivot else 0.0
            at[i], d_slope[i], d_value[i] = at[lt], d_slope[lt], d_value[lt]
            at[lt], d_slope[lt], d_value[lt] = v, js, jv
            lt += 1 if v < pivot else 0
        if (slope + below_s) * pivot + value + below_v >= 0.0:  # the zero is left of it
            hi = lt
        else:  # right of it: take those at the pivot too
            slope += below_s + equal_s
            value += below_v + equal_v
            lo = lt
            for i in range(lt, hi):
                v, js, jv = at[i], d_slope[i], d_value[i]
                at[i], d_slope[i], d_value[i] = at[lo], d_slope[lo], d_value[lo]
                at[lo], d_slope[lo], d_value[lo] = v, js, jv
                lo += 1 if v == pivot else 0
    return max(-value / slope, 0.0) if slope > 0.0 else 0.0


@njit(cache=True, fastmath={"reassoc", "contract"})
def squared_hinge_move(y, costs, out_best, out_t, step, cut_lambda, coef):
    """out_best += step·(out_t − out_best) in place; returns the risk Σ costs_i·ξ_i² at
    the new w_b and the cut at w_c = (1−λ)·w_b + λ·w_t: c = Σ costs_i·(2ξ_i − ξ_i²), in
    ``coef`` the weight 2·costs_i·ξ_i·y_i of x_i in g, and the number of violators."""
    risk = 0.0
    c = 0.0
    n_violated = 0
    for i in range(len(y)):
        out_best[i] += step * (out_t[i] - out_best[i])
        slack = max(0.0, 1.0 - y[i] * out_best[i])
        risk += costs[i] * slack * slack
        out_cut = (1.0 - cut_lambda) * out_best[i] + cut_lambda * out_t[i]
        xi = max(0.0, 1.0 - y[i] * out_cut)
        c += costs[i] * xi * (2.0 - xi)
        coef[i] = 2.0 * costs[i] * xi * y[i]
        n_violated += 1 if xi > 0.0 else 0
    return risk, c, n_violated


class SquaredHingeOcasOracle(OcasOracle):
    """:class:`cpsvm.engine.ocas.OcasOracle` for the squared hinge (binary, libocas's
    scale: Δ = 1, δΨ = y·x): ``method`` 1 OCAS, 0 the plain cutting plane."""

    def __init__(self, problem, costs, C=1.0, method=1, cut_lambda=None):
        extra = {} if cut_lambda is None else {"cut_lambda": cut_lambda}
        super().__init__(problem, costs, C, method, **extra)
        if not self.binary or self.loss != 1.0 or self.margin != 1.0:
            raise ValueError("the squared hinge is for binary problems in libocas's scale")

    def objective(self, w, out):
        coef = np.empty(len(out))
        risk, _, _ = squared_hinge_move(self.problem.y, self.costs, out.copy(), out, 0.0, 0.0, coef)
        return 0.5 * float(w @ w) + self.C * risk

    def _separate(self, alpha):
        t0 = time.perf_counter()
        w_t = self.weights(alpha)
        out_t = self.outputs(w_t)
        t1 = time.perf_counter()
        self.seconds["output"] += t1 - t0
        y = self.problem.y
        coef = np.empty(len(out_t))
        if self.out_best is None or self.method == 0:
            # First iteration (w_t = 0), or plain cutting plane: the cut is taken at w_t.
            risk, c, _ = squared_hinge_move(y, self.costs, out_t.copy(), out_t, 0.0, 0.0, coef)
            f_t = 0.5 * float(w_t @ w_t) + self.C * risk
            if f_t < self.primal:
                self.primal, self.out_best, self.w_best = f_t, out_t.copy(), w_t
        else:
            direction = w_t - self.w_best
            A0 = float(direction @ direction)
            B0 = float(self.w_best @ direction)
            step = squared_hinge_line_search(A0, B0, y, self.out_best, out_t, self._C_costs)
            self.w_best = self.w_best + step * direction
            risk, c, _ = squared_hinge_move(
                y, self.costs, self.out_best, out_t, step, self.cut_lambda, coef
            )
            self.primal = 0.5 * float(self.w_best @ self.w_best) + self.C * risk
        t2 = time.perf_counter()
        self.seconds["line_search"] += t2 - t1
        g = self.problem.rows.rows_sum(coef)
        self.oracle_calls += self.problem.n_examples
        self.seconds["cut"] += time.perf_counter() - t2
        return c, g
