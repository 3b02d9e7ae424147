"""Where a shard's bytes live, for the worker that reads them: a path on a file system the
workers mount, or an fsspec URL (``s3://``, ``gs://``, ``hdfs://``, ``http(s)://``,
``file://``, ``memory://``, ...) read through fsspec, as dask.dataframe and dask.bag read
them. Both give the same operations: list a glob, a file's size and modification stamp,
an open binary file that can seek (byte ranges of one big file), and a reader that
keeps a checksum of what it read (:class:`Fingerprint`: a shard read again after a
worker was lost must be the same bytes).

Every failure of the store is an :class:`~cpsvm.errors.InputError` that names the file
and the worker that could not read it (the command's machine may see what its workers
do not), and for HTTP the response's status. A URL whose file system needs a package
the worker lacks (s3fs, gcsfs, pyarrow, adlfs) names the package. Every wait on a URL's
store is bounded by the worker timeout (--worker-timeout): its info, and each block of
URL_BLOCK_SIZE bytes read. An HTTP response of no known length (none given, or a
Content-Encoding) is read whole, as a stream.
"""

from __future__ import annotations

import glob
import io
import os
import re
import time
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
# The URL schemes whose path starts with a bucket (an object store's).
_BUCKETED = frozenset({"s3", "s3a", "gs", "gcs"})
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


def _chain(error: BaseException):
    """``error`` and what it was raised from, the first first (fsspec's HTTP file system
    raises FileNotFoundError from the response's error, whatever its status)."""
    seen = []
    while error is not None and all(error is not e for e in seen):
        seen.append(error)
        error = error.__cause__ or error.__context__
    return seen


def _http_status(error: BaseException) -> str | None:
    """'HTTP 404 Not Found' for an HTTP response's error (aiohttp's: a status and its
    reason; a redirect loop: its last redirect), None for any other."""
    history = getattr(error, "history", None)
    status = getattr(error, "status", None)
    if not status and history:  # too many redirects: no status of its own
        last = history[-1]
        return f"HTTP {last.status} {last.reason}: too many redirects (a redirect loop?)"
    if isinstance(status, int) and status and type(error).__module__.startswith("aiohttp"):
        return f"HTTP {status} {getattr(error, 'message', '') or ''}".rstrip()
    return None


def _store_answer(error: BaseException) -> str | None:
    """An object store's own refusal in words (botocore's ClientError, as s3fs raises
    it: the store's code and message, 'NoSuchBucket: The specified bucket does not
    exist'), None for any other error. A HEAD request's refusal has no body, only its
    status: a 403 there is the credentials' (wrong, or not allowed to read it)."""
    response = getattr(error, "response", None)
    answer = response.get("Error") if isinstance(response, dict) else None
    if not isinstance(answer, dict) or not answer.get("Code"):
        return None
    code, message = str(answer["Code"]), str(answer.get("Message") or "").strip()
    if code.isdigit():
        refused = " (the store refused the credentials, or their access to it)"
        return f"HTTP {code} {message}".rstrip() + (refused if code == "403" else "")
    return f"{code}: {message}" if message else code


def _why(error: BaseException, timeout=None) -> str:
    chain = _chain(error)
    for e in chain:
        status = _http_status(e)
        if status is not None:
            return status
    for e in chain:
        answer = _store_answer(e)
        if answer is not None:
            return answer
    if any(isinstance(e, TimeoutError) for e in chain):
        within = f" within {timeout:g} s (--worker-timeout)" if timeout else ""
        return f"no complete answer{within}"
    # (a server gone, a connection cut: the HTTP client's own words, not fsspec's
    # FileNotFoundError raised from them)
    error = next((e for e in chain if type(e).__module__.startswith("aiohttp")), error)
    if isinstance(error, FileNotFoundError):
        return "no such file there"
    if isinstance(error, IsADirectoryError):
        return "a directory there, not a file"
    if isinstance(error, PermissionError):
        return "not a readable file there"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def unreadable(source: str, error: BaseException, timeout=None) -> InputError:
    """The one line for a file the store would not give this worker (``timeout``: the
    bound its waits had, to name when one ran out)."""
    return InputError(f"{worker_name()} cannot read it ({_why(error, timeout)})", source=source)


def detached(error: BaseException) -> BaseException:
    """``error`` without what it was raised from: a worker's error travels to the client
    pickled with its chain, and a store's own errors may not pickle (aiohttp's hold
    the response's headers): Dask would then send a 40-line traceback for the line."""
    error.__cause__ = error.__context__ = None
    return error


