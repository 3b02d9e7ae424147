"""SVMlight's kernels (``-t 0..3`` with ``-d -g -s -r``) between rows of CSR matrices."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit

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

    def matrix(self, A, B, *, sq_norms_b=None, single_precision=False) -> np.ndarray:
        """Dense kernel matrix K[i, j] = k(A_i, B_j) for CSR A, B.

        ``single_precision`` reproduces SVMlight's arithmetic: feature values are 32-bit
        floats, each product of two is rounded to 32 bits and the sum runs in double
        (checked against svm_classify's output on SVMlight's own models).
        """
        if single_precision:
            A, B = sp.csr_matrix(A, dtype=np.float32), sp.csr_matrix(B, dtype=np.float32)
            sq_norms_b = None
            dots = _dots_of_single_products(A.indptr, A.indices, A.data, B.indptr,
                                            B.indices, B.data, A.shape[1])
        else:
            dots = A @ B.T
            dots = dots.toarray() if sp.issparse(dots) else np.asarray(dots, np.float64)
        return self.from_dots(dots, row_sq_norms(A),
                              row_sq_norms(B) if sq_norms_b is None else sq_norms_b)

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


def row_sq_norms(A) -> np.ndarray:
    """Squared Euclidean norm of every row of a CSR matrix, in float64.

    For float32 data the sum runs in float32 in index order, as SVMlight's.
    """
    A = sp.csr_matrix(A)
    return _row_sq_norms(A.indptr, A.data).astype(np.float64)


@njit(cache=True)
def _row_sq_norms(indptr, data):
    out = np.zeros(len(indptr) - 1)
    for i in range(len(indptr) - 1):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * data[k]  # float32 data: product rounded to 32 bits, as SVMlight
        out[i] = acc
    return out


@njit(cache=True)
def _dots_of_single_products(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data,
                             n_features):
    """A·Bᵀ for float32 CSR rows: products in float32, sums in float64 (SVMlight's sprod)."""
    n_a, n_b = len(a_indptr) - 1, len(b_indptr) - 1
    out = np.zeros((n_a, n_b))
    dense = np.zeros(n_features, np.float32)
    for j in range(n_b):
        for k in range(b_indptr[j], b_indptr[j + 1]):
            if b_indices[k] < n_features:
                dense[b_indices[k]] = b_data[k]
        for i in range(n_a):
            acc = 0.0
            for k in range(a_indptr[i], a_indptr[i + 1]):
                acc += a_data[k] * dense[a_indices[k]]
            out[i, j] = acc
        for k in range(b_indptr[j], b_indptr[j + 1]):
            if b_indices[k] < n_features:
                dense[b_indices[k]] = 0.0
    return out
