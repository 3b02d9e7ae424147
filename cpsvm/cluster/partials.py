"""The shards' partial results of a round, and how two of them are added, on the
workers along a tree (:class:`.rounds.Rounds`): every sum over examples is in exact
folds (:mod:`.numerics`), so the order of the additions cannot change a bit, and the
client receives one result a round.

The cut's folds (a (rows, folds) array) travel sparse (:class:`SparseFolds`, the rows a
shard can touch) when a shard touches at most SPARSE_SHARE of them: hashed or wide data
split over many shards; two sparse partials add into the union of their rows, dense
again past that share.

Each task of :mod:`.tasks` returns its result and its seconds; :func:`combine_pair`
adds two such pairs with the task's own adder (the slowest worker's seconds kept).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SPARSE_SHARE = 0.5  # of the rows, at most, for folds to travel sparse


@dataclass(frozen=True)
class SparseFolds:
    """The folds of ``rows`` (sorted, distinct) of a (size, folds) array, zero
    elsewhere."""

    rows: np.ndarray
    values: np.ndarray
    size: int

    @property
    def nbytes(self) -> int:
        return self.rows.nbytes + self.values.nbytes


def touched_rows(columns, size, n_classes=0, bias_row=None):
    """The rows of the cut a shard using ``columns`` (sorted) can touch, if they are at
    most SPARSE_SHARE of ``size`` (else None: its folds travel dense). Crammer-Singer's
    column j of class c is row j·k + c; the bias feature is ``bias_row``."""
    columns = np.asarray(columns, dtype=np.int64)
    if n_classes:
        rows = (columns[:, None] * n_classes + np.arange(n_classes)).ravel()
    else:
        rows = columns if bias_row is None else np.append(columns, np.int64(bias_row))
    return rows if len(rows) <= SPARSE_SHARE * size else None


def cut_folds(acc, touched):
    """The folds of a packed accumulator (row j: [σ_0, folds...]), sparse on the rows
    ``touched`` if given."""
    if touched is None:
        return acc[:, 1:].copy()
    return SparseFolds(touched, acc[touched, 1:], len(acc))


def dense_folds(folds):
    if not isinstance(folds, SparseFolds):
        return folds
    out = np.zeros((folds.size, folds.values.shape[1]))
    out[folds.rows] = folds.values
    return out


def add_folds(a, b):
    """a + b, exact (folds on one grid), sparse while the union of rows is small."""
    if not isinstance(a, SparseFolds) and not isinstance(b, SparseFolds):
        return a + b
    if not isinstance(a, SparseFolds):
        a, b = b, a
    if not isinstance(b, SparseFolds):  # dense + sparse
        out = b.copy()
        out[a.rows] += a.values
        return out
    rows = np.union1d(a.rows, b.rows)
    if len(rows) > SPARSE_SHARE * a.size:
        out = dense_folds(a)
        out[b.rows] += b.values
        return out
    values = np.zeros((len(rows), a.values.shape[1]))
    values[np.searchsorted(rows, a.rows)] += a.values
    values[np.searchsorted(rows, b.rows)] += b.values
    return SparseFolds(rows, values, a.size)


def _add(x, y):
    if isinstance(x, SparseFolds) or isinstance(y, SparseFolds):
        return add_folds(x, y)
    return x + y


def add_sums(a, b):
    """Results whose every field is a sum (folds, counts): field by field."""
    if isinstance(a, tuple):
        return tuple(_add(x, y) for x, y in zip(a, b))
    return _add(a, b)


def add_moves(a, b):
    """:func:`.tasks.ocas_move`'s results: sums, then the step and the gather's seconds,
    the same on every shard."""
    return add_sums(a[:4], b[:4]) + (a[4], max(a[5], b[5]))


def join_pieces(a, b):
    """Breakpoints (positions, jumps) of two shards, one after the other."""
    return np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]])


def thin_samples(samples, cap):
    """At most ``cap`` of each row's positions (NaN: none), spread evenly over the
    sorted ones: the candidates a search narrows with, bounded whatever the number of
    shards (the step found does not depend on them, only how fast it narrows)."""
    if samples.shape[1] <= cap:
        return samples
    ordered = np.sort(samples, axis=1)  # NaN last
    valid = np.count_nonzero(~np.isnan(ordered), axis=1)
    pick = np.rint(np.linspace(0.0, 1.0, cap)[None, :] * np.maximum(valid - 1, 0)[:, None])
    out = np.take_along_axis(ordered, pick.astype(np.int64), axis=1)
    out[valid == 0] = np.nan
    return out


def add_buckets(cap, a, b):
    """Jump sums, counts and sampled positions per bucket (:func:`.tasks.grid_sums`)."""
    return (
        a[0] + b[0],
        a[1] + b[1],
        thin_samples(np.concatenate([a[2], b[2]], axis=1), cap),
    )


def add_outputs(on_grid, cap, a, b):
    """:func:`.tasks.ocas_outputs`'s results: slope sums and counts added; the
    breakpoints themselves while both sides sent all theirs, else their jump sums on
    the global grid (``on_grid(positions, jumps)``: a side that sent breakpoints summed
    here, the same bits as on its worker)."""
    acc, count = a[0] + b[0], a[1] + b[1]
    if a[3] is not None and b[3] is not None:
        return acc, count, None, join_pieces(a[3], b[3])
    sums = [r[2] if r[2] is not None else on_grid(*r[3]) for r in (a, b)]
    return acc, count, add_buckets(cap, *sums), None


def combine_pair(combine, extra, a, b):
    """Two (result, seconds) pairs as one: the results added by ``combine(*extra, ...)``,
    the slowest seconds."""
    return combine(*extra, a[0], b[0]), max(a[1], b[1])


def combine_root(finish, combine, extra, a, b):
    """:func:`combine_pair`, then ``finish`` of it if given (the root of a tree)."""
    both = combine_pair(combine, extra, a, b)
    return both if finish is None else finish(both)
