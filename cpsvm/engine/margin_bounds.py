"""Margin-change bounds (Guillory & Bilmes, *Practical Methods for Exploiting Bounds on
Change in the Margin*): the hinge or Huber loss Σ c_i·ℓ(m_i) and its subgradient at a
new w, computing only the margins that can have crossed a kink since a reference w′.

For m_i = y_i·(⟨w, x_i⟩ + b) and the margins m′_i = y_i·⟨w′, x_i⟩ stored at w′,

    |y_i·⟨w − w′, x_i⟩ − y_i·⟨w − w′, μ⟩| ≤ |w − w′|·R,   R = max_i |x_i − μ|,

μ = 0 (the paper's bound, R the largest |x_i|) or the mean of the examples (§5's sphere
around the data mean: ⟨w − w′, μ⟩ is then computed exactly, once per evaluation).
Positives and negatives are sorted apart by m′ (the offset variant), so within a class
the exact part y·(⟨w − w′, μ⟩ + b) is one shift and the rows whose loss cannot have left
its linear part, or its zero part, are two tails of the sorted order:

* **Algorithm 1** (:meth:`SortedMargins.resort`): margins at w′, sorted per class, the
  prefix sums of c_i and c_i·y_i, and the sum S = Σ c_i·y_i·x_i of the rows in the
  linear part at w′ — the *sparse-data variant* of §3: only the sum at the boundary is
  stored, a tail elsewhere is S plus or minus the rows between (``prefix="dense"``
  stores every prefix sum instead, Algorithm 1 as printed: d floats a row).
* **Algorithm 2** (:meth:`SortedMargins.evaluate`): two binary searches give the band
  of rows that need a product; the linear tail's loss is a·Σc − ⟨w, S_tail⟩ − b·Σc·y, its
  subgradient S_tail. Only band rows whose part changed since w′ touch the sum.
* **Huber** (5): ℓ(m) = 1 − m for m ≤ 1 − h, (1 + h − m)²/(4h) between, 0 from 1 + h:
  the band is widened by h each side and its quadratic part computed directly.
* Algorithm 3 (samples, per-example norms, no sorting) lives in :mod:`.sgd`, where the
  stochastic steps are.

Every decision is made with a slack for rounding (``_tolerance``), so a row is pruned only
if the full computation would put it in the same part: the pruned loss and subgradient
are the plain ones up to the order of summation. When they are recomputed (the
:class:`ResortPolicy`, timed) changes nothing else.

The engine's one hinge test, :func:`cpsvm.engine.hinge.hinge_excess`, decides every
computed row.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..sparse_ops import RowBlocks, as_csr
from .hinge import hinge_excess
from .sgd import _add_row, _row_dot

HINGE, HUBER = 0, 1
_NO_ROWS = np.zeros((0, 0))
_NO_INDEX = np.zeros(0, dtype=np.int64)
_NO_DATA = np.zeros(0)


@njit(cache=True, inline="always")
def _row_loss(huber, a, h, y, out):
    """(ℓ, −dℓ/dm) of one example with output ``out``: hinge max(0, a − m) (a the
    threshold), or Huber of width h around a."""
    if huber:
        e_lin = hinge_excess(a - h, 1.0, y, out)
        if e_lin >= 0.0:
            return e_lin + h, 1.0
        e = hinge_excess(a + h, 1.0, y, out)
        if e > 0.0:
            return e * e / (4.0 * h), e / (2.0 * h)
        return 0.0, 0.0
    e = hinge_excess(a, 1.0, y, out)
    if e > 0.0:
        return e, 1.0
    return 0.0, 0.0


@njit(cache=True)
def _band(dense, D, indptr, indices, data, order, lo, hi, p, y, c, w, b, huber, a, h, G,
          dots):
    """Rows order[lo:hi] (of the dense array D when ``dense``, else of the CSR arrays):
    their loss, Σ c·(−ℓ′)·y, Σ c over rows with a loss, their count,
    Σ_{j<p} c·y·⟨w, x⟩ (the part of the stored tail sum S_p that the band recomputes),
    and G += Σ (c·(−ℓ′)·y − [j < p]·c·y)·x: only rows whose part moved touch G.
    ``dots[j - lo]`` gets ⟨w, x⟩."""
    loss = 0.0
    gb = 0.0
    weight = 0.0
    count = 0
    tail_dot = 0.0
    for j in range(lo, hi):
        i = order[j]
        dot = _row_dot(dense, D, indptr, indices, data, i, w)
        dots[j - lo] = dot
        value, slope = _row_loss(huber, a, h, y[i], dot + b)
        loss += c[i] * value
        coef = c[i] * slope * y[i]
        gb += coef
        if slope != 0.0:
            weight += c[i]
            count += 1
        if j < p:
            tail_dot += c[i] * y[i] * dot
            coef -= c[i] * y[i]
        if coef != 0.0:
            _add_row(dense, D, indptr, indices, data, i, coef, G)
    return loss, gb, weight, count, tail_dot


@njit(cache=True)
def _plain(out, y, c, huber, a, h, coef):
    """Every row from its output: loss, Σ c·(−ℓ′)·y, Σ c of rows with a loss, their count;
    ``coef`` gets c·(−ℓ′)·y."""
    loss = 0.0
    gb = 0.0
    weight = 0.0
    count = 0
    for i in range(len(y)):
        value, slope = _row_loss(huber, a, h, y[i], out[i])
        loss += c[i] * value
        coef[i] = c[i] * slope * y[i]
        gb += coef[i]
        if slope != 0.0:
            weight += c[i]
            count += 1
    return loss, gb, weight, count


@dataclass
class Evaluation:
    """Σ c_i·ℓ(m_i) and what its subgradient needs: ``grad`` = Σ c_i·(−ℓ′_i)·y_i·x_i (the
    hinge: the violators' Σ c_i·y_i·x_i, a 1-slack cut vector), ``grad_b`` the same
    without x, ``weight`` Σ c_i over rows with a loss (``count`` of them), ``computed``
    the rows whose margin was computed."""

    loss: float
    grad: np.ndarray
    grad_b: float
    weight: float
    count: int
    computed: int
    pruned: bool


class ResortPolicy:
    """When to sort again (§3). SortPeriod = c·SortTime/EvalTime evaluations, EvalTime a
    plain evaluation's; after that many, resort when (a) fewer than half of the rows
    were pruned by the last evaluation, or (b) by the cost model (4) — a pruned
    evaluation costs about its share of computed rows times EvalTime — the last one cost
    at least the average since the sort, sort included (resorting then lowers the average).

    While an evaluation computes at least ``fallback`` of the rows (1: prunes nothing,
    the paper's rule) the plain computation is used until the next sort. (Falling back
    from 0.5 on, where a pruned row costs more than a plain one, made Huber descent on
    a9a slower: it ended periods that were about to pay.) A sort whose period saved less
    than the sort cost (by the model) doubles the next period (up to 64x); one that paid
    resets it: early iterations that move far then cost plain evaluations, not sorts.

    ``period`` fixes the period (and ignores time: deterministic, for tests; fallback 1);
    ``clock`` is the timer."""

    def __init__(self, c: float = 1.0, period: int | None = None, clock=time.perf_counter,
                 fallback: float = 1.0):
        self.c, self.period, self.clock = float(c), period, clock
        self.fallback = 1.0 if period is not None else float(fallback)
        self.sort_time = self.eval_time = 0.0
        self.since = 0           # evaluations since the last sort
        self.spent = 0.0         # their modelled cost
        self.last_fraction = 0.0
        self.plain = False       # pruning does not pay: plain until the next sort
        self.sorted = False
        self.backoff = 1.0

    def sorted_now(self, sort_time, eval_time):
        if self.sorted and self.period is None:
            saved = self.since * self.eval_time - self.spent
            self.backoff = 1.0 if saved >= self.sort_time else min(2 * self.backoff, 64.0)
        self.sorted, self.plain = True, False
        self.sort_time, self.eval_time = sort_time, max(eval_time, 1e-9)
        self.since, self.spent = 0, 0.0

    def evaluated(self, fraction_computed, count=1):
        """``count`` evaluations computed this share of their rows. (Timing each pruned
        evaluation against a plain one as well, to fall back when it is slower, made the
        decisions follow the noise of a shared machine: the cost model is used instead.)"""
        self.since += count
        self.last_fraction = fraction_computed
        self.spent += count * fraction_computed * self.eval_time
        if fraction_computed >= self.fallback:
            self.plain = True

    def sort_period(self) -> float:
        if self.period is not None:
            return self.period
        return self.backoff * self.c * self.sort_time / self.eval_time

    def should_resort(self) -> bool:
        if not self.sorted:
            return True
        if self.since < self.sort_period():
            return False
        if self.period is not None or self.plain:
            return True
        if self.last_fraction > 0.5:                                    # (a)
            return True
        average = (self.sort_time + self.spent) / self.since
        return self.last_fraction * self.eval_time >= average            # (b)


def _tolerance(R_abs, w, w_ref, b, b_ref, a, h):
    """Slack for the rounding of the products (each within n·eps·|x|·|w| of exact)."""
    scale = R_abs * (float(np.linalg.norm(w)) + float(np.linalg.norm(w_ref))) \
        + abs(b) + abs(b_ref) + abs(a) + h + 1.0
    return 1e-10 * scale


class SortedMargins:
    """Σ_i c_i·ℓ(y_i·(⟨w, x_i⟩ + b)) and its subgradient with margin-change bounds (see the
    module docstring). ``X`` (CSR), labels ``y`` ±1, weights ``c`` (default 1),
    ``loss`` HINGE (threshold ``a``: ℓ = max(0, a − m)) or HUBER (width ``h``, kinks at
    a ∓ h); ``center`` True uses the sphere around each class's mean (§5), False the
    ball around the origin, "auto" the smaller of the two per class; ``policy`` says
    when to resort (a :class:`ResortPolicy`); ``prefix`` "boundary" (sparse variant) or
    "dense"."""

    PARTIAL_SORT_MIN = 2048    # fewer rows: sorted whole
    COPY_BYTES = 1 << 30       # up to this, a sorted copy of the rows (12 bytes a non-zero)
    COPY_ROW_NNZ = 64          # ... when they have fewer non-zeros than this on average

    def __init__(self, X, y, c=None, *, loss=HINGE, a=1.0, h=0.0, center="auto",
                 policy=None, prefix="boundary", rows=None, prune=True):
        self.X = as_csr(X)
        if not self.X.has_canonical_format:
            self.X.sum_duplicates()
        self.rows = rows if rows is not None else RowBlocks(self.X)
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        n, self.d = self.X.shape
        self.n = n
        self.c = np.ones(n) if c is None else np.ascontiguousarray(c, dtype=np.float64)
        self.huber = loss == HUBER
        if self.huber and not h > 0:
            raise ValueError("the Huber loss needs a width h > 0")
        self.a, self.h = float(a), float(h) if self.huber else 0.0
        self.policy = policy if policy is not None else ResortPolicy()
        if prefix not in ("boundary", "dense"):
            raise ValueError(f"prefix: 'boundary' or 'dense', got {prefix!r}")
        self.prefix = prefix
        self.prune = prune
        self._indptr = self.X.indptr.astype(np.int64)
        self._indices = self.X.indices.astype(np.int64)
        self._data = np.ascontiguousarray(self.X.data, dtype=np.float64)
        self._identity = np.arange(n, dtype=np.int64)
        sq = np.asarray(self.X.multiply(self.X).sum(axis=1)).ravel()
        self.R_abs = math.sqrt(float(sq.max(initial=0.0)))
        # Classes apart (the offset variant): group g holds sorted positions
        # starts[g]..starts[g+1]-1, label sign[g].
        self.sign = np.array([-1.0, 1.0])
        members = [np.flatnonzero(self.y == s) for s in self.sign]
        self.starts = np.array([0, len(members[0]), n], dtype=np.int64)
        self.mu = np.zeros((2, self.d))
        self.R = np.zeros(2)
        for g, rows_g in enumerate(members):
            if len(rows_g) == 0:
                continue
            self.R[g] = math.sqrt(float(sq[rows_g].max())) * (1 + 1e-12)
            if center:
                mu = np.asarray(self.X[rows_g].mean(axis=0)).ravel()
                xm = np.asarray(self.X[rows_g] @ mu).ravel()
                r2 = sq[rows_g] - 2.0 * xm + float(mu @ mu)
                # Rounding of the expansion: a little more than its error.
                r2 = float(r2.max()) + 1e-12 * float(sq[rows_g].max())
                R = math.sqrt(max(r2, 0.0)) * (1 + 1e-12)
                # "auto": the smaller sphere (the mean's is wider when a class is a
                # half-space around the origin: the §4.1 Gaussians, a9a's one-hot rows).
                if center != "auto" or R < self.R[g]:
                    self.mu[g], self.R[g] = mu, R
        self._members = members
        self.w_ref = None
        self.evaluations = self.resorts = self.computed = 0
        self.fractions = []      # rows computed / n, per evaluation

    # -- Algorithm 1 ----------------------------------------------------------------
    def resort(self, w, out=None, eval_time=None):
        """Sort at w′ = w (``out``: ⟨w, x_i⟩ if known, then ``eval_time`` the seconds a
        plain evaluation took). Returns the outputs."""
        t0 = self.policy.clock()
        w = np.ascontiguousarray(w, dtype=np.float64)
        if out is None:
            out = self.rows.dot(w)
        t1 = self.policy.clock()
        m = self.y * out
        by_margin, m_sorted = self._sorted(m)
        # The classes apart, each in sorted order.
        negative = self.y[by_margin] < 0
        order = np.concatenate([by_margin[negative], by_margin[~negative]])
        self.order = order
        if self.rows.dense is not None:
            # Nearly dense rows: the dense array the plain products use.
            self._band_rows = (True, self.rows.dense, _NO_INDEX, _NO_INDEX, _NO_DATA, order)
            self._band_yc = (self.y, self.c)
        elif self.X.nnz * 12 <= self.COPY_BYTES and self.X.nnz < self.COPY_ROW_NNZ * self.n:
            # Short rows again in sorted order: a band is then read from contiguous memory
            # (in the original order its rows are scattered: 5x slower a non-zero on
            # a9a's 14 a row). Long rows are contiguous enough as they are.
            Xs = self.X[order]
            self._band_rows = (False, _NO_ROWS, Xs.indptr.astype(np.int64),
                               Xs.indices.astype(np.int64), Xs.data, self._identity)
            self._band_yc = (self.y[order], self.c[order])
        else:
            self._band_rows = (False, _NO_ROWS, self._indptr, self._indices, self._data,
                               order)
            self._band_yc = (self.y, self.c)
        self.m_ref = np.concatenate([m_sorted[negative], m_sorted[~negative]])
        cs = self.c[order]
        self.C_pref = np.concatenate([[0.0], np.cumsum(cs)])
        self.CY_pref = np.concatenate([[0.0], np.cumsum(cs * self.y[order])])
        # p[g]: rows of group g in the linear part at w′ (m′ < a; Huber m′ ≤ a − h).
        self.p = np.empty(2, dtype=np.int64)
        for g in range(2):
            lo, hi = self.starts[g], self.starts[g + 1]
            seg = self.m_ref[lo:hi]
            self.p[g] = lo + (np.searchsorted(seg, self.a - self.h, "right") if self.huber
                              else np.searchsorted(seg, self.a, "left"))
        coef = np.zeros(self.n)
        tail = np.concatenate([order[self.starts[g]:self.p[g]] for g in range(2)])
        coef[tail] = self.c[tail] * self.y[tail]
        self.S = self.rows.rows_sum(coef)
        if self.prefix == "dense":
            # Every prefix sum of c·y·x in sorted order (Algorithm 1 as printed).
            self.P = np.zeros((self.n + 1, self.d))
            np.cumsum((self.X[order].multiply((cs * self.y[order])[:, None])).toarray(),
                      axis=0, out=self.P[1:])
        self.w_ref = w.copy()
        self.mu_ref = self.mu @ w
        self.resorts += 1
        t2 = self.policy.clock()
        self.policy.sorted_now(t2 - t1, t1 - t0 if eval_time is None else eval_time)
        return out

    def _sorted(self, m):
        """Rows in order of margin, and the margins to search in. Only the three quarters
        of the rows nearest the threshold are sorted (an evaluation that needs more is
        not worth pruning): the rows below come first in any order, searched as if all at their
        largest margin, those above last, as if all at their smallest — a band reaching
        into either takes the whole block, which stays exact."""
        n = len(m)
        if n < self.PARTIAL_SORT_MIN:
            by_margin = np.argsort(m)
            return by_margin, m[by_margin]
        distance = np.abs(m - self.a)
        k = (3 * n) // 4
        reach = np.partition(distance, k)[k]
        inside = distance <= reach
        window = np.flatnonzero(inside)
        below = np.flatnonzero(~inside & (m < self.a))
        above = np.flatnonzero(~inside & (m > self.a))
        window = window[np.argsort(m[window])]
        by_margin = np.concatenate([below, window, above])
        m_sorted = np.concatenate([np.full(len(below), m[below].max(initial=-np.inf)),
                                   m[window],
                                   np.full(len(above), m[above].min(initial=np.inf))])
        return by_margin, m_sorted

    # -- Algorithm 2 ----------------------------------------------------------------
    def _ranges(self, shift_lo, shift_hi, delta, tol):
        """Per group, sorted positions [lo, hi): below lo every row's loss is linear and
        from hi on zero, for margins m′ + s + ε with s in [shift_lo, shift_hi] and
        |ε| ≤ delta."""
        low_edge = self.a - self.h
        high_edge = self.a + self.h
        ranges = []
        for g in range(2):
            s, e = self.starts[g], self.starts[g + 1]
            seg = self.m_ref[s:e]
            lo = s + np.searchsorted(seg, low_edge - shift_hi[g] - delta[g] - tol, "left")
            hi = s + np.searchsorted(seg, high_edge - shift_lo[g] + delta[g] + tol, "left")
            lo, hi = min(lo, self.p[g]), max(hi, self.p[g], lo)
            ranges.append((lo, hi))
        return ranges

    def evaluate(self, w, b=0.0) -> Evaluation:
        """Loss and subgradient at (w, b), pruned when the policy allows."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        pol = self.policy
        if not self.prune:
            return self._plain(w, b)
        if pol.should_resort():
            out = self.resort(w)
            t1 = pol.clock()
            ev = self._plain(w, b, out)
            # A plain evaluation: the products (timed by resort) and the sums.
            pol.eval_time += pol.clock() - t1
            return ev
        if pol.plain:
            return self._plain(w, b)
        diff = w - self.w_ref
        norm = float(np.linalg.norm(diff)) * (1 + 1e-12)
        shift = self.sign * ((self.mu @ w - self.mu_ref) + b)
        tol = _tolerance(self.R_abs, w, self.w_ref, b, 0.0, self.a, self.h)
        ranges = self._ranges(shift, shift, self.R * norm, tol)
        return self._pruned(w, b, ranges)

    def _pruned(self, w, b, ranges):
        dense = self.prefix == "dense"
        G = np.zeros(self.d)
        loss = gb = weight = 0.0
        count = computed = 0
        tail_dot = 0.0
        for g, (lo, hi) in enumerate(ranges):
            s = self.starts[g]
            p = lo if dense else self.p[g]
            dots = np.empty(hi - lo)
            bl, bgb, bw, bc, bt = _band(*self._band_rows, lo, hi, p, *self._band_yc, w, b,
                                        self.huber, self.a, self.h, G, dots)
            loss += bl
            gb += bgb + self.CY_pref[lo] - self.CY_pref[s]
            weight += bw + self.C_pref[lo] - self.C_pref[s]
            count += bc + lo - s
            computed += hi - lo
            tail_dot += bt
            C_tail = self.C_pref[lo] - self.C_pref[s]
            CY_tail = self.CY_pref[lo] - self.CY_pref[s]
            if dense:
                S_g = self.P[lo] - self.P[s]
                G += S_g
                loss += self.a * C_tail - float(w @ S_g) - b * CY_tail
            else:
                loss += self.a * C_tail - b * CY_tail
        if not dense:
            G += self.S
            loss -= float(w @ self.S) - tail_dot
        fraction = computed / max(self.n, 1)
        self.policy.evaluated(fraction)
        return self._record(Evaluation(loss, G, gb, weight, count, computed, True))

    def _plain(self, w, b, out=None):
        if out is None:
            out = self.rows.dot(w)
            self.policy.evaluated(1.0)
        coef = np.empty(self.n)
        loss, gb, weight, count = _plain(out + b, self.y, self.c, self.huber, self.a,
                                         self.h, coef)
        G = self.rows.rows_sum(coef)
        return self._record(Evaluation(loss, G, gb, weight, count, self.n, False))

    def _record(self, ev):
        self.evaluations += 1
        self.computed += ev.computed
        self.fractions.append(ev.computed / max(self.n, 1))
        return ev


def plain_evaluation(X, y, c, w, b=0.0, *, loss=HINGE, a=1.0, h=0.0):
    """The same sums over every row, without bounds (the reference of the tests and of
    ``--margin-bounds 0``)."""
    X = as_csr(X)
    out = np.asarray(X @ w).ravel() + b
    coef = np.empty(X.shape[0])
    y = np.ascontiguousarray(y, dtype=np.float64)
    c = np.ones(len(y)) if c is None else np.ascontiguousarray(c, dtype=np.float64)
    value, gb, weight, count = _plain(out, y, c, loss == HUBER, float(a), float(h), coef)
    return Evaluation(value, np.asarray(X.T @ coef).ravel(), gb, weight, count,
                      X.shape[0], False)
