"""SVMlight's kernels (``-t 0..3`` with ``-d -g -s -r``) between rows of CSR matrices."""

from __future__ import annotations

import math
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
        # A model file holds every parameter, and inf or nan makes no kernel value.
        for flag, value in (("-g", self.gamma), ("-s", self.coef_lin), ("-r", self.coef_const)):
            if not math.isfinite(value):
                raise InputError(f"expected a finite kernel parameter {flag}, got {value:g}")

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
            with np.errstate(over="ignore"):  # -g·|a-b|^2 = -inf: the kernel value 0
                dots *= -self.gamma
            return np.exp(dots, out=dots)
        dots *= self.coef_lin
        dots += self.coef_const
        return np.tanh(dots, out=dots)


# |k(x, x)| at most this: the linear kernel's bound for feature values up to 1e150 (the
# readers' limit), so that sums and products of kernel values stay finite.
KERNEL_VALUE_LIMIT = 1e300


def check_kernel_values(kernel: Kernel, dataset) -> None:
    """InputError naming the example (its file and line) whose polynomial kernel values
    would overflow: |(s a.b + r)^d| <= (|s|·max(|a|², |b|²) + |r|)^d, so each example's
    (|s|·|x|² + |r|)^d at most KERNEL_VALUE_LIMIT keeps every kernel value finite. The
    other kernels are bounded (RBF, sigmoid) or covered by the readers' limit (linear)."""
    if kernel.kind != POLYNOMIAL or kernel.degree < 1 or dataset.X.shape[0] == 0:
        return
    with np.errstate(over="ignore", invalid="ignore"):
        bound = abs(kernel.coef_lin) * _sq_norms(dataset.X) + abs(kernel.coef_const)
        largest = int(np.argmax(bound))
        value = float(np.power(bound[largest], float(kernel.degree)))
    if not value <= KERNEL_VALUE_LIMIT:
        root = (KERNEL_VALUE_LIMIT ** (1.0 / kernel.degree) - abs(kernel.coef_const)) / max(
            abs(kernel.coef_lin), 1e-300
        )
        raise InputError(
            f"expected feature values the polynomial kernel (-t 1 -d {kernel.degree}) can "
            f"raise to its power: (|s|*|x|^2 + |r|)^d = {value:.3g} for this example, past "
            f"{KERNEL_VALUE_LIMIT:g} (|x|^2 up to {max(root, 0.0):.3g} with -s "
            f"{kernel.coef_lin:g} -r {kernel.coef_const:g})",
            source=dataset.source,
            line=dataset.line_of(largest),
        )


def kernel_diagonal(kernel: Kernel, X) -> np.ndarray:
    """k(x_i, x_i) of every row of the CSR matrix X."""
    sq = _sq_norms(X)
    if kernel.kind == RBF:
        return np.ones(len(sq))
    return np.array(kernel.from_dots(sq[None, :].copy(), None, None)[0])


def _sq_norms(A) -> np.ndarray:
    return np.asarray(A.multiply(A).sum(axis=1), dtype=np.float64).ravel()
