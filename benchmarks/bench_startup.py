"""Start-up of the commands, whole process, against ``python -c "import numpy,
scipy.sparse, numba"`` (the import every run of a learner needs) in the same run.

Warm: each case and the reference run in turn (reference, case, reference, case, ...),
RUNS times after one warm-up run; the figure is the median of the per-pair ratios
case/reference, so a drift of the machine's speed cancels. Cold: each learning or
classifying case once with an empty numba cache (a fresh NUMBA_CACHE_DIR), i.e. the
first run after installing; its figure is the ratio to the same case's warm median.

    python benchmarks/bench_startup.py [--runs 5] [--no-cold] [--bin DIR]

``--bin`` is the directory of the console scripts (default: beside the Python running
this script), so the same script measures another installation, e.g.
``/path/to/baseline/.venv/bin/python benchmarks/bench_startup.py``. Cases a command
does not have there (--version) are reported as such.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "data" / "samples"
REFERENCE = ["-c", "import numpy, scipy.sparse, numba"]


def environment(**extra):
    """The user's environment without the settings the commands make themselves."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENBLAS_NUM_THREADS", "NUMBA_THREADING_LAYER", "NUMBA_CACHE_DIR")
    }
    env.update(extra)
    return env


def wall(argv, env, expect=None) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    seconds = time.perf_counter() - started
    if expect is not None and done.returncode != expect:
        raise RuntimeError(
            f"{' '.join(map(str, argv))}: exit {done.returncode}, expected "
            f"{expect}: {done.stderr.decode(errors='replace')[-300:]}"
        )
    return seconds


def cases(bin_dir: Path, tmp: Path):
    """(name, argv, expected exit status, measured cold too)."""
    b = lambda name: str(bin_dir / name)  # noqa: E731
    a9a, a9a_test = SAMPLES / "a9a3k.train", SAMPLES / "a9a2k.test"
    dna, dna_test = SAMPLES / "dna1k.train", SAMPLES / "dna500.test"
    bad_model = tmp / "bad.model"
    bad_model.write_text("SVM-light Version V9.99\n0 # kernel type\n")
    # The floor of any run that uses numba: the reference import plus the first call of
    # one trivial cached function (numba then loads its type and code registries).
    (tmp / "one_kernel.py").write_text(
        "import numpy, scipy.sparse\nfrom numba import njit\n\n\n@njit(cache=True)\n"
        "def total(a):\n    s = 0.0\n    for x in a:\n        s += x\n    return s\n\n\n"
        "total(numpy.ones(3))\n"
    )
    return [
        (
            "floor: the import + one cached numba call",
            [sys.executable, tmp / "one_kernel.py"],
            0,
            False,
        ),
        ("ocas_learn -h", [b("ocas_learn"), "-h"], 0, False),
        ("cp_learn --version", [b("cp_learn"), "--version"], 0, False),
        ("cp_learn -c 0 (usage error)", [b("cp_learn"), "-c", "0", a9a, tmp / "x"], 2, False),
        (
            "cp_classify, model with a wrong first line",
            [b("cp_classify"), a9a_test, bad_model, tmp / "x"],
            1,
            False,
        ),
        ("ocas_learn a9a3k", [b("ocas_learn"), a9a, tmp / "ocas.model"], 0, True),
        ("cp_learn -c 30 a9a3k", [b("cp_learn"), "-c", "30", a9a, tmp / "perf.model"], 0, True),
        ("cp_learn -c 1000 dna1k", [b("cp_learn"), "-c", "1000", dna, tmp / "dna.model"], 0, True),
        (
            "sampled_learn -c 100 -t 2 -g 0.05 a9a3k",
            [b("sampled_learn"), "-c", "100", "-t", "2", "-g", "0.05", a9a, tmp / "rbf.model"],
            0,
            True,
        ),
        (
            "cp_classify a9a2k, linear model",
            [b("cp_classify"), a9a_test, tmp / "perf.model", tmp / "p1"],
            0,
            True,
        ),
        (
            "cp_classify a9a2k, RBF model",
            [b("cp_classify"), a9a_test, tmp / "rbf.model", tmp / "p2"],
            0,
            True,
        ),
        (
            "cp_classify dna500, multiclass model",
            [b("cp_classify"), dna_test, tmp / "dna.model", tmp / "p3"],
            0,
            True,
        ),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-cold", dest="cold", action="store_false")
    parser.add_argument("--bin", type=Path, default=Path(sys.executable).parent)
    parser.add_argument("--only", default=None, help="run the cases whose name has this")
    args = parser.parse_args()
    env = environment()
    reference = [sys.executable, *REFERENCE]
    print(
        f"commands from {args.bin}; reference: {sys.executable} "
        f"{' '.join(REFERENCE)}; median of {args.runs}, whole process, wall time"
    )
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        table = cases(args.bin, tmp)
        if args.only:
            table = [c for c in table if args.only in c[0]]
        warm = {}
        print(f"{'case':44s} {'median s':>9s} {'ref s':>7s} {'ratio':>7s} {'min':>6s} {'max':>6s}")
        for name, argv, expect, _ in table:
            try:
                wall(argv, env, expect)  # warm-up: fills the numba cache, writes models
            except RuntimeError as e:
                print(f"{name:44s} not measured: {e}")
                continue
            times, refs, ratios = [], [], []
            for _ in range(args.runs):
                r = wall(reference, env)
                t = wall(argv, env, expect)
                times.append(t)
                refs.append(r)
                ratios.append(t / r)
            warm[name] = statistics.median(times)
            print(
                f"{name:44s} {warm[name]:9.3f} {statistics.median(refs):7.3f} "
                f"{statistics.median(ratios):7.2f} {min(ratios):6.2f} {max(ratios):6.2f}",
                flush=True,
            )
        if not args.cold:
            return
        print("\ncold: first run with an empty numba cache (fresh NUMBA_CACHE_DIR)")
        print(f"{'case':44s} {'cold s':>9s} {'x warm':>7s}")
        for name, argv, expect, cold in table:
            if not cold or name not in warm:
                continue
            with tempfile.TemporaryDirectory() as cache:
                t = wall(argv, environment(NUMBA_CACHE_DIR=cache), expect)
            print(f"{name:44s} {t:9.2f} {t / warm[name]:7.1f}", flush=True)


if __name__ == "__main__":
    main()
