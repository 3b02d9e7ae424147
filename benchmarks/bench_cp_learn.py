"""Benchmark cutting-plane training (``cpsvm.solvers.one_slack.train``) against liblinear.

Measures:
1. the columns of Joachims, Finley & Yu (MLJ 2009) Table 1 at small scale: time, oracle
   calls (per-example argmax calls), iterations, support vectors (cuts with alpha > 0)
   and primal objective of 1-slack (-w 9, -w 3, -w 4) vs n-slack (-w 0, under --time-limit) on
   the first --slice examples of a9a (binary, C_light = 1, no bias) and of satimage
   (multiclass, C_cs = 0.1), eps = 0.1, with a tol=1e-8 LinearSVC as the reference.
2. full a9a (C_light = 1, no bias): train() -w 9 / 3 / 4 at eps 0.1 and 0.01 vs sklearn
   LinearSVC(loss="hinge") at tol 1e-8 and at its default 1e-4, time ratios; plus the
   whole-process time (median of --repeats) of the cp_learn CLI vs a python -c script
   that reads a9a with sklearn and fits LinearSVC.
3. full satimage: train() -w 9 and -w 4 at eps 0.1 / 0.01 (and -w 3 at 0.1) vs
   LinearSVC(multi_class="crammer_singer", tol=1e-8): objective, times, test accuracy.

Every objective is recomputed from the model's weights: SVMlight's 1/2|w|^2 +
C_light*sum(hinge) (binary) or Crammer-Singer's (multiclass, cp_learn's W / 100), next to
the primal train() reports (scaled to the same units). rel_gap is to the best objective
found; "<=C*eps" checks the 1-slack guarantee objective - best <= C*eps (C*eps/1e4 in CS
units). time_s is wall time, cpu_s process CPU over all threads. Numba is warmed by small
train() runs first. --blas-threads N limits BLAS threads, here and in the subprocesses
(multithreaded OpenBLAS on the master QP's small matrices is slow on a loaded machine).

Usage: .venv/bin/python benchmarks/bench_cp_learn.py [--slice 2000] [--time-limit 120]
       [--repeats 3] [--blas-threads N]
"""

import argparse
import math
import os

# The library leaves numba's threading layer to the process; the commands choose
# workqueue (cpsvm.cli.common.configure_process), and so does this measure of them.
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.svm import LinearSVC
from threadpoolctl import threadpool_info, threadpool_limits

from cpsvm.io.svmlight import read_svmlight
from cpsvm.models import fit_columns
from cpsvm.solvers.one_slack import StructParams, train

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data"
CP_LEARN = Path(sys.executable).with_name("cp_learn")
SKLEARN_SCRIPT = """import numpy as np, sys
from sklearn.datasets import load_svmlight_file
from sklearn.svm import LinearSVC
X, y = load_svmlight_file(sys.argv[1])
X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
LinearSVC(loss="hinge", fit_intercept=False, C=1.0, max_iter=10**6).fit(X, y)
"""


def int32_csr(X):
    """Copy of X with int32 index arrays (sklearn 1.9's liblinear rejects int64)."""
    X = X.copy()
    X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
    return X


def binary_objective(w, X, y, c_light):
    return 0.5 * float(w @ w) + c_light * float(np.maximum(0.0, 1.0 - y * (X @ w)).sum())


def cs_objective(W, X, y, c_cs):
    """1/2 sum_y |w_y|^2 + C_cs sum_i max(0, max_{y' != y_i} 1 + w_y'.x_i - w_yi.x_i)."""
    s = np.asarray(X @ W.T)
    idx, yi = np.arange(len(y)), np.asarray(y, dtype=np.int64) - 1
    true = s[idx, yi].copy()
    s[idx, yi] = -np.inf
    return 0.5 * float((W * W).sum()) + c_cs * float(np.maximum(0.0, 1.0 + s.max(1) - true).sum())


def timed(fn):
    t, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t, time.process_time() - cpu


