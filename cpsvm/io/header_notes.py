"""What cpsvm records in the comments of a model file's header lines, where SVMlight's
readers (svm_classify's fscanf("%ld%*[^\n]\n")) read past them: the SVMperf loss a
binary model was trained for and its class weights (the "number of training documents"
line), Platt's sigmoid (the "threshold b" line). A model without them is written as
SVMlight writes it."""

from __future__ import annotations

import math
import re

from ..conventions import PERF_ERROR_RATE, PERF_LOSS_NAMES
from ..errors import InputError
from .model_text import format_number


def trained_for(model) -> str:
    """What a binary model trained for one of SVMperf's other losses adds to the comment
    of its 'number of training documents' line, where svm_classify and
    svm_perf_classify read past it: ', trained for -l 10 (ROC area)' (with --p for
    Prec@k and Rec@k). The error rate (-l 2, and every other tool's model) adds
    nothing."""
    loss_id = getattr(model, "loss_id", None)
    if loss_id is None:
        return ""
    fraction = f" --p {format_number(model.k_fraction)}" if model.k_fraction else ""
    return f", trained for -l {loss_id}{fraction} ({PERF_LOSS_NAMES[loss_id]})"


def weights_note(model) -> str:
    """What a model trained with class weights adds to the comment of its 'number of
    training documents' line (after trained_for's): ', class weights 1:5'; nothing
    without them."""
    weights = getattr(model, "class_weights", "")
    return f", class weights {weights}" if weights else ""


def read_weights_note(line: bytes) -> str:
    """The class weights a 'number of training documents' line records ("" if none)."""
    found = re.search(rb", class weights (.*?) *$", line.partition(b"#")[2].rstrip(b"\r\n"))
    return "" if found is None else found.group(1).decode("utf-8", "replace")


def read_trained_for(line: bytes, name):
    """(loss_id, k_fraction) from a 'number of training documents' line, (None, 0.0)
    without the mark; a mark naming no SVMperf loss is an error."""
    found = re.search(rb"trained for -l (\S+)(?: --p (\S+))?", line.partition(b"#")[2])
    if found is None:
        return None, 0.0
    try:
        loss_id = int(found.group(1))
        fraction = float(found.group(2)) if found.group(2) else 0.0
    except ValueError:
        loss_id, fraction = -1, 0.0
    if loss_id not in PERF_LOSS_NAMES or not fraction >= 0 or loss_id == PERF_ERROR_RATE:
        raise InputError(
            f"expected 'trained for -l L' with L one of SVMperf's losses "
            f"{sorted(set(PERF_LOSS_NAMES) - {PERF_ERROR_RATE})}, got "
            f"{found.group(0).decode('utf-8', 'replace')!r}",
            source=name,
            line=9,
        )
    return loss_id, fraction


# Platt's A and B (--probability) in the comment of the "threshold b" line, where
# svm_classify's fscanf("%lf%*[^\n]\n") reads past them.
PLATT_MARK = "Platt's sigmoid"


def platt_note(model) -> str:
    """What a model with Platt's sigmoid adds to its threshold line's comment: '; Platt's
    sigmoid A a B b (P(y=+1|f) = 1/(1+exp(A*f+B)))'; nothing without it."""
    platt = getattr(model, "platt", None)
    if platt is None:
        return ""
    A, B = platt
    return (
        f"; {PLATT_MARK} A {format_number(A)} B {format_number(B)} (P(y=+1|f) = 1/(1+exp(A*f+B)))"
    )


def read_platt(line: bytes, name, line_no):
    """(A, B) from a threshold line's comment, None without the mark; a mark without two
    finite numbers is an error."""
    comment = line.partition(b"#")[2]
    if PLATT_MARK.encode() not in comment:
        return None
    found = re.search(rb"Platt's sigmoid A (\S+) B (\S+)", comment)
    try:
        A, B = (float(found.group(1)), float(found.group(2))) if found else (math.nan, 0.0)
    except ValueError:
        A, B = math.nan, 0.0
    if not (math.isfinite(A) and math.isfinite(B)):
        raise InputError(
            f'expected "{PLATT_MARK} A <number> B <number>" in the comment of the '
            f"threshold line, got {comment.decode('utf-8', 'replace').strip()!r}",
            source=name,
            line=line_no,
        )
    return A, B
