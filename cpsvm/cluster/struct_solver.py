"""cp_learn's structured problems on the cluster (hmm, rank, a user's ``module:Class``):
the 1-slack cutting plane (``-w 3``) whose oracle runs on the workers, each on its
shard's units with the problem's own separation oracle (:mod:`.units`), their exact
partial cuts added along the tree (:class:`.rounds.Rounds`). The client keeps the
cuts and solves the QP, as the single machine's loop (:mod:`cpsvm.engine.cutting_plane`).

Ψ must be the same on every shard: SVMhmm's number of tags is the largest of all the
shards (the single machine's: the file's), the width the file's; a user's problem built
on each shard must give one size_psi, or is built again with the model options of the
shard whose Ψ is the largest (``Class(dataset, **options)``, as cp_classify rebuilds it),
else refused. The model is made on the client from a template the workers make at w = 0
(so that a lost cluster still leaves the model so far).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time

import numpy as np

from ..conventions import TOKEN_LOSS
from ..decoding.viterbi import HmmLayout
from ..engine.cutting_plane import one_slack
from ..engine.magnitudes import c_bound
from ..engine.oracles import LinearCutOracle
from ..engine.working_set import CutWorkingSet
from ..errors import InputError, OptionError
from ..params.resolved import checked_params
from ..problems.registry import auto_order, entry_of
from ..solvers.one_slack import engine_settings
from .numerics import fold_grid
from .oracles import _ShapeOnly
from .rounds import Rounds
from .solver import _finish, _model_so_far, _monitored
from .trees import TREE_PROBLEM, TreeShards
from .units import (
    CutValues,
    add_cuts,
    build_units,
    cut_values,
    describe_units,
    exact_value,
    model_template,
    set_total,
    units_cut,
)

STRUCTURED_ALGORITHM = 3  # the -w a cluster runs for hmm, rank and a user's problem


def trains_units(problem: str) -> bool:
    """Whether ``problem`` (a resolved --problem) is one this module trains."""
    return problem not in ("auto", "binary", "multiclass")


def choose_units(data, requested: str):
    """The structured problem of the shards (hmm, rank: each shard asks the registry's
    ``detect`` in auto's order, as one machine asks the file's, and the first problem of
    that order found wins), ``requested`` if it names one, None for binary and
    multiclass."""
    if requested != "auto":
        return requested if trains_units(requested) else None
    found = {x["problem"][0] for x in data.summaries if x["problem"]}
    order = [e.name for e in auto_order()]
    return min(found, key=order.index) if found else None


def check_units_whole(described):
    """Shard files (a glob's) must not split a unit: a qid that ends one file and
    begins the next (in the glob's order) refused in one line."""
    ends = sorted(e for x in described for e in x.get("ends", ()))
    for (source, _, last), (following, first, _) in zip(ends, ends[1:]):
        if source != following and last is not None and last == first:
            raise InputError(
                f"qid {last} continues in the next shard file, {following}: a sentence or "
                "query must lie in one file of the glob (split the files at qid boundaries, "
                "or give one file: a cluster cuts it at qid boundaries)",
                source=source,
            )


def refuse_units_options(params) -> int:
    """What cp_learn --scheduler cannot do with a structured problem, refused before any
    data is read; the -w it runs."""
    if not params.kernel.is_linear:
        raise OptionError("--scheduler trains linear models only (-t 0, --t 0)")
    algorithm = STRUCTURED_ALGORITHM if params.algorithm is None else params.algorithm
    if algorithm != STRUCTURED_ALGORITHM:
        raise OptionError(
            f"-w {algorithm} cannot run on a cluster for the {_name(params.problem)} problem: "
            f"--scheduler takes -w {STRUCTURED_ALGORITHM} for it"
        )
    return algorithm


def _name(problem):
    return "user" if ":" in problem else problem


class ClusterUnitsOracle(LinearCutOracle):
    """The 1-slack oracle of ``-w 3`` with the units on the workers: the most violated
    cut at w, the shards' exact partial cuts added along the tree."""

    def __init__(self, data, units, size_psi, n, rescaling):
        super().__init__(_ShapeOnly(size_psi=size_psi, n_examples=n))
        self.data = data
        self.rounds = Rounds(data.session, units)
        self.margin_rescaling = rescaling == 2
        self.rescaling_id = rescaling
        self.seconds = {"output": 0.0, "line_search": 0.0, "cut": 0.0}
        self.line_search_rounds = self.line_searches = 0
        self.separations = 0
        self.w_last = None
        self.size_psi = size_psi

    def model_weights(self):
        return self.w_last if self.separations else None

    def separate(self, alpha, threshold=None):
        w = self.w_last = self.weights(alpha)
        future = self.rounds.ship(w)
        t0 = time.perf_counter()
        c, g = self.rounds(
            units_cut,
            future,
            self.rescaling_id,
            self.margin_rescaling,
            combine=add_cuts,
            finish=cut_values,
        )
        self.oracle_calls += self.problem.n_examples
        self.seconds["cut"] += time.perf_counter() - t0
        self.separations += 1
        return exact_value(c), _dense(g, self.size_psi)


def _dense(g, size):
    if isinstance(g, CutValues):
        out = np.zeros(size)
        out[g.rows] = g.values
        return out
    if isinstance(g, np.ndarray):
        return g
    out = np.zeros(size)
    for j, x in g.items():
        out[j] = exact_value(x)
    return out


def train_units(data, run, *, callback=None, should_stop=None):
    """cp_learn -w 3 of a structured problem on the cluster's shards; ``run`` a Resolved
    of a StructParams (or the Params, checked now)."""
    params = checked_params(run)
    with c_bound(params.C):
        return _train_units(data, params, callback, should_stop)


def _build(data, spec, loss_id, options, fix):
    session = data.session
    client = session.client
    if isinstance(data, TreeShards):
        units = data.build(loss_id, options)
    elif spec == TREE_PROBLEM:
        raise InputError(
            "expected bracketed trees (the cfg problem's own format: a .mrg name, or a first "
            "character '('), got SVMlight lines",
            source=data.summaries[0]["source"],
        )
    else:
        where = _spread(session, data.loaded)
        units = [
            client.submit(
                build_units, f, spec, loss_id, options, data.n_features, fix, pure=False,
                workers=[at] if at else None, allow_other_workers=at is not None,
            )
            for f, at in zip(data.loaded, where)
        ]  # fmt: skip
    described = session.gather([client.submit(describe_units, u, pure=False) for u in units])
    return units, described


def _spread(session, shards):
    """A worker for each shard's units: its own, unless that worker holds more than its
    share (Dask placed the loads where it liked), then the least loaded one (the shard
    moves there once): the oracle's work, the run's, spread over the workers."""
    with session._lost_guard():
        held = session.client.who_has(shards)
    workers = sorted(session.workers())
    if not workers:
        return [None] * len(shards)
    cap = -(-len(shards) // len(workers))
    load = dict.fromkeys(workers, 0)
    where = []
    for f in shards:
        owners = held.get(f.key) or ()
        at = owners[0] if owners and owners[0] in load else None
        if at is None or load[at] >= cap:
            at = min(workers, key=lambda w: (load[w], w))
        load[at] += 1
        where.append(at)
    return where


def _same_psi(data, spec, loss_id, options, fix):
    """The units of every shard with one Ψ (see the module docstring)."""
    units, described = _build(data, spec, loss_id, options, fix)
    sizes = {x["size_psi"] for x in described if x["size_psi"] is not None}
    if len(sizes) > 1 and any(x["hmm"] for x in described):
        # SVMhmm's tags: the file's (the largest of every shard) on every shard
        tags = int(max(x["y_max"] for x in data.summaries if x["n"]))
        units, described = _build(data, spec, loss_id, options, {"n_tags": tags})
        sizes = {x["size_psi"] for x in described if x["size_psi"] is not None}
    if len(sizes) > 1 and ":" in spec:
        widest = max((x for x in described if x["size_psi"]), key=lambda x: x["size_psi"])
        units, described = _build(data, spec, loss_id, options, widest["options"] or {})
        sizes = {x["size_psi"] for x in described if x["size_psi"] is not None}
    if len(sizes) > 1:
        low, high = sorted(sizes)[0], sorted(sizes)[-1]
        raise InputError(
            f"--problem {spec} has a Ψ of {low} on one shard and of {high} on another: on a "
            "cluster Ψ must not depend on the shard (give model_options() that fix it)",
            source=data.summaries[0]["source"],
        )
    if not sizes:
        raise InputError(
            "expected at least one example, found none", source=data.summaries[0]["source"]
        )
    return units, described, sizes.pop()


def _hmm_grid(data, options, n_tags, described, n, size_psi, margin):
    """The fold grid of the hmm's δΨ sums: bounds of a term a_i·x_tj (emission) and a_i
    (transition) from the global column maxima, a_i = 1/n (times Δ_i <= the loss of a
    whole sentence with slack rescaling)."""
    layout = HmmLayout(data.n_features, n_tags, options["trans_order"], options["emit_order"])
    longest = max(x["max_len"] for x in described)
    weight = (1.0 / n) * (1.0 if margin else TOKEN_LOSS * max(1, longest))
    bound = np.zeros(size_psi)
    bound[: layout.size_trans] = weight
    col = np.zeros(layout.n_features)
    col[: len(data.col_max)] = data.col_max[: layout.n_features]
    emissions = np.tile(col, layout.n_emit_states) * weight
    bound[layout.emission_start : layout.emission_start + len(emissions)] = emissions
    return fold_grid(bound, max(1, sum(x["n_terms"] for x in described)))


def _train_units(data, params, callback, should_stop):
    spec = params.problem
    entry = entry_of(spec)
    loss_id, options, notes = params.checked(entry)
    algorithm = refuse_units_options(params)
    if data.feature_ids is not None:
        raise OptionError(
            f"--scheduler trains the {entry.name} problem on feature indices below 2^20 only"
        )
    margin = params.rescaling == 2
    units, described, size_psi = _same_psi(data, spec, loss_id, options, None)
    n_tags = int(max((x.get("y_max", 0) for x in data.summaries if x["n"]), default=0))
    check_units_whole(described)
    n = sum(x["n"] for x in described)
    if isinstance(data, TreeShards):
        data.n_examples = n
    grid = None
    if any(x["hmm"] for x in described if x["n"]):
        grid = _hmm_grid(data, options, n_tags, described, n, size_psi, margin)
    session, client = data.session, data.session.client
    grid_future = session.keep(grid) if grid is not None else None
    # Each where its units are (Dask would take them to the grid's worker, the larger
    # input, and leave one worker all the work).
    with session._lost_guard():
        held = client.who_has(units)
    units = [
        client.submit(
            set_total, u, n, grid_future, pure=False,
            workers=list(held.get(u.key) or ()) or None,
            allow_other_workers=bool(held.get(u.key)),
        )
        for u in units
    ]  # fmt: skip
    first = next(i for i, x in enumerate(described) if x["n"])
    n_train = sum(x["n_train"] for x in described)
    template = session.gather([client.submit(model_template, units[first], n_train, loss_id)])[0]
    epsilon = params.epsilon if params.epsilon is not None else entry.command_line.epsilon
    scale = math.fsum(x["eps_units"] for x in described) / n
    epsilon *= scale
    engine_params = engine_settings(params, epsilon)
    oracle = ClusterUnitsOracle(data, units, size_psi, n, params.rescaling)
    model = functools.partial(_model_of, template)
    started = time.perf_counter()
    with _model_so_far(oracle, model):
        result = one_slack(
            oracle,
            engine_params,
            callback=_monitored(callback, oracle),
            should_stop=should_stop,
            working_set=CutWorkingSet([params.C]),
        )
    w = oracle.weights(result.alpha)
    info = _finish(entry.name, algorithm, data, oracle, result, started, w, notes)
    info.n_examples = n
    info.loss_id = loss_id
    info.epsilon = epsilon
    return model(w), info


def _model_of(template, w):
    return dataclasses.replace(template, w=np.array(w, dtype=np.float64))
