"""Segments of consecutive rows (a sentence's tokens, a query's documents): ``starts``
(int64, n_segments + 1) delimits segment s as rows ``starts[s]:starts[s+1]``."""

from __future__ import annotations

import numpy as np


def selected_starts(starts, segments=None) -> np.ndarray:
    """Boundaries (int64) of the selected segments' rows, concatenated in the order given
    (all of them, from 0, by default)."""
    starts = np.asarray(starts, dtype=np.int64)
    if segments is None:
        return starts - starts[0]
    lengths = np.diff(starts)[np.asarray(segments, dtype=np.int64)]
    return np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
