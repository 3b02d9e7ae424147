"""Low-dimensional kernel approximations: the Nyström map of a basis of examples.

With basis B and K_BB = U Λ Uᵀ, φ(x) = Λ^{-1/2} Uᵀ k_B(x) makes φ(a)·φ(b) the Nyström
approximation of k(a, b). Eigenvectors with λ below ``rtol``·λ_max are dropped: that
is the regularisation of a singular K_BB (duplicate or collinear basis examples), and
``n_dropped`` says how many. A linear w on φ is the kernel expansion
Σ_j coef_j k(b_j, x) with coef = U Λ^{-1/2} w over the basis.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .errors import InputError
from .kernel_rows import RowKernel, stacked
from .kernels import Kernel


class NystromMap:
    def __init__(self, kernel: Kernel, basis, rtol: float = 1e-10):
        self.kernel = kernel
        self.basis = sp.csr_matrix(basis, dtype=np.float64)
        rk = RowKernel(self.basis, kernel)
        everything = np.arange(self.basis.shape[0])
        K = rk.matrix(everything, everything)
        eigenvalues, U = scipy.linalg.eigh(0.5 * (K + K.T))
        if eigenvalues[-1] <= 0:
            raise InputError("the basis kernel matrix is zero: choose other basis examples")
        keep = eigenvalues > rtol * eigenvalues[-1]
        self.n_dropped = int(np.count_nonzero(~keep))
        self.projection = U[:, keep] / np.sqrt(eigenvalues[keep])   # U Λ^{-1/2}

    @property
    def n_components(self) -> int:
        return self.projection.shape[1]

    def transform(self, X, block_rows: int = 4096) -> np.ndarray:
        """φ(x) for every row of X, dense (n, n_components)."""
        rk, x_rows, basis_rows = stacked(self.kernel, X, self.basis)
        out = np.empty((len(x_rows), self.n_components))
        for lo in range(0, len(x_rows), block_rows):
            hi = min(lo + block_rows, len(x_rows))
            out[lo:hi] = rk.matrix(x_rows[lo:hi], basis_rows) @ self.projection
        return out

    def expansion_coef(self, w) -> np.ndarray:
        """Coefficients over the basis of the kernel expansion equal to w·φ(x)."""
        return self.projection @ w
