"""Many classes (issue 25): ocas_learn and cp_learn on a generated text-like set against
libocas's msvmocas and scikit-learn's LinearSVC(multi_class="crammer_singer"), and the
small multiclass sets before/after.

1. many: the set of benchmarks/many_classes.py (--n documents, --classes, --features;
   written to a temporary directory, not kept) at Crammer-Singer C in --Cs, the same C
   for every tool: `msvmocas -c C`, `ocas_learn -c C` (both at TolRel --tol), `cp_learn
   -c 100·n·C` (SVMmulticlass's scale; -w 9, its default, with -e set so that its gap
   C·e is TolRel times the objective of the round's first ocas_learn run: the same
   1 − Q_D/Q_P) and LinearSVC(C, fit_intercept=False, its default tol) in a Python
   process that reads the file with load_svmlight_file; with --before, the ocas_learn of
   that checkout too (main: the "before") at --before-Cs, and cp_learn -w 3 and -w 4
   before/after for --w34-iterations iterations (peak RSS and time). Per run:
   whole-process wall time and peak RSS (/usr/bin/time's %M), iterations,
   the objective F(W) = ½|W|² + C·Σ_i max(0, max_{c≠y_i} 1 + w_c·x_i − w_{y_i}·x_i)
   recomputed here from each model file, and its certified relative gap
   (F − D*)/F against the best dual bound D* any run printed. The tools run in turn,
   --repeats rounds (A B C D A B C D ...); medians, and ratios to msvmocas's median.
   Goals: peak RSS <= 1.0x msvmocas's, whole process <= 0.5x its time, at the same
   objective.
2. small: dna.scale and satimage.scale (--data): `ocas_learn -c 1` and `-c 10`,
   `cp_learn -c 1000` (-w 9) and `cp_learn -w 3 -c 1000` and `-w 4`, this checkout's
   commands against --before's, interleaved, --small-repeats rounds: min/median of the
   whole-process time and peak RSS, and the ratio after/before pair by pair. Goal: no
   slower than before.

cpsvm's commands run as `python -m cpsvm.cli.<module>` with this interpreter, the
"before" checkout's by PYTHONPATH (its numba cache in the temporary directory): the same
environment for both (a fresh virtualenv's shared libraries were tens of MB more
resident than an older one's). Peak RSS is /usr/bin/time's %M. msvmocas is found through
CPSVM_LIBOCAS_DIR and skipped, saying so, when it is unset; LinearSVC is skipped with
--no-svc. numba's cache is warmed first (every command once on a small set). The
1-minute load average is printed beside each round.

Usage: .venv/bin/python benchmarks/bench_many_classes.py [--parts many,small]
       [--n 6400] [--classes 100] [--features 50000] [--Cs 1,10] [--tol 0.01]
       [--repeats 2] [--before /work/main] [--before-Cs 1]
       [--small-repeats 5] [--w34-iterations 40] [--no-svc] [--cap 3600] [--data DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from many_classes import many_classes  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
# shared/data beside the checkout (or beside the directory of worktrees holding it)
DATA = next(
    (up / "shared" / "data" for up in REPO.parents if (up / "shared" / "data").is_dir()),
    REPO.parent / "shared" / "data",
)

SVC_SCRIPT = """
import sys, numpy as np, warnings
from sklearn.datasets import load_svmlight_file
from sklearn.svm import LinearSVC
warnings.filterwarnings("ignore")
X, y = load_svmlight_file(sys.argv[1])
X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
m = LinearSVC(multi_class="crammer_singer", C=float(sys.argv[2]), fit_intercept=False,
              max_iter=int(sys.argv[4])).fit(X, y)
