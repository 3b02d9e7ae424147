"""Models trained on renumbered columns (huge or hashed feature indices): their files hold
the original indices, and read back without a dense vector of the largest index."""

import numpy as np
import pytest
import scipy.sparse as sp

from cpsvm.io.model_file import format_model, read_model, write_model
from cpsvm.kernels import RBF, Kernel
from cpsvm.models import (
    KernelModel,
    LinearModel,
    MulticlassModel,
    RandomFeaturesModel,
    RankingModel,
    SequenceModel,
)

IDS = np.array([5, 2**31 + 4, 2**40 - 1, 9 * 10**15 - 1])  # 0-based
WIDTH = int(IDS[-1]) + 1


def hashed_rows():
    """Test rows over the original indices, one feature no model has."""
    rows, cols = np.array([0, 0, 1, 1, 1, 2]), np.array([5, 2**40 - 1, 7, 2**31 + 4, IDS[3], 0])
    values = np.array([1.0, 0.5, 2.0, -1.0, 0.25, 3.0])
    return sp.csr_matrix((values, (rows, cols)), shape=(3, WIDTH))


def models():
    w = np.array([0.5, -1.25, 2.0, 0.75])
    yield LinearModel(w, b=0.125, n_train=7, feature_ids=IDS)
    yield RankingModel(w, n_train=7, feature_ids=IDS)
    yield MulticlassModel(np.array([w, -w, w[::-1]]), n_train=7, feature_ids=IDS)
    sv = sp.csr_matrix(np.array([[1.0, 0, 2.0, 0], [0, 0.5, 0, 1.0]]))
    yield KernelModel(sv, np.array([0.5, -1.5]), 0.25, Kernel(RBF, gamma=0.5), feature_ids=IDS)
    omega = np.arange(12.0).reshape(4, 3) / 10
    yield RandomFeaturesModel(
        omega, np.ones(3), np.array([1.0, -2.0, 0.5]), 0.0, 0.5, feature_ids=IDS
    )


@pytest.mark.parametrize("model", list(models()), ids=lambda m: type(m).__name__)
def test_written_with_the_original_indices_and_read_back(tmp_path, model):
    text = format_model(model)
    multiclass = isinstance(model, MulticlassModel)
    assert (
        f"{WIDTH} # {'number of base features' if multiclass else 'highest feature index'}" in text
    )
    if isinstance(model, RandomFeaturesModel):
        assert " ".join(str(i + 1) for i in IDS) + " # feature indices" in text
    elif multiclass:
        assert f"{2 * WIDTH + 2**31 + 5}:" in text  # class 3's feature 2^31+5
    else:
        assert f" {2**31 + 5}:" in text and f" {9 * 10**15}:" in text
    path = tmp_path / "m"
    write_model(path, model)
    back = read_model(path, float32_features=False)
    assert type(back) is type(model)
    assert np.array_equal(back.feature_ids, IDS)
    X = hashed_rows()
    assert np.allclose(back.decision_function(X), model.decision_function(X), rtol=0, atol=1e-12)


def test_a_sequence_model(tmp_path):
    rng = np.random.default_rng(0)
    compact = SequenceModel(np.zeros(1), n_features=4, n_tags=3)
    w = rng.normal(size=compact.layout.size_psi)
    w[compact.layout.size_trans : compact.layout.emission_start] = 0  # unused by SVMhmm
    model = SequenceModel(w, n_features=4, n_tags=3, feature_ids=IDS)
    path = tmp_path / "m"
    write_model(path, model)
    assert f"{WIDTH} # number of emission features" in path.read_text()
    back = read_model(path, float32_features=False)
    assert np.array_equal(back.feature_ids, IDS) and back.n_features == 4
    assert np.array_equal(back.w, w)
    X, starts = hashed_rows(), np.array([0, 3])
    assert np.array_equal(back.predict(X, starts), model.predict(X, starts))


def test_an_ordinary_model_ignores_huge_test_indices():
    model = LinearModel(np.array([1.0, 2.0, 3.0]))
    X = sp.csr_matrix(([1.0, 1.0, 5.0], ([0, 0, 1], [1, 2**40, 9 * 10**15 - 1])), shape=(2, WIDTH))
    assert model.decision_function(X).tolist() == [2.0, 0.0]
