"""Oracles that turn a structured problem into cuts for the cutting-plane loop.

``LinearCutOracle`` keeps every cut as an explicit vector g in Ψ-space, so
w = Σ α_k g_k is a dense vector. For the 1-slack formulation the cut at labelling ŷ is
c = (1/n) Σ Δ_i(ŷ_i) and g = (1/n) Σ δΨ_i(ŷ_i) (margin rescaling) or
g = (1/n) Σ Δ_i(ŷ_i) δΨ_i(ŷ_i) (slack rescaling).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..problems.base import MARGIN_RESCALING, violation


class RowTable:
    """Per-cut rows an oracle keeps in step with the working set (cut vectors, or a
    kernel cut's inner products with every example). Each row sits in a slot of one
    array that is reused once its cut is dropped, so removing cuts copies nothing
    (compacting a T × n table on every removal took 7% of sampled_learn's time on a9a);
    the products below read the kept slots in working-set order."""

    def __init__(self, width):
        self._rows = np.zeros((8, width))
        self.slots = []             # slot of each kept cut, in working-set order
        self._free = []
        self._high = 0              # slots ever used

    @property
    def size(self):
        return len(self.slots)

    @property
    def rows(self) -> np.ndarray:
        """The kept rows in working-set order (a copy)."""
        return self._rows[self.slots]

    def append(self, row):
        if self._free:
            slot = self._free.pop()
        else:
            if self._high == len(self._rows):
                grown = np.zeros((2 * len(self._rows), self._rows.shape[1]))
                grown[:self._high] = self._rows[:self._high]
                self._rows = grown
            slot = self._high
            self._high += 1
        self._rows[slot] = row
        self.slots.append(slot)

    def keep(self, mask):
        for slot, kept in zip(self.slots, mask):
            if not kept:
                self._free.append(slot)
        self.slots = [slot for slot, kept in zip(self.slots, mask) if kept]

    def combine(self, alpha):
        """Σ_k α_k·row_k (free slots get weight 0)."""
        weights = np.zeros(self._high)
        weights[self.slots] = alpha
        return weights @ self._rows[:self._high]

    def dot(self, vector):
        """row_k · vector for the kept cuts, in working-set order."""
        return (self._rows[:self._high] @ vector)[self.slots]

    def columns_times(self, columns, beta):
        """rows[:, columns] @ beta for the kept cuts, in working-set order."""
        return _gather_times(self._rows, np.asarray(self.slots, dtype=np.int64),
                             np.asarray(columns, dtype=np.int64), beta)


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
    def __init__(self, problem, rescaling=MARGIN_RESCALING, cache_size=0):
        self.problem = problem
        self.rescaling = rescaling
        self.cache_size = cache_size
        self.cache = []            # most recent labellings from the exact oracle
        self.oracle_calls = 0
        self._table = RowTable(problem.size_psi)

    @property
    def vectors(self) -> np.ndarray:
        """Kept cut vectors, one row per cut of the working set."""
        return self._table.rows

    def weights(self, alpha) -> np.ndarray:
        if self._table.size == 0:
            return np.zeros(self.problem.size_psi)
        return self._table.combine(alpha)

    def _cut(self, labels, rows=None):
        n = self.problem.n_examples if rows is None else len(rows)
        losses = self.problem.losses(labels, rows)
        weights = np.full(n, 1.0 / n) if self.rescaling == MARGIN_RESCALING else losses / n
        return float(np.mean(losses)), self.problem.delta_psi_sum(weights, labels, rows)

    def separate(self, alpha, threshold=None):
        labels = self.problem.separate(self.weights(alpha), self.rescaling)
        self.oracle_calls += self.problem.n_examples
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
        scores = np.stack([
            violation(self.problem.losses(labels), self.problem.margins(w, labels),
                      self.rescaling) for labels in candidates])
        scores[0] = 0.0  # the true label: no loss, no violation
        labels = self.problem.pick(candidates, np.argmax(scores, axis=0))
        c, g = self._cut(labels)
        return (c, g) if c - float(w @ g) > threshold else None

    def separate_rows(self, alpha, rows):
        """n-slack: one cut (Δ_i, δΨ_i) per example of ``rows`` at the current w."""
        labels = self.problem.separate(self.weights(alpha), self.rescaling, rows)
        self.oracle_calls += len(rows)
        losses = self.problem.losses(labels, rows)
        cuts = []
        for j, i in enumerate(rows):
            weight = 1.0 if self.rescaling == MARGIN_RESCALING else losses[j]
            cuts.append(self.problem.delta_psi_sum([weight], labels[j:j + 1], [i]))
        return losses, cuts

    def gram_row(self, g):
        return self._table.dot(g), float(g @ g)

    def add(self, g):
        self._table.append(g)

    def keep(self, mask):
        self._table.keep(mask)


class KernelCutOracle:
    """Binary classification with a kernel (exact 1-slack over kernel expansions).

    A cut is g = Σ_i β_i φ(x_i) over the examples it flips; it is kept as β and as
    A = K β, its inner products with every example, so that scores w·φ(x_i) = Σ_k α_k A_k
    need no kernel evaluation and the new Gram row is β_newᵀ A_k. Each new cut costs
    n·|flipped| kernel evaluations. Scales follow :mod:`cpsvm.problems.binary`.
    """

    # Up to this many examples the whole kernel matrix is computed once and kept.
    FULL_MATRIX_MAX = 4000

    def __init__(self, X, y, kernel, rescaling=MARGIN_RESCALING, loss_scale=100.0,
                 psi_scale=50.0, block_rows=4096):
        import scipy.sparse as sp
        from ..kernels import row_sq_norms
        self.X = sp.csr_matrix(X, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
        self.kernel = kernel
        self.rescaling = rescaling
        self.loss_scale, self.psi_scale = loss_scale, psi_scale
        self.block_rows = block_rows
        self.n = self.X.shape[0]
        self.sq_norms = row_sq_norms(self.X)
        self.oracle_calls = 0
        self.kernel_evaluations = 0
        self._A = RowTable(self.n)
        self._betas = []
        self.full_matrix = None
        if self.n <= self.FULL_MATRIX_MAX:
            self.full_matrix = kernel.matrix(self.X, self.X)
            self.kernel_evaluations = self.n * self.n

    def scores(self, alpha):
        return self._A.combine(alpha) if self._A.size else np.zeros(self.n)

    def separate(self, alpha, threshold=None):
        margin = self.y * self.scores(alpha)
        threshold = 1.0 if self.rescaling == MARGIN_RESCALING else 1.0 / self.loss_scale
        flipped = np.flatnonzero(margin < threshold)
        self.oracle_calls += self.n
        weight = 1.0 if self.rescaling == MARGIN_RESCALING else self.loss_scale
        beta = weight * 2.0 * self.psi_scale * self.y[flipped] / self.n
        A_new = np.zeros(self.n)
        if len(flipped) and self.full_matrix is not None:
            A_new = self.full_matrix[:, flipped] @ beta
        elif len(flipped):
            basis = self.X[flipped]
            for lo in range(0, self.n, self.block_rows):
                hi = min(lo + self.block_rows, self.n)
                A_new[lo:hi] = self.kernel.matrix(self.X[lo:hi], basis,
                                                  sq_norms_b=self.sq_norms[flipped]) @ beta
            self.kernel_evaluations += self.n * len(flipped)
        c = self.loss_scale * len(flipped) / self.n
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
