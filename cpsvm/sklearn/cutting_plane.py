"""CuttingPlaneSVC: cp_learn's binary (linear, kernel or Nyström) and multiclass SVM; and
what the cp_learn estimators share: the conversion of an estimator's parameters to
cp_learn's (with StructuredSVM) and the fit by cp_learn's solver (with StructuredSVM and
RankSVM)."""

from __future__ import annotations

import numpy as np

from ..conventions import LOSS_SCALE
from ..data import Dataset
from ..models import KernelModel, LinearModel, MulticlassModel
from ..options import defaults
from ..params.one_slack import StructParams
from ..problems import entry_of, problem_entry
from ..solvers.one_slack import train
from ._base import (
    KERNEL_DEFAULTS,
    _check_choice,
    _Classifier,
    _given_c,
    _given_fields,
    _kernel_params,
    _last_fit,
    _monitor,
    _n_threads,
    _params,
    _seed,
    _store,
    _time_limit,
    _train,
    _warm,
    svmlight_kernel,
)

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
_STRUCT = defaults(StructParams)
# cp_learn's -e when not given is the problem's; the estimators' default is the binary one's.
EPSILON = problem_entry("binary").command_line.epsilon
_BINARY_OPTIONS = {o.name: o.default for o in problem_entry("binary").command_line.options}
# What the cp_learn estimators (CuttingPlaneSVC, StructuredSVM, RankSVM) make of their
# parameters: _Estimator's _FIELDS, _CONVERTED and _NOT_PARAMETERS.
STRUCT_FIELDS = {
    "epsilon": "epsilon",
    "algorithm": "algorithm",
    "max_iter": "max_iterations",
    "max_idle": "max_idle",
    "cache_size": "cache_size",
    "batch": "batch",
}
STRUCT_CONVERTED = {
    "rescaling": ("rescaling", lambda e: _RESCALING.get(e.rescaling)),
    "random_state": ("seed", lambda e: _seed(e.random_state)),
    "max_time": ("time_limit", lambda e: _time_limit(e.max_time)),
    "n_jobs": ("n_threads", lambda e: _n_threads(e.n_jobs)),
}
STRUCT_NOT_PARAMETERS = {
    "C": "C, scikit-learn's, converted for the problem",
    "loss_id": "loss, by name",
    "kernel": "kernel, gamma, degree, coef0",
    "problem": "the classes of y (StructuredSVM: problem)",
    "options": "the problem's parameters",
    "margin_bounds": "cp_learn's default",
    "init_model": "warm_start (CuttingPlaneSVC: the last fit's model)",
}


def _struct_params(estimator, kind, n, C=None, **more):
    """cp_learn's StructParams of an estimator's parameters (CuttingPlaneSVC and
    StructuredSVM): its C (or ``C``) converted to cp_learn's -c for the problem ``kind``
    over n examples."""
    command_c = entry_of(kind).estimators.c_of_sum(_given_c(estimator) if C is None else C, n)
    if _RESCALING.get(estimator.rescaling) is None:
        raise ValueError(f"expected rescaling 'margin' or 'slack', got {estimator.rescaling!r}")
    return _params(StructParams, **_given_fields(estimator, C=command_c, problem=kind, **more))


