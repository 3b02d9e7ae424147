"""RowBlocks: threaded products over fixed row blocks equal scipy's and do not depend on
the number of threads."""

import numpy as np
import pytest
import scipy.sparse as sp

from cpsvm import sparse_ops
from cpsvm.sparse_ops import RowBlocks
from cpsvm.threads import max_threads, thread_count


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
    w = rng.standard_normal(17)
    for threads in (1, max_threads()):
        with thread_count(threads):
            assert np.array_equal(rows.dot(w), X @ w)


def _row_by_row(A, B):
    """A @ B for CSR A, each row summed in its own order in plain Python: the sums the
    (d, k) products must reproduce bit for bit."""
    out = np.zeros((A.shape[0], B.shape[1]))
    for i in range(A.shape[0]):
        for p in range(A.indptr[i], A.indptr[i + 1]):
            out[i] = out[i] + A.data[p] * B[A.indices[p]]
    return out


@pytest.mark.parametrize("ones", [False, True])
@pytest.mark.parametrize("stream", [False, True])  # X·W over X's rows, or its columns
def test_products_with_k_columns_are_row_sums_for_any_thread_count(
    blocked, monkeypatch, ones, stream
):
    """X·W (W (d, k)) and Xᵀ·B (B (n, k)): every row of the result summed in its own
    order (the same bits for any blocks and threads), as a loop over the non-zeros."""
    X, _, rng = blocked
    monkeypatch.setattr(sparse_ops, "STREAM_MIN_BYTES", 0 if stream else 1 << 62)
    if ones:
        X = X.copy()
        X.data[:] = 1.0
    rows = RowBlocks(X)
    assert rows.ones == ones
    W, B = rng.standard_normal((17, 5)), rng.standard_normal((203, 5))
    results = []
    for threads in (1, max_threads()):
        with thread_count(threads):
            results.append((rows.times(W), rows.transposed_times(B)))
    for a, b in zip(*results):
        assert np.array_equal(a, b)
    assert np.array_equal(results[0][0], _row_by_row(X, W))
    assert np.array_equal(results[0][1], _row_by_row(sp.csr_matrix(X.T), B))


@pytest.mark.parametrize("share", [0.1, 0.6])  # the numba loop, scipy's product
def test_rows_sum_is_xt_coef_and_thread_independent(blocked, share):
    X, rows, rng = blocked
    coef = np.where(rng.random(203) < share, rng.standard_normal(203), 0.0)
    results = []
    for threads in (1, max_threads()):
        with thread_count(threads):
            results.append(rows.rows_sum(coef))
    assert np.array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], X.T @ coef, rtol=1e-12, atol=1e-12)


def test_add_by_class_is_the_crammer_singer_delta_psi(blocked):
    X, rows, rng = blocked
    k = 3
    picked = np.sort(rng.choice(203, 120, replace=False))
    coef = rng.standard_normal(120)
    to_class = rng.integers(0, k, 120)
    from_class = (to_class + rng.integers(1, k, 120)) % k
    expected = np.zeros((17, k))
    dense = X.toarray()
    for t, i in enumerate(picked):
        expected[:, to_class[t]] += coef[t] * dense[i]
        expected[:, from_class[t]] -= coef[t] * dense[i]
    got = np.zeros((17, k))
    rows.add_by_class(picked, coef, to_class, from_class, got)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fill", [1.0, 0.8])  # every entry stored (a view), or copied
def test_dense_blocks_equal_scipy_and_are_thread_independent(monkeypatch, fill):
    monkeypatch.setattr(sparse_ops, "PARALLEL_MIN_NNZ", 1)
    rng = np.random.default_rng(4)
    dense = rng.standard_normal((203, 17)) * (rng.random((203, 17)) < fill)
    X = (
        sp.csr_matrix(dense)
        if fill < 1
        else sp.csr_matrix(
            (dense.ravel(), np.tile(np.arange(17), 203), np.arange(0, 203 * 17 + 1, 17)),
            shape=(203, 17),
        )
    )
    rows = RowBlocks(X)
    assert rows.dense is not None and len(rows.blocks) == sparse_ops.N_BLOCKS
    assert np.shares_memory(rows.dense, X.data) == (fill == 1.0)
    w, W, B = rng.standard_normal(17), rng.standard_normal((17, 4)), rng.standard_normal((203, 4))
    coef = np.where(rng.random(203) < 0.5, rng.standard_normal(203), 0.0)
    few = np.where(rng.random(203) < 0.1, rng.standard_normal(203), 0.0)
    results = []
    for threads in (1, max_threads()):
        with thread_count(threads):
            results.append(
                (
                    rows.dot(w),
                    rows.times(W),
                    rows.transposed_times(B),
                    rows.rows_sum(coef),
                    rows.rows_sum(few),
                )
            )  # few: selected rows
    for a, b in zip(*results):
        assert np.array_equal(a, b)
    expected = (dense @ w, dense @ W, dense.T @ B, dense.T @ coef, dense.T @ few)
    for got, want in zip(results[0], expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_identical_rows_are_found_with_and_without_labels():
    from cpsvm.sparse_ops import first_identical_rows

    X = sp.csr_matrix(
        np.array(
            [
                [1.0, 0, 2.0],
                [0, 0, 0],
                [1.0, 0, 2.0],
                [1.0, 0, 2.5],
                [0, 0, 0],
                [0, 1.0, 0],
                [1.0, 0, 2.0],
                [2.0, 0, 1.0],
            ]
        )
    )
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
    got = _first_by_table(X.indptr, X.indices, data, keys, np.full(512, -1, np.int32), np.zeros(0))
    assert list(got) == expected


def test_the_pool_follows_the_thread_count_of_the_call():
    """n_threads reaches the row blocks: with one thread every block runs in the caller's
    thread, with two on the pool; the caller's count is restored either way."""
    import threading

    from cpsvm.threads import get_num_threads, map_in_threads

    if max_threads() < 2:
        pytest.skip("needs 2 threads")
    before = get_num_threads()
    me = threading.get_ident()
    with thread_count(1):
        assert set(map_in_threads(lambda _: threading.get_ident(), range(8))) == {me}
    with thread_count(2):
        assert me not in set(map_in_threads(lambda _: threading.get_ident(), range(8)))
    assert get_num_threads() == before
