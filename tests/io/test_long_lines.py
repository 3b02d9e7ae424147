"""A line of many megabytes (a linear model's weights) is parsed in pieces on several
threads: the same dataset as the whole line parsed on one, the same error when a piece
does not read as part of one line. The pieces are made small here (LONG_LINE_PIECE)."""

import numpy as np
import pytest
from test_svmlight_io import assert_same_dataset

import cpsvm.io.svmlight as svmlight
from cpsvm.errors import InputError
from cpsvm.io.svmlight import parse_svmlight_bytes


@pytest.fixture
def pieces(monkeypatch):
    """Lines over 64 bytes cut into pieces of about 16, on two threads (whatever the
    machine has); the number of lines parsed in pieces."""
    calls = []
    split = svmlight._parse_long_line

    def counted(*args):
        part = split(*args)
        calls.append(part is not None)
        return part

    monkeypatch.setattr(svmlight, "LONG_LINE", 64)
    monkeypatch.setattr(svmlight, "LONG_LINE_PIECE", 16)
    monkeypatch.setattr(svmlight, "get_num_threads", lambda: 2)
    monkeypatch.setattr(svmlight, "_parse_long_line", counted)
    return calls


def whole(text: bytes, **options):
    """The text parsed with no line long enough to be cut."""
    saved = svmlight.LONG_LINE
    svmlight.LONG_LINE = 1 << 40
    try:
        return parse_svmlight_bytes(text, "f", keep_comments=True, **options)
    finally:
        svmlight.LONG_LINE = saved


def weights_line(rng, n, start=1, head="-0.5 qid:7 cost:2"):
    index = start + np.cumsum(rng.integers(1, 50, n)) - 1
    values = [f"{v:.17g}" if k % 3 else f"{v:.25f}" for k, v in enumerate(rng.standard_normal(n))]
    sep = [" ", "\t", "  "]
    return head + "".join(f"{sep[k % 3]}{i}:{v}" for k, (i, v) in enumerate(zip(index, values)))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("end", ["\n", "", " # the weights # with 5:3 in the comment\n"])
def test_pieces_equal_the_whole_line(pieces, seed, end):
    rng = np.random.default_rng(seed)
    text = (weights_line(rng, 300) + end).encode()
    got = parse_svmlight_bytes(text, "f", keep_comments=True)
    assert pieces == [True]
    assert got.X.nnz == 300
    assert_same_dataset(got, whole(text))


def test_wide_indices_in_a_later_piece(pieces):
    rng = np.random.default_rng(3)
    text = (weights_line(rng, 40) + " 3000000000:1.5 3000000001:2\n").encode()
    got = parse_svmlight_bytes(text, "f", keep_comments=True)
    assert pieces == [True] and got.X.indices.dtype == np.int64
    assert got.X[0, 2999999999] == 1.5
    assert_same_dataset(got, whole(text))


@pytest.mark.parametrize(
    "tail",
    [
        " 5:1",  # indices decreasing across a cut
        " 99999:1 bad 100000:1",  # a bad token in a later piece
        " 99999:1 qid:3 100000:1",  # a qid after features
        " 99999:1\n1 1:1",  # a second line
    ],
)
def test_what_a_piece_cannot_read_is_reported_as_for_the_whole_line(pieces, tail):
    rng = np.random.default_rng(4)
    text = (weights_line(rng, 200) + tail + " " + weights_line(rng, 50, 10**6, "") + "\n").encode()
    try:
        expected = whole(text)
    except InputError as e:
        with pytest.raises(InputError) as got:
            parse_svmlight_bytes(text, "f", keep_comments=True)
        assert (str(got.value), got.value.line) == (str(e), e.line)
    else:
        assert_same_dataset(parse_svmlight_bytes(text, "f", keep_comments=True), expected)
    assert pieces == [False]


def test_a_model_file_of_one_long_line(pieces, tmp_path):
    """read_model's linear weights, cut into pieces, equal the weights written."""
    from cpsvm.io.model_file import read_model, write_model
    from cpsvm.models import LinearModel

    w = np.random.default_rng(5).standard_normal(500)
    w[::7] = 0
    write_model(tmp_path / "m", LinearModel(w=w, b=0.25))
    model = read_model(tmp_path / "m")
    assert pieces == [True]
    np.testing.assert_array_equal(model.w, w)
    assert model.b == 0.25
