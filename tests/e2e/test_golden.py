"""The golden runs (tests/golden/cases.py): every model and prediction file byte for
byte as recorded, and the commands' printed output with the clock's figures masked."""

import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
EXPECTED = GOLDEN / "expected"


def test_golden_outputs_are_unchanged(tmp_path):
    sys.path.insert(0, str(GOLDEN))
    from run import digests

    done = subprocess.run(
        [sys.executable, str(GOLDEN / "run.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    expected = dict(
        line.split("  ", 1)[::-1] for line in (EXPECTED / "SHA256SUMS").read_text().splitlines()
    )
    got = digests(tmp_path)
    changed = sorted(
        name for name in expected.keys() | got.keys() if expected.get(name) != got.get(name)
    )
    texts = sorted(
        p.name for p in EXPECTED.glob("*.out") if (tmp_path / p.name).read_text() != p.read_text()
    )
    assert not changed and not texts, (
        f"files changed: {changed}; printed output changed: {texts} (compare "
        f"{tmp_path} with {EXPECTED}; rerun tests/golden/run.py DIR --update only for "
        "an intended change)"
    )
