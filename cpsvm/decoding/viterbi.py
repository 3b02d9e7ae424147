"""SVMhmm's joint feature map and its Viterbi decoders, batched over all sentences.

Tags are the file's 1..K in every public argument and result (0 and values above K may
appear as *true* tags of a test file: they only count as errors). A batch of sentences is
token rows plus ``starts`` (int64, n_sentences + 1): sentence s is rows
``starts[s]:starts[s+1]`` of the token matrix X, of the emission scores E and of the tag
arrays. Functions that take ``sentences`` (an index array, default all) work on those
sentences only; their token results are then the selected sentences' tokens,
concatenated in the order given (:func:`cpsvm.decoding.segments.selected_starts` gives
the boundaries).

Layout of w (:class:`HmmLayout`, SVMhmm V3.10's own order, 0-based: w[j] is feature j+1
of the model file). With K tags, F emission features, transition order t (``--t``) and
emission order e (``--e``), writing a tag history as digits a_0 (current tag), a_1
(previous), ... in 0..K-1:

* transitions of order m = 1..t (the last m+1 tags) at
  ``trans_start(m) + Σ_{k=0..m} a_k·K^k``, ``trans_start(m) = K + K² + ... + K^m``;
  Ψ counts, at each position i >= m, the order-m tuple ending there, so a second-order
  model scores both pairs and triples (indices 0..K-1 and ``size_trans`` are unused);
* emissions: one block of F weights per emission state, the states in order: the K
  tags (order 0), then for e = 1 the K² pairs (previous p, current c) as ``K + c + K·p``;
  ``emission_weights(w)`` is that (n_emit_states, F) matrix, a view of w. Ψ adds token
  i's features to its tag's block, and for e = 1 and i >= 1 also to its pair's block;
* ``size_psi = 1 + K + ... + K^(t+1) + F·(1 + n_emit_states)`` (SVMhmm's sizePsi; the
  model file's "highest feature index" is size_psi + 1, ``highest_feature_index``).

Scores: w·Ψ(x, y) = Σ_i E[i, y_i] (+ pair emissions) + Σ_i transitions. The decoders take
``E = emission_scores(w, X, layout)`` (one sparse product X·Wᵀ for all tokens; for e = 1
the pair columns already include the tag's order-0 score) and w for the transitions.

Decoders (numba, over chunks of sentences on threads; each sentence is decoded on its
own, so results do not depend on the thread count; ``n_threads`` as
:func:`cpsvm.threads.thread_count`):

* :func:`viterbi` — argmax_y w·Ψ(x, y), or with ``true_tags`` and ``loss_weight`` > 0
  the margin-rescaled argmax of loss_weight·Hamming(y_true, y) + w·Ψ(x, y); exact, or a
  beam search keeping the ``beam`` best states per position. Exact decoding breaks ties
  as svm_hmm_classify does, so its predictions are reproduced;
* :func:`most_violated` — the separation oracle for both rescalings and both losses
  (SVMstruct's ``-o`` 1/2 and SVMhmm's ``-l`` 0/1): slack rescaling,
  argmax_ŷ Δ(y, ŷ)·(1 + w·Ψ(x, ŷ) − w·Ψ(x, y)), and the zero/one losses are exact, by
  Viterbi over (state, number of errors so far) — the errors capped at 1 for zero/one;
  it may return ŷ = y (a value of 0);
* :func:`psi_sum` — Σ_s coef_s·Ψ(x_s, y_s), dense, from sparse products;
* :func:`sequence_scores` — w·Ψ(x_s, y_s) per sentence from E;
* :func:`hamming_losses` — wrong tokens per sentence.

Working memory of a decoder, per sentence being decoded: length × K^t back-pointers
(times the number of error counts + 1 for the error-count decoders).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..compiled import njit
from ..conventions import MARGIN_RESCALING, SLACK_RESCALING
from ..sparse_ops import RowBlocks
from ..threads import in_row_chunks, map_in_threads, thread_count
from .segments import selected_starts

__all__ = [
    "HmmLayout",
    "LOSS_ZERO_ONE",
    "LOSS_HAMMING",
    "emission_scores",
    "viterbi",
    "most_violated",
    "psi_sum",
    "sequence_scores",
    "hamming_losses",
]

LOSS_ZERO_ONE = 0  # SVMhmm -l 0: zero/one loss per sentence
LOSS_HAMMING = 1  # SVMhmm -l 1 (default): one per wrong token

MAX_TRANS_ORDER = 3  # SVMhmm's --t range is 0..3
MAX_EMIT_ORDER = 1  # and --e's 0..1 (never above --t)


def _cum(order: int, k: int) -> int:
    """K + K² + ... + K^(order+1) (SVMhmm's largest index of that order, 1-based)."""
    return sum(k**j for j in range(1, order + 2))


@dataclass(frozen=True)
class HmmLayout:
    """Where SVMhmm V3.10 keeps each weight of Ψ (see the module docstring).

    n_features : F, the emission features (the model file's "number of emission
        features"; test features above it are ignored).
    n_tags : K, tags 1..K.
    trans_order : t in 0..3 (``--t``), emit_order : e in 0..1 (``--e``), e <= t.
    """

    n_features: int
    n_tags: int
    trans_order: int = 1
    emit_order: int = 0

    def __post_init__(self):
        if self.n_features < 0 or self.n_tags < 1:
            raise ValueError(
                f"expected n_features >= 0 and n_tags >= 1, got {self.n_features} and {self.n_tags}"
            )
        if not 0 <= self.trans_order <= MAX_TRANS_ORDER:
            raise ValueError(
                f"expected a transition order in 0..{MAX_TRANS_ORDER}, got {self.trans_order}"
            )
        if not 0 <= self.emit_order <= min(MAX_EMIT_ORDER, self.trans_order):
            top = min(MAX_EMIT_ORDER, self.trans_order)
            raise ValueError(
                f"expected an emission order in 0..{top} (at most the "
                f"transition order), got {self.emit_order}"
            )

    # -- transitions ------------------------------------------------------------------
    def trans_start(self, m: int) -> int:
        """Index in w of the order-m transition block (m = 1..t), K^(m+1) weights,
        tuple (a_m, ..., a_1, a_0) at ``trans_start(m) + Σ a_k·K^k``."""
        if not 1 <= m <= self.trans_order:
            raise ValueError(f"no transition block of order {m}")
        return _cum(m - 1, self.n_tags)

    @property
    def size_trans(self) -> int:
        """Indices 0..size_trans-1 of w hold transitions (0..K-1 unused)."""
        return _cum(self.trans_order, self.n_tags)

    # -- emissions --------------------------------------------------------------------
    @property
    def n_emit_states(self) -> int:
        """K (e = 0) or K + K² (e = 1): rows of :meth:`emission_weights`."""
        return _cum(self.emit_order, self.n_tags)

    @property
    def emission_start(self) -> int:
        """Index in w of the first emission weight (tag 1, feature 1)."""
        return self.size_trans + 1 + self.n_features

    @property
    def size_psi(self) -> int:
        """Length of w and Ψ (SVMhmm's sizePsi)."""
        return self.emission_start + self.n_features * self.n_emit_states

    @property
    def highest_feature_index(self) -> int:
        """What SVMhmm writes as the model's "highest feature index": size_psi + 1."""
        return self.size_psi + 1

    def emission_weights(self, w) -> np.ndarray:
        """The emission weights of w as a (n_emit_states, F) view: row c-1 for tag c,
        row K + (c-1) + K·(p-1) for the pair (previous p, current c) when e = 1."""
        w = np.asarray(w)
        return w[self.emission_start : self.size_psi].reshape(self.n_emit_states, self.n_features)

    def transition_table(self, w) -> np.ndarray:
        """Transition scores as the decoders read them (float64, length size_trans):
        w's transition weights with each order's block holding the sum of the lower
        orders' (the score of the last tag given its whole history), as SVMhmm adds them.
        """
        k = self.n_tags
        table = np.array(w[: self.size_trans], dtype=np.float64)
        for m in range(2, self.trans_order + 1):
            lo, lower = self.trans_start(m), self.trans_start(m - 1)
            # the order-m tuple's oldest tag is its most significant digit
            block = table[lo : lo + k ** (m + 1)].reshape(k, k**m)
            block += table[lower : lower + k**m][None, :]
        return table


# -- emission scores --------------------------------------------------------------------


def emission_scores(w, X, layout: HmmLayout) -> np.ndarray:
    """E (n_tokens, n_emit_states) float64: E[i, c-1] = w_c·x_i for tag c and, when
    e = 1, E[i, K + (c-1) + K·(p-1)] = w_(p,c)·x_i + w_c·x_i.

    X : CSR token features (or a :class:`cpsvm.sparse_ops.RowBlocks` of them, threaded);
    columns beyond F are ignored, as svm_hmm_classify ignores test features above the
    model's. One sparse product for all tokens, summed in each row's feature order.
    """
    W = layout.emission_weights(np.asarray(w, dtype=np.float64))
    f = layout.n_features
    if isinstance(X, RowBlocks):
        d = X.X.shape[1]
        if d > f:
            raise ValueError(
                f"a RowBlocks with {d} columns for a layout of {f} features: "
                "drop the extra columns first"
            )
        Wt = np.ascontiguousarray(W[:, :d].T)
        E = np.empty((X.X.shape[0], W.shape[0]))

        def run(b):
            # scipy's product per block, on threads (RowBlocks.dot's own kernels read
            # one class row at a time: slower for K or K + K² columns)
            lo, hi = X.bounds[b]
            E[lo:hi] = X.blocks[b] @ Wt

        map_in_threads(run, range(len(X.blocks)))
    else:
        X = sp.csr_matrix(X) if not sp.isspmatrix_csr(X) else X
        d = X.shape[1]
        if d > f:
            X = X[:, :f]
            d = f
        E = np.asarray(X @ np.ascontiguousarray(W[:, :d].T))
    E = np.ascontiguousarray(E, dtype=np.float64)
    if layout.emit_order == 1:
        k = layout.n_tags
        pairs = E[:, k:].reshape(E.shape[0], k, k)  # [token, previous, current]
        pairs += E[:, None, :k]
    return E


# -- decoders -----------------------------------------------------------------------------


def _prepare(E, w, starts, layout, sentences):
    E = np.ascontiguousarray(E, dtype=np.float64)
    if E.ndim != 2 or E.shape[1] != layout.n_emit_states:
        raise ValueError(
            f"expected emission scores of shape (n_tokens, {layout.n_emit_states}), got {E.shape}"
        )
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    if sentences is None:
        sentences = np.arange(len(starts) - 1, dtype=np.int64)
    sentences = np.ascontiguousarray(sentences, dtype=np.int64)
    out_starts = selected_starts(starts, sentences)
    trans = layout.transition_table(np.asarray(w, dtype=np.float64))
    k = layout.n_tags
    toff = np.zeros(MAX_TRANS_ORDER + 1, dtype=np.int64)
    for m in range(1, layout.trans_order + 1):
        toff[m] = layout.trans_start(m)
    return E, trans, toff, starts, sentences, out_starts, k


def _true_zero_based(true_tags, starts, n_tokens, k):
    """True tags as 0..K-1, -1 where unknown (0 or above K in a test file)."""
    if true_tags is None:
        return np.full(n_tokens, -1, dtype=np.int64)
    y = np.asarray(true_tags, dtype=np.int64)
    if len(y) != n_tokens:
        raise ValueError(f"expected {n_tokens} true tags, got {len(y)}")
    return np.where((y >= 1) & (y <= k), y - 1, -1).astype(np.int64)


def viterbi(
    E,
    w,
    starts,
    layout: HmmLayout,
    *,
    true_tags=None,
    loss_weight=0.0,
    beam=0,
    sentences=None,
    n_threads=None,
) -> np.ndarray:
    """Best tags (int64, 1..K) of every token of the selected sentences.

    E : :func:`emission_scores` of w for the tokens (rows indexed by ``starts``).
    w : the weight vector (its transitions are read; its emissions are already in E).
    true_tags, loss_weight : with both, each token's tag other than its true tag gains
        loss_weight (margin rescaling with Hamming loss: argmax Δ + w·Ψ). True tags
        outside 1..K add nothing.
    beam : 0 = exact Viterbi (ties broken as svm_hmm_classify); B > 0 keeps only the B
        best states at each position (SVMhmm's ``--b``; its pruning is not the same, so
        beam taggings may differ from svm_hmm's): a valid tagging whose score is at most
        the exact one, equal once B >= K^t.
    sentences : indices of the sentences to decode (default all); the result holds their
        tokens concatenated in that order (see :func:`~cpsvm.decoding.segments.selected_starts`).
    """
    E, trans, toff, starts, sentences, out_starts, k = _prepare(E, w, starts, layout, sentences)
    ytrue = _true_zero_based(true_tags if loss_weight else None, starts, E.shape[0], k)
    out = np.empty(out_starts[-1], dtype=np.int64)
    with thread_count(n_threads):
        in_row_chunks(
            _viterbi_rows,
            len(sentences),
            E,
            trans,
            toff,
            starts,
            sentences,
            out_starts,
            k,
            layout.trans_order,
            layout.emit_order,
            ytrue,
            float(loss_weight),
            int(beam),
            out,
            min_rows=MIN_CHUNK_SENTENCES,
        )
    return out + 1


def most_violated(
    E,
    w,
    starts,
    layout: HmmLayout,
    true_tags,
    *,
    rescaling=MARGIN_RESCALING,
    loss=LOSS_HAMMING,
    loss_weight=1.0,
    beam=0,
    sentences=None,
    n_threads=None,
) -> np.ndarray:
    """The separation oracle's ŷ (int64 tags 1..K) for every token of the selected
    sentences, with Δ = loss_weight·(number of wrong tokens) (``loss`` LOSS_HAMMING) or
    loss_weight·[ŷ ≠ y] (LOSS_ZERO_ONE):

    * MARGIN_RESCALING (2): argmax_ŷ Δ(y, ŷ) + w·Ψ(x, ŷ);
    * SLACK_RESCALING (1): argmax_ŷ Δ(y, ŷ)·(1 + w·Ψ(x, ŷ) − w·Ψ(x, y)).

    true_tags must lie in 1..K. Margin rescaling with Hamming loss is :func:`viterbi`
    (``beam`` applies); the three others are exact (``beam`` is ignored), by Viterbi over
    (state, errors so far), the error count capped at 1 for zero/one loss. A sentence
    whose best value is 0 (no violated constraint) gets ŷ = y.
    """
    k = layout.n_tags
    y = np.asarray(true_tags, dtype=np.int64)
    if len(y) and (y.min() < 1 or y.max() > k):
        raise ValueError(f"expected true tags in 1..{k}")
    if rescaling not in (MARGIN_RESCALING, SLACK_RESCALING):
        raise ValueError(f"unknown rescaling {rescaling!r}")
    if loss not in (LOSS_ZERO_ONE, LOSS_HAMMING):
        raise ValueError(f"unknown loss {loss!r}")
    if rescaling == MARGIN_RESCALING and loss == LOSS_HAMMING:
        return viterbi(
            E,
            w,
            starts,
            layout,
            true_tags=y,
            loss_weight=loss_weight,
            beam=beam,
            sentences=sentences,
            n_threads=n_threads,
        )
    E, trans, toff, starts, sentences, out_starts, k = _prepare(E, w, starts, layout, sentences)
    ytrue = _true_zero_based(y, starts, E.shape[0], k)
    out = np.empty(out_starts[-1], dtype=np.int64)
    mode = _MODE_SLACK if rescaling == SLACK_RESCALING else _MODE_MARGIN
    zero_one = loss == LOSS_ZERO_ONE
    with thread_count(n_threads):
        in_row_chunks(
            _errors_rows,
            len(sentences),
            E,
            trans,
            toff,
            starts,
            sentences,
            out_starts,
            k,
            layout.trans_order,
            layout.emit_order,
            ytrue,
            zero_one,
            float(loss_weight),
            mode,
            out,
            min_rows=MIN_CHUNK_SENTENCES,
        )
    return out + 1


def _token_positions(starts, sentences):
    """For the selected sentences' tokens: their row in the full arrays, their sentence's
    rank in ``sentences`` and their position in the sentence."""
    starts = np.asarray(starts, dtype=np.int64)
    out_starts = selected_starts(starts, sentences)
    if sentences is None:
        sentences = np.arange(len(starts) - 1)
    sentences = np.asarray(sentences, dtype=np.int64)
    lengths = np.diff(out_starts)
    rank = np.repeat(np.arange(len(sentences)), lengths)
    position = np.arange(out_starts[-1]) - out_starts[rank]
    rows = starts[sentences][rank] + position
    return rows, rank, position


def psi_sum(coef, tags, X, starts, layout: HmmLayout, *, sentences=None) -> np.ndarray:
    """Σ_s coef_s·Ψ(x_s, y_s) as a dense float64 vector of length size_psi.

    coef : one factor per selected sentence; tags : their tokens' tags (1..K),
        concatenated as :func:`viterbi` returns them; X : CSR token features (or a
        RowBlocks), rows indexed by ``starts``; columns beyond F are ignored.
    Emissions are one sparse product (a sparse tokens-to-states matrix times X),
    transitions a bincount.
    """
    if isinstance(X, RowBlocks):
        X = X.X
    X = sp.csr_matrix(X) if not sp.isspmatrix_csr(X) else X
    k, f = layout.n_tags, layout.n_features
    if X.shape[1] > f:
        X = X[:, :f]
    rows, rank, position = _token_positions(starts, sentences)
    a = np.asarray(tags, dtype=np.int64) - 1
    if len(a) != len(rows):
        raise ValueError(f"expected {len(rows)} tags, got {len(a)}")
    if len(a) and (a.min() < 0 or a.max() >= k):
        raise ValueError(f"expected tags in 1..{k}")
    c = np.asarray(coef, dtype=np.float64)[rank]
    psi = np.zeros(layout.size_psi)
    # emissions
    state_rows, token_rows, values = [a], [rows], [c]
    if layout.emit_order == 1:
        later = np.flatnonzero(position >= 1)
        state_rows.append(k + a[later] + k * a[later - 1])
        token_rows.append(rows[later])
        values.append(c[later])
    A = sp.csr_matrix(
        (np.concatenate(values), (np.concatenate(state_rows), np.concatenate(token_rows))),
        shape=(layout.n_emit_states, X.shape[0]),
    )
    # A sentence summed twice with opposite signs (a δΨ) cancels exactly on the tokens
    # whose emission state is the same in both: dropping those zeros leaves the sum
    # as it was and the product only the tokens that differ.
    A.eliminate_zeros()
    A.sort_indices()
    # A @ X added straight into psi's emission rows, in scipy's own order of terms (no
    # sparse result to size, sort and densify)
    _states_times(
        A.indptr,
        A.indices,
        A.data,
        X.indptr,
        X.indices,
        np.asarray(X.data, dtype=np.float64),
        layout.emission_weights(psi),
    )
    # transitions: at position i >= m, the order-m tuple ending at i
    for m in range(1, layout.trans_order + 1):
        at = np.flatnonzero(position >= m)
        index = np.full(len(at), layout.trans_start(m), dtype=np.int64)
        for back in range(m + 1):
            index += a[at - back] * k**back
        psi[: layout.size_trans] += np.bincount(index, weights=c[at], minlength=layout.size_trans)
    return psi


def sequence_scores(E, w, tags, starts, layout: HmmLayout, *, sentences=None) -> np.ndarray:
    """w·Ψ(x_s, y_s) (float64) of each selected sentence, from its emission scores E and
    w's transitions; tags as :func:`viterbi` returns them (1..K)."""
    E, trans, toff, starts, sentences, out_starts, k = _prepare(E, w, starts, layout, sentences)
    a = np.ascontiguousarray(np.asarray(tags, dtype=np.int64) - 1)
    if len(a) != out_starts[-1]:
        raise ValueError(f"expected {out_starts[-1]} tags, got {len(a)}")
    if len(a) and (a.min() < 0 or a.max() >= k):
        raise ValueError(f"expected tags in 1..{k}")
    out = np.empty(len(sentences))
    _path_scores(
        E,
        trans,
        toff,
        starts,
        sentences,
        out_starts,
        k,
        layout.trans_order,
        layout.emit_order,
        a,
        out,
    )
    return out


def hamming_losses(true_tags, tags, starts) -> np.ndarray:
    """Number of tokens whose tag differs, per sentence (float64); both tag arrays
    delimited by the same ``starts``."""
    starts = np.asarray(starts, dtype=np.int64)
    wrong = (np.asarray(true_tags) != np.asarray(tags)).astype(np.float64)
    if len(starts) < 2:
        return np.zeros(0)
    sums = (
        np.add.reduceat(wrong, starts[:-1] - starts[0]) if len(wrong) else np.zeros(len(starts) - 1)
    )
    sums[np.diff(starts) == 0] = 0.0
    return sums


# -- numba kernels ------------------------------------------------------------------------

_MODE_MARGIN = 0
_MODE_SLACK = 1


@njit(cache=True)
def _power(k, m):
    r = 1
    for _ in range(m):
        r *= k
    return r


@njit(cache=True)
def _prune(scores, active, n, beam):
    """Keep the ``beam`` best active states (ties: lower index first)."""
    count = 0
    for s in range(n):
        if active[s]:
            count += 1
    if count <= beam:
        return
    keyed = np.empty(n)
    for s in range(n):
        keyed[s] = -scores[s] if active[s] else np.inf
    order = np.argsort(keyed, kind="mergesort")
    for j in range(beam, n):
        active[order[j]] = False


@njit(cache=True)
def _emission_row(E, row, k, e, y, lw, em):
    """em[p, c]: the emission score of tag c after tag p at token ``row`` (one row of
    order-0 scores when e = 0), plus lw when c is not the true tag y (y >= 0)."""
    n_rows = k if e == 1 else 1
    for p in range(n_rows):
        base = k + k * p if e == 1 else 0
        for c in range(k):
            v = E[row, base + c]
            if lw != 0.0 and y >= 0 and c != y:
                v += lw
            em[p, c] = v


@njit(cache=True)
def _viterbi_one(E, trans, toff, lo, hi, k, t, e, ytrue, lw, beam, out, olo):
    """Decode tokens lo..hi of E into out[olo:...] (0-based tags).

    States at position i are the last min(i+1, max(t,1)) tags, current tag the least
    significant base-K digit. Each state keeps the first predecessor (lowest index) of
    the highest score, and the final state is the one whose (predecessor, tag) comes
    first among the highest: svm_hmm_classify's ties. Scores add as it does:
    (previous + transition) + emission."""
    length = hi - lo
    if length == 0:
        return
    tt = max(t, 1)
    n_all = _power(k, tt)
    prev = np.empty(n_all)
    cur = np.empty(n_all)
    pact = np.zeros(n_all, dtype=np.bool_)
    cact = np.zeros(n_all, dtype=np.bool_)
    back = np.empty((length, n_all), dtype=np.int64)
    em = np.empty((k, k))
    fast = t == 1 and e == 0 and beam == 0
    transT = np.empty(k * k if fast else 0)
    if fast:
        for h in range(k):
            for c in range(k):
                transT[c * k + h] = trans[toff[1] + k * h + c]
    _emission_row(E, lo, k, 0, ytrue[lo], lw, em)
    for c in range(k):
        prev[c] = em[0, c]
        pact[c] = True
    if beam > 0:
        _prune(prev, pact, k, beam)
    n_prev = k
    for i in range(1, length):
        m_prev = min(i, tt)
        n_cur = _power(k, min(i + 1, tt))
        for s in range(n_cur):
            cur[s] = -np.inf
        tb = toff[m_prev] if t > 0 else 0
        _emission_row(E, lo + i, k, e, ytrue[lo + i], lw, em)
        back_i = back[i]
        if fast:
            # first order, exact: each new tag's best predecessor as one pass over a
            # contiguous row of transT; the same sums, compared in the same order
            for c in range(k):
                ec = em[0, c]
                best = -np.inf
                arg = -1
                row = c * k
                for h in range(k):
                    v = (prev[h] + transT[row + h]) + ec
                    if v > best:
                        best = v
                        arg = h
                cur[c] = best
                if arg >= 0:
                    back_i[c] = arg
        for h in range(n_prev if not fast else 0):
            if not pact[h]:
                continue
            base = prev[h]
            nb = (k * h) % n_cur  # the new state is nb + c
            tr = tb + k * h
            ep = h % k if e == 1 else 0
            for c in range(k):
                s = base
                if t > 0:
                    s = s + trans[tr + c]
                s = s + em[ep, c]
                if cur[nb + c] < s:
                    cur[nb + c] = s
                    back_i[nb + c] = h
        for s in range(n_cur):
            cact[s] = cur[s] > -np.inf
        if beam > 0:
            _prune(cur, cact, n_cur, beam)
        prev, cur = cur, prev
        pact, cact = cact, pact
        n_prev = n_cur
    best = -1
    best_key = 0
    for s in range(n_prev):
        if not pact[s]:
            continue
        key = back[length - 1, s] * k + s % k if length > 1 else s
        if best < 0 or prev[s] > prev[best] or (prev[s] == prev[best] and key < best_key):
            best = s
            best_key = key
    s = max(best, 0)  # none only with NaN or infinite scores
    for i in range(length - 1, -1, -1):
        out[olo + i] = s % k
        if i > 0:
            s = back[i, s] if best >= 0 else 0


MIN_CHUNK_SENTENCES = 16  # a chunk of a decoder's sentences, at the least (in_row_chunks)


@njit(cache=True, nogil=True)
def _viterbi_rows(
    lo, hi, E, trans, toff, starts, sentences, out_starts, k, t, e, ytrue, lw, beam, out
):
    for j in range(lo, hi):
        s = sentences[j]
        _viterbi_one(
            E, trans, toff, starts[s], starts[s + 1], k, t, e, ytrue, lw, beam, out, out_starts[j]
        )


@njit(cache=True)
def _errors_one(E, trans, toff, lo, hi, k, t, e, ytrue, zero_one, lw, mode, out, olo):
    """Viterbi over (state, errors so far) for tokens lo..hi: the best score H_d of the
    taggings with d errors (d capped at 1 for zero/one), then the d maximising
    Δ_d + H_d (margin) or Δ_d·(1 + H_d − H_0) (slack; H_0 = w·Ψ(x, y)), Δ_d = lw·d."""
    length = hi - lo
    if length == 0:
        return
    cap = 1 if zero_one else length
    width = cap + 1
    tt = max(t, 1)
    n_all = _power(k, tt)
    prev = np.full(n_all * width, -np.inf)
    cur = np.empty(n_all * width)
    back = np.empty((length, n_all * width), dtype=np.int32)
    em = np.empty((k, k))
    y = ytrue[lo]
    _emission_row(E, lo, k, 0, y, 0.0, em)
    for c in range(k):
        prev[c * width + (0 if c == y else 1)] = em[0, c]
    n_prev = k
    for i in range(1, length):
        m_prev = min(i, tt)
        n_cur = _power(k, min(i + 1, tt))
        for s in range(n_cur * width):
            cur[s] = -np.inf
        tb = toff[m_prev] if t > 0 else 0
        y = ytrue[lo + i]
        _emission_row(E, lo + i, k, e, y, 0.0, em)
        top = min(i, cap)
        back_i = back[i]
        for h in range(n_prev):
            nb = (k * h) % n_cur
            tr = tb + k * h
            ep = h % k if e == 1 else 0
            for d in range(top + 1):
                hd = h * width + d
                base = prev[hd]
                if base == -np.inf:
                    continue
                wrong = min(d + 1, cap)
                for c in range(k):
                    s = base
                    if t > 0:
                        s = s + trans[tr + c]
                    s = s + em[ep, c]
                    ns = (nb + c) * width + (d if c == y else wrong)
                    if cur[ns] < s:
                        cur[ns] = s
                        back_i[ns] = hd
        prev, cur = cur, prev
        n_prev = n_cur
    # best final state for each error count
    best_state = np.full(width, -1, dtype=np.int64)
    for s in range(n_prev):
        for d in range(width):
            sd = s * width + d
            if prev[sd] > -np.inf and (best_state[d] < 0 or prev[sd] > prev[best_state[d]]):
                best_state[d] = sd
    if best_state[0] < 0:  # only with NaN or infinite scores: the true tags
        for i in range(length):
            out[olo + i] = ytrue[lo + i]
        return
    h0 = prev[best_state[0]]
    chosen = 0
    best_value = h0 if mode == _MODE_MARGIN else 0.0
    for d in range(1, width):
        if best_state[d] < 0:
            continue
        hd = prev[best_state[d]]
        if mode == _MODE_MARGIN:
            value = lw * d + hd
        else:
            value = lw * d * (1.0 + hd - h0)
        if value > best_value:
            best_value = value
            chosen = d
    sd = best_state[chosen]
    for i in range(length - 1, -1, -1):
        out[olo + i] = (sd // width) % k
        if i > 0:
            sd = back[i, sd]


@njit(cache=True, nogil=True)
def _errors_rows(
    lo, hi, E, trans, toff, starts, sentences, out_starts, k, t, e, ytrue, zero_one, lw, mode, out
):
    for j in range(lo, hi):
        s = sentences[j]
        _errors_one(
            E,
            trans,
            toff,
            starts[s],
            starts[s + 1],
            k,
            t,
            e,
            ytrue,
            zero_one,
            lw,
            mode,
            out,
            out_starts[j],
        )


@njit(cache=True)
def _states_times(a_ptr, a_idx, a_val, x_ptr, x_idx, x_val, out):
    """out[s, :] += Σ_t A[s, t]·X[t, :] (CSR A and X; out's columns cover X's)."""
    for s in range(len(a_ptr) - 1):
        row = out[s]
        for p in range(a_ptr[s], a_ptr[s + 1]):
            t = a_idx[p]
            c = a_val[p]
            for q in range(x_ptr[t], x_ptr[t + 1]):
                row[x_idx[q]] += c * x_val[q]


@njit(cache=True)
def _path_scores(E, trans, toff, starts, sentences, out_starts, k, t, e, tags, out):
    """Each selected sentence's w·Ψ(x, y)."""
    pows = np.empty(MAX_TRANS_ORDER + 2, dtype=np.int64)
    for m in range(MAX_TRANS_ORDER + 2):
        pows[m] = _power(k, m)
    keep = pows[max(t, 1)]
    for j in range(len(sentences)):
        s = sentences[j]
        lo = starts[s]
        olo = out_starts[j]
        length = starts[s + 1] - lo
        total = 0.0
        history = 0
        for i in range(length):
            c = tags[olo + i]
            if i == 0 or e == 0:
                ev = E[lo + i, c]
            else:
                ev = E[lo + i, k + c + k * tags[olo + i - 1]]
            if i > 0 and t > 0:
                m = min(i, t)
                if m == 1:
                    total = total + trans[toff[1] + c + k * tags[olo + i - 1]]
                else:
                    total = total + trans[toff[m] + c + k * (history % pows[m])]
            total = total + ev
            if t > 1:  # the longer histories only (order 1 reads the previous tag)
                history = (history * k + c) % keep
        out[j] = total
