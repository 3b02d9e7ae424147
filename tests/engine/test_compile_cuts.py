"""The hand-written pieces that replaced costly-to-compile numba constructs (cold start):
each checked against the library call it replaced."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cpsvm.engine.qp_kernels import _lu_solve
from cpsvm.io.svmlight import read_svmlight


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_lu_solve_is_numpys_solve(n, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n)) + n * np.eye(n) * rng.integers(0, 2)
    b = rng.normal(size=n)
    assume(np.linalg.cond(A) <= 1e8)
    np.testing.assert_allclose(_lu_solve(A, b), np.linalg.solve(A, b), rtol=1e-9, atol=1e-12)


def test_lu_solve_refuses_a_singular_matrix_as_numpy_does():
    with pytest.raises(np.linalg.LinAlgError):
        _lu_solve(np.zeros((2, 2)), np.ones(2))


def test_many_exactly_converted_numbers(tmp_path):
    # More than the parser's first table of numbers needing exact conversion (16 rows):
    # its growth, written as a loop, keeps every row.
    rng = np.random.default_rng(0)
    digits = [f"0.{rng.integers(10**18):018d}{rng.integers(10**7):07d}" for _ in range(70)]
    path = tmp_path / "d"
    path.write_text(
        "".join(f"{'+1' if k % 2 else '-1'} 1:{d} 2:{k}\n" for k, d in enumerate(digits))
    )
    data = read_svmlight(path)
    assert data.X[:, 0].toarray().ravel().tolist() == [float(d) for d in digits]
