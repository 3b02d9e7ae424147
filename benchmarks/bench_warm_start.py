"""Warm starts from a model file (issue 46, item 3): ``ocas_learn -c 2 --init-model
(the model at C = 1)`` against the cold run ``ocas_learn -c 2``, whole processes.

Per data set: the model at C = 1 is trained once (``ocas_learn -c C0``); then, in
interleaved rounds (cold, warm, cold, warm, ... --repeats times), the cold run at C and
the warm run from that model at C, each a whole process reading the file and writing
its model; wall and CPU seconds (user + sys of the child), medians, the ratio warm/cold
(the goal: at most 0.6). Each run's Q_P and Q_P − Q_D are read from its statistics: the
warm run's objective must equal the cold one's within the stopping rule, |Q_P(warm) −
Q_P(cold)| at most the larger of their gaps (each is within its own gap of the optimum).
Then the same with each method forced (``--methods 0,1,2``: -m given to both runs), and
the method each run used (ocas_learn's "Method" statistics line).

Data (--sets): text1m (DIR/text1m.svm, 1M x 20k text-like rows) and sector (DIR/sector/
sector.scale, 105 classes; generated in its shape by benchmarks/many_classes.py when
absent), both written by benchmarks/bench_liblinear.py's generator when absent; a9a
(../shared/data). DIR is --data (default $CPSVM_BENCH_DATA, else ../tools/data beside
the checkout).

Usage: OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_warm_start.py
       [--sets text1m,sector] [--repeats 3] [--C0 1] [--C 2] [--methods 0,1,2]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_liblinear import SETS, SHARED, ensure_data, load  # noqa: E402

OCAS_LEARN = str(Path(sys.executable).parent / "ocas_learn")


def timed_run(cmd):
    """(wall s, CPU s, stdout) of one run of ``cmd``."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{cmd} exited {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime, out


def objective(stdout):
    """(Q_P, Q_P − Q_D, the method's line) of ocas_learn's statistics."""
    found = re.search(r"Q_P:\s*(\S+)\s+Q_D:\s*(\S+)", stdout)
    if not found:
        raise SystemExit(f"no Q_P in ocas_learn's output:\n{stdout}")
    primal, dual = float(found.group(1)), float(found.group(2))
    method = re.search(r"^\s*Method\s*:.*$", stdout, re.M)
    return primal, primal - dual, method.group(0).strip() if method else "?"


def compare(name, train, C0, C, method, repeats, workdir):
    flags = [] if method is None else ["-m", str(method)]
    first = Path(workdir) / "c0.model"
    timed_run([OCAS_LEARN, "-c", repr(C0), *flags, train, str(first)])
    cold = [OCAS_LEARN, "-c", repr(C), *flags, train, str(Path(workdir) / "cold.model")]
    warm = [OCAS_LEARN, "-c", repr(C), *flags, "--init-model", str(first), train,
            str(Path(workdir) / "warm.model")]  # fmt: skip
    runs = {"cold": [], "warm": []}
    before = load()
    for _ in range(repeats):
        for what, cmd in (("cold", cold), ("warm", warm)):
            runs[what].append(timed_run(cmd))
    after = load()
    medians = {
        what: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs))
        for what, rs in runs.items()
    }
    (p_c, gap_c, m_c), (p_w, gap_w, m_w) = (objective(runs[w][-1][2]) for w in ("cold", "warm"))
    same = abs(p_w - p_c) <= max(gap_c, gap_w)
    label = "default -m" if method is None else f"-m {method}"
    print(f"\n== {name}, C {C0:g} -> {C:g}, {label} ({repeats} rounds, load {before:.1f} -> "
          f"{after:.1f})")  # fmt: skip
    for what in ("cold", "warm"):
        print(f"   {what}: wall {medians[what][0]:7.2f} s  CPU {medians[what][1]:7.2f} s")
    ratio = medians["warm"][0] / medians["cold"][0]
    print(f"   warm/cold wall {ratio:.2f} (goal <= 0.6), CPU "
          f"{medians['warm'][1] / medians['cold'][1]:.2f}")  # fmt: skip
    print(f"   Q_P cold {p_c:.6g} (gap {gap_c:.4g}), warm {p_w:.6g} (gap {gap_w:.4g}): "
          f"{'same within the stopping rule' if same else 'DIFFERENT'}")  # fmt: skip
    print(f"   method: cold {m_c!r}, warm {m_w!r}")
    return ratio, same


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="text1m,sector")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--C0", type=float, default=1.0)
    parser.add_argument("--C", type=float, default=2.0)
    parser.add_argument("--methods", default="", help="also with -m forced: e.g. 0,1,2")
    default_data = os.environ.get("CPSVM_BENCH_DATA", str(REPO.parent / "tools" / "data"))
    parser.add_argument("--data", default=default_data)
    a = parser.parse_args()
    methods = [None] + [int(m) for m in a.methods.split(",") if m]
    with tempfile.TemporaryDirectory() as workdir:
        for name in a.sets.split(","):
            train_tpl, test_tpl, _, _ = SETS[name]
            train, test = (t.format(shared=SHARED, data=a.data) for t in (train_tpl, test_tpl))
            ensure_data(name, (train, test), a.data)
            for method in methods:
                compare(name, train, a.C0, a.C, method, a.repeats, workdir)


if __name__ == "__main__":
    main()
