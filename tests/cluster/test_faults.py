"""The cluster path when things go wrong, through the commands as users run them: a
cluster without workers, every worker or the scheduler killed mid-run (a bounded wait,
one line, exit 1, the model so far written), a worker frozen (SIGSTOP) or killed while
w travels between the workers (the undisturbed run's model), a shard changed or gone
when a lost worker's shard is read again (one line, the best model so far), Ctrl-C
while a local cluster starts or loads, twice, and SIGTERM mid-run (the model so far;
nothing left behind in $TMPDIR or /dev/shm), a listener that never answers or answers
in another protocol. Real processes, a few runs (the suite's time)."""

import contextlib
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

pytestmark = pytest.mark.usefixtures("own_tmpdir")  # tests/conftest.py

pytest.importorskip("distributed")


def environment(**settings):
    """The processes' environment: this one's as it is now (its TMPDIR the test's own,
    tests/cluster/conftest.py), the project on the path, ``settings``."""
    return dict(os.environ, PYTHONPATH=str(ROOT), **settings)


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


@pytest.fixture(scope="module")
def wide_file(tmp_path_factory):
    """A binary set of 20,000 columns: its w (160 KB) travels between the workers along
    the tree of copies, not inside the tasks."""
    rng = np.random.default_rng(7)
    n, d = 8000, 20000
    X = sp.random(n, d, density=20 / d, random_state=7, format="csr")
    X.data = rng.standard_normal(X.nnz)
    y = np.where(X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    path = tmp_path_factory.mktemp("wide") / "wide.svm"
    write_svmlight(str(path), X, y)
    return path


def start(*argv, new_session=False, log=None, env=None):
    """``python argv``; its output in ``log`` if given (a pipe nobody reads could fill)."""
    out = open(log, "w") if log is not None else subprocess.PIPE
    try:
        return subprocess.Popen(
            [sys.executable, *argv],
            stdout=out,
            stderr=subprocess.STDOUT if log is not None else subprocess.PIPE,
            text=True,
            env=environment(**(env or {})),
            start_new_session=new_session,
        )
    finally:
        if log is not None:
            out.close()


def stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.communicate()


def dask_scheduler(tmp_path, env=None):
    """A 'dask scheduler' process and its address."""
    log = tmp_path / "scheduler.log"
    proc = start(
        "-m", "distributed.cli.dask_scheduler", "--port", "0", "--no-dashboard", log=log, env=env
    )
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


def wait_for_workers(address, n):
    """Until the scheduler at ``address`` has ``n`` workers."""
    from distributed import Client

    with Client(address, timeout=60) as client:
        client.wait_for_workers(n, timeout=60)


def dask_cluster(tmp_path, n, env=None):
    """A scheduler and ``n`` workers without nannies, every worker connected."""
    scheduler, address = dask_scheduler(tmp_path, env)
    workers = [dask_worker(address, tmp_path) for _ in range(n)]
    wait_for_workers(address, n)
    return scheduler, address, workers


def end_all(*procs):
    for proc in procs:
        if proc is not None:
            stop(proc)


def learn_until(args, iterations, kill):
    """ocas_learn -v 2 with ``args``; ``kill()`` once it has done ``iterations``
    iterations; returns (status, stderr lines)."""
    proc = start("-m", "cpsvm.cli.ocas", "-v", "2", *map(str, args))
    lines = []
    for line in proc.stderr:
        lines.append(line.rstrip("\n"))
        if re.match(rf"\s*{iterations}: tim=", line):
            break
    kill()
    rest = proc.stderr.read().splitlines()
    proc.wait(timeout=120)
    proc.stdout.close()
    return proc.returncode, lines + rest


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
            status, lines = learn_until(
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


def _members(group):
    """The live processes of a process group."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(int(entry))
    return found


def _alive(group):
    return bool(_members(group))


def _semaphores(group):
    """The named semaphores in /dev/shm the group's processes have mapped (and not
    unlinked): multiprocessing's, of the workers' queues."""
    names = set()
    for pid in _members(group):
        try:
            with open(f"/proc/{pid}/maps") as f:
                maps = f.read()
        except OSError:
            continue
        names.update(re.findall(r"/dev/shm/(sem\.\S+)$", maps, flags=re.M))
    return names


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", ["SIGINT", "SIGINT twice", "SIGTERM", "SIGKILL"])
def test_signals_leave_nothing_behind(train_file, tmp_path, sig):
    """--scheduler local:2 in a $TMPDIR of its own. Ctrl-C while it starts its cluster:
    exit 130, one line. Ctrl-C twice once its workers are up (starting or loading):
    exit 130 too. SIGTERM mid-run, as Ctrl-C: the iteration ends, the best model so far
    is written and said, exit 143, no leaked semaphore warning. Either way the local
    cluster's processes are gone when the command ends (after a SIGKILL of the command,
    soon after: the cluster's process sees its stdin end), nothing is left in $TMPDIR
    (its scratch directory, Dask's dask-scratch-space and locks), and none of the
    semaphores its workers had in /dev/shm."""
    temp = tmp_path / "tmp"
    temp.mkdir()
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
        env={"TMPDIR": str(temp)},
    )
    group, semaphores = None, set()
    deadline = time.monotonic() + 60
    if sig == "SIGINT":  # once the local cluster's process is there, and still starting
        while group is None and time.monotonic() < deadline:
            time.sleep(0.1)
            group = _group_of(proc.pid)
        time.sleep(0.5)
    elif sig == "SIGINT twice":  # once its workers hold their semaphores
        while not semaphores and time.monotonic() < deadline:
            time.sleep(0.1)
            group = group or _group_of(proc.pid)
            semaphores = _semaphores(group) if group else set()
    else:
        for line in proc.stderr:
            group = group or _group_of(proc.pid)
            if re.match(r"\s*2: tim=", line):
                break
        semaphores = _semaphores(group)
    signum = signal.SIGINT if sig.startswith("SIGINT") else getattr(signal, sig)
    os.killpg(proc.pid, signum)  # a terminal's Ctrl-C reaches the whole group
    if sig == "SIGINT twice":
        time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    lines = err.strip().splitlines()
    if sig.startswith("SIGINT"):
        assert proc.returncode == 130 and lines[-1].startswith("ocas_learn: interrupted"), err
    elif sig == "SIGTERM":
        assert proc.returncode == 143, err
        assert re.fullmatch(
            r"ocas_learn: terminated \(SIGTERM\) at iteration \d+ with duality gap \S+; the "
            rf"best model so far was written to {re.escape(str(model))}",
            lines[-1],
        ), lines[-1]
        assert run_cli("classify", train_file, model, tmp_path / "p").returncode == 0
    else:
        assert proc.returncode == -signal.SIGKILL
    assert "Traceback" not in err and "leaked" not in err
    # (the processes end, multiprocessing's resource tracker last, after it unlinked
    # the semaphores left)
    while _alive(group) and time.monotonic() < deadline + 60:
        time.sleep(0.2)
    assert group is not None and not _alive(group)
    assert sorted(temp.iterdir()) == []
    if sig != "SIGINT":
        assert semaphores
    assert not [name for name in semaphores if os.path.exists(f"/dev/shm/{name}")]


def test_a_listener_that_never_answers(train_file, tmp_path):
    """Something accepts the connection and never speaks: the documented connect
    timeout ends the wait, and the one line says so (the test's own timeout only guards
    against a hang)."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    try:
        env = environment(DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="1s")
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
    finally:
        listener.close()
    assert r.returncode == 1 and not (tmp_path / "m").exists()
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"ocas_learn: cannot reach the Dask scheduler at tcp://127.0.0.1:{port} within 1s"
    ), lines


def test_a_worker_frozen_or_killed_while_w_travels(wide_file, tmp_path):
    """w over 64 KB goes from worker to worker. A worker frozen (SIGSTOP) then killed,
    and a worker frozen for good, mid-run: the run goes on without it (the frozen one
    removed once its heartbeats have stopped for --worker-timeout plus the longest
    task; Dask alone would wait for its worker-ttl, an hour here) and writes the
    undisturbed run's model."""
    env = {"DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL": "1h"}
    scheduler, address, workers = dask_cluster(tmp_path, 3, env)
    try:
        args = ["--scheduler", address, "--worker-timeout", "2", "-c", "1", wide_file]
        reference = tmp_path / "reference.model"
        r = run_cli("ocas", *args, reference)
        assert r.returncode == 0, r.stderr

        def freeze_then_kill():
            workers[1].send_signal(signal.SIGSTOP)
            time.sleep(1.0)
            workers[1].send_signal(signal.SIGKILL)

        for name, fault in (
            ("killed", freeze_then_kill),
            ("frozen", lambda: workers[2].send_signal(signal.SIGSTOP)),
        ):
            model = tmp_path / f"{name}.model"
            status, lines = learn_until([*args, model], 5, fault)
            assert status == 0, lines
            assert not any("Traceback" in line for line in lines)
            assert model.read_bytes() == reference.read_bytes(), name
    finally:
        end_all(*workers, scheduler)


@pytest.mark.parametrize("change", ["truncated", "rewritten", "deleted"])
def test_a_shard_changed_or_gone_when_read_again(train_file, tmp_path, change):
    """A worker lost mid-run after its file changed: read again, the shard is not the
    bytes first read (cut at a line boundary; one digit changed in each half, the size
    and modification time kept: the checksum), or the file is gone. One line naming
    the file and what happened, exit 1, and the best model so far written (which
    cp_classify reads)."""
    source = tmp_path / "train.svm"
    text = train_file.read_bytes()
    source.write_bytes(text)
    scheduler, address, workers = dask_cluster(tmp_path, 2)

    def change_then_kill():
        if change == "truncated":
            lines = text.splitlines(keepends=True)
            source.write_bytes(b"".join(lines[: len(lines) * 5 // 6]))
        elif change == "rewritten":
            stat = source.stat()
            changed = bytearray(text)
            for half in (len(text) // 4, 3 * len(text) // 4):
                at = changed.index(b":", half) + 1  # a value's first character
                changed[at : at + 1] = b"7" if changed[at : at + 1] != b"7" else b"3"
            source.write_bytes(bytes(changed))
            os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        else:
            source.unlink()
        workers[0].send_signal(signal.SIGKILL)

    model = tmp_path / "m.model"
    try:
        args = ["--scheduler", address, "--worker-timeout", "5", "-c", "100", source, model]
        status, lines = learn_until(args, 3, change_then_kill)
    finally:
        end_all(*workers, scheduler)
    assert status == 1, lines
    assert not any("Traceback" in line for line in lines)
    what = {
        "truncated": r"changed since the run first read it \(its size changed from \d+ to "
        r"\d+ bytes\); a shard must stay the same for the whole run",
        "rewritten": r"changed since the run first read it \(its content changed "
        r"\(checksum\)\); a shard must stay the same for the whole run",
        "deleted": r"the Dask worker at tcp://\S+ cannot read it \(no such file there\)",
    }[change]
    assert re.fullmatch(
        rf"ocas_learn: lost a Dask worker, and reading its shard again failed: "
        rf"{re.escape(str(source))}: {what}.* after iteration \d+; the best model so far "
        rf"was written to {re.escape(str(model))}",
        lines[-1],
    ), lines[-1]
    if change != "deleted":
        classified = run_cli("classify", source, model, tmp_path / "p")
        assert classified.returncode == 0, classified.stderr


@pytest.mark.parametrize("answer", ["HTTP/1.1 400 Bad Request", "SSH-2.0-OpenSSH_9.6"])
def test_an_address_that_answers_in_another_protocol(train_file, tmp_path, answer):
    """A web server (it answers Dask's handshake with a 400) or an SSH server (it
    speaks first) at the address: one line, exit 1, no model, no traceback."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn, contextlib.suppress(OSError):  # a client that went away
                if answer.startswith("SSH"):
                    conn.sendall(answer.encode() + b"\r\n")
                conn.recv(65536)
                conn.sendall(answer.encode() + b"\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=serve, daemon=True).start()
    model = tmp_path / "m"
    try:
        r = run_cli("ocas", "--scheduler", f"tcp://127.0.0.1:{port}", train_file, model)
    finally:
        listener.close()
    assert r.returncode == 1 and not model.exists()
    assert r.stderr.strip().splitlines() == [
        f"ocas_learn: something at tcp://127.0.0.1:{port} answers, but not as a Dask "
        "scheduler does: is it the scheduler's address, as 'dask scheduler' prints it?"
    ]


def test_an_http_server_killed_then_a_worker_lost(train_file, tmp_path):
    """The shards by URL, their HTTP server killed mid-run, then a worker lost: its shard
    cannot be read again. One line naming the URL and why (no traceback: Dask once
    refused the round's tasks of the shard not placed again), exit 1, the best model
    so far written, which cp_classify reads."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "train.svm").write_bytes(train_file.read_bytes())
    server = start(str(ROOT / "tests" / "cluster" / "http_site.py"), str(tmp_path / "site"))
    base = server.stdout.readline().strip()
    assert base.startswith("http://127.0.0.1:"), server.stderr.read() if not base else base
    scheduler, address, workers = dask_cluster(tmp_path, 2)
    url = f"{base}/train.svm"
    model = tmp_path / "m.model"

    def kill_server_then_worker():
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=30)
        workers[0].send_signal(signal.SIGKILL)

    try:
        args = ["--scheduler", address, "--worker-timeout", "5", "-c", "100", url, model]
        status, lines = learn_until(args, 3, kill_server_then_worker)
    finally:
        end_all(*workers, scheduler, server)
    assert status == 1, lines
    assert not any("Traceback" in line or "allow_other_workers" in line for line in lines)
    assert re.fullmatch(
        rf"ocas_learn: lost a Dask worker, and reading its shard again failed: "
        rf"{re.escape(url)}: the Dask worker at tcp://\S+ cannot read it \(ClientConnectorError: "
        rf"Cannot connect to host .*\) after iteration \d+; the best model so far was written "
        rf"to {re.escape(str(model))}",
        lines[-1],
    ), lines[-1]
    classified = run_cli("classify", train_file, model, tmp_path / "p")
    assert classified.returncode == 0, classified.stderr
