"""Where the oracles keep their cuts, in step with the working set: each cut's row in a
:class:`RowTable` (dense rows in reused slots), a cut vector g in Ψ-space in
:class:`CutVectors` (as its nonzeros when it has few), a Crammer-Singer cut in
:class:`ClassCuts` (the examples it labels wrongly and their labels). Each gives
w = Σ α_k g_k (``combine``) and the products of a new cut with the kept ones (``dot``,
``gram_row``); the oracles that fill them are :mod:`cpsvm.engine.oracles`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..compiled import njit
from ..sparse_ops import add_packed_rows, packed_rows_dot, row_dot_column, zero_rows_by_class


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
    j·k + c (:class:`cpsvm.problems.multiclass.problem.MulticlassProblem`); ``weights`` (n,) are
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
