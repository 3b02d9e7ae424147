"""Ordered classes with an absolute-error loss: a structured problem written by a user.

Labels are levels 1..k (say, ratings) whose order matters: predicting 5 for a 1 is
worse than predicting 2. The joint feature map is the multiclass one (x copied into
block y of a k·d vector), the loss is Δ(y, ŷ) = |y − ŷ|, so the 1-slack SVM learns to
avoid far misses more than near ones; cp_classify then reports the mean absolute error
as its average loss.

    cp_learn -c 100 --problem ordinal:OrdinalRegression ordinal.train ordinal.model
    cp_classify ordinal.test ordinal.model ordinal.predictions

with this directory the current one or on PYTHONPATH (see README.md).
"""

from __future__ import annotations

import numpy as np

from cpsvm.errors import InputError
from cpsvm.problems import MARGIN_RESCALING, PerExampleProblem


class OrdinalRegression(PerExampleProblem):
    """Levels 1..k; ``n_levels`` is k (default: the largest label of the data)."""

    def __init__(self, dataset, n_levels=None):
        y = dataset.y
        bad = np.flatnonzero((y != np.round(y)) | (y < 1))
        if len(bad):
            i = int(bad[0])
            raise InputError(
                f"expected a level 1..k, got {y[i]:g}",
                source=dataset.source,
                line=dataset.line_of(i),
            )
        self.X = dataset.X.tocsr()
        self.y = y.astype(np.int64)
        self.k = int(n_levels or self.y.max())
        if self.y.max() > self.k:
            i = int(np.argmax(self.y))
            raise InputError(
                f"expected a level 1..{self.k} (the model's), got {self.y[i]}",
                source=dataset.source,
                line=dataset.line_of(i),
            )
        self.d = self.X.shape[1]
        self.n_examples = len(self.y)
        self.size_psi = self.k * self.d

    # -- what cp_learn calls --------------------------------------------------------
    def true_label(self, i):
        return int(self.y[i])

    def psi(self, i, label):
        out = np.zeros(self.size_psi)
        out[(label - 1) * self.d : label * self.d] = self.X[i].toarray().ravel()
        return out

    def loss(self, i, label):
        return float(abs(int(label) - int(self.y[i])))

    def most_violated(self, i, w, rescaling):
        scores = w.reshape(self.k, self.d) @ self.X[i].toarray().ravel()
        yi = self.y[i]
        losses = np.abs(np.arange(1, self.k + 1) - yi).astype(float)
        gaps = scores[yi - 1] - scores  # w·δΨ_i(ŷ) for every ŷ
        values = losses - gaps if rescaling == MARGIN_RESCALING else losses * (1.0 - gaps)
        values[yi - 1] = 0.0
        return int(np.argmax(values)) + 1

    # -- what cp_classify calls -----------------------------------------------------
    def classify(self, x, w):
        return int(np.argmax(w.reshape(self.k, self.d) @ x)) + 1

    def predict(self, w, X):
        """All examples at once (the per-example ``classify`` would do the same)."""
        return list(np.argmax(np.asarray(X @ w.reshape(self.k, self.d).T), axis=1) + 1)

    def model_options(self):
        # The test file may not contain the highest level: keep k in the model.
        return {"n_levels": self.k}
