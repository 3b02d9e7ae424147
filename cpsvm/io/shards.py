"""Shards of a training set for the workers of a cluster (``--scheduler``).

A shard is a byte range of one SVMlight file, widened to whole lines (a range starts at
the first line that begins inside it and ends where the next range's first line
begins, so every line belongs to exactly one shard), or one whole file of a glob such
as ``'part-*.svm'`` (compressed files included: they cannot be cut, so each is one
shard). A worker reads its own shard with the numba reader of :mod:`.svmlight`; the
process that plans the shards only lists the files and their sizes.

Line numbers: a byte range does not know how many lines precede it. Its rows carry
line numbers counted from the range's first line, and :func:`global_line` turns one
into the file's by counting the newlines before the range — done only when a message
needs it (a parse error, a bad label), never on the normal path.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

from ..errors import InputError
from .streams import InputStream

_SCAN = 1 << 16  # bytes read at a time when looking for a line end


@dataclass(frozen=True)
class ShardSpec:
    """``path`` whole (``end`` None) or its bytes [start, end) widened to whole lines."""

    path: str
    start: int = 0
    end: int | None = None

    @property
    def whole(self) -> bool:
        return self.end is None


def is_pattern(source: str) -> bool:
    return any(c in source for c in "*?[")


def plan_shards(source: str, parts: int) -> list[ShardSpec]:
    """The shards of ``source``: every file a glob matches (sorted by name), or ``parts``
    byte ranges of one uncompressed file (one shard if it is compressed or small)."""
    if is_pattern(source):
        paths = sorted(p for p in glob.glob(source) if os.path.isfile(p))
        if not paths:
            raise InputError("no file matches this pattern", source=source)
        return [ShardSpec(p) for p in paths]
    with InputStream(source) as f:  # a missing or unreadable file fails here
        size = f.size if f.compression is None else None
    if size is None or parts <= 1 or size < parts:
        return [ShardSpec(source)]
    cuts = [size * k // parts for k in range(parts + 1)]
    return [ShardSpec(source, a, b) for a, b in zip(cuts, cuts[1:])]


def _line_start(f, pos: int, size: int) -> int:
    """The first position >= pos that starts a line (size if none)."""
    if pos <= 0:
        return 0
    if pos >= size:
        return size
    f.seek(pos - 1)
    at = pos - 1
    while True:
        chunk = f.read(_SCAN)
        if not chunk:
            return size
        k = chunk.find(b"\n")
        if k >= 0:
            return at + k + 1
        at += len(chunk)


class _Range:
    """readinto over bytes [begin, stop) of an open file."""

    def __init__(self, f, begin, stop):
        self.f, self.left = f, stop - begin
        f.seek(begin)

    def readinto(self, b):
        if self.left <= 0:
            return 0
        view = memoryview(b)[: min(len(b), self.left)]
        n = self.f.readinto(view) or 0
        self.left -= n
        return n


def _lines_before(path: str, pos: int) -> int:
    count = 0
    with open(path, "rb") as f:
        while pos > 0:
            chunk = f.read(min(_SCAN * 16, pos))
            if not chunk:
                break
            count += chunk.count(b"\n")
            pos -= len(chunk)
    return count


def _range(spec: ShardSpec):
    size = os.path.getsize(spec.path)
    with open(spec.path, "rb") as f:
        return _line_start(f, spec.start, size), _line_start(f, spec.end, size)


def global_line(spec: ShardSpec, line):
    """The file's line number of the shard's line ``line`` (counted from its first)."""
    if line is None or spec.whole:
        return line
    return line + _lines_before(spec.path, _range(spec)[0])


def read_shard(spec: ShardSpec):
    """The shard's examples as a Dataset (maybe empty); errors name the file and its
    line. Byte ranges number their rows' lines from the range's first line (see
    :func:`global_line`)."""
    from .svmlight import BLOCK_SIZE, _parse_stream, read_svmlight

    if spec.whole:
        return read_svmlight(spec.path, allow_empty=True)
    try:
        begin, stop = _range(spec)
        with open(spec.path, "rb") as f:
            try:
                return _parse_stream(
                    _Range(f, begin, stop).readinto,
                    spec.path,
                    first_line=1,
                    n_features=None,
                    zero_based=False,
                    keep_comments=False,
                    allow_empty=True,
                    block_size=min(BLOCK_SIZE, stop - begin + 1),
                )
            except InputError as e:
                if e.line is None:
                    raise
                message = str(e)[len(f"{e.source}:{e.line}: ") :]
                raise InputError(
                    message, source=e.source, line=e.line + _lines_before(spec.path, begin)
                ) from None
    except FileNotFoundError:
        raise InputError("no such file", source=spec.path) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", source=spec.path) from None
