"""CuttingPlaneSVC: cp_learn's binary (linear, kernel or Nyström) and multiclass SVM; and
what the cp_learn estimators share: the conversion of an estimator's parameters to
cp_learn's (with StructuredSVM) and the fit by cp_learn's solver (with StructuredSVM and
RankSVM)."""

from __future__ import annotations

import numpy as np

from ..data import Dataset
from ..models import KernelModel, LinearModel, MulticlassModel
from ._base import (
    _check_choice,
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


def _struct_params(estimator, kind, n, C=None, **more):
    """cp_learn's StructParams of an estimator's parameters (CuttingPlaneSVC and
    StructuredSVM): its C (or ``C``) converted to cp_learn's -c for the problem ``kind``
    over n examples."""
    from ..problems import entry_of
    from ..solvers.one_slack import StructParams

    command_c = entry_of(kind).c_of_sum(_given_c(estimator) if C is None else C, n)
    rescaling = _RESCALING.get(estimator.rescaling)
    if rescaling is None:
        raise ValueError(f"expected rescaling 'margin' or 'slack', got {estimator.rescaling!r}")
    return _params(
        StructParams,
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
    """Fit ``estimator`` by cp_learn's solver (its -v lines when verbose); a multiclass
    objective_ rescaled to Crammer-Singer's."""
    from ..solvers.one_slack import train

    info = _train(estimator, train, data, params, _monitor(estimator.verbose, "cp_learn"))
    if info.problem == "multiclass":  # cp_learn's w is 100x Crammer-Singer's
        from ..conventions import LOSS_SCALE

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
        X, target, cost = self._labelled(X, y, sample_weight)
        params = self._cp_params(X, sample_weight is not None, _given_c(self))
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
