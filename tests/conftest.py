import os
import subprocess
import sys
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
    return subprocess.run([sys.executable, "-m", f"cpsvm.cli.{module}", *map(str, args)],
                          input=stdin, capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


@pytest.fixture
def cli():
    return run_cli


# Objectives recomputed from the weights: references independent of the solvers.
def hinge_objective(w, X, y, C_light):
    return 0.5 * w @ w + C_light * np.maximum(0.0, 1.0 - y * (X @ w)).sum()


def crammer_singer_objective(W, X, y, C_cs):
    S = np.asarray(X @ W.T)
    idx = np.arange(len(y)), y.astype(int) - 1
    margins = S - S[idx][:, None] + 1.0
    margins[idx] = 0.0
    return 0.5 * np.sum(W * W) + C_cs * np.maximum(0.0, margins.max(axis=1)).sum()
