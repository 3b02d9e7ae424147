"""ocas_learn on a Dask cluster (--scheduler local:N) against the same command without
Dask (both by OCAS, -m 1), on the text-like synthetic file of bench_io/bench_ocas.

Per configuration (interleaved, --repeats times, so that a busy machine slows all alike):
whole-process wall time (reading included), training time, iterations, and for the
cluster the per-iteration split into compute (slowest worker), communication (the rest
of each round's wall time) and map-reduce rounds, line-search rounds per search (the
round that gathers the step's breakpoints and moves w_b counted in both); the
models of local:1 and local:2 are compared byte for byte, the objective with the local
run's. Then a round-trip micro-measure (latency of an empty round, bandwidth of a
d-vector) and the cost model of an iteration on W workers:
    T(W) = compute / W + rounds x latency + folds x d x 8 bytes / bandwidth
(the cut comes back in two exact folds, three beyond 2^23 examples), and the data size
beyond which W workers beat one machine.

With --baseline REF, each cluster configuration runs also with the code of git revision
REF (extracted with git archive; its configurations named CONFIG@REF), interleaved with
this tree's: an A/B of the same command in one run.

Usage: .venv/bin/python benchmarks/bench_dask.py [--file F] [-c C] [--repeats R]
           [--baseline REF]
"""

from __future__ import annotations

import argparse
import atexit
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = Path(tempfile.gettempdir()) / "cpsvm-bench"
DEFAULT_FILE = Path("/work/bench/synthetic-396MB.svm")


def synthetic(path: Path, mb: float) -> Path:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from bench_io import make_synthetic

        make_synthetic(path, int(mb * (1 << 20)))
    return path


def extract(ref: str) -> Path:
    """The tree of git revision ``ref``, in a temporary directory."""
    out = Path(tempfile.mkdtemp(prefix="cpsvm-baseline-"))
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    atexit.register(shutil.rmtree, out, True)  # removed when the script ends
    return out


def run(config, data, C, out, codes=None):
    """One run of ``config`` (local, local:N, or local:N@REF: the code of REF, a root
    in ``codes``)."""
    name = re.sub(r"[^A-Za-z0-9]", "", config)
    model = out / f"{name}.model"
    trace = out / f"{name}.tsv"
    scheduler, _, ref = config.partition("@")
    code = codes[ref] if ref else ROOT
    # -m 1 (OCAS) everywhere: what a cluster runs, where one machine would pick dual
    # coordinate descent for such C.
    cmd = [sys.executable, "-m", "cpsvm.cli.ocas", "-m", "1", "-c", str(C), "--trace", str(trace)]
    cmd += [str(data), str(model)]
    if scheduler != "local":
        cmd[3:3] = ["--scheduler", scheduler]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(code))
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if r.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed: {r.stderr}")
    row = dict(
        config=config,
        wall=wall,
        train=float(re.search(r"total\s*:\s*([0-9.]+)", r.stdout).group(1)),
        iterations=int(re.search(r"Number of iterations: (\d+)", r.stdout).group(1)),
        primal=float(re.search(r"Q_P: ([0-9.e+-]+)", r.stdout).group(1)),
        d=int(re.search(r"dimensionality : (\d+)", r.stdout).group(1)),
        n=int(re.search(r"# of examples  : (\d+)", r.stdout).group(1)),
        model=model.read_bytes(),
    )
    with open(trace) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    if scheduler != "local":
        row["rounds"] = sum(int(x["rounds"]) for x in rows)
        row["compute"] = sum(float(x["compute_seconds"]) for x in rows)
        row["communication"] = sum(float(x["communication_seconds"]) for x in rows)
        m = re.search(r"line search ([0-9.]+) per search", r.stdout)
        row["ls_rounds"] = float(m.group(1)) if m else 0.0
    return row


