"""Regression as SVMlight's ``-z r`` trains it (asset_learn -z r): real targets, the
epsilon-insensitive loss; its models are binary models' files (SVMlight's, or the random
features' with their task recorded), judged by their squared and absolute errors.

The entry below is what the toolkit knows of the problem; the reports are :mod:`.report`
(asset_learn's solver, cpsvm.solvers.asset, trains it).
"""

from __future__ import annotations

from ..registry import ProblemEntry
from .report import RegressionModels


class Regression(ProblemEntry):
    name = "regression"
    tool = "SVMlight"
    structured = False
    learners = ("asset_learn",)
    classify = RegressionModels

    def cv_measure(self, model, dataset, loss_id):
        from .report import cv_figures

        return cv_figures(model, dataset)


ENTRY = Regression()
