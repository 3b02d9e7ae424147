"""How binary models report themselves: cp_classify's decision values and figures
(svm_classify's accuracy and precision/recall, svm_perf_classify's measures) and the
learners' statistics line that restates the objective in SVMlight's scale. numpy is
imported where it is used: the entry that names these is read by ``-h``."""

from __future__ import annotations

from ...conventions import PERF_LOSS_NAMES, c_light_from_perf


class BinaryModels:
    """cp_classify's handler of SVMlight/SVMperf models (linear or kernel) and of
    asset_learn's random-feature models: one decision value a line, accuracy and P/R;
    --plot, the ROC and precision-recall curves."""

    model_kinds = ("svmlight", "rff")
    settings = ("pred_format", "perf_measures", "plot")

    @staticmethod
    def load(model):
        pass

    @staticmethod
    def describe(model):
        if hasattr(model, "n_components"):
            return f"{model.n_components} random features, {model.task}"
        sv = getattr(model, "support_vectors", None)
        return f"{1 if sv is None else sv.shape[0]} support vectors read"

    @staticmethod
    def decisions(model, data, X, settings):
        """The decision values of the test examples, and the lines of the predictions."""
        kernel = getattr(model, "kernel", None)
        if kernel is not None:  # test values its polynomial kernel cannot raise
            from ...kernels import check_kernel_values

            check_kernel_values(kernel, data)
        with settings.progress(X.shape[0], "classifying", "ex") as bar:
            decision = model.decision_function(
                X, progress=bar.update, single_precision=not settings.full_precision
            )
        return decision, [decision_line(d, settings.pred_format) for d in decision]

    @classmethod
    def classify(cls, model, data, X, settings):
        decision, lines = cls.decisions(model, data, X, settings)

        def report(out):
            if report_binary(data.y, decision, out):
                report_perf(model, data.y, decision, out, settings.perf_measures)

        return lines, report, lambda path, title: draw_scores(data.y, decision, path, title)


def draw_scores(y, decision, path, title):
    """--plot: the ROC and precision-recall curves of the decision values."""
    from ...plotting import plot_scores

    plot_scores("binary", path, title, y=y, scores=decision)


def decision_line(d: float, pred_format: int) -> str:
    if pred_format == 1:
        return f"{d:.8g}"
    # SVMlight V1.0: the predicted class first, each with its distance.
    return f"{d:.8g}:+1 {-d:.8g}:-1" if d > 0 else f"{-d:.8g}:-1 {d:.8g}:+1"


def report_binary(y, decision, out):
    """svm_classify's figures on the labelled examples (target 0: unlabelled). True when
    the classification figures were printed."""
    import numpy as np

    labelled = y != 0
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
    # 0/0 is undefined, not 0%: said so (svm_classify would print nan).
    precision = f"{100.0 * tp / (tp + fp):.2f}%" if tp + fp else "undefined"
    recall = f"{100.0 * tp / (tp + fn):.2f}%" if tp + fn else "undefined"
    why = [
        what
        for what, empty in (
            ("precision: no example predicted +1", tp + fp == 0),
            ("recall: no +1 example", tp + fn == 0),
        )
        if empty
    ]
    print(
        f"Accuracy on test set: {100.0 * correct / total:.2f}% ({correct} correct, "
        f"{total - correct} incorrect, {total} total)",
        file=out,
    )
    print(
        f"Precision/recall on test set: {precision}/{recall}"
        + (f" ({'; '.join(why)})" if why else ""),
        file=out,
    )
    return True


def report_perf(model, y, decision, out, all_figures):
    """SVMperf's measures on the labelled examples: the one the model was trained for
    (cp_learn -l, recorded in the model; none for the error rate, which the lines above
    give) and, with --perf-measures, svm_perf_classify's seven figures."""
    from ...measures import perf_figures, trained_measure

    labelled = y != 0
    y, decision = y[labelled], decision[labelled]
    loss_id = getattr(model, "loss_id", None)
    # A measure that needs both classes (ROC area, PRBEP, ...) is undefined on a test set
    # of one: said so, not printed as nan.
    undefined = "undefined (the labelled test examples are all of one class)"
    if loss_id is not None:
        name, value, detail = trained_measure(loss_id, y, decision, model.k_fraction)
        detail = f"{detail}; " if detail else ""
        shown = f"{value:.2f}%" if value == value else undefined
        print(
            f"{name} on test set: {shown} ({detail}the model was trained for "
            f"-l {loss_id}, {PERF_LOSS_NAMES[loss_id]})",
            file=out,
        )
    if all_figures:
        for name, value in perf_figures(y, decision):
            print(
                f"{name:<9}: {value:5.2f}" if value == value else f"{name:<9}: {undefined}",
                file=out,
            )


def svmlight_scale_line(C: float, n: int, primal: float) -> str:
    """A binary objective restated in SVMlight's convention (C_light = C·100/n)."""
    return (
        f"SVMlight scale: C_light = C*100/n = {c_light_from_perf(C, n):.6g}; objective "
        f"1/2|w|^2 + C_light*sum(hinge) = {primal:.6f}"
    )


def multivariate_scale_line(C: float, loss_id: int, class_counts, primal: float) -> str:
    """What the objective of SVMperf's multivariate loss -l means."""
    what = (
        f"Loss -l {loss_id} ({PERF_LOSS_NAMES[loss_id]}, SVMperf): objective "
        f"1/2|w|^2 + C*xi = {primal:.6f}, xi the loss of the whole label vector"
    )
    if loss_id == 10:
        n_pos, n_neg = class_counts
        c_pairs = 100.0 * C / (n_pos * n_neg)
        return (
            f"{what}; = SVMlight's 1/2|w|^2 + C_pairs*sum(hinge) over the {n_pos}*{n_neg}"
            f" pos-neg pair differences, C_pairs = 100*C/(P*N) = {c_pairs:.6g}"
        )
    return what


def cv_figures(model, data, loss_id=2, k_fraction=0.0):
    """A held-out fold's figures (cpsvm.selection): the error rate, precision and recall
    in percent, led by the SVMperf measure the model was trained for (-l other than 0 and
    2). A figure a fold cannot give is NaN with the reason (precision without an example
    predicted +1, recall without a +1 example, ROC area and the like on one class), so that
    it is left out of the means rather than counted as 0. -l 0's zero/one loss of the whole
    label vector is 100% on any fold with one error, whatever C: it cannot choose C, so the
    error rate leads."""
    import numpy as np

    from ...measures import trained_measure
    from ...models import fit_columns

    decision = model.decision_function(fit_columns(data.X, model.n_features))
    y = data.y
    positive, predicted = y > 0, decision > 0
    tp = int(np.count_nonzero(positive & predicted))
    n_predicted, n_positive = int(np.count_nonzero(predicted)), int(np.count_nonzero(positive))
    nan = float("nan")
    figures = [
        ("error", 100.0 * float(np.mean(positive != predicted)), -1),
        (
            "precision",
            100.0 * tp / n_predicted if n_predicted else nan,
            1,
            "no example predicted +1",
        ),
        ("recall", 100.0 * tp / n_positive if n_positive else nan, 1, "no +1 example"),
    ]
    if loss_id not in (None, 0, 2):
        name, value, _ = trained_measure(loss_id, y, decision, k_fraction)
        figures.insert(0, (name, value, 1, "one class in the held-out fold"))
    return figures
