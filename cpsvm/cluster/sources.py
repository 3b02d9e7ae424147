"""Where a shard's bytes live, for the worker that reads them: a path on a file system the
workers mount, or an fsspec URL (``s3://``, ``gs://``, ``hdfs://``, ``http(s)://``,
``file://``, ``memory://``, ...) read through fsspec, as dask.dataframe and dask.bag read
them. Both give the same operations: list a glob, a file's size and modification stamp,
an open binary file that can seek (byte ranges of one big file), and a reader that
keeps a checksum of what it read (:class:`Fingerprint`: a shard read again after a
worker was lost must be the same bytes).

Every failure of the store is an :class:`~cpsvm.errors.InputError` that names the file
and the worker that could not read it (the command's machine may see what its workers
do not). A URL whose file system needs a package the worker lacks (s3fs, gcsfs,
pyarrow, adlfs) names the package.
"""

from __future__ import annotations

import glob
import io
import os
import re
import zlib
from dataclasses import dataclass

from ..errors import InputError

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

# The package a worker needs for a URL scheme (fsspec's own message, when it has one,
# names the package in other words).
PACKAGES = {
    "s3": "s3fs",
    "s3a": "s3fs",
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "hdfs": "pyarrow",
    "viewfs": "pyarrow",
    "abfs": "adlfs",
    "abfss": "adlfs",
    "az": "adlfs",
    "http": "aiohttp",
    "https": "aiohttp",
    "sftp": "paramiko",
}
DASK_EXTRA = "pip install 'cpsvm[dask]'"
URL_BLOCK_SIZE = 4 << 20  # bytes a URL's file fetches at a time (one range request)
# What a store's info calls the time a file last changed (local, S3, GCS, Azure; HTTP's
# headers), the first one present is the file's modification stamp.
_STAMPS = ("mtime", "LastModified", "updated", "last_modified", "Last-Modified", "ETag")


def is_url(source: str) -> bool:
    return bool(_URL.match(source))


def is_pattern(source: str) -> bool:
    return any(c in source for c in "*?[")


def worker_name() -> str:
    """'the Dask worker at ADDRESS' where a task runs ('the Dask workers' elsewhere)."""
    try:
        from distributed import get_worker

        return f"the Dask worker at {get_worker().address}"
    except (ImportError, ValueError):
        return "the Dask workers"


def _why(error: BaseException) -> str:
    if isinstance(error, FileNotFoundError):
        return "no such file there"
    if isinstance(error, IsADirectoryError):
        return "a directory there, not a file"
    if isinstance(error, PermissionError):
        return "not a readable file there"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def unreadable(source: str, error: BaseException) -> InputError:
    """The one line for a file the store would not give this worker."""
    return InputError(f"{worker_name()} cannot read it ({_why(error)})", source=source)


def file_system(url: str):
    """(fsspec file system, its path) of ``url``; InputError if this worker cannot
    read the scheme (fsspec or the scheme's package missing, an unknown scheme)."""
    scheme = _URL.match(url).group(1).lower()
    try:
        import fsspec.core
    except ImportError:
        raise InputError(
            f"{worker_name()} cannot read URLs: fsspec is not installed there ({DASK_EXTRA})",
            source=url,
        ) from None
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as e:
        package = PACKAGES.get(scheme)
        need = f"{package} is not installed there (pip install {package})" if package else e
        raise InputError(
            f"{worker_name()} cannot read {scheme}:// URLs: {need}", source=url
        ) from None
    except ValueError as e:
        if "not known" in str(e):
            raise InputError(
                f"unknown URL scheme {scheme}:// (fsspec knows no such file system)", source=url
            ) from None
        raise unreadable(url, e) from None
    except Exception as e:  # the store's own client failing to start (credentials, ...)
        raise unreadable(url, e) from None