def micro(width, repeats=30):
    """Latency of a round of 2 empty tasks, and the bandwidth of sending ``width``
    doubles to each."""
    import numpy as np
    from distributed import Client, LocalCluster

    def nothing(x, *a):
        return 1

    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=50,
        ) as lc,
        Client(lc) as client,
    ):
        anchors = [client.submit(np.zeros, 1, pure=False) for _ in range(2)]
        client.gather(anchors)

        def timed(*extra):
            t0 = time.perf_counter()
            for _ in range(repeats):
                client.gather([client.submit(nothing, a, *extra, pure=False) for a in anchors])
            return (time.perf_counter() - t0) / repeats

        timed()
        empty = timed()
        payload = np.ones(width)
        loaded = timed(payload)
    extra = max(loaded - empty, 1e-6)
    return empty, 2 * payload.nbytes / extra


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", type=Path, default=None)
    ap.add_argument("-c", type=float, default=0.001)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--configs", default="local,local:1,local:2")
    ap.add_argument("--baseline", default=None, help="git revision to A/B against")
    a = ap.parse_args()
    data = a.file or (
        DEFAULT_FILE if DEFAULT_FILE.exists() else synthetic(WORK / "synthetic-396MB.svm", 396)
    )
    out = Path(tempfile.mkdtemp(prefix="bench-dask-"))
    atexit.register(shutil.rmtree, out, True)
    configs = a.configs.split(",")
    codes = {}
    if a.baseline:
        codes[a.baseline] = extract(a.baseline)
        configs += [f"{c}@{a.baseline}" for c in configs if c != "local"]
    print(
        f"ocas_learn -c {a.c} on {data} ({data.stat().st_size / 2**20:.0f} MB); "
        f"{os.cpu_count()} cores; configurations interleaved, {a.repeats} repeats"
    )
    # Untimed: each configuration once on a small file, so that numba's compilation
    # (in every new worker process after an edit) is not timed.
    for config in configs:
        run(config, ROOT / "data" / "samples" / "a9a3k.train", a.c, out, codes)
    results = {c: [] for c in configs}
    for rep in range(a.repeats):
        for config in configs:
            row = run(config, data, a.c, out, codes)
            results[config].append(row)
            print(
                f"  [{rep}] {config:14s} wall {row['wall']:7.2f} s, train {row['train']:7.2f} s,"
                f" {row['iterations']} iterations, Q_P {row['primal']:.6f}",
                flush=True,
            )
    print(
        "\nconfig          wall/local  train/local  s/iter  compute/iter  comm/iter  rounds/iter  "
        "ls rounds/search"
    )
    for config in configs:
        rows = results[config]
        ratio_w = [r["wall"] / l["wall"] for r, l in zip(rows, results["local"])]
        ratio_t = [r["train"] / l["train"] for r, l in zip(rows, results["local"])]
        it = sum(r["iterations"] for r in rows)
        per = sum(r["train"] for r in rows) / it
        if config == "local":
            print(f"{config:14s}  {1.0:10.2f}  {1.0:11.2f}  {per:6.3f}")
            continue
        comp = sum(r["compute"] for r in rows) / it
        comm = sum(r["communication"] for r in rows) / it
        rounds = sum(r["rounds"] for r in rows) / it
        ls = sum(r["ls_rounds"] for r in rows) / len(rows)
        print(
            f"{config:14s}  {min(ratio_w):5.2f}-{max(ratio_w):4.2f}  {min(ratio_t):6.2f}-"
            f"{max(ratio_t):4.2f}  {per:6.3f}  {comp:12.4f}  {comm:9.4f}  {rounds:11.2f}  "
            f"{ls:16.2f}"
        )
    for config in configs:
        scheduler, _, ref = config.partition("@")
        if not ref:
            continue
        # This tree against the baseline, each repeat's pair run back to back.
        wall = [r["wall"] / b["wall"] for r, b in zip(results[scheduler], results[config])]
        train = [r["train"] / b["train"] for r, b in zip(results[scheduler], results[config])]
        print(
            f"{scheduler} against {config}: wall {statistics.median(wall):.3f}x "
            f"(repeats {', '.join(f'{x:.3f}' for x in wall)}), training "
            f"{statistics.median(train):.3f}x (median of the repeats' ratios)"
        )
    cluster = [c for c in configs if c != "local"]
    models = {r["model"] for c in cluster for r in results[c]}
    print(
        f"\ncluster models byte-identical across {', '.join(cluster)} and repeats: "
        f"{len(models) == 1}"
    )
    local_primal = results["local"][0]["primal"]
    worst = max(abs(r["primal"] - local_primal) / local_primal for c in cluster for r in results[c])
    print(
        f"largest relative objective difference to the local run: {worst:.2e} "
        f"(stopping tolerance -r 0.01)"
    )

    # The cost model, with this run's constants.
    from cpsvm.cluster.numerics import fold_grid

    d = results["local"][0]["d"]
    folds = fold_grid(1.0, results["local"][0]["n"]).shape[1]
    latency, bandwidth = micro(folds * d)
    one = results["local:1"] if "local:1" in results else results[cluster[0]]
    it1 = sum(r["iterations"] for r in one)
    compute1 = sum(r["compute"] for r in one) / it1
    rounds = sum(r["rounds"] for r in one) / it1
    local_iter = sum(r["train"] for r in results["local"]) / sum(
        r["iterations"] for r in results["local"]
    )
    size_mb = data.stat().st_size / 2**20
    print(
        f"\ncost model: compute of one worker on all the data {compute1:.4f} s/iteration "
        f"({size_mb:.0f} MB of text), rounds {rounds:.2f}/iteration, latency of a round "
        f"{1e3 * latency:.1f} ms, bandwidth {bandwidth / 1e6:.0f} MB/s, d = {d}, "
        f"{folds} folds"
    )
    transfer = folds * d * 8 / bandwidth
    for W in (2, 10, 100, 1000):
        t = compute1 / W + rounds * latency + transfer
        print(
            f"  W = {W:4d}: {t:.4f} s/iteration (compute {compute1 / W:.4f}, rounds "
            f"{rounds * latency:.4f}, transfer {transfer:.4f})"
        )
    overhead = rounds * latency + transfer
    per_mb = local_iter / size_mb  # one machine, its threads
    for W in (10, 100, 1000):
        gain = per_mb - (compute1 / size_mb) / W
        beyond = overhead / gain if gain > 0 else float("inf")
        print(
            f"  W = {W:4d} beats one machine beyond {beyond:.0f} MB of text "
            f"({beyond / size_mb:.2f}x this file)"
        )


if __name__ == "__main__":
    main()
