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


@pytest.mark.parametrize("fill", [1.0, 0.8])   # every entry stored (a view), or copied
def test_dense_blocks_equal_scipy_and_are_thread_independent(monkeypatch, fill):
    monkeypatch.setattr(sparse_ops, "PARALLEL_MIN_NNZ", 1)
    rng = np.random.default_rng(4)
    dense = rng.standard_normal((203, 17)) * (rng.random((203, 17)) < fill)
    X = sp.csr_matrix(dense) if fill < 1 else sp.csr_matrix(
        (dense.ravel(), np.tile(np.arange(17), 203), np.arange(0, 203 * 17 + 1, 17)),
        shape=(203, 17))
    rows = RowBlocks(X)
    assert rows.dense is not None and len(rows.blocks) == sparse_ops.N_BLOCKS
    assert np.shares_memory(rows.dense, X.data) == (fill == 1.0)
    w, W = rng.standard_normal(17), rng.standard_normal((4, 17))
    coef = np.where(rng.random(203) < 0.5, rng.standard_normal(203), 0.0)
    few = np.where(rng.random(203) < 0.1, rng.standard_normal(203), 0.0)
    k, to_class = 3, rng.integers(0, 3, 203)
    from_class = np.where(rng.random(203) < 0.5, rng.integers(0, 3, 203), -1)
    results = []
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(threads)
        results.append((rows.dot(w), rows.dot(W), rows.rows_sum(coef),
                        rows.rows_sum(few),   # the selected-rows loop
                        rows.rows_sum(coef, to_class, from_class, k)))
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    for a, b in zip(*results):
        assert np.array_equal(a, b)
    by_class = np.zeros((k, 17))
    for i in range(203):
        by_class[to_class[i]] += coef[i] * dense[i]
        if from_class[i] >= 0:
            by_class[from_class[i]] -= coef[i] * dense[i]
    expected = (dense @ w, dense @ W.T, dense.T @ coef, dense.T @ few,
                by_class.ravel())
    for got, want in zip(results[0], expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_identical_rows_are_found_with_and_without_labels():
    from cpsvm.sparse_ops import first_identical_rows
    X = sp.csr_matrix(np.array([[1.0, 0, 2.0], [0, 0, 0], [1.0, 0, 2.0], [1.0, 0, 2.5],
                                [0, 0, 0], [0, 1.0, 0], [1.0, 0, 2.0], [2.0, 0, 1.0]]))
    assert list(first_identical_rows(X)) == [0, 1, 0, 3, 1, 5, 0, 7]
    y = np.array([1.0, -1, -1, 1, -1, 1, 1, 1])
    assert list(first_identical_rows(X, y)) == [0, 1, 2, 3, 1, 5, 0, 7]


def test_identical_rows_against_a_dictionary_on_random_data():
    from cpsvm.sparse_ops import first_identical_rows
    rng = np.random.default_rng(9)
    dense = (rng.random((500, 6)) < 0.3) * rng.integers(1, 3, (500, 6)).astype(float)
    y = rng.integers(1, 3, 500).astype(float)
    for labels in (None, y):
        seen, expected = {}, []
        for i, row in enumerate(dense):
            key = (row.tobytes(), None if labels is None else labels[i])
            expected.append(seen.setdefault(key, i))
        assert list(first_identical_rows(sp.csr_matrix(dense), labels)) == expected


def test_identical_rows_when_every_hash_collides():
    """Equal keys only make candidates: rows are still compared entry by entry."""
    from cpsvm.sparse_ops import _first_by_table
    rng = np.random.default_rng(4)
    X = sp.csr_matrix((rng.random((200, 5)) < 0.3).astype(float))
    data = X.data.view(np.uint64)
    keys = np.full(200, 12345, np.uint64)
    seen, expected = {}, []
    for i, row in enumerate(X.toarray()):
        expected.append(seen.setdefault(row.tobytes(), i))
    got = _first_by_table(X.indptr, X.indices, data, keys, np.full(512, -1, np.int32),
                          np.zeros(0))
    assert list(got) == expected


def test_the_pool_follows_the_thread_count_of_the_call():
    """n_threads reaches the row blocks: with one thread every block runs in the caller's
    thread, with two on the pool; the caller's count is restored either way."""
    import threading

    import numba

    from cpsvm.engine.threads import thread_count
    from cpsvm.sparse_ops import map_in_threads
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs 2 numba threads")
    before = numba.get_num_threads()
    me = threading.get_ident()
    with thread_count(1):
        assert set(map_in_threads(lambda _: threading.get_ident(), range(8))) == {me}
    with thread_count(2):
        assert me not in set(map_in_threads(lambda _: threading.get_ident(), range(8)))
    assert numba.get_num_threads() == before
