"""Training on a Dask cluster (--scheduler): exact sums, the distributed line search
against the single-machine one, the same model for any sharding, faults, bad input.

The algorithm's tests run the cluster code in-process (a client that runs each task at
once); the promises about Dask run on one LocalCluster of 2 worker processes shared by
the module (the worker-killing test last, as it leaves a restarted worker behind).
"""

import contextlib
import functools
import gzip
import math
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import ROOT, run_cli

from cpsvm.cluster import numerics, oracles, shards, tasks
from cpsvm.cluster.session import ClusterLost, Session, ShardedData
from cpsvm.cluster.shards import plan_shards, read_shard, shard_loaders
from cpsvm.cluster.solver import train_ocas, train_struct
from cpsvm.data import Dataset
from cpsvm.engine.ocas import binary_line_search, class_line_search
from cpsvm.errors import InputError
from cpsvm.io.svmlight import read_svmlight, write_svmlight
from cpsvm.solvers.ocas import OcasParams
from cpsvm.solvers.ocas import train as ocas_train
from cpsvm.solvers.one_slack import StructParams
from cpsvm.solvers.one_slack import train as struct_train

pytestmark = pytest.mark.usefixtures("own_tmpdir")  # tests/conftest.py

# -- an in-process stand-in for dask.distributed.Client ----------------------------------


class _Done:
    count = 0

    def __init__(self, value):
        self.value = value
        _Done.count += 1
        self.key = _Done.count

    def result(self):
        return self.value


class InProcessClient:
    """Runs each task when submitted (what the algorithm needs of a Client)."""

    def submit(self, fn, *args, **_):
        def value(a):
            if isinstance(a, list):
                return [value(x) for x in a]
            return a.value if isinstance(a, _Done) else a

        return _Done(fn(*[value(a) for a in args]))

    def gather(self, futures):
        return [f.value for f in futures]

    def scatter(self, x, **_):
        return _Done(x)

    def who_has(self, futures):
        return {f.key: ["here"] for f in futures}

    def scheduler_info(self):
        return {"workers": {"here": {}}}


class InProcessSession:
    """What the cluster code needs of a Session, in-process."""

    client = InProcessClient()
    n_workers = 1
    longest_task = load_seconds = None

    def gather(self, futures):
        return self.client.gather(futures)

    def result(self, future):
        return self.gather([future])[0]

    def run(self, fn, *args):
        return self.client.submit(fn, *args).result()

    def scatter(self, x):
        return self.client.scatter(x)

    def keep(self, x):
        return self.client.scatter(x)

    def workers(self):
        return self.client.scheduler_info()["workers"]

    def _lost_guard(self):
        return contextlib.nullcontext()

    def close(self):
        pass


def in_memory(X, y, lo, hi):
    return Dataset(
        X=sp.csr_matrix(X[lo:hi]), y=y[lo:hi], source="<memory>", line_numbers=np.arange(lo, hi) + 1
    )


def sharded(X, y, cuts, session=None):
    loaders = [functools.partial(in_memory, X, y, a, b) for a, b in zip(cuts, cuts[1:])]
    return ShardedData(session or InProcessSession(), loaders)


def file_shards(path, parts, session=None, groups=None):
    """The shards of ``path`` as the command loads them: ``parts`` byte ranges, or a
    glob's files (in ``groups`` groups if given, else one shard each)."""
    specs = plan_shards(str(path), parts)
    return ShardedData(session or InProcessSession(), *shard_loaders(specs, groups or len(specs)))


def model_bytes(model, tmp_path, name="m"):
    from cpsvm.io.model_file import write_model

    path = tmp_path / name
    write_model(str(path), model)
    return path.read_bytes()


def make_binary(n=600, d=30, seed=1):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.3, random_state=seed, format="csr")
    X.data = rng.standard_normal(X.nnz)
    w = rng.standard_normal(d)
    y = np.where(X @ w + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def make_multiclass(n=450, d=20, k=3, seed=2):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.4, random_state=seed, format="csr")
    X.data = rng.standard_normal(X.nnz)
    W = rng.standard_normal((k, d))
    y = np.argmax(X @ W.T + 0.7 * rng.standard_normal((n, k)), axis=1) + 1.0
    return X, y


# -- exact sums --------------------------------------------------------------------------


