"""The machine's memory, and the refusal of inputs that would not fit in it: a file that
asks for more (a class label of 10^9, a header of 10^12 features) gets one line naming
what was too big and the size it would need, before anything is allocated."""

from __future__ import annotations

import os

from .errors import InputError

_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def physical_memory() -> int:
    """Bytes of RAM this process may use: the machine's, or its cgroup's limit if lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in _CGROUP_LIMITS:
        try:
            with open(path) as f:
                total = min(total, int(f.read().strip()))
        except (OSError, ValueError):  # absent, or "max"
            continue
    return total


def format_bytes(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def check_fits(n_bytes: float, what: str, *, source=None, line=None):
    """InputError unless ``n_bytes`` (what ``what`` needs) fit in this machine's memory."""
    limit = physical_memory()
    if n_bytes > limit:
        raise InputError(
            f"{what} would need {format_bytes(n_bytes)}, more than this machine's memory "
            f"({format_bytes(limit)})",
            source=source,
            line=line,
        )
