"""ASSETClassifier and ASSETRegressor: asset_learn's kernel SVM and SVR (Lee & Wright's
ASSET, stochastic subgradient on a kernel approximation)."""

from __future__ import annotations

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ..data import Dataset
from ..models import KernelModel, LinearModel, RandomFeaturesModel
from ..options import defaults
from ..params.asset import AssetParams
from ..solvers.asset import train
from ._base import (
    KERNEL_DEFAULTS,
    _Classifier,
    _Estimator,
    _given_fields,
    _kernel_params,
    _last_fit,
    _monitor,
    _n_threads,
    _params,
    _seed,
    _store,
    _SupportVectors,
    _train,
    _warm,
    svmlight_kernel,
)

_ASSET = defaults(AssetParams)


class _Asset(_Estimator):
    """ASSET's parameters and fit, for classification and regression."""

    _command = "asset_learn"
    _task = "classification"
    _PARAMS = AssetParams
    _FIELDS = {
        "approximation": "approx",
        "n_components": "basis_size",
        "eig_threshold": "eig_threshold",
        "star": "star",
        "batch_size": "batch",
        "max_iter": "epochs",
        "tol": "tolerance",
        "average_last": "average_last",
        "dg_samples": "dg_samples",
        "memory": "memory_mb",
    }
    _CONVERTED = {
        "random_state": ("seed", lambda e: _seed(e.random_state)),
        "n_jobs": ("n_threads", lambda e: _n_threads(e.n_jobs)),
    }
    _NOT_PARAMETERS = {
        "C": "C, scikit-learn's (default 1; asset_learn's -c has none)",
        "lam": "C",
        "task": "the class: ASSETClassifier, ASSETRegressor",
        "tube": "ASSETRegressor's epsilon",
        "kernel": "kernel, gamma, degree, coef0",
        "validation": "none: scikit-learn's model selection",
        "method": "asset_learn's sgd",
        "loss": "asset_learn's hinge",
        "huber_h": "--method gd only",
        "gd_epsilon": "--method gd only",
        "margin_bounds": "asset_learn's default",
        "init_model": "warm_start (ASSETClassifier: the last fit's model)",
    }

    def _fit_asset(self, X, target, cost=None, last=None):
        """Train on X and the command's targets, ``cost`` the examples' sample_weight (the
        cost: tokens of asset_learn's file; None: all 1), from ``last``'s model with
        warm_start."""
        m = X.shape[0]
        basis_size = self.n_components
        if self.approximation == "nystrom" and basis_size > m:
            # asset_learn refuses --k > m; scikit-learn's Nystroem uses all examples.
            import warnings

            warnings.warn(f"n_components={basis_size} > {m} examples: using {m}", stacklevel=3)
            basis_size = m
        params = _params(
            AssetParams,
            **_given_fields(
                self,
                C=float(self.C),
                basis_size=basis_size,
                kernel=svmlight_kernel(self.kernel, self.gamma, self.degree, self.coef0, X),
                task=self._task,
                tube=getattr(self, "epsilon", _ASSET["tube"]),
            ),
        )
        params = _warm(self, params, last)
        total = self.max_iter * -(-m // self.batch_size)
        monitor = _monitor(self.verbose, "asset_learn", "ASSET", total)
        info = _train(self, train, Dataset(X, target, cost=cost), params, monitor)
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

    probability [--probability]: after fit, Platt's sigmoid fitted on 5-fold
    cross-validated decision values (the same training on folds from random_state),
    which makes predict_proba and predict_log_proba available (as SVC's; without it they
    raise AttributeError). P(classes_[1]) > 0.5 exactly when decision_function > 0.

    class_weight [--class-weight]: a dict {class: weight} or 'balanced' (n/(k*n_class)),
    each class's factor of C, as LinearSVC's; cost_factor [-j] the positive class's
    (classes_[1]). fit's sample_weight is each example's factor of C (asset_learn's
    cost: tokens), multiplied by its class's weight.
    """
        + _ASSET_DOC
    )

    _multiclass = False

    def __init__(
        self,
        C=1.0,
        *,
        kernel="linear",
        gamma=KERNEL_DEFAULTS["gamma"],
        degree=KERNEL_DEFAULTS["degree"],
        coef0=KERNEL_DEFAULTS["coef_const"],
        approximation=_ASSET["approx"],
        n_components=_ASSET["basis_size"],
        eig_threshold=_ASSET["eig_threshold"],
        star=_ASSET["star"],
        batch_size=_ASSET["batch"],
        max_iter=_ASSET["epochs"],
        tol=_ASSET["tolerance"],
        average_last=_ASSET["average_last"],
        dg_samples=_ASSET["dg_samples"],
        memory=_ASSET["memory_mb"],
        random_state=None,
        n_jobs=None,
        verbose=0,
        warm_start=False,
    ):
        _store(self, locals())

    def fit(self, X, y, sample_weight=None):
        last = _last_fit(self)
        X, target, cost = self._labelled(X, y, sample_weight)
        return self._fit_asset(X, target, cost, last)

    def _linear_state(self):
        if isinstance(self.model_, RandomFeaturesModel):
            return self.model_.coef[None, :], np.array([-self.model_.b])
        return super()._linear_state()

    @classmethod
    def _from_model(cls, model):
        if isinstance(model, (LinearModel, KernelModel)):
            params = (
                _kernel_params(model)
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


class ASSETRegressor(RegressorMixin, _SupportVectors, _Asset):
    __doc__ = (
        """Kernel support vector regression by stochastic subgradient on a kernel
    approximation (``asset_learn -z r``): the epsilon-insensitive loss with tube width
    ``epsilon`` [-w], as SVR's. fit's sample_weight is each example's factor of C
    (asset_learn's cost: tokens).
    """
        + _ASSET_DOC
    )

    _task = "regression"
    _FIELDS = {**_Asset._FIELDS, "epsilon": "tube"}
    _NOT_PARAMETERS = {
        **{k: v for k, v in _Asset._NOT_PARAMETERS.items() if k != "tube"},
        "probability": "classification only (ASSETClassifier)",
        "class_weight": "classification only (ASSETClassifier)",
        "cost_factor": "classification only (ASSETClassifier)",
    }

    def __init__(
        self,
        C=1.0,
        *,
        epsilon=_ASSET["tube"],
        kernel="linear",
        gamma=KERNEL_DEFAULTS["gamma"],
        degree=KERNEL_DEFAULTS["degree"],
        coef0=KERNEL_DEFAULTS["coef_const"],
        approximation=_ASSET["approx"],
        n_components=_ASSET["basis_size"],
        eig_threshold=_ASSET["eig_threshold"],
        star=_ASSET["star"],
        batch_size=_ASSET["batch"],
        max_iter=_ASSET["epochs"],
        tol=_ASSET["tolerance"],
        average_last=_ASSET["average_last"],
        dg_samples=_ASSET["dg_samples"],
        memory=_ASSET["memory_mb"],
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        _store(self, locals())

    def fit(self, X, y, sample_weight=None):
        X, y, cost = self._check_Xy(X, y, sample_weight, numeric=True)
        return self._fit_asset(X, np.asarray(y, dtype=np.float64), cost)

    def predict(self, X):
        return self._decision_values(X)

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
            estimator = cls(**_kernel_params(model))
        elif isinstance(model, LinearModel):
            estimator = cls(approximation="none")
        else:
            return None
        return estimator._loaded(model, model.n_features)
