"""What every command shares: running it, reporting errors in one line, --version and
--plot (the progress output is cpsvm.reporting's).

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
from ..reporting.run import EXIT_INTERRUPTED, EXIT_TERMINATED

CONTEXT_SETTINGS = {"help_option_names": ["-h", "-?", "--help"], "max_content_width": 100}

EXIT_INPUT_ERROR = 1
EXIT_USAGE = 2


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
    not defer it, cpsvm.reporting.run.StopOnInterrupt): click would answer a
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


def version_option(follows: str) -> click.Option:
    """--version: ``<prog> (cpsvm <version>)``, the tool whose command line it follows, and
    whether the compiled kernels are in use (for which CPU) or why not."""

    def show(ctx, param, value):
        if not value or ctx.resilient_parsing:
            return
        from .. import __version__
        from ..compiled import describe

        click.echo(f"{ctx.info_name} (cpsvm {__version__}), following {follows}; {describe()}")
        ctx.exit(0)

    return click.Option(
        ["--version"],
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=show,
        help="Print cpsvm's version, the tool this command follows and whether the compiled "
        "kernels are in use, and exit.",
    )


def check_plot_file(ctx, param, value):
    """--plot FILE (every command): the name and matplotlib's presence are checked as the
    option is read, before anything is trained or classified; matplotlib is imported only
    when the picture is drawn."""
    if value is None or ctx.resilient_parsing:
        return value
    from ..io.atomic import check_output_folder
    from ..plotting import check_plot_path

    check_plot_path(value)
    check_output_folder(value)
    return value


def plot_option(what: str):
    """The field of --plot FILE (every command): draw ``what`` in FILE."""
    from ..options import option

    return option(
        "--plot",
        help=f"Draw {what} in FILE: .png or .svg, by its name (needs matplotlib: "
        "pip install 'cpsvm[plot]').",
        default=None,
        type=click.Path(dir_okay=False),
        metavar="FILE",
        callback=check_plot_file,
    )
