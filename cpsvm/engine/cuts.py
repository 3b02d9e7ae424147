"""Oracles that turn a structured problem into cuts for the cutting-plane loop.

``LinearCutOracle`` keeps every cut as an explicit vector g in Ψ-space, so
w = Σ α_k g_k is a dense vector. For the 1-slack formulation the cut at labelling ŷ is
c = (1/n) Σ cost_i·Δ_i(ŷ_i) and g = (1/n) Σ cost_i·δΨ_i(ŷ_i) (margin rescaling) or
g = (1/n) Σ cost_i·Δ_i(ŷ_i) δΨ_i(ŷ_i) (slack rescaling), cost_i SVMlight's ``cost:``
factor of example i (1 by default).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..conventions import LOSS_SCALE, PSI_SCALE
from ..problems.base import MARGIN_RESCALING, violation
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
        self._blocks = []           # block b holds slots _starts[b] .. _starts[b] + len - 1
        self._starts = []
        self.slots = []             # slot of each kept cut, in working-set order
        self._free = []
        self._high = 0              # slots ever used

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
            total += weights[start:start + used] @ block[:used]
        return total

    def dot(self, vector):
        """row_k · vector for the kept cuts, in working-set order."""
        products = np.empty(self._high)
        for block, start, used in self._used_blocks():
            products[start:start + used] = block[:used] @ vector
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
        self._is_sparse = []        # per kept cut, in working-set order
        self._ranges = []           # (first, end) in the buffers of each sparse cut
        self._index_dtype = np.int32 if width < 2 ** 31 else np.int64
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
        idx[:self._used], val[:self._used] = self._idx[:self._used], self._val[:self._used]
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
                idx[at:at + hi - lo], val[at:at + hi - lo] = self._idx[lo:hi], self._val[lo:hi]
                ranges.append((at, at + hi - lo))
                at += hi - lo
            self._idx, self._val, self._ranges, self._used = idx, val, ranges, live

    def combine(self, alpha):
        """Σ_k α_k·g_k."""
        alpha = np.asarray(alpha, dtype=np.float64)
        sparse = np.asarray(self._is_sparse, dtype=bool)
        total = self._dense.combine(alpha[~sparse]) if self._dense.size \
            else np.zeros(self.width)
        if self._ranges:
            lo, hi = self._bounds()
            _sparse_combine(lo, hi, self._idx, self._val,
                            np.ascontiguousarray(alpha[sparse]), total)
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
            out[sparse] = _sparse_dot(lo, hi, self._idx, self._val, vector)
        return out


@njit(cache=True)
def _sparse_combine(lo, hi, idx, val, alpha, total):
    """total[idx[j]] += alpha[k]·val[j] over each cut k's range lo[k]..hi[k]-1."""
    for k in range(len(lo)):
        a = alpha[k]
        if a != 0.0:
            for j in range(lo[k], hi[k]):
                total[idx[j]] += a * val[j]


@njit(cache=True)
def _sparse_dot(lo, hi, idx, val, vector):
    out = np.empty(len(lo))
    for k in range(len(lo)):
        total = 0.0
        for j in range(lo[k], hi[k]):
            total += val[j] * vector[idx[j]]
        out[k] = total
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


class LinearCutOracle:
    """``costs``: each example's factor cost_i (SVMlight's ``cost:``), or None for 1.
    A problem with a ``cut(w, weights, rescaling)`` method (binary: one pass of the hinge
    kernel) gives the exact cut directly; otherwise it is built from the labelling of
    ``separate``."""

    def __init__(self, problem, rescaling=MARGIN_RESCALING, cache_size=0, costs=None):
        self.problem = problem
        self.rescaling = rescaling
        self.cache_size = cache_size
        self.cache = []            # most recent labellings from the exact oracle
        self.oracle_calls = 0
        self._table = CutVectors(problem.size_psi)
        self._last_w = None        # (α, w) of the last weights() call
        n = problem.n_examples
        self.cost_factors = None if costs is None else np.asarray(costs, dtype=np.float64)
        if self.cost_factors is not None and self.cost_factors.shape != (n,):
            raise ValueError(f"expected {n} example costs, got {self.cost_factors.shape}")
        # Each example's weight in the 1-slack sums: cost_i/n.
        self._cut_weights = np.full(n, 1.0 / n) if costs is None else self.cost_factors / n

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
        weights = self._cut_weights
        c = float(weights @ losses)
        if self.rescaling != MARGIN_RESCALING:
            weights = weights * losses
        return c, self.problem.delta_psi_sum(weights, labels)

    def separate(self, alpha, threshold=None):
        w = self.weights(alpha)
        self.oracle_calls += self.problem.n_examples
        direct = getattr(self.problem, "cut", None)
        if direct is not None and not self.cache_size:
            return direct(w, self._cut_weights, self.rescaling)
        labels = self.problem.separate(w, self.rescaling)
        if self.cache_size:
            self.cache.append(labels)
            del self.cache[:-self.cache_size]
        return self._cut(labels)

    def separate_cached(self, alpha, threshold):
        """The most violated cut built from cached labellings, if violated > threshold."""
        if not self.cache:
            return None
        w = self.weights(alpha)
        candidates = [self.problem.true_labels()] + self.cache
        # A problem whose margins share work across labellings (scores of w) says so.
        many = getattr(self.problem, "margins_many", None)
        margins = many(w, candidates) if many is not None \
            else [self.problem.margins(w, labels) for labels in candidates]
        scores = np.stack([violation(self.problem.losses(labels), m, self.rescaling)
                           for labels, m in zip(candidates, margins)])
        scores[0] = 0.0  # the true label: no loss, no violation
        labels = self.problem.pick(candidates, np.argmax(scores, axis=0))
        c, g = self._cut(labels)
        return (c, g) if c - float(w @ g) > threshold else None

    def separate_rows(self, alpha, rows):
        """n-slack: one cut (cost_i·Δ_i, cost_i·δΨ_i) per example of ``rows`` at the
        current w (the slack cost_i·ξ_i: its bound C/n is each example's)."""
        labels = self.problem.separate(self.weights(alpha), self.rescaling, rows)
        self.oracle_calls += len(rows)
        losses = self.problem.losses(labels, rows)
        costs = np.ones(len(rows)) if self.cost_factors is None \
            else self.cost_factors[np.asarray(rows)]
        # Each example's own labelling: one entry of labels, unless the problem's
        # labellings are laid out otherwise (sequences: a run of tokens per example).
        split = getattr(self.problem, "split_labels", None)
        own = split(labels, rows) if split is not None \
            else [labels[j:j + 1] for j in range(len(rows))]
        cuts = []
        for j, i in enumerate(rows):
            weight = costs[j] * (1.0 if self.rescaling == MARGIN_RESCALING else losses[j])
            cuts.append(self.problem.delta_psi_sum([weight], own[j], [i]))
        return costs * losses, cuts

    def gram_row(self, g):
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

    def __init__(self, X, y, kernel, rescaling=MARGIN_RESCALING, loss_scale=LOSS_SCALE,
                 psi_scale=PSI_SCALE, costs=None):
        from ..kernel_rows import RowKernel   # its kernels load only for kernel runs
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
        self._last = None           # (flipped mask, A, updates in a row) of the last cut
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
        margin_threshold = 1.0 if self.rescaling == MARGIN_RESCALING \
            else 1.0 / self.loss_scale
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
