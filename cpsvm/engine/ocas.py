"""OCAS's oracle for the engine's 1-slack loop (Franc & Sonnenburg, ICML 2008), shared
by ``ocas_learn`` (:mod:`cpsvm.solvers.ocas`) and ``cp_learn -w 9``.

What OCAS adds to the plain cutting-plane loop lives in :class:`OcasOracle`:

* a best-so-far point w_b with monotonically decreasing F(w_b), moved by an exact line
  search along w_b → w_t (w_t the reduced problem's solution);
* the new cut taken at w_c = (1−λ)·w_b + λ·w_t (λ = 0.1) instead of at w_t;
* outputs ⟨w, x_i⟩ kept for w_b and w_t, so each iteration costs one pass over the
  data for the outputs of w_t and, for a binary cut, one over the examples whose
  coefficient differs from the nearest known sum's — the previous cut's, late in
  training a few, where summing all violators made the cut a large share of the run
  (both threaded over fixed row blocks, :mod:`cpsvm.sparse_ops`);
* for Crammer-Singer, w_b and its (n, k) outputs moved in place and the line search
  reading the lines off the outputs, so that an iteration forms no k·d or n·k
  temporary (many classes: :class:`cpsvm.engine.cuts.ClassCuts`).

The problem it is given follows this protocol, the hooks declared with their defaults on
:class:`cpsvm.problems.base.StructuredProblem` (:class:`cpsvm.problems.binary.problem.BinaryProblem`
and :class:`cpsvm.problems.multiclass.problem.MulticlassProblem` follow it)::

    n_examples, size_psi, y      sizes; labels (±1, or classes 1..k)
    loss_scale                   Δ of a wrong label
    flip_gain                    binary: a flipped label moves w·δΨ by flip_gain·y·⟨w, x⟩;
                                 None for Crammer-Singer multiclass
    rows                         the examples as :class:`cpsvm.sparse_ops.RowBlocks`
    scores(w)                    outputs ⟨w, x_i⟩ (n,), or every class's score (n, k)
    losses(labels), delta_psi_sum(weights, labels)   as in :mod:`cpsvm.problems.base`
    cut_table(weights)           where the cuts are kept (None, the default: as vectors; see
                                 :class:`cpsvm.engine.oracles.LinearCutOracle`)

A structured problem whose labellings cannot be listed (sequences: a max over
exponentially many lines per example) instead provides::

    scores(w)                    outputs linear in w (hmm: the tokens' emission scores)
    separate_at(out, w)          the margin-rescaled most violated labelling where the
                                 outputs are ``out`` (what they leave out of w·Ψ, such as
                                 hmm's transitions, read from w)
    margins_at(out, w, labels)   w·δΨ_i(labels_i) from outputs and weights (linear in both)
    n_weights_at                 the two read only w[:n_weights_at] (hmm: its transitions),
                                 so the search forms only that part of w (None: all of w)
    margins_many_at(out, w, ls)  margins_at of several labellings (default: one by one)

and its line search is exact on a model of each example's slack along w_b → w_t: the
max of the lines of the labellings seen so far (the last ``pool_size`` argmaxes, and the
true labelling's 0), a lower bound of the slack that is exact where it was evaluated.
The step minimising the model is evaluated by the oracle; where the two differ the new
argmax joins the model and the search repeats (Kelley's method in one dimension, at most
``max_evaluations`` times). w_b moves to the best evaluated point, so F(w_b) is exact
and decreasing.
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from ..compiled import njit
from ..conventions import CUT_LAMBDA
from ..sparse_ops import first_identical_rows
from .hinge import hinge_cut, hinge_excess, hinge_labels, multiclass_most_violated
from .magnitudes import objective_rounding
from .oracles import LinearCutOracle


@njit(cache=True)
def line_search(A0, B0, intercepts, slopes, costs):
    """argmin over λ ≥ 0 of ½A0·λ² + B0·λ + Σ_i costs_i · max_j (intercepts_ij + λ·slopes_ij).

    Exact (Appendix A of the paper, generalised to a max of k lines per example): each
    example's upper envelope on [0, ∞) is traced into breakpoints and slope jumps
    (:func:`upper_envelope`), and the monotone subdifferential is searched for 0
    (:func:`_subgradient_zero`). O(n·k²) for the envelopes.
    """
    n, k = intercepts.shape
    # At most k − 1 breakpoints an example: room for all at once (growing buffers and
    # row views made the HMM's searches several times slower).
    bp_at, bp_jump = np.empty(max(n * (k - 1), 1)), np.empty(max(n * (k - 1), 1))
    n_bp = 0
    grad = B0
    for i in range(n):
        slope, n_bp = upper_envelope(intercepts, slopes, i, costs[i], bp_at, bp_jump, n_bp)
        grad += slope
    return _subgradient_zero(A0, grad, bp_at[:n_bp], bp_jump[:n_bp])


@njit(cache=True)
def class_line_search(A0, B0, y, out_from, out_to, costs, loss):
    """:func:`line_search` for Crammer-Singer's slack, the lines read off the classes'
    outputs (n, k) at both ends: example i's line of class c ≠ y_i has intercept
    out_from_ic − out_from_iy + loss and slope (out_to − out_from)_ic − (out_to −
    out_from)_iy; its true class's line is 0 (y 1-based)."""
    n, k = out_from.shape
    a, s = np.empty((1, k)), np.empty((1, k))  # the example's lines, as upper_envelope's row 0
    a_row, s_row = a[0], s[0]
    bp_at, bp_jump = np.empty(max(n * (k - 1), 1)), np.empty(max(n * (k - 1), 1))
    n_bp = 0
    grad = B0
    for i in range(n):
        class_lines(out_from, out_to, i, y[i] - 1, loss, a_row, s_row)
        slope, n_bp = upper_envelope(a, s, 0, costs[i], bp_at, bp_jump, n_bp)
        grad += slope
    return _subgradient_zero(A0, grad, bp_at[:n_bp], bp_jump[:n_bp])


