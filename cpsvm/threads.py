"""Threads as a parameter: the kernels' work runs on a pool of this many threads.

The count is per calling thread, as numba's was: a solver runs with ``n_threads``
(:func:`thread_count`) and leaves the count as it found it. Its default and its bound are
numba's: ``NUMBA_NUM_THREADS`` when set, else the CPUs this process may run on. The
kernels release the GIL (``nogil``), so the pool's threads run them at once; a kernel
over rows runs in chunks of rows (:func:`in_row_chunks`) whose results land in disjoint
rows of its outputs, so the thread count never changes a result.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

_local = threading.local()
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
# Rows a chunk takes at the least: handing a chunk to a thread costs tens of microseconds.
MIN_CHUNK_ROWS = 64


def max_threads() -> int:
    """The bound of any count: NUMBA_NUM_THREADS, else the CPUs this process may use."""
    value = os.environ.get("NUMBA_NUM_THREADS")
    if value:
        return max(1, int(value))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def get_num_threads() -> int:
    """The calling thread's count (:func:`max_threads` unless a :func:`thread_count`
    block set another)."""
    count = getattr(_local, "count", None)
    return max_threads() if count is None else count


@contextlib.contextmanager
def thread_count(n_threads: int | None):
    """Run the block with ``n_threads`` threads (None: as the caller has it); the count
    is restored on exit, so a library call leaves the process as it found it."""
    if n_threads is None:
        yield
        return
    if n_threads < 1:
        raise ValueError(f"expected n_threads >= 1, got {n_threads}")
    previous = getattr(_local, "count", None)
    _local.count = min(int(n_threads), max_threads())
    try:
        yield
    finally:
        _local.count = previous


def map_in_threads(fn, items):
    """[fn(item) for item in items] on :func:`get_num_threads` threads (the kernels, scipy,
    numpy and BLAS release the GIL); one pool for the whole library."""
    global _pool
    workers = get_num_threads()
    if len(items) == 1 or workers == 1:
        return [fn(item) for item in items]
    with _pool_lock:
        if _pool is None or _pool._max_workers != workers:
            if _pool is not None:  # the count changed (n_threads): retire the old workers
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(workers)
        pool = _pool
    return list(pool.map(fn, items))


def in_row_chunks(kernel, n_rows: int, *args, min_rows: int = MIN_CHUNK_ROWS) -> None:
    """``kernel(lo, hi, *args)`` over chunks of rows 0..n_rows covering them all, on the
    pool's threads, a chunk ``min_rows`` rows at the least: each row's work is the
    kernel's loop body, written to its own rows of the outputs, so chunks may run in any
    order."""
    workers = get_num_threads()
    if workers == 1 or n_rows < 2 * min_rows:
        kernel(0, n_rows, *args)
        return
    # A few chunks a thread: rows of unequal cost (sentences of unequal length) balance.
    chunks = min(4 * workers, n_rows // min_rows)
    bounds = [n_rows * c // chunks for c in range(chunks + 1)]
    map_in_threads(lambda c: kernel(bounds[c], bounds[c + 1], *args), range(chunks))
