"""The learners' scaffold: what cp_learn, ocas_learn, sampled_learn and asset_learn share.

Option factories (one definition of -c, --seed, --trace, --plot, -#, the time limit, the
kernel flags, --threads and --margin-bounds, each command passing its own wording where the
tools it follows differ), the one table of stop reasons, training with progress, trace
and Ctrl-C handling, and the one ending: the statistics, the notes, the warning of a run
that did not converge and exit 130 after an interrupt (the model reached so far is
written first). Like :mod:`.common`, it imports nothing heavy at module level.
"""

from __future__ import annotations

import functools
import math
import sys

import click

from ..errors import InputError, Interrupted, OptionError, Terminated
from .common import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    Checked,
    IntChoice,
    OutputPath,
    note,
    plot_file_option,
    progress,
)

LEARNER_VERBOSITY = (
    "Verbosity 0..3: 0 silent but errors; 1 statistics (and a progress "
    "bar on a terminal); 2 also one line per iteration on stderr; 3 also "
    "each iteration's time and its QP and oracle shares."
)


# -- option factories -----------------------------------------------------------------


def c_option(help: str, **settings):
    """-c, the trade-off C (finite, > 0); ``settings`` are click's (default, required,
    callback); the conventions differ by the tool each command follows, so ``help`` says
    which. How large a finite C the data allow, the solvers say (cpsvm.engine.magnitudes)."""
    finite = Checked(float, lambda v: 0 < v < math.inf, "a finite C > 0")
    return click.option("-c", "C", type=finite, help=help, **settings)


def seed_option(help: str):
    return click.option(
        "--seed",
        type=Checked(int, lambda v: v >= 0, "--seed >= 0"),
        default=0,
        show_default=True,
        help=help + " Any integer >= 0.",
    )


def trace_option(columns: str):
    """--trace FILE: one TSV row per iteration (or check) of the training that writes the
    model; ``columns`` names them."""
    return click.option(
        "--trace",
        "trace_path",
        type=OutputPath(),
        default=None,
        help=f"Write one TSV row per {columns} of the training that writes MODEL_FILE.",
    )


def plot_option():
    """--plot FILE on the learners: the training trace (kept in memory, --trace or not);
    with --c-path, the C path."""
    return plot_file_option(
        "the training trace (the objectives and the duality gap against iterations and "
        "against seconds, as --trace writes them) or, with --c-path, the C path (the "
        "cross-validated measure against C)"
    )


def max_iterations_option():
    return click.option(
        "-#",
        "max_iterations",
        type=click.IntRange(min=1),
        default=100000,
        show_default=True,
        help="Maximum number of iterations.",
    )


def max_idle_option(default: int):
    return click.option(
        "--max-idle",
        type=click.IntRange(min=1),
        default=default,
        show_default=True,
        help="Drop a cut whose dual variable stayed 0 for this many QPs.",
    )


def time_limit_option(flag: str = "--max-time", help: str | None = None):
    """The time limit in seconds of training (--max-time; svmocas's -t); none by default."""
    return click.option(
        flag,
        "time_limit",
        type=float,
        default=math.inf,
        help=help or "Stop after this many seconds of training (the model is still written).",
    )


def threads_option(*names, work="the separation oracle"):
    return click.option(
        *(names or ("--threads",)),
        "threads",
        type=Checked(int, lambda v: v >= 1, "--threads >= 1"),
        default=None,
        help=f"Threads for {work} and for parsing the input file (default: all cores). "
        "Results do not depend on it.",
    )


def margin_bounds_option(default_text: str):
    """``--margin-bounds 0|1`` (cp_learn, ocas_learn, asset_learn), handed to the command as
    ``margin_bounds``: True, False, or None when not given (the solver's default);
    ``default_text`` says where it is on when not given."""
    return click.option(
        "--margin-bounds",
        "margin_bounds",
        type=IntChoice(0, 1, expected="--margin-bounds 0 or 1"),
        default=None,
        callback=lambda ctx, param, value: None if value is None else bool(value),
        help="1: skip the examples whose loss cannot have changed since the margins were "
        "last sorted (Guillory & Bilmes' bounds on the change of the margin): the "
        "same result, fewer products; 0: compute every margin. " + default_text,
    )


