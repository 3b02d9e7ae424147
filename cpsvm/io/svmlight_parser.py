"""The numba byte parser of SVMlight / LIBSVM text: one compiled pass over a block of
lines straight into CSR arrays.

Line grammar (SVMlight V6): ``<target> [qid:<n>] [sid:<n>] [cost:<f>] <index>:<value> ...
[# comment]``, indices strictly increasing and 1-based (0-based on request); blank lines
and lines starting with ``#`` are skipped. :func:`parse_block` stops at an error (a status
code, :data:`MESSAGES` says what it means) or before a line that does not fit in the
arrays (the ``NEED_*`` codes: the caller makes room and resumes there). Numbers are
converted exactly here (Clinger's fast path, else Eisel-Lemire's for up to 19 significant
digits); the rest (more digits, subnormals, overflow, an undecided product) are handed
back by position (kinds ``SLOW_*``) for the caller to convert exactly. The reader that
drives it is :mod:`cpsvm.io.svmlight`.
"""

from __future__ import annotations

import math

import numpy as np

from ..compiled import njit

# Parser status codes (0 = ok).
_ERR_LABEL = 1
_ERR_TOKEN = 2
_ERR_VALUE = 3
_ERR_NONFINITE = 4
_ERR_INDEX0 = 5
_ERR_ORDER = 6
_ERR_QID = 7
_ERR_BIGINDEX = 8
_ERR_LABEL_NONFINITE = 9
_ERR_SID = 10
_ERR_COST = 11
# Not errors: the line did not fit; the caller makes room and resumes there.
NEED_ROWS = 12
NEED_NNZ = 13
NEED_BLOCK_ROWS = 14
NEED_WIDE_INDICES = 15

# Kinds of slow-path numbers: where the exactly converted value goes.
SLOW_DATA = 0
SLOW_LABEL = 1
SLOW_COST = 2

# Powers of ten that are exact in float64 (Clinger's fast path).
_POW10 = np.array([10.0**k for k in range(23)])
_FAST_MANTISSA_MAX = 2**53
_INT64_MAX = 2**63 - 1

_SPACE, _TAB, _CR, _NL, _HASH, _COLON = 32, 9, 13, 10, 35, 58

# Numbers of 17 to 19 significant digits (the repr of most floats) beyond Clinger's fast
# path: converted exactly here rather than by the slow path.
_SMALLEST_POWER = -342
_LARGEST_POWER = 308


def _powers_of_five():
    """(high, low) 64-bit halves of 5^q normalised to 128 bits, q in [-342, 308] (for
    q < 0 a reciprocal rounded up), the table of the Eisel-Lemire algorithm."""
    table = []
    for q in range(_SMALLEST_POWER, 0):
        power5 = 5**-q
        z = power5.bit_length()  # 2^z > power5 (not a power of two)
        if q >= -27:
            c = 2 ** (z + 127) // power5 + 1
        else:
            c = 2 ** (2 * z + 2 * 64) // power5 + 1
            c >>= max(0, c.bit_length() - 128)
        table.append(c)
    for q in range(0, _LARGEST_POWER + 1):
        power5 = 5**q
        bits = power5.bit_length()
        table.append(power5 << (128 - bits) if bits < 128 else power5 >> (bits - 128))
    out = np.empty((len(table), 2), np.uint64)
    for k, c in enumerate(table):
        out[k, 0] = c >> 64
        out[k, 1] = c & ((1 << 64) - 1)
    return out


_POW5_128 = _powers_of_five()
_M32 = np.uint64(0xFFFFFFFF)
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True, inline="always")
def mul128(a, b):
    """The full product of two uint64 as its (high, low) 64-bit halves."""
    a_lo, a_hi = a & _M32, a >> np.uint64(32)
    b_lo, b_hi = b & _M32, b >> np.uint64(32)
    p0 = a_lo * b_lo
    p1 = a_lo * b_hi
    p2 = a_hi * b_lo
    p3 = a_hi * b_hi
    mid = (p0 >> np.uint64(32)) + (p1 & _M32) + (p2 & _M32)
    lo = (mid << np.uint64(32)) | (p0 & _M32)
    hi = p3 + (p1 >> np.uint64(32)) + (p2 >> np.uint64(32)) + (mid >> np.uint64(32))
    return hi, lo


