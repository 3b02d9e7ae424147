"""SVMlight's kernels (``-t 0..3`` with ``-d -g -s -r``) between rows of CSR matrices."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError

LINEAR, POLYNOMIAL, RBF, SIGMOID = 0, 1, 2, 3
KERNEL_NAMES = {LINEAR: "linear", POLYNOMIAL: "polynomial", RBF: "rbf", SIGMOID: "sigmoid"}


@dataclass(frozen=True)
class Kernel:
    """k(a, b) as SVMlight defines it.

    0 linear ``a·b``; 1 polynomial ``(s a·b + r)^d``; 2 RBF ``exp(-g |a-b|^2)``;
    3 sigmoid ``tanh(s a·b + r)``. Defaults are SVMlight's.
    """

    kind: int = LINEAR
    degree: int = 3
    gamma: float = 1.0
    coef_lin: float = 1.0
    coef_const: float = 1.0

    def __post_init__(self):
        if self.kind not in KERNEL_NAMES:
            raise InputError(f"expected kernel type 0, 1, 2 or 3 (-t), got {self.kind}")
        if self.kind == RBF and not self.gamma > 0:
            raise InputError(f"expected an RBF gamma > 0 (-g), got {self.gamma}")

    @property
    def is_linear(self) -> bool:
        return self.kind == LINEAR

    def matrix(self, A, B) -> np.ndarray:
        """Dense kernel matrix K[i, j] = k(A_i, B_j) for CSR A, B: the plain definition
        (a scipy product and :meth:`from_dots`), a reference for tests. The library's
        kernel products are :mod:`cpsvm.kernel_rows`'."""
        import scipy.sparse as sp

        A, B = sp.csr_matrix(A, dtype=np.float64), sp.csr_matrix(B, dtype=np.float64)
        dots = A @ B.T
        dots = dots.toarray() if sp.issparse(dots) else np.asarray(dots, np.float64)
        return self.from_dots(dots, _sq_norms(A), _sq_norms(B))

    def from_dots(self, dots, sq_a, sq_b) -> np.ndarray:
        """Apply the kernel to inner products (in place); squared norms serve RBF."""
        if self.kind == LINEAR:
            return dots
        if self.kind == POLYNOMIAL:
            dots *= self.coef_lin
            dots += self.coef_const
            return np.power(dots, self.degree, out=dots)
        if self.kind == RBF:
            dots *= -2.0
            dots += sq_a[:, None]
            dots += sq_b[None, :]
            np.maximum(dots, 0.0, out=dots)  # rounding can make |a-b|^2 slightly negative
            dots *= -self.gamma
            return np.exp(dots, out=dots)
        dots *= self.coef_lin
        dots += self.coef_const
        return np.tanh(dots, out=dots)


def _sq_norms(A) -> np.ndarray:
    return np.asarray(A.multiply(A).sum(axis=1), dtype=np.float64).ravel()
