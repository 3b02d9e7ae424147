"""Binary classification as a structured problem, in SVMperf's scale.

Labels are ±1, Δ(y, ŷ) = 100·[y ≠ ŷ] and Ψ(x, y) = 50·y·x, so a flipped label gives
δΨ = 100·y·x. With these the 1-slack optimum is the SVMlight one at
C_light = C·100/n — SVMperf's documented conversion — and the primal objective
½|w|² + C·ξ equals SVMlight's ½|w|² + C_light·Σ hinge: the numbers SVMperf prints.
A bias is a constant feature (SVMperf's ``--b``), regularised like the others.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..sparse_ops import RowBlocks, as_csr
from .base import MARGIN_RESCALING, StructuredProblem

LOSS_SCALE = 100.0
PSI_SCALE = 50.0


class BinaryProblem(StructuredProblem):
    """``loss_scale``/``psi_scale`` give other conventions: (1, 0.5) is the plain hinge
    loss, δΨ = y·x and Δ = 1, as libocas and SVMlight write it."""

    def __init__(self, X, y, bias=0.0, loss_scale=LOSS_SCALE, psi_scale=PSI_SCALE):
        X = as_csr(X)
        if bias != 0:
            X = sp.hstack([X, np.full((X.shape[0], 1), float(bias))], format="csr")
        if not X.has_canonical_format:   # one pass to find out, if scipy does not know
            X.sum_duplicates()
        self.X = X
        self.rows = RowBlocks(X)
        self.y = np.asarray(y, dtype=np.float64)
        self.bias = float(bias)
        self.loss_scale, self.psi_scale = float(loss_scale), float(psi_scale)
        self.n_examples, self.size_psi = X.shape

    def scores(self, w, rows=None):
        return self.rows.dot(w) if rows is None else self.X[rows] @ w

    def _y(self, rows):
        return self.y if rows is None else self.y[rows]

    def true_labels(self):
        return self.y

    def separate(self, w, rescaling, rows=None):
        y = self._y(rows)
        functional_margin = y * self.scores(w, rows)
        # Flipping costs Δ and earns w·δΨ = 2·psi_scale·y·w·x.
        flip_gain = 2.0 * self.psi_scale
        threshold = self.loss_scale / flip_gain if rescaling == MARGIN_RESCALING \
            else 1.0 / flip_gain
        return np.where(functional_margin < threshold, -y, y)

    def losses(self, labels, rows=None):
        return self.loss_scale * (labels != self._y(rows))

    def margins(self, w, labels, rows=None):
        return self.psi_scale * (self._y(rows) - labels) * self.scores(w, rows)

    def delta_psi_sum(self, weights, labels, rows=None):
        coef = self.psi_scale * np.asarray(weights) * (self._y(rows) - labels)
        if rows is None:
            return self.rows.rows_sum(coef)
        nz = np.flatnonzero(coef)
        return np.asarray(self.X[np.asarray(rows)[nz]].T @ coef[nz]).ravel()

    def split_weights(self, w):
        """(weights of the original features, SVMlight threshold b) from a solution w."""
        if self.bias == 0:
            return w.copy(), 0.0
        return w[:-1].copy(), -w[-1] * self.bias

    def predict(self, w, X):
        weights, b = self.split_weights(w)
        return np.where(X @ weights - b > 0, 1.0, -1.0)
