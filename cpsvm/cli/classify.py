"""cp_classify: predictions and evaluation for every model kind (SVMlight svm_classify)."""

from __future__ import annotations

import inspect
import sys
import time
from dataclasses import dataclass
from types import SimpleNamespace

import click

from ..options import FILE, OUTPUT, option
from ..problems import entries, model_handlers
from ..reporting.monitor import note, progress
from .command import DeclaredCommand, member_parameter, parameters, values_of
from .common import plot_option, run, version_option

# numpy, the readers and the models are imported inside the command
# (cpsvm/cli/__init__.py).


@dataclass
class Classify:
    """cp_classify's own flags; the options that only some models take are their
    problems' (each entry's ``classifying.options``)."""

    verbosity: int = option(
        "-v",
        help="Verbosity 0..3: 0 silent but errors; 1 the figures; 2 also the "
        "reading and runtime lines (on stderr); 3 as 2.",
        default=2,
        type=click.IntRange(0, 3),
        show_default=True,
    )
    full_precision: bool = option(
        "--double",
        help="Compute with feature values in full double precision. By default they "
        "are rounded to 32-bit floats as SVMlight stores them, so that decision "
        "values match svm_classify's digit for digit.",
        default=False,
        is_flag=True,
    )
    probability: bool = option(
        "--probability",
        help="Binary models fitted with --probability (Platt's A and B in the model file): "
        "write P(y=+1) per line instead of the decision value, and print the log-loss and "
        "the Brier score on the labelled examples besides the accuracy. P > 0.5 exactly "
        "when the decision value is > 0 (the predicted label; see the man page).",
        default=False,
        is_flag=True,
    )
    plot_file: str | None = plot_option(
        "the scores: ROC and precision-recall curves (their areas in the legends) for "
        "binary models, the confusion matrix for multiclass ones, per-query NDCG@10 for "
        "ranking functions"
    )
    example_file: str = option(argument=True, default=None, type=FILE, required=True)
    model_file: str = option(argument=True, default=None, type=FILE, required=True)
    output_file: str = option(argument=True, default="svm_predictions", type=OUTPUT, required=False)


def _model_options() -> list:
    """The problems' cp_classify options, each once: (setting name, Option)."""
    seen = {}
    for entry in entries():
        for declared in entry.classifying.options:
            seen.setdefault(declared.name, declared)
    return list(seen.values())


def _parameters() -> list:
    own = parameters(Classify)
    options = [member_parameter(o.option, o.name) for o in _model_options()]
    return (
        own[:2]
        + options
        + own[2:]
        + [version_option("SVM-light V6.20's svm_classify (and svm_multiclass_classify V2.20)")]
    )


def classify(**values):
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
    settings = {o.name: values.pop(o.name) for o in _model_options()}
    given, _ = values_of(Classify, values)
    example_file, model_file, output_file = given.example_file, given.model_file, given.output_file
    verbosity, full_precision = given.verbosity, given.full_precision
    if example_file == "-" and model_file == "-":
        raise click.UsageError("only one of EXAMPLE_FILE and MODEL_FILE can be '-'")
    from ..io.atomic import refuse_same_files

    refuse_same_files(
        [("EXAMPLE_FILE", example_file), ("MODEL_FILE", model_file)],
        [("OUTPUT_FILE", output_file), ("--plot", given.plot_file)],
    )
    from ..io.model_file import model_kind_of, read_model

    # Figures go to stdout unless the predictions do; then to stderr, keeping the pipe clean.
    report = sys.stderr if output_file == "-" else sys.stdout
    refused = {o.name: settings[o.name] for o in _model_options() if o.refused_elsewhere}
    # What the problems' handlers read: the command's settings and their own options.
    settings = SimpleNamespace(
        **vars(given),
        **settings,
        note=note,
        progress=lambda total, desc, unit: progress(total, verbosity, desc, unit),
    )

    # First: a file that is no model is refused before numpy, scipy or numba load.
    model = read_model(model_file, float32_features=not full_precision)
    if given.probability:
        _refuse_without_sigmoid(model, model_file)
    handlers = _handlers_of(model_kind_of(model).name)
    _refuse_settings(handlers, plot=given.plot_file is not None, **refused)
    read = getattr(handlers[0], "read", None)
    if read is not None:
        data = read(example_file, settings)
    else:
        from ..io.svmlight import read_examples

        data = read_examples(example_file, training=False)
    handler = next(h for h in handlers if not hasattr(h, "claims") or h.claims(model, data))
    handler.load(model)
    if verbosity >= 2:
        note(f"Reading model...OK. ({handler.describe(model)})")
    X = None
    if read is None:
        X, outside = _features(data, model, full_precision, verbosity)
        settings.full_precision = full_precision or outside

    started = time.process_time()
    # A handler that can draw its scores (--plot) returns how, third.
    classify_with = _probabilities if given.probability else handler.classify
    lines, report_figures, *draw = classify_with(model, data, X, settings)
    runtime = time.process_time() - started

    from ..io.atomic import atomic_output

    # A handler's lines in blocks (multiclass: every class's score) are written a block at
    # a time: never the whole text at once.
    blocks = lines.blocks() if hasattr(lines, "blocks") else [lines]
    with atomic_output(output_file) as out:
        for block in blocks:
            out.write("\n".join(block) + ("\n" if block else ""))
    if verbosity >= 2:
        note(f"Runtime (without IO) in cpu-seconds: {runtime:.2f}")
    if verbosity >= 1:
        report_figures(report)
    if given.plot_file is not None:
        draw[0](given.plot_file, f"{model_file} on {example_file}")


