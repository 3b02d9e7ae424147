"""SVMlight / LIBSVM sparse text format: a numba byte parser and a writer.

Line grammar (SVMlight V6): ``<target> [qid:<n>] [sid:<n>] [cost:<f>] <index>:<value> ...
[# comment]``, indices strictly increasing and 1-based (0-based on request); blank lines
and lines starting with ``#`` are skipped. The SVM-hmm sequence format is the same with
one token per line, ``qid`` naming the sequence.

The whole file is read into one byte buffer and parsed in a single compiled pass into
preallocated CSR arrays, so memory is the file plus the arrays and no Python object is
made per line or token. Numbers with more digits than the exact fast path covers are
handed back by position and converted with Python's ``float`` (correctly rounded, as
``strtod``), so values equal what scikit-learn's loader returns bit for bit.
"""

from __future__ import annotations

import gzip
import os
import sys

import numpy as np
import scipy.sparse as sp
from numba import njit

from ..data import Dataset, SequenceDataset
from ..errors import InputError
from .atomic import atomic_output

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
_NEED_WIDE_INDICES = 12

# Kinds of slow-path numbers: where the exactly converted value goes.
_SLOW_DATA = 0
_SLOW_LABEL = 1
_SLOW_COST = 2

# Powers of ten that are exact in float64 (Clinger's fast path).
_POW10 = np.array([10.0 ** k for k in range(23)])
_FAST_MANTISSA_MAX = 2 ** 53
_INT64_MAX = 2 ** 63 - 1
_INT32_MAX = 2 ** 31 - 1

_SPACE, _TAB, _CR, _NL, _HASH, _COLON = 32, 9, 13, 10, 35, 58


@njit(cache=True)
def _is_blank(c):
    return c == _SPACE or c == _TAB or c == _CR or c == 11 or c == 12


@njit(cache=True)
def _is_token_end(c):
    return c == _SPACE or c == _TAB or c == _CR or c == _NL or c == _HASH or c == 11 or c == 12


@njit(cache=True)
def _count_capacity(buf):
    """Upper bounds: lines (newlines + 1) and index:value pairs (colons)."""
    lines = 1
    colons = 0
    for c in buf:
        if c == _NL:
            lines += 1
        elif c == _COLON:
            colons += 1
    return lines, colons


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
        if word_len == 3 and _lower(buf[i]) == 110 and _lower(buf[i + 1]) == 97 \
                and _lower(buf[i + 2]) == 110:
            return 0.0, 3
        if (word_len == 3 or word_len == 8) and _lower(buf[i]) == 105 \
                and _lower(buf[i + 1]) == 110 and _lower(buf[i + 2]) == 102:
            return 0.0, 3
        return 0.0, 2
    mantissa = np.uint64(0)
    n_sig = 0          # significant digits accumulated in mantissa
    dropped = 0        # significant digits beyond what uint64 holds
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
    return n == 4 and buf[start] == a and buf[start + 1] == b and buf[start + 2] == c \
        and buf[start + 3] == d


@njit(cache=True)
def _record_slow(slow, n_slow, kind, slot, start, end):
    """Remember a number for exact conversion later; ``slow`` rows: kind, slot, start, end."""
    if n_slow == slow.shape[0]:
        grown = np.empty((2 * slow.shape[0], 4), np.int64)
        grown[:n_slow] = slow
        slow = grown
    slow[n_slow, 0] = kind
    slow[n_slow, 1] = slot
    slow[n_slow, 2] = start
    slow[n_slow, 3] = end
    return slow, n_slow + 1


@njit(cache=True)
def _parse_buffer(buf, zero_based, first_line, indptr, indices, data, y, qid, sid, cost,
                  comment_start, comment_end, line_no):
    """Parse the whole buffer into the preallocated arrays.

    Returns (status, n_rows, nnz, seen, err_line, err_pos, slow, n_slow): ``seen`` has
    bit 1 for qid, 2 for sid, 4 for cost tokens; ``slow`` the numbers to convert exactly.
    """
    n = len(buf)
    index_limit = np.iinfo(indices.dtype).max
    slow = np.empty((16, 4), np.int64)
    n_slow = 0
    pos = 0
    line = first_line
    row = 0
    nnz = 0
    seen = 0
    status = 0
    err_pos = 0
    indptr[0] = 0
    while pos < n and status == 0:
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
        y[row] = value
        qid[row] = 0
        sid[row] = 0
        cost[row] = 1.0
        comment_start[row] = -1
        comment_end[row] = -1
        line_no[row] = line
        pos = tok_end
        prev_index = -1
        while True:
            while pos < n and _is_blank(buf[pos]):
                pos += 1
            if pos >= n or buf[pos] == _NL:
                break
            if buf[pos] == _HASH:
                comment_start[row] = pos + 1
                while pos < n and buf[pos] != _NL:
                    pos += 1
                comment_end[row] = pos
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
                if index <= prev_index:
                    status = _ERR_ORDER
                    break
                if index > index_limit:
                    status = _NEED_WIDE_INDICES
                    break
                prev_index = index
                value, st = _parse_float(buf, colon + 1, tok_end)
                if st >= 2:
                    status = _ERR_VALUE if st == 2 else _ERR_NONFINITE
                    break
                if st == 1:
                    slow, n_slow = _record_slow(slow, n_slow, _SLOW_DATA, nnz, colon + 1,
                                                tok_end)
                indices[nnz] = index
                data[nnz] = value
                nnz += 1
            elif _key_is(buf, tok_start, colon, 113, 105, 100, 0):  # qid
                v, st = _parse_int(buf, colon + 1, tok_end, True)
                if st != 0:
                    status = _ERR_QID
                    break
                qid[row] = v
                seen |= 1
            elif _key_is(buf, tok_start, colon, 115, 105, 100, 0):  # sid
                v, st = _parse_int(buf, colon + 1, tok_end, True)
                if st != 0:
                    status = _ERR_SID
                    break
                sid[row] = v
                seen |= 2
            elif _key_is(buf, tok_start, colon, 99, 111, 115, 116):  # cost
                value, st = _parse_float(buf, colon + 1, tok_end)
                if st >= 2:
                    status = _ERR_COST
                    break
                if st == 1:
                    slow, n_slow = _record_slow(slow, n_slow, _SLOW_COST, row, colon + 1,
                                                tok_end)
                cost[row] = value
                seen |= 4
            else:
                status = _ERR_TOKEN
                break
        if status == 0:
            row += 1
            indptr[row] = nnz
    return status, row, nnz, seen, line, err_pos, slow, n_slow


