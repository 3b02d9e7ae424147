"""Model selection (issue 32, "Goals"): the warm-started path over C (``--cv K --c-path``)
against the references, whole processes timed in the same run.

Every command is a whole process (``subprocess.run``): its wall time (time.perf_counter
around it) and its CPU time (user + system of the children, resource.getrusage), each
the minimum over --repeats rounds (the rounds interleave the tools, so a burst of load on
the shared machine hits them alike). The 1-minute load average is printed before and
after every part.

Part ``a9a`` (linear, binary; svmocas's C, that of LinearSVC: ½|w|² + C·Σ hinge, no
bias): --a9a-cs (default 1e-3:1e3:13, log-spaced), 5 folds.
- ``ocas_learn --cv 5 --c-path VALUES a9a MODEL`` (the path, then the model at the best C);
- scikit-learn: ``GridSearchCV(LinearSVC(loss="hinge", dual=True, fit_intercept=False,
  max_iter=--sklearn-max-iter), {"C": VALUES}, cv=PredefinedSplit(cpsvm's folds),
  refit=True, n_jobs=1)`` in a process of its own: the data read once by
  load_svmlight_file; the fit's seconds (printed by that process) and the whole process;
  without scikit-learn the part says so and goes on;
- one ``ocas_learn -c LARGEST a9a MODEL`` (goal: the path <= 3x);
- LIBLINEAR: ``$LIBLINEAR_TRAIN -s 3 -v 5 -c C a9a`` once per C, the total (goal <= 0.3x;
  LIBLINEAR's own folds and its -e 0.1); skipped with a message when LIBLINEAR_TRAIN is
  unset.
The best C and its CV error: cpsvm's table, the grid search's ``best_params_`` and
``1 - best_score_`` over the same folds (cpsvm.selection.folds.assign_folds, seed 0,
stratified by the label: what ``ocas_learn --cv 5`` uses), LIBLINEAR's printed accuracy.
Goals: path <= 0.1x the grid search, CV errors within 0.1 points.

Parts ``dna``, ``hmm``, ``rank`` (cp_learn, its default algorithm): the path
``cp_learn --cv 5 --c-path VALUES [opts] FILE`` against cold runs over the same values and
folds, ``cp_learn --cv 5 -c C [opts] FILE`` once per C, summed. Goal: path <= 0.5x cold.
Beside the whole processes, the training seconds cp_learn prints in the path's table and
an estimate of the cold runs' training seconds (each cold process minus a process that
does everything but train: ``--cv 5 -c C -# 1``, one iteration per fold).
- dna: ../shared/data/dna.scale (2,000 x 180, 3 classes), --dna-cs (default 1:1e5:6,
  SVMmulticlass's C, C_cs = C/(100 n): C_cs 5e-6..0.5 on a fold of 1,600);
- hmm: UD English EWT in SVM-hmm form (--ewt, default $CPSVM_BENCH_DATA/ewt/ewt.train.hmm,
  else ../tools/data/ewt/ewt.train.hmm beside the checkout; made by
  benchmarks/conllu_to_svmhmm.py from ../shared/data/ud_en_ewt into a temporary directory
  when absent), its first --hmm-sentences sentences (default 1000; 0 = all 12,544),
  -e 0.5, --hmm-cs (default 1,10,100,1000; SVMhmm's C);
- rank: data/samples/toy.rank.train (60 queries; made by benchmarks/make_toy_ranking.py
  when absent),
  --rank-cs (default 0.01:100:5; svm_rank_learn's C).

--in-process FOLDS: also the training alone, in this process, on the first FOLDS folds:
the warm path (OcasPath, StructPath) against a fresh one per C, CPU seconds, iterations,
primal and dual of each (where the time goes when a whole-process ratio hides it behind
start-up: each cold process pays reading and imports, ~1.2 CPU s here).

numba's cache is warmed (one short run of each command) before anything is timed.

Usage: OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_model_selection.py
       [--parts a9a,dna,hmm,rank] [--repeats 3] [--a9a-cs 1e-3:1e3:13]
       [--sklearn-max-iter 1000] [--dna-cs 1:1e5:6] [--hmm-cs 1,10,100,1000]
       [--hmm-sentences 1000] [--rank-cs 0.01:100:5] [--ewt FILE] [--in-process 1]
       [--no-warm]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
BIN = Path(sys.executable).parent
SHARED = REPO.parent / "shared" / "data"
TOOLS_DATA = REPO.parent / "tools" / "data"
FOLDS = 5

# The grid search in a process of its own: read once, folds given, fit timed.
SKLEARN = """
import sys, time, numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.model_selection import GridSearchCV, PredefinedSplit
from sklearn.svm import LinearSVC
from cpsvm.selection.folds import assign_folds
path, values, max_iter = sys.argv[1], [float(v) for v in sys.argv[2].split(",")], int(sys.argv[3])
X, y = load_svmlight_file(path)
X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)  # LinearSVC's refit
folds = assign_folds({folds}, len(y), None, np.sign(y), 0)
svc = LinearSVC(loss="hinge", dual=True, fit_intercept=False, max_iter=max_iter)
search = GridSearchCV(svc, {{"C": values}}, cv=PredefinedSplit(folds), refit=True, n_jobs=1)
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    started = time.perf_counter()
    search.fit(X, y)
    seconds = time.perf_counter() - started
