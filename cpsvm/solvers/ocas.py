"""OCAS: the Optimized Cutting Plane Algorithm (Franc & Sonnenburg, ICML 2008).

Minimises F(w) = ½|w|² + Σ_i C_i·loss_i(w) — the hinge loss (svmocas) or the
Crammer-Singer loss (msvmocas), SVMlight's C convention — on the engine's 1-slack loop
(same master QP, same cuts). What OCAS adds lives in its oracle:

* a best-so-far point w_b with monotonically decreasing F(w_b), moved by an exact line
  search along w_b → w_t (w_t the reduced problem's solution);
* the new cut taken at w_c = (1−λ)·w_b + λ·w_t (λ = 0.1) instead of at w_t;
* outputs ⟨w, x_i⟩ kept for w_b and w_t, so each iteration costs one pass over the
  data for the outputs of w_t and one for the cut (both threaded, numba prange).

Stopping is libocas's: F(w_b) − F_t(w_t) ≤ TolAbs or ≤ TolRel·|F(w_b)|, F(w_b) ≤
QPBound, or the time limit. ``method=0`` is the plain cutting-plane algorithm (BMRM,
cuts at w_t), for comparison.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from ..data import Dataset
from ..engine.cuts import LinearCutOracle
from ..engine.cutting_plane import CuttingPlaneParams, one_slack
from ..engine.qp import CutWorkingSet
from ..errors import InputError
from ..models import LinearModel, MulticlassModel
from ..problems import choose_problem
from ..problems.binary import BinaryProblem
from ..problems.multiclass import MulticlassProblem, _separate


@dataclass
class OcasParams:
    C: float = 1.0
    example_costs: np.ndarray | None = None   # -C FILE: C_i per example (overrides C)
    bias: float = 0.0
    method: int = 1                           # 0 plain cutting plane, 1 OCAS
    buffer_size: int = 2000                   # -s: cuts kept at most
    tol_abs: float = 0.0
    tol_rel: float = 0.01
    qp_bound: float = 0.0
    time_limit: float = math.inf
    cut_lambda: float = 0.1
    max_iterations: int = 100000
    problem: str = "auto"

    def validate(self):
        if not self.C > 0:
            raise InputError(f"expected C > 0 (-c), got {self.C:g}")
        if self.method not in (0, 1):
            raise InputError(f"expected -m 0 (cutting plane) or 1 (OCAS), got {self.method}")
        if self.buffer_size < 2:
            raise InputError(f"expected a cut buffer -s >= 2, got {self.buffer_size}")
        if self.tol_abs < 0 or self.tol_rel < 0:
            raise InputError("expected TolAbs (-a) and TolRel (-r) >= 0")
        if not 0 < self.cut_lambda <= 1:
            raise InputError(f"expected 0 < --lambda <= 1, got {self.cut_lambda:g}")
        if self.tol_abs == 0 and self.tol_rel == 0 and self.time_limit == math.inf \
                and self.qp_bound == -math.inf:
            raise InputError("no stopping condition: give -a, -r, -q or -t")


@njit(cache=True)
def line_search(A0, B0, intercepts, slopes, costs):
    """argmin over λ ≥ 0 of ½A0·λ² + B0·λ + Σ_i costs_i · max_j (intercepts_ij + λ·slopes_ij).

    Exact (Appendix A of the paper, generalised to a max of k lines per example): each
    example's upper envelope on [0, ∞) is traced, its breakpoints and slope jumps are
    sorted, and the monotone subdifferential is walked until it contains 0.
    O(n·k² + n·k·log(n·k)).
    """
    n, k = intercepts.shape
    bp_at = np.empty(n * max(k - 1, 1))
    bp_jump = np.empty(n * max(k - 1, 1))
    n_bp = 0
    grad = B0
    for i in range(n):
        # The line on top at λ = 0+: largest intercept, then largest slope.
        cur = 0
        for j in range(1, k):
            if intercepts[i, j] > intercepts[i, cur] or (
                    intercepts[i, j] == intercepts[i, cur] and slopes[i, j] > slopes[i, cur]):
                cur = j
        grad += costs[i] * slopes[i, cur]
        at = 0.0
        while True:
            nxt = -1
            best_at = np.inf
            for j in range(k):
                if slopes[i, j] > slopes[i, cur]:
                    cross = (intercepts[i, cur] - intercepts[i, j]) / (slopes[i, j] - slopes[i, cur])
                    if cross < at:
                        cross = at
                    if cross < best_at or (cross == best_at and slopes[i, j] > slopes[i, nxt]):
                        best_at, nxt = cross, j
            if nxt < 0:
                break
            bp_at[n_bp] = best_at
            bp_jump[n_bp] = costs[i] * (slopes[i, nxt] - slopes[i, cur])
            n_bp += 1
            cur, at = nxt, best_at
    if grad >= 0.0:
        return 0.0
    order = np.argsort(bp_at[:n_bp])
    for p in order:
        lam = bp_at[p]
        if A0 > 0.0 and A0 * lam + grad >= 0.0:
            return -grad / A0
        grad += bp_jump[p]
        if A0 * lam + grad >= 0.0:
            return lam
    return -grad / A0 if A0 > 0.0 else 0.0


class OcasOracle(LinearCutOracle):
    """Cuts for the engine's loop, taken where OCAS says (see the module docstring); the
    cut vectors are kept as by the linear oracle it extends.

    ``problem`` is a BinaryProblem (loss_scale 1, psi_scale ½) or a MulticlassProblem
    (loss_scale 1); ``costs`` the C_i.
    """

    def __init__(self, problem, costs, method=1, cut_lambda=0.1):
        super().__init__(problem)
        self.costs = np.asarray(costs, dtype=np.float64)
        self.method = method
        self.cut_lambda = cut_lambda
        self.binary = isinstance(problem, BinaryProblem)
        self.primal = math.inf
        self.w_best = np.zeros(problem.size_psi)
        self.out_best = None
        self.seconds = {"output": 0.0, "line_search": 0.0, "cut": 0.0}

    def outputs(self, w):
        """⟨w, x_i⟩ for binary (n,), every class's score for multiclass (n, k)."""
        return self.problem.scores(w)

    def _lines(self, out_from, out_to):
        """Each example's loss along out_from + λ(out_to − out_from) as a max of lines."""
        y = self.problem.y
        if self.binary:
            intercept = 1.0 - y * out_from
            slope = -y * (out_to - out_from)
            zeros = np.zeros_like(intercept)
            return np.column_stack([zeros, intercept]), np.column_stack([zeros, slope])
        idx = np.arange(len(y)), y - 1
        delta = out_to - out_from
        intercepts = out_from - out_from[idx][:, None] + 1.0
        intercepts[idx] = 0.0
        slopes = delta - delta[idx][:, None]
        return intercepts, slopes

    def objective(self, w, out):
        if self.binary:
            risk = np.maximum(0.0, 1.0 - self.problem.y * out)
        else:
            y = self.problem.y
            idx = np.arange(len(y)), y - 1
            margins = out - out[idx][:, None] + 1.0
            margins[idx] = 0.0
            risk = margins.max(axis=1)
        return 0.5 * float(w @ w) + float(self.costs @ risk)

    def separate(self, alpha, threshold=None):
        t0 = time.perf_counter()
        w_t = self.weights(alpha)
        out_t = self.outputs(w_t)
        t1 = time.perf_counter()
        self.seconds["output"] += t1 - t0
        if self.out_best is None or self.method == 0:
            # First iteration (w_t = 0), or plain cutting plane: the cut is taken at w_t.
            f_t = self.objective(w_t, out_t)
            if f_t < self.primal:
                self.primal, self.w_best, self.out_best = f_t, w_t, out_t
            out_cut = out_t
        else:
            direction = w_t - self.w_best
            A0 = float(direction @ direction)
            B0 = float(self.w_best @ direction)
            intercepts, slopes = self._lines(self.out_best, out_t)
            step = line_search(A0, B0, intercepts, slopes, self.costs)
            self.w_best = self.w_best + step * direction
            self.out_best = self.out_best + step * (out_t - self.out_best)
            self.primal = self.objective(self.w_best, self.out_best)
            mu = self.cut_lambda
            out_cut = (1 - mu) * self.out_best + mu * out_t
        t2 = time.perf_counter()
        self.seconds["line_search"] += t2 - t1
        labels = self._most_violated(out_cut)
        self.oracle_calls += self.problem.n_examples
        flipped = labels != self.problem.y
        c = float(self.costs @ flipped)
        g = self.problem.delta_psi_sum(self.costs, labels)
        self.seconds["cut"] += time.perf_counter() - t2
        return c, g

    def _most_violated(self, out):
        y = self.problem.y
        if self.binary:
            return np.where(y * out < 1.0, -y, y)
        return _separate(out, y, True, 1.0)