_MESSAGES = {
    _ERR_LABEL: "expected a numeric target at the start of the line, got {tok!r}",
    _ERR_LABEL_NONFINITE: "expected a finite target, got {tok!r}",
    _ERR_TOKEN: "expected <index>:<value> (or qid:/sid:/cost:), got {tok!r}",
    _ERR_VALUE: "expected a number after ':' in {tok!r}",
    _ERR_NONFINITE: "expected a finite feature value, got {tok!r}",
    _ERR_INDEX0: "expected feature indices >= 1 (1-based file; use the zero-based option "
                 "for 0-based data), got {tok!r}",
    _ERR_ORDER: "expected strictly increasing feature indices, got {tok!r} after a larger "
                "or equal index",
    _ERR_QID: "expected an integer qid, got {tok!r}",
    _ERR_BIGINDEX: "expected a feature index below 2^63, got {tok!r}",
    _ERR_SID: "expected an integer sid, got {tok!r}",
    _ERR_COST: "expected a finite number after cost:, got {tok!r}",
}


def _token_at(buf: bytes, pos: int) -> str:
    end = pos
    n = len(buf)
    while end < n and buf[end] not in b" \t\r\n#\x0b\x0c":
        end += 1
    return bytes(buf[pos:end]).decode("utf-8", "replace")


def source_name(source) -> str:
    return "<stdin>" if source in ("-", None) else os.fspath(source)


def read_bytes(source) -> bytes:
    """The whole content of ``source``: a path, ``-`` for stdin, ``.gz`` decompressed."""
    name = source_name(source)
    if source == "-":
        raw = sys.stdin.buffer.read()
    else:
        try:
            with open(source, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raise InputError("no such file", source=name) from None
        except IsADirectoryError:
            raise InputError("expected a file, got a directory", source=name) from None
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror}", source=name) from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise InputError(f"expected a valid gzip stream ({e})", source=name) from None
    return raw


def read_svmlight(source, *, n_features=None, zero_based=False, keep_comments=False,
                  allow_empty=False) -> Dataset:
    """Read an SVMlight/LIBSVM file into a :class:`Dataset`.

    Parameters
    ----------
    source : path, ``"-"`` for standard input, or a ``.gz`` file (detected by content).
    n_features : width of X; an index at or beyond it is an error (as scikit-learn).
        Default: the highest index in the file.
    zero_based : indices start at 0 instead of SVMlight's 1.
    keep_comments : keep the text after ``#`` of every example line.
    allow_empty : return an empty dataset instead of failing when the file holds no
        example.

    Raises :class:`~cpsvm.errors.InputError` naming file and line on malformed input.
    """
    return parse_svmlight_bytes(read_bytes(source), source_name(source),
                                n_features=n_features, zero_based=zero_based,
                                keep_comments=keep_comments, allow_empty=allow_empty)


