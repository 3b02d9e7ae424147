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
basis blocks or an inverted index in numba otherwise (the compiled loops:
:mod:`cpsvm.kernel_row_loops`). ``single_precision`` reproduces SVMlight's arithmetic
(feature values stored as 32-bit floats, each product of two rounded to 32 bits, sums in
double), which ``cp_classify`` uses to print svm_classify's decision values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .kernel_row_loops import (
    MATRIX,
    TIMES,
    csr_row_sq_norms,
    feature_counts,
    fill_bits,
    fill_dense,
    finish_blas_block,
    form_kernel_rows,
)
from .kernels import RBF, Kernel
from .sparse_ops import as_csr, first_identical_rows
from .threads import map_in_threads


class RowKernel:
    """Kernel values between rows of one CSR matrix, counted.

    Dense data (at least :attr:`BLAS_MIN_DENSITY` of the used features set in the
    average row, not 0/1) is also held as a dense array, and its inner products are one
    BLAS product X_rows·X_basisᵀ per block of rows; the kernel and the sums with the
    coefficients follow in numba (``finish_blas_block``, as below). The blocks run on
    :func:`cpsvm.threads.get_num_threads` threads, each BLAS call single-threaded: BLAS threads
    of its own beside them would also be the master QP's, whose small calls they slow.
    Otherwise every kernel value is formed, used and forgotten in one numba pass over a
    batch of rows (``form_kernel_rows``, threads take fixed ranges of rows): the inner
    products with the basis, the kernel (RBF from squared norms, its exp vectorized, see
    ``exp_nonpositive``; looked up in :attr:`table` for 0/1 features) and the sum
    with the coefficients, while the values are still in the L1 cache; no n×r matrix is
    ever stored (those loops are :mod:`cpsvm.kernel_row_loops`). The basis is held

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
            self._run(TIMES, rows, basis_rows, out, beta=beta)
        out = out[:, 0]
        return out if spread is None else out[spread]

    def matrix(self, rows, basis_rows) -> np.ndarray:
        """The kernel matrix block K[rows, basis_rows]."""
        self._count(rows, basis_rows)
        rows, spread = self._distinct_rows(rows)
        basis_rows = np.asarray(basis_rows, dtype=np.int64)
        out = np.zeros((len(rows), len(basis_rows)))
        if len(basis_rows):
            self._run(MATRIX, rows, basis_rows, out)
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
        count = feature_counts(self.indptr, self.indices, rows, self.X.shape[1])
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
                fill_bits(self.indptr, self.indices, rows, feature_map, bits)
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
            fill_dense(self.indptr, self.indices, self.data, rows, feature_map, dense)
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
        form_kernel_rows(
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
        and β's sums (TIMES) or a copy (MATRIX) in numba, blocks on threads."""
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
            finish_blas_block(
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
    return csr_row_sq_norms(X.indptr, X.data, single_precision)


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
