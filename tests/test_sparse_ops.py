"""RowBlocks: threaded products over fixed row blocks equal scipy's and do not depend on
the number of threads."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from cpsvm import sparse_ops
from cpsvm.sparse_ops import RowBlocks


@pytest.fixture
def blocked(monkeypatch):
    """A small matrix cut into several blocks (the threshold lowered to reach them)."""
    monkeypatch.setattr(sparse_ops, "PARALLEL_MIN_NNZ", 1)
    rng = np.random.default_rng(3)
    X = sp.random(203, 17, density=0.3, format="csr", random_state=rng)
    rows = RowBlocks(X)
    assert len(rows.blocks) == sparse_ops.N_BLOCKS
    return X, rows, rng


def test_blocks_share_the_matrix_data(blocked):
    X, rows, _ = blocked
    for block in rows.blocks + rows.transposed:
        assert np.shares_memory(block.data, X.data)
        assert np.shares_memory(block.indices, X.indices)


def test_dot_equals_scipy_for_any_thread_count(blocked):
    X, rows, rng = blocked
    w, W = rng.standard_normal(17), rng.standard_normal((4, 17))
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(threads)
        assert np.array_equal(rows.dot(w), X @ w)
        assert np.array_equal(rows.dot(W), X @ W.T)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


@pytest.mark.parametrize("share", [0.1, 0.6])  # the numba loop, scipy's product
def test_rows_sum_is_xt_coef_and_thread_independent(blocked, share):
    X, rows, rng = blocked
    coef = np.where(rng.random(203) < share, rng.standard_normal(203), 0.0)
    results = []
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(threads)
        results.append(rows.rows_sum(coef))
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    assert np.array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], X.T @ coef, rtol=1e-12, atol=1e-12)


def test_rows_sum_by_class_is_the_crammer_singer_delta_psi(blocked):
    X, rows, rng = blocked
    k = 3
    coef = rng.standard_normal(203)
    to_class = rng.integers(0, k, 203)
    from_class = np.where(rng.random(203) < 0.5, rng.integers(0, k, 203), -1)
    expected = np.zeros((k, 17))
    dense = X.toarray()
    for i in range(203):
        expected[to_class[i]] += coef[i] * dense[i]
        if from_class[i] >= 0:
            expected[from_class[i]] -= coef[i] * dense[i]
    got = rows.rows_sum(coef, to_class, from_class, k)
    np.testing.assert_allclose(got, expected.ravel(), rtol=1e-12, atol=1e-12)
