"""Structured problems: each one a registry entry (:mod:`.registry`) that owns everything
about it, its numerics in its own package.

``--problem`` takes the name of a problem cp_learn trains (``binary``, ``multiclass``,
``hmm``, ``cfg``, ``rank``: packages of this one; ``regression`` is asset_learn's -z r),
``auto`` (the first structured problem whose
``detect`` takes the file, for the learners that train structures: cfg for bracketed
trees, rank for a qid file with graded targets, hmm for an SVM-hmm file; else binary if
every target is ±1, else multiclass) or ``module:Class`` (a user's subclass of
:class:`PerExampleProblem`, :mod:`.user`). :func:`resolve_problem` checks that spec before
any data is read; :func:`choose_problem` then checks the data's labels against the
problem.

This package and every entry import nothing heavy (``cp_learn -h`` reads the entries):
the problem protocol (:mod:`.base`) and the numerics load when they are used.
"""

from __future__ import annotations

from ..conventions import MARGIN_RESCALING, SLACK_RESCALING
from .labels import all_pm1, check_binary_labels, check_multiclass_labels
from .registry import (
    ClassifyOption,
    ProblemEntry,
    ProblemOption,
    ProblemSpecError,
    auto_order,
    entries,
    problem_choices,
    problem_entry,
    problem_names,
    register,
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
    "problem_entry",
    "problem_names",
    "register",
    "entries",
    "entry_of",
    "resolve_problem",
    "choose_problem",
    "choose_entry",
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


def resolve_problem(spec: str) -> str:
    """Check a --problem value before any data is read; returns it, stripped.

    The names of the problems cp_learn trains and ``auto`` pass; ``module:Class`` must
    import; anything else raises ProblemSpecError naming the choices.
    """
    spec = (spec or "").strip()
    if spec == "auto" or spec in (e.name for e in entries("cp_learn")):
        return spec
    if ":" not in spec:
        raise ProblemSpecError(f"unknown problem {spec!r}: expected {problem_choices()}")
    import_problem_class(spec)
    return spec


def entry_of(spec: str) -> ProblemEntry:
    """The entry of a resolved spec that names a problem (not ``auto``)."""
    return user_entry(spec) if ":" in spec else problem_entry(spec)


def choose_entry(dataset, requested: str, sequences: bool = False) -> ProblemEntry:
    """The entry for ``requested`` (auto, a name, or for ``sequences`` module:Class) after
    checking the data's labels against it. ``sequences``: the caller trains structured
    problems (cp_learn), so auto tries each structured problem's ``detect`` first;
    without it, only the problems that are not (binary and multiclass) are taken.
    ``dataset`` may be what stands for one (a cluster's shards: cpsvm.problems.labels)."""
    requested = (requested or "").strip()
    allowed = [e for e in entries("cp_learn") if sequences or not e.structured]
    if requested == "auto":
        structured = [problem_entry(name) for name in auto_order()] if sequences else []
        found = next((e for e in structured if e.detect(dataset)), None)
        entry = found or problem_entry("binary" if all_pm1(dataset) else "multiclass")
    elif sequences and ":" in requested:
        return user_entry(requested)
    else:
        entry = next((e for e in allowed if e.name == requested), None)
        if entry is None:
            names = ["auto"] + [e.name for e in allowed]
            choices = ", ".join(names[:-1]) + " or " + names[-1]
            raise ProblemSpecError(f"unknown problem {requested!r}: expected {choices}")
    entry.check_labels(dataset)
    return entry


def choose_problem(dataset, requested: str, sequences: bool = False) -> str:
    """The name of :func:`choose_entry`'s choice."""
    return choose_entry(dataset, requested, sequences).name


def model_handlers() -> list:
    """cp_classify's handlers of the model kinds (each entry's ``classify``, and users'
    problems'), those that claim a model by its data first."""
    from .user import UserProblemModels

    handlers = [e.classify for e in entries() if e.classify is not None] + [UserProblemModels]
    return sorted(handlers, key=lambda h: not hasattr(h, "claims"))


def entry_of_model(model) -> ProblemEntry:
    """The entry whose models ``model`` is (by its model kind; a user problem's model:
    its class's entry)."""
    from ..io.model_file import model_kind_of
    from ..models import UserProblemModel

    if isinstance(model, UserProblemModel):
        return user_entry(model.spec)
    kind = model_kind_of(model).name
    return next(e for e in entries() if e.classify is not None and kind in e.classify.model_kinds)
