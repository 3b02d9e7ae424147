"""asset_learn: kernel SVMs by stochastic subgradient on Nyström or random Fourier
features (Lee & Wright's ASSET and ASSET*), classification and regression."""

from __future__ import annotations

import functools
import math

import click

from ..errors import OptionError
from .common import (
    CONTEXT_SETTINGS,
    Checked,
    FilePath,
    OutputPath,
    note,
    positive,
    progress,
    run,
    validate_options,
    verbosity_option,
    version_option,
)
from .scaffold import (
    c_option,
    draw_trace,
    finish,
    kernel_options,
    margin_bounds_option,
    plot_option,
    reading_line,
    report_stream,
    seed_option,
    stop_reason,
    threads_option,
    trace_option,
    train_and_save,
)
from .selection import (
    check_model_file,
    path_picture,
    select_c_cold,
    selection_options,
    wanted,
)

# numpy, the reader and the solver are imported inside the command (cpsvm/cli/__init__.py).
APPROXIMATIONS = ("nystrom", "rff", "none")  # cpsvm.solvers.asset.APPROXIMATIONS
# cpsvm.solvers.asset's EPOCHS and TOLERANCE, without importing it.
EPOCHS, TOLERANCE = 64, 0.01

ASSET_VERBOSITY = (
    "Verbosity 0..3: 0 silent but errors; 1 statistics (and a progress bar "
    "with ETA on a terminal); 2 also one line per check (ten per epoch) on "
    "stderr; 3 as 2."
)


def _at_least(n: int, what: str) -> Checked:
    return Checked(int, lambda v: v >= n, f"{what} >= {n}")


class _Window(click.ParamType):
    """--average-last: a number of iterations >= 0, or 'half'."""

    name = "N|half"

    def convert(self, value, param, ctx):
        if value == "half":
            return value
        try:
            number = int(value)
        except (TypeError, ValueError):
            number = -1
        if number < 0:
            self.fail(f"expected --average-last >= 0 or half, got {value!r}", param, ctx)
        return number


_WINDOW = _Window()


def _checked_combinations(command):
    """Refuse what the options cannot mean together before anything is imported (the
    kernel options build their Kernel, which loads numpy, before the command runs)."""

    @functools.wraps(command)
    def checked(*args, **kwargs):
        if kwargs["c_path"] is not None:
            if kwargs["lam"] is not None:
                raise OptionError("--c-path sets C: it cannot be used with -l (lambda)")
            kwargs["C"] = kwargs["C"] or 1.0  # (each fold's fits set their own)
        elif (kwargs["C"] is None) == (kwargs["lam"] is None):
            raise OptionError("expected exactly one of -c (C) and -l (lambda)")
        if kwargs["cv_folds"] is not None and kwargs["lam"] is not None:
            raise OptionError("--cv cross-validates at -c: give -c, not -l (lambda)")
        kernel_type = kwargs["kernel_type"]
        if kwargs["approx"] == "rff" and kernel_type != 2:
            raise OptionError(f"--approx rff needs the RBF kernel (-t 2), got -t {kernel_type}")
        if kwargs["approx"] == "none" and kernel_type != 0:
            raise OptionError(
                "--approx none trains on the input features: it needs the "
                f"linear kernel (-t 0), got -t {kernel_type}"
            )
        return command(*args, **kwargs)

    return checked


