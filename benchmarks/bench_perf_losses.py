"""Benchmark SVMperf's multivariate losses (cp_learn -l 10, 1, 3, 4) against svm_perf_learn.

For each data set (a9a / a9a.t from --data, and SVMperf's own example, Reuters "acq",
train.dat / test.dat from --example) and each loss (-l 10 ROC area, 1 F1, 3 PRBEP, 4
Prec@k with --p 0.1), in one run, interleaved round by round:

* svm_perf_learn -c C -e E -l L -w 3 (its -w 9 takes the error rate only);
* cp_learn at the same -c, -e, -l and -w 3;
* cp_learn at its defaults for the loss (-w 9: OCAS's line search on the structured
  slack, cpsvm.engine.ocas).

Reported per run: whole-process wall time (file reading and model writing included),
the iterations each prints, and for each model the objective 1/2|w|^2 + C*xi(w)
recomputed here exactly on the training set (xi the most violated constraint of
cpsvm.problems.binary.multivariate, the bias weight read back from the threshold) beside a
tight reference optimum (cp_learn -e 0.001); and the measure the loss is 100 minus, on
the test set (cpsvm.measures, SVMperf's tie rule). Ratios: cp_learn's wall time over
svm_perf_learn's in the same round (median and min over the rounds), and objectives
relative to SVMperf's. Goal (issue 24): the same objective within 0.1%, whole process at
most 0.5x svm_perf_learn.

svm_perf_learn is found through CPSVM_SVMPERF_DIR and skipped, saying so, when it is
unset; SVMperf's example through --example or CPSVM_SVMPERF_EXAMPLE (a directory with
train.dat and test.dat), skipped when absent. numba's cache is warmed first. The 1-minute
load average is printed beside each data set.

Usage: .venv/bin/python benchmarks/bench_perf_losses.py [--sets a9a,example]
       [--losses 10,1,3,4] [--rounds 3] [-c 20] [-e 0.1] [--p 0.1] [--data DIR]
       [--example DIR] [--out DIR]
"""

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
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

from cpsvm.io.model_file import read_model  # noqa: E402
from cpsvm.io.svmlight import read_svmlight  # noqa: E402
from cpsvm.measures import trained_measure  # noqa: E402
from cpsvm.models import fit_columns  # noqa: E402
from cpsvm.problems.binary.multivariate import MultivariateProblem  # noqa: E402

BIN = Path(sys.executable).parent
DATA = REPO.parent / "shared" / "data"


