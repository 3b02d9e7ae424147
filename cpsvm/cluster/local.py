"""``--scheduler local:N``: the workers of a local cluster, in a process of their own.

``python -m cpsvm.cluster.local N DIRECTORY`` reads the address of a scheduler on its
first line of stdin (the command runs the scheduler in its own process, and starts this
one first, so that its imports overlap the scheduler's start), starts N
single-threaded worker processes for it (each under its nanny, their spill space in
DIRECTORY), prints ``ready``, and keeps them until its stdin ends: when the command
closes it, or when the command dies in any way (even SIGKILL), the workers are closed,
every process of this one's group ends and DIRECTORY is removed.

The command starts this process in a session of its own (:class:`.session.Session`): a
Ctrl-C at the terminal reaches the command alone, which takes it from the first moment
(also while the workers start), and nothing Dask does here touches the command's
process: its signal handlers, its environment (the nannies set thread variables such
as OMP_NUM_THREADS), its semaphores. The scheduler stays in the command's process,
where a round trip costs no more than before.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import sys
import threading

CLOSE_LIMIT = 20.0  # seconds


async def _serve(n, directory):
    from distributed import Nanny
    from distributed.system import MEMORY_LIMIT

    address = sys.stdin.readline().strip()
    if not address:
        return

    nannies = [
        Nanny(
            address,
            nthreads=1,
            local_directory=directory,
            memory_limit=MEMORY_LIMIT // n,
            silence_logs=logging.CRITICAL,
        )
        for _ in range(n)
    ]
    loop = asyncio.get_running_loop()
    ended = asyncio.Event()

    def wait_for_eof():
        sys.stdin.read()
        loop.call_soon_threadsafe(ended.set)

    threading.Thread(target=wait_for_eof, daemon=True).start()
    try:
        await asyncio.gather(*nannies)
        print("ready", flush=True)
        await ended.wait()
    finally:
        # A busy worker can take long to close: past CLOSE_LIMIT seconds, this
        # process's group (its nannies, workers and resource tracker) is killed.
        watchdog = threading.Timer(CLOSE_LIMIT, os.killpg, (os.getpgrp(), signal.SIGKILL))
        watchdog.daemon = True
        watchdog.start()
        await asyncio.gather(
            *(nanny.close(timeout=CLOSE_LIMIT / 2) for nanny in nannies),
            return_exceptions=True,
        )


def main(argv=None) -> int:
    n, directory = (argv if argv is not None else sys.argv[1:])[:2]
    # The command ends this process by closing its stdin; SIGTERM (a shutdown) closes the
    # workers too, SIGINT is not for it (a session of its own has no terminal).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit)
    try:
        asyncio.run(_serve(int(n), directory))
    finally:
        # The command removes it too, unless it was killed.
        shutil.rmtree(directory, ignore_errors=True)
    return 0


def _exit(signum, frame):
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    sys.exit(main())
