"""Renumbering huge and hashed feature indices to distinct columns (cpsvm/columns.py)."""

import numpy as np
import pytest
import scipy.sparse as sp

from cpsvm.columns import (
    REMAP_MIN_WIDTH,
    distinct_columns,
    distinct_values,
    onto_columns,
    original_columns,
    present_columns,
    renumbered_onto,
    renumbering_pays,
    union_columns,
    union_maxima,
    worth_renumbering,
)
from cpsvm.kernels import RBF, Kernel
from cpsvm.models import KernelModel

HUGE = [5, 2**31 + 4, 2**40 - 1, 9 * 10**15 - 1]  # 0-based: files' 6, 2^31+5, 2^40, 9e15


def csr(rows, width):
    indptr = np.cumsum([0] + [len(r) for r in rows])
    indices = np.array([i for r in rows for i, _ in r], dtype=np.int64)
    data = np.array([v for r in rows for _, v in r], dtype=np.float64)
    return sp.csr_matrix((data, indices, indptr), shape=(len(rows), width))


def test_when_renumbering_pays():
    few = np.array([0, 3, 7])
    assert not worth_renumbering(REMAP_MIN_WIDTH - 1, few)  # narrow files keep columns
    assert worth_renumbering(REMAP_MIN_WIDTH, few)
    assert worth_renumbering(2**62, few)
    dense_enough = np.arange(REMAP_MIN_WIDTH // 2 + 1)  # more than half the columns used
    assert not worth_renumbering(REMAP_MIN_WIDTH, np.concatenate([dense_enough, dense_enough]))
    sparse = np.arange(0, REMAP_MIN_WIDTH, 4)
    assert worth_renumbering(REMAP_MIN_WIDTH, np.concatenate([sparse, sparse, sparse]))
    # the same rule on a count (a cluster's union of its shards' columns)
    assert not renumbering_pays(REMAP_MIN_WIDTH - 1, 3)
    assert renumbering_pays(REMAP_MIN_WIDTH, REMAP_MIN_WIDTH // 2 - 1)
    assert not renumbering_pays(REMAP_MIN_WIDTH, REMAP_MIN_WIDTH // 2)


def test_shards_columns_merged_and_mapped_onto_the_union():
    """A cluster's pieces: each shard's distinct columns (renumbered, or listed where it
    kept the file's), their union with each column's largest bound, and each shard
    mapped onto the union: the whole matrix renumbered at once, bit for bit."""
    whole = csr(
        [[(HUGE[0], 1.0), (HUGE[2], -2.0)], [(3, 0.0), (HUGE[3], 4.0)], [(HUGE[1], 0.5)],
         [(3, -1.5), (HUGE[1], 2.0), (HUGE[2], 0.25)]],
        HUGE[3] + 1,
    )  # fmt: skip
    expected, ids = distinct_columns(whole)
    top, top_ids = distinct_columns(whole[:2])
    assert top_ids.tolist() == [3, HUGE[0], HUGE[2], HUGE[3]]
    narrow = csr([[(3, 0.0), (7, 1.0)], [(1, 2.0)]], 8)
    assert present_columns(narrow).tolist() == [1, 3, 7]
    assert present_columns(csr([[]], 8)).tolist() == []
    union, largest = union_maxima(
        [(top_ids, [0.0, 1.0, 2.0, 4.0]), ([1, 3, 7], [2.0, 0.5, 1.0]), ([3, HUGE[1]], [9.0, 2.0])]
    )
    assert union.tolist() == [1, 3, HUGE[0], 7, *HUGE[1:]]
    assert largest.tolist() == [2.0, 9.0, 1.0, 1.0, 2.0, 2.0, 4.0]
    assert union_maxima([])[0].tolist() == []
    mapped = renumbered_onto(top, top_ids, ids)
    assert mapped.indices.dtype == np.int32 and mapped.shape == (2, len(ids))
    assert (mapped != expected[:2]).nnz == 0 and mapped.nnz == expected[:2].nnz
    assert np.array_equal(mapped.indices, expected[:2].indices)
    rest, rest_ids = distinct_columns(whole[2:], always=True)
    mapped = renumbered_onto(rest, rest_ids, ids)
    assert np.array_equal(mapped.indices, expected[2:].indices)
    assert np.array_equal(mapped.data, expected[2:].data)


@pytest.mark.parametrize(
    "draw",
    [
        lambda rng: rng.integers(0, 2**40, 5000),  # uniform hashes: small buckets
        lambda rng: np.concatenate([rng.integers(0, 50, 4000), [2**62]]),  # skewed: one bucket
        lambda rng: rng.integers(0, 3, 3000),  # few values, many repeats
        lambda rng: np.array([2**63 - 2, 0, 2**63 - 2]),  # the extremes
    ],
)
def test_distinct_values_are_numpys_unique(draw):
    values = draw(np.random.default_rng(0))
    ids, ranks = distinct_values(values)
    expected, inverse = np.unique(values, return_inverse=True)
    assert np.array_equal(ids, expected) and np.array_equal(ranks, inverse.ravel())


def test_distinct_columns_keep_the_order_and_go_back():
    X = csr([[(HUGE[0], 1.0), (HUGE[2], 2.0)], [(HUGE[1], 3.0), (HUGE[3], 4.0)]], 9 * 10**15)
    Y, ids = distinct_columns(X)
    assert ids.tolist() == HUGE and Y.shape == (2, 4)
    assert Y.indices.tolist() == [0, 2, 1, 3] and Y.indices.dtype == np.int32
    back = original_columns(Y, ids)
    assert back.indices.tolist() == X.indices.tolist() and back.shape[1] == HUGE[-1] + 1
    narrow = csr([[(0, 1.0), (5, 2.0)]], 6)
    assert distinct_columns(narrow)[1] is None


def test_onto_a_models_columns():
    X = csr([[(0, 1.0), (HUGE[1], 2.0), (HUGE[1] + 1, 5.0)], [(HUGE[3], 3.0)]], HUGE[3] + 1)
    Y, dropped = onto_columns(X, 4, np.array(HUGE))
    assert dropped == 2 and Y.shape == (2, 4)  # index 0 and 2^31+5 unknown to the model
    assert Y.toarray().tolist() == [[0, 2, 0, 0], [0, 0, 0, 3]]
    Z, dropped = onto_columns(X, 3)  # an ordinary model of 3 features: the rest ignored
    assert dropped == 3 and Z.toarray().tolist() == [[1, 0, 0], [0, 0, 0]]
    W, dropped = onto_columns(csr([[(1, 1.0)]], 2), 5)
    assert dropped == 0 and W.shape == (1, 5)


def test_a_kernel_model_sees_every_test_feature():
    """An RBF model in renumbered columns gives the decision values of the same model
    over the original indices: test features its support vectors lack count in |x-sv|²."""
    rng = np.random.default_rng(1)
    width = 40
    keep = np.ones(width)
    keep[7] = 0  # a feature no support vector has
    sv = sp.csr_matrix(sp.random(6, width, density=0.2, random_state=2).multiply(keep))
    X = sp.random(9, width, density=0.3, random_state=3, format="csr")
    coef = rng.normal(size=6)
    kernel = Kernel(RBF, gamma=0.3)
    plain = KernelModel(sv, coef, 0.1, kernel)
    compact, ids = distinct_columns(sv, always=True)
    renumbered = KernelModel(compact, coef, 0.1, kernel, feature_ids=ids)
    assert np.array_equal(plain.decision_function(X), renumbered.decision_function(X))
    Xu, Su = union_columns(X, compact, ids)
    assert Xu.shape[1] == Su.shape[1] == len(np.union1d(ids, X.indices))


def test_a_dataset_renumbered_and_back():
    from cpsvm.data import Dataset

    X = csr([[(HUGE[0], 1.0), (HUGE[3], 2.0)], [(HUGE[1], 3.0)]], HUGE[3] + 1)
    data = Dataset(X, np.array([1.0, -1.0]), line_numbers=np.array([1, 2]))
    renumbered = data.with_distinct_columns()
    assert renumbered.n_features == 3 and renumbered.feature_ids.tolist() == HUGE[:2] + HUGE[3:]
    assert renumbered.subset([1]).feature_ids is renumbered.feature_ids
    back = renumbered.with_original_columns()  # a user's problem sees the file's indices
    assert back.feature_ids is None and (back.X != X).nnz == 0
    test = Dataset(csr([[(HUGE[1], 5.0), (HUGE[2], 7.0)]], HUGE[3] + 1), np.array([1.0]))
    mapped = test.onto_columns_of(renumbered)  # e.g. a --validate or --f file
    assert mapped.X.toarray().tolist() == [[0.0, 5.0, 0.0]]
