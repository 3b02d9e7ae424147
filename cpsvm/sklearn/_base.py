"""What every estimator of cpsvm.sklearn shares: the scikit-learn imports (refused with
the extra's name when scikit-learn is missing), the conversions of scikit-learn's
parameters to the commands' (kernel, seed, threads, time limit), the solver run, and the
base classes: input checks, the model file, labels and the fitted model's attributes."""

from __future__ import annotations

import dataclasses
import inspect
import math
from contextlib import contextmanager

try:
    import sklearn  # noqa: F401
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.utils import check_random_state
    from sklearn.utils.metaestimators import available_if
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import (
        _check_sample_weight,
        check_is_fitted,
        validate_data,
    )
except ImportError as _error:  # pragma: no cover - tested in a subprocess
    raise ImportError(
        "cpsvm.sklearn needs scikit-learn: install the extra with pip install 'cpsvm[sklearn]'"
    ) from _error

import numpy as np
import scipy.sparse as sp

from ..data import BALANCED, ClassWeights, Dataset
from ..engine.platt import probabilities
from ..errors import InputError
from ..io.model_file import read_model, write_model
from ..io.svmlight import check_width
from ..kernels import Kernel
from ..models import KernelModel, LinearModel, MulticlassModel, RandomFeaturesModel
from ..options import METADATA_KEY, defaults, field_default
from ..reporting import monitor
from ..selection.calibration import check_calibration_data, platt_sigmoid
from ..threads import max_threads

# The kernel's defaults (SVMlight's -d 3, -g 1, -s 1, -r 1): those of gamma, degree, coef0.
KERNEL_DEFAULTS = defaults(Kernel)

KERNELS = {"linear": 0, "poly": 1, "rbf": 2, "sigmoid": 3}
_KERNEL_NAMES = {v: k for k, v in KERNELS.items()}
_SPARSE = ["csr", "csc", "coo"]


# -- conversions shared by the estimators ---------------------------------------------------


@contextmanager
def _value_errors():
    """cpsvm's refusals of an input (InputError) as scikit-learn's ValueError, with the
    same message."""
    try:
        yield
    except InputError as e:
        raise ValueError(str(e)) from None


def _params(cls, **values):
    """A solver's Params of the estimator's ``values``: its declared checks refuse a value
    with scikit-learn's ValueError (the same message as the command line's)."""
    with _value_errors():
        return cls(**values)


def _last_fit(estimator):
    """(model_, classes_) of the last fit when ``warm_start`` is on (None otherwise), read
    before a fit resets them: the next fit starts from that model (--init-model), as
    scikit-learn's SGDClassifier and LogisticRegression start from coef_, intercept_."""
    if not getattr(estimator, "warm_start", False) or not hasattr(estimator, "model_"):
        return None
    return estimator.model_, getattr(estimator, "classes_", None)


def _warm(estimator, params, last):
    """``params`` started from ``last`` (:func:`_last_fit`), if any: the classes of this
    fit's y must be the last fit's (a ValueError otherwise, as SGDClassifier's)."""
    if last is None:
        return params
    model, classes = last
    if classes is not None and not np.array_equal(classes, estimator.classes_):
        raise ValueError(
            f"warm_start: the classes of y {list(estimator.classes_)} are not the last "
            f"fit's {list(classes)}"
        )
    return dataclasses.replace(params, init_model=model)


def _given_fields(estimator, **more) -> dict:
    """{Params field: value} of the estimator's parameters: those that are its Params'
    fields as they are (``_FIELDS``, by the estimator's name of each: scikit-learn's
    ``max_iter`` for ``max_iterations``), those converted (``_CONVERTED``), then
    ``more`` (which the estimator's own are not asked for: a search's C). The Params
    checks them."""
    named = {**estimator._FIELDS, **{name: name for name in estimator._PICKED_UP}}
    values = {field: getattr(estimator, name) for name, field in named.items() if field not in more}
    values.update(
        {
            field: convert(estimator)
            for field, convert in estimator._CONVERTED.values()
            if field not in more
        }
    )
    if values.get("class_weight") is not None:
        values["class_weight"] = _class_weight(estimator, values["class_weight"])
    return {**values, **more}