unconverged = sum("converge" in str(w.message) for w in caught)
errors = 100.0 * (1.0 - search.cv_results_["mean_test_score"])
print("fit", seconds, search.best_params_["C"], 100.0 * (1.0 - search.best_score_), unconverged)
print("errors", ",".join(f"{{e:.4f}}" for e in errors))
"""


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def parse_values(text):
    from cpsvm.selection.grid import parse_values as parse

    return parse(text)


class Timed:
    """A command's whole process, timed --repeats times: min wall and min CPU seconds."""

    def __init__(self, name, argv):
        self.name, self.argv = name, [str(a) for a in argv]
        self.walls, self.cpus, self.stdout, self.outputs = [], [], "", []

    def run(self):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(self.argv, capture_output=True, text=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            sys.exit(f"{' '.join(self.argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        self.walls.append(wall)
        self.cpus.append(cpu)
        self.stdout = done.stdout + done.stderr
        self.outputs.append(self.stdout)
        return self

    @property
    def wall(self):
        return min(self.walls)

    @property
    def cpu(self):
        return min(self.cpus)

    def shown(self) -> str:
        def one(a):
            if "\n" in a:
                return "<SKLEARN script of this file>"
            return a if " " not in a else repr(a)

        return " ".join(one(a) for a in self.argv)


class Group:
    """Several commands whose times are summed (cold runs, LIBLINEAR once per C): the
    minimum of each round's sum."""

    def __init__(self, name, members):
        self.name, self.members = name, members
        self.walls, self.cpus = [], []

    def run(self):
        for m in self.members:
            m.run()
        self.walls.append(sum(m.walls[-1] for m in self.members))
        self.cpus.append(sum(m.cpus[-1] for m in self.members))
        return self

    wall = Timed.wall
    cpu = Timed.cpu

    def shown(self) -> str:
        return f"{self.members[0].shown()} ... (each C)"


def rounds(items, repeats):
    for r in range(repeats):
        print(f"  round {r + 1}/{repeats} ({load()})", flush=True)
        for item in items:
            item.run()


def ratio(a, b) -> str:
    return f"{a / b:.3f}" if a >= 0 and b > 0 else "-"  # a difference may be noise


def path_table(text):
    """[(C, mean of the first figure, seconds, iterations, cuts)] and the best C of a
    --c-path run's output."""
    rows = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 6 and re.fullmatch(r"[0-9.e+-]+", f[0]):
            try:
                rows.append((float(f[0]), f[1], float(f[-3]), int(f[-2]), int(f[-1])))
            except ValueError:
                continue
    best = re.search(r"Best C: (\S+) \((.+?) (\S+) \+-", text)
    return rows, (float(best.group(1)), best.group(3)) if best else None


def print_table(title, rows):
    print(f"\n{title}")
    width = max(len(r[0]) for r in rows)
    print(f"  {'':<{width}} {'wall s':>9} {'CPU s':>9} {'wall x':>8} {'CPU x':>8} {'goal':>6}")
    for name, wall, cpu, wall_ref, cpu_ref, goal in rows:
        print(
            f"  {name:<{width}} {wall:>9.2f} {cpu:>9.2f} "
            f"{ratio(wall, wall_ref) if wall_ref else '':>8} "
            f"{ratio(cpu, cpu_ref) if cpu_ref else '':>8} {goal:>6}"
        )


# ---------------------------------------------------------------- a9a


def part_a9a(a, tmp):
    data = SHARED / "a9a"
    values = parse_values(a.a9a_cs)
    text = a.a9a_cs
    print(f"\n== a9a: {FOLDS} folds, C = {', '.join(f'{c:g}' for c in values)} ({load()})")
    path = Timed("ocas_learn --cv --c-path", [BIN / "ocas_learn", "--cv", FOLDS, "--c-path",
                 text, data, tmp / "a9a.path.model"])  # fmt: skip
    largest = repr(values[-1])
    one = Timed("one run", [BIN / "ocas_learn", "-c", largest, data, tmp / "a9a.one.model"])
    items = [path, one]
    sk = None
    try:
        import sklearn  # noqa: F401

        sk = Timed("GridSearchCV(LinearSVC)", [sys.executable, "-c", SKLEARN.format(folds=FOLDS),
                   data, ",".join(repr(c) for c in values), a.sklearn_max_iter])  # fmt: skip
        items.append(sk)
    except ImportError:
        print("scikit-learn is not installed: the grid search is skipped")
    ll = None
    train = os.environ.get("LIBLINEAR_TRAIN")
    if train and Path(train).exists():
        ll = Group("LIBLINEAR train -s 3 -v 5, each C",
                   [Timed(f"train -c {c:g}", [train, "-s", "3", "-v", FOLDS, "-c", repr(c), data])
                    for c in values])  # fmt: skip
        items.append(ll)
    else:
        print("LIBLINEAR_TRAIN is unset (the path of LIBLINEAR's train): LIBLINEAR skipped")
    for item in items:
        print(f"  {item.name}: {item.shown()}")
    rounds(items, a.repeats)
    print(f"  after: {load()}")

    rows, best = path_table(path.stdout)
    print("\ncpsvm's path (ocas_learn's table, last round):")
    print("  " + "\n  ".join(line for line in path.stdout.splitlines()[1 : len(rows) + 3]))
    fit_seconds = None
    if sk is not None:
        fit = next(line.split() for line in sk.stdout.splitlines() if line.startswith("fit "))
        errs = next(line.split()[1] for line in sk.stdout.splitlines() if line.startswith("errors"))
        fit_seconds = min(float(out.split("fit ", 1)[1].split()[0]) for out in sk.outputs)
        sk_best, sk_err, unconverged = float(fit[2]), float(fit[3]), int(fit[4])
        print(f"\nGrid search: CV error per C {errs}; {unconverged} fits did not converge "
              f"(max_iter {a.sklearn_max_iter}); fit {fit_seconds:.2f} s "
              "(min over rounds; the rest: last round)")  # fmt: skip
    if ll is not None:
        accs = []
        for m in ll.members:
            found = re.search(r"Cross Validation Accuracy = ([0-9.]+)%", m.stdout)
            accs.append(100.0 - float(found.group(1)) if found else float("nan"))
        i = min(range(len(accs)), key=lambda j: (accs[j], j))
        print(f"LIBLINEAR: CV error per C {','.join(f'{e:.4f}' for e in accs)}; best C "
              f"{values[i]:g} ({accs[i]:.2f}%, its own folds)")  # fmt: skip
        per_c = ", ".join(f"{c:g}: {m.wall:.2f}" for c, m in zip(values, ll.members))
        print(f"LIBLINEAR: wall seconds per C (min over rounds) {per_c}")

    table = [("path", path.wall, path.cpu, None, None, "")]
    if sk is not None:
        table.append(("grid search, whole process", sk.wall,
                      sk.cpu, None, None, ""))  # fmt: skip
        table.append(("path vs grid search (whole processes)", path.wall, path.cpu, sk.wall,
                      sk.cpu, "<=0.1"))  # fmt: skip
        table.append(("path vs grid search's fit only (wall)", path.wall, path.cpu,
                      min(fit_seconds, sk.wall), None, "<=0.1"))  # fmt: skip
    table.append((f"one run at C = {values[-1]:g}", one.wall, one.cpu, None, None, ""))
    table.append(("path vs one run at the largest C", path.wall, path.cpu, one.wall, one.cpu,
                  "<=3"))  # fmt: skip
    if ll is not None:
        table.append(("LIBLINEAR, sum over C", ll.wall, ll.cpu, None, None, ""))
        table.append(("path vs LIBLINEAR", path.wall, path.cpu, ll.wall, ll.cpu, "<=0.3"))
    print_table("a9a: seconds (min over rounds) and ratios", table)
    if best is not None:
        print(f"\n  best C: cpsvm {best[0]:g} (CV error {best[1]})", end="")
        if sk is not None:
            ours = float(best[1].rstrip("%"))
            print(f"; grid search {sk_best:g} (CV error {sk_err:.2f}%, same folds); "
                  f"difference {ours - sk_err:+.2f} points (goal: within 0.1)")  # fmt: skip
        else:
            print()
    print(f"  path's own training seconds (table): {sum(r[2] for r in rows):.2f}")


# ---------------------------------------------------------------- cp_learn parts


def struct_part(a, tmp, name, data, values_text, extra):
    values = parse_values(values_text)
    learn = [BIN / "cp_learn", *extra]
    print(f"\n== {name}: {data}, {FOLDS} folds, C = {', '.join(f'{c:g}' for c in values)}, "
          f"options {' '.join(extra) or '(none)'} ({load()})")  # fmt: skip
    path = Timed("path", [*learn, "--cv", FOLDS, "--c-path", values_text, data])
    cold = Group("cold", [Timed(f"-c {c:g}", [*learn, "--cv", FOLDS, "-c", repr(c), data])
                          for c in values])  # fmt: skip
    # Everything but the training: reading, folds, one iteration per fold, scoring.
    idle = Timed("-# 1", [*learn, "--cv", FOLDS, "-c", repr(values[0]), "-#", "1", data])
    for item in (path, cold, idle):
        print(f"  {item.name}: {item.shown()}")
    rounds([path, cold, idle], a.repeats)
    print(f"  after: {load()}")
    rows, best = path_table(path.stdout)
    print("  path's table (last round):")
    print("  " + "\n  ".join(path.stdout.splitlines()[2 : len(rows) + 4]))
    for c, m in zip(values, cold.members):
        found = re.search(r"Cross-validated (.+?): (\S+) \+-", m.stdout)
        print(f"  cold -c {c:g}: {found.group(1)} {found.group(2)}, wall {m.wall:.2f} s, "
              f"CPU {m.cpu:.2f} s")  # fmt: skip
    path_train = (path.wall - idle.wall, path.cpu - idle.cpu)
    cold_train = (cold.wall - len(values) * idle.wall, cold.cpu - len(values) * idle.cpu)
    table = [
        ("path", path.wall, path.cpu, None, None, ""),
        ("cold runs, sum over C", cold.wall, cold.cpu, None, None, ""),
        ("path vs cold (whole processes)", path.wall, path.cpu, cold.wall, cold.cpu, "<=0.5"),
        ("no training (-# 1)", idle.wall, idle.cpu, None, None, ""),
        ("path vs cold, minus no-training", *path_train, *cold_train, "<=0.5"),
    ]
    print_table(f"{name}: seconds (min over rounds) and ratios", table)
    if best is not None:
        print(f"  best C on the path: {best[0]:g} ({best[1]})")
    print(f"  path's own training seconds (table): {sum(r[2] for r in rows):.2f}")


def in_process(name, data_file, values_text, epsilon, n_folds):
    """The training alone, in this process (CPU seconds, time.process_time): on the first
    ``n_folds`` folds, the warm path (OcasPath for a9a, StructPath for cp_learn's sets)
    against a fresh one per C; iterations, primal and dual of each, a gap to judge the
    stopping by."""
    import numpy as np

    from cpsvm.io.svmlight import read_svmlight
    from cpsvm.problems import choose_entry
    from cpsvm.selection.folds import assign_folds
    from cpsvm.solvers.ocas import OcasParams, OcasPath
    from cpsvm.solvers.one_slack import StructParams, StructPath

    values = parse_values(values_text)
    data = read_svmlight(str(data_file))
    entry = choose_entry(data, "auto", sequences=name != "a9a")
    units, strata = entry.selection.cv_units(data)
    folds = assign_folds(FOLDS, data.n_examples, units, strata, 0)
    if name == "a9a":
        start = lambda part: OcasPath(part, OcasParams())  # noqa: E731
    else:
        start = lambda part: StructPath(part, StructParams(C=1.0, epsilon=epsilon))  # noqa: E731
    print(f"\n{name} in process, training only, {n_folds} of {FOLDS} folds (CPU seconds):")
    print(f"  {'C':>9} {'warm s':>8} {'it':>5} {'primal':>13} {'dual':>13} "
          f"{'cold s':>8} {'it':>5} {'primal':>13} {'dual':>13}")  # fmt: skip
    total = [0.0, 0.0]
    for f in range(n_folds):
        part = data.subset(np.flatnonzero(folds != f))
        warm = start(part)
        for C in values:
            figures = []
            for path in (warm, start(part)):
                started = time.process_time()
                _, info = path.fit(C)
                r = info.result
                figures.append((time.process_time() - started, r.iterations, r.primal, r.dual))
            total[0] += figures[0][0]
            total[1] += figures[1][0]
            print(f"  {C:>9.4g} " + " ".join(
                f"{t:>8.3f} {it:>5} {p:>13.6g} {d:>13.6g}" for t, it, p, d in figures))  # fmt: skip
    print(f"  sum: warm {total[0]:.2f} s, cold {total[1]:.2f} s, ratio {ratio(*total)}")


def ewt_file(a, tmp):
    if a.ewt is not None:
        src = Path(a.ewt)
    else:
        base = os.environ.get("CPSVM_BENCH_DATA")
        src = (Path(base) if base else TOOLS_DATA) / "ewt" / "ewt.train.hmm"
    if not src.exists():
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import conllu_to_svmhmm

        print(f"{src} absent: converting UD EWT into {tmp}", flush=True)
        if conllu_to_svmhmm.main(["--out", str(tmp), "--splits", "train"]) != 0:
            sys.exit("conversion of UD EWT failed")
        src = tmp / "ewt.train.hmm"
    if not a.hmm_sentences:
        return src
    dst = tmp / f"ewt{a.hmm_sentences}.hmm"
    seen, last = 0, None
    with open(src) as f, open(dst, "w") as out:
        for line in f:
            qid = line.split(None, 2)[1]
            if qid != last:
                seen, last = seen + 1, qid
                if seen > a.hmm_sentences:
                    break
            out.write(line)
    return dst


def rank_file(tmp):
    path = REPO / "data" / "samples" / "toy.rank.train"
    if not path.exists():  # the generator writes data/samples/toy.rank.{train,test}
        subprocess.run([sys.executable, REPO / "benchmarks" / "make_toy_ranking.py"], check=True)
    return path


def warm(tmp):
    """numba's cache for the commands' kernels, before anything is timed."""
    a9a_small = tmp / "warm.svm"
    with open(SHARED / "a9a") as f, open(a9a_small, "w") as out:
        out.writelines(line for _, line in zip(range(300), f))
    for argv in (
        [BIN / "ocas_learn", "--cv", "2", "--c-path", "0.01,1,100", a9a_small],
        [BIN / "cp_learn", "--cv", "2", "--c-path", "1,100", SHARED / "dna.scale"],
        [BIN / "cp_learn", "--cv", "2", "--c-path", "1,10", REPO / "data/samples/ewt60.hmm.train"],
        [BIN / "cp_learn", "--cv", "2", "--c-path", "0.1,1", rank_file(tmp)],
    ):
        subprocess.run([str(x) for x in argv], capture_output=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="a9a,dna,hmm,rank")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--a9a-cs", default="1e-3:1e3:13")
    ap.add_argument("--sklearn-max-iter", type=int, default=1000)
    ap.add_argument("--dna-cs", default="1:1e5:6")
    ap.add_argument("--hmm-cs", default="1,10,100,1000")
    ap.add_argument("--hmm-sentences", type=int, default=1000)
    ap.add_argument("--hmm-e", default="0.5")
    ap.add_argument("--rank-cs", default="0.01:100:5")
    ap.add_argument("--ewt", default=None, help="an SVM-hmm file of EWT's training split")
    ap.add_argument("--no-warm", action="store_true")
    ap.add_argument("--in-process", type=int, default=0, metavar="FOLDS",
                    help="also time the training alone in this process on FOLDS folds")  # fmt: skip
    a = ap.parse_args(argv)
    parts = a.parts.split(",")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    print(f"bench_model_selection: {os.cpu_count()} CPUs, {load()}, repeats {a.repeats}")
    with tempfile.TemporaryDirectory(prefix="cpsvm-msbench-") as d:
        tmp = Path(d)
        if not a.no_warm:
            warm(tmp)
        k = a.in_process
        if "a9a" in parts:
            part_a9a(a, tmp)
            if k:
                in_process("a9a", SHARED / "a9a", a.a9a_cs, None, k)
        if "dna" in parts:
            struct_part(a, tmp, "dna", SHARED / "dna.scale", a.dna_cs, [])
            if k:
                in_process("dna", SHARED / "dna.scale", a.dna_cs, None, k)
        if "hmm" in parts:
            ewt = ewt_file(a, tmp)
            struct_part(a, tmp, "hmm", ewt, a.hmm_cs, ["-e", a.hmm_e])
            if k:
                in_process("hmm", ewt, a.hmm_cs, float(a.hmm_e), k)
        if "rank" in parts:
            struct_part(a, tmp, "rank", rank_file(tmp), a.rank_cs, [])
            if k:
                in_process("rank", rank_file(tmp), a.rank_cs, None, k)
    print(f"\ndone ({load()})")


if __name__ == "__main__":
    main()
