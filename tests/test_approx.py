"""Kernel approximations against the exact kernel computed here with numpy."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from cpsvm.approx import FeatureRows, NystromMap, RandomFourierMap
from cpsvm.errors import InputError
from cpsvm.kernels import Kernel


def rbf(A, B, g):
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return np.exp(-g * d2)


def test_nystrom_with_every_example_in_the_basis_is_the_exact_kernel():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(60, 4))
    X = sp.csr_matrix(A)
    g = 0.3
    nm = NystromMap(Kernel(2, gamma=g), X, threshold=1e-12)
    V = FeatureRows(nm, X)(np.arange(60))
    np.testing.assert_allclose(V @ V.T, rbf(A, A, g), atol=1e-8)
    # ... and the kernel-expansion coefficients give the same function as V·γ.
    gamma = rng.normal(size=nm.n_components)
    B = rng.normal(size=(7, 4))
    np.testing.assert_allclose(
        rbf(B, A, g) @ nm.expansion_coef(gamma),
        FeatureRows(nm, sp.csr_matrix(B))(np.arange(7)) @ gamma,
        atol=1e-8,
    )


def test_nystrom_threshold_drops_the_directions_of_duplicates():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(10, 3))
    A = np.vstack([A, A[:3]])  # three duplicates: K_SS has rank 10
    nm = NystromMap(Kernel(2, gamma=0.5), sp.csr_matrix(A), threshold=1e-9)
    assert nm.n_components == 10 and nm.n_dropped == 3


def _rff_error(seed, D, A, g):
    fm = RandomFourierMap.draw(Kernel(2, gamma=g), A.shape[1], D, np.random.default_rng(seed))
    V = fm.transform(sp.csr_matrix(A))
    return np.sqrt(np.mean((V @ V.T - rbf(A, A, g)) ** 2))


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_random_fourier_error_falls_like_one_over_sqrt_d(seed):
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, size=(40, 5))
    g = 0.7
    sizes = np.array([64, 256, 1024, 4096])
    # The mean over four independent draws per size tames the spread of one draw.
    errors = np.array(
        [np.mean([_rff_error(seed * 7 + r, D, A, g) for r in range(4)]) for D in sizes]
    )
    slope = np.polyfit(np.log(sizes), np.log(errors), 1)[0]
    assert -0.65 < slope < -0.35, (slope, errors)
    # The constant too: the variance of one feature's product is at most 2 (|2cos·cos| ≤ 2).
    assert np.all(errors * np.sqrt(sizes) < 1.5)


def test_random_fourier_features_need_the_rbf_kernel():
    with pytest.raises(InputError, match="RBF"):
        RandomFourierMap.draw(Kernel(0), 3, 8, np.random.default_rng(0))


def test_random_fourier_features_ignore_columns_beyond_omega():
    fm = RandomFourierMap.draw(Kernel(2, gamma=1.0), 2, 16, np.random.default_rng(1))
    X = sp.csr_matrix(np.array([[0.5, -0.2, 9.0]]))
    np.testing.assert_allclose(
        fm.transform(X), fm.transform(sp.csr_matrix(np.array([[0.5, -0.2]])))
    )