def _class_weight(estimator, class_weight):
    """The commands' ClassWeights of scikit-learn's ``class_weight`` ("balanced", or a
    dict {class: weight} of the estimator's classes_, which the commands see as their
    targets: ±1 for two classes, 1..k for more): ValueError for a class not in
    classes_ or a weight the commands refuse."""
    if isinstance(class_weight, ClassWeights):
        return class_weight
    with _value_errors():
        if isinstance(class_weight, str):
            if class_weight != BALANCED:
                raise ValueError(
                    f"expected class_weight 'balanced' or a dict, got {class_weight!r}"
                )
            return ClassWeights(balanced=True)
        if not isinstance(class_weight, dict):
            raise ValueError(f"expected class_weight 'balanced' or a dict, got {class_weight!r}")
        classes = list(getattr(estimator, "classes_", []))
        targets = [-1.0, 1.0] if len(classes) == 2 else [i + 1.0 for i in range(len(classes))]
        pairs = []
        for label, weight in class_weight.items():
            if label not in classes:
                raise ValueError(f"class_weight: class {label!r} is not in classes_ {classes!r}")
            if not (isinstance(weight, (int, float, np.number)) and 0 < weight < np.inf):
                raise ValueError(
                    f"class_weight: expected weights that are finite numbers > 0, got "
                    f"{label!r}: {weight!r}"
                )
            pairs.append((targets[classes.index(label)], float(weight)))
        return ClassWeights.of_pairs(pairs, "class_weight")


def svmlight_kernel(kernel, gamma, degree, coef0, X=None) -> Kernel:
    """SVMlight's Kernel (``-t -d -g -s -r``) of scikit-learn's kernel parameters:
    ``poly`` (gamma·a·b + coef0)^degree is -t 1 -s gamma -r coef0 -d degree, ``rbf``
    exp(-gamma·|a-b|²) is -t 2 -g gamma, ``sigmoid`` tanh(gamma·a·b + coef0) is -t 3 -s
    gamma -r coef0. The parameters a kernel does not use keep the commands' defaults, so
    that the model file's header is the command's. ``gamma`` may be 'scale' or 'auto',
    as in scikit-learn's SVC (computed on X)."""
    if kernel not in KERNELS:
        raise ValueError(f"expected kernel 'linear', 'poly', 'rbf' or 'sigmoid', got {kernel!r}")
    if isinstance(gamma, str):
        if gamma not in ("scale", "auto"):
            raise ValueError(f"expected gamma 'scale', 'auto' or a number, got {gamma!r}")
        if X is None:
            raise ValueError(f"gamma={gamma!r} needs the training data")
        if gamma == "auto":
            gamma = 1.0 / X.shape[1]
        else:
            mean = X.mean()
            var = X.multiply(X).mean() - mean**2 if sp.issparse(X) else X.var()
            gamma = 1.0 / (X.shape[1] * var) if var > 0 else 1.0
    gamma = float(gamma)
    kind = KERNELS[kernel]
    with _value_errors():
        if kind == 2:
            return Kernel(2, gamma=gamma)
        if kind in (1, 3):
            return Kernel(kind, degree=int(degree), coef_lin=gamma, coef_const=float(coef0))
        return Kernel(0)


def _kernel_params(model) -> dict:
    """The scikit-learn parameters of a kernel model's kernel, none for another model
    (load_model)."""
    if not isinstance(model, KernelModel):
        return {}
    kernel = model.kernel
    name = _KERNEL_NAMES[kernel.kind]
    if kernel.kind == 2:
        return {"kernel": name, "gamma": kernel.gamma}
    if kernel.kind in (1, 3):
        return {
            "kernel": name,
            "gamma": kernel.coef_lin,
            "degree": kernel.degree,
            "coef0": kernel.coef_const,
        }
    return {"kernel": name}


def _seed(random_state) -> int:
    """The command's ``--seed`` of ``random_state``: None is its default 0."""
    if random_state is None:
        return 0
    if isinstance(random_state, (int, np.integer)):
        return int(random_state)
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def _n_threads(n_jobs):
    """Threads of ``n_jobs`` (joblib's convention: -1 all cores, -2 all but one)."""
    if n_jobs is None:
        return None
    n_jobs = int(n_jobs)
    if n_jobs == 0:
        raise ValueError("expected n_jobs != 0")
    if n_jobs < 0:
        return max(1, max_threads() + 1 + n_jobs)
    return n_jobs


def _store(estimator, arguments):
    """Keep each __init__ argument as the attribute of its name (scikit-learn's rule:
    __init__ stores, fit validates)."""
    for name, value in arguments.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


