"""The cluster path when things go wrong, through the commands as users run them: a
cluster without workers, every worker or the scheduler killed mid-run (a bounded wait,
one line, exit 1, the model so far written), Ctrl-C while a local cluster starts and
SIGTERM mid-run (nothing left behind), a listener that never answers, a file the
workers cannot see. Real processes, a few runs (the suite's time)."""

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import ROOT, run_cli

from cpsvm.io.svmlight import write_svmlight

pytest.importorskip("distributed")

ENV = dict(os.environ, PYTHONPATH=str(ROOT))


@pytest.fixture(scope="module")
def train_file(tmp_path_factory):
    """A binary set whose OCAS run takes a few dozen iterations."""
    rng = np.random.default_rng(5)
    n, d = 6000, 40
    X = sp.random(n, d, density=0.3, random_state=5, format="csr")
    X.data = rng.standard_normal(X.nnz)
    y = np.where(X @ rng.standard_normal(d) + rng.standard_normal(n) > 0, 1.0, -1.0)
    path = tmp_path_factory.mktemp("faults") / "train.svm"
    write_svmlight(str(path), X, y)
    return path


def start(*argv, new_session=False, log=None):
    """``python argv``; its output in ``log`` if given (a pipe nobody reads could fill)."""
    out = open(log, "w") if log is not None else subprocess.PIPE
    try:
        return subprocess.Popen(
            [sys.executable, *argv],
            stdout=out,
            stderr=subprocess.STDOUT if log is not None else subprocess.PIPE,
            text=True,
            env=ENV,
            start_new_session=new_session,
        )
    finally:
        if log is not None:
            out.close()


def stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.communicate()


