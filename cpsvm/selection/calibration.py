"""Probabilities of a binary model (``--probability``): Platt's sigmoid fitted on K-fold
cross-validated decision values, as LIBSVM's ``-b 1``. The folds are the model
selection's (:mod:`.folds`: stratified by class, dealt by the seed) and each is trained
by the same path (:mod:`.path`'s ``cross_validate``, one value of C) that ``--cv`` trains
at the same settings; each held-out example's decision value is its fold model's. The
sigmoid itself is :mod:`cpsvm.engine.platt`'s. Nothing here reads files or prints."""

from __future__ import annotations

import numpy as np

from ..engine.platt import Sigmoid, fit_sigmoid
from ..errors import InputError
from .folds import assign_folds
from .path import Fit, FoldPath, cross_validate

PROBABILITY_FOLDS = 5  # LIBSVM's -b 1
# Each class in at least two folds, so that every fold's training part has both.
MIN_PER_CLASS = 2


def check_calibration_data(labels, source: str = "") -> None:
    """InputError unless ``labels`` (±1) allow the folds: both classes, at least
    PROBABILITY_FOLDS examples and MIN_PER_CLASS of each class."""
    y = np.asarray(labels)
    n = len(y)
    n_pos = int(np.count_nonzero(y > 0))
    n_neg = n - n_pos
    counts = f"{n} examples ({n_pos} +1, {n_neg} -1)"
    if n_pos == 0 or n_neg == 0:
        raise InputError(
            f"--probability fits P(y=+1) on examples of both classes, found one class: {counts}",
            source=source,
        )
    if n < PROBABILITY_FOLDS or min(n_pos, n_neg) < MIN_PER_CLASS:
        raise InputError(
            f"--probability fits Platt's sigmoid on {PROBABILITY_FOLDS}-fold cross-validated "
            f"decision values: it needs at least {PROBABILITY_FOLDS} examples and "
            f"{MIN_PER_CLASS} of each class, found {counts}",
            source=source,
        )


def held_out_decisions(dataset, make_path, C: float, seed: int, *, progress=None,
                       should_stop=None) -> np.ndarray:  # fmt: skip
    """Each example's decision value by the model trained on the other folds
    (PROBABILITY_FOLDS, stratified by the ±1 label, from ``seed``): ``make_path(part,
    should_stop)`` a fold's path (cpsvm.selection.path.FoldPath), trained at ``C``."""
    y = dataset.y
    check_calibration_data(y, dataset.source)
    folds = assign_folds(
        PROBABILITY_FOLDS, dataset.n_examples, None, np.sign(y), seed, dataset.source
    )
    decisions = np.empty(dataset.n_examples, dtype=np.float64)
    fold_of_call = iter(range(PROBABILITY_FOLDS))

    def keep(model, held_out):
        # cross_validate asks the folds in turn, 0 first.
        rows = np.flatnonzero(folds == next(fold_of_call))
        decisions[rows] = model.decision_function(held_out.X)
        return [("held-out examples", float(len(rows)), 1)]

    cross_validate(dataset, folds, [C], make_path, keep, progress, should_stop)
    return decisions


def platt_sigmoid(dataset, train, run, C: float, seed: int, **settings) -> Sigmoid:
    """Platt's sigmoid of the dataset's held-out decision values (:func:`held_out_decisions`,
    ``settings`` its progress and should_stop), each fold trained by ``train(part, run,
    should_stop=...)`` (a solver's train; ``run`` its settings, a Resolved or a Params,
    at ``C``): the training that makes the model, at the same settings."""

    def make_path(part, should_stop):
        def fit(_C):
            model, info = train(part, run, should_stop=should_stop)
            r = info.result
            return Fit(model, getattr(r, "iterations", 0), getattr(r, "cuts_added", 0))

        return FoldPath(fit, lambda _C: None)

    decisions = held_out_decisions(dataset, make_path, C, seed, **settings)
    return fit_sigmoid(decisions, dataset.y)
