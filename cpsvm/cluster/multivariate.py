"""SVMperf's multivariate losses on the cluster (``cp_learn --scheduler -l 0, 1, 3, 4, 5,
10``): the single machine's 1-slack methods (``-w 9``, OCAS's structured line search, and
``-w 3``) with the examples staying on the workers.

These losses do not decompose over the examples: the most violated labelling of ROC
area, F1, PRBEP, Prec@k or Rec@k depends on every example's score at once (their order).
The client gathers them: each iteration the workers send their shards' scores x_i·w
(n floats in all, joined in shard order along the tree of :class:`.rounds.Rounds`), the
client runs the single machine's oracle on them
(:class:`cpsvm.problems.binary.multivariate.MultivariateProblem`, its code itself), and
sends back the labelling's coefficients (n floats, along the tree of copies); each
worker forms Σ c_i·x_i of its rows exactly (:mod:`.numerics`, the kernel of the binary
cut) and the partial sums are added along the tree. Reducing along the tree instead
(the shards' sorted scores merged on the workers, the oracle on the root) spares the
client's link the n floats but not the workers' (the root still receives them all, and
ROC area's counts need every negative's score on every worker), and puts a merge of
O(n) on each level of the tree on the round's path: measured slower on a9a
(benchmarks/bench_cluster_perf_losses.py; the man page gives the figures).

Same model for any sharding: the scores are computed row by row (the same bits on any
shard), the gathered vector is in the file's order whatever the shards, the client's
oracle and margins run on it (margins as correctly rounded sums), and the cut vectors
are exact sums. Against one machine: its cut vectors and margins are float sums (other
bits), so the runs agree to the stopping tolerance, not byte for byte.

Faults: nothing is kept on the workers between rounds (the scores are formed from w,
the cut from the coefficients), so a shard read again elsewhere answers the same.
"""

from __future__ import annotations

import math

import numpy as np

from ..conventions import LOSS_SCALE, MARGIN_RESCALING, PSI_SCALE
from ..engine.cutting_plane import one_slack
from ..engine.ocas import OcasOracle
from ..engine.oracles import LinearCutOracle
from ..engine.working_set import CutWorkingSet
from ..problems.binary.multivariate import ROC_AREA, MultivariateProblem
from ..solvers.one_slack import engine_settings
from .kernels import deposit_rows
from .numerics import fold_grid, fold_value, packed_accumulator
from .partials import cut_folds, dense_folds
from .rounds import Rounds
from .tasks import _timed as _timed_task


def _timed(fn):
    """:func:`.tasks._timed`, found by the workers in this module (Dask sends a task by
    its module and name; one it cannot find there travels as code, its kernels with it)."""
    run = _timed_task(fn)
    run.__module__ = fn.__module__
    return run


def join_scores(a, b):
    """Two runs of shards' scores, one after the other (the tree keeps shard order)."""
    return np.concatenate([a, b])


@_timed
def shard_labels(shard):
    """The shard's ±1 labels (once, at the start)."""
    return shard.y


@_timed
def shard_parts(shard):
    """The shard's files (or byte range) in its order: (shard, source, rows) each."""
    if shard.part_of is None:
        counts = [shard.n]
    else:
        counts = np.bincount(shard.part_of, minlength=len(shard.sources)).tolist()
    return [(shard.index, source, count) for source, count in zip(shard.sources, counts)]


def join_lists(a, b):
    return a + b


def file_order(parts, sizes):
    """The position in the shards' order of each example, listed in the files' order:
    the shard files sorted by name (as the plan lists a glob's), a byte range's rows
    after the ranges before it (the same name: the shards' order kept). Shards that
    group files do so by size, interleaving them; the oracle's ties are broken by
    position, so it sees the examples in this order whatever the grouping."""
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    blocks, within = [], {}
    for shard, source, count in parts:
        at = start[shard] + within.get(shard, 0)
        within[shard] = within.get(shard, 0) + count
        blocks.append((source, shard, at, count))
    blocks.sort(key=lambda b: (b[0], b[1]))
    return np.concatenate(
        [np.arange(at, at + count, dtype=np.int64) for _, _, at, count in blocks]
        or [np.zeros(0, np.int64)]
    )


@_timed
def shard_scores(shard, w):
    """x_i·w of the shard's rows, row by row (the same bits on any shard)."""
    return shard.product(w)


def _coefficients(coef, offsets, shard):
    start = offsets[shard.index]
    return np.ascontiguousarray(coef[start : start + shard.n])


@_timed
def shard_cut(shard, coef, offsets, sig_g):
    """Σ c_i·x_i over the shard's rows (their slice of the whole run's ``coef``), exact
    folds on the grid ``sig_g``."""
    acc, shift = packed_accumulator(sig_g)
    args = (shard.indptr, shard.indices, shard.data, shard.bias, shard.d)
    deposit_rows(*args, _coefficients(coef, offsets, shard), 1.0, acc, shift)
    return cut_folds(acc, shard.touched)


