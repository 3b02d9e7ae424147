"""Feature columns of huge and hashed index spaces: memory that follows the distinct
features of a file, not its largest index.

A file whose largest feature index is far beyond the number of distinct indices it uses
(hashed features: indices up to 2^63) is renumbered to its distinct columns 0..d'-1, in
the order of the original indices (:func:`distinct_columns`); the original indices are
kept beside it (``feature_ids``, 0-based, sorted) and written into the model files,
whose sparse ``index:value`` lines allow any index. Data classified by such a model is
mapped through the same ids (:func:`onto_columns`: features the model does not know
contribute 0, as SVMlight ignores test features above a model's highest index).

On a cluster (:mod:`cpsvm.cluster`) no process holds the whole file: each shard
renumbers its own columns when that pays for it alone (:func:`distinct_columns`), the
client merges every shard's distinct columns (:func:`union_maxima`; a shard that kept
the file's indices lists them by :func:`present_columns`) and applies the same rule to
the union (:func:`renumbering_pays`), and each shard is mapped onto the union
(:func:`renumbered_onto`): the same columns a plain run of the whole file has.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .compiled import njit

# Renumbering is considered from this width on (a dense vector of 8 MiB): below it every
# file keeps its columns, and every output stays what it was.
REMAP_MIN_WIDTH = 1 << 20
# ... and done when the width is more than this many times the distinct columns.
REMAP_RATIO = 2
# Mean examples of one bucket of the renumbering's radix pass.
_BUCKET_SIZE = 16
# A bucket of more values (skewed indices) is sorted by numpy's argsort.
_INSERTION_MAX = 64


def worth_renumbering(width: int, indices) -> bool:
    """Whether a matrix of ``width`` columns whose stored column indices are ``indices``
    takes much less memory renumbered to its distinct columns."""
    width, nnz = int(width), len(indices)
    if width < REMAP_MIN_WIDTH:
        return False
    if width > REMAP_RATIO * nnz:  # distinct <= nnz: no need to count them
        return True
    return renumbering_pays(width, _count_distinct(indices, width))


def renumbering_pays(width: int, distinct: int) -> bool:
    """The rule of :func:`worth_renumbering` for a known number of distinct columns
    (a cluster's shards count theirs apart)."""
    return width >= REMAP_MIN_WIDTH and width > REMAP_RATIO * distinct


@njit(cache=True)
def _count_distinct(indices, width):
    """The number of distinct values in ``indices`` (all in 0..width-1): a byte a column,
    no more than the data (width <= 2·nnz here), and no temporary index array (numpy's
    mask[indices] converted int32 indices to int64 first: 8 bytes a non-zero)."""
    seen = np.zeros(width, np.bool_)
    count = 0
    for i in range(len(indices)):
        j = indices[i]
        if not seen[j]:
            seen[j] = True
            count += 1
    return count


@njit(cache=True)
def _distinct_ranks(indices, ranks):
    """The sorted distinct values of ``indices`` (non-negative int64) and, in ``ranks``,
    each one's position among them. One radix pass on the high bits into buckets of a few
    values each, then each bucket sorted on its own: O(nnz) memory traffic, where a
    binary search per index in 20M distinct ids missed the cache at every step (10x
    slower)."""
    n = len(indices)
    lo = indices.min()
    span = indices.max() - lo
    n_buckets = max(n // _BUCKET_SIZE, 1)
    shift = 0
    while (span >> shift) >= n_buckets:
        shift += 1
    n_buckets = (span >> shift) + 1
    starts = np.zeros(n_buckets + 1, np.int64)
    for i in range(n):
        starts[((indices[i] - lo) >> shift) + 1] += 1
    largest = 0
    for b in range(n_buckets):
        largest = max(largest, starts[b + 1])
        starts[b + 1] += starts[b]
    order = np.empty(n, np.int64)  # positions, bucket by bucket; then the distinct ids
    fill = starts[:-1].copy()
    for i in range(n):
        b = (indices[i] - lo) >> shift
        order[fill[b]] = i
        fill[b] += 1
    keys = np.empty(largest, np.int64)
    where = np.empty(largest, np.int64)
    rank = -1
    for b in range(n_buckets):
        s, e = starts[b], starts[b + 1]
        m = e - s
        for t in range(m):
            where[t] = order[s + t]
            keys[t] = indices[where[t]]
        if m > _INSERTION_MAX:
            at = np.argsort(keys[:m])
            keys[:m] = keys[at]
            where[:m] = where[at]
        else:  # a few values (uniform hashes): insertion sort, no allocation
            for t in range(1, m):
                key, pos = keys[t], where[t]
                u = t - 1
                while u >= 0 and keys[u] > key:
                    keys[u + 1] = keys[u]
                    where[u + 1] = where[u]
                    u -= 1
                keys[u + 1] = key
                where[u + 1] = pos
        previous = -1
        for t in range(m):
            value = keys[t]
            if value != previous:
                rank += 1
                order[rank] = value  # rank <= s + t: positions already read
                previous = value
            ranks[where[t]] = rank
    return order[: rank + 1].copy()


def distinct_columns(X: sp.csr_matrix, always=False):
    """``(X renumbered to its distinct columns, their original 0-based indices)``,
    or ``(X, None)`` when renumbering would not save memory (unless ``always``)."""
    if not always and (not X.nnz or not worth_renumbering(X.shape[1], X.indices)):
        return X, None
    indices = np.asarray(X.indices, dtype=np.int64)
    ids, ranks = distinct_values(indices)
    del indices
    indptr = X.indptr
    if ranks.dtype == np.int32 and indptr.dtype != np.int32:
        indptr = indptr.astype(np.int32)
    out = sp.csr_matrix((X.data, ranks, indptr), shape=(X.shape[0], len(ids)), copy=False)
    out.has_canonical_format = True  # the order of the columns is kept
    return out, ids


def seen_columns(X: sp.csr_matrix):
    """A flag a column of X (a byte each): whether X stores a value there (zero or not),
    for a matrix that keeps its columns (a width at most twice its values, or narrow)."""
    return _seen_columns(X.indices, X.shape[1])


def present_columns(X: sp.csr_matrix):
    """The sorted distinct columns X uses (int64), by :func:`seen_columns`."""
    return np.flatnonzero(seen_columns(X)).astype(np.int64)


@njit(cache=True)
def _seen_columns(indices, width):
    seen = np.zeros(width, np.bool_)
    for i in range(len(indices)):
        seen[indices[i]] = True
    return seen


def renumbered_onto(X: sp.csr_matrix, columns, feature_ids) -> sp.csr_matrix:
    """X, whose column j is the original index ``columns[j]`` (sorted), in the columns
    of ``feature_ids`` (sorted, holding every one of ``columns``): column j becomes the
    position of ``columns[j]`` there. The order of the columns is kept."""
    ids = np.asarray(feature_ids, dtype=np.int64)
    index_type = np.int32 if len(ids) < 2**31 else np.int64
    positions = _merge_positions(ids, np.asarray(columns, dtype=np.int64)).astype(index_type)
    indptr = X.indptr
    if index_type == np.int32 and indptr.dtype != np.int32 and X.nnz < 2**31:
        indptr = indptr.astype(np.int32)
    out = sp.csr_matrix(
        (X.data, positions[X.indices], indptr), shape=(X.shape[0], len(ids)), copy=False
    )
    out.has_canonical_format = X.has_canonical_format
    return out


def union_maxima(pieces):
    """``(the sorted union of the pieces' ids, each id's largest value)`` of a list of
    ``(ids, values)``, each ids sorted and distinct: merged two by two (a tree, so
    O(total·log pieces)). A maximum does not depend on the order it is taken in."""
    pieces = [(np.asarray(i, np.int64), np.asarray(v, np.float64)) for i, v in pieces]
    if not pieces:
        return np.zeros(0, np.int64), np.zeros(0)
    while len(pieces) > 1:
        merged = [_merge_maxima(*a, *b) for a, b in zip(pieces[::2], pieces[1::2])]
        pieces = merged + ([pieces[-1]] if len(pieces) % 2 else [])
    return pieces[0]


@njit(cache=True)
def _merge_maxima(ids_a, values_a, ids_b, values_b):
    na, nb = len(ids_a), len(ids_b)
    ids = np.empty(na + nb, np.int64)
    values = np.empty(na + nb, np.float64)
    i = j = k = 0
    while i < na or j < nb:
        if j >= nb or (i < na and ids_a[i] < ids_b[j]):
            ids[k], values[k] = ids_a[i], values_a[i]
            i += 1
        elif i >= na or ids_b[j] < ids_a[i]:
            ids[k], values[k] = ids_b[j], values_b[j]
            j += 1
        else:
            ids[k], values[k] = ids_a[i], max(values_a[i], values_b[j])
            i += 1
            j += 1
        k += 1
    return ids[:k].copy(), values[:k].copy()


def original_columns(X: sp.csr_matrix, feature_ids) -> sp.csr_matrix:
    """A renumbered X with its original column indices again (width: the largest + 1)."""
    if feature_ids is None:
        return X
    width = int(feature_ids[-1]) + 1 if len(feature_ids) else X.shape[1]
    out = sp.csr_matrix(
        (X.data, np.asarray(feature_ids)[X.indices], X.indptr), shape=(X.shape[0], width)
    )
    out.has_canonical_format = True
    return out


@njit(cache=True)
def _merge_positions(sorted_ids, sorted_values):
    """Position of each of ``sorted_values`` (sorted, distinct) in ``sorted_ids``, -1
    when absent: one merge of the two lists."""
    out = np.full(len(sorted_values), -1, np.int64)
    j = 0
    for i in range(len(sorted_values)):
        v = sorted_values[i]
        while j < len(sorted_ids) and sorted_ids[j] < v:
            j += 1
        if j < len(sorted_ids) and sorted_ids[j] == v:
            out[i] = j
    return out


def distinct_values(values):
    """``(the sorted distinct values, each value's position among them)`` of an array of
    non-negative integers, by :func:`_distinct_ranks`."""
    values = np.asarray(values, dtype=np.int64)
    ranks = np.empty(len(values), np.int32 if len(values) < 2**31 else np.int64)
    if not len(values):
        return np.zeros(0, np.int64), ranks
    return _distinct_ranks(values, ranks), ranks


def _positions(sorted_ids, values):
    """Position of each of ``values`` in ``sorted_ids`` (-1: absent): the values' distinct
    ones sorted by the radix pass and merged with the ids (a binary search per value
    missed the cache at each step: 36 s for 20M values in 20M ids, against 2 s)."""
    distinct, ranks = distinct_values(values)
    return _merge_positions(sorted_ids, distinct)[ranks]


def union_columns(X, support_vectors, feature_ids):
    """``(X, support_vectors)`` renumbered to one set of columns: the union of the
    support vectors' original indices ``feature_ids`` and X's columns, in index order.
    Every feature of X is kept (an RBF kernel's |x - sv|² counts the ones the support
    vectors lack) and sums run in the same order as over the original indices."""
    X = sp.csr_matrix(X)
    test_ids, ranks = distinct_values(X.indices)
    feature_ids = np.asarray(feature_ids, dtype=np.int64)
    union = np.union1d(feature_ids, test_ids)
    X = sp.csr_matrix(
        (X.data, _merge_positions(union, test_ids)[ranks], X.indptr),
        shape=(X.shape[0], len(union)),
    )
    sv = sp.csr_matrix(support_vectors)
    sv = sp.csr_matrix(
        (sv.data, _merge_positions(union, feature_ids)[sv.indices], sv.indptr),
        shape=(sv.shape[0], len(union)),
    )
    return X, sv


def onto_columns(X, n_features: int, feature_ids=None):
    """``(X in a model's columns, number of stored values dropped)``: with ``feature_ids``
    (the model's original indices, sorted) each column is renumbered to its position
    there; otherwise the model's columns are 0..n_features-1. Columns the model does not
    have are dropped (they would meet a zero weight); missing ones are zero. Memory
    follows X's stored values, never its width."""
    X = sp.csr_matrix(X)
    n_rows = X.shape[0]
    if feature_ids is None:
        if X.shape[1] <= n_features:
            if X.shape[1] == n_features:
                return X, 0
            return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(n_rows, n_features)), 0
        keep = X.indices < n_features
        columns = X.indices
    else:
        ids = np.asarray(feature_ids, dtype=np.int64)
        if len(ids) == 0 or X.nnz == 0:
            keep = np.zeros(X.nnz, np.bool_)
            columns = np.zeros(X.nnz, np.int64)
        else:
            columns = _positions(ids, np.asarray(X.indices, dtype=np.int64))
            keep = columns >= 0
    dropped = X.nnz - int(np.count_nonzero(keep))
    if dropped:
        kept_before = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
        indptr = kept_before[X.indptr]
        columns, data = columns[keep], X.data[keep]
    else:
        indptr, data = X.indptr, X.data
    index_type = np.int32 if n_features < 2**31 and len(data) < 2**31 else np.int64
    out = sp.csr_matrix(
        (data, columns.astype(index_type, copy=False), indptr.astype(index_type, copy=False)),
        shape=(n_rows, n_features),
        copy=False,
    )
    return out, dropped
