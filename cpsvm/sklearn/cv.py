"""OCASClassifierCV and CuttingPlaneSVCCV: the choice of C by cross-validation along a
warm path over C (scikit-learn's LogisticRegressionCV pattern), each fold's values
trained in increasing order by the solver's path (OcasPath, StructPath), which keeps
its cuts of the C-free risk from one value to the next."""

from __future__ import annotations

import dataclasses
import inspect
import numbers
import time

import numpy as np
from sklearn.utils.validation import _check_sample_weight, _num_samples

from ..data import Dataset
from ..models import KernelModel, LinearModel, MulticlassModel
from ..problems import entry_of
from ..solvers.ocas import OcasPath
from ..solvers.ocas import train as train_ocas
from ..solvers.one_slack import StructPath
from ._base import _monitor, _renumbered, _store, _train, _value_errors
from .cutting_plane import _BINARY_OPTIONS, _STRUCT, EPSILON, CuttingPlaneSVC, _fit_struct
from .ocas import _OCAS, OCASClassifier

# The search's own parameters; every other __init__ parameter is the base estimator's.
_SEARCH = ("Cs", "cv", "scoring", "refit")


def _values_of(Cs, owner: str) -> np.ndarray:
    """The C values of ``Cs``, increasing: an int n is n values log-spaced over
    1e-4..1e4 (LogisticRegressionCV's), else the given values (an array-like). A bare
    float or a bool is neither (``Cs=3.0`` is not three values, nor C = 3), refused in
    scikit-learn's words."""
    wanted = f"The 'Cs' parameter of {owner} must be an int in the range [1, inf) or an array-like"
    a_count = isinstance(Cs, numbers.Integral) and not isinstance(Cs, (bool, np.bool_))
    if not a_count and np.ndim(Cs) == 0:
        raise ValueError(f"{wanted}. Got {Cs!r} instead.")
    if a_count:
        if Cs < 1:
            raise ValueError(f"{wanted}. Got {Cs!r} instead.")
        return np.logspace(-4, 4, int(Cs))
    try:
        values = np.unique(np.asarray(Cs, dtype=np.float64).ravel())
    except (TypeError, ValueError):
        raise ValueError(f"{wanted} of C values. Got {Cs!r} instead.") from None
    if len(values) == 0 or not np.all(np.isfinite(values)) or not np.all(values > 0):
        raise ValueError(f"expected C values > 0, got Cs={Cs!r}")
    return values


def _defaults_of(cls, *names) -> tuple:
    """The defaults of the parameters ``names`` of the estimator class ``cls``."""
    parameters = inspect.signature(cls.__init__).parameters
    return tuple(parameters[name].default for name in names)


