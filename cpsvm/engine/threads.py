"""Threads as a parameter: a solver runs with ``n_threads`` and leaves the count as it was."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def thread_count(n_threads: int | None):
    """Run the block with ``n_threads`` numba threads (None: as the caller has it).

    numba's count is per calling thread; it is restored on exit, so a library call
    leaves the process as it found it.
    """
    if n_threads is None:
        yield
        return
    import numba

    if n_threads < 1:
        raise ValueError(f"expected n_threads >= 1, got {n_threads}")
    previous = numba.get_num_threads()
    numba.set_num_threads(min(int(n_threads), numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        numba.set_num_threads(previous)
