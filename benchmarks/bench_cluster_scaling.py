"""The cluster's traffic and rounds as the number of workers grows, measured, and the
cost model of a 100-worker cluster they extrapolate to, before and after.

Data: --files shard files of --rows rows x --columns columns (--nnz non-zeros a row,
uniform columns: hashed-like), trained by OCAS (the command's solver, -c --C) for
--iterations iterations on a Dask scheduler and W one-thread worker processes, W in
--workers, each configuration in a process of its own with the code under test on its
path (and its scheduler's and workers'): this tree ("after"), and with --before REF the
tree of that git revision ("before", extracted with git archive), interleaved,
--repeats times. Per configuration, from the per-socket byte counters of `ss -tinpe`
(sampled every SAMPLE seconds; /proc/PID/io misses socket traffic): the bytes through
the client's sockets, through the scheduler's, and between the workers (received by a
worker from another), per round and in d-vectors (8·d bytes); the round's wall time,
the slowest task's (compute) and the rest (communication); and the model's bytes (the
same for every W and code).

Also, on every cluster, the latency of an empty round (tasks that do nothing with a
vector just over the size that travels inside the tasks, so that it goes as w goes) on
1, 2, 4, ... of its shards, and, in this process, the CPU seconds a non-zero costs a
core in a round (all the shards in one, the tasks run here: CPU time, which the load of
a shared machine does not inflate as it does a task's wall time).

The cost model, from these constants: a 100-worker cluster, d = 10^6, 10^9 examples of
30 non-zeros, 10 Gb/s links (--d, --examples, --nnz-per-example, --link-gbps), in two
layouts: 100 one-thread workers (one shard and one task a round each, as --scheduler
uses a worker), and 100 machines of 16 one-thread workers (1,600 shards: the 1,600
cores of issue 40; the first 4 levels of each tree inside a machine, as hops without
link time). Per round: compute = the CPU seconds a non-zero costs, times the non-zeros
a core holds; communication = the client's link, the scheduler's (the vectors pass
through it on their way between client and workers) and, after, the trees' critical
path (a partial or a w per level between machines: the between-worker bytes of a round
per edge of the trees), each at the link's rate, plus the latency (the empty round on
one shard, plus, per tree level after, or per shard more before, its increase from one
shard to two on the smallest cluster). The links' bytes a round are fitted a + b·W over
the measured W and taken at the layout's shard count; a and the trees' bytes scaled to d
and to the folds at 10^9 examples (w scaled as if it were folds: more), b as well when
it is vectors (a d-vector a worker or more: the star's partials, before), else kept
(the task messages of a round, after).

Usage: .venv/bin/python benchmarks/bench_cluster_scaling.py [--before main] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dask import extract  # noqa: E402  (the tree of a git revision)

SAMPLE = 0.2  # seconds between two readings of ss


def make_data(directory: Path, files, rows, columns, nnz, seed=3) -> str:
    """The shard files (written once), their glob."""
    import numpy as np
    import scipy.sparse as sp

    from cpsvm.io.svmlight import write_svmlight

    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(columns)
    for k in range(files):
        path = directory / f"part-{k:02d}.svm"
        if path.exists():
            continue
        indices = np.sort(
            np.stack([rng.choice(columns, nnz, replace=False) for _ in range(rows)]), axis=1
        )
        X = sp.csr_matrix(
            (rng.standard_normal(rows * nnz), indices.ravel(), np.arange(0, rows * nnz + 1, nnz)),
            shape=(rows, columns),
        )
        y = np.where(X @ w + 0.5 * rng.standard_normal(rows) > 0, 1.0, -1.0)
        write_svmlight(str(path), X, y)
    return str(directory / "part-*.svm")


# -- the sockets' byte counters ---------------------------------------------------------------


def read_sockets():
    """{inode: (pid, local address, peer address, bytes sent, bytes received)} of every
    TCP socket ss shows with its process."""
    text = subprocess.run(["ss", "-tinpeH"], capture_output=True, text=True).stdout
    found = {}
    lines = text.splitlines()
    for head, info in zip(lines[::2], lines[1::2]):
        pid = re.search(r"pid=(\d+)", head)
        ino = re.search(r"ino:(\d+)", head)
        if not pid or not ino:
            continue
        fields = head.split()
        sent = re.search(r"bytes_sent:(\d+)", info)
        received = re.search(r"bytes_received:(\d+)", info)
        found[int(ino.group(1))] = (
            int(pid.group(1)),
            fields[3],
            fields[4],
            int(sent.group(1)) if sent else 0,
            int(received.group(1)) if received else 0,
        )
    return found


class SocketMeter:
    """The bytes each socket of ``pids`` sent and received between start() and stop(),
    read every SAMPLE seconds (a socket closed between two readings loses what it
    carried since the last)."""

    def __init__(self, pids):
        self.pids = set(pids)
        self.initial, self.last = {}, {}
        self._stop = threading.Event()

    def _read(self):
        found = {i: s for i, s in read_sockets().items() if s[0] in self.pids}
        self.last.update(found)
        return found

    def start(self):
        self.initial = self._read()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self._stop.wait(SAMPLE):
            self._read()

    def stop(self):
        self._stop.set()
        self.thread.join()
        self._read()
        out = {}
        for ino, (pid, local, peer, sent, received) in self.last.items():
            before = self.initial.get(ino)
            if before is not None:  # (a socket new since start() counted from 0)
                sent, received = sent - before[3], received - before[4]
            out[ino] = (pid, local, peer, sent, received)
        return out


# -- one configuration, in a process of its own --------------------------------------------


def start(*argv, env):
    return subprocess.Popen(
        [sys.executable, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )


def child(args):
    """Run one configuration (this process has the code under test on its path) and
    print its figures as JSON."""
    import hashlib

    from distributed import Client

    import cpsvm
    from cpsvm.cluster.command import open_data
    from cpsvm.cluster.solver import train_ocas
    from cpsvm.io.model_file import write_model
    from cpsvm.solvers.ocas import OcasParams

    code = str(Path(cpsvm.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=code, OPENBLAS_NUM_THREADS="1")
    work = Path(tempfile.mkdtemp(prefix="cpsvm-scaling-"))
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", "0", "--no-dashboard"],
        stdout=subprocess.DEVNULL,
        stderr=open(work / "scheduler.log", "w"),
        env=env,
    )
    deadline = time.monotonic() + 60
    address = None
    while address is None and time.monotonic() < deadline:
        time.sleep(0.2)
        found = re.search(r"tcp://[0-9.]+:\d+", (work / "scheduler.log").read_text())
        address = found.group(0) if found else None
    workers = [
        start(
            "-m",
            "distributed.cli.dask_worker",
            address,
            "--no-nanny",
            "--nthreads",
            "1",
            "--local-directory",
            str(work),
            env=env,
        )
        for _ in range(args.w)
    ]
    try:
        with Client(address) as c:
            c.wait_for_workers(args.w, timeout=120)
        data = open_data(address, args.pattern)
        meter = SocketMeter([os.getpid(), scheduler.pid] + [p.pid for p in workers])
        meter.start()
        t0 = time.perf_counter()
        model, info = train_ocas(data, OcasParams(C=args.C, max_iterations=args.iterations))
        wall = time.perf_counter() - t0
        sockets = meter.stop()
        empty = empty_rounds(data)
        data.session.close()
    finally:
        for p in workers + [scheduler]:
            p.kill()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)
    text = model_text(model, write_model)
    from cpsvm.cluster.numerics import fold_grid

    folds = fold_grid(1.0, data.n_examples).shape[1]
    worker_pids = {p.pid for p in workers}
    owner = {s[1]: s[0] for s in sockets.values()}  # local address: pid
    client = scheduler_bytes = between = 0
    for pid, _, peer, sent, received in sockets.values():
        if pid == os.getpid():
            client += sent + received
        elif pid == scheduler.pid:
            scheduler_bytes += sent + received
        elif pid in worker_pids and owner.get(peer) in worker_pids - {pid}:
            between += received  # each byte once, where it arrives
    print(
        json.dumps(
            dict(
                w=args.w,
                code=code,
                d=data.n_features,
                n=data.n_examples,
                nnz=data.nnz,
                folds=folds,
                iterations=info.result.iterations,
                rounds=info.rounds,
                compute=info.compute_seconds,
                communication=info.communication_seconds,
                wall=wall,
                client=client,
                scheduler=scheduler_bytes,
                between=between,
                empty=empty,
                model=hashlib.sha256(text).hexdigest(),
            )
        )
    )


def model_text(model, write_model) -> bytes:
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "m.model")
        write_model(path, model)
        with open(path, "rb") as f:
            return f.read()


def _nothing(shard, vector):
    """A task that does nothing (what a round costs beyond its work)."""
    return 0, 0.0


def empty_rounds(data, repeats=20):
    """{shards: the median seconds of a round of tasks that do nothing} on the first 1,
    2, 4, ... of the shards, each task given a vector just over the size that travels
    inside the tasks (so it goes as the code sends w): the rounds' latency, the trees'
    hops included (on 1 shard there is no tree)."""
    import numpy as np

    try:
        from cpsvm.cluster.rounds import SHIP_INLINE, Rounds
    except ImportError:  # the code before: the rounds were the session's
        from cpsvm.cluster.session import SHIP_INLINE, Rounds

    vector = np.zeros(SHIP_INLINE // 8 + 1)
    out = {}
    k = 1
    while k <= len(data.shards):
        rounds = Rounds(data.session, data.shards[:k])
        times = []
        for _ in range(repeats + 2):
            t0 = time.perf_counter()
            rounds(_nothing, rounds.ship(vector))
            times.append(time.perf_counter() - t0)
        out[k] = statistics.median(times[2:])
        k *= 2
    return out


def compute_per_nonzero(pattern, C, iterations):
    """CPU seconds a non-zero costs one core in a round: every shard file read in this
    process as one shard, trained as on a cluster (the workers' tasks run here, one
    after the other), the process's CPU time over the rounds and non-zeros (the
    client's own work, the QP, included: an upper bound). CPU time, unlike a task's
    wall time, does not grow with the load of a shared machine."""
    from cpsvm.cluster.session import ShardedData
    from cpsvm.cluster.shards import plan_shards, shard_loaders
    from cpsvm.cluster.solver import train_ocas
    from cpsvm.solvers.ocas import OcasParams

    data = ShardedData(_InProcess(), *shard_loaders(plan_shards(pattern, 1), 1))
    t0 = time.process_time()
    _, info = train_ocas(data, OcasParams(C=C, max_iterations=iterations))
    return (time.process_time() - t0) / info.rounds / data.nnz


class _Done:
    """A task run when submitted (its future)."""

    def __init__(self, value):
        self.value, self.key, self.status = value, id(self), "finished"

    def add_done_callback(self, fn):
        fn(self)


class _InProcess:
    """What the cluster code needs of a Session and its Client, run in this process."""

    longest_task = load_seconds = None

    def __init__(self):
        self.client = self

    def submit(self, fn, *args, **_):
        def value(a):
            if isinstance(a, list):
                return [value(x) for x in a]
            return a.value if isinstance(a, _Done) else a

        return _Done(fn(*[value(a) for a in args]))

    def gather(self, futures):
        return [f.value for f in futures]

    def result(self, future):
        return future.value

    def who_has(self, futures):
        return {f.key: ["here"] for f in futures}

    def workers(self):
        return {"here": {}}

    def keep(self, value):
        return _Done(value)

    def _lost_guard(self):
        import contextlib

        return contextlib.nullcontext()


def run_config(code_root: Path, w, a):
    env = dict(os.environ, PYTHONPATH=str(code_root), OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, __file__, "--child", "--w", str(w), "--pattern", a.pattern]
    cmd += ["--iterations", str(a.iterations), "-C", str(a.C)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(code_root))
    if r.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


# -- the cost model ---------------------------------------------------------------------------


def fit_line(xs, ys):
    """Least-squares a + b·x."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - b * mx, b


