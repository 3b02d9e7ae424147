"""The one exception type that reaches users as a single line on stderr."""


class InputError(Exception):
    """Malformed input or options: the message names file, line and what was expected."""

    def __init__(self, message, *, source=None, line=None):
        self.source = source
        self.line = line
        prefix = ""
        if source is not None:
            prefix = f"{source}:{line}: " if line is not None else f"{source}: "
        super().__init__(prefix + message)
