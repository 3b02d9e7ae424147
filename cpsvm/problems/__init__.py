"""Structured problems: each one an entry (:mod:`.entry`'s parts, filled in its package's
``__init__``), listed by the registry (:mod:`.registry`), its numerics in its package's
other modules.

``--problem`` takes the name of a problem cp_learn trains (``binary``, ``multiclass``,
``hmm``, ``cfg``, ``rank``: packages of this one; ``regression`` is asset_learn's -z r),
``auto`` (the first structured problem whose
``detect`` takes the file, for the learners that train structures: cfg for bracketed
trees, rank for a qid file with graded targets, hmm for an SVM-hmm file; else binary if
every target is ±1, else multiclass) or ``module:Class`` (a user's subclass of
:class:`PerExampleProblem`, :mod:`.user`). :func:`resolve_problem` checks that spec before
any data is read; :func:`choose_entry` then checks the data's labels against the
problem.

This package and every entry import nothing heavy (``cp_learn -h`` reads the entries):
the problem protocol (:mod:`.base`) and the numerics load when they are used.
"""

from __future__ import annotations

from ..conventions import MARGIN_RESCALING, SLACK_RESCALING
from .entry import ClassifyOption, ProblemEntry, ProblemOption, ProblemSpecError
from .labels import all_pm1, check_binary_labels, check_multiclass_labels
from .registry import (
    auto_order,
    choose_entry,
    choose_problem,
    entries,
    entry_of,
    entry_of_model,
    model_handlers,
    own_format,
    parse_given,
    problem_choices,
    problem_entry,
    problem_names,
    read_training_data,
    register,
    resolve_problem,
)
from .user import import_problem_class, load_user_problem, user_entry

__all__ = [
    "MARGIN_RESCALING",
    "SLACK_RESCALING",
    "PerExampleProblem",
    "StructuredProblem",
    "ClassifyOption",
    "ProblemEntry",
    "ProblemOption",
    "ProblemSpecError",
    "all_pm1",
    "auto_order",
    "problem_choices",
    "problem_entry",
    "problem_names",
    "register",
    "entries",
    "entry_of",
    "resolve_problem",
    "choose_problem",
    "choose_entry",
    "own_format",
    "parse_given",
    "read_training_data",
    "check_binary_labels",
    "check_multiclass_labels",
    "import_problem_class",
    "load_user_problem",
    "user_entry",
    "model_handlers",
    "entry_of_model",
]


def __getattr__(name):
    # The protocol's classes load numpy: imported when a user's module asks for them.
    if name in ("PerExampleProblem", "StructuredProblem"):
        from . import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
