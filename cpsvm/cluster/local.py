"""``--scheduler local:N``: a Dask LocalCluster in a process of its own.

``python -m cpsvm.cluster.local N DIRECTORY`` starts N single-threaded worker processes
(their spill space in DIRECTORY), prints the scheduler's address on stdout, and keeps
the cluster until its stdin ends: when the command closes it, or when the command dies
in any way (even SIGKILL), the cluster is closed, every process of it ends and
DIRECTORY is removed.

The command starts this process in a session of its own (:class:`.session.Session`): a
Ctrl-C at the terminal reaches the command alone, which takes it from the first moment
(also while the cluster starts), and nothing Dask does here touches the command's
process: its signal handlers, its environment (the nannies set thread variables such
as OMP_NUM_THREADS), its semaphores.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import threading
import warnings

CLOSE_LIMIT = 20.0  # seconds


def main(argv=None) -> int:
    n, directory = (argv if argv is not None else sys.argv[1:])[:2]
    # The command ends this process by closing its stdin; SIGTERM (a shutdown) closes the
    # cluster too, SIGINT is not for it (a session of its own has no terminal).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit)
    import dask
    from distributed import LocalCluster

    # Stealing would copy a shard (and its cache) to an idle worker; with one task per
    # shard and round there is nothing to balance.
    with (
        dask.config.set({"distributed.scheduler.work-stealing": False}),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")  # e.g. "port 8787 in use": not ours to say
        cluster = LocalCluster(
            local_directory=directory,
            n_workers=int(n),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
        )
    try:
        print(cluster.scheduler_address, flush=True)
        sys.stdin.read()
    finally:
        # A busy cluster can take long to close: past CLOSE_LIMIT seconds, this
        # process's group (its nannies, workers and resource tracker) is killed.
        watchdog = threading.Timer(CLOSE_LIMIT, os.killpg, (os.getpgrp(), signal.SIGKILL))
        watchdog.daemon = True
        watchdog.start()
        cluster.close(timeout=CLOSE_LIMIT / 2)
        # The command removes it too, unless it was killed.
        shutil.rmtree(directory, ignore_errors=True)
    return 0


def _exit(signum, frame):
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    sys.exit(main())
