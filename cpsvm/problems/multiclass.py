"""Crammer-Singer multiclass as a structured problem (SVMmulticlass V2.20).

Labels are 1..k; Ψ(x, y) puts x into block y of a k·d vector (block y at (y-1)·d, the
layout of SVMmulticlass's model file) and Δ(y, ŷ) = 100·[y ≠ ŷ]. The optimum w is
100× the Crammer-Singer one at C_cs = C/(100·n), as SVMmulticlass's.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..conventions import LOSS_SCALE
from ..engine.hinge import multiclass_most_violated
from ..sparse_ops import RowBlocks, as_csr
from .base import MARGIN_RESCALING, StructuredProblem


class MulticlassProblem(StructuredProblem):
    """``flip_gain`` None: not a binary hinge (see :mod:`cpsvm.engine.ocas`);
    ``loss_scale`` 1 gives the plain Crammer-Singer loss (libocas's msvmocas)."""

    flip_gain = None

    def __init__(self, X, y, n_classes=None, loss_scale=LOSS_SCALE):
        X = as_csr(X)
        if not X.has_canonical_format:   # one pass to find out, if scipy does not know
            X.sum_duplicates()
        self.X = X
        self.rows = RowBlocks(X)
        self.y = np.asarray(y).astype(np.int64)
        self.n_classes = int(n_classes or self.y.max())
        self.loss_scale = float(loss_scale)
        self.n_features = X.shape[1]
        self.n_examples = X.shape[0]
        self.size_psi = self.n_classes * self.n_features

    def _sub(self, rows):
        return (self.X, self.y) if rows is None else (self.X[rows], self.y[rows])

    def scores(self, w, rows=None):
        W = w.reshape(self.n_classes, self.n_features)
        return self.rows.dot(W) if rows is None else np.asarray(self.X[rows] @ W.T)

    def true_labels(self):
        return self.y

    def separate(self, w, rescaling, rows=None):
        _, y = self._sub(rows)
        return multiclass_most_violated(self.scores(w, rows), y,
                                        rescaling == MARGIN_RESCALING, self.loss_scale)

    def losses(self, labels, rows=None):
        _, y = self._sub(rows)
        return self.loss_scale * (labels != y)

    def margins(self, w, labels, rows=None):
        _, y = self._sub(rows)
        s = self.scores(w, rows)
        idx = np.arange(len(y))
        return s[idx, y - 1] - s[idx, labels - 1]

    def delta_psi_sum(self, weights, labels, rows=None):
        X, y = self._sub(rows)
        weights = np.asarray(weights, dtype=np.float64)
        if rows is None:
            coef = np.where(labels != y, np.broadcast_to(weights, y.shape), 0.0)
            return self.rows.rows_sum(coef, y - 1, np.asarray(labels, dtype=np.int64) - 1,
                                      self.n_classes)
        moved = np.flatnonzero((labels != y) & (weights != 0))
        n = len(moved)
        # Row i of M has +weight in class y_i and -weight in class ŷ_i: Mᵀ X = Σ w_i δΨ_i.
        M = sp.csr_matrix(
            (np.concatenate([weights[moved], -weights[moved]]),
             (np.concatenate([np.arange(n), np.arange(n)]),
              np.concatenate([y[moved] - 1, labels[moved] - 1]))),
            shape=(n, self.n_classes))
        return np.asarray((M.T @ X[moved]).todense()).ravel()

    def predict(self, w, X):
        s = sp.csr_matrix(X) @ w.reshape(self.n_classes, -1).T
        return np.argmax(s, axis=1) + 1

    def to_model(self, w, n_train: int = 0, loss_id: int = 0):
        """An SVMmulticlass model, one weight row per class."""
        from ..models import MulticlassModel
        return MulticlassModel(w.reshape(self.n_classes, self.n_features), n_train=n_train,
                               loss_id=loss_id)