def _given_c(estimator) -> float:
    """The estimator's C, refused as given (before a command's conversion changes it)."""
    C = float(estimator.C)
    if not 0 < C < float("inf"):
        raise ValueError(f"expected a finite C > 0, got {estimator.C!r}")
    return C


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"expected {name} " + " or ".join(map(repr, choices)) + f", got {value!r}")


def _time_limit(max_time) -> float:
    return math.inf if max_time is None else float(max_time)


def _renumbered(data):
    """The training data as the commands train on it: a huge column space (hashed
    features: a 2^40-column CSR) renumbered to its distinct columns (feature_ids set,
    cpsvm.columns), and refused (ValueError) when its dense weights would still not fit
    in memory. Sequences and trees are left as they are."""
    if type(data) is not Dataset:
        return data
    with _value_errors():
        return check_width(data.with_distinct_columns())


def _train(estimator, train, data, params, monitor=None):
    """Run a solver (``monitor`` its progress callback, closed after) on the data
    renumbered as the commands do (:func:`_renumbered`), keep its model in
    ``estimator.model_`` (with the data's feature_ids: it takes X in the original
    columns), its iterations and primal objective (where the solver's info has them) in
    ``n_iter_`` and ``objective_``, and return its info; the solver's refusals are
    scikit-learn's ValueError."""
    calibrate = getattr(params, "probability", False)
    try:
        data = _renumbered(data)
        with _value_errors():
            if calibrate:
                _check_probability_data(data)
            model, info = train(data, params, callback=monitor)
            if calibrate:
                sigmoid = platt_sigmoid(data, train, params, params.C, params.seed)
                model.platt = (sigmoid.A, sigmoid.B)
    finally:
        if monitor is not None:
            monitor.close()
    feature_ids = getattr(data, "feature_ids", None)  # (sequences and trees have none)
    if feature_ids is not None:
        model.feature_ids = feature_ids
    estimator.model_ = model
    estimator.n_iter_ = getattr(info.result, "iterations", 0)
    estimator.objective_ = getattr(info.result, "primal", math.nan)
    return info


def _check_probability_data(data) -> None:
    """probability=True: binary classification (targets ±1) with data enough for the
    folds (cpsvm.selection.calibration), refused as the commands refuse it."""
    y = getattr(data, "y", None)
    if type(data) is not Dataset or not np.all(np.abs(y) == 1):
        raise InputError("probability=True fits P(y=+1) of binary classification only")
    check_calibration_data(y, "")


def _command_verbosity(verbose) -> int:
    """The commands' -v of ``verbose``: 2 (verbose=1) or 3 (verbose>=2), their iteration
    lines on stderr."""
    return min(3, int(verbose) + 1)


def _monitor(verbose, name, style="STRUCT", total=None):
    """The solvers' iteration lines in the style of the command ``name`` (the name of a
    style of cpsvm.reporting.monitor), None when not verbose."""
    if not verbose:
        return None
    return monitor.Monitor(
        getattr(monitor, style), _command_verbosity(verbose), None, name, total=total
    )


def _as_csr(X):
    """Validated X as the reader gives it: float64 CSR, sorted, no duplicates, int32
    indices when they fit (load_svmlight_file's int64 ones would reach kernels compiled
    for the reader's types only); a copy when it must change: the caller's matrix is
    left as it was."""
    X = sp.csr_matrix(X, dtype=np.float64)
    if X.indices.dtype != np.int32 and max(X.shape[1], X.nnz) < 2**31:
        X = sp.csr_matrix(
            (X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape
        )
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def _take_new_fields(cls) -> None:
    """Every option field of ``cls._PARAMS`` that the estimator neither maps (``_FIELDS``,
    ``_CONVERTED``) nor sets otherwise (``_NOT_PARAMETERS``) becomes a keyword parameter
    of its own name and default: a flag added to a learner's Params reaches its
    estimators with nothing written for them. scikit-learn reads an estimator's
    parameters from its ``__init__``'s signature, which the wrapped ``__init__`` carries
    (``__signature__``); it stores them as the hand-written one stores its own, and
    ``_PICKED_UP`` names them."""
    named = (
        set(cls._FIELDS.values())
        | {field for field, _ in cls._CONVERTED.values()}
        | set(cls._NOT_PARAMETERS)
    )
    added = {
        f.name: field_default(f)
        for f in dataclasses.fields(cls._PARAMS)
        if METADATA_KEY in f.metadata and f.name not in named
    }
    if not added:
        return
    written = cls.__init__
    signature = inspect.signature(written)
    extra = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
        for name, default in added.items()
    ]
    keyword = [p for p in signature.parameters.values() if p.kind == p.VAR_KEYWORD]
    others = [p for p in signature.parameters.values() if p.kind != p.VAR_KEYWORD]

    def __init__(self, *args, **kwargs):
        given = {name: kwargs.pop(name, default) for name, default in added.items()}
        written(self, *args, **kwargs)
        _store(self, given)

    __init__.__signature__ = signature.replace(parameters=[*others, *extra, *keyword])
    __init__.__doc__, __init__.__wrapped__ = written.__doc__, written
    cls.__init__ = __init__
    cls._PICKED_UP = tuple(added)


