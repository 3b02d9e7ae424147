"""ocas_learn: linear SVMs by OCAS (libocas svmocas / msvmocas command line)."""

from __future__ import annotations

import math

import click

from ..cluster.command import check_worker_timeout, scheduler_option
from ..errors import InputError
from .common import (
    CONTEXT_SETTINGS,
    Checked,
    FilePath,
    IntChoice,
    OutputPath,
    non_negative,
    run,
    validate_options,
    verbosity_option,
    version_option,
)
from .scaffold import (
    LEARNER_VERBOSITY,
    TrainingMonitor,
    c_option,
    draw_trace,
    finish,
    margin_bounds_option,
    max_iterations_option,
    peak_rss_line,
    plot_option,
    report_stream,
    seed_option,
    stop_reason,
    threads_option,
    time_limit_option,
    trace_option,
    train_and_save,
)
from .selection import (
    check_model_file,
    path_picture,
    refuse,
    select_c,
    selection_options,
    wanted,
)

# numpy, the reader and the solver are imported inside the command (cpsvm/cli/__init__.py).


def read_costs(path):
    """-C FILE: one positive number per line (blank lines skipped)."""
    import numpy as np

    from ..io.streams import read_bytes, source_name

    name = source_name(path)
    costs = []
    for line_no, line in enumerate(read_bytes(path).decode("utf-8", "replace").splitlines(), 1):
        text = line.strip()
        if not text:
            continue
        try:
            value = float(text)
        except ValueError:
            raise InputError(
                f"expected a number C_i > 0, got {text!r}", source=name, line=line_no
            ) from None
        if not (value > 0 and math.isfinite(value)):
            raise InputError(f"expected a finite C_i > 0, got {text!r}", source=name, line=line_no)
        costs.append(value)
    return np.array(costs)