class _PathCV:
    """What both searches share: the folds, the path of each, the scores, the choice
    of C and the final model. A subclass names its base estimator (``_base``) and
    gives ``_path(X, target, cost)``: a function C -> (model, the solver's info),
    called at increasing C, each training warm from the last."""

    _base = None

    def _base_params(self) -> dict:
        names = inspect.signature(self._base.__init__).parameters
        return {k: v for k, v in self.get_params(deep=False).items() if k in names}

    def _estimator_of(self, model, C, n_features):
        """A fitted base estimator of one fold's model (what the scorer judges)."""
        estimator = self._base(C=C, **self._base_params())
        estimator.classes_ = self.classes_
        return estimator._loaded(model, n_features)

    def fit(self, X, y, sample_weight=None):
        """Cross-validate every value of Cs (each fold along its warm path), choose
        C_ (the best mean score, ties to the smaller C) and train the final model."""
        from sklearn.metrics import check_scoring
        from sklearn.model_selection import check_cv

        values = _values_of(self.Cs, type(self).__name__)
        if not isinstance(self.refit, (bool, np.bool_)):
            raise ValueError(f"expected refit True or False, got {self.refit!r}")
        n_given = _num_samples(X)
        X, target, cost = self._labelled(X, y, sample_weight)
        labels = self.classes_[np.where(target > 0, 1, 0) if len(self.classes_) == 2
                               else target.astype(np.intp) - 1]  # fmt: skip
        # The folds split the rows as given; the rows of weight 0 (dropped by
        # _labelled) are then left out of their fold.
        given_labels = np.asarray(y).reshape(n_given)
        position = np.arange(n_given)
        if sample_weight is not None:
            weights = _check_sample_weight(sample_weight, position, dtype=np.float64)
            position = np.full(n_given, -1)
            kept = np.flatnonzero(weights > 0)
            position[kept] = np.arange(len(kept))
        splitter = check_cv(self.cv, given_labels, classifier=True)
        folds = [
            (position[train][position[train] >= 0], position[test][position[test] >= 0])
            for train, test in splitter.split(np.zeros((n_given, 1)), given_labels)
        ]
        scorer = check_scoring(self._base(**self._base_params()), scoring=self.scoring)
        scores = np.full((len(folds), len(values)), np.nan)
        seconds = np.empty((len(folds), len(values)))
        fold_models = []
        for f, (train, test) in enumerate(folds):
            fit = self._path(X[train], target[train], None if cost is None else cost[train])
            weights = {} if cost is None else {"sample_weight": cost[test]}
            models = []
            for j, C in enumerate(values):
                started = time.perf_counter()
                model, info = fit(C)
                seconds[f, j] = time.perf_counter() - started
                estimator = self._estimator_of(model, C, X.shape[1])
                estimator.n_iter_ = getattr(info.result, "iterations", 0)
                if len(test) and (cost is None or np.any(cost[test] > 0)):
                    scores[f, j] = scorer(estimator, X[test], labels[test], **weights)
                models.append(estimator)
            fold_models.append(models)
        self._results(values, scores, seconds)
        if self.refit:
            self._fit_at(X, target, cost, self.C_)
        else:
            self._average([models[self.best_index_] for models in fold_models], X.shape)
        return self

    def _results(self, values, scores, seconds):
        """cv_results_ (GridSearchCV's keys), C_, best_index_, best_score_. A split with
        no test row of positive weight has no score: it is left out of the means (said
        in a warning), as an undefined figure is not 0; with no split scored at all,
        there is nothing to choose C by (ValueError)."""
        import warnings

        from scipy.stats import rankdata

        unscored = np.flatnonzero(np.all(np.isnan(scores), axis=1))
        if len(unscored) == len(scores):
            raise ValueError(
                "no cross-validation split has a test row of positive sample_weight: "
                "there is no score to choose C by"
            )
        if len(unscored):
            warnings.warn(
                f"{len(unscored)} of the {len(scores)} cross-validation splits "
                f"({', '.join(str(f) for f in unscored)}) have no test row of positive "
                "sample_weight: they have no score and are left out of mean_test_score "
                "and std_test_score",
                UserWarning,
                stacklevel=3,
            )
        scored = np.delete(scores, unscored, axis=0)
        mean = scored.mean(axis=0)
        ranked = np.where(np.isnan(mean), -np.inf, mean)  # a failed score ranks last
        results = {
            "mean_fit_time": seconds.mean(axis=0),
            "std_fit_time": seconds.std(axis=0),
            "param_C": np.ma.MaskedArray(values.astype(object), mask=False),
            "params": [{"C": float(C)} for C in values],
        }
        for f in range(scores.shape[0]):
            results[f"split{f}_test_score"] = scores[f]
        results["mean_test_score"] = mean
        results["std_test_score"] = scored.std(axis=0)
        results["rank_test_score"] = rankdata(-ranked, method="min").astype(np.int32)
        self.cv_results_ = results
        self.Cs_ = values
        self.best_index_ = int(np.argmax(ranked))  # the first best: the smaller C
        self.best_score_ = float(mean[self.best_index_])
        self.C_ = float(values[self.best_index_])

    def _average(self, estimators, shape):
        """refit=False (LogisticRegressionCV's rule): the folds' linear weights at C_,
        averaged."""
        (n, n_features), first = shape, estimators[0].model_
        if isinstance(first, MulticlassModel):
            shapes = {e.model_.W.shape for e in estimators}
            if len(shapes) > 1:
                raise ValueError(
                    "refit=False averages the folds' weights: every fold must train "
                    "every class (use stratified folds or refit=True)"
                )
            W = np.mean([e.model_.W for e in estimators], axis=0)
            model = dataclasses.replace(first, W=W, n_train=n)
        else:
            coef = np.mean([e.coef_[0] for e in estimators], axis=0)
            intercept = float(np.mean([e.intercept_[0] for e in estimators]))
            model = LinearModel(coef, -intercept, n_train=n)
            if isinstance(first, (LinearModel, KernelModel)):
                model.loss_id, model.k_fraction = first.loss_id, first.k_fraction
        self._loaded(model, n_features)
        self.n_iter_ = max(e.n_iter_ for e in estimators)


