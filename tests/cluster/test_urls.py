"""Shards named by fsspec URL (--scheduler): a real HTTP server on 127.0.0.1 (byte
ranges of one file read by range requests, a glob through its index page, a server
that drops the connection mid-file), file:// and memory:// give the model file of the
same shards by path; a store a worker cannot read is one line naming the file (and the
package it lacks, or the worker). In-process for the rules, through the command on a
real local cluster for the promise."""

import gzip
import os
import re

import pytest
from conftest import run_cli
from http_site import Site
from test_distributed import file_shards, make_binary, model_bytes

from cpsvm.cluster import sources
from cpsvm.cluster.shards import plan_shards
from cpsvm.cluster.solver import train_ocas
from cpsvm.errors import InputError
from cpsvm.io.svmlight import write_svmlight
from cpsvm.solvers.ocas import OcasParams

pytestmark = pytest.mark.usefixtures("own_tmpdir")  # tests/conftest.py

pytest.importorskip("fsspec")
pytest.importorskip("aiohttp")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A directory of shards, served over HTTP on 127.0.0.1 (tests/cluster/http_site.py,
    its hostile folders too): train.svm, parts/ (three files of its lines, the second
    gzipped); /cut/train.svm is its bytes cut short."""
    root = tmp_path_factory.mktemp("site")
    X, y = make_binary(n=900)
    write_svmlight(str(root / "train.svm"), X, y)
    text = (root / "train.svm").read_bytes()
    lines = text.splitlines(keepends=True)
    (root / "parts").mkdir()
    for i, (a, b) in enumerate([(0, 250), (250, 600), (600, len(lines))]):
        part = b"".join(lines[a:b])
        name = root / "parts" / (f"part-{i}.svm.gz" if i == 1 else f"part-{i}.svm")
        name.write_bytes(gzip.compress(part) if i == 1 else part)
    served = Site(root)
    yield root, served.base, served.requests
    served.close()


def trained(data, tmp_path, name):
    model, _ = train_ocas(data, OcasParams(C=1.0))
    return model_bytes(model, tmp_path, name)


def test_http_file_and_memory_urls_train_the_model_of_the_paths(site, tmp_path):
    """1, 2 and 3 byte ranges of one file by http:// (range requests from the middle of
    the file), file:// and memory://, and the glob of the parts through the server's
    index page, write the model of the same shards by path, byte for byte."""
    import fsspec

    root, base, requests = site
    reference = trained(file_shards(root / "train.svm", 1), tmp_path, "path")
    assert trained(file_shards(root / "parts" / "part-*.svm*", 1), tmp_path, "glob") == reference
    memory = fsspec.filesystem("memory")
    memory.pipe("/i40/train.svm", (root / "train.svm").read_bytes())
    try:
        for url in (f"{base}/train.svm", f"file://{root}/train.svm", "memory:///i40/train.svm"):
            for parts in (1, 2, 3):
                data = file_shards(url, parts)
                assert len(data.loaded) == parts
                assert {x["source"] for x in data.summaries} == {url}
                assert trained(data, tmp_path, "url") == reference, (url, parts)
    finally:
        memory.rm("/i40", recursive=True)
    ranges = [r for path, r in requests if path == "/train.svm" and r]
    assert any(not r.startswith("bytes=0-") for r in ranges), ranges
    data = file_shards(f"{base}/parts/part-*.svm*", 1)
    assert data.n_files == 3
    assert [x["source"] for x in data.summaries] == [
        f"{base}/parts/part-{i}.svm{'.gz' if i == 1 else ''}" for i in range(3)
    ]
    assert trained(data, tmp_path, "http-glob") == reference


def test_a_connection_dropped_mid_file_is_one_line_naming_it(site):
    """The server closes the connection halfway through a file: the reader's error
    names the URL and the worker; nothing is returned."""
    _, base, _ = site
    with pytest.raises(InputError) as error:
        file_shards(f"{base}/cut/train.svm", 2)
    message = str(error.value)
    assert message.startswith(f"{base}/cut/train.svm: the Dask workers cannot read it (")
    assert "\n" not in message


@pytest.mark.parametrize(
    "url, package",
    [("s3://bucket/train-*.svm.gz", "s3fs"), ("gs://bucket/train.svm", "gcsfs"),
     ("hdfs://namenode/train.svm", "pyarrow")],
)  # fmt: skip
def test_a_store_without_its_package_names_the_package(url, package):
    """The worker lacks the store's package: the line names it and how to install it."""
    import importlib.util

    if importlib.util.find_spec(package) is not None:
        pytest.skip(f"{package} is installed")
    with pytest.raises(InputError) as error:
        plan_shards(url, 2)
    scheme = url.split(":")[0]
    assert str(error.value) == (
        f"{url}: the Dask workers cannot read {scheme}:// URLs: {package} is not installed "
        f"there (pip install {package})"
    )


