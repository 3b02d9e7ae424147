"""Benchmark cpsvm's SVMlight reader against scikit-learn's ``load_svmlight_file``.

Measures:
1. first-call cost of ``read_svmlight`` (numba JIT compile or cache load) in fresh
   subprocesses: once with an empty NUMBA_CACHE_DIR (cold compile), once more with that
   same cache (must load, not recompile), once with numba's default cache location.
   Recompilation is detected from the dispatchers' ``stats.cache_misses``/``cache_hits``.
2. warm read throughput (MB/s, best and median of --repeats interleaved runs, after one
   untimed call each) on ../shared/data/a9a and on a synthetic file of >= --big-mb MB
   (cached under /tmp/cpsvm-bench), checking both readers return identical matrices.
3. peak RSS growth of one read, each reader in its own subprocess (VmHWM, Linux).
4. whole-process peak RSS and wall time (/usr/bin/time -v) of `ocas_learn -c C FILE` against
   libocas's `svmocas -c C FILE` on the synthetic file (or --rss-file), alternated
   --rss-repeats times; svmocas is looked up in $CPSVM_LIBOCAS_DIR, then on PATH, and the
   comparison is skipped, saying so, when it or /usr/bin/time is absent (--skip-rss too).
   The issue's figures are for --big-mb 396 (740k examples, 31M non-zeros) at C = 0.01.

Usage: .venv/bin/python benchmarks/bench_io.py [--big-mb 200] [--repeats 3] [--rss-C 0.01]
       [--rss-file FILE] [--rss-repeats 1] [--skip-rss]
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
A9A = REPO.parent / "shared" / "data" / "a9a"
WORK = Path(tempfile.gettempdir()) / "cpsvm-bench"
MB = 1e6
TINY_TEXT = "+1 1:0.5 3:1 # a\n-1 2:0.25 4:2e-3\n# comment line\n+1 qid:3 1:1 5:0.125\n"


def load(reader, path):
    """(X, y) from one reader; imports lazily so subprocesses load only what they use."""
    if reader == "cpsvm":
        from cpsvm.io.svmlight import read_svmlight

        ds = read_svmlight(path)
        return ds.X, ds.y
    from sklearn.datasets import load_svmlight_file

    return load_svmlight_file(str(path), zero_based=False)


def rss_mb(field):
    """VmRSS (current) or VmHWM (peak) of this process. Not ru_maxrss: on Linux a child
    inherits there the high-water mark of its forked parent, which holds big matrices."""
    with open("/proc/self/status") as f:
        kib = next(line.split()[1] for line in f if line.startswith(field + ":"))
    return int(kib) * 1024 / MB


def worker_first_call(tiny):
    t0 = time.perf_counter()
    from numba.core.registry import CPUDispatcher

    import cpsvm.io.svmlight as m
    import cpsvm.io.svmlight_parser as parser

    t1 = time.perf_counter()
    m.read_svmlight(tiny)
    t2 = time.perf_counter()
    m.read_svmlight(tiny)
    t3 = time.perf_counter()
    disp = {k: v for k, v in vars(parser).items() if isinstance(v, CPUDispatcher)}
    hits = {k: sum(d.stats.cache_hits.values()) for k, d in disp.items()}
    misses = {k: sum(d.stats.cache_misses.values()) for k, d in disp.items()}
    return dict(
        import_s=t1 - t0,
        first_s=t2 - t1,
        second_s=t3 - t2,
        hits=sum(hits.values()),
        misses=sum(misses.values()),
        compiled=sorted(k for k, n in misses.items() if n),
        cache_path=next(iter(disp.values())).stats.cache_path,
    )


def worker_rss(reader, path, tiny):
    load(reader, tiny)  # imports + JIT/cache load outside the measurement
    try:  # reset the peak-RSS mark (Linux >= 4.0), else the warm-up's peak hides the read's
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    base = rss_mb("VmRSS")
    t = time.perf_counter()
    load(reader, path)
    return dict(seconds=time.perf_counter() - t, base_mb=base, peak_mb=rss_mb("VmHWM"))


def run_worker(*args, env=None):
    out = subprocess.run(
        [sys.executable, __file__, "--worker", *map(str, args)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def make_synthetic(path, target_bytes, seed=0, n_vocab=100_000, rows_per_chunk=20_000):
    """Zipf-distributed sorted unique 1-based indices (~50 per row), 6-significant-digit
    values (about 30% small integers), +1/-1 labels, some comment lines and trailing
    comments. Written to a temp name and renamed, so a present file is complete."""
    if path.exists() and path.stat().st_size >= target_bytes:
        return False
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(1.0 / np.arange(1, n_vocab + 1) ** 1.05)
    cdf /= cdf[-1]
    feature_of_rank = rng.permutation(n_vocab) + 1
    index_str = np.array([str(i) for i in range(n_vocab + 1)])
    value_str = np.array(
        [str(i) for i in range(1, 17)] + [f"{v:.6g}" for v in rng.lognormal(-1.5, 1.2, 65536)]
    )
    tmp = path.with_suffix(".partial")
    written, chunk = 0, 0
    with open(tmp, "wb") as f:
        while written < target_bytes:
            counts = np.maximum(1, rng.poisson(52, rows_per_chunk))
            rows = np.repeat(np.arange(rows_per_chunk, dtype=np.int64), counts)
            ranks = np.minimum(np.searchsorted(cdf, rng.random(len(rows))), n_vocab - 1)
            key = np.unique(rows * (n_vocab + 1) + feature_of_rank[ranks])  # sort + dedupe
            rows, feats = key // (n_vocab + 1), key % (n_vocab + 1)
            n = len(feats)
            vidx = np.where(
                rng.random(n) < 0.3,
                np.minimum(rng.geometric(0.5, n), 16) - 1,
                rng.integers(16, len(value_str), n),
            )
            first = np.r_[True, rows[1:] != rows[:-1]]
            last = np.r_[rows[1:] != rows[:-1], True]
            labels = np.where(rng.random(rows_per_chunk) < 0.4, "+1 ", "-1 ")
            # Built by concatenation only: numpy widens the fixed-width str dtype as needed.
            head = np.where(first, labels[rows], "")
            sep = np.where(
                last,
                np.where(rng.random(n) < 0.002, f" # chunk {chunk} trailing comment\n", "\n"),
                " ",
            )
            tok = head + index_str[feats] + ":" + value_str[vidx] + sep
            text = f"# synthetic chunk {chunk}\n" + "".join(tok.tolist())
            written += f.write(text.encode())
            chunk += 1
    os.replace(tmp, path)
    return True


def same_matrix(a, b):
    (Xa, ya), (Xb, yb) = a, b
    assert Xa.shape == Xb.shape, (Xa.shape, Xb.shape)
    assert np.array_equal(Xa.indptr, Xb.indptr), "indptr differs"
    assert np.array_equal(Xa.indices, Xb.indices), "indices differ"
    assert np.array_equal(Xa.data.view(np.int64), Xb.data.view(np.int64)), "data differ"
    assert np.array_equal(ya.view(np.int64), yb.view(np.int64)), "y differs"


def bench(path, repeats, tiny):
    size = path.stat().st_size / MB
    first = {r: load(r, path) for r in ("cpsvm", "sklearn")}  # untimed warm-up
    same_matrix(first["cpsvm"], first["sklearn"])
    X = first["cpsvm"][0]
    del first
    times = {"cpsvm": [], "sklearn": []}
    for _ in range(repeats):
        for r in times:
            t = time.perf_counter()
            load(r, path)
            times[r].append(time.perf_counter() - t)
    row = dict(file=path.name, size=size, shape=X.shape, nnz=X.nnz)
    for r, ts in times.items():
        row[r] = (size / min(ts), size / statistics.median(ts))
        rss = run_worker("rss", r, path, tiny)
        row[r + "_rss"] = rss["peak_mb"] - rss["base_mb"]
    print(
        f"{path.name}: {size:.1f} MB, X {X.shape[0]}x{X.shape[1]}, nnz {X.nnz}; "
        f"identical matrices: yes; MB/s best/median: "
        + ", ".join(f"{r} {row[r][0]:.1f}/{row[r][1]:.1f}" for r in times),
        flush=True,
    )
    return row


def timed_peak(cmd):
    """(wall seconds, peak RSS in MB) of one command under /usr/bin/time -v: its own peak,
    not one inherited from this (large) process, as a direct child's ru_maxrss could be."""
    run = subprocess.run(
        ["/usr/bin/time", "-v", *map(str, cmd)],
        capture_output=True,
        text=True,
        env=dict(os.environ, OPENBLAS_NUM_THREADS="1"),
    )
    if run.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed:\n{run.stderr[-2000:]}")
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr)[1])
    clock = re.search(r"Elapsed \(wall clock\) time .*: (?:(\d+):)?(\d+):([\d.]+)", run.stderr)
    h, m, sec = clock.groups()
    return int(h or 0) * 3600 + int(m) * 60 + float(sec), peak * 1024 / MB


