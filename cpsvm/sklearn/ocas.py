"""OCASClassifier: ocas_learn's linear SVM (binary or Crammer-Singer multiclass)."""

from __future__ import annotations

from ..data import Dataset
from ._base import (
    _check_choice,
    _Classifier,
    _monitor,
    _n_threads,
    _params,
    _seed,
    _store,
    _time_limit,
    _train,
)

# ocas_learn's -m of each method name.
_METHODS = {"cutting_plane": 0, "ocas": 1, "dual_cd": 2}


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
        method=None,
        random_state=None,
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
        from ..solvers.ocas import train

        X, target, cost = self._labelled(X, y, sample_weight)
        params = self._ocas_params(self.C)
        monitor = _monitor(self.verbose, self._command, "OCAS")
        _train(self, train, Dataset(X, target, cost=cost), params, monitor)
        return self

    def _ocas_params(self, C):
        """ocas_learn's OcasParams of the estimator's parameters at ``C`` (after
        _labelled: the problem is binary or multiclass by classes_)."""
        from ..solvers.ocas import OcasParams

        if self.method is not None:
            _check_choice("method", self.method, tuple(_METHODS))
        return _params(
            OcasParams,
            C=C,
            bias=float(self.intercept_scaling) if self.fit_intercept else 0.0,
            method=None if self.method is None else _METHODS[self.method],
            seed=_seed(self.random_state),
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

    @classmethod
    def _from_model(cls, model):
        return cls._from_linear(model)