class OCASClassifierCV(_PathCV, OCASClassifier):
    """OCASClassifier with C chosen by cross-validation (scikit-learn's
    LogisticRegressionCV pattern), each fold trained along increasing C by ocas_learn's
    warm path (``--c-path``: OCAS keeps its cuts, dual coordinate descent its dual
    point).

    Parameters: Cs an int n (n values log-spaced over 1e-4..1e4) or a list of C values
    (trained in increasing order); cv None (5-fold stratified), an int, a splitter or
    an iterable of splits (scikit-learn's check_cv); scoring None (accuracy) or a
    scikit-learn scorer name or callable, applied to each fold's OCASClassifier on its
    held-out part (with sample_weight, when given, as the scorer's); refit True: the
    final model is OCASClassifier(C=C_) trained on all the data (the same model file),
    False: the average of the folds' weights at C_ (LogisticRegressionCV's rule).
    Every other parameter is OCASClassifier's; sample_weight is each example's cost
    factor in every fold.

    Attributes: C_ (the best C: the best mean score, ties to the smaller C), Cs_ (the
    values, increasing), cv_results_ (GridSearchCV's keys: param_C, params,
    split{i}_test_score, mean/std_test_score, rank_test_score, mean/std_fit_time: the
    time of each value's step on the path), best_score_, best_index_, and
    OCASClassifier's: classes_, coef_, intercept_, n_iter_, objective_ (refit), model_.
    """

    _base = OCASClassifier

    def __init__(
        self,
        Cs=10,
        *,
        cv=None,
        scoring=None,
        refit=True,
        tol=_OCAS["tol_rel"],
        tol_abs=_OCAS["tol_abs"],
        max_iter=_OCAS["max_iterations"],
        max_time=None,
        method=None,
        random_state=None,
        buffer_size=_OCAS["buffer_size"],
        cut_lambda=_OCAS["cut_lambda"],
        qp_bound=_OCAS["qp_bound"],
        fit_intercept=False,
        intercept_scaling=1.0,
        n_jobs=None,
        verbose=0,
        loss=_OCAS["loss"],
    ):
        _store(self, locals())

    def _path(self, X, target, cost):
        k = len(self.classes_)
        with _value_errors():
            path = OcasPath(_renumbered(Dataset(X, target, cost=cost)), self._ocas_params(1.0),
                            None if k == 2 else k)  # fmt: skip

        def fit(C):
            monitor = _monitor(self.verbose, self._command, "OCAS")
            try:
                with _value_errors():
                    return path.fit(C, callback=monitor)
            finally:
                if monitor is not None:
                    monitor.close()

        return fit

    def _fit_at(self, X, target, cost, C):
        """OCASClassifier.fit's training at C (the same model)."""
        monitor = _monitor(self.verbose, self._command, "OCAS")
        _train(self, train_ocas, Dataset(X, target, cost=cost), self._ocas_params(C), monitor)


class CuttingPlaneSVCCV(_PathCV, CuttingPlaneSVC):
    """CuttingPlaneSVC (linear: binary, or Crammer-Singer multiclass) with C chosen by
    cross-validation (scikit-learn's LogisticRegressionCV pattern), each fold trained
    along increasing C by cp_learn's warm path (``--c-path``: the 1-slack working sets
    keep their cuts, dual coordinate descent its dual point).

    Parameters: Cs, cv, scoring, refit as OCASClassifierCV's (scoring applied to each
    fold's CuttingPlaneSVC; refit True is CuttingPlaneSVC(C=C_) on all the data); every
    other parameter is CuttingPlaneSVC's, without the kernel ones (linear only). C is
    scikit-learn's: each fold's cp_learn -c is converted from it with that fold's
    number of examples, as CuttingPlaneSVC(C).fit on that fold would.

    Attributes: as OCASClassifierCV's (C_, Cs_, cv_results_, best_score_, best_index_,
    classes_, coef_, intercept_, n_iter_, objective_, model_).
    """

    _base = CuttingPlaneSVC
    # Linear only: the kernel parameters, not parameters here, stay CuttingPlaneSVC's
    # defaults (what _cp_params reads).
    kernel, gamma, degree, coef0, approximation, n_components = _defaults_of(
        CuttingPlaneSVC, "kernel", "gamma", "degree", "coef0", "approximation", "n_components"
    )

    def __init__(
        self,
        Cs=10,
        *,
        cv=None,
        scoring=None,
        refit=True,
        epsilon=EPSILON,
        algorithm=_STRUCT["algorithm"],
        rescaling="margin",
        max_iter=_STRUCT["max_iterations"],
        max_idle=_STRUCT["max_idle"],
        cache_size=_STRUCT["cache_size"],
        batch=_STRUCT["batch"],
        fit_intercept=None,
        intercept_scaling=1.0,
        max_time=None,
        random_state=None,
        n_jobs=None,
        verbose=0,
        loss="error_rate",
        k_fraction=_BINARY_OPTIONS["k_fraction"],
    ):
        _store(self, locals())

    def _path(self, X, target, cost):
        n = X.shape[0]
        params = self._cp_params(X, cost is not None, 1.0)
        c_of_sum = entry_of(params.problem).estimators.c_of_sum
        with _value_errors():
            path = StructPath(_renumbered(Dataset(X, target, cost=cost)), params)

        def fit(C):
            monitor = _monitor(self.verbose, self._command)
            try:
                with _value_errors():
                    return path.fit(c_of_sum(C, n), callback=monitor)
            finally:
                if monitor is not None:
                    monitor.close()

        return fit

    def _fit_at(self, X, target, cost, C):
        """CuttingPlaneSVC.fit's training at C (the same model)."""
        _fit_struct(self, Dataset(X, target, cost=cost), self._cp_params(X, cost is not None, C))
