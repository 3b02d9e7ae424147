"""How ranking functions report themselves: cp_classify's score per document line (as
svm_rank_classify writes them) and its figures, with NDCG@10 and MAP (numpy imported where
used)."""

from __future__ import annotations


class RankingModels:
    """cp_classify's handler of ranking functions (cp_learn --problem rank, svm_rank_learn):
    one score a document line, per query the fraction of swapped pairs (SVMrank's loss),
    NDCG@10 and average precision, averaged. It takes a linear SVMlight model when the
    model is a ranking function or the test file holds queries with graded targets
    (:meth:`claims`). --plot: the queries' NDCG@10."""

    model_kinds = ("svmlight",)
    settings = ("plot",)

    @staticmethod
    def claims(model, data) -> bool:
        """A linear SVMlight model ranks a file when it is a ranking function (cp_learn
        --problem rank), or when the file has queries (qid, some of several lines) with
        targets other than -1, 0 and +1: SVMrank's test files, read by svm_rank_learn's
        models."""
        import numpy as np

        from ...models import LinearModel, RankingModel

        if isinstance(model, RankingModel):
            return True
        qid = data.qid
        if type(model) is not LinearModel or qid is None or len(qid) < 2:
            return False
        return bool(np.any(qid[1:] == qid[:-1])) and bool(
            np.any(np.abs(data.y) > 1) or np.any(data.y != np.round(data.y))
        )

    @staticmethod
    def load(model):
        pass

    @staticmethod
    def describe(model):
        return f"ranking function, {model.n_features} features"

    @staticmethod
    def classify(model, data, X, settings):
        from ...io.float_text import format_fixed_rows
        from .problem import check_targets, query_starts

        check_targets(data)
        starts = query_starts(data)
        if getattr(data, "qid", None) is None:
            settings.note(
                f"Note: {data.source} has no qid: its {data.n_examples} lines were ranked as "
                "one query (a ranking model scores queries, qid:<query> on each line)"
            )
        scores = model.decision_function(X)
        lines = format_fixed_rows(scores, 8)

        def draw(path, title):
            from ...plotting import plot_scores
            from .problem import NDCG_AT, query_metrics

            ndcg = query_metrics(scores, data.y, starts, at=NDCG_AT)[:, 2]
            plot_scores("ranking", path, title, ndcg=ndcg, at=NDCG_AT)

        return lines, lambda out: report_ranking(data.y, scores, starts, out), draw


def report_ranking(y, scores, starts, out):
    """svm_rank_classify's figures (the fraction of swapped pairs per query, ties in the
    scores counted as swapped, averaged over every query; the queries ranked perfectly),
    then NDCG@10 and MAP over the queries that have a relevant document."""
    import numpy as np

    from .problem import NDCG_AT, query_metrics

    metrics = query_metrics(scores, y, starts, at=NDCG_AT)
    n = len(metrics)
    pairs, swapped = metrics[:, 0], metrics[:, 1]
    fraction = np.divide(swapped, pairs, out=np.zeros(n), where=pairs > 0)
    wrong = int(np.count_nonzero(fraction))
    average = float(np.float32(fraction.mean()))
    print(f"Average loss on test set: {average:.4f}", file=out)
    print(
        f"Zero/one-error on test set: {100.0 * wrong / n:.2f}% ({n - wrong} correct, "
        f"{wrong} incorrect, {n} total)",
        file=out,
    )
    print(
        "NOTE: The loss reported above is the fraction of swapped pairs averaged over\n"
        "      all rankings. The zero/one-error is fraction of perfectly correct\n"
        "      rankings!",
        file=out,
    )
    print(f"Total Num Swappedpairs  : {swapped.sum():6.0f}", file=out)
    print(f"Avg Swappedpairs Percent: {100.0 * average:6.2f}", file=out)
    for column, name in ((2, f"NDCG@{NDCG_AT}"), (3, "MAP")):
        values = metrics[:, column]
        scored = ~np.isnan(values)
        left = n - int(np.count_nonzero(scored))
        mean = f"{float(values[scored].mean()):.4f}" if scored.any() else "undefined"
        print(
            f"{name} on test set: {mean} (over {n - left} queries with a relevant "
            f"document, target > 0" + (f"; {left} without one left out)" if left else ")"),
            file=out,
        )


def cv_figures(model, data, loss_id=None):
    """A held-out fold's NDCG@10 (over the queries with a relevant document; NaN, left
    out of the means, when none has one) and swapped pairs in percent (cpsvm.selection)."""
    import numpy as np

    from ...models import fit_columns
    from .problem import NDCG_AT, query_metrics, query_starts

    scores = model.decision_function(fit_columns(data.X, model.n_features))
    metrics = query_metrics(scores, data.y, query_starts(data), at=NDCG_AT)
    pairs, swapped, ndcg = metrics[:, 0], metrics[:, 1], metrics[:, 2]
    scored = ~np.isnan(ndcg)
    mean_ndcg = float(ndcg[scored].mean()) if scored.any() else float("nan")
    share = 100.0 * float(swapped.sum()) / float(pairs.sum()) if pairs.sum() else float("nan")
    return [
        (f"NDCG@{NDCG_AT}", mean_ndcg, 1, "no query with a relevant document"),
        ("swapped pairs", share, -1, "no pair of documents of different relevance"),
    ]
