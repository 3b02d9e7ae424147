"""cp_classify: predictions and evaluation for every model kind (SVMlight svm_classify)."""

from __future__ import annotations

import sys
import time

import click

from ..errors import InputError
from .common import CONTEXT_SETTINGS, note, progress, run, verbosity_option, version_option
from .parsing import classify_trees, max_length_option

# numpy, the readers and the models are imported inside the command
# (cpsvm/cli/__init__.py).
CLASSIFY_VERBOSITY = (
    "Verbosity 0..3: 0 silent but errors; 1 the figures; 2 also the "
    "reading and runtime lines (on stderr); 3 as 2."
)


@click.command("cp_classify", context_settings=CONTEXT_SETTINGS)
@verbosity_option(default=2, help=CLASSIFY_VERBOSITY)
@click.option(
    "-f",
    "pred_format",
    type=click.IntRange(0, 1),
    default=1,
    show_default=True,
    help="Output format for binary models: 1 decision value per line; 0 "
    "SVMlight V1.0's pairs of value:class, the predicted class first "
    "(see the man page).",
)
@click.option(
    "--double",
    "full_precision",
    is_flag=True,
    help="Compute with feature values in full double precision. By default they "
    "are rounded to 32-bit floats as SVMlight stores them, so that decision "
    "values match svm_classify's digit for digit.",
)
@click.option(
    "--b",
    "beam",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Sequence models: width of the beam in approximate Viterbi search (0 "
    "means exact Viterbi), as svm_hmm_classify's --b.",
)
@click.option(
    "--perf-measures",
    "perf_measures",
    is_flag=True,
    help="Binary models: also print svm_perf_classify's figures (Accuracy, "
    "Precision, Recall, F1, PRBEP, ROCArea, AvgPrec; ties in the ranking "
    "broken pessimistically), in its format.",
)
@max_length_option("parse")
@version_option("SVM-light V6.20's svm_classify (and svm_multiclass_classify V2.20)")
@click.argument("example_file", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("model_file", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument(
    "output_file",
    required=False,
    default="svm_predictions",
    type=click.Path(dir_okay=False, allow_dash=True),
)
def command(
    verbosity,
    pred_format,
    full_precision,
    beam,
    perf_measures,
    max_length,
    example_file,
    model_file,
    output_file,
):
    """Classify EXAMPLE_FILE with MODEL_FILE, writing OUTPUT_FILE (default
    svm_predictions; '-' for stdout).

    Reads SVMlight/LIBSVM example files ('-' for stdin; gzip, bzip2, xz transparently) and the model
    files of cp_learn, ocas_learn, sampled_learn, asset_learn, SVMlight V6, SVMperf and
    SVMmulticlass. Binary models write one decision value per line and, when the
    targets are +1/-1, print accuracy and precision/recall as svm_classify does;
    target 0 marks an unlabelled example (predicted, not scored); regression models
    (asset_learn -z r) and other real targets get the mean squared and absolute
    errors. Multiclass models
    write '<class> <score_1> ... <score_k>' per line and print the zero/one error
    (target 0 = class unknown: predicted, not scored, and the count said). A user
    problem's model (cp_learn --problem module:Class) imports that class (from the
    current directory or PYTHONPATH), writes its prediction per line and prints its
    average loss. Sequence models (cp_learn --problem hmm, SVMhmm V3.10) read SVM-hmm
    files ('<tag> qid:<sentence> ...', tag 0 = unknown), write one tag per token line
    and print the average loss per sentence, the zero/one error per sentence and the
    average loss per token, as svm_hmm_classify does. Parsing models (cp_learn --problem
    cfg) read bracketed trees (.mrg), parse each sentence's POS tags, write one tree a
    line and print labelled-bracket precision, recall, F1 and exact match (evalb's
    conventions). Ranking functions (cp_learn --problem rank, svm_rank_learn; or any linear
    model on a file of queries: qid, targets other than -1/0/+1) write one score a line, as
    svm_rank_classify does, and print its figures (the fraction of swapped pairs per query,
    averaged) with NDCG@10 and MAP. Test features above the model's highest feature index
    are ignored.
    """
    if example_file == "-" and model_file == "-":
        raise click.UsageError("only one of EXAMPLE_FILE and MODEL_FILE can be '-'")
    from ..io.model_file import model_kind_of, read_model

    # Figures go to stdout unless the predictions do; then to stderr, keeping the pipe clean.
    report = sys.stderr if output_file == "-" else sys.stdout

    # First: a file that is no model is refused before numpy, scipy or numba load.
    model = read_model(model_file, float32_features=not full_precision)
    if model_kind_of(model).name == "cfg":
        return classify_trees(model, example_file, output_file, max_length, verbosity, report)
    if max_length is not None:
        raise click.UsageError("--max-length is for parsing models (cfg)")
    import numpy as np

    from ..io.atomic import atomic_output
    from ..io.svmlight import read_svmlight

    data = read_svmlight(example_file)
    kind = _KINDS[model_kind_of(model).name]
    if kind is _Binary and _ranks(model, data):
        kind = _Ranking
    kind.load(model)
    if verbosity >= 2:
        note(f"Reading model...OK. ({kind.describe(model)})")
    X = data.X
    if not full_precision:
        X = X.copy()
        X.data = X.data.astype(np.float32).astype(np.float64)
    n_features = model.n_features
    if n_features and X.shape[1] > n_features and verbosity >= 1:
        ignored = X.nnz - X[:, :n_features].nnz
        if ignored:
            note(
                f"Note: {ignored} feature values above the model's highest feature index "
                f"({n_features}) ignored"
            )

    started = time.process_time()
    extra = {"beam": beam} if kind is _Sequence else {}
    if perf_measures:
        if kind not in (_Binary, _RandomFeatures):
            raise click.UsageError("--perf-measures is for binary models")
        extra["perf_measures"] = True
    lines, report_figures = kind.classify(
        model,
        data,
        X,
        verbosity=verbosity,
        pred_format=pred_format,
        full_precision=full_precision,
        **extra,
    )
    runtime = time.process_time() - started

    with atomic_output(output_file) as out:
        out.write("\n".join(lines) + ("\n" if lines else ""))
    if verbosity >= 2:
        note(f"Runtime (without IO) in cpu-seconds: {runtime:.2f}")
    if verbosity >= 1:
        report_figures(report)


# What cp_classify does with each model kind of cpsvm.io.model_file.MODEL_KINDS:
# ``load(model)`` what the model needs beyond its file, ``describe(model)`` for the
# "Reading model" line, and ``classify(model, data, X, ...)`` -> (one output line per
# example, a function printing the figures to a stream).


class _Binary:
    """SVMlight/SVMperf models, linear or kernel: decision values, accuracy and P/R."""

    @staticmethod
    def load(model):
        pass

    @staticmethod
    def describe(model):
        sv = getattr(model, "support_vectors", None)
        return f"{1 if sv is None else sv.shape[0]} support vectors read"

    @staticmethod
    def classify(model, data, X, *, verbosity, pred_format, full_precision, perf_measures=False):
        with progress(X.shape[0], verbosity, "classifying", "ex") as bar:
            decision = model.decision_function(
                X, progress=bar.update, single_precision=not full_precision
            )
        lines = [_binary_line(d, pred_format) for d in decision]
        regression = getattr(model, "task", None) == "regression"

        def report(out):
            if _report_binary(data.y, decision, out, regression):
                _report_perf(model, data.y, decision, out, perf_measures)

        return lines, report


class _Multiclass:
    """SVMmulticlass models: '<class> <score_1> ... <score_k>' lines, zero/one error."""

    load = _Binary.load

    @staticmethod
    def describe(model):
        return f"{model.n_classes} classes, {model.n_features} features"

    @staticmethod
    def classify(model, data, X, *, verbosity, pred_format, full_precision):
        import numpy as np

        _check_class_labels(data, model)
        scores = model.decision_function(X)
        predicted = np.argmax(scores, axis=1) + 1
        lines = [f"{c} " + " ".join(f"{s:f}" for s in row) for c, row in zip(predicted, scores)]
        return lines, lambda out: _report_multiclass(data.y, predicted, out)


class _UserProblem:
    """A user's problem: its class rebuilt on the test data predicts, one label a line;
    its loss against the file's labels gives SVMstruct's average loss."""

    @staticmethod
    def load(model):
        from ..problems.user import user_problem_class

        user_problem_class(model)  # a class that cannot be imported: said before anything else

    @staticmethod
    def describe(model):
        return f"problem {model.spec}, size_psi {model.size_psi}"

    @staticmethod
    def classify(model, data, X, *, verbosity, pred_format, full_precision):
        from ..problems.user import user_problem_on

        problem, fitted = user_problem_on(model, data)
        predictions = list(problem.predict(model.w, fitted.X))
        if len(predictions) != data.n_examples:
            raise InputError(
                f"problem {model.spec!r} predicted {len(predictions)} labels "
                f"for {data.n_examples} examples",
                source=data.source,
            )
        lines = [problem.format_label(p) for p in predictions]
        return lines, lambda out: _report_user_problem(problem, predictions, out)


class _Sequence:
    """SVMhmm models: the file's sentences tagged by Viterbi, one tag a token line, and
    svm_hmm_classify's figures (losses per sentence and per token)."""

    load = _Binary.load

    @staticmethod
    def describe(model):
        return (
            f"{model.n_tags} tags, {model.n_features} emission features, transitions "
            f"of order {model.trans_order}, emissions of order {model.emit_order}"
        )

    @staticmethod
    def classify(model, data, X, *, verbosity, pred_format, full_precision, beam=0):
        from ..data import SequenceDataset

        seqs = SequenceDataset.from_dataset(data, for_training=False)
        if verbosity >= 2:
            note(
                f"Reading test examples... {seqs.n_sequences} examples, {seqs.n_tokens} "
                f"tokens, {data.n_features} features, {seqs.n_tags} classes... done."
            )
        tags = model.predict(X, seqs.starts, beam=beam)
        lines = [str(t) for t in tags.tolist()]
        return lines, lambda out: _report_sequences(seqs, tags, out)


class _Ranking:
    """Ranking functions (cp_learn --problem rank, svm_rank_learn): one score a document
    line, as svm_rank_classify writes them, and per query the fraction of swapped pairs
    (SVMrank's loss), NDCG@10 and average precision, averaged."""

    load = _Binary.load

    @staticmethod
    def describe(model):
        return f"ranking function, {model.n_features} features"

    @staticmethod
    def classify(model, data, X, *, verbosity, pred_format, full_precision):
        from ..problems.rank import check_targets, query_starts

        check_targets(data)
        starts = query_starts(data)
        scores = model.decision_function(X)
        lines = [f"{v:.8f}" for v in scores]
        return lines, lambda out: _report_ranking(data.y, scores, starts, out)


def _ranks(model, data) -> bool:
    """A linear SVMlight model ranks a file when it is a ranking function (cp_learn
    --problem rank), or when the file has queries (qid, some of several lines) with
    targets other than -1, 0 and +1: SVMrank's test files, read by svm_rank_learn's models."""
    import numpy as np

    from ..models import LinearModel, RankingModel

    if isinstance(model, RankingModel):
        return True
    qid = data.qid
    if type(model) is not LinearModel or qid is None or len(qid) < 2:
        return False
    return bool(np.any(qid[1:] == qid[:-1])) and bool(
        np.any(np.abs(data.y) > 1) or np.any(data.y != np.round(data.y))
    )


class _RandomFeatures(_Binary):
    """asset_learn's random Fourier feature models: decision values as binary models;
    regression models print the mean squared and absolute errors."""

    @staticmethod
    def describe(model):
        return f"{model.n_components} random features, {model.task}"


_KINDS = {
    "svmlight": _Binary,
    "multiclass": _Multiclass,
    "user-problem": _UserProblem,
    "rff": _RandomFeatures,
    "hmm": _Sequence,
}


def _binary_line(d: float, pred_format: int) -> str:
    if pred_format == 1:
        return f"{d:.8g}"
    # SVMlight V1.0: the predicted class first, each with its distance.
    return f"{d:.8g}:+1 {-d:.8g}:-1" if d > 0 else f"{-d:.8g}:-1 {d:.8g}:+1"


def _check_class_labels(data, model):
    import numpy as np

    bad = np.flatnonzero((data.y != np.round(data.y)) | (data.y < 0))
    if len(bad):
        i = int(bad[0])
        raise InputError(
            f"expected a class label 1..{model.n_classes} (0 = unknown), got {data.y[i]:g}",
            source=data.source,
            line=data.line_of(i),
        )


def _report_binary(y, decision, out, regression=False):
    import numpy as np

    labelled = y != 0
    if regression or np.any(labelled & (np.abs(y) != 1)):
        # Real targets (or a regression model): the errors of f(x) as a prediction of y.
        if len(y):
            residual = decision - y
            print(
                f"Mean squared error on test set: {float(np.mean(residual**2)):.6g} "
                f"({len(y)} examples)",
                file=out,
            )
            print(
                f"Mean absolute error on test set: {float(np.mean(np.abs(residual))):.6g}", file=out
            )
        return
    n_unlabelled = int(np.count_nonzero(~labelled))
    if n_unlabelled:
        print(
            f"Note: {n_unlabelled} test examples are unlabeled (target 0): predicted, not scored",
            file=out,
        )
    if not labelled.any():
        return False
    positive, predicted_positive = y[labelled] > 0, decision[labelled] > 0
    tp = int(np.count_nonzero(positive & predicted_positive))
    fp = int(np.count_nonzero(~positive & predicted_positive))
    fn = int(np.count_nonzero(positive & ~predicted_positive))
    total = int(np.count_nonzero(labelled))
    correct = int(np.count_nonzero(positive == predicted_positive))
    precision = 100.0 * tp / (tp + fp) if tp + fp else 0.0
    recall = 100.0 * tp / (tp + fn) if tp + fn else 0.0
    print(
        f"Accuracy on test set: {100.0 * correct / total:.2f}% ({correct} correct, "
        f"{total - correct} incorrect, {total} total)",
        file=out,
    )
    print(f"Precision/recall on test set: {precision:.2f}%/{recall:.2f}%", file=out)
    return True


def _report_perf(model, y, decision, out, all_figures):
    """SVMperf's measures on the labelled examples: the one the model was trained for
    (cp_learn -l, recorded in the model; none for the error rate, which the lines above
    give) and, with --perf-measures, svm_perf_classify's seven figures."""
    from ..conventions import PERF_LOSS_NAMES
    from ..measures import perf_figures, trained_measure

    labelled = y != 0
    y, decision = y[labelled], decision[labelled]
    loss_id = getattr(model, "loss_id", None)
    if loss_id is not None:
        name, value, detail = trained_measure(loss_id, y, decision, model.k_fraction)
        detail = f"{detail}; " if detail else ""
        print(
            f"{name} on test set: {value:.2f}% ({detail}the model was trained for "
            f"-l {loss_id}, {PERF_LOSS_NAMES[loss_id]})",
            file=out,
        )
    if all_figures:
        for name, value in perf_figures(y, decision):
            print(f"{name:<9}: {value:5.2f}", file=out)


def _report_ranking(y, scores, starts, out):
    """svm_rank_classify's figures (the fraction of swapped pairs per query, ties in the
    scores counted as swapped, averaged over every query; the queries ranked perfectly),
    then NDCG@10 and MAP over the queries that have a relevant document."""
    import numpy as np

    from ..problems.rank import NDCG_AT, query_metrics

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


def _report_multiclass(y, predicted, out):
    import numpy as np

    labelled = y != 0
    total = int(np.count_nonzero(labelled))
    if total < len(y):
        # Said beside the figures, not only on stderr: an error rate over fewer lines than
        # the file has must not pass unnoticed (0-based labels are a common cause).
        print(
            f"Note: {len(y) - total} of {len(y)} test examples have target 0, which "
            "SVMmulticlass reads as 'class unknown': predicted, not scored (classes are "
            "1..k; for 0-based labels add 1)",
            file=out,
        )
    if not total:
        return
    correct = int(np.count_nonzero(predicted[labelled] == y[labelled]))
    error = 100.0 * (total - correct) / total
    # svm_multiclass_classify's loss is the zero/one loss times 100, averaged.
    print(f"Average loss on test set: {error:.4f}", file=out)
    print(
        f"Zero/one-error on test set: {error:.2f}% ({correct} correct, "
        f"{total - correct} incorrect, {total} total)",
        file=out,
    )


def _report_sequences(seqs, tags, out):
    """svm_hmm_classify's figures: Hamming loss averaged over sentences, the share of
    sentences with an error and the loss per token (the first two as SVMstruct prints
    them, in single precision)."""
    import numpy as np

    from ..decoding.viterbi import hamming_losses

    losses = hamming_losses(seqs.tags, tags, seqs.starts)
    n = len(losses)
    wrong = int(np.count_nonzero(losses))
    average = np.float32(losses.sum() / n)
    error = np.float32(100.0) * np.float32(wrong) / np.float32(n)
    print(f"Average loss on test set: {float(average):.4f}", file=out)
    print(
        f"Zero/one-error on test set: {float(error):.2f}% ({n - wrong} correct, "
        f"{wrong} incorrect, {n} total)",
        file=out,
    )
    print(f"Average loss per token: {losses.sum() / seqs.n_tokens:.4f}", file=out)


def _report_user_problem(problem, predictions, out):
    """SVMstruct's figures: the average of the problem's loss Δ(y_i, ŷ_i) against the
    file's labels and the share of examples with a positive loss."""
    import numpy as np

    try:
        losses = np.asarray(problem.losses(predictions), dtype=np.float64)
    except NotImplementedError:
        print("Note: the problem defines no loss: no figures computed", file=out)
        return
    total = len(losses)
    if not total:
        return
    correct = int(np.count_nonzero(losses == 0))
    error = 100.0 * (total - correct) / total
    print(f"Average loss on test set: {float(np.mean(losses)):.4f}", file=out)
    print(
        f"Zero/one-error on test set: {error:.2f}% ({correct} correct, "
        f"{total - correct} incorrect, {total} total)",
        file=out,
    )


def main(argv=None):
    run(command, argv, "cp_classify")


if __name__ == "__main__":
    main()
