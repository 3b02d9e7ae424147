"""Ranking as SVMrank V1.00 trains it: pairwise preferences within each query (qid on
consecutive lines, graded relevance targets), the number or the fraction of swapped pairs,
margin rescaling only.

The entry below is what the toolkit knows of the problem; the numerics are
:mod:`.problem`, the reports :mod:`.report`.
"""

from __future__ import annotations

from ...conventions import MARGIN_RESCALING, c_light_from_rank, rank_from_c_light
from ...errors import OptionError
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
from ..labels import runs_of_several_lines
from .report import RankingModels, cv_figures

# svm_rank_learn's -e (man cp_learn, DEFAULTS).
EPSILON = 0.001


class RankCommandLine(CommandLine):
    summary = "SVMrank: pairs within each qid"
    tool = "SVMrank"
    losses = (1, 2)
    loss_help = (
        "rank (SVMrank): 1 the number of swapped pairs of a query (default), 2 their fraction."
    )
    c_help = (
        "rank: svm_rank_learn's, 1/2|w|^2 + (C/n)*sum of the pairs' hinge losses over n "
        "queries (SVMlight's preference-ranking C = C/n)."
    )
    epsilon = EPSILON
    epsilon_help = (
        "rank: 0.001 as svm_rank_learn, relative to a query's loss: times the average "
        "number of pairs per query with -l 1"
    )
    detect_help = "rank for a qid file with graded targets: some 0, negative or fractional"


class RankReading(Reading):
    def check_labels(self, dataset):
        from .problem import check_ranking_labels

        check_ranking_labels(dataset)

    def detect(self, dataset) -> bool:
        """SVMrank's shape: qid on the lines, some query of several documents, and graded
        relevance: targets not all ±1 (binary classification with qid, as before) and not
        all integers >= 1 (SVM-hmm's tags, which stay hmm): a 0, a negative or a fractional
        one."""
        import numpy as np

        if not runs_of_several_lines(dataset):
            return False
        y = dataset.y
        if np.all(np.abs(y) == 1):
            return False
        return bool(np.any((y < 1) | (y != np.round(y))))

    def auto_note(self, dataset):
        y = dataset.y
        return (
            f"qid on the lines and graded targets ({float(y.min()):g} to "
            f"{float(y.max()):g}): a ranking problem (SVMrank, pairs within each "
            "query); --problem binary, multiclass or hmm reads it otherwise"
        )

    def examples(self, dataset):
        from .problem import describe_queries

        return describe_queries(dataset)


class RankTraining(Training):
    default_algorithm = 3
    line_search = True

    def check_run(self, params, loss_id, options, notes):
        if params.rescaling != MARGIN_RESCALING:
            raise OptionError("the rank problem has margin rescaling only (-o 2), as SVMrank")
        return loss_id

    def build(self, dataset, loss_id, options):
        from .problem import RankProblem

        return RankProblem.from_dataset(dataset, loss_id=loss_id)


class RankReports(Reports):
    def scale_lines(self, info, params):
        n, r = info.n_examples, info.result
        loss = (
            "the pairs' hinge losses"
            if info.loss_id == 1
            else "each query's mean hinge loss over its pairs"
        )
        lines = [
            f"SVMrank scale (svm_rank_learn -c {params.C:g}): objective 1/2|w|^2 + (C/n)*sum "
            f"of {loss} = {r.primal:.6f} over n = {n} queries"
            + (
                f"; svm_learn -z p and LinearSVC on the pairs: C = C/n = "
                f"{c_light_from_rank(params.C, n):.6g}"
                if info.loss_id == 1
                else ""
            )
        ]
        epsilon = EPSILON if params.epsilon is None else params.epsilon
        if info.epsilon != epsilon:
            lines.append(
                f"NOTE: -e is relative to a query's loss (as svm_rank_learn's): eps = "
                f"{epsilon:g} x {info.epsilon / epsilon:.6g} pairs per query = {info.epsilon:.6g}"
            )
        return lines


class RankSelection(Selection):
    def cv_measure(self, model, dataset, loss_id):
        return cv_figures(model, dataset, loss_id)

    def cv_units(self, dataset):
        """Whole queries (runs of equal qid) in each fold."""
        import numpy as np

        if dataset.qid is None:
            return np.zeros(dataset.n_examples, dtype=np.int64), None
        qid = np.asarray(dataset.qid)
        return np.concatenate([[0], np.cumsum(qid[1:] != qid[:-1])]), None


class RankEstimators(Estimators):
    def c_of_sum(self, C, n):
        return rank_from_c_light(C, n)

    def count_examples(self, dataset):
        """Queries: the runs of equal qid (none: one query)."""
        return max(dataset.n_qid_runs(), 1)


ENTRY = ProblemEntry(
    "rank",
    command_line=RankCommandLine(),
    reading=RankReading(),
    training=RankTraining(),
    reports=RankReports(),
    selection=RankSelection(),
    classifying=Classifying(RankingModels),
    estimators=RankEstimators(),
)