class AssetMonitor:
    """Engine callback: the tqdm bar (iterations, with ETA), -v 2 lines, --trace rows
    (and with ``keep_rows``, --plot's, in ``rows``)."""

    COLUMNS = ("epoch", "iteration", "objective", "validation_error", "seconds", "sample_objective")

    def __init__(self, verbosity, trace_path, total_iterations, keep_rows=False):
        self.verbosity = verbosity
        self.rows = [] if keep_rows else None
        self.bar = progress(
            total_iterations, verbosity if verbosity < 2 else 0, "asset_learn", "it"
        )
        self.trace = open(trace_path, "w", encoding="utf-8") if trace_path else None
        if self.trace:
            self.trace.write("\t".join(self.COLUMNS) + "\n")
        self.done = 0

    def __call__(self, check):
        self.bar.update(check.iteration - self.done)
        self.done = check.iteration
        shown = "" if math.isnan(check.validation_error) else f" val={check.validation_error:.4g}"
        self.bar.set_postfix_str(f"obj~{check.objective:.5g}{shown}", refresh=False)
        if self.verbosity >= 2:
            note(
                f"Epoch {check.epoch:.1f}: iteration {check.iteration}, objective estimate "
                f"{check.objective:.6g}"
                + (
                    ""
                    if math.isnan(check.validation_error)
                    else f", validation error {check.validation_error:.6g}"
                )
                + (
                    ""
                    if math.isnan(check.sample_objective)
                    else f", objective on the rule's sample {check.sample_objective:.6g}"
                )
                + f", {check.seconds:.3f}s"
            )
        if self.rows is not None:
            self.rows.append({c: getattr(check, c) for c in self.COLUMNS})
        if self.trace:
            self.trace.write(
                f"{check.epoch!r}\t{check.iteration}\t{check.objective!r}\t"
                f"{check.validation_error!r}\t{check.seconds!r}\t"
                f"{check.sample_objective!r}\n"
            )
            self.trace.flush()  # readable while training runs

    def close(self):
        self.bar.close()
        if self.trace:
            self.trace.close()