def peak_rss_vs_svmocas(path, C, repeats):
    """Lines comparing ocas_learn with svmocas on ``path``, whole process, alternated."""
    where = os.environ.get("CPSVM_LIBOCAS_DIR")
    svmocas = shutil.which("svmocas", path=where) if where else shutil.which("svmocas")
    if svmocas is None:
        return ["peak RSS vs svmocas: skipped, no svmocas (set CPSVM_LIBOCAS_DIR or PATH)"]
    if not os.path.exists("/usr/bin/time"):
        return ["peak RSS vs svmocas: skipped, no /usr/bin/time"]
    out = WORK / "rss.model"
    ocas_learn = [sys.executable, "-m", "cpsvm.cli.ocas", "-v", "0", "-c", C, path, out]
    runs = {"svmocas": [], "ocas_learn": []}
    for _ in range(repeats):
        runs["svmocas"].append(timed_peak([svmocas, "-v", "0", "-c", C, path, out]))
        runs["ocas_learn"].append(timed_peak(ocas_learn))
    best = {k: (min(t for t, _ in v), max(p for _, p in v)) for k, v in runs.items()}
    (t_ref, p_ref), (t, p) = best["svmocas"], best["ocas_learn"]
    return [
        f"whole process on {path.name}, C = {C} (best time, highest peak of {repeats}):",
        f"  svmocas     {t_ref:7.1f} s  peak RSS {p_ref:7.0f} MB",
        f"  ocas_learn  {t:7.1f} s  peak RSS {p:7.0f} MB   ratios: time {t / t_ref:.2f}x, "
        f"peak {p / p_ref:.2f}x (target <= 1.2x)",
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big-mb", type=float, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rss-C", default="0.01")
    ap.add_argument("--rss-file", type=Path)
    ap.add_argument("--rss-repeats", type=int, default=1)
    ap.add_argument("--skip-rss", action="store_true")
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    tiny = WORK / "tiny.svm"
    tiny.write_text(TINY_TEXT)

    fresh_cache = WORK / "numba-cache-fresh"
    shutil.rmtree(fresh_cache, ignore_errors=True)
    fresh_env = dict(os.environ, NUMBA_CACHE_DIR=str(fresh_cache))
    default_env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    runs = [
        ("cold: empty NUMBA_CACHE_DIR", fresh_env),
        ("2nd process, same cache", fresh_env),
        ("default cache location", default_env),
    ]
    first_lines = [
        f"{'first call (tiny file, fresh process)':38s} {'import_s':>8s} "
        f"{'1st_call_s':>10s} {'2nd_call_s':>10s} {'hits':>4s} {'misses':>6s}"
    ]
    results = []
    for label, env in runs:
        res = run_worker("first-call", tiny, env=env)
        results.append(res)
        first_lines.append(
            f"{label:38s} {res['import_s']:8.3f} {res['first_s']:10.3f} "
            f"{res['second_s']:10.4f} {res['hits']:4d} {res['misses']:6d}"
            + (
                f"  compiled: {', '.join(res['compiled'])}"
                if res["compiled"]
                else "  (loaded from cache)"
            )
        )
    first_lines.append(
        f"second process recompiled: {'YES' if results[1]['misses'] else 'no'}"
        f"; default cache dir: {results[2]['cache_path']}"
    )
    print("\n".join(first_lines), flush=True)

    big = WORK / f"synthetic-{args.big_mb:g}MB.svm"
    t = time.perf_counter()
    made = make_synthetic(big, args.big_mb * MB)
    print(
        f"synthetic file {big} ({big.stat().st_size / MB:.1f} MB): "
        + (f"generated in {time.perf_counter() - t:.1f} s" if made else "reused"),
        flush=True,
    )

    rows = [bench(path, args.repeats, tiny) for path in (A9A, big)]
    print()
    print(
        f"{'file':<22s} {'size_MB':>8s} {'cpsvm_MB/s':>10s} {'sklearn_MB/s':>12s} "
        f"{'ratio':>6s} {'cpsvm_dRSS_MB':>13s} {'sklearn_dRSS_MB':>15s}"
    )
    for r in rows:
        print(
            f"{r['file']:<22s} {r['size']:8.1f} {r['cpsvm'][0]:10.1f} {r['sklearn'][0]:12.1f} "
            f"{r['cpsvm'][0] / r['sklearn'][0]:6.2f} {r['cpsvm_rss']:13.1f} "
            f"{r['sklearn_rss']:15.1f}"
        )
    print(
        f"(best of {args.repeats} warm runs; ratio = cpsvm/sklearn throughput; dRSS = peak RSS "
        "growth of one read in its own process: peak minus RSS after warm-up on a tiny file)"
    )
    print("\n".join(first_lines))
    if args.skip_rss:
        print("peak RSS vs svmocas: skipped (--skip-rss)")
    else:
        print("\n".join(peak_rss_vs_svmocas(args.rss_file or big, args.rss_C, args.rss_repeats)))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        kind, rest = sys.argv[2], sys.argv[3:]
        out = worker_first_call(*rest) if kind == "first-call" else worker_rss(*rest)
        print(json.dumps(out))
    else:
        main()
