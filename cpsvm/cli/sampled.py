"""sampled_learn: kernel SVMs trained with sampled cutting planes (Yu & Joachims, KDD
2008): the constant-time and the linear-time algorithm."""

from __future__ import annotations

import click

from ..problems.binary.report import svmlight_scale_line
from .common import (
    CONTEXT_SETTINGS,
    Checked,
    FilePath,
    OutputPath,
    note,
    positive,
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
    kernel_options,
    max_idle_option,
    max_iterations_option,
    plot_option,
    reading_line,
    report_stream,
    runtime_line,
    seed_option,
    stop_reason,
    threads_option,
    time_limit_option,
    trace_option,
    train_and_save,
)
from .selection import (
    c_unless_path,
    check_model_file,
    path_picture,
    select_c_cold,
    selection_options,
    wanted,
)

# The reader and the solver are imported inside the command (cpsvm/cli/__init__.py).
ALGORITHMS = ("const", "linear")  # cpsvm.solvers.sampled.ALGORITHMS, without importing it


class SampledMonitor(TrainingMonitor):
    """The progress line and trace of cp_learn, plus the kernel evaluations so far."""

    COLUMNS = TrainingMonitor.COLUMNS + ("kernel_evaluations",)


@click.command("sampled_learn", context_settings=CONTEXT_SETTINGS)
@c_option(
    "Trade-off C (required, except with --c-path), SVMperf's convention as cp_learn: "
    "C_light = C*100/n.",
    default=None,
    callback=c_unless_path,
)
@click.option(
    "-e",
    "epsilon",
    type=positive("epsilon"),
    default=1.0,
    show_default=True,
    help="Tolerance in cp_learn's units (loss 100 per error): stop when the "
    "(sampled, for const) most violated constraint is violated by at most "
    "this much. 1 is the paper's 0.01 on the zero/one loss; its 0.001 is "
    "-e 0.1 (see DEFAULTS in the man page).",
)
@click.option(
    "--algorithm",
    type=click.Choice(ALGORITHMS),
    default="linear",
    show_default=True,
    help="const: constant-time (Algorithm 2), cuts from r uniform draws; "
    "linear: linear-time (Algorithm 3), exact argmax and stop test, cuts "
    "from r draws among the examples with non-zero loss.",
)
@click.option(
    "--r",
    "--sample-size",
    "sample_size",
    type=Checked(int, lambda v: v >= 1, "a sample size --r >= 1"),
    default=400,
    show_default=True,
    help="Sample size r: examples drawn for each cut. Not -r, which is the "
    "kernel's constant as in SVMlight (a warning says so when -r is given "
    "with -t 0 or 2, whose kernels ignore it).",
)
@click.option(
    "-p",
    "patience",
    type=Checked(int, lambda v: v >= 1, "-p >= 1 (unviolated draws before stopping)"),
    default=4,
    show_default=True,
    help="const: stop after this many sampled constraints in a row are not "
    "violated by more than epsilon.",
)
@max_iterations_option()
@time_limit_option()
@max_idle_option(20)
@kernel_options(
    ", as in SVMlight; not the sample size, which is --r (-r given with -t 0 "
    "or 2, whose kernels ignore it, gets a warning)"
)
@seed_option("Seed of the draws: the same seed gives the same model file.")
@threads_option()
@trace_option("iteration (primal, dual, gap, ..., kernel_evaluations)")
@plot_option()
@verbosity_option(1, LEARNER_VERBOSITY)
@version_option("SVM-perf V3.00's command line (Yu & Joachims' sampled cuts)")
@selection_options("folds stratified by class")
@click.argument("example_file", type=FilePath())
@click.argument("model_file", type=OutputPath(), required=False)
def command(
    C,
    epsilon,
    algorithm,
    sample_size,
    patience,
    max_iterations,
    time_limit,
    max_idle,
    kernel,
    seed,
    threads,
    trace_path,
    plot_file,
    verbosity,
    cv_folds,
    c_path,
    example_file,
    model_file,
):
    """Learn a binary kernel SVM from EXAMPLE_FILE (targets +1/-1) with sampled cuts and
    write MODEL_FILE, an SVMlight kernel model (cp_classify and svm_classify read it).
    """
    from ..io.svmlight import read_examples
    from ..solvers.sampled import SampledParams, train
    from ..threads import thread_count

    if verbosity >= 1 and _coef_const_unused(kernel):
        note(
            f"Warning: -r is the constant of the polynomial and sigmoid kernels, unused "
            f"with -t {kernel.kind}; the sample size is --r (now {sample_size})"
        )
    if C is None:
        C = 1.0  # --c-path: each fold's fits set their own
    params = SampledParams(
        C=C,
        epsilon=epsilon,
        algorithm=algorithm,
        sample_size=sample_size,
        patience=patience,
        kernel=kernel,
        n_threads=threads,
        max_iterations=max_iterations,
        max_idle=max_idle,
        seed=seed,
        time_limit=time_limit,
    )
    check_model_file(model_file, cv_folds, c_path, trace_path)
    validate_options(params)
    with thread_count(threads):
        data = read_examples(example_file)
    report = report_stream(model_file)
    if verbosity >= 1:
        print(reading_line(data), file=report)
    if wanted(cv_folds, c_path):
        picture = path_picture(plot_file, c_path, model_file)
        params.C = select_c_cold(
            data, params, train, cv_folds, c_path, seed, verbosity, report, picture, "sampled_learn"
        )
        if model_file is None:
            return
        plot_file = None if picture is not None else plot_file
    monitor = SampledMonitor(
        verbosity, trace_path, "sampled_learn", keep_rows=plot_file is not None
    )
    info, cpu = train_and_save(train, data, params, model_file, monitor)
    if verbosity >= 1:
        _print_statistics(info, params, cpu, report)
    draw_trace(plot_file, monitor, f"sampled_learn {example_file}: training trace")
    finish("sampled_learn", info.result, model_file, verbosity, notes=info.notes)


