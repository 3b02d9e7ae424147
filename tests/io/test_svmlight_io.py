"""The SVMlight reader/writer against scikit-learn's loader and on malformed input."""

import bz2
import gzip
import io
import lzma
import re
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_svmlight_file

from cpsvm.errors import InputError
from cpsvm.io.svmlight import (
    parse_svmlight_bytes,
    read_sequences,
    read_svmlight,
    write_sequences,
    write_svmlight,
)


def assert_same_csr(A, B):
    assert A.shape == B.shape
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    np.testing.assert_array_equal(A.indptr, B.indptr)
    np.testing.assert_array_equal(A.indices, B.indices)
    np.testing.assert_array_equal(A.data, B.data)


@pytest.mark.parametrize(
    "name",
    [
        "a9a3k.train",
        "a9a2k.test",
        "dna1k.train",
        "dna500.test",
        "ewt60.hmm.train",
        "ewt30.hmm.test",
    ],
)
def test_samples_equal_sklearn(samples, name):
    ds = read_svmlight(samples / name)
    X, y = load_svmlight_file(str(samples / name), zero_based=False)
    assert_same_csr(ds.X, X)
    np.testing.assert_array_equal(ds.y, y)
    assert ds.X.dtype == np.float64 and ds.X.indices.dtype == np.int32


def test_qid_comments_cost_sid(tmp_path):
    f = tmp_path / "q.dat"
    f.write_text(
        "# header comment\n\n"
        "1 qid:3 cost:2.5 1:0.5 4:-2 # first one\n"
        "-1 qid:3 sid:7 2:1e-3\t3:7 #\n"
        "  0 qid:4 5:1\r\n"
    )
    ds = read_svmlight(f, keep_comments=True)
    # scikit-learn knows no cost:/sid: tokens; it reads the same file without them.
    plain = tmp_path / "plain.dat"
    plain.write_text(f.read_text().replace("cost:2.5 ", "").replace("sid:7 ", ""))
    X, y, q = load_svmlight_file(str(plain), zero_based=False, query_id=True)
    assert_same_csr(ds.X, X)
    np.testing.assert_array_equal(ds.y, y)
    np.testing.assert_array_equal(ds.qid, q)
    assert ds.comments == ["first one", "", ""]
    np.testing.assert_array_equal(ds.cost, [2.5, 1, 1])
    np.testing.assert_array_equal(ds.sid, [0, 7, 0])
    np.testing.assert_array_equal(ds.line_numbers, [3, 4, 5])
    assert read_svmlight(f).qid is not None and read_svmlight(f).comments is None


def test_long_numbers_are_correctly_rounded(tmp_path):
    values = [
        "0.1",
        "3.141592653589793238462643",
        "1e-320",
        "-2.2250738585072014e-308",
        "123456789012345678901234567890",
        "9007199254740993",
        "1.7976931348623157e308",
        ".5",
        "5.",
        "+1E+05",
        "0",
        "-0",
    ]
    f = tmp_path / "n.dat"
    f.write_text("".join(f"1 1:{v}\n" for v in values))
    ds = read_svmlight(f)
    np.testing.assert_array_equal(ds.X.toarray()[:, 0], [float(v) for v in values])


def test_zero_based_and_n_features(tmp_path):
    f = tmp_path / "z.dat"
    f.write_text("1 0:1 3:2\n-1 1:4\n")
    ds = read_svmlight(f, zero_based=True, n_features=10)
    X, _ = load_svmlight_file(str(f), zero_based=True, n_features=10)
    assert_same_csr(ds.X, X)
    with pytest.raises(InputError, match="dimension 3"):
        read_svmlight(f, zero_based=True, n_features=3)


