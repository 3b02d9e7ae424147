import os
import subprocess
import sys
from pathlib import Path

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
