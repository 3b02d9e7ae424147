"""The compiled writer of ``index:value`` pairs against Python's own ``repr`` (David
Gay's shortest round-trip conversion), the reference the model files were written with."""

import numpy as np
import pytest

from cpsvm.io.float_text import format_example, format_rows


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
