"""The cluster's oracles for the engine's 1-slack loop: the plain cut of ``cp_learn -w 3``
(:class:`ClusterCutOracle`) and OCAS (:class:`ClusterOcasOracle`, binary and
Crammer-Singer multiclass, as :class:`cpsvm.engine.ocas.OcasOracle`), each a sequence of
rounds of the tasks of :mod:`.tasks`, their exact partial sums added here.

Line search (OCAS). Along w_b + λ(w_t − w_b) the objective is ½A0λ² + B0λ plus a convex
piecewise-linear risk; its right derivative D(λ) = A0λ + G + J(λ), J(λ) the sum of the
slope jumps of the breakpoints at or below λ, is monotone, and the step is the
smallest λ where the subdifferential contains 0. Each worker computes its breakpoints
with the outputs and keeps them; the same round returns their jump sums between the
steps of a fixed global grid (STEP_GRID, 32 per octave), so the client knows the grid
interval where D changes sign at once. If it holds too many breakpoints, the client
refines it with candidate steps sampled by the workers (more rounds of a few hundred
numbers). The breakpoints of the final interval alone are gathered and the step is
found exactly in them; that gather is chained, inside the cluster, to the round that
moves w_b (its pieces joined along the workers' tree, the step found on a worker and
given to every move), so an iteration usually costs two round trips: the outputs, the
move. Every round's partial results are added on the workers
(:class:`.rounds.Rounds`): the client receives one result a round.

Faults. Worker state (outputs, breakpoints, the last cut's coefficients) is a cache:
a task that lands on a worker that lost the shard (Dask recomputes the shard from its
loader) and misses the outputs it needs raises StateLost; the client then ships the
:class:`.shards.Replay` of w_b's outputs (how the workers formed them: X·anchor, then
the moves since; otherwise nothing of w_b travels, the workers move their outputs
themselves) and repeats the round, which forms them again with the same bits. So the
iterate does not depend on which worker computed what. Every REPLAY_MAX moves (fewer
when their w_t would pass REPLAY_BYTES) the move forms the outputs from w_b itself,
the same in every run, so that a replay stays short.
"""

from __future__ import annotations

import functools
import math
import time
from types import SimpleNamespace

import numpy as np

from ..engine.oracles import LinearCutOracle
from ..problems.base import StructuredProblem
from .numerics import exact_scalar, exact_sign, fold_grid, fold_value
from .partials import add_buckets, add_moves, add_outputs, dense_folds, join_pieces
from .rounds import Rounds
from .session import ClusterLost, ShardedData
from .shards import Replay, StateLost
from .tasks import (
    BUCKET_SAMPLES,
    GRID_SAMPLES,
    count_errors,
    cut_at,
    final_step,
    grid_sums,
    moved_risk_grid,
    ocas_at,
    ocas_eval,
    ocas_gather,
    ocas_move,
    ocas_outputs,
    step_from,
)

MAX_CANDIDATES = 256
REPLAY_MAX = 32  # moves of w_b's outputs between two formed from w_b itself
REPLAY_BYTES = 256 << 20  # at most, in the client's memory, of the moves' w_t
MIN_GATHER = 8192  # breakpoints gathered at most (or size_psi, if larger)
SAMPLE_CAP = 2  # times a task's samples per candidate interval, kept as they are added
# The steps whose jump sums come back with the outputs: 0 and 2^k, k in [-24, 8], 32
# per octave; the same for every iteration and sharding.
STEP_GRID = np.concatenate([[0.0], np.exp2(np.arange(-24 * 32, 8 * 32 + 1) / 32.0)])


class _ShapeOnly(StructuredProblem):
    """What LinearCutOracle reads of a problem: its sizes (its hooks the defaults: the
    cuts kept as vectors)."""

    def __init__(self, size_psi, n_examples):
        self.size_psi, self.n_examples = size_psi, n_examples


