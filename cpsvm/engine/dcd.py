"""Dual coordinate descent with shrinking for linear SVMs: the binary hinge loss (Hsieh,
Chang, Lin, Keerthi & Sundararajan, ICML 2008, Algorithm 3) and Crammer-Singer
multiclass by the sequential dual method (Keerthi, Sundararajan, Chang, Hsieh & Lin,
KDD 2008), the methods of LIBLINEAR's ``-s 3`` and ``-s 4``.

Problems, in SVMlight's convention with per-example costs C_i (libocas's, ocas_learn's)::

    binary   P(w) = ½|w|² + Σ_i C_i·max(0, 1 − y_i·⟨w, x_i⟩)
             D(α) = Σ_i α_i − ½|w(α)|²,   0 ≤ α_i ≤ C_i,   w(α) = Σ_i α_i·y_i·x_i
    multi    P(W) = ½|W|² + Σ_i C_i·max(0, max_{m ≠ y_i} ⟨w_m − w_{y_i}, x_i⟩ + 1)
             D(α) = Σ_i α_i,y_i − ½|W(α)|²,  α_im ≤ 0 (m ≠ y_i),  α_i,y_i ≤ C_i,
             Σ_m α_im = 0,   w_m = Σ_i α_im·x_i

W is kept (d, k), W[:, m] class m's weights, so that a non-zero x_ij reads or updates k
contiguous weights. A bias b ≠ 0 is a constant feature b appended to every x_i,
regularised like the others (libocas's -b, LIBLINEAR's -B): w gets one more entry (W
one more row), the bias weight, last.

One outer pass (an *iteration*) visits the active examples in a random order, from a
splitmix64 stream seeded by one draw of the caller's numpy Generator per pass (a draw of
numba's ``Generator.integers`` per example cost more than the update). Binary: α_i moves
to the minimum of D along it, clipped to its box; an example at a bound whose gradient
lies beyond the last pass's extreme projected gradients is *shrunk* (skipped) until the
active problem is solved to ``eps``, when all come back and are checked again.
Crammer-Singer: an example's k variables are a sub-problem solved exactly (sort k
values, find the multiplier of Σ_m α_im = 0); classes at their bound whose gradient
stays below the free ones' are shrunk within the example, an example with one class left
is shrunk, and all come back when the active problem is solved to a tolerance halved
from 1 down to ``eps``.

Stopping. ``stopping="pg"``: LIBLINEAR's rule, the largest projected-gradient violation
on a pass over every example is at most ``eps``. ``stopping="gap"`` (the default): the
duality gap P(w) − D(α) is at most ``tol_rel``·P(w) or ``tol_abs`` (ocas_learn's -r, -a),
for w the best primal point checked so far — the iterates' P(w) is noisy, the best one
only falls and D only rises, so the stop does not hang on one lucky pass. D is kept
up to date during the passes (each update's change of Σα and |w|²); P needs every
example's margins, a pass over X (threaded), so the gap is *checked* only when a cheap
estimate of P (each example's loss when last visited; the shrunk ones' at C_i exactly,
as a linear function of w) says the gap may be met (or is within 4x at the end of a
shrinking phase), when the PG rule holds on every example, or after passes that visited
``check_ratio`` times X's non-zeros (counted, not timed: the same seed gives the same
run). When the PG rule holds on every example but the gap is
still too wide, ``eps`` is divided by 10. Also stopped by ``max_iterations`` passes,
``time_limit`` seconds and ``should_stop()`` (Ctrl-C), asked between passes.

Warm start (a path over C, :func:`path_start`): α (and the w it implies) of another
run, brought into the new box (binary: clipped; Crammer-Singer: a row scaled so that
α_i,y_i ≤ C_i); w is recomputed from α unless α was unchanged and w given.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..compiled import JitOnly, njit
from ..sparse_ops import RowBlocks, as_csr, row_squared_norms
from ..threads import thread_count
from .cutting_plane import Progress


@dataclass
class DcdParams:
    tol_rel: float = 0.01  # "gap": stop when P − D <= tol_rel·P ...
    tol_abs: float = 0.0  # ... or <= tol_abs
    stopping: str = "gap"  # "gap" or "pg" (LIBLINEAR's; see the module docstring)
    eps: float = 0.1  # "pg": the tolerance; "gap": the first shrinking phase's
    max_iterations: int = 100000  # outer passes
    time_limit: float = math.inf  # seconds
    shrinking: bool = True
    check_ratio: float = 10.0  # "gap": check at least every check_ratio·nnz(X) visited
    seed: int = 0  # the random order of the passes (or give ``rng``)
    n_threads: int | None = None  # threads for the gap checks (None: the caller's count)

    def validate(self):
        if self.stopping not in ("gap", "pg"):
            raise ValueError(f"expected stopping 'gap' or 'pg', got {self.stopping!r}")
        if not (min(self.tol_rel, self.tol_abs, self.check_ratio) >= 0 and self.eps > 0):
            raise ValueError("expected tol_rel, tol_abs, check_ratio >= 0 and eps > 0")


@dataclass
class DcdResult:
    """``w``: the best primal point checked — the model — (d,) binary, (d, k)
    Crammer-Singer, one more entry (row) with a bias; ``primal`` P(w). ``alpha``: the
    last dual point, ``dual`` D(α), ``w_alpha`` the weights it implies (equal to w when
    the last point was the best; with ``alpha`` the warm start of another run). ``gap`` is
    P(w) − D(α), a true duality gap. ``criterion`` says which rule stopped a converged
    run: "tol_rel", "tol_abs" or "pg"."""

    alpha: np.ndarray
    w: np.ndarray
    w_alpha: np.ndarray
    status: str  # converged | max_iterations | time_limit | interrupted
    criterion: str
    iterations: int  # outer passes
    updates: int  # coordinate (binary) or example sub-problem (Crammer-Singer) updates
    primal: float
    dual: float
    violation: float  # the last pass's largest projected-gradient violation
    active: int  # examples active after the last pass
    checks: int  # gap checks (passes over X for P)
    seconds_total: float = 0.0
    seconds_check: float = 0.0

    @property
    def gap(self) -> float:
        return self.primal - self.dual


# -- kernels ----------------------------------------------------------------------------

# Each example's scalars in one row of a table (a cache line, not one per array): binary
# y_i, C_i, |x_i|² (+ b²), α_i, the hinge loss when last visited; Crammer-Singer C_i,
# |x_i|², the loss, y_i (0-based), its active classes' count and y_i's place among them.
Y, UPPER, NORM, ALPHA, LOSS = range(5)
CS_UPPER, CS_NORM, CS_LOSS, CS_Y, CS_ACTIVE, CS_Y_AT = range(6)
# Rows are visited in random order, so each costs cache misses: the example PREFETCH
# places ahead is fetched while this one is computed (benchmarks/bench_liblinear.py).
PREFETCH = 4


# LLVM's prefetch (read, high locality), an intrinsic: numba's alone, compiled into the
# kernels that call it and never imported by a run of the compiled code.
_prefetch = JitOnly("cpsvm.engine.prefetch:prefetch")


@njit(cache=True, nogil=True, inline="always")
def _prefetch_ahead(indptr, indices, data, index, s, active, table):
    """Prefetch the row of X and of ``table`` of the example PREFETCH places after s in
    index[:active] (its indptr entry was prefetched PREFETCH places earlier)."""
    if s + 2 * PREFETCH < active:
        _prefetch(indptr, index[s + 2 * PREFETCH])
    if s + PREFETCH < active:
        j = index[s + PREFETCH]
        lo, hi = indptr[j], indptr[j + 1]
        for p in range(lo, hi, 16):  # 64-byte lines of the indices
            _prefetch(indices, p)
        for p in range(lo, hi, 8):  # ... and of the values
            _prefetch(data, p)
        row = table[j]
        _prefetch(row, 0)
        _prefetch(row, len(row) - 1)


@njit(cache=True, nogil=True, inline="always")
def _shuffle(index, active, seed):
    """Fisher-Yates on index[:active], the draws from splitmix64 seeded with ``seed``."""
    state = np.uint64(seed)
    for s in range(active - 1):
        state += np.uint64(0x9E3779B97F4A7C15)
        z = state
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
        # a bounded draw: the top 32 bits times the range
        t = s + np.int64(((z >> np.uint64(32)) * np.uint64(active - s)) >> np.uint64(32))
        index[s], index[t] = index[t], index[s]


@njit(cache=True, nogil=True)
def _binary_pass(indptr, indices, data, bias, ex, w, index, active, pg_old, seed, sums, lin):
    """One pass of Algorithm 3 over index[:active], shuffled; ``ex`` the examples' table
    (Y, UPPER, ...), w[-1] the bias weight, ``pg_old`` the last pass's (max, min)
    projected gradient (±inf: shrink nothing). For the primal estimate, ``sums`` holds
    [Σα, |w|², Σ C_i·loss_i, Σ C_i over the examples shrunk at C_i] and ``lin`` Σ C_i·y_i·x_i
    over those: their losses (they violate their margin) are sums[3] − ⟨w, lin⟩ whatever w
    does later. The shrunk examples go after the others in index[:active] (``lin[d + 1:]``
    is scratch for them). Returns (active, max PG, min PG, updates, non-zeros visited)."""
    d = w.shape[0] - 1
    shrunk = index[len(ex) :]  # scratch: the second half of the index array
    _shuffle(index, active, seed)
    pg_max, pg_min = -np.inf, np.inf
    sum_alpha, norm2, risk, shrunk_cost = sums[0], sums[1], sums[2], sums[3]
    updates = kept = n_shrunk = visited = 0
    for s in range(active):
        _prefetch_ahead(indptr, indices, data, index, s, active, ex)
        i = index[s]
        lo, hi = np.uint64(indptr[i]), np.uint64(indptr[i + 1])
        visited += indptr[i + 1] - indptr[i]
        dot = bias * w[d]
        for p in range(lo, hi):
            dot += data[p] * w[np.uint64(indices[p])]
        e = ex[i]
        yi, a, c = e[Y], e[ALPHA], e[UPPER]
        g = yi * dot - 1.0
        risk += c * (max(0.0, -g) - e[LOSS])
        e[LOSS] = max(0.0, -g)
        pg = 0.0
        if a == 0.0:
            if g > pg_old[0]:  # stays at 0
                shrunk[n_shrunk] = i
                n_shrunk += 1
                continue
            pg = min(g, 0.0)
        elif a == c:
            if g < pg_old[1]:  # stays at C_i: its loss joins the linear part
                shrunk[n_shrunk] = i
                n_shrunk += 1
                risk -= c * e[LOSS]
                e[LOSS] = 0.0
                shrunk_cost += c
                for p in range(lo, hi):
                    lin[np.uint64(indices[p])] += c * yi * data[p]
                lin[d] += c * yi * bias
                continue
            pg = max(g, 0.0)
        else:
            pg = g
        pg_max = max(pg_max, pg)
        pg_min = min(pg_min, pg)
        if abs(pg) > 1e-12:
            q = e[NORM]
            new = min(max(a - g / q, 0.0), c) if q > 0.0 else c  # x_i = 0: g = −1
            step = (new - a) * yi
            e[ALPHA] = new
            sum_alpha += new - a
            norm2 += step * (2.0 * dot + step * q)
            for p in range(lo, hi):
                w[np.uint64(indices[p])] += step * data[p]
            w[d] += step * bias
            updates += 1
        index[kept] = i
        kept += 1
    for t in range(n_shrunk):  # (a loop: slice assignment took numba seconds to compile)
        index[kept + t] = shrunk[t]
    sums[0], sums[1], sums[2], sums[3] = sum_alpha, norm2, risk, shrunk_cost
    return kept, pg_max, pg_min, updates, visited


@njit(cache=True, nogil=True)
def _cs_pass(indptr, indices, data, bias, ex, alpha, order, W, index, active, shrink, seed, sums):
    """One pass of the sequential dual method over index[:active], shuffled; ``ex`` the
    examples' table (CS_UPPER, ...). Example i's classes are order[i, :ex[i, CS_ACTIVE]]
    (the active ones first), its true class at place ex[i, CS_Y_AT] (past the active
    ones: shrunk). W[-1] is the bias row. ``sums``: Σ_i α_i,y_i, |W|² and Σ C_i·loss_i,
    the loss when last visited. The shrunk examples go after the others. Returns (active,
    largest violation max G − min G, updates, non-zeros visited)."""
    d, k = W.shape[0] - 1, W.shape[1]
    shrunk = index[len(ex) :]
    _shuffle(index, active, seed)
    G, B, full, sorted_ = np.empty(k), np.empty(k), np.empty(k), np.empty(k)
    changed, deltas = np.empty(k, dtype=np.int64), np.empty(k)
    sum_alpha, norm2, risk = sums[0], sums[1], sums[2]
    worst = -np.inf
    updates = kept = n_shrunk = visited = 0
    for s in range(active):
        _prefetch_ahead(indptr, indices, data, index, s, active, ex)
        if s + PREFETCH < active:  # and its α and class order
            j = index[s + PREFETCH]
            for c in range(0, k, 8):
                _prefetch(alpha[j], c)
            for c in range(0, k, 16):
                _prefetch(order[j], c)
        i = index[s]
        e = ex[i]
        A, Ci = e[CS_NORM], e[CS_UPPER]
        if A <= 0.0:  # x_i = 0: its α was set once (see _cs_start)
            index[kept] = i
            kept += 1
            continue
        na, yp, yi = np.int64(e[CS_ACTIVE]), np.int64(e[CS_Y_AT]), np.int64(e[CS_Y])
        ai, oi = alpha[i], order[i]
        lo, hi = np.uint64(indptr[i]), np.uint64(indptr[i + 1])
        visited += indptr[i + 1] - indptr[i]
        # G_m = ⟨w_m, x_i⟩ + [m ≠ y_i] over the active classes, and ⟨w_y, x_i⟩
        if 2 * na >= k:  # most classes: the contiguous sum vectorises, then gather
            for c in range(k):
                full[c] = bias * W[d, c]
            for p in range(lo, hi):
                v, row = data[p], W[np.uint64(indices[p])]
                for c in range(k):
                    full[c] += v * row[c]
            for m in range(na):
                G[m] = full[oi[m]] + 1.0
            g_y = full[yi]
        else:
            g_y = bias * W[d, yi]
            for m in range(na):
                G[m] = bias * W[d, oi[m]] + 1.0
            for p in range(lo, hi):
                v, row = data[p], W[np.uint64(indices[p])]
                for m in range(na):
                    G[m] += v * row[oi[m]]
                g_y += v * row[yi]
        if yp < na:
            G[yp] -= 1.0
        # optimal when max_m G_m <= min of G over the classes below their bound
        lowest, highest = np.inf, -np.inf
        for m in range(na):
            if ai[oi[m]] < 0.0 and G[m] < lowest:
                lowest = G[m]
            highest = max(highest, G[m])
        if yp < na and ai[oi[yp]] < Ci and G[yp] < lowest:
            lowest = G[yp]
        risk += Ci * (max(0.0, highest - g_y) - e[CS_LOSS])  # ξ_i = max_m G_m − ⟨w_y, x_i⟩
        e[CS_LOSS] = max(0.0, highest - g_y)
        if shrink:  # classes at their bound whose gradient is below every free one
            m = 0
            while m < na:
                if ai[oi[m]] == (Ci if m == yp else 0.0) and G[m] < lowest:
                    na -= 1
                    oi[m], oi[na] = oi[na], oi[m]
                    G[m], G[na] = G[na], G[m]
                    yp = m if yp == na else (na if yp == m else yp)
                else:
                    m += 1
            e[CS_ACTIVE], e[CS_Y_AT] = na, yp
            if na <= 1:
                shrunk[n_shrunk] = i
                n_shrunk += 1
                continue
        index[kept] = i
        kept += 1
        if highest - lowest <= 1e-12:
            continue
        worst = max(worst, highest - lowest)
        for m in range(na):
            B[m] = G[m] - A * ai[oi[m]]
        beta = _cs_multiplier(B, na, yp, A, Ci, sorted_)
        n_changed = 0
        for m in range(na):
            c = oi[m]
            new = min((beta - B[m]) / A, Ci if m == yp else 0.0)
            delta = new - ai[c]
            if delta != 0.0:
                ai[c] = new
                # |W|² moves by 2·δ·⟨w_c, x_i⟩ + δ²·|x_i|²
                norm2 += delta * (2.0 * (G[m] - (0.0 if m == yp else 1.0)) + delta * A)
                sum_alpha += delta if m == yp else 0.0
                changed[n_changed] = c
                deltas[n_changed] = delta
                n_changed += 1
        for p in range(lo, hi):
            v, row = data[p], W[np.uint64(indices[p])]
            for t in range(n_changed):
                row[changed[t]] += deltas[t] * v
        for t in range(n_changed):
            W[d, changed[t]] += deltas[t] * bias
        updates += 1
    for t in range(n_shrunk):  # (a loop: slice assignment took numba seconds to compile)
        index[kept + t] = shrunk[t]
    sums[0], sums[1], sums[2] = sum_alpha, norm2, risk
    return kept, worst, updates, visited


@njit(cache=True, nogil=True, inline="always")
def _cs_multiplier(B, na, yp, A, C, sorted_):
    """β of the sub-problem min ½A·|α|² + B·α, α_m ≤ C_m, Σα = 0 over the na active
    classes (C_m = C for the true class at yp, 0 otherwise; a shrunk true class sits
    at C): α_m = min(C_m, (β − B_m)/A) where Σ_m max(0, D_m − β) = A·C, D = B + A·C_m."""
    for m in range(na):
        sorted_[m] = B[m] + (A * C if m == yp else 0.0)
    gap = 1  # Shell sort, descending (numba's sort cost seconds of compilation)
    while gap < na // 3:
        gap = 3 * gap + 1
    while gap > 0:
        for m in range(gap, na):
            value, j = sorted_[m], m
            while j >= gap and sorted_[j - gap] < value:
                sorted_[j] = sorted_[j - gap]
                j -= gap
            sorted_[j] = value
        gap //= 3
    total = sorted_[0] - A * C
    r = 1
    while r < na and total < r * sorted_[r]:
        total += sorted_[r]
        r += 1
    return total / r


@njit(cache=True, nogil=True)
def _cs_losses(y, out, loss):
    """loss_i = max(0, max_{m ≠ y_i} out_im − out_iy + 1) (y 0-based) into ``loss``."""
    n, k = out.shape
    for i in range(n):
        top = -np.inf
        for c in range(k):
            if c != y[i]:
                top = max(top, out[i, c])
        loss[i] = max(0.0, top + 1.0 - out[i, y[i]])


# -- the outer loop ---------------------------------------------------------------------


class _Problem:
    """What the loop needs: ``run_pass(seed)`` -> (violation, updates, non-zeros
    visited); ``phase_done(eps)`` -> None, "all" (the PG rule holds on a pass over every
    example) or "active" (on the active set: all were brought back); ``unshrink()``;
    ``objectives()`` -> exact (P, D) now, resetting the running ``sums``."""

    def setup(self, X, costs, bias, w, n_columns):
        self.X, self.costs, self.bias, self.w = X, costs, float(bias), w
        n = X.shape[0]
        self.ex = np.zeros((n, n_columns))
        self.index = np.arange(2 * n, dtype=np.int32 if 2 * n < 2**31 else np.int64)
        self.active = n
        self.rows = None  # RowBlocks of X, made at the first check
        self.sums = np.zeros(4)
        return self.ex

    def dual_now(self):
        """D(α) from the running sums (their rounding drifts between checks)."""
        return float(self.sums[0] - 0.5 * self.sums[1])

    def dual_exact(self):
        w = self.w.reshape(-1)
        return self.dual_linear() - 0.5 * float(w @ w)

    def primal_estimate(self):
        """½|w|² plus the losses seen at the examples' last visits (w moved since): not a
        bound, only what says when a check is worth its pass over X."""
        return float(0.5 * self.sums[1] + self.sums[2])

    def checked(self, risk):
        """(P, D) after a check found the risk; the running sums' drift dropped."""
        w = self.w.reshape(-1)
        half = 0.5 * float(w @ w)
        self.sums[:3] = (self.dual_linear(), 2.0 * half, risk)
        return half + risk, self.sums[0] - half


