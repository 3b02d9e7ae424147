"""Structured problems: the built-in problems by name, the label checks, and users' own
classes (the registry is :mod:`cpsvm.problems.registry`, users' classes
:mod:`cpsvm.problems.user`).

``--problem`` takes a registered name (``binary``, ``multiclass``, ``hmm``, ``cfg``,
``rank``), ``auto`` (cfg for bracketed trees, rank for a qid file with graded targets and
hmm for an SVM-hmm file when the learner trains structures, else binary if every target
is ±1, else multiclass) or ``module:Class`` (a user's subclass of
:class:`PerExampleProblem`). :func:`resolve_problem` checks that spec before any data is
read; :func:`choose_problem` then checks the data's labels against the problem.
The registry holds only names and builders: the problem modules (and numba) are
imported when a problem is built, not when a name is checked.
"""

from __future__ import annotations

import numpy as np

from ..conventions import MARGIN_RESCALING, SLACK_RESCALING
from ..errors import InputError
from .base import PerExampleProblem, StructuredProblem
from .registry import (
    ProblemEntry,
    ProblemSpecError,
    problem_choices,
    problem_entry,
    problem_names,
    register_problem,
)
from .user import import_problem_class, load_user_problem

__all__ = [
    "MARGIN_RESCALING",
    "SLACK_RESCALING",
    "PerExampleProblem",
    "StructuredProblem",
    "ProblemEntry",
    "ProblemSpecError",
    "register_problem",
    "problem_entry",
    "problem_names",
    "resolve_problem",
    "choose_problem",
    "check_binary_labels",
    "check_multiclass_labels",
    "check_sequence_labels",
    "check_ranking_labels",
    "is_sequence_file",
    "is_ranking_file",
    "auto_choice_note",
    "import_problem_class",
    "load_user_problem",
]


# -- label checks --------------------------------------------------------------------------


def _first_bad(dataset, bad, what, hint=""):
    i = int(np.flatnonzero(bad)[0])
    raise InputError(
        f"expected {what}, got target {dataset.y[i]:g}{hint}",
        source=dataset.source,
        line=dataset.line_of(i),
    )


def _zero_one(y) -> bool:
    return bool(np.all((y == 0) | (y == 1)))


def check_binary_labels(dataset):
    y = dataset.y
    bad = np.abs(y) != 1
    if np.any(bad):
        hint = " (binary problems need targets +1/-1: map 0 to -1)" if _zero_one(y) else ""
        _first_bad(dataset, bad, "binary targets +1 or -1", hint)
    if np.all(y == y[0]):
        raise InputError(
            f"expected examples of both classes, all targets are {y[0]:+g}", source=dataset.source
        )


def check_multiclass_labels(dataset):
    y = dataset.y
    bad = (y != np.round(y)) | (y < 1)
    if np.any(bad):
        hint = ""
        if _zero_one(y):
            hint = " (binary problems need targets +1/-1; 0/1 labels: map 0 to -1)"
        elif np.all(y == np.round(y)) and y.min() == 0:
            hint = " (multiclass labels start at 1; 0-based labels: add 1 to each)"
        _first_bad(dataset, bad, "class labels 1..k (integers)", hint)
    if np.all(y == y[0]):
        raise InputError(
            f"expected at least two classes, all targets are {y[0]:g}", source=dataset.source
        )


# -- the built-in problems -------------------------------------------------------------------


def _build_binary(X, y, bias=0.0):
    from .binary import BinaryProblem

    return BinaryProblem(X, y, bias=bias)


def _build_multiclass(X, y, bias=0.0):
    from .multiclass import MulticlassProblem

    return MulticlassProblem(X, y)


def check_sequence_labels(dataset):
    """An SVM-hmm training file: qid on every line, sentences contiguous, tags 1..k."""
    from .hmm import training_sequences

    training_sequences(dataset)


def _build_hmm(dataset, **options):
    from .hmm import HmmProblem, training_sequences

    return HmmProblem(training_sequences(dataset), **options)


def is_sequence_file(dataset) -> bool:
    """SVM-hmm's shape: qid on the lines, some qid on more than one line (a sentence of
    several tokens), and targets that are not all ±1."""
    qid = getattr(dataset, "qid", None)
    if qid is None or len(qid) < 2:
        return False
    return bool(np.any(qid[1:] == qid[:-1])) and not np.all(np.abs(dataset.y) == 1)


def check_ranking_labels(dataset):
    """A ranking training file (SVMrank): queries on consecutive lines, finite targets,
    some query with two relevance levels."""
    from .rank import check_ranking_labels as check

    check(dataset)


def _build_rank(dataset, loss_id=1):
    from .rank import RankProblem

    return RankProblem.from_dataset(dataset, loss_id=loss_id)


