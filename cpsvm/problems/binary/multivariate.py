"""Binary classification with SVMperf's multivariate losses (Joachims, *A Support Vector
Method for Multivariate Performance Measures*, ICML 2005): ``cp_learn -l 0, 1, 3, 4, 5, 10``.

As in SVMperf, the whole training set is one structured example: x all the feature
vectors, y the label vector, and a labelling ȳ a whole vector of predictions (or, for
ROC area, of pairwise orders), whose loss Δ(y, ȳ) does not decompose over the examples.
The scales are SVMperf's, so that ``-c`` means what it means there and the objective
½|w|² + C·ξ is the one svm_perf_learn prints:

* threshold losses (0 zero/one, 1 F1, 3 PRBEP, 4 Prec@k, 5 Rec@k): Ψ(x, ȳ) = (50/n)·Σ_i ȳ_i·x_i
  with ȳ_i = ±1, and Δ from the contingency table (a true positives, b false positives of
  ȳ) — 100 minus the measure in percent, and 1 for any error under zero/one. A labelling
  with a given (a, b) scores best when it keeps the a highest-scored positives and flips
  the b highest-scored negatives, so the separation oracle sorts the scores once and
  searches each count a of kept positives for its best b (:func:`best_contingency`).
  PRBEP looks only at labellings with as many predicted positives as there are positives,
  Prec@k at those with at least k, Rec@k at those with at most k (k = ``--p``·#positives,
  as SVMperf counts them).
* ROC area (10): ȳ orders each (positive i, negative j) pair, Ψ(x, ȳ) =
  (50/(P·N))·Σ_ij ȳ_ij·(x_i − x_j), Δ = 100·(swapped pairs)/(P·N). The argmax swaps a pair
  exactly when s_i − s_j < 1 (s = w·x), counted for every example by sorting:
  O(n log n); the slack is (100/(P·N))·Σ_ij max(0, 1 − (s_i − s_j)), SVMlight's hinge loss
  on the pair differences.

A labelling is held as a :class:`VectorLabelling`: the coefficients ``delta`` of
δΨ(ȳ) = Ψ(x, y) − Ψ(x, ȳ) = Σ_i delta_i·x_i and its loss, so margins are one product
with the scores and cuts one sum over the rows; ``labels`` is a list of one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...compiled import njit
from ...conventions import (
    LOSS_SCALE,
    MARGIN_RESCALING,
    PERF_LOSS_NAMES,
    PERF_MULTIVARIATE_LOSSES,
    PSI_SCALE,
    perf_k,
)
from ...models import LinearModel
from ..base import StructuredProblem
from .problem import BiasFeature

ZERO_ONE, F1, ERROR_RATE, PRBEP, PREC_K, REC_K, ROC_AREA = 0, 1, 2, 3, 4, 5, 10
THRESHOLD_LOSSES = (ZERO_ONE, F1, ERROR_RATE, PRBEP, PREC_K, REC_K)


@dataclass
class VectorLabelling:
    """A labelling of the whole training set: δΨ(ȳ) = Σ_i delta_i·x_i, and Δ(y, ȳ)."""

    delta: np.ndarray
    loss: float


# -- the threshold losses' oracle --------------------------------------------------------


@njit(cache=True)
def contingency_loss(loss_id, a, b, P, N):
    """Δ of a labelling with a true and b false positives (P positives, N negatives), in
    SVMperf's units, on the labellings its oracle looks at (see :func:`count_range`)."""
    if loss_id == 0:
        return 1.0 if a < P or b > 0 else 0.0
    if loss_id == 1:  # 100·(1 − F1), F1 = 2a/(2a + b + c) = 2a/(a + b + P)
        return 100.0 if a == 0 else 100.0 - 200.0 * a / (a + b + P)
    if loss_id == 2:
        return 100.0 * (b + P - a) / (P + N)
    if loss_id == 4:  # 100·(1 − precision); b >= 1 on its range
        return 100.0 - 100.0 * a / (a + b)
    return 100.0 - 100.0 * a / P  # PRBEP at a + b = P, and Rec@k: 100·(1 − recall)


