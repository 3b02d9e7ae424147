"""Dual coordinate descent (cpsvm.engine.dcd) and OCAS against LIBLINEAR's ``train``
(issue 31): the solver called inside this process against LIBLINEAR's whole process.

Per data set and C, in rounds (LIBLINEAR, DCD, OCAS, LIBLINEAR, ... --repeats times):
- LIBLINEAR: ``$LIBLINEAR_TRAIN -s 3`` (hinge loss, dual CD) or ``-s 4`` (Crammer-Singer)
  ``-c C`` at its default -e 0.1 and no bias (-B -1, its default), wall time of the
  process (its start-up is ~0; it includes reading the file); the weights are read back
  from its model file;
- DCD: :func:`binary_hinge_dcd` or :func:`crammer_singer_dcd` on the data read here, at
  the default stopping rule (the duality gap, TolRel --tol, 0.01 as ocas_learn's -r) and
  with --pg LIBLINEAR's own rule (max − min projected gradient <= 0.1); seconds of the
  call, outer passes, gap checks;
- OCAS: :func:`cpsvm.solvers.ocas.train` (ocas_learn's solver, TolRel --tol), seconds
  of the call and iterations.
Every primal objective ½|w|² + C·Σ loss_i (SVMlight's convention, the hinge or the
Crammer-Singer loss) is recomputed here from the weights each run returned, with the
relative distance to the best dual bound printed by DCD (a certified gap for every run);
test accuracies from the weights. Medians over the rounds; ratios to LIBLINEAR's median.
The process's first DCD solve (numba's cache loaded, or compiled) is timed apart.

Data (--sets; --Cs replaces every set's C values): a9a (C = 1, ../shared/data/a9a,
a9a.t), dna (C = 1, dna.scale there), ijcnn1 (C = 1, DIR/ijcnn1/ijcnn1 and ijcnn1.t),
sector (LIBSVM's 105-class set, C = 1 and 10, DIR/sector/sector.scale and
sector.t.scale; generated in its shape by benchmarks/many_classes.py when absent),
satimage (C = 1, ../shared/data), text1m (C = 1, DIR/text1m.svm and text1m.t.svm, 1M x
20k text-like rows of bench_margin_bounds.text_like, written there when absent: 1.2M
rows drawn with seed 0, the last 200k the test set).
DIR is --data (default $CPSVM_BENCH_DATA, else ../tools/data beside the checkout).

LIBLINEAR is found through LIBLINEAR_TRAIN (the path of its ``train``); without it the
LIBLINEAR runs are skipped with a message (nothing of LIBLINEAR is in this repository).

Usage: OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_liblinear.py
       [--sets a9a,sector,satimage,text1m] [--repeats 3] [--tol 0.01] [--no-ocas]
       [--ocas-rounds N] [--pg] [--threads 2] [--data DIR] [--Cs 0.1,1,10] [--first-call]

--first-call: a fresh process's first call of each solver, with an empty numba cache
(compilation) and with the cache that run wrote.

--processes: whole processes instead (the issue's goals for sector and text1m): in
interleaved rounds, LIBLINEAR's ``train -s 3|4 -c C`` and ``ocas_learn -c C`` at its
defaults (this checkout's, beside the Python running this script), each reading the file
and writing its model; wall and CPU seconds (user + sys of the child), medians over the
rounds, ratios ours/LIBLINEAR; test accuracy from both model files. Then each model
classifies the test file the same way: ``cp_classify -v 0`` against LIBLINEAR's
``predict`` (found through LIBLINEAR_PREDICT; skipped when unset). A first row times
``ocas_learn`` on a two-line file: the start-up floor of every run.
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

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpsvm.engine.dcd import DcdParams, binary_hinge_dcd, crammer_singer_dcd  # noqa: E402
from cpsvm.io.svmlight import read_svmlight, write_svmlight  # noqa: E402
from cpsvm.models import fit_columns  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
# data set -> (training file, test file, multiclass, Cs)
SETS = {
    "a9a": ("{shared}/a9a", "{shared}/a9a.t", False, (1.0,)),
    "sector": ("{data}/sector/sector.scale", "{data}/sector/sector.t.scale", True, (1.0, 10.0)),
    "satimage": ("{shared}/satimage.scale", "{shared}/satimage.scale.t", True, (1.0,)),
    "text1m": ("{data}/text1m.svm", "{data}/text1m.t.svm", False, (1.0,)),
    "ijcnn1": ("{data}/ijcnn1/ijcnn1", "{data}/ijcnn1/ijcnn1.t", False, (1.0,)),
    "dna": ("{shared}/dna.scale", "{shared}/dna.scale.t", True, (1.0,)),
}
# A fresh process's first call of each solver on a small set: with an empty numba cache
# (compilation) and again with the cache it wrote (what every later run pays).
FIRST_CALL = """
import time, numpy as np
from cpsvm.engine.dcd import binary_hinge_dcd, crammer_singer_dcd
from cpsvm.io.svmlight import read_svmlight
X, y = read_svmlight({heart!r}).X, read_svmlight({heart!r}).y
t0 = time.perf_counter(); binary_hinge_dcd(X, y, 1.0); t1 = time.perf_counter()
crammer_singer_dcd(X, (y > 0) + 1.0, 1.0); t2 = time.perf_counter()
print(f"binary {{t1 - t0:.2f}} s, Crammer-Singer {{t2 - t1:.2f}} s")
"""


def load():
    return os.getloadavg()[0]


def primal(w, X, y, C, multiclass):
    """½|w|² + C·Σ loss_i from the weights: w (d,) hinge, (d, k) Crammer-Singer."""
    if not multiclass:
        return 0.5 * float(w @ w) + C * float(np.maximum(0.0, 1.0 - y * (X @ w)).sum())
    S = np.asarray(X @ w)
    rows, true = np.arange(len(y)), y.astype(np.int64) - 1
    margins = S - S[rows, true][:, None] + 1.0
    margins[rows, true] = 0.0
    return 0.5 * float(np.sum(w * w)) + C * float(np.maximum(0.0, margins.max(axis=1)).sum())


def accuracy(w, X, y, multiclass):
    X = fit_columns(X, w.shape[0])
    if multiclass:
        return 100.0 * float(np.mean(np.argmax(np.asarray(X @ w), axis=1) + 1 == y))
    return 100.0 * float(np.mean(np.where(X @ w > 0, 1.0, -1.0) == y))


def liblinear_weights(path, d, n_classes, multiclass):
    """The weights of a LIBLINEAR model file in cpsvm's layout: (d,) for +1 against −1,
    (d, k) with column c − 1 class c's."""
    with open(path) as f:
        header = {}
        for line in f:
            if line.strip() == "w":
                break
            key, *values = line.split()
            header[key] = values
        W = np.array([[float(v) for v in line.split()] for line in f if line.strip()])
    labels = [int(float(v)) for v in header["label"]]
    d = len(W) if d is None else d
    W = np.vstack([W, np.zeros((d - len(W), W.shape[1]))])[:d]
    if not multiclass:
        return W[:, 0] * (1.0 if labels[0] == 1 else -1.0)
    out = np.zeros((d, n_classes))
    for column, label in enumerate(labels):
        out[:, label - 1] = W[:, column]
    return out


