"""The registry of problems by name (``--problem``), below the package and its users'
loader: :mod:`cpsvm.problems` registers the built-in problems and resolves a spec;
:mod:`cpsvm.problems.user` names the choices when a spec does not import."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import OptionError


class ProblemSpecError(OptionError):
    """A --problem value that names no problem: a usage error (exit 2) for the commands."""


@dataclass(frozen=True)
class ProblemEntry:
    """A registered problem: how to check a dataset's labels and build it on features.

    ``build(X, y, bias=...)`` returns the StructuredProblem (its ``to_model`` decides the
    model kind); ``bias`` is SVMperf's --b, ignored by problems without one. A problem
    whose examples are groups of lines (sentences) sets ``from_dataset(dataset,
    **options)`` instead: it is built from the whole dataset, ``options`` its own.
    """

    name: str
    check_labels: Callable
    build: Callable | None = None
    from_dataset: Callable | None = None


_REGISTRY: dict[str, ProblemEntry] = {}


def register_problem(entry: ProblemEntry) -> None:
    _REGISTRY[entry.name] = entry


def problem_names() -> list:
    return list(_REGISTRY)


def problem_entry(name: str) -> ProblemEntry:
    return _REGISTRY[name]


def problem_choices() -> str:
    """The --problem values to name in an error."""
    return ", ".join(["auto"] + problem_names()) + " or module:Class"
