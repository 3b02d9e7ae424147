"""SVMlight / LIBSVM sparse text format: a numba byte parser and a writer.

Line grammar (SVMlight V6): ``<target> [qid:<n>] [sid:<n>] [cost:<f>] <index>:<value> ...
[# comment]``, indices strictly increasing and 1-based (0-based on request); blank lines
and lines starting with ``#`` are skipped. The SVM-hmm sequence format is the same with
one token per line, ``qid`` naming the sequence.

The text is read in blocks of a few megabytes cut at line ends, each parsed by one
compiled pass straight into the CSR arrays, which grow in place (see ``_Column``): memory
is the matrix plus one block, never the whole text beside it, and no Python object is
made per line or token. gzip, bzip2 and xz input is recognised by its magic bytes and
decompressed block by block. Numbers with more digits than the exact fast path covers
are handed back by position and converted with Python's ``float`` (correctly rounded, as
``strtod``), so values equal what scikit-learn's loader returns bit for bit.
"""

from __future__ import annotations

import io
import mmap
import sys

import numpy as np
import scipy.sparse as sp
from numba import njit

from ..data import Dataset, SequenceDataset
from ..errors import InputError
from .atomic import atomic_output
from .streams import InputStream

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
_NEED_ROWS = 12
_NEED_NNZ = 13
_NEED_BLOCK_ROWS = 14
_NEED_WIDE_INDICES = 15

# Kinds of slow-path numbers: where the exactly converted value goes.
_SLOW_DATA = 0
_SLOW_LABEL = 1
_SLOW_COST = 2

# Powers of ten that are exact in float64 (Clinger's fast path).
_POW10 = np.array([10.0**k for k in range(23)])
_FAST_MANTISSA_MAX = 2**53
_INT64_MAX = 2**63 - 1
_INT32_MAX = 2**31 - 1

_SPACE, _TAB, _CR, _NL, _HASH, _COLON = 32, 9, 13, 10, 35, 58


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
        word_len = end - i
        if (
            word_len == 3
            and _lower(buf[i]) == 110
            and _lower(buf[i + 1]) == 97
            and _lower(buf[i + 2]) == 110
        ):
            return 0.0, 3
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
                return 0.0, 3
        return 0.0, 2
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
        return 0.0, 1
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


