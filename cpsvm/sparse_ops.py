"""Threaded numba loops over CSR rows. Each output row is computed by one thread in a
fixed order, so results do not depend on the number of threads."""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True)
def row_dots(indptr, indices, data, w):
    """X @ w for CSR X (one dot product per row); with Xᵀ in CSR, Xᵀ @ coef."""
    n = len(indptr) - 1
    out = np.empty(n)
    for i in prange(n):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * w[indices[k]]
        out[i] = acc
    return out


@njit(parallel=True, cache=True)
def row_scores(indptr, indices, data, W):
    """X @ W.T for CSR X and dense W (k, d): every row's score for every class."""
    n, k = len(indptr) - 1, W.shape[0]
    out = np.empty((n, k))
    for i in prange(n):
        for c in range(k):
            acc = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                acc += data[p] * W[c, indices[p]]
            out[i, c] = acc
    return out