class _Estimator(BaseEstimator):
    """What every estimator shares: input checks, the Dataset, the model file.

    Its parameters and its Params (``_PARAMS``, the solver's): ``_FIELDS`` maps each
    parameter that is a Params field as it is to that field (its default is the field's,
    written once, in the Params); ``_CONVERTED`` a parameter in scikit-learn's convention
    to (the field, its value of the estimator's: ``random_state`` None is ``--seed 0``);
    ``_NOT_PARAMETERS`` a field it does not take, with what sets it instead; any other
    option field of the Params is taken as it is, by its own name (``_PICKED_UP``,
    :func:`_take_new_fields`; tests/sklearn/test_defaults.py checks the four)."""

    _command = ""
    _PARAMS = None
    _FIELDS: dict = {}
    _CONVERTED: dict = {}
    _NOT_PARAMETERS: dict = {}
    _PICKED_UP: tuple = ()  # the Params' fields it takes as they are, unwritten (_take_new_fields)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls._PARAMS is not None and "__init__" in vars(cls):
            _take_new_fields(cls)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _check_X(self, X, reset):
        X = validate_data(self, X, accept_sparse=_SPARSE, dtype=np.float64, reset=reset)
        return _as_csr(X)

    def _check_Xy(self, X, y, sample_weight, *, numeric):
        X, y = validate_data(self, X, y, accept_sparse=_SPARSE, dtype=np.float64, y_numeric=numeric)
        X = _as_csr(X)
        cost = None
        if sample_weight is not None:
            cost = _check_sample_weight(
                sample_weight, X, dtype=np.float64, ensure_non_negative=True
            )
            keep = np.flatnonzero(cost > 0)
            if len(keep) == 0:
                raise ValueError("expected a sample_weight > 0 for some example")
            if len(keep) < len(cost):  # weight 0: the example is not there
                X, y, cost = X[keep], y[keep], cost[keep]
        return X, y, cost

    def save_model(self, path):
        """Write the command's text model file (``-`` for standard output); returns self."""
        check_is_fitted(self, "model_")
        write_model(path, self.model_)
        return self

    @classmethod
    def load_model(cls, path):
        """A fitted estimator of this class from a model file the commands read."""
        model = read_model(path)
        estimator = cls._from_model(model)
        if estimator is None:
            raise ValueError(
                f"{path}: a {type(model).__name__} cannot be a "
                f"{cls.__name__}; use cpsvm.sklearn.load_model"
            )
        return estimator

    @classmethod
    def _from_model(cls, model):
        return None

    def _decision_values(self, X):
        """The fitted model's decision values on X (of the width fitted on)."""
        check_is_fitted(self, "model_")
        return self.model_.decision_function(self._check_X(X, reset=False))

    def _loaded(self, model, n_features):
        if getattr(model, "platt", None) is not None and "probability" in self.get_params():
            self.probability = True
        self.model_ = model
        self.n_features_in_ = int(n_features)
        self.n_iter_ = 0
        self.objective_ = math.nan
        return self


class _SupportVectors:
    """The kernel expansion's attributes, for the classifiers and ASSETRegressor."""

    @property
    def support_vectors_(self):
        """Kernel models: the expansion's vectors (CSR), one row each."""
        check_is_fitted(self, "model_")
        if not isinstance(self.model_, KernelModel):
            raise AttributeError("support_vectors_ is only available for kernel models")
        return self.model_.support_vectors

    @property
    def dual_coef_(self):
        """Kernel models: alpha_i·y_i of each support vector, shape (1, n_SV)."""
        check_is_fitted(self, "model_")
        if not isinstance(self.model_, KernelModel):
            raise AttributeError("dual_coef_ is only available for kernel models")
        return self.model_.coef[None, :]