@njit(cache=True, inline="always")
def class_lines(out_from, out_to, i, yi, loss, intercepts, slopes):
    """Example i's Crammer-Singer lines along out_from → out_to (the classes' outputs
    (n, k) at both ends, yi its 0-based class) into ``intercepts`` and ``slopes``: class
    c ≠ yi has out_from_ic − out_from_iy + loss and (out_to − out_from)_ic − (out_to −
    out_from)_iy, the true class 0 and 0. Also the cluster's
    (:func:`cpsvm.cluster.kernels.class_breakpoints`). Inlined: called, it made
    :func:`class_line_search` 3-5% slower."""
    from_y = out_from[i, yi]
    delta_y = out_to[i, yi] - from_y
    for c in range(out_from.shape[1]):
        intercepts[c] = out_from[i, c] - from_y + loss
        slopes[c] = (out_to[i, c] - out_from[i, c]) - delta_y
    intercepts[yi] = 0.0
    slopes[yi] = 0.0


@njit(cache=True)
def upper_envelope(intercepts, slopes, i, cost, bp_at, bp_jump, n_bp):
    """Example i's cost·max_j (intercepts_ij + λ·slopes_ij) on [0, ∞) (its row of the
    (n, k) arrays, read in place: a row view per example cost the HMM's searches much of
    their time): its breakpoints and slope jumps go to bp_at/bp_jump from n_bp (at most
    k − 1, room assumed); returns its slope at 0+ and the new n_bp. Also the walk of the
    cluster's line search, which sums the jumps exactly after it
    (:func:`cpsvm.cluster.kernels.class_breakpoints`)."""
    k = intercepts.shape[1]
    # The line on top at λ = 0+: largest intercept, then largest slope.
    cur = 0
    for j in range(1, k):
        if intercepts[i, j] > intercepts[i, cur] or (
            intercepts[i, j] == intercepts[i, cur] and slopes[i, j] > slopes[i, cur]
        ):
            cur = j
    slope = cost * slopes[i, cur]
    at = 0.0
    while True:
        nxt = -1
        best_at = np.inf
        for j in range(k):
            if slopes[i, j] > slopes[i, cur]:
                cross = (intercepts[i, cur] - intercepts[i, j]) / (slopes[i, j] - slopes[i, cur])
                if cross < at:
                    cross = at
                if cross < best_at or (cross == best_at and slopes[i, j] > slopes[i, nxt]):
                    best_at, nxt = cross, j
        if nxt < 0:
            break
        bp_at[n_bp] = best_at
        bp_jump[n_bp] = cost * (slopes[i, nxt] - slopes[i, cur])
        n_bp += 1
        cur, at = nxt, best_at
    return slope, n_bp