def _fit_struct(estimator, data, params):
    """Fit ``estimator`` by cp_learn's solver (its -v lines when verbose); a multiclass
    objective_ rescaled to Crammer-Singer's."""
    info = _train(estimator, train, data, params, _monitor(estimator.verbose, "cp_learn"))
    if info.problem == "multiclass":  # cp_learn's w is 100x Crammer-Singer's
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
    per error); algorithm [-w] 0, 2, 3, 4, 5 or 9, None the default (the faster of 5,
    dual coordinate descent, and 9, OCAS's line search, where they apply); rescaling
    [-o] 'margin' or 'slack'; max_iter [-#]; max_idle [--max-idle]; cache_size [-f];
    batch [-k]; kernel [-t] 'linear', 'poly', 'rbf', 'sigmoid' with gamma, degree, coef0
    (scikit-learn's names: poly is -s gamma -r coef0 -d degree; defaults are SVMlight's
    -g/-s 1, -r 1, -d 3); approximation [--t] 'exact' or 'nystrom' (a random basis of
    n_components [--k] training examples, trained linearly); fit_intercept,
    intercept_scaling [--b]: None is cp_learn's default (a bias feature of 1 with the
    linear kernel, none with a kernel); max_time [--max-time]; random_state [--seed]
    (the basis draw; None is --seed 0); n_jobs [--threads]; verbose [-v].

    loss [-l] binary: 'error_rate' (default, the hinge loss above), or one of SVMperf's
    losses over the whole label vector (linear, or the Nyström basis): 'zero_one',
    'f1', 'prbep', 'precision_at_k', 'recall_at_k', 'roc_auc' (or cp_learn's -l number);
    k_fraction [--p] k of Prec@k and Rec@k as a fraction of the positives (0: 0.5 and 2).
    C becomes -c = C·n/100 for every loss, so ½|w|² + C·n·ξ/100 is minimised with ξ the
    loss in percent (for the error rate, Σ hinge); sample_weight is for the error rate.

    probability [--probability] (binary): after fit, Platt's sigmoid fitted on 5-fold
    cross-validated decision values (the same training on folds from random_state),
    which makes predict_proba and predict_log_proba available (as SVC's; without it they
    raise AttributeError). The label follows the score and the probability never
    contradicts it: P(classes_[1]) > 0.5 exactly when decision_function > 0 (see
    cpsvm.engine.platt).

    Attributes: classes_, coef_ and intercept_ (linear kernel), support_vectors_ and
    dual_coef_ (kernel models), n_iter_, objective_ (the primal in scikit-learn's
    convention: SVMlight's ½|w|² + C·Σ hinge; multiclass Crammer-Singer's),
    n_features_in_, model_.
    """

    _command = "cp_learn"

    @property
    def _multiclass(self):
        return self.kernel == "linear"  # cp_learn trains kernels for binary problems only

    _PARAMS = StructParams
    _FIELDS = STRUCT_FIELDS
    _CONVERTED = STRUCT_CONVERTED
    _NOT_PARAMETERS = STRUCT_NOT_PARAMETERS

    def __init__(
        self,
        C=1.0,
        *,
        epsilon=EPSILON,
        algorithm=_STRUCT["algorithm"],
        rescaling="margin",
        max_iter=_STRUCT["max_iterations"],
        max_idle=_STRUCT["max_idle"],
        cache_size=_STRUCT["cache_size"],
        batch=_STRUCT["batch"],
        kernel="linear",
        gamma=KERNEL_DEFAULTS["gamma"],
        degree=KERNEL_DEFAULTS["degree"],
        coef0=KERNEL_DEFAULTS["coef_const"],
        approximation="exact",
        n_components=_BINARY_OPTIONS["basis_size"],
        fit_intercept=None,
        intercept_scaling=1.0,
        max_time=None,
        random_state=None,
        n_jobs=None,
        verbose=0,
        loss="error_rate",
        k_fraction=_BINARY_OPTIONS["k_fraction"],
        warm_start=False,
    ):
        _store(self, locals())

    def fit(self, X, y, sample_weight=None):
        last = _last_fit(self)
        X, target, cost = self._labelled(X, y, sample_weight)
        params = self._cp_params(X, sample_weight is not None, _given_c(self))
        params = _warm(self, params, last)
        return _fit_struct(self, Dataset(X, target, cost=cost), params)

    def _cp_params(self, X, weighted, C):
        """cp_learn's StructParams of the estimator's parameters at scikit-learn's ``C``
        for the training examples X (after _labelled: binary or multiclass by
        classes_); ``weighted``: a sample_weight was given."""
        _check_choice("approximation", self.approximation, ("exact", "nystrom"))
        loss_id = self._loss_id()
        kind = "binary" if len(self.classes_) == 2 else "multiclass"
        if loss_id != 2 and (kind != "binary" or weighted):
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
        # SVMperf's options are the binary problem's; multiclass has none.
        options = {
            "bias": bias,
            "basis_method": 1 if self.approximation == "nystrom" else 0,
            "basis_size": self.n_components,
            "k_fraction": float(self.k_fraction),
        }
        return _struct_params(
            self,
            kind,
            X.shape[0],
            C=C,
            kernel=svmlight_kernel(self.kernel, self.gamma, self.degree, self.coef0, X),
            loss_id=loss_id if kind == "binary" else None,
            options=options if kind == "binary" else {},
        )

    def _loss_id(self) -> int:
        """cp_learn's -l of ``loss`` (a name of PERF_LOSSES or the number itself)."""
        if isinstance(self.loss, str):
            _check_choice("loss", self.loss, tuple(PERF_LOSSES))
            return PERF_LOSSES[self.loss]
        if (
            isinstance(self.loss, (int, np.integer))
            and not isinstance(self.loss, bool)
            and int(self.loss) in _PERF_LOSS_OF_ID
        ):
            return int(self.loss)
        raise ValueError(
            "expected loss "
            + " or ".join(map(repr, PERF_LOSSES))
            + f" (or cp_learn's -l), got {self.loss!r}"
        )

    @classmethod
    def _from_model(cls, model):
        params = _kernel_params(model)
        if isinstance(model, (LinearModel, KernelModel)) and model.loss_id is not None:
            params.update(loss=_PERF_LOSS_OF_ID[model.loss_id], k_fraction=model.k_fraction)
        if isinstance(model, (LinearModel, KernelModel, MulticlassModel)):
            return cls._binary_or_multiclass(model, **params)
        return None