def parse_svmlight_bytes(raw: bytes, name: str, *, first_line=1, n_features=None,
                         zero_based=False, keep_comments=False, allow_empty=False
                         ) -> Dataset:
    """Parse SVMlight text already in memory; ``first_line`` numbers its first line."""
    buf = np.frombuffer(raw, dtype=np.uint8)
    rows_cap, nnz_cap = _count_capacity(buf)
    for index_dtype in (np.int32, np.int64):
        indptr = np.empty(rows_cap + 1, np.int64)
        indices = np.empty(nnz_cap, index_dtype)
        data = np.empty(nnz_cap, np.float64)
        y = np.empty(rows_cap, np.float64)
        qid = np.empty(rows_cap, np.int64)
        sid = np.empty(rows_cap, np.int64)
        cost = np.empty(rows_cap, np.float64)
        comment_start = np.empty(rows_cap, np.int64)
        comment_end = np.empty(rows_cap, np.int64)
        line_no = np.empty(rows_cap, np.int64)
        status, n_rows, nnz, seen, err_line, err_pos, slow, n_slow = _parse_buffer(
            buf, bool(zero_based), first_line, indptr, indices, data, y, qid, sid, cost,
            comment_start, comment_end, line_no)
        if status != _NEED_WIDE_INDICES:
            break
    if status != 0:
        raise InputError(_MESSAGES[status].format(tok=_token_at(buf, err_pos)),
                         source=name, line=err_line)
    if n_rows == 0 and not allow_empty:
        raise InputError("expected at least one example, found none", source=name)

    raw = buf.tobytes() if n_slow else None
    targets = {_SLOW_DATA: data, _SLOW_LABEL: y, _SLOW_COST: cost}
    for kind, slot, start, end in slow[:n_slow]:
        value = float(raw[start:end])
        if not np.isfinite(value):  # e.g. 1e999: well formed but overflows
            row = slot if kind != _SLOW_DATA else \
                np.searchsorted(indptr[:n_rows + 1], slot, "right") - 1
            raise InputError(f"expected a finite number, got {raw[start:end].decode()!r}",
                             source=name, line=int(line_no[row]))
        targets[int(kind)][slot] = value

    indices = _trim(indices, nnz)
    data = _trim(data, nnz)
    width = int(indices.max()) + 1 if nnz else 0
    if n_features is not None:
        if width > n_features:
            row = int(np.searchsorted(indptr[:n_rows + 1], int(np.argmax(indices)), "right")) - 1
            raise InputError(f"expected feature indices below the given dimension "
                             f"{n_features}, found {width - (1 if zero_based else 0)}",
                             source=name, line=int(line_no[row]))
        width = n_features
    indptr = indptr[:n_rows + 1]
    if nnz <= _INT32_MAX and indices.dtype == np.int32:
        indptr = indptr.astype(np.int32)
    X = sp.csr_matrix((data, indices, indptr), shape=(n_rows, width), copy=False)
    X.has_canonical_format = True   # checked while parsing; spares scipy a pass to find out
    comments = None
    if keep_comments:
        raw = buf.tobytes()
        comments = [raw[s:e].decode("utf-8", "replace").strip() if s >= 0 else ""
                    for s, e in zip(comment_start[:n_rows], comment_end[:n_rows])]
    return Dataset(
        X=X,
        y=_trim(y, n_rows),
        qid=_trim(qid, n_rows) if seen & 1 else None,
        comments=comments,
        cost=_trim(cost, n_rows) if seen & 4 else None,
        sid=_trim(sid, n_rows) if seen & 2 else None,
        source=name,
        line_numbers=_trim(line_no, n_rows),
    )


def _trim(a, n):
    """The first n entries, copied when that frees most of a larger buffer."""
    return a if len(a) == n else a[:n].copy()


def read_sequences(source, *, n_features=None, zero_based=False, for_training=True
                   ) -> SequenceDataset:
    """Read an SVM-hmm file: one token a line, ``qid`` naming its sentence.

    Tags must be integers >= 1 (>= 0 in test files, where 0 means unknown); the tokens
    of a sentence are contiguous and sentence ids non-decreasing, as svm_hmm requires.
    """
    ds = read_svmlight(source, n_features=n_features, zero_based=zero_based,
                       keep_comments=True)
    name = ds.source
    if ds.qid is None:
        raise InputError("expected qid:<sentence> on every token line (SVM-hmm format)",
                         source=name, line=ds.line_of(0))
    lowest = 1 if for_training else 0
    bad = np.flatnonzero((ds.y != np.round(ds.y)) | (ds.y < lowest))
    if len(bad):
        i = int(bad[0])
        raise InputError(f"expected an integer tag >= {lowest}, got {ds.y[i]:g}",
                         source=name, line=ds.line_of(i))
    steps = np.diff(ds.qid)
    if np.any(steps < 0):
        i = int(np.flatnonzero(steps < 0)[0]) + 1
        raise InputError("expected non-decreasing qid (tokens of a sentence contiguous, "
                         f"sentences in increasing order), got qid:{ds.qid[i]} after "
                         f"qid:{ds.qid[i - 1]}", source=name, line=ds.line_of(i))
    starts = np.concatenate(([0], np.flatnonzero(steps) + 1, [ds.n_examples])).astype(np.int64)
    return SequenceDataset(X=ds.X, tags=ds.y.astype(np.int64), starts=starts,
                           qid=ds.qid[starts[:-1]], comments=ds.comments, source=name)


def format_example(indices, values, zero_based=False) -> str:
    """``i:v`` pairs of one sparse row, values written so that reading them back is exact."""
    offset = 0 if zero_based else 1
    return " ".join(f"{int(j) + offset}:{float(v)!r}" for j, v in zip(indices, values))


def _label_text(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 2 ** 53 else repr(float(v))


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
    write_svmlight(path, seqs.X, seqs.tags, qid=qid, comments=seqs.comments,
                   zero_based=zero_based)
