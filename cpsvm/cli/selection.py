"""The learners' model selection (``--cv K``, ``--c-path VALUES``, declared in
:class:`cpsvm.cli.runner.Run`): the run — folds, the path in each fold, the table of
figures, the chosen C. The numerics are cpsvm.selection's; this module prints. numpy and
the library load inside the functions (cpsvm/cli/__init__.py)."""

from __future__ import annotations

import click

from ..errors import OptionError
from ..reporting.monitor import progress

DEFAULT_FOLDS = 5  # --c-path without --cv
# Figures that are not percentages (printed with four decimals, no %).
_PLAIN = ("NDCG", "RMSE")


def wanted(cv_folds, c_path) -> bool:
    return cv_folds is not None or c_path is not None


def check_model_file(model_file, cv_folds, c_path, trace_path=None):
    """MODEL_FILE is optional only with --cv or --c-path; --trace traces the training
    that writes it, so without it there is nothing to trace."""
    if model_file is None and not wanted(cv_folds, c_path):
        raise click.UsageError("Missing argument 'MODEL_FILE'.")
    if model_file is None and trace_path is not None:
        raise OptionError(
            "--trace writes the iterations of the training of MODEL_FILE: with --cv or "
            "--c-path and no MODEL_FILE nothing is trained at the end (give MODEL_FILE)"
        )


def refuse(cv_folds, c_path, *reasons):
    """OptionError for the first (condition, what) that holds when model selection is
    asked for."""
    if not wanted(cv_folds, c_path):
        return
    for condition, what in reasons:
        if condition:
            raise OptionError(f"--cv and --c-path cannot be used with {what}")


def path_picture(plot_file, c_path, model_file):
    """The --plot file the cross-validation draws — the C path, or with --cv alone and no
    model file its one point — or None: the training trace gets it."""
    return plot_file if c_path is not None or model_file is None else None


def select_c(
    data, entry, C, cv_folds, c_path, seed, make_path, verbosity, out, *, loss_id=None,
    plot_file=None, prog="",
):  # fmt: skip
    """Cross-validate at -c (``--cv``) or along ``--c-path``; print the figures to ``out``,
    draw the path to ``plot_file`` if given, and return the C to train the model at (the
    best one on a path, else -c). ``make_path(part, should_stop)`` gives a fold's path;
    Ctrl-C stops the fold's training at its next iteration and ends the command (exit 130,
    nothing written)."""
    from ..reporting.run import StopOnInterrupt
    from ..selection.folds import assign_folds
    from ..selection.grid import parse_values
    from ..selection.path import best_point, cross_validate

    values = parse_values(c_path) if c_path is not None else [C]
    k = cv_folds or DEFAULT_FOLDS
    units, classes = entry.selection.cv_units(data)
    folds = assign_folds(k, data.n_examples, units, classes, seed, data.source)

    def measure(model, test):
        return entry.selection.cv_measure(model, test, loss_id)

    # The interrupt only asks; the trainings end their iteration, and cross_validate
    # raises between two of them, never inside a compiled kernel.
    with (
        StopOnInterrupt(message=None) as stop,
        progress(k * len(values), verbosity, "cross-validation", "fit") as bar,
    ):
        if verbosity >= 1:
            how = "stratified by class" if classes is not None else "whole units"
            print(
                f"Cross-validation: {k} folds ({how}, seed {seed}), {len(values)} value"
                f"{'s' if len(values) > 1 else ''} of C",
                file=out,
            )
        points = cross_validate(data, folds, values, make_path, measure, bar.update, stop)
    best = best_point(points)
    if verbosity >= 1:
        if len(points) == 1:
            _print_folds(points[0], out)
        else:
            _print_path(points, out)
        name = best.names()[0]
        figure = f"{_shown(name, best.mean())} +- {_shown(name, best.sd())}"
        print(
            f"Best C: {best.C:g} ({name} {figure}, {_over(best, 0, k)})"
            if len(points) > 1
            else f"Cross-validated {name}: {figure} at C = {best.C:g}"
            + (f" ({_over(best, 0, k)})" if best.left_out() else ""),
            file=out,
        )
        for line in _left_out_notes(points, k):
            print(line, file=out)
    if plot_file is not None:
        from ..plotting import plot_path

        name = best.names()[0]
        rows = [{"C": p.C, "mean": p.mean(), "sd": p.sd()} for p in points]
        unit = "" if name.startswith(_PLAIN) else " (%)"
        title = f"{prog} {data.source}: {k}-fold cross-validation"
        plot_path(rows, plot_file, name + unit, title, chosen=best.C)
    return best.C


