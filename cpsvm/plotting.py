"""The pictures of ``--plot``: a learner's training trace, a C path's cross-validated
measure, and cp_classify's scores (ROC and precision-recall curves, a confusion matrix,
per-query NDCG).

matplotlib is an optional extra (``pip install 'cpsvm[plot]'``), imported only when a
picture is drawn. Figures are drawn on matplotlib's Agg canvas without pyplot, so the
host process's backend, its figures and its rcParams stay as they were (the settings of a
picture hold inside an ``rc_context``). The format comes from the file name's suffix
(.png or .svg); SVG text stays text (``svg.fonttype = 'none'``) so that the labels can be
read back. The figure is rendered in memory and then written atomically
(:func:`cpsvm.io.atomic.atomic_output`): a failure leaves no partial file. numpy is
imported where it is used: the command modules import :func:`plot_format` at start-up.
"""

from __future__ import annotations

import math
import os

from .errors import InputError, OptionError

PLOT_SUFFIXES = (".png", ".svg")
PLOT_MISSING = "--plot needs matplotlib: pip install 'cpsvm[plot]'"

# Inside every picture's rc_context: SVG text as <text> elements, ids without randomness
# (the same picture gives the same file), a size that reads on a screen and on paper.
_RC = {
    "svg.fonttype": "none",
    "svg.hashsalt": "cpsvm",
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "font.size": 9,
}
# No creation date in the file: the same run writes the same bytes.
_METADATA = {"svg": {"Date": None}, "png": {"Software": None}}


