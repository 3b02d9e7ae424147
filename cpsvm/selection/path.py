"""Cross-validation along a path of C values: each fold's training part trained at the
values in increasing order by one *path* (a :class:`FoldPath`: ``fit(C)`` returning a
:class:`Fit`, warm from its previous call when the solver can be), the held-out part
scored by the problem's measure.

A measure may be undefined on a held-out fold (NDCG@10 without a relevant document,
precision without a predicted positive): the figure is NaN, and the means and standard
deviations are over the folds where it is defined; the count left out is kept so that
the commands can say it (undefined is not zero)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError, Interrupted, OptionError


@dataclass
class Fit:
    """One training of a path: the model and its work (iterations or passes, cuts)."""

    model: object
    iterations: int = 0
    cuts: int = 0


@dataclass
class PathPoint:
    """One value of the path over all folds: each fold's figures [(name, value,
    better[, why undefined])] (value NaN: undefined on that fold), and the training
    work summed over the folds."""

    C: float
    figures: list = field(default_factory=list)
    seconds: float = 0.0
    iterations: int = 0
    cuts: int = 0

    def names(self) -> list:
        return [figure[0] for figure in self.figures[0]]

    def values(self, i: int = 0) -> np.ndarray:
        """Figure ``i`` on every fold (NaN where undefined)."""
        return np.array([fold[i][1] for fold in self.figures], dtype=np.float64)

    def defined(self, i: int = 0) -> np.ndarray:
        """Figure ``i`` on the folds where it is defined."""
        v = self.values(i)
        return v[~np.isnan(v)]

    def left_out(self, i: int = 0) -> int:
        """The folds where figure ``i`` is undefined."""
        return int(np.count_nonzero(np.isnan(self.values(i))))

    def why(self, i: int = 0) -> str:
        """Why figure ``i`` is undefined on a fold, as the measure says ("" if it does
        not say)."""
        for fold in self.figures:
            if math.isnan(fold[i][1]) and len(fold[i]) > 3:
                return fold[i][3]
        return ""

    def mean(self, i: int = 0) -> float:
        """The mean over the folds where figure ``i`` is defined (NaN if none)."""
        v = self.defined(i)
        return float(np.mean(v)) if len(v) else math.nan

    def sd(self, i: int = 0) -> float:
        """The sample standard deviation over the folds where figure ``i`` is defined (0
        for one fold)."""
        v = self.defined(i)
        if not len(v):
            return math.nan
        return float(np.std(v, ddof=1)) if len(v) > 1 else 0.0

    @property
    def better(self) -> int:
        return self.figures[0][0][2]


@dataclass
class FoldPath:
    """A fold's path: ``fit(C)`` gives its Fit, warm from the last C where the solver
    allows; ``check(C)`` refuses a C the fold's data do not allow (OptionError), so that
    every value of the path is checked before any is trained."""

    fit: Callable
    check: Callable


def cross_validate(
    dataset, folds, values, make_path: Callable, measure: Callable, progress=None,
    should_stop=None,
) -> list:  # fmt: skip
    """[PathPoint] for ``values`` (increasing): for each fold f, a path
    ``make_path(training part, should_stop)`` (a FoldPath, which checks every value
    first) fitted at each value in turn and its
    model scored by ``measure(model, held-out part)``. ``folds``: each example's fold;
    ``progress()`` after each fit; ``should_stop()`` (Ctrl-C, passed on to the trainings,
    which end their iteration) is asked after each fit: Interrupted (cpsvm.errors) then,
    between two trainings.

    An input error of a fold's training part (one class left in it) names the fold."""
    points = [PathPoint(C) for C in values]
    n_folds = int(folds.max()) + 1
    for f in range(n_folds):
        held_out = folds == f
        training = dataset.subset(np.flatnonzero(~held_out))
        test = dataset.subset(np.flatnonzero(held_out))
        for point in points:
            started = time.perf_counter()
            try:
                if point is points[0]:
                    path = make_path(training, should_stop)
                    for C in values:
                        path.check(C)
                fit = path.fit(point.C)
            except OptionError:
                raise
            except InputError as e:
                raise InputError(
                    f"--cv {n_folds}: the training part of fold {f + 1} ({training.n_examples} "
                    f"of {dataset.n_examples} examples, the others held out) cannot be "
                    f"trained on: {e.message}",
                    source=e.source,
                    line=e.line,
                ) from None
            if should_stop is not None and should_stop():
                raise Interrupted(
                    f"interrupted (Ctrl-C) in the cross-validation, fold {f + 1} of {n_folds} "
                    f"at C = {point.C:g}: nothing written"
                )
            point.seconds += time.perf_counter() - started
            point.iterations += fit.iterations
            point.cuts += fit.cuts
            point.figures.append(measure(fit.model, test))
            if progress is not None:
                progress()
    return points


def best_point(points) -> PathPoint:
    """The point with the best mean of the first figure (over the folds where it is
    defined); ties (within 1e-9 relative) go to the smaller C. InputError when the first
    figure is undefined on every fold at every C."""
    means = np.array([p.mean() for p in points]) * points[0].better
    if np.all(np.isnan(means)):
        why = next((p.why() for p in points if p.why()), "")
        raise InputError(
            f"cannot choose C: the {points[0].names()[0]} is undefined on every held-out "
            f"fold{f' ({why})' if why else ''}"
        )
    means = np.where(np.isnan(means), -math.inf, means)
    top = float(np.max(means))
    for p, m in zip(points, means):
        if m >= top - 1e-9 * max(1.0, abs(top)) or math.isclose(m, top):
            return p
    return points[-1]
