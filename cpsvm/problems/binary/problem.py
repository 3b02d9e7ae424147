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

from ...conventions import LOSS_SCALE, MARGIN_RESCALING, PSI_SCALE
from ...engine.hinge import hinge_cut, hinge_labels
from ...engine.margin_bounds import SortedMargins
from ...models import LinearModel
from ...sparse_ops import RowBlocks, as_csr
from ..base import StructuredProblem


class BiasFeature:
    """SVMperf's --b for the binary problems: ``bias`` (0 for none) as a constant last
    feature of X, regularised like the others, and the SVMlight model it gives."""

    def _set_features(self, X, bias):
        X = as_csr(X)
        if bias != 0:
            X = sp.hstack([X, np.full((X.shape[0], 1), float(bias))], format="csr")
        if not X.has_canonical_format:  # one pass to find out, if scipy does not know
            X.sum_duplicates()
        self.X = X
        self.rows = RowBlocks(X)
        self.bias = float(bias)

    def split_weights(self, w):
        """(weights of the original features, SVMlight threshold b) from a solution w."""
        if self.bias == 0:
            return w.copy(), 0.0
        return w[:-1].copy(), -w[-1] * self.bias

    def predict(self, w, X):
        weights, b = self.split_weights(w)
        return np.where(X @ weights - b > 0, 1.0, -1.0)


class BinaryProblem(BiasFeature, StructuredProblem):
    """``loss_scale``/``psi_scale`` give other conventions: (1, 0.5) is the plain hinge
    loss, δΨ = y·x and Δ = 1, as libocas and SVMlight write it."""

    def __init__(self, X, y, bias=0.0, loss_scale=LOSS_SCALE, psi_scale=PSI_SCALE):
        self._set_features(X, bias)
        self.y = np.asarray(y, dtype=np.float64)
        self.loss_scale, self.psi_scale = float(loss_scale), float(psi_scale)
        self.n_examples, self.size_psi = self.X.shape
        # Margin-change bounds in :meth:`cut` (cp_learn --margin-bounds): a
        # SortedMargins per (weights, rescaling), made at the first cut.
        self.margin_bounds = False
        self._bounds = None

    def scores(self, w, rows=None):
        return self.rows.dot(w) if rows is None else self.X[rows] @ w

    def _y(self, rows):
        return self.y if rows is None else self.y[rows]

    @property
    def flip_gain(self) -> float:
        """Flipping y_i costs Δ and earns w·δΨ_i = flip_gain·y_i·⟨w, x_i⟩."""
        return 2.0 * self.psi_scale

    def true_labels(self):
        return self.y

    def _threshold(self, rescaling):
        """y·⟨w, x⟩ below which a label flips: Δ/flip_gain (margin rescaling), where
        Δ − w·δΨ > 0, or 1/flip_gain (slack rescaling), where Δ·(1 − w·δΨ) > 0."""
        return (self.loss_scale if rescaling == MARGIN_RESCALING else 1.0) / self.flip_gain

    def separate(self, w, rescaling, rows=None):
        return hinge_labels(self._y(rows), self.scores(w, rows), self._threshold(rescaling), 1.0)

    def cut(self, w, weights, rescaling):
        """The most violated 1-slack cut at w over all examples, weighted:
        c = Σ weights_i·Δ_i(ŷ_i) and g = Σ weights_i·δΨ_i(ŷ_i) (margin rescaling; slack
        rescaling weights δΨ_i by Δ_i too), in one pass of the hinge kernel — the
        labelling of :meth:`separate` without forming it."""
        # In the threshold form (a = threshold, b = 1) each violator adds costs_i·a to c
        # and costs_i·y_i to its coefficient.
        scale = (
            self.flip_gain if rescaling == MARGIN_RESCALING else self.flip_gain * self.loss_scale
        )
        if self.margin_bounds:
            # The same sums with the rows whose side of the threshold cannot have changed
            # skipped (Guillory & Bilmes' Algorithm 2): c = a·Σ_V costs, g = Σ_V costs·y·x.
            if (
                self._bounds is None
                or self._bounds[0] is not weights
                or self._bounds[1] != rescaling
            ):
                self._bounds = (
                    weights,
                    rescaling,
                    SortedMargins(
                        self.X,
                        self.y,
                        scale * np.asarray(weights, np.float64),
                        a=self._threshold(rescaling),
                        rows=self.rows,
                    ),
                )
            ev = self._bounds[2].evaluate(w)
            return self._threshold(rescaling) * ev.weight, ev.grad
        coef = np.empty(self.n_examples)
        _, c, _ = hinge_cut(
            self.y,
            self.scores(w),
            scale * np.asarray(weights, np.float64),
            self._threshold(rescaling),
            1.0,
            coef,
        )
        return c, self.rows.rows_sum(coef)

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

    def to_model(self, w, n_train: int = 0, loss_id: int = 0):
        """An SVMlight linear model (SVMperf's compressed form)."""
        weights, b = self.split_weights(w)
        return LinearModel(weights, b, n_train=n_train)
