"""The SVMlight parser fuzzed: arbitrary bytes and near-valid lines either parse exactly as
a slow pure-Python reader of the same grammar does, or fail with an InputError naming the
same line. Nothing else may happen: no other exception, no hang."""

import contextlib
import faulthandler
import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpsvm.errors import InputError
from cpsvm.io.svmlight import parse_svmlight_bytes

# --- the reference: SVMlight's grammar read the slow, obvious way --------------------------

BLANKS = b" \t\r\x0b\x0c"  # what separates tokens within a line
NUMBER = re.compile(rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
INTEGER = re.compile(rb"[+-]?\d+")
INT64_MAX = 2**63 - 1


class Bad(Exception):
    pass


def number(token):
    if not NUMBER.fullmatch(token):
        raise Bad
    value = float(token)
    if not math.isfinite(value):
        raise Bad
    return value


def reference(raw, zero_based):
    """(indptr, indices, data, y, qid, sid, cost, comments, line numbers) or the number of
    the first line that is not an example, a comment or blank. A UTF-8 byte-order mark
    starting the text is skipped; a UTF-16 one refuses line 1."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return 1
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    indptr, indices, data, y, qid, sid, cost, comments, lines = [0], [], [], [], [], [], [], [], []
    for line_no, line in enumerate(raw.split(b"\n"), 1):
        content, _, comment = line.partition(b"#")
        tokens = re.split(b"[" + re.escape(BLANKS) + b"]+", content.strip(BLANKS))
        if tokens == [b""]:
            continue
        try:
            label = number(tokens[0])
            q, s, c, row = 0, 0, 1.0, []
            for token in tokens[1:]:
                key, colon, value = token.partition(b":")
                if not colon or not key or not value:
                    raise Bad
                if key[:1].isdigit():
                    if not key.isdigit() or int(key) > INT64_MAX - zero_based:
                        raise Bad
                    index = int(key) - (0 if zero_based else 1)
                    if index < 0 or (row and index <= row[-1][0]):
                        raise Bad
                    row.append((index, number(value)))
                elif key in (b"qid", b"sid"):
                    if not INTEGER.fullmatch(value) or abs(int(value)) > INT64_MAX:
                        raise Bad
                    if key == b"qid":
                        q = int(value)
                    else:
                        s = int(value)
                elif key == b"cost":
                    c = number(value)
                else:
                    raise Bad
        except Bad:
            return line_no
        y.append(label)
        qid.append(q)
        sid.append(s)
        cost.append(c)
        indices += [i for i, _ in row]
        data += [v for _, v in row]
        indptr.append(len(indices))
        comments.append(comment.decode("utf-8", "replace").strip())
        lines.append(line_no)
    return indptr, indices, data, y, qid, sid, cost, comments, lines


def same_floats(a, b):
    """Equal bit for bit (so -0.0 differs from 0.0)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


def check(raw, zero_based=False, block_size=1 << 20):
    expected = reference(raw, zero_based)
    try:
        ds = parse_svmlight_bytes(
            raw,
            "f",
            zero_based=zero_based,
            keep_comments=True,
            allow_empty=True,
            block_size=block_size,
        )
    except InputError as e:
        assert isinstance(expected, int), f"refused valid input: {e}"
        assert e.line == expected, f"{e} (expected line {expected})"
        assert str(e).startswith(f"f:{expected}: ") and "\n" not in str(e)
        return
    assert not isinstance(expected, int), f"accepted line {expected}: {raw[:200]!r}"
    indptr, indices, data, y, qid, sid, cost, comments, lines = expected
    assert ds.X.shape == (len(y), max(indices) + 1 if indices else 0)
    assert np.array_equal(ds.X.indptr, indptr)
    assert np.array_equal(ds.X.indices, np.asarray(indices, dtype=np.int64))
    assert same_floats(ds.X.data, data)
    assert same_floats(ds.y, y)
    assert np.array_equal(ds.line_numbers, lines)
    assert ds.comments == comments
    for got, want, default in ((ds.qid, qid, 0), (ds.sid, sid, 0), (ds.cost, cost, 1.0)):
        if got is None:
            assert all(v == default for v in want)
        else:
            assert np.array_equal(got, want) if default == 0 else same_floats(got, want)


@contextlib.contextmanager
def hang_guard(seconds):
    """A parse that never returns (numba code ignores Python's signals) kills the run with
    every thread's traceback instead of hanging it."""
    faulthandler.dump_traceback_later(seconds, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope="module", autouse=True)
def compiled():
    parse_svmlight_bytes(b"1 qid:1 1:1.5 4000000000:2 # c\n", "warm-up")  # both index types


# --- the examples --------------------------------------------------------------------------

FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))

