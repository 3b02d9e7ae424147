"""Ranking (SVMrank V1.00): pairwise preferences within each query, as a structured problem.

An example is a query: the documents (lines) sharing its ``qid``, on consecutive lines.
Its pairs P_k are the (i, j) with target y_i > y_j (equal targets make no pair). A
labelling orients every pair; Δ_k counts the pairs oriented against the targets and
δΨ_k = Σ_{swapped (i, j)} (x_i − x_j), both times the query's scale s_k: 1 for SVMrank's
``-l 1`` (the number of swapped pairs) or 1/|P_k| for ``-l 2`` (their fraction). With
SVMstruct's convention the 1-slack cut averages over the n queries, so ``-c C`` minimises

    ½|w|² + (C/n)·Σ_k s_k·Σ_{(i, j) ∈ P_k} max(0, 1 − w·(x_i − x_j)),

the objective svm_rank_learn prints. n counts every query of the file, those whose
documents share one relevance level (no pairs) included, as svm_rank_learn counts them;
they add nothing to the loss. With ``-l 1`` this is ``svm_learn -z p`` (SVMlight's
preference ranking) at C_light = C/n, and LinearSVC(loss='hinge', fit_intercept=False)
on the pairs' differences at the same C.

A labelling is an int64 array (n_documents, 2): for document i the number a_i of pairs
(i, j) in which i should be above j and is swapped, and the number b_i of pairs (j, i) in
which i should be below j and is swapped. That is all Δ and δΨ need: Δ_k = s_k·Σ_i a_i
and δΨ_k = s_k·Σ_i (a_i − b_i)·x_i, so a cut is one sparse product. The most violated
labelling swaps every pair with w·(x_i − x_j) < 1 (margin rescaling; SVMrank has no slack
rescaling). Its counts come from sorting each query's scores and sweeping them with a
Fenwick tree over the relevance levels: O(m log m) for m documents, never forming the
pairs (Joachims, *Training Linear SVMs in Linear Time*, KDD 2006). The same sweep with
margin 0, ties counted, gives the evaluation's swapped pairs.
"""

from __future__ import annotations

import numpy as np

from ...compiled import njit
from ...conventions import MARGIN_RESCALING
from ...decoding.segments import selected_starts
from ...errors import InputError
from ...models import RankingModel
from ...sparse_ops import RowBlocks, as_csr
from ...threads import in_row_chunks
from ..base import StructuredProblem

SWAPPED_PAIRS = 1  # -l 1: number of swapped pairs (svm_rank_learn's default)
FRACTION_SWAPPED = 2  # -l 2: fraction of swapped pairs of each query
LOSSES = (SWAPPED_PAIRS, FRACTION_SWAPPED)
NDCG_AT = 10


# -- queries ---------------------------------------------------------------------------------


def query_starts(dataset) -> np.ndarray:
    """Boundaries (int64, n_queries + 1) of the queries of a file read as lines: runs of
    equal qid on consecutive lines; no qid at all is one query (svm_rank's qid 0). A qid
    that reappears after another is refused, with its file and line."""
    n = dataset.n_examples
    if n == 0:
        raise InputError(
            "expected at least one document line (<target> qid:<query> "
            "<index>:<value> ...), found none",
            source=dataset.source,
        )
    qid = getattr(dataset, "qid", None)
    if qid is None:
        return np.array([0, n], dtype=np.int64)
    qid = np.asarray(qid, dtype=np.int64)
    missing = np.flatnonzero(qid == 0)  # the reader's 0: a line without qid
    if 0 < len(missing) < n:
        raise InputError(
            "expected qid:<query> on every line, as on the others; this line has none",
            source=dataset.source,
            line=dataset.line_of(int(missing[0])),
        )
    first = np.concatenate(([0], np.flatnonzero(qid[1:] != qid[:-1]) + 1)).astype(np.int64)
    ids = qid[first]
    order = np.argsort(ids, kind="stable")
    repeated = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if len(repeated):
        # The earliest run that repeats a qid seen before: where the file breaks the rule.
        later = order[repeated + 1]
        run = int(later.min())
        earlier = int(order[repeated[np.argmin(later)]])
        began = dataset.line_of(int(first[earlier]))
        raise InputError(
            f"expected the documents of query qid:{ids[run]} on consecutive "
            f"lines, but it reappears after qid:{ids[run - 1]}"
            + (f" (it began on line {began})" if began is not None else ""),
            source=dataset.source,
            line=dataset.line_of(int(first[run])),
        )
    return np.concatenate((first, [n])).astype(np.int64)


