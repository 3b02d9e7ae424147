"""Products of a CSR matrix with dense vectors over all of its rows, threaded
(:class:`RowBlocks`), and the row primitives the engine's kernels are written with.

The rows are cut into fixed blocks (their number depends on the matrix only) and the
blocks run on a thread pool of :func:`cpsvm.threads.get_num_threads` workers, read at each
call (a solver's ``n_threads``, :func:`cpsvm.threads.thread_count`);
partial sums are added in block order, so results do not depend on the thread count.
A block's X @ w is scipy's (its sparsetools release the GIL, and their loop was 1.5-2×
faster than the same loop in numba here); sums of a few selected rows are a numba
kernel (nogil) that visits only the rows with a coefficient. A nearly dense matrix is held
as a dense array instead, with numba row kernels (see DENSE_MIN_DENSITY).

Products with a matrix of k columns (Crammer-Singer's scores X·W and weights Xᵀ·B) take
it with the k values of a row contiguous, (d, k) or (n, k): a non-zero x_ij then reads
or adds one contiguous row of k values, where a class-major (k, d) matrix costs k cache
lines per non-zero (benchmarks/bench_many_classes.py). Xᵀ·B runs over a column copy of
X, made at its first use, so that its threads write disjoint rows.

The row primitives (numba, one set for every module): :func:`row_dot` and :func:`add_row`
(x_r·w and out += c·x_r, CSR or dense rows, inlined), :func:`add_rows` (Σ c_i·x_i over
listed rows), :func:`row_dot_column` (x_r·G[:, c]), :func:`zero_rows_by_class`,
:func:`gather_row_indices`, and :func:`packed_rows_dot` / :func:`add_packed_rows` for
sparse vectors packed one after another (the cut vectors).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .compiled import njit
from .threads import get_num_threads, map_in_threads

# A matrix with fewer non-zeros is one block: handing work to threads costs ~0.1 ms.
PARALLEL_MIN_NNZ = 1 << 20
N_BLOCKS = 8
# Past this share of rows, scipy's Xᵀ·coef over every row beat the numba loop over the
# selected rows (a9a: at about 0.8; 50k x 5k random at 1%: about 0.45).
SPARSE_COEF_SHARE = 0.5
# From this size of W on (bytes), X·W runs over X's columns (RowBlocks.times): W is then
# read once per thread, in order, instead of a row of W per non-zero of X.
STREAM_MIN_BYTES = 1 << 22
# From this share of non-zeros on, the rows are also kept as a dense array: it takes no
# more memory than the CSR arrays (8 bytes an entry against 12 a non-zero), and X @ w over
# it (_dense_dot, as fast as BLAS's gemv) ran 2.5x faster than scipy's CSR product
# (artificial 150k x 500, two threads: 30 against 76 ms). numba rather than BLAS: its
# threads are ours (--threads), and OpenBLAS's own, spinning beside them, made two
# threads slower than one.
DENSE_MIN_DENSITY = 2.0 / 3.0


def as_csr(X):
    """X as a float64 CSR matrix: X itself when it is one already. (A new wrapper of the
    same arrays forgets scipy's cached index-order flags, and checking them again is a
    pass over the indices: 0.1 s each on 150k x 500.)"""
    if sp.isspmatrix_csr(X) and X.dtype == np.float64:
        return X
    return sp.csr_matrix(X, dtype=np.float64)


@njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})
def _dense_dot(dense, W, out):
    """out[i, c] = dense[i]·W[c], four rows at a time: each W[c][j] loaded once for four
    rows, which made this as fast as BLAS's gemv (a row at a time was 25% slower); the
    four rows stay in cache for every class."""
    n, d = dense.shape
    i = 0
    while i + 4 <= n:
        r0, r1, r2, r3 = dense[i], dense[i + 1], dense[i + 2], dense[i + 3]
        for c in range(W.shape[0]):
            w = W[c]
            s0 = s1 = s2 = s3 = 0.0
            for j in range(d):
                s0 += r0[j] * w[j]
                s1 += r1[j] * w[j]
                s2 += r2[j] * w[j]
                s3 += r3[j] * w[j]
            out[i, c], out[i + 1, c], out[i + 2, c], out[i + 3, c] = s0, s1, s2, s3
        i += 4
    for r in range(i, n):
        for c in range(W.shape[0]):
            total = 0.0
            for j in range(d):
                total += dense[r, j] * W[c, j]
            out[r, c] = total


@njit(nogil=True, cache=True, fastmath={"contract"})
def _add_dense_rows(dense, rows, coef, width, out):
    """:func:`add_rows` for rows held densely."""
    for i in rows:
        c = coef[i]
        row = dense[i]
        for j in range(width):
            out[j] += c * row[j]


# -- row primitives ------------------------------------------------------------------------
# The row kernels the engine's modules share (numba). Rows come as CSR arrays (indptr,
# indices, data; an empty ``data`` means every stored value is 1, :attr:`RowBlocks.ones`)
# or, where a kernel takes ``dense``, as the rows of a dense array V (:attr:`RowBlocks.dense`;
# the CSR arrays are then placeholders, and the other way round). Like the kernels below,
# they index with unsigned integers (see there). :func:`row_dot` and :func:`add_row` are
# inlined into their callers, whose numba flags (fastmath) then apply to them. numba's
# on-disk cache keys a kernel on its own file only: after editing a primitive here, delete
# the cached kernels of the modules that call it (``cpsvm/**/__pycache__/*.nbi``, ``*.nbc``).


@njit(cache=True, fastmath={"reassoc", "contract"})
def _dense_row_dot(V, r, w):
    """V_r·w summed in vector lanes: reassociating the sum lets it vectorise, where the
    plain loop waits on each addition. Not inlined: the caller's flags would replace
    fastmath, and a dense row is long enough to pay for the call."""
    total = 0.0
    for c in range(w.shape[0]):
        total += V[r, c] * w[c]
    return total


@njit(cache=True, inline="always")
def row_dot(dense, V, indptr, indices, data, r, w):
    """x_r·w: row r of the dense V (``dense``) or CSR row r. Inlined: a call passes its
    arrays with reference counting, which made a loop of short rows 10x slower."""
    total = 0.0
    if dense:
        total = _dense_row_dot(V, r, w)
    elif len(data) == 0:
        for p in range(np.uint64(indptr[r]), np.uint64(indptr[r + 1])):
            total += w[np.uint64(indices[p])]
    else:
        for p in range(np.uint64(indptr[r]), np.uint64(indptr[r + 1])):
            total += data[p] * w[np.uint64(indices[p])]
    return total


@njit(cache=True, inline="always")
def add_row(dense, V, indptr, indices, data, r, coef, out):
    """out += coef·x_r: row r of the dense V (``dense``) or CSR row r (inlined, as
    :func:`row_dot`)."""
    if dense:
        for c in range(out.shape[0]):
            out[c] += coef * V[r, c]
    elif len(data) == 0:
        for p in range(np.uint64(indptr[r]), np.uint64(indptr[r + 1])):
            out[np.uint64(indices[p])] += coef
    else:
        for p in range(np.uint64(indptr[r]), np.uint64(indptr[r + 1])):
            out[np.uint64(indices[p])] += coef * data[p]


@njit(nogil=True, cache=True)
def add_rows(indptr, indices, data, rows, coef, out):
    """out += Σ_{i in rows} coef_i·x_i, in the order of ``rows`` (``coef`` indexed by the
    row of X, not by position in ``rows``)."""
    ones = len(data) == 0
    for i in rows:
        c = coef[i]
        for k in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
            out[np.uint64(indices[k])] += c if ones else c * data[k]


@njit(cache=True)
def row_dot_column(indptr, indices, data, r, G, c):
    """x_r·G[:, c] for a (d, k) matrix G, summed in the row's order as :func:`rows_times`
    (:meth:`RowBlocks.times`) sums it: the same bits as its column c of row r."""
    ones = len(data) == 0
    total = 0.0
    for p in range(np.uint64(indptr[r]), np.uint64(indptr[r + 1])):
        g = G[np.uint64(indices[p]), c]
        total += g if ones else data[p] * g
    return total


@njit(cache=True)
def zero_rows_by_class(indptr, indices, rows, row_class, classes, G):
    """G[j, row_class[r]] = G[j, classes[t]] = 0 for every stored x_rj of each r = rows[t]:
    undoes :meth:`RowBlocks.add_by_class` on a (d, k) matrix that held nothing else."""
    for t in range(len(rows)):
        r = rows[t]
        for p in range(np.uint64(indptr[r]), np.uint64(indptr[r + 1])):
            j = np.uint64(indices[p])
            G[j, row_class[r]] = 0.0
            G[j, classes[t]] = 0.0


@njit(cache=True)
def gather_row_indices(indptr, indices, order, out_indptr, out_indices):
    """The column indices of the CSR rows ``order``, one row after the other, into
    out_indptr/out_indices (sized by the caller). (For rows with values, scipy's row
    indexing copied faster than this loop: 4 against 31 ms on the text-like set's 2M
    non-zeros.)"""
    k = 0
    out_indptr[0] = 0
    for j in range(len(order)):
        i = order[j]
        for q in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
            out_indices[k] = indices[q]
            k += 1
        out_indptr[j + 1] = k


# Packed rows: sparse vectors kept one after another in two buffers (``indices``,
# ``values``), vector k at positions lo[k]..hi[k] − 1 (gaps allowed, so that dropping a
# vector moves nothing): the sparse cut vectors of cpsvm.engine.cuts.CutVectors.


@njit(cache=True)
def packed_rows_dot(lo, hi, indices, values, vector):
    """v_k·vector for every packed vector k."""
    out = np.empty(len(lo))
    for k in range(len(lo)):
        total = 0.0
        for j in range(lo[k], hi[k]):
            total += values[j] * vector[indices[j]]
        out[k] = total
    return out


@njit(cache=True)
def add_packed_rows(lo, hi, indices, values, coef, out):
    """out += Σ_k coef_k·v_k over the packed vectors k with coef_k ≠ 0, in order."""
    for k in range(len(lo)):
        a = coef[k]
        if a != 0.0:
            for j in range(lo[k], hi[k]):
                out[indices[j]] += a * values[j]


# The row kernels below index with unsigned integers: numba checks a signed index read
# from memory for wrap-around on every access, which made them 2x slower (a9a: a cut's
# sum over 2000 rows 56 against 31 us; X @ w 420 against 186 us, scipy's 193 us).


@njit(nogil=True, cache=True)
def _ones_dot(indptr, indices, lo, hi, W, out):
    """out[i, c] = Σ_{j in row i} W[c, j] for rows lo..hi: X @ Wᵀ when every stored value
    of X is 1, without reading the values (a9a: 152 against scipy's 193 us)."""
    for i in range(lo, hi):
        for c in range(W.shape[0]):
            w = W[c]
            total = 0.0
            for k in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
                total += w[np.uint64(indices[k])]
            out[i, c] = total


@njit(nogil=True, cache=True)
def rows_times(indptr, indices, data, lo, hi, W, out):
    """out[i] = Σ_p data[p]·W[indices[p]] (a row of k values) for rows lo..hi, summed in
    each row's order (so any block split gives the same bits); empty ``data``: every
    value is 1. Also Xᵀ·B, given X's columns as rows."""
    ones = len(data) == 0
    k = W.shape[1]
    if k <= 8:
        # Few columns: one sum at a time in a register (the loop over k columns per
        # non-zero was 2-5x slower for dna's 3 and satimage's 6). The same sums.
        for i in range(lo, hi):
            for c in range(k):
                total = 0.0
                for p in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
                    w = W[np.uint64(indices[p]), c]
                    total += w if ones else data[p] * w
                out[i, c] = total
        return
    for i in range(lo, hi):
        row = out[i]
        for c in range(k):
            row[c] = 0.0
        for p in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
            w = W[np.uint64(indices[p])]
            if ones:
                for c in range(k):
                    row[c] += w[c]
            else:
                v = data[p]
                for c in range(k):
                    row[c] += v * w[c]


@njit(nogil=True, cache=True)
def _add_rows_by_class(indptr, indices, data, rows, coef, to_class, from_class, out):
    """out[j, to_class[t]] += coef[t]·x_rj and out[j, from_class[t]] −= coef[t]·x_rj for
    each r = rows[t]: Σ coef_r·δΨ_r in the (d, k) layout (empty ``data``: every value 1)."""
    ones = len(data) == 0
    for t in range(len(rows)):
        r = rows[t]
        c = coef[t]
        plus, minus = to_class[t], from_class[t]
        for p in range(np.uint64(indptr[r]), np.uint64(indptr[r + 1])):
            value = c if ones else c * data[p]
            j = np.uint64(indices[p])
            out[j, plus] += value
            out[j, minus] -= value


_NO_VALUES = np.zeros(0)  # for the row kernels: every value is 1


class RowBlocks:
    """A CSR matrix X split into row blocks (views, no copy of the data); a nearly dense X
    is held as a dense array instead, its blocks views of it (``dense``). ``ones``: every
    stored value is 1 (one-hot and other 0/1 features, as in a9a or dna): the products
    read no values, and column indices of one or two bytes when the columns allow
    (a9a's X @ w 20% faster than with X's int32 ones)."""

    def __init__(self, X):
        X = as_csr(X)
        self.X = X
        n, d = X.shape
        self.bounds = self.block_bounds(X)
        self.dense = None
        self.ones = False
        self.kernel_indices, self.kernel_values = X.indices, X.data
        self._columns = None  # X's columns as CSR rows (_column_copy)
        self._column_blocks = {}  # threads -> their row blocks and where they start
        if n * d and X.nnz >= DENSE_MIN_DENSITY * n * d:
            # Rows holding every feature in order are their own dense array (a view):
            # writing 600 MB of a fresh array took 1.6 s here, in page faults.
            full = X.has_canonical_format and np.all(np.diff(X.indptr) == d)
            self.dense = X.data.reshape(n, d) if full else X.toarray()
            self.blocks = [self.dense[lo:hi] for lo, hi in self.bounds]
            return
        # What the numba row kernels read: no values when all are 1, and then indices
        # of one or two bytes if the columns allow.
        self.ones = bool(np.all(X.data == 1.0))
        if self.ones:
            narrow = np.uint8 if d <= 1 << 8 else np.uint16 if d <= 1 << 16 else None
            self.kernel_indices = X.indices.astype(narrow) if narrow else X.indices
            self.kernel_values = _NO_VALUES
        self.blocks = [X if len(self.bounds) == 1 else self._view(lo, hi) for lo, hi in self.bounds]
        self.transposed = [
            _share(sp.csc_matrix((X.shape[1], hi - lo), dtype=X.dtype), block)
            for (lo, hi), block in zip(self.bounds, self.blocks)
        ]

    @staticmethod
    def block_bounds(X):
        """(lo, hi) of each block of rows: N_BLOCKS from PARALLEL_MIN_NNZ non-zeros on."""
        n = X.shape[0]
        n_blocks = N_BLOCKS if X.nnz >= PARALLEL_MIN_NNZ and n >= N_BLOCKS else 1
        bounds = [b * n // n_blocks for b in range(n_blocks + 1)]
        return list(zip(bounds[:-1], bounds[1:]))

    def _view(self, lo, hi):
        """Rows lo..hi as a CSR matrix sharing X's data and indices."""
        X = self.X
        start, end = X.indptr[lo], X.indptr[hi]
        block = sp.csr_matrix((hi - lo, X.shape[1]), dtype=X.dtype)
        block.data, block.indices = X.data[start:end], X.indices[start:end]
        block.indptr = (X.indptr[lo : hi + 1] - start).astype(X.indices.dtype)
        return block

    def dot(self, w):
        """X @ w for a dense vector w (d,): (n,)."""
        w = np.asarray(w, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"expected a vector, got shape {w.shape} (a matrix: times)")
        if self.dense is not None or self.ones:
            X = self.X
            W = w.reshape(1, X.shape[1])
            out = np.empty((X.shape[0], 1))

            def run(b):
                lo, hi = self.bounds[b]
                if self.ones:
                    _ones_dot(X.indptr, self.kernel_indices, lo, hi, W, out)
                else:
                    _dense_dot(self.blocks[b], W, out[lo:hi])

            map_in_threads(run, range(len(self.blocks)))
            return out[:, 0]
        if len(self.blocks) == 1:
            return np.asarray(self.blocks[0] @ w)
        out = np.empty(self.X.shape[0])

        def run(b):
            lo, hi = self.bounds[b]
            out[lo:hi] = self.blocks[b] @ w

        map_in_threads(run, range(len(self.blocks)))
        return out

    def times(self, W, out=None):
        """X @ W for W of shape (d, k): (n, k), into ``out`` if given. Each row is summed
        on its own, so the result does not depend on the threads."""
        W = np.ascontiguousarray(W, dtype=np.float64)
        n, d = self.X.shape
        if W.ndim != 2 or W.shape[0] != d:
            raise ValueError(f"expected a ({d}, k) matrix, got shape {W.shape}")
        out = np.empty((n, W.shape[1])) if out is None else out
        if self.dense is not None:
            # Dense rows: their kernel, on the classes' rows (a small copy, as d is).
            by_class = np.ascontiguousarray(W.T)

            def run(b):
                lo, hi = self.bounds[b]
                _dense_dot(self.blocks[b], by_class, out[lo:hi])

            map_in_threads(run, range(len(self.blocks)))
            return out
        if W.nbytes >= STREAM_MIN_BYTES and self.X.has_sorted_indices:
            return self._times_by_columns(W, out)
        bounds = _balanced(self.X.indptr, W.shape[1])

        def run(b):
            rows_times(self.X.indptr, self.kernel_indices, self.kernel_values, *b, W, out)

        map_in_threads(run, bounds)
        return out

    def _times_by_columns(self, W, out):
        """:meth:`times` over X's columns: each thread takes a block of rows and reads W
        once, in order, adding x_ij·W[j] to its rows' sums; a row's sum runs over its
        columns in ascending order, as the row kernel's over sorted indices (the same
        bits)."""
        indptr, rows, values = self._column_copy()
        n_blocks = max(1, min(get_num_threads(), self.X.shape[0]))
        if n_blocks not in self._column_blocks:
            bounds = _balanced_rows(self.X.indptr, n_blocks)
            self._column_blocks[n_blocks] = (
                bounds,
                _block_starts(
                    indptr,
                    rows,
                    np.array([lo for lo, _ in bounds] + [bounds[-1][1]], dtype=np.int64),
                ),
            )
        bounds, starts = self._column_blocks[n_blocks]

        def run(b):
            _columns_times(starts[b], starts[b + 1], rows, values, W, out, *bounds[b])

        map_in_threads(run, range(len(bounds)))
        return out

    def transposed_times(self, B, out=None):
        """Xᵀ @ B for B of shape (n, k): (d, k), into ``out`` if given; over X's columns
        (copied once, at the first call: 4 to 12 bytes a non-zero), each summed in row
        order, threaded over blocks of columns."""
        B = np.ascontiguousarray(B, dtype=np.float64)
        n, d = self.X.shape
        if B.ndim != 2 or B.shape[0] != n:
            raise ValueError(f"expected a ({n}, k) matrix, got shape {B.shape}")
        indptr, indices, values = self._column_copy()
        out = np.empty((d, B.shape[1])) if out is None else out

        def run(b):
            rows_times(indptr, indices, values, *b, B, out)

        map_in_threads(run, _balanced(indptr, B.shape[1]))
        return out

    def _column_copy(self):
        """X's columns as the rows of a CSR matrix: indptr, row indices (two bytes when
        the rows allow), values (none when all are 1); made at the first call."""
        if self._columns is None:
            n = self.X.shape[0]
            columns = self.X.tocsc()
            indices = columns.indices.astype(np.uint16) if n <= 1 << 16 else columns.indices
            values = _NO_VALUES if self.ones else columns.data
            self._columns = columns.indptr, indices, values
        return self._columns

    def add_by_class(self, rows, coef, to_class, from_class, out):
        """out (d, k) += Σ_t coef_t·x_{rows_t} in column to_class_t, minus in column
        from_class_t: Σ coef·δΨ of Crammer-Singer in the (d, k) layout, one thread, in
        the order of ``rows``."""
        _add_rows_by_class(
            self.X.indptr,
            self.kernel_indices,
            self.kernel_values,
            rows,
            np.asarray(coef, dtype=np.float64),
            to_class,
            from_class,
            out,
        )

    def rows_sum(self, coef, rows=None):
        """Σ_i coef_i·x_i (Xᵀ @ coef). A cut sums its violators, often a small part of
        the data: below SPARSE_COEF_SHARE non-zero coefficients a numba loop visits only
        their rows (cut into as many chunks as X has blocks; ``rows``, if given, lists
        them), above it scipy's Xᵀ product over all rows is faster (dense rows: always
        the numba loop)."""
        n, width = self.X.shape
        coef = np.asarray(coef, dtype=np.float64)
        if rows is None:
            rows = np.flatnonzero(coef)
        if self.dense is None and len(rows) > SPARSE_COEF_SHARE * n:

            def run(b):
                lo, hi = self.bounds[b]
                return self.transposed[b] @ coef[lo:hi]

            return _add_in_order(map_in_threads(run, range(len(self.blocks))))

        def run(chunk):
            out = np.zeros(width)
            if self.dense is not None:
                _add_dense_rows(self.dense, chunk, coef, width, out)
            else:
                add_rows(self.X.indptr, self.kernel_indices, self.kernel_values, chunk, coef, out)
            return out

        chunks = [rows] if len(self.blocks) == 1 else np.array_split(rows, len(self.blocks))
        return _add_in_order(map_in_threads(run, chunks))


def _balanced_rows(indptr, n_blocks):
    """n_blocks ranges of rows of about equal non-zeros (some may be empty)."""
    rows = len(indptr) - 1
    cuts = np.searchsorted(indptr, np.arange(1, n_blocks) * (int(indptr[-1]) / n_blocks))
    edges = [0] + [min(int(c), rows) for c in cuts] + [rows]
    return list(zip(edges[:-1], edges[1:]))


@njit(cache=True)
def _block_starts(indptr, rows, edges):
    """starts[b, j]: the first entry of column j (rows ascending) at or after row
    edges[b]; starts[-1] = the columns' ends."""
    n_blocks, d = len(edges) - 1, len(indptr) - 1
    starts = np.empty((n_blocks + 1, d), np.int64)
    for j in range(d):
        p, end = indptr[j], indptr[j + 1]
        starts[0, j] = p
        for b in range(1, n_blocks):
            while p < end and rows[p] < edges[b]:
                p += 1
            starts[b, j] = p
        starts[n_blocks, j] = end
    return starts


@njit(nogil=True, cache=True)
def _columns_times(first, end, rows, data, W, out, lo, hi):
    """out[lo:hi] = X[lo:hi]·W from X's columns: entries first[j]..end[j] − 1 of column
    j hold the rows lo..hi − 1 (empty ``data``: every value 1)."""
    ones = len(data) == 0
    k = W.shape[1]
    for i in range(lo, hi):
        for c in range(k):
            out[i, c] = 0.0
    for j in range(len(first)):
        if first[j] == end[j]:
            continue
        w = W[j]
        for p in range(first[j], end[j]):
            row = out[np.uint64(rows[p])]
            if ones:
                for c in range(k):
                    row[c] += w[c]
            else:
                v = data[p]
                for c in range(k):
                    row[c] += v * w[c]


def _balanced(indptr, k):
    """Row ranges of about equal non-zeros for a product with k columns: N_BLOCKS of them
    from PARALLEL_MIN_NNZ multiply-adds on (each row's sum is its own: any split gives
    the same result)."""
    rows = len(indptr) - 1
    n_blocks = N_BLOCKS if int(indptr[-1]) * k >= PARALLEL_MIN_NNZ and rows >= N_BLOCKS else 1
    return [(lo, hi) for lo, hi in _balanced_rows(indptr, n_blocks) if hi > lo] or [(0, 0)]


def _share(empty, source):
    """``empty`` (a sparse matrix of the right shape) given source's arrays. Assigned,
    not passed to the constructor: scipy's constructors (and ``.T``) copy arrays that
    are views of larger ones."""
    empty.data, empty.indices, empty.indptr = source.data, source.indices, source.indptr
    return empty


def _add_in_order(parts):
    total = np.array(parts[0], dtype=np.float64)
    for part in parts[1:]:
        total += part
    return total


@njit(cache=True, nogil=True)
def row_squared_norms(indptr, data, extra, out):
    """out_i = |x_i|² + extra for every CSR row."""
    for i in range(len(indptr) - 1):
        total = extra
        for p in range(indptr[i], indptr[i + 1]):
            total += data[p] * data[p]
        out[i] = total


def squared_norms(X, extra: float = 0.0) -> np.ndarray:
    """|x_i|² + extra of every row of X, without a copy of X."""
    X = as_csr(X)
    out = np.empty(X.shape[0])
    row_squared_norms(X.indptr, X.data, float(extra), out)
    return out


def first_identical_rows(X, labels=None) -> np.ndarray:
    """For every row of the CSR matrix X the first row with exactly the same entries, in
    the same order (and, given ``labels``, the same label); itself if none."""
    X = as_csr(X)
    data = np.ascontiguousarray(X.data, dtype=np.float64).view(np.uint64)
    keys = np.empty(X.shape[0], np.uint64)
    blocks = RowBlocks.block_bounds(X)
    map_in_threads(lambda bounds: _row_hashes(X.indptr, X.indices, data, keys, *bounds), blocks)
    if labels is not None:
        keys ^= np.asarray(labels, dtype=np.float64).view(np.uint64) * np.uint64(_MIX)
    n = X.shape[0]
    table = np.full(1 << int(2 * n).bit_length(), -1, np.int32 if n < 2**31 else np.int64)
    return _first_by_table(
        X.indptr,
        X.indices,
        data,
        keys,
        table,
        np.zeros(0) if labels is None else np.asarray(labels, np.float64),
    )


_MIX = 0x9E3779B97F4A7C15


@njit(nogil=True, cache=True)
def _row_hashes(indptr, indices, data, keys, lo, hi):
    """keys[i] for rows lo..hi: a 64-bit hash of each row's (index, value) pairs, the sum
    of a mix of each pair, so that the loop vectorizes (FNV's serial chain took 0.2 s on
    150k x 500 dense rows)."""
    for i in range(lo, hi):
        # Slices of the row: the loop over them vectorizes (indexing by indptr did not).
        row_indices, row_data = indices[indptr[i] : indptr[i + 1]], data[indptr[i] : indptr[i + 1]]
        h = np.uint64(0)
        for p in range(len(row_data)):
            x = np.uint64(row_indices[p]) * np.uint64(_MIX) ^ row_data[p]
            h += (x ^ (x >> np.uint64(31))) * np.uint64(0xBF58476D1CE4E5B9)
        keys[i] = h


@njit(cache=True)
def _first_by_table(indptr, indices, data, keys, table, labels):
    """Each row's first identical row, by an open-addressing table (all -1, more than
    twice as many slots as rows, a power of two) of the rows seen so far keyed by
    ``keys``; rows with equal keys are compared entry by entry. One pass in row order,
    O(n) expected (sorting the keys took 4x longer on a9a)."""
    n = len(keys)
    mask = np.uint64(len(table) - 1)
    out = np.arange(n)
    for i in range(n):
        slot = (keys[i] ^ (keys[i] >> np.uint64(29))) & mask
        while table[slot] >= 0:
            j = table[slot]
            if (
                keys[j] == keys[i]
                and _same_row(indptr, indices, data, i, j)
                and (len(labels) == 0 or labels[i] == labels[j])
            ):
                out[i] = j
                break
            slot = (slot + np.uint64(1)) & mask
        else:
            table[slot] = i
    return out


@njit(cache=True)
def _same_row(indptr, indices, data, i, j):
    if indptr[i + 1] - indptr[i] != indptr[j + 1] - indptr[j]:
        return False
    for p in range(indptr[i + 1] - indptr[i]):
        if (
            indices[indptr[i] + p] != indices[indptr[j] + p]
            or data[indptr[i] + p] != data[indptr[j] + p]
        ):
            return False
    return True
