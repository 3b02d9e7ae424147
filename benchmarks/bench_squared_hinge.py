"""ocas_learn --loss squared-hinge against LIBLINEAR's ``train -s 1`` (issue 46): whole
processes, each reading the training file and writing its model.

Per data set (--sets: a9a from ../shared/data with a9a.t; text1m, the 1M x 20k text-like
set of benchmarks/bench_liblinear.py, generated under --data when absent), at C (--C):

- a reference: this checkout's dual coordinate descent (cpsvm.engine.dcd_squared) run here
  to a relative duality gap of --ref-tol (1e-5): its dual D* bounds the optimum from below, so each
  run's objective P is certified within (P − D*)/P of the optimum;
- in interleaved rounds (--repeats): LIBLINEAR ``$LIBLINEAR_TRAIN -s 1 -c C`` (its own
  stopping rule, -e 0.1 on the projected gradient) and this checkout's ``python -m
  cpsvm.cli.ocas --loss squared-hinge -c C -v 0`` at its defaults (-m 2, -r 0.01), and
  again *at matched objectives*: with -r set to LIBLINEAR's own distance to the optimum,
  (P_liblinear − D*)/P_liblinear measured in the first round, so that ocas_learn's
  stopping rule certifies an objective no farther from the optimum than LIBLINEAR's;
- every model's primal ½|w|² + C·Σ max(0, 1 − y_i·w·x_i)², recomputed here from its
  weights, its distance to D*, its test accuracy; wall and CPU seconds (median over the
  rounds), the ratio ours / LIBLINEAR's.

Usage: OPENBLAS_NUM_THREADS=1 LIBLINEAR_TRAIN=/work/tools/liblinear/train \\
       python benchmarks/bench_squared_hinge.py [--sets a9a,text1m] [--C 1] [--repeats 3]
       [--data DIR] [--methods 2,1]
DIR defaults to $CPSVM_BENCH_DATA, else ../tools/data beside the checkout. Without
LIBLINEAR_TRAIN the LIBLINEAR runs are skipped, with a message.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_liblinear import SETS, ensure_data, liblinear_weights, timed_process  # noqa: E402

from cpsvm.engine.dcd import DcdParams  # noqa: E402
from cpsvm.engine.dcd_squared import squared_hinge_dcd  # noqa: E402
from cpsvm.io.model_file import read_model  # noqa: E402
from cpsvm.io.svmlight import read_svmlight  # noqa: E402
from cpsvm.models import fit_columns  # noqa: E402

SHARED = REPO.parent / "shared" / "data"


def l2_primal(w, X, y, C):
    slack = np.maximum(0.0, 1.0 - y * (X @ w))
    return 0.5 * float(w @ w) + C * float(slack @ slack)


def accuracy(w, X, y):
    X = fit_columns(X, w.shape[0])
    return 100.0 * float(np.mean(np.where(X @ w > 0, 1.0, -1.0) == y))


def ours_weights(path, d):
    model = read_model(path)
    w = np.zeros(d)
    w[: min(d, len(model.w))] = model.w[:d]
    return w


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="a9a,text1m")
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ref-tol", type=float, default=1e-5)
    parser.add_argument("--methods", default="2", help="ocas_learn's -m values to time")
    parser.add_argument("--data", default=os.environ.get("CPSVM_BENCH_DATA"))
    a = parser.parse_args()
    data_dir = Path(a.data) if a.data else REPO.parent / "tools" / "data"
    exe = os.environ.get("LIBLINEAR_TRAIN")
    if not exe:
        print("LIBLINEAR_TRAIN is not set to LIBLINEAR's train: its runs are skipped")
    ocas = [sys.executable, "-m", "cpsvm.cli.ocas"]
    print(f"load {os.getloadavg()[0]:.1f}; C = {a.C:g}; ocas_learn from {REPO}")
    with tempfile.TemporaryDirectory() as workdir:
        tiny = Path(workdir) / "tiny.svm"
        tiny.write_text("+1 1:0.5 3:1\n-1 2:1\n")
        os.environ["PYTHONPATH"] = str(REPO)  # (the children's)
        floor = [timed_process([*ocas, "-c", "1", str(tiny), str(tiny) + ".m"]) for _ in "123"]
        wall, cpu = (statistics.median(f[k] for f in floor) for k in (0, 1))
        print(f"start-up floor (ocas_learn on 2 lines): {wall:.3f} s wall, {cpu:.3f} s CPU")
        for name in a.sets.split(","):
            train_tpl, test_tpl, *_ = SETS[name]
            train, test = [t.format(shared=SHARED, data=data_dir) for t in (train_tpl, test_tpl)]
            ensure_data(name, (train, test), data_dir)
            data, test_set = read_svmlight(train), read_svmlight(test)
            X, y, d = data.X, data.y, data.X.shape[1]
            ref = squared_hinge_dcd(X, y, a.C, params=DcdParams(tol_rel=a.ref_tol))
            lower = ref.dual
            print(f"\n{name}: {X.shape[0]} x {d}, optimum in [{lower:.4f}, {ref.primal:.4f}]")
            runs = {}  # label -> list of (wall, cpu); objective, accuracy of the last model

            def record(label, cmd, model, weights):
                wall, cpu = timed_process(cmd)
                w = weights(model)
                objective = l2_primal(w, X, y, a.C)
                runs.setdefault(label, {"times": []})["times"].append((wall, cpu))
                runs[label].update(
                    objective=objective, accuracy=accuracy(w, test_set.X, test_set.y)
                )
                return objective

            ll_model, ours_model = Path(workdir) / "ll.model", Path(workdir) / "ours.model"
            liblinear = (
                [exe, "-s", "1", "-c", repr(a.C), "-q", train, str(ll_model)] if exe else None
            )
            matched = None
            for _ in range(a.repeats):
                if liblinear:
                    p = record("liblinear -s 1", liblinear, ll_model,
                               lambda m: liblinear_weights(m, d, 2, False))  # fmt: skip
                    if matched is None:
                        matched = max((p - lower) / p, 1e-6)
                for m in a.methods.split(","):
                    base = [*ocas, "--loss", "squared-hinge", "-m", m, "-c", repr(a.C), "-v", "0"]
                    record(f"ocas_learn -m {m}", [*base, train, str(ours_model)], ours_model,
                           lambda p: ours_weights(p, d))  # fmt: skip
                    if matched is not None:
                        record(f"ocas_learn -m {m} -r {matched:.2g}",
                               [*base, "-r", repr(matched), train, str(ours_model)], ours_model,
                               lambda p: ours_weights(p, d))  # fmt: skip
            reference = runs.get("liblinear -s 1")
            ref_wall = statistics.median(t[0] for t in reference["times"]) if reference else None
            print(f"{'run':<28} {'wall s':>8} {'CPU s':>8} {'ratio':>6} {'objective':>14} "
                  f"{'to optimum':>10} {'vs LL':>9} {'test acc':>8}")  # fmt: skip
            for label, run in runs.items():
                wall = statistics.median(t[0] for t in run["times"])
                cpu = statistics.median(t[1] for t in run["times"])
                ratio = f"{wall / ref_wall:.2f}x" if ref_wall else "-"
                to_opt = (run["objective"] - lower) / run["objective"]
                vs = (run["objective"] / reference["objective"] - 1) if reference else float("nan")
                print(f"{label:<28} {wall:8.3f} {cpu:8.3f} {ratio:>6} {run['objective']:14.4f} "
                      f"{to_opt:10.2e} {vs:+9.2e} {run['accuracy']:8.3f}")  # fmt: skip
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
