"""Linear training with the examples on a Dask cluster (``--scheduler``): OCAS
(``ocas_learn``, ``cp_learn -w 9``) and the 1-slack cutting plane (``cp_learn -w 3``),
binary and Crammer-Singer multiclass, on the engine's 1-slack loop with the oracles of
:mod:`cpsvm.cluster.oracles`.

The data arrive as a :class:`cpsvm.cluster.session.ShardedData` (loaded on the
workers by the caller's loaders); ``params`` are the single-machine solvers' own
(``OcasParams``, ``StructParams``), read here by name, so that a command switches to the
cluster by changing only where its data live.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..conventions import LOSS_SCALE, PERF_ERROR_RATE, PERF_MULTIVARIATE_LOSSES, PSI_SCALE
from ..engine.cutting_plane import Progress, one_slack
from ..engine.magnitudes import c_bound
from ..engine.solver_table import CP_LEARN, OCAS_LEARN, choices_text, cluster_ids
from ..engine.working_set import CutWorkingSet
from ..errors import InputError, OptionError
from ..models import LinearModel, MulticlassModel
from ..params.resolved import checked_params
from ..params.shared import class_weights
from ..problems import choose_entry
from ..problems.registry import problem_entry
from ..solvers.ocas import check_binary_only, libocas_engine_params
from ..solvers.one_slack import engine_settings
from .multivariate import make_oracle, run_engine
from .oracles import ClusterCutOracle, ClusterOcasOracle
from .session import ClusterLost, ShardedData


@dataclass
class ClusterProgress(Progress):
    """The engine's Progress plus where the iteration's time went on the cluster."""

    rounds: int = 0  # map-reduce rounds of the iteration
    compute_seconds: float = 0.0  # the slowest worker's, summed over the rounds
    communication_seconds: float = 0.0


@dataclass
class ClusterInfo:
    problem: str
    algorithm: int
    n_examples: int
    n_features: int
    result: object
    seconds: dict = field(default_factory=dict)
    training_error: float = 0.0
    norm_w: float = 0.0
    n_sv: int = 0
    rounds: int = 0
    line_search_rounds: int = 0
    line_searches: int = 0
    compute_seconds: float = 0.0
    communication_seconds: float = 0.0
    by_task: dict = field(default_factory=dict)  # compute seconds per kind of round
    notes: list = field(default_factory=list)
    kernel_evaluations: int = 0
    method: int = 1  # ocas_learn's -m
    terminated: int = 0  # the signal that stopped it (the command's StopOnInterrupt)
    loss_id: int = PERF_ERROR_RATE  # cp_learn's -l (the problem's statistics read it)
    class_counts: tuple | None = None  # (positives, negatives) of a multivariate loss


# cp_learn's -w on a cluster when not given (OCAS's line search).
CLUSTER_DEFAULT = 9


def refuse_problem(requested: str):
    """The problems a cluster trains: binary, multiclass or auto."""
    if requested not in ("auto", "binary", "multiclass"):
        raise OptionError(
            f"--problem {requested} cannot run on a cluster (--scheduler): "
            "binary, multiclass or auto"
        )


def choose_kind(data: ShardedData, requested: str) -> str:
    """The problem of the shards, by the function that chooses a file's on one machine
    (the registry's choose_entry: auto asks the structured problems first), checked by
    its entry; binary or multiclass, the problems a cluster trains."""
    refuse_problem(requested)
    if data.n_examples == 0:
        raise InputError(
            "expected at least one example, found none", source=data.summaries[0]["source"]
        )
    requested = choose_entry(data, requested, sequences=True).name
    refuse_problem(requested)
    bad = data.first_bad("bad_cost")
    if bad is not None:
        raise InputError(f"expected cost: > 0, got cost:{bad[2]:g}", source=bad[0], line=bad[1])
    return requested


def _monitored(callback, oracle):
    """The engine's callback with the iteration's rounds and seconds on the cluster."""
    if callback is None:
        return None
    seen = [0, 0, 0.0, 0.0]

    def report(p):
        rounds, compute, comm = oracle.rounds.snapshot()
        extra = ClusterProgress(
            **dataclasses.asdict(p),
            rounds=rounds - seen[0],
            compute_seconds=compute - seen[1],
            communication_seconds=comm - seen[2],
        )
        seen[:3] = [rounds, compute, comm]
        callback(extra)

    return report


@contextlib.contextmanager
def _model_so_far(oracle, model):
    """A lost cluster (ClusterLost) carries the model reached so far, ``model(w)`` of
    the oracle's weights, and the iterations done."""
    try:
        yield
    except ClusterLost as e:
        w = oracle.model_weights()
        e.model = model(w) if w is not None else None
        e.iterations = oracle.separations
        raise


def _model(kind, w, d, bias, n_classes, n, loss_id=0, feature_ids=None, class_weights=""):
    """The model of Ψ's weights w; ``feature_ids`` the original indices of renumbered
    columns (written into the model file), ``class_weights`` what it records of them."""
    if kind == "binary":
        if bias:
            return LinearModel(
                w[:-1].copy(), -w[-1] * bias, n_train=n, feature_ids=feature_ids,
                class_weights=class_weights,
            )  # fmt: skip
        return LinearModel(
            w.copy(), 0.0, n_train=n, feature_ids=feature_ids, class_weights=class_weights
        )
    # Ψ of Crammer-Singer is (d, k) (cpsvm.problems.multiclass.problem); the model's rows
    # are classes.
    return MulticlassModel(
        np.ascontiguousarray(w.reshape(d, n_classes).T),
        n_train=n,
        loss_id=loss_id,
        feature_ids=feature_ids,
        class_weights=class_weights,
    )


def _class_weights(data, params):
    """({label: weight}, what the model records) of the run's class weights over all the
    shards (balanced: the classes counted on every shard, a round), (None, "") without."""
    weights = class_weights(params)
    if weights is None:
        return None, ""
    labels, counts = data.class_counts()
    per_class = weights.of_counts(labels, counts, source=data.summaries[0]["source"])
    return per_class, weights.text_of(per_class)


def _finish(kind, algorithm, data, oracle, result, started, w, notes=()):
    rounds, compute, comm = oracle.rounds.snapshot()
    seconds = dict(oracle.seconds, qp=result.seconds_qp, total=time.perf_counter() - started)
    return ClusterInfo(
        kind,
        algorithm,
        data.n_examples,
        data.n_features,
        result,
        seconds,
        norm_w=float(np.linalg.norm(w)),
        n_sv=int(np.count_nonzero(result.alpha)),
        rounds=rounds,
        line_search_rounds=oracle.line_search_rounds,
        line_searches=oracle.line_searches,
        compute_seconds=compute,
        communication_seconds=comm,
        by_task=dict(oracle.rounds.by_task),
        notes=list(notes),
    )


def refuse_method(method):
    """ocas_learn's -m on a cluster: those the solver table says a cluster runs (the
    command checks it before any data is read)."""
    if method is not None and not OCAS_LEARN[method].cluster:
        runs = {i: OCAS_LEARN[i] for i in cluster_ids(OCAS_LEARN)}
        raise OptionError(
            f"-m {method} ({OCAS_LEARN[method].name}) cannot run on a cluster: "
            + choices_text("-m", runs)
        )


def train_ocas(data: ShardedData, run, *, callback=None, should_stop=None):
    """ocas_learn on the cluster; ``run`` a Resolved of an OcasParams, or the Params
    (checked now)."""
    params = checked_params(run)
    with c_bound(params.C):  # a C too large for the data named as the user's -c
        return _train_ocas(data, params, callback, should_stop)


def _train_ocas(data, params, callback, should_stop):
    if params.example_costs is not None:
        raise OptionError(
            "-C FILE cannot be used with --scheduler (give cost: factors in the shards instead)"
        )
    refuse_method(params.method)
    method = 1 if params.method is None else params.method
    kind = choose_kind(data, params.problem)
    check_binary_only(kind, params)
    d = data.n_features
    bias = params.bias if kind == "binary" else 0.0
    n_classes = 0 if kind == "binary" else int(max(x["y_max"] for x in data.summaries))
    size_psi = d + (1 if bias else 0) if kind == "binary" else n_classes * d
    weights, weights_text = _class_weights(data, params)
    data.prepare(d, bias, n_classes, weights)
    # libocas's scale: Δ = 1, δΨ = y·x (flip gain 2·½), C_i = C × cost:.
    spec = dict(loss=1.0, margin=1.0, scale=float(params.C), n_classes=n_classes, bias=bias)
    oracle = ClusterOcasOracle(data, size_psi, spec, 1.0, method, params.cut_lambda)
    started = time.perf_counter()
    model = functools.partial(
        _model,
        kind,
        d=d,
        bias=bias,
        n_classes=n_classes,
        n=data.n_examples,
        feature_ids=data.feature_ids,
        class_weights=weights_text,
    )
    with _model_so_far(oracle, model):
        result = one_slack(
            oracle,
            libocas_engine_params(params, 1.0),  # libocas's stopping rules, as solvers.ocas's
            callback=_monitored(callback, oracle),
            should_stop=should_stop,
            working_set=CutWorkingSet([1.0]),
        )
        info = _finish(kind, 1, data, oracle, result, started, oracle.w_best)
        info.method = method
        info.training_error = oracle.training_error()
    return model(oracle.w_best), info


def refuse_struct_options(params, basis_method) -> int:
    """What cp_learn --scheduler cannot train, refused before any data is read (the
    command calls it before starting the cluster); the -w it runs."""
    refuse_problem(params.problem)
    if not params.kernel.is_linear or basis_method != 0:
        raise OptionError("--scheduler trains linear models only (-t 0, --t 0)")
    algorithm = params.algorithm if params.algorithm is not None else CLUSTER_DEFAULT
    method = CP_LEARN.get(algorithm)
    if method is None or not method.cluster:
        runs = " or ".join(f"-w {i}" for i in cluster_ids(CP_LEARN))
        raise OptionError(f"-w {algorithm} cannot run on a cluster: --scheduler takes {runs}")
    if method.needs == "line_search" and params.rescaling != 2:
        raise OptionError("-w 9 needs margin rescaling (-o 2); use -w 3 for -o 1")
    # SVMperf's losses over the whole label vector (binary): cpsvm.cluster.multivariate.
    if (
        params.loss_id is not None
        and params.loss_id != PERF_ERROR_RATE
        and params.problem != "multiclass"
        and params.loss_id not in PERF_MULTIVARIATE_LOSSES
    ):
        raise OptionError(f"--scheduler cannot train the loss -l {params.loss_id}")
    if params.loss_id in PERF_MULTIVARIATE_LOSSES and params.problem in ("auto", "binary"):
        params.checked(problem_entry("binary"))  # SVMperf's own refusals, before the cluster
    return algorithm


def train_struct(data: ShardedData, run, *, callback=None, should_stop=None):
    """cp_learn -w 3 / -w 9 on the cluster, linear; ``run`` a Resolved of a StructParams,
    or the Params (checked now)."""
    params = checked_params(run)
    with c_bound(params.C):
        return _train_struct(data, params, callback, should_stop)


def _train_struct(data, params, callback, should_stop):
    kind = choose_kind(data, params.problem)
    entry = problem_entry(kind)
    loss_id, options, _ = params.checked(entry)
    algorithm = refuse_struct_options(
        dataclasses.replace(params, problem=kind, loss_id=loss_id), options.get("basis_method", 0)
    )
    margin = params.rescaling == 2
    epsilon = params.epsilon if params.epsilon is not None else entry.command_line.epsilon
    if kind == "binary" and loss_id in PERF_MULTIVARIATE_LOSSES:
        return _train_multivariate(
            data, params, loss_id, options, algorithm, epsilon, callback, should_stop
        )
    n, d = data.n_examples, data.n_features
    bias = options.get("bias")
    bias = (1.0 if bias is None else bias) if kind == "binary" else 0.0
    n_classes = 0 if kind == "binary" else int(max(x["y_max"] for x in data.summaries))
    size_psi = d + (1 if bias else 0) if kind == "binary" else n_classes * d
    weights, weights_text = _class_weights(data, params)
    data.prepare(d, bias, n_classes, weights)
    engine_params = engine_settings(params, epsilon)
    flip = 2.0 * PSI_SCALE
    started = time.perf_counter()
    ocas = CP_LEARN[algorithm].oracle == "ocas"
    if ocas:
        # SVMperf / SVMmulticlass scale: Δ = 100, flip gain 100, weights cost_i/n; a
        # duality gap of C·ε is the 1-slack ε guarantee (as solvers.one_slack).
        spec = dict(
            loss=LOSS_SCALE,
            margin=flip if kind == "binary" else 1.0,
            scale=1.0 / n,
            n_classes=n_classes,
            bias=bias,
        )
        oracle = ClusterOcasOracle(data, size_psi, spec, params.C)
        engine_params.epsilon = -math.inf
        engine_params.tol_abs = params.C * epsilon
    else:
        if kind == "binary":
            a = (LOSS_SCALE if margin else 1.0) / flip
            wscale = flip if margin else flip * LOSS_SCALE
            spec = dict(
                a=a,
                b=1.0,
                cscale=LOSS_SCALE,
                wscale=wscale,
                c_bound=LOSS_SCALE,
                g_scale=wscale,
                scale=1.0 / n,
                bias=bias,
                n_classes=0,
            )
        else:
            spec = dict(
                loss=LOSS_SCALE,
                margin_rescaling=margin,
                c_bound=LOSS_SCALE,
                g_scale=1.0 if margin else LOSS_SCALE,
                scale=1.0 / n,
                n_classes=n_classes,
                bias=0.0,
            )
        oracle = ClusterCutOracle(data, size_psi, spec)
    model = functools.partial(
        _model,
        kind,
        d=d,
        bias=bias,
        n_classes=n_classes,
        n=n,
        loss_id=loss_id,
        feature_ids=data.feature_ids,
        class_weights=weights_text,
    )
    with _model_so_far(oracle, model):
        result = one_slack(
            oracle,
            engine_params,
            callback=_monitored(callback, oracle),
            should_stop=should_stop,
            working_set=CutWorkingSet([params.C]),
        )
    if ocas:
        w = oracle.w_best
        result = dataclasses.replace(result, xi=(result.primal - 0.5 * float(w @ w)) / params.C)
    else:
        w = oracle.weights(result.alpha)
    info = _finish(kind, algorithm, data, oracle, result, started, w)
    info.loss_id = loss_id
    return model(w), info


def _train_multivariate(data, params, loss_id, options, algorithm, epsilon, callback, should_stop):
    """SVMperf's multivariate losses: the single machine's oracle on the gathered
    scores (:mod:`cpsvm.cluster.multivariate`)."""
    ocas = CP_LEARN[algorithm].oracle == "ocas"
    problem, oracle = make_oracle(data, params, loss_id, options, ocas)
    started = time.perf_counter()
    notes = []
    if data.max_factor != 1.0:
        notes.append(
            f"cost: factors ignored: the loss -l {loss_id} counts every example once, as SVMperf's"
        )

    def model(w):
        linear = _model(
            "binary", w, data.n_features, problem.bias, 0, data.n_examples,
            feature_ids=data.feature_ids,
        )  # fmt: skip
        return problem.record_loss(linear)

    with _model_so_far(oracle, model):
        result = run_engine(
            oracle, params, epsilon, ocas, _monitored(callback, oracle), should_stop
        )
    if ocas:
        w = oracle.w_best
        result = dataclasses.replace(result, xi=(result.primal - 0.5 * float(w @ w)) / params.C)
    else:
        w = oracle.weights(result.alpha)
    info = _finish("binary", algorithm, data, oracle, result, started, w, notes)
    info.loss_id = loss_id
    info.class_counts = (problem.n_positive, problem.n_negative)
    return model(w), info
