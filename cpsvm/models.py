"""Trained models: how they predict, nothing about how they were trained.

Decision values follow SVMlight: ``f(x) = w·x - b`` (linear) and
``f(x) = sum_i coef_i k(sv_i, x) - b`` (kernel), with ``coef_i = alpha_i y_i``.
Test features beyond the model's dimension are ignored, as ``svm_classify`` ignores them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .kernels import Kernel, row_sq_norms

# Rows per block when a kernel model classifies: bounds the dense kernel block's memory.
_KERNEL_BLOCK_ROWS = 2048


def fit_columns(X, n_features: int):
    """X with exactly ``n_features`` columns: extra ones dropped, missing ones zero."""
    X = sp.csr_matrix(X)
    if X.shape[1] == n_features:
        return X
    if X.shape[1] > n_features:
        return X[:, :n_features].tocsr()
    return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))


@dataclass
class LinearModel:
    """Binary linear classifier ``sign(w·x - b)``."""

    w: np.ndarray
    b: float = 0.0
    n_train: int = 0

    @property
    def n_features(self) -> int:
        return len(self.w)

    def decision_function(self, X) -> np.ndarray:
        return fit_columns(X, self.n_features) @ self.w - self.b

    def predict(self, X) -> np.ndarray:
        return np.where(self.decision_function(X) > 0, 1.0, -1.0)


@dataclass
class KernelModel:
    """Binary kernel expansion ``sign(sum_i coef_i k(sv_i, x) - b)``."""

    support_vectors: sp.csr_matrix
    coef: np.ndarray
    b: float
    kernel: Kernel
    n_train: int = 0
    sv_comments: list | None = field(default=None, repr=False)

    @property
    def n_features(self) -> int:
        return self.support_vectors.shape[1]

    def decision_function(self, X, progress=None, single_precision=False) -> np.ndarray:
        """Decision values, computed in row blocks; ``progress(n_done)`` after each.

        ``single_precision``: inner products in 32-bit floats as SVMlight computes them.
        """
        X = fit_columns(X, self.n_features)
        sv = self.support_vectors
        if single_precision:
            X, sv = X.astype(np.float32), sv.astype(np.float32)
        sv_sq = row_sq_norms(sv)
        out = np.empty(X.shape[0])
        for lo in range(0, X.shape[0], _KERNEL_BLOCK_ROWS):
            hi = min(lo + _KERNEL_BLOCK_ROWS, X.shape[0])
            out[lo:hi] = self.kernel.matrix(X[lo:hi], sv, sq_norms_b=sv_sq,
                                            single_precision=single_precision) @ self.coef
            if progress is not None:
                progress(hi - lo)
        out -= self.b
        return out

    def predict(self, X) -> np.ndarray:
        return np.where(self.decision_function(X) > 0, 1.0, -1.0)

    def to_linear(self) -> LinearModel:
        """The same classifier as one weight vector (linear kernel only)."""
        if not self.kernel.is_linear:
            raise ValueError("only a linear-kernel model has a weight vector")
        w = np.asarray(self.support_vectors.T @ self.coef).ravel()
        return LinearModel(w=w, b=self.b, n_train=self.n_train)


@dataclass
class MulticlassModel:
    """Crammer-Singer multiclass: class ``argmax_y w_y·x`` over classes 1..k.

    W has one row per class (row y-1 holds class y's weights), at the scale the model
    file holds (SVMmulticlass writes 100x the Crammer-Singer weights).
    """

    W: np.ndarray
    n_train: int = 0
    loss_id: int = 0

    @property
    def n_classes(self) -> int:
        return self.W.shape[0]

    @property
    def n_features(self) -> int:
        return self.W.shape[1]

    def decision_function(self, X) -> np.ndarray:
        """Scores, shape (n, k)."""
        return np.asarray(fit_columns(X, self.n_features) @ self.W.T)

    def predict(self, X) -> np.ndarray:
        # argmax takes the first of tied classes, as svm_multiclass_classify does.
        return np.argmax(self.decision_function(X), axis=1) + 1
