"""What every command shares: running it, reporting errors in one line, --version and
--plot (the progress output is cpsvm.reporting's).

Results go to stdout or files; progress, notes and errors to stderr, so pipes stay
clean. Any user error ends as one line ``<prog>: <file>:<line>: <what was expected>``
and a non-zero exit, never a traceback. One exit-status rule for every command:
0 success, 1 an input error (malformed or unreadable file, bad labels), 2 a usage error
(unknown flag, missing argument, bad or out-of-range option value, a bad --problem),
130 interrupted, 128 + the signal's number when SIGTERM, SIGHUP or SIGQUIT ended it (143,
129, 131). A closed pipe on stdout is no error; another failure of stdout or stderr (a
full device, a closed descriptor) is 1, after the work is done and its files written.

This module is imported before every command runs, so it imports nothing heavy:
numpy, scipy, numba, tqdm and the library are imported where they are used.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys

import click

from ..errors import InputError, Interrupted, OptionError, Terminated
from ..reporting.run import EXIT_INTERRUPTED, TERMINATING

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
    """Run a click command with SVMlight-style error handling; exits the process.

    The command is invoked here rather than by click's ``main``, which answers a broken
    pipe anywhere with exit 1 before the command could finish its work. Standard output
    and error are guarded while it runs (:class:`_GuardedStream`): a closed pipe, a full
    device or a closed descriptor there never stops the work, so a learner still writes
    its model; the failure is said at the end (on stderr, if it still works) and decides
    the exit status (:func:`_stream_failure`)."""
    prog = prog_name or command.name
    configure_process()
    guarded = _guard_streams()
    try:
        rv = _invoke(command, argv, prog, guarded)
    finally:
        _unguard_streams(guarded)
    sys.exit(_stream_failure(prog, guarded) or rv or 0)


def _invoke(command, argv, prog, guarded):
    """The command's return value, or the exit status of the one line its error gets."""
    try:
        with _interrupts():
            args = sys.argv[1:] if argv is None else list(argv)
            with command.make_context(prog, args) as ctx:
                return command.invoke(ctx)
    except click.exceptions.Exit as e:  # -h, --version
        return e.exit_code
    except click.UsageError as e:
        return _fail(prog, f"{e.format_message()} (see '{prog} -h')", EXIT_USAGE)
    except OptionError as e:
        return _fail(prog, f"{e} (see '{prog} -h')", EXIT_USAGE)
    except InputError as e:
        return _fail(prog, str(e), EXIT_INPUT_ERROR)
    except click.ClickException as e:
        return _fail(prog, e.format_message(), e.exit_code)
    except Interrupted as e:
        return _fail(prog, str(e) or "interrupted", EXIT_INTERRUPTED)
    except (click.Abort, KeyboardInterrupt):
        return _fail(prog, "interrupted", EXIT_INTERRUPTED)
    except Terminated as e:
        return _fail(prog, f"terminated ({e.name})", e.exit_status)
    except BrokenPipeError:
        # An output named by path (/dev/stdout, a pipe) whose reader went away (`| head`):
        # not an error of ours. Standard output's own failures are the guards'.
        guarded[0].failed(errno.EPIPE)
        return 0
    except OSError as e:
        name = f"{e.filename}: " if e.filename else ""
        return _fail(prog, f"{name}{e.strerror or e}", EXIT_INPUT_ERROR)
    except MemoryError as e:
        # What the readers' own checks did not foresee: still one line, no partial output
        # (outputs are written atomically).
        from ..memory import format_bytes, physical_memory

        what = f" ({e})" if str(e) else ""
        return _fail(
            prog,
            f"out of memory{what}: the input asks for more than this machine's "
            f"{format_bytes(physical_memory())}",
            EXIT_INPUT_ERROR,
        )
    except RecursionError:
        too_deep = "the input is nested too deeply to process (Python's recursion limit)"
        return _fail(prog, too_deep, EXIT_INPUT_ERROR)
    except SystemError as e:
        # Ctrl-C raised while a compiled kernel's result was being returned: numba's
        # dispatcher reports the interrupt as the cause of a SystemError.
        interrupt = _interrupt_behind(e)
        if interrupt is None:
            raise
        return _fail(prog, str(interrupt) or "interrupted", EXIT_INTERRUPTED)


