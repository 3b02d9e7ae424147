"""The sampled-cut oracles of Yu & Joachims (*Training Structural SVMs with Kernels Using
Sampled Cuts*, KDD 2008) for the engine's 1-slack loop: binary classification with a
kernel, every cut a kernel expansion g = Σ_j β_j φ(x_j) over a few *basis examples* j,
at SVMperf's scales (Ψ(x, y) = 50·y·φ(x), Δ = 100·[y ≠ ŷ], as
:class:`cpsvm.engine.oracles.KernelCutOracle`: a flipped label gives δΨ = 100·y·φ(x)).

* :class:`ConstantTimeOracle` (Algorithm 2): each cut from r examples drawn uniformly,
  c = 100·|F|/r and β_j = 100·y_j/r over the drawn examples F the current w gets wrong
  (margin below 1); scoring the draws needs their kernels with the union of the kept
  cuts' basis examples, which does not grow with n.
* :class:`LinearTimeOracle` (Algorithm 3): every iteration scores all n examples from
  the table A_ki = g_k·φ(x_i) (no kernel evaluation), which gives the exact cut (c′, g′)
  over the set I of examples with non-zero loss (its excess c′ − w·g′ is the stop test);
  the cut that enters the QP draws r examples of I, β_j = 100·y_j·|I|/(n·r), redrawn
  until it is violated or the exact cut is satisfied.

SVMlight's ``cost:`` factors multiply each example's weight: its term of c and its β.
Kernel rows come from :class:`cpsvm.kernel_rows.RowKernel`, which counts the kernel
evaluations (the paper's measure of work). The training function and its options are
:mod:`cpsvm.solvers.sampled`.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ..conventions import LOSS_SCALE, PSI_SCALE
from ..kernel_rows import RowKernel
from .cuts import RowTable
from .hinge import hinge_violators
from .oracles import CutOracle

DELTA_PSI_SCALE = 2.0 * PSI_SCALE  # |δΨ| / |φ(x)| for a flipped label
# Algorithm 3 redraws a sample that is not violated; draws are scored from the table A
# (no kernel evaluation), so many are affordable. Past this, the most violated is used.
MAX_DRAWS = 1000


def _draw_sorted(rng, population: int, size: int) -> np.ndarray:
    """``size`` distinct positions of ``range(population)``, uniformly, in order."""
    return np.sort(rng.choice(population, size, replace=False))


# -- Algorithm 2: constant time ---------------------------------------------------------


class ConstantTimeOracle(CutOracle):
    """Cuts from r examples drawn uniformly (Yu & Joachims, Algorithm 2).

    A cut is kept as its basis examples F (sorted) and β. Scoring a draw needs
    k(x_drawn, x_u) for u in the union U of the kept cuts' bases (w is an expansion over
    U): r·|U| evaluations, bounded by r²·(working-set size) whatever n is. The Gram row
    of a new cut, g_k·g = Σ_u (β of u in cut k)·(g·φ(x_u)), costs |U|·|F| more, and its
    own |F|² — cheaper than keeping every kept cut's products with the draws (a
    contraction with all the cuts' coefficients per drawn example dominated the time).
    """

    def __init__(self, X, y, kernel, sample_size, rng, costs=None):
        self.kernel = RowKernel(X, kernel)
        self.y = np.asarray(y, dtype=np.float64)
        self.n = len(self.y)
        self.costs = np.ones(self.n) if costs is None else np.asarray(costs, np.float64)
        self.sample_size = min(sample_size, self.n)
        self.rng = rng
        self.cuts = []  # (basis rows, β) per kept cut
        self._union = None  # cached (U, coefficients), see _union_expansion
        self.oracle_calls = 0
        self.draws = 0

    def _draw(self):
        self.draws += 1
        if self.sample_size >= self.n:
            return np.arange(self.n)
        return _draw_sorted(self.rng, self.n, self.sample_size)

    def _union_expansion(self):
        """The union U of the bases (sorted rows) and the sparse cuts × |U| matrix of
        coefficients: entry (k, u) is β of U's example u in cut k."""
        if self._union is None:
            rows = np.concatenate([r for r, _ in self.cuts])
            betas = np.concatenate([b for _, b in self.cuts])
            cut_of = np.repeat(np.arange(len(self.cuts)), [len(r) for r, _ in self.cuts])
            union, position = np.unique(rows, return_inverse=True)
            coefficients = sp.csr_matrix(
                (betas, (cut_of, position.ravel())), shape=(len(self.cuts), len(union))
            )
            self._union = (union, coefficients)
        return self._union

    def separate(self, alpha, threshold=None):
        drawn = self._draw()
        self.oracle_calls += len(drawn)
        scores = np.zeros(len(drawn))
        if self.cuts:
            scores = self.kernel.times(drawn, *self.expansion(alpha))
        # Flipped: margin y·score below 1 (a = 1, b = 1).
        flipped, _ = hinge_violators(self.y[drawn], scores, 1.0, 1.0)
        basis_rows = drawn[flipped]
        cost = self.costs[basis_rows]
        beta = DELTA_PSI_SCALE * cost * self.y[basis_rows] / len(drawn)
        c = LOSS_SCALE * float(np.sum(cost)) / len(drawn)
        return c, (basis_rows, beta)

    def separate_cached(self, alpha, threshold):
        return None

    def gram_row(self, cut):
        basis_rows, beta = cut
        if len(basis_rows) == 0:
            return np.zeros(len(self.cuts)), 0.0
        self_product = float(beta @ self.kernel.times(basis_rows, basis_rows, beta))
        if not self.cuts:
            return np.zeros(0), self_product
        union, coefficients = self._union_expansion()
        return coefficients @ self.kernel.times(union, basis_rows, beta), self_product

    def add(self, cut):
        self.cuts.append(cut)
        self._union = None

    def keep(self, mask):
        self.cuts = [cut for cut, kept in zip(self.cuts, mask) if kept]
        self._union = None

    def expansion(self, alpha):
        """(rows, coefficient) of w = Σ_k α_k g_k over the union of the bases."""
        if not self.cuts:
            return np.zeros(0, np.int64), np.zeros(0)
        union, coefficients = self._union_expansion()
        return union, coefficients.T @ np.asarray(alpha, dtype=np.float64)


