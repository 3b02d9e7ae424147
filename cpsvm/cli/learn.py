"""cp_learn: 1-slack cutting-plane training of structural SVMs (SVMstruct / SVMperf /
SVMmulticlass command lines)."""

from __future__ import annotations

import sys

import click

from .common import (CONTEXT_SETTINGS, EXIT_INTERRUPTED, IntChoice, kernel_options, note,
                     positive, run, runtime_line, svmlight_scale_line, threads_option,
                     train_and_save, validate_options, verbosity_option, version_option)

# The reader and the solver are imported inside the command (cpsvm/cli/__init__.py).

STOP_REASONS = {
    "converged": "the most violated constraint is violated by at most epsilon",
    "max_iterations": "maximum number of iterations reached (-#); not converged — raise -# "
                      "or -e",
    "time_limit": "time limit reached (--max-time); not converged",
    "interrupted": "interrupted (Ctrl-C)",
}


@click.command("cp_learn", context_settings=CONTEXT_SETTINGS)
@click.option("-c", "C", type=positive("C"), required=True,
              help="Trade-off C (required). Binary: SVMperf's convention, "
                   "C_light = C*100/n. Multiclass: SVMmulticlass's, C_cs = C/(100*n).")
@click.option("-e", "epsilon", type=positive("epsilon"), default=0.1, show_default=True,
              help="Tolerance: stop when the most violated constraint is violated by at "
                   "most this much.")
@click.option("-w", "algorithm",
              type=IntChoice(0, 1, 2, 3, 4, 9, expected="-w 0, 1, 2, 3, 4 or 9"), default=9,
              show_default=True,
              help="Algorithm: 0 n-slack, 1 n-slack (as 0), 2 1-slack primal QP, 3 1-slack "
                   "dual, 4 1-slack dual with constraint cache, 9 (SVMperf's custom slot) "
                   "the fastest for the problem: 1-slack dual with OCAS's line search for "
                   "binary and multiclass linear models (and --t 1) with margin rescaling, "
                   "else 3 (4 for --problem module:Class).")
@click.option("-o", "rescaling",
              type=IntChoice(1, 2, expected="-o 1 (slack) or 2 (margin rescaling)"), default=2,
              show_default=True,
              help="Loss rescaling: 1 slack rescaling, 2 margin rescaling.")
@click.option("-l", "loss_id",
              type=IntChoice(0, 2, expected="-l 0 (zero/one; -l 2, the same averaged)"),
              default=0, show_default=True,
              help="Loss: 0 zero/one per example (x100; averaged it is SVMperf's error "
                   "rate, -l 2, also accepted).")
@click.option("-k", "batch", type=click.IntRange(min=1), default=100, show_default=True,
              help="-w 0: new constraints before the QP is re-solved.")
@click.option("-f", "cache_size", type=click.IntRange(min=1), default=5, show_default=True,
              help="-w 4: constraints cached per example.")
@click.option("-#", "max_iterations", type=click.IntRange(min=1), default=100000,
              show_default=True, help="Maximum number of iterations.")
@click.option("--max-time", "time_limit", type=float, default=float("inf"),
              help="Stop after this many seconds of training (the model is still written).")
@click.option("--max-idle", type=click.IntRange(min=1), default=50, show_default=True,
              help="Drop a cut whose dual variable stayed 0 for this many QPs.")
@kernel_options()
@click.option("--b", "bias", type=float, default=None,
              help="Value of the bias feature (SVMperf); 0 = no bias. Linear kernel only: "
                   "default 1 with -t 0, none with a kernel (as SVMperf, which has no bias "
                   "in its kernel expansion and refuses --b other than 0 with -t 1..3).")
@click.option("--t", "basis_method",
              type=IntChoice(0, 1, expected="--t 0 (exact) or --t 1 (random basis, Nyström)"),
              default=0, show_default=True,
              help="Kernel approximation (SVMperf): 0 exact kernel expansion, 1 random "
                   "basis of --k examples (Nyström, SVMperf's CPNY), trained linearly.")
@click.option("--k", "basis_size", type=click.IntRange(min=1), default=500,
              show_default=True, help="Number of basis functions for --t 1.")
@click.option("--f", "basis_file", type=click.Path(dir_okay=False, allow_dash=True),
              default=None, help="File of candidate basis vectors for --t 1 (default: the "
                                 "training set).")
@click.option("--i", "preimage", type=int, default=0, show_default=True,
              help="SVMperf's CPSP preimage search: only 0 (none) is supported.")
@click.option("--problem", default="auto", show_default=True,
              help="binary, multiclass, auto (binary if the targets are +-1, multiclass if "
                   "1..k) or module:Class: your own subclass of "
                   "cpsvm.problems.PerExampleProblem, imported from the current directory "
                   "or PYTHONPATH (its model records module:Class for cp_classify).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed for the random basis (--t 1).")
