"""SampledCutSVC: sampled_learn's binary kernel SVM (Yu & Joachims' sampled cuts)."""

from __future__ import annotations

from ..conventions import perf_from_c_light
from ..data import Dataset
from ..models import KernelModel, LinearModel
from ..options import defaults
from ..params.sampled import SampledParams
from ..solvers.sampled import train
from ._base import (
    KERNEL_DEFAULTS,
    _Classifier,
    _given_c,
    _given_fields,
    _kernel_params,
    _monitor,
    _n_threads,
    _params,
    _seed,
    _store,
    _time_limit,
    _train,
    svmlight_kernel,
)

_SAMPLED = defaults(SampledParams)


class SampledCutSVC(_Classifier):
    """Binary kernel SVM trained with sampled cutting planes (``sampled_learn``, Yu &
    Joachims): the constant-time or the linear-time algorithm.

    ``C`` is scikit-learn's (SVC's): ½|w|² + C·Σ hinge; sampled_learn's -c is C·n/100.

    Parameters [sampled_learn flag]: C; epsilon [-e] (cp_learn's units); algorithm
    [--algorithm] 'linear' or 'const'; sample_size [--r]; patience [-p]; kernel [-t],
    gamma, degree, coef0 (as CuttingPlaneSVC); max_iter [-#]; max_idle [--max-idle];
    max_time [--max-time]; random_state [--seed] (None is --seed 0); n_jobs
    [--threads]; verbose [-v].

    probability [--probability] (binary): after fit, Platt's sigmoid fitted on 5-fold
    cross-validated decision values (the same training on folds from random_state),
    which makes predict_proba and predict_log_proba available (as SVC's; without it they
    raise AttributeError). The label follows the score and the probability never
    contradicts it: P(classes_[1]) > 0.5 exactly when decision_function > 0 (see
    cpsvm.engine.platt).

    Attributes: classes_, support_vectors_, dual_coef_, intercept_ (0), coef_ (linear
    kernel only), n_iter_, objective_ (SVMlight's ½|w|² + C·Σ hinge; estimated on the last
    sample for 'const'), n_features_in_, model_.
    """

    _command = "sampled_learn"
    _multiclass = False
    _PARAMS = SampledParams
    _FIELDS = {
        "epsilon": "epsilon",
        "algorithm": "algorithm",
        "sample_size": "sample_size",
        "patience": "patience",
        "max_iter": "max_iterations",
        "max_idle": "max_idle",
    }
    _CONVERTED = {
        "random_state": ("seed", lambda e: _seed(e.random_state)),
        "max_time": ("time_limit", lambda e: _time_limit(e.max_time)),
        "n_jobs": ("n_threads", lambda e: _n_threads(e.n_jobs)),
    }
    _NOT_PARAMETERS = {"C": "C, scikit-learn's: -c = C*n/100", "kernel": "kernel, gamma, ..."}

    def __init__(
        self,
        C=1.0,
        *,
        epsilon=_SAMPLED["epsilon"],
        algorithm=_SAMPLED["algorithm"],
        sample_size=_SAMPLED["sample_size"],
        patience=_SAMPLED["patience"],
        kernel="linear",
        gamma=KERNEL_DEFAULTS["gamma"],
        degree=KERNEL_DEFAULTS["degree"],
        coef0=KERNEL_DEFAULTS["coef_const"],
        max_iter=_SAMPLED["max_iterations"],
        max_idle=_SAMPLED["max_idle"],
        max_time=None,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        _store(self, locals())

    def fit(self, X, y, sample_weight=None):
        X, target, cost = self._labelled(X, y, sample_weight)
        params = _params(
            SampledParams,
            **_given_fields(
                self,
                C=perf_from_c_light(_given_c(self), X.shape[0]),
                kernel=svmlight_kernel(self.kernel, self.gamma, self.degree, self.coef0, X),
            ),
        )
        monitor = _monitor(self.verbose, self._command, "SAMPLED")
        _train(self, train, Dataset(X, target, cost=cost), params, monitor)
        return self

    @classmethod
    def _from_model(cls, model):
        if isinstance(model, (LinearModel, KernelModel)):
            params = _kernel_params(model)
            return cls._binary_or_multiclass(model, **params)
        return None