def list_pattern(pattern: str) -> list[tuple[str, int]]:
    """(name, size) of every file the glob ``pattern`` matches, sorted by name; a URL
    pattern's names are URLs (an HTTP server's through its index pages)."""
    if not is_url(pattern):
        paths = sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
        return [(p, os.path.getsize(p)) for p in paths]
    fs, path = file_system(pattern)
    try:
        found = fs.glob(path, detail=True)
        files = [
            (fs.unstrip_protocol(name), info.get("size"))
            for name, info in found.items()
            if info.get("type", "file") == "file"
        ]
        sized = []
        for name, size in sorted(files):
            sized.append((name, size if size is not None else fs.size(name)))
        return sized
    except InputError:
        raise
    except Exception as e:
        raise unreadable(pattern, e) from None


def open_file(source: str, fs=None):
    """``source`` opened for reading bytes (seekable); errors name it and this worker."""
    try:
        if not is_url(source):
            return open(source, "rb")
        if fs is None:
            fs, path = file_system(source)
        else:
            path = fs._strip_protocol(source)
        return fs.open(path, "rb", block_size=URL_BLOCK_SIZE)
    except InputError:
        raise
    except Exception as e:
        raise unreadable(source, e) from None


def stamp(source: str, f=None) -> tuple[int, object]:
    """(size, modification stamp) of ``source`` (a path's from its open file ``f`` if
    given: the file that is read)."""
    try:
        if not is_url(source):
            st = os.fstat(f.fileno()) if f is not None else os.stat(source)
            return st.st_size, st.st_mtime_ns
        fs, path = file_system(source)
        info = fs.info(path)
        modified = next((info[k] for k in _STAMPS if info.get(k) is not None), None)
        return int(info["size"]), str(modified) if modified is not None else None
    except InputError:
        raise
    except Exception as e:
        raise unreadable(source, e) from None


def check_local(path: str) -> None:
    """A path the workers must read: if this worker cannot, say so (the command's
    machine may see a file its workers do not)."""
    if os.access(path, os.R_OK) and os.path.isfile(path):
        return
    why = "no such file there" if not os.path.exists(path) else "not a readable file there"
    raise InputError(
        f"{worker_name()} cannot read it ({why}); the workers read the examples "
        "themselves, so the file must be visible to every worker under this path",
        source=path,
    )


@dataclass(frozen=True)
class Fingerprint:
    """What a worker read of a file: its size and modification stamp when opened, and
    the count and CRC-32 of the bytes read (a byte range's, or the whole stored file's,
    compressed as stored). A shard read again must give the same."""

    source: str
    size: int
    modified: object
    length: int
    checksum: int

    def differs(self, other: Fingerprint) -> str | None:
        """What changed, in words (None if nothing)."""
        if self.size != other.size:
            return f"its size changed from {self.size} to {other.size} bytes"
        if self.modified != other.modified:
            return "its modification time changed"
        if (self.length, self.checksum) != (other.length, other.checksum):
            return "its content changed (checksum)"
        return None


class Reader(io.RawIOBase):
    """readinto over an open binary file (its bytes [begin, stop) if ``stop`` is given),
    keeping the count and CRC-32 of the bytes read; a failure of the store mid-read is
    an InputError naming ``source`` and this worker."""

    def __init__(self, f, source, begin=0, stop=None):
        super().__init__()
        self.f, self.source = f, source
        self.left = None if stop is None else stop - begin
        self.length = 0
        self.checksum = 0
        try:
            if begin or stop is not None:
                f.seek(begin)
        except Exception as e:
            raise unreadable(source, e) from None

    def readable(self):
        return True

    def readinto(self, b):
        view = memoryview(b).cast("B")
        if self.left is not None:
            if self.left <= 0:
                return 0
            view = view[: min(len(view), self.left)]
        try:
            n = self.f.readinto(view) or 0
        except Exception as e:
            raise unreadable(self.source, e) from None
        if self.left is not None:
            self.left -= n
        self.length += n
        self.checksum = zlib.crc32(view[:n], self.checksum)
        return n

    def close(self):
        if not self.closed:
            self.f.close()
        super().close()

    def fingerprint(self, size, modified) -> Fingerprint:
        return Fingerprint(self.source, size, modified, self.length, self.checksum)