def check_targets(dataset):
    """Targets are finite numbers (the reader has refused text); any real value ranks."""
    y = np.asarray(dataset.y, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(y))
    if len(bad):
        i = int(bad[0])
        raise InputError(
            f"expected a finite relevance target, got {y[i]}",
            source=dataset.source,
            line=dataset.line_of(i),
        )


def check_ranking_labels(dataset):
    """A ranking training file: contiguous queries, finite targets, and at least one query
    with two relevance levels (else there is no pair to learn from)."""
    check_targets(dataset)
    starts = query_starts(dataset)
    _, n_levels, _ = relevance_levels(np.asarray(dataset.y, dtype=np.float64), starts)
    if not np.any(n_levels > 1):
        n = len(starts) - 1
        what = "the query" if n == 1 else f"each of the {n} queries"
        raise InputError(
            f"expected a query with two different targets (a pair to rank), "
            f"but {what} has one relevance level only",
            source=dataset.source,
        )


def describe_queries(dataset) -> str:
    """What cp_learn says it read: queries, the ones without pairs, documents, pairs."""
    check_targets(dataset)
    starts = query_starts(dataset)
    _, n_levels, n_pairs = relevance_levels(np.asarray(dataset.y, dtype=np.float64), starts)
    n = len(starts) - 1
    single = int(np.count_nonzero(n_levels < 2))
    skipped = f" ({single} with one relevance level only: no pairs, skipped)" if single else ""
    return f"{n} queries{skipped}, {dataset.n_examples} documents, {int(n_pairs.sum())} pairs"


# Queries a chunk of the per-query kernels takes at the least (cpsvm.threads.in_row_chunks).
MIN_CHUNK_QUERIES = 16


@njit(cache=True, nogil=True)
def _levels(lo_query, hi_query, y, starts, level, n_levels, n_pairs):
    """level[i]: the dense rank (0, 1, ...) of y_i among its query's targets; n_levels and
    n_pairs (the pairs y_i > y_j) of each query, for queries lo_query..hi_query."""
    for q in range(lo_query, hi_query):
        lo, hi = starts[q], starts[q + 1]
        order = np.argsort(y[lo:hi], kind="mergesort")
        rank = 0
        below = 0  # documents of the levels below the current one
        run = 0  # documents of the current level so far
        pairs = 0
        for t in range(hi - lo):
            i = lo + order[t]
            if t > 0 and y[i] != y[lo + order[t - 1]]:
                rank += 1
                below += run
                run = 0
            level[i] = rank
            run += 1
            pairs += below
        n_levels[q] = rank + 1 if hi > lo else 0
        n_pairs[q] = pairs


def relevance_levels(y, starts):
    """(level of each document, levels of each query, pairs of each query)."""
    n_queries = len(starts) - 1
    level = np.empty(len(y), dtype=np.int64)
    n_levels = np.empty(n_queries, dtype=np.int64)
    n_pairs = np.empty(n_queries, dtype=np.int64)
    in_row_chunks(
        _levels,
        n_queries,
        np.ascontiguousarray(y, dtype=np.float64),
        np.asarray(starts, dtype=np.int64),
        level,
        n_levels,
        n_pairs,
        min_rows=MIN_CHUNK_QUERIES,
    )
    return level, n_levels, n_pairs


# -- the pair counts ---------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _bit_add(tree, k):
    k += 1
    while k < len(tree):
        tree[k] += 1
        k += k & (-k)


