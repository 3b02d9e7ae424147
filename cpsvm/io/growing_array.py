"""Arrays that grow without being copied: the columns the SVMlight reader builds its CSR
matrix in (:mod:`cpsvm.io.svmlight`)."""

from __future__ import annotations

import mmap
import sys

import numpy as np


class GrowingArray:
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
        widened = GrowingArray(dtype, len(self.array))
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
