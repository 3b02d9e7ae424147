"""The exception types that reach users as a single line on stderr."""


class InputError(Exception):
    """Malformed input or options: the message names file, line and what was expected.

    The commands exit with status 1 (an input error).
    """

    def __init__(self, message, *, source=None, line=None):
        self.message = message
        self.source = source
        self.line = line
        prefix = ""
        if source is not None:
            prefix = f"{source}:{line}: " if line is not None else f"{source}: "
        super().__init__(prefix + message)


class OptionError(InputError):
    """A bad option value or combination (a usage error): the commands exit with status 2.

    A subclass of InputError, so a library caller catching InputError catches it too.
    """


class Terminated(BaseException):
    """SIGTERM, SIGHUP or SIGQUIT (``signum``, SIGTERM by default), raised by the
    commands' handlers where the training loops do not stop gracefully: it unwinds like
    Ctrl-C, so that cleanup runs (a temporary model file, a local cluster's processes,
    its scratch directory); the command then exits 128 + the signal's number (143 for
    SIGTERM) with one line."""

    def __init__(self, signum: int = 15):
        import signal

        super().__init__(signum)
        self.signum = int(signum)
        self.name = signal.Signals(self.signum).name
        self.exit_status = 128 + self.signum


class Interrupted(BaseException):
    """Ctrl-C, raised where it is safe: between two compiled-kernel calls (a
    KeyboardInterrupt raised inside one surfaces as numba's SystemError), or by the
    commands' own handler. Not a KeyboardInterrupt, which click would answer with a line
    of its own: the commands exit 130 with this one's text as their one line."""
