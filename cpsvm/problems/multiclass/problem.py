"""Crammer-Singer multiclass as a structured problem (SVMmulticlass V2.20).

Labels are 1..k; Ψ(x, y) puts x into column y of a (d, k) matrix, flat: x_j at
j·k + y − 1 (the transpose of SVMmulticlass's model file, whose rows are the classes:
:meth:`MulticlassProblem.to_model` turns it), and Δ(y, ŷ) = 100·[y ≠ ŷ]. The optimum w
is 100× the Crammer-Singer one at C_cs = C/(100·n), as SVMmulticlass's.

Laid out so, the scores X·W read k contiguous weights per non-zero of X, and the cuts
are kept as their labellings (:class:`cpsvm.engine.cuts.ClassCuts`, the
``cut_table``): training needs one (d, k) matrix besides the weights, whatever the
number of cuts.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...conventions import LOSS_SCALE, MARGIN_RESCALING
from ...engine.cuts import ClassCuts
from ...engine.hinge import multiclass_most_violated
from ...memory import check_fits
from ...models import MulticlassModel
from ...sparse_ops import RowBlocks, as_csr
from ..base import StructuredProblem

# See MulticlassProblem.cut_table.
VECTOR_CUTS = 100
# Arrays of examples x classes (float64) a multiclass training holds at once: the scores
# X·W and what is taken from them (the most violated classes' margins), or coordinate
# descent's dual variables. The peaks of cp_learn and ocas_learn follow three to four.
ROW_CLASS_ARRAYS = 4


def check_row_class_memory(n_examples: int, n_classes: int, source=None):
    """InputError, before training, when the examples x classes arrays of a multiclass
    training would not fit in this machine's memory."""
    check_fits(
        8.0 * ROW_CLASS_ARRAYS * n_examples * n_classes,
        f"multiclass training on {n_examples} examples and {n_classes} classes (its "
        "scores and dual variables: examples x classes)",
        source=source,
    )


class MulticlassProblem(StructuredProblem):
    """``flip_gain`` None: not a binary hinge (see :mod:`cpsvm.engine.ocas`);
    ``loss_scale`` 1 gives the plain Crammer-Singer loss (libocas's msvmocas)."""

    flip_gain = None

    def __init__(self, X, y, n_classes=None, loss_scale=LOSS_SCALE):
        X = as_csr(X)
        if not X.has_canonical_format:  # one pass to find out, if scipy does not know
            X.sum_duplicates()
        self.X = X
        self.rows = RowBlocks(X)
        self.y = np.asarray(y).astype(np.int64)
        self.n_classes = int(n_classes or self.y.max())
        self.loss_scale = float(loss_scale)
        self.n_features = X.shape[1]
        self.n_examples = X.shape[0]
        self.size_psi = self.n_classes * self.n_features
        check_row_class_memory(self.n_examples, self.n_classes)

    def _sub(self, rows):
        return (self.X, self.y) if rows is None else (self.X[rows], self.y[rows])

    def weight_matrix(self, w) -> np.ndarray:
        """w as the (d, k) matrix it is (a view)."""
        return np.asarray(w).reshape(self.n_features, self.n_classes)

    def scores(self, w, rows=None):
        W = self.weight_matrix(w)
        return self.rows.times(W) if rows is None else np.asarray(self.X[rows] @ W)

    def cut_table(self, weights):
        """The cuts Σ weights_i·δΨ_i kept as labellings (see the module docstring), or
        None, as vectors, when the vectors of VECTOR_CUTS cuts hold no more entries than
        X has non-zeros: then they cost less than the labellings' two products over X
        per iteration until a few hundred cuts are kept (dna, satimage), and little
        memory."""
        if self.size_psi * VECTOR_CUTS <= self.X.nnz:
            return None
        return ClassCuts(self.rows, self.y, self.n_classes, weights)

    def true_labels(self):
        return self.y

    def separate(self, w, rescaling, rows=None):
        _, y = self._sub(rows)
        return multiclass_most_violated(
            self.scores(w, rows), y, rescaling == MARGIN_RESCALING, self.loss_scale
        )

    def losses(self, labels, rows=None):
        _, y = self._sub(rows)
        return self.loss_scale * (labels != y)

    def margins(self, w, labels, rows=None):
        return self.margins_many(w, [labels], rows)[0]

    def margins_many(self, w, labellings, rows=None):
        """w·δΨ_i(labels_i) of each labelling, from one product X·W."""
        _, y = self._sub(rows)
        s = self.scores(w, rows)
        idx = np.arange(len(y))
        true = s[idx, y - 1]
        return [true - s[idx, np.asarray(labels, dtype=np.int64) - 1] for labels in labellings]

    def delta_psi_sum(self, weights, labels, rows=None):
        _, y = self._sub(rows)
        labels = np.asarray(labels, dtype=np.int64)
        weights = np.broadcast_to(np.asarray(weights, dtype=np.float64), y.shape)
        moved = np.flatnonzero((labels != y) & (weights != 0))
        examples = moved if rows is None else np.asarray(rows, dtype=np.int64)[moved]
        out = np.zeros((self.n_features, self.n_classes))
        self.rows.add_by_class(examples, weights[moved], y[moved] - 1, labels[moved] - 1, out)
        return out.reshape(-1)

    def predict(self, w, X):
        s = sp.csr_matrix(X) @ self.weight_matrix(w)
        return np.argmax(s, axis=1) + 1

    def to_model(self, w, n_train: int = 0, loss_id: int = 0):
        """An SVMmulticlass model, one weight row per class."""
        return MulticlassModel(
            np.ascontiguousarray(self.weight_matrix(w).T), n_train=n_train, loss_id=loss_id
        )
