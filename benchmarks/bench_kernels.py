"""Kernel products of cpsvm.kernel_rows against the code before them, and the commands
that use them against the baseline and SVMlight.

Three parts, in one run, every comparison interleaved (A, B, A, B, ...):

1. Kernel evaluations per second, RBF: Σ_j β_j k(x_i, b_j) over every row of the dense
   stand-in for ijcnn1 (10,000 x 22 dense features, γ = 1) for 2,000 basis rows, and over
   a9a (0/1 features, γ = 0.05) — RowKernel.times against the computation before the
   issue (blocks of 4,096 rows: scipy's sparse product, then Kernel.from_dots, then the
   product with β; kept as Kernel.matrix, the tests' reference). Numba threads: all;
   BLAS threads: as OPENBLAS_NUM_THREADS (1 unless set, as the commands run).
2. `cp_learn -t 2 -g 1 -c 1000` (C_light = 10) on the dense stand-in, whole process:
   the baseline's command ($CPSVM_BASELINE_BIN/cp_learn: the bin directory of an
   installed earlier checkout, skipped when unset) against this checkout's;
   seconds and the kernel evaluations each prints.
3. `cp_classify a9a.t MODEL` whole process with an RBF model of about 2,000 SVs
   (`cp_learn -t 2 -g 0.05 -c 20` on the first 5,000 lines of a9a, made here unless
   --model names one): SVMlight's svm_classify (in $CPSVM_SVMLIGHT_DIR; skipped, saying
   so, when absent), the baseline's cp_classify and
   this checkout's; median of --repeats. Then decision_function in process (SVMlight's
   float32 arithmetic, as cp_classify computes) against the computation before.

The dense stand-in is generated here (seeded) unless --dense names a file.

Usage: .venv/bin/python benchmarks/bench_kernels.py [--repeats 3] [--skip-learn]
       [--dense FILE] [--model FILE]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the commands run

import argparse  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cpsvm.io.model_file import read_model  # noqa: E402
from cpsvm.io.svmlight import read_svmlight  # noqa: E402
from cpsvm.kernel_rows import RowKernel  # noqa: E402
from cpsvm.kernels import Kernel  # noqa: E402

DATA = REPO.parent / "shared" / "data"
HERE = REPO / ".venv" / "bin"


def from_env(variable: str, name: str) -> Path | None:
    """The file ``name`` in the directory $variable, or None when the variable is unset or
    the file absent (those runs are skipped, saying so)."""
    directory = os.environ.get(variable)
    if not directory:
        print(f"  {name}: skipped, {variable} is not set")
        return None
    path = Path(directory) / name
    if not path.exists():
        print(f"  {name}: skipped, {path} absent")
        return None
    return path


def dense_stand_in(path: Path, n=10_000, d=22, seed=0):
    """Uniform [-1, 1] features, labels from a nonlinear rule (about 10% positive)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    s = (
        np.sin(3 * X[:, 0])
        + X[:, 1] * X[:, 2]
        + np.abs(X[:, 3])
        - 0.5 * X[:, 4] ** 2
        + 0.3 * X[:, 5:10].sum(axis=1)
    )
    y = np.where(s > np.quantile(s, 0.9), 1, -1)
    flip = rng.random(n) < 0.02
    y[flip] = -y[flip]
    with open(path, "w") as f:
        for i in range(n):
            f.write(
                ("+1" if y[i] > 0 else "-1")
                + " "
                + " ".join(f"{j + 1}:{X[i, j]:.6f}" for j in range(d))
                + "\n"
            )


def before_times(kernel, X, basis, beta, block=4096):
    """The computation before kernel_rows: scipy product + from_dots per block."""
    B = X[basis]
    sq_x = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    sq_b = sq_x[basis]
    out = np.empty(X.shape[0])
    for lo in range(0, X.shape[0], block):
        hi = min(lo + block, X.shape[0])
        dots = (X[lo:hi] @ B.T).toarray()
        out[lo:hi] = kernel.from_dots(dots, sq_x[lo:hi], sq_b) @ beta
    return out


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def part_evaluations(name, X, kernel, m, repeats):
    rng = np.random.default_rng(0)
    basis = np.sort(rng.choice(X.shape[0], m, replace=False))
    beta = rng.standard_normal(m)
    rk = RowKernel(X, kernel)
    rk.times(None, basis, beta)  # compile / warm
    ref = before_times(kernel, X, basis, beta)
    err = np.max(np.abs(rk.times(None, basis, beta) - ref)) / np.max(np.abs(ref))
    old = new = 0.0
    for _ in range(repeats):
        old += best_of(lambda: before_times(kernel, X, basis, beta), 1)
        new += best_of(lambda: rk.times(None, basis, beta), 1)
    evaluations = X.shape[0] * m * repeats
    path = "BLAS" if rk.dense is not None else ("bitsets" if rk.binary else "numba")
    print(
        f"{name}: {X.shape[0]} x {m} RBF values, path {path}: before "
        f"{evaluations / old / 1e6:.0f} M/s, now {evaluations / new / 1e6:.0f} M/s "
        f"({old / new:.1f}x); max relative difference {err:.1e}"
    )
    import numba

    threads = numba.get_num_threads()
    if threads > 1:
        one = many = 0.0
        for _ in range(repeats):
            numba.set_num_threads(1)
            one += best_of(lambda: rk.times(None, basis, beta), 1)
            numba.set_num_threads(threads)
            many += best_of(lambda: rk.times(None, basis, beta), 1)
        print(
            f"  one thread {evaluations / one / 1e6:.0f} M/s, {threads} threads "
            f"{evaluations / many / 1e6:.0f} M/s ({one / many:.2f}x)"
        )


