"""Sparse rows as SVMlight text in compiled code: ``index:value`` pairs whose values are
written as Python's ``repr`` writes them (the shortest text that reads back to the same
double), so model files stay what they were, without a Python call per value (``repr``
per weight made writing a model of millions of weights take longer than training it).

The shortest digits come from Ryu (Ulf Adams, "Ryu: fast float-to-string conversion",
PLDI 2018): the shortest decimal in the interval of reals that round to the double, the
one nearest to it when several are as short, which is also what ``repr`` (David Gay's
shortest mode) prints; the layout (fixed or exponent form, ``.0``, two exponent digits)
is ``repr``'s. The 64 x 128-bit products use the parser's :func:`mul128`.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ..compiled import njit
from .svmlight_parser import mul128

_POW5_INV_BITCOUNT = 125
_POW5_BITCOUNT = 125
_POW5_INV_TABLE_SIZE = 342
_POW5_TABLE_SIZE = 326
_MASK64 = (1 << 64) - 1
# The longest pair: a 20-digit index, ':', a sign and 17 digits with a point and a
# five-character exponent, a separator.
_MAX_PAIR_BYTES = 48


@cache
def _tables():
    """Ryu's 128-bit multipliers as (low, high) 64-bit halves: 5^-q scaled up and 5^i
    scaled down to 125 significant bits (exact integer arithmetic, built once)."""
    inv = np.empty((_POW5_INV_TABLE_SIZE, 2), np.uint64)
    for q in range(_POW5_INV_TABLE_SIZE):
        power = 5**q
        value = (1 << (power.bit_length() - 1 + _POW5_INV_BITCOUNT)) // power + 1
        inv[q] = value & _MASK64, value >> 64
    pos = np.empty((_POW5_TABLE_SIZE, 2), np.uint64)
    for i in range(_POW5_TABLE_SIZE):
        power = 5**i
        shift = power.bit_length() - _POW5_BITCOUNT
        value = power >> shift if shift >= 0 else power << -shift
        pos[i] = value & _MASK64, value >> 64
    return inv, pos


@njit(cache=True)
def _mul_shift(m, mul_lo, mul_hi, j):
    """floor(m · (mul_hi·2^64 + mul_lo) / 2^j) for 64 <= j < 128."""
    high0, _ = mul128(m, mul_lo)
    high1, low1 = mul128(m, mul_hi)
    total = high0 + low1
    if total < high0:
        high1 += np.uint64(1)
    dist = np.uint64(j - 64)
    if dist == 0:
        return total
    return (high1 << (np.uint64(64) - dist)) | (total >> dist)


@njit(cache=True)
def _pow5_factor(value):
    count = 0
    five = np.uint64(5)
    while value > 0 and value % five == 0:
        value //= five
        count += 1
    return count


@njit(cache=True)
def _shortest(bits, inv, pos):
    """The shortest decimal of the positive finite double with IEEE ``bits``: (digits as
    an integer, decimal exponent)."""
    mantissa = bits & np.uint64((1 << 52) - 1)
    exponent = np.int64(bits >> np.uint64(52)) & 0x7FF
    if exponent == 0:
        e2 = 1 - 1023 - 52 - 2
        m2 = mantissa
    else:
        e2 = exponent - 1023 - 52 - 2
        m2 = mantissa | np.uint64(1 << 52)
    accept_bounds = (m2 & np.uint64(1)) == 0
    mv = np.uint64(4) * m2
    mm_shift = np.uint64(1) if (mantissa != 0 or exponent <= 1) else np.uint64(0)
    vm_trailing_zeros = False
    vr_trailing_zeros = False
    vp_below = False  # the upper end is excluded and exactly representable: one less
    if e2 >= 0:
        q = ((e2 * 78913) >> 18) - (1 if e2 > 3 else 0)
        e10 = q
        k = _POW5_INV_BITCOUNT + (((q * 1217359) >> 19) + 1) - 1
        j = -e2 + q + k
        lo = inv[q, 0]
        hi = inv[q, 1]
        if q <= 21:
            if mv % np.uint64(5) == 0:
                vr_trailing_zeros = _pow5_factor(mv) >= q
            elif accept_bounds:
                vm_trailing_zeros = _pow5_factor(mv - np.uint64(1) - mm_shift) >= q
            else:
                vp_below = _pow5_factor(mv + np.uint64(2)) >= q
    else:
        q = ((-e2 * 732923) >> 20) - (1 if -e2 > 1 else 0)
        e10 = q + e2
        i = -e2 - q
        k = (((i * 1217359) >> 19) + 1) - _POW5_BITCOUNT
        j = q - k
        lo = pos[i, 0]
        hi = pos[i, 1]
        if q <= 1:
            vr_trailing_zeros = True
            if accept_bounds:
                vm_trailing_zeros = mm_shift == 1
            else:
                vp_below = True
        elif q < 63:
            vr_trailing_zeros = (mv & ((np.uint64(1) << np.uint64(q)) - np.uint64(1))) == 0
    # the value and its interval's ends, scaled by 10^-e10
    vr = _mul_shift(mv, lo, hi, j)
    vp = _mul_shift(mv + np.uint64(2), lo, hi, j)
    vm = _mul_shift(mv - np.uint64(1) - mm_shift, lo, hi, j)
    if vp_below:
        vp -= np.uint64(1)
    removed = 0
    ten = np.uint64(10)
    if vm_trailing_zeros or vr_trailing_zeros:
        last_removed = np.uint64(0)
        # digits off while the interval holds a shorter number, then, when the lower
        # end is exact and ends in zeros, those too
        while vp // ten > vm // ten or (vm_trailing_zeros and vm % ten == 0):
            vm_trailing_zeros &= vm % ten == 0
            vr_trailing_zeros &= last_removed == 0
            last_removed = vr % ten
            vr //= ten
            vp //= ten
            vm //= ten
            removed += 1
        if vr_trailing_zeros and last_removed == 5 and vr % np.uint64(2) == 0:
            last_removed = np.uint64(4)  # ties to even
        round_up = (vr == vm and (not accept_bounds or not vm_trailing_zeros)) or last_removed >= 5
    else:
        round_up = False
        while vp // ten > vm // ten:
            round_up = vr % ten >= 5
            vr //= ten
            vp //= ten
            vm //= ten
            removed += 1
        round_up = vr == vm or round_up
    if round_up:
        vr += np.uint64(1)
    return vr, e10 + removed


@njit(cache=True)
def _put_uint(out, at, value):
    """Write the decimal digits of ``value`` (uint64) at ``at``; return the end."""
    digits = 1
    rest = value // np.uint64(10)
    while rest > 0:
        digits += 1
        rest //= np.uint64(10)
    end = at + digits
    for p in range(end - 1, at - 1, -1):
        out[p] = 48 + np.uint8(value % np.uint64(10))
        value //= np.uint64(10)
    return end


@njit(cache=True)
def _put_text(out, at, text):
    for p in range(len(text)):
        out[at + p] = text[p]
    return at + len(text)


@njit(cache=True)
def _put_repr(out, at, bits, inv, pos, scratch):
    """Write ``repr`` of the double with IEEE ``bits`` at ``at``; return the end."""
    sign = np.uint64(1) << np.uint64(63)
    magnitude = bits & ~sign
    infinity = np.uint64(0x7FF) << np.uint64(52)
    if magnitude > infinity:
        return _put_text(out, at, b"nan")
    if bits & sign:
        out[at] = 45  # '-'
        at += 1
    if magnitude == infinity:
        return _put_text(out, at, b"inf")
    if magnitude == 0:
        return _put_text(out, at, b"0.0")
    digits, exp10 = _shortest(magnitude, inv, pos)
    n_digits = _put_uint(scratch, 0, digits)
    point = exp10 + n_digits  # value = 0.d1d2... x 10^point
    if -4 < point <= 16:
        if point <= 0:
            out[at] = 48
            out[at + 1] = 46
            at += 2
            for _ in range(-point):
                out[at] = 48
                at += 1
            for p in range(n_digits):
                out[at + p] = scratch[p]
            return at + n_digits
        if point < n_digits:
            for p in range(point):
                out[at + p] = scratch[p]
            out[at + point] = 46
            at += point + 1
            for p in range(point, n_digits):
                out[at + p - point] = scratch[p]
            return at + n_digits - point
        for p in range(n_digits):
            out[at + p] = scratch[p]
        at += n_digits
        for _ in range(point - n_digits):
            out[at] = 48
            at += 1
        out[at] = 46
        out[at + 1] = 48
        return at + 2
    out[at] = scratch[0]
    at += 1
    if n_digits > 1:
        out[at] = 46
        at += 1
        for p in range(1, n_digits):
            out[at] = scratch[p]
            at += 1
    out[at] = 101  # 'e'
    exponent = point - 1
    out[at + 1] = 45 if exponent < 0 else 43
    at += 2
    exponent = abs(exponent)
    if exponent < 10:
        out[at] = 48
        at += 1
    return _put_uint(out, at, np.uint64(exponent))


@njit(cache=True)
def _format_pairs(indptr, keys, bits, inv, pos):
    """All rows' ``key:repr(value)`` pairs, space-separated within a row, as bytes, and
    where each row ends."""
    out = np.empty(_MAX_PAIR_BYTES * len(bits) + 1, np.uint8)
    scratch = np.empty(24, np.uint8)
    row_ends = np.empty(len(indptr) - 1, np.int64)
    at = 0
    for row in range(len(indptr) - 1):
        for p in range(indptr[row], indptr[row + 1]):
            if p > indptr[row]:
                out[at] = 32
                at += 1
            at = _put_uint(out, at, np.uint64(keys[p]))
            out[at] = 58  # ':'
            at = _put_repr(out, at + 1, bits[p], inv, pos, scratch)
        row_ends[row] = at
    return out[:at], row_ends


@njit(cache=True)
def _fixed_units(bits, scale):
    """round(|v| · scale), ties to even, computed exactly, of the finite double v with
    IEEE ``bits``, |v| < 2^32 and scale < 2^30: the digits ``f"{v:f}"`` writes."""
    one = np.uint64(1)
    fraction = bits & ((one << np.uint64(52)) - one)
    biased = (bits >> np.uint64(52)) & np.uint64(0x7FF)
    if biased == 0:
        m, e = fraction, -1074
    else:
        m, e = fraction | (one << np.uint64(52)), int(biased) - 1075
    if e >= 0:
        return (m << np.uint64(e)) * scale
    s = -e
    if s > 83:  # m · scale < 2^83: less than half a unit
        return np.uint64(0)
    hi, lo = mul128(m, scale)
    if s < 64:
        q = (hi << np.uint64(64 - s)) | (lo >> np.uint64(s))
        rest = lo & ((one << np.uint64(s)) - one)
        half = one << np.uint64(s - 1)
        above, tie = rest > half, rest == half
    elif s == 64:
        half = one << np.uint64(63)
        q, above, tie = hi, lo > half, lo == half
    else:
        t = np.uint64(s - 64)
        q = hi >> t
        rest = hi & ((one << t) - one)
        half = one << (t - one)
        above = rest > half or (rest == half and lo > 0)
        tie = rest == half and lo == 0
    if above or (tie and q & one):
        q += one
    return q


@njit(cache=True)
def _format_fixed(bits, digits):
    """Every row of ``bits`` (2-D) as its values written with ``digits`` decimals,
    space-separated, as bytes, and where each row ends."""
    scale = np.uint64(10**digits)
    n_rows, n_cols = bits.shape
    # a sign, ten integer digits, the point and the decimals, a separator
    out = np.empty(n_rows * n_cols * (13 + digits) + 1, np.uint8)
    row_ends = np.empty(n_rows, np.int64)
    sign = np.uint64(1) << np.uint64(63)
    at = 0
    for row in range(n_rows):
        for col in range(n_cols):
            if col:
                out[at] = 32
                at += 1
            if bits[row, col] & sign:
                out[at] = 45  # '-', also before a zero, as Python writes it
                at += 1
            units = _fixed_units(bits[row, col] & ~sign, scale)
            at = _put_uint(out, at, units // scale)
            out[at] = 46
            fraction = units % scale
            for p in range(at + digits, at, -1):
                out[p] = 48 + np.uint8(fraction % np.uint64(10))
                fraction //= np.uint64(10)
            at += digits + 1
        row_ends[row] = at
    return out[:at], row_ends


def format_fixed_rows(values, digits=6) -> list:
    """Each row of a 2-D array as its values written as ``f"{v:.{digits}f}"`` writes
    them (1 <= digits <= 9), space-separated, one string a row (a 1-D array: a value a
    row). Values of 2^32 or more, infinite or NaN are left to Python's formatting."""
    values = np.asarray(values, dtype=np.float64)
    values = np.ascontiguousarray(values[:, None] if values.ndim == 1 else values)
    if not np.all(np.abs(values) < 2.0**32):
        return [" ".join(f"{v:.{digits}f}" for v in row) for row in values.tolist()]
    return _split_rows(*_format_fixed(values.view(np.uint64), digits))


def _split_rows(text, row_ends) -> list:
    text = text.tobytes().decode("ascii")
    # rows follow each other without a separator: each starts where the last ended
    starts = [0, *row_ends[:-1].tolist()]
    return [text[lo:hi] for lo, hi in zip(starts, row_ends.tolist())]


def format_rows(indptr, indices, values, zero_based=False) -> list:
    """The ``i:v`` pairs of every row of a CSR matrix (``indptr``, ``indices``,
    ``values``), one string a row: indices 1-based unless ``zero_based``, each value as
    ``repr`` writes it, so that reading it back is exact."""
    keys = np.asarray(indices, dtype=np.int64).ravel() + (0 if zero_based else 1)
    values = np.ascontiguousarray(values, dtype=np.float64).ravel()
    bounds = np.asarray(indptr, dtype=np.int64)
    return _split_rows(*_format_pairs(bounds, keys, values.view(np.uint64), *_tables()))


def format_example(indices, values, zero_based=False) -> str:
    """``i:v`` pairs of one sparse row, values written so that reading them back is exact."""
    return format_rows([0, len(indices)], indices, values, zero_based)[0]