np.save(sys.argv[3], m.coef_)
print("classes", " ".join(str(int(c)) for c in m.classes_))
print("iterations", m.n_iter_)
"""


def load():
    return os.getloadavg()[0]


def run(cmd, log, cap, env=None):
    """(wall seconds, peak RSS in MB, exit status, output) of cmd as a whole process.
    The peak is /usr/bin/time's %M: the rusage of a child forked from this (large)
    process would count this process's pages until the exec."""
    usage = Path(f"{log}.time")
    t = time.perf_counter()
    with open(log, "w") as out:
        # In the work directory: `python -m` puts the current directory first on
        # sys.path, which must not hold another checkout's cpsvm.
        p = subprocess.Popen(
            ["/usr/bin/time", "-f", "%M", "-o", str(usage)] + [str(c) for c in cmd],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=Path(log).parent,
        )
        # A timer kills it at the cap: wait(timeout=...) polls, every 50 ms at the end,
        # which rounded the small sets' times.
        timer = threading.Timer(cap, p.kill)
        timer.start()
        p.wait()
        timer.cancel()
    wall = time.perf_counter() - t
    lines = usage.read_text().split() if usage.exists() else []
    peak = float(lines[-1]) / 1024.0 if lines and lines[-1].isdigit() else np.nan
    return wall, peak, p.returncode, Path(log).read_text()


def command(name, before=None, work=None):
    """A cpsvm command as ``python -m cpsvm.cli.<module>`` with this interpreter: the
    "before" checkout by PYTHONPATH (its numba cache in the work directory), so that
    both sides run in the same environment (a fresh virtualenv's shared libraries are
    more resident than an older one's: tens of MB of peak RSS)."""
    module = {"ocas_learn": "ocas", "cp_learn": "learn"}[name]
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if before:
        env["PYTHONPATH"] = str(before)
        env["NUMBA_CACHE_DIR"] = str(Path(work) / "numba-before")
    return [sys.executable, "-m", f"cpsvm.cli.{module}"], env


def cs_objective(W, X, y, C):
    """½|W|² + C·Σ max(0, max_{c≠y} 1 + s_c − s_y), W (k, d), y 1..k."""
    S = np.asarray(X @ W.T)
    idx = np.arange(len(y)), y.astype(int) - 1
    margins = S - S[idx][:, None] + 1.0
    margins[idx] = 0.0
    return 0.5 * float(np.sum(W * W)) + C * float(np.maximum(margins.max(axis=1), 0.0).sum())


def cpsvm_W(path, d, scale=1.0):
    from cpsvm.io.model_file import read_model

    model = read_model(path)
    W = np.zeros((model.W.shape[0], d))
    W[:, : min(d, model.W.shape[1])] = model.W[:, :d]
    return W / scale


def msvmocas_W(path, k, d):
    W = np.zeros((d, k))
    rows = np.loadtxt(path, ndmin=2)
    W[: len(rows)] = rows
    return W.T


def number(pattern, text, default=np.nan):
    found = re.findall(pattern, text)
    return float(found[-1]) if found else default


def median(xs):
    return statistics.median(xs) if xs else np.nan


# ------------------------------------------------------------------ part 1: many classes