@njit(cache=True, inline="always")
def _bit_below(tree, k):
    """How many inserted levels are < k."""
    total = 0
    while k > 0:
        total += tree[k]
        k -= k & (-k)
    return total


@njit(cache=True)
def _query_counts(s, level, n_levels, lo, hi, margin, ties, counts):
    """counts[i] = (a_i, b_i) for the documents lo..hi: a_i the j of a lower level with
    s_j > s_i − margin (the pair (i, j) violated), b_i the j of a higher level with
    s_i > s_j − margin (the pair (j, i) violated); ``ties``: ≥ instead of >. One predicate,
    s_j against u_i = s_i − margin, serves both sweeps, so Σ a = Σ b exactly."""
    m = hi - lo
    order = np.argsort(s[lo:hi])
    u = np.empty(m)
    for t in range(m):
        u[t] = s[lo + order[t]] - margin  # ascending as s is
    tree = np.zeros(n_levels + 1, dtype=np.int64)
    # a: documents by decreasing u_i; insert every j with s_j > u_i (also by decreasing s).
    p = m - 1
    for t in range(m - 1, -1, -1):
        while p >= 0 and (s[lo + order[p]] > u[t] or (ties and s[lo + order[p]] == u[t])):
            _bit_add(tree, level[lo + order[p]])
            p -= 1
        i = lo + order[t]
        counts[i, 0] = _bit_below(tree, level[i])
    # b: documents j by increasing s_j; insert every i with u_i < s_j.
    tree[:] = 0
    p = 0
    for t in range(m):
        j = lo + order[t]
        while p < m and (u[p] < s[j] or (ties and u[p] == s[j])):
            _bit_add(tree, level[lo + order[p]])
            p += 1
        counts[j, 1] = p - _bit_below(tree, level[j] + 1)


def pair_counts(s, level, n_levels, starts, margin, ties, counts):
    """``counts`` (n_documents, 2) of every query with two levels or more (see
    _query_counts); the others' rows are set to 0."""
    in_row_chunks(
        _pair_counts,
        len(starts) - 1,
        s,
        level,
        n_levels,
        starts,
        margin,
        ties,
        counts,
        min_rows=MIN_CHUNK_QUERIES,
    )


@njit(cache=True, nogil=True)
def _pair_counts(lo_query, hi_query, s, level, n_levels, starts, margin, ties, counts):
    """:func:`pair_counts` of queries lo_query..hi_query."""
    for q in range(lo_query, hi_query):
        lo, hi = starts[q], starts[q + 1]
        if n_levels[q] < 2:
            for i in range(lo, hi):
                counts[i, 0] = 0
                counts[i, 1] = 0
        else:
            _query_counts(s, level, n_levels[q], lo, hi, margin, ties, counts)


# -- the problem -------------------------------------------------------------------------------