def _shown(name, value) -> str:
    if value != value:
        return "undefined"
    return f"{value:.4f}" if name.startswith(_PLAIN) else f"{value:.2f}%"


def _over(point, i, k) -> str:
    """Over how many folds figure ``i``'s mean is taken."""
    left = point.left_out(i)
    return f"{k} folds" if not left else f"over {k - left} of {k} folds, {left} left out"


def _left_out_notes(points, k) -> list:
    """A line per figure that is undefined on some folds: how many were left out of its
    means, and why."""
    lines = []
    for i, name in enumerate(points[0].names()):
        counts = [p.left_out(i) for p in points]
        if not any(counts):
            continue
        why = next((p.why(i) for p in points if p.why(i)), "")
        where = (
            f"on {counts[0]} of the {k} held-out folds"
            if len(set(counts)) == 1
            else f"on {min(counts)} to {max(counts)} of the {k} held-out folds, by C"
        )
        lines.append(
            f"Note: {name} is undefined {where}{f' ({why})' if why else ''}: left out of its "
            "mean and sd, not counted as 0"
        )
    return lines


def _print_folds(point, out):
    names = point.names()
    for f, figures in enumerate(point.figures, 1):
        shown = []
        for figure in figures:
            n, v = figure[0], figure[1]
            why = figure[3] if v != v and len(figure) > 3 and figure[3] else ""
            shown.append(f"{n} {_shown(n, v)}" + (f" ({why})" if why else ""))
        print(f"Fold {f}: " + "  ".join(shown), file=out)
    print(
        "Mean +- sd: "
        + "  ".join(
            f"{n} {_shown(n, point.mean(i))} +- {_shown(n, point.sd(i))}"
            for i, n in enumerate(names)
        ),
        file=out,
    )


def _print_path(points, out):
    names = points[0].names()
    header = f"{'C':>11} " + " ".join(
        f"{n:>14} {'sd':>7}" if i == 0 else f"{n:>14}" for i, n in enumerate(names)
    )
    print(header + f" {'seconds':>9} {'iterations':>10} {'cuts':>7}", file=out)
    for p in points:
        row = f"{p.C:>11.4g} " + " ".join(
            f"{_shown(n, p.mean(i)):>14} {_shown(n, p.sd(i)):>7}"
            if i == 0
            else f"{_shown(n, p.mean(i)):>14}"
            for i, n in enumerate(names)
        )
        print(row + f" {p.seconds:>9.2f} {p.iterations:>10} {p.cuts:>7}", file=out)


def fits_along(make):
    """select_c's ``make_path`` of a solver's path: ``make(part)`` gives the fold's path,
    whose ``fit(C, should_stop=...)`` returns (model, info), warm from the last C where
    the solver allows, and whose ``check_c(C)`` refuses a C the part's data do not
    allow, before any is trained."""
    from ..selection.path import Fit, FoldPath

    def make_path(part, should_stop):
        path = make(part)

        def fit(C):
            model, info = path.fit(C, should_stop=should_stop)
            r = info.result
            return Fit(model, getattr(r, "iterations", 0), getattr(r, "cuts_added", 0))

        return FoldPath(fit, path.check_c)

    return make_path


class ColdPath:
    """The path of a solver without warm starts (sampled_learn, asset_learn): each C
    trained from scratch by ``train(dataset, run)``, ``run`` the run's Resolved settings
    at that C."""

    def __init__(self, train, part, run):
        self.train, self.part, self.run = train, part, run

    def check_c(self, value):
        """-c's range (the path's values were parsed with it); the data's bound is each
        training's own, checked as it starts."""

    def fit(self, value, *, should_stop):
        return self.train(self.part, self.run.at(value), should_stop=should_stop)
