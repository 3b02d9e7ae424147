import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "data" / "samples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def samples():
    return SAMPLES


@pytest.fixture
def fixtures():
    return FIXTURES


def run_cli(module, *args, stdin=None, cwd=None):
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


@pytest.fixture
def cli():
    return run_cli


def interrupt_cli(module, args, trace, rows=5):
    """Start ``python -m cpsvm.cli.<module> args`` (which writes ``trace``), send Ctrl-C
    once the trace has ``rows`` lines (or the command ended), and return
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
    proc.send_signal(signal.SIGINT)
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
