"""Kernel SVMs trained with sampled cutting planes (Yu & Joachims, *Training Structural
SVMs with Kernels Using Sampled Cuts*, KDD 2008), on the engine's 1-slack loop.

Binary classification with Ψ(x, y) = 50·y·φ(x) and Δ = 100·[y ≠ ŷ], the scales of
:class:`cpsvm.engine.cuts.KernelCutOracle` and SVMperf: a flipped label gives
δΨ = 100·y·φ(x), ``C`` is SVMperf's (C_light = C·100/n) and the engine's primal is
SVMlight's objective ½|w|² + C_light·Σ hinge. Every cut is a kernel expansion
g = Σ_j β_j φ(x_j) over a few *basis examples* j:

* ``algorithm="const"`` — constant time (Algorithm 2): each cut is built from r
  examples drawn uniformly, c = 100·|F|/r and β_j = 100·y_j/r over the drawn examples F
  the current w gets wrong (margin below 1). Scoring the r draws needs their kernels
  with the union of the kept cuts' basis examples, which does not grow with n. The loop
  stops once p consecutive drawn cuts are not violated by more than ε.
* ``algorithm="linear"`` — linear time (Algorithm 3): every iteration scores all n
  examples from the table A_ki = g_k·φ(x_i) (no kernel evaluation), which gives the exact
  cut (c′, g′) over the set I of examples with non-zero loss; its excess c′ − w·g′ is the
  stop test. The cut that enters the QP draws r examples of I, β_j = 100·y_j·|I|/(n·r)
  (so that its expectation is g′, and its offset equals c′), redrawn until it is
  violated — cheap, the draws are scored from A — or the exact cut is satisfied. The
  new cut's row of A costs n·r kernel evaluations; its Gram row is read from A.

With r ≥ n (const) or r ≥ |I| (linear) the cuts are exact and both algorithms are the
exact 1-slack algorithm. Kernel evaluations — the paper's measure of work — are
counted. Kernels between sparse rows are computed in numba, threaded over rows (see
:class:`RowKernel`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from ..data import Dataset
from ..engine.cuts import RowTable
from ..engine.cutting_plane import CuttingPlaneParams, Progress, one_slack
from ..errors import InputError
from ..kernels import LINEAR, POLYNOMIAL, RBF, SIGMOID, Kernel, row_sq_norms
from ..models import KernelModel
from ..problems import check_binary_labels

ALGORITHMS = ("const", "linear")
LOSS_SCALE = 100.0        # Δ for a wrong label, as cpsvm.problems.binary
DELTA_PSI_SCALE = 100.0   # |δΨ| / |φ(x)| for a flipped label (2 · PSI_SCALE)
# Algorithm 3 redraws a sample that is not violated; draws are scored from the table A
# (no kernel evaluation), so many are affordable. Past this, the most violated is used.
MAX_DRAWS = 1000


@dataclass
class SampledParams:
    """Options of :func:`train` (the ``sampled_learn`` flags).

    ``epsilon`` is in the engine's units, cp_learn's ``-e``: the loss is 100 per wrong
    example, so ε = 0.1 is the paper's ε = 0.001 on the zero/one loss.
    """

    C: float
    epsilon: float = 0.1
    algorithm: str = "linear"        # "const" (Algorithm 2) or "linear" (Algorithm 3)
    sample_size: int = 400           # r
    patience: int = 4                # p: const stops after p unviolated draws in a row
    kernel: Kernel = field(default_factory=Kernel)
    max_iterations: int = 100000
    max_idle: int = 20               # drop a cut whose α stayed 0 for this many QPs
    seed: int = 0
    time_limit: float = math.inf

    def validate(self):
        if not self.C > 0:
            raise InputError(f"expected C > 0 (-c), got {self.C:g}")
        if not self.epsilon > 0:
            raise InputError(f"expected epsilon > 0 (-e), got {self.epsilon:g}")
        if self.algorithm not in ALGORITHMS:
            raise InputError(f"expected --algorithm const or linear, got {self.algorithm!r}")
        if self.sample_size < 1:
            raise InputError(f"expected a sample size --r >= 1, got {self.sample_size}")
        if self.patience < 1:
            raise InputError(f"expected -p >= 1 (unviolated draws before stopping), got "
                             f"{self.patience}")
        if self.max_iterations < 1:
            raise InputError(f"expected -# >= 1, got {self.max_iterations}")
        if self.max_idle < 1:
            raise InputError(f"expected --max-idle >= 1, got {self.max_idle}")


@dataclass
class SampledProgress(Progress):
    """The engine's per-iteration report plus the kernel evaluations so far."""

    kernel_evaluations: int = 0


