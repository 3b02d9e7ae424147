"""The compiled writers against Python's own text: ``index:value`` pairs against ``repr``
(David Gay's shortest round-trip conversion), the reference the model files were written
with, and fixed decimals against ``f"{v:.6f}"`` (cp_classify's scores)."""

import numpy as np
import pytest

from cpsvm.io.float_text import format_example, format_fixed_rows, format_rows


def _expected(keys, values):
    return " ".join(f"{k}:{v!r}" for k, v in zip(keys, np.asarray(values, float).tolist()))


def _check(values):
    values = np.asarray(values, dtype=np.float64)
    keys = np.arange(len(values), dtype=np.int64)
    assert format_example(keys, values) == _expected(keys + 1, values)


def test_special_values_as_repr():
    _check(
        [0.0, -0.0, 1.0, -1.0, 0.1, 1e-5, 1e-4, 0.00012, 1e15, 1e16, 1234567890123456.0,
         12345678901234567.0, 9007199254740993.0, 2.0**63, 1e22, 1e23, 0.5, 9.5, 1 / 3,
         5e-324, 2.2250738585072014e-308, 2.225073858507201e-308, 1.7976931348623157e308,
         np.inf, -np.inf, np.nan, 1e100, 1e-100, 123.456, 4.35]
    )  # fmt: skip


@pytest.mark.parametrize("seed", [0, 1])
def test_random_doubles_as_repr(seed):
    rng = np.random.default_rng(seed)
    bits = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, 200_000, np.int64)
    values = bits.view(np.float64)
    _check(values)
    _check(rng.standard_normal(50_000) * 10.0 ** rng.integers(-20, 20, 50_000))
    _check(np.round(rng.standard_normal(50_000), 3))
    _check(rng.integers(1, 2**52, 50_000, dtype=np.int64).view(np.float64))  # subnormal


def test_powers_as_repr():
    _check(2.0 ** np.arange(-1074, 1024))
    _check(10.0 ** np.arange(-323, 309))
    _check(np.nextafter(10.0 ** np.arange(-300, 300), np.inf))


def test_rows_and_indices():
    rows = format_rows([0, 2, 2, 3], [0, 5, 2**40], [1.0, -0.0, 0.25])
    assert rows == ["1:1.0 6:-0.0", "", "1099511627777:0.25"]
    assert format_rows([0, 1], [3], [2.5], zero_based=True) == ["3:2.5"]
    assert format_rows([0], [], []) == []


def _check_fixed(values, digits):
    values = np.asarray(values, dtype=np.float64)
    expected = [f"{v:.{digits}f}" for v in values.tolist()]
    assert format_fixed_rows(values, digits) == expected


@pytest.mark.parametrize("digits", [6, 8, 1, 9])
def test_fixed_decimals_as_python(digits):
    """Correctly rounded (the exact binary value, ties to even), for every magnitude the
    compiled path takes (below 2^32) and those it leaves to Python."""
    rng = np.random.default_rng(digits)
    signs = rng.choice([-1.0, 1.0], 200_000)
    _check_fixed(np.exp(rng.uniform(np.log(1e-12), np.log(4e9), 200_000)) * signs, digits)
    # dyadic values k/2^n: every exact tie between two decimals is one
    dyadic = rng.integers(0, 2**40, 200_000) / 2.0 ** rng.integers(9, 60, 200_000)
    _check_fixed(dyadic * signs, digits)
    values = rng.integers(0, 2**63, 200_000, dtype=np.uint64).view(np.float64)
    _check_fixed(values[np.abs(values) < 2.0**32], digits)
    _check_fixed(
        [0.0, -0.0, 5e-324, -5e-324, -1e-12, 1 / 128, 3 / 128, 0.5e-6, 1.5e-6, 2.5e-6,
         2.0**32 - 2.0**-20, 2.0**31, 1.0, 1e9 + 0.5],
        digits,
    )  # fmt: skip
    # an array with any of these is Python's to write
    _check_fixed([1 / 128, 2.0**32, -(2.0**32), 1e300, np.inf, -np.inf, np.nan], digits)


def test_fixed_rows():
    scores = np.random.default_rng(3).standard_normal((40, 7))
    assert format_fixed_rows(scores) == [" ".join(f"{v:f}" for v in row) for row in scores]
    assert format_fixed_rows(np.zeros((0, 7))) == []
    assert format_fixed_rows(np.array([[1.0, np.nan]])) == ["1.000000 nan"]