def ensure_data(name, paths, data_dir):
    train, test = paths
    if Path(train).exists() and Path(test).exists():
        return
    if name == "sector":
        from many_classes import many_classes

        print(f"{train} absent: generating a set of sector's shape (6,412 x 55,197, 105 classes)")
        Path(train).parent.mkdir(parents=True, exist_ok=True)
        for path, n, seed in ((train, 6412, 0), (test, 3207, 1)):
            ds = many_classes(n, n_classes=105, n_features=55197, seed=seed)
            write_svmlight(path, ds.X, ds.y)
    elif name == "text1m":
        from bench_margin_bounds import text_like

        print(f"{train} absent: generating 1.2M x 20k text-like rows (seed 0) into {data_dir}")
        X, y = text_like(1_200_000, 20_000, seed=0)
        write_svmlight(train, X[:1_000_000], y[:1_000_000])
        write_svmlight(test, X[1_000_000:], y[1_000_000:])
    else:
        raise SystemExit(f"missing {train} or {test}")


def run_liblinear(exe, train_file, C, multiclass, d, k, workdir):
    model = Path(workdir) / "liblinear.model"
    cmd = [exe, "-s", "4" if multiclass else "3", "-c", repr(C), "-q", train_file, str(model)]
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    return seconds, liblinear_weights(model, d, k, multiclass)


def run_dcd(X, y, C, multiclass, params):
    started = time.perf_counter()
    if multiclass:
        r = crammer_singer_dcd(X, y, C, params=params)
    else:
        r = binary_hinge_dcd(X, y, C, params=params)
    return time.perf_counter() - started, r


