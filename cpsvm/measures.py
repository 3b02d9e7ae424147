"""SVMperf's performance measures of binary predictions: what svm_perf_classify prints
(Accuracy, Precision, Recall, F1, PRBEP, ROCArea, AvgPrec) and what cp_learn's
multivariate losses (``-l``, :mod:`cpsvm.problems.binary.multivariate`) are 100 minus.

Labels are ±1; a decision value > 0 predicts +1. The contingency table of a prediction is
(a, b, c, d) = (true positives, false positives, false negatives, true negatives). The
ranking measures sort by decision value and break ties pessimistically (a negative
before a positive of the same value), as SVMperf does. Figures are percentages, formed
with SVMperf's arithmetic (100 minus its loss) so that they print as it prints them.
"""

from __future__ import annotations

import numpy as np

from .conventions import PERF_K_DEFAULT, perf_k


def contingency(y, decision):
    """(a, b, c, d) of the predictions sign(decision) against the labels y (±1)."""
    y = np.asarray(y)
    positive, predicted = y > 0, np.asarray(decision) > 0
    a = int(np.count_nonzero(positive & predicted))
    b = int(np.count_nonzero(~positive & predicted))
    c = int(np.count_nonzero(positive & ~predicted))
    return a, b, c, len(y) - a - b - c


def precision(a, b) -> float:
    """a/(a + b), 0 without predicted positives."""
    return a / (a + b) if a + b else 0.0


def recall(a, c) -> float:
    return a / (a + c) if a + c else 0.0


def f1(a, b, c) -> float:
    """2·precision·recall/(precision + recall), 0 when a = 0."""
    if a == 0:
        return 0.0
    p, r = precision(a, b), recall(a, c)
    return 2.0 * p * r / (p + r)


def contingency_loss(loss_id, a, b, c, d, k=0) -> float:
    """SVMperf's loss of a labelling from its contingency table: 0 zero/one (1 for any
    error), 1 F1, 2 error rate, 3 PRBEP, 4 Prec@k, 5 Rec@k, each 100 minus the measure in
    percent (PRBEP: the lower of precision and recall, which agree at a + b = a + c)."""
    if loss_id == 0:
        return 0.0 if b + c == 0 else 1.0
    if loss_id == 1:
        return 100.0 * (1.0 - f1(a, b, c))
    if loss_id == 2:
        return 100.0 * (b + c) / (a + b + c + d)
    if loss_id == 3:
        return 100.0 * (1.0 - min(precision(a, b), recall(a, c)))
    if loss_id == 4:
        return 100.0 * (1.0 - precision(a, b))
    if loss_id == 5:
        return 100.0 * (1.0 - recall(a, c))
    raise ValueError(f"not a contingency-table loss: {loss_id}")


def ranking_order(y, scores) -> np.ndarray:
    """Examples by decreasing score, ties broken pessimistically (negatives first)."""
    return np.lexsort((np.asarray(y), -np.asarray(scores, dtype=np.float64)))


def roc_area(y, scores) -> float:
    """100 minus the percentage of (positive, negative) pairs ranked the wrong way."""
    ranked = np.asarray(y)[ranking_order(y, scores)] > 0
    negatives_above = np.cumsum(~ranked)
    swapped = int(np.sum(negatives_above[ranked]))
    n_pos = int(np.count_nonzero(ranked))
    n_neg = len(ranked) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    return 100.0 - 100.0 * swapped / n_neg / n_pos


def prbep(y, scores) -> float:
    """Precision (= recall) among the #positives highest-ranked examples."""
    ranked = np.asarray(y)[ranking_order(y, scores)] > 0
    n_pos = int(np.count_nonzero(ranked))
    if n_pos == 0:
        return float("nan")
    hits = int(np.count_nonzero(ranked[:n_pos]))
    return 100.0 * precision(hits, n_pos - hits)


def average_precision(y, scores) -> float:
    """The mean over the positives of the precision of the ranking down to each one."""
    ranked = np.asarray(y)[ranking_order(y, scores)] > 0
    ranks = np.flatnonzero(ranked) + 1.0
    if len(ranks) == 0:
        return float("nan")
    terms = np.arange(1, len(ranks) + 1) / ranks
    return 100.0 * (np.cumsum(terms)[-1] / len(ranks))  # summed in order, as SVMperf


def at_k(loss_id, y, scores, k_fraction=0.0):
    """Prec@k (loss 4) or Rec@k (5) of the ranking, k = ``perf_k`` of the positives;
    returns (measure in percent, k)."""
    ranked = np.asarray(y)[ranking_order(y, scores)] > 0
    n_pos = int(np.count_nonzero(ranked))
    k = perf_k(loss_id, n_pos, k_fraction)
    hits = int(np.count_nonzero(ranked[:k]))
    if loss_id == 4:
        return 100.0 * hits / k, k
    return (100.0 * hits / n_pos if n_pos else float("nan")), k


def perf_figures(y, decision) -> list:
    """svm_perf_classify's figures, in its order: [(name, value)]."""
    a, b, c, d = contingency(y, decision)
    return [
        ("Accuracy", 100.0 - contingency_loss(2, a, b, c, d)),
        ("Precision", 100.0 - contingency_loss(4, a, b, c, d)),
        ("Recall", 100.0 - contingency_loss(5, a, b, c, d)),
        ("F1", 100.0 - contingency_loss(1, a, b, c, d)),
        ("PRBEP", prbep(y, decision)),
        ("ROCArea", roc_area(y, decision)),
        ("AvgPrec", average_precision(y, decision)),
    ]


def trained_measure(loss_id, y, decision, k_fraction=0.0):
    """The measure a model trained with SVMperf's loss ``loss_id`` aims at, on (y,
    decision): (its name, its value in percent, a note such as k for Prec@k)."""
    a, b, c, d = contingency(y, decision)
    if loss_id == 0:
        return "Zero/one-error (whole label vector)", 100.0 * contingency_loss(0, a, b, c, d), ""
    if loss_id == 1:
        return "F1", 100.0 - contingency_loss(1, a, b, c, d), ""
    if loss_id == 3:
        return "PRBEP", prbep(y, decision), ""
    if loss_id in PERF_K_DEFAULT:
        value, k = at_k(loss_id, y, decision, k_fraction)
        fraction = k_fraction or PERF_K_DEFAULT[loss_id]
        return (
            ("Prec@k" if loss_id == 4 else "Rec@k"),
            value,
            f"k = {k}: {fraction:g} x {int(np.count_nonzero(np.asarray(y) > 0))} positives",
        )
    if loss_id == 10:
        return "ROC area", roc_area(y, decision), ""
    return "Error rate", contingency_loss(2, a, b, c, d), ""
