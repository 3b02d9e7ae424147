"""What every command shares: running it, reporting errors in one line, progress output.

Results go to stdout or files; progress, notes and errors to stderr, so pipes stay
clean. Any user error ends as one line ``<prog>: <file>:<line>: <what was expected>``
and a non-zero exit, never a traceback. One exit-status rule for every command:
0 success, 1 an input error (malformed or unreadable file, bad labels), 2 a usage error
(unknown flag, missing argument, bad or out-of-range option value, a bad --problem),
130 interrupted (143 terminated by SIGTERM while a Dask cluster is in use).

This module is imported before every command runs, so it imports nothing heavy:
numpy, scipy, numba, tqdm and the library are imported where they are used.
"""

from __future__ import annotations

import contextlib
import os
import sys

import click

from ..errors import InputError, Interrupted, OptionError, Terminated

CONTEXT_SETTINGS = {"help_option_names": ["-h", "-?", "--help"], "max_content_width": 100}

EXIT_INPUT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # SIGTERM where a command handles it (a Dask session's cleanup)


def configure_process() -> None:
    """The process-wide settings a command needs; the library never makes them.

    OpenBLAS threads beside the kernels' made the master QP's small dense factorizations
    many times slower on 2 cores, and OpenBLAS reads OPENBLAS_NUM_THREADS only when numpy
    loads it: this runs before the command imports numpy. A value the user set in the
    environment wins.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def run(command: click.Command, argv=None, prog_name=None) -> None:
    """Run a click command with SVMlight-style error handling; exits the process."""
    prog = prog_name or command.name
    configure_process()
    try:
        with _interrupts():
            rv = command.main(args=argv, prog_name=prog, standalone_mode=False)
    except click.UsageError as e:
        _fail(prog, f"{e.format_message()} (see '{prog} -h')", EXIT_USAGE)
    except OptionError as e:
        _fail(prog, f"{e} (see '{prog} -h')", EXIT_USAGE)
    except InputError as e:
        _fail(prog, str(e), EXIT_INPUT_ERROR)
    except click.ClickException as e:
        _fail(prog, e.format_message(), e.exit_code)
    except Interrupted as e:
        _fail(prog, str(e) or "interrupted", EXIT_INTERRUPTED)
    except (click.Abort, KeyboardInterrupt):
        _fail(prog, "interrupted", EXIT_INTERRUPTED)
    except Terminated:
        _fail(prog, "terminated (SIGTERM)", EXIT_TERMINATED)
    except BrokenPipeError:
        # The reader of our stdout went away (e.g. `| head`): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
    except OSError as e:
        name = f"{e.filename}: " if e.filename else ""
        _fail(prog, f"{name}{e.strerror or e}", EXIT_INPUT_ERROR)
    except MemoryError as e:
        # What the readers' own checks did not foresee: still one line, no partial output
        # (outputs are written atomically).
        from ..memory import format_bytes, physical_memory

        what = f" ({e})" if str(e) else ""
        _fail(
            prog,
            f"out of memory{what}: the input asks for more than this machine's "
            f"{format_bytes(physical_memory())}",
            EXIT_INPUT_ERROR,
        )
    except RecursionError:
        _fail(prog, "the input is nested too deeply to process (Python's recursion limit)", 1)
    except SystemError as e:
        # Ctrl-C raised while a compiled kernel's result was being returned: numba's
        # dispatcher reports the interrupt as the cause of a SystemError.
        interrupt = _interrupt_behind(e)
        if interrupt is None:
            raise
        _fail(prog, str(interrupt) or "interrupted", EXIT_INTERRUPTED)
    sys.exit(rv or 0)


@contextlib.contextmanager
def _interrupts():
    """While the command runs, Ctrl-C raises Interrupted (where the training loops do
    not defer it, cpsvm.cli.scaffold.StopOnInterrupt): click would answer a
    KeyboardInterrupt with an empty line of its own. The caller's handler is restored."""
    import signal

    def interrupt(signum, frame):
        raise Interrupted("interrupted")

    try:
        previous = signal.signal(signal.SIGINT, interrupt)
    except ValueError:  # not the main thread: the caller's Ctrl-C stays as it is
        yield
        return
    try:
        yield
    except BaseException as e:
        if _interrupt_behind(e) is not None:
            # The command ends on this Ctrl-C: another one while the process winds down
            # (a cluster's teardown, the interpreter's exit) must not cut that short.
            previous = signal.SIG_IGN
        raise
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupt_behind(error: BaseException):
    """The Ctrl-C (Interrupted or KeyboardInterrupt) an error was caused by, or None."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, (Interrupted, KeyboardInterrupt)):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


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


def verbosity_option(default: int, help: str):
    return click.option(
        "-v", "verbosity", type=click.IntRange(0, 3), default=default, show_default=True, help=help
    )


def plot_file_option(what: str):
    """--plot FILE (every command): draw ``what`` in FILE, .png or .svg by its name. The
    name and matplotlib's presence are checked as the option is read, before anything is
    trained or classified; matplotlib is imported only when the picture is drawn."""

    def check(ctx, param, value):
        if value is None or ctx.resilient_parsing:
            return value
        from ..io.atomic import check_output_folder
        from ..plotting import check_plot_path

        check_plot_path(value)
        check_output_folder(value)
        return value

    return click.option(
        "--plot",
        "plot_file",
        type=click.Path(dir_okay=False),
        metavar="FILE",
        default=None,
        callback=check,
        help=f"Draw {what} in FILE: .png or .svg, by its name (needs matplotlib: "
        "pip install 'cpsvm[plot]').",
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


class FilePath(click.Path):
    """A file argument (``-`` for standard input or output): an empty name is a usage
    error before anything is read or trained, not a failure at the end."""

    def __init__(self):
        super().__init__(dir_okay=False, allow_dash=True)

    def convert(self, value, param, ctx):
        if value == "":
            self.fail("expected a file name (or - for standard input/output), got ''", param, ctx)
        return super().convert(value, param, ctx)


class OutputPath(FilePath):
    """A file the command writes (``-``: standard output): its folder must exist, checked
    as the command line is read, before anything is read or trained."""

    def convert(self, value, param, ctx):
        value = super().convert(value, param, ctx)
        from ..io.atomic import check_output_folder

        check_output_folder(value)
        return value


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
