"""OCAS: the Optimized Cutting Plane Algorithm (Franc & Sonnenburg, ICML 2008).

Minimises F(w) = ½|w|² + Σ_i C_i·loss_i(w) — the hinge loss (svmocas) or the
Crammer-Singer loss (msvmocas), SVMlight's C convention — on the engine's 1-slack loop
(same master QP, same cuts) with OCAS's oracle (:mod:`cpsvm.engine.ocas`). C_i is C (or
the -C file's) times the example's SVMlight ``cost:``.

Stopping is libocas's: F(w_b) − F_t(w_t) ≤ TolAbs or ≤ TolRel·|F(w_b)|, F(w_b) ≤
QPBound, or the time limit. ``method=0`` is the plain cutting-plane algorithm (BMRM,
cuts at w_t), for comparison; ``method=2`` dual coordinate descent
(:mod:`cpsvm.engine.dcd`, LIBLINEAR's method) on the same F, stopped by the same
TolAbs/TolRel rules on its duality gap P(w_b) − D(α). ``method=None`` picks: DCD for
Crammer-Singer, and for the hinge loss when the mean C_i·|x_i|² is at most
``DCD_CONDITION`` (above it the dual's coordinates couple strongly and DCD needs many
passes, benchmarks/bench_liblinear.py); OCAS when QPBound or the margin bounds ask for it.
``loss="squared-hinge"`` (binary) minimises ½|w|² + Σ_i C_i·max(0, 1 − y_i·⟨w, x_i⟩)²
instead, LIBLINEAR's -s 1 problem, by the same three methods
(:mod:`cpsvm.engine.dcd_squared`, :mod:`cpsvm.engine.ocas_squared`); DCD unless -q asks
for OCAS (benchmarks/bench_squared_hinge.py).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..data import Dataset
from ..engine.cutting_plane import CuttingPlaneParams, one_slack
from ..engine.dcd import DcdParams, binary_hinge_dcd, crammer_singer_dcd, linear_svm_dcd, path_start
from ..engine.dcd_squared import squared_hinge_dcd
from ..engine.magnitudes import c_bound, check_c, check_costs
from ..engine.ocas import OcasOracle, merged_examples
from ..engine.ocas_squared import SquaredHingeOcasOracle
from ..engine.warm import dcd_from_weights, squared_hinge_alpha
from ..engine.working_set import CutWorkingSet
from ..errors import InputError
from ..models import linear_start
from ..params.ocas import OcasParams
from ..params.resolved import Resolved, resolved
from ..params.shared import class_weights, training_classes, weighed
from ..problems import choose_problem, problem_entry
from ..problems.binary.problem import BinaryProblem
from ..problems.multiclass.problem import MulticlassProblem
from ..sparse_ops import squared_norms
from ..threads import thread_count

# --margin-bounds when not given (benchmarks/bench_margin_bounds.py).
MARGIN_BOUNDS_DEFAULT = False
# The automatic method's choice for the hinge loss: DCD up to this mean C_i·|x_i|².
DCD_CONDITION = 3.0
SQUARED = "squared-hinge"


@dataclass
class OcasInfo:
    problem: str
    n_examples: int
    result: object
    seconds: dict = field(default_factory=dict)
    training_error: float = 0.0
    method: int = 1


def train(dataset: Dataset, run: Resolved | OcasParams, *, callback=None, should_stop=None):
    """Train on ``dataset`` by ``run`` (a Params is resolved first: :func:`settings`)
    with its ``n_threads`` threads (the caller's count is restored on return)."""
    run = resolved(run, dataset, settings)
    with thread_count(run.params.n_threads), c_bound(run.params.C):
        return _train(dataset, run, callback, should_stop)


def settings(dataset: Dataset, params: OcasParams, *, pick: bool = True) -> Resolved:
    """The settings of a run of ``params`` on ``dataset``: the problem (binary or
    multiclass) and, with ``pick``, the method when -m is not given (:func:`choose_method`
    at ``params.C``; a path picks it at each C)."""
    kind = choose_problem(dataset, params.problem)
    classes = training_classes(dataset, params)
    method = params.method
    if method is None and pick:
        method = choose_method(kind, dataset.X, example_costs(dataset, params, classes), params)
    return Resolved(params, kind, method=method, classes=classes)


def example_costs(dataset: Dataset, params: OcasParams, classes=None) -> np.ndarray:
    """C_i of every example: -C's (or C) times the file's ``cost:`` factor."""
    n = dataset.n_examples
    if params.example_costs is not None:
        costs = np.asarray(params.example_costs, dtype=np.float64)
        if len(costs) != n or np.any(~(costs > 0)):
            raise InputError(f"expected {n} per-example costs C_i > 0, got {len(costs)}")
    else:
        costs = np.full(n, float(params.C))
    factors = cost_factors(dataset, params, classes)
    return costs if factors is None else costs * factors


def cost_factors(dataset: Dataset, params: OcasParams, classes=None) -> np.ndarray | None:
    """Each example's factor of its C_i: the file's ``cost:`` token times its class's
    weight (--class-weight, or -j for the positive examples: SVMlight's cost factor);
    None when neither is given (cpsvm.data.Dataset.cost_factors)."""
    return dataset.cost_factors(class_weights(params), classes)


def check_binary_only(kind: str, params: OcasParams) -> None:
    """-b and -j: binary problems only (also on a cluster)."""
    if kind != "binary" and params.bias != 0:
        raise InputError("a bias (-b) is supported for binary problems only")
    if kind != "binary" and params.cost_factor != 1:
        raise InputError("a cost factor (-j) is for binary problems only")
    if kind != "binary" and params.loss == SQUARED:
        raise InputError(
            "--loss squared-hinge is for binary problems only (Crammer-Singer multiclass "
            "trains the hinge, as LIBLINEAR's -s 4)"
        )


def libocas_problem(kind: str, X, y, bias: float, n_classes: int | None = None):
    """The problem OCAS and dual coordinate descent train, in libocas's scale: Δ = 1 and
    δΨ = y·x (binary: psi_scale ½), C_i in the examples' costs."""
    if kind == "binary":
        return BinaryProblem(X, y, bias=bias, loss_scale=1.0, psi_scale=0.5)
    return MulticlassProblem(X, y, n_classes=n_classes, loss_scale=1.0)


def _train(dataset, run, callback, should_stop):
    params, kind, method = run.params, run.problem, run.method
    problem_entry(kind).reading.check_labels(dataset)  # (a fold's part: one class only?)
    n = dataset.n_examples
    check_binary_only(kind, params)
    costs = example_costs(dataset, params, run.classes)
    if params.example_costs is None:  # C against the data before any work
        factors = cost_factors(dataset, params, run.classes)
        norms = np.sqrt(squared_norms(dataset.X, params.bias**2))
        check_c(params.C, np.ones(n) if factors is None else factors, norms)
    X, y, costs, position = examples_of(dataset.X, dataset.y, costs, params.loss, method)
    check_costs(costs, np.sqrt(squared_norms(X, params.bias**2)))
    problem = libocas_problem(kind, X, y, params.bias)
    w_0 = initial_weights(kind, params, dataset, problem)
    started = time.perf_counter()
    if method == 2 and params.loss == SQUARED:
        start = {} if w_0 is None else {"alpha": squared_hinge_alpha(X, y, costs, w_0, params.bias)}
        result = squared_hinge_dcd(X, y, costs, **_dcd_run(params, callback, should_stop, **start))
        w, seconds = result.w.reshape(-1), _dcd_seconds(result)
        outputs = problem.scores(w)
    elif method == 2:
        w, result, seconds = _train_dcd(kind, X, y, costs, params, callback, should_stop, w_0)
        outputs = problem.scores(w)
    else:
        w, result, seconds = _train_ocas(problem, costs, params, method, callback, should_stop, w_0)
        outputs = seconds.pop("outputs")
    seconds["total"] = time.perf_counter() - started
    model = weighed(problem.to_model(w, n_train=n), dataset, params, run.classes)
    error = _training_error(kind, outputs[position], dataset.y)
    return model, OcasInfo(kind, n, result, seconds, error, method)


def examples_of(X, y, costs, loss, method):
    """The examples trained: repeated ones merged (engine.ocas.merged_examples), except
    for the squared hinge's dual coordinate descent (-m 2, or a path's method picked at
    each C: 2), which converges in several times fewer passes when each copy takes its
    own step (measured on a9a: the man page's DEFAULTS)."""
    if loss == SQUARED and method in (None, 2):
        return X, y, costs, np.arange(len(y))
    return merged_examples(X, y, costs)


def _training_error(kind, outputs, y) -> float:
    """The share of examples whose outputs (each example's, in file order) misclassify."""
    predicted = np.sign(outputs) if kind == "binary" else np.argmax(outputs, axis=1) + 1
    return float(np.mean(predicted != y))


def choose_method(kind, X, costs, params) -> int:
    """-m when not given: OCAS for what only it does (QPBound, margin bounds), DCD for
    Crammer-Singer, and for the hinge loss when the mean C_i·|x_i|² (with the bias
    feature) is at most DCD_CONDITION."""
    bounds = MARGIN_BOUNDS_DEFAULT if params.margin_bounds is None else params.margin_bounds
    if params.qp_bound > 0 or bounds:
        return 1
    if kind != "binary" or params.loss == SQUARED:
        return 2
    norms = squared_norms(X, params.bias**2)
    with np.errstate(over="ignore"):  # (a C too large is refused by check_c)
        return 2 if float(np.mean(costs * norms)) <= DCD_CONDITION else 1


def initial_weights(kind, params, dataset, problem):
    """w_0 of a warm start (--init-model), in the problem's layout (binary: w, the bias
    weight −b/B last with -b B; multiclass: the (d, k) W flat), or None: the model's
    weights in the data's columns (cpsvm.models.start_weights: another kind, more
    features or another class count refused in one line)."""
    model = params.init_model
    if model is None:
        return None
    binary = kind == "binary"
    n_classes = None if binary else problem.n_classes
    return linear_start(model, binary, dataset, params.bias, n_classes)


def _train_ocas(problem, costs, params, method, callback, should_stop, w_0=None):
    bounds = MARGIN_BOUNDS_DEFAULT if params.margin_bounds is None else params.margin_bounds
    # the class read at the call, where a test may replace it
    oracle_class = SquaredHingeOcasOracle if params.loss == SQUARED else OcasOracle
    if bounds:  # (the bounds' modules load only when asked for: start-up)
        from ..engine.ocas_bounds import PrunedOcasOracle as oracle_class
    oracle = oracle_class(problem, costs, 1.0, method, params.cut_lambda)
    if w_0 is not None:
        oracle.start_at(w_0, cut=True)
    result = one_slack(
        oracle,
        libocas_engine_params(params, 1.0),
        callback=callback,
        should_stop=should_stop,
        working_set=CutWorkingSet([1.0]),
    )
    seconds = dict(oracle.seconds, qp=result.seconds_qp, outputs=oracle.out_best)
    return oracle.w_best, result, seconds


def libocas_engine_params(params, C):
    """The engine's settings of an OCAS run (-m 0/1) whose working set is bounded by C:
    libocas's stopping rules (also on a cluster)."""
    return CuttingPlaneParams(
        C=C,
        epsilon=-math.inf,
        max_iterations=params.max_iterations,
        max_idle=params.buffer_size,
        time_limit=params.time_limit,
        tol_abs=params.tol_abs,
        tol_rel=params.tol_rel,
        qp_bound=params.qp_bound,
        max_cuts=params.buffer_size,
    )


def _dcd_params(params):
    return DcdParams(
        tol_rel=params.tol_rel,
        tol_abs=params.tol_abs,
        max_iterations=params.max_iterations,
        time_limit=params.time_limit,
        seed=params.seed,
    )


def _dcd_run(params, callback, should_stop, **start):
    return dict(
        bias=params.bias,
        params=_dcd_params(params),
        callback=callback,
        should_stop=should_stop,
        **start,
    )


def _dcd_seconds(result):
    return dict(passes=result.seconds_total - result.seconds_check, gap=result.seconds_check)


def _train_dcd(kind, X, y, costs, params, callback, should_stop, w_0=None):
    """Dual coordinate descent on F itself (its P is F, its gap F's)."""
    if w_0 is not None:
        return _train_dcd_warm(kind, X, y, costs, params, callback, should_stop, w_0)
    w, result = linear_svm_dcd(
        X, y, costs, multiclass=kind != "binary", bias=params.bias, params=_dcd_params(params),
        callback=callback, should_stop=should_stop,
    )  # fmt: skip
    seconds = _dcd_seconds(result)
    return w, result, seconds


def _train_dcd_warm(kind, X, y, costs, params, callback, should_stop, w_0):
    """Dual coordinate descent from a model's w_0 (cpsvm.engine.warm)."""
    result = dcd_from_weights(
        X, y, costs, w_0, multiclass=kind != "binary", bias=params.bias,
        params=_dcd_params(params), callback=callback, should_stop=should_stop,
    )  # fmt: skip
    seconds = _dcd_seconds(result)
    return result.w.reshape(-1), result, seconds


def _path_settings(dataset, params):
    """A path's settings: the method given (None: each C picks its own)."""
    return settings(dataset, params, pick=False)


class OcasPath:
    """Trainings of one dataset at increasing C, each started from the last one's end
    (a path over C, ``--c-path``): OCAS (-m 0/1) keeps its cuts, which are sums of
    cost_i·δΨ_i and do not depend on C, and its best point; dual coordinate descent
    starts from :func:`~cpsvm.engine.dcd.path_start`. Each C's method is the one a cold
    run at that C would use, so a binary path may go from DCD to OCAS as C grows. The
    costs are C times the examples' ``cost:`` factors (a -C file has no path)."""

    def __init__(self, dataset: Dataset, run: Resolved | OcasParams, n_classes: int | None = None):
        run = resolved(run, dataset, _path_settings)
        params = run.params
        problem_entry(run.problem).reading.check_labels(dataset)
        if params.example_costs is not None:
            raise InputError("a path over C takes no per-example C_i (-C)")
        self.dataset, self.params, self.method = dataset, params, run.method
        self.kind = run.problem
        check_binary_only(self.kind, params)
        self.classes = run.classes
        factors = cost_factors(dataset, params, run.classes)
        self.factors = np.ones(dataset.n_examples) if factors is None else factors
        self.X, self.y, self.unit_costs, self.position = examples_of(
            dataset.X, dataset.y, self.factors, params.loss, self.method
        )
        self.problem = libocas_problem(self.kind, self.X, self.y, params.bias, n_classes)
        self.norms = np.sqrt(squared_norms(self.X, params.bias**2))  # |x_i| (C's bound)
        # --init-model: the path's first C starts from it
        self._w_0 = initial_weights(self.kind, params, dataset, self.problem)
        self._ocas = None  # (oracle, working set) of the last OCAS run
        self._dcd = None  # (C, DcdResult) of the last DCD run

    def fit(self, C: float, *, callback=None, should_stop=None):
        """(model, OcasInfo) at ``C``, warm from the previous fit."""
        params = dataclasses.replace(self.params, C=C)
        self.check_c(C)
        with thread_count(params.n_threads), c_bound(C):
            method = self.method
            if method is None:
                method = choose_method(self.kind, self.dataset.X, C * self.factors, params)
            started = time.perf_counter()
            if method == 2:
                w, result, seconds = self._fit_dcd(C, params, callback, should_stop)
                outputs = self.problem.scores(w)
            else:
                w, result, seconds = self._fit_ocas(C, params, method, callback, should_stop)
                outputs = seconds.pop("outputs")
            seconds["total"] = time.perf_counter() - started
        n = self.dataset.n_examples
        error = _training_error(self.kind, outputs[self.position], self.dataset.y)
        model = weighed(self.problem.to_model(w, n_train=n), self.dataset, params, self.classes)
        return model, OcasInfo(self.kind, n, result, seconds, error, method)

    def check_c(self, C: float) -> None:
        """C against the data before any work (cpsvm.engine.magnitudes.check_c):
        OptionError (CTooLarge, CTooSmall) naming the bound."""
        with c_bound(C):
            check_c(C, self.unit_costs, self.norms)

    def _fit_ocas(self, C, params, method, callback, should_stop):
        bounds = MARGIN_BOUNDS_DEFAULT if params.margin_bounds is None else params.margin_bounds
        if bounds:  # its pruning is tied to one C: a cold run
            w_0, self._w_0 = self._w_0, None
            return _train_ocas(self.problem, C * self.unit_costs, params, method, callback,
                               should_stop, w_0)  # fmt: skip
        if self._ocas is None or self._ocas[0].method != method:
            oracle_class = SquaredHingeOcasOracle if params.loss == SQUARED else OcasOracle
            oracle = oracle_class(self.problem, self.unit_costs, C, method, params.cut_lambda)
            working_set = CutWorkingSet([C])
            self._ocas = oracle, working_set
            if self._dcd is not None and method == 1:
                # from where the path's coordinate descent ended: OCAS's first line
                # search then starts at that point rather than at 0
                oracle.start_at(self._dcd[1].w.reshape(-1))
            elif self._w_0 is not None:
                oracle.start_at(self._w_0, cut=True)
            self._w_0 = None
        else:
            oracle, working_set = self._ocas
            oracle.set_C(C)
            working_set.set_bounds([C])
        result = one_slack(
            oracle,
            libocas_engine_params(params, C),
            callback=callback,
            should_stop=should_stop,
            working_set=working_set,
        )
        seconds = dict(oracle.seconds, qp=result.seconds_qp, outputs=oracle.out_best.copy())
        return oracle.w_best.copy(), result, seconds

    def _fit_dcd(self, C, params, callback, should_stop):
        multiclass = self.kind != "binary"
        costs = C * self.unit_costs
        start = {}
        if self._dcd is None and self._w_0 is not None:
            w_0, self._w_0 = self._w_0, None
            if params.loss == SQUARED:
                start = {"alpha": squared_hinge_alpha(self.X, self.y, costs, w_0, params.bias)}
            else:
                w, result, seconds = _train_dcd_warm(
                    self.kind, self.X, self.y, costs, params, callback, should_stop, w_0
                )
                self._dcd = C, result
                return w, result, seconds
        elif self._dcd is not None:
            alpha, w = path_start(self._dcd[1], C / self._dcd[0], multiclass)
            start = dict(alpha=alpha, **({"W": w} if multiclass else {"w": w}))
        run = dict(
            bias=params.bias,
            params=_dcd_params(params),
            callback=callback,
            should_stop=should_stop,
            **start,
        )
        if multiclass:
            result = crammer_singer_dcd(
                self.X, self.y, costs, n_classes=self.problem.n_classes, **run
            )
        elif params.loss == SQUARED:
            result = squared_hinge_dcd(self.X, self.y, costs, **run)
        else:
            result = binary_hinge_dcd(self.X, self.y, costs, **run)
        self._dcd = C, result
        seconds = _dcd_seconds(result)
        return result.w.reshape(-1), result, seconds