@njit(cache=True)
def _parse_block(
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
    line that does not fit (_NEED_ROWS, _NEED_NNZ, _NEED_BLOCK_ROWS, _NEED_WIDE_INDICES):
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
            status = _NEED_ROWS
        elif row - row0 >= block_cap:
            status = _NEED_BLOCK_ROWS
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
            slow, n_slow = _record_slow(slow, n_slow, _SLOW_LABEL, row, pos, tok_end)
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
                    status = _NEED_WIDE_INDICES
                    break
                if nnz >= nnz_cap:
                    status = _NEED_NNZ
                    break
                prev_index = index
                if st == 1:
                    slow, n_slow = _record_slow(slow, n_slow, _SLOW_DATA, nnz, colon + 1, tok_end)
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
                    slow, n_slow = _record_slow(slow, n_slow, _SLOW_COST, b, colon + 1, tok_end)
                cost[b] = value
                seen |= 4
            else:
                status = _ERR_TOKEN
                break
        if status == 0:
            row += 1
            indptr[row] = nnz
        else:
            if status >= _NEED_ROWS:  # resume at this line once there is room
                pos, nnz, n_slow, seen = line_start, row_nnz, slow_at_start, seen_at_start
            break
    return status, pos, line, row, nnz, seen, err_pos, slow, n_slow


_MESSAGES = {
    _ERR_LABEL: "expected a numeric target at the start of the line, got {tok}",
    _ERR_LABEL_NONFINITE: "expected a finite target, got {tok}",
    _ERR_TOKEN: "expected <index>:<value> (or qid:/sid:/cost:), got {tok}",
    _ERR_VALUE: "expected a number after ':' in {tok}",
    _ERR_NONFINITE: "expected a finite feature value, got {tok}",
    _ERR_INDEX0: "expected feature indices >= 1 (1-based file; use the zero-based option "
    "for 0-based data), got {tok}",
    _ERR_ORDER: "expected strictly increasing feature indices, got {tok} after a larger "
    "or equal index",
    _ERR_QID: "expected an integer qid, got {tok}",
    _ERR_BIGINDEX: "expected a feature index below 2^63 (2^63 - 1 if 0-based), got {tok}",
    _ERR_SID: "expected an integer sid, got {tok}",
    _ERR_COST: "expected a finite number after cost:, got {tok}",
}

_SHOWN_CHARS = 60  # of a bad token in a message (a line can be megabytes of garbage)


def _shown(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    if len(text) > _SHOWN_CHARS:
        return repr(text[:_SHOWN_CHARS]) + f" ({len(raw)} bytes)"
    return repr(text)


def _token_at(buf, pos: int) -> str:
    end = pos
    n = len(buf)
    while end < n and buf[end] not in b" \t\r\n#\x0b\x0c" and end - pos <= 4 * _SHOWN_CHARS:
        end += 1
    return _shown(bytes(buf[pos:end]))


def _blocks(readinto, block_size):
    """Consecutive pieces of a stream, each ending just after a newline (the last one at the
    end of the stream): views into one buffer, valid until the next piece is asked for.
    A line longer than the buffer grows it."""
    buf = np.empty(max(int(block_size), 1), np.uint8)
    filled = 0
    while True:
        view = memoryview(buf)
        at_end = False
        while filled < len(buf):
            n = readinto(view[filled:])
            if not n:
                at_end = True
                break
            filled += n
        del view
        if at_end:
            if filled:
                yield buf[:filled]
            return
        cut = _after_last_newline(buf, filled)
        if cut == 0:
            grown = np.empty(2 * len(buf), np.uint8)
            grown[:filled] = buf[:filled]
            buf = grown
            continue
        yield buf[:cut]
        rest = filled - cut
        buf[:rest] = buf[cut:filled]
        filled = rest


def _after_last_newline(buf, end) -> int:
    """1 + the position of the last newline in buf[:end], 0 when there is none."""
    window = 1 << 16
    view = memoryview(buf)
    hi = end
    while hi > 0:
        lo = max(0, hi - window)
        k = view[lo:hi].tobytes().rfind(b"\n")
        if k >= 0:
            return lo + k + 1
        hi = lo
    return 0


# ---------------------------------------------------------------------------------------
# Arrays that grow without being copied.


class _Column:
    """A 1-D array that grows in place: its memory is a private anonymous map, enlarged by
    mremap (no copy, and untouched capacity takes no memory), and finally shrunk to the
    length used. The matrix being built is thus never held twice, as it would be while
    an ordinary array is copied into a larger one."""

    def __init__(self, dtype, capacity):
        self.dtype = np.dtype(dtype)
        self._map = None
        self.array = None
        self._allocate(max(int(capacity), 1))

    def _allocate(self, capacity, keep=0):
        nbytes = capacity * self.dtype.itemsize
        old, old_map = self.array, self._map
        self.array = None
        if old_map is not None and _RESIZABLE:
            del old
            try:
                old_map.resize(nbytes)
                self.array = np.frombuffer(old_map, self.dtype)
                return
            except (SystemError, OSError, ValueError, BufferError):
                old = np.frombuffer(old_map, self.dtype)
        new_map = _anonymous_map(nbytes)
        self.array = (
            np.frombuffer(new_map, self.dtype)
            if new_map is not None
            else np.empty(capacity, self.dtype)
        )
        if keep:
            self.array[:keep] = old[:keep]
        self._map = new_map  # the old memory goes with its last view

    def reserve(self, needed, used):
        """Room for at least ``needed`` entries, keeping the first ``used``."""
        if needed > len(self.array):
            self._allocate(max(needed, 2 * len(self.array)), used)

    def finish(self, n):
        """The first n entries as an array of exactly that length (the rest released)."""
        if n == len(self.array):
            out = self.array
        elif self._map is not None and _RESIZABLE and n > 0:
            self.array = None
            try:
                self._map.resize(n * self.dtype.itemsize)
                out = np.frombuffer(self._map, self.dtype)
            except (SystemError, OSError, ValueError, BufferError):
                out = np.frombuffer(self._map, self.dtype)[:n].copy()
        else:
            out = self.array[:n].copy()
        self.array = self._map = None
        return out

    def astype(self, dtype, used):
        """The same first ``used`` entries converted to ``dtype`` (e.g. wider indices)."""
        widened = _Column(dtype, len(self.array))
        widened.array[:used] = self.array[:used]
        return widened


def _anonymous_map(nbytes):
    if not _RESIZABLE:
        return None
    return mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)


_RESIZABLE = (
    hasattr(mmap, "MAP_PRIVATE")
    and hasattr(mmap, "MAP_ANONYMOUS")
    and sys.platform.startswith("linux")
)


# ---------------------------------------------------------------------------------------
# Reading.

BLOCK_SIZE = 4 << 20  # bytes of text parsed at a time: the memory beside the matrix
# First capacities (they double as needed): examples, non-zeros, examples of one block.
_INITIAL_ROWS = 1 << 16
_INITIAL_NNZ = 1 << 20
_INITIAL_BLOCK_ROWS = 1 << 12


def read_svmlight(
    source,
    *,
    n_features=None,
    zero_based=False,
    keep_comments=False,
    allow_empty=False,
    block_size=BLOCK_SIZE,
) -> Dataset:
    """Read an SVMlight/LIBSVM file into a :class:`Dataset`.

    Parameters
    ----------
    source : path or ``"-"`` for standard input; gzip, bzip2 and xz data are
        decompressed (recognised by their first bytes, not by the name).
    n_features : width of X; an index at or beyond it is an error (as scikit-learn).
        Default: the highest index in the file.
    zero_based : indices start at 0 instead of SVMlight's 1.
    keep_comments : keep the text after ``#`` of every example line.
    allow_empty : return an empty dataset instead of failing when the file holds no
        example.
    block_size : bytes of text read and parsed at a time. The text is never held whole:
        memory is the arrays built plus one block.

    Raises :class:`~cpsvm.errors.InputError` naming file and line on malformed input.
    """
    with InputStream(source) as f:
        if f.size is not None:  # a small file needs no buffer larger than itself
            block_size = min(block_size, f.size + 1)
        return _parse_stream(
            f.readinto,
            f.name,
            first_line=1,
            n_features=n_features,
            zero_based=zero_based,
            keep_comments=keep_comments,
            allow_empty=allow_empty,
            block_size=block_size,
        )


def parse_svmlight_bytes(
    raw: bytes,
    name: str,
    *,
    first_line=1,
    n_features=None,
    zero_based=False,
    keep_comments=False,
    allow_empty=False,
    block_size=BLOCK_SIZE,
) -> Dataset:
    """Parse SVMlight text already in memory; ``first_line`` numbers its first line."""
    return _parse_stream(
        io.BytesIO(raw).readinto,
        name,
        first_line=first_line,
        n_features=n_features,
        zero_based=zero_based,
        keep_comments=keep_comments,
        allow_empty=allow_empty,
        block_size=min(block_size, len(raw) + 1),
    )


class _Extras:
    """qid, sid and cost: built only once a line has carried the token."""

    DEFAULTS = ((1, "qid", np.int64, 0), (2, "sid", np.int64, 0), (4, "cost", np.float64, 1.0))

    def __init__(self):
        self.columns = {}

    def add_block(self, seen, row0, row, scratch):
        for bit, key, dtype, default in self.DEFAULTS:
            col = self.columns.get(key)
            if col is None:
                if not seen & bit:
                    continue
                col = self.columns[key] = _Column(dtype, max(2 * row, 1024))
                col.array[:row0] = default
            col.reserve(row, row0)
            col.array[row0:row] = scratch[key][: row - row0]

    def finish(self, n_rows):
        return {key: col.finish(n_rows) for key, col in self.columns.items()}


def _parse_stream(
    readinto, name, *, first_line, n_features, zero_based, keep_comments, allow_empty, block_size
) -> Dataset:
    zero_based = bool(zero_based)
    indptr = _Column(np.int64, _INITIAL_ROWS + 1)
    y = _Column(np.float64, _INITIAL_ROWS)
    line_no = _Column(np.int64, _INITIAL_ROWS)
    indices = _Column(np.int32, _INITIAL_NNZ)
    data = _Column(np.float64, _INITIAL_NNZ)
    scratch = {}
    extras = _Extras()
    comments = [] if keep_comments else None
    row = nnz = 0
    line = first_line
    block_rows = _INITIAL_BLOCK_ROWS

    def new_scratch(size):
        scratch.update(
            qid=np.empty(size, np.int64),
            sid=np.empty(size, np.int64),
            cost=np.empty(size, np.float64),
            comment_start=np.empty(size, np.int64),
            comment_end=np.empty(size, np.int64),
        )

    new_scratch(block_rows)

    for block in _blocks(readinto, block_size):
        row0 = row
        pos = 0
        block_seen = 0
        while True:
            rows_cap = min(len(y.array), len(line_no.array), len(indptr.array) - 1)
            status, pos, line, row, nnz, seen, err_pos, slow, n_slow = _parse_block(
                block,
                pos,
                line,
                zero_based,
                row,
                nnz,
                row0,
                indptr.array,
                indices.array,
                data.array,
                y.array[:rows_cap],
                line_no.array,
                scratch["qid"],
                scratch["sid"],
                scratch["cost"],
                scratch["comment_start"],
                scratch["comment_end"],
            )
            block_seen |= seen
            if n_slow:
                _convert_slow(
                    block,
                    slow[:n_slow],
                    name,
                    row0,
                    data.array,
                    y.array,
                    scratch["cost"],
                    indptr.array,
                    line_no.array,
                    row,
                )
            if status == 0:
                break
            if status == _NEED_ROWS:
                grow_to = 2 * len(y.array)
                for col in (y, line_no):
                    col.reserve(grow_to, row)
                indptr.reserve(grow_to + 1, row + 1)
            elif status == _NEED_NNZ:
                for col in (indices, data):
                    col.reserve(2 * len(col.array), nnz)
            elif status == _NEED_BLOCK_ROWS:
                old = {k: v[: row - row0] for k, v in scratch.items()}
                block_rows *= 2
                new_scratch(block_rows)
                for k, v in old.items():
                    scratch[k][: len(v)] = v
                del old
            elif status == _NEED_WIDE_INDICES:
                indices = indices.astype(np.int64, nnz)
            else:
                raise InputError(
                    _MESSAGES[status].format(tok=_token_at(block, err_pos)), source=name, line=line
                )
        extras.add_block(block_seen, row0, row, scratch)
        if keep_comments:
            starts, ends = scratch["comment_start"], scratch["comment_end"]
            for b in range(row - row0):
                s = starts[b]
                comments.append(
                    block[s : ends[b]].tobytes().decode("utf-8", "replace").strip()
                    if s >= 0
                    else ""
                )
    if row == 0 and not allow_empty:
        raise InputError("expected at least one example, found none", source=name)

    line_numbers = line_no.finish(row)
    indptr = indptr.finish(row + 1)
    indices = indices.finish(nnz)
    data = data.finish(nnz)
    y = y.finish(row)
    found = extras.finish(row)
    width = int(indices.max()) + 1 if nnz else 0
    if n_features is not None:
        if width > n_features:
            where = int(np.searchsorted(indptr, int(np.argmax(indices)), "right")) - 1
            raise InputError(
                f"expected feature indices below the given dimension "
                f"{n_features}, found {width - (1 if zero_based else 0)}",
                source=name,
                line=int(line_numbers[where]),
            )
        width = n_features
    if nnz <= _INT32_MAX and indices.dtype == np.int32:
        indptr = indptr.astype(np.int32)
    X = sp.csr_matrix((data, indices, indptr), shape=(row, width), copy=False)
    X.has_canonical_format = True  # checked while parsing; spares scipy a pass to find out
    return Dataset(
        X=X,
        y=y,
        qid=found.get("qid"),
        comments=comments,
        cost=found.get("cost"),
        sid=found.get("sid"),
        source=name,
        line_numbers=line_numbers,
    )


# Numbers converted together by _convert_slow: bounds its (numbers x longest) scratch.
_SLOW_CHUNK = 1 << 16


def _convert_slow(block, slow, name, row0, data, y, cost, indptr, line_no, n_rows):
    """Numbers outside the parser's exact fast path (such as the 17 digits of a weight
    written by ``repr``), converted as numpy converts text: correctly rounded, as
    Python's ``float`` and strtod. A chunk at a time: each number's bytes gathered into
    a fixed-width string array, converted by one cast (3x faster than a float() per
    number on a model line of 300k weights)."""
    targets = {_SLOW_DATA: data, _SLOW_LABEL: y, _SLOW_COST: cost}
    block = np.asarray(block, dtype=np.uint8)
    for lo in range(0, len(slow), _SLOW_CHUNK):
        part = slow[lo : lo + _SLOW_CHUNK]
        kinds, slots, starts = part[:, 0], part[:, 1], part[:, 2]
        lengths = part[:, 3] - starts
        columns = np.arange(int(lengths.max()))
        chars = block[np.minimum(starts[:, None] + columns, len(block) - 1)]
        chars[columns[None, :] >= lengths[:, None]] = 0  # NULs end a numpy bytes string
        values = chars.view(f"S{len(columns)}").ravel().astype(np.float64)
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):  # e.g. 1e999: well formed but overflows
            kind, slot, start, end = (int(v) for v in part[bad[0]])
            if kind == _SLOW_DATA:
                row = int(np.searchsorted(indptr[: n_rows + 1], slot, "right")) - 1
            else:
                row = slot + row0 if kind == _SLOW_COST else slot
            raise InputError(
                f"expected a finite number, got {_shown(block[start:end].tobytes())}",
                source=name,
                line=int(line_no[row]),
            )
        for kind in np.unique(kinds):
            mine = kinds == kind
            targets[int(kind)][slots[mine]] = values[mine]


