"""What every command shares: running it, reporting errors in one line, progress bars.

Results go to stdout or files; progress, notes and errors to stderr, so pipes stay
clean. Any user error — bad option, malformed file — ends as one line
``<prog>: <file>:<line>: <what was expected>`` and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import functools
import os
import sys

import click
from tqdm import tqdm

from ..errors import InputError
from ..kernels import Kernel

CONTEXT_SETTINGS = {"help_option_names": ["-h", "-?", "--help"], "max_content_width": 100}

EXIT_INPUT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def run(command: click.Command, argv=None, prog_name=None) -> None:
    """Run a click command with SVMlight-style error handling; exits the process."""
    prog = prog_name or command.name
    try:
        rv = command.main(args=argv, prog_name=prog, standalone_mode=False)
    except click.UsageError as e:
        _fail(prog, f"{e.format_message()} (see '{prog} -h')", EXIT_USAGE)
    except InputError as e:
        _fail(prog, str(e), EXIT_INPUT_ERROR)
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


def note(message: str) -> None:
    """A diagnostic line on stderr."""
    print(message, file=sys.stderr)


def progress(total, verbosity: int, desc: str, unit: str = "it"):
    """A tqdm bar on stderr, shown only at verbosity >= 1 and on a terminal."""
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False,
                disable=verbosity < 1 or not sys.stderr.isatty(), dynamic_ncols=True)


def verbosity_option(default: int):
    return click.option("-v", "verbosity", type=click.IntRange(0, 3), default=default,
                        show_default=True, help="Verbosity level 0..3 (0: silent but errors).")


def not_implemented_command(name: str) -> click.Command:
    """A learner whose issue has not landed yet: answers so, with exit status 2."""

    @click.command(name, context_settings={**CONTEXT_SETTINGS, "ignore_unknown_options": True})
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
    """Engine callback: a tqdm line on stderr and, with --trace, a TSV row per iteration."""

    COLUMNS = ("iteration", "primal", "dual", "gap", "violation", "working_set",
               "oracle_calls", "seconds")

    def __init__(self, verbosity: int, trace_path=None, desc="training"):
        self.bar = progress(None, verbosity, desc, "iter")
        self.trace = open(trace_path, "w", encoding="utf-8") if trace_path else None
        if self.trace:
            self.trace.write("\t".join(self.COLUMNS) + "\n")
        self.last = None

    def __call__(self, p):
        self.last = p
        self.bar.update(1)
        self.bar.set_postfix_str(f"gap={p.gap:.4g} viol={p.violation:.3g} "
                                 f"cuts={p.working_set}", refresh=False)
        if self.trace:
            self.trace.write("\t".join(repr(getattr(p, c)) if isinstance(getattr(p, c), float)
                                       else str(getattr(p, c)) for c in self.COLUMNS) + "\n")

    def close(self):
        self.bar.close()
        if self.trace:
            self.trace.close()


def set_threads(n):
    """Use n numba threads (None: all cores)."""
    import numba
    if n is not None:
        if n < 1:
            raise InputError(f"expected --threads >= 1, got {n}")
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))


def threads_option(*names):
    return click.option(*(names or ("--threads",)), "threads", type=int, default=None,
                        help="Threads for the separation oracle (default: all cores). "
                             "Results do not depend on it.")


def kernel_options(r_note=""):
    """SVMlight's kernel flags -t -d -g -s -r (one definition for every learner, so their
    command lines agree), handed to the command as one ``kernel`` argument."""
    options = [
        click.option("-t", "kernel_type", type=int, default=0, show_default=True,
                     help="Kernel: 0 linear, 1 polynomial (s a.b+r)^d, 2 RBF "
                          "exp(-g|a-b|^2), 3 sigmoid tanh(s a.b+r)."),
        click.option("-d", "degree", type=int, default=3, show_default=True,
                     help="Polynomial degree."),
        click.option("-g", "gamma", type=float, default=1.0, show_default=True,
                     help="RBF gamma."),
        click.option("-s", "coef_lin", type=float, default=1.0, show_default=True,
                     help="s of the polynomial and sigmoid kernels."),
        click.option("-r", "coef_const", type=float, default=1.0, show_default=True,
                     help="r (c) of the polynomial and sigmoid kernels" + r_note + "."),
    ]

    def decorate(command):
        @functools.wraps(command)
        def with_kernel(*args, kernel_type, degree, gamma, coef_lin, coef_const, **kwargs):
            return command(*args, kernel=Kernel(kernel_type, degree, gamma, coef_lin,
                                                coef_const), **kwargs)
        for option in reversed(options):
            with_kernel = option(with_kernel)
        return with_kernel
    return decorate


def train_and_save(prog, train, data, params, model_file, verbosity, trace_path,
                   monitor=None):
    """What every struct-style learner does after parsing: say what was read, train with
    progress, trace and Ctrl-C handling, write the model atomically.

    Returns (info, cpu seconds, the stream for figures: stdout unless the model is).
    """
    import time
    from ..io.model_file import write_model
    report = sys.stderr if model_file == "-" else sys.stdout
    if verbosity >= 1:
        print(f"Reading training examples...done ({data.n_examples} examples, "
              f"{data.n_features} features)", file=report)
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