def _refuse_without_sigmoid(model, model_file):
    """--probability: a model without Platt's A and B is refused before anything is
    written."""
    if getattr(model, "platt", None) is None:
        from ..errors import InputError

        raise InputError(
            "--probability needs Platt's sigmoid in the model file, a binary model trained "
            "with --probability (ocas_learn, cp_learn, sampled_learn, asset_learn); this "
            "one has none",
            source=model_file,
        )


def _probabilities(model, data, X, settings):
    """--probability: P(y=+1) of each example a line (Platt's sigmoid of its decision
    value, on the label's side of 0.5: cpsvm.engine.platt.probabilities); the figures
    are svm_classify's, then the log-loss and the Brier score on the labelled examples."""
    from ..engine.platt import brier_score, log_loss, probabilities
    from ..problems.binary.report import BinaryModels, draw_scores, report_binary

    decision, _ = BinaryModels.decisions(model, data, X, settings)
    p = probabilities(decision, *model.platt)
    y = data.y

    def report(out):
        if report_binary(y, decision, out):
            labelled = y != 0
            print(f"Log-loss on test set: {log_loss(y[labelled], p[labelled]):.6f}", file=out)
            print(f"Brier score on test set: {brier_score(y[labelled], p[labelled]):.6f}", file=out)

    return (
        [_probability_text(v, d) for v, d in zip(p.tolist(), decision.tolist())],
        report,
        lambda path, title: draw_scores(y, decision, path, title),
    )


def _probability_text(p: float, decision: float) -> str:
    """P(y=+1) to 8 digits, as a decision value is written; in full where those digits
    would put it at 0.5 or past it (a value held next to 0.5: P > 0.5 exactly when the
    decision value is > 0)."""
    text = f"{p:.8g}"
    shown = float(text)
    return text if shown != 0.5 and (shown > 0.5) == (decision > 0) else repr(p)


def _handlers_of(kind: str) -> list:
    """The problems' handlers of the model kind ``kind``: one, or several of which the
    first that claims the model (by the test data) classifies, the last by default."""
    return [h for h in model_handlers() if kind in h.model_kinds]


def _refuse_settings(handlers, **given):
    """A setting for other models than this one (--perf-measures on a multiclass model)
    is a usage error, named with the problems that take it."""
    flags = {o.name: o.option.flags[0] for o in _model_options()} | {"plot": "--plot"}
    for name, value in given.items():
        if (
            value is not None
            and value is not False
            and not any(name in h.settings for h in handlers)
        ):
            takers = [
                e.name
                for e in entries()
                if e.classifying.handler and name in e.classifying.handler.settings
            ]
            raise click.UsageError(f"{flags[name]} is for {' and '.join(takers)} models")


def _features(data, model, full_precision, verbosity):
    """The test examples' features as the model sees them: rounded to 32-bit floats as
    SVMlight stores them (unless --double), those above the model's highest index ignored
    (said). A value a 32-bit float cannot hold (the readers take up to 1e150) is kept in
    double precision and the run computes in double, as with --double (said), rather
    than turning a decision value into nan. Returns (X, whether that happened)."""
    import numpy as np

    from ..models import highest_index, svmlight_features

    X = data.X
    outside = False
    if not full_precision:
        X, kept = svmlight_features(X)
        outside = bool(kept.any())
        if outside and verbosity >= 1:
            first = int(np.searchsorted(X.indptr, int(np.argmax(kept)), "right")) - 1
            line = data.line_of(first)
            note(
                f"Note: {int(np.count_nonzero(kept))} feature values beyond what a 32-bit "
                f"float holds (the first on line {line} of {data.source}) kept in double "
                "precision; the decision values computed in double precision, as with --double"
            )

    highest = highest_index(model)  # the model maps the file's indices to its columns
    if highest and X.shape[1] > highest and verbosity >= 1:
        ignored = int(np.count_nonzero(X.indices >= highest))
        if ignored:
            note(
                f"Note: {ignored} feature values above the model's highest feature index "
                f"({highest}) ignored"
            )
    return X, outside


def make_command() -> click.Command:
    """cp_classify's command, with the options of the problems registered so far."""
    return DeclaredCommand(
        "cp_classify",
        params=_parameters(),
        callback=classify,
        help=inspect.cleandoc(classify.__doc__),
    )


command = make_command()


def main(argv=None):
    run(command, argv, "cp_classify")


if __name__ == "__main__":
    main()
