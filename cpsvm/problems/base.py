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

Every other hook the engine or a solver calls is declared on :class:`StructuredProblem`
with its default, so that no caller asks a problem whether it has one: a problem overrides
what it does better (for speed, or because its labellings are laid out otherwise). The
hooks whose absence changes the algorithm (``cut``, ``separate_at``) default to None;
the others default to what the engine would do without them. The HMM problem
(:mod:`cpsvm.problems.hmm.problem`) has most of them.
"""

from __future__ import annotations

import numpy as np


class StructuredProblem:
    """Base of every problem; subclasses implement the batched methods above and may
    override the optional hooks below (each with the default the engine relies on)."""

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

    # -- optional hooks of the cutting-plane oracle (cpsvm.engine.oracles) ----------------

    # cut(w, weights, rescaling) -> (c, g): the most violated 1-slack cut at w,
    # c = Σ weights_i·Δ_i(ŷ_i) and g = Σ weights_i·δΨ_i(ŷ_i) (slack rescaling: δΨ_i
    # weighted by Δ_i too), without forming the labelling (binary: one pass of the hinge
    # kernel). None: the oracle builds the cut from ``separate``'s labelling.
    cut = None

    def cut_table(self, weights):
        """A table that keeps the cuts Σ weights_i·δΨ_i in the problem's own form
        (Crammer-Singer: :class:`cpsvm.engine.cuts.ClassCuts`), or None: the oracle keeps
        them as vectors (:class:`cpsvm.engine.cuts.CutVectors`)."""
        return None

    def margins_many(self, w, labellings) -> list:
        """``margins(w, labels)`` of each labelling (the -w 4 cache, cpsvm.engine.cuts): a
        problem whose margins share work across labellings (the scores of w) overrides it."""
        return [self.margins(w, labels) for labels in labellings]

    def split_labels(self, labels, rows) -> list:
        """n-slack: the labelling of each example of ``rows`` alone, from the labelling
        ``separate(w, rescaling, rows)`` returned; by default one entry per example
        (sequences, trees and queries lay theirs out otherwise)."""
        return [labels[j : j + 1] for j in range(len(rows))]

    # The factor of -e in this problem's loss units (rank: svm_rank_learn's -e is relative
    # to the average number of pairs per query).
    epsilon_scale = 1.0

    # -- the binary hinge (cpsvm.engine.ocas, solvers' -w 5 and margin bounds) -------------

    # Flipping y_i costs Δ and earns w·δΨ_i = flip_gain·y_i·⟨w, x_i⟩; None: the problem is
    # not a binary hinge (multiclass, structured).
    flip_gain: float | None = None
    # None: no per-example hinge whose cut the margin bounds could prune; False or True
    # (binary): whether ``cut`` prunes with them (cp_learn --margin-bounds, set by the
    # solver before training).
    margin_bounds: bool | None = None

    # -- OCAS's line search (-w 9: cpsvm.engine.ocas.OcasOracle) ---------------------------

    # Δ of one wrong label, in the problem's scale (the hinge's L, OCAS's loss).
    loss_scale: float

    def scores(self, w, rows=None):
        """The outputs the problem's loss reads at w (binary ⟨w, x_i⟩, multiclass every
        class's score, structured the per-example scores ``separate_at`` takes)."""
        raise NotImplementedError

    # separate_at(out, w) -> labels: ``separate`` (margin rescaling) at the outputs ``out``
    # (of ``scores``) and the first ``n_weights_at`` weights of w, which OCAS moves along a
    # line without forming w. None: the problem's labellings can be listed per example
    # (binary, multiclass) and OCAS finds them itself. With it a problem gives
    # ``margins_at``.
    separate_at = None

    def margins_at(self, out, w, labels) -> np.ndarray:
        """``margins`` at the outputs ``out`` and the first ``n_weights_at`` weights w
        (linear in (out, w): OCAS's line search adds them)."""
        raise NotImplementedError

    def margins_many_at(self, out, w, labellings) -> list:
        """``margins_at`` of each labelling (overridden where they share work)."""
        return [self.margins_at(out, w, labels) for labels in labellings]

    # How many leading weights of w ``separate_at`` and ``margins_at`` read; None: all.
    n_weights_at: int | None = None


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

    # The training data's width (set by cpsvm.problems.user when it builds the problem):
    # cp_classify gives the problem test rows of this width.
    _cpsvm_n_features = 0

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
            n_features=self._cpsvm_n_features,
            options=dict(self.model_options()),
        )