@contextlib.contextmanager
def _interrupts():
    """While the command runs, Ctrl-C raises Interrupted (where the training loops do
    not defer it, cpsvm.reporting.run.StopOnInterrupt): click would answer a
    KeyboardInterrupt with an empty line of its own; SIGTERM, SIGHUP and SIGQUIT raise
    Terminated. The caller's handlers are restored."""
    import signal

    def interrupt(signum, frame):
        raise Interrupted("interrupted")

    def terminate(signum, frame):
        raise Terminated(signum)

    wanted = {signal.SIGINT: interrupt}
    wanted.update({getattr(signal, name): terminate for name in TERMINATING})
    previous = {}
    try:
        for signum, handler in wanted.items():
            previous[signum] = signal.signal(signum, handler)
    except ValueError:  # not the main thread: the caller's signals stay as they are
        yield
        return
    try:
        yield
    except BaseException as e:
        if _interrupt_behind(e) is not None:
            # The command ends on this Ctrl-C: another one while the process winds down
            # (a cluster's teardown, the interpreter's exit) must not cut that short.
            previous[signal.SIGINT] = signal.SIG_IGN
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _interrupt_behind(error: BaseException):
    """The Ctrl-C (Interrupted or KeyboardInterrupt) an error was caused by, or None."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, (Interrupted, KeyboardInterrupt)):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def _fail(prog: str, message: str, code: int) -> int:
    """The one line of an error, on stderr; returns the exit status ``code``."""
    sys.stdout.flush()
    print(f"{prog}: {message}", file=sys.stderr)
    return code


class _GuardedStream:
    """Standard output or error as the command writes it: the first write or flush that
    fails (a closed pipe, a full device, a closed descriptor) is recorded, the descriptor
    is pointed at /dev/null (so that no later flush, the interpreter's at exit included,
    fails again), and what follows is dropped. Everything else is the stream's."""

    def __init__(self, stream, name: str, error=None):
        self._stream, self.name, self.error = stream, name, error

    def failed(self, code: int) -> None:
        if self.error is None:
            self.error = code
        with contextlib.suppress(AttributeError, OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def _guarded(self, call, *args):
        if self.error is None:
            try:
                return call(*args)
            except OSError as e:
                self.failed(e.errno or errno.EIO)
            except ValueError:  # closed
                self.failed(errno.EBADF)
        return None

    def write(self, text):
        self._guarded(self._stream.write, text)
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        self._guarded(self._stream.flush)

    @property
    def buffer(self):
        return _GuardedBuffer(self)

    def __getattr__(self, name):
        return getattr(self._stream, name)


class _GuardedBuffer:
    """The byte stream under a guarded text stream, sharing its guard."""

    def __init__(self, text: _GuardedStream):
        self._text = text

    def write(self, data):
        self._text.flush()  # bytes after the text written before them
        self._text._guarded(self._text._stream.buffer.write, data)
        return len(data)

    def flush(self):
        self._text._guarded(self._text._stream.buffer.flush)

    def __getattr__(self, name):
        return getattr(self._text._stream.buffer, name)


class _ClosedStream:
    """What Python leaves None when a standard descriptor was closed as the process
    started (``>&-``): a write to it fails as the descriptor would."""

    def write(self, text):
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def flush(self):
        pass

    def isatty(self):
        return False

    def fileno(self):
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))


def _guard_streams() -> tuple:
    """(stdout's guard, stderr's guard, stdout, stderr): the two streams guarded for the
    command."""
    guards, streams = [], []
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        guards.append(_GuardedStream(_ClosedStream() if stream is None else stream, name))
        streams.append(stream)
        setattr(sys, name, guards[-1])
    return (*guards, *streams)


def _unguard_streams(guarded) -> None:
    stdout, stderr, was_stdout, was_stderr = guarded
    stdout.flush()
    stderr.flush()
    sys.stdout, sys.stderr = was_stdout, was_stderr


def _stream_failure(prog, guarded) -> int:
    """The exit status a failure of standard output or error asks for: none for a closed
    pipe (its reader stopped reading, as ``| head`` does), else 1, said on stderr when
    stdout failed and stderr still works: the figures printed there are lost, the files
    written are whole."""
    stdout, stderr, _, was_stderr = guarded
    failures = [g.error for g in (stdout, stderr) if g.error not in (None, errno.EPIPE)]
    if stdout.error not in (None, errno.EPIPE) and stderr.error is None:
        with contextlib.suppress(OSError, ValueError):
            print(
                f"{prog}: standard output: {os.strerror(stdout.error)}: what was printed "
                "there is lost (every file written is complete)",
                file=was_stderr,
            )
    return EXIT_INPUT_ERROR if failures else 0


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
