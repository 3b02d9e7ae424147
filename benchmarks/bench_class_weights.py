"""Class weights (issue 46, item 1): ``ocas_learn --class-weight`` and ``-j`` against
LIBLINEAR's ``train -wi`` and scikit-learn's ``LinearSVC(class_weight="balanced")``.

Data: ijcnn1 (DIR/ijcnn1/ijcnn1 and ijcnn1.t, or ../shared/data/ijcnn1) when present,
else a9a and a9a.t from ../shared/data. C = 1 (--C), SVMlight's convention in all three
tools (½|w|² + C·Σ c_i·hinge_i): ocas_learn's -c is LIBLINEAR's -c and LinearSVC's C.

1. Weighted objective and time: in interleaved rounds (--repeats), LIBLINEAR's
   ``$LIBLINEAR_TRAIN -s 3 -c C -w1 W`` (its default -e 0.1, no bias) and ``ocas_learn -c
   C --class-weight 1:W`` (its defaults, no bias: -b 0), whole processes (each reads the
   file and writes its model), wall seconds, medians, the ratio ours/LIBLINEAR. The
   weighted primal objective ½|w|² + C·Σ c_i·max(0, 1 − y_i·w·x_i), c_i = W on the
   positives, is recomputed here from both model files, with the optimum's (ocas_learn
   -r 1e-6) for scale. Goals: within 0.1% of LIBLINEAR's, at most 1.0x its time.
2. ``-j W`` gives a model file byte-identical to ``--class-weight 1:W``.
3. balanced: ``ocas_learn -c C -b 1 --class-weight balanced`` against ``LinearSVC(
   loss="hinge", C=C, class_weight="balanced")`` (its default intercept, a feature of
   value 1 whose weight is regularised: ocas_learn's -b 1), balanced accuracy (the mean
   of the per-class recalls) on the test file. Goal: within 0.3 points.

LIBLINEAR is found through LIBLINEAR_TRAIN (the path of its ``train``); without it the
LIBLINEAR runs are skipped, saying so.

Usage: OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_class_weights.py
       [--repeats 3] [--C 1] [--weight 5] [--data DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cpsvm.io.model_file import read_model  # noqa: E402
from cpsvm.io.svmlight import read_svmlight  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
BIN = Path(sys.executable).parent


def data_files(data_dir: Path):
    """(name, training file, test file): ijcnn1 where present, else a9a."""
    for folder in (data_dir / "ijcnn1", SHARED, SHARED / "ijcnn1"):
        if (folder / "ijcnn1").exists() and (folder / "ijcnn1.t").exists():
            return "ijcnn1", folder / "ijcnn1", folder / "ijcnn1.t"
    return "a9a", SHARED / "a9a", SHARED / "a9a.t"


def timed(command) -> tuple:
    """(wall, CPU) seconds of a whole process (CPU: the child's user + system time, which
    a loaded machine stretches less than the wall time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def ocas_learn() -> str:
    found = BIN / "ocas_learn"
    return str(found) if found.exists() else "ocas_learn"


def liblinear_weights(path: Path, d: int) -> np.ndarray:
    """w of a LIBLINEAR binary model file, signed for label +1."""
    lines = path.read_text().splitlines()
    labels = next(line.split()[1:] for line in lines if line.startswith("label"))
    start = lines.index("w") + 1
    w = np.array([float(line.split()[0]) for line in lines[start:]])
    w = np.pad(w, (0, max(0, d - len(w))))[:d]
    return w if int(labels[0]) == 1 else -w


def objective(X, y, w, C, weights) -> float:
    margins = 1.0 - y * (X @ w)
    return 0.5 * float(w @ w) + C * float(np.sum(weights * np.maximum(0.0, margins)))


def balanced_accuracy(y, predicted) -> float:
    return float(np.mean([np.mean(predicted[y == label] == label) for label in np.unique(y)]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--weight", type=float, default=5.0)
    parser.add_argument(
        "--data", default=os.environ.get("CPSVM_BENCH_DATA", str(REPO.parent / "tools" / "data"))
    )
    args = parser.parse_args()
    name, train, test = data_files(Path(args.data))
    C, W = args.C, args.weight
    data = read_svmlight(train)
    X, y = data.X, data.y
    weights = np.where(y > 0, W, 1.0)
    print(f"data: {name} ({train}, {X.shape[0]} examples, {X.shape[1]} features), C = {C:g}")
    liblinear = os.environ.get("LIBLINEAR_TRAIN")
    ours_cmd = [ocas_learn(), "-v", "0", "-c", f"{C:g}"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # 1. the weighted objective and whole-process time against LIBLINEAR -s 3 -w1 W
        optimum = tmp / "optimum"
        subprocess.run([*ours_cmd, "-r", "1e-6", "--class-weight", f"1:{W:g}", train, optimum],
                       check=True)  # fmt: skip
        best = objective(X, y, read_model(optimum).w[: X.shape[1]], C, weights)
        times = {"ours": [], "liblinear": []}
        for _ in range(args.repeats):
            if liblinear:
                times["liblinear"].append(
                    timed(
                        [
                            liblinear,
                            "-s",
                            "3",
                            "-c",
                            f"{C:g}",
                            "-w1",
                            f"{W:g}",
                            "-q",
                            train,
                            tmp / "ll.model",
                        ]
                    )  # fmt: skip
                )
            times["ours"].append(
                timed([*ours_cmd, "--class-weight", f"1:{W:g}", train, tmp / "ours.model"])
            )
        model = read_model(tmp / "ours.model")
        ours_w = np.pad(model.w, (0, max(0, X.shape[1] - len(model.w))))[: X.shape[1]]
        ours_obj = objective(X, y, ours_w, C, weights)
        ours_t = statistics.median(t[0] for t in times["ours"])
        ours_cpu = statistics.median(t[1] for t in times["ours"])
        print(f"\n1. weighted objective, --class-weight 1:{W:g} (optimum {best:.4f}, "
              f"ocas_learn -r 1e-6)")  # fmt: skip
        print(f"   ocas_learn   {ours_obj:.4f} ({100 * (ours_obj / best - 1):+.4f}% of the "
              f"optimum)  {ours_t:.3f} s whole process ({ours_cpu:.3f} s CPU)")  # fmt: skip
        if liblinear:
            ll_w = liblinear_weights(tmp / "ll.model", X.shape[1])
            ll_obj = objective(X, y, ll_w, C, weights)
            ll_t = statistics.median(t[0] for t in times["liblinear"])
            ll_cpu = statistics.median(t[1] for t in times["liblinear"])
            print(f"   LIBLINEAR    {ll_obj:.4f} ({100 * (ll_obj / best - 1):+.4f}% of the "
                  f"optimum)  {ll_t:.3f} s whole process ({ll_cpu:.3f} s CPU; "
                  f"-s 3 -w1 {W:g})")  # fmt: skip
            print(f"   ours/LIBLINEAR: objective {100 * (ours_obj / ll_obj - 1):+.4f}% "
                  f"(goal within 0.1%: {'met' if ours_obj <= ll_obj * 1.001 else 'NOT met'}), "
                  f"time {ours_t / ll_t:.2f}x wall, {ours_cpu / ll_cpu:.2f}x CPU (goal <= "
                  f"1.0x: {'met' if ours_t <= ll_t else 'NOT met'} by the wall time)")  # fmt: skip
        else:
            print("   LIBLINEAR skipped: set LIBLINEAR_TRAIN to the path of its train")
        # 2. -j W is --class-weight 1:W, byte for byte
        subprocess.run([*ours_cmd, "-j", f"{W:g}", train, tmp / "j.model"], check=True)
        same = (tmp / "j.model").read_bytes() == (tmp / "ours.model").read_bytes()
        print(f"\n2. -j {W:g} and --class-weight 1:{W:g}: "
              f"{'byte-identical model files' if same else 'DIFFERENT model files'}")  # fmt: skip
        # 3. balanced against LinearSVC(loss="hinge", class_weight="balanced")
        test_data = read_svmlight(test)
        started = time.perf_counter()
        subprocess.run(
            [*ours_cmd, "-b", "1", "--class-weight", "balanced", train, tmp / "b.model"], check=True
        )
        ours_bal_t = time.perf_counter() - started
        predicted = read_model(tmp / "b.model").predict(test_data.X)
        ours_bal = balanced_accuracy(test_data.y, predicted)
        try:
            import warnings

            from sklearn.datasets import load_svmlight_file
            from sklearn.svm import LinearSVC
        except ImportError:
            print("\n3. balanced: scikit-learn missing, skipped")
            return
        started = time.perf_counter()
        Xs, ys = load_svmlight_file(str(train))
        Xt, yt = load_svmlight_file(str(test), n_features=Xs.shape[1])
        Xs.indices, Xs.indptr = Xs.indices.astype(np.int32), Xs.indptr.astype(np.int32)
        Xt.indices, Xt.indptr = Xt.indices.astype(np.int32), Xt.indptr.astype(np.int32)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            svc = LinearSVC(loss="hinge", C=C, class_weight="balanced", max_iter=100000)
            svc.fit(Xs, ys)
        sk_t = time.perf_counter() - started
        sk_bal = balanced_accuracy(yt, svc.predict(Xt))
        gap = 100 * (ours_bal - sk_bal)
        print(f"\n3. balanced accuracy on {test.name}: ocas_learn -b 1 --class-weight balanced "
              f"{100 * ours_bal:.2f}% ({ours_bal_t:.2f} s), LinearSVC(loss='hinge', "
              f"class_weight='balanced') {100 * sk_bal:.2f}% ({sk_t:.2f} s, reading included); "
              f"difference {gap:+.2f} points (goal within 0.3: "
              f"{'met' if abs(gap) <= 0.3 else 'NOT met'})")  # fmt: skip


if __name__ == "__main__":
    main()