def test_gzip_and_stdin(samples, tmp_path, monkeypatch):
    raw = (samples / "dna500.test").read_bytes()
    gz = tmp_path / "d.gz"
    gz.write_bytes(gzip.compress(raw))
    ref = read_svmlight(samples / "dna500.test")
    assert_same_csr(read_svmlight(gz).X, ref.X)

    class FakeStdin:
        buffer = io.BytesIO(raw)

    monkeypatch.setattr(sys, "stdin", FakeStdin)
    ds = read_svmlight("-")
    assert_same_csr(ds.X, ref.X)
    assert ds.source == "<stdin>"


def test_wide_indices(tmp_path):
    f = tmp_path / "w.dat"
    f.write_text("1 5:1 3000000000:2\n")
    ds = read_svmlight(f)
    assert ds.X.indices.dtype == np.int64 and ds.X.shape == (1, 3000000000)
    assert ds.X[0, 2999999999] == 2


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 30),
    st.integers(1, 40),
    st.floats(0.0, 1.0),
    st.integers(0, 2**31),
    st.booleans(),
)
def test_write_read_round_trip(n, d, density, seed, with_qid):
    rng = np.random.default_rng(seed)
    X = sp.random(
        n,
        d,
        density=density,
        format="csr",
        random_state=rng,
        data_rvs=lambda k: rng.standard_normal(k) * 10.0 ** rng.integers(-30, 30, k),
    )
    y = rng.choice([-1.0, 1.0, 2.5, 0.1], n)
    qid = rng.integers(0, 5, n) if with_qid else None
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r.dat")
        write_svmlight(path, X, y, qid=qid)
        ds = read_svmlight(path, n_features=d)
        Xs, ys = load_svmlight_file(path, zero_based=False, n_features=d)
    X.eliminate_zeros()
    assert_same_csr(ds.X, X)
    assert_same_csr(Xs, X)
    np.testing.assert_array_equal(ds.y, y)
    np.testing.assert_array_equal(ys, y)
    if with_qid:
        np.testing.assert_array_equal(ds.qid, qid)


def test_sequences(samples, tmp_path):
    seqs = read_sequences(samples / "ewt60.hmm.train")
    assert seqs.n_sequences == 60
    assert seqs.starts[0] == 0 and seqs.starts[-1] == seqs.n_tokens
    assert np.all(np.diff(seqs.starts) > 0)
    assert seqs.comments[0] == "What" or len(seqs.comments[0]) > 0
    out = tmp_path / "s.dat"
    write_sequences(out, seqs)
    again = read_sequences(out)
    assert_same_csr(again.X, seqs.X)
    np.testing.assert_array_equal(again.tags, seqs.tags)
    np.testing.assert_array_equal(again.starts, seqs.starts)
    assert again.comments == seqs.comments


@pytest.mark.parametrize(
    "text, line, expected",
    [
        ("1 1:1\n1 2x\n", 2, "expected <index>:<value>"),
        ("1 1:abc\n", 1, "expected a number after ':'"),
        ("1 0:1\n", 1, "indices >= 1"),
        ("1 1:1\n\n1 3:1 2:1\n", 3, "strictly increasing"),
        ("1 2:1 2:1\n", 1, "strictly increasing"),
        ("1 1:nan\n", 1, "finite feature value"),
        ("1 1:inf\n", 1, "finite feature value"),
        ("1 1:-Infinity\n", 1, "finite feature value"),
        ("1 1:infxxxxx\n", 1, "expected a number after ':'"),
        ("1 1:1e999\n", 1, "finite number"),
        ("1 qid:x 1:1\n", 1, "integer qid"),
        ("1 qid:1.5 1:1\n", 1, "integer qid"),
        ("one 1:1\n", 1, "numeric target"),
        ("nan 1:1\n", 1, "finite target"),
        ("1 99999999999999999999:1\n", 1, "below 2^63"),
        ("1 -3:1\n", 1, "expected <index>:<value>"),
        ("1 1:\n", 1, "expected <index>:<value>"),
    ],
)
def test_malformed_lines(tmp_path, text, line, expected):
    f = tmp_path / "bad.dat"
    f.write_text(text)
    with pytest.raises(InputError) as err:
        read_svmlight(f)
    assert str(err.value).startswith(f"{f}:{line}: ")
    assert expected in str(err.value)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_svmlight(tmp_path / "nope")
    empty = tmp_path / "empty"
    empty.write_text("# only a comment\n\n")
    with pytest.raises(InputError, match="at least one example"):
        read_svmlight(empty)


