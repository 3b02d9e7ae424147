"""Sequence tagging as a structured problem: SVMhmm V3.10's instance of SVMstruct.

An example is a sentence: its tokens' feature rows and their tags 1..K. Ψ(x, y) is
SVMhmm's (:class:`cpsvm.decoding.viterbi.HmmLayout`: transition counts of order 1..t and
emission blocks of order 0..e), so w is the model file's weight vector as it stands.
A labelling of the examples (``labels``) is one int64 array of tags over all their
tokens, sentence after sentence; ``rows`` are sentence indices, and a labelling of
``rows`` holds those sentences' tokens, concatenated in that order.

Loss (SVMhmm's ``-l``): 1 (default) Hamming, TOKEN_LOSS per wrong token — the number of
wrong tags, as svm_hmm_learn counts it; 0 zero/one per sentence. With SVMstruct's C
convention (the 1-slack cut averages over the n sentences) ``-c C`` minimises
½|w|² + (C/n)·Σ_i ξ_i, the objective svm_hmm_learn prints.

The separation oracle is Viterbi on the emission scores of one sparse product for all
tokens (:func:`cpsvm.decoding.viterbi.most_violated`), over the sentences in parallel.
"""

from __future__ import annotations

import numpy as np

from ...conventions import TOKEN_LOSS
from ...data import SequenceDataset
from ...decoding.segments import selected_starts
from ...decoding.viterbi import (
    LOSS_HAMMING,
    LOSS_ZERO_ONE,
    HmmLayout,
    emission_scores,
    hamming_losses,
    most_violated,
    psi_sum,
    sequence_scores,
)
from ...models import SequenceModel
from ...sparse_ops import RowBlocks, as_csr
from ..base import StructuredProblem

LOSSES = (LOSS_ZERO_ONE, LOSS_HAMMING)


def training_sequences(dataset) -> SequenceDataset:
    """The sentences of an SVM-hmm training file read as lines (a :class:`Dataset` with
    qid), checked as svm_hmm_learn checks them (:meth:`SequenceDataset.from_dataset`);
    a SequenceDataset passes as it is."""
    if isinstance(dataset, SequenceDataset):
        return dataset
    return SequenceDataset.from_dataset(dataset, for_training=True)


