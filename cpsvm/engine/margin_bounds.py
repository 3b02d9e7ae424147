"""Margin-change bounds (Guillory & Bilmes, *Practical Methods for Exploiting Bounds on
Change in the Margin*): the hinge or Huber loss Σ c_i·ℓ(m_i) and its subgradient at a
new w, computing only the margins that can have crossed a kink since a reference w′.

For m_i = y_i·(⟨w, x_i⟩ + b) and the margins m′_i = y_i·(⟨w′, x_i⟩ + b′) stored at
(w′, b′),

    |m_i − m′_i − y_i·(⟨w − w′, μ⟩ + b − b′)| ≤ |w − w′|·r_i,   r_i = |x_i − μ|,

μ = 0 (the paper's bound) or the mean of the example's class (§5's sphere around the
class mean: ⟨w − w′, μ⟩ is then computed exactly, once per evaluation); ``center="auto"``
applies both and keeps, row by row, the tighter. Positives and negatives are sorted
apart by m′ (the offset variant), so within a class the exact part is one shift, and
with R = max r_i over the class the rows whose loss cannot have left its linear part,
or its zero part, are two tails of the sorted order; between them, each row is tested
with its own r_i (§5's per-example norms) before its product is computed:

* **Algorithm 1** (:meth:`SortedMargins.resort`): margins at (w′, b′), sorted per class,
  the prefix sums of c_i and c_i·y_i, and the sum S = Σ c_i·y_i·x_i of the rows in the
  linear part at w′ — the *sparse-data variant* of §3: only the sum at the boundary is
  stored, a tail elsewhere is S plus or minus the rows between (``prefix="dense"``
  stores every prefix sum instead, Algorithm 1 as printed: d floats a row).
* **Algorithm 2** (:meth:`SortedMargins.evaluate`): two binary searches give the band
  of rows that may need a product; the linear tail's loss is a·Σc − ⟨w, S_tail⟩ − b·Σc·y,
  its subgradient S_tail. Only band rows whose part changed since w′ touch the sum.
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

from ..compiled import njit
from ..kernel_rows import row_sq_norms
from ..sparse_ops import RowBlocks, add_row, as_csr, gather_row_indices, row_dot
from .hinge import hinge_excess

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
def _group_ranges(upper, lower, starts, p, shift_lo, shift_hi, delta, tol, low, high, out):
    """Per group g, sorted positions out[g] = [lo, hi) with lo ≤ p[g] ≤ hi: below lo every
    row's margin stays under ``low`` (its loss linear), from hi on at least ``high``
    (zero), for every shift in [shift_lo[k, g], shift_hi[k, g]] and change within
    delta[k, g] of each center k (the tightest of them). ``upper``/``lower`` bound each
    sorted row's margin from above and below (equal where sorted exactly)."""
    for g in range(2):
        s, e = starts[g], starts[g + 1]
        lo, hi = s, e
        for k in range(shift_lo.shape[0]):
            lo = max(lo, s + np.searchsorted(upper[s:e], low - shift_hi[k, g] - delta[k, g] - tol))
            hi = min(hi, s + np.searchsorted(lower[s:e], high - shift_lo[k, g] + delta[k, g] + tol))
        lo = min(lo, p[g])
        out[g, 0] = lo
        out[g, 1] = max(hi, p[g], lo)


