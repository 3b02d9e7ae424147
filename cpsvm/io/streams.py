"""Input streams: files, standard input, compressed data (recognised by magic bytes).

Plain Python, no numpy: reading a file's first line (a model's header) needs nothing more.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import sys

from ..errors import InputError

# The longest line any reader accepts, in bytes (man pages, LIMITS): far above the longest
# real line, a linear model's weights on one line (tens of megabytes for millions of
# features), and low enough that an endless line (/dev/zero, a file of one unbroken
# stream) is refused before it takes the machine's memory.
LINE_LIMIT = 1 << 30


def line_limit_text() -> str:
    return f"{LINE_LIMIT >> 30} GiB" if LINE_LIMIT % (1 << 30) == 0 else f"{LINE_LIMIT} bytes"


class LineRefused(InputError):
    """A line longer than LINE_LIMIT, or binary data (a NUL byte) where a reader found
    no line end: refused before its bytes fill the memory. ``line`` is that of the
    refused line when the reader counts lines, None when its caller does."""


def line_too_long(source=None, line=None) -> LineRefused:
    return LineRefused(
        f"expected a line of at most {line_limit_text()} (the limit on a line's length), "
        "found a longer one",
        source=source,
        line=line,
    )


def not_text(source=None, line=None) -> LineRefused:
    return LineRefused("expected text, found a NUL byte (binary data?)", source=source, line=line)


def _gzip(f):
    import gzip
    import zlib

    return gzip.GzipFile(fileobj=f, mode="rb"), (OSError, EOFError, zlib.error)


def _bzip2(f):
    import bz2

    return bz2.BZ2File(f, "rb"), (OSError, EOFError)


def _xz(f):
    import lzma

    return lzma.LZMAFile(f, "rb"), (OSError, EOFError, lzma.LZMAError)


# Magic bytes, name in messages, opener: (decompressing stream, the errors it raises on
# corrupt or truncated data). Imported when needed: most inputs are plain text.
_COMPRESSED = (
    (b"\x1f\x8b", "gzip", _gzip),
    (b"BZh", "bzip2", _bzip2),
    (b"\xfd7zXZ\x00", "xz", _xz),
)
_MAGIC_BYTES = 6


def source_name(source) -> str:
    return "<stdin>" if source in ("-", None) else os.fspath(source)


class _Prefixed(io.RawIOBase):
    """A stream whose first bytes were already read (to look at them): those, then the rest."""

    def __init__(self, prefix: bytes, stream):
        self._prefix = prefix
        self._stream = stream

    def readable(self):
        return True

    def readinto(self, b):
        if self._prefix:
            n = min(len(b), len(self._prefix))
            b[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        return self._stream.readinto(b)


class InputStream:
    """An open input: ``readinto`` fills a buffer with (decompressed) bytes, 0 at the end;
    every failure becomes an InputError naming the source. ``raw``: the source's bytes
    as an open stream (its ``readinto``; closed with this one), instead of opening
    ``source``."""

    def __init__(self, source, raw=None):
        self.name = source_name(source)
        self._owned = None
        self.compression = None
        try:
            if raw is not None:
                self._owned = raw
            elif source == "-":
                raw = sys.stdin.buffer
            else:
                raw = self._owned = open(source, "rb", buffering=0)
            head = self._read_head(raw)
            if self._owned is not None and raw.seekable():
                raw.seek(0)
                stream = raw
            else:
                stream = _Prefixed(head, raw)
        except FileNotFoundError:
            raise InputError("no such file", source=self.name) from None
        except IsADirectoryError:
            raise InputError("expected a file, got a directory", source=self.name) from None
        except OSError as e:
            self.close()
            raise InputError(f"cannot read: {e.strerror or e}", source=self.name) from None
        self._errors = (OSError,)
        self.size = None  # of the text, when known before reading it
        if self._owned is not None and stream is raw:
            with contextlib.suppress(OSError):
                st = os.fstat(raw.fileno())
                if stat.S_ISREG(st.st_mode):
                    self.size = st.st_size
        for magic, kind, opener in _COMPRESSED:
            if head.startswith(magic):
                self.compression = kind
                self.size = None
                stream, self._errors = opener(stream)
                break
        self._stream = stream

    @staticmethod
    def _read_head(raw) -> bytes:
        head = b""
        while len(head) < _MAGIC_BYTES:
            more = raw.read(_MAGIC_BYTES - len(head))
            if not more:
                break
            head += more
        return head

    def readinto(self, b) -> int:
        try:
            return self._stream.readinto(b) or 0
        except self._errors as e:
            if self.compression is None:
                raise InputError(
                    f"cannot read: {getattr(e, 'strerror', None) or e}", source=self.name
                ) from None
            raise InputError(
                f"expected a valid {self.compression} stream ({e})", source=self.name
            ) from None

    def read_all(self) -> bytes:
        """The whole (decompressed) text. A regular file of known size is read in one
        call into one object (chunks joined copied a model file of 67 MB twice); other
        streams, and the rest of a file that grew, a megabyte at a time, refusing a NUL
        byte or a line longer than LINE_LIMIT (an endless device or pipe: /dev/zero)."""
        chunks = []
        if self.size is not None:
            try:
                whole = self._stream.read(self.size + 1)
            except self._errors as e:
                raise InputError(f"cannot read: {e.strerror or e}", source=self.name) from None
            if len(whole) == self.size:
                return whole
            chunks.append(whole)
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        lines = sum(chunk.count(b"\n") for chunk in chunks)
        line_length = len(chunks[0]) - chunks[0].rfind(b"\n") - 1 if chunks else 0
        while True:
            n = self.readinto(view)
            if not n:
                return b"".join(chunks)
            chunk = bytes(view[:n])
            nul = chunk.find(b"\0")
            if nul >= 0:
                raise not_text(self.name, lines + chunk.count(b"\n", 0, nul) + 1)
            last = chunk.rfind(b"\n")
            if last >= 0:
                if line_length + chunk.find(b"\n") > LINE_LIMIT:
                    raise line_too_long(self.name, lines + 1)
                lines += chunk.count(b"\n")
                line_length = n - last - 1
            else:
                line_length += n
            if line_length > LINE_LIMIT:
                raise line_too_long(self.name, lines + 1)
            chunks.append(chunk)

    def close(self):
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_bytes(source) -> bytes:
    """The whole content of ``source``: a path or ``-`` for stdin, decompressed when it is
    gzip, bzip2 or xz data (recognised by its first bytes, whatever its name)."""
    with InputStream(source) as f:
        return f.read_all()
