"""The golden runs (tests/golden/cases.py). With the kernels compiled for a CPU whose
outputs were recorded (tests/golden/expected/CPUS): every model and prediction file
byte for byte as recorded, and the commands' printed output with the clock's figures
masked. Compiled for another CPU, fastmath's additions round differently: the same
files and texts compared to a tolerance (tests/golden/tolerant.py)."""

import json
import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
EXPECTED = GOLDEN / "expected"
sys.path.insert(0, str(GOLDEN))

from run import differences, kernel_cpu, recorded_cpus  # noqa: E402
from tolerant import compare_file, compare_text  # noqa: E402


def run_cases(out_dir):
    done = subprocess.run(
        [sys.executable, str(GOLDEN / "run.py"), str(out_dir)],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def other_paths(out_dir) -> set:
    """The names of the cases that took another path than the recorded run (their work
    counts differ), and of the cases that read a model one of them wrote."""
    from cases import CASES
    from tolerant import took_another_path

    branched, models = set(), set()
    for name, _, args in CASES:
        reads_branched = any(a.startswith("{out}/") and a[6:] in models for a in args)
        got = out_dir / f"{name}.out"
        expected = EXPECTED / f"{name}.out"
        if reads_branched or (
            got.exists() and took_another_path(got.read_text(), expected.read_text())
        ):
            branched.add(name)
            models.update(a[6:] for a in args if a.startswith("{out}/"))
    return branched | {m.rpartition(".")[0] for m in models}


def tolerant_differences(out_dir) -> list:
    """What differs beyond the tolerance: the files by their recorded fingerprints, the
    .out texts line by line; those of runs on another path to PATH_REL."""
    from tolerant import PATH_REL, REL

    prints = json.loads((EXPECTED / "FINGERPRINTS.json").read_text())
    made = {p.name for p in out_dir.iterdir() if p.suffix != ".out"}
    branched = other_paths(out_dir)
    found = [f"{name}: not written" for name in sorted(prints.keys() - made)]
    found += [f"{name}: not recorded" for name in sorted(made - prints.keys())]
    for name in sorted(made & prints.keys()):
        text = (out_dir / name).read_text(errors="replace")
        rel = PATH_REL if name.rpartition(".")[0] in branched else REL
        found.append(compare_file(name, text, prints[name], rel))
    for expected in sorted(EXPECTED.glob("*.out")):
        got = out_dir / expected.name
        text = got.read_text() if got.exists() else ""
        found.append(
            compare_text(expected.name, text, expected.read_text(), expected.stem in branched)
        )
    return [f for f in found if f]


def test_golden_outputs_are_unchanged(tmp_path):
    run_cases(tmp_path)
    cpu = kernel_cpu()
    if cpu in recorded_cpus():
        changed = differences(tmp_path)
        assert not changed, (
            f"changed byte for byte (kernels compiled for {cpu}, a recorded CPU): {changed} "
            f"(compare {tmp_path} with {EXPECTED}; rerun tests/golden/run.py DIR --update "
            "only for an intended change)"
        )
    else:
        changed = tolerant_differences(tmp_path)
        assert not changed, (
            f"changed beyond the tolerance (kernels compiled for {cpu}; bytes recorded for "
            f"{', '.join(recorded_cpus())}): " + "; ".join(changed)
        )


MODEL = Path(__file__).resolve().parent.parent.parent / "data" / "samples" / "a9a3k.perf.model"


def _scaled_weights(text, factor):
    """The model text with every weight of its support vector line times ``factor``."""
    head, _, line = text.rstrip("\n").rpartition("\n")
    pairs = [p.split(":") for p in line.split()[1:] if ":" in p]
    scaled = " ".join(f"{i}:{float(v) * factor!r}" for i, v in pairs)
    return f"{head}\n{line.split()[0]} {scaled} #\n"


def test_the_tolerance_tells_rounding_from_a_change():
    """A file within REL of the recorded one passes; a weight moved by more, a changed
    index or count, or a non-finite number where there was none fails."""
    import tolerant

    text = MODEL.read_text()
    recorded = tolerant.fingerprint(text)
    assert tolerant.compare_file("m", text, recorded) is None
    assert tolerant.compare_file("m", _scaled_weights(text, 1 + 1e-12), recorded) is None
    assert "from the recorded" in tolerant.compare_file(
        "m", _scaled_weights(text, 1 + 1e-4), recorded
    )
    assert tolerant.compare_file("m", text.replace(" 5:", " 6:", 1), recorded)
    assert tolerant.compare_file("m", text.replace("60 # number", "59 # number"), recorded)


def test_printed_texts_allow_work_counts_and_the_last_digit():
    import tolerant

    lines = [
        "exit 0",
        "Number of iterations: 50",
        "pval=11434.92345",
        "Accuracy 84.20% (1684 correct)",
    ]
    recorded = "\n".join(lines) + "\n"
    same = recorded.replace("iterations: 50", "iterations: 52").replace("92345", "92346")
    assert tolerant.compare_text("t", same, recorded) is None
    for changed in (
        same.replace("exit 0", "exit 1"),
        same.replace("11434.92346", "11435.5"),
        same.replace("1684 correct", "1685 correct"),
        same.replace("iterations: 52", "iterations: 80"),
        same.replace("Accuracy", "Error"),
    ):
        assert tolerant.compare_text("t", changed, recorded), changed


def test_a_run_on_another_path_is_held_to_its_stopping_rule():
    """Work counts that differ tell another path; its stop figures are not compared and
    its real numbers are to PATH_REL, its words and other integers still exactly."""
    import tolerant

    recorded = "Final epsilon: 0.67008\nNumber of iterations: 17\nnorm |w|=1.53959\nSV: 10\n"
    other = "Final epsilon: 0.14729\nNumber of iterations: 19\nnorm |w|=1.53871\nSV: 10\n"
    assert not tolerant.took_another_path(recorded, recorded)
    assert tolerant.took_another_path(other, recorded)
    assert tolerant.compare_text("t", other, recorded)  # as rounding: too far
    assert tolerant.compare_text("t", other, recorded, another_path=True) is None
    for changed in (other.replace("1.53871", "1.9"), other.replace("SV: 10", "SVs: 10")):
        assert tolerant.compare_text("t", changed, recorded, another_path=True), changed
    text = MODEL.read_text()
    prints = tolerant.fingerprint(text)
    moved = _scaled_weights(text, 1 + 1e-3)
    assert tolerant.compare_file("m", moved, prints)
    assert tolerant.compare_file("m", moved, prints, tolerant.PATH_REL) is None
    assert tolerant.compare_file("m", _scaled_weights(text, 1.2), prints, tolerant.PATH_REL)