@dataclass
class OcasInfo:
    problem: str
    n_examples: int
    result: object
    seconds: dict = field(default_factory=dict)
    training_error: float = 0.0


def train(dataset: Dataset, params: OcasParams, *, callback=None, should_stop=None):
    params.validate()
    kind = choose_problem(dataset, params.problem)
    n = dataset.n_examples
    costs = params.example_costs if params.example_costs is not None else np.full(n, params.C)
    if len(costs) != n or np.any(~(np.asarray(costs) > 0)):
        raise InputError(f"expected {n} per-example costs C_i > 0, got {len(costs)}")
    if kind == "binary":
        problem = BinaryProblem(dataset.X, dataset.y, bias=params.bias, loss_scale=1.0,
                                psi_scale=0.5)
    else:
        if params.bias != 0:
            raise InputError("a bias (-b) is supported for binary problems only")
        problem = MulticlassProblem(dataset.X, dataset.y, loss_scale=1.0)
    oracle = OcasOracle(problem, costs, params.method, params.cut_lambda)
    engine_params = CuttingPlaneParams(
        C=1.0, epsilon=-math.inf, max_iterations=params.max_iterations,
        max_idle=params.buffer_size, time_limit=params.time_limit,
        tol_abs=params.tol_abs, tol_rel=params.tol_rel, qp_bound=params.qp_bound,
        max_cuts=params.buffer_size)
    started = time.perf_counter()
    result = one_slack(oracle, engine_params, callback=callback, should_stop=should_stop,
                       working_set=CutWorkingSet([1.0]))
    seconds = dict(oracle.seconds, qp=result.seconds_qp,
                   total=time.perf_counter() - started)
    w = oracle.w_best
    if kind == "binary":
        weights, b = problem.split_weights(w)
        model = LinearModel(weights, b, n_train=n)
        error = float(np.mean(np.sign(oracle.out_best) != dataset.y))
    else:
        model = MulticlassModel(w.reshape(problem.n_classes, problem.n_features), n_train=n,
                                loss_id=0)
        error = float(np.mean(np.argmax(oracle.out_best, axis=1) + 1 != dataset.y))
    return model, OcasInfo(kind, n, result, seconds, error)