def _http(scheme: str) -> bool:
    return scheme in ("http", "https")


def _bounds(scheme: str, timeout: float, stream: bool) -> dict:
    """The store's own options that bound its waits by ``timeout``: for HTTP, aiohttp's
    timeouts, every request (a HEAD, a block of at most URL_BLOCK_SIZE bytes, an index
    page) within it, connection and each wait for bytes included; a ``stream``'s
    (a response read whole from its start) each wait for bytes, the whole not
    (:class:`Reader` bounds each block's)."""
    if not _http(scheme):
        return {}
    import aiohttp

    whole = None if stream else timeout
    bound = aiohttp.ClientTimeout(total=whole, sock_connect=timeout, sock_read=timeout)
    return {"client_kwargs": {"timeout": bound}}


def file_system(url: str, timeout: float | None = None, stream: bool = False):
    """(fsspec file system, its path) of ``url``, its waits bounded by ``timeout``
    seconds (the worker timeout's default if None; ``stream``: see :func:`_bounds`);
    InputError if this worker cannot read the scheme (fsspec or the scheme's package
    missing, an unknown scheme)."""
    scheme = _URL.match(url).group(1).lower()
    try:
        import fsspec.core
    except ImportError:
        raise InputError(
            f"{worker_name()} cannot read URLs: fsspec is not installed there ({DASK_EXTRA})",
            source=url,
        ) from None
    try:
        return fsspec.core.url_to_fs(url, **_bounds(scheme, _bound(timeout), stream))
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


def _bound(timeout: float | None) -> float:
    if timeout is None:
        from . import WORKER_TIMEOUT

        return WORKER_TIMEOUT
    return float(timeout)


def _info(fs, path: str, timeout: float) -> dict:
    """The store's info of ``path``, within ``timeout`` seconds in all (fsspec's HTTP
    file system asks HEAD, then GET, each of them bounded)."""
    if getattr(fs, "async_impl", False) and hasattr(fs, "_info"):
        from fsspec.asyn import sync

        return sync(fs.loop, fs._info, path, timeout=timeout)
    return fs.info(path)


def list_pattern(pattern: str, timeout: float | None = None) -> list[tuple[str, int]]:
    """(name, size) of every file the glob ``pattern`` matches, sorted by name; a URL
    pattern's names are URLs (an HTTP server's through its index pages). A size the
    store does not give (an HTTP response without a length) is None."""
    if not is_url(pattern):
        paths = sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
        return [(p, os.path.getsize(p)) for p in paths]
    timeout = _bound(timeout)
    fs, path = file_system(pattern, timeout)
    try:
        found = fs.glob(path, detail=True)
        files = [
            (fs.unstrip_protocol(name), info.get("size"))
            for name, info in found.items()
            if info.get("type", "file") == "file"
        ]
        if not files and _URL.match(pattern).group(1).lower() in _BUCKETED:
            # (an object store's glob finds nothing in a bucket that is not there:
            # listing the bucket says so)
            fs.ls(path.split("/", 1)[0])
        sized = []
        for name, size in sorted(files):
            if size is None:
                size = _info(fs, fs._strip_protocol(name), timeout).get("size")
            sized.append((name, size))
        return sized
    except InputError:
        raise
    except Exception as e:
        raise unreadable(pattern, e, timeout) from None


@dataclass
class Opened:
    """An open source: its binary file ``f``, its ``size`` and modification stamp as the
    store gave them when it was opened (``size`` None: an HTTP response of no known
    length, ``f`` then a stream read from its start), and ``timeout``, the bound of
    every wait on it (None for a path)."""

    f: object
    size: int | None
    modified: object
    timeout: float | None = None

    def reader(self, source, begin=0, stop=None) -> Reader:
        return Reader(self.f, source, begin, stop, self.timeout)