@dataclass
class SampledInfo:
    algorithm: str
    n_examples: int
    sample_size: int
    result: object                  # engine CuttingPlaneResult
    norm_w: float
    n_sv: int                       # basis examples in the model (non-zero coefficient)
    n_cuts: int                     # cuts with α > 0
    kernel_evaluations: int
    draws: int                      # samples drawn (linear redraws unviolated ones)
    primal_is_estimate: bool        # const: ξ measured on a sample, not on all examples
    notes: list = field(default_factory=list)


def train(dataset: Dataset, params: SampledParams, *, callback=None, should_stop=None):
    """Train a kernel SVM with sampled cuts; returns ``(KernelModel, SampledInfo)``.

    ``callback`` receives a :class:`SampledProgress` after every iteration;
    ``should_stop()`` returning True ends training after the current iteration (the
    model so far is returned, status "interrupted").
    """
    params.validate()
    check_binary_labels(dataset)
    rng = np.random.default_rng(params.seed)
    const = params.algorithm == "const"
    oracle_class = ConstantTimeOracle if const else LinearTimeOracle
    oracle = oracle_class(dataset.X, dataset.y, params.kernel, params.sample_size, rng)
    engine_params = CuttingPlaneParams(
        C=params.C, epsilon=params.epsilon, max_iterations=params.max_iterations,
        max_idle=params.max_idle, time_limit=params.time_limit, use_cache=False,
        # Algorithm 3's stop test is exact: a second look at the same w adds nothing.
        patience=params.patience if const else 1,
        # No stopping on the gap: sampled cuts are not constraints of the 1-slack
        # problem (weights |I|/(n·r), not 1/n), so the working set's dual is no lower
        # bound, and const's primal, its ξ measured on a sample, no upper bound.
        tol_abs=-math.inf, tol_rel=-math.inf)

    report = None
    if callback is not None:
        def report(progress):
            callback(SampledProgress(**{f.name: getattr(progress, f.name)
                                        for f in fields(Progress)},
                                     kernel_evaluations=oracle.kernel.evaluations))

    result = one_slack(oracle, engine_params, callback=report, should_stop=should_stop)
    rows, coef = oracle.expansion(result.alpha)
    nonzero = coef != 0
    rows, coef = rows[nonzero], coef[nonzero]
    n = dataset.n_examples
    model = KernelModel(dataset.X[rows], coef, 0.0, params.kernel, n_train=n)
    alpha = result.alpha
    norm_w = math.sqrt(max(0.0, 2.0 * (result.primal - params.C * result.xi))) \
        if len(alpha) else 0.0
    notes = []
    if params.sample_size >= n:
        notes.append(f"sample size {params.sample_size} >= {n} examples: every cut is "
                     "exact")
    info = SampledInfo(params.algorithm, n, params.sample_size, result, norm_w, len(rows),
                       int(np.count_nonzero(alpha)), oracle.kernel.evaluations,
                       oracle.draws, primal_is_estimate=const and params.sample_size < n,
                       notes=notes)
    return model, info


# -- kernels between sparse rows ----------------------------------------------------------