def plot_format(path) -> str:
    """'png' or 'svg', by the suffix of ``path``; any other is a usage error naming the
    accepted ones. Imports nothing."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in PLOT_SUFFIXES:
        raise OptionError(
            f"expected a --plot file name ending in {' or '.join(PLOT_SUFFIXES)}, got {path!r}"
        )
    return suffix[1:]


def check_plot_path(path) -> str:
    """The checks made when --plot is given, before any training: the suffix, and that
    matplotlib is installed (looked up, not imported). Returns the format."""
    import importlib.util

    fmt = plot_format(path)
    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise OptionError(PLOT_MISSING)
    return fmt


def _matplotlib():
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
    except ImportError:
        raise OptionError(PLOT_MISSING) from None
    return matplotlib


def _render(path, size, draw) -> None:
    """Draw ``draw(figure)`` on a new Agg figure of ``size`` inches and write it to
    ``path`` atomically, in the format its suffix names."""
    import io

    fmt = plot_format(path)
    matplotlib = _matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from .io.atomic import atomic_output

    with matplotlib.rc_context(_RC):
        figure = Figure(figsize=size, layout="constrained")
        FigureCanvasAgg(figure)
        draw(figure)
        rendered = io.BytesIO()
        figure.savefig(rendered, format=fmt, metadata=_METADATA[fmt])
    with atomic_output(path, binary=True) as out:
        out.write(rendered.getvalue())


def _numbers(rows, column):
    """A column of ``rows`` as floats (rows read back from a --trace file hold text);
    infinities as NaN, which matplotlib leaves out."""
    import numpy as np

    values = np.array([float(row[column]) for row in rows], dtype=np.float64)
    values[~np.isfinite(values)] = np.nan
    return values


# -- the training trace ---------------------------------------------------------------------


def plot_trace(rows, path, title: str) -> None:
    """The training trace: the objectives against iterations and, when the rows have
    ``seconds``, against seconds (a panel each). ``rows`` are dicts keyed by the columns
    --trace writes (cp_learn's and ocas_learn's: primal, dual, gap, ...; asset_learn's: objective,
    validation_error; --method gd's: objective), numbers or their text. The primal and
    dual objectives (or the objective) go on the left axis, the duality gap (or the
    validation error) on a log (linear) right axis."""
    rows = list(rows)
    columns = set(rows[0]) if rows else set()
    x_columns = [c for c in ("iteration", "seconds") if c in columns] or ["iteration"]

    def draw(figure):
        panels = figure.subplots(1, len(x_columns), squeeze=False)[0]
        for axes, x_column in zip(panels, x_columns):
            _trace_panel(axes, rows, columns, x_column)
        figure.suptitle(title)

    _render(path, (5.0 * len(x_columns) + 1.0, 4.0), draw)


_X_LABELS = {"iteration": "iteration", "seconds": "seconds"}


def _trace_panel(axes, rows, columns, x_column):
    import numpy as np

    axes.set_xlabel(_X_LABELS[x_column])
    axes.set_ylabel("objective")
    if not rows:
        axes.text(0.5, 0.5, "no iterations recorded", ha="center", transform=axes.transAxes)
        return
    x = _numbers(rows, x_column)
    lines = []
    for column, label in (("primal", "primal"), ("dual", "dual"), ("objective", "objective")):
        if column in columns:
            lines += axes.plot(x, _numbers(rows, column), marker=".", label=label)
    right = None
    if "gap" in columns:
        gap = _numbers(rows, "gap")
        gap[gap <= 0] = np.nan  # a log axis: a gap of 0 (or below) is left out
        if np.any(np.isfinite(gap)):
            right = axes.twinx()
            right.set_yscale("log")
            right.set_ylabel("duality gap (log scale)")
            lines += right.plot(x, gap, color="tab:red", linestyle="--", label="gap")
    elif "validation_error" in columns:
        error = _numbers(rows, "validation_error")
        if np.any(np.isfinite(error)):
            right = axes.twinx()
            right.set_ylabel("validation error")
            lines += right.plot(x, error, color="tab:green", linestyle="--", label="validation")
    axes.legend(lines, [line.get_label() for line in lines], loc="upper right")
    axes.grid(True, alpha=0.3)


# -- the C path -------------------------------------------------------------------------------


def plot_path(rows, path, measure: str, title: str, *, chosen=None) -> None:
    """A C path: the cross-validated ``measure`` (its name, the y label) against C on a
    log axis, the mean as a line with a band of ± one standard deviation. ``rows``:
    dicts with "C", "mean", "sd" (NaN or absent: no band) and optionally "gamma", which
    draws one curve per γ. ``chosen``: the C picked (a number), or (C, gamma) on a γ
    grid, marked with a star and a dotted line."""
    import numpy as np

    rows = list(rows)
    if not rows:
        raise InputError("no C path to draw: expected at least one row")
    gammas = sorted({row["gamma"] for row in rows if row.get("gamma") is not None})
    chosen_c, chosen_gamma = chosen if isinstance(chosen, tuple) else (chosen, None)

    def draw(figure):
        axes = figure.subplots()
        axes.set_xscale("log")
        axes.set_xlabel("C")
        axes.set_ylabel(measure)
        for gamma in gammas or [None]:
            curve = sorted(
                (r for r in rows if gamma is None or r.get("gamma") == gamma),
                key=lambda r: float(r["C"]),
            )
            C = _numbers(curve, "C")
            mean = _numbers(curve, "mean")
            sd = np.array([float(r.get("sd", math.nan)) for r in curve])
            label = f"mean, γ = {gamma:g}" if gamma is not None else "mean over the folds"
            (line,) = axes.plot(C, mean, marker="o", label=label)
            if np.any(np.isfinite(sd)):
                axes.fill_between(
                    C, mean - sd, mean + sd, color=line.get_color(), alpha=0.2, label="± sd"
                )
            if chosen_c is not None and (gamma is None or gamma == chosen_gamma):
                at = np.flatnonzero(np.isclose(C, float(chosen_c), rtol=1e-9, atol=0.0))
                where = f", γ = {gamma:g}" if gamma is not None else ""
                axes.axvline(float(chosen_c), color="gray", linestyle=":")
                axes.plot(
                    [float(chosen_c)],
                    [mean[at[0]]] if len(at) else [np.nanmean(mean)],
                    marker="*",
                    markersize=14,
                    color="black",
                    linestyle="none",
                    label=f"chosen C = {float(chosen_c):g}{where}",
                )
        axes.legend(loc="best")
        axes.grid(True, which="both", alpha=0.3)
        figure.suptitle(title)

    _render(path, (6.5, 4.5), draw)


# -- cp_classify's scores -----------------------------------------------------------------------

SCORE_KINDS = ("binary", "multiclass", "ranking")


def plot_scores(
    kind: str, path, title: str, *, y=None, scores=None, n_classes=None, ndcg=None, at=10
) -> None:
    """cp_classify's picture of a test set's scores, by ``kind``:

    - "binary": ``y`` the targets ±1 (0: unlabelled, left out), ``scores`` the decision
      values: the ROC curve and the precision-recall curve, their areas (ROC area,
      average precision: :mod:`cpsvm.measures`, as cp_classify --perf-measures prints
      them) in the legends, the point of threshold 0 marked;
    - "multiclass": ``y`` the true classes 1..``n_classes`` (0: unknown, left out),
      ``scores`` the predicted classes: the confusion matrix with the counts;
    - "ranking": ``ndcg`` the NDCG@``at`` of each query (NaN: no relevant document, left
      out), sorted, with their mean.
    """
    if kind == "binary":
        draw, size = _binary(y, scores), (10.0, 4.5)
    elif kind == "multiclass":
        draw, size = _confusion(y, scores, n_classes)
        size = (size, size)
    elif kind == "ranking":
        draw, size = _ndcg(ndcg, at), (7.0, 4.5)
    else:
        raise ValueError(f"expected a kind of scores in {SCORE_KINDS}, got {kind!r}")

    def titled(figure):
        draw(figure)
        figure.suptitle(title)

    _render(path, size, titled)


def _binary(y, decision):
    import numpy as np

    from .measures import average_precision, ranking_order, roc_area

    y = np.asarray(y, dtype=np.float64)
    decision = np.asarray(decision, dtype=np.float64)
    labelled = y != 0
    y, decision = y[labelled], decision[labelled]
    if np.any(np.abs(y) != 1):
        raise InputError("--plot draws ROC curves of targets +1/-1: these targets are real values")
    n_pos = int(np.count_nonzero(y > 0))
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise InputError(
            "--plot cannot draw ROC and precision-recall curves: the labelled test examples "
            "are all of one class"
        )
    # The curves of the ranking the measures score: by decreasing value, ties broken
    # pessimistically (a negative first), so that the area under the staircase is theirs.
    ranked = y[ranking_order(y, decision)] > 0
    tp = np.concatenate([[0], np.cumsum(ranked)])
    fp = np.concatenate([[0], np.cumsum(~ranked)])
    tpr, fpr = tp / n_pos, fp / n_neg
    precision = tp[1:] / np.arange(1, len(ranked) + 1)
    recall = tp[1:] / n_pos
    roc, ap = roc_area(y, decision), average_precision(y, decision)
    predicted = decision > 0
    at_zero = int(np.count_nonzero(predicted))  # ranks above the threshold 0
    tp0 = int(np.count_nonzero(predicted & (y > 0)))
    precision0 = tp0 / at_zero if at_zero else 1.0

    def draw(figure):
        left, right = figure.subplots(1, 2)
        left.step(fpr, tpr, where="post", label=f"ROC area {roc:.2f}%")
        left.plot([0, 1], [0, 1], color="gray", linestyle=":", label="chance")
        left.plot(
            [(at_zero - tp0) / n_neg],
            [tp0 / n_pos],
            marker="o",
            color="black",
            linestyle="none",
            label="threshold 0",
        )
        left.set_xlabel("false positive rate")
        left.set_ylabel("true positive rate (recall)")
        left.set_title("ROC curve")
        left.legend(loc="lower right")
        right.plot(recall, precision, label=f"average precision {ap:.2f}%")
        right.axhline(n_pos / len(y), color="gray", linestyle=":", label="chance")
        right.plot(
            [tp0 / n_pos],
            [precision0],
            marker="o",
            color="black",
            linestyle="none",
            label="threshold 0",
        )
        right.set_xlabel("recall")
        right.set_ylabel("precision")
        right.set_title("precision-recall curve")
        right.legend(loc="lower left")
        for axes in (left, right):
            axes.set_xlim(-0.02, 1.02)
            axes.set_ylim(-0.02, 1.02)
            axes.grid(True, alpha=0.3)

    return draw


def _confusion(y, predicted, n_classes):
    import numpy as np

    y = np.asarray(y).astype(np.int64)
    predicted = np.asarray(predicted).astype(np.int64)
    known = y != 0
    y, predicted = y[known], predicted[known]
    k = int(max(n_classes or 0, y.max(initial=0), predicted.max(initial=0)))
    counts = np.zeros((k, k), dtype=np.int64)
    np.add.at(counts, (y - 1, predicted - 1), 1)
    errors = int(len(y) - np.trace(counts))
    error = 100.0 * errors / len(y) if len(y) else math.nan

    def draw(figure):
        axes = figure.subplots()
        image = axes.imshow(counts, cmap="Blues", interpolation="nearest")
        figure.colorbar(image, ax=axes, label="examples")
        names = [str(c) for c in range(1, k + 1)]
        axes.set_xticks(range(k), names)
        axes.set_yticks(range(k), names)
        axes.set_xlabel("predicted class")
        axes.set_ylabel("true class")
        axes.set_title(f"confusion matrix: {errors} of {len(y)} wrong ({error:.2f}% error)")
        if k <= 30:  # the counts stay legible
            high = (counts.min(initial=0) + counts.max(initial=0)) / 2  # the colour's middle
            for (i, j), n in np.ndenumerate(counts):
                color = "white" if n > high else "black"
                axes.text(j, i, str(n), ha="center", va="center", color=color, fontsize=7)

    return draw, min(4.0 + 0.35 * k, 14.0)


def _ndcg(ndcg, at):
    import numpy as np

    ndcg = np.asarray(ndcg, dtype=np.float64)
    scored = np.sort(ndcg[~np.isnan(ndcg)])[::-1]
    left_out = len(ndcg) - len(scored)

    def draw(figure):
        axes = figure.subplots()
        position = np.arange(1, len(scored) + 1)
        if len(scored) <= 60:
            axes.bar(position, scored, color="tab:blue", label=f"NDCG@{at} of a query")
        else:
            axes.plot(position, scored, color="tab:blue", label=f"NDCG@{at} of a query")
        if len(scored):
            mean = float(scored.mean())
            axes.axhline(mean, color="black", linestyle="--", label=f"mean NDCG@{at} {mean:.4f}")
        axes.set_xlabel(f"queries, sorted by NDCG@{at}")
        axes.set_ylabel(f"NDCG@{at}")
        axes.set_ylim(0, 1.05)
        without = f"; {left_out} without a relevant document left out" if left_out else ""
        axes.set_title(f"per-query NDCG@{at} ({len(scored)} queries{without})")
        axes.legend(loc="lower left")
        axes.grid(True, axis="y", alpha=0.3)

    return draw