def test_folded_sums_do_not_depend_on_grouping():
    """Summed in folds, any split of the terms into groups gives the same bits, and
    the total is the exact sum to within the last bits (math.fsum is the reference);
    plain float addition does depend on the grouping for these terms."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(5000) * np.exp(rng.uniform(-20, 20, 5000))
    sig = numerics.fold_grid(np.abs(x).max(), len(x))

    def folds(part):
        acc = np.zeros((1, sig.shape[1]))
        for v in part:
            numerics.deposit(acc, sig, 0, v, 1.0)
        return acc

    totals = set()
    naive = set()
    for cuts in ([0, 5000], [0, 1234, 5000], [0, 10, 2000, 4999, 5000]):
        parts = [x[a:b] for a, b in zip(cuts, cuts[1:])]
        acc = sum(folds(p[::-1]) for p in parts[::-1])
        totals.add(numerics.exact_scalar(acc))
        naive.add(sum(float(np.sum(p)) for p in parts))
    assert len(totals) == 1
    assert len(naive) > 1
    # Each term is kept to half an ulp of the largest: no worse than a float sum.
    assert abs(totals.pop() - math.fsum(x)) <= len(x) * 2.0**-53 * np.abs(x).max()


# -- the distributed line search against the exact single-machine one ----------------------


@pytest.mark.parametrize("mode", ["whole", "grid", "narrow"])
def test_binary_line_search_matches_single_machine(monkeypatch, mode):
    """The map-reduce search finds the exact step of binary_line_search (engine/ocas.py):
    in the outputs round when the breakpoints are few, with one gather of the grid
    interval holding the step, and when it must narrow that interval over several
    rounds (a coarse grid, few candidates)."""
    if mode != "whole":
        monkeypatch.setattr(oracles, "MIN_GATHER", 64 if mode == "grid" else 8)
    if mode == "narrow":
        monkeypatch.setattr(oracles, "STEP_GRID", np.array([0.0, 0.5, 2.0]))
        monkeypatch.setattr(oracles, "MAX_CANDIDATES", 6)
        monkeypatch.setattr(tasks, "BUCKET_SAMPLES", 3)
        monkeypatch.setattr(tasks, "GRID_SAMPLES", 4)
    X, y = make_binary(n=3000, d=5, seed=3)
    data = sharded(X, y, [0, 700, 1900, 3000])
    data.prepare(X.shape[1])
    C = 2.0
    oracle = oracles.ClusterOcasOracle(
        data, X.shape[1], dict(loss=1.0, margin=1.0, scale=C, n_classes=0, bias=0.0)
    )
    rng = np.random.default_rng(4)
    for trial in range(6):
        w_b, w_t = rng.standard_normal(5) * 0.3, rng.standard_normal(5) * 2
        oracle._kb, oracle._wb_future = ("b", trial), w_b
        direction = w_t - w_b
        A0, B0 = float(direction @ direction), float(w_b @ direction)
        step = oracle.line_search(A0, B0, w_b, ("t", trial), w_t, w_t)
        reference = binary_line_search(A0, B0, y, X @ w_b, X @ w_t, np.full(len(y), C))
        assert step == pytest.approx(reference, rel=1e-12, abs=1e-15)
    rounds = oracle.line_search_rounds / oracle.line_searches
    assert {"whole": rounds == 1, "grid": 1 < rounds <= 2, "narrow": rounds >= 3}[mode]


def test_multiclass_line_search_matches_single_machine(monkeypatch):
    monkeypatch.setattr(oracles, "MIN_GATHER", 16)
    monkeypatch.setattr(oracles, "MAX_CANDIDATES", 8)
    monkeypatch.setattr(oracles, "STEP_GRID", np.array([0.0, 1.0]))
    X, y = make_multiclass(n=1500, d=6, k=4, seed=5)
    data = sharded(X, y, [0, 500, 1500])
    k, d = 4, X.shape[1]
    data.prepare(d, 0.0, k)
    oracle = oracles.ClusterOcasOracle(
        data, k * d, dict(loss=1.0, margin=1.0, scale=0.5, n_classes=k, bias=0.0)
    )
    rng = np.random.default_rng(7)
    for trial in range(4):
        w_b, w_t = rng.standard_normal(k * d) * 0.2, rng.standard_normal(k * d)
        oracle._kb, oracle._wb_future = ("b", trial), w_b
        direction = w_t - w_b
        A0, B0 = float(direction @ direction), float(w_b @ direction)
        step = oracle.line_search(A0, B0, w_b, ("t", trial), w_t, w_t)
        out_b = np.asarray(X @ w_b.reshape(d, k))
        out_t = np.asarray(X @ w_t.reshape(d, k))
        reference = class_line_search(
            A0, B0, y.astype(np.int64), out_b, out_t, np.full(len(y), 0.5), 1.0
        )
        assert step == pytest.approx(reference, rel=1e-12, abs=1e-15)
    assert oracle.line_search_rounds > 2 * oracle.line_searches  # it had to narrow


# -- the same model for any sharding (in-process) ----------------------------------------


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster")
    X, y = make_binary()
    write_svmlight(str(root / "binary.svm"), X, y)
    text = (root / "binary.svm").read_bytes().splitlines(keepends=True)
    for i, (a, b) in enumerate([(0, 150), (150, 420), (420, len(text))]):
        part = b"".join(text[a:b])
        if i == 1:
            (root / f"part-{i}.svm.gz").write_bytes(gzip.compress(part))
        else:
            (root / f"part-{i}.svm").write_bytes(part)
    Xm, ym = make_multiclass()
    write_svmlight(str(root / "multi.svm"), Xm, ym)
    # binary.svm with hashed feature indices (column j at 2^40 + j·2^33): renumbered
    hashed = sp.csr_matrix(
        (X.data, 2**40 + X.indices.astype(np.int64) * 2**33, X.indptr),
        shape=(X.shape[0], 2**40 + X.shape[1] * 2**33),
    )
    write_svmlight(str(root / "hashed.svm"), hashed, y)
    return root


@pytest.mark.parametrize(
    "kind,name",
    [
        ("ocas", "binary"),
        ("ocas", "multi"),
        ("3", "binary"),
        ("3", "multi"),
        ("9", "binary"),
        ("9", "multi"),
    ],
)
def test_same_model_for_any_sharding(sets, tmp_path, kind, name):
    """1, 2 and 3 byte ranges (and, binary, a glob of three files, one gzip, as three
    shards and grouped in two) give byte-identical models; the objective is the
    single-machine solver's to its stopping tolerance."""
    source = sets / f"{name}.svm"
    models, objectives = set(), []
    for parts in (1, 2, 3, "glob", "grouped") if name == "binary" else (1, 2, 3):
        if parts in ("glob", "grouped"):
            data = file_shards(sets / "part-*.svm*", 1, groups=2 if parts == "grouped" else None)
            assert data.n_files == 3 and len(data.loaded) == (2 if parts == "grouped" else 3)
        else:
            data = file_shards(source, parts)
        if kind == "ocas":
            model, info = train_ocas(data, OcasParams(C=1.0))
        else:
            model, info = train_struct(data, StructParams(C=10.0, algorithm=int(kind)))
        models.add(model_bytes(model, tmp_path))
        objectives.append(info.result.primal)
    assert len(models) == 1
    dataset = read_svmlight(str(source))
    if kind == "ocas":
        _, reference = ocas_train(dataset, OcasParams(C=1.0))
        tolerance = 0.01 * reference.result.primal
    else:
        _, reference = struct_train(dataset, StructParams(C=10.0, algorithm=int(kind)))
        tolerance = 10.0 * 0.1  # C·ε
    assert abs(objectives[0] - reference.result.primal) <= tolerance