def run_cp(ds, multiclass, c_nat, eps, algorithm, time_limit=math.inf):
    """train() at the natural C (C_light or C_cs); a row with objectives in natural units."""
    n = ds.n_examples
    C = 100.0 * n * c_nat if multiclass else n * c_nat / 100.0
    params = StructParams(
        C=C,
        epsilon=eps,
        algorithm=algorithm,
        problem="multiclass" if multiclass else "binary",
        time_limit=time_limit,
        options={"bias": 0.0},
    )
    (model, info), seconds, cpu = timed(lambda: train(ds, params))
    r, scale = info.result, 1e4 if multiclass else 1.0
    obj = (
        cs_objective(model.W / 100.0, ds.X, ds.y, c_nat)
        if multiclass
        else binary_objective(model.w, ds.X, ds.y, c_nat)
    )
    return dict(
        name=f"cp -w {algorithm}",
        eps=eps,
        seconds=seconds,
        cpu=cpu,
        calls=r.oracle_calls,
        iters=r.iterations,
        sv=info.n_sv,
        primal=r.primal / scale,
        obj=obj,
        dual=r.dual / scale,
        slack=C * eps / scale,
        status=r.status,
        model=model,
    )


def run_linearsvc(X, y, multiclass, c_nat, tol):
    X = int32_csr(X)
    kw = dict(multi_class="crammer_singer") if multiclass else dict(loss="hinge")
    clf = LinearSVC(fit_intercept=False, C=c_nat, tol=tol, max_iter=10**6, **kw)
    _, seconds, cpu = timed(lambda: clf.fit(X, y))
    if multiclass:
        W = np.zeros((int(y.max()), X.shape[1]))
        W[clf.classes_.astype(int) - 1] = clf.coef_
        obj = cs_objective(W, X, y, c_nat)
    else:
        W = clf.coef_.ravel()
        obj = binary_objective(W, X, y, c_nat)
    return dict(
        name="LinearSVC",
        eps=tol,
        seconds=seconds,
        cpu=cpu,
        calls=None,
        iters=int(clf.n_iter_),
        sv=None,
        primal=None,
        obj=obj,
        dual=None,
        slack=None,
        status="",
        W=W,
    )


def finish(rows):
    """Relative gap of every row to the best objective; whether it is within C*eps."""
    best = min(r["obj"] for r in rows)
    for r in rows:
        r["gap"] = (r["obj"] - best) / best
        r["within"] = (
            "" if r["slack"] is None else ("yes" if r["obj"] - best <= r["slack"] else "NO")
        )
    return best


def fmt(v, spec):
    """format(v, spec), or a right-aligned "-" of the same width for a missing value."""
    return format(v, spec) if v is not None else format("-", ">" + spec.split(".")[0].rstrip("df"))


def print_table(title, rows, extra=()):
    print(f"\n== {title}")
    head = (
        f"{'solver':<9} {'eps/tol':>7} {'time_s':>7} {'cpu_s':>7} {'oracle_calls':>12} "
        f"{'iters':>6} {'SV':>4} {'primal':>11} {'objective':>11} {'rel_gap':>8} "
        f"{'<=C*eps':>7}"
    )
    print(head + "".join(f" {k:>{w}}" for k, w, _ in extra) + "  status")
    for r in rows:
        print(
            f"{r['name']:<9} {r['eps']:>7.0e} {r['seconds']:7.2f} {r['cpu']:7.2f} "
            f"{fmt(r['calls'], '12d')} {fmt(r['iters'], '6d')} {fmt(r['sv'], '4d')} "
            f"{fmt(r['primal'], '11.4f')} {r['obj']:11.4f} {r['gap']:8.1e} {r['within']:>7}"
            + "".join(f" {fmt(r.get(k), s)}" for k, w, s in extra)
            + f"  {r['status']}"
        )