class RowKernel:
    """Kernel values between rows of one CSR matrix, counted.

    Blocks of the kernel matrix are formed a few thousand entries at a time and
    contracted at once, so no n×r matrix is ever stored: numba computes the inner
    products, threaded over rows, against the basis held either densely (features ×
    basis, when the basis' features are few: one contiguous pass per feature of x) or
    as an inverted index (feature → basis vectors having it: sparse, high-dimensional
    data), and with them the kernel's argument (RBF: −g·|a−b|² from squared norms);
    numpy applies exp/tanh (SIMD) and BLAS contracts. Every row's sums run in a fixed
    order, so the results do not depend on the number of threads. Measured against
    :meth:`Kernel.matrix` in ``benchmarks/bench_sampled.py``.
    """

    BLOCK_ENTRIES = 1 << 21     # kernel values per block (16 MB): stays in cache
    DENSE_BASIS_MAX = 1 << 24   # largest dense features × basis array (128 MB)
    SCATTER_COST = 4.0          # an inverted-index update costs ~4 dense ones (a9a)

    def __init__(self, X, kernel: Kernel):
        X = sp.csr_matrix(X, dtype=np.float64)
        self.X = X
        self.indptr = X.indptr.astype(np.int64)
        self.indices = X.indices.astype(np.int32)
        self.data = np.ascontiguousarray(X.data)
        self.sq_norms = row_sq_norms(X)
        self.kernel = kernel
        self.evaluations = 0
        # How often each feature occurs: predicts the cost of a dense vs sparse basis.
        self.feature_frequency = np.bincount(self.indices, minlength=X.shape[1]) \
            / max(1, X.shape[0])

    def basis(self, rows) -> "_Basis":
        """The examples ``rows`` prepared as the right-hand side of kernel blocks."""
        rows = np.asarray(rows, dtype=np.int64)
        B = self.X[rows]
        count = np.bincount(B.indices, minlength=self.X.shape[1])
        used = np.flatnonzero(count)
        m = len(rows)
        dense_work = m * float(np.sum(self.feature_frequency[used]))
        sparse_work = float(self.feature_frequency @ count)
        if len(used) * m <= self.DENSE_BASIS_MAX and \
                dense_work <= self.SCATTER_COST * sparse_work:
            feature_map = np.full(self.X.shape[1], -1, np.int64)
            feature_map[used] = np.arange(len(used))
            dense = np.zeros((len(used), m))
            B = B.tocoo()
            dense[feature_map[B.col], B.row] = B.data
            return _Basis(self.sq_norms[rows], feature_map, dense, None, None, None)
        Bt = sp.csr_matrix(B.T)
        return _Basis(self.sq_norms[rows], None, None, Bt.indptr.astype(np.int64),
                      Bt.indices.astype(np.int64), np.ascontiguousarray(Bt.data))

    def _blocks(self, rows, basis):
        """(lo, hi, K[rows[lo:hi], basis]) blocks; the array is reused between blocks."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        m = len(basis.sq_norms)
        self.evaluations += len(rows) * m
        step = max(1, self.BLOCK_ENTRIES // max(m, 1))
        buffer = np.empty((min(step, len(rows)), m))
        k = self.kernel
        for lo in range(0, len(rows), step):
            hi = min(lo + step, len(rows))
            block = buffer[:hi - lo]
            args = (self.indptr, self.indices, self.data, self.sq_norms, rows[lo:hi])
            params = (basis.sq_norms, k.kind, k.degree, float(k.gamma),
                      float(k.coef_lin), float(k.coef_const), block)
            if basis.dense is not None:
                _arguments_dense(*args, basis.feature_map, basis.dense, *params)
            else:
                _arguments_sparse(*args, basis.bt_indptr, basis.bt_indices,
                                  basis.bt_data, *params)
            if k.kind == RBF:
                np.exp(block, out=block)
            elif k.kind == SIGMOID:
                np.tanh(block, out=block)
            yield lo, hi, block

    def times(self, rows, basis_rows, beta) -> np.ndarray:
        """Σ_j β_j k(x_row, x_basis_j) for every row: a kernel expansion."""
        out = np.empty(len(rows))
        for lo, hi, block in self._blocks(rows, self.basis(basis_rows)):
            out[lo:hi] = block @ beta
        return out

    def left_times(self, left, rows, basis_rows) -> np.ndarray:
        """left @ K[rows, basis_rows] for a sparse ``left`` (q × len(rows))."""
        left = sp.csc_matrix(left)
        out = np.zeros((left.shape[0], len(basis_rows)))
        for lo, hi, block in self._blocks(rows, self.basis(basis_rows)):
            out += left[:, lo:hi] @ block
        return out

    def matrix(self, rows, basis_rows) -> np.ndarray:
        """The kernel matrix block K[rows, basis_rows]."""
        out = np.empty((len(rows), len(basis_rows)))
        for lo, hi, block in self._blocks(rows, self.basis(basis_rows)):
            out[lo:hi] = block
        return out


@dataclass
class _Basis:
    sq_norms: np.ndarray
    feature_map: np.ndarray | None     # dense: feature -> row of ``dense`` (-1: absent)
    dense: np.ndarray | None           # (features used, basis size)
    bt_indptr: np.ndarray | None       # sparse: Bᵀ in CSR
    bt_indices: np.ndarray | None
    bt_data: np.ndarray | None


@njit(cache=True, inline="always")
def _argument(kind, dot, sq_a, sq_b, degree, gamma, coef_lin, coef_const):
    """The kernel value, except that exp (RBF) and tanh (sigmoid) are left to numpy."""
    if kind == LINEAR:
        return dot
    if kind == POLYNOMIAL:
        return (coef_lin * dot + coef_const) ** degree
    if kind == RBF:
        # Kernel.from_dots' order of operations; rounding can make |a-b|² negative.
        return -gamma * max(-2.0 * dot + sq_a + sq_b, 0.0)
    return coef_lin * dot + coef_const


@njit(parallel=True, cache=True)
def _arguments_dense(x_indptr, x_indices, x_data, x_sq, rows, feature_map, dense, b_sq,
                     kind, degree, gamma, coef_lin, coef_const, out):
    """out[a, j] = kernel argument of (x_rows[a], b_j), the basis held densely."""
    m = dense.shape[1]
    for a in prange(len(rows)):
        i = rows[a]
        row = out[a]
        row[:] = 0.0
        for p in range(x_indptr[i], x_indptr[i + 1]):
            f = x_indices[p]
            if f < len(feature_map) and feature_map[f] >= 0:
                value = x_data[p]
                column = dense[feature_map[f]]
                for j in range(m):
                    row[j] += value * column[j]
        sq_a = x_sq[i]
        for j in range(m):
            row[j] = _argument(kind, row[j], sq_a, b_sq[j], degree, gamma, coef_lin,
                               coef_const)


@njit(parallel=True, cache=True)
def _arguments_sparse(x_indptr, x_indices, x_data, x_sq, rows, bt_indptr, bt_indices,
                      bt_data, b_sq, kind, degree, gamma, coef_lin, coef_const, out):
    """As :func:`_arguments_dense`, the basis as Bᵀ in CSR (an inverted index)."""
    m = len(b_sq)
    n_features_b = len(bt_indptr) - 1
    for a in prange(len(rows)):
        i = rows[a]
        row = out[a]
        row[:] = 0.0
        for p in range(x_indptr[i], x_indptr[i + 1]):
            f = x_indices[p]
            if f < n_features_b:
                value = x_data[p]
                for q in range(bt_indptr[f], bt_indptr[f + 1]):
                    row[bt_indices[q]] += value * bt_data[q]
        sq_a = x_sq[i]
        for j in range(m):
            row[j] = _argument(kind, row[j], sq_a, b_sq[j], degree, gamma, coef_lin,
                               coef_const)


def _draw_sorted(rng, population: int, size: int) -> np.ndarray:
    """``size`` distinct positions of ``range(population)``, uniformly, in order."""
    return np.sort(rng.choice(population, size, replace=False))


# -- Algorithm 2: constant time ---------------------------------------------------------

class ConstantTimeOracle:
    """Cuts from r examples drawn uniformly (Yu & Joachims, Algorithm 2).

    A cut is kept as its basis examples F (sorted) and β. Scoring a draw needs
    k(x_drawn, x_u) for u in the union U of the kept cuts' bases: r·|U| evaluations,
    bounded by r²·(working-set size) whatever n is; the Gram row of the new cut is then
    free (g_k·φ(x_j) for the drawn j is what scoring computed) apart from its own
    |F|² kernel values.
    """

    def __init__(self, X, y, kernel, sample_size, rng):
        self.kernel = RowKernel(X, kernel)
        self.y = np.asarray(y, dtype=np.float64)
        self.n = len(self.y)
        self.sample_size = min(sample_size, self.n)
        self.rng = rng
        self.cuts = []              # (basis rows, β) per kept cut
        self._union = None          # cached (U, coefficients), see _union_expansion
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
            coefficients = sp.csc_matrix((betas, (cut_of, position)),
                                         shape=(len(self.cuts), len(union)))
            coefficients.sort_indices()
            self._union = (union, coefficients)
        return self._union

    def separate(self, alpha, threshold=None):
        drawn = self._draw()
        self.oracle_calls += len(drawn)
        if self.cuts:
            union, coefficients = self._union_expansion()
            # A_drawn[k, j] = g_k·φ(x_j) for the drawn j: r·|U| kernel evaluations.
            A_drawn = self.kernel.left_times(coefficients, union, drawn)
            scores = alpha @ A_drawn
        else:
            A_drawn = np.zeros((0, len(drawn)))
            scores = np.zeros(len(drawn))
        flipped = self.y[drawn] * scores < 1.0
        basis_rows = drawn[flipped]
        beta = DELTA_PSI_SCALE * self.y[basis_rows] / len(drawn)
        c = LOSS_SCALE * len(basis_rows) / len(drawn)
        return c, (basis_rows, beta, A_drawn[:, flipped] @ beta)

    def separate_cached(self, alpha, threshold):
        return None

    def gram_row(self, cut):
        basis_rows, beta, cross = cut
        if len(basis_rows) == 0:
            return cross, 0.0
        return cross, float(beta @ self.kernel.times(basis_rows, basis_rows, beta))

    def add(self, cut):
        self.cuts.append(cut[:2])
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

class LinearTimeOracle:
    """Exact argmax over all n examples, sampled cuts (Yu & Joachims, Algorithm 3).

    Keeps A_ki = g_k·φ(x_i) for every kept cut k and example i (O(T·n) memory): the
    scores w·φ(x_i) = Σ_k α_k A_ki need no kernel evaluation, neither do the draws'
    violations nor the Gram row G_k,new = Σ_j β_j A_kj (§4.2).
    """

    def __init__(self, X, y, kernel, sample_size, rng):
        self.kernel = RowKernel(X, kernel)
        self.y = np.asarray(y, dtype=np.float64)
        self.n = len(self.y)
        self.sample_size = sample_size
        self.rng = rng
        self._A = RowTable(self.n)
        self.cuts = []              # (basis rows, β) per kept cut
        self.exact_excess = None
        self.oracle_calls = 0
        self.draws = 0
        self._all_rows = np.arange(self.n)

    def scores(self, alpha):
        return alpha @ self._A.rows if self._A.size else np.zeros(self.n)

    def separate(self, alpha, threshold):
        margin = self.y * self.scores(alpha)
        self.oracle_calls += self.n
        violators = np.flatnonzero(margin < 1.0)        # I: non-zero loss
        hinge = 1.0 - margin[violators]
        n_violators = len(violators)
        c = LOSS_SCALE * n_violators / self.n
        self.exact_excess = LOSS_SCALE * float(np.sum(hinge)) / self.n   # c′ − w·g′
        if n_violators <= self.sample_size:
            basis_rows = violators                       # the exact cut
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
        beta = DELTA_PSI_SCALE * scale * self.y[basis_rows]
        # The new row of A only matters if the cut can enter the working set.
        A_new = self._row(basis_rows, beta) if self.exact_excess > threshold else None
        return c, (basis_rows, beta, A_new)

    def _row(self, basis_rows, beta):
        if len(basis_rows) == 0:
            return np.zeros(self.n)
        return self.kernel.times(self._all_rows, basis_rows, beta)

    def separate_cached(self, alpha, threshold):
        return None

    def gram_row(self, cut):
        basis_rows, beta, A_new = cut
        cross = self._A.rows[:, basis_rows] @ beta
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