SPECIAL_NUMBERS = [
    "0",
    "-0",
    "1",
    "+1",
    "-1",
    "2.5",
    ".5",
    "5.",
    "1e5",
    "1E-3",
    "-3E+05",
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "-infinity",
    "infxxxxx",
    "1e400",
    "-1e400",
    "1e-400",
    "1e309",
    "2.2250738585072014e-308",
    "9007199254740993",
    "3.14159265358979323846264338327950288",
    "1" + "0" * 30,
    "0." + "0" * 30 + "1",
    "1e99999999999999999",
    "1e",
    "e5",
    "+",
    "-",
    ".",
    "",
    "1.2.3",
    "0x10",
    "1_0",
    "\u0661",
    "1,5",
    "--1",
    "1e+",
    "1e5.5",
    "9" * 400,
]
INDEX_TEXT = st.one_of(
    st.integers(1, 40).map(str),
    st.integers(-3, 2**66).map(str),
    st.sampled_from(
        [
            "0",
            "00",
            "007",
            "+3",
            "-3",
            "",
            "a",
            "3.0",
            "1e3",
            "9223372036854775807",
            "9223372036854775808",
            "2147483648",
            "4294967297",
        ]
    ),
)
NUMBER_TEXT = st.one_of(
    st.sampled_from(SPECIAL_NUMBERS),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(width=32).map(lambda v: f"{v:.6g}"),
    st.integers(-(10**25), 10**25).map(str),
)
SEPARATOR = st.sampled_from([" ", " ", " ", "\t", "  ", " \t ", "\x0b", "\x0c", "\r"])
LINE_END = st.sampled_from(["\n", "\n", "\r\n", "\r\n\n", "\n\n", "\r"])


@st.composite
def feature_tokens(draw):
    """Ascending index:value pairs, then a few mutated into near misses."""
    k = draw(st.integers(0, 8))
    idx = sorted(draw(st.sets(st.integers(1, 60), min_size=k, max_size=k)))
    tokens = [f"{i}:{draw(NUMBER_TEXT) if draw(st.booleans()) else '0.5'}" for i in idx]
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(tokens)))
        tokens.insert(
            at,
            draw(
                st.one_of(
                    st.builds(lambda i, v: f"{i}:{v}", INDEX_TEXT, NUMBER_TEXT),
                    st.builds(
                        lambda key, v: f"{key}:{v}",
                        st.sampled_from(["qid", "sid", "cost", "QID", "qi", "qidd", "cost "]),
                        st.one_of(NUMBER_TEXT, INDEX_TEXT),
                    ),
                    st.sampled_from(
                        [
                            ":",
                            "::",
                            "3:",
                            ":3",
                            "3::4",
                            "3:4:",
                            "3:4:5",
                            "qid:",
                            ":qid",
                            "#",
                            "#:1",
                            "3 :4",
                            "3: 4",
                            "\x00",
                            "1:\x00",
                            "\x001:1",
                            "1:2\x00",
                            "\u00e9:1",
                            "3:4#5",
                        ]
                    ),
                )
            ),
        )
    return tokens