# -- Algorithm 3: linear time ------------------------------------------------------------


class LinearTimeOracle(CutOracle):
    """Exact argmax over all n examples, sampled cuts (Yu & Joachims, Algorithm 3).

    Keeps A_ki = g_k·φ(x_i) for every kept cut k and example i (O(T·n) memory): the
    scores w·φ(x_i) = Σ_k α_k A_ki need no kernel evaluation, neither do the draws'
    violations nor the Gram row G_k,new = Σ_j β_j A_kj (§4.2).
    """

    def __init__(self, X, y, kernel, sample_size, rng, costs=None):
        self.kernel = RowKernel(X, kernel)
        self.y = np.asarray(y, dtype=np.float64)
        self.n = len(self.y)
        self.costs = np.ones(self.n) if costs is None else np.asarray(costs, np.float64)
        self.sample_size = sample_size
        self.rng = rng
        self._A = RowTable(self.n)
        self.cuts = []  # (basis rows, β) per kept cut
        self.exact_excess = None
        self.oracle_calls = 0
        self.draws = 0

    def scores(self, alpha):
        return self._A.combine(alpha) if self._A.size else np.zeros(self.n)

    def separate(self, alpha, threshold):
        self.oracle_calls += self.n
        # I: non-zero loss, margin y·score below 1 (a = 1, b = 1); hinge 1 − margin.
        violators, hinge = hinge_violators(self.y, self.scores(alpha), 1.0, 1.0)
        cost = self.costs[violators]
        hinge = cost * hinge  # each example's weighted hinge
        n_violators = len(violators)
        c = LOSS_SCALE * float(np.sum(cost)) / self.n
        self.exact_excess = LOSS_SCALE * float(np.sum(hinge)) / self.n  # c′ − w·g′
        if n_violators <= self.sample_size:
            basis_rows = violators  # the exact cut
            scale = 1.0 / self.n
            self.draws += 1
        else:
            scale = n_violators / (self.n * self.sample_size)
            best, best_excess = None, -math.inf
            attempts = 1 if self.exact_excess <= threshold else MAX_DRAWS
            for _ in range(attempts):
                chosen = _draw_sorted(self.rng, n_violators, self.sample_size)
                self.draws += 1
                excess = LOSS_SCALE * scale * float(np.sum(hinge[chosen]))
                if excess > best_excess:
                    best, best_excess = chosen, excess
                if excess > threshold:
                    break
            basis_rows = violators[best]
            # The offset of the drawn sample, as its vector is (its costs' mean times |I|
            # for Σ_I cost): its excess c − w·g is then the one drawn for. With unit costs
            # it is the exact offset, to the bit.
            mean_cost = float(np.sum(cost[best])) / self.sample_size
            c = LOSS_SCALE * mean_cost * n_violators / self.n
        beta = DELTA_PSI_SCALE * scale * self.costs[basis_rows] * self.y[basis_rows]
        # The new row of A only matters if the cut can enter the working set.
        A_new = self._row(basis_rows, beta) if self.exact_excess > threshold else None
        return c, (basis_rows, beta, A_new)

    def _row(self, basis_rows, beta):
        if len(basis_rows) == 0:
            return np.zeros(self.n)
        return self.kernel.times(None, basis_rows, beta)

    def separate_cached(self, alpha, threshold):
        return None

    def gram_row(self, cut):
        basis_rows, beta, A_new = cut
        cross = self._A.columns_times(basis_rows, beta)
        if A_new is not None:
            return cross, float(beta @ A_new[basis_rows])
        if len(basis_rows) == 0:
            return cross, 0.0
        return cross, float(beta @ self.kernel.times(basis_rows, basis_rows, beta))

    def add(self, cut):
        basis_rows, beta, A_new = cut
        if A_new is None:
            A_new = self._row(basis_rows, beta)
        self._A.append(A_new)
        self.cuts.append((basis_rows, beta))

    def keep(self, mask):
        mask = np.asarray(mask, dtype=bool)
        self._A.keep(mask)
        self.cuts = [cut for cut, k in zip(self.cuts, mask) if k]

    def expansion(self, alpha):
        """(rows, coefficient) of w = Σ_k α_k g_k; an example in several cuts is merged."""
        coef = np.zeros(self.n)
        for a, (rows, beta) in zip(alpha, self.cuts):
            coef[rows] += a * beta
        rows = np.flatnonzero(coef)
        return rows, coef[rows]
