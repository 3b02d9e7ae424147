"""SVMlight / LIBSVM sparse text format: the reader and the writers.

Line grammar (SVMlight V6): ``<target> [qid:<n>] [sid:<n>] [cost:<f>] <index>:<value> ...
[# comment]``, indices strictly increasing and 1-based (0-based on request); blank lines
and lines starting with ``#`` are skipped. The SVM-hmm sequence format is the same with
one token per line, ``qid`` naming the sequence.

The text is read in blocks of a few megabytes cut at line ends, each parsed by one
compiled pass (:func:`cpsvm.io.svmlight_parser.parse_block`) into arrays of its own, on
as many threads as the thread count (:mod:`cpsvm.threads`), and appended in order to the
CSR arrays, which grow in place (:class:`cpsvm.io.growing_array.GrowingArray`): memory
is the matrix plus the blocks in flight, never the whole text beside it, and no Python
object is made per line or token. gzip, bzip2 and xz input is recognised by its magic
bytes and decompressed block by block. Numbers with more digits than the parser's exact
fast path covers are handed back by position and converted here as Python's ``float``
converts them (correctly rounded, as ``strtod``), so values equal what scikit-learn's
loader returns bit for bit.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from itertools import chain, islice

import numpy as np
import scipy.sparse as sp

from ..data import Dataset, SequenceDataset
from ..errors import InputError
from ..memory import check_fits
from ..threads import get_num_threads
from . import streams
from .atomic import atomic_output
from .float_text import format_rows
from .growing_array import GrowingArray
from .streams import InputStream, LineRefused, line_too_long, not_text
from .svmlight_parser import (
    MESSAGES,
    NEED_BLOCK_ROWS,
    NEED_NNZ,
    NEED_ROWS,
    NEED_WIDE_INDICES,
    SLOW_COST,
    SLOW_DATA,
    SLOW_LABEL,
    parse_block,
)

BLOCK_SIZE = 4 << 20  # bytes of text parsed at a time: the memory beside the matrix
# First capacities (they double as needed): examples and non-zeros of the matrix, and
# of a block's own arrays one per this many bytes of its text.
_INITIAL_ROWS = 1 << 16
_INITIAL_NNZ = 1 << 20
_TEXT_BYTES_PER_ROW = 32
_TEXT_BYTES_PER_NONZERO = 8
_INT32_MAX = 2**31 - 1  # the most non-zeros int32 indptr can count

# A line longer than LONG_LINE (bytes) is parsed in pieces of about LONG_LINE_PIECE on
# several threads (_parse_long_line).
LONG_LINE = 8 << 20
LONG_LINE_PIECE = 4 << 20
_SPACE, _TAB, _ZERO = 32, 9, 48

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


def stream_blocks(readinto, block_size):
    """Consecutive pieces of a stream, each ending just after a newline (the last one at the
    end of the stream), each in a buffer of its own (they are parsed on several threads).
    A line longer than the buffer grows it, up to LINE_LIMIT: a longer line, or a NUL byte
    in a line longer than the buffer (binary data: /dev/zero), raises
    :class:`~cpsvm.io.streams.LineRefused` with no line number (the line is the first of
    the text not yet yielded; :func:`parse_svmlight_stream` numbers it)."""
    size = max(int(block_size), 1)
    buf = np.empty(size, np.uint8)
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
            if len(buf) > streams.LINE_LIMIT:
                raise line_too_long()
            if not buf[:filled].all():
                raise not_text()
            # (from half the limit straight past it: never a copy of the whole limit)
            grown_size = 2 * len(buf)
            if grown_size >= streams.LINE_LIMIT:
                grown_size = streams.LINE_LIMIT + 1
            grown = np.empty(grown_size, np.uint8)
            grown[:filled] = buf[:filled]
            buf = grown
            continue
        rest = filled - cut
        following = np.empty(max(size, rest), np.uint8)
        following[:rest] = buf[cut:filled]
        yield buf[:cut]
        buf, filled = following, rest


def _memory_blocks(raw: bytes, start: int, block_size: int):
    """raw[start:] in pieces as :func:`stream_blocks` cuts a stream, each copied once (into a
    writable array: the parser's one compiled type), none grown to fit a long line."""
    pos, n = start, len(raw)
    while pos < n:
        end = min(pos + block_size, n)
        if end < n:
            cut = raw.rfind(b"\n", pos, end)
            end = cut + 1 if cut >= 0 else raw.find(b"\n", end) + 1 or n
        yield np.frombuffer(raw, np.uint8, end - pos, pos).copy()
        pos = end


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
        memory is the arrays built plus a block a thread and the one being read.

    Raises :class:`~cpsvm.errors.InputError` naming file and line on malformed input.
    """
    with InputStream(source) as f:
        if f.size is not None:  # a small file needs no buffer larger than itself
            block_size = min(block_size, f.size + 1)
        return parse_svmlight_stream(
            stream_blocks(f.readinto, block_size),
            f.name,
            first_line=1,
            n_features=n_features,
            zero_based=zero_based,
            keep_comments=keep_comments,
            allow_empty=allow_empty,
        )


def parse_svmlight_bytes(
    raw: bytes,
    name: str,
    *,
    start=0,
    first_line=1,
    n_features=None,
    zero_based=False,
    keep_comments=False,
    allow_empty=False,
    block_size=BLOCK_SIZE,
) -> Dataset:
    """Parse SVMlight text already in memory, ``raw[start:]`` (a model's support vectors
    after its header: no copy of the rest); ``first_line`` numbers its first line."""
    return parse_svmlight_stream(
        _memory_blocks(raw, start, block_size),
        name,
        first_line=first_line,
        n_features=n_features,
        zero_based=zero_based,
        keep_comments=keep_comments,
        allow_empty=allow_empty,
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
                col = self.columns[key] = GrowingArray(dtype, max(2 * row, 1024))
                col.array[:row0] = default
            col.reserve(row, row0)
            col.array[row0:row] = scratch[key][: row - row0]

    def finish(self, n_rows):
        return {key: col.finish(n_rows) for key, col in self.columns.items()}


class _ParsedBlock:
    """One block's examples in arrays of its own (rows, non-zeros and lines counted from
    0 within the block), or the error that stopped it, with its line in the block."""

    def __init__(self, keep_comments):
        self.rows = self.nnz = self.lines = self.seen = 0
        self.indptr = np.zeros(1, np.int64)
        self.indices = np.empty(0, np.int32)
        self.data = self.y = np.empty(0)
        self.line_no = np.empty(0, np.int64)
        self.scratch = {}
        self.comments = [] if keep_comments else None
        self.error = None


def _grown(array, size, used):
    out = np.empty(size, array.dtype)
    out[:used] = array[:used]
    return out


def _parse_block(block, pos, zero_based, keep_comments) -> _ParsedBlock:
    """Parse one block of whole lines into a :class:`_ParsedBlock` (on any thread: the
    compiled parser holds no lock)."""
    out = _ParsedBlock(keep_comments)
    rows_cap = len(block) // _TEXT_BYTES_PER_ROW + 1
    nnz_cap = len(block) // _TEXT_BYTES_PER_NONZERO + 1
    indptr = np.empty(rows_cap + 1, np.int64)
    y, line_no = np.empty(rows_cap), np.empty(rows_cap, np.int64)
    indices, data = np.empty(nnz_cap, np.int32), np.empty(nnz_cap)
    scratch = _new_scratch(rows_cap)
    row = nnz = line = seen = 0
    try:
        while True:
            status, pos, line, row, nnz, seen_now, err_pos, slow, n_slow = parse_block(
                block, pos, line, zero_based, row, nnz, 0, indptr, indices, data, y,
                line_no, scratch["qid"], scratch["sid"], scratch["cost"],
                scratch["comment_start"], scratch["comment_end"],
            )  # fmt: skip
            seen |= seen_now
            if n_slow:
                _convert_slow(block, slow[:n_slow], data, y, scratch["cost"], indptr, line_no, row)
            if status == 0:
                break
            if status in (NEED_ROWS, NEED_BLOCK_ROWS):
                rows_cap *= 2
                indptr = _grown(indptr, rows_cap + 1, row + 1)
                y, line_no = _grown(y, rows_cap, row), _grown(line_no, rows_cap, row)
                scratch = {k: _grown(v, rows_cap, row) for k, v in scratch.items()}
            elif status == NEED_NNZ:
                nnz_cap *= 2
                indices, data = _grown(indices, nnz_cap, nnz), _grown(data, nnz_cap, nnz)
            elif status == NEED_WIDE_INDICES:
                indices = indices.astype(np.int64)
            else:
                message = MESSAGES[status].format(tok=_token_at(block, err_pos))
                raise InputError(message, line=line)
    except InputError as error:
        out.error = error
        return out
    out.rows, out.nnz, out.lines, out.seen = row, nnz, line, seen
    out.indptr, out.indices, out.data = indptr[: row + 1], indices[:nnz], data[:nnz]
    out.y, out.line_no = y[:row], line_no[:row]
    out.scratch = {k: v[:row] for k, v in scratch.items()}
    if keep_comments:
        starts, ends = scratch["comment_start"], scratch["comment_end"]
        out.comments = [
            block[s : ends[b]].tobytes().decode("utf-8", "replace").strip() if s >= 0 else ""
            for b, s in enumerate(starts[:row].tolist())
        ]
    return out


def _parse_long_line(block, pos, zero_based, keep_comments, workers):
    """A block that is one line of many megabytes (a linear model's weights: SVMlight
    writes them as one support vector) parsed in pieces on ``workers`` threads: cut at
    blanks, every piece but the first read as a line of its own after a target of 0, the
    pieces' features joined. None when a piece does not read cleanly as part of one line
    (a line end or a comment before the last piece, an error, a qid after features,
    indices not increasing across a cut): the block is then parsed whole, which says
    what is wrong exactly as it would have."""
    text = block[pos:]
    cuts = [0]
    for target in range(LONG_LINE_PIECE, len(text) - LONG_LINE_PIECE, LONG_LINE_PIECE):
        if target <= cuts[-1]:  # its blank is the last cut's: no scan to find it again
            continue
        blank = _next_blank(text, target)
        if blank < 0:
            break
        if blank > cuts[-1]:
            cuts.append(blank)
    if len(cuts) < 2:
        return None
    cuts.append(len(text))

    def piece(start, end):
        if start == 0:
            return text[:end].copy()
        out = np.empty(end - start + 1, np.uint8)
        out[0] = _ZERO
        out[1:] = text[start:end]
        return out

    def parse(piece, _):
        return _parse_block(piece, 0, zero_based, keep_comments)

    pieces = (piece(start, end) for start, end in zip(cuts, cuts[1:]))
    parts = list(_parsed_blocks(pieces, parse, workers))
    # A piece whose line ends or whose comment starts (a comment has blanks too): the
    # rest of the line is parsed again as one piece from that piece on.
    for k, part in enumerate(parts[:-1]):
        if part.lines or (part.rows and part.scratch["comment_start"][0] >= 0):
            parts[k:] = [parse(piece(cuts[k], len(text)), k)]
            break
    last_index = -1
    for k, part in enumerate(parts):
        if part.error is not None or part.rows != 1 or (k and part.seen):
            return None
        if part.nnz:
            if part.indices[0] <= last_index:
                return None
            last_index = part.indices[part.nnz - 1]
    if parts[-1].lines > 1:
        return None
    first = parts[0]
    indices = [part.indices for part in parts]
    if len({a.dtype for a in indices}) > 1:
        indices = [a.astype(np.int64) for a in indices]
    first.indices = np.concatenate(indices)
    first.data = np.concatenate([part.data for part in parts])
    first.nnz = len(first.data)
    first.indptr = np.array([0, first.nnz], np.int64)
    first.lines = parts[-1].lines
    first.comments = parts[-1].comments
    return first


def _next_blank(text, start, window=1 << 16) -> int:
    """The position of the first space or tab in text[start:], -1 when there is none."""
    while start < len(text):
        chunk = text[start : start + window]
        found = np.flatnonzero((chunk == _SPACE) | (chunk == _TAB))
        if len(found):
            return start + int(found[0])
        start += window
    return -1


def _new_scratch(size):
    return dict(
        qid=np.empty(size, np.int64),
        sid=np.empty(size, np.int64),
        cost=np.empty(size, np.float64),
        comment_start=np.empty(size, np.int64),
        comment_end=np.empty(size, np.int64),
    )


def _parsed_blocks(blocks, parse, workers):
    """parse(block, n_block) of each block, in order, ``workers`` blocks at a time (a
    stream of one block is parsed on the calling thread)."""
    blocks = enumerate(blocks)
    head = list(islice(blocks, 2))
    if workers <= 1 or len(head) < 2:
        for n_block, block in chain(head, blocks):
            yield parse(block, n_block)
        return
    pending = deque()
    with ThreadPoolExecutor(workers) as pool:
        try:
            for n_block, block in chain(head, blocks):
                pending.append(pool.submit(parse, block, n_block))
                if len(pending) > workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def parse_svmlight_stream(
    blocks, name, *, first_line, n_features, zero_based, keep_comments, allow_empty
) -> Dataset:
    """Parse SVMlight text given as ``blocks`` of whole lines (uint8 arrays, as
    :func:`stream_blocks` cuts a stream; the options as :func:`read_svmlight`'s);
    ``name`` and ``first_line`` are what errors name (a byte range of a file, as
    :mod:`cpsvm.cluster.shards` reads, numbers its lines from its own first). Blocks
    are parsed on the thread count's threads at once, each into arrays of its own,
    and appended in order: the first error in the file is the one reported."""
    zero_based = bool(zero_based)
    indptr = GrowingArray(np.int64, _INITIAL_ROWS + 1)
    indptr.array[0] = 0
    y = GrowingArray(np.float64, _INITIAL_ROWS)
    line_no = GrowingArray(np.int64, _INITIAL_ROWS)
    indices = GrowingArray(np.int32, _INITIAL_NNZ)
    data = GrowingArray(np.float64, _INITIAL_NNZ)
    extras = _Extras()
    comments = [] if keep_comments else None
    row = nnz = 0
    line = first_line

    workers = get_num_threads()

    def parse(block, n_block):
        if isinstance(block, LineRefused):  # the first line after the blocks before it
            refused = _ParsedBlock(keep_comments)
            refused.error = InputError(block.message, line=0)
            return refused
        pos = 0 if n_block else _start_of_text(block, name, first_line)
        if workers > 1 and len(block) - pos > LONG_LINE:
            part = _parse_long_line(block, pos, zero_based, keep_comments, workers)
            if part is not None:
                return part
        return _parse_block(block, pos, zero_based, keep_comments)

    for part in _parsed_blocks(_refusal_last(blocks), parse, workers):
        if part.error is not None:
            raise InputError(part.error.message, source=name, line=line + part.error.line)
        end, end_nnz = row + part.rows, nnz + part.nnz
        indptr.reserve(end + 1, row + 1)
        indptr.array[row + 1 : end + 1] = part.indptr[1:] + nnz
        for col, values in ((y, part.y), (line_no, part.line_no + line)):
            col.reserve(end, row)
            col.array[row:end] = values
        if part.indices.dtype != indices.dtype:
            indices = indices.astype(np.int64, nnz)
        for col, values in ((indices, part.indices), (data, part.data)):
            col.reserve(end_nnz, nnz)
            col.array[nnz:end_nnz] = values
        extras.add_block(part.seen, row, end, part.scratch)
        if keep_comments:
            comments.extend(part.comments)
        row, nnz, line = end, end_nnz, line + part.lines
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
            where = _row_of(indptr, int(np.argmax(indices)))
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


def _refusal_last(blocks):
    """The blocks, then the LineRefused that ended them as a block of its own: reported
    after the errors of the lines before it, with its line number."""
    try:
        yield from blocks
    except LineRefused as refused:
        yield refused


def _start_of_text(block, name, line) -> int:
    """Where the text of a file's first block starts: after a UTF-8 byte-order mark (an
    editor's; SVMlight files are ASCII, UTF-8 in comments); a UTF-16 file is refused with
    the conversion that fixes it, instead of an unreadable first target."""
    start = bytes(block[:3])
    if start.startswith(b"\xef\xbb\xbf"):
        return 3
    if start.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(
            "expected an ASCII or UTF-8 SVMlight file, the file is UTF-16 (convert it: "
            "iconv -f UTF-16 -t UTF-8)",
            source=name,
            line=line,
        )
    return 0


# Feature values, targets and cost: factors beyond this magnitude are refused by the
# commands (read_examples): their squares and sums (|x|², C·loss, the cuts) would overflow.
VALUE_LIMIT = 1e150


def _row_of(indptr, position: int) -> int:
    """The CSR row holding stored entry ``position``."""
    return int(np.searchsorted(indptr, position, "right")) - 1


# Dense weight vectors of the file's width a learner holds at least (the weights, the
# best point, a cut, a direction): a width they cannot fit is refused before training.
WEIGHT_VECTORS = 4


def read_examples(source, *, training=True, **options) -> Dataset:
    """:func:`read_svmlight` for the commands: also refuses, with its line, a number whose
    products would overflow (beyond VALUE_LIMIT). For ``training``, a file whose largest
    feature index is far beyond its distinct features (hashed features) is renumbered to
    them (:meth:`Dataset.with_distinct_columns`), and a width whose dense weight vectors
    would still not fit in memory is refused."""
    dataset = read_svmlight(source, **options)
    check_magnitudes(dataset)
    if training:
        dataset = check_width(dataset.with_distinct_columns())
    return dataset


def check_width(dataset: Dataset) -> Dataset:
    """The dataset, unless the dense weight vectors of its width would not fit in memory
    (InputError naming the line of its widest feature)."""
    X = dataset.X
    if X.nnz:
        widest = int(np.argmax(X.indices))  # renumbering keeps the order of the columns
        if dataset.feature_ids is None:
            what = f"feature index {X.shape[1]} (dense weight vectors of that length)"
        else:
            what = f"{X.shape[1]} distinct features (dense weight vectors of that length)"
        check_fits(
            8.0 * WEIGHT_VECTORS * X.shape[1],
            what,
            source=dataset.source,
            line=dataset.line_of(_row_of(X.indptr, widest)),
        )
    return dataset


def check_magnitudes(dataset: Dataset):
    """InputError at the first feature value, target or cost: beyond VALUE_LIMIT."""
    X = dataset.X
    checked = [("feature value", X.data, False), ("target", dataset.y, True)]
    if dataset.cost is not None:
        checked.append(("cost:", dataset.cost, True))
    for what, values, per_row in checked:
        # min and max: no temporary array when every value is in range
        if not len(values) or -VALUE_LIMIT <= values.min() and values.max() <= VALUE_LIMIT:
            continue
        at = int(np.flatnonzero(np.abs(values) > VALUE_LIMIT)[0])
        row = at if per_row else _row_of(X.indptr, at)
        raise InputError(
            f"expected a {what} of magnitude at most {VALUE_LIMIT:g} (larger ones overflow "
            f"the products training and classifying compute), got {values[at]:g}",
            source=dataset.source,
            line=dataset.line_of(row),
        )


# Numbers converted together by _convert_slow, and the cells of its (numbers x longest)
# scratch: both bound its memory.
_SLOW_CHUNK = 1 << 16
_SLOW_CELLS = 1 << 22
# The most characters a number may have (man pages, LIMITS): no writer needs more than a
# few hundred (printf's %f of the largest double has 316); a longer token is refused
# before its conversion's scratch grows with it.
NUMBER_LIMIT = 4096


def _convert_slow(block, slow, data, y, cost, indptr, line_no, n_rows):
    """Numbers outside the parser's exact fast path (such as the 17 digits of a weight
    written by ``repr``), converted as numpy converts text: correctly rounded, as
    Python's ``float`` and strtod. A chunk at a time: each number's bytes gathered into
    a fixed-width string array, converted by one cast (3x faster than a float() per
    number on a model line of 300k weights)."""
    targets = {SLOW_DATA: data, SLOW_LABEL: y, SLOW_COST: cost}
    block = np.asarray(block, dtype=np.uint8)
    too_long = np.flatnonzero(slow[:, 3] - slow[:, 2] > NUMBER_LIMIT)
    if len(too_long):
        kind, slot, start, end = (int(v) for v in slow[too_long[0]])
        row = _row_of(indptr[: n_rows + 1], slot) if kind == SLOW_DATA else slot
        raise InputError(
            f"expected a number of at most {NUMBER_LIMIT} characters (the limit on a "
            f"number's length), got one of {end - start}: {_shown(block[start:end].tobytes())}",
            line=int(line_no[row]),
        )
    lo = 0
    while lo < len(slow):
        part = slow[lo : lo + _SLOW_CHUNK]
        width = int((part[:, 3] - part[:, 2]).max())
        part = part[: max(1, _SLOW_CELLS // width)]
        lo += len(part)
        kinds, slots, starts = part[:, 0], part[:, 1], part[:, 2]
        lengths = part[:, 3] - starts
        columns = np.arange(int(lengths.max()))
        chars = block[np.minimum(starts[:, None] + columns, len(block) - 1)]
        chars[columns[None, :] >= lengths[:, None]] = 0  # NULs end a numpy bytes string
        values = chars.view(f"S{len(columns)}").ravel().astype(np.float64)
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):  # e.g. 1e999: well formed but overflows
            kind, slot, start, end = (int(v) for v in part[bad[0]])
            row = _row_of(indptr[: n_rows + 1], slot) if kind == SLOW_DATA else slot
            raise InputError(
                f"expected a finite number, got {_shown(block[start:end].tobytes())}",
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


def _label_text(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 2**53 else repr(float(v))


def write_svmlight(path, X, y, *, qid=None, comments=None, zero_based=False):
    """Write rows of X with targets y (and optional qid, comments) atomically."""
    X = sp.csr_matrix(X)
    X.sort_indices()
    rows = format_rows(X.indptr, X.indices, X.data, zero_based)
    with atomic_output(path) as out:
        for i, features in enumerate(rows):
            parts = [_label_text(y[i])]
            if qid is not None:
                parts.append(f"qid:{int(qid[i])}")
            if features:
                parts.append(features)
            if comments is not None and comments[i]:
                parts.append(f"# {comments[i]}")
            out.write(" ".join(parts) + "\n")


def write_sequences(path, seqs: SequenceDataset, *, zero_based=False):
    """Write a :class:`SequenceDataset` in SVM-hmm format."""
    qid = np.repeat(seqs.qid, np.diff(seqs.starts))
    write_svmlight(path, seqs.X, seqs.tags, qid=qid, comments=seqs.comments, zero_based=zero_based)
