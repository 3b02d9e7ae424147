"""cp_learn's structured problems on a cluster (issue 48): an SVM-hmm file, a ranking
file and a user's problem (examples/ordinal.py) trained with --scheduler are the
problem the single machine trains, into models byte-identical for any number of workers
and any sharding, at the single machine's objective within the stopping tolerance;
sentences and queries never split; the refusals (a -w the cluster does not run, shard
files that split a sentence, a user's module the workers cannot import) one line each;
a worker lost mid-run leaves the undisturbed run's model, SIGTERM the model so far.

Most runs go to one scheduler with two workers started for the module (a local:N run
starts its own cluster: one such run, the rest share these)."""

import os
import re
import shutil
import signal
import subprocess
import sys
from types import SimpleNamespace

import pytest
from conftest import ROOT, run_cli
from test_faults import dask_scheduler, end_all, start, wait_for_workers

pytestmark = pytest.mark.usefixtures("own_tmpdir")  # tests/conftest.py

pytest.importorskip("distributed")

SAMPLES = ROOT / "data" / "samples"
EXAMPLES = ROOT / "examples"


def worker(address, folder):
    """A worker without a nanny that imports examples/ (ordinal.py) too."""
    log = open(folder / "worker.log", "a")
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", address, "--no-nanny",
             "--nthreads", "1", "--local-directory", str(folder)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(EXAMPLES)])),
        )  # fmt: skip
    finally:
        log.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler and two workers (no nanny), shared by the module's runs."""
    folder = tmp_path_factory.mktemp("struct-cluster")
    scheduler, address = dask_scheduler(folder)
    workers = [worker(address, folder) for _ in range(2)]
    wait_for_workers(address, 2)
    yield SimpleNamespace(address=address, workers=workers)
    end_all(*workers, scheduler)


def split_units(path, parts, folder, stem):
    """``parts`` files of whole units (runs of equal qid, lines without qid, or trees:
    one a line in the samples)."""
    lines = path.read_text().splitlines(keepends=True)
    suffix = path.suffix if path.suffix == ".mrg" else ".txt"
    qid = [re.search(r"qid:(\d+)", line) for line in lines]
    cuts = [0]
    for k in range(1, parts):
        i = len(lines) * k // parts
        while i < len(lines) and qid[i] and qid[i - 1] and qid[i].group(1) == qid[i - 1].group(1):
            i += 1
        cuts.append(i)
    cuts.append(len(lines))
    folder.mkdir(exist_ok=True)
    for k in range(parts):
        (folder / f"{stem}-{k}{suffix}").write_text("".join(lines[cuts[k] : cuts[k + 1]]))
    return str(folder / f"{stem}-*{suffix}")


def learn(*args, env=None):
    done = subprocess.run(
        [sys.executable, "-m", "cpsvm.cli.learn", *map(str, args)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *(env or [])])),
        timeout=300,
    )
    return done


def pval(stdout):
    return float(re.search(r"pval=([-0-9.e+]+)", stdout).group(1))


def gap(stdout):
    """The stopping tolerance the single machine's run reached: its bound on the duality
    gap (the objective is known to within it)."""
    return float(re.search(r"Upper bound on duality gap: ([-0-9.e+]+)", stdout).group(1))


def check_same(single, runs, model_head, tolerance):
    """Every cluster run's model the first's, byte for byte; its objective the single
    machine's within ``tolerance``; the model of the problem's kind."""
    first = runs[0][1].read_bytes()
    for done, model in runs:
        assert done.returncode == 0, done.stderr
        assert model.read_bytes() == first, model
        assert abs(pval(done.stdout) - pval(single.stdout)) <= tolerance, done.stdout
    assert first.decode().startswith(model_head), first[:80]


@pytest.mark.parametrize(
    "name, file, args, head",
    [
        ("hmm", SAMPLES / "ewt60.hmm.train", ["-c", "1", "-e", "2"], "SVM-HMM"),
        ("rank", SAMPLES / "toy.rank.train", ["-c", "1"], "SVM-light"),
        ("cfg", SAMPLES / "toy.train.mrg", ["-c", "30"], "cpsvm cfg model"),
    ],
)
def test_the_single_machines_problem_same_model_any_sharding(
    cluster, tmp_path, name, file, args, head
):
    """auto finds the problem the single machine does (an SVM-hmm file trained a
    multiclass model here once; a ranking file was refused as "expected class labels");
    one file cut into byte ranges at qid boundaries (trees: shared out) and 4 files give
    one model,
    at the single machine's objective (-w 3) within its tolerance."""
    single = run_cli("learn", "-w", "3", *args, file, tmp_path / "single.model")
    assert single.returncode == 0, single.stderr
    four = split_units(file, 4, tmp_path / "four", name)
    runs = []
    for k, source in enumerate([file, four]):
        model = tmp_path / f"cluster{k}.model"
        runs.append((learn("--scheduler", cluster.address, *args, source, model), model))
    check_same(single, runs, head, gap(single.stdout))
    if name == "rank":
        assert "rank" in runs[0][0].stdout.lower(), runs[0][0].stdout
    if name == "hmm":
        assert "SVMhmm scale" in runs[0][0].stdout


def test_a_users_problem(cluster, tmp_path):
    """examples/ordinal.py on the cluster, one file (byte ranges) and 4 files: one model,
    the single machine's objective (local:2 itself: test_distributed's hmm file)."""
    spec = ["--problem", "ordinal:OrdinalRegression", "-c", "100"]
    train = EXAMPLES / "ordinal.train"
    single = learn("-w", "3", *spec, train, tmp_path / "single.model", env=[str(EXAMPLES)])
    assert single.returncode == 0, single.stderr
    four = split_units(train, 4, tmp_path / "four", "ordinal")
    runs = []
    for k, (where, source) in enumerate([(cluster.address, train), (cluster.address, four)]):
        model = tmp_path / f"ordinal{k}.model"
        done = learn("--scheduler", where, *spec, source, model, env=[str(EXAMPLES)])
        runs.append((done, model))
    check_same(single, runs, "", gap(single.stdout))