def run_ocas(X, y, C, tol, threads):
    from cpsvm.data import Dataset
    from cpsvm.solvers.ocas import OcasParams, train

    started = time.perf_counter()
    model, info = train(Dataset(X, y), OcasParams(C=C, tol_rel=tol, n_threads=threads))
    seconds = time.perf_counter() - started
    w = model.W.T if hasattr(model, "W") else model.w
    return seconds, np.ascontiguousarray(w), info.result.iterations


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="a9a,sector,satimage,text1m")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tol", type=float, default=0.01)
    parser.add_argument("--pg", action="store_true", help="also DCD at LIBLINEAR's rule")
    parser.add_argument("--no-ocas", action="store_true")
    parser.add_argument(
        "--ocas-rounds", type=int, default=None, help="OCAS in the first rounds only"
    )
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--data", default=os.environ.get("CPSVM_BENCH_DATA"))
    parser.add_argument("--Cs", default=None, help="C values for every set (default: its own)")
    parser.add_argument("--first-call", action="store_true", help="compile and cache-load times")
    parser.add_argument("--processes", action="store_true", help="whole processes (see above)")
    a = parser.parse_args()
    if a.first_call:
        first_calls()
    data_dir = Path(a.data) if a.data else REPO.parent / "tools" / "data"
    exe = os.environ.get("LIBLINEAR_TRAIN")
    if not exe or not Path(exe).exists():
        print("LIBLINEAR_TRAIN is not set to LIBLINEAR's train: its runs are skipped")
        exe = None
    if a.processes:
        return processes(a, data_dir, exe)
    first_call = None
    for name in a.sets.split(","):
        train_tpl, test_tpl, multiclass, Cs = SETS[name]
        Cs = [float(c) for c in a.Cs.split(",")] if a.Cs else Cs
        paths = [t.format(shared=SHARED, data=data_dir) for t in (train_tpl, test_tpl)]
        ensure_data(name, paths, data_dir)
        t0 = time.perf_counter()
        train_set, test_set = read_svmlight(paths[0]), read_svmlight(paths[1])
        X, y = train_set.X, train_set.y
        n, d = X.shape
        k = int(y.max()) if multiclass else 2
        print(
            f"\n== {name}: {n} x {d}, {X.nnz} non-zeros, {k} classes "
            f"(read in {time.perf_counter() - t0:.1f} s here)"
        )
        for C in Cs:
            runs = {}  # label -> list of (seconds, passes, weights, extra)
            variants = [("dcd", DcdParams(tol_rel=a.tol, n_threads=a.threads))]
            if a.pg:
                variants.append(("dcd-pg", DcdParams(stopping="pg", n_threads=a.threads)))
            with tempfile.TemporaryDirectory() as workdir:
                for round_ in range(a.repeats):
                    before = load()
                    if exe:
                        s, w = run_liblinear(exe, paths[0], C, multiclass, d, k, workdir)
                        runs.setdefault("liblinear", []).append((s, None, w, ""))
                    for label, params in variants:
                        s, r = run_dcd(X, y, C, multiclass, params)
                        if first_call is None:  # it loaded numba's cache: timed apart
                            first_call = s
                            s, r = run_dcd(X, y, C, multiclass, params)
                            first_call = (first_call, s)
                        extra = f"checks {r.checks}, certified gap {r.gap / r.primal:.2e}"
                        runs.setdefault(label, []).append((s, r.iterations, r.w, extra, r.dual))
                    if not a.no_ocas and (a.ocas_rounds is None or round_ < a.ocas_rounds):
                        s, w, iterations = run_ocas(X, y, C, a.tol, a.threads)
                        runs.setdefault("ocas", []).append((s, iterations, w, ""))
                    print(f"   C={C:g} round {round_ + 1}: load {before:.1f} -> {load():.1f}")
            report(runs, X, y, test_set, C, multiclass)
    if first_call is not None:
        print(
            f"\nthe process's first DCD solve (numba's cache loaded, or compiled): "
            f"{first_call[0]:.2f} s; the same solve again: {first_call[1]:.2f} s"
        )