class ClusterCutOracle(LinearCutOracle):
    """The 1-slack oracle of ``cp_learn -w 3`` on the cluster: the most violated cut at
    w, summed exactly over the shards. ``spec`` gives the problem's scales (as
    :func:`cpsvm.cluster.solver.train_struct` forms them)."""

    def __init__(self, data: ShardedData, size_psi, spec):
        super().__init__(_ShapeOnly(size_psi=size_psi, n_examples=data.n_examples))
        self.data = data
        self.spec = spec
        self.rounds = Rounds(data.session, data.shards)
        n = data.n_examples
        cost_bound = spec["scale"] * data.max_factor
        col = _column_bounds(data, size_psi, spec.get("n_classes", 0), spec.get("bias", 0.0))
        self.sig_g = data.session.keep(fold_grid(col * cost_bound * spec["g_scale"], n))
        self.sig_s = fold_grid(cost_bound * spec["c_bound"], n)
        self._version = 0
        self.seconds = {"output": 0.0, "line_search": 0.0, "cut": 0.0}
        self.line_search_rounds = self.line_searches = 0  # (OCAS's figures: none here)
        self.separations = 0  # completed calls of separate
        self.w_last = None

    def model_weights(self):
        """The iterate so far (the w of the last call), None before the first cut."""
        return self.w_last if self.separations else None

    def separate(self, alpha, threshold=None):
        w = self.w_last = self.weights(alpha)
        self._version += 1
        future = self.rounds.ship(w)
        t0 = time.perf_counter()
        acc_g, acc_s, _ = self.rounds(
            cut_at, ("w", self._version), future, self.spec, self.sig_g, self.sig_s
        )
        self.oracle_calls += self.data.n_examples
        self.seconds["cut"] += time.perf_counter() - t0
        self.separations += 1
        return exact_scalar(acc_s), fold_value(dense_folds(acc_g))