def part_many(a, work):
    from cpsvm.io.svmlight import read_svmlight, write_svmlight

    data = many_classes(a.n, a.classes, a.features, seed=0)
    path = work / "many.svm"
    write_svmlight(path, data.X, data.y)
    ds = read_svmlight(path)
    X, y, n, d, k = ds.X, ds.y, ds.n_examples, ds.n_features, a.classes
    print(
        f"\n1. many classes: {n} documents, {d} features, {k} classes, {X.nnz} non-zeros "
        f"({X.nnz / n:.0f} a row, file {path.stat().st_size / 2**20:.1f} MB); TolRel "
        f"{a.tol:g}; W is {k * d * 8 / 2**20:.0f} MB",
        flush=True,
    )
    libocas = os.environ.get("CPSVM_LIBOCAS_DIR")
    msvmocas = shutil.which("msvmocas", path=libocas) if libocas else None
    if msvmocas is None:
        print("   msvmocas: skipped (set CPSVM_LIBOCAS_DIR to the directory holding it)")
    rows = []
    for C in a.Cs:
        tools = ["ocas_learn", "cp_learn"]
        if msvmocas:
            tools.insert(0, "msvmocas")
        if not a.no_svc:
            tools.append("LinearSVC")
        if a.before and C in a.before_Cs:
            tools.append("ocas_learn (before)")
        runs = {t: [] for t in tools}
        epsilon = None
        for r in range(a.repeats):
            for tool in tools:
                model = work / f"{tool.replace(' ', '_')}.model"
                log = work / f"{tool.replace(' ', '_')}.log"
                env = None
                if tool == "msvmocas":
                    cmd = [msvmocas, "-c", C, "-r", a.tol, "-v", "1", path, model]
                elif tool.startswith("ocas_learn"):
                    cmd, env = command("ocas_learn", a.before if "before" in tool else None, work)
                    cmd += ["-c", C, "-r", a.tol, "-v", "1", path, model]
                elif tool == "cp_learn":
                    cmd, env = command("cp_learn")
                    cmd += ["-c", 100 * n * C, "-e", epsilon, "-v", "1", path, model]
                else:
                    model = work / "svc.npy"
                    cmd = [sys.executable, "-c", SVC_SCRIPT, path, C, model, a.svc_iter]
                before = load()
                wall, peak, status, text = run(cmd, log, a.cap, env)
                if status:
                    print(f"   C={C:g} {tool}: exit status {status} after {wall:.0f} s", flush=True)
                    continue
                if tool == "msvmocas":
                    W = msvmocas_W(model, k, d)
                    primal, dual = (
                        number(r", Q_P=([0-9.e+-]+)", text),
                        number(r", Q_D=([0-9.e+-]+)", text),
                    )
                    iters = max(
                        (int(m) for m in re.findall(r"(?m)^\s*(\d+): tim=", text)), default=0
                    )
                elif tool.startswith("ocas_learn"):
                    W = cpsvm_W(model, d)
                    primal, dual = (
                        number(r"(?m)^Q_P: ([0-9.e+-]+)", text),
                        number(r"\s{3}Q_D: ([0-9.e+-]+)", text),
                    )
                    iters = int(number(r"Number of iterations: (\d+)", text, 0))
                    if epsilon is None and "before" not in tool:
                        # cp_learn's gap C·e (its scale: 100² × Crammer-Singer's) at
                        # TolRel × this objective: e = TolRel·F·100/(n·C).
                        epsilon = a.tol * primal * 100.0 / (n * C)
                elif tool == "cp_learn":
                    W = cpsvm_W(model, d, scale=100.0)
                    primal = number(r"pval=([0-9.e+-]+)", text) / 1e4
                    dual = number(r"dval=([0-9.e+-]+)", text) / 1e4
                    iters = int(number(r"Number of iterations: (\d+)", text, 0))
                else:
                    W = np.zeros((k, d))
                    coef = np.load(model)
                    classes = [int(c) for c in re.search(r"classes (.*)", text).group(1).split()]
                    W[np.array(classes) - 1, : coef.shape[1]] = coef
                    primal, dual = np.nan, np.nan
                    iters = int(number(r"iterations (\d+)", text, 0))
                F = cs_objective(W, X, y, C)
                runs[tool].append(
                    dict(wall=wall, peak=peak, F=F, primal=primal, dual=dual, iters=iters)
                )
                print(
                    f"   C={C:g} round {r + 1} {tool:20s} {wall:8.1f} s {peak:8.0f} MB  "
                    f"{iters:5d} it  F={F:.6f}  printed Q_P={primal:.6f} Q_D={dual:.6f}  "
                    f"(load {before:.1f} -> {load():.1f})",
                    flush=True,
                )
        best_dual = max(
            (x["dual"] for t in runs for x in runs[t] if np.isfinite(x["dual"])), default=np.nan
        )
        ref = runs.get("msvmocas") or []
        for tool in tools:
            xs = runs[tool]
            if not xs:
                continue
            F = median([x["F"] for x in xs])
            row = dict(
                C=C,
                tool=tool,
                wall=median([x["wall"] for x in xs]),
                wall_min=min(x["wall"] for x in xs),
                peak=median([x["peak"] for x in xs]),
                iters=median([x["iters"] for x in xs]),
                F=F,
                gap=(F - best_dual) / F,
            )
            if ref:
                row["t_ratio"] = row["wall"] / median([x["wall"] for x in ref])
                row["m_ratio"] = row["peak"] / median([x["peak"] for x in ref])
            rows.append(row)
    if a.before and a.w34_iterations:
        print(
            f"\n   cp_learn -w 3 and -w 4 (-c {100 * n:g}, C_cs = 1), {a.w34_iterations} "
            "iterations each, before and after:",
            flush=True,
        )
        for w in ("3", "4"):
            for side in ("before", "after"):
                cmd, env = command("cp_learn", a.before if side == "before" else None, work)
                cmd += [
                    "-w",
                    w,
                    "-c",
                    100 * n,
                    "-#",
                    a.w34_iterations,
                    "-v",
                    "1",
                    path,
                    work / "w34.model",
                ]
                before = load()
                wall, peak, status, text = run(cmd, work / "w34.log", a.cap, env)
                iters = int(number(r"Number of iterations: (\d+)", text, 0))
                print(
                    f"   -w {w} {side:6s} {wall:8.1f} s {peak:8.0f} MB  {iters} it  "
                    f"pval={number(r'pval=([0-9.e+-]+)', text):.3f}  (load {before:.1f} -> "
                    f"{load():.1f})",
                    flush=True,
                )
    print(
        f"\n   medians over {a.repeats} rounds; gap = (F - D*)/F, D* the best dual bound "
        "printed; ratios to msvmocas's medians"
    )
    print(
        f"   {'C':>4s} {'tool':20s} {'wall s':>8s} {'min s':>8s} {'peak MB':>8s} "
        f"{'iters':>6s} {'F (recomputed)':>16s} {'gap':>9s} {'time/ms':>8s} {'RSS/ms':>7s}"
    )
    for row in rows:
        print(
            f"   {row['C']:4g} {row['tool']:20s} {row['wall']:8.1f} {row['wall_min']:8.1f} "
            f"{row['peak']:8.0f} {row['iters']:6.0f} {row['F']:16.6f} {row['gap']:9.5f} "
            f"{row.get('t_ratio', np.nan):8.3f} {row.get('m_ratio', np.nan):7.3f}"
        )
    return rows


