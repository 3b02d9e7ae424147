"""Many small shard files on a local Dask cluster: one task per file and round against
the files read in one group per worker (what --scheduler does), in the same run.

Cuts the first --lines lines of --file into --files shard files, then trains OCAS on
local:--workers over them both ways (interleaved, --repeats times), the iterations
capped at --iterations so that the slow way stays affordable; prints the seconds per
iteration (wall, and communication: a round's wall time beyond its slowest task) and
checks that both ways write the same model bytes.

Usage: .venv/bin/python benchmarks/bench_dask_shards.py [--file F] [--files 300]
"""

from __future__ import annotations

import argparse
import functools
import tempfile
import time
from pathlib import Path

DEFAULT_FILE = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "a9a"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", type=Path, default=DEFAULT_FILE)
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--lines", type=int, default=30000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()

    from cpsvm.cluster.session import Session, ShardedData
    from cpsvm.cluster.shards import group_shards, plan_shards, read_group, read_shard
    from cpsvm.cluster.solver import train_ocas
    from cpsvm.io.model_file import write_model
    from cpsvm.solvers.ocas import OcasParams

    work = Path(tempfile.mkdtemp(prefix="cpsvm-bench-shards-"))
    lines = args.file.read_text().splitlines()[: args.lines]
    per = -(-len(lines) // args.files)
    for i in range(args.files):
        part = lines[i * per : (i + 1) * per]
        (work / f"part-{i:04d}.svm").write_text("\n".join(part) + "\n" if part else "")
    print(f"{args.files} files of {per} lines from {args.file}, local:{args.workers}")
    models = {}
    with Session(f"local:{args.workers}") as session:
        specs = session.run(plan_shards, str(work / "part-*.svm"), args.workers)
        ways = {
            "grouped": [
                functools.partial(read_group, g) for g in group_shards(specs, args.workers)
            ],
            "per file": [functools.partial(read_shard, s) for s in specs],
        }
        for _ in range(args.repeats):
            for name, loaders in ways.items():
                data = ShardedData(session, loaders)
                t0 = time.perf_counter()
                model, info = train_ocas(data, OcasParams(C=1.0, max_iterations=args.iterations))
                wall = time.perf_counter() - t0
                it = max(1, info.result.iterations)
                path = work / f"{name.replace(' ', '-')}.model"
                write_model(str(path), model)
                models[name] = path.read_bytes()
                print(
                    f"{name:>9}: {len(loaders):4d} tasks a round, {it} iterations, "
                    f"{wall / it:.3f} s an iteration ({info.communication_seconds / it:.3f} s "
                    "communication)",
                    flush=True,
                )
    print("same model bytes:", len(set(models.values())) == 1)


if __name__ == "__main__":
    main()
