"""What a learner shows while it trains: one :class:`Monitor` (the solvers' callback), in
the style of the tool it follows (:class:`MonitorStyle`: SVMstruct's ``Iter`` lines,
svmocas's, ASSET's checks, gradient descent's steps), and the progress bar on a
terminal. tqdm is imported only when a bar is shown."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace


def note(message: str) -> None:
    """A diagnostic line on stderr."""
    print(message, file=sys.stderr)


class _NoBar:
    """What progress() returns when nothing is shown (tqdm is then not even imported)."""

    def update(self, n=1):
        pass

    def set_postfix_str(self, s="", refresh=True):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def progress(total, verbosity: int, desc: str, unit: str = "it"):
    """A tqdm bar on stderr, shown only at verbosity >= 1 and on a terminal."""
    if verbosity < 1 or not sys.stderr.isatty():
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)


@dataclass(frozen=True)
class MonitorStyle:
    """How a learner's progress is shown: ``columns`` of --trace (and --plot's rows), the
    attributes of what the solver reports; ``line(monitor, report)`` its -v 2 line;
    ``postfix(report)`` the bar's; ``bar`` whether a bar is shown, of ``unit``;
    ``counter`` the report's attribute that counts the bar's steps (None: one a report)."""

    columns: tuple
    line: Callable
    postfix: Callable | None = None
    bar: bool = True
    unit: str = "iter"
    counter: str | None = None

    def with_columns(self, more: tuple) -> MonitorStyle:
        """The style with more columns (a cluster's rounds and seconds)."""
        return replace(self, columns=self.columns + tuple(more))


class TraceFile:
    """--trace's file (``-``: standard output), each row flushed so that it can be read
    while training runs. A failed write (a full device, a closed pipe) stops the trace,
    never the training: ``error`` keeps it, for the command to report once the model is
    written."""

    def __init__(self, path):
        self.path = path
        self.error = None
        self.file = sys.stdout if path == "-" else open(path, "w", encoding="utf-8")

    def write(self, text: str) -> None:
        if self.error is not None:
            return
        try:
            self.file.write(text)
            self.file.flush()
        except OSError as e:
            self.error = OSError(e.errno, e.strerror, self.path)

    def close(self) -> None:
        if self.file is sys.stdout:
            return
        try:
            self.file.close()
        except OSError as e:
            self.error = self.error or OSError(e.errno, e.strerror, self.path)


class Monitor:
    """The solvers' callback, by verbosity: 1 a tqdm line on stderr (on a terminal); 2 one
    line per report on stderr instead (the style's); 3 also the iteration's time and,
    when the solver reports them, the QP's and the oracle's. With --trace, a TSV row per
    report (every column of the style); ``keep_rows`` (--plot) keeps them in ``rows`` too,
    as dicts by column. ``total``: the bar's length, when known."""

    def __init__(
        self, style, verbosity: int, trace_path=None, desc="training", total=None, keep_rows=False
    ):
        self.style = style
        self.columns = style.columns
        self.verbosity = verbosity
        self.rows = [] if keep_rows else None
        # At -v 2 the lines replace the bar (both on stderr would interleave).
        shown = verbosity if verbosity < 2 and style.bar else 0
        self.bar = progress(total, shown, desc, style.unit)
        self.trace = TraceFile(trace_path) if trace_path else None
        if self.trace:
            self.trace.write("\t".join(self.columns) + "\n")
        self.last = None
        self.done = 0
        self.timers = {"seconds": 0.0, "seconds_qp": 0.0, "seconds_oracle": 0.0}

    def __call__(self, p):
        self.last = p
        if self.style.counter is None:
            self.bar.update(1)
        else:
            count = getattr(p, self.style.counter)
            self.bar.update(count - self.done)
            self.done = count
        if self.style.postfix is not None:
            self.bar.set_postfix_str(self.style.postfix(p), refresh=False)
        if self.verbosity >= 2:
            note(self.style.line(self, p))
        if self.trace or self.rows is not None:
            values = [getattr(p, c) for c in self.columns]
            if self.rows is not None:
                self.rows.append(dict(zip(self.columns, values)))
            if self.trace:
                self.trace.write(
                    "\t".join(repr(v) if isinstance(v, float) else str(v) for v in values) + "\n"
                )

    def extra_columns(self, p, base) -> str:
        """ ", c=value" of the columns beyond the style's ``base`` ones (a cluster's)."""
        extra = [c for c in self.columns if c not in base]
        return "".join(f", {c}={getattr(p, c)}" for c in extra)

    def timing(self, p) -> str:
        """-v 3: the iteration's seconds and, when reported, the QP's and the oracle's."""
        if self.verbosity < 3:
            return ""
        t = self.timers
        text = f", time={p.seconds - t['seconds']:.4f}s"
        t["seconds"] = p.seconds
        qp, oracle = getattr(p, "seconds_qp", None), getattr(p, "seconds_oracle", None)
        if qp is not None:
            text += f" (QP {qp - t['seconds_qp']:.4f}s"
            t["seconds_qp"] = qp
            if oracle is not None:
                text += f", oracle {oracle - t['seconds_oracle']:.4f}s"
                t["seconds_oracle"] = oracle
            text += ")"
        return text

    def close(self):
        self.bar.close()
        if self.trace:
            self.trace.close()


# -- the styles ----------------------------------------------------------------------------

CUTTING_PLANE_COLUMNS = (
    "iteration",
    "primal",
    "dual",
    "gap",
    "violation",
    "working_set",
    "oracle_calls",
    "seconds",
)


def _cuts_postfix(p) -> str:
    return f"gap={p.gap:.4g} viol={p.violation:.3g} cuts={p.working_set}"


def _struct_line(monitor, p) -> str:
    text = (
        f"Iter {p.iteration}: pval={p.primal:.6g}, dval={p.dual:.6g}, "
        f"gap={p.gap:.6g}, violation={p.violation:.6g}, "
        f"NumConst={p.working_set}, calls={p.oracle_calls}"
    )
    return text + monitor.extra_columns(p, CUTTING_PLANE_COLUMNS) + monitor.timing(p)


def _ocas_line(monitor, p) -> str:
    relative = p.gap / p.primal if p.primal else 0.0
    text = (
        f"{p.iteration:4d}: tim={p.seconds:.3f}, Q_P={p.primal:f}, "
        f"Q_D={p.dual:f}, Q_P-Q_D={p.gap:f}, 1-Q_D/Q_P={relative:f}, "
        f"nza={p.working_set:4d}"
    )
    return text + monitor.extra_columns(p, CUTTING_PLANE_COLUMNS) + monitor.timing(p)


def _asset_line(monitor, check) -> str:
    nan = check.validation_error != check.validation_error
    sample = check.sample_objective == check.sample_objective
    return (
        f"Epoch {check.epoch:.1f}: iteration {check.iteration}, objective estimate "
        f"{check.objective:.6g}"
        + ("" if nan else f", validation error {check.validation_error:.6g}")
        + (f", objective on the rule's sample {check.sample_objective:.6g}" if sample else "")
        + f", {check.seconds:.3f}s"
    )


def _asset_postfix(check) -> str:
    nan = check.validation_error != check.validation_error
    return f"obj~{check.objective:.5g}" + ("" if nan else f" val={check.validation_error:.4g}")


def _gd_line(monitor, step) -> str:
    return f"Iteration {step.iteration}: objective {step.objective:.10g}, step {step.step:g}"


# SVMstruct's Iter lines (cp_learn); sampled_learn's also count kernel evaluations.
STRUCT = MonitorStyle(CUTTING_PLANE_COLUMNS, _struct_line, _cuts_postfix)
SAMPLED = STRUCT.with_columns(("kernel_evaluations",))
# svmocas's lines (ocas_learn).
OCAS = MonitorStyle(CUTTING_PLANE_COLUMNS, _ocas_line, _cuts_postfix)
# ASSET's checks, ten per epoch (asset_learn): a bar of iterations, with ETA.
ASSET = MonitorStyle(
    ("epoch", "iteration", "objective", "validation_error", "seconds", "sample_objective"),
    _asset_line,
    _asset_postfix,
    unit="it",
    counter="iteration",
)
# asset_learn --method gd: a line per step taken, no bar.
GD = MonitorStyle(("iteration", "objective", "step"), _gd_line, bar=False)
