"""Outputs written so that a failed or interrupted run never leaves a partial file.

A regular file (or a path that does not exist yet) is written to a temporary file in the
same directory and renamed over it when the block succeeds. Anything else the path can
name — a character or block device such as /dev/null, a named pipe, a socket, /dev/fd/N
or bash's ``>(...)`` — is opened and written directly: renaming over it would replace the
device or pipe with a regular file (and needs a writable /dev).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys

_MAX_SYMLINKS = 40  # as the kernel's ELOOP limit


@contextlib.contextmanager
def atomic_output(path, binary: bool = False):
    """Text stream (``binary``: byte stream) for ``path`` that replaces it only when the
    block succeeds.

    ``"-"`` writes to standard output directly, as does any path that is not a regular
    file (see the module docstring). A symbolic link to a regular file keeps being a link:
    its target is replaced. Numbers are formatted by Python itself, never by the C
    locale, so a decimal comma can never appear. An OSError of the writing itself (a
    full device, /proc/version) names ``path``.
    """
    try:
        with _output(path, binary) as f:
            yield f
    except OSError as e:
        if e.filename is None and path != "-":
            raise OSError(e.errno, e.strerror, os.fspath(path)) from None
        raise


@contextlib.contextmanager
def _output(path, binary):
    text = {} if binary else {"encoding": "utf-8", "newline": "\n"}
    mode = "wb" if binary else "w"
    if path == "-":
        stdout = sys.stdout.buffer if binary else sys.stdout
        yield stdout
        stdout.flush()
        return
    path = os.fspath(path)
    target = _replaceable_target(path)
    if target is None:
        with open(path, mode, **text) as f:
            yield f
        return
    try:
        fd, tmp = _create_temporary(target)
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EPERM, errno.EROFS) or not os.access(
            target, os.W_OK
        ):
            raise OSError(e.errno, e.strerror, path) from None  # name the output, not the temp
        fd = None
    if fd is None:
        # A writable file in a directory where no file can be created: written in place,
        # as SVMlight would, rather than not at all.
        with open(target, mode, **text) as f:
            yield f
        return
    try:
        with os.fdopen(fd, mode, **text) as f:
            yield f
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def check_output_folder(path) -> None:
    """Refuse, before anything is trained or read, an output whose folder does not exist
    or is not a folder (an OSError naming ``path``): found at the end, the work would be
    lost. ``-`` and what is written directly (a device, a pipe) are not checked."""
    if path == "-":
        return
    path = os.fspath(path)
    if os.path.isdir(path):
        raise OSError(errno.EISDIR, "expected a file name, got a folder", path)
    if os.path.exists(path) and not os.path.isfile(path):
        return  # a device, a pipe, /dev/fd/N: written directly (open() reports the rest)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        what = "is not a folder" if os.path.exists(folder) else "does not exist"
        raise OSError(errno.ENOENT, f"cannot write it: the folder {folder} {what}", path)


def refuse_same_files(inputs, outputs) -> None:
    """Refuse, before anything is read, an output that is one of the run's inputs or
    another of its outputs: the same file by device and inode (through any link, hard or
    symbolic; standard input counts as the file it was redirected from), or the same
    path not created yet. ``inputs`` and ``outputs`` are (what, path) pairs, a None path
    left out. Devices, pipes and ``-`` outputs are written directly and never replace
    anything: they are not compared. Raises OptionError (a usage error)."""
    from ..errors import OptionError

    seen = {}
    for role, pairs in (("input", inputs), ("output", outputs)):
        for what, path in pairs:
            key = _file_identity(path, role)
            if key is None:
                continue
            if key in seen and role == "output":  # an input may be read twice
                other_what, other_path = seen[key]
                same = "" if path == other_path else f" ({other_path})"
                raise OptionError(
                    f"{what} {path} is the {other_what}{same}: refusing to write over it "
                    "(an output is never an input nor another output)"
                )
            seen.setdefault(key, (what, path))


def _file_identity(path, role):
    """What tells ``path`` apart from every other file: (device, inode) of a regular file,
    the absolute path of an output not created yet; None for what is not compared."""
    if path is None or (path == "-" and role == "output"):
        return None
    try:
        st = os.fstat(0) if path == "-" else os.stat(path)
    except (OSError, ValueError):
        if role == "output" and path != "-":
            return ("new", os.path.realpath(path))
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _replaceable_target(path: str):
    """The path to replace atomically, or None when ``path`` must be written directly.

    Symbolic links are followed by hand so that a link into /proc (/dev/fd/N is one, and
    /proc/self/fd/N a "magic" link the kernel resolves to the open file itself) is seen:
    such a path is written through, never replaced.
    """
    current = os.path.abspath(path)
    for _ in range(_MAX_SYMLINKS):
        parent = os.path.realpath(os.path.dirname(current))
        if parent == "/proc" or parent.startswith("/proc/"):
            return None
        current = os.path.join(parent, os.path.basename(current))
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return current  # a new file (possibly the target of a dangling link)
        except OSError:
            return None  # let open() report it
        if stat.S_ISLNK(st.st_mode):
            current = os.path.join(parent, os.readlink(current))
            continue
        return current if stat.S_ISREG(st.st_mode) else None
    return None  # a loop of links: open() reports ELOOP


def _create_temporary(target: str):
    """A new file beside ``target``, created with mode 0o666 so that the kernel applies the
    process umask (the process's umask is never read or changed). When ``target`` exists
    its permission bits are kept, as writing it in place would keep them."""
    directory, base = os.path.split(target)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = os.path.join(directory, f".{base}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)
            break
        except FileExistsError:
            continue
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        return fd, tmp
    try:
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return fd, tmp
