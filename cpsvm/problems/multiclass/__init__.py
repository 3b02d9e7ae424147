"""Crammer-Singer multiclass classification as SVMmulticlass V2.20 trains it: class labels
1..k, the zero/one loss times 100.

The entry below is what the toolkit knows of the problem; the numerics are
:mod:`.problem`, the reports :mod:`.report`.
"""

from __future__ import annotations

from ..entry import (
    Classifying,
    CommandLine,
    Estimators,
    ProblemEntry,
    Reading,
    Reports,
    Selection,
    Training,
)
from ..labels import check_multiclass_labels
from .report import MulticlassModels, cv_figures


class MulticlassCommandLine(CommandLine):
    tool = "SVMmulticlass"
    losses = (0, 2)
    loss_help = "Multiclass: 0 zero/one per example x100 (default; -l 2 the same)."
    c_help = "Multiclass: SVMmulticlass's, C_cs = C/(100*n)."
    detect_help = "multiclass if 1..k"


class MulticlassReading(Reading):
    def check_labels(self, dataset):
        check_multiclass_labels(dataset)
        y = getattr(dataset, "y", None)  # (a cluster's shards: the workers hold the rows)
        if y is not None and len(y):
            from .problem import check_row_class_memory

            check_row_class_memory(len(y), int(y.max()), source=dataset.source)


class MulticlassTraining(Training):
    default_algorithm = 3
    line_search = True
    coordinate_descent = True
    on_features = True
    class_weights = True

    def build_on(self, X, y, loss_id, options, bias):
        from .problem import MulticlassProblem

        return MulticlassProblem(X, y)


class MulticlassReports(Reports):
    def scale_lines(self, info, params):
        from ...conventions import LOSS_SCALE, c_cs_from_multiclass

        n = info.n_examples
        return [
            f"Crammer-Singer scale: C_cs = C/(100*n) = {c_cs_from_multiclass(params.C, n):.6g};"
            f" objective (w/100) = {info.result.primal / LOSS_SCALE**2:.6f}"
        ]


class MulticlassSelection(Selection):
    def cv_measure(self, model, dataset, loss_id):
        return cv_figures(model, dataset, loss_id)

    def cv_units(self, dataset):
        """Folds stratified by class."""
        return None, dataset.y


class MulticlassEstimators(Estimators):
    decision_rows = True

    def c_of_sum(self, C, n):
        from ...conventions import multiclass_from_c_cs

        return multiclass_from_c_cs(C, n)

    def classes(self, labels):
        import numpy as np

        return None if labels is None else np.arange(1, int(np.max(labels)) + 1)


ENTRY = ProblemEntry(
    "multiclass",
    learners=("cp_learn", "ocas_learn"),
    structured=False,
    command_line=MulticlassCommandLine(),
    reading=MulticlassReading(),
    training=MulticlassTraining(),
    reports=MulticlassReports(),
    selection=MulticlassSelection(),
    classifying=Classifying(MulticlassModels),
    estimators=MulticlassEstimators(),
)