def test_sequence_errors(tmp_path):
    f = tmp_path / "s.dat"
    f.write_text("1 qid:2 1:1\n2 qid:1 1:1\n")
    with pytest.raises(InputError, match=r"s.dat:2: .*non-decreasing"):
        read_sequences(f)
    f.write_text("1 1:1\n")
    with pytest.raises(InputError, match="qid"):
        read_sequences(f)
    f.write_text("1 qid:1 1:1\n1.5 qid:1 1:1\n")
    with pytest.raises(InputError, match=r":2: expected an integer tag"):
        read_sequences(f)


# --- compressed input, recognised by magic bytes ------------------------------------------

COMPRESSORS = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_compressed_files_and_stdin(samples, tmp_path, monkeypatch, kind):
    raw = (samples / "dna500.test").read_bytes()
    packed = COMPRESSORS[kind](raw)
    X, y = load_svmlight_file(str(samples / "dna500.test"), zero_based=False)
    # Whatever the name says: a .txt, and a name claiming another compression.
    for name in ("data.txt", "data.gz" if kind != "gzip" else "data.bz2"):
        f = tmp_path / name
        f.write_bytes(packed)
        ds = read_svmlight(f, block_size=1000)
        assert_same_csr(ds.X, X)
        np.testing.assert_array_equal(ds.y, y)

    class FakeStdin:
        buffer = io.BytesIO(packed)

    monkeypatch.setattr(sys, "stdin", FakeStdin)
    ds = read_svmlight("-")
    assert_same_csr(ds.X, X)
    assert ds.source == "<stdin>"


def test_concatenated_gzip_members(tmp_path):
    f = tmp_path / "two.gz"
    f.write_bytes(gzip.compress(b"1 1:1\n") + gzip.compress(b"-1 2:2\n"))
    ds = read_svmlight(f)
    np.testing.assert_array_equal(ds.X.toarray(), [[1, 0], [0, 2]])