class ClusterMultivariateProblem(MultivariateProblem):
    """The single machine's multivariate problem with its rows on the cluster: its
    scores are a round that gathers them, its cut vectors a round of exact sums; the
    oracle (the most violated labelling) is the parent's, on the client."""

    def __init__(self, data, rounds, order, y, loss_id, bias, k_fraction, size_psi, coef_bound):
        self.data, self.rounds = data, rounds
        self.order = order  # the examples in the files' order: positions in the shards'
        self.bias = 0.0 if loss_id == ROC_AREA else float(bias)
        self._set_labels(y, loss_id, k_fraction, size_psi)
        sizes = [x["n"] for x in data.summaries]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        col = np.zeros(size_psi)
        col[: data.n_features] = data.col_max
        if self.bias:
            col[-1] = abs(self.bias)
        # |c_i| <= coef_bound for every cut's coefficients: one grid for the run.
        self.coef_bound = coef_bound
        self.sig_g = data.session.keep(fold_grid(col * coef_bound, max(1, self.n_rows)))
        self.score_rounds = self.cut_rounds = 0

    def scores(self, w, rows=None):
        self.score_rounds += 1
        out = self.rounds(
            shard_scores, self.rounds.ship(np.ascontiguousarray(w)), combine=join_scores
        )
        if len(out) != self.n_rows:  # (a shard that read otherwise: its fingerprint says)
            raise AssertionError(f"gathered {len(out)} scores of {self.n_rows}")
        return out[self.order]

    def margins_at(self, out, w, labels):
        """w·δΨ(ȳ) from the gathered scores, correctly rounded: the same bits whatever
        the buffers' alignment."""
        return np.array([math.fsum((lab.delta * out).tolist()) for lab in labels])

    def delta_psi_sum(self, weights, labels, rows=None):
        coef = np.zeros(self.n_rows)
        for weight, labelling in zip(np.asarray(weights, dtype=np.float64), labels):
            if weight != 0:
                coef += weight * labelling.delta
        if not np.max(np.abs(coef), initial=0.0) <= self.coef_bound:
            raise AssertionError("a cut's coefficient beyond the run's grid")
        self.cut_rounds += 1
        in_shards = np.empty(self.n_rows)
        in_shards[self.order] = coef
        folds = self.rounds(shard_cut, self.rounds.ship(in_shards), self.offsets, self.sig_g)
        return fold_value(dense_folds(folds))


def coefficient_bound(loss_id, n, n_positive, n_negative, rescaling) -> float:
    """The largest |c_i| of a cut: a threshold loss flips ±2·PSI_SCALE/n, ROC area
    counts up to N (P) pairs of 2·PSI_SCALE/(P·N); slack rescaling weighs a cut by its
    loss (at most LOSS_SCALE)."""
    if loss_id == ROC_AREA:
        unit = 2.0 * PSI_SCALE / max(1, min(n_positive, n_negative))
    else:
        unit = 2.0 * PSI_SCALE / max(1, n)
    return unit * (1.0 if rescaling == MARGIN_RESCALING else LOSS_SCALE)


class _Booked:
    """What the cluster's solver reads of an oracle besides the engine's protocol."""

    def _book(self, problem):
        self.rounds = problem.rounds
        self.line_search_rounds = self.line_searches = 0
        self.separations = 0

    def separate(self, alpha, threshold=None):
        found = super().separate(alpha, threshold)
        self.separations += 1
        return found


class PerfOcasOracle(_Booked, OcasOracle):
    """``-w 9``: the single machine's OCAS oracle (its structured step) on the cluster's
    problem."""

    def __init__(self, problem, C):
        super().__init__(problem, np.ones(1), C)
        self._book(problem)

    def model_weights(self):
        return self.w_best if self.separations else None


class PerfCutOracle(_Booked, LinearCutOracle):
    """``-w 3``: the plain 1-slack cut, margin or slack rescaling."""

    def __init__(self, problem, rescaling):
        super().__init__(problem, rescaling)
        self._book(problem)
        self.seconds = {"output": 0.0, "line_search": 0.0, "cut": 0.0}
        self.w_last = None

    def separate(self, alpha, threshold=None):
        self.w_last = self.weights(alpha)
        return super().separate(alpha, threshold)

    def model_weights(self):
        return self.w_last if self.separations else None


def make_oracle(data, params, loss_id, options, ocas):
    """The problem and its oracle: the labels gathered once, the shards prepared."""
    bias = options.get("bias")
    bias = 1.0 if bias is None else bias
    if loss_id == ROC_AREA:
        bias = 0.0
    d = data.n_features
    size_psi = d + (1 if bias else 0)
    data.prepare(d, bias, 0)
    rounds = Rounds(data.session, data.shards)
    sizes = [x["n"] for x in data.summaries]
    order = file_order(rounds(shard_parts, combine=join_lists), sizes)
    y = rounds(shard_labels, combine=join_scores)[order]
    n_pos = int(np.count_nonzero(y > 0))
    bound = coefficient_bound(loss_id, len(y), n_pos, len(y) - n_pos, params.rescaling)
    problem = ClusterMultivariateProblem(
        data, rounds, order, y, loss_id, bias, options.get("k_fraction", 0.0), size_psi, bound
    )
    if ocas:
        oracle = PerfOcasOracle(problem, params.C)
    else:
        oracle = PerfCutOracle(problem, params.rescaling)
    return problem, oracle


def run_engine(oracle, params, epsilon, ocas, callback, should_stop):
    """The engine's 1-slack loop as the single machine runs it for these losses."""
    engine_params = engine_settings(params, epsilon)
    if ocas:
        engine_params.tol_abs = params.C * epsilon
        engine_params.epsilon = -math.inf
    return one_slack(
        oracle,
        engine_params,
        callback=callback,
        should_stop=should_stop,
        working_set=CutWorkingSet([params.C]),
    )
