"""Kernel rows: every kernel product of the library, in one place.

``RowKernel(X, kernel)`` forms kernel values between rows of one CSR matrix — the rows
asked for against a set of *basis* rows — and either returns them (``matrix``) or sums
them with coefficients (``times``: Σ_j β_j k(x_i, b_j)) while they are still in cache.
:func:`kernel_matrix` and :func:`kernel_times` do the same between two matrices (test
examples and support vectors, examples and a Nyström basis) by stacking them. Users:
the sampled-cut oracles (:mod:`cpsvm.engine.sampled_cuts`),
:class:`cpsvm.engine.oracles.KernelCutOracle`, :class:`cpsvm.approx.NystromMap` and
:meth:`cpsvm.models.KernelModel.decision_function`.

How the inner products are formed depends on the data (see :class:`RowKernel`): BLAS
products of dense blocks for dense data, popcounts of bitsets for 0/1 features, dense
basis blocks or an inverted index in numba otherwise. ``single_precision`` reproduces
SVMlight's arithmetic (feature values stored as 32-bit floats, each product of two
rounded to 32 bits, sums in double), which ``cp_classify`` uses to print svm_classify's
decision values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from .kernels import POLYNOMIAL, RBF, SIGMOID, Kernel
from .sparse_ops import as_csr, first_identical_rows, map_in_threads

_TIMES, _MATRIX = 0, 1  # what _kernel_rows does with each row's values


class RowKernel:
    """Kernel values between rows of one CSR matrix, counted.

    Dense data (at least :attr:`BLAS_MIN_DENSITY` of the used features set in the
    average row, not 0/1) is also held as a dense array, and its inner products are one
    BLAS product X_rows·X_basisᵀ per block of rows; the kernel and the sums with the
    coefficients follow in numba (:func:`_finish_block`, as below). The blocks run on
    ``numba.get_num_threads()`` threads, each BLAS call single-threaded: BLAS threads
    of its own beside them would also be the master QP's, whose small calls they slow.
    Otherwise every kernel value is formed, used and forgotten in one numba pass over a
    batch of rows (:func:`_kernel_rows`, threads take fixed ranges of rows): the inner
    products with the basis, the kernel (RBF from squared norms, its exp vectorized, see
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
    ``benchmarks/bench_sampled.py`` and ``benchmarks/bench_kernels.py``.
    """

    DENSE_BASIS_MAX = 1 << 24  # largest dense features × basis array (128 MB)
    BITSETS = True  # 0/1 features: inner products as popcounts of bitsets
    SCATTER_COST = 4.0  # an inverted-index update costs ~4 dense ones (a9a)
    BASIS_CHUNK = 1024  # basis examples per dense block (8 kB of values per row)
    BLAS = True  # dense data: kernel rows from BLAS products
    BLAS_MIN_DENSITY = 0.25  # share of the used features set in the average row
    BLAS_MAX_ENTRIES = 1 << 25  # largest dense copy of the rows (256 MB)
    BLAS_BLOCK = 1 << 18  # kernel values per block of rows (2 MB, in L2)

    def __init__(self, X, kernel: Kernel, *, single_precision: bool = False):
        X = as_csr(X)
        if single_precision:
            X = X.copy()
            X.data = X.data.astype(np.float32).astype(np.float64)
        self.X = X
        self.n = X.shape[0]
        self.indptr = X.indptr.astype(np.int64)
        self.indices = X.indices.astype(np.int32)
        self.data = np.ascontiguousarray(X.data)
        longest = int(np.max(np.diff(self.indptr), initial=0))  # values in the longest row
        # SVMlight's arithmetic needs its own products unless every product of two
        # values and every sum of them is exact, in float32 and in double alike.
        self.single = single_precision and not _exact_products(self.data, longest)
        self.sq_norms = row_sq_norms(X, single_precision=self.single)
        # All values 1 (one-hot / binary features, as a9a): x·b counts common features.
        self.binary = X.nnz > 0 and bool(np.all(self.data == 1.0))
        self.kernel = kernel
        # How often each feature occurs: predicts the cost of a dense vs sparse basis.
        occurrences = np.bincount(self.indices, minlength=X.shape[1])
        self.feature_frequency = occurrences / max(1, X.shape[0])
        self.dense = None
        used = np.flatnonzero(occurrences)
        if (
            self.BLAS
            and not self.single
            and not self.binary
            and self.n
            and len(used)
            and X.nnz >= self.BLAS_MIN_DENSITY * self.n * len(used)
            and self.n * len(used) <= self.BLAS_MAX_ENTRIES
        ):
            # Only the used features: their order does not change any product.
            self.dense = np.ascontiguousarray(X[:, used].toarray())
        self._prepared = None  # (basis rows, dense basis) of the last BLAS call
        # With 0/1 features a·b and |a-b|² are integers up to twice the longest row: the
        # kernel at each (computed as Kernel.matrix computes it) is looked up instead of
        # evaluated, which saves RBF rows their exp, a large part of their cost.
        self.table = np.zeros(0)
        if self.binary and not kernel.is_linear:
            if kernel.kind == RBF:  # argument |a-b|² = 0 + m - 2·0
                m = np.arange(2 * longest + 1, dtype=np.float64)
                self.table = kernel.from_dots(np.zeros((1, len(m))), np.zeros(1), m)[0]
            else:  # argument a·b
                self.table = kernel.from_dots(
                    np.arange(longest + 1, dtype=np.float64)[None, :], None, None
                )[0]
        self.evaluations = 0
        self.computed = 0
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

    def basis(self, rows) -> _Basis:
        """The examples ``rows`` prepared as the right-hand side of kernel rows."""
        rows = np.asarray(rows, dtype=np.int64)
        count = _feature_counts(self.indptr, self.indices, rows, self.X.shape[1])
        used = np.flatnonzero(count)
        m = len(rows)
        dense_work = m * float(np.sum(self.feature_frequency[used]))
        sparse_work = float(self.feature_frequency @ count)
        words = -(-len(used) // 64)
        bitsets = self.BITSETS and self.binary and m * words <= dense_work
        if bitsets or (
            len(used) * m <= self.DENSE_BASIS_MAX and dense_work <= self.SCATTER_COST * sparse_work
        ):
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
                return _Basis(
                    m,
                    width,
                    sq_norms,
                    feature_map,
                    _NO_BLOCKS,
                    bits,
                    _NO_INDEX,
                    _NO_INDEX,
                    _NO_DATA,
                )
            dense = np.zeros((n_blocks, len(used), width))
            _fill_dense(self.indptr, self.indices, self.data, rows, feature_map, dense)
            return _Basis(
                m, width, sq_norms, feature_map, dense, _NO_BITS, _NO_INDEX, _NO_INDEX, _NO_DATA
            )
        Bt = sp.csr_matrix(self.X[rows].T)
        Bt.sort_indices()
        return _Basis(
            m,
            m,
            self.sq_norms[rows].reshape(1, m),
            _NO_INDEX,
            _NO_BLOCKS,
            _NO_BITS,
            Bt.indptr.astype(np.int64),
            Bt.indices.astype(np.int64),
            np.ascontiguousarray(Bt.data),
        )

    def _run(self, mode, rows, basis_rows, out, beta=None):
        if self.BLAS and self.dense is not None:
            self._run_blas(mode, rows, basis_rows, out, beta)
            return
        basis = self.basis(basis_rows)
        self.computed += len(rows) * basis.size
        if beta is None:
            beta = np.zeros((1, 0))
        else:
            padded = np.zeros(basis.sq_norms.size)
            padded[: basis.size] = beta
            beta = padded.reshape(basis.sq_norms.shape)
        k = self.kernel
        _kernel_rows(
            self.indptr,
            self.indices,
            self.data,
            self.sq_norms,
            np.ascontiguousarray(rows, dtype=np.int64),
            basis.size,
            basis.sq_norms,
            basis.feature_map,
            basis.dense,
            basis.bits,
            basis.bt_indptr,
            basis.bt_indices,
            basis.bt_data,
            k.kind,
            k.degree,
            float(k.gamma),
            float(k.coef_lin),
            float(k.coef_const),
            self.table,
            mode,
            beta,
            self.single,
            out,
        )

    def _run_blas(self, mode, rows, basis_rows, out, beta):
        """Dense rows: per block of rows one BLAS product with the basis, then the kernel
        and β's sums (_TIMES) or a copy (_MATRIX) in numba, blocks on threads."""
        self.computed += len(rows) * len(basis_rows)
        rows = np.ascontiguousarray(rows, dtype=np.int64)  # one numba signature
        prepared = self._prepared
        if prepared is None or not np.array_equal(prepared[0], basis_rows):
            prepared = (basis_rows.copy(), np.ascontiguousarray(self.dense[basis_rows].T))
            self._prepared = prepared
        basis_t = prepared[1]
        sq_b = self.sq_norms[basis_rows]
        per_block = max(8, self.BLAS_BLOCK // max(1, len(basis_rows)))
        contiguous = (
            len(rows) and rows[-1] - rows[0] == len(rows) - 1 and np.all(np.diff(rows) == 1)
        )

        k = self.kernel
        beta = np.zeros(0) if beta is None else np.ascontiguousarray(beta, np.float64)

        def block(lo):
            hi = min(lo + per_block, len(rows))
            if contiguous:
                x = self.dense[rows[0] + lo : rows[0] + hi]
            else:
                x = self.dense[rows[lo:hi]]
            _finish_block(
                k.kind,
                x @ basis_t,
                self.sq_norms,
                rows,
                lo,
                sq_b,
                k.degree,
                float(k.gamma),
                float(k.coef_lin),
                float(k.coef_const),
                mode,
                beta,
                out,
            )

        map_in_threads(block, range(0, len(rows), per_block))


def stacked(kernel: Kernel, A, B, *, single_precision: bool = False):
    """A :class:`RowKernel` over the rows of A then those of B (B's columns made A's:
    features beyond A's are ignored), with the positions of A's rows and B's in it."""
    A, B = as_csr(A), as_csr(B)
    if B.shape[1] != A.shape[1]:
        B = (
            B[:, : A.shape[1]]
            if B.shape[1] > A.shape[1]
            else sp.csr_matrix((B.data, B.indices, B.indptr), shape=(B.shape[0], A.shape[1]))
        )
    rk = RowKernel(sp.vstack([A, B], format="csr"), kernel, single_precision=single_precision)
    return rk, np.arange(A.shape[0]), A.shape[0] + np.arange(B.shape[0])


def kernel_matrix(kernel: Kernel, A, B, *, single_precision: bool = False) -> np.ndarray:
    """K[i, j] = k(A_i, B_j) for CSR matrices A and B."""
    rk, rows, basis = stacked(kernel, A, B, single_precision=single_precision)
    return rk.matrix(rows, basis)


def kernel_times(
    kernel: Kernel,
    A,
    B,
    coef,
    *,
    single_precision: bool = False,
    block_rows: int = 4096,
    progress=None,
) -> np.ndarray:
    """Σ_j coef_j k(A_i, B_j) for every row of A, in blocks of ``block_rows`` rows
    (``progress(rows done)`` after each)."""
    rk, rows, basis = stacked(kernel, A, B, single_precision=single_precision)
    out = np.empty(len(rows))
    for lo in range(0, len(rows), block_rows):
        hi = min(lo + block_rows, len(rows))
        out[lo:hi] = rk.times(rows[lo:hi], basis, coef)
        if progress is not None:
            progress(hi - lo)
    return out


def _exact_products(data, longest) -> bool:
    """Whether every product of two of these (float32-representable) values is exact in
    float32 and every sum of ``longest`` of them exact in double, so that any order of
    double arithmetic gives SVMlight's float32-product sums: values with few significant
    bits in a narrow range of exponents, such as 0/1 or small integers."""
    values = np.abs(data[data != 0])
    if values.size == 0:
        return True
    mantissa, exponent = np.frexp(values)  # value = mantissa · 2^exponent
    # The lowest set bit of each value: its mantissa times 2^24 is an integer.
    scaled = (mantissa * 2.0**24).astype(np.int64)
    trailing = np.zeros(len(scaled), np.int64)
    for shift in (16, 8, 4, 2, 1):
        odd_free = (scaled & ((1 << shift) - 1)) == 0
        scaled = np.where(odd_free, scaled >> shift, scaled)
        trailing += np.where(odd_free, shift, 0)
    low = int(np.min(exponent - 24 + trailing))  # every value is a multiple of 2^low
    high = int(np.max(exponent))  # every value is below 2^high
    span = high - low  # bits a value can need
    return 2 * span <= 24 and 2 * span + math.ceil(math.log2(max(longest, 1))) + 1 <= 53


def row_sq_norms(X, *, single_precision: bool = False) -> np.ndarray:
    """Squared Euclidean norm of every row of a CSR matrix, summed in double in index
    order; ``single_precision``: each square rounded to float32 first (SVMlight)."""
    X = as_csr(X)
    return _row_sq_norms(X.indptr, X.data, single_precision)


@njit(cache=True)
def _row_sq_norms(indptr, data, single):
    out = np.zeros(len(indptr) - 1)
    for i in range(len(indptr) - 1):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            square = data[k] * data[k]
            acc += np.float64(np.float32(square)) if single else square
        out[i] = acc
    return out


_NO_INDEX = np.zeros(0, np.int64)
_NO_DATA = np.zeros(0)
_NO_BLOCKS = np.zeros((1, 0, 0))  # one empty block: [0] is a valid (0, 0) view
_NO_BITS = np.zeros((1, 0, 0), np.uint64)


@dataclass
class _Basis:
    size: int  # basis examples
    width: int  # values formed per block
    sq_norms: np.ndarray  # (blocks, width), zero-padded
    feature_map: np.ndarray  # dense: feature -> row of a block (-1: absent)
    dense: np.ndarray  # dense: (blocks, features used, width)
    bits: np.ndarray  # bitsets: (blocks, words, width) uint64
    bt_indptr: np.ndarray  # sparse: Bᵀ in CSR (one block)
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
_LN2_HI = 6.93147180369123816490e-01  # ln 2 split so that k·_LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_ROUND = 6755399441055744.0  # 1.5·2^52: x + _ROUND - _ROUND rounds x to an integer
_ROUND_BITS = int(np.float64(_ROUND).view(np.int64))
_EXP_MIN = -708.0  # exp below this is under 3.3e-308: clamped there


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
        values[j] = 1.0 + r * (
            1.0
            + r
            * (
                0.5
                + r
                * (
                    1.0 / 6
                    + r
                    * (
                        1.0 / 24
                        + r
                        * (
                            1.0 / 120
                            + r
                            * (
                                1.0 / 720
                                + r
                                * (
                                    1.0 / 5040
                                    + r
                                    * (
                                        1.0 / 40320
                                        + r
                                        * (
                                            1.0 / 362880
                                            + r
                                            * (
                                                1.0 / 3628800
                                                + r
                                                * (
                                                    1.0 / 39916800
                                                    + r * (1.0 / 479001600 + r * (1.0 / 6227020800))
                                                )
                                            )
                                        )
                                    )
                                )
                            )
                        )
                    )
                )
            )
        )
        scale[j] = t
    bits = scale.view(np.int64)
    for j in range(size):
        # t's low mantissa bits hold k: 2^k has the exponent field k + 1023.
        bits[j] = (bits[j] - _ROUND_BITS + 1023) << 52
    for j in range(size):
        values[j] *= scale[j]


# A batch of rows is processed together, one helper call per step for all of them: the
# fixed cost of a row (calls, loop set-up) is that of many kernel values.
_BATCH = 8
_ROWS_PER_TASK = 256


@njit(cache=True, fastmath={"contract"})
def _dots_dense(
    x_indptr, x_indices, x_data, rows, start, count, feature_map, block, values, rows_of, weights
):
    """values[r, j] = x_rows[start + r] · b_j for the examples of one dense basis block.

    The block's rows for x's features are added eight (then four, two, one) at a time:
    one pass over the values per eight features instead of one per feature.
    ``rows_of`` and ``weights`` are scratch as long as the longest row."""
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
            c0, c1, c2, c3 = (
                block[rows_of[s]],
                block[rows_of[s + 1]],
                block[rows_of[s + 2]],
                block[rows_of[s + 3]],
            )
            c4, c5, c6, c7 = (
                block[rows_of[s + 4]],
                block[rows_of[s + 5]],
                block[rows_of[s + 6]],
                block[rows_of[s + 7]],
            )
            v0, v1, v2, v3 = weights[s], weights[s + 1], weights[s + 2], weights[s + 3]
            v4, v5, v6, v7 = weights[s + 4], weights[s + 5], weights[s + 6], weights[s + 7]
            for j in range(width):
                out[j] = (
                    out[j]
                    + v0 * c0[j]
                    + v1 * c1[j]
                    + v2 * c2[j]
                    + v3 * c3[j]
                    + v4 * c4[j]
                    + v5 * c5[j]
                    + v6 * c6[j]
                    + v7 * c7[j]
                )
            s += 8
        if s + 4 <= used:
            c0, c1, c2, c3 = (
                block[rows_of[s]],
                block[rows_of[s + 1]],
                block[rows_of[s + 2]],
                block[rows_of[s + 3]],
            )
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
def _dots_bits(x_indptr, x_indices, rows, start, count, feature_map, block, values, x_bits, counts):
    """values[r, j] = x · b_j for 0/1 features (:func:`_shared_counts`)."""
    for r in range(count):
        _shared_counts(x_indptr, x_indices, rows[start + r], feature_map, block, x_bits, counts)
        out = values[r]
        for j in range(block.shape[1]):
            out[j] = counts[j]


@njit(cache=True)
def _times_bits(
    x_indptr,
    x_indices,
    rows,
    start,
    count,
    feature_map,
    block,
    x_sq,
    b_sq,
    rbf,
    table,
    block_beta,
    counts,
    x_bits,
    lanes,
):
    """:func:`_dots_bits`, the kernel looked up in ``table`` and the sum with β (mode
    _TIMES) in one pass per row, the shared-feature counts kept as integers (``b_sq``
    too): the same values and sums as the three steps, no values stored in between."""
    width = block.shape[1]
    lane = np.zeros(8)
    for r in range(count):
        i = rows[start + r]
        _shared_counts(x_indptr, x_indices, i, feature_map, block, x_bits, counts)
        for t in range(8):
            lane[t] = lanes[r, t]
        if rbf:  # |a-b|² = |a|² + |b|² - 2·shared
            sq_a = np.int64(x_sq[i])
            for j in range(width):
                lane[j & 7] += block_beta[j] * table[sq_a + b_sq[j] - 2 * counts[j]]
        else:  # a·b = shared
            for j in range(width):
                lane[j & 7] += block_beta[j] * table[counts[j]]
        for t in range(8):
            lanes[r, t] = lane[t]


@njit(cache=True)
def _dots_dense_single(x_indptr, x_indices, x_data, rows, start, count, feature_map, block, values):
    """:func:`_dots_dense` in SVMlight's arithmetic: each product rounded to float32,
    the sum in double in feature order (a basis example's absent features add +0)."""
    width = block.shape[1]
    n_features = len(feature_map)
    for r in range(count):
        i = rows[start + r]
        out = values[r]
        for j in range(width):
            out[j] = 0.0
        for p in range(x_indptr[i], x_indptr[i + 1]):
            f = x_indices[p]
            if f < n_features and feature_map[f] >= 0:
                column = block[feature_map[f]]
                value = x_data[p]
                for j in range(width):
                    out[j] += np.float64(np.float32(value * column[j]))


@njit(cache=True, fastmath={"contract"})
def _dots_sparse(
    x_indptr, x_indices, x_data, rows, start, count, bt_indptr, bt_indices, bt_data, single, values
):
    """values[r, j] = x · b_j, the basis as an inverted index (Bᵀ in CSR); ``single``:
    each product rounded to float32 (added in feature order either way)."""
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
                if single:
                    for q in range(bt_indptr[f], bt_indptr[f + 1]):
                        out[bt_indices[q]] += np.float64(np.float32(value * bt_data[q]))
                else:
                    for q in range(bt_indptr[f], bt_indptr[f + 1]):
                        out[bt_indices[q]] += value * bt_data[q]


@njit(cache=True)
def _apply_kernel(
    kind,
    values,
    count,
    x_sq,
    rows,
    start,
    b_sq,
    degree,
    gamma,
    coef_lin,
    coef_const,
    table,
    flat_values,
    flat_scale,
):
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
            # libm's pow, as numpy's power and SVMlight call it (** would multiply).
            flat_values[q] = math.pow(coef_lin * flat_values[q] + coef_const, degree)
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
def _kernel_rows(
    x_indptr,
    x_indices,
    x_data,
    x_sq,
    rows,
    m,
    b_sq,
    feature_map,
    dense,
    bits,
    bt_indptr,
    bt_indices,
    bt_data,
    kind,
    degree,
    gamma,
    coef_lin,
    coef_const,
    table,
    mode,
    beta,
    single,
    out,
):
    """For each row x_a of ``rows`` the kernel values with the m basis examples b_j, then
    mode _TIMES: out[a, 0] = Σ_j beta_j k(x_a, b_j); _MATRIX: out[a, j] = k(x_a, b_j).

    The basis is ``dense`` blocks (blocks × features used × width; ``feature_map`` maps
    a feature to its row), ``bits`` (blocks × words × width, 0/1 features) or, when both
    are empty (shape (1, 0, 0)), the inverted index Bᵀ; ``b_sq`` and ``beta`` are
    (blocks × width), zero-padded. ``single``: products rounded to float32 (SVMlight's
    arithmetic; not with bitsets, whose products are exact). Threads take fixed ranges
    of rows, formed _BATCH at a time; each row's values and sums are computed in the
    same order whatever the threads, so results do not depend on their number.
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
    b_sq_counts = b_sq.astype(np.int64)  # 0/1 features: squared norms are counts
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
                    _times_bits(
                        x_indptr,
                        x_indices,
                        rows,
                        start,
                        count,
                        feature_map,
                        block_bits,
                        x_sq,
                        b_sq_counts[c],
                        kind == RBF,
                        table,
                        beta[c],
                        counts,
                        rows_of,
                        lanes,
                    )
                    continue
                if block_bits.shape[0]:
                    _dots_bits(
                        x_indptr,
                        x_indices,
                        rows,
                        start,
                        count,
                        feature_map,
                        block_bits,
                        values,
                        rows_of,
                        counts,
                    )
                elif block_dense.shape[0] and single:
                    _dots_dense_single(
                        x_indptr,
                        x_indices,
                        x_data,
                        rows,
                        start,
                        count,
                        feature_map,
                        block_dense,
                        values,
                    )
                elif block_dense.shape[0]:
                    _dots_dense(
                        x_indptr,
                        x_indices,
                        x_data,
                        rows,
                        start,
                        count,
                        feature_map,
                        block_dense,
                        values,
                        rows_of,
                        weights,
                    )
                else:
                    _dots_sparse(
                        x_indptr,
                        x_indices,
                        x_data,
                        rows,
                        start,
                        count,
                        bt_indptr,
                        bt_indices,
                        bt_data,
                        single,
                        values,
                    )
                _apply_kernel(
                    kind,
                    values,
                    count,
                    x_sq,
                    rows,
                    start,
                    b_sq[c],
                    degree,
                    gamma,
                    coef_lin,
                    coef_const,
                    table,
                    flat_values,
                    flat_scale,
                )
                _use_values(
                    mode, values, count, start, c, m, beta[min(c, len(beta) - 1)], lanes, out
                )
            if mode == _TIMES:
                _sum_lanes(lanes, count, start, out)


@njit(nogil=True, cache=True)
def _finish_block(
    kind, values, x_sq, rows, start, b_sq, degree, gamma, coef_lin, coef_const, mode, beta, out
):
    """The BLAS path's rows start..start+len(values): inner products ``values`` (rows ×
    basis) -> kernel values in place (:func:`_apply_kernel`), then their sums with β
    (_TIMES) or a copy into ``out`` (_MATRIX), as :func:`_kernel_rows` does."""
    count, m = values.shape
    flat = values.reshape(count * m)
    _apply_kernel(
        kind,
        values,
        count,
        x_sq,
        rows,
        start,
        b_sq,
        degree,
        gamma,
        coef_lin,
        coef_const,
        np.zeros(0),
        flat,
        np.empty(count * m),
    )
    lanes = np.zeros((count, 8))
    _use_values(mode, values, count, start, 0, m, beta, lanes, out)
    if mode == _TIMES:
        _sum_lanes(lanes, count, start, out)


@njit(cache=True, inline="always")
def _sum_lanes(lanes, count, start, out):
    """out[start + r, 0] = the eight partial sums of row r, added in a fixed order."""
    for r in range(count):
        total = 0.0
        for t in range(8):
            total += lanes[r, t]
        out[start + r, 0] = total
