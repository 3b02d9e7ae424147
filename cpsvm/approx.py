"""Low-dimensional kernel approximations: the Nyström map of a basis of examples and
random Fourier features of the RBF kernel.

Nyström: with basis B and K_BB = U Λ Uᵀ, φ(x) = Λ^{-1/2} Uᵀ k_B(x) makes φ(a)·φ(b) the
Nyström approximation of k(a, b). Eigenvectors with small eigenvalues are dropped:
below ``rtol``·λ_max (cp_learn --t 1), or below an absolute ``threshold`` (ASSET's ε_d),
which regularises a singular K_BB (duplicate or collinear basis examples);
``n_dropped`` says how many. A linear w on φ is the kernel expansion
Σ_j coef_j k(b_j, x) with coef = U Λ^{-1/2} w over the basis.

Random Fourier features (Rahimi & Recht): for SVMlight's RBF kernel exp(-g|a-b|²),
φ(x) = sqrt(2/D)·cos(Ωᵀx + ν) with Ω's D columns drawn from N(0, 2g·I) and ν uniform on
[0, 2π): E[φ(a)·φ(b)] = k(a, b).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .columns import onto_columns
from .errors import InputError, OptionError
from .kernel_rows import RowKernel, stacked
from .kernels import KERNEL_VALUE_LIMIT, RBF, Kernel
from .sparse_ops import as_csr, squared_norms
from .threads import map_in_threads


class NystromMap:
    def __init__(
        self, kernel: Kernel, basis, rtol: float = 1e-10, *, threshold: float | None = None
    ):
        self.kernel = kernel
        self.basis = sp.csr_matrix(basis, dtype=np.float64)
        rk = RowKernel(self.basis, kernel)
        everything = np.arange(self.basis.shape[0])
        K = rk.matrix(everything, everything)
        eigenvalues, U = scipy.linalg.eigh(0.5 * (K + K.T))
        if eigenvalues[-1] <= 0:
            raise InputError("the basis kernel matrix is zero: choose other basis examples")
        keep = eigenvalues > (rtol * eigenvalues[-1] if threshold is None else threshold)
        self.n_dropped = int(np.count_nonzero(~keep))
        self.eigenvalues = eigenvalues[keep]
        self.projection = U[:, keep] / np.sqrt(eigenvalues[keep])  # U Λ^{-1/2}

    @property
    def n_components(self) -> int:
        return self.projection.shape[1]

    def transform(self, X, block_rows: int = 4096) -> np.ndarray:
        """φ(x) for every row of X, dense (n, n_components)."""
        rows = FeatureRows(self, X)
        out = np.empty((X.shape[0], self.n_components))
        for lo in range(0, X.shape[0], block_rows):
            hi = min(lo + block_rows, X.shape[0])
            out[lo:hi] = rows(np.arange(lo, hi))
        return out

    def expansion_coef(self, w) -> np.ndarray:
        """Coefficients over the basis of the kernel expansion equal to w·φ(x)."""
        return self.projection @ w


def check_random_features(kernel: Kernel, X) -> None:
    """-g against the data for random Fourier features: their projections ω·x have
    variance 2g·|x|², kept at most KERNEL_VALUE_LIMIT so that every one is finite
    (OptionError naming the largest -g the data allow)."""
    largest = float(np.max(squared_norms(as_csr(X)), initial=0.0))
    bound = KERNEL_VALUE_LIMIT / (2.0 * largest) if largest > 0 else math.inf
    if not kernel.gamma <= bound:
        raise OptionError(
            f"expected -g <= {bound:.3g} for random Fourier features of this data (their "
            f"projections have variance 2g*|x|^2, past {KERNEL_VALUE_LIMIT:g}), got "
            f"{kernel.gamma:g}"
        )


class RandomFourierMap:
    """φ(x) = sqrt(2/D)·cos(Ωᵀx + ν) for the RBF kernel; Ω (n_features, D), ν (D,)."""

    def __init__(self, omega, nu):
        self.omega = np.ascontiguousarray(omega, dtype=np.float64)
        self.nu = np.ascontiguousarray(nu, dtype=np.float64)

    @classmethod
    def draw(
        cls, kernel: Kernel, n_features: int, n_components: int, rng: np.random.Generator
    ) -> RandomFourierMap:
        if kernel.kind != RBF:
            raise InputError("random Fourier features need the RBF kernel (-t 2)")
        if not 2.0 * kernel.gamma <= KERNEL_VALUE_LIMIT:
            raise OptionError(
                f"expected -g <= {KERNEL_VALUE_LIMIT / 2:.3g} for random Fourier features "
                f"(their frequencies have variance 2g), got {kernel.gamma:g}"
            )
        omega = rng.normal(0.0, math.sqrt(2.0 * kernel.gamma), size=(n_features, n_components))
        nu = rng.uniform(0.0, 2.0 * math.pi, size=n_components)
        return cls(omega, nu)

    @property
    def n_components(self) -> int:
        return self.omega.shape[1]

    @property
    def scale(self) -> float:
        return math.sqrt(2.0 / self.n_components)

    def cosines(self, X) -> np.ndarray:
        """cos(Ωᵀx + ν) for every row of X (columns beyond Ω's rows ignored)."""
        Z = np.asarray(onto_columns(X, self.omega.shape[0])[0] @ self.omega)
        Z += self.nu
        return np.cos(Z, out=Z)

    def transform(self, X) -> np.ndarray:
        out = self.cosines(X)
        out *= self.scale
        return out


class FeatureRows:
    """φ of chosen rows of X, on demand: ``rows(idx)`` -> dense (len(idx), D).

    Works for :class:`NystromMap` (kernel rows against the basis, by :class:`RowKernel`,
    times the projection) and :class:`RandomFourierMap`. The rows of a call are split in
    fixed blocks computed on the library's threads; each row's value does not depend on
    the number of threads.
    """

    BLOCK = 1024

    def __init__(self, feature_map, X):
        self.map = feature_map
        self.X = as_csr(X)
        if isinstance(feature_map, NystromMap):
            self.rk, self.rows, self.basis_rows = stacked(
                feature_map.kernel, self.X, feature_map.basis
            )

    @property
    def dim(self) -> int:
        return self.map.n_components

    @property
    def kernel_evaluations(self) -> int:
        """Kernel evaluations so far: Nyström's rows against the basis (random features
        evaluate no kernel)."""
        return self.rk.evaluations if isinstance(self.map, NystromMap) else 0

    def __call__(self, idx) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        if isinstance(self.map, NystromMap):
            # RowKernel runs its own threads; the products with the projection ours.
            K = self.rk.matrix(self.rows[idx], self.basis_rows)
            product = lambda lo: K[lo : lo + self.BLOCK] @ self.map.projection  # noqa: E731
        else:
            product = lambda lo: self.map.transform(self.X[idx[lo : lo + self.BLOCK]])  # noqa: E731
        out = np.empty((len(idx), self.dim))

        def run(lo):
            out[lo : lo + self.BLOCK] = product(lo)

        map_in_threads(run, list(range(0, len(idx), self.BLOCK)))
        return out
