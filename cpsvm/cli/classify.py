"""cp_classify: predictions and evaluation for every model kind (SVMlight svm_classify)."""

from __future__ import annotations

import sys
import time

import click
import numpy as np

from ..errors import InputError
from ..io.atomic import atomic_output
from ..io.model_file import read_model
from ..io.svmlight import read_svmlight
from ..models import KernelModel, MulticlassModel
from .common import CONTEXT_SETTINGS, note, progress, run, verbosity_option


@click.command("cp_classify", context_settings=CONTEXT_SETTINGS)
@verbosity_option(default=2)
@click.option("-f", "pred_format", type=click.IntRange(0, 1), default=1, show_default=True,
              help="Output format for binary models: 1 decision value per line; 0 "
                   "SVMlight V1.0 format 'd:+1 -d:-1'.")
@click.option("--double", "full_precision", is_flag=True,
              help="Compute with feature values in full double precision. By default they "
                   "are rounded to 32-bit floats as SVMlight stores them, so that decision "
                   "values match svm_classify's digit for digit.")
@click.argument("example_file", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("model_file", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("output_file", required=False, default="svm_predictions",
                type=click.Path(dir_okay=False, allow_dash=True))
def command(verbosity, pred_format, full_precision, example_file, model_file, output_file):
    """Classify EXAMPLE_FILE with MODEL_FILE, writing OUTPUT_FILE (default
    svm_predictions; '-' for stdout).

    Reads SVMlight/LIBSVM example files ('-' for stdin, .gz transparently) and the model
    files of cp_learn, ocas_learn, sampled_learn, asset_learn, SVMlight V6, SVMperf and
    SVMmulticlass. Binary models write one decision value per line and, when the
    targets are +1/-1, print accuracy and precision/recall as svm_classify does;
    target 0 marks an unlabelled example (predicted, not scored). Multiclass models
    write '<class> <score_1> ... <score_k>' per line and print the zero/one error.
    Test features above the model's highest feature index are ignored.
    """
    if example_file == "-" and model_file == "-":
        raise click.UsageError("only one of EXAMPLE_FILE and MODEL_FILE can be '-'")
    # Figures go to stdout unless the predictions do; then to stderr, keeping the pipe clean.
    report = sys.stderr if output_file == "-" else sys.stdout

    model = read_model(model_file, float32_features=not full_precision)
    data = read_svmlight(example_file)
    if verbosity >= 2:
        n_sv = model.support_vectors.shape[0] if isinstance(model, KernelModel) else 1
        note(f"Reading model...OK. ({n_sv} support vectors read)")
    X = data.X
    if not full_precision:
        X = X.copy()
        X.data = X.data.astype(np.float32).astype(np.float64)
    if X.shape[1] > model.n_features and verbosity >= 1:
        ignored = X.nnz - X[:, :model.n_features].nnz
        if ignored:
            note(f"Note: {ignored} feature values above the model's highest feature index "
                 f"({model.n_features}) ignored")

    started = time.process_time()
    if isinstance(model, MulticlassModel):
        _check_class_labels(data, model)
        scores = model.decision_function(X)
        predicted = np.argmax(scores, axis=1) + 1
        lines = [f"{c} " + " ".join(f"{s:f}" for s in row) for c, row in zip(predicted, scores)]
    else:
        if isinstance(model, KernelModel):
            with progress(X.shape[0], verbosity, "classifying", "ex") as bar:
                decision = model.decision_function(X, progress=bar.update,
                                                   single_precision=not full_precision)
        else:
            decision = model.decision_function(X)
        lines = [_binary_line(d, pred_format) for d in decision]
    runtime = time.process_time() - started

    with atomic_output(output_file) as out:
        out.write("\n".join(lines) + ("\n" if lines else ""))
    if verbosity >= 2:
        note(f"Runtime (without IO) in cpu-seconds: {runtime:.2f}")
    if verbosity >= 1:
        if isinstance(model, MulticlassModel):
            _report_multiclass(data.y, predicted, report)
        else:
            _report_binary(data.y, decision, report)


def _binary_line(d: float, pred_format: int) -> str:
    if pred_format == 1:
        return f"{d:.8g}"
    # SVMlight V1.0: the predicted class first, each with its distance.
    return f"{d:.8g}:+1 {-d:.8g}:-1" if d > 0 else f"{-d:.8g}:-1 {d:.8g}:+1"


def _check_class_labels(data, model):
    bad = np.flatnonzero((data.y != np.round(data.y)) | (data.y < 0))
    if len(bad):
        i = int(bad[0])
        raise InputError(f"expected a class label 1..{model.n_classes} (0 = unknown), got "
                         f"{data.y[i]:g}", source=data.source, line=data.line_of(i))


def _report_binary(y, decision, out):
    labelled = y != 0
    if np.any(labelled & (np.abs(y) != 1)):
        note("Note: targets other than +1/-1/0; no accuracy computed")
        return
    n_unlabelled = int(np.count_nonzero(~labelled))
    if n_unlabelled:
        note(f"Note: {n_unlabelled} test examples are unlabeled (target 0), not scored")
    if not labelled.any():
        return
    positive, predicted_positive = y[labelled] > 0, decision[labelled] > 0
    tp = int(np.count_nonzero(positive & predicted_positive))
    fp = int(np.count_nonzero(~positive & predicted_positive))
    fn = int(np.count_nonzero(positive & ~predicted_positive))
    total = int(np.count_nonzero(labelled))
    correct = int(np.count_nonzero(positive == predicted_positive))
    precision = 100.0 * tp / (tp + fp) if tp + fp else 0.0
    recall = 100.0 * tp / (tp + fn) if tp + fn else 0.0
    print(f"Accuracy on test set: {100.0 * correct / total:.2f}% ({correct} correct, "
          f"{total - correct} incorrect, {total} total)", file=out)
    print(f"Precision/recall on test set: {precision:.2f}%/{recall:.2f}%", file=out)


def _report_multiclass(y, predicted, out):
    labelled = y != 0
    total = int(np.count_nonzero(labelled))
    if total < len(y):
        note(f"Note: {len(y) - total} test examples are unlabeled (class 0), not scored")
    if not total:
        return
    correct = int(np.count_nonzero(predicted[labelled] == y[labelled]))
    error = 100.0 * (total - correct) / total
    # svm_multiclass_classify's loss is the zero/one loss times 100, averaged.
    print(f"Average loss on test set: {error:.4f}", file=out)
    print(f"Zero/one-error on test set: {error:.2f}% ({correct} correct, "
          f"{total - correct} incorrect, {total} total)", file=out)


def main(argv=None):
    run(command, argv, "cp_classify")


if __name__ == "__main__":
    main()
