"""OCASClassifier: ocas_learn's linear SVM (binary or Crammer-Singer multiclass)."""

from __future__ import annotations

from ..data import Dataset
from ..options import defaults
from ..params.ocas import OcasParams
from ..solvers.ocas import train
from ._base import (
    _check_choice,
    _Classifier,
    _given_fields,
    _last_fit,
    _monitor,
    _n_threads,
    _params,
    _seed,
    _store,
    _time_limit,
    _train,
    _warm,
)

# ocas_learn's -m of each method name.
_METHODS = {"cutting_plane": 0, "ocas": 1, "dual_cd": 2}
# ocas_learn's --loss of each of scikit-learn's loss names (LinearSVC's).
_LOSSES = {"hinge": "hinge", "squared_hinge": "squared-hinge"}
_OCAS = defaults(OcasParams)


class OCASClassifier(_Classifier):
    """Linear SVM trained as ``ocas_learn`` trains it (OCAS, or dual coordinate descent):
    binary (svmocas) for two classes, Crammer-Singer (msvmocas) for more.

    Minimises ½|w|² + C·Σ_i c_i·loss_i(w), the hinge loss (binary) or Crammer-Singer's
    (multiclass), c_i the sample weight: ``C`` is ``ocas_learn``'s ``-c`` as it is —
    scikit-learn's LinearSVC(loss='hinge') C for binary problems, LinearSVC(
    multi_class='crammer_singer') C for multiclass.

    Parameters (the flag of ``ocas_learn`` in brackets): C [-c]; tol [-r] stop when
    Q_P - Q_D <= tol·|Q_P|; tol_abs [-a]; max_iter [-#]; max_time [-t] seconds, None
    none; method [-m] None (ocas_learn's default: the faster of 'ocas' and 'dual_cd' for
    the data), 'ocas', 'cutting_plane' or 'dual_cd' (dual coordinate descent, LIBLINEAR's
    method); random_state [--seed] dual_cd's pass order; buffer_size [-s]; cut_lambda
    [--lambda]; qp_bound [-q]; fit_intercept, intercept_scaling [-b]: binary only, a
    constant feature of value intercept_scaling, regularised like w (-b 0 = no
    intercept, the default); n_jobs [-p] numba threads, -1 all; verbose [-v] 0 silent,
    1 a line per iteration on stderr; loss [--loss] 'hinge' (the default) or
    'squared_hinge' (binary only: ½|w|² + C·Σ_i c_i·max(0, 1 − y_i·⟨w, x_i⟩)², the
    objective of LinearSVC(loss='squared_hinge') at the same C).

    probability [--probability] (binary): after fit, Platt's sigmoid fitted on 5-fold
    cross-validated decision values (the same training on folds from random_state),
    which makes predict_proba and predict_log_proba available (as SVC's; without it they
    raise AttributeError). The label follows the score and the probability never
    contradicts it: P(classes_[1]) > 0.5 exactly when decision_function > 0 (see
    cpsvm.engine.platt). warm_start [--init-model] True: a fit starts from the last
    fit's (or a loaded) model_, of the same classes, as SGDClassifier's warm_start (the
    stopping rule stays the gap to the optimum).

    Attributes: classes_, coef_ (1, d) or (k, d), intercept_, n_iter_, objective_
    (Q_P: ½|w|² + C·Σ loss, the objective LinearSVC minimises), n_features_in_,
    model_ (the cpsvm model).
    """

    _command = "ocas_learn"
    _PARAMS = OcasParams
    _FIELDS = {
        "C": "C",
        "tol": "tol_rel",
        "tol_abs": "tol_abs",
        "max_iter": "max_iterations",
        "buffer_size": "buffer_size",
        "cut_lambda": "cut_lambda",
        "qp_bound": "qp_bound",
    }
    _CONVERTED = {
        "max_time": ("time_limit", lambda e: _time_limit(e.max_time)),
        "method": ("method", lambda e: None if e.method is None else _METHODS[e.method]),
        "random_state": ("seed", lambda e: _seed(e.random_state)),
        "n_jobs": ("n_threads", lambda e: _n_threads(e.n_jobs)),
        "loss": ("loss", lambda e: _LOSSES[e.loss]),
        "fit_intercept": (
            "bias",
            lambda e: float(e.intercept_scaling) if e.fit_intercept else 0.0,
        ),
    }
    _NOT_PARAMETERS = {
        "example_costs": "sample_weight",
        "problem": "the classes of y",
        "margin_bounds": "ocas_learn's default",
        "init_model": "warm_start (the last fit's model)",
    }

    def __init__(
        self,
        C=_OCAS["C"],
        *,
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
        warm_start=False,
    ):
        _store(self, locals())

    def fit(self, X, y, sample_weight=None):
        last = _last_fit(self)
        X, target, cost = self._labelled(X, y, sample_weight)
        params = _warm(self, self._ocas_params(self.C), last)
        monitor = _monitor(self.verbose, self._command, "OCAS")
        _train(self, train, Dataset(X, target, cost=cost), params, monitor)
        return self

    def _ocas_params(self, C):
        """ocas_learn's OcasParams of the estimator's parameters at ``C`` (after
        _labelled: the problem is binary or multiclass by classes_)."""
        if self.method is not None:
            _check_choice("method", self.method, tuple(_METHODS))
        _check_choice("loss", self.loss, tuple(_LOSSES))
        return _params(
            OcasParams,
            **_given_fields(
                self, C=C, problem="binary" if len(self.classes_) == 2 else "multiclass"
            ),
        )

    @classmethod
    def _from_model(cls, model):
        return cls._from_linear(model)