def whole_process(cmd, repeats, env):
    """Median wall and CPU (user + sys of the child) seconds of running cmd."""
    walls, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        walls.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slice", type=int, default=2000)
    ap.add_argument("--time-limit", type=float, default=120.0, help="n-slack (-w 0) limit, s")
    ap.add_argument("--repeats", type=int, default=3, help="whole-process runs (median)")
    ap.add_argument(
        "--blas-threads",
        type=int,
        default=None,
        help="limit BLAS threads (default: the library's own choice)",
    )
    args = ap.parse_args()
    env = dict(os.environ)
    if args.blas_threads is not None:
        threadpool_limits(args.blas_threads, user_api="blas")
        env["OPENBLAS_NUM_THREADS"] = str(args.blas_threads)
    started = time.perf_counter()
    a9a, sat = read_svmlight(DATA / "a9a"), read_svmlight(DATA / "satimage.scale")
    sat_test = read_svmlight(DATA / "satimage.scale.t")
    blas = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    print(
        f"a9a {a9a.X.shape}, satimage {sat.X.shape}, satimage.t {sat_test.X.shape}; "
        f"{os.cpu_count()} CPUs, BLAS threads {blas}, load average "
        f"{os.getloadavg()[0]:.1f}; numba warm-up...",
        flush=True,
    )
    for ds, mc in ((a9a, False), (sat, True)):  # compile / load numba code outside timings
        for w in (0, 3, 4, 9):
            run_cp(ds.subset(slice(0, 200)), mc, 1.0, 0.1, w)
    summary = []

    # 1. Table 1 columns on slices.
    for label, ds, mc, c in (("a9a", a9a, False, 1.0), ("satimage", sat, True, 0.1)):
        part = ds.subset(slice(0, args.slice))
        rows = [
            run_cp(part, mc, c, 0.1, w, args.time_limit if w == 0 else math.inf)
            for w in (3, 4, 0, 9)
        ]
        rows.append(run_linearsvc(part.X, part.y, mc, c, 1e-8))
        finish(rows)
        print_table(
            f"Table 1 at small scale: {label}[:{args.slice}], "
            f"{'C_cs = 0.1' if mc else 'C_light = 1, no bias'}, eps = 0.1",
            rows,
        )
        print(
            "|reported primal - recomputed objective| / objective: "
            + ", ".join(
                f"{r['name']} {abs(r['primal'] - r['obj']) / r['obj']:.1e}"
                for r in rows
                if r["primal"] is not None
            ),
            flush=True,
        )
        w3, w4, w0, w9 = rows[:4]
        summary.append(
            f"-w 4 fewer oracle calls than -w 3 ({label} slice): "
            f"{'yes' if w4['calls'] < w3['calls'] else 'no'} ({w4['calls']} vs "
            f"{w3['calls']}; time {w4['seconds']:.2f} vs {w3['seconds']:.2f} s)"
        )
        summary.append(
            f"n-slack on {label} slice: {w0['status']} after {w0['seconds']:.1f} s, "
            f"objective gap {w0['gap']:.1e}"
        )
        summary.append(
            f"-w 9 / -w 3 iterations on {label} slice: {w9['iters']} / "
            f"{w3['iters']}, time {w9['seconds']:.2f} / {w3['seconds']:.2f} s"
        )

    # 2. Full a9a vs LinearSVC.
    rows = [run_cp(a9a, False, 1.0, eps, w) for w in (9, 3, 4) for eps in (0.1, 0.01)]
    rows += [run_linearsvc(a9a.X, a9a.y, False, 1.0, tol) for tol in (1e-8, 1e-4)]
    best = finish(rows)
    lower = max(r["dual"] for r in rows if r["dual"] is not None)
    for r in rows:
        r["ratio"] = r["seconds"] / rows[-1]["seconds"]
    print_table(
        "full a9a, C_light = 1 (cp C = 325.61), no bias; ratio = time_s / LinearSVC tol=1e-4",
        rows,
        extra=(("ratio", 7, "7.1f"),),
    )
    print(f"best objective {best:.4f}; lower bound (largest cp dual) {lower:.4f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        cli, cli_cpu = whole_process(
            [
                str(CP_LEARN),
                "-c",
                f"{a9a.n_examples / 100:g}",
                "--b",
                "0",
                "-e",
                "0.1",
                str(DATA / "a9a"),
                str(Path(tmp) / "model"),
            ],
            args.repeats,
            env,
        )
        skl, skl_cpu = whole_process(
            [sys.executable, "-c", SKLEARN_SCRIPT, str(DATA / "a9a")], args.repeats, env
        )
    print(
        f"whole process (read + train + exit), median of {args.repeats}, wall (cpu) s: "
        f"cp_learn -c {a9a.n_examples / 100:g} --b 0 -e 0.1: {cli:.2f} ({cli_cpu:.2f}); "
        f"python -c load_svmlight_file + LinearSVC(tol=1e-4): {skl:.2f} ({skl_cpu:.2f}); "
        f"ratio {cli / skl:.2f}",
        flush=True,
    )
    w9, w3, w4 = rows[0], rows[2], rows[4]
    summary.append(
        f"-w 4 fewer oracle calls than -w 3 (full a9a, eps 0.1): "
        f"{'yes' if w4['calls'] < w3['calls'] else 'no'} ({w4['calls']} vs "
        f"{w3['calls']}; time {w4['seconds']:.1f} vs {w3['seconds']:.1f} s)"
    )
    for r in (w9, w3, w4):
        summary.append(
            f"cp_learn {r['name'][3:]} time / LinearSVC time at eps=0.1: "
            f"{r['ratio']:.2f} (tol=1e-4), {r['seconds'] / rows[-2]['seconds']:.2f} "
            f"(tol=1e-8)"
        )
    summary.append(f"cp_learn CLI / python LinearSVC script time, whole process: {cli / skl:.2f}")
    summary.append(
        "a9a objective gaps: "
        + ", ".join(f"{r['name']}@{r['eps']:.0e} {r['gap']:.1e}" for r in rows)
    )

    # 3. Full satimage, multiclass.
    rows = [
        run_cp(sat, True, 0.1, eps, w)
        for w, eps in ((9, 0.1), (9, 0.01), (4, 0.1), (4, 0.01), (3, 0.1))
    ]
    rows.append(run_linearsvc(sat.X, sat.y, True, 0.1, 1e-8))
    finish(rows)
    for r in rows:
        if "model" in r:
            pred = r["model"].predict(fit_columns(sat_test.X, r["model"].n_features))
        else:
            Xt = fit_columns(sat_test.X, r["W"].shape[1])
            pred = np.argmax(np.asarray(Xt @ r["W"].T), axis=1) + 1
        r["test_acc"] = float(np.mean(pred == sat_test.y))
    print_table(
        "full satimage, C_cs = 0.1 (cp C = 44350); objective in Crammer-Singer units",
        rows,
        extra=(("test_acc", 8, "8.4f"),),
    )
    summary.append(
        "satimage objective gaps: "
        + ", ".join(f"{r['name']}@{r['eps']:.0e} {r['gap']:.1e}" for r in rows)
        + "; test accuracy "
        + ", ".join(f"{r['test_acc']:.4f}" for r in rows)
    )
    w9, w4, w3, svc = rows[0], rows[2], rows[4], rows[5]
    summary.append(
        "satimage cp / LinearSVC(tol=1e-8) time at eps=0.1: "
        f"-w 9 {w9['seconds'] / svc['seconds']:.2f}, "
        f"-w 4 {w4['seconds'] / svc['seconds']:.2f}, "
        f"-w 3 {w3['seconds'] / svc['seconds']:.2f}; -w 4 / -w 3 oracle calls "
        f"{w4['calls']} vs {w3['calls']}; -w 9 / -w 3 iterations "
        f"{w9['iters']} vs {w3['iters']}"
    )

    print("\n== summary")
    print("\n".join(summary))
    print(
        f"total runtime {time.perf_counter() - started:.0f} s; load average "
        f"{os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