@njit(cache=True)
def _eisel_lemire(w, q):
    """w·10^q (w a nonzero uint64 of at most 19 digits) correctly rounded to float64, and
    whether it was decided (False: subnormal, overflow or a product too close to call: the
    caller converts the token exactly another way). Lemire, "Number parsing at a gigabyte
    per second" (2021): the 128-bit product of w and a truncated power of five."""
    if q < -342 or q > 308:
        return 0.0, False
    lz = 0
    top = np.uint64(1) << np.uint64(63)
    while (w & top) == np.uint64(0):
        w = w << np.uint64(1)
        lz += 1
    index = q - _SMALLEST_POWER
    hi, lo = mul128(w, _POW5_128[index, 0])
    mask = _ONES >> np.uint64(55)  # 64 - (52 + 3) bits below the ones kept
    if (hi & mask) == mask:
        hi2, _ = mul128(w, _POW5_128[index, 1])
        lo = lo + hi2
        if hi2 > lo:
            hi = hi + np.uint64(1)
    if lo == _ONES and (q < -27 or q > 55):
        return 0.0, False  # the product may be off by one in the last place: undecided
    upperbit = int(hi >> np.uint64(63))
    mantissa = hi >> np.uint64(upperbit + 64 - 52 - 3)
    power2 = (((152170 + 65536) * q) >> 16) + 63 + upperbit - lz + 1023
    if power2 <= 0:
        return 0.0, False  # subnormal
    if (
        lo <= np.uint64(1)
        and -4 <= q <= 23
        and (mantissa & np.uint64(3)) == np.uint64(1)
        and (mantissa << np.uint64(upperbit + 64 - 52 - 3)) == hi
    ):
        mantissa = mantissa & ~np.uint64(1)  # exactly halfway: ties to even
    mantissa = mantissa + (mantissa & np.uint64(1))
    mantissa = mantissa >> np.uint64(1)
    if mantissa >= (np.uint64(2) << np.uint64(52)):
        mantissa = np.uint64(1) << np.uint64(52)
        power2 += 1
    if power2 >= 0x7FF:
        return 0.0, False  # overflow to infinity
    return math.ldexp(float(mantissa), power2 - 1023 - 52), True


@njit(cache=True)
def _is_blank(c):
    return c == _SPACE or c == _TAB or c == _CR or c == 11 or c == 12


@njit(cache=True)
def _is_token_end(c):
    return c == _SPACE or c == _TAB or c == _CR or c == _NL or c == _HASH or c == 11 or c == 12


@njit(cache=True)
def _lower(c):
    return c + 32 if 65 <= c <= 90 else c


@njit(cache=True)
def _word_status(buf, i, end):
    """The status of a token that is a word from buf[i] on: 3 for nan, inf and infinity
    (any case), else 2 (not a number)."""
    word_len = end - i
    if (
        word_len == 3
        and _lower(buf[i]) == 110
        and _lower(buf[i + 1]) == 97
        and _lower(buf[i + 2]) == 110
    ):
        return 3
    if (
        (word_len == 3 or word_len == 8)
        and _lower(buf[i]) == 105
        and _lower(buf[i + 1]) == 110
        and _lower(buf[i + 2]) == 102
    ):
        if word_len == 3 or (
            _lower(buf[i + 3]) == 105
            and _lower(buf[i + 4]) == 110
            and _lower(buf[i + 5]) == 105
            and _lower(buf[i + 6]) == 116
            and _lower(buf[i + 7]) == 121
        ):  # inf, infinity
            return 3
    return 2