def read_sequences(
    source, *, n_features=None, zero_based=False, for_training=True, block_size=BLOCK_SIZE
) -> SequenceDataset:
    """Read an SVM-hmm file: one token a line, ``<tag> qid:<sentence> <index>:<value> ...
    # token``, the tokens of a sentence on consecutive lines; the text after ``#`` is
    kept (``comments``). The checks (qid on every line, sentences not split, integer tags
    >= 1, >= 0 when not ``for_training``) are :meth:`SequenceDataset.from_dataset`'s.
    """
    ds = read_svmlight(
        source,
        n_features=n_features,
        zero_based=zero_based,
        keep_comments=True,
        block_size=block_size,
    )
    return SequenceDataset.from_dataset(ds, for_training=for_training)


def format_example(indices, values, zero_based=False) -> str:
    """``i:v`` pairs of one sparse row, values written so that reading them back is exact."""
    return format_rows([0, len(indices)], indices, values, zero_based)[0]


def format_rows(indptr, indices, values, zero_based=False) -> list:
    """The ``i:v`` pairs of every row of a CSR matrix (``indptr``, ``indices``,
    ``values``), one string a row, as :func:`format_example` writes them: formatted in
    one pass over all rows (a model's support vectors formatted a row at a time spent
    most of the time in per-row set-up)."""
    offset = 0 if zero_based else 1
    values = np.asarray(values, dtype=np.float64).ravel().tolist()
    keys = (np.asarray(indices, dtype=np.int64).ravel() + offset).tolist()
    # repr: the shortest exact text. One f-string per pair was 2x faster than a repr per
    # distinct value and a lookup (1M weights, distinct or rounded to 0.01).
    pairs = [f"{key}:{value!r}" for key, value in zip(keys, values)]
    bounds = np.asarray(indptr, dtype=np.int64).tolist()
    return [" ".join(pairs[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]


def _label_text(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 2**53 else repr(float(v))


def write_svmlight(path, X, y, *, qid=None, comments=None, zero_based=False):
    """Write rows of X with targets y (and optional qid, comments) atomically."""
    X = sp.csr_matrix(X)
    X.sort_indices()
    with atomic_output(path) as out:
        for i in range(X.shape[0]):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            parts = [_label_text(y[i])]
            if qid is not None:
                parts.append(f"qid:{int(qid[i])}")
            features = format_example(X.indices[lo:hi], X.data[lo:hi], zero_based)
            if features:
                parts.append(features)
            if comments is not None and comments[i]:
                parts.append(f"# {comments[i]}")
            out.write(" ".join(parts) + "\n")


def write_sequences(path, seqs: SequenceDataset, *, zero_based=False):
    """Write a :class:`SequenceDataset` in SVM-hmm format."""
    qid = np.repeat(seqs.qid, np.diff(seqs.starts))
    write_svmlight(path, seqs.X, seqs.tags, qid=qid, comments=seqs.comments, zero_based=zero_based)
