"""What a learner prints once it has trained: why it stopped (one table of stop reasons,
worded as the tool each learner follows words them) and its statistics, SVMstruct's for
cp_learn (with the lines the problem's entry adds), svmocas's for ocas_learn, and
sampled_learn's and asset_learn's own. Each function prints to ``out`` (the command's
report stream, :func:`report_stream`)."""

from __future__ import annotations

import sys

from ..engine.solver_table import ASSET_LEARN, CP_LEARN, OCAS_LEARN, SAMPLED_LEARN

# The one table of stop reasons: a run's status (the engine's result) and, where the
# tools a command follows word it differently, the command's own variant. {p}, {tolerance}
# and {epochs} are filled in by stop_reason; None: worded by the command from its
# tolerances (ocas_learn's libocas conditions).
STOP_REASONS = {
    "converged": {
        "struct": "the most violated constraint is violated by at most epsilon",
        "struct-gap": "the duality gap is at most C*epsilon",
        "sampled-linear": "the exact most violated constraint is violated by at most epsilon",
        "sampled-const": "{p} sampled constraints in a row were violated by at most epsilon",
        "ocas": None,
        "asset": "converged: the objective fell by less than {tolerance} (--tolerance) over "
        "the last half of the run",
        "gd": "the objective dropped by less than -e (relative)",
    },
    "max_iterations": {
        "struct": "maximum number of iterations reached (-#); not converged — raise -# or -e",
        "ocas": "Has not converged! (iteration limit)",
        "gd": "iteration limit",
    },
    "time_limit": {
        "struct": "time limit reached (--max-time); not converged",
        "ocas": "time limit reached (-t)",
    },
    "buffer_full": {"ocas": "Has not converged! (cut buffer -s full of active cuts)"},
    "epochs": {"asset": "the epoch cap (--epochs {epochs}) was reached"},
    "interrupted": {"struct": "interrupted (Ctrl-C)"},
    "precision": {
        "struct": "the duality gap is within the rounding error of the objective: C times "
        "the margins is too large for the tolerance to be reached (the model is the best "
        "point found)",
        "ocas": "Has not converged! (Q_P-Q_D is within the rounding error of Q_P: C times the "
        "margins is too large for TolRel or TolAbs to be reached; the model is the best point "
        "found)",
    },
}


def stop_reason(status: str, style: str = "struct", **fields) -> str | None:
    """Why a run stopped, in the words of the command's style (the "struct" wording when
    the style has none of its own)."""
    variants = STOP_REASONS[status]
    text = variants.get(style, variants.get(style.split("-")[0], variants.get("struct")))
    return text.format(**fields) if text else text


def report_stream(model_file):
    """Where a learner's figures go: stdout, unless the model goes there."""
    return sys.stderr if model_file == "-" else sys.stdout


def reading_line(data, examples=None) -> str:
    """SVMstruct's line on what was read; ``examples`` says what the examples are when
    they are not the file's lines (e.g. sentences)."""
    examples = examples or f"{data.n_examples} examples"
    return f"Reading training examples...done ({examples}, {data.n_features} features)"


def runtime_line(cpu: float, result) -> str:
    """SVMstruct's runtime line, with the shares of the QP, the oracle and the rest."""
    other = max(result.seconds_total - result.seconds_qp - result.seconds_oracle, 0.0)
    total = max(result.seconds_total, 1e-12)
    return (
        f"Runtime in cpu-seconds: {cpu:.2f} ({100 * result.seconds_qp / total:.2f}% for "
        f"QP, {100 * result.seconds_oracle / total:.2f}% for the oracle, "
        f"{100 * other / total:.2f}% other; shares of wall time)"
    )


