"""SampledCutSVC: sampled_learn's binary kernel SVM (Yu & Joachims' sampled cuts)."""

from __future__ import annotations

from ..conventions import perf_from_c_light
from ..data import Dataset
from ..models import KernelModel, LinearModel
from ._base import (
    _Classifier,
    _given_c,
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
        from ..solvers.sampled import SampledParams, train

        X, target, cost = self._labelled(X, y, sample_weight)
        params = _params(
            SampledParams,
            C=perf_from_c_light(_given_c(self), X.shape[0]),
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
        monitor = _monitor(self.verbose, self._command, "SAMPLED")
        _train(self, train, Dataset(X, target, cost=cost), params, monitor)
        return self

    @classmethod
    def _from_model(cls, model):
        if isinstance(model, (LinearModel, KernelModel)):
            params = _kernel_params(model)
            return cls._binary_or_multiclass(model, **params)
        return None