def kernel_options(r_note=""):
    """SVMlight's kernel flags -t -d -g -s -r (one definition for every learner, so their
    command lines agree), handed to the command as one ``kernel`` argument.

    The Kernel is built when the command runs, not when the options are defined, so that
    -h and usage errors do not import the kernel code (numba, scipy).
    """
    options = [
        click.option(
            "-t",
            "kernel_type",
            type=IntChoice(0, 1, 2, 3, expected="kernel type 0, 1, 2 or 3"),
            default=0,
            show_default=True,
            help="Kernel: 0 linear, 1 polynomial (s a.b+r)^d, 2 RBF "
            "exp(-g|a-b|^2), 3 sigmoid tanh(s a.b+r).",
        ),
        click.option(
            "-d", "degree", type=int, default=3, show_default=True, help="Polynomial degree."
        ),
        click.option("-g", "gamma", type=float, default=1.0, show_default=True, help="RBF gamma."),
        click.option(
            "-s",
            "coef_lin",
            type=float,
            default=1.0,
            show_default=True,
            help="s of the polynomial and sigmoid kernels.",
        ),
        click.option(
            "-r",
            "coef_const",
            type=float,
            default=1.0,
            show_default=True,
            help="r (c) of the polynomial and sigmoid kernels" + r_note + ".",
        ),
    ]

    def decorate(command):
        @functools.wraps(command)
        def with_kernel(*args, kernel_type, degree, gamma, coef_lin, coef_const, **kwargs):
            # Kernel makes the same check, but importing it loads numpy: a usage error
            # is answered without (tests/e2e/test_cli_common.py, FAST_CASES).
            if kernel_type == 2 and not gamma > 0:
                raise OptionError(f"expected an RBF gamma > 0 (-g), got {gamma:g}")
            from ..kernels import Kernel

            try:
                kernel = Kernel(kernel_type, degree, gamma, coef_lin, coef_const)
            except InputError as e:
                raise OptionError(str(e)) from None
            return command(*args, kernel=kernel, **kwargs)

        for option in reversed(options):
            with_kernel = option(with_kernel)
        return with_kernel

    return decorate


# -- why a run stopped ------------------------------------------------------------------

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


# -- training and the ending --------------------------------------------------------------


class StopOnInterrupt:
    """Ctrl-C asks the learner to stop after its current iteration; a second one aborts.
    With ``terminate`` (a run on a Dask cluster, which batch systems stop by SIGTERM),
    SIGTERM does the same (``terminated`` then says so; a second one aborts as
    :class:`~cpsvm.errors.Terminated`).

    Used as ``with StopOnInterrupt() as stop: train(..., should_stop=stop)``; the
    learner then writes the model it has (a valid one) and exits 130 (143 after
    SIGTERM). The handler only records the request (and says ``message``, unless None):
    a KeyboardInterrupt raised while a compiled kernel runs would surface as numba's
    SystemError, so the loops ask ``stop()`` between their kernel calls.
    """

    def __init__(
        self,
        message="Interrupt: stopping after this iteration (Ctrl-C again to abort)",
        terminate=False,
    ):
        self.message = message
        self.terminate = terminate

    def __enter__(self):
        import signal

        self.requested = False
        self.terminated = False
        self._previous = signal.signal(signal.SIGINT, self._handle)
        if self.terminate:
            self._previous_term = signal.signal(signal.SIGTERM, self._handle)
        return self

    def _handle(self, signum, frame):
        import signal

        if self.requested:
            if signum == signal.SIGTERM:
                raise Terminated
            raise Interrupted("interrupted (Ctrl-C twice): stopped at once, nothing written")
        self.requested = True
        if signum == signal.SIGTERM:
            self.terminated = True
            note("Terminate (SIGTERM): stopping after this iteration (again to abort)")
        elif self.message is not None:
            note(self.message)

    def __call__(self) -> bool:
        return self.requested

    def __exit__(self, *exc):
        import signal

        signal.signal(signal.SIGINT, self._previous)
        if self.terminate:
            signal.signal(signal.SIGTERM, self._previous_term)
        return False