@njit(cache=True)
def _band_select(ys, cs, ranges, p, margin, radius, shift, move, tol, low, high):
    """The sorted positions ranges[g, 0] ≤ j < ranges[g, 1] of each group g whose row must
    be computed, and where each group's end in them. A row j below p[g] (in the stored
    sum S) whose margin surely stays in the linear part (under ``low``), or one from p[g]
    on whose margin surely stays in the zero part (from ``high`` on), is not — each center
    k bounds the change of ``margin[j]`` by ``shift[k, g]`` ± move·radius[k, j] (± tol;
    every row is computed when ``move`` < 0). Also returns Σ c, Σ c·y and the count of
    the linear rows left out (``ys``, ``cs``: y and c by sorted position)."""
    n_centers = radius.shape[0]
    rows = np.empty(ranges[0, 1] - ranges[0, 0] + ranges[1, 1] - ranges[1, 0], np.int64)
    ends = np.zeros(2, np.int64)
    linear_c = 0.0
    linear_cy = 0.0
    n_linear = 0
    n = 0
    for g in range(2):
        pg = p[g]
        for j in range(ranges[g, 0], ranges[g, 1]):
            if move >= 0.0:
                m = margin[j]
                skip = False
                for k in range(n_centers):
                    reach = move * radius[k, j] + tol
                    if (
                        (m + shift[k, g] + reach < low)
                        if j < pg
                        else (m + shift[k, g] - reach >= high)
                    ):
                        skip = True
                        break
                if skip:
                    if j < pg:
                        linear_c += cs[j]
                        linear_cy += cs[j] * ys[j]
                        n_linear += 1
                    continue
            rows[n] = j
            n += 1
        ends[g] = n
    return rows[:n], ends, linear_c, linear_cy, n_linear


@njit(cache=True, fastmath={"reassoc", "contract"})
def _band_dots(dense, D, indptr, indices, data, order, rows, w, out):
    """out[k] = ⟨w, x⟩ of the row at sorted position rows[k], summed in any order (as the
    plain products of dense rows are: 9x faster on 50 features). A kernel of its own:
    beside the loss in one loop, one row's product no longer overlapped the next one's
    (7x slower on a9a's short rows)."""
    for k in range(len(rows)):
        out[k] = row_dot(dense, D, indptr, indices, data, order[rows[k]], w)


@njit(cache=True)
def _band_sums(
    dense, D, indptr, indices, data, order, ys, cs, rows, ends, p, dots, b, huber, a, h, G
):
    """For the rows at sorted positions ``rows`` (group g's up to ends[g]; y and c by
    sorted position, the row's data at order[j]) with products ``dots``: their loss,
    Σ c·(−ℓ′)·y, Σ c over rows with a loss, their count, and Σ_{j<p} c·y·⟨w, x⟩ (the
    part of the stored sum S they recompute); G += Σ (c·(−ℓ′)·y − [j < p]·c·y)·x: only
    rows whose part moved touch G."""
    loss = 0.0
    gb = 0.0
    weight = 0.0
    count = 0
    tail_dot = 0.0
    for g in range(2):
        pg = p[g]
        for k in range(ends[g - 1] if g else 0, ends[g]):
            j = rows[k]
            y, c = ys[j], cs[j]
            dot = dots[k]
            value, slope = _row_loss(huber, a, h, y, dot + b)
            loss += c * value
            coef = c * slope * y
            gb += coef
            if slope != 0.0:
                weight += c
                count += 1
            if j < pg:
                tail_dot += c * y * dot
                coef -= c * y
            if coef != 0.0:
                add_row(dense, D, indptr, indices, data, order[j], coef, G)
    return loss, gb, weight, count, tail_dot


@njit(cache=True)
def _class_tables(
    by_margin,
    upper,
    lower,
    m,
    y,
    c,
    radius,
    order,
    upper_out,
    lower_out,
    margin_out,
    radius_out,
    ys,
    cs,
    C_pref,
    CY_pref,
):
    """The rows ``by_margin`` (in order of margin, with bounds ``upper``/``lower`` of their
    margins) split by class, negatives first, each class in the same order: the rows
    (``order``), their bounds, margins ``m``, radii, y, c, and the prefix sums of c and
    c·y."""
    n_negative = 0
    for t in range(len(by_margin)):
        if y[by_margin[t]] < 0:
            n_negative += 1
    negative, positive = 0, n_negative
    for t in range(len(by_margin)):
        i = by_margin[t]
        if y[i] < 0:
            k = negative
            negative += 1
        else:
            k = positive
            positive += 1
        order[k] = i
        upper_out[k], lower_out[k], margin_out[k] = upper[t], lower[t], m[i]
        for q in range(radius.shape[0]):
            radius_out[q, k] = radius[q, i]
        ys[k], cs[k] = y[i], c[i]
    C_pref[0] = CY_pref[0] = 0.0
    for k in range(len(by_margin)):
        C_pref[k + 1] = C_pref[k] + cs[k]
        CY_pref[k + 1] = CY_pref[k] + cs[k] * ys[k]


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

    def __init__(
        self,
        c: float = 1.0,
        period: int | None = None,
        clock=time.perf_counter,
        fallback: float = 1.0,
    ):
        self.c, self.period, self.clock = float(c), period, clock
        self.fallback = 1.0 if period is not None else float(fallback)
        self.sort_time = self.eval_time = 0.0
        self.since = 0  # evaluations since the last sort
        self.spent = 0.0  # their modelled cost
        self.last_fraction = 0.0
        self.plain = False  # pruning does not pay: plain until the next sort
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
        if self.last_fraction > 0.5:  # (a)
            return True
        average = (self.sort_time + self.spent) / self.since
        return self.last_fraction * self.eval_time >= average  # (b)