def test_an_unknown_scheme_and_a_missing_pattern(site):
    _, base, _ = site
    with pytest.raises(InputError, match=r"unknown URL scheme nosuch://"):
        plan_shards("nosuch://x/train.svm", 2)
    with pytest.raises(InputError, match="no file matches this pattern"):
        plan_shards(f"{base}/parts/none-*.svm", 2)
    assert sources.is_url("s3://b/k") and not sources.is_url("/data/x.svm")


TIMEOUT = 2.0  # the worker timeout of the hostile servers' cases


@pytest.mark.parametrize(
    "path, why",
    [
        ("missing.svm", r"HTTP 404 File not found"),
        ("error/train.svm", r"HTTP 500 Internal Server Error"),
        ("loop/train.svm", r"HTTP 302 Found: too many redirects \(a redirect loop\?\)"),
        ("mute/train.svm", rf"no complete answer within {TIMEOUT:g} s \(--worker-timeout\)"),
        ("slow/train.svm", rf"no complete answer within {TIMEOUT:g} s \(--worker-timeout\)"),
        ("lying/train.svm", rf"no complete answer within {TIMEOUT:g} s \(--worker-timeout\)"),
    ],
)
def test_a_failing_server_is_one_line_with_its_status_within_the_timeout(site, path, why):
    """A missing file (404), a server error (500), a redirect loop, a server that never
    answers, one that sends a byte a second, one whose Content-Length exceeds its body
    on a connection kept open: planning the shards ends with one line naming the URL
    and the status (or the bound that ran out), within a few worker timeouts. The error
    travels from a worker as itself (Dask's own message of it, not a traceback)."""
    import time

    from distributed.core import error_message
    from distributed.protocol import pickle

    _, base, _ = site
    url = f"{base}/{path}"
    started = time.monotonic()
    with pytest.raises(InputError) as error:
        plan_shards(url, 2, TIMEOUT)
    assert time.monotonic() - started < 3 * TIMEOUT + 2
    assert re.fullmatch(
        rf"{re.escape(url)}: the Dask workers cannot read it \({why}\)", str(error.value)
    )
    travelled = pickle.loads(error_message(error.value)["exception"].data)
    assert type(travelled) is InputError and str(travelled) == str(error.value)


def test_a_store_that_trickles_is_cut_at_the_timeout():
    """A store that gives a byte at a time, each quickly: a block not read within the
    worker timeout ends the read (one line), as a server sending nothing does."""
    import io
    import time

    class Trickle(io.RawIOBase):
        def readinto(self, b):
            time.sleep(0.05)
            b[:1] = b"1"
            return 1

    reader = sources.Reader(Trickle(), "http://127.0.0.1:9/x.svm", timeout=0.3)
    with pytest.raises(InputError) as error:
        while reader.readinto(bytearray(64)):
            pass
    assert re.fullmatch(
        r"http://127.0.0.1:9/x.svm: the Dask workers cannot read it \(too slow: \d+ bytes in "
        r"0\.\d s, fewer than 4 MiB within 0.3 s \(--worker-timeout\)\)",
        str(error.value),
    ), str(error.value)
    assert 0.3 < reader._block[1] < 1.0