class TrainingMonitor:
    """Engine callback, by verbosity: 1 a tqdm line on stderr (on a terminal); 2 one line
    per iteration on stderr instead (SVMstruct's ``Iter`` lines, or svmocas's with
    ``style="ocas"``); 3 also the iteration's time and, when the engine reports them,
    the QP's and the oracle's. With --trace, a TSV row per iteration (every COLUMN);
    ``keep_rows`` (--plot) keeps them in ``rows`` too, as dicts by COLUMN.
    """

    COLUMNS = (
        "iteration",
        "primal",
        "dual",
        "gap",
        "violation",
        "working_set",
        "oracle_calls",
        "seconds",
    )

    def __init__(
        self, verbosity: int, trace_path=None, desc="training", style="struct", keep_rows=False
    ):
        self.verbosity = verbosity
        self.rows = [] if keep_rows else None
        self.style = style
        # At -v 2 the iteration lines replace the bar (both on stderr would interleave).
        self.bar = progress(None, verbosity if verbosity < 2 else 0, desc, "iter")
        self.trace = open(trace_path, "w", encoding="utf-8") if trace_path else None
        if self.trace:
            self.trace.write("\t".join(self.COLUMNS) + "\n")
        self.last = None
        self._seconds = self._qp = self._oracle = 0.0

    def __call__(self, p):
        self.last = p
        self.bar.update(1)
        self.bar.set_postfix_str(
            f"gap={p.gap:.4g} viol={p.violation:.3g} cuts={p.working_set}", refresh=False
        )
        if self.verbosity >= 2:
            note(self.line(p))
        if self.trace or self.rows is not None:
            values = [getattr(p, c) for c in self.COLUMNS]
            if self.rows is not None:
                self.rows.append(dict(zip(self.COLUMNS, values)))
            if self.trace:
                self.trace.write(
                    "\t".join(repr(v) if isinstance(v, float) else str(v) for v in values) + "\n"
                )

    def line(self, p) -> str:
        """The -v 2 line of an iteration (with -v 3's timing)."""
        if self.style == "ocas":
            relative = p.gap / p.primal if p.primal else 0.0
            text = (
                f"{p.iteration:4d}: tim={p.seconds:.3f}, Q_P={p.primal:f}, "
                f"Q_D={p.dual:f}, Q_P-Q_D={p.gap:f}, 1-Q_D/Q_P={relative:f}, "
                f"nza={p.working_set:4d}"
            )
        else:
            text = (
                f"Iter {p.iteration}: pval={p.primal:.6g}, dval={p.dual:.6g}, "
                f"gap={p.gap:.6g}, violation={p.violation:.6g}, "
                f"NumConst={p.working_set}, calls={p.oracle_calls}"
            )
        base = TrainingMonitor.COLUMNS
        extra = [c for c in self.COLUMNS if c not in base]
        if extra:
            text += ", " + ", ".join(f"{c}={getattr(p, c)}" for c in extra)
        if self.verbosity >= 3:
            text += f", time={p.seconds - self._seconds:.4f}s"
            self._seconds = p.seconds
            qp, oracle = getattr(p, "seconds_qp", None), getattr(p, "seconds_oracle", None)
            if qp is not None:
                text += f" (QP {qp - self._qp:.4f}s"
                self._qp = qp
                if oracle is not None:
                    text += f", oracle {oracle - self._oracle:.4f}s"
                    self._oracle = oracle
                text += ")"
        return text

    def close(self):
        self.bar.close()
        if self.trace:
            self.trace.close()


def draw_trace(plot_file, monitor, title: str) -> None:
    """--plot of a run without a C path: the monitor's rows (kept in memory, with or
    without --trace) as the training trace; nothing when --plot was not given."""
    if plot_file is None:
        return
    from ..plotting import plot_trace

    plot_trace(monitor.rows, plot_file, title)