@njit(cache=True)
def class_risk(y, out, costs, loss):
    """Σ_i costs_i·max(0, max_{c ≠ y_i} out_ic − out_iy + loss): Crammer-Singer's risk
    at the outputs ``out`` (n, k), y 1-based."""
    n, k = out.shape
    risk = 0.0
    for i in range(n):
        yi = y[i] - 1
        slack = 0.0
        for c in range(k):
            if c != yi:
                slack = max(slack, out[i, c] - out[i, yi] + loss)
        risk += costs[i] * slack
    return risk


@njit(cache=True)
def _segment(w_from, w_to):
    """|w_to − w_from|² and w_from·(w_to − w_from), flat arrays, in one pass."""
    a = 0.0
    b = 0.0
    for j in range(len(w_from)):
        d = w_to[j] - w_from[j]
        a += d * d
        b += w_from[j] * d
    return a, b


@njit(cache=True)
def _move(a, b, step):
    """a += step·(b − a) in place (flat arrays); returns |a|² after the move."""
    total = 0.0
    for j in range(len(a)):
        a[j] += step * (b[j] - a[j])
        total += a[j] * a[j]
    return total


@njit(cache=True)
def binary_line_search(A0, B0, y, out_from, out_to, costs, loss=1.0, margin=1.0):
    """:func:`line_search` for the hinge loss, lines read off the outputs directly: example
    i contributes costs_i·max(0, a_i + λ·s_i), a_i = loss − margin·y_i·out_from_i,
    s_i = −margin·y_i·(out_to_i − out_from_i) — one breakpoint at most."""
    n = len(y)
    bp_at = np.empty(n)
    bp_jump = np.empty(n)
    n_bp = 0
    grad = B0
    # Written with selects instead of branches: the signs are data-dependent, and
    # mispredicted branches made this loop several times slower (benchmarks/bench_ocas.py).
    for i in range(n):
        a = hinge_excess(loss, margin, y[i], out_from[i])
        s = -margin * y[i] * (out_to[i] - out_from[i])
        cost_slope = costs[i] * s
        on_hinge = (a > 0.0) | ((a == 0.0) & (s > 0.0))  # at λ = 0+
        grad += cost_slope if on_hinge else 0.0
        # It leaves the hinge (s < 0) or reaches it (s > 0) at λ = −a/s.
        crosses = (s < 0.0) if on_hinge else (s > 0.0)
        bp_at[n_bp] = -a / s if s != 0.0 else 0.0
        bp_jump[n_bp] = abs(cost_slope)
        n_bp += 1 if crosses else 0
    return _subgradient_zero(A0, grad, bp_at[:n_bp], bp_jump[:n_bp])


