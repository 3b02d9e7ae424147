"""sampled_learn (Yu & Joachims' sampled cuts) against libsvm, and its scaling in n.

Three parts, in one run:

1. Kernel evaluation: the expansion Σ_j β_j k(x_i, b_j) over all of a9a (n = 32561) for
   r random basis examples, RBF — cpsvm.solvers.sampled.RowKernel (numba, dense basis
   and inverted index) against blocks of Kernel.matrix (scipy sparse product + numpy).
2. a9a / a9a.t, RBF. (γ, C) picked by a small search — sklearn.svm.SVC trained on 8000
   random training examples and validated on 8000 others, γ ∈ {0.001, 0.01, 0.05},
   C_light ∈ {1, 10, 100}; lowest validation error, ties within 0.1 points to the
   smaller C. Then, on all of a9a: SVC (libsvm) at that C and γ, and sampled_learn's
   constant-time and linear-time algorithms with r = 400 and 1000 at the equivalent
   C = C_light·n/100 and the default ε (0.1, the paper's 0.001). Training time is the
   solver call only (no file reading) for both; wall and CPU seconds (CPU counts all
   threads: numba uses every core, libsvm one).
3. The checkerboard of the paper's §6.1 (benchmarks/checkerboard.py: 4×4 board, noise
   σ = 0.02), n = 10k … 1M, C = 100 (fixed in the 1-slack convention, so the number of
   iterations does not depend on n), γ = 10, r = 400; each run capped at --cap seconds
   (a capped run reports its time per iteration; its total is left out of the slope).
   Log-log slopes of training time, time per iteration and kernel evaluations in n.
   SVC at the equivalent C_light = C·100/n for n <= --svc-max-n, for reference.

BLAS: unless OPENBLAS_NUM_THREADS is set, it is set to 1 before numpy loads. The master
QP's small LAPACK calls (eigh of the cut Gram matrix) took 100-400 ms instead of 1-3 ms
with OpenBLAS's two threads next to numba's on this 2-core machine (libsvm uses no BLAS;
see the issue note).

Usage: .venv/bin/python benchmarks/bench_sampled.py [--quick] [--cap 200]
       [--skip-a9a] [--skip-checkerboard] [--sizes 10000,30000,...]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads: see above

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from checkerboard import checkerboard  # noqa: E402

from cpsvm.io.svmlight import read_svmlight  # noqa: E402
from cpsvm.kernels import Kernel  # noqa: E402
from cpsvm.models import fit_columns  # noqa: E402
from cpsvm.solvers.sampled import RowKernel, SampledParams, train  # noqa: E402

DATA = REPO.parent / "shared" / "data"
GAMMAS = (0.001, 0.01, 0.05)
C_LIGHTS = (1.0, 10.0, 100.0)


def timed(fn, *args, **kwargs):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def decision_values(model, X):
    """The model's decision values on X, with the numba kernels (checked once against
    KernelModel.decision_function, the path cp_classify takes)."""
    sv = model.support_vectors
    X = fit_columns(X, sv.shape[1])
    stacked = RowKernel(sp.vstack([X, sv], format="csr"), model.kernel)
    rows, basis = np.arange(X.shape[0]), X.shape[0] + np.arange(sv.shape[0])
    return stacked.times(rows, basis, model.coef) - model.b


def kernel_part(train_data):
    print("== 1. kernel expansion over all of a9a (n = %d), RBF g = 0.01" %
          train_data.n_examples)
    X, n = train_data.X, train_data.n_examples
    kernel = Kernel(2, gamma=0.01)
    rng = np.random.default_rng(0)
    rows = np.arange(n)
    print(f"{'r':>6} {'Kernel.matrix':>14} {'numba dense':>12} {'numba index':>12} "
          f"{'speed-up':>9} {'Meval/s':>8} {'max |diff|':>10}")
    for r in (400, 1000):
        basis = np.sort(rng.choice(n, r, replace=False))
        beta = rng.standard_normal(r)
        B, sq_b = X[basis], RowKernel(X, kernel).sq_norms[basis]

        def scipy_numpy():
            out = np.empty(n)
            for lo in range(0, n, 4096):
                out[lo:lo + 4096] = kernel.matrix(X[lo:lo + 4096], B, sq_norms_b=sq_b) @ beta
            return out

        dense, sparse = RowKernel(X, kernel), RowKernel(X, kernel)
        sparse.DENSE_BASIS_MAX = 0
        times = {}
        results = {}
        for name, fn in (("scipy", scipy_numpy),
                         ("dense", lambda: dense.times(rows, basis, beta)),
                         ("index", lambda: sparse.times(rows, basis, beta))):
            fn()  # warm (numba compile or cache load)
            best = math.inf
            for _ in range(3):
                out, wall, _ = timed(fn)
                best = min(best, wall)
            times[name], results[name] = best, out
        diff = max(np.max(np.abs(results["dense"] - results["scipy"])),
                   np.max(np.abs(results["index"] - results["scipy"])))
        print(f"{r:>6} {times['scipy']:>13.3f}s {times['dense']:>11.3f}s "
              f"{times['index']:>11.3f}s {times['scipy'] / times['dense']:>8.1f}x "
              f"{n * r / times['dense'] / 1e6:>8.0f} {diff:>10.1e}")


def search(train_data, quick):
    from sklearn.svm import SVC
    rng = np.random.default_rng(0)
    perm = rng.permutation(train_data.n_examples)
    size = 3000 if quick else 8000
    fit_rows, val_rows = perm[:size], perm[size:2 * size]
    X, y = train_data.X, train_data.y
    print(f"== 2a. (gamma, C_light) search: SVC on {size} random a9a examples, validated "
          f"on {size} others")
    results = []
    for gamma in GAMMAS:
        line = []
        for C_light in C_LIGHTS:
            svc = SVC(C=C_light, gamma=gamma, cache_size=500).fit(X[fit_rows], y[fit_rows])
            error = 100 * np.mean(svc.predict(X[val_rows]) != y[val_rows])
            results.append((error, C_light, gamma))
            line.append(f"C={C_light:g}: {error:.2f}%")
        print(f"  gamma={gamma:g}: " + "  ".join(line))
    best = min(e for e, _, _ in results)
    # Ties within 0.1 points go to the smaller C (less work for every solver).
    error, C_light, gamma = min((r for r in results if r[0] <= best + 0.1),
                                key=lambda r: (r[1], r[0]))
    print(f"  picked gamma={gamma:g}, C_light={C_light:g} (validation error {error:.2f}%)")
    return gamma, C_light


def a9a_part(quick):
    train_data = read_svmlight(DATA / "a9a")
    test_data = read_svmlight(DATA / "a9a.t")
    test_data.X = fit_columns(test_data.X, train_data.n_features)
    kernel_part(train_data)
    gamma, C_light = search(train_data, quick)
    if quick:
        train_data = train_data.subset(slice(0, 8000))
    n = train_data.n_examples
    C = C_light * n / 100
    print(f"== 2b. a9a (n = {n}) / a9a.t (n = {test_data.n_examples}): RBF gamma={gamma:g},"
          f" C_light={C_light:g} (sampled_learn -c {C:.6g} -t 2 -g {gamma:g}), epsilon 0.1")
    from sklearn.svm import SVC
    svc, svc_wall, svc_cpu = timed(SVC(C=C_light, gamma=gamma, cache_size=1000).fit,
                                   train_data.X, train_data.y)
    svc_error = 100 * np.mean(svc.predict(test_data.X) != test_data.y)
    rows = [("SVC (libsvm)", "-", svc_wall, svc_cpu, svc_error, "-", "-",
             int(svc.n_support_.sum()), "-")]
    checked = False
    for algorithm in ("const", "linear"):
        for r in (400, 1000):
            params = SampledParams(C=C, kernel=Kernel(2, gamma=gamma), algorithm=algorithm,
                                   sample_size=r)
            (model, info), wall, cpu = timed(train, train_data, params)
            scores = decision_values(model, test_data.X)
            if not checked:  # the numba predictions are cp_classify's
                reference = model.decision_function(test_data.X[:300])
                assert np.allclose(scores[:300], reference, rtol=1e-9, atol=1e-9)
                checked = True
            error = 100 * np.mean(np.where(scores > 0, 1.0, -1.0) != test_data.y)
            rows.append((f"sampled {algorithm}", r, wall, cpu, error,
                         info.result.iterations, info.kernel_evaluations, info.n_sv,
                         info.result.status))
    print(f"{'method':<16} {'r':>5} {'wall s':>8} {'cpu s':>8} {'x SVC':>6} "
          f"{'test err %':>10} {'vs SVC':>7} {'iters':>6} {'kernel evals':>13} "
          f"{'SVs':>6} status")
    for name, r, wall, cpu, error, iters, evals, n_sv, status in rows:
        speedup = "-" if name.startswith("SVC") else f"{svc_wall / wall:.1f}"
        delta = "-" if name.startswith("SVC") else f"{error - svc_error:+.2f}"
        evals = evals if isinstance(evals, str) else f"{evals:.3g}"
        print(f"{name:<16} {r:>5} {wall:>8.1f} {cpu:>8.1f} {speedup:>6} {error:>10.2f} "
              f"{delta:>7} {iters:>6} {evals:>13} {n_sv:>6} {status}")


def slope(ns, values):
    """Least-squares slope of log(value) against log(n)."""
    if len(ns) < 2:
        return float("nan")
    return float(np.polyfit(np.log(ns), np.log(values), 1)[0])


def checkerboard_part(sizes, cap, svc_max_n):
    from sklearn.svm import SVC
    C, gamma, r = 100.0, 10.0, 400
    test = checkerboard(20000, seed=99)
    print(f"== 3. checkerboard (4x4, noise 0.02): C={C:g} (1-slack convention), RBF "
          f"gamma={gamma:g}, r={r}, cap {cap:g} s per run; test on {test.n_examples} points")
    print(f"{'algorithm':<8} {'n':>8} {'wall s':>8} {'iters':>6} {'s/iter':>8} "
          f"{'kernel evals':>13} {'SVs':>6} {'test err %':>10} status")
    measured = {"const": [], "linear": []}
    for n in sizes:
        data = checkerboard(n, seed=1)
        if n <= svc_max_n:
            svc, wall, _ = timed(SVC(C=C * 100 / n, gamma=gamma, cache_size=1000).fit,
                                 data.X, data.y)
            error = 100 * np.mean(svc.predict(test.X) != test.y)
            print(f"{'SVC':<8} {n:>8} {wall:>8.1f} {'-':>6} {'-':>8} {'-':>13} "
                  f"{int(svc.n_support_.sum()):>6} {error:>10.2f} (C_light={C * 100 / n:g})")
        for algorithm in ("const", "linear"):
            params = SampledParams(C=C, kernel=Kernel(2, gamma=gamma), algorithm=algorithm,
                                   sample_size=r, time_limit=cap)
            (model, info), wall, _ = timed(train, data, params)
            error = 100 * np.mean(np.where(decision_values(model, test.X) > 0, 1.0, -1.0)
                                  != test.y)
            iters = info.result.iterations
            status = info.result.status
            measured[algorithm].append((n, wall, wall / iters, info.kernel_evaluations,
                                        status == "converged"))
            print(f"{algorithm:<8} {n:>8} {wall:>8.1f} {iters:>6} {wall / iters:>8.4f} "
                  f"{info.kernel_evaluations:>13.3g} {info.n_sv:>6} {error:>10.2f} {status}",
                  flush=True)
    print("log-log slopes in n (time ~ n^slope):")
    for algorithm, runs in measured.items():
        done = [m for m in runs if m[4]]
        total = slope([m[0] for m in done], [m[1] for m in done])
        per_iter = slope([m[0] for m in runs], [m[2] for m in runs])
        evals = slope([m[0] for m in runs], [m[3] for m in runs])
        print(f"  {algorithm:<7} training time {total:5.2f} (over the {len(done)} converged "
              f"runs)   time per iteration {per_iter:5.2f}   kernel evaluations {evals:5.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small versions of everything (a smoke test, ~1 minute)")
    parser.add_argument("--cap", type=float, default=200.0,
                        help="time cap per checkerboard run, seconds")
    parser.add_argument("--sizes", default=None,
                        help="checkerboard sizes (default 10000,30000,100000,300000,1000000)")
    parser.add_argument("--svc-max-n", type=int, default=100000,
                        help="run SVC on the checkerboards up to this size")
    parser.add_argument("--skip-a9a", action="store_true")
    parser.add_argument("--skip-checkerboard", action="store_true")
    args = parser.parse_args(argv)
    import numba
    print(f"numba threads: {numba.get_num_threads()}; OPENBLAS_NUM_THREADS="
          f"{os.environ['OPENBLAS_NUM_THREADS']}; SVC (libsvm) is single-threaded")
    started = time.perf_counter()
    if not args.skip_a9a:
        a9a_part(args.quick)
    if not args.skip_checkerboard:
        default = "2000,5000,20000" if args.quick else "10000,30000,100000,300000,1000000"
        sizes = [int(s) for s in (args.sizes or default).split(",")]
        checkerboard_part(sizes, args.cap, 20000 if args.quick else args.svc_max_n)
    print(f"total benchmark time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