def report_stream(model_file):
    """Where a learner's figures go: stdout, unless the model goes there."""
    return sys.stderr if model_file == "-" else sys.stdout


def reading_line(data, examples=None) -> str:
    """SVMstruct's line on what was read; ``examples`` says what the examples are when
    they are not the file's lines (e.g. sentences)."""
    examples = examples or f"{data.n_examples} examples"
    return f"Reading training examples...done ({examples}, {data.n_features} features)"


def train_and_save(train, data, params, model_file, monitor, terminate=False):
    """Train with ``monitor`` (progress, -v 2 lines, --trace) and Ctrl-C handling (and
    SIGTERM's, with ``terminate``: :class:`StopOnInterrupt`), then write the model
    atomically: the model reached so far when interrupted (``info.terminated`` set
    when SIGTERM stopped it).

    Returns (info, cpu seconds of training).
    """
    import time

    from ..io.model_file import write_model

    started = time.process_time()
    try:
        with StopOnInterrupt(terminate=terminate) as stop:
            model, info = train(data, params, callback=monitor, should_stop=stop)
        if stop.terminated:
            info.terminated = True
    finally:
        monitor.close()
    cpu = time.process_time() - started
    feature_ids = getattr(data, "feature_ids", None)
    if feature_ids is not None:  # trained on renumbered columns: the file's indices
        model.feature_ids = feature_ids
    write_model(model_file, model)
    return info, cpu


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


def print_struct_statistics(info, params, cpu, out):
    """SVMstruct's statistics of a cp_learn run (the 1-slack engine's result), with the
    lines the problem's entry adds: its work counters and its objective restated in its
    own convention."""
    from ..problems import entry_of

    r = info.result
    p = lambda s: print(s, file=out)  # noqa: E731
    user = info.problem == "user"
    entry = entry_of(params.problem if user else info.problem)
    name = f"user ({params.problem})" if user else info.problem
    p(
        f"Problem: {name}, algorithm -w {info.algorithm}, "
        f"{'margin' if params.rescaling == 2 else 'slack'} rescaling"
    )
    reason = stop_reason(r.status, "struct-gap" if info.algorithm in (5, 9) else "struct")
    p(f"Stopped because: {reason}")
    p(f"Final epsilon on KKT-Conditions: {max(r.violation, 0.0):.5f}")
    p(f"Upper bound on duality gap: {r.gap:.5f}")
    p(f"Dual objective value: dval={r.dual:.5f}")
    p(f"Primal objective value: pval={r.primal:.5f}")
    if info.algorithm == 5:  # dual coordinate descent: passes over the examples, no cuts
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
    for line in entry.work_lines(info) if entry.work_lines else ():
        p(line)
    p(runtime_line(cpu, r))
    for line in entry.scale_lines(info, params) if entry.scale_lines else ():
        p(line)


def finish(
    prog, result, model_file, verbosity, *, notes=(), warn=True, best=False, terminated=False
):
    """The end of every learner: its notes on stderr, then after an interrupt the line
    saying where the model reached so far went and exit 130 (143 and "terminated" when
    SIGTERM stopped it: ``terminated``), else (``warn``) a warning when the run stopped
    before converging. ``best``: the model written is the best point so far (OCAS), not
    the last."""
    for line in notes:
        note(f"Note: {line}")
    if result.status == "interrupted":
        gap = getattr(result, "gap", None)
        at = f" with duality gap {gap:.6g}" if gap is not None else ""
        so_far = "the best model so far" if best else "the model so far"
        how = "terminated (SIGTERM)" if terminated else "interrupted"
        note(
            f"{prog}: {how} at iteration {result.iterations}{at}; {so_far} was written "
            f"to {model_file}"
        )
        sys.exit(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED)
    if warn and result.status != "converged" and verbosity >= 1:
        note(f"Warning: {stop_reason(result.status)}")