@pytest.mark.parametrize("name", ["binary", "multi"])
def test_gather_chained_with_the_move(sets, tmp_path, monkeypatch, name):
    """With many breakpoints per worker, the gather of the interval holding the step goes
    with the move (two rounds per iteration): the model is the one of a search that had
    every breakpoint at once, for any sharding. When a worker loses its outputs (its
    shard read again elsewhere) just before that round, early or after moves formed
    from w_b itself (every REPLAY_MAX moves), the search is finished apart and the
    outputs replayed: the same model, byte for byte."""
    source = sets / f"{name}.svm"
    monkeypatch.setattr(oracles, "REPLAY_MAX", 3)
    model, info = train_ocas(file_shards(source, 1), OcasParams(C=1.0))
    reference = model_bytes(model, tmp_path)
    monkeypatch.setattr(oracles, "MIN_GATHER", 4)
    original = oracles.ocas_gather
    replays = []

    def replay(*args):
        replays.append(shards.Replay(*args))
        return replays[-1]

    monkeypatch.setattr(oracles, "Replay", replay)
    moves = set()
    for parts, lose in ((1, None), (2, None), (3, None), (2, 3), (2, 5), (3, 10)):
        calls = {0: 0, 1: 0, 2: 0}
        replays.clear()
        if lose:

            def forgetful(shard, *args):
                calls[shard.index] += 1
                if calls[shard.index] == lose and shard.index == 1:  # shard 1 forgets
                    shard.state.clear()
                return original(shard, *args)

            monkeypatch.setattr(oracles, "ocas_gather", forgetful)
        model, info = train_ocas(file_shards(source, parts), OcasParams(C=1.0))
        assert model_bytes(model, tmp_path) == reference
        if lose:
            assert info.result.iterations > lose + 3
            assert len(replays) == 1  # the outputs were replayed
            moves.add(len(replays[0].moves))
        else:
            assert info.rounds <= 2 * info.result.iterations
    assert 0 in moves and max(moves) > 0  # replays from an anchor alone and after moves


