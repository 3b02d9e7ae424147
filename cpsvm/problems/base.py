"""The structured-problem protocol: SVMstruct's API in Python.

A problem fixes a joint feature map Ψ(x, y) of length ``size_psi``, a loss Δ(y, ŷ) and
a separation oracle (loss-augmented argmax). The engine sees only these batched
methods; ``labels`` is whatever the problem uses for one labelling of all examples
(a numpy array for the built-in problems, a list of objects for a user's problem).
Writing δΨ_i(ŷ) = Ψ(x_i, y_i) − Ψ(x_i, ŷ):

* ``separate(w, rescaling, rows)`` — per example, argmax_ŷ of Δ_i(ŷ) − w·δΨ_i(ŷ)
  (margin rescaling, 2) or Δ_i(ŷ)·(1 − w·δΨ_i(ŷ)) (slack rescaling, 1): the constants of
  :mod:`cpsvm.conventions`;
* ``losses(labels, rows)`` — Δ_i(ŷ_i);
* ``margins(w, labels, rows)`` — w·δΨ_i(ŷ_i);
* ``delta_psi_sum(weights, labels, rows)`` — Σ_i weights_i δΨ_i(ŷ_i), a dense vector;
* ``predict(w, X)`` — inference, argmax_y w·Ψ(x, y), for new examples;
* ``to_model(w, n_train, loss_id)`` — the trained model (a class of :mod:`cpsvm.models`):
  each problem decides which model kind, and so which model file, its w becomes.

``rows`` (an index array or None for all) lets the n-slack solver work on batches.
A user problem subclasses :class:`PerExampleProblem`, which provides the batched
methods from per-example ones (``psi``, ``loss``, ``most_violated``, ``classify``).

Optional methods a problem may add for speed (the engine checks for them):
``margins_many(w, labellings)`` (the -w 4 cache: margins of several labellings from one
pass, :mod:`cpsvm.engine.cuts`); ``split_labels(labels, rows)`` (n-slack: the labelling
of each example alone, when a labelling is not one entry per example); and, for -w 9 on
problems whose labellings cannot be listed, ``scores``, ``separate_at``, ``margins_at``,
``margins_many_at`` and ``n_weights_at`` (:mod:`cpsvm.engine.ocas`). The HMM problem
(:mod:`cpsvm.problems.hmm.problem`) has them all.
"""

from __future__ import annotations

import numpy as np


class StructuredProblem:
    """Base of every problem; subclasses implement the batched methods above."""

    n_examples: int
    size_psi: int

    def true_labels(self):
        raise NotImplementedError

    def separate(self, w, rescaling, rows=None):
        raise NotImplementedError

    def losses(self, labels, rows=None) -> np.ndarray:
        raise NotImplementedError

    def margins(self, w, labels, rows=None) -> np.ndarray:
        raise NotImplementedError

    def delta_psi_sum(self, weights, labels, rows=None) -> np.ndarray:
        raise NotImplementedError

    def to_model(self, w, n_train: int = 0, loss_id: int = 0):
        """The model that predicts with the solution ``w`` (see cpsvm.models)."""
        raise NotImplementedError

    def pick(self, candidates, choice):
        """Labelling taking, for example i, candidates[choice[i]]'s label of i."""
        if isinstance(candidates[0], np.ndarray):
            return np.stack(candidates)[choice, np.arange(len(choice))]
        return [candidates[c][i] for i, c in enumerate(choice)]


class PerExampleProblem(StructuredProblem):
    """Adapter for problems written one example at a time (e.g. a user's own).

    Subclasses take the dataset in their constructor (``Class(dataset)``, or
    ``Class(dataset, **model_options())`` when cp_classify rebuilds them on a test file),
    set ``n_examples`` and ``size_psi`` and implement ``psi(i, y)`` (dense or
    scipy-sparse vector of length size_psi), ``true_label(i)``, ``loss(i, ybar)``,
    ``most_violated(i, w, rescaling)`` and ``classify(x, w)`` (``x``: the example's
    feature row, a 1-D dense array). Optional: a batched ``predict(w, X)``,
    ``model_options()`` (a JSON-able dict the model file keeps and cp_classify passes back
    to the constructor, e.g. the number of classes seen in training) and
    ``format_label(y)`` (the text of a prediction in cp_classify's output).
    Their model is a :class:`cpsvm.models.UserProblemModel` recording ``module:Class``.
    """

    def _rows(self, rows):
        return range(self.n_examples) if rows is None else rows

    def _delta_psi(self, i, ybar):
        d = self.psi(i, self.true_label(i)) - self.psi(i, ybar)
        return np.asarray(d.todense()).ravel() if hasattr(d, "todense") else np.asarray(d)

    def true_labels(self):
        return [self.true_label(i) for i in range(self.n_examples)]

    def separate(self, w, rescaling, rows=None):
        return [self.most_violated(i, w, rescaling) for i in self._rows(rows)]

    def losses(self, labels, rows=None):
        return np.array(
            [self.loss(i, yb) for i, yb in zip(self._rows(rows), labels)], dtype=np.float64
        )

    def margins(self, w, labels, rows=None):
        return np.array(
            [float(w @ self._delta_psi(i, yb)) for i, yb in zip(self._rows(rows), labels)]
        )

    def delta_psi_sum(self, weights, labels, rows=None):
        total = np.zeros(self.size_psi)
        for i, yb, a in zip(self._rows(rows), labels, weights):
            if a != 0:
                total += a * self._delta_psi(i, yb)
        return total

    def predict(self, w, X):
        sparse = hasattr(X, "toarray")
        return [
            self.classify(X[i].toarray().ravel() if sparse else np.asarray(X[i]), w)
            for i in range(X.shape[0])
        ]

    def model_options(self) -> dict:
        return {}

    def format_label(self, y) -> str:
        if isinstance(y, (float, np.floating)) and float(y).is_integer():
            return str(int(y))
        return str(y.item() if isinstance(y, np.generic) else y)

    def to_model(self, w, n_train: int = 0, loss_id: int = 0):
        from ..models import UserProblemModel

        cls = type(self)
        return UserProblemModel(
            spec=f"{cls.__module__}:{cls.__qualname__}",
            w=np.asarray(w, dtype=np.float64).copy(),
            n_train=n_train,
            n_features=getattr(self, "_cpsvm_n_features", 0),
            options=dict(self.model_options()),
        )
