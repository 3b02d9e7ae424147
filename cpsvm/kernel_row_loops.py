"""The compiled loops of the kernel rows (:mod:`cpsvm.kernel_rows`): numba passes that
form kernel values between rows and a prepared basis and use them while they are in
cache.

:func:`form_kernel_rows` takes a batch of rows at a time, forms their inner products with
one block of the basis (dense blocks: :func:`_dots_dense`; bitsets of 0/1 features:
:func:`_dots_bits`; an inverted index: :func:`_dots_sparse`; SVMlight's float32 products:
:func:`_dots_dense_single`), turns them into kernel values (:func:`_apply_kernel`, the RBF
exp vectorized by :func:`exp_nonpositive`) and either sums them with the coefficients
(mode :data:`TIMES`) or copies them out (:data:`MATRIX`); :func:`finish_blas_block` does
the last two steps for inner products BLAS formed. :func:`feature_counts`,
:func:`fill_dense` and :func:`fill_bits` prepare a basis; :func:`csr_row_sq_norms` gives
the squared norms of rows.
"""

from __future__ import annotations

import math

import numpy as np

from .compiled import njit
from .kernels import POLYNOMIAL, RBF, SIGMOID
from .threads import in_row_chunks

TIMES, MATRIX = 0, 1  # what form_kernel_rows does with each row's values


@njit(cache=True)
def csr_row_sq_norms(indptr, data, single):
    """Squared norm of every CSR row, summed in index order; ``single``: each square
    rounded to float32 first (SVMlight)."""
    out = np.zeros(len(indptr) - 1)
    for i in range(len(indptr) - 1):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            square = data[k] * data[k]
            acc += np.float64(np.float32(square)) if single else square
        out[i] = acc
    return out


@njit(cache=True)
def feature_counts(indptr, indices, rows, n_features):
    """How many of the examples ``rows`` have each feature."""
    count = np.zeros(n_features, np.int64)
    for i in rows:
        for p in range(indptr[i], indptr[i + 1]):
            count[indices[p]] += 1
    return count


@njit(cache=True)
def fill_dense(indptr, indices, data, rows, feature_map, dense):
    """dense[block, feature row, column] <- the values of the examples ``rows``, example
    a in block a // width, column a % width."""
    width = dense.shape[2]
    for a in range(len(rows)):
        i = rows[a]
        for p in range(indptr[i], indptr[i + 1]):
            dense[a // width, feature_map[indices[p]], a % width] = data[p]


@njit(cache=True)
def fill_bits(indptr, indices, rows, feature_map, bits):
    """Set bit f % 64 of word f // 64 of example a's column (block a // width) for
    every used feature f = feature_map[index] of the examples ``rows``."""
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
def exp_nonpositive(values, scale, size):
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
    TIMES) in one pass per row, the shared-feature counts kept as integers (``b_sq``
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
        exp_nonpositive(flat_values, flat_scale, count * width)
    elif kind == POLYNOMIAL:
        for q in range(count * width):
            # libm's pow, as numpy's power and SVMlight call it (** would multiply).
            flat_values[q] = math.pow(coef_lin * flat_values[q] + coef_const, degree)
    elif kind == SIGMOID:
        for q in range(count * width):
            flat_values[q] = math.tanh(coef_lin * flat_values[q] + coef_const)


@njit(cache=True)
def _use_values(mode, values, count, start, c, m, block_beta, lanes, out):
    """What form_kernel_rows does with the values of rows start..start+count, block c."""
    width = values.shape[1]
    lo = c * width
    if mode == TIMES:
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


def form_kernel_rows(
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
    mode TIMES: out[a, 0] = Σ_j beta_j k(x_a, b_j); MATRIX: out[a, j] = k(x_a, b_j).

    The basis is ``dense`` blocks (blocks × features used × width; ``feature_map`` maps
    a feature to its row), ``bits`` (blocks × words × width, 0/1 features) or, when both
    are empty (shape (1, 0, 0)), the inverted index Bᵀ; ``b_sq`` and ``beta`` are
    (blocks × width), zero-padded. ``single``: products rounded to float32 (SVMlight's
    arithmetic; not with bitsets, whose products are exact). Threads take fixed ranges
    of rows, formed _BATCH at a time; each row's values and sums are computed in the
    same order whatever the threads, so results do not depend on their number.
    """
    n_rows = len(rows)
    # At most _ROWS_PER_TASK rows a task, and at least 16 tasks when there are enough rows
    # (a few hundred draws must still keep every thread busy).
    per_task = min(_ROWS_PER_TASK, max(_BATCH, -(-n_rows // (16 * _BATCH)) * _BATCH))
    n_tasks = (n_rows + per_task - 1) // per_task
    in_row_chunks(
        _form_rows,
        n_tasks,
        per_task,
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
        min_rows=1,
    )


@njit(nogil=True, cache=True)
def _form_rows(
    lo_task,
    hi_task,
    per_task,
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
    """:func:`form_kernel_rows` of tasks lo_task..hi_task (``per_task`` rows each)."""
    width = b_sq.shape[1]
    n_blocks = b_sq.shape[0]
    n_rows = len(rows)
    first, last = lo_task * per_task, min(n_rows, hi_task * per_task)
    longest = 0
    for a in range(first, last):
        longest = max(longest, x_indptr[rows[a] + 1] - x_indptr[rows[a]])
    b_sq_counts = b_sq.astype(np.int64)  # 0/1 features: squared norms are counts
    for task in range(lo_task, hi_task):
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
                if block_bits.shape[0] and table.shape[0] and mode == TIMES:
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
            if mode == TIMES:
                _sum_lanes(lanes, count, start, out)


@njit(nogil=True, cache=True)
def finish_blas_block(
    kind, values, x_sq, rows, start, b_sq, degree, gamma, coef_lin, coef_const, mode, beta, out
):
    """The BLAS path's rows start..start+len(values): inner products ``values`` (rows ×
    basis) -> kernel values in place (:func:`_apply_kernel`), then their sums with β
    (TIMES) or a copy into ``out`` (MATRIX), as :func:`form_kernel_rows` does."""
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
    if mode == TIMES:
        _sum_lanes(lanes, count, start, out)


@njit(cache=True, inline="always")
def _sum_lanes(lanes, count, start, out):
    """out[start + r, 0] = the eight partial sums of row r, added in a fixed order."""
    for r in range(count):
        total = 0.0
        for t in range(8):
            total += lanes[r, t]
        out[start + r, 0] = total