@pytest.mark.parametrize("how", ["gzip", "nolength", "noranges"])
def test_a_response_of_no_known_length_is_read_whole(site, tmp_path, how):
    """``Content-Encoding: gzip`` (the length is the encoding's), no Content-Length, or
    no range requests: the response is read as a stream, whole, one shard, and trains
    the path's model."""
    root, base, _ = site
    reference = trained(file_shards(root / "train.svm", 1), tmp_path, "path")
    data = file_shards(f"{base}/{how}/train.svm", 2)
    assert len(data.loaded) == 1 and data.n_examples == 900
    assert trained(data, tmp_path, how) == reference


def test_cli_by_url_on_a_cluster(site, tmp_path):
    """ocas_learn --scheduler local:2 with an http:// file (two byte ranges, one per
    worker) and the http:// glob of the parts writes the model of the path; a file://
    URL too. A connection dropped mid-file, and a memory:// URL (the workers' memory
    holds no such file), end with one line naming the file and the worker, no model."""
    root, base, _ = site
    runs = {
        "path": root / "train.svm",
        "http": f"{base}/train.svm",
        "glob": f"{base}/parts/part-*.svm*",
        "file": f"file://{root}/train.svm",
    }
    for name, source in runs.items():
        r = run_cli("ocas", "--scheduler", "local:2", source, tmp_path / f"{name}.model")
        assert r.returncode == 0, r.stderr
    models = {(tmp_path / f"{name}.model").read_bytes() for name in runs}
    assert len(models) == 1
    for source in (f"{base}/cut/train.svm", "memory:///nowhere/train.svm"):
        model = tmp_path / "none.model"
        r = run_cli("ocas", "--scheduler", "local:2", source, model)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 1 and not model.exists() and len(lines) == 1, r.stderr
        assert re.match(
            rf"ocas_learn: {re.escape(source)}: the Dask worker at tcp://\S+ cannot read it",
            lines[0],
        ), lines


@pytest.mark.parametrize(
    "path, why",
    [
        ("missing.svm", r"HTTP 404 File not found"),
        ("slow/train.svm", r"no complete answer within 3 s \(--worker-timeout\)"),
    ],
)
def test_cli_a_failing_server_is_one_line_within_the_worker_timeout(site, tmp_path, path, why):
    """Through the command on a local cluster: a missing file, and a server that sends a
    byte a second, end with one line naming the URL, the worker and the status (not
    Dask's traceback of it), exit 1, no model, within --worker-timeout of reading (the
    cluster's start aside)."""
    import glob
    import tempfile
    import time

    _, base, _ = site
    url = f"{base}/{path}"
    model = tmp_path / "m"
    scratch = os.path.join(tempfile.gettempdir(), "cpsvm-dask-*")
    before = set(glob.glob(scratch))
    started = time.monotonic()
    r = run_cli("ocas", "--scheduler", "local:2", "--worker-timeout", "3", "-c", "1", url, model)
    assert time.monotonic() - started < 60
    assert r.returncode == 1 and not model.exists(), r.stderr
    assert set(glob.glob(scratch)) == before  # the local cluster's scratch space gone
    assert not list(tmp_path.glob(".m.*"))  # no temporary model file
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert re.fullmatch(
        rf"ocas_learn: {re.escape(url)}: the Dask worker at tcp://\S+ cannot read it \({why}\)",
        lines[0],
    ), lines


def test_cli_standard_input_is_refused_before_the_cluster_starts(tmp_path):
    """'-' with --scheduler: one line (a usage error, exit 2), no cluster started."""
    model = tmp_path / "m"
    for command in ("ocas", "learn"):
        r = run_cli(command, "--scheduler", "local:2", "-c", "1", "-", model, stdin="1 1:1\n")
        assert r.returncode == 2 and not model.exists(), r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "standard input (-) cannot be sharded to a cluster" in lines[0]