@click.command("ocas_learn", context_settings=CONTEXT_SETTINGS)
@c_option(
    "C of 1/2|w|^2 + C*sum(loss_i) (SVMlight's convention; multiclass: Crammer-Singer's).",
    default=1.0,
    show_default=True,
)
@click.option(
    "-C",
    "cost_file",
    type=FilePath(),
    default=None,
    help="File of per-example C_i, one positive number per line "
    "(overrides -c; binary and multiclass).",
)
@click.option(
    "-b",
    "bias",
    type=float,
    default=0.0,
    show_default=True,
    help="Value of the bias feature appended to every example; 0 = no bias (binary only).",
)
@click.option(
    "-n", "first_n", type=click.IntRange(min=1), default=None, help="Use only the first n examples."
)
@click.option(
    "-m",
    "method",
    type=IntChoice(
        0, 1, 2, expected="-m 0 (cutting plane), 1 (OCAS) or 2 (dual coordinate descent)"
    ),
    default=None,
    help="0 plain cutting plane (BMRM, as SVMperf), 1 OCAS, 2 dual coordinate descent with "
    "shrinking (LIBLINEAR's -s 3 / -s 4 method), stopped by -a or -r on its duality gap. "
    "Default: 2 for multiclass, and for binary when the mean C_i*|x_i|^2 is at most 3; "
    "else 1 (also with -q or --margin-bounds 1, and on a cluster). The statistics say which.",
)
@click.option(
    "-s",
    "buffer_size",
    type=Checked(int, lambda v: v >= 2, "a cut buffer -s >= 2"),
    default=2000,
    show_default=True,
    help="Cutting-plane buffer size: cuts kept at most.",
)
@threads_option("-p", "--threads")
@click.option(
    "-a",
    "tol_abs",
    type=non_negative("TolAbs"),
    default=0.0,
    show_default=True,
    help="TolAbs: stop when Q_P - Q_D <= TolAbs.",
)
@click.option(
    "-r",
    "tol_rel",
    type=non_negative("TolRel"),
    default=0.01,
    show_default=True,
    help="TolRel: stop when Q_P - Q_D <= |Q_P|*TolRel.",
)
@click.option(
    "-q",
    "qp_bound",
    type=float,
    default=0.0,
    show_default=True,
    help="QPBound: stop when Q_P <= QPBound.",
)
@time_limit_option("-t", "Maximal training time in seconds (reading excluded); default none.")
@click.option(
    "--lambda",
    "cut_lambda",
    type=Checked(float, lambda v: 0 < v <= 1, "0 < lambda <= 1"),
    default=0.1,
    show_default=True,
    help="Cut point w_c = (1-lambda)*w_best + lambda*w_t.",
)
@max_iterations_option()
@click.option(
    "--problem",
    default="auto",
    show_default=True,
    help="binary, multiclass or auto (binary if the targets are +-1, multiclass if 1..k).",
)
@seed_option("Seed of dual coordinate descent's pass orders (-m 2); OCAS is deterministic.")
@trace_option("iteration (Q_P, Q_D, gap, ...)")
@plot_option()
@scheduler_option()
@verbosity_option(1, LEARNER_VERBOSITY)
@version_option("libocas's svmocas and msvmocas")
@margin_bounds_option("Binary problems (-m 1); default 0.")
@selection_options("folds stratified by class")
@click.argument("example_file", type=FilePath())
@click.argument("model_file", type=OutputPath(), required=False)
def command(
    C,
    cost_file,
    bias,
    first_n,
    method,
    buffer_size,
    threads,
    tol_abs,
    tol_rel,
    qp_bound,
    time_limit,
    cut_lambda,
    max_iterations,
    problem,
    seed,
    trace_path,
    plot_file,
    scheduler,
    worker_timeout,
    verbosity,
    margin_bounds,
    cv_folds,
    c_path,
    example_file,
    model_file,
):
    """Train a linear SVM on EXAMPLE_FILE by OCAS and write MODEL_FILE.

    Targets +1/-1 train svmocas's binary SVM (an SVMlight linear model, which
    cp_classify and svm_classify read); class labels 1..k msvmocas's Crammer-Singer
    machine (an SVMmulticlass model).
    """
    from ..io.streams import source_name
    from ..io.svmlight import read_examples
    from ..solvers.ocas import METHODS, OcasParams, resolve_method, train
    from ..threads import thread_count

    params = OcasParams(
        C=C,
        bias=bias,
        method=method,
        buffer_size=buffer_size,
        tol_abs=tol_abs,
        tol_rel=tol_rel,
        qp_bound=qp_bound,
        time_limit=time_limit,
        cut_lambda=cut_lambda,
        max_iterations=max_iterations,
        problem=problem,
        n_threads=threads,
        seed=seed,
    )
    params.margin_bounds = margin_bounds
    validate_options(params)
    worker_timeout = check_worker_timeout(scheduler, worker_timeout)
    check_model_file(model_file, cv_folds, c_path, trace_path)
    refuse(
        cv_folds,
        c_path,
        (scheduler is not None, "--scheduler"),
        (cost_file is not None, "-C (per-example C_i; cost: factors in the file are kept)"),
    )
    if scheduler is not None:  # the examples stay on a Dask cluster (cpsvm/cluster)
        from ..cluster.command import ClusterInputs

        data = ClusterInputs(
            scheduler,
            example_file,
            model_file,
            first_n=first_n,
            cost_file=cost_file,
            margin_bounds=margin_bounds,
            verbosity=verbosity,
            worker_timeout=worker_timeout,
            method=method,
        )
        train = data.train
    else:
        with thread_count(threads):
            data = read_examples(example_file)
    if first_n is not None and first_n < data.n_examples:
        data = data.subset(slice(0, first_n))
    if cost_file is not None:
        params.example_costs = read_costs(cost_file)
        if len(params.example_costs) != data.n_examples:
            raise InputError(
                f"expected {data.n_examples} costs, one per example, found "
                f"{len(params.example_costs)}",
                source=source_name(cost_file),
            )
    report = report_stream(model_file)
    if wanted(cv_folds, c_path):
        picture = path_picture(plot_file, c_path, model_file)
        params.C = _selected_c(data, params, cv_folds, c_path, seed, verbosity, report, picture)
        if model_file is None:
            return
        C = params.C
        plot_file = None if picture is not None else plot_file
    if scheduler is None:  # (a cluster runs -m 0 or 1, and 1 by default)
        params.method = resolve_method(data, params)
    if verbosity >= 1:
        density = 100.0 * data.X.nnz / max(1, data.n_examples * data.n_features)
        print(
            f"Input data statistics:\n   # of examples  : {data.n_examples}\n"
            f"   dimensionality : {data.n_features}\n   density        : {density:.2f}%",
            file=report,
        )
        print(
            f"Setting:\n   C              : {C:g}\n   bias           : {bias:g}\n"
            f"   TolAbs         : {tol_abs:g}\n   TolRel         : {tol_rel:g}\n"
            f"   QPBound        : {qp_bound:g}\n   MaxTime        : {time_limit:g} [s]\n"
            f"   BufSize        : {buffer_size}\n   Method         : "
            f"{METHODS[1 if params.method is None else params.method]}",
            file=report,
        )

    monitor = getattr(data, "Monitor", TrainingMonitor)(
        verbosity, trace_path, "ocas_learn", style="ocas", keep_rows=plot_file is not None
    )
    info, _ = train_and_save(
        train, data, params, model_file, monitor, terminate=scheduler is not None
    )
    r = info.result
    if verbosity >= 1:
        reason = stop_reason(r.status, "ocas") or _converged_reason(r, params)
        s = info.seconds
        print(f"Problem: {info.problem}", file=report)
        print(f"Stopping condition: {reason}", file=report)
        if info.method == 2:
            print(
                f"Number of passes: {r.iterations}\nNumber of coordinate updates: "
                f"{r.updates} (examples active at the end: {r.active})",
                file=report,
            )
        else:
            print(
                f"Number of iterations: {r.iterations}\nNumber of cutting planes: "
                f"{r.working_set} (of {r.cuts_added})",
                file=report,
            )
        print(
            f"Q_P: {r.primal:.6f}   Q_D: {r.dual:.6f}   Q_P-Q_D: {r.gap:.6f}   "
            f"1-Q_D/Q_P: {r.gap / r.primal if r.primal else 0.0:.6g}",
            file=report,
        )
        if info.method == 2:
            timing = f"   passes         : {s['passes']:f} s\n   gap checks     : {s['gap']:f} s"
        else:
            timing = (
                f"   output         : {s['output']:f} s\n   line search    : "
                f"{s['line_search']:f} s\n   add cut        : {s['cut']:f} s\n"
                f"   QP             : {s['qp']:f} s"
            )
        print(
            f"Timing statistics:\n{timing}\n   total          : {s['total']:f} s",
            file=report,
        )
        print(f"Training error: {100 * info.training_error:.4f}%", file=report)
        print(f"Result saved to model file: {model_file}", file=report)
    if scheduler is not None:
        data.report()
    if verbosity >= 2:
        print(peak_rss_line(), file=report)
    draw_trace(plot_file, monitor, f"ocas_learn {example_file}: training trace")
    finish(
        "ocas_learn",
        r,
        model_file,
        verbosity,
        warn=False,
        best=True,
        terminated=getattr(info, "terminated", False),
    )


def _selected_c(data, params, cv_folds, c_path, seed, verbosity, report, plot_file):
    """--cv/--c-path: the C to train at, each fold's path warm along the values."""
    import numpy as np

    from ..problems import choose_entry
    from ..selection.path import Fit
    from ..solvers.ocas import OcasPath

    entry = choose_entry(data, params.problem)
    n_classes = int(np.max(data.y)) if entry.name == "multiclass" else None

    def make_path(part, should_stop):
        path = OcasPath(part, params, n_classes)

        def fit(C):
            model, info = path.fit(C, should_stop=should_stop)
            return Fit(model, info.result.iterations, getattr(info.result, "cuts_added", 0))

        return fit

    return select_c(
        data, entry, params.C, cv_folds, c_path, seed, make_path, verbosity, report,
        plot_file=plot_file, prog="ocas_learn",
    )  # fmt: skip


def _converged_reason(r, params):
    if r.primal <= params.qp_bound:
        return "Q_P <= QPBound"
    if r.gap <= params.tol_abs:
        return "Q_P-Q_D <= TolAbs"
    return "1-Q_D/Q_P <= TolRel"


def main(argv=None):
    run(command, argv, "ocas_learn")


if __name__ == "__main__":
    main()