def _coef_const_unused(kernel) -> bool:
    """-r was typed on the command line with a kernel that ignores it (linear, RBF):
    SVMlight's habit for what is --r (the sample size) here."""
    from click.core import ParameterSource

    from ..kernels import LINEAR, RBF

    given = click.get_current_context().get_parameter_source("coef_const")
    return given is ParameterSource.COMMANDLINE and kernel.kind in (LINEAR, RBF)


def _print_statistics(info, params, cpu, out):
    r = info.result
    p = lambda s: print(s, file=out)  # noqa: E731
    name = {"const": "constant-time (Algorithm 2)", "linear": "linear-time (Algorithm 3)"}
    p(f"Algorithm: {name[info.algorithm]}, sample size r={info.sample_size}")
    style = f"sampled-{info.algorithm}"
    p(f"Stopped because: {stop_reason(r.status, style, p=params.patience)}")
    p(f"Final epsilon on KKT-Conditions: {max(r.violation, 0.0):.5f}")
    estimated = " (xi estimated on the last sample)" if info.primal_is_estimate else ""
    p(f"Dual objective value (working set): dval={r.dual:.5f}")
    p(f"Primal objective value: pval={r.primal:.5f}{estimated}")
    p(f"Total number of constraints in final working set: {r.working_set} (of {r.cuts_added})")
    p(f"Number of iterations: {r.iterations}")
    p(f"Number of calls to 'find_most_violated_constraint': {r.oracle_calls}")
    p(
        f"Number of kernel evaluations: {info.kernel_evaluations} "
        f"({info.kernel_values_computed} values computed: examples with identical features "
        "share theirs)"
    )
    p(f"Number of samples drawn: {info.draws}")
    p(f"Number of SV: {info.n_sv} (basis examples in the model; {info.n_cuts} cuts with alpha > 0)")
    p(f"Norm of weight vector: |w|={info.norm_w:.5f}")
    p(f"Value of slack variable (on working set): xi={r.xi_working_set:.5f}")
    p(
        f"Value of slack variable ({'sampled' if info.primal_is_estimate else 'global'}): "
        f"xi={r.xi:.5f}"
    )
    p(runtime_line(cpu, r))
    p(svmlight_scale_line(params.C, info.n_examples, r.primal) + estimated)


def main(argv=None):
    run(command, argv, "sampled_learn")


if __name__ == "__main__":
    main()
