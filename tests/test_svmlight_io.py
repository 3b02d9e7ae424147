"""The SVMlight reader/writer against scikit-learn's loader and on malformed input."""

import gzip
import io
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st
from sklearn.datasets import load_svmlight_file

from cpsvm.errors import InputError
from cpsvm.io.svmlight import (read_sequences, read_svmlight, write_sequences,
                               write_svmlight)


def assert_same_csr(A, B):
    assert A.shape == B.shape
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    np.testing.assert_array_equal(A.indptr, B.indptr)
    np.testing.assert_array_equal(A.indices, B.indices)
    np.testing.assert_array_equal(A.data, B.data)


@pytest.mark.parametrize("name", ["a9a3k.train", "a9a2k.test", "dna1k.train", "dna500.test",
                                  "ewt60.hmm.train", "ewt30.hmm.test"])
def test_samples_equal_sklearn(samples, name):
    ds = read_svmlight(samples / name)
    X, y = load_svmlight_file(str(samples / name), zero_based=False)
    assert_same_csr(ds.X, X)
    np.testing.assert_array_equal(ds.y, y)
    assert ds.X.dtype == np.float64 and ds.X.indices.dtype == np.int32


def test_qid_comments_cost_sid(tmp_path):
    f = tmp_path / "q.dat"
    f.write_text("# header comment\n\n"
                 "1 qid:3 cost:2.5 1:0.5 4:-2 # first one\n"
                 "-1 qid:3 sid:7 2:1e-3\t3:7 #\n"
                 "  0 qid:4 5:1\r\n")
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
    values = ["0.1", "3.141592653589793238462643", "1e-320", "-2.2250738585072014e-308",
              "123456789012345678901234567890", "9007199254740993", "1.7976931348623157e308",
              ".5", "5.", "+1E+05", "0", "-0"]
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
@given(st.integers(1, 30), st.integers(1, 40), st.floats(0.0, 1.0), st.integers(0, 2**31),
       st.booleans())
def test_write_read_round_trip(n, d, density, seed, with_qid):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=rng,
                  data_rvs=lambda k: rng.standard_normal(k) * 10.0 ** rng.integers(-30, 30, k))
    y = rng.choice([-1.0, 1.0, 2.5, 0.1], n)
    qid = rng.integers(0, 5, n) if with_qid else None
    import tempfile, os
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


@pytest.mark.parametrize("text, line, expected", [
    ("1 1:1\n1 2x\n", 2, "expected <index>:<value>"),
    ("1 1:abc\n", 1, "expected a number after ':'"),
    ("1 0:1\n", 1, "indices >= 1"),
    ("1 1:1\n\n1 3:1 2:1\n", 3, "strictly increasing"),
    ("1 2:1 2:1\n", 1, "strictly increasing"),
    ("1 1:nan\n", 1, "finite feature value"),
    ("1 1:inf\n", 1, "finite feature value"),
    ("1 1:1e999\n", 1, "finite number"),
    ("1 qid:x 1:1\n", 1, "integer qid"),
    ("1 qid:1.5 1:1\n", 1, "integer qid"),
    ("one 1:1\n", 1, "numeric target"),
    ("nan 1:1\n", 1, "finite target"),
    ("1 99999999999999999999:1\n", 1, "below 2^63"),
    ("1 -3:1\n", 1, "expected <index>:<value>"),
    ("1 1:\n", 1, "expected <index>:<value>"),
])
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
