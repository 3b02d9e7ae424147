"""The client's side of the cluster: a Dask session, the training set as shards on its
workers, and the rounds that run one task per shard.

Every wait on the cluster is bounded (:meth:`Session.gather`): no worker for the
worker timeout, the scheduler gone, or a task whose workers kept dying end the run
with :class:`ClusterLost`. A local:N cluster's workers run in a process of their own
session (:mod:`.local`), its scheduler here; while a session is open, SIGTERM unwinds
the command (Terminated) so that the session closes.

Dask is imported only when a :class:`Session` starts (``--scheduler``); without it the
command says how to install it.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
import threading
import time

import numpy as np

from ..columns import REMAP_MIN_WIDTH, renumbering_pays, union_maxima
from ..errors import InputError, OptionError, Terminated
from . import WORKER_TIMEOUT
from .local import CLOSE_LIMIT
from .shards import load_shard, prepare_shard, shard_columns, shard_size, summarize_shard

SHIP_INLINE = 1 << 16  # vectors up to this size travel inside the tasks, larger ones
# are scattered to every worker first
PLACEMENT_CHECK = 2.0  # seconds between checks that the shards' workers are alive
POLL = 1.0  # seconds between checks of the cluster while a round waits
CLOSE_TIMEOUT = 10.0  # seconds for the client to close
START_TIMEOUT = 60.0  # seconds a local cluster may take to start, when it must then close
DASK_MISSING = "--scheduler needs Dask: pip install cpsvm[dask]"


class ClusterLost(InputError):
    """The cluster went away mid-run: no worker for the worker timeout, the scheduler
    gone, or a task whose workers kept dying (exit 1). The solver attaches the model
    reached so far (``model``, None if none) and the iterations done before it is
    raised on; the command writes that model."""

    def __init__(self, reason: str):
        super().__init__(f"{reason}; no model was written")
        self.reason = reason
        self.model = None
        self.iterations = 0


def local_worker_limit() -> int:
    """The most workers local:N starts: four a core, and 256 MiB of memory each."""
    from ..memory import physical_memory

    return max(1, min(4 * (os.cpu_count() or 1), physical_memory() // (256 << 20)))


def parse_scheduler(spec: str):
    """('local', N) for ``local:N``, else ('address', tcp://host:port), checked before
    anything connects or starts (OptionError: exit 2)."""
    if spec.startswith("local:"):
        try:
            n = int(spec[6:])
        except ValueError:
            n = 0
        if n < 1:
            raise OptionError(f"expected --scheduler local:N with N >= 1 workers, got {spec!r}")
        limit = local_worker_limit()
        if n > limit:
            raise OptionError(
                f"expected --scheduler local:N with at most {limit} workers on this machine "
                f"({os.cpu_count()} cores), got {spec!r}"
            )
        return "local", n
    scheme, sep, rest = spec.rpartition("://")
    if not sep:
        scheme, rest = "tcp", spec
    host, colon, port = rest.rpartition(":")
    if scheme != "tcp" or not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise OptionError(
            "expected --scheduler tcp://HOST:PORT (as 'dask scheduler' prints it; tls:// and "
            f"other protocols are not supported) or local:N, got {spec!r}"
        )
    return "address", f"tcp://{host}:{port}"


def _lost_errors():
    """The exceptions by which Dask says the cluster (not a task) failed."""
    from concurrent.futures import CancelledError

    from distributed.comm.core import CommClosedError
    from distributed.scheduler import KilledWorker

    return CancelledError, CommClosedError, KilledWorker


class Session:
    """A dask.distributed client on an existing scheduler (``ADDRESS``) or on a local
    cluster of N single-threaded worker processes (``local:N``).

    Every wait on the cluster goes through :meth:`gather`, which gives up (ClusterLost)
    when the scheduler is gone or no worker has been seen for ``worker_timeout``
    seconds. While the session is open, SIGTERM unwinds the command (Terminated) so
    that :meth:`close` runs.
    """

    def __init__(self, spec: str, timeout=None, worker_timeout=WORKER_TIMEOUT):
        kind, value = parse_scheduler(spec)
        try:
            import dask  # noqa: F401
            import distributed  # noqa: F401
        except ImportError:
            raise OptionError(DASK_MISSING) from None
        self.helper = None
        self.cluster = None
        self.client = None
        self.scratch = None
        self.worker_timeout = float(worker_timeout)
        self.address = value if kind == "address" else None
        # (Python sets handlers from the main thread only; a session started elsewhere,
        # from a library caller's thread, leaves SIGTERM alone.)
        self._handles_term = threading.current_thread() is threading.main_thread()
        if self._handles_term:
            self._previous_term = signal.signal(signal.SIGTERM, _terminate)
        self._open = True
        # Dask logs what goes wrong on the cluster as tracebacks (a reconnect to a lost
        # scheduler, say); the command says it in one line.
        self._log_levels = _quiet_logs()
        try:
            if kind == "local":
                self._start_local(value)
            else:
                self._connect(value, timeout)
        except BaseException:
            self.close()
            raise

    def _start_local(self, n):
        """A local cluster: the scheduler here (a LocalCluster without workers: a round
        trip stays in this process), its n single-threaded workers run by a process
        of their own in a session of their own (:mod:`.local`): a Ctrl-C at the
        terminal reaches this process only, which takes it from the first moment; the
        workers end when :meth:`close` closes that process's stdin, or when this
        process dies."""
        import subprocess
        import sys
        import warnings

        import dask
        from distributed import Client, LocalCluster

        import cpsvm

        # The workers' spill space in a directory of our own, removed on close (Dask's
        # default, dask-scratch-space, stays behind in the temp dir).
        self.scratch = tempfile.mkdtemp(prefix="cpsvm-dask-")
        log = os.path.join(self.scratch, "workers.log")
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.abspath(cpsvm.__file__)))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        with open(log, "wb") as err:
            self.helper = subprocess.Popen(
                [sys.executable, "-m", "cpsvm.cluster.local", str(n), self.scratch],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,
                env=env,
            )
        # Stealing would copy a shard (and its cache) to an idle worker; with one task
        # per shard and round there is nothing to balance.
        with (
            dask.config.set({"distributed.scheduler.work-stealing": False}),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore")  # e.g. "port 8787 in use": not ours to say
            self.cluster = LocalCluster(
                n_workers=0,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.CRITICAL,
            )
        address = self.cluster.scheduler_address
        try:
            self.helper.stdin.write(f"{address}\n".encode())
            self.helper.stdin.flush()
        except OSError:  # it ended already: its log says why
            pass
        if self.helper.stdout.readline().strip() != b"ready":
            with open(log, "rb") as f:
                lines = f.read().decode(errors="replace").strip().splitlines()
            raise InputError(
                f"the local Dask cluster's workers (--scheduler local:{n}) did not start"
                + (f": {lines[-1]}" if lines else "")
            )
        self.client = Client(address, set_as_default=False)

    def _connect(self, address, timeout):
        """A client of the scheduler at ``address``, within Dask's connect timeout
        (distributed.comm.timeouts.connect, 30 s unless configured, e.g.
        DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=5s), also when something there
        accepts the connection and never answers."""
        import dask
        from dask.utils import parse_timedelta
        from distributed import Client

        timeout = timeout or dask.config.get("distributed.comm.timeouts.connect")
        seconds = parse_timedelta(timeout, default="s")
        reached = {}

        def connect():
            try:
                reached["client"] = Client(address, timeout=timeout, set_as_default=False)
            except BaseException as e:
                reached["error"] = e

        connector = threading.Thread(target=connect, name="cpsvm-connect", daemon=True)
        connector.start()
        connector.join(seconds + 2.0)  # Client(timeout=) can wait on a mute listener
        error = reached.get("error")
        if "client" in reached:
            self.client = reached["client"]
            return
        if connector.is_alive() or isinstance(error, (OSError, TimeoutError)):
            what = type(error).__name__ if error is not None else "no answer"
            raise InputError(
                f"cannot reach the Dask scheduler at {address} within {timeout} ({what})"
            )
        raise error

    @property
    def n_workers(self) -> int:
        return len(self.workers())

    def workers(self) -> dict:
        """The scheduler's workers (address: info), asked now."""
        with self._lost_guard():
            if self.client.status != "running":
                raise ClusterLost(self._scheduler_lost())
            return self.client.scheduler_info()["workers"]

    def _scheduler_lost(self):
        if self.address is None:
            return "lost the local Dask cluster's scheduler"
        return f"lost the Dask scheduler at {self.address}"

    def _lost_guard(self):
        return _LostGuard(self)

    def gather(self, futures):
        """The futures' results, as client.gather, waiting at most ``worker_timeout``
        seconds while the cluster has no worker (then ClusterLost, as when the
        scheduler goes away). A task's own error is raised as it is."""
        self.wait(futures)
        with self._lost_guard():
            return self.client.gather(futures)

    def result(self, future):
        return self.gather([future])[0]

    def run(self, fn, *args):
        """fn(*args) on a worker, waited for as :meth:`gather`."""
        return self.result(self.client.submit(fn, *args, pure=False))

    def wait(self, futures):
        """Until every future is done (or one failed), checking the cluster every POLL
        seconds; the wait is interruptible (Ctrl-C)."""
        done = threading.Event()
        left = [len(futures)]
        lock = threading.Lock()

        def finished(future):
            with lock:
                left[0] -= 1
                if left[0] <= 0 or future.status != "finished":
                    done.set()

        for f in futures:
            f.add_done_callback(finished)
        if not futures:
            return
        alone_since = None
        while not done.wait(POLL):
            now = time.monotonic()
            if self.workers():
                alone_since = None
            elif alone_since is None:
                alone_since = now
            elif now - alone_since >= self.worker_timeout:
                raise ClusterLost(
                    f"the Dask cluster has had no worker for {self.worker_timeout:g} s "
                    "(--worker-timeout)"
                )

    def scatter(self, w):
        """w on every worker (a future), waiting for a worker as :meth:`gather`."""
        with self._lost_guard():
            try:
                return self.client.scatter(
                    w, broadcast=True, hash=False, timeout=self.worker_timeout
                )
            except TimeoutError:
                raise ClusterLost(
                    f"the Dask cluster has had no worker for {self.worker_timeout:g} s "
                    "(--worker-timeout)"
                ) from None

    def keep(self, value):
        """``value`` for the whole run, as the result of a task that carries it: the
        scheduler computes it again on any worker when every worker holding it is gone
        (data scattered once would be lost with the workers present at the start)."""
        import dask

        # The value travels in the task once; Dask's warning about large graphs
        # would only tell the user what this method is for.
        with dask.config.set({"distributed.admin.large-graph-warning-threshold": "1 PiB"}):
            with self._lost_guard():
                return self.client.submit(np.asarray, value, pure=False)

    def close(self):
        """Close the client and a local cluster (bounded waits) and remove the scratch
        directory; SIGTERM's handling ends here."""
        try:
            if self.client is not None:
                try:
                    self.client.close(timeout=CLOSE_TIMEOUT)
                except Exception:  # a scheduler already gone: nothing to tell it
                    pass
                self.client = None
            if self.helper is not None:
                _end_local_workers(self.helper)
                self.helper = None
            if self.cluster is not None:
                try:
                    self.cluster.close(timeout=CLOSE_TIMEOUT)
                except Exception:
                    pass
                self.cluster = None
            if self.scratch is not None:
                shutil.rmtree(self.scratch, ignore_errors=True)
                self.scratch = None
        finally:
            if self._open:
                self._open = False
                if self._handles_term:
                    previous = self._previous_term
                    signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
                for logger, level in self._log_levels:
                    logger.setLevel(level)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _end_local_workers(helper):
    """Close the local workers' process's stdin (it then closes them and exits) and wait;
    its whole process group is killed if it does not end in time, or if a second
    Ctrl-C cuts the wait short."""
    import subprocess

    for stream in (helper.stdin, helper.stdout):
        try:
            stream.close()
        except OSError:
            pass
    try:
        # They may still be starting (a Ctrl-C from the first moment): start, then close.
        helper.wait(timeout=START_TIMEOUT + CLOSE_LIMIT + 5.0)
    except BaseException as e:
        try:
            os.killpg(helper.pid, signal.SIGKILL)
        except OSError:
            pass
        helper.wait()
        if not isinstance(e, subprocess.TimeoutExpired):
            raise


def _quiet_logs():
    """Dask's loggers silenced; their levels before."""
    names = [n for n in logging.root.manager.loggerDict if n.split(".")[0] == "distributed"]
    loggers = [logging.getLogger(n) for n in ["distributed", *names]]
    levels = [(logger, logger.level) for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    return levels


def _terminate(signum, frame):
    raise Terminated


class _LostGuard:
    """Dask's signs of a lost cluster, raised as ClusterLost."""

    def __init__(self, session):
        self.session = session

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if kind is None or not issubclass(kind, Exception) or kind is ClusterLost:
            return False
        cancelled, closed, killed = _lost_errors()
        if issubclass(kind, killed):
            raise ClusterLost(
                "the Dask workers running a task kept dying (Dask's allowed-failures)"
            ) from None
        client = self.session.client
        if issubclass(kind, closed) or (client is not None and client.status != "running"):
            raise ClusterLost(self.session._scheduler_lost()) from None
        if issubclass(kind, cancelled):
            if "scheduler-connection-lost" in str(error):
                raise ClusterLost(self.session._scheduler_lost()) from None
            # A vector shipped for a round (scattered, not computable again) lost with
            # every worker holding it.
            raise ClusterLost("lost every Dask worker holding the run's data") from None
        return False


class ShardedData:
    """The training set as shards on the workers: loaded once by ``loaders`` (callables
    run on the workers), summarised for the client (sizes, bounds, labels), and, when
    its feature indices are huge or hashed, renumbered to the distinct columns of all
    the shards (``feature_ids``, as a plain run's Dataset; None otherwise)."""

    def __init__(self, session, loaders, locate=None):
        self.session = session
        client = session.client
        self.locate = locate
        self.loaded = [
            client.submit(load_shard, loader, i, pure=False) for i, loader in enumerate(loaders)
        ]
        self.summaries = session.gather(
            [client.submit(summarize_shard, f, pure=False) for f in self.loaded]
        )
        s = self.summaries
        self.n_files = sum(x["files"] for x in s)
        self.n_examples = sum(x["n"] for x in s)
        self.n_features = max(x["width"] for x in s)
        self.nnz = sum(x["nnz"] for x in s)
        self.feature_ids = None  # the original indices of renumbered columns
        self._run_columns = None  # feature_ids on the cluster (a future)
        if self.n_features < REMAP_MIN_WIDTH:
            self.col_max = np.zeros(self.n_features)
            for x in s:
                np.maximum(
                    self.col_max[: len(x["col_max"])],
                    x["col_max"],
                    out=self.col_max[: len(x["col_max"])],
                )
        else:
            self._distinct_columns()
        for x in s:  # the client keeps the merged bounds only
            x["col_max"] = x["columns"] = x["present"] = None
        self.row_norm = max(x["row_norm"] for x in s)
        self.max_factor = max(x["max_factor"] for x in s)
        self.shards = None

    def _distinct_columns(self):
        """A width of 2^20 or more: the run is renumbered to the distinct columns of all
        the shards (``feature_ids``) when the single machine's rule
        (:func:`cpsvm.columns.worth_renumbering`) holds for their union, as a plain
        run's reading renumbers the whole file. The shards that renumbered their own
        columns sent them; the others' bounds (and wide ones' bitmaps) give a lower
        bound of the union, which settles the rule for a dense file without another
        round; otherwise narrow shards list their columns (a round of their own)."""
        s = self.summaries
        width = self.n_features
        kept = [x for x in s if x["columns"] is None]  # the file's columns
        own = [x for x in s if x["columns"] is not None]  # their own distinct columns
        kept_max = np.zeros(max((x["width"] for x in kept), default=0))
        for x in kept:
            np.maximum(kept_max[: x["width"]], x["col_max"], out=kept_max[: x["width"]])
        seen = np.zeros(len(kept_max), bool)
        for x in kept:
            if x["present"] is not None:
                seen[: x["width"]] |= np.unpackbits(x["present"], count=x["width"]).view(bool)
            else:  # a narrow shard: its non-zero bounds
                seen[: x["width"]] |= x["col_max"] > 0
        lower = max([int(np.count_nonzero(seen))] + [len(x["columns"]) for x in own])
        if renumbering_pays(width, lower):
            narrow = [i for i, x in enumerate(s) if x["columns"] is None and x["present"] is None]
            listed = self.session.gather(
                [
                    self.session.client.submit(shard_columns, self.loaded[i], pure=False)
                    for i in narrow
                ]
            )
            for ids in listed:  # a value of 0 stored makes a column too
                seen[ids] = True
            kept_ids = np.flatnonzero(seen)
            ids, col_max = union_maxima(
                [(kept_ids, kept_max[kept_ids])] + [(x["columns"], x["col_max"]) for x in own]
            )
            if renumbering_pays(width, len(ids)):
                self.feature_ids, self.col_max, self.n_features = ids, col_max, len(ids)
                self._run_columns = self.session.keep(ids)
                return
        if len(kept_max) == width:
            self.col_max = kept_max
        else:
            self.col_max = np.zeros(width)
            self.col_max[: len(kept_max)] = kept_max
        for x in own:
            self.col_max[x["columns"]] = np.maximum(self.col_max[x["columns"]], x["col_max"])

    def global_line(self, shard, line):
        if line is None or self.locate is None:
            return line
        return self.session.run(self.locate[shard], line)

    def first_bad(self, key):
        for i, x in enumerate(self.summaries):
            if x[key] is not None:
                line, value, source = x[key]
                return source, self.global_line(i, line), value
        return None

    def prepare(self, d, bias=0.0, n_classes=0):
        client = self.session.client
        self.shards = [
            client.submit(prepare_shard, f, d, bias, n_classes, self._run_columns, pure=False)
            for f in self.loaded
        ]
        # Waits for them (and fails if one did) without bringing the shards here.
        self.session.gather([client.submit(shard_size, f, pure=False) for f in self.shards])


class Rounds:
    """Submits one task per shard, gathers, and books the time: compute is the slowest
    task, communication the rest of the round's wall time."""

    def __init__(self, session, shards):
        self.session = session
        self.client = session.client
        self.shards = shards
        self.rounds = 0
        self.compute = 0.0
        self.communication = 0.0
        self._where = None
        self._checked = 0.0
        self.by_task = {}  # compute seconds of each kind of round

    def _placement(self):
        """The worker holding each shard: its tasks run there (a shard copied elsewhere
        would leave its cache behind). Asked again, at most every PLACEMENT_CHECK
        seconds (each asking is a round trip), when one of them has left; until then
        a task pinned to a lost worker runs where the scheduler puts its shard."""
        now = time.monotonic()
        if self._where is not None and now - self._checked < PLACEMENT_CHECK:
            return self._where
        self._checked = now
        live = self.session.workers()
        if self._where is None or any(a not in live for a in self._where.values()):
            with self.session._lost_guard():
                held = self.client.who_has(self.shards)
            self._where = {s.key: held[s.key][0] for s in self.shards if held.get(s.key)}
        return self._where

    def __call__(self, fn, *args):
        return self.chained(None, (), fn, *args)

    def chained(self, first, first_args, then, *args):
        """One round trip: ``then`` on every shard, after (if given) ``first`` on every
        shard, whose results ``then`` gets as its last argument, all of them (they
        travel between the workers; ``then`` returns the slowest of them last)."""
        t0 = time.perf_counter()
        where = self._placement()

        def submit(fn, shard, *extra):
            return self.client.submit(
                fn,
                shard,
                *extra,
                pure=False,
                allow_other_workers=True,
                workers=[where[shard.key]] if shard.key in where else None,
            )

        if first is not None:
            stage = [submit(first, shard, *first_args) for shard in self.shards]
            args = args + (stage,)
        results = self.session.gather([submit(then, shard, *args) for shard in self.shards])
        wall = time.perf_counter() - t0
        slowest = max(seconds + (r[-1] if first is not None else 0.0) for r, seconds in results)
        name = then.__name__
        self.by_task[name] = self.by_task.get(name, 0.0) + slowest
        self.rounds += 1
        self.compute += slowest
        self.communication += max(0.0, wall - slowest)
        return [r for r, _ in results]

    def scatter(self, w):
        t0 = time.perf_counter()
        future = self.session.scatter(w)
        self.communication += time.perf_counter() - t0
        return future

    def ship(self, w):
        """w itself (it travels with each task) or, if large, a future on every worker."""
        return w if w.nbytes <= SHIP_INLINE else self.scatter(w)

    def snapshot(self):
        return self.rounds, self.compute, self.communication