def dask_scheduler(tmp_path):
    """A 'dask scheduler' process and its address."""
    log = tmp_path / "scheduler.log"
    proc = start("-m", "distributed.cli.dask_scheduler", "--port", "0", "--no-dashboard", log=log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        found = re.search(r"tcp://[0-9.]+:\d+", log.read_text())
        if found:
            return proc, found.group(0)
        time.sleep(0.2)
    stop(proc)
    pytest.fail("the dask scheduler did not start")


def dask_worker(address, tmp_path):
    """A worker without a nanny (killing its process loses it for good)."""
    return start(
        "-m",
        "distributed.cli.dask_worker",
        address,
        "--no-nanny",
        "--nthreads",
        "1",
        "--local-directory",
        str(tmp_path),
        log=tmp_path / "worker.log",
    )


def learn_until(args, iterations, kill):
    """ocas_learn -v 2 with ``args``; ``kill()`` once it has done ``iterations``
    iterations; returns (status, stderr lines, seconds from the kill to the end)."""
    proc = start("-m", "cpsvm.cli.ocas", "-v", "2", *map(str, args))
    lines = []
    for line in proc.stderr:
        lines.append(line.rstrip("\n"))
        if re.match(rf"\s*{iterations}: tim=", line):
            break
    killed = time.monotonic()
    kill()
    rest = proc.stderr.read().splitlines()
    proc.wait(timeout=120)
    proc.stdout.close()
    return proc.returncode, lines + rest, time.monotonic() - killed


def test_lost_workers_and_scheduler(train_file, tmp_path):
    """No worker at all: the run ends after --worker-timeout, one line, exit 1, no model.
    Its only worker killed mid-run, then the scheduler killed mid-run: one line each
    (no traceback), exit 1, and the best model so far written, which cp_classify
    reads."""
    scheduler, address = dask_scheduler(tmp_path)
    worker = None
    try:
        model = tmp_path / "none.model"
        r = run_cli("ocas", "--scheduler", address, "--worker-timeout", "2", train_file, model)
        assert r.returncode == 1 and not model.exists()
        assert r.stderr.strip().splitlines() == [
            "ocas_learn: the Dask cluster has had no worker for 2 s (--worker-timeout); "
            "no model was written"
        ]

        for lose in ("worker", "scheduler"):
            worker = dask_worker(address, tmp_path)
            model = tmp_path / f"{lose}.model"
            args = ["--scheduler", address, "--worker-timeout", "2", "-c", "100"]
            status, lines, seconds = learn_until(
                [*args, train_file, model],
                3,
                lambda: (worker if lose == "worker" else scheduler).send_signal(signal.SIGKILL),
            )
            assert status == 1, lines
            assert not any("Traceback" in line for line in lines)
            last = lines[-1]
            assert re.match(
                r"ocas_learn: (the Dask cluster has had no worker for 2 s \(--worker-timeout\)"
                r"|lost the Dask scheduler at tcp://\S+) after iteration \d+; the best model "
                r"so far was written to ",
                last,
            ), last
            assert ("no worker" in last) == (lose == "worker")
            assert seconds < 30
            classified = run_cli("classify", train_file, model, tmp_path / "p")
            assert classified.returncode == 0, classified.stderr
            stop(worker)
    finally:
        for proc in (worker, scheduler):
            if proc is not None:
                stop(proc)


def _group_of(pid):
    """The process group of the local cluster's process started by ``pid``."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if b"cpsvm.cluster.local" in cmd and int(fields[1]) == pid:
            return int(fields[2])
    return None


def _alive(group):
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_signals_leave_nothing_behind(train_file, tmp_path):
    """Ctrl-C while --scheduler local:2 starts its cluster stops the command: exit 130,
    one line. SIGTERM mid-run: exit 143, one line, no leaked semaphore warning. Either
    way the local cluster's processes and its scratch directory are gone when the
    command ends; after a SIGKILL of the command, soon after (the cluster's process
    sees its stdin end)."""
    scratch = set(os.listdir(os.environ.get("TMPDIR", "/tmp")))
    for sig, wait in ((signal.SIGINT, 0.5), (signal.SIGTERM, None), (signal.SIGKILL, None)):
        model = tmp_path / "m"
        proc = start(
            "-m",
            "cpsvm.cli.ocas",
            "--scheduler",
            "local:2",
            "-c",
            "100",
            "-v",
            "2",
            train_file,
            model,
            new_session=True,  # as at a terminal: the command leads its process group
        )
        group = None
        if wait is not None:
            # Once the local cluster's process is there, and still starting.
            deadline = time.monotonic() + 60
            while group is None and time.monotonic() < deadline:
                time.sleep(0.1)
                group = _group_of(proc.pid)
            time.sleep(wait)
        else:
            for line in proc.stderr:
                group = group or _group_of(proc.pid)
                if re.match(r"\s*2: tim=", line):
                    break
        os.killpg(proc.pid, sig)  # a terminal's Ctrl-C reaches the whole group
        out, err = proc.communicate(timeout=120)
        lines = err.strip().splitlines()
        if sig == signal.SIGINT:
            assert proc.returncode == 130 and lines[-1] == "ocas_learn: interrupted", err
        elif sig == signal.SIGTERM:
            assert proc.returncode == 143 and lines[-1] == "ocas_learn: terminated (SIGTERM)"
        else:  # the cluster sees its stdin end, and ends on its own
            assert proc.returncode == -signal.SIGKILL
            deadline = time.monotonic() + 60
            while _alive(group) and time.monotonic() < deadline:
                time.sleep(0.2)
        assert "Traceback" not in err and "leaked" not in err
        assert group is not None and not _alive(group)
    left = set(os.listdir(os.environ.get("TMPDIR", "/tmp"))) - scratch
    assert not [name for name in left if name.startswith("cpsvm-dask-")]


def test_a_listener_that_never_answers(train_file, tmp_path):
    """Something accepts the connection and never speaks: the documented connect
    timeout bounds the wait."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    try:
        env = dict(ENV, DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="1s")
        t0 = time.monotonic()
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "cpsvm.cli.ocas",
                "--scheduler",
                f"tcp://127.0.0.1:{port}",
                str(train_file),
                str(tmp_path / "m"),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert time.monotonic() - t0 < 30
    finally:
        listener.close()
    assert r.returncode == 1 and not (tmp_path / "m").exists()
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"ocas_learn: cannot reach the Dask scheduler at tcp://127.0.0.1:{port} within 1s"
    ), lines
