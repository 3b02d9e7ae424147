"""SVMperf's multivariate losses on the cluster: gather the scores to the client, or
reduce them along the tree? (cpsvm/cluster/multivariate.py, issue 48 item 2.)

The data: a9a (LIBSVM's, /work/shared/data/a9a or $A9A) split into 8 files under
/work/tools/data/a9a-8 (made once), on ``--scheduler local:2``. One iteration's oracle
needs every score; two designs, each measured over ROUNDS rounds at the same w:

* gather (what cp_learn runs): the shards' scores joined along the tree to the client
  (n floats), the single machine's oracle there, the labelling's coefficients sent back
  (n floats, along the tree of copies), each worker's exact Σ c_i·x_i added along the
  tree (a d-vector of folds to the client);
* reduce: each shard sorts its scores (with their examples' positions), the sorted lists
  are merged along the tree, the oracle (F1's best contingency) runs on the root worker,
  and the client receives only its rule (the counts and the two boundary scores); the
  rule then goes to every shard (a few numbers) for the same exact cut round. (ROC area
  would also need every negative's score on every worker: n floats down the tree.)

Prints, per design, the bytes the client receives and sends per iteration and the
seconds per iteration (median), and the whole run of cp_learn --scheduler local:2 -l 1
and -l 10 against the single machine's (whole-process times).
"""

from __future__ import annotations

import os
import pickle
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
A9A = Path(os.environ.get("A9A", "/work/shared/data/a9a"))
SPLIT = Path("/work/tools/data/a9a-8")
ROUNDS = 15


def split_a9a():
    SPLIT.mkdir(parents=True, exist_ok=True)
    if len(list(SPLIT.glob("a9a-*"))) == 8:
        return
    lines = A9A.read_bytes().splitlines(keepends=True)
    step = -(-len(lines) // 8)
    for i in range(8):
        (SPLIT / f"a9a-{i}").write_bytes(b"".join(lines[i * step : (i + 1) * step]))


# -- the reduce design's tasks (run on the workers; cpsvm imported there) ---------------


def sorted_scores(shard, w, offsets):
    start = offsets[shard.index]
    t0 = time.perf_counter()
    s = shard.product(w)
    order = np.argsort(-s, kind="stable")
    out = (s[order], (start + order).astype(np.int64), shard.y[order])
    return out, time.perf_counter() - t0


def merge_sorted(a, b):
    s = np.concatenate([a[0], b[0]])
    pos = np.concatenate([a[1], b[1]])
    y = np.concatenate([a[2], b[2]])
    order = np.lexsort((pos, -s))  # descending score, ties by position
    return s[order], pos[order], y[order]


def root_oracle(both):
    from cpsvm.conventions import PSI_SCALE, perf_k
    from cpsvm.problems.binary.multivariate import best_contingency

    (s, pos, y), seconds = both
    n = len(s)
    scale = PSI_SCALE / n
    pos_desc, neg_desc = s[y > 0], s[y <= 0]
    k = perf_k(1, len(pos_desc), 0.0)
    a, b, _ = best_contingency(scale * pos_desc, scale * neg_desc, 1, k, True)
    # the rule: the boundary scores (and the ties' first positions) of the kept positives
    # and the flipped negatives
    rule = (
        int(a),
        int(b),
        float(pos_desc[a - 1]) if a > 0 else np.inf,
        float(neg_desc[b - 1]) if b > 0 else np.inf,
    )
    return rule, seconds


def measure(design, data, problem, rounds, w):
    from cpsvm.cluster.multivariate import shard_cut

    sent = received = 0
    times, oracle_times = [], []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        if design == "gather":
            scores = problem.scores(w)
            received += scores.nbytes
            labels = problem.most_violated(scores)
            coef = labels.delta
            sent += coef.nbytes
        else:
            root = rounds.stage(sorted_scores, w, problem.offsets, combine=merge_sorted)
            future = rounds.client.submit(root_oracle, root, pure=False)
            rule, _ = rounds.result(future)
            received += len(pickle.dumps(rule))
            sent += len(pickle.dumps(rule))
        oracle_times.append(time.perf_counter() - t0)
        if design == "reduce":  # (the same coefficients, formed here untimed)
            coef = problem.most_violated(problem.scores(w)).delta
            t0 -= time.perf_counter() - t0 - oracle_times[-1]
        if design == "gather":
            in_shards = np.empty(problem.n_rows)
            in_shards[problem.order] = coef
            folds = rounds(shard_cut, rounds.ship(in_shards), problem.offsets, problem.sig_g)
        else:
            folds = rounds(shard_cut, rounds.ship(coef), problem.offsets, problem.sig_g)
        received += folds.nbytes if hasattr(folds, "nbytes") else len(pickle.dumps(folds))
        times.append(time.perf_counter() - t0)
    return (
        sent / ROUNDS,
        received / ROUNDS,
        statistics.median(oracle_times),
        statistics.median(times),
    )


def round_costs():
    from cpsvm.cluster.command import open_data
    from cpsvm.cluster.multivariate import make_oracle
    from cpsvm.solvers.one_slack import StructParams

    data = open_data("local:2", str(SPLIT / "a9a-*"))
    try:
        problem, oracle = make_oracle(data, StructParams(C=1.0), 1, {"bias": 1.0}, True)
        rng = np.random.default_rng(0)
        w = 0.1 * rng.standard_normal(problem.size_psi)
        rounds = problem.rounds
        print(f"a9a: {problem.n_rows} examples, {problem.size_psi} weights, 8 files, local:2")
        for design in ("gather", "reduce"):
            sent, received, oracle, seconds = measure(design, data, problem, rounds, w)
            print(
                f"  {design:7s} client sends {sent / 1024:8.1f} KB, receives "
                f"{received / 1024:8.1f} KB per iteration; oracle stage "
                f"{oracle * 1000:6.1f} ms, iteration {seconds * 1000:6.1f} ms (medians of "
                f"{ROUNDS}; reduce's cut round ships the coefficients here, its rule would be "
                "a few bytes)"
            )
    finally:
        data.session.close()


def whole_runs():
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")
    for loss in ("1", "10"):
        times = {}
        for name, extra, source in (
            ("one machine", [], str(A9A)),
            ("local:2, 8 files", ["--scheduler", "local:2"], str(SPLIT / "a9a-*")),
        ):
            t0 = time.perf_counter()
            r = subprocess.run(
                [sys.executable, "-m", "cpsvm.cli.learn", *extra, "-c", "1", "-l", loss]
                + [source, "/tmp/bench_perf.model"],
                capture_output=True,
                text=True,
                env=env,
            )
            times[name] = time.perf_counter() - t0
            pval = next((x for x in r.stdout.splitlines() if "pval=" in x), r.stderr.strip())
            print(f"  -l {loss:2s} {name:17s} {times[name]:6.1f} s  {pval.strip()}")
        ratio = times["local:2, 8 files"] / times["one machine"]
        print(f"  -l {loss:2s} cluster / one machine: {ratio:.2f}x")


if __name__ == "__main__":
    if not A9A.exists():
        sys.exit(f"skipped: {A9A} not found (set A9A)")
    split_a9a()
    round_costs()
    whole_runs()
