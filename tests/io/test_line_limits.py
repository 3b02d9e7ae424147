"""A line longer than LINE_LIMIT, a NUL byte where no line ends, and a number longer than
NUMBER_LIMIT are refused with their line, before their bytes fill the memory: the limits
are made small here, and the endless streams are counted, never stored."""

import io

import numpy as np
import pytest

import cpsvm.io.streams as streams
import cpsvm.io.svmlight as svmlight
from cpsvm.errors import InputError
from cpsvm.io.streams import InputStream
from cpsvm.io.svmlight import parse_svmlight_bytes, parse_svmlight_stream, stream_blocks

LIMIT = 4096


class Endless(io.RawIOBase):
    """``head``, then ``fill`` bytes for ever (the end, when ``fill`` is empty); counts
    what was read."""

    def __init__(self, head: bytes, fill: bytes):
        self.head, self.fill, self.read_bytes = head, fill, 0

    def readable(self):
        return True

    def readinto(self, b):
        n = len(b)
        data = self.head[:n]
        self.head = self.head[n:]
        data += self.fill * (n - len(data))
        b[: len(data)] = data
        self.read_bytes += len(data)
        return len(data)


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setattr(streams, "LINE_LIMIT", LIMIT)


def parse_stream(raw, block_size=256):
    with InputStream("endless", raw) as text:
        return parse_svmlight_stream(
            stream_blocks(text.readinto, block_size),
            "endless",
            first_line=1,
            n_features=None,
            zero_based=False,
            keep_comments=False,
            allow_empty=False,
        )


def test_an_endless_line_is_refused_with_its_line(small_limit):
    raw = Endless(b"1 1:1\n-1 2:1\n1 3:", b"5")
    with pytest.raises(InputError) as refused:
        parse_stream(raw)
    assert str(refused.value) == (
        "endless:3: expected a line of at most 4096 bytes (the limit on a line's length), "
        "found a longer one"
    )
    assert raw.read_bytes <= 2 * LIMIT


def test_a_line_at_the_limit_is_read(small_limit):
    line = b"1 1:0." + b"5" * (LIMIT - 6)
    data = parse_svmlight_bytes(b"-1 2:1\n" + line + b"\n", "f")
    with InputStream("endless", Endless(b"-1 2:1\n" + line + b"\n", b"")) as text:
        streamed = parse_svmlight_stream(
            stream_blocks(text.readinto, 256),
            "f",
            first_line=1,
            n_features=None,
            zero_based=False,
            keep_comments=False,
            allow_empty=False,
        )
    assert streamed.X.shape == data.X.shape == (2, 2)
    assert np.array_equal(streamed.X.data, data.X.data)


def test_nul_bytes_without_a_line_end_are_not_text():
    """/dev/zero and /dev/full: refused at the first block, whatever the limit."""
    raw = Endless(b"1 1:1\n", b"\0")
    with pytest.raises(InputError, match=r"^endless:2: expected text, found a NUL byte"):
        parse_stream(raw)
    assert raw.read_bytes <= 2 * 256


def test_an_earlier_error_is_reported_first(small_limit):
    raw = Endless(b"1 1:1\nx 1:1\n" + b"1 1:1\n" * 100, b"7")
    with pytest.raises(InputError, match=r"^endless:2: expected a numeric target"):
        parse_stream(raw, block_size=64)


def test_read_all_refuses_an_endless_line_and_nul_bytes(small_limit):
    with InputStream("m", Endless(b"SVM-light\nb\n", b"x")) as f:
        with pytest.raises(InputError, match=r"^m:3: expected a line of at most 4096 bytes"):
            f.read_all()
    with InputStream("m", Endless(b"a\nb\nc", b"\0")) as f:
        with pytest.raises(InputError, match=r"^m:3: expected text, found a NUL byte"):
            f.read_all()


def test_the_documented_limits():
    assert streams.LINE_LIMIT == 1 << 30 and streams.line_limit_text() == "1 GiB"
    assert svmlight.NUMBER_LIMIT == 4096


def test_a_number_longer_than_the_limit_is_refused():
    long = "0." + "1" * 5000
    text = f"1 1:1\n-1 1:0.5 2:{long}\n".encode()
    with pytest.raises(InputError) as refused:
        parse_svmlight_bytes(text, "f")
    assert str(refused.value).startswith(
        "f:2: expected a number of at most 4096 characters (the limit on a number's "
        "length), got one of 5002: '0.1111"
    )


def test_long_numbers_within_the_limit_convert_exactly(monkeypatch):
    """printf's %f of large doubles (hundreds of digits), converted in chunks of few
    cells: each equals Python's float of its text."""
    monkeypatch.setattr(svmlight, "_SLOW_CELLS", 1000)
    rng = np.random.default_rng(0)
    values = [f"{v:f}" for v in 10.0 ** rng.uniform(-300, 300, 50)]
    values += [f"{v:.60f}" for v in rng.standard_normal(20)]
    assert max(map(len, values)) > 300
    text = "".join(f"{1 - 2 * (k % 2)} 1:{v}\n" for k, v in enumerate(values)).encode()
    data = parse_svmlight_bytes(text, "f")
    assert data.X.data.tolist() == [float(v) for v in values]
