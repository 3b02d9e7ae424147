"""SVMperf's multivariate losses on the cluster (cpsvm/cluster/multivariate.py): the
same model for any sharding (one file in byte ranges, its files grouped so that their
rows interleave), at the single machine's objective to the stopping tolerance; the
command on a local cluster; a lost cluster carries the best model so far; a worker
killed mid-run changes nothing; the refusals."""

import os
import signal

import pytest
from conftest import ROOT, run_cli
from test_distributed import (
    InProcessSession,
    LosingSession,
    cluster,  # noqa: F401 (a fixture)
    file_shards,
    model_bytes,
    objective,
)

from cpsvm.cluster.session import ClusterLost, Session, ShardedData
from cpsvm.cluster.shards import plan_shards, read_files
from cpsvm.cluster.solver import train_struct
from cpsvm.io.model_file import read_model
from cpsvm.io.svmlight import read_svmlight
from cpsvm.solvers.one_slack import StructParams
from cpsvm.solvers.one_slack import train as struct_train

pytestmark = pytest.mark.usefixtures("own_tmpdir")  # tests/conftest.py

A9A3K = ROOT / "data" / "samples" / "a9a3k.train"


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    """a9a3k.train as four files of unequal sizes (grouped in two shards by size, their
    rows interleave: 0 and 3, 1 and 2)."""
    root = tmp_path_factory.mktemp("perf")
    lines = A9A3K.read_bytes().splitlines(keepends=True)
    for i, (a, b) in enumerate([(0, 1200), (1200, 1900), (1900, 2500), (2500, len(lines))]):
        (root / f"part-{i}.svm").write_bytes(b"".join(lines[a:b]))
    return root


def shardings(parts):
    yield file_shards(A9A3K, 1)
    yield file_shards(A9A3K, 4)  # four byte ranges
    data = file_shards(parts / "part-*.svm", 1, groups=2)
    assert data.n_files == 4 and len(data.loaded) == 2
    yield data


@pytest.mark.parametrize(
    "loss,args",
    [(10, {}), (1, {}), (1, {"algorithm": 3}), (4, {"algorithm": 3, "rescaling": 1})],
)
def test_same_model_for_any_sharding(parts, tmp_path, loss, args):
    """ROC area and F1 (-w 9, the default; F1 also -w 3), Prec@k with slack rescaling
    (-w 3 -o 1): one shard, four byte ranges and four files grouped in two give the
    same bytes; the objective is the single machine's to C·ε."""
    if args:
        args = dict(args, max_iterations=60)
    params = StructParams(C=1.0, loss_id=loss, **args)
    models, objectives = set(), set()
    for data in shardings(parts):
        model, info = train_struct(data, params)
        models.add(model_bytes(model, tmp_path))
        objectives.add(info.result.primal)
        assert info.class_counts == (734, 2266) and info.loss_id == loss
    assert len(models) == 1 and len(objectives) == 1
    assert read_model(str(tmp_path / "m")).loss_id == loss
    if args:  # (cut short: the same iterations, not the optimum)
        return
    _, reference = struct_train(read_svmlight(str(A9A3K)), params)
    assert abs(objectives.pop() - reference.result.primal) <= 1.0 * 0.1  # C·ε


@pytest.mark.parametrize("algorithm", [3, 9])
def test_a_lost_cluster_carries_the_model_so_far(tmp_path, algorithm):
    """Lost mid-run, the run's error carries the model reached so far (-w 9: the best
    point), which records its loss."""
    with pytest.raises(ClusterLost) as lost:
        data = file_shards(A9A3K, 2, LosingSession(16))
        train_struct(data, StructParams(C=1.0, loss_id=10, algorithm=algorithm))
    assert lost.value.model is not None and lost.value.iterations >= 1
    assert lost.value.model.loss_id == 10


def test_cli_local_cluster_and_classify(parts, tmp_path):
    """cp_learn --scheduler local:2 -l 10 writes the in-process run's bytes (and the
    cluster's line); cp_classify reads the model as it reads one machine's."""
    model = tmp_path / "roc.model"
    r = run_cli("learn", "--scheduler", "local:2", "-l", "10", "-c", "1", A9A3K, model)
    assert r.returncode == 0, r.stderr
    assert "Cluster: 2 shards" in r.stdout and "ROC area" in r.stdout
    data = file_shards(A9A3K, 3, InProcessSession())
    expected, _ = train_struct(data, StructParams(C=1.0, loss_id=10))
    assert model.read_bytes() == model_bytes(expected, tmp_path)
    local = run_cli("learn", "-l", "10", "-c", "1", A9A3K, tmp_path / "local.model")
    assert abs(objective(r.stdout, "pval") - objective(local.stdout, "pval")) <= 0.1
    classified = run_cli("classify", A9A3K, model, tmp_path / "p")
    assert classified.returncode == 0, classified.stderr


def test_worker_killed_mid_run(cluster, tmp_path):  # noqa: F811
    """A worker killed during training: its shard is read again elsewhere, and the run
    ends at the undisturbed run's model."""
    address, client = cluster
    reference = None
    for kill in (False, True):
        with Session(address) as session:
            specs = plan_shards(str(A9A3K), 2)
            data = ShardedData(session, [lambda s=s: read_files([s]) for s in specs])
            killed = []

            def callback(p):
                if kill and p.iteration == 4 and not killed:
                    holder = client.who_has(data.shards)[data.shards[0].key][0]
                    pid = client.run(os.getpid, workers=[holder])[holder]
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)

            model, info = train_struct(data, StructParams(C=1.0, loss_id=1), callback=callback)
        if kill:
            assert killed and info.result.iterations > 4
            assert model_bytes(model, tmp_path) == reference
        else:
            reference = model_bytes(model, tmp_path)


@pytest.mark.parametrize(
    "args,message",
    [
        (["-l", "1", "-o", "1"], "-w 9 needs margin rescaling (-o 2); use -w 3 for -o 1"),
        (["-l", "10", "-w", "4"], "-w 4 cannot run on a cluster"),
        (["-l", "10", "--t", "1"], "linear models only"),
        (["-l", "10", "-w", "3", "-o", "1"], "ROC area (-l 10) is trained with margin rescaling"),
    ],
)
def test_refusals_one_line(tmp_path, args, message):
    """Refused in one line before anything connects (an address nothing listens on),
    SVMperf's own refusal of ROC area with slack rescaling too."""
    model = tmp_path / "m"
    r = run_cli("learn", "-c", "1", *args, "--scheduler", "tcp://127.0.0.1:9", A9A3K, model)
    assert r.returncode == 2 and not model.exists(), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and message in r.stderr
