"""The client's side of the cluster: a Dask session, the training set as shards on its
workers, and the rounds that run one task per shard.

Dask is imported only when a :class:`Session` starts (``--scheduler``); without it the
command says how to install it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

import numpy as np

from ..errors import InputError, OptionError
from .shards import load_shard, prepare_shard, shard_size, summarize_shard

SHIP_INLINE = 1 << 16  # vectors up to this size travel inside the tasks, larger ones
# are scattered to every worker first
PLACEMENT_CHECK = 2.0  # seconds between checks that the shards' workers are alive
DASK_MISSING = "--scheduler needs Dask: pip install cpsvm[dask]"


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


class Session:
    """A dask.distributed client on an existing scheduler (``ADDRESS``) or on a
    LocalCluster of N single-threaded worker processes (``local:N``)."""

    def __init__(self, spec: str, timeout=None):
        kind, value = parse_scheduler(spec)
        try:
            import dask
            from distributed import Client, LocalCluster
        except ImportError:
            raise OptionError(DASK_MISSING) from None
        self.cluster = None
        self.scratch = None
        import logging

        if kind == "local":
            # Stealing would copy a shard (and its cache) to an idle worker; with one
            # task per shard and round there is nothing to balance.
            import warnings

            with (
                dask.config.set({"distributed.scheduler.work-stealing": False}),
                warnings.catch_warnings(),
            ):
                warnings.simplefilter("ignore")  # e.g. "port 8787 in use": not ours to say
                # The workers' spill space in a directory of our own, removed on close
                # (Dask's default, dask-scratch-space, stays behind in the temp dir).
                self.scratch = tempfile.mkdtemp(prefix="cpsvm-dask-")
                environ = dict(os.environ)
                self.cluster = LocalCluster(
                    local_directory=self.scratch,
                    n_workers=value,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=logging.CRITICAL,
                )
                # The nannies set their workers' thread variables (OMP_NUM_THREADS, ...)
                # in this process's environment too: the caller's is restored.
                for key in set(os.environ) - set(environ):
                    del os.environ[key]
                os.environ.update(environ)
            self.client = Client(self.cluster)
        else:
            # Dask's connect timeout (distributed.comm.timeouts.connect, 30 s unless
            # configured, e.g. DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=5s).
            timeout = timeout or dask.config.get("distributed.comm.timeouts.connect")
            try:
                self.client = Client(value, timeout=timeout)
            except (OSError, TimeoutError) as e:
                raise InputError(
                    f"cannot reach the Dask scheduler at {value} within "
                    f"{timeout} ({type(e).__name__})"
                ) from None

    @property
    def n_workers(self) -> int:
        return len(self.client.scheduler_info()["workers"])

    def close(self):
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ShardedData:
    """The training set as shards on the workers: loaded once by ``loaders`` (callables
    run on the workers), summarised for the client (sizes, bounds, labels)."""

    def __init__(self, session, loaders, locate=None):
        self.session = session
        client = session.client
        self.locate = locate
        self.loaded = [
            client.submit(load_shard, loader, i, pure=False) for i, loader in enumerate(loaders)
        ]
        self.summaries = client.gather(
            [client.submit(summarize_shard, f, pure=False) for f in self.loaded]
        )
        s = self.summaries
        self.n_examples = sum(x["n"] for x in s)
        self.n_features = max(x["width"] for x in s)
        self.nnz = sum(x["nnz"] for x in s)
        self.col_max = np.zeros(self.n_features)
        for x in s:
            np.maximum(
                self.col_max[: len(x["col_max"])],
                x["col_max"],
                out=self.col_max[: len(x["col_max"])],
            )
        self.row_norm = max(x["row_norm"] for x in s)
        self.max_factor = max(x["max_factor"] for x in s)
        self.shards = None

    def global_line(self, shard, line):
        if line is None or self.locate is None:
            return line
        return self.session.client.submit(self.locate[shard], line, pure=False).result()

    def first_bad(self, key):
        for i, x in enumerate(self.summaries):
            if x[key] is not None:
                line, value = x[key]
                return x["source"], self.global_line(i, line), value
        return None

    def prepare(self, d, bias=0.0, n_classes=0):
        client = self.session.client
        self.shards = [
            client.submit(prepare_shard, f, d, bias, n_classes, pure=False) for f in self.loaded
        ]
        # Waits for them (and fails if one did) without bringing the shards here.
        client.gather([client.submit(shard_size, f, pure=False) for f in self.shards])


class Rounds:
    """Submits one task per shard, gathers, and books the time: compute is the slowest
    task, communication the rest of the round's wall time."""

    def __init__(self, session, shards):
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
        live = self.client.scheduler_info().get("workers", {})
        if self._where is None or any(a not in live for a in self._where.values()):
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
        results = self.client.gather([submit(then, shard, *args) for shard in self.shards])
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
        future = self.client.scatter(w, broadcast=True, hash=False)
        self.communication += time.perf_counter() - t0
        return future

    def ship(self, w):
        """w itself (it travels with each task) or, if large, a future on every worker."""
        return w if w.nbytes <= SHIP_INLINE else self.scatter(w)

    def snapshot(self):
        return self.rounds, self.compute, self.communication