@njit(cache=True)
def count_range(loss_id, a, P, N, k):
    """(lo, hi): the false-positive counts b SVMperf's oracle tries with a true positives,
    those of a positive loss: PRBEP b = P − a; Prec@k a + b >= k; Rec@k a + b <= k;
    every b otherwise. lo > hi when there is none."""
    if loss_id == 3:
        if a >= P or P - a > N:
            return 1, 0
        return P - a, P - a
    if loss_id == 4:
        return max(k - a, 1), N
    if loss_id == 5:
        if a >= P or a > k:
            return 1, 0
        return 0, min(N, k - a)
    return (1 if a == P else 0), N


@njit(cache=True)
def best_contingency(pos_desc, neg_desc, loss_id, k, margin_rescaling):
    """The most violated labelling of a threshold loss, as its counts (a, b) and its
    violation: margin rescaling Δ(a, b) + G(a, b), slack rescaling Δ(a, b)·(1 + G(a, b)),
    where G(a, b) = w·Ψ(ȳ) − w·Ψ(y) = −2·(the P − a lowest positive scores)
    + 2·(the b highest negative scores); scores in Ψ's scale, sorted descending.

    For each a, G is concave in b and so is Δ (F1, precision: a/(a + b) is convex), so
    the margin-rescaled value is concave in b and its largest maximiser is found by
    bisection on the sign of its difference; slack-rescaled, the product of two positive
    concave functions is log-concave where 1 + G > 0, which is again unimodal. Ties go
    as in SVMperf's scan (a ascending, then b descending, the first maximum kept): the
    smallest a and, for it, the largest b. O(P log N) after the sort. Returns
    (-1, -1, -inf) when no labelling has a positive loss."""
    P, N = len(pos_desc), len(neg_desc)
    prefix_p = np.zeros(P + 1)
    for i in range(P):
        prefix_p[i + 1] = prefix_p[i] + pos_desc[i]
    prefix_n = np.zeros(N + 1)
    n_nonneg = 0
    for j in range(N):
        prefix_n[j + 1] = prefix_n[j] + neg_desc[j]
        if neg_desc[j] >= 0.0:
            n_nonneg = j + 1
    best, best_a, best_b = -np.inf, -1, -1
    for a in range(P + 1):
        lo, hi = count_range(loss_id, a, P, N, k)
        if lo > hi:
            continue
        g_a = -2.0 * (prefix_p[P] - prefix_p[a])
        if margin_rescaling:
            # largest b in [lo, hi] whose step from b − 1 does not lose
            left, right = lo, hi
            while left < right:
                mid = (left + right + 1) // 2
                step = (
                    contingency_loss(loss_id, a, mid, P, N)
                    - contingency_loss(loss_id, a, mid - 1, P, N)
                    + 2.0 * neg_desc[mid - 1]
                )
                if step >= 0.0:
                    left = mid
                else:
                    right = mid - 1
            b = left
            value = contingency_loss(loss_id, a, b, P, N) + g_a + 2.0 * prefix_n[b]
        else:
            b = _slack_best_count(loss_id, a, lo, hi, g_a, prefix_n, n_nonneg, P, N)
            value = contingency_loss(loss_id, a, b, P, N) * (1.0 + g_a + 2.0 * prefix_n[b])
        if value > best:
            best, best_a, best_b = value, a, b
    return best_a, best_b, best


@njit(cache=True)
def _slack_best_count(loss_id, a, lo, hi, g_a, prefix_n, n_nonneg, P, N):
    """Slack rescaling: the largest b in [lo, hi] maximising Δ(a, b)·h(b),
    h(b) = 1 + g_a + 2·prefix_n[b] (concave, largest at b = n_nonneg). Where h > 0 the
    product is log-concave; if h <= 0 everywhere no labelling with this a is violated,
    and the b of the largest h is returned."""
    top = min(max(n_nonneg, lo), hi)
    if 1.0 + g_a + 2.0 * prefix_n[top] <= 0.0:
        return top
    # h rises on [lo, top] and falls on [top, hi]: the interval where it is positive.
    left, right = lo, top
    while left < right:
        mid = (left + right) // 2
        if 1.0 + g_a + 2.0 * prefix_n[mid] > 0.0:
            right = mid
        else:
            left = mid + 1
    first = left
    left, right = top, hi
    while left < right:
        mid = (left + right + 1) // 2
        if 1.0 + g_a + 2.0 * prefix_n[mid] > 0.0:
            left = mid
        else:
            right = mid - 1
    last = left
    left, right = first, last
    while left < right:
        mid = (left + right + 1) // 2
        here = contingency_loss(loss_id, a, mid, P, N) * (1.0 + g_a + 2.0 * prefix_n[mid])
        before = contingency_loss(loss_id, a, mid - 1, P, N) * (1.0 + g_a + 2.0 * prefix_n[mid - 1])
        if here >= before:
            left = mid
        else:
            right = mid - 1
    return left


