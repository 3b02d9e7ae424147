"""Folds for cross-validation: whole units (an example, or a query, sentence or tree:
the problem says, ``cv_units``), stratified by class when the units have one, shuffled
by a seed."""

from __future__ import annotations

import numpy as np

from ..errors import InputError


def assign_folds(
    n_folds: int, n: int, units=None, strata=None, seed: int = 0, source=""
) -> np.ndarray:
    """The fold (0..n_folds-1) of each of ``n`` examples. ``units``: each example's unit id (equal
    ids in consecutive or scattered rows are one unit), or None for one unit an example;
    ``strata``: each example's class (None: unstratified), a unit's class its first
    example's. Within each class the units are shuffled and dealt to the folds in turn,
    each class starting where the last left off, so fold sizes differ by at most one unit
    and every class is spread over the folds."""
    if units is None:
        unit_of = np.arange(n)
    else:
        _, first, unit_of = np.unique(units, return_index=True, return_inverse=True)
    n_units = int(unit_of.max()) + 1 if n else 0
    if n_units < n_folds:
        what = "examples" if units is None else "units (queries, sentences or trees)"
        raise InputError(f"--cv {n_folds} needs at least {n_folds} {what}, found {n_units}",
                         source=source)  # fmt: skip
    rng = np.random.default_rng(seed)
    if strata is None:
        unit_class = np.zeros(n_units, dtype=np.int64)
    else:
        strata = np.asarray(strata)
        firsts = np.arange(n) if units is None else first
        _, unit_class = np.unique(strata[firsts], return_inverse=True)
    unit_fold = np.empty(n_units, dtype=np.int64)
    at = 0
    for c in range(int(unit_class.max()) + 1 if n_units else 0):
        members = rng.permutation(np.flatnonzero(unit_class == c))
        unit_fold[members] = (at + np.arange(len(members))) % n_folds
        at = (at + len(members)) % n_folds
    return unit_fold[unit_of]
