"""Regression as SVMlight's ``-z r`` trains it (asset_learn -z r): real targets, the
epsilon-insensitive loss; its models are binary models' files (SVMlight's, or the random
features' with their task recorded), judged by their squared and absolute errors.

The entry below is what the toolkit knows of the problem; the reports are :mod:`.report`
(asset_learn's solver, cpsvm.solvers.asset, trains it).
"""

from __future__ import annotations

from ..entry import Classifying, CommandLine, ProblemEntry, Selection
from .report import RegressionModels, cv_figures


class RegressionCommandLine(CommandLine):
    tool = "SVMlight"


class RegressionSelection(Selection):
    def cv_measure(self, model, dataset, loss_id):
        return cv_figures(model, dataset)


ENTRY = ProblemEntry(
    "regression",
    learners=("asset_learn",),
    structured=False,
    command_line=RegressionCommandLine(),
    selection=RegressionSelection(),
    classifying=Classifying(RegressionModels),
)