# -- a lost cluster (in-process) ---------------------------------------------------------


class LosingSession(InProcessSession):
    """Loses the cluster at its ``after``-th wait."""

    def __init__(self, after):
        self.waits, self.after = 0, after

    def gather(self, futures):
        self.waits += 1
        if self.waits >= self.after:
            raise ClusterLost("lost the Dask scheduler at tcp://10.0.0.1:8786")
        return super().gather(futures)


@pytest.mark.parametrize("algorithm", ["ocas", 3, 9])
def test_a_lost_cluster_carries_the_model_so_far(sets, tmp_path, algorithm):
    """Lost mid-run, the run's error carries the model reached so far (OCAS: its best
    point), which the command writes and names in its one line; lost while the shards
    load, there is none."""
    from cpsvm.cluster.command import lost_cluster
    from cpsvm.io.model_file import read_model

    def train(session):
        data = file_shards(sets / "binary.svm", 2, session)
        if algorithm == "ocas":
            return train_ocas(data, OcasParams(C=1.0))
        return train_struct(data, StructParams(C=10.0, algorithm=algorithm))

    with pytest.raises(ClusterLost) as lost:
        train(LosingSession(12))
    assert lost.value.model is not None and lost.value.iterations >= 1
    path = tmp_path / "so-far.model"
    error = lost_cluster(lost.value, str(path), best=algorithm != 3)
    so_far = "the best model so far" if algorithm != 3 else "the model so far"
    assert str(error) == (
        f"lost the Dask scheduler at tcp://10.0.0.1:8786 after iteration "
        f"{lost.value.iterations}; {so_far} was written to {path}"
    )
    assert read_model(str(path)).n_train == 600
    with pytest.raises(ClusterLost) as lost:
        train(LosingSession(2))
    assert lost.value.model is None
    assert str(lost.value).endswith("; no model was written")
    assert lost_cluster(lost.value, str(tmp_path / "none.model"), True) is lost.value
    assert not (tmp_path / "none.model").exists()


# -- on a real LocalCluster --------------------------------------------------------------


def local_cluster(n_workers):
    """A LocalCluster of single-threaded worker processes, nothing stolen between them
    (a shard stays where it was loaded)."""
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    with dask.config.set({"distributed.scheduler.work-stealing": False}):
        return distributed.LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=50,
        )


@pytest.fixture(scope="module")
def cluster():
    lc = local_cluster(2)
    client = pytest.importorskip("distributed").Client(lc)
    yield lc.scheduler_address, client
    client.close()
    lc.close()


def objective(stdout, key="Q_P"):
    return float(re.search(rf"{key}[:=]\s*([-0-9.e+]+)", stdout).group(1))


