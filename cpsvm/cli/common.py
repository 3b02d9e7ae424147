"""What every command shares: running it, reporting errors in one line, progress output.

Results go to stdout or files; progress, notes and errors to stderr, so pipes stay
clean. Any user error ends as one line ``<prog>: <file>:<line>: <what was expected>``
and a non-zero exit, never a traceback. One exit-status rule for every command:
0 success, 1 an input error (malformed or unreadable file, bad labels), 2 a usage error
(unknown flag, missing argument, bad or out-of-range option value, a bad --problem),
130 interrupted.

This module is imported before every command runs, so it imports nothing heavy:
numpy, scipy, numba, tqdm and the library are imported where they are used.
"""

from __future__ import annotations

import functools
import os
import sys

import click

from ..errors import InputError, OptionError

CONTEXT_SETTINGS = {"help_option_names": ["-h", "-?", "--help"], "max_content_width": 100}

EXIT_INPUT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def configure_process() -> None:
    """The process-wide settings a command needs; the library never makes them.

    OpenBLAS threads beside numba's made the master QP's small dense factorizations
    many times slower on 2 cores, and OpenBLAS reads OPENBLAS_NUM_THREADS only when numpy
    loads it: this runs before the command imports numpy. numba's workqueue layer wakes
    its threads faster than the OpenMP layer for the short parallel row loops of the
    oracles. A value the user set in the environment wins over both.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if "NUMBA_THREADING_LAYER" not in os.environ:
        if "numba" in sys.modules:  # a command run in-process after numba was loaded
            from numba import config

            config.THREADING_LAYER = "workqueue"
        else:
            os.environ["NUMBA_THREADING_LAYER"] = "workqueue"


def run(command: click.Command, argv=None, prog_name=None) -> None:
    """Run a click command with SVMlight-style error handling; exits the process."""
    prog = prog_name or command.name
    configure_process()
    try:
        rv = command.main(args=argv, prog_name=prog, standalone_mode=False)
    except click.UsageError as e:
        _fail(prog, f"{e.format_message()} (see '{prog} -h')", EXIT_USAGE)
    except OptionError as e:
        _fail(prog, f"{e} (see '{prog} -h')", EXIT_USAGE)
    except InputError as e:
        _fail(prog, str(e), EXIT_INPUT_ERROR)
    except click.ClickException as e:
        _fail(prog, e.format_message(), e.exit_code)
    except (click.Abort, KeyboardInterrupt):
        _fail(prog, "interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        # The reader of our stdout went away (e.g. `| head`): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
    except OSError as e:
        name = f"{e.filename}: " if e.filename else ""
        _fail(prog, f"{name}{e.strerror or e}", EXIT_INPUT_ERROR)
    sys.exit(rv or 0)


def _fail(prog: str, message: str, code: int):
    sys.stdout.flush()
    print(f"{prog}: {message}", file=sys.stderr)
    sys.exit(code)


def validate_options(params) -> None:
    """``params.validate()`` as the command line sees it: a refused value is a usage
    error (exit 2), whatever exception class the library's check raised it with."""
    try:
        params.validate()
    except OptionError:
        raise
    except InputError as e:
        raise OptionError(str(e)) from None


def note(message: str) -> None:
    """A diagnostic line on stderr."""
    print(message, file=sys.stderr)


class _NoBar:
    """What progress() returns when nothing is shown (tqdm is then not even imported)."""

    def update(self, n=1):
        pass

    def set_postfix_str(self, s="", refresh=True):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def progress(total, verbosity: int, desc: str, unit: str = "it"):
    """A tqdm bar on stderr, shown only at verbosity >= 1 and on a terminal."""
    if verbosity < 1 or not sys.stderr.isatty():
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)


LEARNER_VERBOSITY = (
    "Verbosity 0..3: 0 silent but errors; 1 statistics (and a progress "
    "bar on a terminal); 2 also one line per iteration on stderr; 3 also "
    "each iteration's time and its QP and oracle shares."
)


def verbosity_option(default: int, help: str = LEARNER_VERBOSITY):
    return click.option(
        "-v", "verbosity", type=click.IntRange(0, 3), default=default, show_default=True, help=help
    )


def version_option(follows: str):
    """--version: ``<prog> (cpsvm <version>)`` and the tool whose command line it follows."""

    def show(ctx, param, value):
        if not value or ctx.resilient_parsing:
            return
        from .. import __version__

        click.echo(f"{ctx.info_name} (cpsvm {__version__}), following {follows}")
        ctx.exit(0)

    return click.option(
        "--version",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=show,
        help="Print cpsvm's version and the tool this command follows, and exit.",
    )