def model_round(rows, a, layout, trees, per_nnz):
    """Seconds a round at the large scale, from the measured ``rows`` of one code (one
    per W) and the CPU seconds a non-zero costs a core in a round: compute, and
    communication = the client's link, the trees' critical path (``trees``: the code
    after), and the empty round's latency."""
    from cpsvm.cluster.numerics import fold_grid

    machines, per_machine = layout
    shards = machines * per_machine
    by_w = {r["w"]: r for r in rows}
    ws = sorted(by_w)
    least = by_w[ws[0]]
    folds_big = fold_grid(1.0, a.examples).shape[1]
    scale = (a.d / least["d"]) * (folds_big / least["folds"])  # w scaled as a fold: more
    link = a.link_gbps * 1e9 / 8
    compute = per_nnz * a.examples * a.nnz_per_example / shards
    vector = 8.0 * least["d"]

    def link_bytes(key):
        """The bytes a round through one process's sockets at ``shards`` workers: a + b·W
        fitted; a scaled to d and the folds (vectors), b too when it is vectors (at
        least a d-vector a worker: a star's partials), else kept (task messages)."""
        base, slope = fit_line(ws, [by_w[w][key] / by_w[w]["rounds"] for w in ws])
        return base * scale + slope * (scale if slope >= vector else 1.0) * shards

    client_bytes = link_bytes("client")
    scheduler_bytes = link_bytes("scheduler")
    if trees:
        # A tree level carries one partial (or one w) over one link: the bytes a round
        # between the workers, per edge of the trees (W − 1 edges), on each of the
        # levels between machines; the levels inside a machine as hops only.
        edge = statistics.fmean(by_w[w]["between"] / by_w[w]["rounds"] / (w - 1) for w in ws)
        tree_bytes = edge * scale * math.ceil(math.log2(machines))
        # Latency: a round on one shard, and a hop more a level of the two trees (two
        # shards against one, on the smallest cluster: its workers alone on the cores).
        empty = least["empty"]
        latency = empty["1"] + (empty["2"] - empty["1"]) * math.ceil(math.log2(shards))
    else:
        tree_bytes = 0.0
        empty = least["empty"]  # the star: a shard more, a task and a result more
        latency = empty["1"] + (empty["2"] - empty["1"]) * (shards - 1)
    return dict(
        compute=compute,
        client=client_bytes / link,
        scheduler=scheduler_bytes / link,
        trees=tree_bytes / link,
        latency=latency,
        communication=(client_bytes + scheduler_bytes + tree_bytes) / link + latency,
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--w", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--pattern", help=argparse.SUPPRESS)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--rows", type=int, default=7500)
    ap.add_argument("--columns", type=int, default=1 << 18)
    ap.add_argument("--nnz", type=int, default=30, help="non-zeros a row of the data")
    ap.add_argument("--workers", default="2,4,8")
    ap.add_argument("--iterations", type=int, default=12)
    ap.add_argument("-C", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--before", default=None, help="git revision of the code before")
    ap.add_argument("--d", type=float, default=1e6)
    ap.add_argument("--examples", type=float, default=1e9)
    ap.add_argument("--nnz-per-example", type=float, default=30)
    ap.add_argument("--link-gbps", type=float, default=10.0)
    a = ap.parse_args()
    if a.child:
        return child(a)
    load = os.getloadavg()
    a.pattern = make_data(
        Path(tempfile.gettempdir()) / f"cpsvm-scaling-{a.files}x{a.rows}x{a.columns}x{a.nnz}",
        a.files,
        a.rows,
        a.columns,
        a.nnz,
    )
    codes = {"after": ROOT}
    if a.before:
        codes = {"before": extract(a.before), "after": ROOT}
    ws = [int(w) for w in a.workers.split(",")]
    print(
        f"{a.files} shard files of {a.rows} rows x {a.columns} columns ({a.nnz} non-zeros a "
        f"row), OCAS -c {a.C:g}, {a.iterations} iterations; W one-thread workers in "
        f"{ws}; {os.cpu_count()} cores, load average {load[0]:.2f} at the start"
    )
    # Untimed: each code once on W=2 (numba compiles in a fresh tree or after an edit).
    for code in codes.values():
        run_config(code, 2, a)
    rows = {name: [] for name in codes}
    for rep in range(a.repeats):
        for w in ws:
            for name, code in codes.items():
                r = run_config(code, w, a)
                rows[name].append(r)
                print(
                    f"  [{rep}] {name:6s} W={w}: {r['rounds']} rounds, client "
                    f"{r['client'] / 1e6:8.1f} MB, scheduler {r['scheduler'] / 1e6:8.1f} MB, "
                    f"between workers {r['between'] / 1e6:8.1f} MB, wall {r['wall']:.2f} s",
                    flush=True,
                )
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    med = {}
    for name in codes:
        med[name] = []
        for w in ws:
            runs = [r for r in rows[name] if r["w"] == w]
            m = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k in _NUMBERS}
            m.update(w=w, d=runs[0]["d"], folds=runs[0]["folds"], nnz=runs[0]["nnz"])
            m["empty"] = {
                k: statistics.median(r["empty"][k] for r in runs) for k in runs[0]["empty"]
            }
            med[name].append(m)
    d = med["after"][0]["d"]
    vec = 8.0 * d
    print(
        f"\nper round (medians of {a.repeats}; d = {d}, {med['after'][0]['folds']} folds; "
        "a d-vector is 8·d bytes)"
    )
    print(
        "code     W  rounds  client MB  (d-vectors)  scheduler MB  between MB  "
        "round ms  compute ms  communication ms  empty round ms (1, 2, 4.. shards)"
    )
    for name in codes:
        for m in med[name]:
            rounds = m["rounds"]
            print(
                f"{name:6s} {m['w']:3d} {rounds:7.0f} {m['client'] / rounds / 1e6:10.2f}  "
                f"({m['client'] / rounds / vec:9.2f})  {m['scheduler'] / rounds / 1e6:12.2f}  "
                f"{m['between'] / rounds / 1e6:10.2f}  {1e3 * m['wall'] / rounds:8.1f}  "
                f"{1e3 * m['compute'] / rounds:10.1f}  {1e3 * m['communication'] / rounds:16.1f}"
                f"  {', '.join(f'{1e3 * v:.1f}' for v in m['empty'].values())}"
            )
    for name in codes:
        first, last = med[name][0], med[name][-1]
        ratio = (last["client"] / last["rounds"]) / (first["client"] / first["rounds"])
        print(
            f"{name}: bytes through the client a round, W={last['w']} against W={first['w']}: "
            f"{ratio:.2f}x"
        )
    hashes = {r["model"] for name in codes for r in rows[name]}
    print(f"model bytes the same for every W and code: {len(hashes) == 1}")

    print(
        f"\ncost model: d = {a.d:g}, {a.examples:g} examples x {a.nnz_per_example:g} "
        f"non-zeros, {a.link_gbps:g} Gb/s links; seconds a round"
    )
    per_nnz = compute_per_nonzero(a.pattern, a.C, a.iterations)
    print(
        f"compute: {1e9 * per_nnz:.2f} ns of CPU a non-zero a round (all the shards in this "
        f"process, its CPU time; the tasks' wall time on the clusters above: "
        + ", ".join(
            f"W={m['w']} {1e9 * m['compute'] / m['rounds'] / (m['nnz'] / m['w']):.2f} ns"
            for m in med["after"]
        )
        + ")"
    )
    print(
        "layout                      code    compute  communication  "
        "(client, scheduler, trees, latency)"
    )
    for label, layout in (
        ("100 one-thread workers", (100, 1)),
        ("100 machines x 16 workers", (100, 16)),
    ):
        for name in codes:
            r = model_round(med[name], a, layout, name == "after", per_nnz)
            print(
                f"{label:26s}  {name:6s} {r['compute']:8.3f}  {r['communication']:13.3f}  "
                f"({r['client']:.3f}, {r['scheduler']:.3f}, {r['trees']:.3f}, "
                f"{r['latency']:.3f})"
                + ("  communication-bound" if r["communication"] > r["compute"] else "")
            )


_NUMBERS = ("iterations", "rounds", "compute", "communication", "wall", "client", "scheduler",
            "between")  # fmt: skip


if __name__ == "__main__":
    main()
