"""The rounds of a run, from the client: one task per shard, their partial results
added on the workers along a binary tree of tasks (:mod:`.partials`; the client
receives the root alone), and the vectors the tasks need sent the other way, along a
tree of copies (the client's link carries a vector once, whatever the number of
workers).

Both trees are Dask tasks: a worker lost while a vector travels or partials are added
is a lost worker like any other (Dask runs its tasks again elsewhere, reading its
shard again), and every wait is the session's, bounded (:meth:`.session.Session.wait`).
Dask's own replication (``scatter(broadcast=True)``, ``replicate``) is not used: the
scheduler there retries a worker that died mid-copy for as long as it is listed, with
no bound the client controls.
"""

from __future__ import annotations

import time

from ..errors import InputError
from .partials import add_sums, combine_pair, combine_root
from .session import ClusterLost

SHIP_INLINE = 1 << 16  # bytes: vectors up to this size travel inside the tasks, larger
# ones along the tree of copies
PLACEMENT_CHECK = 2.0  # seconds between checks that the shards' workers are alive


def _copy(value):
    """The task that holds a copy of ``value`` where it runs."""
    return value


class Broadcast:
    """A value on the workers: a copy (future) on each worker holding a shard, made from
    the one the client sent along a binary tree of copies."""

    def __init__(self, copies, root, nbytes):
        self.copies, self.root, self.nbytes = copies, root, nbytes

    def on(self, address):
        """The copy on the worker at ``address`` (any copy if it has none)."""
        return self.copies.get(address, self.root)


class Rounds:
    """Submits one task per shard and the tree that adds their results, waits for the
    root, and books the time: compute is the slowest task, communication the rest of
    the round's wall time."""

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

    def _submit(self, fn, *args, where=None):
        return self.client.submit(
            fn,
            *args,
            pure=False,
            # (a shard not yet placed again after its worker was lost: anywhere; Dask
            # refuses allow_other_workers without workers)
            allow_other_workers=where is not None,
            workers=[where] if where is not None else None,
        )

    def stage(self, fn, *args, combine=add_sums, extra=(), finish=None):
        """``fn(shard, *args)`` on every shard (a :class:`Broadcast` argument: the copy
        on the shard's worker), their (result, seconds) added along a tree by
        ``combine(*extra, a, b)``, then ``finish(root)`` if given: the future of the
        root, on a worker."""
        where = self._placement()
        leaves = []
        for shard in self.shards:
            at = where.get(shard.key)
            shard_args = [a.on(at) if isinstance(a, Broadcast) else a for a in args]
            leaves.append((self._submit(fn, shard, *shard_args, where=at), at))
        while len(leaves) > 2:
            # Adjacent shards first; each sum runs where its left part is.
            paired = [
                (self._submit(combine_pair, combine, extra, a, b, where=at), at)
                for (a, at), (b, _) in zip(leaves[::2], leaves[1::2])
            ]
            leaves = paired + leaves[len(paired) * 2 :]
        if len(leaves) == 1:
            root, at = leaves[0]
            return root if finish is None else self._submit(finish, root, where=at)
        # The last sum and the finish in one task (a hop less on the round's path).
        (a, at), (b, _) = leaves
        return self._submit(combine_root, finish, combine, extra, a, b, where=at)

    def __call__(self, fn, *args, combine=add_sums, extra=(), chained=False, finish=None):
        """One round trip: :meth:`stage` and the client waits for the root. ``chained``:
        ``fn``'s results end with the seconds of a stage they waited for (its slowest
        task), booked as compute too."""
        t0 = time.perf_counter()
        root = self.stage(fn, *args, combine=combine, extra=extra, finish=finish)
        result, slowest = self.result(root)
        if chained:
            slowest += result[-1]
        wall = time.perf_counter() - t0
        name = fn.__name__
        self.by_task[name] = self.by_task.get(name, 0.0) + slowest
        self.rounds += 1
        self.compute += slowest
        self.communication += max(0.0, wall - slowest)
        self.session.longest_task = max(self.session.longest_task or 0.0, slowest)
        return result

    def result(self, future):
        """The future's value, waited for as the session waits; a shard that could not
        be read again (its worker lost: the file deleted, changed, out of reach) ends
        the run as a lost cluster does, with the model so far."""
        try:
            return self.session.result(future)
        except ClusterLost:
            raise
        except InputError as e:
            raise ClusterLost(
                f"lost a Dask worker, and reading its shard again failed: {e}"
            ) from None

    def broadcast(self, value):
        """``value`` on every worker holding a shard, along a binary tree of the workers:
        the client sends it once (inside the root's copy task, so that Dask can form it
        again if its worker is lost); a worker with workers below it holds a copy
        fetched from the one above, and a worker at the tree's edge has its tasks fetch
        the copy above them (a task less on their path)."""
        import dask

        t0 = time.perf_counter()
        addresses = list(dict.fromkeys(self._placement().values())) or [None]
        held = []  # the copy each worker's tasks use
        # The value travels in the first task; Dask's warning about large graphs would
        # only tell the user what this method is for.
        with dask.config.set({"distributed.admin.large-graph-warning-threshold": "1 PiB"}):
            with self.session._lost_guard():
                for i, at in enumerate(addresses):
                    if i == 0:
                        held.append(self._submit(_copy, value, where=at))
                    elif 2 * i + 1 < len(addresses):
                        held.append(self._submit(_copy, held[(i - 1) // 2], where=at))
                    else:
                        held.append(held[(i - 1) // 2])
        self.communication += time.perf_counter() - t0
        return Broadcast(dict(zip(addresses, held)), held[0], value.nbytes)

    def ship(self, w):
        """w itself (it travels with each task) or, if large, a :class:`Broadcast`."""
        return w if w.nbytes <= SHIP_INLINE else self.broadcast(w)

    def snapshot(self):
        return self.rounds, self.compute, self.communication
