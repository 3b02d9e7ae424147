"""How multiclass models report themselves: cp_classify's '<class> <score_1> ...
<score_k>' lines and svm_multiclass_classify's figures (numpy imported where used)."""

from __future__ import annotations

from ...errors import InputError


class MulticlassModels:
    """cp_classify's handler of SVMmulticlass models (cp_learn and ocas_learn multiclass);
    --plot, the confusion matrix."""

    model_kinds = ("multiclass",)
    settings = ("plot",)

    @staticmethod
    def load(model):
        pass

    @staticmethod
    def describe(model):
        return f"{model.n_classes} classes, {model.n_features} features"

    @staticmethod
    def classify(model, data, X, settings):

        from ...io.float_text import format_fixed_rows

        check_class_labels(data, model)
        predicted = model.predict(X)

        def blocks():
            """The lines a block of rows at a time (a line holds every class's score:
            the whole file's lines are rows x classes numbers of text)."""
            for lo, scores in model.score_blocks(X):
                rows = format_fixed_rows(scores, 6)  # f"{s:f}" of each score
                chosen = predicted[lo : lo + len(rows)].tolist()
                yield [f"{c} {row}" for c, row in zip(chosen, rows)]

        lines = LineBlocks(blocks)

        def draw(path, title):
            from ...plotting import plot_scores

            plot_scores(
                "multiclass", path, title, y=data.y, scores=predicted, n_classes=model.n_classes
            )

        return lines, lambda out: report_multiclass(data.y, predicted, out), draw


class LineBlocks:
    """The output lines as blocks (lists of lines) made when iterated: cp_classify writes
    a block at a time (``blocks``); iterating gives the lines one by one."""

    def __init__(self, make_blocks):
        self.blocks = make_blocks

    def __iter__(self):
        for block in self.blocks():
            yield from block


def check_class_labels(data, model):
    import numpy as np

    bad = np.flatnonzero((data.y != np.round(data.y)) | (data.y < 0))
    if len(bad):
        i = int(bad[0])
        raise InputError(
            f"expected a class label 1..{model.n_classes} (0 = unknown), got {data.y[i]:g}",
            source=data.source,
            line=data.line_of(i),
        )


def report_multiclass(y, predicted, out):
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


def cv_figures(model, data, loss_id=None):
    """A held-out fold's error rate in percent (cpsvm.selection)."""
    import numpy as np

    from ...models import fit_columns

    predicted = model.predict(fit_columns(data.X, model.n_features))
    return [("error", 100.0 * float(np.mean(predicted != data.y)), -1)]