@njit(cache=True)
def _parse_float(buf, pos, end):
    """Parse a decimal float in buf[pos:end].

    Returns (value, status): status 0 exact, 1 well-formed but outside the exact fast
    path (caller converts the token with ``float``), 2 not a number, 3 NaN or inf.
    """
    i = pos
    neg = False
    if i < end and (buf[i] == 43 or buf[i] == 45):  # + -
        neg = buf[i] == 45
        i += 1
    if i < end and (_lower(buf[i]) == 110 or _lower(buf[i]) == 105):  # n, i
        return 0.0, _word_status(buf, i, end)
    mantissa = np.uint64(0)
    n_sig = 0  # significant digits accumulated in mantissa
    dropped = 0  # significant digits beyond what uint64 holds
    frac_digits = 0
    n_digits = 0
    while i < end and 48 <= buf[i] <= 57:
        d = buf[i] - 48
        n_digits += 1
        if n_sig < 19:
            if n_sig > 0 or d != 0:
                mantissa = mantissa * np.uint64(10) + np.uint64(d)
                n_sig += 1
        else:
            dropped += 1
        i += 1
    if i < end and buf[i] == 46:  # .
        i += 1
        while i < end and 48 <= buf[i] <= 57:
            d = buf[i] - 48
            n_digits += 1
            if n_sig < 19:
                if n_sig > 0 or d != 0:
                    mantissa = mantissa * np.uint64(10) + np.uint64(d)
                    n_sig += 1
                frac_digits += 1
            else:
                dropped += 1
            i += 1
    if n_digits == 0:
        return 0.0, 2
    exponent = 0
    if i < end and (buf[i] == 101 or buf[i] == 69):  # e E
        i += 1
        exp_neg = False
        if i < end and (buf[i] == 43 or buf[i] == 45):
            exp_neg = buf[i] == 45
            i += 1
        n_exp = 0
        while i < end and 48 <= buf[i] <= 57:
            if exponent < 100000:
                exponent = exponent * 10 + (buf[i] - 48)
            n_exp += 1
            i += 1
        if n_exp == 0:
            return 0.0, 2
        if exp_neg:
            exponent = -exponent
    if i != end:
        return 0.0, 2
    if mantissa == 0:
        return (-0.0 if neg else 0.0), 0
    if dropped > 0:
        return 0.0, 1
    e10 = exponent - frac_digits
    if mantissa > np.uint64(_FAST_MANTISSA_MAX) or e10 < -22 or e10 > 22:
        value, decided = _eisel_lemire(mantissa, e10)
        if not decided:
            return 0.0, 1
        return (-value if neg else value), 0
    value = float(mantissa)
    if e10 >= 0:
        value = value * _POW10[e10]
    else:
        value = value / _POW10[-e10]
    return (-value if neg else value), 0


@njit(cache=True)
def _parse_int(buf, pos, end, signed):
    """Parse a decimal integer; returns (value, status): 0 ok, 2 not an int, 8 overflow."""
    i = pos
    neg = False
    if signed and i < end and (buf[i] == 43 or buf[i] == 45):
        neg = buf[i] == 45
        i += 1
    if i >= end:
        return 0, 2
    value = 0
    while i < end:
        c = buf[i]
        if c < 48 or c > 57:
            return 0, 2
        d = c - 48
        if value > (_INT64_MAX - d) // 10:
            return 0, 8
        value = value * 10 + d
        i += 1
    return (-value if neg else value), 0


@njit(cache=True)
def _key_is(buf, start, end, a, b, c, d):
    """True when buf[start:end] spells the 3- or 4-letter key a b c [d] (d=0: 3 letters)."""
    n = end - start
    if d == 0:
        return n == 3 and buf[start] == a and buf[start + 1] == b and buf[start + 2] == c
    return (
        n == 4
        and buf[start] == a
        and buf[start + 1] == b
        and buf[start + 2] == c
        and buf[start + 3] == d
    )