def peak_rss_line() -> str:
    """The process's peak resident memory so far (getrusage's ru_maxrss), for -v 2."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kb = peak / 1024 if sys.platform == "darwin" else peak  # bytes there, KB on Linux
    return f"Peak RSS: {kb / 1024:.1f} MB (the whole process so far)"


def _printer(out):
    return lambda s: print(s, file=out)


def class_weights_line(info) -> str | None:
    """The class weights of the run (--class-weight, -j) as its model file records them
    (balanced: each class's, computed on the data trained); None without them."""
    weights = getattr(info, "class_weights", "")
    return f"Class weights: {weights}" if weights else None


def struct_statistics(info, params, cpu, out):
    """SVMstruct's statistics of a cp_learn run (the 1-slack engine's result), with the
    lines the problem's entry adds: its work counters and its objective restated in its
    own convention."""
    from ..problems import entry_of

    r = info.result
    p = _printer(out)
    entry = entry_of(params.problem)
    p(
        f"Problem: {entry.reports.title()}, algorithm -w {info.algorithm}, "
        f"{'margin' if params.rescaling == 2 else 'slack'} rescaling"
    )
    method = CP_LEARN[info.algorithm]
    reason = stop_reason(r.status, "struct-gap" if method.stops_on_gap else "struct")
    p(f"Stopped because: {reason}")
    if class_weights_line(info):
        p(class_weights_line(info))
    p(f"Final epsilon on KKT-Conditions: {max(r.violation, 0.0):.5f}")
    p(f"Upper bound on duality gap: {r.gap:.5f}")
    p(f"Dual objective value: dval={r.dual:.5f}")
    p(f"Primal objective value: pval={r.primal:.5f}")
    if method.statistics == "passes":  # coordinate descent: passes over the examples, no cuts
        p(f"Number of passes over the examples: {r.iterations}")
        p(f"Number of coordinate updates: {r.oracle_calls}")
        p(f"Examples active (not shrunk) at the end: {r.working_set}")
    else:
        p(f"Total number of constraints in final working set: {r.working_set} (of {r.cuts_added})")
        p(f"Number of iterations: {r.iterations}")
        p(f"Number of calls to 'find_most_violated_constraint': {r.oracle_calls}")
    p(f"Number of SV: {info.n_sv}")
    p(f"Norm of weight vector: |w|={info.norm_w:.5f}")
    p(f"Value of slack variable (on working set): xi={r.xi_working_set:.5f}")
    p(f"Value of slack variable (global): xi={r.xi:.5f}")
    if info.kernel_evaluations:
        p(f"Number of kernel evaluations: {info.kernel_evaluations}")
    for line in entry.reports.work_lines(info):
        p(line)
    p(runtime_line(cpu, r))
    for line in entry.reports.scale_lines(info, params):
        p(line)


def ocas_settings(data, params, out, method=None):
    """svmocas's lines before training: the input's statistics and the settings
    (``method`` the -m of the run, None: OCAS's, a cluster's default)."""
    density = 100.0 * data.nnz / max(1, data.n_examples * data.n_features)
    print(
        f"Input data statistics:\n   # of examples  : {data.n_examples}\n"
        f"   dimensionality : {data.n_features}\n   density        : {density:.2f}%",
        file=out,
    )
    print(
        f"Setting:\n   C              : {params.C:g}\n   bias           : {params.bias:g}\n"
        + (f"   CostFactor     : {params.cost_factor:g}\n" if params.cost_factor != 1 else "")
        + (f"   Loss           : {params.loss}\n" if params.loss != "hinge" else "")
        + f"   TolAbs         : {params.tol_abs:g}\n   TolRel         : {params.tol_rel:g}\n"
        f"   QPBound        : {params.qp_bound:g}\n   MaxTime        : {params.time_limit:g} "
        f"[s]\n   BufSize        : {params.buffer_size}\n   Method         : "
        f"{OCAS_LEARN[1 if method is None else method].name}",
        file=out,
    )


def ocas_statistics(info, params, model_file, out):
    """svmocas's statistics of an ocas_learn run."""
    r = info.result
    reason = stop_reason(r.status, "ocas") or _converged_reason(r, params)
    s = info.seconds
    passes = OCAS_LEARN[info.method].statistics == "passes"
    print(f"Problem: {info.problem}", file=out)
    if class_weights_line(info):
        print(class_weights_line(info), file=out)
    print(f"Stopping condition: {reason}", file=out)
    if passes:
        print(
            f"Number of passes: {r.iterations}\nNumber of coordinate updates: "
            f"{r.updates} (examples active at the end: {r.active})",
            file=out,
        )
    else:
        print(
            f"Number of iterations: {r.iterations}\nNumber of cutting planes: "
            f"{r.working_set} (of {r.cuts_added})",
            file=out,
        )
    print(
        f"Q_P: {r.primal:.6f}   Q_D: {r.dual:.6f}   Q_P-Q_D: {r.gap:.6f}   "
        f"1-Q_D/Q_P: {r.gap / r.primal if r.primal else 0.0:.6g}",
        file=out,
    )
    if params.loss != "hinge":
        print(
            f"Primal objective (squared hinge): 1/2|w|^2 + sum C_i*max(0,1-y_i*w.x_i)^2 = "
            f"{r.primal:.6f}",
            file=out,
        )
    if passes:
        timing = f"   passes         : {s['passes']:f} s\n   gap checks     : {s['gap']:f} s"
    else:
        timing = (
            f"   output         : {s['output']:f} s\n   line search    : "
            f"{s['line_search']:f} s\n   add cut        : {s['cut']:f} s\n"
            f"   QP             : {s['qp']:f} s"
        )
    print(f"Timing statistics:\n{timing}\n   total          : {s['total']:f} s", file=out)
    print(f"Training error: {100 * info.training_error:.4f}%", file=out)
    print(f"Result saved to model file: {model_file}", file=out)


def _converged_reason(r, params):
    if r.primal <= params.qp_bound:
        return "Q_P <= QPBound"
    if r.gap <= params.tol_abs:
        return "Q_P-Q_D <= TolAbs"
    return "1-Q_D/Q_P <= TolRel"


def sampled_statistics(info, params, cpu, out):
    """sampled_learn's statistics (SVMstruct's, with the draws and kernel evaluations)."""
    from ..problems.binary.report import svmlight_scale_line

    r = info.result
    p = _printer(out)
    p(f"Algorithm: {SAMPLED_LEARN[info.algorithm].name}, sample size r={info.sample_size}")
    style = f"sampled-{info.algorithm}"
    p(f"Stopped because: {stop_reason(r.status, style, p=params.patience)}")
    if class_weights_line(info):
        p(class_weights_line(info))
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


def asset_learn_statistics(info, params, cpu, out):
    """asset_learn's statistics, those of its --method (the solver table's row)."""
    lines = {"asset": asset_statistics, "gd": gd_statistics}
    lines[ASSET_LEARN[params.method].statistics](info, params, cpu, out)


def gd_statistics(info, params, cpu, out):
    """asset_learn --method gd's statistics."""
    r = info.result
    p = _printer(out)
    p(
        f"Algorithm: gradient descent, Huber loss (h={params.huber_h:g}), intercept, step "
        f"from 100 halved when the objective would increase"
    )
    p(f"Stopped because: {stop_reason(r.status, 'gd')}")
    if class_weights_line(info):
        p(class_weights_line(info))
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


def asset_statistics(info, params, cpu, out):
    """asset_learn's statistics: the approximation, the algorithm, the stopping rule, the
    objective in ASSET's and SVMlight's scales, the errors."""
    r = info.result
    p = _printer(out)
    approx = {
        "nystrom": f"Nystrom, s={info.basis_size} basis examples",
        "rff": f"random Fourier features, D={info.basis_size}",
        "none": "none (input features)",
    }[params.approx]
    p(
        f"Approximation: {approx}; dimension D={info.dim}"
        + (f" ({info.n_dropped} eigenvalues dropped)" if info.n_dropped else "")
        + ("" if info.cached else " (rows recomputed each epoch: over --memory)")
    )
    regression = params.task == "regression"
    loss = f"epsilon-insensitive (w={params.tube:g})" if regression else "hinge"
    if params.star:
        p(
            f"Algorithm: ASSET* (step 1/(lambda*j), no intercept, last iterate), {loss} loss, "
            f"mini-batch {info.batch}"
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
            f"average of {window}), {loss} loss, mini-batch {info.batch}"
        )
    n_iter = -(-info.n_examples // info.batch)
    p(
        "Stopped because: "
        + stop_reason(
            r.status, "asset", tolerance=f"{100 * params.tolerance:g}%", epochs=params.epochs
        )
    )
    if class_weights_line(info):
        p(class_weights_line(info))
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
    if regression:
        p(f"Training mean squared error: {info.training_error:.6g}")
    else:
        p(f"Training error: {100 * info.training_error:.2f}%")
    if params.validation is not None:
        what = "mean squared error" if regression else "error"
        value = info.result.validation_error
        shown = f"{value:.6g}" if regression else f"{100 * value:.2f}%"
        p(f"Validation {what}: {shown} (best of {r.n_checks} checks)")
    if info.kernel_evaluations:
        p(f"Number of kernel evaluations: {info.kernel_evaluations}")
    p(
        f"Runtime in cpu-seconds: {cpu:.2f} (wall: approximation {info.seconds_map:.2f}s, "
        f"rows {r.seconds_rows:.2f}s, steps {r.seconds_steps:.2f}s)"
    )