def _column_bounds(data, size_psi, n_classes, bias):
    """max |x_ij| of every Ψ entry's feature (the bias column: |bias|)."""
    col = np.zeros(size_psi // max(n_classes, 1))
    col[: data.n_features] = data.col_max
    if bias:
        col[-1] = abs(bias)
    return np.repeat(col, n_classes) if n_classes else col


class _Pending(SimpleNamespace):
    """A line search whose last round (the gather) goes with the move."""


class ClusterOcasOracle(LinearCutOracle):
    """:class:`cpsvm.engine.ocas.OcasOracle` (binary or Crammer-Singer multiclass) with
    the examples on the cluster: same best-so-far point, exact line search, cut point.

    ``spec``: loss (Δ), margin (binary: flip gain; multiclass 1), scale (C_i = scale ×
    cost:), n_classes (0 binary), bias. The objective is ½|w|² + C·Σ C_i·ξ_i.
    """

    def __init__(self, data: ShardedData, size_psi, spec, C=1.0, method=1, cut_lambda=0.1):
        super().__init__(_ShapeOnly(size_psi=size_psi, n_examples=data.n_examples))
        self.data = data
        self.C = float(C)
        self.method = method
        self.spec = dict(spec, C=self.C, cut_lambda=cut_lambda)
        self.binary = not spec.get("n_classes", 0)
        self.rounds = Rounds(data.session, data.shards)
        n = data.n_examples
        self.n_terms = n * max(1, spec.get("n_classes", 0))
        self.cost_bound = spec["scale"] * data.max_factor
        self.radius = data.row_norm + abs(spec.get("bias", 0.0))
        col = _column_bounds(data, size_psi, spec.get("n_classes", 0), spec.get("bias", 0.0))
        wscale = self.cost_bound * (spec["margin"] if self.binary else 1.0)
        self.sig_g = data.session.keep(fold_grid(col * wscale, n))
        self.sig_s = fold_grid(self.cost_bound * spec["loss"], n)
        self.primal = math.inf
        self.w_best = np.zeros(size_psi)
        self._kb = None  # key of w_best's outputs on the workers
        self._wb_future = None  # what a worker that lost them forms them from (Replay)
        # How the workers formed w_best's outputs: X·anchor, then the moves since.
        self._anchor, self._moves = None, []
        self.replay_limit = max(1, min(REPLAY_MAX, REPLAY_BYTES // (8 * max(1, size_psi))))
        self._version = 0
        self.seconds = {"output": 0.0, "line_search": 0.0, "cut": 0.0}
        self.line_search_rounds = 0
        self.line_searches = 0
        self.iteration_log = []  # per separate(): rounds, compute, communication
        self.separations = 0  # completed calls of separate

    def model_weights(self):
        """The best point so far, None before the first."""
        return self.w_best if self.separations else None

    # Bounds of the per-row terms (global quantities only, so the grids do not depend
    # on the sharding); 4x for the rounding of the products.
    def _out_bound(self, *ws):
        return 4.0 * self.radius * sum(float(np.max(np.abs(w), initial=0.0)) for w in ws)

    @property
    def _rg(self):
        """What :func:`.tasks.moved_risk_grid` needs besides the two points' max |w|."""
        return dict(
            cost_bound=self.cost_bound,
            loss=self.spec["loss"],
            spread=2.0 if not self.binary else self.spec["margin"],
            radius=self.radius,
            n_terms=self.n_terms,
        )

    def _risk_grid(self, w):
        return moved_risk_grid(
            dict(self._rg, wb_max=0.0, wt_max=float(np.max(np.abs(w), initial=0.0))), 1.0
        )

    def _line_grid(self, wb, wt):
        spread = 4.0 if not self.binary else self.spec["margin"]
        bound = self.C * self.cost_bound * spread * self._out_bound(wb, wt)
        return np.repeat(fold_grid(bound, self.n_terms + 1), 2, axis=0)

    def separate(self, alpha, threshold=None):
        before = self.rounds.snapshot()
        t0 = time.perf_counter()
        w_t = self.weights(alpha)
        self._version += 1
        kt = ("w", self._version)
        wt_future = self.rounds.ship(w_t)
        if self._kb is None or self.method == 0:
            result = self._at(w_t, kt, wt_future, t0)
        else:
            result = self._step(w_t, kt, wt_future, t0)
        after = self.rounds.snapshot()
        self.iteration_log.append(tuple(b - a for a, b in zip(before, after)))
        self.separations += 1
        return result

    def _at(self, w_t, kt, wt_future, t0):
        result = self.rounds(
            ocas_at,
            self._kb,
            kt,
            wt_future,
            self.spec,
            self.sig_g,
            self.sig_s,
            self._risk_grid(w_t),
        )
        self.oracle_calls += self.data.n_examples
        risk = exact_scalar(result[0])
        f_t = 0.5 * float(w_t @ w_t) + self.C * risk
        if f_t < self.primal:
            self.primal, self.w_best = f_t, w_t
            self._kb, self._wb_future = kt, wt_future
            self._anchor, self._moves = w_t, []
        t1 = time.perf_counter()
        self.seconds["output"] += t1 - t0
        return self._cut(result)

    def _cut(self, result):
        return exact_scalar(result[2]), fold_value(dense_folds(result[1]))

    def _step(self, w_t, kt, wt_future, t0):
        w_b = self.w_best
        direction = w_t - w_b
        A0 = float(direction @ direction)
        B0 = float(w_b @ direction)
        step = self.line_search(A0, B0, w_b, kt, wt_future, w_t, chain=True)
        t1 = time.perf_counter()
        self.seconds["line_search"] += t1 - t0
        self._version += 1
        k_new = ("w", self._version)
        rg = dict(
            self._rg,
            wb_max=float(np.max(np.abs(w_b), initial=0.0)),
            wt_max=float(np.max(np.abs(w_t), initial=0.0)),
        )
        # Every replay_limit moves, the outputs at the new point are formed from it
        # (one product more), so that a worker that loses them replays a few moves.
        fresh = len(self._moves) >= self.replay_limit
        fresh_w = self.rounds.ship(w_b) if fresh else None
        move_args = (self.spec, self.sig_g, self.sig_s, rg, fresh_w)
        result = None
        if isinstance(step, _Pending):
            # The gather of the interval's breakpoints and the move in one round trip:
            # the pieces joined along the workers' tree, the step found where they
            # meet and given to every move.
            try:
                gathered = self.rounds.stage(
                    ocas_gather,
                    *step.args,
                    combine=join_pieces,
                    finish=functools.partial(step_from, step.search),
                )
                result = self.rounds(
                    ocas_move,
                    self._kb,
                    self._wb_future,
                    kt,
                    wt_future,
                    k_new,
                    gathered,
                    *move_args,
                    combine=add_moves,
                    chained=True,
                )
                self.line_search_rounds += 1
            except StateLost:
                self._ship_replay()
                self.line_searches -= 1  # the same search, finished
                step = self.line_search(A0, B0, w_b, kt, wt_future, w_t)
        if result is None:
            result = self._retried(
                lambda: self.rounds(
                    ocas_move,
                    self._kb,
                    self._wb_future,
                    kt,
                    wt_future,
                    k_new,
                    step,
                    *move_args,
                    combine=add_moves,
                )
            )
        step = result[4]
        self.w_best = w_b + step * direction
        if fresh:
            self._anchor, self._moves = self.w_best, []
        else:
            self._moves.append((w_t, step))
        self.oracle_calls += self.data.n_examples
        self._kb = k_new
        # The workers moved their outputs: w_b itself travels only if one lost them.
        self._wb_future = None
        risk = exact_scalar(result[0])
        self.primal = 0.5 * float(self.w_best @ self.w_best) + self.C * risk
        cut = self._cut(result)
        self.seconds["cut"] += time.perf_counter() - t1
        return cut

    def _ship_replay(self):
        """For a worker that lost w_b's outputs: how to form them again, bit for bit."""
        if self._wb_future is None:
            self._wb_future = self.rounds.ship(Replay(self._anchor, tuple(self._moves)))

    def _retried(self, round_):
        """``round_()``, again with the replay of w_b's outputs shipped if a worker no
        longer had them."""
        try:
            return round_()
        except StateLost:
            if self._wb_future is not None:
                raise
            self._ship_replay()
            return round_()

    def line_search(self, A0, B0, w_b, kt, wt_future, w_t, chain=False):
        """The exact OCAS step (see the module docstring), in a few map-reduce rounds;
        with ``chain``, when the last of them would gather the breakpoints of the
        interval holding the step, that round is left to the caller (a _Pending)."""
        rounds_before = self.rounds.rounds
        self.line_searches += 1
        for _ in range(3):
            try:
                step = self._search(A0, B0, w_b, kt, wt_future, w_t, chain)
                break
            except StateLost:
                # A worker lost its shard mid-search: again, from the outputs.
                self._ship_replay()
                continue
        else:
            raise ClusterLost("the Dask workers kept losing their data during a line search")
        self.line_search_rounds += self.rounds.rounds - rounds_before
        return step

    def _search(self, A0, B0, w_b, kt, wt_future, w_t, chain):
        it = kt
        sig = self._line_grid(w_b, w_t)
        limit = max(MIN_GATHER, len(w_b))
        first = self.rounds(
            ocas_outputs,
            it,
            self._kb,
            self._wb_future,
            kt,
            wt_future,
            self.spec,
            sig,
            limit // len(self.data.shards),
            STEP_GRID,
            combine=add_outputs,
            extra=(
                functools.partial(grid_sums, grid=STEP_GRID, sig=sig),
                SAMPLE_CAP * GRID_SAMPLES,
            ),
        )
        args = (it, self._kb, None, kt, None, self.spec, sig)
        G = first[0][:1]
        count = first[1]

        def D_sign(t, J):
            return exact_sign(np.concatenate([[A0 * t, B0], G[0], J[0]]))

        def root(J):
            return -exact_scalar(B0, G, J) / A0 if A0 > 0.0 else 0.0

        if D_sign(0.0, np.zeros((1, sig.shape[1]))) >= 0:
            return 0.0
        lo, hi, J_lo, inside = -math.inf, math.inf, np.zeros((1, sig.shape[1])), count
        if first[3] is not None:  # every shard sent all its breakpoints
            pieces = first[3]
        else:
            # Jump sums on the global grid (the shards' that sent their breakpoints
            # summed on the workers: exact sums, the same bits).
            cand = STEP_GRID
            acc, counts, found = first[2]
            while True:
                J = np.cumsum(acc, axis=0)  # exact: J at every candidate
                b_lo, b_hi = 0, len(cand)  # first candidate where D >= 0 (D rises)
                while b_lo < b_hi:
                    mid = (b_lo + b_hi) // 2
                    if D_sign(cand[mid], J[mid : mid + 1]) < 0:
                        b_lo = mid + 1
                    else:
                        b_hi = mid
                b = b_lo
                if b > 0:
                    lo, J_lo = cand[b - 1], J[b - 1 : b]
                hi = cand[b] if b < len(cand) else math.inf
                inside = int(counts[b])
                samples = found[b]
                samples = np.unique(samples[~np.isnan(samples) & (samples > lo) & (samples < hi)])
                if inside <= limit or not len(samples):
                    break
                cand = _spread(samples, MAX_CANDIDATES)
                acc, counts, found = self.rounds(
                    ocas_eval,
                    *args,
                    cand,
                    combine=add_buckets,
                    extra=(SAMPLE_CAP * BUCKET_SAMPLES,),
                )
            if inside == 0:
                return min(root(J_lo), hi)
            search = (A0, B0, G, J_lo, sig[:1].copy())
            if chain:
                return _Pending(search=search, args=args + (lo, hi))
            pieces = self.rounds(ocas_gather, *args, lo, hi, combine=join_pieces)
        return final_step((A0, B0, G, J_lo, sig[:1].copy()), [pieces])

    def training_error(self):
        """The share of misclassified examples at the best point (a round of its own,
        not booked with the training's)."""
        key = self._kb or ("w", -1)

        def count():
            wb = self._wb_future if self._kb is not None else self.rounds.ship(self.w_best)
            return self.rounds.result(self.rounds.stage(count_errors, key, wb))[0]

        return self._retried(count) / max(1, self.data.n_examples)


def _spread(values, m):
    """At most m of the sorted ``values``, evenly spread."""
    if len(values) <= m:
        return np.ascontiguousarray(values)
    return np.ascontiguousarray(values[np.linspace(0, len(values) - 1, m).round().astype(int)])