class RankProblem(StructuredProblem):
    """SVMrank's problem on documents X (CSR, one row per line), targets y and query
    boundaries ``starts``. ``loss_id``: SWAPPED_PAIRS (-l 1) or FRACTION_SWAPPED (-l 2).
    ``flip_gain`` None: not a binary hinge (see :mod:`cpsvm.engine.ocas`); -w 9 runs OCAS's
    structured line search, the outputs being the documents' scores (``separate_at``)."""

    flip_gain = None
    n_weights_at = 0  # separate_at and margins_at read the scores only
    loss_scale = 1.0  # Δ of one swapped pair (before the query's scale)

    def __init__(self, X, y, starts, loss_id=SWAPPED_PAIRS):
        if loss_id not in LOSSES:
            raise ValueError(f"expected loss 1 (swapped pairs) or 2 (fraction), got {loss_id}")
        X = as_csr(X)
        if not X.has_canonical_format:
            X.sum_duplicates()
        self.X = X
        self.rows = RowBlocks(X)
        self.y = np.asarray(y, dtype=np.float64)
        self.starts = np.asarray(starts, dtype=np.int64)
        self.loss_id = loss_id
        self.level, self.n_levels, self.n_pairs = relevance_levels(self.y, self.starts)
        self.n_examples = len(self.starts) - 1
        self.size_psi = X.shape[1]
        self.n_documents = X.shape[0]
        self.n_skipped = int(np.count_nonzero(self.n_levels < 2))
        if loss_id == SWAPPED_PAIRS:
            self.scale = np.ones(self.n_examples)
        else:
            self.scale = np.where(self.n_pairs > 0, 1.0 / np.maximum(self.n_pairs, 1), 0.0)
        # svm_rank_learn's -e is relative to a query's loss: with -l 1 it multiplies it by
        # the average number of pairs per query.
        self.epsilon_scale = (
            float(self.n_pairs.sum()) / self.n_examples if loss_id == SWAPPED_PAIRS else 1.0
        )
        self._sizes = np.diff(self.starts)

    @classmethod
    def from_dataset(cls, dataset, loss_id=SWAPPED_PAIRS):
        """The problem of a file read as lines (:func:`read_svmlight`), checked."""
        check_ranking_labels(dataset)
        return cls(dataset.X, dataset.y, query_starts(dataset), loss_id=loss_id)

    # -- the selected queries ----------------------------------------------------------------
    def _batch(self, rows):
        """(their documents' rows, None for all; the documents' query boundaries; each
        query's number of levels and scale) of the queries ``rows`` (None: all)."""
        if rows is None:
            return None, self.starts, self.n_levels, self.scale
        rows = np.asarray(rows, dtype=np.int64)
        starts = selected_starts(self.starts, rows)
        lengths = np.diff(starts)
        docs = np.repeat(self.starts[rows] - starts[:-1], lengths) + np.arange(starts[-1])
        return docs, starts, self.n_levels[rows], self.scale[rows]

    def scores(self, w, rows=None):
        """w·x of every document (of the queries ``rows``)."""
        docs = self._batch(rows)[0]
        return self.rows.dot(w) if docs is None else self.X[docs] @ w

    def _counts(self, s, rows=None, margin=1.0, ties=False):
        docs, starts, n_levels, _ = self._batch(rows)
        level = self.level if docs is None else self.level[docs]
        counts = np.empty((len(s), 2), dtype=np.int64)
        pair_counts(
            np.ascontiguousarray(s, dtype=np.float64),
            level,
            n_levels,
            starts,
            float(margin),
            ties,
            counts,
        )
        return counts

    def _per_query(self, values, rows):
        """Σ over each query's documents of ``values`` (documents of ``rows``)."""
        starts = self._batch(rows)[1]
        sums = np.add.reduceat(values, starts[:-1]) if len(values) else np.zeros(len(starts) - 1)
        return np.asarray(sums, dtype=np.float64)

    def true_labels(self):
        return np.zeros((self.n_documents, 2), dtype=np.int64)

    def separate(self, w, rescaling, rows=None):
        if rescaling != MARGIN_RESCALING:
            raise ValueError("the rank problem has margin rescaling only (as SVMrank)")
        return self._counts(self.scores(w, rows), rows)

    def separate_at(self, out, w):
        """The most violated labelling where the documents' scores are ``out``."""
        return self._counts(out)

    def cut(self, w, weights, rescaling):
        """The most violated 1-slack cut at w, weighted per query: c = Σ_k weights_k·Δ_k and
        g = Σ_k weights_k·δΨ_k, from the counts and one sparse product."""
        counts = self.separate(w, rescaling)
        per_doc = np.repeat(np.asarray(weights, dtype=np.float64) * self.scale, self._sizes)
        c = float(per_doc @ counts[:, 0])
        return c, self.rows.rows_sum(per_doc * (counts[:, 0] - counts[:, 1]))

    def losses(self, labels, rows=None):
        return self._batch(rows)[3] * self._per_query(labels[:, 0].astype(np.float64), rows)

    def margins(self, w, labels, rows=None):
        return self.margins_at(self.scores(w, rows), w, labels, rows)

    def margins_at(self, out, w, labels, rows=None):
        """w·δΨ_k of each query, from the documents' scores ``out``."""
        moved = (labels[:, 0] - labels[:, 1]).astype(np.float64)
        return self._batch(rows)[3] * self._per_query(moved * out, rows)

    def delta_psi_sum(self, weights, labels, rows=None):
        docs, starts, _, scale = self._batch(rows)
        per_doc = np.repeat(np.asarray(weights, dtype=np.float64) * scale, np.diff(starts))
        coef = per_doc * (labels[:, 0] - labels[:, 1])
        if docs is None:
            return self.rows.rows_sum(coef)
        nz = np.flatnonzero(coef)
        return np.asarray(self.X[docs[nz]].T @ coef[nz]).ravel()

    # -- labellings ------------------------------------------------------------------------
    def split_labels(self, labels, rows):
        """The labelling of each query of ``rows`` alone, from a labelling of ``rows``."""
        starts = selected_starts(self.starts, rows)
        return [labels[starts[j] : starts[j + 1]] for j in range(len(starts) - 1)]

    def pick(self, candidates, choice):
        """Labelling taking, for query k, candidates[choice[k]]'s counts of its documents."""
        per_doc = np.repeat(np.asarray(choice), self._sizes)
        return np.stack(candidates)[per_doc, np.arange(self.n_documents)]

    def predict(self, w, X):
        return as_csr(X) @ w

    def to_model(self, w, n_train: int = 0, loss_id: int = SWAPPED_PAIRS):
        """An SVMlight linear model marked as a ranking function (svm_classify reads it)."""
        return RankingModel(np.asarray(w, dtype=np.float64).copy(), 0.0, n_train=self.n_documents)


