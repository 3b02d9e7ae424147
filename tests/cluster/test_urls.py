"""Shards named by fsspec URL (--scheduler): a real HTTP server on 127.0.0.1 (byte
ranges of one file read by range requests, a glob through its index page, a server
that drops the connection mid-file), file:// and memory:// give the model file of the
same shards by path; a store a worker cannot read is one line naming the file (and the
package it lacks, or the worker). In-process for the rules, through the command on a
real local cluster for the promise."""

import functools
import gzip
import http.server
import re
import threading

import pytest
from conftest import run_cli
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


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """A file server as object stores and web servers are: Content-Length, byte ranges
    (206), directory index pages; a path with 'cut' in it sends half of what it
    announced, then closes the connection."""

    protocol_version = "HTTP/1.1"
    requests = None  # (path, Range header) of every GET

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.requests.append((self.path, self.headers.get("Range")))
        path = self.translate_path(self.path)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except (IsADirectoryError, FileNotFoundError):
            return super().do_GET()  # an index page, or 404
        start, end, status = 0, len(data), 200
        wanted = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range") or "")
        if wanted:
            start = int(wanted.group(1))
            end = min(len(data), int(wanted.group(2)) + 1) if wanted.group(2) else len(data)
            status = 206
        body = data[start:end]
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(len(body)))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        self.end_headers()
        if "cut" in self.path:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.wfile.write(body)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A directory of shards, served over HTTP on 127.0.0.1: train.svm, parts/ (three
    files of its lines, the second gzipped), cut.svm (its bytes, served cut short)."""
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
    (root / "cut.svm").write_bytes(text)
    requests = []
    handler = functools.partial(
        type("Handler", (RangeHandler,), {"requests": requests}), directory=str(root)
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}", requests
    server.shutdown()
    server.server_close()


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
        file_shards(f"{base}/cut.svm", 2)
    message = str(error.value)
    assert message.startswith(f"{base}/cut.svm: the Dask workers cannot read it (")
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


def test_an_unknown_scheme_and_a_missing_url(site):
    _, base, _ = site
    with pytest.raises(InputError, match=r"unknown URL scheme nosuch://"):
        plan_shards("nosuch://x/train.svm", 2)
    with pytest.raises(InputError, match=r"cannot read it \(no such file there\)"):
        plan_shards(f"{base}/missing.svm", 2)
    with pytest.raises(InputError, match="no file matches this pattern"):
        plan_shards(f"{base}/parts/none-*.svm", 2)
    assert sources.is_url("s3://b/k") and not sources.is_url("/data/x.svm")


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
    for source in (f"{base}/cut.svm", "memory:///nowhere/train.svm"):
        model = tmp_path / "none.model"
        r = run_cli("ocas", "--scheduler", "local:2", source, model)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 1 and not model.exists() and len(lines) == 1, r.stderr
        assert re.match(
            rf"ocas_learn: {re.escape(source)}: the Dask worker at tcp://\S+ cannot read it",
            lines[0],
        ), lines