@st.composite
def near_valid_line(draw):
    kind = draw(st.sampled_from(["example"] * 6 + ["comment", "blank", "long", "junk"]))
    if kind == "comment":
        return draw(st.sampled_from(["#", "# c", " # 1:2", "#\x00\xff"]))
    if kind == "blank":
        return draw(st.sampled_from(["", " ", "\t", " \r", "\x0b\x0c"]))
    if kind == "junk":
        return draw(st.text(max_size=40))
    label = (
        draw(NUMBER_TEXT)
        if draw(st.integers(0, 3)) == 0
        else draw(st.sampled_from(["1", "-1", "+1", "0", "3"]))
    )
    if kind == "long":
        n = draw(st.integers(500, 3000))
        tokens = [f"{i}:{(i * 7919) % 1000 / 7}" for i in range(1, n + 1)]
        if draw(st.booleans()):
            tokens[draw(st.integers(0, n - 1))] = draw(st.sampled_from(["5:1", "x", "1:nan"]))
    else:
        tokens = draw(feature_tokens())
    if kind == "long":
        line = draw(SEPARATOR).join([label] + tokens)
    else:
        line = label
        for t in tokens:
            line += draw(SEPARATOR) + t
    if draw(st.integers(0, 4)) == 0:
        line += draw(st.sampled_from([" # note", "#x:1", " #\t", "# \u00e9\x00"]))
    return line


@st.composite
def near_valid_text(draw):
    lines = draw(st.lists(near_valid_line(), min_size=0, max_size=12))
    text = "".join(line + draw(LINE_END) for line in lines)
    if draw(st.booleans()):
        text = text.rstrip("\r\n")  # no newline at the end
    raw = text.encode("utf-8", "surrogatepass")
    if raw and draw(st.integers(0, 5)) == 0:  # a NUL byte anywhere
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + b"\x00" + raw[at:]
    return raw


BLOCK_SIZES = st.sampled_from([1 << 20, 1, 2, 7, 64, 500])


@FUZZ
@given(st.binary(max_size=400), st.booleans(), BLOCK_SIZES)
def test_arbitrary_bytes(raw, zero_based, block_size):
    with hang_guard(120):
        check(raw, zero_based, block_size)


@FUZZ
@given(
    st.lists(
        st.sampled_from(
            [
                b"1",
                b"-1",
                b" ",
                b":",
                b"2",
                b"\n",
                b"\r",
                b"#",
                b"q",
                b"id",
                b"qid:",
                b"e",
                b".",
                b"+",
                b"\t",
                b"0",
                b"\x00",
                b"9" * 20,
                b"cost:",
                b"sid:",
            ]
        ),
        max_size=80,
    ).map(b"".join),
    st.booleans(),
    BLOCK_SIZES,
)
def test_bytes_from_the_grammars_alphabet(raw, zero_based, block_size):
    with hang_guard(120):
        check(raw, zero_based, block_size)


@FUZZ
@given(near_valid_text(), st.booleans(), BLOCK_SIZES)
def test_near_valid_lines(raw, zero_based, block_size):
    with hang_guard(120):
        check(raw, zero_based, block_size)


@pytest.mark.parametrize(
    "text",
    [
        "1 1:infxxxxx\n",
        "infinity 1:1\n",
        "1 1:-Infinity\n",
        "1 qid:-9223372036854775807 1:1\n",
        "1 qid:9223372036854775808 1:1\n",
        "1 9223372036854775807:1\n",
        "-0 1:-0\n",
        "1 2:1 3:1e-400\r\n\r\n2 cost:1e-400 1:1\n",
        "1 1:" + "9" * 400 + "\n",
        "1\x00 1:1\n",
    ],
)
@pytest.mark.parametrize("zero_based", [False, True])
def test_edge_cases(text, zero_based):
    check(text.encode(), zero_based)
