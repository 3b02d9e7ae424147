"""OCASClassifier (cpsvm.sklearn) against scikit-learn's LinearSVC and SGDClassifier: the
question a scikit-learn user asks first, "is it faster than what I use?".

All three get the same matrices (read once by sklearn's load_svmlight_file) and the
same C, scikit-learn's convention: ½|w|² + C·Σ hinge, no intercept (LinearSVC
loss="hinge", dual=True, fit_intercept=False; SGDClassifier loss="hinge",
alpha = 1/(C·n), fit_intercept=False, whose objective is the same one divided by C·n).
Every objective is recomputed here from coef_; "gap" is relative to the lowest found in
the run (the tight reference runs included). Times are of fit() alone, best of
--repeats, the solvers interleaved (A, B, C, A, B, C, ...) so that a noisy machine
slows all alike; ratios are against LinearSVC at its default tol in the same run.

Binary: a9a (32,561 x 123), C in --Cs. Multiclass: satimage (4,435 x 36, 6 classes),
Crammer-Singer C = --mc-C: OCASClassifier vs LinearSVC(multi_class="crammer_singer"),
with SGDClassifier (one-vs-rest hinge, a different objective: accuracy only).

numba is warmed on a slice first (compile time excluded). OPENBLAS_NUM_THREADS=1 and
numba's workqueue layer are set before numpy loads, as the commands set them (README).

Usage: .venv/bin/python benchmarks/bench_sklearn.py [--data ../shared/data]
       [--Cs 0.1,1] [--mc-C 0.1] [--repeats 3]
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_svmlight_file  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import SGDClassifier  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

from cpsvm.sklearn import OCASClassifier  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def load(path, **kw):
    """load_svmlight_file's CSR with 32-bit indices: LinearSVC refuses 64-bit ones
    (OCASClassifier takes both); every solver gets these same arrays."""
    X, y = load_svmlight_file(str(path), **kw)
    X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
    return X, y


def hinge_objective(est, X, y, C):
    w = est.coef_.ravel()
    b = float(np.ravel(est.intercept_)[0]) if np.ndim(est.intercept_) else 0.0
    signs = np.where(y == est.classes_[1], 1.0, -1.0)
    return 0.5 * float(w @ w) + C * float(np.maximum(0.0, 1.0 - signs * (X @ w + b)).sum())


def cs_objective(est, X, y, C):
    W = est.coef_
    S = np.asarray(X @ W.T)
    idx = np.arange(len(y)), np.searchsorted(est.classes_, y)
    margins = S - S[idx][:, None] + 1.0
    margins[idx] = 0.0
    return 0.5 * float(np.sum(W * W)) + C * float(np.maximum(0.0, margins.max(axis=1)).sum())


def timed_fits(makers, X, y, repeats):
    """Best fit() time of each maker, interleaved; returns {name: (seconds, estimator)}."""
    best = {}
    for _ in range(repeats):
        for name, make in makers.items():
            est = make()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                started = time.perf_counter()
                est.fit(X, y)
                seconds = time.perf_counter() - started
            if name not in best or seconds < best[name][0]:
                best[name] = (seconds, est)
    return best


def report(title, results, objective, X, y, Xt, yt, reference_name):
    objectives = {
        n: objective(e, X, y) if objective else float("nan") for n, (_, e) in results.items()
    }
    low = min(v for v in objectives.values() if np.isfinite(v)) if objective else 1.0
    ref_time = results[reference_name][0]
    print(f"\n== {title}")
    print(f"(ratio: fit time / {reference_name}'s)")
    print(
        f"{'solver':44s} {'fit s':>8s} {'ratio':>16s} "
        f"{'objective':>14s} {'gap':>10s} {'test acc':>9s}"
    )
    for name, (seconds, est) in results.items():
        value = objectives[name]
        gap = (value - low) / low if np.isfinite(value) else float("nan")
        print(
            f"{name:44s} {seconds:8.3f} {seconds / ref_time:16.2f} {value:14.4f} "
            f"{gap:10.2e} {est.score(Xt, yt):9.4f}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--Cs", default="0.1,1")
    parser.add_argument("--mc-C", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not (args.data / "a9a").exists():
        print(f"bench_sklearn: skipped: no a9a under {args.data} (give --data)")
        return 0

    X, y = load(args.data / "a9a")
    Xt, yt = load(args.data / "a9a.t", n_features=X.shape[1])
    n = X.shape[0]
    OCASClassifier(C=1).fit(X[:500], y[:500])  # numba compiles here, untimed
    for C in map(float, args.Cs.split(",")):
        makers = {
            "LinearSVC(tol=1e-4) [default]": lambda: LinearSVC(
                C=C, loss="hinge", dual=True, fit_intercept=False
            ),
            "OCASClassifier(tol=0.01) [default]": lambda: OCASClassifier(C=C),
            "OCASClassifier(tol=0.001)": lambda: OCASClassifier(C=C, tol=1e-3),
            "SGDClassifier(tol=1e-3) [default]": lambda: SGDClassifier(
                loss="hinge", alpha=1.0 / (C * n), fit_intercept=False, random_state=0
            ),
            "LinearSVC(tol=1e-8) [reference]": lambda: LinearSVC(
                C=C, loss="hinge", dual=True, fit_intercept=False, tol=1e-8, max_iter=100000
            ),
            "OCASClassifier(tol=1e-6) [reference]": lambda: OCASClassifier(C=C, tol=1e-6),
        }
        results = timed_fits(makers, X, y, args.repeats)
        report(
            f"a9a binary, C = {C:g} (n = {n}), objective 1/2|w|^2 + C*sum(hinge)",
            results,
            lambda e, X_, y_: hinge_objective(e, X_, y_, C),
            X,
            y,
            Xt,
            yt,
            "LinearSVC(tol=1e-4) [default]",
        )

    if (args.data / "satimage.scale").exists():
        Xs, ys = load(args.data / "satimage.scale")
        Xst, yst = load(args.data / "satimage.scale.t", n_features=Xs.shape[1])
        C = args.mc_C
        OCASClassifier(C=C).fit(Xs[:300], ys[:300])
        makers = {
            "LinearSVC(crammer_singer) [default]": lambda: LinearSVC(
                C=C, multi_class="crammer_singer", fit_intercept=False
            ),
            "OCASClassifier(tol=0.01) [default]": lambda: OCASClassifier(C=C),
            "OCASClassifier(tol=0.001)": lambda: OCASClassifier(C=C, tol=1e-3),
            "LinearSVC(crammer_singer, tol=1e-8) [ref]": lambda: LinearSVC(
                C=C, multi_class="crammer_singer", fit_intercept=False, tol=1e-8, max_iter=100000
            ),
        }
        results = timed_fits(makers, Xs, ys, args.repeats)
        report(
            f"satimage multiclass, Crammer-Singer C = {C:g}",
            results,
            lambda e, X_, y_: cs_objective(e, X_, y_, C),
            Xs,
            ys,
            Xst,
            yst,
            "LinearSVC(crammer_singer) [default]",
        )
        sgd = timed_fits(
            {
                "SGDClassifier(hinge, one-vs-rest)": lambda: SGDClassifier(
                    loss="hinge", alpha=1.0 / (C * Xs.shape[0]), fit_intercept=False, random_state=0
                )
            },
            Xs,
            ys,
            args.repeats,
        )
        seconds, est = sgd["SGDClassifier(hinge, one-vs-rest)"]
        print(
            f"{'SGDClassifier(hinge, one-vs-rest)':44s} {seconds:8.3f} "
            f"{seconds / results['LinearSVC(crammer_singer) [default]'][0]:16.2f} "
            f"{'(other objective)':>14s} {'':>10s} {est.score(Xst, yst):9.4f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