def _gap_met(primal, dual, params):
    """Which tolerance the gap meets ("" none, or no primal yet)."""
    if not math.isfinite(primal):
        return ""
    if primal - dual <= params.tol_abs:
        return "tol_abs"
    return "tol_rel" if primal - dual <= params.tol_rel * primal else ""


def _run(problem, params, rng, callback, should_stop, start=None):
    """Passes, gap checks and the stopping rules (module docstring); the result's fields
    with ``best`` the best primal point's weights. ``start``: (P(w), w) of a point known
    before the first pass (a warm start's model, w shaped as the problem's)."""
    started = time.perf_counter()
    gap_rule = params.stopping == "gap"
    eps = params.eps
    status, criterion = "max_iterations", ""
    passes = updates = checks = since_check = 0  # since_check: non-zeros visited
    violation, seconds_check = math.inf, 0.0
    best, best_w = (math.inf, None) if start is None else start  # the lowest P(w), that w
    trust = 1.0  # halved each time the estimate called a check that missed

    def check():
        nonlocal best, best_w, checks, seconds_check, since_check
        t0 = time.perf_counter()
        primal, dual = problem.objectives()
        if primal < best:
            best, best_w = primal, problem.w.copy()
        seconds_check += time.perf_counter() - t0
        checks += 1
        since_check = 0
        return dual

    while passes < params.max_iterations:
        if should_stop is not None and should_stop():
            status = "interrupted"
            break
        if time.perf_counter() - started >= params.time_limit:
            status = "time_limit"
            break
        violation, n, visited = problem.run_pass(int(rng.integers(0, 2**63)))
        passes += 1
        updates += n
        since_check += visited
        phase = problem.phase_done(eps)
        if not gap_rule:
            criterion = "pg" if phase == "all" else ""
        else:
            # The best point checked may be certified by the dual's progress alone.
            if _gap_met(best, problem.dual_now(), params):
                criterion = _gap_met(best, problem.dual_exact(), params)
            estimate = problem.primal_estimate() - problem.dual_now()  # of the gap
            tolerance = max(params.tol_abs, params.tol_rel * problem.primal_estimate())
            hint = estimate <= trust * tolerance
            due = since_check >= params.check_ratio * problem.X.nnz
            # a phase on the active set ended: worth a check if the estimate is near
            near = phase == "active" and estimate <= 4.0 * tolerance
            if not criterion and (phase == "all" or near or hint or due):
                dual = check()  # (before reading best: the check may lower it)
                criterion = _gap_met(best, dual, params)
                trust *= 0.5 if hint and not criterion else 1.0
                if phase == "all" and not criterion:  # solved to eps, still a gap: finer
                    eps *= 0.1
                    problem.unshrink()
        status = "converged" if criterion else status
        if callback is not None:
            dual_now = problem.dual_now()
            callback(
                Progress(
                    iteration=passes,
                    primal=best,
                    dual=dual_now,
                    gap=best - dual_now,
                    violation=violation,
                    working_set=problem.active,
                    oracle_calls=updates,
                    seconds=time.perf_counter() - started,
                )
            )
        if criterion:
            break
    # P of the last point too (unless a check just certified the best), and D exactly
    dual = check() if status != "converged" or not gap_rule else problem.dual_exact()
    return dict(
        status=status,
        criterion=criterion,
        iterations=passes,
        updates=updates,
        primal=best,
        dual=dual,
        violation=violation,
        active=problem.active,
        checks=checks,
        seconds_total=time.perf_counter() - started,
        seconds_check=seconds_check,
        best=best_w,
    )


