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
    """SIGTERM, where a command handles it (while a Dask session is open): it unwinds
    like Ctrl-C, so that cleanup runs (a local cluster's processes, its scratch
    directory); the command then exits 143 (128 + SIGTERM) with one line."""


class Interrupted(BaseException):
    """Ctrl-C, raised where it is safe: between two compiled-kernel calls (a
    KeyboardInterrupt raised inside one surfaces as numba's SystemError), or by the
    commands' own handler. Not a KeyboardInterrupt, which click would answer with a line
    of its own: the commands exit 130 with this one's text as their one line."""