# Inlined into the parser: called with constant kinds, numba compiled a copy per value.
@njit(cache=True, inline="always")
def _record_slow(slow, n_slow, kind, slot, start, end):
    """Remember a number for exact conversion later; ``slow`` rows: kind, slot, start, end."""
    if n_slow == slow.shape[0]:
        grown = np.empty((2 * slow.shape[0], 4), np.int64)
        for i in range(n_slow):  # not grown[:n_slow] = slow: its shape check's message
            for j in range(4):  # formatting took most of the parser's first compile
                grown[i, j] = slow[i, j]
        slow = grown
    slow[n_slow, 0] = kind
    slow[n_slow, 1] = slot
    slow[n_slow, 2] = start
    slow[n_slow, 3] = end
    return slow, n_slow + 1


@njit(cache=True, nogil=True)
def parse_block(
    buf,
    pos,
    line,
    zero_based,
    row,
    nnz,
    row0,
    indptr,
    indices,
    data,
    y,
    line_no,
    qid,
    sid,
    cost,
    comment_start,
    comment_end,
):
    """Parse the lines of buf[pos:] into the arrays, from example ``row`` and non-zero
    ``nnz`` on; ``line`` numbers the line at ``pos``.

    indptr (one longer), y and line_no are indexed by example, indices and data by
    non-zero; qid, sid, cost and the comment bounds (positions in buf) by ``row - row0``,
    the example's place in this block. Stops at the end of buf, at an error, or before a
    line that does not fit (NEED_ROWS, NEED_NNZ, NEED_BLOCK_ROWS, NEED_WIDE_INDICES):
    then pos, line, row and nnz are those of the start of that line, to resume there.

    Returns (status, pos, line, row, nnz, seen, err_pos, slow, n_slow): ``seen`` has
    bit 1 for qid, 2 for sid, 4 for cost tokens; ``slow`` the numbers to convert exactly,
    as rows (kind, slot, start, end) with start/end positions in buf.
    """
    n = len(buf)
    index_limit = np.iinfo(indices.dtype).max
    rows_cap = len(y)
    block_cap = len(qid)
    nnz_cap = len(data)
    slow = np.empty((16, 4), np.int64)
    n_slow = 0
    seen = 0
    status = 0
    err_pos = 0
    indptr[row] = nnz
    while pos < n:
        line_start = pos
        while pos < n and _is_blank(buf[pos]):
            pos += 1
        if pos >= n:
            break
        if buf[pos] == _NL:
            line += 1
            pos += 1
            continue
        if buf[pos] == _HASH:
            while pos < n and buf[pos] != _NL:
                pos += 1
            continue
        if row >= rows_cap:
            status = NEED_ROWS
        elif row - row0 >= block_cap:
            status = NEED_BLOCK_ROWS
        if status != 0:
            pos = line_start
            break
        slow_at_start = n_slow
        seen_at_start = seen
        # Target.
        tok_end = pos
        while tok_end < n and not _is_token_end(buf[tok_end]):
            tok_end += 1
        value, st = _parse_float(buf, pos, tok_end)
        if st >= 2:
            status, err_pos = (_ERR_LABEL if st == 2 else _ERR_LABEL_NONFINITE), pos
            break
        if st == 1:
            slow, n_slow = _record_slow(slow, n_slow, SLOW_LABEL, row, pos, tok_end)
        b = row - row0
        y[row] = value
        line_no[row] = line
        qid[b] = 0
        sid[b] = 0
        cost[b] = 1.0
        comment_start[b] = -1
        comment_end[b] = -1
        pos = tok_end
        prev_index = -1
        row_nnz = nnz
        while True:
            while pos < n and _is_blank(buf[pos]):
                pos += 1
            if pos >= n or buf[pos] == _NL:
                break
            if buf[pos] == _HASH:
                comment_start[b] = pos + 1
                while pos < n and buf[pos] != _NL:
                    pos += 1
                comment_end[b] = pos
                break
            tok_start = pos
            colon = -1
            while pos < n and not _is_token_end(buf[pos]):
                if buf[pos] == _COLON and colon < 0:
                    colon = pos
                pos += 1
            tok_end = pos
            err_pos = tok_start
            if colon < 0 or colon == tok_start or colon == tok_end - 1:
                status = _ERR_TOKEN
                break
            if 48 <= buf[tok_start] <= 57:
                index, st = _parse_int(buf, tok_start, colon, False)
                if st != 0:
                    status = _ERR_TOKEN if st == 2 else _ERR_BIGINDEX
                    break
                if not zero_based:
                    if index == 0:
                        status = _ERR_INDEX0
                        break
                    index -= 1
                elif index == _INT64_MAX:  # the width, index + 1, must fit too
                    status = _ERR_BIGINDEX
                    break
                if index <= prev_index:
                    status = _ERR_ORDER
                    break
                value, st = _parse_float(buf, colon + 1, tok_end)
                if st >= 2:
                    status = _ERR_VALUE if st == 2 else _ERR_NONFINITE
                    break
                if index > index_limit:
                    status = NEED_WIDE_INDICES
                    break
                if nnz >= nnz_cap:
                    status = NEED_NNZ
                    break
                prev_index = index
                if st == 1:
                    slow, n_slow = _record_slow(slow, n_slow, SLOW_DATA, nnz, colon + 1, tok_end)
                indices[nnz] = index
                data[nnz] = value
                nnz += 1
            elif _key_is(buf, tok_start, colon, 113, 105, 100, 0):  # qid
                v, st = _parse_int(buf, colon + 1, tok_end, True)
                if st != 0:
                    status = _ERR_QID
                    break
                qid[b] = v
                seen |= 1
            elif _key_is(buf, tok_start, colon, 115, 105, 100, 0):  # sid
                v, st = _parse_int(buf, colon + 1, tok_end, True)
                if st != 0:
                    status = _ERR_SID
                    break
                sid[b] = v
                seen |= 2
            elif _key_is(buf, tok_start, colon, 99, 111, 115, 116):  # cost
                value, st = _parse_float(buf, colon + 1, tok_end)
                if st >= 2:
                    status = _ERR_COST
                    break
                if st == 1:
                    slow, n_slow = _record_slow(slow, n_slow, SLOW_COST, b, colon + 1, tok_end)
                cost[b] = value
                seen |= 4
            else:
                status = _ERR_TOKEN
                break
        if status == 0:
            row += 1
            indptr[row] = nnz
        else:
            if status >= NEED_ROWS:  # resume at this line once there is room
                pos, nnz, n_slow, seen = line_start, row_nnz, slow_at_start, seen_at_start
            break
    return status, pos, line, row, nnz, seen, err_pos, slow, n_slow


MESSAGES = {
    _ERR_LABEL: "expected a numeric target at the start of the line, got {tok}",
    _ERR_LABEL_NONFINITE: "expected a finite target, got {tok}",
    _ERR_TOKEN: "expected <index>:<value> (or qid:/sid:/cost:), got {tok}",
    _ERR_VALUE: "expected a number after ':' in {tok}",
    _ERR_NONFINITE: "expected a finite feature value, got {tok}",
    _ERR_INDEX0: "expected feature indices >= 1 (SVMlight and LIBSVM files are 1-based: "
    "add 1 to every index of a 0-based file), got {tok}",
    _ERR_ORDER: "expected strictly increasing feature indices, got {tok} after a larger "
    "or equal index",
    _ERR_QID: "expected an integer qid, got {tok}",
    _ERR_BIGINDEX: "expected a feature index below 2^63 (2^63 - 1 if 0-based), got {tok}",
    _ERR_SID: "expected an integer sid, got {tok}",
    _ERR_COST: "expected a finite number after cost:, got {tok}",
}
