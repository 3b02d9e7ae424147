"""The client's side of the cluster: a Dask session and the training set as shards on
its workers (the rounds are :mod:`.rounds`).

Every wait on the cluster is bounded (:meth:`Session.wait`): no worker for the worker
timeout, the scheduler gone, or a task whose workers kept dying end the run with
:class:`ClusterLost`; a worker that stops answering (frozen, its heartbeats gone) for
the worker timeout plus the longest task seen is removed from the cluster, which then
runs its tasks on the others as for a lost worker. A local:N cluster's workers run in a
process of their own session (:mod:`.local`), its scheduler here; while a session is
open, SIGTERM unwinds the command (Terminated) so that the session closes.

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

import cpsvm

from ..columns import REMAP_MIN_WIDTH, renumbering_pays, union_maxima
from ..errors import InputError, OptionError, Terminated
from ..memory import physical_memory
from . import WORKER_TIMEOUT
from .local import CLOSE_LIMIT
from .shards import (
    check_first_reading,
    class_counts,
    load_shard,
    prepare_shard,
    shard_columns,
    shard_size,
    summarize_shard,
)

POLL = 1.0  # seconds between checks of the cluster while a round waits
CLOSE_TIMEOUT = 10.0  # seconds for the client to close
START_TIMEOUT = 60.0  # seconds a local cluster may take to start, when it must then close
TERM_GRACE = 5.0  # seconds the local workers' process has to end after SIGTERM
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
        # A worker busy in compiled code may not heartbeat meanwhile: a worker silent
        # for the timeout plus the longest round task so far (before the first round,
        # the shards' reading) is frozen. Neither is known while the shards load.
        self.longest_task = None  # the rounds' (Rounds sets it)
        self.load_seconds = None  # the shards' reading (ShardedData sets it)
        self._heard = {}  # address: (its last heartbeat's time, when that last changed)
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
                # (its scratch space, dask-scratch-space and its locks, in ours)
                scheduler_kwargs={"local_directory": self.scratch},
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
        accepts the connection and never answers. Dask's handshake is tried first on a
        connection of its own: something else listening there (a web server, SSH)
        answers with bytes Dask would read as a message of exabytes, and a Client
        that failed so would hang in its cleanup."""
        import dask
        from dask.utils import parse_timedelta
        from distributed import Client

        timeout = timeout or dask.config.get("distributed.comm.timeouts.connect")
        seconds = parse_timedelta(timeout, default="s")
        reached = {}

        def connect():
            try:
                _handshake(address, seconds)
                reached["client"] = Client(address, timeout=timeout, set_as_default=False)
            except BaseException as e:
                reached["error"] = e

        connector = threading.Thread(target=connect, name="cpsvm-connect", daemon=True)
        connector.start()
        connector.join(2 * seconds + 2.0)  # Client(timeout=) can wait on a mute listener
        error = reached.get("error")
        if "client" in reached:
            self.client = reached["client"]
            return
        if isinstance(error, _NotDask):
            raise InputError(
                f"something at {address} answers, but not as a Dask scheduler does: is it "
                "the scheduler's address, as 'dask scheduler' prints it?"
            )
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
            workers = self.workers()
            if workers:
                alone_since = None
            elif alone_since is None:
                alone_since = now
            elif now - alone_since >= self.worker_timeout:
                raise ClusterLost(
                    f"the Dask cluster has had no worker for {self.worker_timeout:g} s "
                    "(--worker-timeout)"
                )
            for address in self._silent(workers, now):
                self._remove(address)

    def _silent(self, workers, now):
        """The workers whose heartbeat has not changed for the worker timeout plus the
        longest round task so far, or the shards' reading before the first round (the
        client's clock: the scheduler's may differ)."""
        for gone in set(self._heard) - set(workers):
            del self._heard[gone]
        task = self.longest_task if self.longest_task is not None else self.load_seconds
        silent = []
        for address, info in workers.items():
            seen = info.get("last_seen")
            heard = self._heard.get(address)
            if heard is None or heard[0] != seen:
                self._heard[address] = (seen, now)
            elif task is not None and now - heard[1] >= self.worker_timeout + task:
                silent.append(address)
        return silent

    def _remove(self, address):
        """A frozen worker out of the cluster (the scheduler's own removal of a worker
        that does not answer): its tasks run again on the others, its shards read
        again there."""
        self._heard.pop(address, None)
        with self._lost_guard():
            self.client.sync(
                self.client.scheduler.unregister,
                address=address,
                stimulus_id=f"cpsvm-silent-worker-{time.time()}",
            )

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
        directory; SIGTERM's handling ends here. Every step runs, also when one is cut
        short (a second Ctrl-C kills the local workers): what cut it is raised after
        the last."""
        interrupted = None
        steps = (
            self._close_client,
            lambda: self._end_helper(at_once=interrupted is not None),
            self._close_cluster,
        )
        for step in steps:
            try:
                step()
            except BaseException as e:  # (Exception: a scheduler already gone)
                if not isinstance(e, Exception) and interrupted is None:
                    interrupted = e
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None
        if self._open:
            self._open = False
            # (unless the command has put its own handler over ours meanwhile)
            if self._handles_term and signal.getsignal(signal.SIGTERM) is _terminate:
                previous = self._previous_term
                signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
            for logger, level in self._log_levels:
                logger.setLevel(level)
        if interrupted is not None:
            raise interrupted

    def _close_client(self):
        client, self.client = self.client, None
        if client is not None:
            client.close(timeout=CLOSE_TIMEOUT)

    def _end_helper(self, at_once=False):
        helper, self.helper = self.helper, None
        if helper is not None:
            _end_local_workers(helper, at_once)

    def _close_cluster(self):
        cluster, self.cluster = self.cluster, None
        if cluster is not None:
            cluster.close(timeout=CLOSE_TIMEOUT)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _end_local_workers(helper, at_once=False):
    """Close the local workers' process's stdin (it then closes them and exits) and wait.
    If they do not end in time, a second Ctrl-C cuts the wait short, or ``at_once``,
    its process group is terminated: SIGTERM, which ends the workers at once and that
    process through its cleanup, but not multiprocessing's resource tracker (it ignores
    SIGTERM, outlives them and unlinks their semaphores from /dev/shm); SIGKILL only
    for what is left TERM_GRACE seconds later, or at a further Ctrl-C."""
    import subprocess

    for stream in (helper.stdin, helper.stdout):
        try:
            stream.close()
        except OSError:
            pass
    try:
        if at_once:
            raise subprocess.TimeoutExpired(helper.args, 0)
        # They may still be starting (a Ctrl-C from the first moment): start, then close.
        helper.wait(timeout=START_TIMEOUT + CLOSE_LIMIT + 5.0)
    except BaseException as e:
        try:
            _signal_group(helper.pid, signal.SIGTERM)
            helper.wait(timeout=TERM_GRACE)
        except BaseException:
            pass
        finally:
            if helper.poll() is None:
                _signal_group(helper.pid, signal.SIGKILL)
            helper.wait()
        if not isinstance(e, subprocess.TimeoutExpired):
            raise


def _signal_group(group, signum):
    try:
        os.killpg(group, signum)
    except OSError:  # gone already
        pass


class _NotDask(Exception):
    """Something answered at the scheduler's address, not in Dask's protocol."""


def _handshake(address, seconds):
    """Dask's handshake with ``address`` on a connection of its own: OSError or
    TimeoutError if nothing answers in time, _NotDask if what answers is not Dask."""
    import asyncio
    import socket

    from distributed.comm import connect

    host, _, port = address[len("tcp://") :].rpartition(":")
    socket.create_connection((host.strip("[]"), int(port)), timeout=seconds).close()

    async def greet():
        comm = await connect(address, timeout=seconds)
        await comm.close()

    try:
        asyncio.run(asyncio.wait_for(greet(), seconds))
    except (TimeoutError, asyncio.TimeoutError):
        raise TimeoutError from None
    except Exception:  # e.g. MemoryError: a length read from another protocol's bytes
        raise _NotDask from None


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
            # Data the client placed on the workers (not computable again) lost with
            # every worker holding it.
            raise ClusterLost("lost every Dask worker holding the run's data") from None
        return False


class ShardTargets:
    """The shards' targets as cpsvm.problems.labels.DatasetTargets gives a dataset's: the
    first target failing a test (the summaries name its file and line), the counts of
    the classes, the extremes. The workers keep no targets to say more, so a refusal
    carries no hint."""

    def __init__(self, data):
        self.data = data
        self.source = data.summaries[0]["source"]
        self.n_features = data.n_features

    def first_bad(self, test):
        return self.data.first_bad(test)  # the summaries' keys are the tests' names

    def hint(self, test) -> str:
        return ""

    def counts(self):
        s = self.data.summaries
        return sum(x["n_pos"] for x in s), sum(x["n_neg"] for x in s)

    def extremes(self):
        s = self.data.summaries
        largest = max(s, key=lambda x: x["y_max"])
        return min(x["y_min"] for x in s), largest["y_max"], largest["source"], None


class ShardedData:
    """The training set as shards on the workers: loaded once by ``loaders`` (callables
    run on the workers), summarised for the client (sizes, bounds, labels), and, when
    its feature indices are huge or hashed, renumbered to the distinct columns of all
    the shards (``feature_ids``, as a plain run's Dataset; None otherwise)."""

    def __init__(self, session, loaders, locate=None):
        self.session = session
        client = session.client
        self.locate = locate
        started = time.monotonic()
        self.loaded = [
            client.submit(load_shard, loader, i, pure=False) for i, loader in enumerate(loaders)
        ]
        self.summaries = session.gather(
            [client.submit(summarize_shard, f, pure=False) for f in self.loaded]
        )
        session.load_seconds = time.monotonic() - started
        s = self.summaries
        for x in s:
            check_first_reading(x["fingerprints"])
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
        self.max_cost_factor = max(x["max_factor"] for x in s)  # of the cost: tokens
        self.max_factor = self.max_cost_factor  # of C_i/C: times the largest class weight
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

    def targets(self):
        """What the problems' label checks read of the targets (cpsvm.problems.labels):
        the single machine's checks, on the shards' summaries."""
        return ShardTargets(self)

    def first_bad(self, key):
        for i, x in enumerate(self.summaries):
            if x[key] is not None:
                line, value, source = x[key]
                return source, self.global_line(i, line), value
        return None

    def class_counts(self):
        """(labels, counts) of the examples of all the shards (a round)."""
        client = self.session.client
        parts = self.session.gather(
            [client.submit(class_counts, f, pure=False) for f in self.loaded]
        )
        labels = np.unique(np.concatenate([labels for labels, _ in parts]))
        counts = np.zeros(len(labels), dtype=np.int64)
        for part_labels, part_counts in parts:
            counts[np.searchsorted(labels, part_labels)] += part_counts
        return labels, counts

    def prepare(self, d, bias=0.0, n_classes=0, class_weights=None):
        """The shards for a run (:func:`.shards.prepare_shard`); a shard read again later
        (its worker lost) is checked against the fingerprints of its first reading.
        ``class_weights`` {label: weight} of the run (None: none): C_i's bound grows by
        the largest, the same for any sharding."""
        self.max_factor = self.max_cost_factor * (
            1.0 if class_weights is None else max(class_weights.values())
        )
        client = self.session.client
        self.shards = [
            client.submit(
                prepare_shard,
                f,
                d,
                bias,
                n_classes,
                self._run_columns,
                x["fingerprints"],
                class_weights,
                pure=False,
            )
            for f, x in zip(self.loaded, self.summaries)
        ]
        # Waits for them (and fails if one did) without bringing the shards here.
        self.session.gather([client.submit(shard_size, f, pure=False) for f in self.shards])