# ------------------------------------------------------------------ part 2: small sets

SMALL = [
    ("dna.scale", ["ocas_learn", "-c", "1"]),
    ("satimage.scale", ["ocas_learn", "-c", "1"]),
    ("dna.scale", ["ocas_learn", "-c", "10"]),
    ("satimage.scale", ["ocas_learn", "-c", "10"]),
    ("dna.scale", ["cp_learn", "-c", "1000"]),
    ("satimage.scale", ["cp_learn", "-c", "1000"]),
    ("dna.scale", ["cp_learn", "-w", "3", "-c", "1000"]),
    ("satimage.scale", ["cp_learn", "-w", "3", "-c", "1000"]),
    ("dna.scale", ["cp_learn", "-w", "4", "-c", "1000"]),
    ("satimage.scale", ["cp_learn", "-w", "4", "-c", "1000"]),
]


def part_small(a, work):
    if not a.before:
        print("\n2. small sets before/after: skipped (give --before, main's checkout)")
        return []
    print(
        f"\n2. small sets, this checkout (after) against {a.before} (before), "
        f"{a.small_repeats} interleaved rounds",
        flush=True,
    )
    rows = []
    for name, args in SMALL:
        times = {"before": [], "after": []}
        peaks = {"before": [], "after": []}
        loads = [load()]
        for _ in range(a.small_repeats):
            for side in ("before", "after"):
                cmd, env = command(args[0], a.before if side == "before" else None, work)
                cmd += [*args[1:], "-v", "0", a.data / name, work / "s.model"]
                wall, peak, status, text = run(cmd, work / "s.log", a.cap, env)
                if status:
                    raise SystemExit(f"{' '.join(map(str, cmd))}: exit {status}\n{text}")
                times[side].append(wall)
                peaks[side].append(peak)
        loads.append(load())
        ratios = [x / y for x, y in zip(times["after"], times["before"])]
        row = dict(
            data=name,
            cmd=" ".join(args),
            before=median(times["before"]),
            after=median(times["after"]),
            before_min=min(times["before"]),
            after_min=min(times["after"]),
            ratio=median(ratios),
            ratio_min=min(ratios),
            ratio_max=max(ratios),
            peak_before=median(peaks["before"]),
            peak_after=median(peaks["after"]),
        )
        rows.append(row)
        print(
            f"   {name:15s} {row['cmd']:28s} before {row['before_min']:6.2f}/"
            f"{row['before']:6.2f} s  after {row['after_min']:6.2f}/{row['after']:6.2f} s "
            f"(min/median)  after/before {row['ratio']:.3f} [{row['ratio_min']:.3f}, "
            f"{row['ratio_max']:.3f}]  peak {row['peak_before']:.0f} -> "
            f"{row['peak_after']:.0f} MB  (load {loads[0]:.1f} -> {loads[1]:.1f})",
            flush=True,
        )
    return rows