def test_refusals_one_line(cluster, tmp_path):
    """-w 9 for hmm; shard files that split a sentence; a user's module the workers
    cannot import (on the client's path only): one line each, exit != 0, no model."""
    model = tmp_path / "m"
    hmm = SAMPLES / "ewt60.hmm.train"
    done = learn(
        "--scheduler", cluster.address, "--problem", "hmm", "-w", "9", "-c", "1", hmm, model
    )
    assert done.returncode == 2 and not model.exists()
    assert done.stderr.strip().splitlines() == [
        "cp_learn: -w 9 cannot run on a cluster for the hmm problem: --scheduler takes -w 3 "
        "for it (see 'cp_learn -h')"
    ]
    lines = hmm.read_text().splitlines(keepends=True)
    middle = len(lines) // 2
    while lines[middle].split()[1] != lines[middle - 1].split()[1]:
        middle += 1  # inside a sentence
    parts = tmp_path / "split"
    parts.mkdir()
    (parts / "a.hmm").write_text("".join(lines[:middle]))
    (parts / "b.hmm").write_text("".join(lines[middle:]))
    done = learn("--scheduler", cluster.address, "-c", "1", str(parts / "*.hmm"), model)
    assert done.returncode == 1 and not model.exists(), done.stderr
    [line] = done.stderr.strip().splitlines()
    assert re.match(
        r"cp_learn: \S+a\.hmm: qid \d+ continues in the next shard file, \S+b\.hmm: ", line
    ), line
    own = tmp_path / "mine"
    own.mkdir()
    shutil.copy(EXAMPLES / "ordinal.py", own / "ordinal_here.py")
    spec = "ordinal_here:OrdinalRegression"
    args = ["--scheduler", cluster.address, "--problem", spec, "-c", "1"]
    done = learn(*args, EXAMPLES / "ordinal.train", model, env=[str(own)])
    assert done.returncode == 1 and not model.exists(), done.stderr
    [line] = done.stderr.strip().splitlines()
    assert re.match(
        rf"cp_learn: --problem {spec} cannot be imported on the Dask worker at tcp://\S+: "
        r"No module named 'ordinal_here' .*importable on every worker\)$",
        line,
    ), line


def test_a_worker_lost_then_sigterm(cluster, tmp_path):
    """(Last: it loses a worker of the module's cluster.) A worker killed mid-run: its
    shard read again on the other, the undisturbed run's model. SIGTERM mid-run: exit
    143, the model so far written, which cp_classify reads."""
    hmm = SAMPLES / "ewt60.hmm.train"
    args = ["--scheduler", cluster.address, "--worker-timeout", "5", "-c", "5", hmm]
    reference = tmp_path / "reference.model"
    done = learn(*args, reference)
    assert done.returncode == 0, done.stderr
    for fault in ("kill", "term"):
        model = tmp_path / f"{fault}.model"
        proc = start("-m", "cpsvm.cli.learn", "-v", "2", *map(str, args), model)
        seen = False
        for line in proc.stderr:
            if line.startswith("Iter 5:"):
                seen = True
                break
        assert seen
        if fault == "kill":
            cluster.workers[1].send_signal(signal.SIGKILL)
        else:
            proc.send_signal(signal.SIGTERM)
        rest = proc.stderr.read()
        proc.wait(timeout=120)
        proc.stdout.close()
        assert "Traceback" not in rest, rest
        if fault == "kill":
            assert proc.returncode == 0, rest
            assert model.read_bytes() == reference.read_bytes()
        else:
            assert proc.returncode == 143, rest  # (SIGTERM's with --scheduler)
            assert "terminated (SIGTERM) at iteration" in rest, rest
            classified = run_cli("classify", SAMPLES / "ewt30.hmm.test", model, tmp_path / "p")
            assert classified.returncode == 0, classified.stderr


@pytest.mark.parametrize("parts", [2, 3, 7])
def test_byte_ranges_begin_where_a_unit_begins(tmp_path, parts):
    """One file's byte ranges each begin at a line whose qid differs from the line
    before (comment lines between a sentence's tokens do not end it); a file without
    qid is cut at lines."""
    from cpsvm.cluster.units import plan_unit_shards

    text = (SAMPLES / "ewt60.hmm.train").read_bytes()
    lines = text.splitlines(keepends=True)
    lines.insert(10, b"# a comment inside a sentence\n")
    source = tmp_path / "train.hmm"
    source.write_bytes(b"".join(lines))
    specs = plan_unit_shards(str(source), parts)
    assert specs[0].start == 0 and specs[-1].end == len(source.read_bytes())
    data = source.read_bytes()
    for before, spec in zip(specs, specs[1:]):
        assert before.end == spec.start
        if spec.start in (0, len(data)):
            continue
        assert data[spec.start - 1 : spec.start] == b"\n"
        previous = data[: spec.start - 1].rsplit(b"\n", 1)[-1]
        following = data[spec.start :].split(b"\n", 1)[0]
        qid = re.compile(rb"qid:(\d+)")
        assert qid.search(previous).group(1) != qid.search(following).group(1)
    plain = tmp_path / "plain.svm"
    plain.write_bytes(b"".join(b"1 1:%d\n" % i for i in range(100)))
    cuts = [s.start for s in plan_unit_shards(str(plain), parts)]
    assert cuts == sorted(cuts) and len(set(cuts)) == parts
