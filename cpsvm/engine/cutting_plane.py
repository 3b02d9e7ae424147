"""The generic 1-slack cutting-plane loop (Joachims, Finley & Yu 2009, Algorithm 3;
Yu & Joachims 2008, Algorithm 4) and the n-slack loop (Algorithm 1/2).

The loop knows nothing of features or problems: an *oracle* turns the dual variables
α of the working set into the current w, returns the most violated cut (c, g) for it
and the inner products of g with the cuts already kept. The master QP sees only those
inner products (``CutWorkingSet``). So linear problems, kernel expansions, OCAS and
sampled cuts all reuse this loop with their own oracle.

Oracle protocol (:class:`cpsvm.engine.oracles.CutOracle`, every oracle's base, declares it
with the defaults of the optional figures)::

    oracle.separate(alpha, threshold) -> (c, cut) most violated cut at w(alpha); threshold
                                                  (the working set's ξ + ε) is a hint for
                                                  sampling oracles, which may resample
                                                  until their cut exceeds it
    oracle.exact_excess                           optional: c′ − w·g′ of an exact cut that
                                                  the stop test uses instead of the returned
                                                  cut's (sampled cuts, Yu & Joachims Alg. 3)
    oracle.primal                                 optional: the objective at the oracle's own
                                                  best point (OCAS's w_b), used as the primal
                                                  bound instead of the cut's
    oracle.rounding                               optional: how precisely that objective is
                                                  known (cpsvm.engine.magnitudes)
    oracle.separate_cached(alpha, threshold) -> (c, cut) or None
                                                  a cut from the constraint cache that is
                                                  violated by more than ``threshold``
    oracle.gram_row(cut) -> (cross, self_product) <g, g_k> for kept cuts k, and <g, g>
    oracle.add(cut); oracle.keep(mask)            mirror the working set's changes
    oracle.oracle_calls                           per-example argmax calls so far

Stopping: the cut is violated by at most ε beyond the working set's ξ (SVMstruct), or
the gap primal − dual is at most ``tol_abs`` or ``tol_rel``·|primal|, or the primal is at
most ``qp_bound`` (libocas's TolAbs, TolRel, QPBound). When the oracle says how precisely
its primal is known, a gap within that rounding error ends the run as "precision": at a
C that huge the tolerance cannot be seen to be reached. A C whose cuts would make |w|
overflow is refused (cpsvm.engine.magnitudes.CTooLarge) before its cut is used.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..threads import thread_count
from .magnitudes import check_cut
from .working_set import CutWorkingSet


@dataclass
class CuttingPlaneParams:
    C: float
    epsilon: float = 0.1
    max_iterations: int = 100000
    max_idle: int = 50  # drop a cut whose α stayed 0 for this many QPs
    time_limit: float = math.inf  # seconds
    use_cache: bool = False  # -w 4: try the constraint cache before the oracle
    patience: int = 1  # stop after this many consecutive unviolated cuts
    tol_abs: float = -math.inf  # stop when primal − dual <= tol_abs (off by default:
    tol_rel: float = -math.inf  # ... or <= tol_rel·|primal|   sampled cuts give no bound)
    qp_bound: float = -math.inf  # ... or primal <= qp_bound
    max_cuts: int = 10**9  # working-set capacity (libocas's cut buffer)
    n_threads: int | None = None  # numba threads for the run (None: the caller's count)


@dataclass
class Progress:
    """What the loop reports after every iteration (the callback's argument)."""

    iteration: int
    primal: float  # best primal objective seen (an upper bound on the optimum)
    dual: float  # dual objective of the working set (a lower bound)
    gap: float
    violation: float  # how far the last cut was violated beyond the working set's ξ
    working_set: int
    oracle_calls: int
    seconds: float
    seconds_qp: float = 0.0  # so far, in the master QP (for -v 3)
    seconds_oracle: float = 0.0  # so far, in the separation oracle


@dataclass
class CuttingPlaneResult:
    alpha: np.ndarray
    status: str  # converged | max_iterations | time_limit | interrupted | buffer_full |
    # precision (the gap is within the rounding error of the primal)
    iterations: int
    primal: float
    dual: float
    violation: float
    working_set: int
    cuts_added: int
    oracle_calls: int
    xi_working_set: float
    xi: float  # slack of the last exact cut: the global ξ at the returned w
    seconds_qp: float = 0.0
    seconds_oracle: float = 0.0
    seconds_total: float = 0.0
    history: list = field(default_factory=list)

    @property
    def gap(self) -> float:
        return self.primal - self.dual


def _objective(ws: CutWorkingSet, alpha) -> float:
    """½|w|² for w = Σ α_k g_k."""
    return 0.5 * float(alpha @ (ws.G @ alpha)) if len(alpha) else 0.0


def _xi(ws: CutWorkingSet, alpha) -> float:
    """Slack the working set demands: max(0, max_k c_k − w·g_k)."""
    if ws.size == 0:
        return 0.0
    return max(0.0, float(np.max(ws.h - ws.G @ alpha)))


def one_slack(
    oracle, params: CuttingPlaneParams, *, callback=None, should_stop=None, working_set=None
) -> CuttingPlaneResult:
    """Run the 1-slack cutting-plane algorithm until the most violated cut is violated
    by at most ε beyond the working set's slack (or a limit is hit), with
    ``params.n_threads`` threads."""
    with thread_count(params.n_threads):
        return _one_slack(oracle, params, callback, should_stop, working_set)


def _one_slack(oracle, params, callback, should_stop, working_set):
    started = time.perf_counter()
    ws = working_set if working_set is not None else CutWorkingSet([params.C])
    # A working set that holds cuts (a path over C) starts the run from its alpha, whose
    # dual value D(α) = h·α − ½αᵀGα is already a lower bound at this C.
    alpha = np.array(ws.alpha, dtype=np.float64)
    dual = float(ws.h @ alpha) - _objective(ws, alpha) if ws.size else 0.0
    xi_ws, best_primal, xi_exact = _xi(ws, alpha), math.inf, math.inf
    violation = math.inf
    t_qp = t_oracle = 0.0
    cuts_added, iteration, status = 0, 0, "max_iterations"
    satisfied = 0  # consecutive separations within ε
    while iteration < params.max_iterations:
        stopped = _limit_reached(started, params, should_stop)
        if stopped:
            status = stopped
            break
        iteration += 1
        t0 = time.perf_counter()
        found = (
            oracle.separate_cached(alpha, xi_ws + params.epsilon)
            if params.use_cache and ws.size
            else None
        )
        exact = found is None
        if exact:
            found = oracle.separate(alpha, xi_ws + params.epsilon)
        c, cut = found
        with np.errstate(over="ignore"):  # an overflowing cut is refused just below
            cross, self_product = oracle.gram_row(cut)
        check_cut(params.C, self_product)
        t_oracle += time.perf_counter() - t0
        w_dot_g = float(cross @ alpha) if len(alpha) else 0.0
        excess = oracle.exact_excess if exact else None
        if excess is None:
            excess = c - w_dot_g
        violation = excess - xi_ws
        if exact:
            xi_exact = max(0.0, excess)
            best_primal = min(best_primal, _objective(ws, alpha) + params.C * xi_exact)
            best_primal = best_primal if oracle.primal is None else oracle.primal
            stop = None
            if ws.size and _gap_closed(best_primal, dual, params):
                stop = "converged"
            elif ws.size and best_primal - dual <= oracle.rounding:
                stop = "precision"
            elif violation <= params.epsilon:
                satisfied += 1
                if satisfied >= params.patience:
                    stop = "converged"
                elif c - w_dot_g - xi_ws <= params.epsilon:
                    continue  # a sampled cut that cuts nothing: sample again
            else:
                satisfied = 0
            if stop is not None:
                status = stop
                _report(
                    callback,
                    iteration,
                    best_primal,
                    dual,
                    violation,
                    ws,
                    oracle,
                    started,
                    t_qp,
                    t_oracle,
                )
                break
        if ws.size >= params.max_cuts:
            # Full: drop the cuts the last QP did not use; if all are used, stop.
            keep = np.asarray(ws.idle) == 0
            if keep.all():
                status = "buffer_full"
                break
            ws.remove(keep)
            oracle.keep(keep)
            alpha = np.array(ws.alpha, dtype=np.float64)
            cross = cross[keep]
        ws.add(c, cross, self_product)
        oracle.add(cut)
        cuts_added += 1
        t0 = time.perf_counter()
        result = ws.solve()
        t_qp += time.perf_counter() - t0
        keep = ws.remove_idle(params.max_idle)
        if not keep.all():
            oracle.keep(keep)
        alpha = np.array(ws.alpha, dtype=np.float64)
        dual = float(result.dual)
        xi_ws = _xi(ws, alpha)
        _report(
            callback, iteration, best_primal, dual, violation, ws, oracle, started, t_qp, t_oracle
        )
    if status != "converged":
        # The QP moved w after the last separation, or a limit stopped the run before
        # the first one (w = 0): measure the returned w's slack.
        c, cut = oracle.separate(alpha, math.inf)
        cross, _ = oracle.gram_row(cut)
        excess = oracle.exact_excess
        w_dot_g = float(cross @ alpha) if len(alpha) else 0.0
        xi_exact = max(0.0, c - w_dot_g if excess is None else excess)
    primal = (
        _objective(ws, alpha) + params.C * xi_exact
        if ws.size or status != "converged"
        else best_primal
    )
    primal = primal if oracle.primal is None else oracle.primal
    return CuttingPlaneResult(
        alpha=alpha,
        status=status,
        iterations=iteration,
        primal=primal,
        dual=dual,
        violation=violation,
        working_set=ws.size,
        cuts_added=cuts_added,
        oracle_calls=oracle.oracle_calls,
        xi_working_set=xi_ws,
        xi=xi_exact,
        seconds_qp=t_qp,
        seconds_oracle=t_oracle,
        seconds_total=time.perf_counter() - started,
    )


def _limit_reached(started, params, should_stop):
    """'time_limit' or 'interrupted' if the run must stop before its next step, else None."""
    if time.perf_counter() - started > params.time_limit:
        return "time_limit"
    if should_stop is not None and should_stop():
        return "interrupted"
    return None


def _gap_closed(primal, dual, params) -> bool:
    gap = primal - dual
    return gap <= params.tol_abs or gap <= params.tol_rel * abs(primal) or primal <= params.qp_bound


def _report(callback, iteration, primal, dual, violation, ws, oracle, started_at, t_qp, t_oracle):
    if callback is not None:
        callback(
            Progress(
                iteration=iteration,
                primal=primal,
                dual=dual,
                gap=primal - dual,
                violation=violation,
                working_set=ws.size,
                oracle_calls=oracle.oracle_calls,
                seconds=time.perf_counter() - started_at,
                seconds_qp=t_qp,
                seconds_oracle=t_oracle,
            )
        )


def n_slack(
    oracle,
    n_examples: int,
    params: CuttingPlaneParams,
    *,
    batch: int = 100,
    callback=None,
    should_stop=None,
) -> CuttingPlaneResult:
    """The n-slack algorithm: one slack per example (group bound C/n), constraints added
    per example and the QP re-solved after every ``batch`` examples (SVMstruct's -k).
    Stops after a pass over all examples adds no constraint violated by more than ε.

    The oracle additionally provides ``separate_rows(alpha, rows) -> (c, cuts)``, one
    cut per row, and ``xi`` is the mean slack, so objectives compare with 1-slack's.
    """
    with thread_count(params.n_threads):
        return _n_slack(oracle, n_examples, params, batch, callback, should_stop)


def _n_slack(oracle, n_examples, params, batch, callback, should_stop):
    started = time.perf_counter()
    ws = CutWorkingSet(np.full(n_examples, params.C / n_examples))
    alpha = np.zeros(0)
    dual, t_qp, t_oracle = 0.0, 0.0, 0.0
    cuts_added, iteration, status = 0, 0, "max_iterations"
    slack_sum = 0.0
    while iteration < params.max_iterations:
        iteration += 1
        added_in_pass = 0
        slack_sum = 0.0
        for start in range(0, n_examples, batch):
            stopped = _limit_reached(started, params, should_stop)
            if stopped:
                status = stopped
                break
            rows = np.arange(start, min(n_examples, start + batch))
            t0 = time.perf_counter()
            offsets, cuts = oracle.separate_rows(alpha, rows)
            t_oracle += time.perf_counter() - t0
            group_xi = _group_xi(ws, alpha, n_examples)
            added = 0
            for i, c, cut in zip(rows, offsets, cuts):
                cross, self_product = oracle.gram_row(cut)
                check_cut(params.C, self_product)
                excess = c - (float(cross @ alpha) if len(alpha) else 0.0)
                slack_sum += max(0.0, excess)
                if excess - group_xi[i] > params.epsilon:
                    ws.add(c, cross, self_product, group=int(i))
                    oracle.add(cut)
                    alpha = np.append(alpha, 0.0)
                    added += 1
            if added:
                t0 = time.perf_counter()
                result = ws.solve()
                t_qp += time.perf_counter() - t0
                alpha = np.array(ws.alpha, dtype=np.float64)
                dual = float(result.dual)
                cuts_added += added
                added_in_pass += added
        xi = slack_sum / n_examples
        _report(
            callback,
            iteration,
            _objective(ws, alpha) + params.C * xi,
            dual,
            float(added_in_pass),
            ws,
            oracle,
            started,
            t_qp,
            t_oracle,
        )
        if status in ("time_limit", "interrupted"):
            break
        if added_in_pass == 0:
            status = "converged"
            break
    if status != "converged":
        # The pass was partial (or none: w = 0) or w moved during it: measure every slack
        # at the final w.
        slack_sum = 0.0
        for start in range(0, n_examples, batch):
            rows = np.arange(start, min(n_examples, start + batch))
            offsets, cuts = oracle.separate_rows(alpha, rows)
            for c, cut in zip(offsets, cuts):
                cross, _ = oracle.gram_row(cut)
                slack_sum += max(0.0, c - (float(cross @ alpha) if len(alpha) else 0.0))
    xi = slack_sum / n_examples
    return CuttingPlaneResult(
        alpha=alpha,
        status=status,
        iterations=iteration,
        primal=_objective(ws, alpha) + params.C * xi,
        dual=dual,
        violation=0.0,
        working_set=ws.size,
        cuts_added=cuts_added,
        oracle_calls=oracle.oracle_calls,
        xi_working_set=float(np.sum(_group_xi(ws, alpha, n_examples))) / n_examples,
        xi=xi,
        seconds_qp=t_qp,
        seconds_oracle=t_oracle,
        seconds_total=time.perf_counter() - started,
    )


def _group_xi(ws: CutWorkingSet, alpha, n_groups: int) -> np.ndarray:
    """Per example, the slack its kept constraints demand."""
    xi = np.zeros(n_groups)
    if ws.size:
        np.maximum.at(xi, np.asarray(ws.groups), ws.h - ws.G @ alpha)
    return xi