@njit(cache=True)
def _subgradient_zero(A0, grad, at, jump):
    """Smallest λ ≥ 0 whose subdifferential A0·λ + grad + Σ_{at_p ≤ λ} jump_p (jumps ≥ 0,
    so monotone) contains 0. ``at``/``jump`` are reordered in place.

    Found by selection instead of sorting (quickselect, O(len) expected): the step is
    usually among the first breakpoints of thousands. The partitions swap every element
    instead of branching on it (faster than a three-way partition's data-dependent
    branches). Pivots are picked by position, so the result is deterministic.
    """
    if grad >= 0.0:
        return 0.0
    lo, hi = 0, len(at)  # unresolved breakpoints; grad includes every jump left of lo
    while lo < hi:
        a, b, c = at[lo], at[(lo + hi) // 2], at[hi - 1]
        pivot = max(min(a, b), min(max(a, b), c))  # median of three
        # [lo, hi) -> < pivot | >= pivot, summing the jumps below and at the pivot.
        lt = lo
        below = 0.0
        equal = 0.0
        for i in range(lo, hi):
            v, j = at[i], jump[i]
            below += j if v < pivot else 0.0
            equal += j if v == pivot else 0.0
            at[i], jump[i] = at[lt], jump[lt]
            at[lt], jump[lt] = v, j
            lt += 1 if v < pivot else 0
        if A0 * pivot + grad + below >= 0.0:  # 0 is reached left of the pivot
            hi = lt
        elif A0 * pivot + grad + below + equal >= 0.0:
            return pivot
        else:  # right of it: drop those at the pivot
            grad += below + equal
            lo = lt
            for i in range(lt, hi):
                v, j = at[i], jump[i]
                at[i], jump[i] = at[lo], jump[lo]
                at[lo], jump[lo] = v, j
                lo += 1 if v == pivot else 0
    return -grad / A0 if A0 > 0.0 else 0.0


@njit(cache=True, fastmath={"reassoc", "contract"})
def binary_move(y, costs, out_best, out_t, step, cut_lambda, loss, margin, coef, previous):
    """After the line search: out_best += step·(out_t − out_best) in place. Returns the
    risk Σ costs_i·max(0, loss − margin·y_i·out_i) at the new w_b and the cut at
    w_c = (1−λ)·w_b + λ·w_t: Σ costs_i·loss over its violators, their number, in
    ``coef`` the weight costs_i·margin·y_i of x_i in g (0 for the others), and the number
    of rows where ``coef`` differs from ``previous`` (the caller lists them only when it
    sums them). Selects instead of branches, and sums in any order (fastmath), so that
    the loop vectorizes (benchmarks/bench_ocas.py)."""
    risk = 0.0
    c = 0.0
    n_violated = 0
    n_changed = 0
    for i in range(len(y)):
        out_best[i] += step * (out_t[i] - out_best[i])
        risk += costs[i] * max(0.0, hinge_excess(loss, margin, y[i], out_best[i]))
        out_cut = (1.0 - cut_lambda) * out_best[i] + cut_lambda * out_t[i]
        violated = hinge_excess(loss, margin, y[i], out_cut) > 0.0
        c += costs[i] * loss if violated else 0.0
        coef[i] = costs[i] * margin * y[i] if violated else 0.0
        n_violated += 1 if violated else 0
        n_changed += 1 if coef[i] != previous[i] else 0
    return risk, c, n_violated, n_changed


class OcasOracle(LinearCutOracle):
    """Cuts for the engine's loop, taken where OCAS says (see the module docstring); the
    cut vectors are kept as by the linear oracle it extends.

    Minimises F(w) = ½|w|² + C·Σ_i costs_i·ξ_i(w), ξ_i the margin-rescaled slack of
    ``problem`` (see the module docstring) in its own scale; the engine runs with the same
    C and gets cuts c = Σ costs_i·Δ_i, g = Σ costs_i·δΨ_i. libocas: loss_scale 1 (and
    psi_scale ½), costs C_i (times SVMlight's cost:), C = 1. SVMperf / SVMmulticlass
    scale (cp_learn -w 9): the problems' defaults, costs cost_i/n and their C.
    """

    def __init__(self, problem, costs, C=1.0, method=1, cut_lambda=CUT_LAMBDA):
        super().__init__(problem)
        self.costs = np.asarray(costs, dtype=np.float64)
        self.C = float(C)
        self._C_costs = self.C * self.costs
        self.method = method
        self.cut_lambda = cut_lambda
        flip_gain = problem.flip_gain
        self.binary = flip_gain is not None
        self.loss = problem.loss_scale
        # Flipping y_i earns margin·y_i·⟨w, x_i⟩ (binary: δΨ = 2·psi_scale·y·x).
        self.margin = float(flip_gain) if self.binary else 1.0
        self.primal = math.inf
        self.w_best = np.zeros(problem.size_psi)
        self.out_best = None
        self._all_coef = self._all_sum = None  # see _violators_sum
        self._cut_coef = np.zeros(problem.n_examples)  # the last binary cut's coef and g
        self._cut_sum = np.zeros(problem.size_psi) if self.binary else None
        self._use_table(self.costs)  # the cuts' weights are the costs
        self.seconds = {"output": 0.0, "line_search": 0.0, "cut": 0.0}
        self.structured = problem.separate_at is not None
        self.pool_size, self.max_evaluations = 5, 3
        self._pool = []  # structured: recent argmax labellings (the line model)
        self._cut_at_best = False  # start_at(cut=True): the next cut is at w_best

    def start_at(self, w, cut=False):
        """Take ``w`` as the best point so far (a warm start: binary and multiclass); with
        ``cut``, the first cut is taken there too (a model's w: the cutting-plane model
        starts with F's cut at w_0, not at the master QP's w = 0)."""
        w = np.array(w, dtype=np.float64)
        out = self.outputs(w)
        self.w_best, self.out_best, self.primal = w, out, self.objective(w, out)
        self._cut_at_best = cut

    def set_C(self, C):
        """Go on at another C (a path over C): the cuts, Σ costs_i·δΨ_i, do not depend
        on C; the best point so far stays, its objective is re-evaluated at the new C."""
        self.C = float(C)
        self._C_costs = self.C * self.costs
        if self.out_best is None:
            return
        if self.structured:
            head = slice(0, self.problem.n_weights_at)
            _, slack = self._argmax_at(self.out_best, self.w_best[head])
            w = self.w_best
            self.primal = 0.5 * float(w @ w) + self.C * float(self.costs @ slack)
        else:
            self.primal = self.objective(self.w_best, self.out_best)

    def outputs(self, w):
        """⟨w, x_i⟩ for binary (n,), every class's score for multiclass (n, k)."""
        return self.problem.scores(w)

    def objective(self, w, out):
        y = self.problem.y
        if self.binary:
            risk, _, _ = hinge_cut(y, out, self.costs, self.loss, self.margin, np.empty(len(y)))
            return 0.5 * float(w @ w) + self.C * risk
        return 0.5 * float(w @ w) + self.C * class_risk(y, out, self.costs, self.loss)

    def separate(self, alpha, threshold=None):
        found = self._separate(alpha)
        if not self.structured:
            self.rounding = self._rounding()
        return found

    def _rounding(self) -> float:
        """How precisely F(w_b) is known (cpsvm.engine.magnitudes): the engine stops
        once the gap is within it (a huge C)."""
        w, out = self.w_best, self.out_best
        # A class score enters the Crammer-Singer loss as a difference of two.
        scale = self.margin if self.binary else 2.0
        return objective_rounding(
            0.5 * float(w @ w), self.C, self.costs, self.loss, scale * np.abs(out)
        )

    def _separate(self, alpha):
        if self._cut_at_best:
            self._cut_at_best = False
            return self._cut_at(self.out_best)
        t0 = time.perf_counter()
        w_t = self.weights(alpha)
        out_t = self.outputs(w_t)
        t1 = time.perf_counter()
        self.seconds["output"] += t1 - t0
        if self.structured:
            return self._structured_step(w_t, out_t, t1)
        if self.out_best is None or self.method == 0:
            # First iteration (w_t = 0), or plain cutting plane: the cut is taken at w_t.
            f_t = self.objective(w_t, out_t)
            if f_t < self.primal:
                self.primal, self.out_best = f_t, out_t.copy()
                if self.binary:
                    self.w_best = w_t
                else:  # moved in place from now on (w_t may be the cut table's buffer)
                    np.copyto(self.w_best, w_t)
            self.seconds["line_search"] += time.perf_counter() - t1
            return self._cut_at(out_t)
        if not self.binary:
            return self._class_step(w_t, out_t, t1)
        y = self.problem.y
        direction = w_t - self.w_best
        A0 = float(direction @ direction)
        B0 = float(self.w_best @ direction)
        step = binary_line_search(
            A0, B0, y, self.out_best, out_t, self._C_costs, self.loss, self.margin
        )
        self.w_best = self.w_best + step * direction
        coef = np.empty(len(out_t))
        risk, c, n_violated, n_changed = binary_move(
            y,
            self.costs,
            self.out_best,
            out_t,
            step,
            self.cut_lambda,
            self.loss,
            self.margin,
            coef,
            self._cut_coef,
        )
        self.primal = 0.5 * float(self.w_best @ self.w_best) + self.C * risk
        t2 = time.perf_counter()
        self.seconds["line_search"] += t2 - t1
        g = self._violators_sum(coef, n_violated, n_changed)
        self.oracle_calls += self.problem.n_examples
        self.seconds["cut"] += time.perf_counter() - t2
        return c, g

    def _class_step(self, w_t, out_t, started):
        """A Crammer-Singer iteration with no k·d or n·k temporary: w_b, its outputs and
        then out_t (to the cut point's outputs) move in place."""
        A0, B0 = _segment(self.w_best, w_t)
        y = self.problem.y
        step = class_line_search(A0, B0, y, self.out_best, out_t, self._C_costs, self.loss)
        half = 0.5 * _move(self.w_best, w_t, step)
        out_b = self.out_best.reshape(-1)
        _move(out_b, out_t.reshape(-1), step)
        self.primal = half + self.C * class_risk(y, self.out_best, self.costs, self.loss)
        # The cut point's outputs (1 − λ)·out_b + λ·out_t, in out_t's place.
        _move(out_t.reshape(-1), out_b, 1.0 - self.cut_lambda)
        self.seconds["line_search"] += time.perf_counter() - started
        return self._cut_at(out_t)

    def _argmax_at(self, out, w):
        """The most violated labelling at (out, w) and every example's slack there."""
        labels = self.problem.separate_at(out, w)
        self.oracle_calls += self.problem.n_examples
        slack = self.problem.losses(labels) - self.problem.margins_at(out, w, labels)
        return labels, np.maximum(slack, 0.0)

    def _pool_add(self, labels):
        self._pool.append(labels)
        del self._pool[: -self.pool_size]

    def _structured_step(self, w_t, out_t, started):
        """One OCAS iteration for a structured problem (see the module docstring)."""
        problem = self.problem
        if self.out_best is None or self.method == 0:
            labels, slack = self._argmax_at(out_t, w_t)
            f_t = 0.5 * float(w_t @ w_t) + self.C * float(self.costs @ slack)
            if f_t < self.primal:
                self.primal, self.w_best, self.out_best = f_t, w_t, out_t.copy()
            self._pool_add(labels)
            self.seconds["line_search"] += time.perf_counter() - started
            return self._structured_cut(labels)
        w_b, out_b = self.w_best, self.out_best
        direction, out_dir = w_t - w_b, out_t - out_b
        A0, B0 = float(direction @ direction), float(w_b @ direction)
        half_b = 0.5 * float(w_b @ w_b)
        # Only the part of w the oracle reads: ½|w_b + λ·d|² is half_b + λ·B0 + ½λ²·A0.
        head = slice(0, problem.n_weights_at)
        head_b, head_dir = w_b[head], direction[head]
        # Each pooled labelling's slack along the segment: Δ − m(w_b) − λ·m(direction).
        intercepts = [np.zeros(problem.n_examples)]
        slopes = [np.zeros(problem.n_examples)]

        def add_lines(labels):
            intercepts.append(problem.losses(labels) - problem.margins_at(out_b, head_b, labels))
            slopes.append(-problem.margins_at(out_dir, head_dir, labels))

        if self._pool:
            # the true labelling's scores once for the whole pool (where the problem can)
            many = problem.margins_many_at
            for labels, m_b, m_dir in zip(
                self._pool, many(out_b, head_b, self._pool), many(out_dir, head_dir, self._pool)
            ):
                intercepts.append(problem.losses(labels) - m_b)
                slopes.append(-m_dir)
        best = (0.0, self.primal, out_b)
        evaluated = {0.0}
        for _ in range(self.max_evaluations):
            I, S = np.column_stack(intercepts), np.column_stack(slopes)
            step = line_search(A0, B0, I, S, self._C_costs)
            if step in evaluated:
                break
            evaluated.add(step)
            half_s = half_b + step * (B0 + 0.5 * A0 * step)
            model = half_s + self.C * float(self.costs @ np.max(I + step * S, axis=1))
            out_s = out_dir * step
            out_s += out_b
            labels, slack = self._argmax_at(out_s, head_b + step * head_dir)
            f_s = half_s + self.C * float(self.costs @ slack)
            # Kept even when not the best: the next search's model is then exact here
            # too, so repeated searches along the same line cannot stall.
            self._pool_add(labels)
            if f_s < best[1]:
                best = (step, f_s, out_s)
            if f_s - model <= 1e-12 * max(1.0, abs(f_s)):
                break  # the model is exact at its minimiser: the exact step
            add_lines(labels)
        step, f_best, out_best = best
        if step != 0.0:
            self.w_best = w_b + step * direction
            self.out_best = out_best
            self.primal = f_best
        t2 = time.perf_counter()
        self.seconds["line_search"] += t2 - started
        mu = self.cut_lambda
        w_c = (1 - mu) * self.w_best[head] + mu * w_t[head]
        out_c = self.out_best * (1 - mu)
        out_c += mu * out_t
        labels, _ = self._argmax_at(out_c, w_c)
        self._pool_add(labels)
        return self._structured_cut(labels, t2)

    def _structured_cut(self, labels, started=None):
        t0 = time.perf_counter() if started is None else started
        c = float(self.costs @ self.problem.losses(labels))
        g = self.problem.delta_psi_sum(self.costs, labels)
        self.seconds["cut"] += time.perf_counter() - t0
        return c, g

    def _violators_sum(self, coef, n_violated, n_changed):
        """Σ coef_i·x_i over the violators, as a known sum plus the rows where its
        coefficients differ: the previous cut's (late iterations change few violators;
        ``n_changed`` rows did), none, or all examples' (computed once, when most
        violate)."""
        rows = self.problem.rows
        n = len(coef)
        if n_changed <= min(n_violated, n - n_violated):
            changed = np.flatnonzero(coef != self._cut_coef)
            g = self._cut_sum + rows.rows_sum(coef - self._cut_coef, rows=changed)
        elif 2 * n_violated <= n:
            g = rows.rows_sum(coef)
        else:
            if self._all_coef is None:
                # The same products binary_move forms, so the others' coefficients are
                # exactly 0 on the violators.
                self._all_coef = self.costs * self.margin * self.problem.y
                self._all_sum = rows.rows_sum(self._all_coef)
            g = self._all_sum - rows.rows_sum(self._all_coef - coef)
        self._cut_coef, self._cut_sum = coef, g
        return g

    def _cut_at(self, out):
        """The most violated cut where the outputs are ``out``."""
        t0 = time.perf_counter()
        labels = self._most_violated(out)
        self.oracle_calls += self.problem.n_examples
        c = float(self.costs @ self.problem.losses(labels))
        g = self._labelling_cut(labels)
        self.seconds["cut"] += time.perf_counter() - t0
        return c, g

    def _most_violated(self, out):
        y = self.problem.y
        if self.binary:
            return hinge_labels(y, out, self.loss, self.margin)
        return multiclass_most_violated(out, y, True, self.loss)


def merged_examples(X, y, costs):
    """Examples with the same features and label as one, their costs added: F(w) is the
    same, and every pass over the examples is shorter (real data sets such as a9a repeat
    many examples). Finding them costs a pass over X, about one OCAS iteration's.
    Returns the kept examples' X and y (the inputs themselves if none repeats), their
    costs and each example's position among them."""
    first = first_identical_rows(X, y)
    kept = first == np.arange(len(first))
    position = (np.cumsum(kept) - 1)[first]
    costs = np.bincount(position, weights=costs, minlength=position.max(initial=-1) + 1)
    if kept.all():
        return X, y, costs, position
    rows = np.flatnonzero(kept)
    X_kept = X[rows]
    if sp.issparse(X):  # whole rows in order: as canonical as X (spares a check pass)
        X_kept.has_canonical_format = X.has_canonical_format
    return X_kept, y[rows], costs, position
