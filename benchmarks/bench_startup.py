"""Start-up of the commands, whole processes, against references run in the same rounds.

    python benchmarks/bench_startup.py [--runs 7] [--bin DIR] [--sections floor,phases,...]

Sections (all by default; those needing what is absent say so and are skipped):

floor      every command on a two-line file (one +1 and one -1 line of a9a3k) against
           ``python -c "import numpy"`` and LIBLINEAR's ``train``/``predict`` on the same
           file ($LIBLINEAR_TRAIN, $LIBLINEAR_PREDICT): interleaved rounds after one
           warm-up, medians, ratios to the numpy import's median.
phases     where each command's time goes (one run in a process of its own, timers on its
           phases): imports (outermost), the compiled kernels' first call (the index and
           the extension modules loaded), numba (only if something compiles), reading,
           training, writing, the rest; on the two-line file and on data/samples.
install    the first run after a fresh install against the second: a new venv in a
           temporary directory, ``pip install`` of a clone of this checkout's HEAD
           (regular, then editable), the install's seconds, then each data/samples case
           twice.
liblinear  whole processes against LIBLINEAR on real data ($CPSVM_BENCH_DATA for
           ijcnn1/ and sector/, ../shared/data for a9a): ``ocas_learn -c 1`` vs
           ``train -s 3 -c 1`` (a9a, ijcnn1), ``cp_classify`` vs ``predict`` (sector.t with
           both tools' sector models, -s 4 -c 1), ``ocas_learn --cv 5 --c-path
           1e-3:1e3:13`` vs ``train -C -s 2 -v 5`` (a9a: the same job, choosing C).

``--bin`` is the directory of the console scripts (default: beside the Python running
this script), so the same script measures another installation.
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
SHARED = ROOT.parent / "shared" / "data"
SECTIONS = ("floor", "phases", "install", "liblinear")
GOAL_FLOOR = 0.3  # seconds, a two-line file (issue 38)
GOAL_FIRST_RUN = 1.5  # first run after install / second run


def environment(**extra):
    """The user's environment without the settings the commands make themselves."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENBLAS_NUM_THREADS", "NUMBA_CACHE_DIR", "CPSVM_KERNEL_LOG")
    }
    env.update(extra)
    return env