def _tolerance(R_abs, w, w_ref, b, b_ref, a, h):
    """Slack for the rounding of the products (each within n·eps·|x|·|w| of exact)."""
    scale = (
        R_abs * (float(np.linalg.norm(w)) + float(np.linalg.norm(w_ref)))
        + abs(b)
        + abs(b_ref)
        + abs(a)
        + h
        + 1.0
    )
    return 1e-10 * scale


class SortedMargins:
    """Σ_i c_i·ℓ(y_i·(⟨w, x_i⟩ + b)) and its subgradient with margin-change bounds (see the
    module docstring). ``X`` (CSR), labels ``y`` ±1, weights ``c`` (default 1),
    ``loss`` HINGE (threshold ``a``: ℓ = max(0, a − m)) or HUBER (width ``h``, kinks at
    a ∓ h); ``center`` True uses the sphere around each class's mean (§5), False the
    ball around the origin, "auto" both (each row the tighter); ``per_row`` tests the
    rows between the two tails with their own radii (False: the class's largest only);
    ``policy`` says when to resort (a :class:`ResortPolicy`); ``prefix`` "boundary"
    (sparse variant) or "dense"."""

    PARTIAL_SORT_MIN = 2048  # fewer rows: sorted whole
    COPY_BYTES = 1 << 30  # up to this, a sorted copy of the rows ...
    COPY_MIN_BYTES = 16 << 20  # ... from this on (see _rows_in_order)
    COPY = None  # True/False: always/never copy
    CENTERS = {False: (False,), True: (True,), "auto": (False, True)}

    def __init__(
        self,
        X,
        y,
        c=None,
        *,
        loss=HINGE,
        a=1.0,
        h=0.0,
        center="auto",
        per_row=True,
        policy=None,
        prefix="boundary",
        rows=None,
        prune=True,
    ):
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
        if center not in self.CENTERS:
            raise ValueError(f"center: False, True or 'auto', got {center!r}")
        self.prefix = prefix
        self.prune = prune
        self.per_row = bool(per_row)
        # The rows as the row kernels read them: narrow indices and no values when every
        # value is 1 (RowBlocks' choice); in sorted order when _rows_in_order copies them.
        if self.rows.dense is None:
            self._row_indices = self.rows.kernel_indices
            self._row_values = self.rows.kernel_values
        self._sorted_rows = None
        self.order = None
        self._identity = np.arange(n, dtype=np.int64)
        sq = row_sq_norms(self.X)
        self.R_abs = math.sqrt(float(sq.max(initial=0.0)))
        # Classes apart (the offset variant): group g holds sorted positions
        # starts[g]..starts[g+1]-1, label sign[g].
        self.sign = np.array([-1.0, 1.0])
        group = (self.y > 0).astype(np.int64)
        sizes = np.bincount(group, minlength=2)
        self.starts = np.array([0, sizes[0], n], dtype=np.int64)
        # Center k of class g: mu[k, g] (0 for the origin); each row's distance to its
        # class's center, radius[k, i], and the largest of a class, R[k, g].
        kinds = self.CENTERS[center]
        self.mu = np.zeros((len(kinds), 2, self.d))
        self.radius = np.zeros((len(kinds), n))
        self.R = np.zeros((len(kinds), 2))
        if True in kinds and n:
            # Both class means in one pass (Xᵀ·B, B each row's share of its class's
            # mean), then each row's products with both.
            share = np.zeros((n, 2))
            share[np.arange(n), group] = 1.0 / sizes[group]
            means = np.asarray(self.rows.X.T @ share)
            self.mu[kinds.index(True)] = means.T
            x_mu = self.rows.times(means)
        for k, around_mean in enumerate(kinds):
            r2 = sq
            if around_mean:
                xm = x_mu[np.arange(n), group]
                mm = np.einsum("gd,gd->g", self.mu[k], self.mu[k])[group]
                # Rounding of the expansion: more than its error.
                r2 = r2 - 2.0 * xm + mm + 1e-11 * (r2 + 2.0 * np.abs(xm) + mm)
            self.radius[k] = np.sqrt(np.maximum(r2, 0.0)) * (1 + 1e-12)
            for g in range(2):
                if sizes[g]:
                    self.R[k, g] = self.radius[k][group == g].max()
        self.w_ref = None
        self.evaluations = self.resorts = self.computed = 0
        self.fractions = []  # rows computed / n, per evaluation

    # -- Algorithm 1 ----------------------------------------------------------------
    def resort(self, w, out=None, eval_time=None, b=0.0):
        """Sort at (w′, b′) = (w, b) (``out``: ⟨w, x_i⟩ if known, then ``eval_time`` the
        seconds a plain evaluation took). Returns the outputs ⟨w, x_i⟩."""
        t0 = self.policy.clock()
        w = np.ascontiguousarray(w, dtype=np.float64)
        if out is None:
            out = self.rows.dot(w)
        t1 = self.policy.clock()
        # The margins with the intercept: the sorted window and the linear parts are
        # those of the model at w′ (an offset left out shifts each class by −y·b′,
        # and the band then reaches from the true edges to where b = 0 puts them).
        m = self.y * (out + b)
        by_margin, upper, lower = self._sorted(m)
        # The classes apart, each in sorted order.
        n = self.n
        if self.order is None:
            self.order = np.empty(n, np.int64)
            self.upper, self.lower, self.margin = np.empty(n), np.empty(n), np.empty(n)
            self.radius_sorted = np.empty_like(self.radius)
            self.ys, self.cs = np.empty(n), np.empty(n)
            self.C_pref, self.CY_pref = np.empty(n + 1), np.empty(n + 1)
        order = self.order
        _class_tables(
            by_margin,
            upper,
            lower,
            m,
            self.y,
            self.c,
            self.radius,
            order,
            self.upper,
            self.lower,
            self.margin,
            self.radius_sorted,
            self.ys,
            self.cs,
            self.C_pref,
            self.CY_pref,
        )
        self._band_rows = None  # made by band_rows() when a band is computed
        # p[g]: rows of group g in the linear part at w′ (m′ < a; Huber m′ ≤ a − h).
        self.p = np.empty(2, dtype=np.int64)
        for g in range(2):
            lo, hi = self.starts[g], self.starts[g + 1]
            seg = self.upper[lo:hi]
            self.p[g] = lo + (
                np.searchsorted(seg, self.a - self.h, "right")
                if self.huber
                else np.searchsorted(seg, self.a, "left")
            )
        coef = np.zeros(self.n)
        tail = np.concatenate([order[self.starts[g] : self.p[g]] for g in range(2)])
        coef[tail] = self.c[tail] * self.y[tail]
        self.S = self.rows.rows_sum(coef)
        if self.prefix == "dense":
            # Every prefix sum of c·y·x in sorted order (Algorithm 1 as printed).
            self.P = np.zeros((self.n + 1, self.d))
            np.cumsum(
                (self.X[order].multiply((self.cs * self.ys)[:, None])).toarray(),
                axis=0,
                out=self.P[1:],
            )
        self.w_ref = w.copy()
        self.b_ref = float(b)
        self.mu_ref = self.mu @ w
        self.resorts += 1
        t2 = self.policy.clock()
        self.policy.sorted_now(t2 - t1, t1 - t0 if eval_time is None else eval_time)
        return out

    def band_rows(self):
        """(dense, D, indptr, indices, data, rows): the arrays a band reads its rows from
        and each sorted position's row in them, made at the first band after a sort."""
        if self._band_rows is None:
            self._band_rows = self._rows_in_order(self.order)
        return self._band_rows

    def _rows_in_order(self, order):
        """The arrays a band reads its rows from, and each sorted position's row in them:
        a copy in sorted order (then a band is contiguous memory) when the rows take more
        than COPY_MIN_BYTES — scattered reads of larger data missed the cache: 8x slower
        a row on the dense 200k x 50 set — or are 0/1 rows, whose narrow indices copy in
        a fraction of a product; otherwise the rows in place (``COPY`` True or False
        decides instead)."""
        dense = self.rows.dense
        if dense is not None:
            size = dense.nbytes
        else:
            size = self._row_indices.nbytes + self._row_values.nbytes
        copy = (
            self.COPY
            if self.COPY is not None
            else size <= self.COPY_BYTES
            and (size >= self.COPY_MIN_BYTES or (dense is None and not len(self._row_values)))
        )
        if dense is not None:
            if not copy:
                return True, dense, _NO_INDEX, _NO_INDEX, _NO_DATA, order
            if self._sorted_rows is None:
                self._sorted_rows = np.empty_like(dense)
            np.take(dense, order, axis=0, out=self._sorted_rows)
            return True, self._sorted_rows, _NO_INDEX, _NO_INDEX, _NO_DATA, self._identity
        if not copy:
            return (False, _NO_ROWS, self.rows.X.indptr, self._row_indices, self._row_values, order)
        if len(self._row_values):
            Xs = self.rows.X[order]
            return False, _NO_ROWS, Xs.indptr, Xs.indices, Xs.data, self._identity
        # Values all 1: the narrow indices alone (scipy would copy int32 indices and the
        # values), into the same arrays at each sort.
        if self._sorted_rows is None:
            self._sorted_rows = (np.empty(self.n + 1, np.int64), np.empty_like(self._row_indices))
        indptr, indices = self._sorted_rows
        gather_row_indices(self.rows.X.indptr, self._row_indices, order, indptr, indices)
        return False, _NO_ROWS, indptr, indices, self._row_values, self._identity

    def _sorted(self, m):
        """Rows in order of margin, and for each an upper and a lower bound of its margin,
        both non-decreasing in that order. Only the three quarters of the rows nearest the
        threshold are sorted (an evaluation that needs more is not worth pruning): the
        rows below come first in any order, those above last, each block bounded by its
        largest and smallest margin — a band reaching into a block takes it whole, which
        stays exact."""
        n = len(m)
        if n < self.PARTIAL_SORT_MIN:
            by_margin = np.argsort(m)
            return by_margin, m[by_margin], m[by_margin]
        distance = np.abs(m - self.a)
        k = (3 * n) // 4
        reach = np.partition(distance, k)[k]
        inside = distance <= reach
        window = np.flatnonzero(inside)
        below = np.flatnonzero(~inside & (m < self.a))
        above = np.flatnonzero(~inside & (m > self.a))
        window = window[np.argsort(m[window])]
        by_margin = np.concatenate([below, window, above])
        bounds = []
        for pick in (np.max, np.min):
            bounds.append(
                np.concatenate(
                    [
                        np.full(len(below), pick(m[below]) if len(below) else 0.0),
                        m[window],
                        np.full(len(above), pick(m[above]) if len(above) else 0.0),
                    ]
                )
            )
        return by_margin, bounds[0], bounds[1]

    # -- Algorithm 2 ----------------------------------------------------------------
    def shifts(self, w, b=0.0):
        """The exact part of each class's margin change since (w′, b′) for each center:
        y·(⟨w − w′, μ⟩ + b − b′), shape (centers, 2)."""
        return self.sign * ((self.mu @ w - self.mu_ref) + (b - self.b_ref))

    def _ranges(self, shift_lo, shift_hi, delta, tol):
        """Per group, sorted positions [lo, hi) (an array of 2 rows): below lo every row's
        loss is linear and from hi on zero, for margins m′ + s + ε with s in
        [shift_lo, shift_hi] and |ε| ≤ delta, arrays (centers, 2): the tightest center
        decides."""
        ranges = np.empty((2, 2), dtype=np.int64)
        _group_ranges(
            self.upper,
            self.lower,
            self.starts,
            self.p,
            np.ascontiguousarray(shift_lo, dtype=np.float64),
            np.ascontiguousarray(shift_hi, dtype=np.float64),
            np.ascontiguousarray(delta, dtype=np.float64),
            float(tol),
            self.a - self.h,
            self.a + self.h,
            ranges,
        )
        return ranges

    def evaluate(self, w, b=0.0) -> Evaluation:
        """Loss and subgradient at (w, b), pruned when the policy allows."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        pol = self.policy
        if not self.prune:
            return self._plain(w, b)
        if pol.should_resort():
            out = self.resort(w, b=b)
            t1 = pol.clock()
            ev = self._plain(w, b, out)
            # A plain evaluation: the products (timed by resort) and the sums.
            pol.eval_time += pol.clock() - t1
            return ev
        if pol.plain:
            return self._plain(w, b)
        move = float(np.linalg.norm(w - self.w_ref)) * (1 + 1e-12)
        shift = self.shifts(w, b)
        tol = _tolerance(self.R_abs, w, self.w_ref, b, self.b_ref, self.a, self.h)
        ranges = self._ranges(shift, shift, self.R * move, tol)
        return self._pruned(w, b, ranges, shift, move, tol)

    def _pruned(self, w, b, ranges, shift, move, tol):
        dense = self.prefix == "dense"
        # The dense variant has every prefix sum: no row of the band is in a stored sum.
        p = ranges[:, 0].copy() if dense else self.p
        rows, ends, linear_c, linear_cy, n_linear = _band_select(
            self.ys,
            self.cs,
            ranges,
            p,
            self.margin,
            self.radius_sorted,
            shift,
            move if self.per_row else -1.0,
            tol,
            self.a - self.h,
            self.a + self.h,
        )
        band = self.band_rows()
        dots = np.empty(len(rows))
        _band_dots(*band, rows, w, dots)
        G = np.zeros(self.d)
        loss, gb, weight, count, tail_dot = _band_sums(
            *band, self.ys, self.cs, rows, ends, p, dots, b, self.huber, self.a, self.h, G
        )
        count += n_linear
        computed = len(rows)
        # The rows below each band, and those of it that stayed linear.
        lo, s = ranges[:, 0], self.starts[:2]
        C_tail = float(np.sum(self.C_pref[lo] - self.C_pref[s])) + linear_c
        CY_tail = float(np.sum(self.CY_pref[lo] - self.CY_pref[s])) + linear_cy
        loss += self.a * C_tail - b * CY_tail
        gb += CY_tail
        weight += C_tail
        count += int(np.sum(lo - s))
        if dense:
            S_tail = (self.P[lo] - self.P[s]).sum(axis=0)
            G += S_tail
            loss -= float(w @ S_tail)
        else:
            G += self.S
            loss -= float(w @ self.S) - tail_dot
        self.policy.evaluated(computed / max(self.n, 1))
        return self._record(Evaluation(loss, G, gb, weight, count, computed, True))

    def _plain(self, w, b, out=None):
        if out is None:
            out = self.rows.dot(w)
            self.policy.evaluated(1.0)
        coef = np.empty(self.n)
        loss, gb, weight, count = _plain(out + b, self.y, self.c, self.huber, self.a, self.h, coef)
        G = self.rows.rows_sum(coef)
        return self._record(Evaluation(loss, G, gb, weight, count, self.n, False))

    def _record(self, ev):
        self.evaluations += 1
        self.computed += ev.computed
        self.fractions.append(ev.computed / max(self.n, 1))
        return ev