def test_cli_same_model_on_one_and_two_workers_and_shards(cluster, sets, tmp_path):
    """ocas_learn --scheduler: two workers (two byte ranges), one worker (one range) and
    the glob of three shard files write the same bytes; the objective is the local run's
    to the stopping tolerance; the trace has the seconds spent communicating."""
    address, _ = cluster
    runs = {
        "two": (address, sets / "binary.svm"),
        "one": ("local:1", sets / "binary.svm"),
        "glob": (address, sets / "part-*.svm*"),
    }
    out = {}
    for name, (scheduler, source) in runs.items():
        r = run_cli(
            "ocas",
            "--scheduler",
            scheduler,
            "-c",
            1,
            "--trace",
            tmp_path / "t.tsv",
            source,
            tmp_path / f"{name}.model",
        )
        assert r.returncode == 0, r.stderr
        out[name] = r.stdout
    models = {(tmp_path / f"{name}.model").read_bytes() for name in runs}
    assert len(models) == 1
    local = run_cli("ocas", "-c", 1, sets / "binary.svm", tmp_path / "local.model")
    assert abs(objective(out["two"]) - objective(local.stdout)) <= 0.01 * objective(local.stdout)
    header = (tmp_path / "t.tsv").read_text().splitlines()[0].split("\t")
    assert "communication_seconds" in header and "rounds" in header
    assert "Cluster: 2 shards (3 files)" in out["glob"]  # grouped, one per worker


def test_cli_cp_learn_multiclass_on_cluster(cluster, sets, tmp_path):
    address, _ = cluster
    # binary first: its statistics (the SVMlight scale line) read the run's loss
    r = run_cli("learn", "--scheduler", address, "-c", 10, sets / "binary.svm", tmp_path / "b")
    assert r.returncode == 0 and "SVMlight scale: C_light" in r.stdout, r.stderr
    for w in (3, 9):
        r = run_cli(
            "learn",
            "--scheduler",
            address,
            "-c",
            10,
            "-w",
            w,
            sets / "multi.svm",
            tmp_path / f"c{w}.model",
        )
        assert r.returncode == 0, r.stderr
        local = run_cli("learn", "-c", 10, "-w", w, sets / "multi.svm", tmp_path / f"l{w}.model")
        assert abs(objective(r.stdout, "pval") - objective(local.stdout, "pval")) <= 10 * 0.1
        assert (tmp_path / f"c{w}.model").read_text().splitlines()[0] == (
            tmp_path / f"l{w}.model"
        ).read_text().splitlines()[0]


def test_cli_errors_one_line_no_model(cluster, sets, tmp_path):
    address, _ = cluster
    model = tmp_path / "m.model"
    # A bad line in the second byte range: named with its line number in the file.
    text = (sets / "binary.svm").read_text().splitlines()
    text[500] = "+1 3:1 2:1"
    bad = tmp_path / "bad.svm"
    bad.write_text("\n".join(text) + "\n")
    r = run_cli("ocas", "--scheduler", address, bad, model)
    assert r.returncode == 1 and not model.exists()
    local = run_cli("ocas", bad, model)
    assert r.stderr.strip().splitlines() == local.stderr.strip().splitlines()
    assert "bad.svm:501:" in r.stderr
    # local:N hosts the workers: their logs of the failed task stay quiet, one line remains
    r = run_cli("ocas", "--scheduler", "local:1", bad, model)
    assert r.returncode == 1 and not model.exists()
    assert r.stderr.strip().splitlines() == local.stderr.strip().splitlines()
    # a missing shard, a glob matching nothing
    for source in (tmp_path / "missing.svm", tmp_path / "none-*.svm"):
        r = run_cli("ocas", "--scheduler", address, source, model)
        assert r.returncode == 1 and not model.exists()
        assert len(r.stderr.strip().splitlines()) == 1 and str(source) in r.stderr
        # the workers read it, not the command: the message says whose view failed
        assert re.search(r"the Dask worker at tcp://\S+ (cannot read it|\()", r.stderr)
    # an unreachable scheduler
    env = dict(os.environ, PYTHONPATH=str(ROOT), DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="1s")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "cpsvm.cli.learn",
            "-c",
            "1",
            "--scheduler",
            "tcp://127.0.0.1:9",
            str(sets / "binary.svm"),
            str(model),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 1 and not model.exists()
    assert (
        r.stderr.strip().splitlines() == [r.stderr.strip()]
        and "cannot reach the Dask scheduler" in r.stderr
    )


