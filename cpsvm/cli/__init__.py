"""The commands: one click command per module, run through :func:`common.run`.

Process-wide settings (OPENBLAS_NUM_THREADS=1; the signal handlers and the guarded
standard streams while a command runs; the thread count of --threads, for the run only)
are made by the commands' entry points, ``main()`` -> ``common.run`` ->
``common.configure_process``, not on import: importing cpsvm or any
``cpsvm.cli`` module changes nothing in the process. OpenBLAS reads its thread count
once, when numpy loads it, so the command modules import numpy, scipy, numba and the
library inside the command (never at module level; tests/e2e/test_cli_common.py checks
it): the setting then precedes the first numpy import on every path (console scripts
``cpsvm.cli.learn:main``, ``python -m cpsvm.cli.learn``, bin/*). The same rule keeps
``-h``, ``--version`` and usage errors fast: they import click and nothing heavy.
"""