def open_source(source: str, timeout: float | None = None) -> Opened:
    """``source`` opened for reading bytes, with its size and modification stamp (asked
    once); every wait on a URL's store bounded by ``timeout`` seconds. Seekable unless
    its size is unknown. Errors name it and this worker."""
    if not is_url(source):
        try:
            f = open(source, "rb")
            return Opened(f, *local_stamp(f))
        except Exception as e:
            raise unreadable(source, e) from None
    timeout = _bound(timeout)
    fs, path = file_system(source, timeout)
    scheme = _URL.match(source).group(1).lower()
    try:
        info = _info(fs, path, timeout)
        size = info.get("size")
        modified = next((info[k] for k in _STAMPS if info.get(k) is not None), None)
        modified = str(modified) if modified is not None else None
        if not _http(scheme):
            if size is None:
                raise InputError(f"{worker_name()} cannot read it (its store gives no size)")
            f = fs.open(path, "rb", block_size=URL_BLOCK_SIZE)
            return Opened(f, int(size), modified, timeout)
        if size is None or info.get("partial") is False:
            # No Content-Length, or a Content-Encoding (gzip: aiohttp decodes it), or
            # no range requests (Accept-Ranges: none): the response read as a stream
            # from its start, whole.
            streams = file_system(source, timeout, stream=True)[0]
            return Opened(streams.open(path, "rb", block_size=0), None, modified, timeout)
        f = fs.open(path, "rb", block_size=URL_BLOCK_SIZE, size=int(size))
        return Opened(f, int(size), modified, timeout)
    except InputError as e:
        raise InputError(e.message, source=source) from None
    except Exception as e:
        raise unreadable(source, e, timeout) from None


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


def stamp_change(before, after) -> str | None:
    """What changed between two (size, modification stamp), in words (None if nothing;
    a stamp of None, unknown, compares equal to any)."""
    (size, modified), (size_now, modified_now) = before, after
    if size != size_now:
        return f"its size changed from {size} to {size_now} bytes"
    if modified is not None and modified_now is not None and modified != modified_now:
        return "its modification time changed"
    return None


def local_stamp(f) -> tuple[int, int]:
    """(size, modification time in ns) of an open local file, asked now."""
    st = os.fstat(f.fileno())
    return st.st_size, st.st_mtime_ns


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
    changed: str | None = None  # how it changed before or while it was read, if it did

    def differs(self, other: Fingerprint) -> str | None:
        """What changed, in words (None if nothing)."""
        change = stamp_change((self.size, self.modified), (other.size, other.modified))
        if change is not None:
            return change
        if (self.length, self.checksum) != (other.length, other.checksum):
            return "its content changed (checksum)"
        return None


class Reader(io.RawIOBase):
    """readinto over an open binary file (its bytes [begin, stop) if ``stop`` is given),
    keeping the count and CRC-32 of the bytes read; a failure of the store mid-read is
    an InputError naming ``source`` and this worker. With a ``timeout`` (a URL's), the
    store has that many seconds of waiting for each block of URL_BLOCK_SIZE bytes: a
    server that sends a byte at a time ends the read as one that sends nothing does."""

    def __init__(self, f, source, begin=0, stop=None, timeout=None):
        super().__init__()
        self.f, self.source = f, source
        self.left = None if stop is None else stop - begin
        self.length = 0
        self.checksum = 0
        self.timeout = timeout
        self._block = [0, 0.0]  # bytes of the block so far, seconds waited for them
        try:
            if begin or stop is not None:
                f.seek(begin)
        except Exception as e:
            raise unreadable(source, e, timeout) from None

    def readable(self):
        return True

    def readinto(self, b):
        view = memoryview(b).cast("B")
        if self.left is not None:
            if self.left <= 0:
                return 0
            view = view[: min(len(view), self.left)]
        started = time.monotonic()
        try:
            n = self.f.readinto(view) or 0
        except Exception as e:
            raise unreadable(self.source, e, self.timeout) from None
        if self.timeout is not None:
            self._waited(n, time.monotonic() - started)
        if self.left is not None:
            self.left -= n
        self.length += n
        self.checksum = zlib.crc32(view[:n], self.checksum)
        return n

    def _waited(self, n, seconds):
        block = self._block
        block[0] += n
        block[1] += seconds
        if block[0] >= URL_BLOCK_SIZE:
            block[0], block[1] = 0, 0.0
        elif n and block[1] > self.timeout:
            raise InputError(
                f"{worker_name()} cannot read it (too slow: {block[0]} bytes in "
                f"{block[1]:.1f} s, fewer than {URL_BLOCK_SIZE >> 20} MiB within "
                f"{self.timeout:g} s (--worker-timeout))",
                source=self.source,
            )

    def close(self):
        if not self.closed:
            self.f.close()
        super().close()

    def fingerprint(self, size, modified, changed=None) -> Fingerprint:
        return Fingerprint(self.source, size, modified, self.length, self.checksum, changed)