def _lowest(values, ascending, count):
    """Indices of the ``count`` lowest of ``values`` (``ascending``: them sorted); of
    equal values at the boundary, those at the highest indices."""
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    bound = ascending[count - 1]
    below = np.flatnonzero(values < bound)
    tied = np.flatnonzero(values == bound)
    return np.concatenate([below, tied[len(tied) - (count - len(below)) :]])


@njit(cache=True)
def swapped_pairs(order, y, unit, delta):
    """ROC area's most violated labelling from the examples in ``order`` (decreasing
    s_i − 1 for positives, s_j for negatives): a pair is swapped when the negative comes
    first. Fills delta (unit × the swaps of each positive, −unit × those of each
    negative) and returns the number of swapped pairs."""
    n_pos = 0
    for i in range(len(y)):
        if y[i] > 0:
            n_pos += 1
    negatives_before, positives_before, swapped = 0, 0, 0
    for t in range(len(order)):
        i = order[t]
        if y[i] > 0:
            delta[i] = unit * negatives_before
            swapped += negatives_before
            positives_before += 1
        else:
            delta[i] = -unit * (n_pos - positives_before)
            negatives_before += 1
    return swapped


# -- the problem -----------------------------------------------------------------------------


class MultivariateProblem(BiasFeature, StructuredProblem):
    """SVMperf's binary problem under the loss ``loss_id`` (0, 1, 3, 4, 5 or 10; 2, the
    error rate, decomposes and is :class:`cpsvm.problems.binary.problem.BinaryProblem`).

    X, y: the examples and their ±1 labels; bias: SVMperf's --b, a constant feature
    (regularised), left out for ROC area, which is blind to it (its weight would be 0 up
    to rounding): the threshold is then 0;
    k_fraction: SVMperf's --p for Prec@k and Rec@k (0: 0.5 and 2). ``flip_gain`` None and
    ``separate_at``: -w 9 trains it by OCAS's structured line search
    (:mod:`cpsvm.engine.ocas`), the scores its outputs.
    """

    flip_gain = None
    loss_scale = LOSS_SCALE
    n_weights_at = 0  # separate_at and margins_at read the scores only

    def __init__(self, X, y, loss_id, bias=0.0, k_fraction=0.0):
        if loss_id not in PERF_MULTIVARIATE_LOSSES:
            raise ValueError(
                f"expected a multivariate loss {PERF_MULTIVARIATE_LOSSES}, got {loss_id}"
            )
        self._set_features(X, 0.0 if loss_id == ROC_AREA else bias)
        self._set_labels(y, loss_id, k_fraction, self.X.shape[1])

    def _set_labels(self, y, loss_id, k_fraction, size_psi):
        """What the oracle reads besides the features: the labels, the loss, k, Ψ's
        size and the true labelling's coefficients (the cluster's problem,
        :mod:`cpsvm.cluster.multivariate`, keeps only these on its client)."""
        self.y = np.asarray(y, dtype=np.float64)
        self.loss_id = int(loss_id)
        self.k_fraction = float(k_fraction)
        self.n_rows, self.size_psi = len(self.y), size_psi
        self.n_examples = 1
        self.positive = np.flatnonzero(self.y > 0)
        self.negative = np.flatnonzero(self.y <= 0)
        self.n_positive, self.n_negative = len(self.positive), len(self.negative)
        self.k = perf_k(self.loss_id, self.n_positive, self.k_fraction)
        # Ψ's coefficient of x_i in the true labelling: a threshold loss's ±50/n, or
        # ROC area's 50/P and −50/N.
        if self.loss_id == ROC_AREA:
            self.psi_true = np.where(
                self.y > 0, PSI_SCALE / self.n_positive, -PSI_SCALE / self.n_negative
            )
        else:
            self.psi_true = PSI_SCALE / self.n_rows * np.where(self.y > 0, 1.0, -1.0)

    @property
    def name(self) -> str:
        return PERF_LOSS_NAMES[self.loss_id]

    def scores(self, w, rows=None):
        """s_i = w·x_i of every row (OCAS's outputs)."""
        return self.rows.dot(w)

    def true_labels(self):
        return [VectorLabelling(np.zeros(self.n_rows), 0.0)]

    # -- separation ----------------------------------------------------------------------
    def most_violated(self, scores, rescaling=MARGIN_RESCALING) -> VectorLabelling:
        """The labelling of the most violated constraint where w·x = ``scores``."""
        if self.loss_id == ROC_AREA:
            if rescaling != MARGIN_RESCALING:
                raise ValueError("ROC area (-l 10) has margin rescaling only (-o 2)")
            return self._swapped_pairs(scores)
        scale = PSI_SCALE / self.n_rows
        s_pos, s_neg = scores[self.positive], scores[self.negative]
        pos_ascending, neg_descending = np.sort(s_pos), np.sort(s_neg)[::-1]
        a, b, _ = best_contingency(
            scale * pos_ascending[::-1],
            scale * neg_descending,
            self.loss_id,
            self.k,
            rescaling == MARGIN_RESCALING,
        )
        delta = np.zeros(self.n_rows)
        # flipped: the positives below the a kept, the b highest negatives
        delta[self.positive[_lowest(s_pos, pos_ascending, len(s_pos) - a)]] = 2.0 * scale
        delta[self.negative[_lowest(-s_neg, -neg_descending, b)]] = -2.0 * scale
        loss = contingency_loss(self.loss_id, a, b, self.n_positive, self.n_negative)
        return VectorLabelling(delta, loss)

    def _swapped_pairs(self, scores) -> VectorLabelling:
        """ROC area: swap (i, j) when s_i − s_j < 1, i.e. when negative j comes before
        positive i in the order of s_i − 1 and s_j (a tie scores the same either way)."""
        keys = scores.copy()
        keys[self.positive] -= 1.0
        unit = 2.0 * PSI_SCALE / (self.n_positive * self.n_negative)
        delta = np.empty(self.n_rows)
        swapped = swapped_pairs(np.argsort(-keys), self.y, unit, delta)
        return VectorLabelling(delta, unit * swapped)

    def separate(self, w, rescaling, rows=None):
        return [self.most_violated(self.scores(w), rescaling)]

    def separate_at(self, out, w):
        """Margin-rescaled most violated labelling where the scores are ``out``."""
        return [self.most_violated(out)]

    def slack(self, w) -> float:
        """ξ(w): the violation of the most violated constraint, at least 0 (margin
        rescaling), so ½|w|² + C·ξ(w) is the primal objective at w."""
        labels = self.separate(w, MARGIN_RESCALING)
        return max(0.0, float(self.losses(labels)[0] - self.margins(w, labels)[0]))

    # -- the protocol's sums ---------------------------------------------------------------
    def losses(self, labels, rows=None):
        return np.array([labelling.loss for labelling in labels], dtype=np.float64)

    def margins_at(self, out, w, labels):
        """w·δΨ(ȳ) from the scores ``out`` (linear in them)."""
        return np.array([float(labelling.delta @ out) for labelling in labels])

    def margins(self, w, labels, rows=None):
        return self.margins_at(self.scores(w), w, labels)

    def margins_many_at(self, out, w, labellings):
        return [self.margins_at(out, w, labels) for labels in labellings]

    def margins_many(self, w, labellings):
        """margins of several labellings from one product X·w (-w 4's cache)."""
        return self.margins_many_at(self.scores(w), w, labellings)

    def delta_psi_sum(self, weights, labels, rows=None):
        coef = np.zeros(self.n_rows)
        for weight, labelling in zip(np.asarray(weights, dtype=np.float64), labels):
            if weight != 0:
                coef += weight * labelling.delta
        return self.rows.rows_sum(coef)

    def pick(self, candidates, choice):
        return [candidates[int(choice[0])][0]]

    # -- the model -------------------------------------------------------------------------
    def record_loss(self, model):
        """Mark ``model`` (linear or Nyström) with the loss it was trained for, and --p
        where the loss has a k; returns it."""
        model.loss_id = self.loss_id
        model.k_fraction = self.k_fraction if self.loss_id in (PREC_K, REC_K) else 0.0
        return model

    def to_model(self, w, n_train: int = 0, loss_id: int = 0):
        """An SVMlight linear model that records the loss it was trained for."""
        weights, b = self.split_weights(w)
        return self.record_loss(LinearModel(weights, b, n_train=n_train))
