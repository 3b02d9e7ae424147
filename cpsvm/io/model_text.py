"""The text pieces every model file kind is made of (:mod:`cpsvm.io.model_file`): typed
header lines ``value # comment`` and SVMlight's kernel header, the body lines a header
counts, support-vector lines of ``index:value`` features written a piece at a time, and
numbers written so that they read back exactly. Errors name the file and the line.
"""

from __future__ import annotations

import math

from ..errors import InputError

# Header fields after the version line: (what the file's comment says, type).
KERNEL_FIELDS = [
    ("kernel type", int),
    ("kernel parameter -d", int),
    ("kernel parameter -g", float),
    ("kernel parameter -s", float),
    ("kernel parameter -r", float),
    ("kernel parameter -u", str),
    ("highest feature index", int),
    ("number of training documents", int),
    ("number of support vectors plus 1", int),
    ("threshold b", float),
]
SV_HEADER_COMMENT = "threshold b, each following line is a SV (starting with alpha*y)"


def header_lines(raw: bytes, n_fields: int):
    """``(lines, start)``: what ``raw.split(b"\n", n_fields + 1)`` gives for the version
    line and ``n_fields`` header lines, the rest left in ``raw`` from ``start`` (a
    model's weights: tens of megabytes not copied) and its piece in ``lines`` empty."""
    start = 0
    for _ in range(n_fields + 1):
        found = raw.find(b"\n", start)
        if found < 0:
            return raw.split(b"\n"), len(raw)
        start = found + 1
    return raw[:start].split(b"\n"), start


def read_header(lines, fields, name):
    """The typed values of header lines 2.. (``value # comment``), per ``fields``."""
    header = {}
    for k, (label, typ) in enumerate(fields):
        line_no = k + 2
        at_end = k + 1 >= len(lines) or (k + 2 == len(lines) and not lines[k + 1].strip())
        if at_end:
            raise InputError(
                f"expected '{label}', found the end of the file (truncated model file?)",
                source=name,
                line=line_no,
            )
        text = lines[k + 1].decode("utf-8", "replace")
        if typ is dict:
            header[label] = json_value(text, label, name, line_no)
            continue
        value_text = text.split("#", 1)[0].strip()
        try:
            header[label] = value_text if typ is str else typ(value_text)
        except ValueError:
            raise InputError(
                f"expected '{label}' ({typ.__name__}), got {text.strip()!r}",
                source=name,
                line=line_no,
            ) from None
    return header


def json_value(text, label, name, line_no):
    """A JSON object at the start of ``text``, then only a ``# comment``."""
    import json

    try:
        value, end = json.JSONDecoder().raw_decode(text.strip())
    except ValueError:
        value, end = None, 0
    rest = text.strip()[end:].strip()
    if not isinstance(value, dict) or (rest and not rest.startswith("#")):
        raise InputError(
            f"expected '{label}' (a JSON object), got {text.strip()!r}", source=name, line=line_no
        )
    return value


def body_rows(lines, n_fields, count, what, name) -> list:
    """The text lines after a header of ``n_fields`` lines (trailing blank ones dropped),
    which must be ``count`` as the header says."""
    first = n_fields + 2
    body = lines[n_fields + 1].decode("utf-8", "replace") if len(lines) > n_fields + 1 else ""
    rows = body.split("\n")
    while rows and not rows[-1].strip():
        rows.pop()
    if len(rows) != count:
        why = "truncated model file?" if len(rows) < count else "extra lines"
        raise InputError(
            f"expected {count} {what} as the header says, found {len(rows)} ({why})",
            source=name,
            line=first + len(rows),
        )
    return rows


def format_number(v) -> str:
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"refusing to write a non-finite number ({v}) into a model file")
    text = repr(v)  # shortest text that reads back to the same double
    return text[:-2] if text.endswith(".0") else text


def kernel_header(
    kernel, dim: int, n_train: int, n_sv: int, b: float, trained_for: str = ""
) -> list:
    return [
        f"{kernel.kind} # kernel type",
        f"{kernel.degree} # kernel parameter -d ",
        f"{format_number(kernel.gamma)} # kernel parameter -g ",
        f"{format_number(kernel.coef_lin)} # kernel parameter -s ",
        f"{format_number(kernel.coef_const)} # kernel parameter -r ",
        "empty# kernel parameter -u ",
        f"{dim} # highest feature index ",
        f"{n_train} # number of training documents{trained_for} ",
        f"{n_sv + 1} # number of support vectors plus 1 ",
        f"{format_number(b)} # {SV_HEADER_COMMENT}",
    ]


# A support vector's line is formatted this many features at a time: a weight vector's
# line can hold millions (a multiclass model: k·d), and its text at once took several
# times its size in Python strings.
FEATURES_PER_PIECE = 1 << 16


def sv_line(coef: float, indices=None, values=None, prefix="", comment="", text=None):
    """The line of one support vector, as pieces of text (see format_model); its features
    as ``indices`` and ``values`` or already formatted (``text``)."""
    yield " ".join([format_number(coef)] + ([prefix] if prefix else []))
    if text is not None:
        if text:
            yield " " + text
    else:
        for lo in range(0, len(indices), FEATURES_PER_PIECE):
            yield " " + format_features(
                indices[lo : lo + FEATURES_PER_PIECE], values[lo : lo + FEATURES_PER_PIECE]
            )
    yield " #" + comment


def nonzero_entries(w):
    import numpy as np

    idx = np.flatnonzero(w)
    return idx, w[idx]


def format_features(indices, values) -> str:
    from .float_text import format_example

    return format_example(indices, values)