class HmmProblem(StructuredProblem):
    """SVMhmm's problem on a :class:`SequenceDataset` (training tags 1..K).

    trans_order, emit_order : SVMhmm's ``--t`` and ``--e``; beam : ``--b`` (0 exact
    Viterbi; used by the margin-rescaled Hamming oracle, the others are exact);
    loss_id : ``-l`` (LOSS_HAMMING or LOSS_ZERO_ONE); loss_scale : Δ of a wrong token or
    sentence. ``flip_gain`` None: not a binary hinge (see :mod:`cpsvm.engine.ocas`).
    """

    flip_gain = None

    def __init__(
        self,
        seqs: SequenceDataset,
        trans_order=1,
        emit_order=0,
        beam=0,
        loss_id=LOSS_HAMMING,
        n_tags=None,
        loss_scale=TOKEN_LOSS,
    ):
        if loss_id not in LOSSES:
            raise ValueError(f"expected loss 0 (zero/one) or 1 (Hamming), got {loss_id}")
        X = as_csr(seqs.X)
        if not X.has_canonical_format:
            X.sum_duplicates()
        self.X = X
        self.rows = RowBlocks(X)
        self.tags = np.asarray(seqs.tags, dtype=np.int64)
        self.starts = np.asarray(seqs.starts, dtype=np.int64)
        self.layout = HmmLayout(
            n_features=X.shape[1],
            n_tags=int(n_tags or self.tags.max()),
            trans_order=trans_order,
            emit_order=emit_order,
        )
        self.beam = int(beam)
        self.loss_id = loss_id
        self.loss_scale = float(loss_scale)
        self.n_examples = len(self.starts) - 1
        self.size_psi = self.layout.size_psi
        self.n_weights_at = self.layout.size_trans  # separate_at/margins_at read only these
        self.n_tokens = len(self.tags)
        self._last_scores = None  # (w, its emission scores of all tokens)

    # -- the selected sentences ------------------------------------------------------------
    def _batch(self, rows):
        """(token features, true tags, starts) of the sentences ``rows`` (None: all)."""
        if rows is None:
            return self.rows, self.tags, self.starts
        rows = np.asarray(rows, dtype=np.int64)
        starts = selected_starts(self.starts, rows)
        lengths = np.diff(starts)
        tokens = np.repeat(self.starts[rows] - starts[:-1], lengths) + np.arange(starts[-1])
        return self.X[tokens], self.tags[tokens], starts

    def scores(self, w, rows=None):
        """Emission scores E of every token of ``rows`` (one sparse product)."""
        if rows is None:
            return self._all_scores(w)
        return emission_scores(w, self._batch(rows)[0], self.layout)

    def _all_scores(self, w):
        """E of all tokens, kept for the last w: the cached oracle (-w 4) scores the same
        w twice when its cache has no violated cut (margins_many, then separate)."""
        w = np.asarray(w, dtype=np.float64)
        last = self._last_scores
        if last is not None and last[0].shape == w.shape and np.array_equal(last[0], w):
            return last[1]
        E = emission_scores(w, self.rows, self.layout)
        self._last_scores = (w.copy(), E)
        return E

    def true_labels(self):
        return self.tags

    def separate(self, w, rescaling, rows=None):
        X, y, starts = self._batch(rows)
        E = self._all_scores(w) if rows is None else emission_scores(w, X, self.layout)
        return most_violated(
            E,
            w,
            starts,
            self.layout,
            y,
            rescaling=rescaling,
            loss=self.loss_id,
            loss_weight=self.loss_scale,
            beam=self.beam,
        )

    def separate_at(self, E, w):
        """Margin-rescaled most violated tags of all sentences where the emission scores
        are E and the transitions w's (OCAS's line search, :mod:`cpsvm.engine.ocas`)."""
        return most_violated(
            E,
            w,
            self.starts,
            self.layout,
            self.tags,
            loss=self.loss_id,
            loss_weight=self.loss_scale,
            beam=self.beam,
        )

    def margins_at(self, E, w, labels):
        """margins(w, labels) of all sentences from emission scores E (linear in E, w)."""
        return self._margins(E, w, labels, self.tags, self.starts)

    def margins_many_at(self, E, w, labellings):
        """margins_at(E, w, labels) for several labellings (the true scores once)."""
        true = sequence_scores(E, w, self.tags, self.starts, self.layout)
        return [
            true - sequence_scores(E, w, labels, self.starts, self.layout) for labels in labellings
        ]

    def losses(self, labels, rows=None):
        _, y, starts = self._batch(rows)
        wrong = hamming_losses(y, labels, starts)
        if self.loss_id == LOSS_ZERO_ONE:
            wrong = (wrong > 0).astype(np.float64)
        return self.loss_scale * wrong

    def _margins(self, E, w, labels, y, starts):
        return sequence_scores(E, w, y, starts, self.layout) - sequence_scores(
            E, w, labels, starts, self.layout
        )

    def margins(self, w, labels, rows=None):
        X, y, starts = self._batch(rows)
        E = self._all_scores(w) if rows is None else emission_scores(w, X, self.layout)
        return self._margins(E, w, labels, y, starts)

    def margins_many(self, w, labellings):
        """margins(w, labels) of several labellings of all sentences, from one product."""
        return self.margins_many_at(self._all_scores(w), w, labellings)

    def delta_psi_sum(self, weights, labels, rows=None):
        X, y, starts = self._batch(rows)
        weights = np.asarray(weights, dtype=np.float64)
        labels = np.asarray(labels, dtype=np.int64)
        # Sentences tagged right add nothing; each other one enters twice in one sum,
        # with its true tags (+weight) and with ``labels`` (-weight).
        moved = np.flatnonzero((hamming_losses(y, labels, starts) > 0) & (weights != 0))
        if len(moved) == 0:
            return np.zeros(self.size_psi)
        token_moved = np.repeat(np.isin(np.arange(len(weights)), moved), np.diff(starts))
        twice = np.concatenate([moved, moved])
        return psi_sum(
            np.concatenate([weights[moved], -weights[moved]]),
            np.concatenate([y[token_moved], labels[token_moved]]),
            X,
            starts,
            self.layout,
            sentences=twice,
        )

    # -- labellings ------------------------------------------------------------------------
    def split_labels(self, labels, rows):
        """The labelling of each sentence of ``rows`` alone, from a labelling of ``rows``."""
        starts = selected_starts(self.starts, rows)
        return [labels[starts[j] : starts[j + 1]] for j in range(len(starts) - 1)]

    def pick(self, candidates, choice):
        """Labelling taking, for sentence i, candidates[choice[i]]'s tags of sentence i."""
        per_token = np.repeat(np.asarray(choice), np.diff(self.starts))
        return np.stack(candidates)[per_token, np.arange(self.n_tokens)]

    def to_model(self, w, n_train: int = 0, loss_id: int = LOSS_HAMMING):
        """An SVMhmm V3.10 model (svm_hmm_classify reads it)."""
        return SequenceModel.from_layout(
            np.asarray(w, dtype=np.float64).copy(),
            self.layout,
            loss_id=self.loss_id,
            n_train=n_train,
        )
