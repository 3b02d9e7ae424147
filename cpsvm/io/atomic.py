"""Write-then-rename outputs: a failed or interrupted run never leaves a partial file."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile


@contextlib.contextmanager
def atomic_output(path):
    """Text stream for ``path`` that replaces it only when the block succeeds.

    ``"-"`` writes to standard output directly. Numbers are formatted by Python itself,
    never by the C locale, so a decimal comma can never appear.
    """
    if path == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            yield f
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
