"""Cross-validation along a path of C values: each fold's training part trained at the
values in increasing order by one *path* (a function ``fit(C)`` returning a
:class:`Fit`, warm from its previous call when the solver can be), the held-out part
scored by the problem's measure."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Fit:
    """One training of a path: the model and its work (iterations or passes, cuts)."""

    model: object
    iterations: int = 0
    cuts: int = 0


@dataclass
class PathPoint:
    """One value of the path over all folds: each fold's figures [(name, value,
    better)], and the training work summed over the folds."""

    C: float
    figures: list = field(default_factory=list)
    seconds: float = 0.0
    iterations: int = 0
    cuts: int = 0

    def names(self) -> list:
        return [name for name, _, _ in self.figures[0]]

    def values(self, i: int = 0) -> np.ndarray:
        """Figure ``i`` on every fold."""
        return np.array([fold[i][1] for fold in self.figures], dtype=np.float64)

    def mean(self, i: int = 0) -> float:
        return float(np.mean(self.values(i)))

    def sd(self, i: int = 0) -> float:
        """The sample standard deviation over the folds (0 for one fold)."""
        v = self.values(i)
        return float(np.std(v, ddof=1)) if len(v) > 1 else 0.0

    @property
    def better(self) -> int:
        return self.figures[0][0][2]


def cross_validate(
    dataset, folds, values, make_path: Callable, measure: Callable, progress=None
) -> list:
    """[PathPoint] for ``values`` (increasing): for each fold f, a path
    ``fit = make_path(training part)`` called at each value in turn and its model scored
    by ``measure(model, held-out part)``. ``folds``: each example's fold;
    ``progress()`` after each fit."""
    points = [PathPoint(C) for C in values]
    for f in range(int(folds.max()) + 1):
        held_out = folds == f
        training = dataset.subset(np.flatnonzero(~held_out))
        test = dataset.subset(np.flatnonzero(held_out))
        path = make_path(training)
        for point in points:
            started = time.perf_counter()
            fit = path(point.C)
            point.seconds += time.perf_counter() - started
            point.iterations += fit.iterations
            point.cuts += fit.cuts
            point.figures.append(measure(fit.model, test))
            if progress is not None:
                progress()
    return points


def best_point(points) -> PathPoint:
    """The point with the best mean of the first figure; ties (within 1e-9 relative) go
    to the smaller C."""
    means = np.array([p.mean() for p in points]) * points[0].better
    top = float(np.max(means))
    for p, m in zip(points, means):
        if m >= top - 1e-9 * max(1.0, abs(top)) or math.isclose(m, top):
            return p
    return points[-1]