def run(cmd, cwd=None):
    start = time.perf_counter()
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed: {proc.stderr}")
    return seconds, proc.stdout


def part_learn(dense):
    print("\ncp_learn -t 2 -g 1 -c 1000 (C_light = 10) on the dense stand-in, whole process")
    with tempfile.TemporaryDirectory() as tmp:
        for label, cp_learn in (
            ("baseline", from_env("CPSVM_BASELINE_BIN", "cp_learn")),
            ("now", HERE / "cp_learn"),
        ):
            if cp_learn is None:
                continue
            seconds, out = run(
                [cp_learn, "-c", "1000", "-t", "2", "-g", "1", dense, Path(tmp) / f"{label}.model"]
            )
            evaluations = int(re.search(r"kernel evaluations: (\d+)", out).group(1))
            primal = re.search(r"pval=([\d.]+)", out).group(1)
            print(
                f"  {label:8s} {seconds:7.2f} s, {evaluations:.3g} kernel evaluations "
                f"({evaluations / seconds / 1e6:.0f} M/s whole process), pval={primal}"
            )


def part_classify(model_path, repeats):
    test = DATA / "a9a.t"
    model = read_model(model_path)
    print(
        f"\ncp_classify a9a.t with an RBF model of {model.support_vectors.shape[0]} SVs, "
        f"whole process, median of {repeats}"
    )
    commands = {
        "svm_classify": from_env("CPSVM_SVMLIGHT_DIR", "svm_classify"),
        "baseline cp_classify": from_env("CPSVM_BASELINE_BIN", "cp_classify"),
        "cp_classify": HERE / "cp_classify",
    }
    commands = {k: [v] for k, v in commands.items() if v is not None}
    times = {k: [] for k in commands}
    outputs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            for name, cmd in commands.items():
                pred = Path(tmp) / name.replace(" ", "_")
                seconds, _ = run(cmd + [test, model_path, pred])
                times[name].append(seconds)
                outputs[name] = np.loadtxt(pred)
    ref = times.get("svm_classify")
    for name, ts in times.items():
        ratio = (
            f", {statistics.median(ts) / statistics.median(ref):.2f}x svm_classify" if ref else ""
        )
        print(f"  {name:22s} {statistics.median(ts):6.2f} s{ratio}")
    if "svm_classify" in outputs:
        same = np.mean(
            [
                f"{a:.8g}" == f"{b:.8g}"
                for a, b in zip(outputs["cp_classify"], outputs["svm_classify"])
            ]
        )
        print(f"  decision values printed as svm_classify's: {100 * same:.2f}% of lines")
    # In process: SVMlight's arithmetic, as cp_classify computes (data rounded to float32).
    X = read_svmlight(test).X.copy()
    X.data = X.data.astype(np.float32).astype(np.float64)
    model.decision_function(X[:100], single_precision=True)  # compile / warm
    new = best_of(lambda: model.decision_function(X, single_precision=True), repeats)

    old = baseline_decision_seconds(model_path, test, repeats)
    print(
        f"  decision_function in process: now {new:.3f} s, baseline "
        + (f"{old:.3f} s ({old / new:.1f}x)" if old else "absent")
    )


BASELINE_SNIPPET = """
import sys, time
import numpy as np
from cpsvm.io.model_file import read_model
from cpsvm.io.svmlight import read_svmlight
model = read_model(sys.argv[1])
X = read_svmlight(sys.argv[2]).X.copy()
X.data = X.data.astype(np.float32).astype(np.float64)
model.decision_function(X[:100], single_precision=True)
best = 1e9
for _ in range(int(sys.argv[3])):
    start = time.perf_counter()
    model.decision_function(X, single_precision=True)
    best = min(best, time.perf_counter() - start)
print(best)
"""


def baseline_decision_seconds(model_path, test, repeats):
    """The baseline's KernelModel.decision_function, timed in its own interpreter."""
    python = from_env("CPSVM_BASELINE_BIN", "python")
    if python is None:
        return None
    # From the baseline's checkout: `python -c` imports cpsvm from the working directory.
    _, out = run(
        [python, "-c", BASELINE_SNIPPET, Path(model_path).resolve(), test, repeats],
        cwd=python.parent.parent,
    )
    return float(out.split()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-learn", action="store_true")
    parser.add_argument("--dense", type=Path, default=None)
    parser.add_argument("--model", type=Path, default=None)
    args = parser.parse_args()
    import numba

    print(
        f"numba threads {numba.get_num_threads()}, OPENBLAS_NUM_THREADS "
        f"{os.environ['OPENBLAS_NUM_THREADS']}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        dense = args.dense
        if dense is None:
            dense = Path(tmp) / "dense10k.svm"
            dense_stand_in(dense)
        part_evaluations(
            "dense stand-in", read_svmlight(dense).X, Kernel(2, gamma=1.0), 2000, args.repeats
        )
        part_evaluations(
            "a9a", read_svmlight(DATA / "a9a").X, Kernel(2, gamma=0.05), 2000, args.repeats
        )
        if not args.skip_learn:
            part_learn(dense)
        model = args.model
        if model is None:
            first = Path(tmp) / "a9a5k"
            with open(DATA / "a9a") as f, open(first, "w") as out:
                out.writelines(line for _, line in zip(range(5000), f))
            model = Path(tmp) / "a9a5k_rbf.model"
            run([HERE / "cp_learn", "-t", "2", "-g", "0.05", "-c", "20", first, model])
        part_classify(model, args.repeats)


if __name__ == "__main__":
    main()