def run(argv, env=None, expect=0):
    """(wall seconds, CPU seconds of the child) of one whole process."""
    before = os.times()
    started = time.perf_counter()
    done = subprocess.run(
        [str(a) for a in argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    seconds = time.perf_counter() - started
    after = os.times()
    if expect is not None and done.returncode != expect:
        raise RuntimeError(
            f"{' '.join(map(str, argv))}: exit {done.returncode}: "
            f"{done.stderr.decode(errors='replace')[-400:]}"
        )
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return seconds, cpu


def rounds(cases, runs, env):
    """Interleaved rounds over ``cases`` [(name, argv)]: {name: [wall seconds]}."""
    for _, argv in cases:
        run(argv, env)  # warm-up: the page cache, .pyc files, models written
    times = {name: [] for name, _ in cases}
    for _ in range(runs):
        for name, argv in cases:
            times[name].append(run(argv, env)[0])
    return times


def two_line_file(tmp: Path) -> Path:
    lines = (SAMPLES / "a9a3k.train").read_text().splitlines()
    path = tmp / "two.train"
    path.write_text(
        next(x for x in lines if x.startswith("+1"))
        + "\n"
        + next(x for x in lines if x.startswith("-1"))
        + "\n"
    )
    return path


def command_cases(bin_dir: Path, data: Path, test: Path, tmp: Path, *, k: int):
    """(name, argv) of each command on ``data`` (cp_classify on ``test``)."""
    b = lambda name: bin_dir / name  # noqa: E731
    model = tmp / "linear.model"
    return [
        ("ocas_learn", [b("ocas_learn"), data, tmp / "ocas.model"]),
        ("cp_learn -c 1", [b("cp_learn"), "-c", "1", data, model]),
        ("cp_classify", [b("cp_classify"), test, model, tmp / "p"]),
        ("sampled_learn -c 1", [b("sampled_learn"), "-c", "1", data, tmp / "s.model"]),
        ("asset_learn -c 1", [b("asset_learn"), "-c", "1", "--k", str(k), data, tmp / "a.model"]),
    ]


def section_floor(args, tmp):
    env = environment()
    two = two_line_file(tmp)
    cases = [("python -c 'import numpy'", [sys.executable, "-c", "import numpy"])]
    cases += command_cases(args.bin, two, two, tmp, k=2)
    train, predict = os.environ.get("LIBLINEAR_TRAIN"), os.environ.get("LIBLINEAR_PREDICT")
    if train:
        cases.append(("LIBLINEAR train -s 3", [train, "-s", "3", two, tmp / "ll.model"]))
        if predict:
            cases.append(("LIBLINEAR predict", [predict, two, tmp / "ll.model", tmp / "llp"]))
    else:
        print("LIBLINEAR_TRAIN unset: LIBLINEAR's rows skipped")
    times = rounds(cases, args.runs, env)
    numpy = statistics.median(times[cases[0][0]])
    print(f"\nA two-line file, whole processes, median of {args.runs} interleaved rounds")
    print(f"{'case':28s} {'median s':>9s} {'min':>7s} {'max':>7s} {'x numpy':>8s}  goal")
    for name, values in times.items():
        median = statistics.median(values)
        goal = ""
        if name in dict(command_cases(args.bin, two, two, tmp, k=2)):
            goal = f"<= {GOAL_FLOOR} s: {'yes' if median <= GOAL_FLOOR else 'NO'}"
        print(
            f"{name:28s} {median:9.3f} {min(values):7.3f} {max(values):7.3f} "
            f"{median / numpy:8.2f}  {goal}"
        )


PHASES = """
import importlib, sys, time
T0 = time.perf_counter()
import importlib._bootstrap as boot
totals, stack = {}, []
def timed(name, fn):
    def wrapper(*a, **k):
        if stack and stack[-1][0] == name:
            return fn(*a, **k)
        stack.append([name, time.perf_counter(), 0.0])
        try:
            return fn(*a, **k)
        finally:
            nm, start, child = stack.pop()
            dt = time.perf_counter() - start
            totals[nm] = totals.get(nm, 0.0) + dt - child
            if stack:
                stack[-1][2] += dt
    wrapper.__wrapped__ = fn
    return wrapper
PATCHES = {
    "cpsvm.compiled:Library.__init__": "kernels loaded",
    "cpsvm.compiled:Library.functions": "kernels loaded",
    "cpsvm.compiled:Kernel._run_under_numba": "numba",
    "cpsvm.io.svmlight:read_examples": "read",
    "cpsvm.io.svmlight:read_svmlight": "read",
    "cpsvm.io.model_file:read_model": "read",
    "cpsvm.io.model_file:write_model": "write",
    "cpsvm.io.atomic:atomic_output": "write",
    "cpsvm.solvers.ocas:train": "train",
    "cpsvm.solvers.one_slack:train": "train",
    "cpsvm.solvers.sampled:train": "train",
    "cpsvm.solvers.asset:train": "train",
}
pending = {spec.split(":")[0] for spec in PATCHES}
def patch():
    for spec, name in PATCHES.items():
        module, attr = spec.split(":")
        if module in pending and module in sys.modules:
            owner = sys.modules[module]
            *path, last = attr.split(".")
            for part in path:
                owner = getattr(owner, part)
            setattr(owner, last, timed(name, getattr(owner, last)))
    pending.difference_update(sys.modules.keys())
load = timed("import", boot._find_and_load)
def find_and_load(*a, **k):
    outermost = not (stack and stack[-1][0] == "import")
    result = load(*a, **k)
    if outermost and pending & sys.modules.keys():
        patch()
    return result
boot._find_and_load = find_and_load
modules = dict(cp_learn="learn", cp_classify="classify", ocas_learn="ocas",
               sampled_learn="sampled", asset_learn="asset")
command = sys.argv[1]
sys.argv = [command, *sys.argv[2:]]
try:
    importlib.import_module("cpsvm.cli." + modules[command]).main()
except SystemExit:
    pass
total = time.perf_counter() - T0
totals["other"] = total - sum(totals.values())
print(repr((total, totals)), file=sys.stderr)
"""


def section_phases(args, tmp):
    two = two_line_file(tmp)
    env = environment()
    names = ("import", "kernels loaded", "numba", "read", "train", "write", "other")
    print("\nWhere the time goes (ms; one run each after a warm-up; imports are outermost)")
    print(f"{'case':44s} {'total':>6s} " + " ".join(f"{n:>8s}" for n in names))
    samples = [
        ("ocas_learn", [SAMPLES / "a9a3k.train", tmp / "o.model"]),
        ("cp_learn", ["-c", "30", SAMPLES / "a9a3k.train", tmp / "c.model"]),
        ("cp_classify", [SAMPLES / "a9a2k.test", tmp / "c.model", tmp / "p"]),
        ("cp_learn", ["-c", "1000", SAMPLES / "dna1k.train", tmp / "d.model"]),
        ("cp_classify", [SAMPLES / "dna500.test", tmp / "d.model", tmp / "p"]),
        ("cp_learn", ["-c", "1000", "-e", "0.5", SAMPLES / "ewt60.hmm.train", tmp / "h.model"]),
        (
            "sampled_learn",
            ["-c", "30", "-t", "2", "-g", "0.05", SAMPLES / "a9a3k.train", tmp / "s.model"],
        ),
        (
            "asset_learn",
            [
                "-c",
                "1000",
                "-t",
                "2",
                "-g",
                "0.001",
                "--k",
                "200",
                SAMPLES / "a9a3k.train",
                tmp / "a.model",
            ],
        ),
    ]
    small = [
        (name.split()[0], argv[1:]) for name, argv in command_cases(args.bin, two, two, tmp, k=2)
    ]
    for name, rest in small + samples:
        argv = [sys.executable, "-c", PHASES, name, *rest]
        run(argv, env)
        done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=env)
        total, totals = eval(done.stderr.strip().splitlines()[-1])  # our own child's repr
        label = f"{name} {' '.join(Path(str(a)).name for a in rest if str(a).startswith('/'))[:30]}"
        print(
            f"{label[:44]:44s} {1000 * total:6.0f} "
            + " ".join(f"{1000 * totals.get(n, 0.0):8.0f}" for n in names)
        )


def section_install(args, tmp):
    """A fresh venv, the checkout installed, then first and second runs."""
    print("\nThe first run after a fresh install against the second (data/samples)")
    for editable in (False, True):
        venv = tmp / ("venv-e" if editable else "venv")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        pip = [venv / "bin" / "python", "-m", "pip", "install", "-q"]
        source = tmp / ("src-e" if editable else "src")
        # A clone of HEAD (no compiled kernels, no .venv), as a user has it.
        subprocess.run(["git", "clone", "-q", str(ROOT), str(source)], check=True)
        started = time.perf_counter()
        subprocess.run([*pip, *(["-e"] if editable else []), str(source)], check=True)
        installed = time.perf_counter() - started
        bin_dir = venv / "bin"
        kind = "pip install -e" if editable else "pip install"
        print(f"{kind}: {installed:.0f} s (dependencies from pip's cache, kernels compiled)")
        cases = command_cases(bin_dir, SAMPLES / "a9a3k.train", SAMPLES / "a9a2k.test", tmp, k=200)
        cases.insert(
            2,
            (
                "cp_learn -c 1000 dna1k",
                [bin_dir / "cp_learn", "-c", "1000", SAMPLES / "dna1k.train", tmp / "d.model"],
            ),
        )
        env = environment()
        print(
            f"{'case':28s} {'first s':>8s} {'second s':>9s} {'ratio':>6s}  goal <= {GOAL_FIRST_RUN}"
        )
        for name, argv in cases:
            first = run(argv, env)[0]
            second = run(argv, env)[0]
            ok = "yes" if first / second <= GOAL_FIRST_RUN else "NO"
            print(f"{name:28s} {first:8.2f} {second:9.2f} {first / second:6.2f}  {ok}")


def section_liblinear(args, tmp):
    train, predict = os.environ.get("LIBLINEAR_TRAIN"), os.environ.get("LIBLINEAR_PREDICT")
    if not train:
        print("\nLIBLINEAR_TRAIN unset: the whole-process comparison is skipped")
        return
    data = Path(os.environ.get("CPSVM_BENCH_DATA", ROOT.parent / "tools" / "data"))
    b = lambda name: args.bin / name  # noqa: E731
    jobs = []
    for name, path in (("a9a", SHARED / "a9a"), ("ijcnn1", data / "ijcnn1" / "ijcnn1")):
        if path.exists():
            jobs.append(
                (
                    f"{name}: ocas_learn -c 1 / train -s 3 -c 1",
                    2.0,
                    [b("ocas_learn"), "-c", "1", path, tmp / f"{name}.model"],
                    [train, "-s", "3", "-c", "1", path, tmp / f"{name}.ll"],
                )
            )
        else:
            print(f"{path} absent: {name} skipped")
    sector, sector_t = data / "sector" / "sector.scale", data / "sector" / "sector.t.scale"
    if sector.exists() and predict:
        run([b("ocas_learn"), "-c", "1", sector, tmp / "sector.model"])
        run([train, "-s", "4", "-c", "1", sector, tmp / "sector.ll"])
        jobs.append(
            (
                "sector.t: cp_classify / predict",
                1.0,
                [b("cp_classify"), "-v", "0", sector_t, tmp / "sector.model", tmp / "sp"],
                [predict, sector_t, tmp / "sector.ll", tmp / "slp"],
            )
        )
    elif not sector.exists():
        print(f"{sector} absent: cp_classify on sector.t skipped")
    jobs.append(
        (
            "a9a: --cv 5 --c-path 1e-3:1e3:13 / train -C -s 2 -v 5",
            1.0,
            [
                b("ocas_learn"),
                "--cv",
                "5",
                "--c-path",
                "1e-3:1e3:13",
                SHARED / "a9a",
                tmp / "cv.model",
            ],
            [train, "-C", "-s", "2", "-v", "5", SHARED / "a9a"],
        )
    )
    env = environment()
    print(f"\nWhole processes against LIBLINEAR, median of {args.runs} interleaved pairs")
    print(f"{'job':56s} {'ours s':>7s} {'theirs':>7s} {'ratio':>6s}  goal")
    for name, goal, ours, theirs in jobs:
        run(ours, env)
        run(theirs, env)
        a, b_ = [], []
        for _ in range(args.runs):
            a.append(run(ours, env)[0])
            b_.append(run(theirs, env)[0])
        ratio = statistics.median(x / y for x, y in zip(a, b_))
        print(
            f"{name:56s} {statistics.median(a):7.2f} {statistics.median(b_):7.2f} "
            f"{ratio:6.2f}  <= {goal}: {'yes' if ratio <= goal else 'NO'}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--bin", type=Path, default=Path(sys.executable).parent)
    parser.add_argument("--sections", default=",".join(SECTIONS))
    args = parser.parse_args()
    print(f"commands from {args.bin}; load {os.getloadavg()[0]:.2f}")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print(
            "note: PYTHONDONTWRITEBYTECODE is set: the modules of an editable checkout that "
            "has no .pyc files are compiled from source at every run (about 60 ms more; "
            "pip install . writes them)"
        )
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for section in args.sections.split(","):
            globals()[f"section_{section}"](args, tmp)


if __name__ == "__main__":
    main()
