"""Shards in an S3-compatible store against the same files by path: a moto S3 server on
127.0.0.1 (tests/cluster/moto_site.py: its access checked, an IAM user's key), --file
(a9a) cut into --shards objects at line boundaries, and the same files on local disk.

1. Reading, in this process: every shard read and parsed as a worker reads it
   (cpsvm.cluster.shards.read_shard: s3fs's range requests of 4 MiB blocks, or the
   local file), S3 and path interleaved, --repeats times; seconds and MB/s.
2. Training, whole processes: ``ocas_learn --scheduler local:2 -c 1`` on
   's3://bucket/a9a-*' and on the local glob, interleaved, --repeats times; wall
   seconds, and whether the model files are the same bytes (the goal: they are).

The shards go under a temporary directory of /work/tools/data when it exists (outside
the repository), else $TMPDIR; it is removed at the end, and the server stopped.

Usage: .venv/bin/python benchmarks/bench_s3.py [--file F] [--shards 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILE = ROOT.parent / "shared" / "data" / "a9a"
TOOLS_DATA = ROOT.parent / "tools" / "data"
BUCKET = "cpsvm"

sys.path.insert(0, str(ROOT / "tests" / "cluster"))
from moto_site import moto_s3_server, s3_missing  # noqa: E402


def split(text: bytes, parts: int) -> list[bytes]:
    lines = text.splitlines(keepends=True)
    cuts = [i * len(lines) // parts for i in range(parts + 1)]
    return [b"".join(lines[a:b]) for a, b in zip(cuts, cuts[1:])]


def read_all(source: str) -> tuple[float, int]:
    """(seconds, examples) to plan and read every shard of ``source`` as a worker does."""
    from cpsvm.cluster.shards import plan_shards, read_shard

    started = time.perf_counter()
    n = sum(read_shard(spec).X.shape[0] for spec in plan_shards(source, 1))
    return time.perf_counter() - started, n


def train(source: str, model: Path, env: dict) -> float:
    """Wall seconds of ``ocas_learn --scheduler local:2 -c 1 source model``."""
    started = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "cpsvm.cli.ocas", "--scheduler", "local:2", "-c", "1"]
        + [source, str(model)],
        capture_output=True,
        text=True,
        env=dict(env, PYTHONPATH=str(ROOT)),
    )
    if r.returncode != 0:
        sys.exit(f"ocas_learn on {source} failed: {r.stderr.strip()}")
    return time.perf_counter() - started


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", type=Path, default=DEFAULT_FILE)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    missing = s3_missing()
    if missing:
        print(f"skipped: {missing}")
        return

    parent = TOOLS_DATA if TOOLS_DATA.is_dir() else None
    work = Path(tempfile.mkdtemp(prefix="cpsvm-bench-s3-", dir=parent))
    server = moto_s3_server(work / "moto.log")
    try:
        fs = server.file_system()
        fs.mkdir(BUCKET)
        text = args.file.read_bytes()
        for i, part in enumerate(split(text, args.shards)):
            (work / f"a9a-{i}.svm").write_bytes(part)
            fs.pipe(f"{BUCKET}/a9a-{i}.svm", part)
        local, url = str(work / "a9a-*.svm"), f"s3://{BUCKET}/a9a-*"
        mb = len(text) / 1e6
        print(f"{args.file}: {mb:.1f} MB in {args.shards} shards; moto S3 at {server.endpoint}")

        os.environ.update(server.environment())  # (this process reads as a worker does)
        reads = {"s3": [], "path": []}
        for _ in range(args.repeats):
            for name, source in (("s3", url), ("path", local)):
                seconds, n = read_all(source)
                reads[name].append(seconds)
        for name, times in reads.items():
            best = min(times)
            print(
                f"read and parse {name:>4}: {n} examples, best {best:.3f} s "
                f"({mb / best:.1f} MB/s), median {statistics.median(times):.3f} s"
            )
        ratio = min(reads["s3"]) / min(reads["path"])
        print(f"read and parse, S3 / path: {ratio:.2f}x")

        env = server.environment()
        walls = {"s3": [], "path": []}
        models = {}
        for r in range(args.repeats):
            for name, source in (("s3", url), ("path", local)):
                model = work / f"{name}-{r}.model"
                walls[name].append(train(source, model, env))
                models.setdefault(name, set()).add(model.read_bytes())
        for name, times in walls.items():
            print(
                f"ocas_learn --scheduler local:2 -c 1 {name:>4}: best {min(times):.2f} s, "
                f"median {statistics.median(times):.2f} s (whole process)"
            )
        print(f"whole process, S3 / path: {min(walls['s3']) / min(walls['path']):.2f}x")
        every = set().union(*models.values())
        print(f"model files byte-identical (S3 and path, every run): {len(every) == 1}")
    finally:
        server.proc.kill()
        server.proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
