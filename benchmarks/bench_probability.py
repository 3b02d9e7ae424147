"""Probabilities (issue 46, item 4): ``ocas_learn --probability`` (Platt's sigmoid on
5-fold cross-validated decision values, Lin, Lin and Weng's fit) against scikit-learn's
``CalibratedClassifierCV(LinearSVC(loss="hinge", C=C), method="sigmoid", cv=5)``, on
a9a / a9a.t (../shared/data beside the checkout, or --train/--test).

The same C under both conventions: LinearSVC(loss="hinge") minimises ½|w|² + C·Σ hinge,
ocas_learn's -c; LinearSVC fits an intercept as a constant feature of value 1,
regularised like w, which is ocas_learn's -b 1.

In interleaved rounds (--repeats), each a whole process, wall seconds:
- ours: ``ocas_learn -c C -b 1 --probability -v 0 TRAIN MODEL`` (this checkout, read +
  the 5 fold trainings + the sigmoid + the final training + the model written), then
  ``cp_classify --probability -v 1 TEST MODEL PRED`` (timed apart), whose log-loss and
  Brier score lines are the figures;
- scikit-learn: a ``python`` process that imports scikit-learn, reads TRAIN with
  load_svmlight_file, fits the calibrated classifier, and prints the seconds from the
  process's launch (the wall clock passed to it) to the fit's end, the fit's own
  seconds, and the log-loss and the Brier score of predict_proba on TEST
  (sklearn.metrics), which it computes after (not timed).
The goal's ratio is ours / scikit-learn's whole process up to its trained model (start-up,
imports and reading included, classifying excluded, on both sides); the fit alone
(inside the process) is printed beside it, and the CPU seconds (user + sys) of the two
processes up to the same points (ours from wait4, theirs from getrusage at the fit's
end), the steadier figure on a loaded machine. Medians over the rounds. The goals:
log-loss within 0.005, Brier within 0.002 of scikit-learn's; time at most 0.3x.

Usage: OPENBLAS_NUM_THREADS=1 python benchmarks/bench_probability.py [--C 1] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"

SKLEARN_RUN = """
import json, resource, sys, time, warnings
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_svmlight_file
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import brier_score_loss, log_loss
from sklearn.svm import LinearSVC
train, test, C, launched = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
X, y = load_svmlight_file(train)
started = time.perf_counter()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", ConvergenceWarning)
    model = CalibratedClassifierCV(
        LinearSVC(loss="hinge", C=C, dual=True), method="sigmoid", cv=5
    ).fit(X, y)
fit = time.perf_counter() - started
trained = time.time() - launched  # the process from its launch to the fit's end
usage = resource.getrusage(resource.RUSAGE_SELF)
cpu = usage.ru_utime + usage.ru_stime
Xt, yt = load_svmlight_file(test, n_features=X.shape[1])
p = model.predict_proba(Xt)[:, list(model.classes_).index(1)]
print(json.dumps({"fit": fit, "trained": trained, "cpu": cpu, "log_loss": log_loss(yt, p),
                  "brier": brier_score_loss(yt, p), "convergence_warnings": len(caught)}))
"""


def wall(cmd, env=None) -> tuple:
    """(wall seconds, CPU seconds (user + sys), stdout + stderr) of a process."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, text=True, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        out.seek(0)
        text = out.read()
    if status != 0:
        raise SystemExit(f"{cmd[:4]} failed: {text[-400:]}")
    return seconds, usage.ru_utime + usage.ru_stime, text


def figure(name, text) -> float:
    return float(re.search(rf"{name} on test set: (\S+)", text).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", default=str(SHARED / "a9a"))
    parser.add_argument("--test", default=str(SHARED / "a9a.t"))
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    a = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": "1"}
    work = Path(tempfile.mkdtemp(prefix="bench_probability"))
    model, predictions = work / "model", work / "predictions"
    learn = [sys.executable, "-m", "cpsvm.cli.ocas", "-c", repr(a.C), "-b", "1"]
    learn += ["--probability", "-v", "0", a.train, str(model)]
    classify = [sys.executable, "-m", "cpsvm.cli.classify", "--probability", "-v", "1"]
    classify += [a.test, str(model), str(predictions)]
    reference = [sys.executable, "-c", SKLEARN_RUN, a.train, a.test, repr(a.C)]
    print(f"{a.train} / {a.test}, C = {a.C:g}, {a.repeats} rounds, whole processes (wall s)")
    wall(learn, env)  # the kernels' first load
    ours, ours_cpu, ours_classify, theirs, theirs_cpu, theirs_fit = [], [], [], [], [], []
    for _ in range(a.repeats):
        seconds, cpu, _ = wall(learn, env)
        ours.append(seconds)
        ours_cpu.append(cpu)
        seconds, _, text = wall(classify, env)
        ours_classify.append(seconds)
        _, _, out = wall([*reference, repr(time.time())], env)
        result = json.loads(out.strip().splitlines()[-1])
        theirs.append(result["trained"])
        theirs_cpu.append(result["cpu"])
        theirs_fit.append(result["fit"])
    ll, brier = figure("Log-loss", text), figure("Brier score", text)
    platt = re.search(r"Platt's sigmoid A (\S+) B (\S+)", model.read_text()).groups()
    m_ours, m_theirs, m_fit = map(statistics.median, (ours, theirs, theirs_fit))
    c_ours, c_theirs = statistics.median(ours_cpu), statistics.median(theirs_cpu)
    print(
        f"ocas_learn --probability: {m_ours:.3f} s, CPU {c_ours:.3f} s "
        f"(A = {platt[0]}, B = {platt[1]}); "
        f"cp_classify --probability {statistics.median(ours_classify):.3f} s"
    )
    print(
        f"CalibratedClassifierCV(LinearSVC): {m_theirs:.3f} s whole process to the fit's end, "
        f"CPU {c_theirs:.3f} s, "
        f"{m_fit:.3f} s in fit ({result['convergence_warnings']} ConvergenceWarnings)"
    )
    print(
        f"log-loss: ours {ll:.6f}, scikit-learn {result['log_loss']:.6f}, "
        f"difference {ll - result['log_loss']:+.6f} (goal |.| <= 0.005)"
    )
    print(
        f"Brier:    ours {brier:.6f}, scikit-learn {result['brier']:.6f}, "
        f"difference {brier - result['brier']:+.6f} (goal |.| <= 0.002)"
    )
    print(
        f"time: ours / scikit-learn whole process {m_ours / m_theirs:.2f}x (goal <= 0.3x); "
        f"ours / its fit alone {m_ours / m_fit:.2f}x; CPU seconds of the whole processes "
        f"{c_ours / c_theirs:.2f}x"
    )


if __name__ == "__main__":
    main()
