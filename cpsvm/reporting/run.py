"""The end of every learner's run, the same for each command, the cluster's and the
estimators': training with Ctrl-C (and a cluster's SIGTERM) handled
(:class:`StopOnInterrupt`), the model written atomically (:func:`train_and_save`), the
trace drawn (--plot) and the ending (:func:`finish`): the notes, the warning of a run that
did not converge, exit 130 after an interrupt (the model reached so far written first).
It imports nothing heavy at module level."""

from __future__ import annotations

import sys

from ..errors import Interrupted, Terminated
from .monitor import note
from .statistics import stop_reason

EXIT_INTERRUPTED = 130
# The signals a command's training stops at, as at Ctrl-C (with StopOnInterrupt's
# ``terminate``).
TERMINATING = ("SIGTERM", "SIGHUP", "SIGQUIT")


class StopOnInterrupt:
    """Ctrl-C asks the learner to stop after its current iteration; a second one aborts.
    With ``terminate`` (the commands: batch systems and terminals end a process by
    SIGTERM and SIGHUP), SIGTERM, SIGHUP and SIGQUIT do the same (``terminated`` then
    holds the signal's number; a second one aborts as :class:`~cpsvm.errors.Terminated`).

    Used as ``with StopOnInterrupt() as stop: train(..., should_stop=stop)``; the
    learner then writes the model it has (a valid one) and exits 130 (128 + the signal's
    number after the others). The handler only records the request (and says
    ``message``, unless None): a KeyboardInterrupt raised while a compiled kernel runs
    would surface as numba's SystemError, so the loops ask ``stop()`` between their
    kernel calls.
    """

    def __init__(
        self,
        message="Interrupt: stopping after this iteration (Ctrl-C again to abort)",
        terminate=False,
    ):
        self.message = message
        self.terminate = terminate

    def __enter__(self):
        import signal

        self.requested = False
        self.terminated = 0
        handled = [signal.SIGINT]
        if self.terminate:
            handled += [getattr(signal, name) for name in TERMINATING]
        self._previous = {signum: signal.signal(signum, self._handle) for signum in handled}
        return self

    def _handle(self, signum, frame):
        import signal

        if self.requested:
            if signum != signal.SIGINT:
                raise Terminated(signum)
            raise Interrupted("interrupted (Ctrl-C twice): stopped at once, nothing written")
        self.requested = True
        if signum != signal.SIGINT:
            self.terminated = int(signum)
            name = signal.Signals(signum).name
            note(f"Terminate ({name}): stopping after this iteration (again to abort)")
        elif self.message is not None:
            note(self.message)

    def __call__(self) -> bool:
        return self.requested

    def __exit__(self, *exc):
        import signal

        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        return False


def draw_trace(plot_file, monitor, title: str) -> None:
    """--plot of a run without a C path: the monitor's rows (kept in memory, with or
    without --trace) as the training trace; nothing when --plot was not given."""
    if plot_file is None:
        return
    from ..plotting import plot_trace

    plot_trace(monitor.rows, plot_file, title)


def train_and_save(train, data, params, model_file, monitor, terminate=False):
    """Train with ``monitor`` (progress, -v 2 lines, --trace) and Ctrl-C handling (and
    SIGTERM's, with ``terminate``: :class:`StopOnInterrupt`), then write the model
    atomically: the model reached so far when interrupted (``info.terminated`` set
    when SIGTERM stopped it).

    Returns (info, cpu seconds of training).
    """
    import time

    from ..io.model_file import write_model

    started = time.process_time()
    try:
        with StopOnInterrupt(terminate=terminate) as stop:
            model, info = train(data, params, callback=monitor, should_stop=stop)
        if stop.terminated:
            info.terminated = stop.terminated
        info.class_weights = getattr(model, "class_weights", "")  # (the statistics say them)
    finally:
        monitor.close()
    cpu = time.process_time() - started
    feature_ids = getattr(data, "feature_ids", None)
    if feature_ids is not None:  # trained on renumbered columns: the file's indices
        model.feature_ids = feature_ids
    write_model(model_file, model)
    _report_trace_failure(monitor, model_file)
    return info, cpu


def _report_trace_failure(monitor, model_file) -> None:
    """A --trace file that could not be written to the end, once the model is: an
    OSError naming it (exit 1), unless its reader closed the pipe (``| head``)."""
    import errno

    error = monitor.trace.error if monitor.trace is not None else None
    if error is not None and error.errno != errno.EPIPE:
        raise OSError(
            error.errno,
            f"{error.strerror} (the trace stopped there; the model was written to {model_file})",
            error.filename,
        )


def finish(prog, result, model_file, verbosity, *, notes=(), warn=True, best=False, terminated=0):
    """The end of every learner: its notes on stderr, then after an interrupt the line
    saying where the model reached so far went and exit 130 (128 + the signal's number
    and "terminated (SIGTERM)" when a signal stopped it: ``terminated``, its number),
    else (``warn``) a warning when the run stopped before converging. ``best``: the model
    written is the best point so far (OCAS), not the last."""
    import signal

    for line in notes:
        note(f"Note: {line}")
    if result.status == "interrupted":
        gap = getattr(result, "gap", None)
        at = f" with duality gap {gap:.6g}" if gap is not None else ""
        so_far = "the best model so far" if best else "the model so far"
        how = f"terminated ({signal.Signals(terminated).name})" if terminated else "interrupted"
        note(
            f"{prog}: {how} at iteration {result.iterations}{at}; {so_far} was written "
            f"to {model_file}"
        )
        sys.exit(128 + terminated if terminated else EXIT_INTERRUPTED)
    if warn and result.status != "converged" and verbosity >= 1:
        note(f"Warning: {stop_reason(result.status)}")
