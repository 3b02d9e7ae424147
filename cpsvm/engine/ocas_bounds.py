"""OCAS's binary iteration with margin-change bounds (Guillory & Bilmes), for
``ocas_learn`` and ``cp_learn -w 9`` with ``--margin-bounds 1``.

An OCAS iteration moves along the segment w_b → w_t: the line search, the new w_b and
the cut point w_c all lie on it. Every point w of the segment is within
r = max(|w_b − w′|, |w_t − w′|) of the reference w′ where the margins were sorted
(:class:`~cpsvm.engine.margin_bounds.SortedMargins`), so a row whose margin at w′ is
beyond r·R (plus the exact shift of its class's mean) from the threshold keeps its side
over the whole segment: either no loss, or a loss linear in w. The line search needs
the outputs at w_b and w_t of the other rows only (the linear rows' slopes add up to
one product with their stored sum, and they have no breakpoint on [0, 1]); the new
risk and the cut follow from the same sums. The search is exact on [0, 1], so its step
is taken only when it is below 1; a step beyond w_t (rare: w_t minimises the reduced
problem) is found again by the plain iteration.

Outputs at w_b are then known for the computed rows only: the whole vector is formed
again when something asks for it (a plain iteration, the training error at the end).
"""

from __future__ import annotations

import time

import numpy as np

from ..compiled import njit
from ..conventions import CUT_LAMBDA
from ..sparse_ops import add_row, row_dot
from .margin_bounds import ResortPolicy, SortedMargins
from .ocas import OcasOracle, binary_line_search, binary_move


@njit(cache=True, fastmath={"reassoc", "contract"})
def _two_dots(dense, D, indptr, indices, data, rows, u, v, out_u, out_v):
    for k in range(len(rows)):
        out_u[k] = row_dot(dense, D, indptr, indices, data, rows[k], u)
        out_v[k] = row_dot(dense, D, indptr, indices, data, rows[k], v)


@njit(cache=True)
def _add_rows_at(dense, D, indptr, indices, data, rows, coef, G):
    """G += Σ_k coef_k·x_{rows_k} over the non-zero coef_k."""
    for k in range(len(rows)):
        if coef[k] != 0.0:
            add_row(dense, D, indptr, indices, data, rows[k], coef[k], G)


