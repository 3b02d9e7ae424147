"""Run the golden cases (cases.py) in one process and leave their outputs in a directory.

    python tests/golden/run.py OUT_DIR [--update | --add-cpu]

Each command runs through its console script's entry point (pyproject.toml), so the
cases outlive a move of the code behind it. Per case, OUT_DIR gets the files the case
writes and NAME.out: the exit status, then stdout and stderr with the figures that
depend on the clock or the machine masked. ``--update`` makes tests/golden/expected/ of
them (after a change that is meant to change an output: say which in the commit): the
.out files as they are, the SHA-256 of every other file in SHA256SUMS (model files of a
few MB stay out of the repository), their fingerprints for the comparison to a
tolerance in FINGERPRINTS.json (tolerant.py), and in CPUS the CPU the kernels were
compiled for (:func:`kernel_cpu`): where they are compiled for a CPU listed there,
tests/e2e/test_golden.py compares byte for byte, elsewhere to a tolerance. ``--add-cpu``
adds the kernels' CPU to CPUS when every output is the recorded one byte for byte (and
says what differs otherwise): how a CPU that reproduces the bytes is recorded.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import sys
from importlib.metadata import entry_points
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
EXPECTED = HERE / "expected"
sys.path.insert(0, str(HERE))

from cases import CASES  # noqa: E402
from tolerant import fingerprint  # noqa: E402


def kernel_cpu() -> str:
    """The CPU the kernels are compiled for: it decides their floating-point results
    (vector widths, the order of fastmath's additions), hence the bytes of the outputs.
    Kernels compiled ahead of time (at install) answer with the target their index
    records; under numba's own compiler (none usable) NUMBA_CPU_NAME (and
    NUMBA_CPU_FEATURES) when set, else the host."""
    from cpsvm.compiled import library

    if library().usable:
        return library().target_cpu
    name = os.environ.get("NUMBA_CPU_NAME", "").strip()
    if not name or name == "host":
        import llvmlite.binding as llvm

        name = llvm.get_host_cpu_name()
    features = os.environ.get("NUMBA_CPU_FEATURES", "").strip()
    return f"{name} ({features})" if features else name


def recorded_cpus() -> list:
    """The CPUs whose kernels reproduce the expected outputs byte for byte."""
    path = EXPECTED / "CPUS"
    if not path.exists():
        return []
    lines = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    return [line for line in lines if line]


# Lines or parts of lines whose figures come from the clock or the machine.
_MASKS = [
    (re.compile(r"(Runtime[^:]*: )[0-9.]+"), r"\1#"),
    (re.compile(r"(wall: ).*\)"), r"\1#)"),
    (
        re.compile(r"(\d+\.\d+|\d+)%( for (QP|the oracle)| other| of the time in the oracle)"),
        r"#%\2",
    ),
    (
        re.compile(r"^(\s*(output|line search|add cut|QP|passes|gap checks|total)\s*:) [0-9.]+ s$"),
        r"\1 # s",
    ),
    (re.compile(r"^Peak RSS: .*$"), "Peak RSS: #"),
]


def mask(text: str) -> str:
    lines = []
    for line in text.splitlines():
        for pattern, replacement in _MASKS:
            line = pattern.sub(replacement, line)
        lines.append(line)
    return "\n".join(lines) + ("\n" if lines else "")


def command(script: str):
    (entry,) = [e for e in entry_points(group="console_scripts") if e.name == script]
    return entry.load()


def run_case(main, args):
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(args)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return code, out.getvalue(), err.getvalue()


def main(argv):
    out_dir = Path(argv[0]).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    values = {
        "samples": str(ROOT / "data" / "samples"),
        "out": str(out_dir),
        "fixtures": str(ROOT / "tests" / "fixtures"),
    }
    # The user problem of examples/ is imported from the current directory, as users do.
    os.chdir(ROOT / "examples")
    sys.path.insert(0, str(ROOT / "examples"))
    for name, script, args in CASES:
        args = [a.format(**values) for a in args]
        code, stdout, stderr = run_case(command(script), args)
        text = f"exit {code}\n-- stdout\n{mask(stdout)}-- stderr\n{mask(stderr)}"
        (out_dir / f"{name}.out").write_text(
            text.replace(str(out_dir), "{out}")
            .replace(values["samples"], "{samples}")
            .replace(values["fixtures"], "{fixtures}")
        )
    if "--update" in argv:
        shutil.rmtree(EXPECTED, ignore_errors=True)
        EXPECTED.mkdir()
        for path in sorted(out_dir.iterdir()):
            if path.suffix == ".out":
                shutil.copy(path, EXPECTED / path.name)
        (EXPECTED / "SHA256SUMS").write_text(
            "".join(f"{digest}  {name}\n" for name, digest in digests(out_dir).items())
        )
        prints = {
            path.name: fingerprint(path.read_text(errors="replace"))
            for path in sorted(out_dir.iterdir())
            if path.suffix != ".out"
        }
        (EXPECTED / "FINGERPRINTS.json").write_text(json.dumps(prints, indent=1) + "\n")
        (EXPECTED / "CPUS").write_text(_CPUS_HEADER + kernel_cpu() + "\n")
    elif "--add-cpu" in argv:
        differ = differences(out_dir)
        if differ:
            sys.exit(f"{kernel_cpu()} not added to CPUS: {', '.join(differ)} differ")
        if kernel_cpu() not in recorded_cpus():
            path = EXPECTED / "CPUS"
            text = path.read_text() if path.exists() else _CPUS_HEADER
            path.write_text(text + kernel_cpu() + "\n")


_CPUS_HEADER = (
    "# CPUs (numba's names) whose compiled kernels reproduce SHA256SUMS and the .out texts\n"
    "# byte for byte: written by run.py --update, one added by run.py --add-cpu\n"
)


def differences(out_dir: Path) -> list:
    """The outputs in out_dir that are not the expected ones byte for byte."""
    expected = dict(
        line.split("  ", 1)[::-1] for line in (EXPECTED / "SHA256SUMS").read_text().splitlines()
    )
    got = digests(out_dir)
    changed = [name for name in expected.keys() | got.keys() if expected.get(name) != got.get(name)]
    changed += [
        p.name
        for p in EXPECTED.glob("*.out")
        if not (out_dir / p.name).exists() or (out_dir / p.name).read_text() != p.read_text()
    ]
    return sorted(changed)


def digests(out_dir: Path) -> dict:
    """SHA-256 of each output file (not the .out texts), by name."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(out_dir.iterdir())
        if path.suffix != ".out"
    }


if __name__ == "__main__":
    main(sys.argv[1:])
