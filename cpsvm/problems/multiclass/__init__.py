"""Crammer-Singer multiclass classification as SVMmulticlass V2.20 trains it: class labels
1..k, the zero/one loss times 100.

The entry below is what the toolkit knows of the problem; the numerics are
:mod:`.problem`, the reports :mod:`.report`.
"""

from __future__ import annotations

from ..labels import check_multiclass_labels
from ..registry import ProblemEntry
from .report import MulticlassModels, cv_classes, cv_figures


def build_on(X, y, loss_id, options, bias):
    from .problem import MulticlassProblem

    return MulticlassProblem(X, y)


def scale_lines(info, params):
    from ...conventions import LOSS_SCALE, c_cs_from_multiclass

    n = info.n_examples
    return [
        f"Crammer-Singer scale: C_cs = C/(100*n) = {c_cs_from_multiclass(params.C, n):.6g};"
        f" objective (w/100) = {info.result.primal / LOSS_SCALE**2:.6f}"
    ]


def c_of_sum(C: float, n: int) -> float:
    from ...conventions import multiclass_from_c_cs

    return multiclass_from_c_cs(C, n)


ENTRY = ProblemEntry(
    name="multiclass",
    tool="SVMmulticlass",
    losses=(0, 2),
    loss_help="Multiclass: 0 zero/one per example x100 (default; -l 2 the same).",
    c_help="Multiclass: SVMmulticlass's, C_cs = C/(100*n).",
    default_algorithm=3,
    line_search=True,
    coordinate_descent=True,
    structured=False,
    detect_help="multiclass if 1..k",
    check_labels=check_multiclass_labels,
    build_on=build_on,
    scale_lines=scale_lines,
    c_of_sum=c_of_sum,
    classify=MulticlassModels,
    cv_measure=cv_figures,
    cv_units=cv_classes,
)