def run(cmd, log):
    """(wall seconds, CPU seconds, exit status, text) of a whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with open(log, "w") as out:
        status = subprocess.call([str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, status, Path(log).read_text()


def printed(text, key):
    for line in text.splitlines():
        if line.startswith(key):
            return line.split(key, 1)[1].split()[0]
    return ""


def objective(model_path, train, loss_id, C, k_fraction):
    """½|w|² + C·ξ(w) on the training set, w with the bias weight −b (--b 1) for the
    threshold losses (SVMperf folds it into b; ROC area has none)."""
    model = read_model(model_path)
    w = np.zeros(train.n_features)
    m = min(len(model.w), train.n_features)
    w[:m] = model.w[:m]
    bias = 0.0 if loss_id == 10 else 1.0
    problem = MultivariateProblem(train.X, train.y, loss_id, bias=bias, k_fraction=k_fraction)
    full = w if loss_id == 10 else np.append(w, -model.b)
    return 0.5 * float(full @ full) + C * problem.slack(full)


def test_measure(model_path, test, loss_id, k_fraction):
    model = read_model(model_path)
    decision = fit_columns(test.X, len(model.w)) @ model.w - model.b
    return trained_measure(loss_id, test.y, decision, k_fraction)[1]


def load():
    return os.getloadavg()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="a9a,example")
    ap.add_argument("--losses", default="10,1,3,4")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-c", dest="C", default="20")
    ap.add_argument("-e", dest="epsilon", default="0.1")
    ap.add_argument("--p", dest="k_fraction", default="0.1", help="--p of -l 4 and -l 5")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--example", type=Path, default=os.environ.get("CPSVM_SVMPERF_EXAMPLE") or None)
    ap.add_argument(
        "--out", type=Path, default=Path(tempfile.gettempdir()) / "cpsvm-bench" / "perf_losses"
    )
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    perf_dir = os.environ.get("CPSVM_SVMPERF_DIR")
    perf = Path(perf_dir) / "svm_perf_learn" if perf_dir else None
    if perf is None or not perf.exists():
        print("svm_perf_learn: skipped (set CPSVM_SVMPERF_DIR to the directory holding it)")
        perf = None
    sets = {}
    for name in args.sets.split(","):
        if name == "a9a":
            sets[name] = (args.data / "a9a", args.data / "a9a.t")
        elif name == "example":
            if args.example is None or not (Path(args.example) / "train.dat").exists():
                print(
                    "SVMperf's example: skipped (--example or CPSVM_SVMPERF_EXAMPLE: a "
                    "directory with train.dat and test.dat)"
                )
                continue
            sets[name] = (Path(args.example) / "train.dat", Path(args.example) / "test.dat")
    losses = [int(v) for v in args.losses.split(",")]
    C = float(args.C)
    sample = REPO / "data" / "samples" / "a9a3k.train"
    for loss in losses:  # numba's cache, as a first run would fill it
        for w in ("3", "9"):
            run(
                [
                    BIN / "cp_learn",
                    "-v",
                    "0",
                    "-c",
                    "1",
                    "-l",
                    loss,
                    "-w",
                    w,
                    sample,
                    args.out / "warm.model",
                ],
                args.out / "warm.log",
            )

    rows = []
    header = (
        "set",
        "loss",
        "tool",
        "w",
        "wall_min",
        "wall_median",
        "ratio_median",
        "ratio_min",
        "iterations",
        "objective",
        "vs_perf",
        "vs_optimum",
        "test_measure",
    )
    print("\t".join(header))
    for name, (train_path, test_path) in sets.items():
        train, test = read_svmlight(train_path), read_svmlight(test_path)
        print(
            f"# {name}: {train.n_examples} training, {test.n_examples} test examples; "
            f"load {load():.2f}",
            flush=True,
        )
        for loss in losses:
            p = ["--p", args.k_fraction] if loss in (4, 5) else []
            k_fraction = float(args.k_fraction) if loss in (4, 5) else 0.0
            common = ["-c", args.C, "-e", args.epsilon, "-l", loss, *p]
            tools = {}
            if perf is not None:
                tools["svm_perf_learn"] = ("3", [perf, *common, "-w", "3"])
            tools["cp_learn"] = ("3", [BIN / "cp_learn", *common, "-w", "3"])
            tools["cp_learn default"] = ("9", [BIN / "cp_learn", *common])
            times = {t: [] for t in tools}
            texts = {}
            for _ in range(args.rounds):
                for tool, (_, cmd) in tools.items():
                    model = args.out / f"{name}.{loss}.{tool.replace(' ', '_')}.model"
                    wall, _, status, text = run(
                        [*cmd, train_path, model], args.out / f"{name}.{loss}.log"
                    )
                    if status:
                        sys.exit(f"{tool} failed ({status}):\n{text[-2000:]}")
                    times[tool].append(wall)
                    texts[tool] = (text, model)
            tight = args.out / f"{name}.{loss}.optimum.model"
            run(
                [BIN / "cp_learn", "-c", args.C, "-e", "0.001", "-l", loss, *p, train_path, tight],
                args.out / "tight.log",
            )
            optimum = objective(tight, train, loss, C, k_fraction)
            reference = None
            for tool, (w, _) in tools.items():
                text, model = texts[tool]
                obj = objective(model, train, loss, C, k_fraction)
                if tool == "svm_perf_learn":
                    reference = obj
                ratios = (
                    [a / b for a, b in zip(times[tool], times["svm_perf_learn"])]
                    if perf is not None
                    else [float("nan")]
                )
                row = (
                    name,
                    loss,
                    tool,
                    w,
                    f"{min(times[tool]):.3f}",
                    f"{statistics.median(times[tool]):.3f}",
                    f"{statistics.median(ratios):.3f}",
                    f"{min(ratios):.3f}",
                    printed(text, "Number of iterations: "),
                    f"{obj:.4f}",
                    f"{(obj / reference - 1) * 100:+.3f}%" if reference else "",
                    f"{(obj / optimum - 1) * 100:+.3f}%",
                    f"{test_measure(model, test, loss, k_fraction):.2f}",
                )
                rows.append(row)
                print("\t".join(map(str, row)), flush=True)
            print(f"#   optimum (cp_learn -e 0.001) {optimum:.4f}; load {load():.2f}", flush=True)
    with open(args.out / "perf_losses.tsv", "w") as out:
        out.write("\t".join(header) + "\n")
        out.writelines("\t".join(map(str, r)) + "\n" for r in rows)
    print(f"written {args.out / 'perf_losses.tsv'}")


if __name__ == "__main__":
    main()