def corrupt(packed):
    mid = len(packed) // 2
    return packed[:mid] + bytes(b ^ 0x5A for b in packed[mid : mid + 64]) + packed[mid + 64 :]


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
@pytest.mark.parametrize("damage", ["corrupt", "truncated"])
def test_damaged_compressed_input(samples, tmp_path, kind, damage):
    packed = COMPRESSORS[kind]((samples / "dna1k.train").read_bytes())
    f = tmp_path / "bad.dat"
    f.write_bytes(corrupt(packed) if damage == "corrupt" else packed[: len(packed) * 2 // 3])
    with pytest.raises(InputError) as err:
        read_svmlight(f)
    message = str(err.value)
    assert message.startswith(f"{f}: expected a valid {kind} stream")
    assert "\n" not in message and len(message) < 300


def test_corrupt_bz2_from_the_command_line(cli, samples, fixtures, tmp_path):
    bad = tmp_path / "test.bz2"
    bad.write_bytes(corrupt(COMPRESSORS["bzip2"]((samples / "a9a2k.test").read_bytes())))
    run = cli("classify", bad, fixtures / "a9a3k.perf_linear.model", tmp_path / "pred")
    assert run.returncode == 1
    assert run.stderr.splitlines() == [run.stderr.strip()]
    assert run.stderr.startswith(f"cp_classify: {bad}: expected a valid bzip2 stream")
    assert not (tmp_path / "pred").exists()


# --- parsing in blocks --------------------------------------------------------------------


def mixed_text(seed, n_lines=300):
    """Lines of every shape the grammar allows: comments, blank lines, qid/sid/cost, CRLF,
    tabs, long lines, numbers beyond the exact fast path."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n_lines):
        r = rng.random()
        if r < 0.05:
            lines.append("# a comment line: 1:2 3:4")
            continue
        if r < 0.08:
            lines.append(" \t")
            continue
        parts = [rng.choice(["1", "-1", "+1", "0", "2.5", "-0.125", "3.14159265358979323846"])]
        if rng.random() < 0.3:
            parts.append(f"qid:{rng.integers(0, 9)}")
        if rng.random() < 0.2:
            parts.append(f"sid:{rng.integers(1, 5)}")
        if rng.random() < 0.2:
            parts.append(f"cost:{rng.choice(['2', '0.5', '1.00000000000000000001'])}")
        k = rng.integers(0, 400 if rng.random() < 0.05 else 12)
        idx = np.sort(rng.choice(1000, size=k, replace=False)) + 1
        for j in idx:
            v = rng.choice(
                [
                    f"{rng.standard_normal():.6g}",
                    "1",
                    "0",
                    f"{rng.standard_normal():.25f}",
                    "1e-320",
                    "7e22",
                    "-3E+05",
                ]
            )
            parts.append(f"{j}:{v}")
        line = (" " if rng.random() < 0.5 else "\t").join(parts)
        if rng.random() < 0.3:
            line += f" # note {i}: x"
        lines.append(line)
    ends = rng.choice(["\n", "\r\n"], size=len(lines))
    return "".join(l + e for l, e in zip(lines, ends))


def assert_same_dataset(a, b):
    assert_same_csr(a.X, b.X)
    assert a.X.indices.dtype == b.X.indices.dtype and a.X.indptr.dtype == b.X.indptr.dtype
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.line_numbers, b.line_numbers)
    assert a.comments == b.comments
    for key in ("qid", "sid", "cost"):
        u, v = getattr(a, key), getattr(b, key)
        assert (u is None) == (v is None), key
        if u is not None:
            np.testing.assert_array_equal(u, v)


@pytest.fixture
def tiny_capacities(monkeypatch):
    """Start every array of the reader tiny, so that each of them grows many times."""
    import cpsvm.io.svmlight as m

    monkeypatch.setattr(m, "_INITIAL_ROWS", 1)
    monkeypatch.setattr(m, "_INITIAL_NNZ", 1)
    monkeypatch.setattr(m, "_TEXT_BYTES_PER_ROW", 1 << 40)  # a block's arrays start at 1
    monkeypatch.setattr(m, "_TEXT_BYTES_PER_NONZERO", 1 << 40)


@pytest.fixture(params=[1, 2], ids=["1-thread", "2-threads"])
def parse_threads(request):
    """Blocks parsed one at a time, and two at once on threads (appended in order)."""
    from cpsvm.threads import max_threads, thread_count

    with thread_count(min(request.param, max_threads())):
        yield


@pytest.mark.parametrize("seed", [0, 1])
def test_blocks_equal_whole_buffer(tmp_path, seed, tiny_capacities, parse_threads):
    text = mixed_text(seed)
    if seed == 1:
        text = text.rstrip("\r\n")  # a last line without its newline
    f = tmp_path / "m.dat"
    f.write_bytes(text.encode())
    whole = parse_svmlight_bytes(
        text.encode(), str(f), keep_comments=True, block_size=len(text) + 1
    )
    for block_size in (1, 2, 3, 5, 17, 64, 1000, 1 << 20):
        assert_same_dataset(read_svmlight(f, keep_comments=True, block_size=block_size), whole)
    # Independent references: scikit-learn for X and y (without the tokens it lacks; its
    # query ids skip lines without qid:), the text itself for qid, sid, cost and comments.
    plain = tmp_path / "plain.dat"
    plain.write_bytes(re.sub(r"(qid|sid|cost):\S+", "", text).encode())
    X, y = load_svmlight_file(str(plain), zero_based=False, n_features=whole.n_features)
    assert_same_csr(whole.X, X)
    np.testing.assert_array_equal(whole.y, y)
    lines = [
        l for l in text.replace("\r\n", "\n").split("\n") if l.strip() and not l.startswith("#")
    ]

    def token(key, default, line):
        m = re.search(key + r":(\S+)", line.split("#")[0])
        return float(m.group(1)) if m else default

    for key, default in (("qid", 0), ("sid", 0), ("cost", 1.0)):
        np.testing.assert_array_equal(getattr(whole, key), [token(key, default, l) for l in lines])
    assert whole.comments == [l.partition("#")[2].strip() for l in lines]


def test_wide_indices_in_a_later_block(tmp_path, tiny_capacities, parse_threads):
    f = tmp_path / "w.dat"
    f.write_text("".join(f"1 {i + 1}:{i}\n" for i in range(50)) + "-1 2:1 3000000000:2\n")
    ds = read_svmlight(f, block_size=16)
    assert ds.X.indices.dtype == np.int64 and ds.X.shape == (51, 3000000000)
    assert ds.X[50, 2999999999] == 2 and ds.X[49, 49] == 49
    assert_same_dataset(ds, parse_svmlight_bytes(f.read_bytes(), str(f), block_size=1 << 20))


@pytest.mark.parametrize(
    "bad, expected",
    [
        ("1 3:1 2:1", "strictly increasing"),
        ("1 1:1e999", "finite number"),
        ("2 qid:1 cost:1e999 1:1", "finite number"),
        ("1e999 1:1", "finite number"),
        ("1 4:" + "9" * 400, "finite number"),
        ("1 4:" + "9" * 5000, "a number of at most 4096 characters"),
        ("1 1:1 junk", "expected <index>:<value>"),
    ],
)
@pytest.mark.parametrize("block_size", [1, 10, 100, 1 << 20])
def test_error_line_numbers_across_blocks(tmp_path, bad, expected, block_size, parse_threads):
    good = "".join(f"+1 qid:2 {i % 7 + 1}:0.{i}\r\n" if i % 5 else "# c\n\n" for i in range(1, 120))
    f = tmp_path / "e.dat"
    f.write_text(good + bad + "\n" + "1 3:y\n", newline="")
    with pytest.raises(InputError) as err:
        read_svmlight(f, block_size=block_size)
    assert str(err.value).startswith(f"{f}:{good.count(chr(10)) + 1}: ")
    assert expected in str(err.value)


def test_long_bad_token_is_shortened(tmp_path):
    f = tmp_path / "long.dat"
    f.write_text("1 1:1 " + "x" * 100000 + "\n")
    with pytest.raises(InputError) as err:
        read_svmlight(f)
    assert len(str(err.value)) < 250 and "xxxx" in str(err.value)


def test_long_mantissas_are_exact_beside_pythons_float():
    """Values of 17 to 19 significant digits (the repr of most floats, what Python writers
    produce) take the parser's Eisel-Lemire path: each equals Python's float of its text,
    halfway cases (ties to even) and extreme exponents included."""
    rng = np.random.default_rng(5)
    values = rng.standard_normal(20000) * 10.0 ** rng.integers(-300, 300, 20000)
    texts = [repr(float(v)) for v in values]
    mantissas = rng.integers(10**16, 10**18, 5000, dtype=np.int64)
    texts += [f"{m}e{q}" for m, q in zip(mantissas.tolist(), rng.integers(-340, 290, 5000))]
    texts += [
        "9007199254740993",  # integers beyond 2^53 halfway between two doubles
        "9007199254740995",
        "97132493882994390e-1",
        "2.2250738585072014e-308",  # the range's ends
        "1.7976931348623157e308",
        "4.9406564584124654e-324",
        "1234567890123456789e-19",
    ]
    raw = "".join(f"1 1:{t}\n" for t in texts).encode()
    parsed = parse_svmlight_bytes(raw, "long").X.toarray().ravel()
    assert parsed.tolist() == [float(t) for t in texts]
