import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from cpsvm.data import Dataset

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "data" / "samples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
KERNEL_LOG = "CPSVM_KERNEL_LOG"


# -- every kernel call of the suite runs compiled ahead of time ----------------------------
# The controller points $CPSVM_KERNEL_LOG at a file of its own before the workers start:
# the workers and every command they run inherit it, and a kernel that numba compiles at
# run time writes its signature there (cpsvm.compiled). A run that set the variable
# itself is collecting signatures (python -m cpsvm.compiled.build --add LOG): no check.


def pytest_configure(config):
    if hasattr(config, "workerinput") or os.environ.get(KERNEL_LOG):
        return
    config._kernel_log = Path(tempfile.mkdtemp(prefix="cpsvm-kernel-log-")) / "kernels.log"
    os.environ[KERNEL_LOG] = str(config._kernel_log)


def pytest_sessionfinish(session, exitstatus):
    log = getattr(session.config, "_kernel_log", None)
    if log is None or not log.exists():
        return
    lines = sorted(set(log.read_text().splitlines()))
    if not lines:
        return
    from cpsvm.compiled import library

    reason = library().reason or "their argument types are not in cpsvm/compiled/signatures.txt"
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = (
        f"{len(lines)} kernel signatures ran under numba's compiler, not compiled ahead of "
        f"time ({reason}); add them with `python -m cpsvm.compiled.build --add {log}` "
        "and rebuild (make test does):\n" + "\n".join(lines[:40])
    )
    if reporter is not None:
        reporter.write_line(message, red=True)
    else:
        print(message, file=sys.stderr)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def samples():
    return SAMPLES


@pytest.fixture
def fixtures():
    return FIXTURES


@pytest.fixture(scope="module")
def own_tmpdir(tmp_path_factory, request):
    """A $TMPDIR of the test module's own for every process it starts (the cluster
    tests': Dask's scheduler and workers, local clusters, the commands), so that what
    one leaves there, or looks for there, is never another pytest worker's."""
    folder = tmp_path_factory.mktemp(f"tmp-{request.module.__name__}")
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = None  # read $TMPDIR again
    yield folder
    if saved is None:
        del os.environ["TMPDIR"]
    else:
        os.environ["TMPDIR"] = saved
    tempfile.tempdir = None


def run_cli_process(module, *args, stdin=None, cwd=None):
    """Run ``python -m cpsvm.cli.<module> args`` as users do; returns CompletedProcess."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", f"cpsvm.cli.{module}", *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def run_cli(module, *args, stdin=None, cwd=None):
    """The command ``cpsvm.cli.<module>`` run on ``args`` as its console script runs it,
    in this process: its standard streams, working directory, environment, signal
    handlers and warning filters swapped for the call and restored; returns what
    :func:`run_cli_process` returns (exit status, stdout, stderr; an exception that
    escapes the command's own handling is exit 1 with its traceback, as in a process).
    A cluster run (--scheduler) starts processes of its own: it runs in a process."""
    args = [str(a) for a in args]
    if "--scheduler" in args:
        return run_cli_process(module, *args, stdin=stdin, cwd=cwd)
    import importlib
    import io
    import traceback
    import warnings

    main = importlib.import_module(f"cpsvm.cli.{module}").main
    out, err = io.BytesIO(), io.BytesIO()
    streams = (sys.stdin, sys.stdout, sys.stderr)
    sys.stdin = io.TextIOWrapper(io.BytesIO((stdin or "").encode()), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    environ, directory = dict(os.environ), os.getcwd()
    interrupt = signal.getsignal(signal.SIGINT)
    code = 0
    try:
        with warnings.catch_warnings():
            os.chdir(cwd or directory)
            try:
                main(args)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except Exception:
                traceback.print_exc()
                code = 1
    finally:
        for stream in (sys.stdin, sys.stdout, sys.stderr):
            stream.flush()
            stream.detach()  # a collected wrapper would close its buffer
        sys.stdin, sys.stdout, sys.stderr = streams
        os.chdir(directory)
        os.environ.clear()
        os.environ.update(environ)
        signal.signal(signal.SIGINT, interrupt)
    return subprocess.CompletedProcess(
        [module, *args],
        code,
        out.getvalue().decode("utf-8", "replace"),
        err.getvalue().decode("utf-8", "replace"),
    )


@pytest.fixture
def cli():
    return run_cli


def interrupt_cli(module, args, trace, rows=5, sig=signal.SIGINT):
    """Start ``python -m cpsvm.cli.<module> args`` (which writes ``trace``), send Ctrl-C
    (or ``sig``) once the trace has ``rows`` lines (or the command ended), and return
    (exit status, stdout, stderr)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", f"cpsvm.cli.{module}", *map(str, args)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while (
        time.time() < deadline
        and proc.poll() is None
        and (not trace.exists() or len(trace.read_text().splitlines()) < rows)
    ):
        time.sleep(0.05)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


# Objectives recomputed from the weights: references independent of the solvers.
def hinge_objective(w, X, y, C_light):
    return 0.5 * w @ w + C_light * np.maximum(0.0, 1.0 - y * (X @ w)).sum()


def crammer_singer_objective(W, X, y, C_cs):
    S = np.asarray(X @ W.T)
    idx = np.arange(len(y)), y.astype(int) - 1
    margins = S - S[idx][:, None] + 1.0
    margins[idx] = 0.0
    return 0.5 * np.sum(W * W) + C_cs * np.maximum(0.0, margins.max(axis=1)).sum()


def brute_force(losses_and_deltas, n, d, C):
    """min ½|w|² + (C/n) Σ ξ_i  s.t.  a·w ≥ Δ − ξ_i for every enumerated (i, Δ, a), ξ ≥ 0:
    the n-slack primal with all constraints, solved over (w, ξ) by quadprog (a 1e-12
    curvature on ξ makes it strictly convex), then re-evaluated exactly at the solution."""
    import quadprog

    G = np.eye(d + n)
    G[d:, d:] *= 1e-12
    linear = np.concatenate([np.zeros(d), np.full(n, -C / n)])
    A = np.array([np.concatenate([a, np.eye(n)[i]]) for i, _, a in losses_and_deltas])
    b = np.array([loss for _, loss, _ in losses_and_deltas])
    A = np.vstack([A, np.hstack([np.zeros((n, d)), np.eye(n)])])
    b = np.concatenate([b, np.zeros(n)])
    w = quadprog.solve_qp(G, linear, A.T, b, 0)[0][:d]
    xi = np.zeros(n)
    for i, loss, a in losses_and_deltas:
        xi[i] = max(xi[i], loss - a @ w)
    return 0.5 * w @ w + C / n * xi.sum()


def checkerboard(n, seed, noise=0.02):
    """4×4 board on the unit square, alternating classes (as benchmarks/checkerboard.py)."""
    rng = np.random.default_rng(seed)
    points = rng.random((n, 2))
    y = np.where((np.floor(4 * points[:, 0]) + np.floor(4 * points[:, 1])) % 2 == 0, 1.0, -1.0)
    return Dataset(sp.csr_matrix(points + noise * rng.standard_normal((n, 2))), y)
