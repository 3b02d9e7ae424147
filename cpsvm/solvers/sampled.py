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
:class:`RowKernel`); on a9a (RBF, n = 32561, r = 400) they are nine tenths of the
training time, the master QP ~5%.
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
from ..sparse_ops import as_csr, first_identical_rows

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
    kernel_evaluations: int         # the algorithm's (the paper's measure of work)
    kernel_values_computed: int     # values formed: identical examples share theirs
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
                       oracle.kernel.computed, oracle.draws,
                       primal_is_estimate=const and params.sample_size < n, notes=notes)
    return model, info


# -- kernels between sparse rows ----------------------------------------------------------

_TIMES, _MATRIX = 0, 1     # what _kernel_rows does with each row's values


class RowKernel:
    """Kernel values between rows of one CSR matrix, counted.

    Every kernel value is formed, used and forgotten in one numba pass over a batch of
    rows (:func:`_kernel_rows`, threads take fixed ranges of rows): the inner products
    with the basis, the kernel (RBF from squared norms, its exp vectorized, see
    :func:`_exp_nonpositive`; looked up in :attr:`table` for 0/1 features) and the sum
    with the coefficients, while the values are still in the L1 cache; no n×r matrix is
    ever stored. The basis is held

    * as bitsets when every feature value is 1 (one-hot/binary data such as a9a): x·b is
      the number of features the two share, a popcount of 64 features at a time;
    * densely, features used × examples in blocks of :attr:`BASIS_CHUNK` examples, when
      the basis' features are few: one contiguous pass per eight features of x;
    * or as an inverted index (feature → basis examples having it: sparse,
      high-dimensional data).

    Examples with identical features share their kernel values: rows are computed once per
    distinct feature vector and copied, and basis examples that coincide are merged (their
    coefficients added), so categorical data such as a9a (a quarter of its rows repeat
    another's) costs less. :attr:`evaluations` counts the kernel evaluations of the
    algorithm (rows × basis examples, the paper's measure); :attr:`computed` the values
    actually formed.

    Every row's values and sums are formed in a fixed order, so the results do not depend
    on the number of threads. Measured against :meth:`Kernel.matrix` in
    ``benchmarks/bench_sampled.py`` (a9a, RBF: ~20x its speed on two cores).
    """

    DENSE_BASIS_MAX = 1 << 24   # largest dense features × basis array (128 MB)
    BITSETS = True              # 0/1 features: inner products as popcounts of bitsets
    SCATTER_COST = 4.0          # an inverted-index update costs ~4 dense ones (a9a)
    BASIS_CHUNK = 1024          # basis examples per dense block (8 kB of values per row)

    def __init__(self, X, kernel: Kernel):
        X = as_csr(X)
        self.X = X
        self.n = X.shape[0]
        self.indptr = X.indptr.astype(np.int64)
        self.indices = X.indices.astype(np.int32)
        self.data = np.ascontiguousarray(X.data)
        self.sq_norms = row_sq_norms(X)
        # All values 1 (one-hot / binary features, as a9a): x·b counts common features.
        self.binary = X.nnz > 0 and bool(np.all(self.data == 1.0))
        self.kernel = kernel
        # With 0/1 features a·b and |a-b|² are integers up to twice the longest row: the
        # kernel at each (computed as Kernel.matrix computes it) is looked up instead of
        # evaluated, which halved the time of RBF rows on a9a (the exp was half of it).
        self.table = np.zeros(0)
        if self.binary and not kernel.is_linear:
            longest = int(np.max(np.diff(self.indptr)))
            if kernel.kind == RBF:   # argument |a-b|² = 0 + m - 2·0
                m = np.arange(2 * longest + 1, dtype=np.float64)
                self.table = kernel.from_dots(np.zeros((1, len(m))), np.zeros(1), m)[0]
            else:                    # argument a·b
                self.table = kernel.from_dots(
                    np.arange(longest + 1, dtype=np.float64)[None, :], None, None)[0]
        self.evaluations = 0
        self.computed = 0
        # How often each feature occurs: predicts the cost of a dense vs sparse basis.
        self.feature_frequency = np.bincount(self.indices, minlength=X.shape[1]) \
            / max(1, X.shape[0])
        # representative[i]: the first row with the same features as row i.
        self.representative = first_identical_rows(X)
        self.distinct = np.flatnonzero(self.representative == np.arange(self.n))
        self.has_duplicates = len(self.distinct) < self.n
        self._all_rows = np.arange(self.n)
        if self.has_duplicates:
            self._distinct_index = np.full(self.n, -1, np.int64)
            self._distinct_index[self.distinct] = np.arange(len(self.distinct))

    # -- what is computed -------------------------------------------------------------

    def times(self, rows, basis_rows, beta) -> np.ndarray:
        """Σ_j β_j k(x_row, x_basis_j) for every row (``rows=None``: all rows)."""
        self._count(rows, basis_rows)
        rows, spread = self._distinct_rows(rows)
        basis_rows, beta = self._merged_basis(basis_rows, np.asarray(beta, np.float64))
        out = np.zeros((len(rows), 1))
        if len(basis_rows):
            self._run(_TIMES, rows, basis_rows, out, beta=beta)
        out = out[:, 0]
        return out if spread is None else out[spread]

    def matrix(self, rows, basis_rows) -> np.ndarray:
        """The kernel matrix block K[rows, basis_rows]."""
        self._count(rows, basis_rows)
        rows, spread = self._distinct_rows(rows)
        basis_rows = np.asarray(basis_rows, dtype=np.int64)
        out = np.zeros((len(rows), len(basis_rows)))
        if len(basis_rows):
            self._run(_MATRIX, rows, basis_rows, out)
        return out if spread is None else out[spread]

    # -- how ----------------------------------------------------------------------------

    def _count(self, rows, basis_rows):
        self.evaluations += (self.n if rows is None else len(rows)) * len(basis_rows)

    def _distinct_rows(self, rows):
        """(rows to compute, positions to copy them to) — each distinct row once."""
        if rows is None:
            if not self.has_duplicates:
                return self._all_rows, None
            return self.distinct, self._distinct_index[self.representative]
        rows = np.asarray(rows, dtype=np.int64)
        if not self.has_duplicates:
            return rows, None
        distinct, spread = np.unique(self.representative[rows], return_inverse=True)
        return distinct, spread.ravel()

    def _merged_basis(self, basis_rows, beta):
        """Basis examples with identical features merged, their coefficients added."""
        basis_rows = np.asarray(basis_rows, dtype=np.int64)
        if not self.has_duplicates or len(basis_rows) == 0:
            return basis_rows, beta
        merged, position = np.unique(self.representative[basis_rows], return_inverse=True)
        if len(merged) == len(basis_rows) and np.all(merged == basis_rows):
            return basis_rows, beta
        return merged, np.bincount(position.ravel(), weights=beta, minlength=len(merged))

    def basis(self, rows) -> "_Basis":
        """The examples ``rows`` prepared as the right-hand side of kernel rows."""
        rows = np.asarray(rows, dtype=np.int64)
        count = _feature_counts(self.indptr, self.indices, rows, self.X.shape[1])
        used = np.flatnonzero(count)
        m = len(rows)
        dense_work = m * float(np.sum(self.feature_frequency[used]))
        sparse_work = float(self.feature_frequency @ count)
        words = -(-len(used) // 64)
        bitsets = self.BITSETS and self.binary and m * words <= dense_work
        if bitsets or (len(used) * m <= self.DENSE_BASIS_MAX and
                       dense_work <= self.SCATTER_COST * sparse_work):
            # Blocks of `width` examples, the last one padded with zero columns.
            width = min(self.BASIS_CHUNK, -(-m // 8) * 8)
            n_blocks = -(-m // width)
            feature_map = np.full(self.X.shape[1], -1, np.int64)
            feature_map[used] = np.arange(len(used))
            sq_norms = np.zeros(n_blocks * width)
            sq_norms[:m] = self.sq_norms[rows]
            sq_norms = sq_norms.reshape(n_blocks, width)
            if bitsets:
                # Bit f % 64 of word f // 64 set if the example has used feature f.
                bits = np.zeros((n_blocks, words, width), np.uint64)
                _fill_bits(self.indptr, self.indices, rows, feature_map, bits)
                return _Basis(m, width, sq_norms, feature_map, _NO_BLOCKS, bits, _NO_INDEX,
                              _NO_INDEX, _NO_DATA)
            dense = np.zeros((n_blocks, len(used), width))
            _fill_dense(self.indptr, self.indices, self.data, rows, feature_map, dense)
            return _Basis(m, width, sq_norms, feature_map, dense, _NO_BITS, _NO_INDEX,
                          _NO_INDEX, _NO_DATA)
        Bt = sp.csr_matrix(self.X[rows].T)
        Bt.sort_indices()
        return _Basis(m, m, self.sq_norms[rows].reshape(1, m), _NO_INDEX, _NO_BLOCKS,
                      _NO_BITS, Bt.indptr.astype(np.int64), Bt.indices.astype(np.int64),
                      np.ascontiguousarray(Bt.data))

    def _run(self, mode, rows, basis_rows, out, beta=None):
        basis = self.basis(basis_rows)
        self.computed += len(rows) * basis.size
        if beta is None:
            beta = np.zeros((1, 0))
        else:
            padded = np.zeros(basis.sq_norms.size)
            padded[:basis.size] = beta
            beta = padded.reshape(basis.sq_norms.shape)
        k = self.kernel
        _kernel_rows(self.indptr, self.indices, self.data, self.sq_norms,
                     np.ascontiguousarray(rows, dtype=np.int64), basis.size,
                     basis.sq_norms, basis.feature_map, basis.dense, basis.bits,
                     basis.bt_indptr,
                     basis.bt_indices, basis.bt_data, k.kind, k.degree, float(k.gamma),
                     float(k.coef_lin), float(k.coef_const), self.table, mode, beta, out)


_NO_INDEX = np.zeros(0, np.int64)
_NO_DATA = np.zeros(0)
_NO_BLOCKS = np.zeros((1, 0, 0))      # one empty block: [0] is a valid (0, 0) view
_NO_BITS = np.zeros((1, 0, 0), np.uint64)


@dataclass
class _Basis:
    size: int                          # basis examples
    width: int                         # values formed per block
    sq_norms: np.ndarray               # (blocks, width), zero-padded
    feature_map: np.ndarray            # dense: feature -> row of a block (-1: absent)
    dense: np.ndarray                  # dense: (blocks, features used, width)
    bits: np.ndarray                   # bitsets: (blocks, words, width) uint64
    bt_indptr: np.ndarray              # sparse: Bᵀ in CSR (one block)
    bt_indices: np.ndarray
    bt_data: np.ndarray

    @property
    def is_dense(self) -> bool:
        """Dense blocks or bitsets (else the inverted index)."""
        return self.dense.size > 0 or self.bits.size > 0

    @property
    def is_bits(self) -> bool:
        return self.bits.size > 0


@njit(cache=True)
def _feature_counts(indptr, indices, rows, n_features):
    count = np.zeros(n_features, np.int64)
    for i in rows:
        for p in range(indptr[i], indptr[i + 1]):
            count[indices[p]] += 1
    return count


@njit(cache=True)
def _fill_dense(indptr, indices, data, rows, feature_map, dense):
    width = dense.shape[2]
    for a in range(len(rows)):
        i = rows[a]
        for p in range(indptr[i], indptr[i + 1]):
            dense[a // width, feature_map[indices[p]], a % width] = data[p]


@njit(cache=True)
def _fill_bits(indptr, indices, rows, feature_map, bits):
    width = bits.shape[2]
    for a in range(len(rows)):
        i = rows[a]
        for p in range(indptr[i], indptr[i + 1]):
            f = feature_map[indices[p]]
            bits[a // width, f // 64, a % width] |= np.uint64(1) << np.uint64(f % 64)


# exp(x) for x <= 0 as 2^k·p(r), x = k·ln 2 + r, |r| <= ln(2)/2: the degree-13 Taylor
# polynomial errs by < 1e-17 there; measured within 1 ulp of numpy's exp over [-708, 0].
_INV_LN2 = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01   # ln 2 split so that k·_LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_ROUND = 6755399441055744.0            # 1.5·2^52: x + _ROUND - _ROUND rounds x to an integer
_ROUND_BITS = int(np.float64(_ROUND).view(np.int64))
_EXP_MIN = -708.0                      # exp below this is under 3.3e-308: clamped there


@njit(cache=True, fastmath={"contract"})
def _exp_nonpositive(values, scale, size):
    """values[:size] <- exp(values[:size]) for values <= 0, in loops the compiler
    vectorizes (libm's exp is called one value at a time; numpy's cannot be called here).
    ``scale`` is scratch of the same length."""
    for j in range(size):
        x = values[j]
        x = x if x > _EXP_MIN else _EXP_MIN
        t = x * _INV_LN2 + _ROUND
        k = t - _ROUND
        r = (x - k * _LN2_HI) - k * _LN2_LO
        values[j] = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6 + r * (1.0 / 24 + r * (
            1.0 / 120 + r * (1.0 / 720 + r * (1.0 / 5040 + r * (1.0 / 40320 + r * (
                1.0 / 362880 + r * (1.0 / 3628800 + r * (1.0 / 39916800 + r * (
                    1.0 / 479001600 + r * (1.0 / 6227020800)))))))))))))
        scale[j] = t
    bits = scale.view(np.int64)
    for j in range(size):
        # t's low mantissa bits hold k: 2^k has the exponent field k + 1023.
        bits[j] = (bits[j] - _ROUND_BITS + 1023) << 52
    for j in range(size):
        values[j] *= scale[j]


# A batch of rows is processed together, one helper call per step for all of them: the
# fixed cost of a row (calls, loop set-up) was ~150 ns, as much as 150 kernel values.
_BATCH = 8
_ROWS_PER_TASK = 256


@njit(cache=True, fastmath={"contract"})
def _dots_dense(x_indptr, x_indices, x_data, rows, start, count, feature_map, block, values,
                rows_of, weights):
    """values[r, j] = x_rows[start + r] · b_j for the examples of one dense basis block.

    The block's rows for x's features are added eight (then four, two, one) at a time:
    one pass over the values per eight features instead of one per feature (1.5x faster
    on a9a). ``rows_of`` and ``weights`` are scratch as long as the longest row."""
    width = block.shape[1]
    n_features = len(feature_map)
    for r in range(count):
        i = rows[start + r]
        out = values[r]
        used = 0
        for p in range(x_indptr[i], x_indptr[i + 1]):
            f = x_indices[p]
            if f < n_features and feature_map[f] >= 0:
                rows_of[used] = feature_map[f]
                weights[used] = x_data[p]
                used += 1
        for j in range(width):
            out[j] = 0.0
        s = 0
        while s + 8 <= used:
            c0, c1, c2, c3 = block[rows_of[s]], block[rows_of[s + 1]], \
                block[rows_of[s + 2]], block[rows_of[s + 3]]
            c4, c5, c6, c7 = block[rows_of[s + 4]], block[rows_of[s + 5]], \
                block[rows_of[s + 6]], block[rows_of[s + 7]]
            v0, v1, v2, v3 = weights[s], weights[s + 1], weights[s + 2], weights[s + 3]
            v4, v5, v6, v7 = weights[s + 4], weights[s + 5], weights[s + 6], weights[s + 7]
            for j in range(width):
                out[j] = out[j] + v0 * c0[j] + v1 * c1[j] + v2 * c2[j] + v3 * c3[j] \
                    + v4 * c4[j] + v5 * c5[j] + v6 * c6[j] + v7 * c7[j]
            s += 8
        if s + 4 <= used:
            c0, c1, c2, c3 = block[rows_of[s]], block[rows_of[s + 1]], \
                block[rows_of[s + 2]], block[rows_of[s + 3]]
            v0, v1, v2, v3 = weights[s], weights[s + 1], weights[s + 2], weights[s + 3]
            for j in range(width):
                out[j] = out[j] + v0 * c0[j] + v1 * c1[j] + v2 * c2[j] + v3 * c3[j]
            s += 4
        if s + 2 <= used:
            c0, c1 = block[rows_of[s]], block[rows_of[s + 1]]
            v0, v1 = weights[s], weights[s + 1]
            for j in range(width):
                out[j] = out[j] + v0 * c0[j] + v1 * c1[j]
            s += 2
        if s < used:
            c0, v0 = block[rows_of[s]], weights[s]
            for j in range(width):
                out[j] += v0 * c0[j]


@njit(cache=True, inline="always")
def _popcount(x):
    """Set bits of a uint64 (the compiler turns this idiom into popcnt instructions)."""
    pairs, nibbles = np.uint64(0x3333333333333333), np.uint64(0x0F0F0F0F0F0F0F0F)
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & pairs) + ((x >> np.uint64(2)) & pairs)
    x = (x + (x >> np.uint64(4))) & nibbles
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


@njit(cache=True, inline="always")
def _shared_counts(x_indptr, x_indices, i, feature_map, block, x_bits, counts):
    """counts[j] <- the number of used features that row i shares with basis example j,
    for 0/1 features: popcounts of bitsets (``block``: words × width; ``x_bits``: scratch
    of at least words)."""
    words, width = block.shape
    n_features = len(feature_map)
    for w in range(words):
        x_bits[w] = 0
    for p in range(x_indptr[i], x_indptr[i + 1]):
        f = x_indices[p]
        if f < n_features and feature_map[f] >= 0:
            bit = feature_map[f]
            x_bits[bit // 64] |= np.int64(1) << np.int64(bit % 64)
    for j in range(width):
        counts[j] = 0
    for w in range(words):
        word = np.uint64(x_bits[w])
        if word == 0:
            continue
        column = block[w]
        for j in range(width):
            counts[j] += np.int64(_popcount(word & column[j]))


@njit(cache=True)
def _dots_bits(x_indptr, x_indices, rows, start, count, feature_map, block, values, x_bits,
               counts):
    """values[r, j] = x · b_j for 0/1 features (:func:`_shared_counts`)."""
    for r in range(count):
        _shared_counts(x_indptr, x_indices, rows[start + r], feature_map, block, x_bits,
                       counts)
        out = values[r]
        for j in range(block.shape[1]):
            out[j] = counts[j]


@njit(cache=True)
def _times_bits(x_indptr, x_indices, rows, start, count, feature_map, block, x_sq, b_sq,
                rbf, table, block_beta, counts, x_bits, lanes):
    """:func:`_dots_bits`, the kernel looked up in ``table`` and the sum with β (mode
    _TIMES) in one pass per row, the shared-feature counts kept as integers (``b_sq``
    too): the same values and sums as the three steps, in half the time (a9a, RBF)."""
    width = block.shape[1]
    lane = np.zeros(8)
    for r in range(count):
        i = rows[start + r]
        _shared_counts(x_indptr, x_indices, i, feature_map, block, x_bits, counts)
        for t in range(8):
            lane[t] = lanes[r, t]
        if rbf:   # |a-b|² = |a|² + |b|² - 2·shared
            sq_a = np.int64(x_sq[i])
            for j in range(width):
                lane[j & 7] += block_beta[j] * table[sq_a + b_sq[j] - 2 * counts[j]]
        else:     # a·b = shared
            for j in range(width):
                lane[j & 7] += block_beta[j] * table[counts[j]]
        for t in range(8):
            lanes[r, t] = lane[t]


@njit(cache=True, fastmath={"contract"})
def _dots_sparse(x_indptr, x_indices, x_data, rows, start, count, bt_indptr, bt_indices,
                 bt_data, values):
    """values[r, j] = x · b_j, the basis as an inverted index (Bᵀ in CSR)."""
    n_features = len(bt_indptr) - 1
    for r in range(count):
        i = rows[start + r]
        out = values[r]
        for j in range(len(out)):
            out[j] = 0.0
        for p in range(x_indptr[i], x_indptr[i + 1]):
            f = x_indices[p]
            if f < n_features:
                value = x_data[p]
                for q in range(bt_indptr[f], bt_indptr[f + 1]):
                    out[bt_indices[q]] += value * bt_data[q]


@njit(cache=True)
def _apply_kernel(kind, values, count, x_sq, rows, start, b_sq, degree, gamma, coef_lin,
                  coef_const, table, flat_values, flat_scale):
    """Inner products -> kernel values in place, for the first ``count`` rows of
    ``values`` (Kernel.from_dots' order of operations). ``flat_values`` is ``values``
    viewed as one dimension, ``flat_scale`` scratch as long. A non-empty ``table`` holds
    the kernel at every integer argument (0/1 features, see RowKernel.table)."""
    width = values.shape[1]
    if table.shape[0] and kind == RBF:
        for r in range(count):
            sq_a = x_sq[rows[start + r]]
            out = values[r]
            for j in range(width):
                out[j] = table[np.int64(sq_a + b_sq[j] - 2.0 * out[j])]
    elif table.shape[0]:
        for q in range(count * width):
            flat_values[q] = table[np.int64(flat_values[q])]
    elif kind == RBF:
        for r in range(count):
            sq_a = x_sq[rows[start + r]]
            out = values[r]
            for j in range(width):
                # Rounding can make |a-b|² slightly negative.
                d = -2.0 * out[j] + sq_a + b_sq[j]
                out[j] = -gamma * (d if d > 0.0 else 0.0)
        _exp_nonpositive(flat_values, flat_scale, count * width)
    elif kind == POLYNOMIAL:
        for q in range(count * width):
            flat_values[q] = (coef_lin * flat_values[q] + coef_const) ** degree
    elif kind == SIGMOID:
        for q in range(count * width):
            flat_values[q] = math.tanh(coef_lin * flat_values[q] + coef_const)


@njit(cache=True)
def _use_values(mode, values, count, start, c, m, block_beta, lanes, out):
    """What _kernel_rows does with the values of rows start..start+count, block c."""
    width = values.shape[1]
    lo = c * width
    if mode == _TIMES:
        # Eight partial sums per row in a fixed pattern: vectorized, thread-independent.
        lane = np.zeros(8)
        for r in range(count):
            row = values[r]
            for t in range(8):
                lane[t] = lanes[r, t]
            for j in range(width):
                lane[j & 7] += block_beta[j] * row[j]
            for t in range(8):
                lanes[r, t] = lane[t]
    else:
        for r in range(count):
            row = values[r]
            a = start + r
            for j in range(min(width, m - lo)):
                out[a, lo + j] = row[j]


@njit(parallel=True, cache=True)
def _kernel_rows(x_indptr, x_indices, x_data, x_sq, rows, m, b_sq, feature_map, dense,
                 bits, bt_indptr, bt_indices, bt_data, kind, degree, gamma, coef_lin,
                 coef_const, table, mode, beta, out):
    """For each row x_a of ``rows`` the kernel values with the m basis examples b_j, then
    mode _TIMES: out[a, 0] = Σ_j beta_j k(x_a, b_j); _MATRIX: out[a, j] = k(x_a, b_j).

    The basis is ``dense`` blocks (blocks × features used × width; ``feature_map`` maps
    a feature to its row), ``bits`` (blocks × words × width, 0/1 features) or, when both
    are empty (shape (1, 0, 0)), the inverted index Bᵀ; ``b_sq`` and ``beta`` are
    (blocks × width), zero-padded. Threads take fixed ranges of rows, formed _BATCH at
    a time; each row's values and sums are computed in the same order whatever the
    threads, so results do not depend on their number.
    """
    width = b_sq.shape[1]
    n_blocks = b_sq.shape[0]
    n_rows = len(rows)
    longest = 0
    for a in range(n_rows):
        longest = max(longest, x_indptr[rows[a] + 1] - x_indptr[rows[a]])
    # At most _ROWS_PER_TASK rows a task, and at least 16 tasks when there are enough rows
    # (a few hundred draws must still keep every thread busy).
    per_task = min(_ROWS_PER_TASK, max(_BATCH, -(-n_rows // (16 * _BATCH)) * _BATCH))
    n_tasks = (n_rows + per_task - 1) // per_task
    b_sq_counts = b_sq.astype(np.int64)   # 0/1 features: squared norms are counts
    for task in prange(n_tasks):
        values = np.empty((_BATCH, width))
        flat_values = values.reshape(_BATCH * width)
        flat_scale = np.empty(_BATCH * width)
        rows_of = np.empty(max(longest, bits.shape[1]), np.int64)
        weights = np.empty(longest)
        counts = np.empty(width, np.int64)
        lanes = np.empty((_BATCH, 8))
        stop = min(n_rows, (task + 1) * per_task)
        for start in range(task * per_task, stop, _BATCH):
            count = min(_BATCH, stop - start)
            lanes[:] = 0.0
            for c in range(n_blocks):
                block_bits = bits[min(c, len(bits) - 1)]
                block_dense = dense[min(c, len(dense) - 1)]
                if block_bits.shape[0] and table.shape[0] and mode == _TIMES:
                    _times_bits(x_indptr, x_indices, rows, start, count, feature_map,
                                block_bits, x_sq, b_sq_counts[c], kind == RBF, table, beta[c],
                                counts, rows_of, lanes)
                    continue
                if block_bits.shape[0]:
                    _dots_bits(x_indptr, x_indices, rows, start, count, feature_map,
                               block_bits, values, rows_of, counts)
                elif block_dense.shape[0]:
                    _dots_dense(x_indptr, x_indices, x_data, rows, start, count,
                                feature_map, block_dense, values, rows_of, weights)
                else:
                    _dots_sparse(x_indptr, x_indices, x_data, rows, start, count, bt_indptr,
                                 bt_indices, bt_data, values)
                _apply_kernel(kind, values, count, x_sq, rows, start, b_sq[c], degree,
                              gamma, coef_lin, coef_const, table, flat_values, flat_scale)
                _use_values(mode, values, count, start, c, m, beta[min(c, len(beta) - 1)],
                            lanes, out)
            if mode == _TIMES:
                for r in range(count):
                    total = 0.0
                    for t in range(8):
                        total += lanes[r, t]
                    out[start + r, 0] = total


def _draw_sorted(rng, population: int, size: int) -> np.ndarray:
    """``size`` distinct positions of ``range(population)``, uniformly, in order."""
    return np.sort(rng.choice(population, size, replace=False))


# -- Algorithm 2: constant time ---------------------------------------------------------

class ConstantTimeOracle:
    """Cuts from r examples drawn uniformly (Yu & Joachims, Algorithm 2).

    A cut is kept as its basis examples F (sorted) and β. Scoring a draw needs
    k(x_drawn, x_u) for u in the union U of the kept cuts' bases (w is an expansion over
    U): r·|U| evaluations, bounded by r²·(working-set size) whatever n is. The Gram row
    of a new cut, g_k·g = Σ_u (β of u in cut k)·(g·φ(x_u)), costs |U|·|F| more, and its
    own |F|² — cheaper than keeping every kept cut's products with the draws (a
    contraction with all the cuts' coefficients per drawn example took two thirds of the
    time on a9a).
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
            coefficients = sp.csr_matrix((betas, (cut_of, position.ravel())),
                                         shape=(len(self.cuts), len(union)))
            self._union = (union, coefficients)
        return self._union

    def separate(self, alpha, threshold=None):
        drawn = self._draw()
        self.oracle_calls += len(drawn)
        scores = np.zeros(len(drawn))
        if self.cuts:
            scores = self.kernel.times(drawn, *self.expansion(alpha))
        flipped = self.y[drawn] * scores < 1.0
        basis_rows = drawn[flipped]
        beta = DELTA_PSI_SCALE * self.y[basis_rows] / len(drawn)
        c = LOSS_SCALE * len(basis_rows) / len(drawn)
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

    def scores(self, alpha):
        return self._A.combine(alpha) if self._A.size else np.zeros(self.n)

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
