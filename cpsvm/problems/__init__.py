"""Structured problems and how a dataset picks one."""

from __future__ import annotations

import importlib

import numpy as np

from ..errors import InputError
from .base import MARGIN_RESCALING, SLACK_RESCALING, PerExampleProblem, StructuredProblem

__all__ = ["MARGIN_RESCALING", "SLACK_RESCALING", "PerExampleProblem", "StructuredProblem",
           "choose_problem", "check_binary_labels", "check_multiclass_labels",
           "load_user_problem"]


def _first_bad(dataset, bad, what):
    i = int(np.flatnonzero(bad)[0])
    raise InputError(f"expected {what}, got target {dataset.y[i]:g}", source=dataset.source,
                     line=dataset.line_of(i))


def check_binary_labels(dataset):
    y = dataset.y
    if np.any(np.abs(y) != 1):
        _first_bad(dataset, np.abs(y) != 1, "binary targets +1 or -1")
    if np.all(y == y[0]):
        raise InputError(f"expected examples of both classes, all targets are {y[0]:+g}",
                         source=dataset.source)


def check_multiclass_labels(dataset):
    y = dataset.y
    bad = (y != np.round(y)) | (y < 1)
    if np.any(bad):
        _first_bad(dataset, bad, "class labels 1..k (integers)")
    if np.all(y == y[0]):
        raise InputError(f"expected at least two classes, all targets are {y[0]:g}",
                         source=dataset.source)


def choose_problem(dataset, requested: str) -> str:
    """'binary' or 'multiclass' for ``requested`` = auto/binary/multiclass, checking labels."""
    if requested == "auto":
        requested = "binary" if np.all(np.abs(dataset.y) == 1) else "multiclass"
    if requested == "binary":
        check_binary_labels(dataset)
    elif requested == "multiclass":
        check_multiclass_labels(dataset)
    return requested


def load_user_problem(spec: str, dataset):
    """Instantiate ``module:Class`` with the dataset: a user's StructuredProblem."""
    module_name, _, class_name = spec.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as e:
        raise InputError(f"cannot load problem {spec!r}: {e}") from None
    problem = cls(dataset)
    missing = [m for m in ("separate", "losses", "margins", "delta_psi_sum", "true_labels")
               if not callable(getattr(problem, m, None))]
    if missing or not hasattr(problem, "size_psi"):
        raise InputError(f"problem {spec!r} lacks {', '.join(missing) or 'size_psi'}: "
                         "subclass cpsvm.problems.PerExampleProblem")
    return problem