@threads_option()
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False), default=None,
              help="Write one TSV row per iteration (primal, dual, gap, ...).")
@verbosity_option(default=1)
@click.option("-y", "qp_verbosity", type=click.IntRange(0, 3), default=0, show_default=True,
              help="SVMstruct's verbosity of the inner QP solver; accepted for compatibility, the QP prints nothing.")
@version_option("SVM-struct V3.10, SVM-perf V3.00 and SVM-multiclass V2.20")
@click.argument("example_file", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("model_file", type=click.Path(dir_okay=False, allow_dash=True))
def command(C, epsilon, algorithm, rescaling, loss_id, batch, cache_size, max_iterations,
            time_limit, max_idle, kernel, bias, basis_method, basis_size, basis_file,
            preimage, problem, seed, threads, trace_path, verbosity, qp_verbosity,
            example_file, model_file):
    """Learn a structural SVM from EXAMPLE_FILE and write MODEL_FILE.

    Binary targets (+1/-1) give an SVMperf-style linear or kernel model in SVMlight's
    format (svm_classify reads it); class labels 1..k a Crammer-Singer model in
    SVMmulticlass's format; --problem module:Class a 'cpsvm user-problem model V1'.
    Classify with cp_classify.
    """
    if preimage != 0:
        raise click.UsageError(f"--i {preimage} (CPSP preimage search) is not supported; "
                               "use --i 0 with --t 1 --k K")
    from ..io.svmlight import read_svmlight
    from ..solvers.one_slack import StructParams, train
    params = StructParams(
        C=C, epsilon=epsilon, algorithm=algorithm, rescaling=rescaling, loss_id=loss_id,
        max_iterations=max_iterations, max_idle=max_idle, cache_size=cache_size,
        batch=batch, bias=bias, kernel=kernel, n_threads=threads,
        basis_method=basis_method, basis_size=basis_size, problem=problem, seed=seed,
        time_limit=time_limit)
    validate_options(params)
    data = read_svmlight(example_file)
    if basis_file is not None:
        params.basis_data = read_svmlight(basis_file)
    info, cpu, report = train_and_save("cp_learn", train, data, params, model_file,
                                       verbosity, trace_path)
    if verbosity >= 1:
        _print_statistics(info, params, cpu, report)
    for line in info.notes:
        note(f"Note: {line}")
    if info.result.status == "interrupted":
        note(f"cp_learn: interrupted at iteration {info.result.iterations} with duality gap "
             f"{info.result.gap:.6g}; the model so far was written to {model_file}")
        sys.exit(EXIT_INTERRUPTED)
    if info.result.status != "converged" and verbosity >= 1:
        note(f"Warning: {STOP_REASONS[info.result.status]}")


def _print_statistics(info, params, cpu, out):
    r = info.result
    n = info.n_examples
    p = lambda s: print(s, file=out)  # noqa: E731
    name = f"user ({params.problem})" if info.problem == "user" else info.problem
    p(f"Problem: {name}, algorithm -w {info.algorithm}, "
      f"{'margin' if params.rescaling == 2 else 'slack'} rescaling")
    reason = STOP_REASONS[r.status]
    if info.algorithm == 9 and r.status == "converged":
        reason = "the duality gap is at most C*epsilon"
    p(f"Stopped because: {reason}")
    p(f"Final epsilon on KKT-Conditions: {max(r.violation, 0.0):.5f}")
    p(f"Upper bound on duality gap: {r.gap:.5f}")
    p(f"Dual objective value: dval={r.dual:.5f}")
    p(f"Primal objective value: pval={r.primal:.5f}")
    p(f"Total number of constraints in final working set: {r.working_set} "
      f"(of {r.cuts_added})")
    p(f"Number of iterations: {r.iterations}")
    p(f"Number of calls to 'find_most_violated_constraint': {r.oracle_calls}")
    p(f"Number of SV: {info.n_sv}")
    p(f"Norm of weight vector: |w|={info.norm_w:.5f}")
    p(f"Value of slack variable (on working set): xi={r.xi_working_set:.5f}")
    p(f"Value of slack variable (global): xi={r.xi:.5f}")
    if info.kernel_evaluations:
        p(f"Number of kernel evaluations: {info.kernel_evaluations}")
    p(runtime_line(cpu, r))
    if info.problem == "binary":
        p(svmlight_scale_line(params.C, n, r.primal))
    elif info.problem == "multiclass":
        from ..conventions import LOSS_SCALE, c_cs_from_multiclass
        p(f"Crammer-Singer scale: C_cs = C/(100*n) = {c_cs_from_multiclass(params.C, n):.6g};"
          f" objective (w/100) = {r.primal / LOSS_SCALE ** 2:.6f}")


def main(argv=None):
    run(command, argv, "cp_learn")


if __name__ == "__main__":
    main()