def _runs_of_several_lines(dataset) -> bool:
    """qid on the lines, and some qid on consecutive lines (a query or sentence of more
    than one line)."""
    qid = getattr(dataset, "qid", None)
    return qid is not None and len(qid) >= 2 and bool(np.any(qid[1:] == qid[:-1]))


def is_ranking_file(dataset) -> bool:
    """SVMrank's shape: qid on the lines, some query of several documents, and graded
    relevance: targets not all ±1 (binary classification with qid, as before) and not all
    integers >= 1 (SVM-hmm's tags, which stay hmm): a 0, a negative or a fractional one."""
    if not _runs_of_several_lines(dataset):
        return False
    y = dataset.y
    if np.all(np.abs(y) == 1):
        return False
    return bool(np.any((y < 1) | (y != np.round(y))))


def auto_choice_note(dataset, kind: str):
    """The line saying why ``auto`` read a qid file as ``kind`` and how to say otherwise,
    or None when no qid led the choice."""
    if kind == "rank":
        y = dataset.y
        return (
            f"qid on the lines and graded targets ({float(y.min()):g} to "
            f"{float(y.max()):g}): a ranking problem (SVMrank, pairs within each "
            "query); --problem binary, multiclass or hmm reads it otherwise"
        )
    if kind == "hmm" and getattr(dataset, "qid", None) is not None:
        return (
            f"qid on the lines and integer targets 1..{int(dataset.y.max())}: SVM-hmm "
            "sequences (qid the sentence, a tag per line); --problem rank ranks the "
            "lines of each qid instead"
        )
    return None


def check_trees(dataset):
    """Parse trees (a :class:`cpsvm.data.TreeDataset`) with at least one tree."""
    if not hasattr(dataset, "trees"):
        raise InputError(
            "expected bracketed parse trees ('( (S ...) )', Penn Treebank "
            "format) for the cfg problem",
            source=getattr(dataset, "source", None),
        )
    if not dataset.trees:
        raise InputError("expected at least one tree (within --max-length)", source=dataset.source)


def _build_cfg(dataset, **options):
    from .cfg import CfgProblem

    return CfgProblem.from_dataset(dataset, **options)


# Names of the problems whose issues have not landed yet: refused with a clear line.
_PLANNED: dict = {}

register_problem(ProblemEntry("binary", check_binary_labels, _build_binary))
register_problem(ProblemEntry("multiclass", check_multiclass_labels, _build_multiclass))
register_problem(ProblemEntry("hmm", check_sequence_labels, from_dataset=_build_hmm))
register_problem(ProblemEntry("cfg", check_trees, from_dataset=_build_cfg))
register_problem(ProblemEntry("rank", check_ranking_labels, from_dataset=_build_rank))
# Problems only cp_learn trains (choose_problem's ``sequences``).
_STRUCTURED_ONLY = ("hmm", "cfg", "rank")


def _no_such_problem(spec: str, choices: str) -> ProblemSpecError:
    if spec in _PLANNED:
        return ProblemSpecError(
            f"problem {spec!r} ({_PLANNED[spec]}) is not available yet; expected {choices}"
        )
    return ProblemSpecError(f"unknown problem {spec!r}: expected {choices}")


def resolve_problem(spec: str) -> str:
    """Check a --problem value before any data is read; returns it, stripped.

    Registered names and ``auto`` pass; ``module:Class`` must import; anything else
    raises ProblemSpecError naming the choices.
    """
    spec = (spec or "").strip()
    if spec == "auto" or spec in problem_names():
        return spec
    if spec in _PLANNED or ":" not in spec:
        raise _no_such_problem(spec, problem_choices())
    import_problem_class(spec)
    return spec


def choose_problem(dataset, requested: str, sequences: bool = False) -> str:
    """The registered name for ``requested`` (auto or a name), after checking the labels.
    ``sequences``: the caller trains structured problems, so auto picks rank for a qid
    file with graded targets (:func:`is_ranking_file`) and hmm for an SVM-hmm file
    (:func:`is_sequence_file`); without it, hmm, cfg and rank are refused."""
    requested = (requested or "").strip()
    names = (
        problem_names() if sequences else [n for n in problem_names() if n not in _STRUCTURED_ONLY]
    )
    if requested != "auto" and requested not in names:
        choices = ", ".join(["auto"] + names[:-1]) + " or " + names[-1]
        raise _no_such_problem(requested, choices)
    if requested == "auto":
        if sequences and hasattr(dataset, "trees"):
            requested = "cfg"
        elif sequences and is_ranking_file(dataset):
            requested = "rank"
        elif sequences and is_sequence_file(dataset):
            requested = "hmm"
        else:
            requested = "binary" if np.all(np.abs(dataset.y) == 1) else "multiclass"
    problem_entry(requested).check_labels(dataset)
    return requested
