"""Shards in a real S3-compatible store (--scheduler): moto's server on 127.0.0.1, its
access checked as AWS checks it (tests/cluster/moto_site.py), s3fs reading for the
workers, which inherit the command's AWS variables. a9a3k in 8 objects, read by a glob,
trains the model of the same 8 files by path, byte for byte (ocas_learn on local:2;
cp_learn reads its shards by the same code); one object's byte ranges, the model of the
path's. The store's refusals (credentials missing or wrong, a bucket or key absent, a
glob matching nothing) are one line naming the URL and why, exit 1, no model; the
server stopped, or the objects
overwritten, mid-run and a worker lost: its shard cannot be read again as it was (the
fingerprint), one line, exit 1, the best model so far written. Skipped, saying why,
only where moto or s3fs is not installed (both are in the [test] extra)."""

import glob
import os
import re
import signal
import subprocess
import sys
import tempfile

import pytest
from conftest import ROOT, SAMPLES
from moto_site import moto_s3_server, s3_missing

pytestmark = pytest.mark.usefixtures("own_tmpdir")  # tests/conftest.py

if s3_missing():
    pytest.skip(s3_missing(), allow_module_level=True)

BUCKET = "cpsvm"
SHARDS = 8


@pytest.fixture(scope="session")
def moto_s3(tmp_path_factory):
    """One moto S3 server for the pytest process, killed at its end."""
    server = moto_s3_server(tmp_path_factory.mktemp("moto") / "moto.log")
    yield server
    server.proc.kill()
    server.proc.wait()


