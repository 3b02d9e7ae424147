"""The 1-slack and n-slack loops (cpsvm.engine.cutting_plane) against independent
references: the QP over every 1-slack constraint of tiny problems (each labelling of
4-6 examples, enumerated here from the problems' definitions, or a random finite set of
cuts) solved with quadprog, the SVMlight and Crammer-Singer objectives recomputed from
the returned w, the 1-slack guarantee (primal ≤ optimum + C·ε), weak duality (every
reported dual is below the optimum, every reported primal above), and the documented
statistics, callbacks and stops. The clock of the time-limit test is a fake one."""

import itertools
import math
import types

import numpy as np
import pytest
import quadprog
import scipy.sparse as sp
from conftest import crammer_singer_objective, hinge_objective
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpsvm.engine import cutting_plane
from cpsvm.engine.cutting_plane import CuttingPlaneParams, n_slack, one_slack
from cpsvm.engine.oracles import CutOracle, LinearCutOracle
from cpsvm.engine.working_set import CutWorkingSet
from cpsvm.problems.binary.problem import BinaryProblem
from cpsvm.problems.multiclass.problem import MulticlassProblem

# -- references ---------------------------------------------------------------------------


def one_slack_optimum(offsets, vectors, C):
    """min ½|w|² + C·ξ s.t. g_j·w + ξ ≥ c_j for every listed (c_j, g_j), ξ ≥ 0: quadprog
    over (w, ξ) (a 1e-6 curvature on ξ: smaller ones leave quadprog inaccurate), then the
    objective re-evaluated exactly at its w — an upper bound within about 1e-6 of the
    optimum."""
    m, d = vectors.shape
    G = np.eye(d + 1)
    G[d, d] = 1e-6
    linear = np.zeros(d + 1)
    linear[d] = -C
    A = np.hstack([vectors, np.ones((m, 1))])
    A = np.vstack([A, np.eye(d + 1)[d]])
    b = np.append(offsets, 0.0)
    w = quadprog.solve_qp(G, linear, A.T, b, 0)[0][:d]
    return objective(offsets, vectors, C, w)


def objective(offsets, vectors, C, w):
    """½|w|² + C·max(0, max_j c_j − g_j·w)."""
    return 0.5 * float(w @ w) + C * max(0.0, float(np.max(offsets - vectors @ w)))