class Checked(click.ParamType):
    """A number that must pass a test (``C > 0``): a value failing it is a usage error,
    found before anything is read or imported, and worded as the library's checks are
    (``expected C > 0, got 0``)."""

    def __init__(self, base, test, expected: str):
        self.base, self.test, self.expected = base, test, expected
        self.name = "float" if base is float else "integer"

    def convert(self, value, param, ctx):
        try:
            number = value if isinstance(value, self.base) else self.base(value)
        except (TypeError, ValueError):
            self.fail(f"expected {self.expected}, got {value!r}", param, ctx)
        if not self.test(number):
            self.fail(f"expected {self.expected}, got {value}", param, ctx)
        return number


def positive(what: str) -> Checked:
    return Checked(float, lambda v: v > 0, f"{what} > 0")


def non_negative(what: str) -> Checked:
    return Checked(float, lambda v: v >= 0, f"{what} >= 0")


class IntChoice(Checked):
    """An integer from a fixed set (SVMstruct's -w 0..4|9 and the like)."""

    def __init__(self, *choices: int, expected: str | None = None):
        self.choices = tuple(choices)
        super().__init__(
            int, lambda v: v in self.choices, expected or "one of " + ", ".join(map(str, choices))
        )

    def get_metavar(self, param, ctx=None):
        return "[" + "|".join(map(str, self.choices)) + "]"


def not_implemented_command(name: str, follows: str) -> click.Command:
    """A learner whose issue has not landed yet: answers so, with exit status 2."""

    @click.command(name, context_settings={**CONTEXT_SETTINGS, "ignore_unknown_options": True})
    @version_option(follows)
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def command(args):
        """Not implemented yet."""
        raise click.UsageError(f"{name} is not implemented yet")

    return command


class StopOnInterrupt:
    """Ctrl-C asks the learner to stop after its current iteration; a second one aborts.

    Used as ``with StopOnInterrupt() as stop: train(..., should_stop=stop)``; the
    learner then writes the model it has (a valid one) and exits 130.
    """

    def __enter__(self):
        import signal

        self.requested = False
        self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        note("Interrupt: stopping after this iteration (Ctrl-C again to abort)")

    def __call__(self) -> bool:
        return self.requested

    def __exit__(self, *exc):
        import signal

        signal.signal(signal.SIGINT, self._previous)
        return False


class TrainingMonitor:
    """Engine callback, by verbosity: 1 a tqdm line on stderr (on a terminal); 2 one line
    per iteration on stderr instead (SVMstruct's ``Iter`` lines, or svmocas's with
    ``style="ocas"``); 3 also the iteration's time and, when the engine reports them,
    the QP's and the oracle's. With --trace, a TSV row per iteration (every COLUMN).
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

    def __init__(self, verbosity: int, trace_path=None, desc="training", style="struct"):
        self.verbosity = verbosity
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
        if self.trace:
            self.trace.write(
                "\t".join(
                    repr(getattr(p, c)) if isinstance(getattr(p, c), float) else str(getattr(p, c))
                    for c in self.COLUMNS
                )
                + "\n"
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


def threads_option(*names, work="the separation oracle"):
    return click.option(
        *(names or ("--threads",)),
        "threads",
        type=Checked(int, lambda v: v >= 1, "--threads >= 1"),
        default=None,
        help=f"Threads for {work} (default: all cores). Results do not depend on it.",
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
            # is answered without (tests/test_cli_common.py, FAST_CASES).
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


def train_and_save(
    prog, train, data, params, model_file, verbosity, trace_path, monitor=None, examples=None
):
    """What every struct-style learner does after parsing: say what was read, train with
    progress, trace and Ctrl-C handling, write the model atomically. ``examples`` says
    what the examples are when they are not the file's lines (e.g. sentences).

    Returns (info, cpu seconds, the stream for figures: stdout unless the model is).
    """
    import time

    from ..io.model_file import write_model

    report = sys.stderr if model_file == "-" else sys.stdout
    if verbosity >= 1:
        examples = examples or f"{data.n_examples} examples"
        print(
            f"Reading training examples...done ({examples}, {data.n_features} features)",
            file=report,
        )
    monitor = monitor or TrainingMonitor(verbosity, trace_path, prog)
    started = time.process_time()
    try:
        with StopOnInterrupt() as stop:
            model, info = train(data, params, callback=monitor, should_stop=stop)
    finally:
        monitor.close()
    cpu = time.process_time() - started
    write_model(model_file, model)
    return info, cpu, report


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


def svmlight_scale_line(C: float, n: int, primal: float) -> str:
    """A binary objective restated in SVMlight's convention (C_light = C·100/n)."""
    from ..conventions import c_light_from_perf

    return (
        f"SVMlight scale: C_light = C*100/n = {c_light_from_perf(C, n):.6g}; objective "
        f"1/2|w|^2 + C_light*sum(hinge) = {primal:.6f}"
    )