def split_lines(text, parts):
    """``text``'s lines in ``parts`` consecutive runs, as bytes."""
    lines = text.splitlines(keepends=True)
    cuts = [i * len(lines) // parts for i in range(parts + 1)]
    return [b"".join(lines[a:b]) for a, b in zip(cuts, cuts[1:])]


def put_shards(server, folder, prefix):
    """a9a3k.train in SHARDS files under ``folder`` and, the same bytes, objects under
    s3://BUCKET/``prefix`` (and the whole file as one object); the local glob."""
    fs = server.file_system()
    if not fs.exists(BUCKET):
        fs.mkdir(BUCKET)
    text = (SAMPLES / "a9a3k.train").read_bytes()
    (folder / "a9a3k.train").write_bytes(text)
    fs.pipe(f"{BUCKET}/{prefix}a9a3k.train", text)
    for i, part in enumerate(split_lines(text, SHARDS)):
        (folder / f"a9a3k-{i}.svm").write_bytes(part)
        fs.pipe(f"{BUCKET}/{prefix}a9a3k-{i}.svm", part)
    return str(folder / "a9a3k-*.svm")


@pytest.fixture(scope="module")
def shards(moto_s3, tmp_path_factory):
    """(the local glob of a9a3k's 8 shards, the S3 glob of the same objects)."""
    local = put_shards(moto_s3, tmp_path_factory.mktemp("a9a3k"), "")
    return local, f"s3://{BUCKET}/a9a3k-*"


def command(module, *args, env):
    """``python -m cpsvm.cli.<module> args`` in ``env``; the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", f"cpsvm.cli.{module}", *map(str, args)],
        capture_output=True,
        text=True,
        env=dict(env, PYTHONPATH=str(ROOT)),
        timeout=300,
    )


def test_a_glob_of_objects_trains_the_model_of_the_paths(moto_s3, shards, tmp_path):
    """ocas_learn --scheduler local:2 on 's3://cpsvm/a9a3k-*' (8 objects,
    listed by the glob, read by the workers) write the model of the same 8 files read
    by path, byte for byte."""
    local, url = shards
    env = moto_s3.environment()
    for module, flags in (("ocas", ["-c", "1"]),):
        models = []
        for name, source in (("s3", url), ("path", local)):
            model = tmp_path / f"{module}-{name}.model"
            r = command(module, "--scheduler", "local:2", *flags, source, model, env=env)
            assert r.returncode == 0, r.stderr
            models.append(model.read_bytes())
        assert models[0] == models[1], module


@pytest.fixture
def s3_environment(moto_s3, monkeypatch):
    """This process's environment the commands' (the shards planned and read here, as
    Dask's workers do), s3fs's cached file systems (and their credentials) forgotten
    before and after."""
    import s3fs

    def use(**settings):
        for name in [n for n in os.environ if n.startswith("AWS_")]:
            monkeypatch.delenv(name)
        for name, value in moto_s3.environment(**settings).items():
            if name.startswith("AWS_"):
                monkeypatch.setenv(name, value)
        s3fs.S3FileSystem.clear_instance_cache()

    yield use
    s3fs.S3FileSystem.clear_instance_cache()


def test_byte_ranges_of_one_object_train_the_model_of_the_path(shards, s3_environment, tmp_path):
    """One object cut into 1 and 3 byte ranges (range requests from its middle) trains
    the model of the same file by path, byte for byte."""
    from test_distributed import file_shards
    from test_urls import trained

    s3_environment()
    local = os.path.join(os.path.dirname(shards[0]), "a9a3k.train")
    for parts in (1, 3):
        data = file_shards(f"s3://{BUCKET}/a9a3k.train", parts)
        assert len(data.loaded) == parts
        reference = trained(file_shards(local, parts), tmp_path, "path")
        assert trained(data, tmp_path, "s3") == reference, parts


WRONG_KEY = "AKIAIOSFODNN7EXAMPLE"  # (AWS's documentation's example key id)
REFUSALS = {
    "credentials missing": (
        dict(AWS_ACCESS_KEY_ID=None, AWS_SECRET_ACCESS_KEY=None),
        f"s3://{BUCKET}/a9a3k-*",
        r"{worker} cannot read it \(NoCredentialsError: Unable to locate credentials\)",
    ),
    "key id unknown": (
        dict(AWS_ACCESS_KEY_ID=WRONG_KEY),
        f"s3://{BUCKET}/a9a3k-*",
        r"{worker} cannot read it \(InvalidAccessKeyId: The AWS Access Key Id you provided does "
        r"not exist in our records\.\)",
    ),
    "secret wrong": (
        dict(AWS_SECRET_ACCESS_KEY="wrong"),
        f"s3://{BUCKET}/a9a3k-*",
        r"{worker} cannot read it \(SignatureDoesNotMatch: The request signature we calculated "
        r"does not match the signature you provided\. .*\)",
    ),
    "secret wrong, one object": (
        dict(AWS_SECRET_ACCESS_KEY="wrong"),
        f"s3://{BUCKET}/a9a3k.train",
        r"{worker} cannot read it \(HTTP 403 Forbidden \(the store refused the credentials, or "
        r"their access to it\)\)",
    ),
    "bucket absent": (
        {},
        "s3://nosuchbucket/a9a3k.train",
        r"{worker} cannot read it \(NoSuchBucket: The specified bucket does not exist\)",
    ),
    "bucket absent, a glob": (
        {},
        "s3://nosuchbucket/a9a3k-*",
        r"{worker} cannot read it \(NoSuchBucket: The specified bucket does not exist\)",
    ),
    "key absent": (
        {},
        f"s3://{BUCKET}/nosuchkey.svm",
        r"{worker} cannot read it \(no such file there\)",
    ),
    "a glob matching nothing": (
        {},
        f"s3://{BUCKET}/nosuchkey-*",
        r"no file matches this pattern as seen from {worker} \(the workers read the examples "
        r"themselves, so the files must be visible to every worker under this URL\)",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_a_refusal_of_the_store_is_one_line(shards, s3_environment, case):
    """Planning the shards where the store refuses: one line naming the URL and the
    store's reason in its words."""
    from cpsvm.cluster.shards import plan_shards
    from cpsvm.errors import InputError

    settings, url, why = REFUSALS[case]
    s3_environment(**settings)
    with pytest.raises(InputError) as error:
        plan_shards(url, 2, 20.0)
    message = str(error.value)
    expected = re.escape(url) + ": " + why.replace("{worker}", "the Dask workers")
    assert re.fullmatch(expected, message), message


def leftovers(model):
    """What a run could leave behind: a temporary model file, a local cluster's scratch
    directory in $TMPDIR."""
    return [
        *glob.glob(str(model.parent / f".{model.name}.*")),
        *glob.glob(os.path.join(tempfile.gettempdir(), "cpsvm-dask-*")),
    ]


# (the in-process test above has every case's words; through the command, the workers'
# environment and a worker's listing of a bucket, each run a local cluster's start)
@pytest.mark.parametrize("case", ["credentials missing", "bucket absent, a glob"])
def test_cli_a_refusal_of_the_store_is_one_line_and_no_model(moto_s3, shards, tmp_path, case):
    """Through the command on a local cluster, whose worker has the command's AWS
    variables: one line naming the URL, the worker and why, exit 1, no model, nothing
    left behind."""
    settings, url, why = REFUSALS[case]
    model = tmp_path / "m"
    env = moto_s3.environment(**settings)
    r = command("ocas", "--scheduler", "local:1", "-c", "1", url, model, env=env)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1, r.stderr
    assert re.fullmatch(
        rf"ocas_learn: {re.escape(url)}: "
        + why.replace("{worker}", r"the Dask worker at tcp://\S+"),
        lines[0],
    ), lines[0]
    assert not model.exists() and leftovers(model) == []


def local_cluster_workers(pid):
    """The worker processes of the local cluster that the command ``pid`` started (the
    nannies' children, spawned by multiprocessing)."""
    from test_faults import _group_of, _members

    group = _group_of(pid)
    found = []
    for member in _members(group) if group else []:
        try:
            with open(f"/proc/{member}/cmdline", "rb") as f:
                if b"spawn_main" in f.read():
                    found.append(member)
        except OSError:
            continue
    return found


def learn_then(args, env, iterations, fault):
    """ocas_learn -v 2 ``args`` on local:2; once it has done ``iterations`` iterations,
    ``fault()``, then one of its workers killed (its nanny starts another, and the lost
    shard is read again); (exit status, stderr lines)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cpsvm.cli.ocas", "--scheduler", "local:2", "-v", "2", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(env, PYTHONPATH=str(ROOT)),
    )
    lines = []
    try:
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if re.match(rf"\s*{iterations}: tim=", line):
                break
        fault()
        workers = local_cluster_workers(proc.pid)
        assert workers, lines
        os.kill(workers[0], signal.SIGKILL)
        lines += proc.stderr.read().splitlines()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    return proc.returncode, lines


def assert_lost_with_the_model_so_far(status, lines, url, what, model, tmp_path):
    assert status == 1, lines
    assert not any("Traceback" in line for line in lines), lines
    assert re.fullmatch(
        rf"ocas_learn: lost a Dask worker, and reading its shard again failed: "
        rf"{url}: {what} after iteration \d+; the best model so far was written to "
        rf"{re.escape(str(model))}",
        lines[-1],
    ), lines[-1]
    classified = command("classify", SAMPLES / "a9a2k.test", model, tmp_path / "p", env=os.environ)
    assert classified.returncode == 0, classified.stderr
    assert leftovers(model) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_objects_overwritten_mid_run(moto_s3, tmp_path):
    """The objects overwritten mid-run (a digit changed in each, the size kept), then a
    worker lost: its shard, read again, is not the bytes first read (its stamp or its
    checksum). One line naming the object, exit 1, the best model so far written."""
    prefix = "overwritten/"
    put_shards(moto_s3, tmp_path, prefix)
    fs = moto_s3.file_system()

    def overwrite():
        for i in range(SHARDS):
            key = f"{BUCKET}/{prefix}a9a3k-{i}.svm"
            text = bytearray(fs.cat(key))
            at = text.index(b":", len(text) // 2) + 1  # a value's first character
            text[at : at + 1] = b"7" if text[at : at + 1] != b"7" else b"3"
            fs.pipe(key, bytes(text))

    model = tmp_path / "m.model"
    url = f"s3://{BUCKET}/{prefix}a9a3k-*"
    args = ["--worker-timeout", "20", "-c", "100", url, model]
    status, lines = learn_then(args, moto_s3.environment(), 3, overwrite)
    what = (
        r"changed since the run first read it \((its modification time changed|its content "
        r"changed \(checksum\))\); a shard must stay the same for the whole run"
    )
    shard = rf"s3://{BUCKET}/{prefix}a9a3k-\d\.svm"
    assert_lost_with_the_model_so_far(status, lines, shard, what, model, tmp_path)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_server_stopped_mid_run(tmp_path):
    """A server of its own, killed mid-run, then a worker lost: its shard cannot be read
    again. One line naming the object and the connection refused, exit 1, the best model
    so far written."""
    server = moto_s3_server(tmp_path / "moto.log")
    try:
        put_shards(server, tmp_path, "")

        def stop_server():
            server.proc.kill()
            server.proc.wait()

        model = tmp_path / "m.model"
        url = f"s3://{BUCKET}/a9a3k-*"
        # (boto's retries of a refused connection, a few seconds, cut to one attempt)
        env = server.environment(AWS_MAX_ATTEMPTS="1")
        args = ["--worker-timeout", "20", "-c", "100", url, model]
        status, lines = learn_then(args, env, 3, stop_server)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()
    port = server.endpoint.rsplit(":", 1)[1]
    what = (
        rf"the Dask worker at tcp://\S+ cannot read it \(ClientConnectorError: Cannot "
        rf"connect to host 127\.0\.0\.1:{port} .*\)"
    )
    shard = rf"s3://{BUCKET}/a9a3k-\d\.svm"
    assert_lost_with_the_model_so_far(status, lines, shard, what, model, tmp_path)


def test_no_s3_package_is_imported_without_an_s3_url(shards):
    """Planning and reading shards by path, or by file:// URL, imports nothing of s3fs or
    boto (their start-up is the s3:// URLs' alone); an s3:// URL imports s3fs."""
    local = shards[0]
    script = (
        "import sys\n"
        "from cpsvm.cluster.shards import plan_shards\n"
        f"plan_shards({local!r}, 2); plan_shards('file://' + {local!r}, 2)\n"
        "s3 = ('s3fs', 'botocore', 'aiobotocore', 'boto3')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in s3))\n"
        "from cpsvm.cluster import sources\n"
        "sources.file_system('s3://bucket/key')\n"
        "print('s3fs' in sys.modules)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[]", "True"]