# -- evaluation ---------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _query_metrics(lo_query, hi_query, s, y, starts, at, out):
    """Per query of lo_query..hi_query: out[q] = (pairs, swapped pairs, NDCG@at, AP);
    NDCG is NaN for a query without gain, AP for one without a relevant document.
    Documents are ranked by score, ties broken against the targets (the less relevant
    first)."""
    for q in range(lo_query, hi_query):
        lo, hi = starts[q], starts[q + 1]
        m = hi - lo
        rel = np.maximum(y[lo:hi], 0.0)
        by_rel = np.argsort(-rel, kind="mergesort")
        order = by_rel[np.argsort(s[lo:hi][by_rel], kind="mergesort")][::-1]
        dcg = 0.0
        n_relevant = 0
        precision_sum = 0.0
        for r in range(m):
            g = rel[order[r]]
            if r < at:
                dcg += (2.0**g - 1.0) / np.log2(r + 2.0)
            if g > 0:
                n_relevant += 1
                precision_sum += n_relevant / (r + 1.0)
        ideal = np.sort(rel)[::-1]
        idcg = 0.0
        for r in range(min(at, m)):
            idcg += (2.0 ** ideal[r] - 1.0) / np.log2(r + 2.0)
        out[q, 2] = dcg / idcg if idcg > 0 else np.nan
        out[q, 3] = precision_sum / n_relevant if n_relevant > 0 else np.nan


def query_metrics(scores, y, starts, at=NDCG_AT):
    """Per query (n_queries, 4): pairs, swapped pairs (SVMrank's: the pairs y_i > y_j with
    s_i <= s_j, ties swapped), NDCG@at (gain 2^rel − 1, rel = max(y, 0), discount
    1/log2(1 + rank)) and average precision (relevant: y > 0); NaN where a query has no
    gain or no relevant document. Ties in the scores are broken against the targets."""
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    starts = np.asarray(starts, dtype=np.int64)
    level, n_levels, n_pairs = relevance_levels(y, starts)
    counts = np.empty((len(y), 2), dtype=np.int64)
    pair_counts(scores, level, n_levels, starts, 0.0, True, counts)
    out = np.empty((len(starts) - 1, 4))
    in_row_chunks(
        _query_metrics, len(starts) - 1, scores, y, starts, at, out, min_rows=MIN_CHUNK_QUERIES
    )
    out[:, 0] = n_pairs
    out[:, 1] = np.add.reduceat(counts[:, 0], starts[:-1]) if len(y) else 0
    return out