def tiny_binary(seed, n=6, d=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    y[:2] = [1.0, -1.0]
    return X, y


def tiny_multiclass(seed, n=5, d=2, k=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.integers(1, k + 1, n)
    y[:k] = np.arange(1, k + 1)
    return X, y


def binary_constraints(X, y):
    """Every 1-slack constraint of SVMperf's binary problem (Ψ = 50·y·x, Δ = 100): for
    each set S of flipped labels, c = 100·|S|/n and g = (1/n)·Σ_S 100·y_i·x_i."""
    n = len(y)
    offsets, vectors = [], []
    for flips in itertools.product([0.0, 1.0], repeat=n):
        flips = np.array(flips)
        offsets.append(100.0 * flips.sum() / n)
        vectors.append((100.0 * flips * y) @ X / n)
    return np.array(offsets), np.array(vectors)


def multiclass_constraints(X, y, k):
    """Every 1-slack constraint of SVMmulticlass's problem (Ψ(x, c): x in column c of a
    (d, k) matrix, flat; Δ = 100·[c ≠ y]): one per labelling of the n examples."""
    n, d = X.shape
    offsets, vectors = [], []
    for labels in itertools.product(range(1, k + 1), repeat=n):
        g = np.zeros((d, k))
        for i, c in enumerate(labels):
            g[:, y[i] - 1] += X[i] / n
            g[:, c - 1] -= X[i] / n
        offsets.append(100.0 * np.count_nonzero(np.array(labels) != y) / n)
        vectors.append(g.ravel())
    return np.array(offsets), np.array(vectors)


def make_problem(kind, seed=0):
    """(problem, enumerated offsets, enumerated vectors, C, independent objective of w)."""
    if kind == "binary":
        X, y = tiny_binary(seed)
        n = len(y)
        C = 0.5
        offsets, vectors = binary_constraints(X, y)

        def reference(w):  # SVMlight's objective at SVMperf's C·100/n
            return hinge_objective(w, X, y, C * 100 / n)

        return BinaryProblem(sp.csr_matrix(X), y), offsets, vectors, C, reference
    X, y = tiny_multiclass(seed)
    n, k = len(y), 3
    C = 20.0
    offsets, vectors = multiclass_constraints(X, y, k)

    def reference(w):  # 100² times Crammer-Singer's at C/(100·n), w 100 times its W
        W = w.reshape(X.shape[1], k).T / 100.0
        return 1e4 * crammer_singer_objective(W, X, y, C / (100 * n))

    return MulticlassProblem(sp.csr_matrix(X), y, n_classes=k), offsets, vectors, C, reference


class ExplicitCutOracle(CutOracle):
    """The separation oracle of a finite list of cuts (c_j, g_j), by enumeration: the
    cut of largest c_j − w·g_j at w = Σ_k α_k g_k over the kept cuts. A cut is its index
    in the list. One oracle call per separation."""

    def __init__(self, offsets, vectors):
        self.offsets, self.all_vectors = offsets, vectors
        self.kept = []
        self.oracle_calls = 0

    def weights(self, alpha):
        if not self.kept:
            return np.zeros(self.all_vectors.shape[1])
        return self.all_vectors[self.kept].T @ alpha

    def separate(self, alpha, threshold=None):
        self.oracle_calls += 1
        j = int(np.argmax(self.offsets - self.all_vectors @ self.weights(alpha)))
        return float(self.offsets[j]), j

    def separate_cached(self, alpha, threshold):
        return None

    def gram_row(self, j):
        g = self.all_vectors[j]
        return self.all_vectors[self.kept] @ g, float(g @ g)

    def add(self, j):
        self.kept.append(j)

    def keep(self, mask):
        self.kept = [j for j, kept in zip(self.kept, mask) if kept]


def weights_of(oracle, alpha):
    """A copy of the oracle's w (a class-cut table's w lives in a buffer it reuses)."""
    return np.array(oracle.weights(alpha))


# -- 1-slack: the optimum ------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 40),
    d=st.integers(1, 5),
    C=st.sampled_from([0.01, 1.0, 100.0]),
    epsilon=st.sampled_from([1e-4, 1e-2]),
)
def test_one_slack_reaches_the_optimum_of_a_finite_set_of_cuts(seed, m, d, C, epsilon):
    rng = np.random.default_rng(seed)
    offsets, vectors = rng.uniform(-0.5, 1.5, m), rng.standard_normal((m, d))
    optimum = one_slack_optimum(offsets, vectors, C)
    oracle = ExplicitCutOracle(offsets, vectors)
    result = one_slack(oracle, CuttingPlaneParams(C=C, epsilon=epsilon))
    w = oracle.weights(result.alpha)
    scale = 1.0 + abs(optimum)
    assert result.status == "converged"
    # The returned point's own objective, and the 1-slack guarantee around the optimum.
    assert result.primal == pytest.approx(objective(offsets, vectors, C, w), abs=1e-12 * scale)
    assert optimum - 1e-5 * scale <= result.primal <= optimum + C * epsilon + 1e-9 * scale
    assert result.dual <= optimum + 1e-9 * scale
    assert result.xi == pytest.approx(max(0.0, np.max(offsets - vectors @ w)), abs=1e-12 * scale)
    assert result.violation <= epsilon
    # Every iteration but the last added a cut; one separation each.
    assert result.iterations == result.cuts_added + 1 == result.oracle_calls
    assert result.working_set == len(oracle.kept) <= result.cuts_added
    assert np.all(result.alpha >= 0) and result.alpha.sum() <= C * (1 + 1e-12)


@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_one_slack_reaches_the_enumerated_optimum_of_a_problem(kind):
    """With the library's oracle (the binary hinge cut; Crammer-Singer cuts kept as
    labellings): the optimum over every labelling, and the returned primal is SVMlight's
    or Crammer-Singer's objective at the returned w."""
    for seed in range(3):
        problem, offsets, vectors, C, reference = make_problem(kind, seed)
        optimum = one_slack_optimum(offsets, vectors, C)
        epsilon = 1e-3
        oracle = LinearCutOracle(problem)
        result = one_slack(oracle, CuttingPlaneParams(C=C, epsilon=epsilon))
        w = weights_of(oracle, result.alpha)
        scale = 1.0 + optimum
        assert result.status == "converged"
        assert result.primal == pytest.approx(reference(w), rel=1e-9)
        assert optimum - 1e-5 * scale <= result.primal <= optimum + C * epsilon + 1e-9 * scale
        assert result.dual <= optimum + 1e-9 * scale
        assert result.xi == pytest.approx(np.max(offsets - vectors @ w), rel=1e-9, abs=1e-9)
        assert result.oracle_calls == result.iterations * problem.n_examples


# -- 1-slack: what it reports, how it stops -----------------------------------------------


def test_progress_reports_bound_the_optimum_from_both_sides():
    problem, offsets, vectors, C, _ = make_problem("binary", 1)
    optimum = one_slack_optimum(offsets, vectors, C)
    reports = []
    oracle = LinearCutOracle(problem)
    result = one_slack(oracle, CuttingPlaneParams(C=C, epsilon=1e-4), callback=reports.append)
    assert [p.iteration for p in reports] == list(range(1, result.iterations + 1))
    tol = 1e-9 * (1 + optimum)
    for before, p in zip([None, *reports], reports):
        assert p.dual <= optimum + tol <= p.primal + 2 * tol  # a lower and an upper bound
        assert p.gap == p.primal - p.dual
        assert p.oracle_calls == p.iteration * problem.n_examples
        assert 1 <= p.working_set <= p.iteration
        assert p.seconds_qp + p.seconds_oracle <= p.seconds + 1e-9
        if before is not None:  # the best primal so far; the dual of a growing QP
            assert p.primal <= before.primal and p.dual >= before.dual - tol
            assert p.seconds >= before.seconds
    last = reports[-1]
    assert last.violation == result.violation <= 1e-4
    assert last.dual == result.dual and last.working_set == result.working_set
    assert result.primal >= last.primal - tol  # at the returned w; the report's is the best
    assert result.seconds_total >= last.seconds


@pytest.mark.parametrize("checks", [0, 1, 3])
def test_should_stop_interrupts_at_a_valid_point(checks):
    """should_stop is asked before each iteration; True ends the run with the w so far,
    whose objective (measured at that w) is returned."""
    problem, offsets, vectors, C, reference = make_problem("binary", 2)
    asked = []

    def should_stop():
        asked.append(True)
        return len(asked) > checks

    reports = []
    oracle = LinearCutOracle(problem)
    result = one_slack(
        oracle,
        CuttingPlaneParams(C=C, epsilon=1e-6),
        callback=reports.append,
        should_stop=should_stop,
    )
    w = weights_of(oracle, result.alpha)
    assert result.status == "interrupted"
    assert result.iterations == len(reports) == checks and len(asked) == checks + 1
    assert result.primal == pytest.approx(reference(w), rel=1e-12)
    assert result.xi == pytest.approx(np.max(offsets - vectors @ w), rel=1e-12, abs=1e-12)
    if checks == 0:  # w = 0: every label flipped, loss 100
        assert result.working_set == 0 and result.primal == pytest.approx(100.0 * C, rel=1e-12)


def test_iteration_and_time_limits():
    problem, offsets, vectors, C, reference = make_problem("multiclass", 0)
    optimum = one_slack_optimum(offsets, vectors, C)
    params = dict(C=C, epsilon=1e-6)
    oracle = LinearCutOracle(problem)
    result = one_slack(oracle, CuttingPlaneParams(**params, max_iterations=2))
    w = weights_of(oracle, result.alpha)
    assert result.status == "max_iterations" and result.iterations == 2
    assert result.primal == pytest.approx(reference(w), rel=1e-12)
    assert result.primal >= optimum * (
        1 - 1e-5
    )  # no point beats the optimum (1e-5: the reference's)
    # A limit already passed stops before the first iteration.
    result = one_slack(LinearCutOracle(problem), CuttingPlaneParams(**params, time_limit=-1.0))
    assert result.status == "time_limit" and result.iterations == 0 and result.working_set == 0
    assert result.primal == pytest.approx(100.0 * C, rel=1e-12)


def test_time_limit_on_the_loops_clock(monkeypatch):
    """The engine's clock is a fake one that the callback moves past the limit after the
    third iteration: the run stops before the fourth, whatever the machine's speed."""
    clock = types.SimpleNamespace(now=0.0)
    clock.perf_counter = lambda: clock.now
    monkeypatch.setattr(cutting_plane, "time", clock)
    problem, _, _, C, reference = make_problem("binary", 0)

    def tick(progress):
        if progress.iteration == 3:
            clock.now = 11.0

    oracle = LinearCutOracle(problem)
    result = one_slack(
        oracle, CuttingPlaneParams(C=C, epsilon=1e-9, time_limit=10.0), callback=tick
    )
    assert result.status == "time_limit" and result.iterations == 3
    assert result.primal == pytest.approx(reference(weights_of(oracle, result.alpha)), rel=1e-12)
    assert result.seconds_total == 11.0


def test_patience_asks_again_before_stopping():
    """patience=3: the run stops after 3 consecutive separations within ε, at the same w
    as with patience 1 (a deterministic oracle gives the same cut twice)."""
    problem = make_problem("binary", 4)[0]
    results = []
    for patience in (1, 3):
        oracle = LinearCutOracle(problem)
        results.append(
            one_slack(oracle, CuttingPlaneParams(C=0.5, epsilon=1e-3, patience=patience))
        )
    once, thrice = results
    assert once.status == thrice.status == "converged"
    assert thrice.iterations == once.iterations + 2 and thrice.cuts_added == once.cuts_added
    np.testing.assert_array_equal(thrice.alpha, once.alpha)


@pytest.mark.parametrize(
    "stop",
    [{"tol_abs": 1e-3}, {"tol_rel": 1e-5}, {"qp_bound": None}],
    ids=["tol_abs", "tol_rel", "qp_bound"],
)
def test_gap_and_bound_tolerances_stop_the_run(stop):
    """libocas's TolAbs, TolRel and QPBound with the ε test off (OCAS's use): the run
    ends once primal − dual ≤ tol_abs, ≤ tol_rel·primal, or primal ≤ qp_bound, and then
    primal − optimum ≤ primal − dual."""
    problem, offsets, vectors, C, reference = make_problem("multiclass", 1)
    optimum = one_slack_optimum(offsets, vectors, C)
    if stop.get("qp_bound", 0) is None:
        stop = {"qp_bound": 1.001 * optimum}
    reports = []
    oracle = LinearCutOracle(problem)
    params = CuttingPlaneParams(C=C, epsilon=-math.inf, **stop)
    result = one_slack(oracle, params, callback=reports.append)
    assert result.status == "converged"
    last = reports[-1]
    if "tol_abs" in stop:
        assert last.gap <= stop["tol_abs"]
        assert last.primal - optimum <= stop["tol_abs"] + 1e-6 * optimum
    elif "tol_rel" in stop:
        assert last.gap <= stop["tol_rel"] * last.primal
    else:
        assert last.primal <= stop["qp_bound"]
        # Tested once the working set holds a cut: from the second iteration on.
        assert len(reports) > 2 and all(p.primal > stop["qp_bound"] for p in reports[1:-1])
    assert result.primal == pytest.approx(reference(weights_of(oracle, result.alpha)), rel=1e-12)


def test_idle_cuts_leave_the_working_set_and_the_oracle_together():
    """max_idle=1: a cut unused by a QP is dropped at once, from the working set and from
    the oracle's cut vectors alike (the Gram matrix stays theirs); the optimum holds."""
    problem, offsets, vectors, C, _ = make_problem("binary", 5)
    optimum = one_slack_optimum(offsets, vectors, C)
    oracle = LinearCutOracle(problem)
    working_set = CutWorkingSet([C])
    sizes = []

    def check(progress):
        V = oracle.vectors
        sizes.append(progress.working_set)
        assert V.shape[0] == working_set.size == progress.working_set
        np.testing.assert_allclose(working_set.G, V @ V.T, rtol=1e-12, atol=1e-12)
        assert np.all(working_set.idle == 0)

    result = one_slack(
        oracle,
        CuttingPlaneParams(C=C, epsilon=1e-4, max_idle=1),
        callback=check,
        working_set=working_set,
    )
    assert result.status == "converged"
    assert max(sizes) < result.cuts_added  # some cuts were dropped
    assert result.primal <= optimum + C * 1e-4 + 1e-9 * optimum


def test_a_full_cut_buffer_drops_unused_cuts_or_stops():
    """max_cuts bounds the working set; when every kept cut is in use the run stops
    ("buffer_full") with the objective measured at its w."""
    problem, offsets, vectors, C, reference = make_problem("binary", 3)
    optimum = one_slack_optimum(offsets, vectors, C)
    for max_cuts in (1, 3):
        reports = []
        oracle = LinearCutOracle(problem)
        working_set = CutWorkingSet([C])
        result = one_slack(
            oracle,
            CuttingPlaneParams(C=C, epsilon=1e-4, max_cuts=max_cuts),
            callback=reports.append,
            working_set=working_set,
        )
        assert all(p.working_set <= max_cuts for p in reports)
        w = weights_of(oracle, result.alpha)
        assert result.primal == pytest.approx(reference(w), rel=1e-12)
        if result.status == "buffer_full":
            assert working_set.size == max_cuts and np.all(working_set.idle == 0)
        else:
            assert result.status == "converged"
            assert result.primal <= optimum + C * 1e-4 + 1e-9 * optimum
        if max_cuts == 1:  # the first cut is used: nothing can make room
            assert result.status == "buffer_full" and result.iterations == 2


def test_a_kept_working_set_starts_the_next_C_warm():
    """A path over C: the working set of a run at C₁, its bounds moved to C₂ (α scaled),
    starts the run at C₂ from a dual value D(α·C₂/C₁) that is already a lower bound, and
    the run ends where a cold run at C₂ ends (within C₂·ε of the optimum)."""
    problem, offsets, vectors, _, _ = make_problem("binary", 6)
    epsilon = 1e-4
    oracle = LinearCutOracle(problem)
    working_set = CutWorkingSet([0.1])
    one_slack(oracle, CuttingPlaneParams(C=0.1, epsilon=epsilon), working_set=working_set)
    C = 2.0
    optimum = one_slack_optimum(offsets, vectors, C)
    working_set.set_bounds([C])
    alpha = np.array(working_set.alpha)
    start = float(working_set.h @ alpha - 0.5 * alpha @ working_set.G @ alpha)
    assert start <= optimum
    reports = []
    warm = one_slack(
        oracle,
        CuttingPlaneParams(C=C, epsilon=epsilon),
        callback=reports.append,
        working_set=working_set,
    )
    cold = one_slack(LinearCutOracle(problem), CuttingPlaneParams(C=C, epsilon=epsilon))
    assert warm.status == cold.status == "converged"
    assert all(p.dual >= start - 1e-12 * optimum for p in reports)
    for result in (warm, cold):
        assert optimum - 1e-5 * optimum <= result.primal <= optimum + C * epsilon + 1e-9 * optimum


# -- n-slack ----------------------------------------------------------------------------------


@pytest.mark.parametrize("batch", [1, 4, 100])
@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_n_slack_reaches_the_same_optimum(kind, batch):
    """Margin rescaling: the n-slack and 1-slack problems share their optimum; n-slack's
    primal uses the mean slack, so it is the same objective, within C·ε."""
    problem, offsets, vectors, C, reference = make_problem(kind, 7)
    optimum = one_slack_optimum(offsets, vectors, C)
    n = problem.n_examples
    epsilon = 1e-3
    reports = []
    oracle = LinearCutOracle(problem)
    result = n_slack(
        oracle, n, CuttingPlaneParams(C=C, epsilon=epsilon), batch=batch, callback=reports.append
    )
    w = weights_of(oracle, result.alpha)
    scale = 1.0 + optimum
    assert result.status == "converged"
    assert result.primal == pytest.approx(reference(w), rel=1e-9)
    assert result.xi == pytest.approx(np.max(offsets - vectors @ w), rel=1e-9, abs=1e-9)
    assert optimum - 1e-5 * scale <= result.primal <= optimum + C * epsilon + 1e-9 * scale
    assert result.dual <= optimum + 1e-9 * scale
    # One report per pass over the examples, its "violation" the constraints it added;
    # the last pass added none. Nothing is removed in n-slack.
    assert [p.iteration for p in reports] == list(range(1, result.iterations + 1))
    added = [p.violation for p in reports]
    assert added[-1] == 0.0 and all(a > 0 for a in added[:-1])
    assert sum(added) == result.cuts_added == result.working_set == len(result.alpha)
    assert result.oracle_calls == result.iterations * n


def test_n_slack_limits_measure_the_returned_w():
    problem, offsets, vectors, C, reference = make_problem("binary", 8)
    n = problem.n_examples
    oracle = LinearCutOracle(problem)
    result = n_slack(oracle, n, CuttingPlaneParams(C=C, epsilon=1e-6, max_iterations=1), batch=2)
    w = weights_of(oracle, result.alpha)
    assert result.status == "max_iterations" and result.iterations == 1
    assert result.primal == pytest.approx(reference(w), rel=1e-12)
    assert result.xi == pytest.approx(max(0.0, np.max(offsets - vectors @ w)), abs=1e-12)
    # should_stop after the first batch of 2 examples: 2 constraints at most, the pass
    # cut short; the slacks are measured again at the returned w.
    asked = []
    oracle = LinearCutOracle(problem)
    result = n_slack(
        oracle,
        n,
        CuttingPlaneParams(C=C, epsilon=1e-6),
        batch=2,
        should_stop=lambda: asked.append(1) or len(asked) > 1,
    )
    w = weights_of(oracle, result.alpha)
    assert result.status == "interrupted" and 1 <= result.working_set <= 2
    assert result.primal == pytest.approx(reference(w), rel=1e-12)
    assert result.xi == pytest.approx(max(0.0, np.max(offsets - vectors @ w)), abs=1e-12)


@pytest.mark.parametrize("stop", ["time_limit", "should_stop"])
def test_n_slack_stopped_before_its_first_constraint_reports_the_objective_at_w_0(stop):
    problem, _, _, C, _ = make_problem("binary", 8)
    limits = {"time_limit": -1.0} if stop == "time_limit" else {}
    result = n_slack(
        LinearCutOracle(problem),
        problem.n_examples,
        CuttingPlaneParams(C=C, **limits),
        should_stop=(lambda: True) if stop == "should_stop" else None,
    )
    assert result.status == ("time_limit" if stop == "time_limit" else "interrupted")
    assert result.working_set == 0
    # w = 0: every label flipped, loss 100 each (as one_slack reports: test_should_stop_...)
    assert result.xi == pytest.approx(100.0, rel=1e-12)
    assert result.primal == pytest.approx(100.0 * C, rel=1e-12)
