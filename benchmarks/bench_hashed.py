"""Hashed feature indices against the same data with compact indices (issue 30, item 3).

Generates N examples x K non-zeros each, feature indices uniform in [1, 2^40) (as hashed
features give), labels from a random linear rule on the features, and the same file with
the indices renumbered to 1..d (d distinct features, same order: the renumbering is an
order-keeping permutation of the columns). Then, alternated --repeats times, whole
processes measured by /usr/bin/time -v (peak RSS, wall seconds):

- ``ocas_learn -c C`` and ``cp_learn -c C`` on both files: the ratios hashed/compact of
  peak RSS (the goal: at most 1.5) and of wall time, and the objectives each prints
  (equal: the same problem, columns renamed);
- ``cp_classify`` of each file with its own model: the predictions must be the same.

With ``--scheduler local:2`` (or an address) the learners train on a Dask cluster
(``cp_learn`` then runs -w 9); the peak RSS is then the sum, over the command and every
process it starts (the local cluster's workers), of each one's peak (VmHWM, sampled every
50 ms), and the CPU seconds those of all of them.

Usage: .venv/bin/python benchmarks/bench_hashed.py [--n 1000000] [--nnz 20] [--C 1]
       [--dir /work/bench/hashed] [--repeats 1] [--learners ocas,cp] [--scheduler local:2]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / ".venv" / "bin"
ROWS_PER_CHUNK = 100_000
OBJECTIVE = {  # the line of each learner's output that states its objective
    "ocas": re.compile(r"Q_P: (\S+)"),
    "cp": re.compile(r"Primal objective value: pval=(\S+)"),
}


def generate(n, nnz, seed, hashed_path, compact_path):
    """Write the hashed file and its compact twin; returns (distinct features, seconds)."""
    from cpsvm.io.float_text import format_rows

    rng = np.random.default_rng(seed)
    indices = rng.integers(1, 2**40, size=(n, nnz), dtype=np.int64)
    indices.sort(axis=1)
    while True:  # a repeated index within a row: draw that row again
        bad = np.flatnonzero((np.diff(indices, axis=1) == 0).any(axis=1))
        if not len(bad):
            break
        again = rng.integers(1, 2**40, size=(len(bad), nnz), dtype=np.int64)
        again.sort(axis=1)
        indices[bad] = again
    values = np.round(rng.random((n, nnz)), 3) + 0.001
    distinct, ranks = np.unique(indices, return_inverse=True)
    ranks = ranks.reshape(n, nnz)
    rule = rng.normal(size=len(distinct))
    y = np.where((rule[ranks] * values).sum(axis=1) > 0, 1, -1)
    indptr = np.arange(0, n * nnz + 1, nnz)
    for path, columns in ((hashed_path, indices - 1), (compact_path, ranks)):
        with open(path, "w") as out:
            for lo in range(0, n, ROWS_PER_CHUNK):
                hi = min(lo + ROWS_PER_CHUNK, n)
                rows = format_rows(
                    indptr[: hi - lo + 1], columns[lo:hi].ravel(), values[lo:hi].ravel()
                )
                out.write("".join(f"{t} {r}\n" for t, r in zip(y[lo:hi].tolist(), rows)))
    return len(distinct)


def measured(argv):
    """(peak RSS in MB, wall seconds, cpu seconds, stdout) of one whole process, by
    /usr/bin/time -v (cpu: user + system, the figure to compare on a loaded machine)."""
    done = subprocess.run(
        ["/usr/bin/time", "-v", *map(str, argv)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(map(str, argv))}\n{done.stderr[-2000:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", done.stderr)
    seconds = sum(float(p) * 60**k for k, p in enumerate(reversed(wall.group(1).split(":"))))
    cpu = sum(
        float(re.search(rf"{what} time \(seconds\): (\S+)", done.stderr).group(1))
        for what in ("User", "System")
    )
    return rss / 1024, seconds, cpu, done.stdout


def _peak_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def measured_tree(argv):
    """(the sum of the peak RSS in MB of the process and of every process under it, wall
    seconds, cpu seconds of all of them, stdout), sampling every 50 ms; also prints the
    command's own peak and the others'."""
    import resource
    import tempfile
    import time

    import psutil

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([str(a) for a in argv], stdout=out, stderr=err, text=True)
        root = psutil.Process(proc.pid)
        peaks = {}
        while proc.poll() is None:
            try:
                tree = [root] + root.children(recursive=True)
            except psutil.NoSuchProcess:
                tree = []
            for p in tree:
                peaks[p.pid] = max(peaks.get(p.pid, 0), _peak_kb(p.pid))
            time.sleep(0.05)
        wall = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(map(str, argv))}\n{stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    own = peaks.get(proc.pid, 0) / 1024
    total = sum(peaks.values()) / 1024
    print(f"    (command {own:.1f} MB + {len(peaks) - 1} processes under it {total - own:.1f} MB)")
    return total, wall, cpu, stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--nnz", type=int, default=20)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=Path("/work/bench/hashed"))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--learners", default="ocas,cp")
    parser.add_argument("--scheduler", default=None, help="train with --scheduler SPEC")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    stem = f"n{args.n}_k{args.nnz}_s{args.seed}"
    files = {kind: args.dir / f"{stem}.{kind}.svm" for kind in ("hashed", "compact")}
    if not all(path.exists() for path in files.values()):
        d = generate(args.n, args.nnz, args.seed, files["hashed"], files["compact"])
        print(f"generated {args.n} examples x {args.nnz} non-zeros, {d} distinct features")
    commands = {"ocas": ["ocas_learn", "-c", args.C], "cp": ["cp_learn", "-c", args.C]}
    learn, tag = measured, ""
    if args.scheduler:
        tag = ".cluster"
        for argv in commands.values():
            argv += ["--scheduler", args.scheduler]
        learn = measured_tree
    for learner in args.learners.split(","):
        figures = {kind: [] for kind in files}
        objective = {}
        for _ in range(args.repeats):
            for kind, path in files.items():
                model = args.dir / f"{stem}.{kind}.{learner}{tag}.model"
                program, *options = commands[learner]
                rss, wall, cpu, out = learn([BIN / program, *options, path, model])
                figures[kind].append((rss, wall, cpu))
                objective[kind] = OBJECTIVE[learner].search(out).group(1)
        print(" ".join(map(str, commands[learner])) + ":")
        for kind in files:
            rss = statistics.median(f[0] for f in figures[kind])
            wall = statistics.median(f[1] for f in figures[kind])
            cpu = statistics.median(f[2] for f in figures[kind])
            print(
                f"  {kind:8s} peak RSS {rss:8.1f} MB  wall {wall:7.2f} s  cpu {cpu:7.2f} s  "
                f"objective {objective[kind]}"
            )
        ratios = [
            (h[0] / c[0], h[1] / c[1], h[2] / c[2])
            for h, c in zip(figures["hashed"], figures["compact"])
        ]
        print(
            f"  hashed/compact: peak RSS {statistics.median(r[0] for r in ratios):.3f}x "
            f"(goal <= 1.5), wall {statistics.median(r[1] for r in ratios):.3f}x, cpu "
            f"{statistics.median(r[2] for r in ratios):.3f}x; objectives "
            f"{'equal' if objective['hashed'] == objective['compact'] else 'DIFFER'}"
        )
        predictions = {}
        for kind, path in files.items():
            model = args.dir / f"{stem}.{kind}.{learner}{tag}.model"
            out = args.dir / f"{stem}.{kind}.{learner}{tag}.pred"
            rss, wall, cpu, _ = measured([BIN / "cp_classify", "-v", "0", path, model, out])
            predictions[kind] = out.read_bytes()
            print(
                f"  cp_classify {kind:8s} peak RSS {rss:8.1f} MB  wall {wall:7.2f} s  "
                f"cpu {cpu:7.2f} s"
            )
        same = predictions["hashed"] == predictions["compact"]
        print(
            f"  predictions hashed file + hashed model vs compact + compact: "
            f"{'identical' if same else 'DIFFERENT'}"
        )


if __name__ == "__main__":
    main()