def timed_process(cmd):
    """(wall s, CPU s) of one run of ``cmd`` (its output discarded). (Not its peak RSS:
    the child's count starts with this process's pages at the fork.)"""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{cmd} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def processes(a, data_dir, exe):
    from cpsvm.io.model_file import read_model

    ocas_learn = str(Path(sys.executable).parent / "ocas_learn")
    cp_classify = str(Path(sys.executable).parent / "cp_classify")
    predict = os.environ.get("LIBLINEAR_PREDICT") if exe else None
    if exe and not predict:
        print("LIBLINEAR_PREDICT is not set to LIBLINEAR's predict: its runs are skipped")
    with tempfile.TemporaryDirectory() as workdir:
        tiny = Path(workdir) / "tiny.svm"
        tiny.write_text("+1 1:0.5 3:1\n-1 2:1\n")
        timed_process([ocas_learn, "-c", "1", str(tiny), str(tiny) + ".m"])  # numba's cache
        floor = [
            timed_process([ocas_learn, "-c", "1", str(tiny), str(tiny) + ".m"]) for _ in "12345"
        ]
        print(f"start-up floor (ocas_learn on 2 lines): {_medians(floor)}")
        for name in a.sets.split(","):
            train_tpl, test_tpl, multiclass, Cs = SETS[name]
            Cs = [float(c) for c in a.Cs.split(",")] if a.Cs else Cs
            train, test = [t.format(shared=SHARED, data=data_dir) for t in (train_tpl, test_tpl)]
            ensure_data(name, (train, test), data_dir)
            test_set = read_svmlight(test)
            for C in Cs:
                ours_model, ll_model = Path(workdir) / "ours.model", Path(workdir) / "ll.model"
                ours = [ocas_learn, "-c", repr(C), "-v", "0", train, str(ours_model)]
                theirs = [exe, "-s", "4" if multiclass else "3", "-c", repr(C), "-q", train,
                          str(ll_model)] if exe else None  # fmt: skip
                timed_process(ours)  # numba's cache for this problem
                runs = {"ocas_learn": [], "liblinear": []}
                loads = [load()]
                for _ in range(a.repeats):
                    if theirs:
                        runs["liblinear"].append(timed_process(theirs))
                    runs["ocas_learn"].append(timed_process(ours))
                loads.append(load())
                X_test, y_test = test_set.X, test_set.y
                ours_acc = 100.0 * np.mean(read_model(ours_model).predict(X_test) == y_test)
                acc = f"test accuracy ocas_learn {ours_acc:.2f}"
                if theirs:
                    k = int(y_test.max()) if multiclass else 2
                    w_ll = liblinear_weights(ll_model, None, k, multiclass)
                    acc += f", LIBLINEAR {accuracy(w_ll, X_test, y_test, multiclass):.2f}"
                rounds = f"{a.repeats} rounds, load {loads[0]:.1f} -> {loads[1]:.1f}"
                print(f"\n== {name} C={C:g} ({rounds})")
                _print_runs(runs, "ocas_learn", "liblinear")
                print(f"   {acc}")
                classify(a.repeats, cp_classify, predict, test, ours_model, ll_model, workdir)


def classify(repeats, cp_classify, predict, test, ours_model, ll_model, workdir):
    """Both models on the test file, whole processes in interleaved rounds."""
    out = str(Path(workdir) / "predictions")
    ours = [cp_classify, "-v", "0", test, str(ours_model), out]
    theirs = [predict, test, str(ll_model), out] if predict else None
    timed_process(ours)  # numba's cache for this model kind
    runs = {"cp_classify": [], "predict": []}
    for _ in range(repeats):
        if theirs:
            runs["predict"].append(timed_process(theirs))
        runs["cp_classify"].append(timed_process(ours))
    _print_runs(runs, "cp_classify", "predict")


def _print_runs(runs, ours, theirs):
    """Each command's medians, and ours/theirs when both ran."""
    for label, rs in runs.items():
        if rs:
            print(f"   {label:11s} {_medians(rs)}")
    if runs[theirs]:
        ratio = [
            statistics.median(r[i] for r in runs[ours])
            / statistics.median(r[i] for r in runs[theirs])
            for i in (0, 1)
        ]
        print(f"   ratio {ours}/{theirs}: wall {ratio[0]:.2f}x, CPU {ratio[1]:.2f}x")


def _medians(runs):
    wall, cpu = (statistics.median(r[i] for r in runs) for i in range(2))
    low, high = min(r[0] for r in runs), max(r[0] for r in runs)
    return f"wall {wall:.2f} s ({low:.2f}-{high:.2f}), CPU {cpu:.2f} s"


def first_calls():
    code = FIRST_CALL.format(heart=str(REPO / "tests" / "fixtures" / "heart_scale"))
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(REPO))
        for what in ("empty numba cache (compiling)", "cache written by that run"):
            started = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            ).stdout.strip()
            print(f"first calls, {what}: {out} (process {time.perf_counter() - started:.2f} s)")


def report(runs, X, y, test_set, C, multiclass):
    duals = [run[4] for label in runs if label.startswith("dcd") for run in runs[label]]
    best_dual = max(duals) if duals else -np.inf
    reference = statistics.median(s for s, *_ in runs["liblinear"]) if "liblinear" in runs else None
    print(
        f"   {'C=' + format(C, 'g'):8s} {'method':10s} {'median s':>9s} {'ratio':>6s} "
        f"{'passes':>7s} {'primal':>14s} {'to dual':>9s} {'test acc':>8s}"
    )
    for label, rs in runs.items():
        seconds = statistics.median(s for s, *_ in rs)
        s, passes, w, extra = rs[-1][:4]
        P = primal(w, X, y, C, multiclass)
        ratio = f"{seconds / reference:.2f}x" if reference else "-"
        acc = accuracy(w, test_set.X, test_set.y, multiclass)
        print(
            f"   {'':8s} {label:10s} {seconds:9.3f} {ratio:>6s} {passes or '-':>7} {P:14.4f} "
            f"{(P - best_dual) / P:9.2e} {acc:8.2f}  {extra}"
        )


if __name__ == "__main__":
    sys.exit(main())