def warm(a, work):
    from cpsvm.io.svmlight import write_svmlight

    small = many_classes(300, n_classes=12, n_features=3000, tokens=60, seed=1)
    path = work / "warm.svm"
    write_svmlight(path, small.X, small.y)
    for before in [None] + ([a.before] if a.before else []):
        for args in (
            ["ocas_learn", "-c", "1"],
            ["cp_learn", "-c", "1000"],
            ["cp_learn", "-w", "3", "-c", "1000"],
            ["cp_learn", "-w", "4", "-c", "1000"],
        ):
            for data in (path, a.data / "satimage.scale", a.data / "dna.scale"):
                cmd, env = command(args[0], before, work)
                subprocess.run(
                    [str(c) for c in cmd + args[1:] + ["-v", "0", data, work / "warm.model"]],
                    check=True,
                    env=env,
                    cwd=work,
                )


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", default="many,small")
    p.add_argument("--n", type=int, default=6400)
    p.add_argument("--classes", type=int, default=100)
    p.add_argument("--features", type=int, default=50_000)
    p.add_argument("--Cs", default="1,10")
    p.add_argument("--tol", type=float, default=0.01)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--before", default=None, help="the 'before' checkout (e.g. /work/main)")
    p.add_argument("--before-Cs", default="1")
    p.add_argument("--small-repeats", type=int, default=5)
    p.add_argument(
        "--w34-iterations",
        type=int,
        default=40,
        help="cp_learn -w 3/-w 4 before/after on the many-class set (0: skip)",
    )
    p.add_argument("--no-svc", action="store_true")
    p.add_argument("--svc-iter", type=int, default=1000)
    p.add_argument("--cap", type=float, default=3600.0)
    p.add_argument(
        "--data",
        type=Path,
        default=DATA,
        help=f"dna.scale's and satimage.scale's directory (default {DATA})",
    )
    a = p.parse_args()
    a.Cs = [float(c) for c in a.Cs.split(",")]
    a.before_Cs = [float(c) for c in a.before_Cs.split(",")] if a.before_Cs else []
    parts = a.parts.split(",")
    with tempfile.TemporaryDirectory(prefix="cpsvm-many-") as tmp:
        work = Path(tmp)
        print(
            f"python {sys.executable} {sys.version.split()[0]}, {os.cpu_count()} cpus, "
            f"load {load():.1f}",
            flush=True,
        )
        for before in [None] + ([a.before] if a.before else []):
            cmd, env = command("ocas_learn", before, work)
            where = subprocess.run(
                [cmd[0], "-c", "import cpsvm; print(cpsvm.__file__)"],
                env=env,
                cwd=work,
                capture_output=True,
                text=True,
            ).stdout
            print(f"   {'before' if before else 'after'}: cpsvm from {where.strip()}")
        warm(a, work)
        if "many" in parts:
            part_many(a, work)
        if "small" in parts:
            part_small(a, work)


if __name__ == "__main__":
    main()