@click.command("asset_learn", context_settings=CONTEXT_SETTINGS)
@c_option(
    "Trade-off C in SVMlight's convention, 1/2|w|^2 + C*sum(loss): "
    "lambda = 1/(C*m). Exactly one of -c and -l.",
    default=None,
)
@click.option(
    "-l",
    "lam",
    type=positive("lambda"),
    default=None,
    help="lambda of lambda/2|gamma|^2 + (1/m)*sum(loss) (ASSET's convention). "
    "Exactly one of -c and -l.",
)
@click.option(
    "-z",
    "task",
    type=click.Choice(["c", "r"]),
    default="c",
    show_default=True,
    help="c classification (hinge loss, targets +1/-1), r regression "
    "(epsilon-insensitive loss, real targets).",
)
@click.option(
    "-w",
    "tube",
    type=Checked(float, lambda v: v >= 0, "a tube width -w >= 0"),
    default=0.1,
    show_default=True,
    help="Regression: width epsilon of the insensitive tube (SVMlight's -w).",
)
@click.option(
    "--approx",
    type=click.Choice(APPROXIMATIONS),
    default="nystrom",
    show_default=True,
    help="Kernel approximation: nystrom (ASSET_M, any kernel), rff (random Fourier "
    "features, ASSET_F, RBF only), none (the input features, linear kernel "
    "only: with --star, Pegasos).",
)
@click.option(
    "--k",
    "basis_size",
    type=_at_least(1, "--k"),
    default=512,
    show_default=True,
    help="nystrom: number s of sampled basis examples (at most the number of "
    "training examples); rff: number D of random features.",
)
@click.option(
    "--eig-threshold",
    type=Checked(float, lambda v: v >= 0, "--eig-threshold >= 0"),
    default=1e-16,
    show_default=True,
    help="nystrom: keep the eigenvalues of the basis kernel matrix above this "
    "(the paper's epsilon_d); D is how many.",
)
@_checked_combinations
@kernel_options()
@click.option(
    "--star",
    is_flag=True,
    help="ASSET*: step 1/(lambda*j), no intercept, the last iterate (no averaging).",
)
@click.option(
    "-k",
    "batch",
    type=_at_least(1, "-k"),
    default=1,
    show_default=True,
    help="Mini-batch size: examples per subgradient step.",
)
@click.option(
    "--epochs",
    type=_at_least(1, "--epochs"),
    default=EPOCHS,
    show_default=True,
    help="Cap on the passes over the training set: the run stops earlier once "
    "converged (--tolerance; DEFAULTS in the man page).",
)
@click.option(
    "--average-last",
    "average_last",
    type=_WINDOW,
    default=None,
    help="ASSET: the model is the step-weighted average of the iterates of the "
    "last N iterations before each check; 0 averages from the first "
    "iteration on; half (the default) the last half of the iterations so "
    "far (50-60%).",
)
@click.option(
    "--dg-samples",
    type=_at_least(1, "--dg-samples"),
    default=1000,
    show_default=True,
    help="ASSET: examples M sampled to estimate D_G for the step size.",
)
@click.option(
    "--memory",
    "memory_mb",
    type=Checked(float, lambda v: v >= 0, "--memory >= 0"),
    default=1024.0,
    show_default=True,
    help="MB for the approximation's rows: they are kept after the first epoch "
    "when m*D*8 bytes fit, else computed again each epoch.",
)
@click.option(
    "--tolerance",
    type=Checked(float, lambda v: 0 <= v < 1, "0 <= --tolerance < 1"),
    default=TOLERANCE,
    show_default=True,
    help="The stopping rule: converged once the objective, measured on at most "
    "5000 training examples spread over the file, fell by less than this "
    "fraction of itself over the last half of the run; 0 runs all --epochs.",
)
@click.option(
    "--validate",
    "validation_file",
    type=FilePath(),
    default=None,
    help="Check the model's error (regression: mean squared error) on this file "
    "ten times per epoch; keep the best.",
)
@seed_option(
    "Seed of every draw (basis, random features, sampling order): the same "
    "seed gives the same model file at any --threads."
)
@threads_option(work="the approximation's rows and the validation checks")
@trace_option(
    "check: epoch, iteration, objective estimate, validation error, seconds, the stopping "
    "rule's objective"
)
@plot_option()
@click.option(
    "--method",
    type=click.Choice(["sgd", "gd"]),
    default="sgd",
    show_default=True,
    help="sgd: ASSET/ASSET* (stochastic subgradient); gd: gradient descent on "
    "the Huber loss with an intercept (needs --approx none --loss huber): "
    "step 100, halved whenever the objective would increase, until it "
    "drops by less than -e relative.",
)
@click.option(
    "--loss",
    type=click.Choice(["hinge", "huber"]),
    default="hinge",
    show_default=True,
    help="Classification loss: hinge, or (with --method gd) the Huber loss of width --h.",
)
@click.option(
    "--h",
    "huber_h",
    type=positive("--h"),
    default=0.01,
    show_default=True,
    help="--loss huber: width h (quadratic for margins within h of 1).",
)
@click.option(
    "-e",
    "gd_epsilon",
    type=positive("-e"),
    default=1e-4,
    show_default=True,
    help="--method gd: stop when a step lowers the objective by less than this fraction of it.",
)
@margin_bounds_option(
    "--approx none only; default 0, except with --method gd on data with at least 200000 non-zeros."
)
@verbosity_option(default=1, help=ASSET_VERBOSITY)
@version_option("Lee & Wright's ASSET, with SVMlight's -c, -z, -w and kernel flags")
@selection_options("folds stratified by class; -z r: not stratified")
@click.argument("example_file", type=FilePath())
@click.argument("model_file", type=OutputPath(), required=False)
def command(
    C,
    lam,
    task,
    tube,
    approx,
    basis_size,
    eig_threshold,
    kernel,
    star,
    batch,
    epochs,
    average_last,
    dg_samples,
    memory_mb,
    tolerance,
    validation_file,
    seed,
    threads,
    trace_path,
    plot_file,
    method,
    loss,
    huber_h,
    gd_epsilon,
    margin_bounds,
    verbosity,
    cv_folds,
    c_path,
    example_file,
    model_file,
):
    """Learn a kernel SVM (or SVR with -z r) from EXAMPLE_FILE by ASSET and write
    MODEL_FILE: Nyström models as SVMlight kernel models (cp_classify and svm_classify
    read them), random-feature models as 'cpsvm rff model V1' (cp_classify reads them),
    --approx none as SVMlight linear models.
    """
    from ..io.svmlight import read_examples
    from ..solvers.asset import AssetParams, train
    from ..threads import thread_count

    params = AssetParams(
        C=C,
        lam=lam,
        approx=approx,
        basis_size=basis_size,
        kernel=kernel,
        task="regression" if task == "r" else "classification",
        tube=tube,
        star=star,
        batch=batch,
        epochs=epochs,
        average_last=average_last,
        dg_samples=dg_samples,
        eig_threshold=eig_threshold,
        memory_mb=memory_mb,
        tolerance=tolerance,
        seed=seed,
        n_threads=threads,
        method=method,
        loss=loss,
        huber_h=huber_h,
        gd_epsilon=gd_epsilon,
        margin_bounds=margin_bounds,
    )
    if method == "gd" and validation_file is not None:
        raise OptionError("--method gd takes no --validate")
    check_model_file(model_file, cv_folds, c_path, trace_path)
    validate_options(params)
    with thread_count(threads):
        data = read_examples(example_file)
        if validation_file is not None:
            validation = read_examples(validation_file, training=False)
    if validation_file is not None:  # in the training data's columns
        if data.feature_ids is not None:
            validation = validation.onto_columns_of(data)
        params.validation = validation
    report = report_stream(model_file)
    if verbosity >= 1:
        print(reading_line(data), file=report)
    if wanted(cv_folds, c_path):
        picture = path_picture(plot_file, c_path, model_file)
        params.C = select_c_cold(
            data, params, train, cv_folds, c_path, seed, verbosity, report, picture, "asset_learn"
        )
        if model_file is None:
            return
        plot_file = None if picture is not None else plot_file
    keep_rows = plot_file is not None
    if method == "gd":
        monitor = GDMonitor(verbosity, trace_path, keep_rows)
    else:
        total = epochs * -(-data.n_examples // batch)
        monitor = AssetMonitor(verbosity, trace_path, total, keep_rows)
    info, cpu = train_and_save(train, data, params, model_file, monitor)
    if verbosity >= 1:
        statistics = _print_gd_statistics if method == "gd" else _print_statistics
        statistics(info, params, cpu, report)
    draw_trace(plot_file, monitor, f"asset_learn {example_file}: training trace")
    notes = () if method == "gd" else info.notes
    finish("asset_learn", info.result, model_file, verbosity, notes=notes, warn=False)


class GDMonitor:
    """--method gd's callback: -v 2 lines and --trace rows (and with ``keep_rows``,
    --plot's, in ``rows``), one per step taken."""

    COLUMNS = ("iteration", "objective", "step")

    def __init__(self, verbosity, trace_path, keep_rows=False):
        self.verbosity = verbosity
        self.rows = [] if keep_rows else None
        self.trace = open(trace_path, "w", encoding="utf-8") if trace_path else None
        if self.trace:
            self.trace.write("\t".join(self.COLUMNS) + "\n")

    def __call__(self, iteration, objective, step):
        if self.verbosity >= 2:
            note(f"Iteration {iteration}: objective {objective:.10g}, step {step:g}")
        if self.rows is not None:
            self.rows.append({"iteration": iteration, "objective": objective, "step": step})
        if self.trace:
            self.trace.write(f"{iteration}\t{objective!r}\t{step!r}\n")
            self.trace.flush()

    def close(self):
        if self.trace:
            self.trace.close()


def _print_gd_statistics(info, params, cpu, out):
    r = info.result
    p = lambda s: print(s, file=out)  # noqa: E731
    p(
        f"Algorithm: gradient descent, Huber loss (h={params.huber_h:g}), intercept, step "
        f"from 100 halved when the objective would increase"
    )
    p(f"Stopped because: {stop_reason(r.status, 'gd')}")
    p(f"Number of iterations: {r.iterations} ({r.evaluations} evaluations); last step {r.step:g}")
    if r.resorts:
        p(
            f"Margin bounds: {100 * r.margins_computed:.1f}% of the margins computed per "
            f"evaluation, {r.resorts} sorts"
        )
    p(f"Norm of weight vector: |w|={info.norm_gamma:.5f}")
    p(f"Objective: lambda = {info.lam:.6g}; lambda/2|w|^2 + mean(loss) = {info.objective:.10g}")
    p(f"Training error: {100 * info.training_error:.2f}%")
    p(f"Runtime in cpu-seconds: {cpu:.2f} (wall: training {r.seconds:.2f}s)")


def _print_statistics(info, params, cpu, out):
    r = info.result
    p = lambda s: print(s, file=out)  # noqa: E731
    approx = {
        "nystrom": f"Nystrom, s={params.basis_size} basis examples",
        "rff": f"random Fourier features, D={params.basis_size}",
        "none": "none (input features)",
    }[params.approx]
    p(
        f"Approximation: {approx}; dimension D={info.dim}"
        + (f" ({info.n_dropped} eigenvalues dropped)" if info.n_dropped else "")
        + ("" if info.cached else " (rows recomputed each epoch: over --memory)")
    )
    loss = f"epsilon-insensitive (w={params.tube:g})" if params.task == "regression" else "hinge"
    if params.star:
        p(
            f"Algorithm: ASSET* (step 1/(lambda*j), no intercept, last iterate), {loss} loss, "
            f"mini-batch {params.batch}"
        )
    else:
        window = (
            "all iterates"
            if info.average_last == 0
            else "the last half of the iterates"
            if info.average_last == "half"
            else f"the last {info.average_last} iterates"
        )
        p(
            f"Algorithm: ASSET (step D_X/(D_G*sqrt(j)) = {info.step_scale:.6g}/sqrt(j), "
            f"average of {window}), {loss} loss, mini-batch {params.batch}"
        )
    n_iter = -(-info.n_examples // params.batch)
    p(
        "Stopped because: "
        + stop_reason(
            r.status, "asset", tolerance=f"{100 * params.tolerance:g}%", epochs=params.epochs
        )
    )
    if r.rule_to is not None:
        (j0, before), (j1, now) = r.rule_from, r.rule_to
        fall = (
            f"fell by {100 * (before - now) / abs(now):.2f}%" if before >= now else "did not fall"
        )
        p(
            f"Stopping rule (--tolerance {params.tolerance:g}): objective on {info.n_sample} of "
            f"the {info.n_examples} training examples {before:.6g} at epoch "
            f"{j0 / n_iter:.1f}, {now:.6g} at epoch {j1 / n_iter:.1f}: {fall}"
        )
    p(
        f"Number of iterations: {r.iterations} ({r.iterations / n_iter:.1f} epochs); model "
        f"of iteration {r.best_iteration} ({r.best_iteration / n_iter:.1f} epochs)"
    )
    p(f"Bounds: |gamma| <= {info.radius:.6g}, |b| <= {info.b_radius:.6g}")
    p(f"Norm of weight vector: |gamma|={info.norm_gamma:.5f}")
    p(
        f"Objective (ASSET's): lambda = {info.lam:.6g}; lambda/2|gamma|^2 + mean(loss) = "
        f"{info.objective:.8g}"
    )
    p(
        f"SVMlight scale: C = 1/(lambda*m) = {info.c_light:.6g}; objective "
        f"1/2|w|^2 + C*sum(loss) = {info.svmlight_objective:.6f}"
    )
    if params.task == "regression":
        p(f"Training mean squared error: {info.training_error:.6g}")
    else:
        p(f"Training error: {100 * info.training_error:.2f}%")
    if params.validation is not None:
        what = "mean squared error" if params.task == "regression" else "error"
        value = info.result.validation_error
        shown = f"{value:.6g}" if params.task == "regression" else f"{100 * value:.2f}%"
        p(f"Validation {what}: {shown} (best of {r.n_checks} checks)")
    if info.kernel_evaluations:
        p(f"Number of kernel evaluations: {info.kernel_evaluations}")
    p(
        f"Runtime in cpu-seconds: {cpu:.2f} (wall: approximation {info.seconds_map:.2f}s, "
        f"rows {r.seconds_rows:.2f}s, steps {r.seconds_steps:.2f}s)"
    )


def main(argv=None):
    run(command, argv, "asset_learn")


if __name__ == "__main__":
    main()