class _Classifier(ClassifierMixin, _SupportVectors, _Estimator):
    """Labels of any type: ±1 (binary, classes_[1] is +1) or 1..k and back."""

    _multiclass = True

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = self._multiclass
        return tags

    def _labelled(self, X, y, sample_weight):
        """Validated X, the labels as the command's targets, the costs."""
        X, y, cost = self._check_Xy(X, y, sample_weight, numeric=False)
        return X, self._encode(y), cost

    def _encode(self, y):
        check_classification_targets(y)
        self.classes_, index = np.unique(y, return_inverse=True)
        k = len(self.classes_)
        if k < 2:
            raise ValueError(
                f"{type(self).__name__} needs examples of at least two "
                f"classes, got one class: {self.classes_[0]!r}"
            )
        if k > 2 and not self._multiclass:
            raise ValueError(
                f"Only binary classification is supported: "
                f"{type(self).__name__} ({self._command}) got {k} classes"
            )
        return np.where(index == 1, 1.0, -1.0) if k == 2 else index + 1.0

    def _linear_state(self):
        model = self.model_
        if isinstance(model, LinearModel):
            W, intercept = model.w[None, :], np.array([-model.b])
        elif isinstance(model, MulticlassModel):
            W, intercept = model.W, np.zeros(model.n_classes)
        elif isinstance(model, KernelModel) and model.kernel.is_linear:
            linear = model.to_linear()
            W, intercept = linear.w[None, :], np.array([-linear.b])
        else:
            raise AttributeError("coef_ is only available for linear models")
        ids = getattr(model, "feature_ids", None)
        if ids is not None:  # trained on renumbered columns: sparse, in X's columns
            W = sp.csr_matrix(W)
            W = sp.csr_matrix(
                (W.data, ids[W.indices], W.indptr), shape=(W.shape[0], self.n_features_in_)
            )
        return W, intercept

    @property
    def coef_(self):
        """Weights: decision_function(X) = X @ coef_.T + intercept_ (linear models)."""
        check_is_fitted(self, "model_")
        return self._linear_state()[0]

    @property
    def intercept_(self):
        check_is_fitted(self, "model_")
        model = self.model_
        if isinstance(model, (KernelModel, RandomFeaturesModel)):
            return np.array([-model.b])
        return self._linear_state()[1]

    def decision_function(self, X):
        """Binary: the command's decision value w·x - b (positive: classes_[1]), shape
        (n,); multiclass: each class's score, shape (n, k)."""
        return self._decision_values(X)

    def _has_probability(self):
        """predict_proba and predict_log_proba exist with probability=True, as SVC's."""
        if not getattr(self, "probability", False):
            raise AttributeError(
                "predict_proba is not available when probability=False (fit with "
                "probability=True: Platt's sigmoid on 5-fold cross-validated decision values)"
            )
        return True

    @available_if(_has_probability)
    def predict_proba(self, X):
        """Binary: (P(classes_[0]), P(classes_[1])) of each row, shape (n, 2), Platt's
        sigmoid of the decision value f (cpsvm.engine.platt.probabilities): the column of
        the class predict gives is the larger, always (P(classes_[1]) > 0.5 exactly when
        f > 0; the sigmoid is held next to 0.5 between f = 0 and its own 0.5 point
        f = -B/A). Unlike SVC's, never in disagreement with predict."""
        check_is_fitted(self, "model_")
        platt = getattr(self.model_, "platt", None)
        if platt is None:
            raise AttributeError("predict_proba: the model holds no Platt sigmoid")
        scores = self.decision_function(X)
        p = probabilities(scores, *platt)
        return np.column_stack([1.0 - p, p])

    @available_if(_has_probability)
    def predict_log_proba(self, X):
        """The logarithm of predict_proba."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[np.argmax(scores, axis=1)]

    @classmethod
    def _from_linear(cls, model):
        """A fitted estimator of a linear binary or multiclass model (a kernel model of
        the linear kernel as its w), or None."""
        if isinstance(model, KernelModel) and model.kernel.is_linear:
            model = model.to_linear()
        if isinstance(model, (LinearModel, MulticlassModel)):
            return cls._binary_or_multiclass(model)
        return None

    @classmethod
    def _binary_or_multiclass(cls, model, **params):
        if isinstance(model, MulticlassModel):
            classes = np.arange(1, model.n_classes + 1)
        elif isinstance(model, (LinearModel, KernelModel)) or (
            isinstance(model, RandomFeaturesModel) and model.task == "classification"
        ):
            classes = np.array([-1, 1])
        else:
            return None
        estimator = cls(**params)
        estimator.classes_ = classes
        return estimator._loaded(model, model.n_features)