class PrunedOcasOracle(OcasOracle):
    """:class:`~cpsvm.engine.ocas.OcasOracle` whose binary iterations compute only the
    rows near the threshold (see the module docstring). Multiclass, structured problems
    and ``method=0`` run the plain iteration."""

    PLAIN_SHARE = 0.5  # a wider band: the plain iteration

    def __init__(
        self, problem, costs, C=1.0, method=1, cut_lambda=CUT_LAMBDA, *, policy=None, center="auto"
    ):
        self._stale = False
        self._pruned_cut = False  # the last cut was a pruned iteration's
        super().__init__(problem, costs, C, method, cut_lambda)
        self.bounds = None
        if self.binary and not self.structured and method == 1:
            self.bounds = SortedMargins(
                problem.X,
                problem.y,
                self.costs,
                a=self.loss / self.margin,
                rows=problem.rows,
                center=center,
                policy=policy if policy is not None else ResortPolicy(),
            )
        self.fractions = []  # rows computed / n, per iteration after the first
        self.fallbacks = 0  # pruned searches whose step reached w_t

    @property
    def out_best(self):
        if self._stale:
            self._out_best = self.problem.rows.dot(self.w_best)
            self._stale = False
        return self._out_best

    @out_best.setter
    def out_best(self, value):
        self._out_best = value
        self._stale = False

    @property
    def resorts(self):
        return self.bounds.resorts if self.bounds is not None else 0

    def separate(self, alpha, threshold=None):
        mb = self.bounds
        if mb is None or self._out_best is None:
            return super().separate(alpha, threshold)
        pol = mb.policy
        if pol.should_resort():
            t0 = time.perf_counter()
            found = self._plain(alpha, threshold)
            mb.resort(self.w_best, self._out_best, eval_time=time.perf_counter() - t0)
            return found
        if pol.plain:
            pol.evaluated(1.0)
            return self._plain(alpha, threshold)
        found = self._pruned(alpha)
        if found is None:
            return self._plain(alpha, threshold)
        return found

    def _plain(self, alpha, threshold):
        _ = self.out_best  # the whole vector, if it is stale
        if self._pruned_cut:
            # The base class's cut sum starts from its last cut; a pruned one was not
            # recorded.
            self._cut_coef = np.zeros(self.problem.n_examples)
            self._cut_sum = np.zeros(self.problem.size_psi)
            self._pruned_cut = False
        self.fractions.append(1.0)
        return super().separate(alpha, threshold)

    def _pruned(self, alpha):
        t0 = time.perf_counter()
        mb = self.bounds
        w_t = self.weights(alpha)
        w_b = self.w_best
        direction = w_t - w_b
        r = max(float(np.linalg.norm(w_b - mb.w_ref)), float(np.linalg.norm(w_t - mb.w_ref)))
        r *= 1 + 1e-12
        shift_b = mb.shifts(w_b)
        shift_t = mb.shifts(w_t)
        tol = 1e-10 * (
            mb.R_abs
            * (
                max(float(np.linalg.norm(w_b)), float(np.linalg.norm(w_t)))
                + float(np.linalg.norm(mb.w_ref))
            )
            + abs(mb.a)
            + 1.0
        )
        ranges = mb._ranges(
            np.minimum(shift_b, shift_t), np.maximum(shift_b, shift_t), mb.R * r, tol
        )
        share = float(np.sum(ranges[:, 1] - ranges[:, 0])) / max(self.problem.n_examples, 1)
        if share > self.PLAIN_SHARE:
            # Two products a band row against one a row plainly: the plain iteration.
            mb.policy.evaluated(share)
            return None
        positions = np.concatenate([np.arange(lo, hi) for lo, hi in ranges])
        dense, D, indptr, indices, data, rowmap = mb.band_rows()
        rows = rowmap[positions]  # in the arrays the band is read from
        examples = mb.order[positions]  # in the problem's order
        in_tail = np.concatenate([np.arange(lo, hi) < mb.p[g] for g, (lo, hi) in enumerate(ranges)])
        out_b = np.empty(len(rows))
        out_t = np.empty(len(rows))
        _two_dots(dense, D, indptr, indices, data, rows, w_b, w_t, out_b, out_t)
        y = self.problem.y[examples]
        costs = self.costs[examples]
        t1 = time.perf_counter()
        self.seconds["output"] += t1 - t0
        # The linear tail (positions below lo): Σ costs, and its sum S_T = S − (the band
        # rows in S) times w_b and w_t.
        C_tail = sum(mb.C_pref[lo] - mb.C_pref[mb.starts[g]] for g, (lo, _) in enumerate(ranges))
        cy = np.where(in_tail, costs * y, 0.0)
        ST_b = float(mb.S @ w_b) - float(cy @ out_b)
        ST_t = float(mb.S @ w_t) - float(cy @ out_t)
        A0 = float(direction @ direction)
        B0 = float(w_b @ direction) - self.C * self.margin * (ST_t - ST_b)
        step = binary_line_search(A0, B0, y, out_b, out_t, self.C * costs, self.loss, self.margin)
        if not step < 1.0:
            self.seconds["line_search"] += time.perf_counter() - t1
            self.fallbacks += 1
            mb.policy.evaluated(1.0)
            return None
        coef = np.empty(len(rows))
        risk, c, _, _ = binary_move(
            y,
            costs,
            out_b,
            out_t,
            step,
            self.cut_lambda,
            self.loss,
            self.margin,
            coef,
            np.zeros(len(rows)),
        )
        risk += self.loss * C_tail - self.margin * ((1.0 - step) * ST_b + step * ST_t)
        self.w_best = w_b + step * direction
        self._stale = True
        self.primal = 0.5 * float(self.w_best @ self.w_best) + self.C * risk
        t2 = time.perf_counter()
        self.seconds["line_search"] += t2 - t1
        c += self.loss * C_tail
        g = self.margin * mb.S
        coef -= self.margin * cy
        _add_rows_at(dense, D, indptr, indices, data, rows, coef, g)
        self.oracle_calls += self.problem.n_examples
        self.seconds["cut"] += time.perf_counter() - t2
        fraction = len(rows) / max(self.problem.n_examples, 1)
        mb.policy.evaluated(fraction)
        self.fractions.append(fraction)
        # The base class's incremental cut sum does not know this cut.
        self._pruned_cut = True
        return c, g