def _inputs(X, costs, params):
    params = params or DcdParams()
    params.validate()
    X = as_csr(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    n = X.shape[0]
    costs = np.asarray(costs, dtype=np.float64)
    costs = np.full(n, float(costs)) if costs.ndim == 0 else costs
    if costs.shape != (n,) or not np.all((costs > 0) & (costs < math.inf)):
        raise ValueError(f"expected {n} finite costs C_i > 0")
    return X, costs, params


def _result(problem, params, rng, callback, should_stop, start=None):
    """Run ``problem`` and return its DcdResult (weights without the bias entry when
    there is no bias)."""
    rng = rng if rng is not None else np.random.default_rng(params.seed)
    with thread_count(params.n_threads):
        info = _run(problem, params, rng, callback, should_stop, start)
    size = len(problem.w) - (problem.bias == 0)
    return DcdResult(problem.alpha(), info.pop("best")[:size], problem.w[:size], **info)


# -- binary -----------------------------------------------------------------------------


class _BinaryHinge(_Problem):
    def __init__(self, X, y, costs, bias, alpha, w, shrinking):
        ex = self.setup(X, costs, bias, w, 5)
        ex[:, Y], ex[:, UPPER], ex[:, ALPHA], ex[:, LOSS] = y, costs, alpha, 1.0
        row_squared_norms(X.indptr, X.data, self.bias**2, ex[:, NORM])
        self.y = ex[:, Y]
        self.shrinking = shrinking
        self.pg_old = np.array([np.inf, -np.inf])
        self.pg = (np.inf, -np.inf)
        self.lin = np.zeros_like(w)  # Σ C_i·y_i·x_i over the examples shrunk at C_i
        self.sums[:3] = (alpha.sum(), w @ w, costs.sum())
        if alpha.any():
            self.objectives()

    def alpha(self):
        return self.ex[:, ALPHA].copy()

    def dual_linear(self):
        return float(self.ex[:, ALPHA].sum())

    def primal_estimate(self):
        return super().primal_estimate() + float(self.sums[3] - self.w @ self.lin)

    def run_pass(self, seed):
        X = self.X
        self.active, pg_max, pg_min, updates, visited = _binary_pass(
            X.indptr, X.indices, X.data, self.bias, self.ex, self.w, self.index,
            self.active, self.pg_old, seed, self.sums, self.lin,
        )  # fmt: skip
        self.pg = (pg_max, pg_min)
        return pg_max - pg_min, updates, visited

    def phase_done(self, eps):
        pg_max, pg_min = self.pg
        none = self.active == 0  # every example shrunk: solved on the (empty) active set
        if none or (pg_max - pg_min <= eps and abs(pg_max) <= eps and abs(pg_min) <= eps):
            if self.active == len(self.ex):
                return "all"
            self.unshrink()
            return "active"
        if self.shrinking:  # LIBLINEAR's thresholds: only a sign-consistent extreme
            self.pg_old[:] = (pg_max if pg_max > 0 else np.inf, pg_min if pg_min < 0 else -np.inf)
        return None

    def unshrink(self):
        # The shrunk examples' losses are missing from the estimate until the next pass
        # has visited them all.
        self.active = len(self.ex)
        self.pg_old[:] = (np.inf, -np.inf)
        self.sums[3] = 0.0
        self.lin[:] = 0.0

    def objectives(self):
        if self.rows is None:
            self.rows = RowBlocks(self.X)
        out = self.rows.dot(self.w[:-1])
        out += self.bias * self.w[-1]
        loss = np.maximum(0.0, 1.0 - self.y * out)
        self.ex[:, LOSS] = loss
        objectives = self.checked(float(self.costs @ loss))
        # The examples shrunk at C_i stay in the linear part (sums[3], lin).
        at_upper = self.index[self.active : len(self.ex)]
        at_upper = at_upper[self.ex[at_upper, ALPHA] == self.ex[at_upper, UPPER]]
        self.sums[2] -= self.costs[at_upper] @ loss[at_upper]
        self.ex[at_upper, LOSS] = 0.0
        return objectives


def binary_hinge_dcd(
    X, y, costs, *, bias=0.0, params=None, alpha=None, w=None, rng=None, callback=None,
    should_stop=None, start=None,
) -> DcdResult:  # fmt: skip
    """Minimise ½|w|² + Σ_i C_i·max(0, 1 − y_i·⟨w, x_i⟩) (labels ±1, ``costs`` the C_i or
    one C) by dual coordinate descent (see the module docstring). ``alpha``/``w``: a warm
    start (w, if given, must be Σ α_i·y_i·x_i, with the bias weight last when ``bias``).
    ``rng``: the numpy Generator of the pass orders (default: ``params.seed``'s).
    ``callback(Progress)`` after every pass; ``should_stop()`` before each. ``start``:
    (P(v), v) of a primal point v known already (a model's w, the bias weight last), the
    best point until a better one is checked."""
    X, costs, params = _inputs(X, costs, params)
    n, d = X.shape
    y = np.where(np.asarray(y, dtype=np.float64) > 0, 1.0, -1.0)
    if alpha is None:
        alpha, w = np.zeros(n), np.zeros(d + 1)
    else:
        alpha = np.asarray(alpha, dtype=np.float64)
        if alpha.shape != (n,):
            raise ValueError(f"expected alpha of shape ({n},), got {alpha.shape}")
        clipped = np.clip(alpha, 0.0, costs)
        if w is not None and np.array_equal(clipped, alpha):
            w = np.asarray(w, dtype=np.float64)
            if w.shape != (d + (bias != 0),):
                raise ValueError(f"expected w of shape ({d + (bias != 0)},), got {w.shape}")
            w = np.append(w, 0.0) if bias == 0 else w.copy()
        else:
            coef = clipped * y
            w = np.append(np.asarray(X.T @ coef).ravel(), bias * coef.sum())
        alpha = clipped
    problem = _BinaryHinge(X, y, costs, bias, alpha, w, params.shrinking)
    return _result(problem, params, rng, callback, should_stop, _start_point(start, w.shape))


# -- Crammer-Singer ---------------------------------------------------------------------


class _CrammerSinger(_Problem):
    def __init__(self, X, y0, costs, bias, alpha, W, shrinking, eps):
        n, k = alpha.shape
        ex = self.setup(X, costs, bias, W, 6)
        ex[:, CS_UPPER], ex[:, CS_LOSS] = costs, 1.0 if k > 1 else 0.0
        ex[:, CS_Y], ex[:, CS_ACTIVE], ex[:, CS_Y_AT] = y0, k, y0
        row_squared_norms(X.indptr, X.data, self.bias**2, ex[:, CS_NORM])
        self.y, self.k, self.alpha_, self.shrinking = y0, k, alpha, shrinking
        self.order = np.tile(np.arange(k, dtype=np.int32), (n, 1))
        self.eps_shrink = max(10.0 * eps, 1.0)  # LIBLINEAR's first phase's
        self.from_all = True
        self.sums[:3] = (self.dual_linear(), W.reshape(-1) @ W.reshape(-1), costs @ ex[:, CS_LOSS])
        if alpha.any():
            self.objectives()

    def alpha(self):
        return self.alpha_

    def dual_linear(self):
        return float(self.alpha_[np.arange(len(self.y)), self.y].sum())

    def run_pass(self, seed):
        X = self.X
        self.active, worst, updates, visited = _cs_pass(
            X.indptr, X.indices, X.data, self.bias, self.ex, self.alpha_, self.order,
            self.w, self.index, self.active, self.shrinking, seed, self.sums,
        )  # fmt: skip
        self.worst = max(worst, 0.0)
        return self.worst, updates, visited

    def phase_done(self, eps):
        if self.worst < self.eps_shrink:
            if self.worst < eps and self.from_all:
                return "all"
            self.unshrink()
            self.eps_shrink = max(self.eps_shrink / 2, eps)
            return "active"
        self.from_all = False
        return None

    def unshrink(self):
        self.active = len(self.y)
        self.ex[:, CS_ACTIVE] = self.k
        self.from_all = True

    def objectives(self):
        if self.rows is None:
            self.rows = RowBlocks(self.X)
        out = self.rows.times(self.w[:-1])
        out += self.bias * self.w[-1]
        loss = np.empty(len(self.y))
        _cs_losses(self.y, out, loss)
        self.ex[:, CS_LOSS] = loss
        return self.checked(float(self.costs @ loss) if self.k > 1 else 0.0)


def crammer_singer_dcd(
    X, y, costs, *, n_classes=None, bias=0.0, params=None, alpha=None, W=None, rng=None,
    callback=None, should_stop=None, start=None,
) -> DcdResult:  # fmt: skip
    """Minimise ½|W|² + Σ_i C_i·max(0, max_{m ≠ y_i} ⟨w_m − w_{y_i}, x_i⟩ + 1) (labels
    1..k) by the sequential dual method (see the module docstring). ``alpha`` (n, k) and
    ``W`` (d, k) (with the bias row last when ``bias``): a warm start; the rest as
    :func:`binary_hinge_dcd`. The result's w is W, (d, k)."""
    X, costs, params = _inputs(X, costs, params)
    labels = np.asarray(y).astype(np.int64)
    k = int(n_classes or labels.max(initial=1))
    if len(labels) and (labels.min() < 1 or labels.max() > k):
        raise ValueError(f"expected class labels 1..{k}")
    alpha, W = _cs_start(X, labels - 1, costs, k, float(bias), alpha, W)
    problem = _CrammerSinger(X, labels - 1, costs, bias, alpha, W, params.shrinking, params.eps)
    return _result(problem, params, rng, callback, should_stop, _start_point(start, W.shape))


def linear_svm_dcd(
    X, y, costs, *, multiclass, n_classes=None, bias=0.0, params=None, callback=None,
    should_stop=None,
):  # fmt: skip
    """(the weights flat — multiclass: W's rows —, the DcdResult) of
    :func:`crammer_singer_dcd` (labels 1..k) or :func:`binary_hinge_dcd` (labels ±1)."""
    run = dict(bias=bias, params=params, callback=callback, should_stop=should_stop)
    if multiclass:
        result = crammer_singer_dcd(X, y, costs, n_classes=n_classes, **run)
    else:
        result = binary_hinge_dcd(X, y, costs, **run)
    return result.w.reshape(-1), result


def path_start(result: DcdResult, ratio: float, multiclass: bool):
    """(alpha, w) to start a run at C·ratio from ``result`` at C, for a path over C.
    Binary: α and w scaled by the ratio, the examples at their bound stay there (fewer
    passes than from α itself, measured in tests/engine/test_dcd.py's warm starts).
    Crammer-Singer: α itself (scaled, it did no better)."""
    if multiclass:
        return result.alpha.copy(), result.w_alpha.copy()
    return result.alpha * ratio, result.w_alpha * ratio


def _start_point(start, shape):
    """``start`` (P, v) with v padded to the problem's w (a zero bias weight last)."""
    if start is None:
        return None
    primal, v = start
    full = np.zeros(shape)
    v = np.asarray(v, dtype=np.float64)
    full[: v.shape[0]] = v
    return float(primal), full


def _cs_start(X, y0, costs, k, bias, alpha, W):
    """The starting (α, W) with d + 1 rows: zeros, or the warm start in the new box; the
    examples with x_i = 0 (and no bias) get their optimal α (they never change W)."""
    n, d = X.shape
    recompute = False
    if alpha is None:
        alpha = np.zeros((n, k))
    else:
        alpha = np.array(alpha, dtype=np.float64)  # a copy: scaled in place
        if alpha.shape != (n, k):
            raise ValueError(f"expected alpha of shape ({n}, {k}), got {alpha.shape}")
        on_y = alpha[np.arange(n), y0]
        over = on_y > costs
        alpha[over] *= (costs[over] / on_y[over])[:, None]
        alpha[over, y0[over]] = costs[over]  # exactly at the bound, not a rounding above
        recompute = W is None or over.any()
    empty = np.diff(X.indptr) == 0 if bias == 0 else np.zeros(n, dtype=bool)
    if k > 1 and empty.any():  # loss 1 whatever W: α_iy = C_i, another class −C_i
        alpha[empty] = 0.0
        alpha[empty, y0[empty]] = costs[empty]
        alpha[empty, (y0[empty] + 1) % k] = -costs[empty]
    full = np.zeros((d + 1, k))
    if recompute:
        full[:d], full[d] = np.asarray(X.T @ alpha), bias * alpha.sum(axis=0)
    elif W is not None:
        if np.shape(W) != (d + (bias != 0), k):
            raise ValueError(f"expected W of shape ({d + (bias != 0)}, {k}), got {np.shape(W)}")
        full[: d + (bias != 0)] = W
    return alpha, full
