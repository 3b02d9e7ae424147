"""Oracles that turn a structured problem into cuts for the cutting-plane loop.

``LinearCutOracle`` keeps every cut as an explicit vector g in Ψ-space, so
w = Σ α_k g_k is a dense vector. For the 1-slack formulation the cut at labelling ŷ is
c = (1/n) Σ cost_i·Δ_i(ŷ_i) and g = (1/n) Σ cost_i·δΨ_i(ŷ_i) (margin rescaling) or
g = (1/n) Σ cost_i·Δ_i(ŷ_i) δΨ_i(ŷ_i) (slack rescaling), cost_i SVMlight's ``cost:``
factor of example i (1 by default).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..conventions import LOSS_SCALE, MARGIN_RESCALING, PSI_SCALE, violation
from ..sparse_ops import add_packed_rows, packed_rows_dot, row_dot_column, zero_rows_by_class
from .hinge import hinge_violators


class RowTable:
    """Per-cut rows an oracle keeps in step with the working set (cut vectors, or a
    kernel cut's inner products with every example). Each row sits in a slot that is
    reused once its cut is dropped, so removing cuts copies nothing (compacting a T × n
    table on every removal showed in sampled_learn's profile); the products below read
    the kept slots in working-set order.

    The slots live in blocks of 8, 16, 32, ... rows, allocated uninitialised as they are
    needed: growing never copies the rows kept so far, so the table's peak is the rows
    it holds (a doubled copy of a table of n-wide rows was the peak of OCAS on a large
    file)."""

    FIRST_BLOCK = 8

    def __init__(self, width):
        self.width = width
        self._blocks = []  # block b holds slots _starts[b] .. _starts[b] + len - 1
        self._starts = []
        self.slots = []  # slot of each kept cut, in working-set order
        self._free = []
        self._high = 0  # slots ever used

    @property
    def size(self):
        return len(self.slots)

    def _locate(self, slot):
        b = 0
        while b + 1 < len(self._starts) and self._starts[b + 1] <= slot:
            b += 1
        return b, slot - self._starts[b]

    def _used_blocks(self):
        """(block, its first slot, its used rows) for every block holding a used slot."""
        for block, start in zip(self._blocks, self._starts):
            if start >= self._high:
                break
            yield block, start, min(len(block), self._high - start)

    @property
    def rows(self) -> np.ndarray:
        """The kept rows in working-set order (a copy)."""
        out = np.empty((len(self.slots), self.width))
        for k, slot in enumerate(self.slots):
            b, i = self._locate(slot)
            out[k] = self._blocks[b][i]
        return out

    def append(self, row):
        if self._free:
            slot = self._free.pop()
        else:
            capacity = self._starts[-1] + len(self._blocks[-1]) if self._blocks else 0
            if self._high == capacity:
                size = 2 * len(self._blocks[-1]) if self._blocks else self.FIRST_BLOCK
                self._blocks.append(np.empty((size, self.width)))
                self._starts.append(capacity)
            slot = self._high
            self._high += 1
        b, i = self._locate(slot)
        self._blocks[b][i] = row
        self.slots.append(slot)

    def keep(self, mask):
        for slot, kept in zip(self.slots, mask):
            if not kept:
                self._free.append(slot)
        self.slots = [slot for slot, kept in zip(self.slots, mask) if kept]

    def _slot_weights(self, alpha):
        weights = np.zeros(self._high)
        weights[self.slots] = alpha
        return weights

    def combine(self, alpha):
        """Σ_k α_k·row_k (free slots get weight 0)."""
        weights = self._slot_weights(alpha)
        total = np.zeros(self.width)
        for block, start, used in self._used_blocks():
            total += weights[start : start + used] @ block[:used]
        return total

    def dot(self, vector):
        """row_k · vector for the kept cuts, in working-set order."""
        products = np.empty(self._high)
        for block, start, used in self._used_blocks():
            products[start : start + used] = block[:used] @ vector
        return products[self.slots]

    def columns_times(self, columns, beta):
        """rows[:, columns] @ beta for the kept cuts, in working-set order."""
        slots = np.asarray(self.slots, dtype=np.int64)
        columns = np.asarray(columns, dtype=np.int64)
        out = np.empty(len(slots))
        for block, start, used in self._used_blocks():
            here = np.flatnonzero((slots >= start) & (slots < start + used))
            if len(here):
                out[here] = _gather_times(block, slots[here] - start, columns, beta)
        return out


class CutVectors:
    """Cut vectors g_k in working-set order: a cut with few nonzeros (a structured
    problem's cut moves only the Ψ entries of the examples it gets wrong, fewer and
    fewer as training goes on) is kept as its nonzeros, the others densely in a
    :class:`RowTable`, so that memory and the products w = Σ α_k g_k and g·g_k scale
    with the nonzeros rather than with the length of Ψ. The sparse cuts' nonzeros sit
    one after another in two growing buffers (a dropped cut's range is reclaimed when
    the dropped ones outweigh the kept), read by one compiled pass per product."""

    # Kept sparse at most this fraction nonzero (12 bytes a nonzero against 8 an entry).
    SPARSE_FRACTION = 0.4

    def __init__(self, width):
        self.width = width
        self._dense = RowTable(width)
        self._is_sparse = []  # per kept cut, in working-set order
        self._ranges = []  # (first, end) in the buffers of each sparse cut
        self._index_dtype = np.int32 if width < 2**31 else np.int64
        self._idx = np.empty(0, dtype=self._index_dtype)
        self._val = np.empty(0)
        self._used = 0

    @property
    def size(self):
        return len(self._is_sparse)

    def _bounds(self):
        r = np.asarray(self._ranges, dtype=np.int64).reshape(-1, 2)
        return np.ascontiguousarray(r[:, 0]), np.ascontiguousarray(r[:, 1])

    @property
    def rows(self) -> np.ndarray:
        out = np.zeros((self.size, self.width))
        mask = np.asarray(self._is_sparse, dtype=bool)
        if self._dense.size:
            out[~mask] = self._dense.rows
        for k, (lo, hi) in zip(np.flatnonzero(mask), self._ranges):
            out[k, self._idx[lo:hi]] = self._val[lo:hi]
        return out

    def _reserve(self, extra):
        need = self._used + extra
        if need <= len(self._val):
            return
        size = max(need, 2 * len(self._val))
        idx, val = np.empty(size, dtype=self._index_dtype), np.empty(size)
        idx[: self._used], val[: self._used] = self._idx[: self._used], self._val[: self._used]
        self._idx, self._val = idx, val

    def append(self, row):
        row = np.asarray(row, dtype=np.float64)
        idx = np.flatnonzero(row)
        if len(idx) <= self.SPARSE_FRACTION * self.width:
            self._reserve(len(idx))
            lo, hi = self._used, self._used + len(idx)
            self._idx[lo:hi] = idx
            self._val[lo:hi] = row[idx]
            self._used = hi
            self._ranges.append((lo, hi))
            self._is_sparse.append(True)
        else:
            self._dense.append(row)
            self._is_sparse.append(False)

    def keep(self, mask):
        mask = np.asarray(mask, dtype=bool)
        sparse = np.asarray(self._is_sparse, dtype=bool)
        self._dense.keep(mask[~sparse])
        self._ranges = [r for r, kept in zip(self._ranges, mask[sparse]) if kept]
        self._is_sparse = [s for s, kept in zip(self._is_sparse, mask) if kept]
        live = sum(hi - lo for lo, hi in self._ranges)
        if 2 * live < self._used:
            idx, val = np.empty(live, dtype=self._index_dtype), np.empty(live)
            ranges, at = [], 0
            for lo, hi in self._ranges:
                idx[at : at + hi - lo], val[at : at + hi - lo] = self._idx[lo:hi], self._val[lo:hi]
                ranges.append((at, at + hi - lo))
                at += hi - lo
            self._idx, self._val, self._ranges, self._used = idx, val, ranges, live

    def combine(self, alpha):
        """Σ_k α_k·g_k."""
        alpha = np.asarray(alpha, dtype=np.float64)
        sparse = np.asarray(self._is_sparse, dtype=bool)
        total = self._dense.combine(alpha[~sparse]) if self._dense.size else np.zeros(self.width)
        if self._ranges:
            lo, hi = self._bounds()
            add_packed_rows(
                lo, hi, self._idx, self._val, np.ascontiguousarray(alpha[sparse]), total
            )
        return total

    def dot(self, vector):
        """g_k · vector for the kept cuts, in working-set order."""
        vector = np.ascontiguousarray(vector, dtype=np.float64)
        sparse = np.asarray(self._is_sparse, dtype=bool)
        out = np.empty(self.size)
        if self._dense.size:
            out[~sparse] = self._dense.dot(vector)
        if self._ranges:
            lo, hi = self._bounds()
            out[sparse] = packed_rows_dot(lo, hi, self._idx, self._val, vector)
        return out


@njit(cache=True)
def _gather_times(table, slots, columns, beta):
    """out[k] = Σ_j beta[j]·table[slots[k], columns[j]]."""
    out = np.zeros(len(slots))
    for k in range(len(slots)):
        row = table[slots[k]]
        total = 0.0
        for j in range(len(columns)):
            total += beta[j] * row[columns[j]]
        out[k] = total
    return out


class ClassCut(NamedTuple):
    """A Crammer-Singer cut g = scale·Σ_t weights_r·δΨ_r(classes_t), r = rows_t (the
    examples it labels wrongly, ascending), δΨ_r(c) = x_r in the column of y_r minus x_r
    in the column of c (0-based); ``nnz``: the non-zeros of those rows."""

    rows: np.ndarray
    classes: np.ndarray
    scale: float
    nnz: int


class ClassCuts:
    """The cuts of a Crammer-Singer problem kept in the form they have: each as the
    examples it labels wrongly and their labels (6 bytes an example, a :class:`ClassCut`),
    where its vector in Ψ-space has k·d entries. Ψ is laid out (d, k), x_j of class c at
    j·k + c (:class:`cpsvm.problems.multiclass.MulticlassProblem`); ``weights`` (n,) are
    the examples' weights in the cuts (a cut may scale them).

    * w = Σ α_k g_k = Xᵀ·B, B (n, k) every example's coefficient per class (one pass
      over the kept cuts' examples), then one product over X.
    * The Gram row of a new cut g: g is formed in the table's (d, k) buffer, then
      O = X·g (one product over X) and ⟨g, g_k⟩ = scale_k·Σ_r weights_r·(O[r, y_r] −
      O[r, c_r]) over each kept cut's examples: a pass over the labels, not over the
      kept vectors. While the kept cuts' rows hold fewer non-zeros than X·g has products
      (early on, and n-slack's one-example cuts), the O values they read are summed one
      by one instead, in the same order: the same bits either way.

    The buffer is the one (d, k) array the table keeps: :meth:`combine` returns it
    (read-only), and the next :meth:`gram_row` overwrites it. Besides it the table keeps
    an (n, k) scratch array and X's column copy (:meth:`RowBlocks.transposed_times`).
    """

    # One product of O read at a cut's (example, class) pair costs about this many of
    # the dense product's multiply-adds (a cache line each against k contiguous values).
    PAIR_COST = 8.0

    def __init__(self, examples, y, n_classes, weights):
        """``examples``: X as a :class:`cpsvm.sparse_ops.RowBlocks`; y 1..k."""
        self.examples = examples
        n, d = examples.X.shape
        self.n, self.d, self.k = n, d, int(n_classes)
        self.width = d * self.k
        self.y0 = np.ascontiguousarray(np.asarray(y, dtype=np.int64) - 1)
        self.weights = np.ascontiguousarray(weights, dtype=np.float64)
        self._class_dtype = np.int16 if self.k <= 1 << 15 else np.int32
        self._rows = np.empty(0, dtype=np.int32)
        self._classes = np.empty(0, dtype=self._class_dtype)
        self._used = 0
        self._ranges = []  # (first, end) of each kept cut in the two buffers
        self._scales = []
        self._nnz = []
        self._buffer = None  # (d, k): w of the last combine, else zeros
        self._buffer_zero = False
        self._scratch = None  # (n, k)
        self._row_nnz = np.diff(examples.X.indptr)

    @property
    def size(self):
        return len(self._ranges)

    def cut(self, labels, scale=1.0, rows=None, losses=None) -> ClassCut:
        """The cut scale·Σ_i weights_i·(losses_i)·δΨ_i(labels_i) over all examples, or
        over ``rows`` (labels then per row); labels 1-based. ``losses``, if given, must be
        the same on every wrongly labelled example (Crammer-Singer's Δ): it joins the
        scale."""
        labels = np.asarray(labels, dtype=np.int64) - 1
        examples = np.arange(self.n) if rows is None else np.asarray(rows, dtype=np.int64)
        wrong = (labels != self.y0[examples]) & (self.weights[examples] != 0.0)
        if losses is not None:
            losses = np.asarray(losses, dtype=np.float64)[wrong]
            if len(losses):
                if np.any(losses != losses[0]):
                    raise ValueError("a class cut takes one loss for every wrong label")
                scale = scale * float(losses[0])
        picked = examples[wrong].astype(np.int32)
        classes = labels[wrong].astype(self._class_dtype)
        if rows is not None:  # ascending, as the kernels read them
            order = np.argsort(picked, kind="stable")
            picked, classes = picked[order], classes[order]
        return ClassCut(picked, classes, float(scale), int(self._row_nnz[picked].sum()))

    def append(self, cut: ClassCut):
        need = self._used + len(cut.rows)
        if need > len(self._rows):
            size = max(need, 2 * len(self._rows))
            rows, classes = np.empty(size, np.int32), np.empty(size, self._class_dtype)
            rows[: self._used], classes[: self._used] = (
                self._rows[: self._used],
                self._classes[: self._used],
            )
            self._rows, self._classes = rows, classes
        lo, hi = self._used, need
        self._rows[lo:hi], self._classes[lo:hi] = cut.rows, cut.classes
        self._used = hi
        self._ranges.append((lo, hi))
        self._scales.append(cut.scale)
        self._nnz.append(cut.nnz)

    def keep(self, mask):
        mask = np.asarray(mask, dtype=bool)
        self._ranges = [r for r, kept in zip(self._ranges, mask) if kept]
        self._scales = [s for s, kept in zip(self._scales, mask) if kept]
        self._nnz = [z for z, kept in zip(self._nnz, mask) if kept]
        live = sum(hi - lo for lo, hi in self._ranges)
        if 2 * live < self._used:
            rows, classes = np.empty(live, np.int32), np.empty(live, self._class_dtype)
            ranges, at = [], 0
            for lo, hi in self._ranges:
                rows[at : at + hi - lo], classes[at : at + hi - lo] = (
                    self._rows[lo:hi],
                    self._classes[lo:hi],
                )
                ranges.append((at, at + hi - lo))
                at += hi - lo
            self._rows, self._classes, self._ranges, self._used = rows, classes, ranges, live

    def _bounds(self):
        r = np.asarray(self._ranges, dtype=np.int64).reshape(-1, 2)
        return np.ascontiguousarray(r[:, 0]), np.ascontiguousarray(r[:, 1])

    def _scratch_nk(self):
        if self._scratch is None:
            self._scratch = np.empty((self.n, self.k))
        return self._scratch

    def coefficients(self, alpha, out=None) -> np.ndarray:
        """B (n, k) with Σ_k α_k g_k = Xᵀ·B."""
        B = np.empty((self.n, self.k)) if out is None else out
        B.fill(0.0)
        if self._ranges:
            lo, hi = self._bounds()
            factor = np.asarray(alpha, dtype=np.float64) * np.asarray(self._scales)
            _class_coefficients(lo, hi, self._rows, self._classes, factor, self.y0, self.weights, B)
        return B

    def combine(self, alpha) -> np.ndarray:
        """w = Σ_k α_k g_k, flat (d·k): a read-only view of the table's buffer."""
        B = self.coefficients(alpha, self._scratch_nk())
        if self._buffer is None:
            self._buffer = np.empty((self.d, self.k))
        self.examples.transposed_times(B, out=self._buffer)
        self._buffer_zero = False
        view = self._buffer.reshape(-1)
        view.flags.writeable = False
        return view

    def _scatter(self, cut, into):
        coef = cut.scale * self.weights[cut.rows]
        self.examples.add_by_class(cut.rows, coef, self.y0[cut.rows], cut.classes, into)

    def dense(self, cut: ClassCut) -> np.ndarray:
        """The cut's vector in Ψ-space, flat (d·k)."""
        out = np.zeros((self.d, self.k))
        self._scatter(cut, out)
        return out.reshape(-1)

    @property
    def rows(self) -> np.ndarray:
        """The kept cut vectors, one row each (dense: for the primal QP and tests)."""
        out = np.empty((self.size, self.width))
        for t in range(self.size):
            out[t] = self.dense(self._cut_at(t))
        return out

    def _cut_at(self, t):
        lo, hi = self._ranges[t]
        return ClassCut(self._rows[lo:hi], self._classes[lo:hi], self._scales[t], self._nnz[t])

    def gram_row(self, cut: ClassCut):
        """(⟨g, g_k⟩ for the kept cuts, ⟨g, g⟩); overwrites the buffer (see the class
        docstring)."""
        if len(cut.rows) == 0:
            return np.zeros(self.size), 0.0
        if self._buffer is None:
            self._buffer = np.zeros((self.d, self.k))
        elif not self._buffer_zero:
            self._buffer.fill(0.0)
        G = self._buffer
        self._scatter(cut, G)
        X = self.examples
        lo, hi = self._bounds()
        scales = np.asarray(self._scales, dtype=np.float64)
        new = (
            np.zeros(1, np.int64),
            np.array([len(cut.rows)], np.int64),
            cut.rows,
            cut.classes,
            np.array([cut.scale]),
        )
        if self.PAIR_COST * 2 * (sum(self._nnz) + cut.nnz) < X.X.nnz * self.k:
            args = (self.y0, self.weights, X.X.indptr, X.kernel_indices, X.kernel_values, G)
            cross = _pair_sums(lo, hi, self._rows, self._classes, scales, *args)
            own = _pair_sums(*new, *args)[0]
        else:
            O = X.times(G, out=self._scratch_nk())
            cross = _output_sums(
                lo, hi, self._rows, self._classes, scales, self.y0, self.weights, O
            )
            own = _output_sums(*new, self.y0, self.weights, O)[0]
        # Leave the buffer zero again: the cut's own entries are its only non-zeros.
        zero_rows_by_class(X.X.indptr, X.kernel_indices, cut.rows, self.y0, cut.classes, G)
        self._buffer_zero = True
        return cross, float(own)


@njit(cache=True)
def _class_coefficients(lo, hi, rows, classes, factor, y0, weights, B):
    """B[r, y_r] += factor_k·weights_r, B[r, c] −= the same, over each cut k's pairs."""
    for k in range(len(lo)):
        a = factor[k]
        if a != 0.0:
            for p in range(lo[k], hi[k]):
                r = rows[p]
                v = a * weights[r]
                B[r, y0[r]] += v
                B[r, classes[p]] -= v


@njit(cache=True)
def _output_sums(lo, hi, rows, classes, scales, y0, weights, O):
    """scale_k·Σ_r weights_r·(O[r, y_r] − O[r, c_r]) over each cut k's pairs."""
    out = np.empty(len(lo))
    for k in range(len(lo)):
        total = 0.0
        for p in range(lo[k], hi[k]):
            r = rows[p]
            total += weights[r] * (O[r, y0[r]] - O[r, classes[p]])
        out[k] = scales[k] * total
    return out


@njit(cache=True)
def _pair_sums(lo, hi, rows, classes, scales, y0, weights, indptr, indices, data, G):
    """:func:`_output_sums` with O = X·G computed at the pairs read only."""
    out = np.empty(len(lo))
    for k in range(len(lo)):
        total = 0.0
        for p in range(lo[k], hi[k]):
            r = rows[p]
            total += weights[r] * (
                row_dot_column(indptr, indices, data, r, G, y0[r])
                - row_dot_column(indptr, indices, data, r, G, classes[p])
            )
        out[k] = scales[k] * total
    return out


class LinearCutOracle:
    """``costs``: each example's factor cost_i (SVMlight's ``cost:``), or None for 1.
    A problem with a ``cut(w, weights, rescaling)`` method (binary: one pass of the hinge
    kernel) gives the exact cut directly; otherwise it is built from the labelling of
    ``separate``. A problem with a ``cut_table(weights)`` method that returns a table
    keeps its cuts there, in their own form (Crammer-Singer: :class:`ClassCuts`, which
    needs the loss of a wrong label to be one number); the others as vectors
    (:class:`CutVectors`)."""

    def __init__(self, problem, rescaling=MARGIN_RESCALING, cache_size=0, costs=None):
        self.problem = problem
        self.rescaling = rescaling
        self.cache_size = cache_size
        self.cache = []  # most recent labellings from the exact oracle
        self.oracle_calls = 0
        self._last_w = None  # (α, w) of the last weights() call
        n = problem.n_examples
        self.cost_factors = None if costs is None else np.asarray(costs, dtype=np.float64)
        if self.cost_factors is not None and self.cost_factors.shape != (n,):
            raise ValueError(f"expected {n} example costs, got {self.cost_factors.shape}")
        # Each example's weight in the 1-slack sums: cost_i/n.
        self._cut_weights = np.full(n, 1.0 / n) if costs is None else self.cost_factors / n
        self._use_table(self._cut_weights)

    def _use_table(self, weights):
        """Keep the cuts, sums of weights_i·δΨ_i, in the problem's table or as vectors."""
        make = getattr(self.problem, "cut_table", None)
        table = make(weights) if make is not None else None
        self._own_table = table is not None
        self._table = table if self._own_table else CutVectors(self.problem.size_psi)
        self._table_weights = weights

    def _labelling_cut(self, labels, losses=None):
        """Σ_i weights_i·(losses_i)·δΨ_i(labels_i), the table's weights, in its form."""
        if self._own_table:
            return self._table.cut(labels, losses=losses)
        weights = self._table_weights if losses is None else self._table_weights * losses
        return self.problem.delta_psi_sum(weights, labels)

    @property
    def vectors(self) -> np.ndarray:
        """Kept cut vectors, one row per cut of the working set."""
        return self._table.rows

    def weights(self, alpha) -> np.ndarray:
        if self._table.size == 0:
            return np.zeros(self.problem.size_psi)
        # The loop asks twice for the same α when the cache has no cut (-w 4); add and
        # keep forget it.
        key = np.asarray(alpha, dtype=np.float64).tobytes()
        if self._last_w is None or self._last_w[0] != key:
            self._last_w = (key, self._table.combine(alpha))
        return self._last_w[1]

    def _cut(self, labels):
        losses = self.problem.losses(labels)
        c = float(self._cut_weights @ losses)
        return c, self._labelling_cut(
            labels, None if self.rescaling == MARGIN_RESCALING else losses
        )

    def separate(self, alpha, threshold=None):
        w = self.weights(alpha)
        self.oracle_calls += self.problem.n_examples
        direct = getattr(self.problem, "cut", None)
        if direct is not None and not self.cache_size:
            return direct(w, self._cut_weights, self.rescaling)
        labels = self.problem.separate(w, self.rescaling)
        if self.cache_size:
            self.cache.append(labels)
            del self.cache[: -self.cache_size]
        return self._cut(labels)

    def separate_cached(self, alpha, threshold):
        """The most violated cut built from cached labellings, if violated > threshold."""
        if not self.cache:
            return None
        w = self.weights(alpha)
        candidates = [self.problem.true_labels()] + self.cache
        # A problem whose margins share work across labellings (scores of w) says so.
        many = getattr(self.problem, "margins_many", None)
        margins = (
            many(w, candidates)
            if many is not None
            else [self.problem.margins(w, labels) for labels in candidates]
        )
        scores = np.stack(
            [
                violation(self.problem.losses(labels), m, self.rescaling)
                for labels, m in zip(candidates, margins)
            ]
        )
        scores[0] = 0.0  # the true label: no loss, no violation
        choice = np.argmax(scores, axis=0)
        labels = self.problem.pick(candidates, choice)
        c, g = self._cut(labels)
        if self._own_table:
            # w·g from the margins at hand: the table keeps no vector of g.
            losses = self.problem.losses(labels)
            weights = (
                self._cut_weights
                if self.rescaling == MARGIN_RESCALING
                else self._cut_weights * losses
            )
            w_dot_g = float(weights @ np.stack(margins)[choice, np.arange(len(choice))])
        else:
            w_dot_g = float(w @ g)
        return (c, g) if c - w_dot_g > threshold else None

    def separate_rows(self, alpha, rows):
        """n-slack: one cut (cost_i·Δ_i, cost_i·δΨ_i) per example of ``rows`` at the
        current w (the slack cost_i·ξ_i: its bound C/n is each example's)."""
        labels = self.problem.separate(self.weights(alpha), self.rescaling, rows)
        self.oracle_calls += len(rows)
        losses = self.problem.losses(labels, rows)
        costs = (
            np.ones(len(rows)) if self.cost_factors is None else self.cost_factors[np.asarray(rows)]
        )
        # Each example's own labelling: one entry of labels, unless the problem's
        # labellings are laid out otherwise (sequences: a run of tokens per example).
        split = getattr(self.problem, "split_labels", None)
        own = (
            split(labels, rows)
            if split is not None
            else [labels[j : j + 1] for j in range(len(rows))]
        )
        cuts = []
        n = self.problem.n_examples
        for j, i in enumerate(rows):
            if self._own_table:  # weight cost_i = n·(cost_i/n), the table's
                cuts.append(
                    self._table.cut(
                        own[j],
                        scale=n,
                        rows=[i],
                        losses=None if self.rescaling == MARGIN_RESCALING else losses[j : j + 1],
                    )
                )
                continue
            weight = costs[j] * (1.0 if self.rescaling == MARGIN_RESCALING else losses[j])
            cuts.append(self.problem.delta_psi_sum([weight], own[j], [i]))
        return costs * losses, cuts

    def gram_row(self, g):
        if self._own_table:
            self._last_w = None  # the table's buffer held w
            return self._table.gram_row(g)
        return self._table.dot(g), float(g @ g)

    def add(self, g):
        self._table.append(g)
        self._last_w = None

    def keep(self, mask):
        self._table.keep(mask)
        self._last_w = None


class KernelCutOracle:
    """Binary classification with a kernel (exact 1-slack over kernel expansions).

    A cut is g = Σ_i β_i φ(x_i) over the examples it flips; it is kept as β and as
    A = K β, its inner products with every example, so that scores w·φ(x_i) = Σ_k α_k A_k
    need no kernel evaluation and the new Gram row is β_newᵀ A_k. Scales follow
    :mod:`cpsvm.problems.binary`; ``costs`` (SVMlight's ``cost:``, default 1) multiply
    each example's weight 1/n in the cut. An example's β is the same in every cut that
    flips it, so a new cut is the previous one plus the examples that changed sides:
    n·min(|flipped|, |changed|) kernel evaluations (:class:`cpsvm.kernel_rows.RowKernel`).
    """

    # Up to this many examples the whole kernel matrix is computed once and kept.
    FULL_MATRIX_MAX = 4000
    # A cut built from the previous one carries its rounding; past this many in a row
    # the next one is computed afresh.
    MAX_UPDATES = 32

    def __init__(
        self,
        X,
        y,
        kernel,
        rescaling=MARGIN_RESCALING,
        loss_scale=LOSS_SCALE,
        psi_scale=PSI_SCALE,
        costs=None,
    ):
        from ..kernel_rows import RowKernel  # its kernels load only for kernel runs

        self.y = np.asarray(y, dtype=np.float64)
        self.n = len(self.y)
        self.rows = RowKernel(X, kernel)
        self.rescaling = rescaling
        self.loss_scale, self.psi_scale = loss_scale, psi_scale
        self.costs = np.ones(self.n) if costs is None else np.asarray(costs, np.float64)
        # Each example's coefficient in a cut that flips it.
        weight = 1.0 if rescaling == MARGIN_RESCALING else loss_scale
        self.coef = weight * 2.0 * psi_scale * self.y * self.costs / self.n
        self.oracle_calls = 0
        self._A = RowTable(self.n)
        self._betas = []
        self._last = None  # (flipped mask, A, updates in a row) of the last cut
        self.full_matrix = None
        if self.n <= self.FULL_MATRIX_MAX:
            everything = np.arange(self.n)
            self.full_matrix = self.rows.matrix(everything, everything)

    @property
    def kernel_evaluations(self) -> int:
        return self.rows.evaluations

    def scores(self, alpha):
        return self._A.combine(alpha) if self._A.size else np.zeros(self.n)

    def _kernel_times(self, basis, coef):
        """K[:, basis] @ coef."""
        if self.full_matrix is not None:
            return self.full_matrix[:, basis] @ coef
        return self.rows.times(None, basis, coef)

    def separate(self, alpha, threshold=None):
        margin_threshold = 1.0 if self.rescaling == MARGIN_RESCALING else 1.0 / self.loss_scale
        # Flipped: y·score below the threshold (a = threshold, b = 1).
        flipped, _ = hinge_violators(self.y, self.scores(alpha), margin_threshold, 1.0)
        self.oracle_calls += self.n
        beta = self.coef[flipped]
        mask = np.zeros(self.n, dtype=bool)
        mask[flipped] = True
        A_new, updates = None, 0
        if self._last is not None:
            last_mask, last_A, last_updates = self._last
            changed = np.flatnonzero(mask != last_mask)
            if len(changed) < len(flipped) and last_updates < self.MAX_UPDATES:
                sign = np.where(mask[changed], 1.0, -1.0)
                A_new = last_A + self._kernel_times(changed, sign * self.coef[changed])
                updates = last_updates + 1
        if A_new is None:
            A_new = self._kernel_times(flipped, beta) if len(flipped) else np.zeros(self.n)
        self._last = (mask, A_new, updates)
        c = self.loss_scale * float(np.sum(self.costs[flipped])) / self.n
        return c, (flipped, beta, A_new)

    def separate_cached(self, alpha, threshold):
        return None

    def gram_row(self, cut):
        flipped, beta, A_new = cut
        return self._A.columns_times(flipped, beta), float(beta @ A_new[flipped])

    def add(self, cut):
        self._A.append(cut[2])
        self._betas.append(cut[:2])

    def keep(self, mask):
        mask = np.asarray(mask, dtype=bool)
        self._A.keep(mask)
        self._betas = [b for b, k in zip(self._betas, mask) if k]

    def expansion(self, alpha) -> np.ndarray:
        """Coefficient of every training example in w = Σ_k α_k g_k."""
        coef = np.zeros(self.n)
        for a, (flipped, beta) in zip(alpha, self._betas):
            coef[flipped] += a * beta
        return coef
