"""Benchmark ranking (cp_learn --problem rank, SVMrank's problem) against LinearSVC on the
materialised pairs, svm_rank_learn and svm_learn -z p.

The objective is SVMrank's with -l 1: 1/2|w|^2 + (C/n)*sum over the pairs (i, j) of a
query with y_i > y_j of max(0, 1 - w.(x_i - x_j)), n queries; LinearSVC(loss='hinge',
fit_intercept=False) minimises the same on the pairs' differences at C/n (each pair once,
half of them negated so that it sees two classes), svm_learn -z p at C_light = C/n.
Every objective below is recomputed here from the weights, over the materialised pairs.

1. pairs: generated sets (benchmarks/make_toy_ranking.py: dense features, graded 0..4,
   --pair-sizes queries x documents per query) at each -c of --cs: cpsvm's solver
   (StructParams at cp_learn's defaults: -w 9, -e 0.001 relative to a query's loss) and
   LinearSVC (tol 1e-4, its default) on the pairs, interleaved, --rounds times, min and
   median fit times (LinearSVC's without building the pairs, which is said apart); each
   objective's excess over the best of a tight LinearSVC (tol 1e-7) and a tight cpsvm run
   (-e 1e-5). Goal (issue 24): within 0.1% at <= 0.2x LinearSVC's time.
2. scale: training time against the number of documents (the first --scale-queries
   queries of one generated set of --scale-docs documents per query, the same C), then
   at --fixed-docs documents in queries of --query-sizes documents (the pairs grow with
   the query size); least-squares log-log slopes of the time and of the time per
   iteration. Goal: linear in the documents, not in the pairs.
3. tools: whole processes, interleaved: svm_rank_learn (CPSVM_SVMRANK_DIR) and cp_learn at
   the same -c on the public set (CPSVM_RANK_DATA: rank.train, rank.test) and on a
   generated file; svm_learn -z p (CPSVM_SVMLIGHT_DIR) at C/n on a small generated file.
   Objectives recomputed from each model file; test figures by cp_classify.
4. defaults: on the public set, cp_learn's -w 3, 4, 9 at -e 0.1, 0.01, 0.001 for each -c
   of --default-cs: time, iterations, objective excess over a tight run, test NDCG@10 and
   swapped pairs: the figures of man cp_learn's DEFAULTS.

External tools and the public set are found through environment variables and skipped,
saying so, when unset. numba's threading layer is workqueue and OpenBLAS single-threaded,
as the commands set them. The 1-minute load average is printed beside every table; every
speed figure is a ratio within one run. Tables go to stdout and, as TSV, to --out.

Usage: .venv/bin/python benchmarks/bench_rank.py [--parts pairs,scale,tools,defaults]
       [--rounds 3] [--cs 1,10,100] [--pair-sizes 1000x20,300x60]
       [--scale-queries 500,1000,2000,4000,8000] [--scale-docs 50] [--fixed-docs 50000]
       [--query-sizes 10,30,100,300,1000] [--out DIR] [--quick]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_toy_ranking import generate, write  # noqa: E402

from cpsvm.data import Dataset  # noqa: E402
from cpsvm.io.model_file import read_model  # noqa: E402
from cpsvm.io.svmlight import read_svmlight  # noqa: E402
from cpsvm.solvers.one_slack import StructParams, train  # noqa: E402

BIN = Path(sys.executable).parent
N_FEATURES = 30


def load1():
    return round(os.getloadavg()[0], 2)


def table(title, rows, out_dir, name):
    print(f"\n== {title} (load {load1()})")
    if not rows:
        print("(nothing)")
        return
    keys = list(rows[0])
    widths = [max(len(k), *(len(fmt(r[k])) for r in rows)) for k in keys]
    print("  ".join(k.rjust(w) for k, w in zip(keys, widths)))
    for r in rows:
        print("  ".join(fmt(r[k]).rjust(w) for k, w in zip(keys, widths)))
    with open(out_dir / f"{name}.tsv", "w") as f:
        f.write("\t".join(keys) + "\n")
        for r in rows:
            f.write("\t".join(fmt(r[k]) for k in keys) + "\n")


def fmt(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


# ---------------------------------------------------------------- pairs and objectives


def query_starts(qid):
    return np.concatenate(([0], np.flatnonzero(np.diff(qid)) + 1, [len(qid)]))


class Pairs:
    """The pairs (i, j), y_i > y_j within a query, of a set, and its SVMrank objective."""

    def __init__(self, X, y, qid):
        starts = query_starts(qid)
        first, second = [], []
        for a, b in zip(starts[:-1], starts[1:]):
            t = y[a:b]
            i, j = np.nonzero(t[:, None] > t[None, :])
            first.append(i + a)
            second.append(j + a)
        self.i, self.j = np.concatenate(first), np.concatenate(second)
        self.X = X.tocsr()
        self.n_queries = len(starts) - 1

    def differences(self):
        D = self.X[self.i] - self.X[self.j]
        return D.toarray() if D.nnz > 0.3 * D.shape[0] * D.shape[1] else D.tocsr()

    def objective(self, w, C):
        s = self.X @ w
        hinge = np.maximum(0.0, 1.0 - (s[self.i] - s[self.j]))
        return 0.5 * float(w @ w) + C / self.n_queries * float(hinge.sum())


def fit_linearsvc(D, C_pairs, tol, max_iter=100000):
    sign = np.where(np.arange(D.shape[0]) % 2 == 0, 1.0, -1.0)
    Dsigned = D * sign[:, None] if isinstance(D, np.ndarray) else (sp.diags(sign) @ D).tocsr()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        svc = LinearSVC(
            C=C_pairs, loss="hinge", fit_intercept=False, tol=tol, max_iter=max_iter
        ).fit(Dsigned, sign)
        seconds = time.perf_counter() - t
    return svc.coef_.ravel(), seconds, int(svc.n_iter_)


def fit_cpsvm(data, C, epsilon=0.001, algorithm=None, n_threads=None):
    t = time.perf_counter()
    model, info = train(
        data,
        StructParams(
            C=C, epsilon=epsilon, algorithm=algorithm, problem="rank", n_threads=n_threads
        ),
    )
    return model.w, time.perf_counter() - t, info


def optimum(pairs, data, C):
    """The best objective of a tight LinearSVC and a tight cpsvm run, and cpsvm's lower
    bound (its dual)."""
    w_svc, _, _ = fit_linearsvc(pairs.differences(), C / pairs.n_queries, 1e-7, 1000000)
    w_cp, _, info = fit_cpsvm(data, C, epsilon=1e-5)
    return min(pairs.objective(w_svc, C), pairs.objective(w_cp, C)), info.result.dual


# ---------------------------------------------------------------- parts


def part_pairs(args, out_dir):
    rows = []
    for size in args.pair_sizes.split(","):
        nq, nd = map(int, size.split("x"))
        X, y, qid = generate(nq, nd, N_FEATURES, seed=1)
        data = Dataset(X, y, qid)
        t = time.perf_counter()
        pairs = Pairs(X, y, qid)
        D = pairs.differences()
        build = time.perf_counter() - t
        fit_cpsvm(data, 1.0)  # numba's cache loaded before timing
        for C in map(float, args.cs.split(",")):
            best, lower = optimum(pairs, data, C)
            times = {"cpsvm": [], "cpsvm_1thread": [], "linearsvc": []}
            objective = {}
            for _ in range(args.rounds):
                w, s, info = fit_cpsvm(data, C)
                times["cpsvm"].append(s)
                objective["cpsvm"] = pairs.objective(w, C)
                iterations = info.result.iterations
                w, s, _ = fit_cpsvm(data, C, n_threads=1)
                times["cpsvm_1thread"].append(s)
                w, s, svc_iter = fit_linearsvc(D, C / nq, 1e-4)
                times["linearsvc"].append(s)
                objective["linearsvc"] = pairs.objective(w, C)
            rows.append(
                dict(
                    queries=nq,
                    docs=len(y),
                    pairs=len(pairs.i),
                    C=C,
                    optimum=best,
                    gap_bound=(best - lower) / best,
                    cp_excess=(objective["cpsvm"] - best) / best,
                    svc_excess=(objective["linearsvc"] - best) / best,
                    cp_min=min(times["cpsvm"]),
                    cp_med=statistics.median(times["cpsvm"]),
                    cp1_min=min(times["cpsvm_1thread"]),
                    svc_min=min(times["linearsvc"]),
                    svc_med=statistics.median(times["linearsvc"]),
                    ratio_min=min(times["cpsvm"]) / min(times["linearsvc"]),
                    ratio_med=statistics.median(times["cpsvm"])
                    / statistics.median(times["linearsvc"]),
                    ratio_1thread=min(times["cpsvm_1thread"]) / min(times["linearsvc"]),
                    pairs_build_s=build,
                    cp_iter=iterations,
                    svc_iter=svc_iter,
                    load=load1(),
                )
            )
            print(
                f"  {nq}x{nd} C={C:g}: cpsvm {rows[-1]['cp_min']:.3f}s, LinearSVC "
                f"{rows[-1]['svc_min']:.3f}s (ratio {rows[-1]['ratio_min']:.3f}), excess "
                f"{rows[-1]['cp_excess']:.2e} / {rows[-1]['svc_excess']:.2e}",
                flush=True,
            )
    table(
        "cpsvm (-w 9, -e 0.001) against LinearSVC on the materialised pairs (tol 1e-4); "
        "times in seconds, fits only; excess over the best tight objective",
        rows,
        out_dir,
        "pairs",
    )


def _timed_runs(data, C, rounds):
    times, info = [], None
    for _ in range(rounds):
        _, seconds, info = fit_cpsvm(data, C)
        times.append(seconds)
    return times, info


def _n_pairs(y, qid):
    starts = query_starts(qid)
    return int(sum(np.sum(y[a:b, None] > y[None, a:b]) for a, b in zip(starts[:-1], starts[1:])))


def part_scale(args, out_dir):
    """Two series: more queries of the same size (prefixes of one generated set, so one
    distribution), and the same number of documents in fewer, larger queries (the pairs
    grow with the query size, the documents do not)."""
    C = args.scale_c
    sizes = [int(q) for q in args.scale_queries.split(",")]
    X, y, qid = generate(max(sizes), args.scale_docs, N_FEATURES, seed=2)
    fit_cpsvm(Dataset(*generate(50, args.scale_docs, N_FEATURES, seed=2)), C)
    rows = []
    for nq in sizes:
        end = int(np.searchsorted(qid, nq + 1))
        data = Dataset(X[:end], y[:end], qid[:end])
        times, info = _timed_runs(data, C, args.rounds)
        r = info.result
        rows.append(
            dict(
                queries=nq,
                docs=end,
                pairs=_n_pairs(y[:end], qid[:end]),
                C=C,
                seconds_min=min(times),
                seconds_med=statistics.median(times),
                iterations=r.iterations,
                oracle_calls=r.oracle_calls,
                ms_per_iteration=1e3 * min(times) / r.iterations,
                gap_rel=(r.primal - r.dual) / r.primal,
                load=load1(),
            )
        )
        print(f"  {nq} queries: {min(times):.3f}s, {r.iterations} iterations", flush=True)
    table(
        f"training time against documents (-c {C:g}; the first N queries of one generated "
        f"set, {args.scale_docs} documents per query on average)",
        rows,
        out_dir,
        "scale",
    )
    docs = np.log([r["docs"] for r in rows])
    seconds = np.log([r["seconds_min"] for r in rows])
    per_iteration = np.log([r["ms_per_iteration"] for r in rows])
    print(
        f"log-log slope in documents: of the time {np.polyfit(docs, seconds, 1)[0]:.3f}, "
        f"of the time per iteration {np.polyfit(docs, per_iteration, 1)[0]:.3f}"
    )
    rows = []
    total = args.fixed_docs
    for per_query in map(int, args.query_sizes.split(",")):
        X, y, qid = generate(max(1, total // per_query), per_query, N_FEATURES, seed=6)
        data = Dataset(X, y, qid)
        times, info = _timed_runs(data, C, args.rounds)
        r = info.result
        rows.append(
            dict(
                docs_per_query=per_query,
                queries=int(qid[-1]),
                docs=len(y),
                pairs=_n_pairs(y, qid),
                C=C,
                seconds_min=min(times),
                seconds_med=statistics.median(times),
                iterations=r.iterations,
                ms_per_iteration=1e3 * min(times) / r.iterations,
                gap_rel=(r.primal - r.dual) / r.primal,
                load=load1(),
            )
        )
        print(
            f"  {per_query} documents a query: {min(times):.3f}s, {r.iterations} iterations",
            flush=True,
        )
    table(
        f"training time against the pairs at about {total} documents (-c {C:g}; queries of "
        "growing size)",
        rows,
        out_dir,
        "scale_pairs",
    )
    pairs = np.log([r["pairs"] for r in rows])
    print(
        f"log-log slope in pairs: of the time "
        f"{np.polyfit(pairs, np.log([r['seconds_min'] for r in rows]), 1)[0]:.3f}, of the "
        f"time per iteration "
        f"{np.polyfit(pairs, np.log([r['ms_per_iteration'] for r in rows]), 1)[0]:.3f}"
    )


def run_process(cmd):
    t = time.perf_counter()
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if done.returncode != 0:
        sys.exit(f"bench_rank: {' '.join(map(str, cmd))} failed:\n{done.stdout}{done.stderr}")
    return wall, done.stdout + done.stderr


def grab(pattern, text, cast=float):
    found = re.findall(pattern, text)
    return cast(found[-1]) if found else None


def classify_figures(test, model, work):
    _, text = run_process([BIN / "cp_classify", "-v", "1", test, model, work / "pred"])
    return dict(
        test_swapped=grab(r"Avg Swappedpairs Percent:\s*([0-9.]+)", text),
        test_ndcg10=grab(r"NDCG@10 on test set: ([0-9.]+)", text),
    )


def part_tools(args, out_dir):
    rank_dir = os.environ.get("CPSVM_SVMRANK_DIR")
    light_dir = os.environ.get("CPSVM_SVMLIGHT_DIR")
    public = os.environ.get("CPSVM_RANK_DATA")
    work = Path(tempfile.mkdtemp(prefix="bench-rank-"))
    sets = []
    if public:
        sets.append(
            (
                "public",
                Path(public) / "rank.train",
                Path(public) / "rank.test",
                [0.01, 1.0, 20.0, 100.0],
            )
        )
    else:
        print("CPSVM_RANK_DATA unset: the public set is skipped")
    X, y, qid = generate(2500, 40, N_FEATURES, seed=3, decimals=4)
    split = int(np.searchsorted(qid, 2001))  # 2000 training queries, 500 test ones
    write(work / "gen.train", X[:split], y[:split], qid[:split])
    write(work / "gen.test", X[split:], y[split:], qid[split:])
    sets.append(("generated 2000x40", work / "gen.train", work / "gen.test", [1.0, 100.0]))
    rows = []
    if not rank_dir:
        print("CPSVM_SVMRANK_DIR unset: svm_rank_learn is skipped")
    run_process([BIN / "cp_learn", "-v", "0", "-c", "1", sets[-1][1], work / "warm"])
    for name, train_file, test_file, cs in sets:
        data = read_svmlight(train_file)
        pairs = Pairs(data.X, data.y, data.qid)
        for C in cs:
            tools = [
                (
                    "cp_learn",
                    [BIN / "cp_learn", "-c", C, train_file, work / "cp.model"],
                    work / "cp.model",
                )
            ]
            if rank_dir:
                tools.append(
                    (
                        "svm_rank_learn",
                        [Path(rank_dir) / "svm_rank_learn", "-c", C, train_file, work / "sr.model"],
                        work / "sr.model",
                    )
                )
            walls = {tool: [] for tool, _, _ in tools}
            printed = {}
            for _ in range(args.rounds):
                for tool, cmd, _ in tools:
                    wall, text = run_process(cmd)
                    walls[tool].append(wall)
                    printed[tool] = text
            for tool, _, model_file in tools:
                model = read_model(model_file)
                w = np.zeros(data.n_features)
                k = min(len(model.w), len(w))
                w[:k] = model.w[:k]
                text = printed[tool]
                rows.append(
                    dict(
                        set=name,
                        C=C,
                        tool=tool,
                        wall_min=min(walls[tool]),
                        wall_med=statistics.median(walls[tool]),
                        runtime=grab(r"Runtime in cpu-seconds:\s*([0-9.]+)", text),
                        iterations=grab(r"Number of iterations:\s*(\d+)", text, int),
                        pval=grab(r"pval=([-+0-9.eE]+)", text),
                        objective=pairs.objective(w, C),
                        **classify_figures(test_file, model_file, work),
                        load=load1(),
                    )
                )
            if rank_dir:
                ours, theirs = rows[-2], rows[-1]
                print(
                    f"  {name} -c {C:g}: cp_learn {ours['wall_min']:.3f}s obj "
                    f"{ours['objective']:.6g}; svm_rank_learn {theirs['wall_min']:.3f}s obj "
                    f"{theirs['objective']:.6g}",
                    flush=True,
                )
    table(
        "whole processes: cp_learn and svm_rank_learn at the same -c (wall seconds, "
        "file reading included; objective recomputed from each model)",
        rows,
        out_dir,
        "tools",
    )
    if not light_dir:
        print("CPSVM_SVMLIGHT_DIR unset: svm_learn -z p is skipped")
        return
    X, y, qid = generate(60, 10, N_FEATURES, seed=5, decimals=4)
    write(work / "small.train", X, y, qid)
    data = read_svmlight(work / "small.train")
    pairs = Pairs(data.X, data.y, data.qid)
    rows = []
    for C in (1.0, 30.0):
        c_light = C / pairs.n_queries
        light = [
            Path(light_dir) / "svm_learn",
            "-z",
            "p",
            "-c",
            repr(c_light),
            "-e",
            "0.0001",
            work / "small.train",
            work / "light.model",
        ]
        ours = [
            BIN / "cp_learn",
            "-e",
            "0.0001",
            "-c",
            C,
            work / "small.train",
            work / "cp.small.model",
        ]
        for tool, cmd, model_file in (
            ("svm_learn -z p", light, work / "light.model"),
            ("cp_learn", ours, work / "cp.small.model"),
        ):
            wall, _ = run_process(cmd)
            model = read_model(model_file)
            w = np.zeros(data.n_features)
            k = min(len(model.w), len(w))
            w[:k] = model.w[:k]
            rows.append(
                dict(
                    C=C,
                    C_light=c_light,
                    tool=tool,
                    wall=wall,
                    objective=pairs.objective(w, C),
                    pairs=len(pairs.i),
                    load=load1(),
                )
            )
    table(
        "svm_learn -z p at C_light = C/n against cp_learn -c C (60 queries, objective "
        "1/2|w|^2 + (C/n) sum of the pairs' hinge)",
        rows,
        out_dir,
        "svmlight",
    )


def part_defaults(args, out_dir):
    public = os.environ.get("CPSVM_RANK_DATA")
    if not public:
        print("CPSVM_RANK_DATA unset: the defaults part is skipped")
        return
    from cpsvm.problems.rank.problem import query_metrics

    data = read_svmlight(Path(public) / "rank.train")
    test = read_svmlight(Path(public) / "rank.test", n_features=data.n_features)
    pairs = Pairs(data.X, data.y, data.qid)
    starts = query_starts(test.qid)
    fit_cpsvm(data, 1.0)
    rows = []
    for C in map(float, args.default_cs.split(",")):
        best, lower = optimum(pairs, data, C)
        for algorithm in (3, 4, 9):
            for epsilon in (0.1, 0.01, 0.001):
                times = []
                for _ in range(args.rounds):
                    w, s, info = fit_cpsvm(data, C, epsilon=epsilon, algorithm=algorithm)
                    times.append(s)
                metrics = query_metrics(test.X @ w, test.y, starts)
                fraction = np.divide(
                    metrics[:, 1],
                    metrics[:, 0],
                    out=np.zeros(len(metrics)),
                    where=metrics[:, 0] > 0,
                )
                rows.append(
                    dict(
                        C=C,
                        w=algorithm,
                        e=epsilon,
                        seconds_min=min(times),
                        seconds_med=statistics.median(times),
                        iterations=info.result.iterations,
                        excess=(pairs.objective(w, C) - best) / best,
                        test_swapped=100 * float(fraction.mean()),
                        test_ndcg10=float(np.nanmean(metrics[:, 2])),
                        load=load1(),
                    )
                )
    table(
        "cp_learn --problem rank on the public set: -w and -e (seconds of the solver, "
        "objective excess over the tight optimum, test figures)",
        rows,
        out_dir,
        "defaults",
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", default="pairs,scale,tools,defaults")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cs", default="1,10,100")
    parser.add_argument("--pair-sizes", default="1000x20,300x60")
    parser.add_argument("--scale-queries", default="500,1000,2000,4000,8000")
    parser.add_argument("--scale-docs", type=int, default=50)
    parser.add_argument("--scale-c", type=float, default=10.0)
    parser.add_argument("--fixed-docs", type=int, default=50000)
    parser.add_argument("--query-sizes", default="10,30,100,300,1000")
    parser.add_argument("--default-cs", default="0.01,1,20")
    parser.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "cpsvm-bench" / "rank"))
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes and one round: a check that the script runs",
    )
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.cs, args.pair_sizes = 1, "10", "200x20"
        args.scale_queries, args.scale_docs, args.default_cs = "100,200,400", 20, "1"
        args.fixed_docs, args.query_sizes = 2000, "10,100"
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    print(
        f"bench_rank: load {load1()}, numba layer {os.environ['NUMBA_THREADING_LAYER']}, "
        f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}, out {out_dir}"
    )
    parts = {
        "pairs": part_pairs,
        "scale": part_scale,
        "tools": part_tools,
        "defaults": part_defaults,
    }
    for name in args.parts.split(","):
        parts[name](args, out_dir)


if __name__ == "__main__":
    main()
