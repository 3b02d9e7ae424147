"""Trained models: how they predict, nothing about how they were trained.

Decision values follow SVMlight: ``f(x) = w·x - b`` (linear) and
``f(x) = sum_i coef_i k(sv_i, x) - b`` (kernel), with ``coef_i = alpha_i y_i``.
Test features beyond the model's dimension are ignored, as ``svm_classify`` ignores them.

A model trained on renumbered columns (huge or hashed feature indices,
:mod:`cpsvm.columns`) holds its weights in those columns and their original 0-based
indices in ``feature_ids`` (None: the columns are the indices); it takes examples in the
original indices, and its file holds the original indices.

The kernels, the Viterbi decoder and the grammar are imported by the models that use
them: a linear model's run (a command's start-up) never loads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .columns import onto_columns, union_columns
from .errors import InputError
from .kernels import Kernel

# Rows per block when a kernel model classifies: the granularity of its progress reports.
_KERNEL_BLOCK_ROWS = 2048


_FLOAT32 = np.finfo(np.float32)


def svmlight_floats(values):
    """``values`` as SVMlight stores them, 32-bit floats, except those a 32-bit float
    cannot hold (beyond its largest, or non-zero below its smallest normal number: inf,
    or a subnormal or 0): kept in double precision, where rounding them would turn a
    right answer into nan or 0. Returns (the values as float64, a mask of those kept)."""
    values = np.asarray(values, dtype=np.float64)
    size = np.abs(values)
    kept = (size > _FLOAT32.max) | ((size < _FLOAT32.smallest_normal) & (values != 0))
    with np.errstate(over="ignore"):
        rounded = values.astype(np.float32).astype(np.float64)
    if kept.any():
        rounded[kept] = values[kept]
    return rounded, kept


def svmlight_features(X):
    """Test examples' features as svm_classify reads them, the model's decision values
    then matching its: a copy of the CSR matrix X with its values rounded to 32-bit
    floats (:func:`svmlight_floats`: those a 32-bit float cannot hold kept in double
    precision). Returns (that copy, a mask of the values kept)."""
    X = X.copy()
    X.data, kept = svmlight_floats(X.data)
    return X, kept


def fit_columns(X, n_features: int, feature_ids=None):
    """X in a model's columns: with ``feature_ids`` (the model's original indices) each
    column renumbered to its position there, else exactly ``n_features`` columns; the
    features the model does not have dropped, missing ones zero."""
    return onto_columns(X, n_features, feature_ids)[0]


def highest_index(model) -> int:
    """The largest original feature index of a model, 1-based (its file's "highest
    feature index"): n_features unless its columns were renumbered."""
    ids = getattr(model, "feature_ids", None)
    if ids is None:
        return model.n_features
    return int(ids[-1]) + 1 if len(ids) else 0


@dataclass
class LinearModel:
    """Binary linear classifier ``sign(w·x - b)``."""

    w: np.ndarray
    b: float = 0.0
    n_train: int = 0
    loss_id: int | None = None  # SVMperf's -l it was trained for; None: the error rate
    k_fraction: float = 0.0  # its --p (Prec@k, Rec@k)
    feature_ids: np.ndarray | None = field(default=None, repr=False, compare=False)
    # Platt's (A, B): P(y=+1|f) = 1/(1+exp(A*f+B)) (--probability); None: not fitted.
    platt: tuple | None = None
    # the class weights it was trained with, as its model file records them ("": none)
    class_weights: str = field(default="", compare=False)

    @property
    def n_features(self) -> int:
        return len(self.w)

    def decision_function(self, X, progress=None, single_precision=False) -> np.ndarray:
        """``progress`` and ``single_precision`` are KernelModel's; a linear model takes
        them so that callers need not ask which one they hold (w·x is one product)."""
        out = fit_columns(X, self.n_features, self.feature_ids) @ self.w - self.b
        if progress is not None:
            progress(X.shape[0])
        return out

    def predict(self, X) -> np.ndarray:
        return np.where(self.decision_function(X) > 0, 1.0, -1.0)


@dataclass
class RankingModel(LinearModel):
    """A linear ranking function (``cp_learn --problem rank``, SVMrank): ``w·x`` scores the
    documents of a query, the higher the more relevant; b is 0. Its file is an SVMlight
    linear model (svm_classify reads it) whose support vector's comment names it."""

    def predict(self, X) -> np.ndarray:
        """The scores themselves: a ranking function has no classes."""
        return self.decision_function(X)


@dataclass
class KernelModel:
    """Binary kernel expansion ``sign(sum_i coef_i k(sv_i, x) - b)``."""

    support_vectors: sp.csr_matrix
    coef: np.ndarray
    b: float
    kernel: Kernel
    n_train: int = 0
    sv_comments: list | None = field(default=None, repr=False)
    loss_id: int | None = None  # as LinearModel's (a Nyström basis, cp_learn --t 1)
    k_fraction: float = 0.0
    feature_ids: np.ndarray | None = field(default=None, repr=False, compare=False)
    # Platt's (A, B): P(y=+1|f) = 1/(1+exp(A*f+B)) (--probability); None: not fitted.
    platt: tuple | None = None
    # the class weights it was trained with, as its model file records them ("": none)
    class_weights: str = field(default="", compare=False)

    @property
    def n_features(self) -> int:
        return self.support_vectors.shape[1]

    def decision_function(self, X, progress=None, single_precision=False) -> np.ndarray:
        """Decision values, computed in row blocks; ``progress(n_done)`` after each.

        ``single_precision``: feature values rounded to 32-bit floats and inner products
        formed as SVMlight forms them (see :mod:`cpsvm.kernel_rows`).
        """
        if self.feature_ids is None:
            X, support_vectors = fit_columns(X, self.n_features), self.support_vectors
        else:  # every test feature kept: an RBF kernel's |x - sv|² sees them all
            X, support_vectors = union_columns(X, self.support_vectors, self.feature_ids)
        from .kernel_rows import kernel_times

        out = kernel_times(
            self.kernel,
            X,
            support_vectors,
            self.coef,
            single_precision=single_precision,
            block_rows=_KERNEL_BLOCK_ROWS,
            progress=progress,
        )
        out -= self.b
        return out

    def predict(self, X) -> np.ndarray:
        return np.where(self.decision_function(X) > 0, 1.0, -1.0)

    def to_linear(self) -> LinearModel:
        """The same classifier as one weight vector (linear kernel only)."""
        if not self.kernel.is_linear:
            raise ValueError("only a linear-kernel model has a weight vector")
        w = np.asarray(self.support_vectors.T @ self.coef).ravel()
        return LinearModel(
            w=w,
            b=self.b,
            n_train=self.n_train,
            loss_id=self.loss_id,
            k_fraction=self.k_fraction,
            feature_ids=self.feature_ids,
            platt=self.platt,
            class_weights=self.class_weights,
        )


@dataclass
class RandomFeaturesModel:
    """Random Fourier features of the RBF kernel (asset_learn --approx rff):
    ``f(x) = sum_j coef_j cos(omega_j·x + nu_j) - b``, coef_j = sqrt(2/D)·γ_j.

    ``omega`` is (n_features, D); ``task`` "classification" (sign of f) or "regression"
    (f itself).
    """

    omega: np.ndarray
    nu: np.ndarray
    coef: np.ndarray
    b: float
    gamma: float
    n_train: int = 0
    task: str = "classification"
    feature_ids: np.ndarray | None = field(default=None, repr=False, compare=False)
    # Platt's (A, B): P(y=+1|f) = 1/(1+exp(A*f+B)) (--probability); None: not fitted.
    platt: tuple | None = None
    # the class weights it was trained with, as its model file records them ("": none)
    class_weights: str = field(default="", compare=False)

    @property
    def n_features(self) -> int:
        return self.omega.shape[0]

    @property
    def n_components(self) -> int:
        return self.omega.shape[1]

    def decision_function(self, X, progress=None, single_precision=False) -> np.ndarray:
        """Decision values in row blocks (``progress(n_done)`` after each);
        ``single_precision`` is KernelModel's, accepted for a uniform call."""
        X = fit_columns(X, self.n_features, self.feature_ids)
        out = np.empty(X.shape[0])
        for lo in range(0, X.shape[0], _KERNEL_BLOCK_ROWS):
            hi = min(lo + _KERNEL_BLOCK_ROWS, X.shape[0])
            Z = np.asarray(X[lo:hi] @ self.omega)
            Z += self.nu
            out[lo:hi] = np.cos(Z, out=Z) @ self.coef - self.b
            if progress is not None:
                progress(hi - lo)
        return out

    def predict(self, X) -> np.ndarray:
        f = self.decision_function(X)
        return f if self.task == "regression" else np.where(f > 0, 1.0, -1.0)


# Scores a multiclass model computes at a time (MulticlassModel.score_blocks): 32 MiB.
SCORE_BLOCK_CELLS = 1 << 22


@dataclass
class MulticlassModel:
    """Crammer-Singer multiclass: class ``argmax_y w_y·x`` over classes 1..k.

    W has one row per class (row y-1 holds class y's weights), at the scale the model
    file holds (SVMmulticlass writes 100x the Crammer-Singer weights).
    """

    W: np.ndarray
    n_train: int = 0
    loss_id: int = 0
    feature_ids: np.ndarray | None = field(default=None, repr=False, compare=False)
    # the class weights it was trained with, as its model file records them ("": none)
    class_weights: str = field(default="", compare=False)

    @property
    def n_classes(self) -> int:
        return self.W.shape[0]

    @property
    def n_features(self) -> int:
        return self.W.shape[1]

    def decision_function(self, X) -> np.ndarray:
        """Scores, shape (n, k)."""
        return np.asarray(fit_columns(X, self.n_features, self.feature_ids) @ self.W.T)

    def score_blocks(self, X, cells: int | None = None):
        """``(first row, scores of the rows from it)`` of consecutive blocks of X's rows,
        at most ``cells`` scores a block (at least a row): memory follows the classes
        and a block, not rows x classes. Each row's scores are decision_function's."""
        X = fit_columns(X, self.n_features, self.feature_ids)
        step = max(1, (cells or SCORE_BLOCK_CELLS) // max(self.n_classes, 1))
        for lo in range(0, X.shape[0], step):
            yield lo, np.asarray(X[lo : lo + step] @ self.W.T)

    def predict(self, X) -> np.ndarray:
        # argmax takes the first of tied classes, as svm_multiclass_classify does.
        out = np.empty(X.shape[0], np.int64)
        for lo, scores in self.score_blocks(X):
            out[lo : lo + len(scores)] = np.argmax(scores, axis=1) + 1
        return out


@dataclass
class UserProblemModel:
    """A user's problem (``--problem module:Class``) with its weights in Ψ space.

    Plain data: predicting rebuilds the problem on the test data (``Class(dataset,
    **options)``, the class imported by its ``module:Class`` spec) and calls its
    ``predict(w, X)``, which :func:`cpsvm.problems.user.predict_user_problem` does.
    ``n_features`` is the training data's width: test rows are cut or padded to it.
    """

    spec: str
    w: np.ndarray
    n_train: int = 0
    n_features: int = 0
    options: dict = field(default_factory=dict)

    @property
    def size_psi(self) -> int:
        return len(self.w)


@dataclass
class SequenceModel:
    """An SVMhmm V3.10 tagger: tags 1..n_tags of each token by Viterbi over w·Ψ.

    ``w`` (length size_psi) is laid out as SVMhmm's model file holds it, w[j] being
    feature j+1 (see :class:`cpsvm.decoding.viterbi.HmmLayout`); ``n_features`` is the
    number of emission features (test features above it are ignored), ``trans_order``
    and ``emit_order`` SVMhmm's ``--t`` and ``--e``, ``loss_id`` its ``-l``.
    """

    w: np.ndarray
    n_features: int
    n_tags: int
    trans_order: int = 1
    emit_order: int = 0
    loss_id: int = 1
    n_train: int = 0
    feature_ids: np.ndarray | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_layout(cls, w, layout, *, loss_id: int = 1, n_train: int = 0):
        return cls(
            w=np.asarray(w, dtype=np.float64),
            n_features=layout.n_features,
            n_tags=layout.n_tags,
            trans_order=layout.trans_order,
            emit_order=layout.emit_order,
            loss_id=loss_id,
            n_train=n_train,
        )

    @property
    def layout(self):
        from .decoding.viterbi import HmmLayout

        return HmmLayout(self.n_features, self.n_tags, self.trans_order, self.emit_order)

    def predict(self, X, starts, *, beam: int = 0, n_threads=None) -> np.ndarray:
        """Tags (int64, 1..n_tags) of the tokens X (CSR rows), sentence s being rows
        starts[s]:starts[s+1]; ``beam`` as svm_hmm_classify's ``--b`` (0 exact)."""
        layout = self.layout
        if self.feature_ids is not None:
            X = fit_columns(X, self.n_features, self.feature_ids)
        from .decoding.viterbi import emission_scores, viterbi

        E = emission_scores(self.w, X, layout)
        return viterbi(E, self.w, starts, layout, beam=beam, n_threads=n_threads)


@dataclass
class CfgModel:
    """A weighted context-free grammar (``cp_learn --problem cfg``): CKY finds the tree
    of highest weight, the sum of its rules' weights (:mod:`cpsvm.decoding.grammar`).

    ``grammar`` a :class:`cpsvm.decoding.grammar.Grammar` (rule i's weight is ``w[i]``);
    ``options`` the tree preprocessing the training used, which parsing applies to the
    test sentences and undoes on the trees it returns; ``trained_by`` "svm" or "pcfg"
    (the weights are then log-probabilities); ``fallback`` the label of the flat tree
    given to a sentence the grammar cannot parse.
    """

    grammar: object
    w: np.ndarray
    options: object
    n_train: int = 0
    trained_by: str = "svm"
    fallback: str = "S"

    @property
    def n_features(self) -> int:
        return 0

    def parse(self, trees, n_threads=None, source=None):
        """Predicted trees (root bracket included, preprocessing undone, and, as they are
        evaluated, without function tags and -NONE- elements, which a model may have
        kept) for the sentences of ``trees`` (their POS tags and words), and per sentence
        whether the grammar parsed it. ``source``: the trees' file, which the refusal of
        a sentence too long for memory names."""
        from .decoding.grammar import parse_sentences
        from .decoding.trees import drop_none, strip_functions

        predicted, parsed = parse_sentences(
            self.grammar,
            self.w,
            self.options,
            trees,
            fallback=self.fallback,
            n_threads=n_threads,
            source=source,
        )
        return [drop_none(strip_functions(t)) or t for t in predicted], parsed


# -- warm starts (--init-model) ---------------------------------------------------------


def model_kind_name(model) -> str:
    """What a model (or a model class) is, in a user's words (one-line refusals)."""
    cls = model if isinstance(model, type) else type(model)
    names = {
        "LinearModel": "binary linear model",
        "RankingModel": "ranking model",
        "KernelModel": "kernel model",
        "RandomFeaturesModel": "random-features model",
        "MulticlassModel": "multiclass model",
        "SequenceModel": "sequence (SVMhmm) model",
        "CfgModel": "grammar (SVMcfg) model",
        "UserProblemModel": "user problem's model",
    }
    return names.get(cls.__name__, cls.__name__)


def start_weights(model, kinds: tuple, n_features: int, feature_ids=None, n_classes=None):
    """The weights of ``model`` (a --init-model) placed in the training data's columns
    (``n_features`` of them, ``feature_ids`` their original 0-based indices or None):
    (k, n_features) for a multiclass model, (1, n_features) for a binary one. A feature
    the data do not have loses its weight (it would meet a zero in every example; the
    optimum's weight there is 0); a feature the model does not have starts at 0 (new
    features in today's data). Refused in one line (InputError): a model of a type not in
    ``kinds``, one whose highest feature index is above the data's (a model of other
    data), one of another number of classes than ``n_classes``."""
    if type(model) not in kinds:
        wanted = " or ".join(model_kind_name(k) for k in kinds)
        raise InputError(f"--init-model: expected a {wanted}, got a {model_kind_name(model)}")
    rows = np.atleast_2d(model.W if isinstance(model, MulticlassModel) else model.w)
    rows = np.asarray(rows, dtype=np.float64)
    data_highest = n_features if feature_ids is None else (
        int(feature_ids[-1]) + 1 if len(feature_ids) else 0
    )  # fmt: skip
    if highest_index(model) > data_highest:
        raise InputError(
            f"--init-model: the model's features go up to index {highest_index(model)}, the "
            f"training data's to {data_highest}: a model of other data (a model with fewer "
            "features than the data is taken, the new features starting at 0)"
        )
    if n_classes is not None and rows.shape[0] != n_classes:
        raise InputError(
            f"--init-model: the model has {rows.shape[0]} classes, the training data "
            f"{n_classes}: a model of another class set"
        )
    if not np.all(np.isfinite(rows)):
        raise InputError("--init-model: the model's weights are not all finite")
    model_ids = getattr(model, "feature_ids", None)
    if model_ids is None and feature_ids is None:
        out = np.zeros((rows.shape[0], n_features))
        out[:, : rows.shape[1]] = rows
        return out
    model_ids = np.arange(rows.shape[1]) if model_ids is None else np.asarray(model_ids)
    data_ids = np.arange(n_features) if feature_ids is None else np.asarray(feature_ids)
    at = np.minimum(np.searchsorted(data_ids, model_ids), max(len(data_ids) - 1, 0))
    found = (data_ids[at] == model_ids) if len(data_ids) else np.zeros(len(model_ids), bool)
    out = np.zeros((rows.shape[0], n_features))
    out[:, at[found]] = rows[:, found]
    return out


def linear_start(model, binary: bool, dataset, bias: float, n_classes=None, bias_flag="-b"):
    """w_0 of a warm start in a linear problem's layout: binary, w with the bias weight
    −b/B last when the run has a bias feature of value B (``bias``; a model with b ≠ 0
    and no bias feature is refused, naming ``bias_flag``); multiclass, the (d, k) W flat.
    The weights are ``model``'s in ``dataset``'s columns (:func:`start_weights`)."""
    d = dataset.n_features
    if not binary:
        W = start_weights(model, (MulticlassModel,), d, dataset.feature_ids, n_classes)
        return np.ascontiguousarray(W.T).reshape(-1)
    (w,) = start_weights(model, (LinearModel,), d, dataset.feature_ids)
    if bias != 0:
        return np.append(w, -model.b / bias)
    if model.b != 0:
        raise InputError(
            f"--init-model: the model has a threshold b = {model.b:g} and this run no bias "
            f"feature: give {bias_flag} (its weight starts at -b/B)"
        )
    return w