def test_without_dask(sets, tmp_path):
    """No dask: --scheduler says how to get it (usage error); import cpsvm loads none."""
    code = (
        "import sys; sys.modules['dask'] = sys.modules['distributed'] = None\n"
        "from cpsvm.cli.ocas import main\n"
        f"main(['--scheduler', 'local:2', {str(sets / 'binary.svm')!r}, "
        f"{str(tmp_path / 'm')!r}])"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 2
    assert "pip install cpsvm[dask]" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    code = (
        "import sys, cpsvm, cpsvm.cli.ocas, cpsvm.cli.learn\n"
        "import cpsvm.cluster.oracles, cpsvm.cluster.solver, cpsvm.cluster.command\n"
        "print([m for m in ('dask', 'distributed') if m in sys.modules])"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.stdout.strip() == "[]", r.stderr


def counting_reader(log, spec):
    with open(log, "a") as f:
        f.write(f"{spec.start}\n")
    return read_shard(spec)


@pytest.mark.parametrize("chained,name", [(False, "binary"), (True, "binary"), (False, "hashed")])
def test_worker_killed_mid_run(cluster, sets, tmp_path, monkeypatch, chained, name):
    """A worker process killed during training: its shard is read again on another
    worker (hashed indices: renumbered again to the run's columns), its outputs
    replayed, and training ends at the same model file as an undisturbed run (also
    when each iteration's gather of breakpoints is chained to the move)."""
    if chained:
        monkeypatch.setattr(oracles, "MIN_GATHER", 4)
    monkeypatch.setattr(oracles, "REPLAY_MAX", 4)
    address, client = cluster
    source = sets / f"{name}.svm"
    reference = None
    for kill in (False, True):
        log = tmp_path / f"loads-{kill}"
        with Session(address) as session:
            specs = plan_shards(str(source), 2)
            data = ShardedData(
                session, [functools.partial(counting_reader, str(log), s) for s in specs]
            )
            killed = []

            def callback(p):
                if kill and p.iteration == 6 and not killed:
                    holder = client.who_has(data.shards)[data.shards[0].key][0]
                    pid = client.run(os.getpid, workers=[holder])[holder]
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)

            model, info = train_ocas(data, OcasParams(C=10.0, tol_rel=0.001), callback=callback)
        loads = log.read_text().split()
        if name == "hashed":
            assert model.feature_ids[-1] == 2**40 + 29 * 2**33
        if not kill:
            reference = model_bytes(model, tmp_path)
            assert len(loads) == 2
            if chained:  # two round trips per iteration
                assert info.rounds <= 2 * info.result.iterations
        else:
            assert killed and len(loads) > 2  # the lost shard was read again
            assert info.result.iterations > 10
            assert model_bytes(model, tmp_path) == reference


@pytest.mark.filterwarnings("ignore:Port .* is already in use")  # another test's cluster
def test_a_worker_that_joined_later_takes_over(sets, tmp_path):
    """What lasts the whole run (the cut's grid, a hashed file's columns) is formed
    again for a worker that joined after the start, once every worker that held it
    is gone: the run ends at an undisturbed run's model."""
    distributed = pytest.importorskip("distributed")
    source = sets / "hashed.svm"
    params = OcasParams(C=10.0, tol_rel=0.001)
    reference, _ = train_ocas(file_shards(source, 2), params)
    lc = local_cluster(1)
    with lc, distributed.Client(lc) as client, Session(lc.scheduler_address) as session:
        (first,) = client.scheduler_info()["workers"]
        killed = []

        def callback(p):
            if p.iteration == 3:
                lc.scale(2)
                client.wait_for_workers(2, timeout=60)
            if p.iteration == 6:
                pid = client.run(os.getpid, workers=[first])[first]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

        model, info = train_ocas(file_shards(source, 2, session), params, callback=callback)
    assert killed and info.result.iterations > 10
    assert model_bytes(model, tmp_path) == model_bytes(reference, tmp_path, "reference")


@pytest.mark.parametrize("command", ["ocas", "learn"])
def test_margin_bounds_is_refused_with_a_scheduler(command, sets, tmp_path):
    """The workers compute every margin: asking for the bounds there is a usage error,
    given before any cluster starts."""
    model = tmp_path / "m.model"
    r = run_cli(
        command,
        "-c",
        "1",
        "--margin-bounds",
        "1",
        "--scheduler",
        "local:1",
        sets / "binary.svm",
        model,
    )
    assert r.returncode == 2 and not model.exists()
    assert len(r.stderr.strip().splitlines()) == 1 and "--margin-bounds" in r.stderr


@pytest.mark.parametrize(
    "spec", ["tcp://", "tcp://127.0.0.1", "tls://10.0.0.1:8786", "ucx://h:1", "h:99999", "local:0"]
)
def test_scheduler_addresses_are_checked_before_connecting(spec):
    from cpsvm.cluster.session import local_worker_limit, parse_scheduler
    from cpsvm.errors import OptionError

    with pytest.raises(OptionError, match="expected --scheduler"):
        parse_scheduler(spec)
    with pytest.raises(OptionError, match="at most"):
        parse_scheduler(f"local:{local_worker_limit() + 1}")
    assert parse_scheduler("10.0.0.1:8786") == ("address", "tcp://10.0.0.1:8786")


@pytest.mark.parametrize(
    "args, message",
    [
        (["-t", "2"], "linear models only"),
        (["--t", "1"], "linear models only"),
        (["-w", "4"], "-w 4 cannot run on a cluster"),
        (["-l", "1", "-o", "1"], "-w 9 needs margin rescaling"),
        (["--problem", "hmm", "-w", "9"], "-w 9 cannot run on a cluster for the hmm problem"),
    ],
)
def test_cluster_refusals_come_before_connecting(sets, tmp_path, args, message):
    """An address nothing listens on: the refusal (exit 2) comes first, not 'cannot
    reach'."""
    model = tmp_path / "m"
    r = run_cli(
        "learn", "-c", "1", *args, "--scheduler", "tcp://127.0.0.1:9", sets / "binary.svm", model
    )
    assert r.returncode == 2 and message in r.stderr and not model.exists(), r.stderr


def test_the_basis_flag_is_read_as_the_binary_problem_declares_it():
    """--t on a cluster is the binary problem's option, parsed by its declaration: --t 00
    is the exact kernel expansion (--t 0), --t 1 a random basis, refused."""
    from cpsvm.cluster.command import refuse_struct
    from cpsvm.errors import OptionError
    from cpsvm.params.one_slack import StructParams

    refuse_struct(StructParams(C=1.0, problem="binary"), {"--t": "00"})
    with pytest.raises(OptionError, match="linear models only"):
        refuse_struct(StructParams(C=1.0, problem="auto"), {"--t": "1"})


@pytest.mark.parametrize("command", ["ocas", "learn"])
def test_worker_timeout_needs_a_scheduler(command, sets, tmp_path):
    r = run_cli(command, "-c", "1", "--worker-timeout", "5", sets / "binary.svm", tmp_path / "m")
    assert r.returncode == 2 and not (tmp_path / "m").exists()
    assert len(r.stderr.strip().splitlines()) == 1
    assert "--worker-timeout needs --scheduler" in r.stderr
    r = run_cli(command, "-c", "1", "--worker-timeout", "0", sets / "binary.svm", tmp_path / "m")
    assert r.returncode == 2 and "--worker-timeout" in r.stderr


@pytest.mark.parametrize(
    "command, args, message",
    [
        ("ocas", ["--worker-timeout", "nan"], "--worker-timeout a finite number"),
        ("learn", ["--worker-timeout", "inf"], "--worker-timeout a finite number"),
        ("ocas", ["-m", "2"], "-m 2 (dual coordinate descent) cannot run on a cluster"),
    ],
)
def test_refused_before_anything_connects_or_loads(sets, tmp_path, command, args, message):
    """A timeout that is no number of seconds (it would wait forever), and ocas_learn's
    -m 2, are refused at once: an address nothing listens on is never tried."""
    model = tmp_path / "m"
    r = run_cli(
        command, "-c", "1", *args, "--scheduler", "tcp://127.0.0.1:9", sets / "binary.svm", model
    )
    assert r.returncode == 2 and not model.exists(), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and message in r.stderr, r.stderr


def test_a_local_cluster_leaves_the_callers_environment_as_it_was():
    """Dask's nannies put their workers' thread settings into the starting process's
    environment; the session restores the caller's."""
    from cpsvm.cluster.session import Session

    before = dict(os.environ)
    session = Session("local:1")
    try:
        assert session.n_workers == 1
        assert dict(os.environ) == before
    finally:
        session.close()


@pytest.mark.parametrize(
    "sample, problem",
    [("ewt60.hmm.train", "hmm"), ("toy.rank.train", "rank"), ("a9a3k.train", None)],
)
def test_a_file_cp_learn_trains_as_a_structure_is_told(sample, problem):
    """The shards say which structured problem cp_learn's auto takes their file for (the
    registry's detect on each shard): an SVM-hmm file, a ranking; a binary file none.
    The cluster trains that problem (cpsvm.cluster.struct_solver), as one machine."""
    from conftest import SAMPLES

    from cpsvm.cluster.struct_solver import choose_units

    for parts in (1, 2):
        data = file_shards(SAMPLES / sample, parts)
        found = {x["problem"][0] if x["problem"] else None for x in data.summaries}
        assert found == {problem}
        assert choose_units(data, "auto") == problem


def test_bracketed_trees_are_refused_as_the_cfg_format():
    """A file of bracketed trees (cfg's own format, the registry's sniff): one line saying
    so, not the SVMlight reader's complaint about its line, for any shard."""
    from conftest import SAMPLES

    for parts in (1, 2):
        with pytest.raises(InputError) as error:
            file_shards(SAMPLES / "toy.train.mrg", parts)
        assert str(error.value).startswith(
            f"{SAMPLES / 'toy.train.mrg'}: the cfg problem's own format (cfg for bracketed "
        )


def test_cli_an_hmm_file_is_trained_as_one(tmp_path):
    """cp_learn --scheduler on an SVM-hmm file trains an HMM, as one machine does (it once
    trained the tokens as classes, exit 0)."""
    from conftest import SAMPLES

    model = tmp_path / "m"
    r = run_cli("learn", "--scheduler", "local:2", "-c", "1", SAMPLES / "ewt60.hmm.train", model)
    assert r.returncode == 0, r.stderr
    assert model.read_text().startswith("SVM-HMM Version V3.10"), model.read_text()[:80]
    classified = run_cli("classify", SAMPLES / "ewt30.hmm.test", model, tmp_path / "p")
    assert classified.returncode == 0, classified.stderr


def test_a_change_before_while_or_after_the_first_reading_is_told_apart(
    sets, tmp_path, monkeypatch
):
    """A file cut short after the shards were planned and before they were read, or
    while its shard was being read: the first reading is refused, saying when (exit 1,
    no model: nothing was trained on it). Cut short after the first reading: the
    shard read again differs from the first reading (the best model so far, for the
    command)."""
    text = (sets / "binary.svm").read_bytes()
    lines = text.splitlines(keepends=True)
    cut = b"".join(lines[: len(lines) * 5 // 6])
    source = tmp_path / "train.svm"

    def load(specs):
        return ShardedData(InProcessSession(), *shard_loaders(specs, len(specs)))

    source.write_bytes(text)
    specs = plan_shards(str(source), 2)
    source.write_bytes(cut)
    with pytest.raises(shards.ShardChanged) as error:
        load(specs)
    assert str(error.value) == (
        f"{source}: changed after the run planned its shards, before it read them (its size "
        f"changed from {len(text)} to {len(cut)} bytes); a shard must stay the same for the "
        "whole run"
    )

    source.write_bytes(text)
    specs = plan_shards(str(source), 2)
    open_source = shards.open_source

    def cut_once_opened(path, timeout=None):
        opened = open_source(path, timeout)
        source.write_bytes(cut)
        return opened

    monkeypatch.setattr(shards, "open_source", cut_once_opened)
    with pytest.raises(shards.ShardChanged, match=r"changed while the run read it \("):
        load(specs)
    monkeypatch.undo()

    source.write_bytes(text)
    specs = plan_shards(str(source), 2)
    data = load(specs)
    source.write_bytes(cut)
    again = shards.load_shard(functools.partial(shards.read_files, [specs[1]]), 1)
    with pytest.raises(shards.ShardChanged, match=r"changed since the run first read it \("):
        shards.check_fingerprints(again, data.summaries[1]["fingerprints"])


def test_a_task_of_a_shard_not_placed_again_yet_runs_anywhere(cluster):
    """A round's task whose shard has no worker yet (its worker lost, the shard not
    read again): submitted without a worker to prefer, which Dask refuses together
    with allow_other_workers."""
    import operator
    from types import SimpleNamespace

    from cpsvm.cluster.rounds import Rounds

    _, client = cluster
    rounds = Rounds(SimpleNamespace(client=client), [])
    assert rounds._submit(operator.add, 1, 2).result(timeout=60) == 3
    worker = next(iter(client.scheduler_info()["workers"]))
    assert rounds._submit(operator.add, 2, 2, where=worker).result(timeout=60) == 4
