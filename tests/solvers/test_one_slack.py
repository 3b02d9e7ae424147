"""cp_learn's solver (cpsvm.solvers.one_slack.train) on tiny binary and multiclass data:
every algorithm (-w 0, 1, 2, 3, 4, 5, 9) reaches the optimum within C·ε — the optimum
bracketed by an exact QP written here (the dual over every example's constraints, solved
with quadprog: a feasible dual value below it, the objective at its w above), in the scale
of SVMperf (the SVMlight hinge objective at C·100/n) and SVMmulticlass (100² times
Crammer-Singer's at C/(100·n)), the documented conversions written out; the objective it
reports is the one recomputed here from the model it returns; per-example costs, the
bias feature; a kernel against the kernel SVM's dual; the reports, stops and refusals.
Against scikit-learn and end to end through the command: tests/e2e/test_cp_learn.py."""

import numpy as np
import pytest
import quadprog
import scipy.sparse as sp
from conftest import crammer_singer_objective, hinge_objective

from cpsvm.data import Dataset
from cpsvm.errors import InputError, OptionError
from cpsvm.kernels import Kernel
from cpsvm.models import KernelModel, LinearModel, MulticlassModel
from cpsvm.problems import ProblemSpecError
from cpsvm.problems.binary.problem import BinaryProblem
from cpsvm.problems.multiclass.problem import MulticlassProblem
from cpsvm.solvers.one_slack import DCD_CONDITION, StructParams, fastest_algorithm, train

ALGORITHMS = (0, 2, 3, 4, 5, 9)


def binary_data(seed=0, n=20, d=3, costs=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X @ np.ones(d) + 0.8 * rng.standard_normal(n) > 0, 1.0, -1.0)
    cost = rng.uniform(0.5, 3.0, n) if costs else None
    return Dataset(sp.csr_matrix(X), y, cost=cost)


def multiclass_data(seed=0, n=18, d=3, k=3):
    rng = np.random.default_rng(seed)
    centers = 1.5 * rng.standard_normal((k, d))
    y = np.concatenate([np.arange(1, k + 1), rng.integers(1, k + 1, n - k)])
    X = centers[y - 1] + rng.standard_normal((n, d))
    return Dataset(sp.csr_matrix(X), y.astype(float))


def dual_optimum(deltas, losses, example_of, bounds):
    """(D(α), w) at the α maximising D(α) = Σ α_j·Δ_j − ½|Σ α_j·δΨ_j|² over α ≥ 0 with
    Σ_{j of example i} α_j ≤ C_i: the dual of min ½|w|² + Σ_i C_i·max_j(0, Δ_j − w·δΨ_j)
    over the listed constraints j. quadprog (1e-9 of its mean added to the diagonal of
    the singular Gram matrix), α made exactly feasible and D recomputed without it: a
    lower bound on the optimum; w = Σ α_j·δΨ_j."""
    m, n = len(losses), len(bounds)
    members = np.zeros((m, n))
    members[np.arange(m), example_of] = 1.0
    gram = deltas @ deltas.T
    alpha = quadprog.solve_qp(
        gram + 1e-9 * np.trace(gram) / m * np.eye(m),
        losses,
        np.hstack([np.eye(m), -members]),
        np.concatenate([np.zeros(m), -bounds]),
    )[0]
    alpha = np.maximum(alpha, 0.0)
    sums = alpha @ members
    alpha *= np.minimum(1.0, bounds / np.maximum(sums, 1e-300))[example_of]
    w = deltas.T @ alpha
    return float(losses @ alpha - 0.5 * w @ w), w


class Binary:
    """SVMperf's binary problem at -c C: Ψ = 50·y·x, Δ = 100, so the objective is the
    SVMlight hinge objective at C·100/n (times each example's cost:), bias 0."""

    kind, options = "binary", {"bias": 0.0}

    def __init__(self, data, C=1.0):
        self.data, self.X, self.y, self.C = data, data.X.toarray(), data.y, C
        self.costs = np.ones(len(self.y)) if data.cost is None else data.cost
        self.C_light = self.C * 100 / len(self.y)

    def value(self, w):
        hinge = np.maximum(0.0, 1.0 - self.y * (self.X @ w))
        return 0.5 * w @ w + self.C_light * self.costs @ hinge

    def objective(self, model):
        return self.value(model.w)

    def optimum(self):
        """(lower, upper) bounds of the optimum: a flip of y_i is δΨ = 100·y_i·x_i."""
        n = len(self.y)
        deltas = 100.0 * self.y[:, None] * self.X
        bounds = self.C * self.costs / n
        lower, w = dual_optimum(deltas, np.full(n, 100.0), np.arange(n), bounds)
        return lower, self.value(w)


class Multiclass:
    """SVMmulticlass at -c C: 100² times Crammer-Singer's objective at C/(100·n) of W/100
    (its model holds 100 times Crammer-Singer's weights)."""

    kind, options = "multiclass", {}

    def __init__(self, data, C=50.0):
        self.data, self.X, self.y, self.C = data, data.X.toarray(), data.y.astype(int), C
        self.C_cs = self.C / (100 * len(self.y))

    def value(self, W):
        return 1e4 * crammer_singer_objective(W / 100, self.X, self.y, self.C_cs)

    def objective(self, model):
        return self.value(model.W)

    def optimum(self):
        """(lower, upper) bounds of the optimum: for a wrong class c, δΨ is x_i in the row
        of y_i minus x_i in the row of c of the (k, d) weights, Δ = 100."""
        n, d = self.X.shape
        k = int(self.y.max())
        deltas, example_of = [], []
        for i in range(n):
            for c in range(1, k + 1):
                if c != self.y[i]:
                    delta = np.zeros((k, d))
                    delta[self.y[i] - 1] += self.X[i]
                    delta[c - 1] -= self.X[i]
                    deltas.append(delta.ravel())
                    example_of.append(i)
        lower, w = dual_optimum(
            np.array(deltas),
            np.full(len(deltas), 100.0),
            np.array(example_of),
            np.full(n, self.C / n),
        )
        return lower, self.value(w.reshape(k, d))


def case(kind):
    return Binary(binary_data()) if kind == "binary" else Multiclass(multiclass_data())


@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_every_algorithm_reaches_the_optimum_and_reports_its_model(kind):
    problem = case(kind)
    lower, upper = problem.optimum()
    assert upper - lower <= 1e-6 * upper  # the reference is that exact
    epsilon = 1e-3
    n = len(problem.y)
    for algorithm in (*ALGORITHMS, 1):
        params = StructParams(
            C=problem.C, epsilon=epsilon, algorithm=algorithm, options=problem.options
        )
        model, info = train(problem.data, params)
        ours = problem.objective(model)
        assert info.result.status == "converged", algorithm
        # -w 1 (n-slack with shrinking) is trained as -w 0: the same optimum.
        assert info.algorithm == (0 if algorithm == 1 else algorithm)
        assert info.problem == kind and info.n_examples == n and info.epsilon == epsilon
        assert ours == pytest.approx(info.result.primal, rel=1e-9), algorithm
        assert lower * (1 - 1e-12) <= ours <= upper + problem.C * epsilon, algorithm
        assert info.result.dual <= upper * (1 + 1e-12), algorithm
        # The model: SVMlight's linear model w (b = 0 without a bias), or SVMmulticlass's
        # one row of weights per class; |w| and the support count as reported.
        if kind == "binary":
            assert isinstance(model, LinearModel) and model.b == 0.0
            weights = model.w
            scores = problem.X @ model.w
            np.testing.assert_allclose(model.decision_function(problem.data.X), scores)
        else:
            assert isinstance(model, MulticlassModel) and model.W.shape == (3, 3)
            weights = model.W
            scores = problem.X @ model.W.T
            np.testing.assert_array_equal(
                model.predict(problem.data.X), np.argmax(scores, axis=1) + 1
            )
        assert model.n_train == n
        assert info.norm_w == pytest.approx(np.linalg.norm(weights), rel=1e-12)
        assert info.n_sv == np.count_nonzero(info.result.alpha) > 0


def test_the_bias_feature_is_the_models_threshold():
    """--b 1 (the linear default): a constant feature regularised like the others; the
    model's b is minus its weight times the bias value, and the objective is SVMlight's
    with that feature appended."""
    data = binary_data(1)
    X, y, n, C = data.X.toarray(), data.y, data.n_examples, 2.0
    bias = 1.5
    augmented = np.hstack([X, np.full((n, 1), bias)])
    lower, upper = Binary(Dataset(sp.csr_matrix(augmented), y), C).optimum()
    for algorithm in (3, 5, 9):
        params = StructParams(C=C, epsilon=1e-4, algorithm=algorithm, options={"bias": bias})
        model, info = train(data, params)
        w = np.append(model.w, -model.b / bias)
        objective = hinge_objective(w, augmented, y, C * 100 / n)
        assert objective == pytest.approx(info.result.primal, rel=1e-9)
        assert lower * (1 - 1e-12) <= objective <= upper + C * 1e-4
        np.testing.assert_allclose(model.decision_function(data.X), augmented @ w)
        assert info.norm_w == pytest.approx(np.linalg.norm(w), rel=1e-12)


def test_cost_factors_weigh_each_examples_hinge():
    """SVMlight's cost: factors: C_i = cost_i·C·100/n in the hinge objective."""
    problem = Binary(binary_data(2, costs=True))
    lower, upper = problem.optimum()
    for algorithm in ALGORITHMS:
        params = StructParams(C=problem.C, epsilon=1e-3, algorithm=algorithm, options={"bias": 0.0})
        model, info = train(problem.data, params)
        ours = problem.objective(model)
        assert ours == pytest.approx(info.result.primal, rel=1e-9), algorithm
        assert lower * (1 - 1e-12) <= ours <= upper + problem.C * 1e-3, algorithm


def test_a_kernel_trains_the_exact_expansion_with_the_dual_algorithm():
    """-t 2 without --t 1: the 1-slack dual (-w 4 asked: a note, -w 3 used); the model's
    SVMlight objective from Kernel.matrix is the reported one and within C·ε of the
    kernel SVM's optimum (its dual over 0 ≤ α ≤ C·100/n solved with quadprog; b = 0)."""
    data = binary_data(3, n=16)
    kernel = Kernel(2, gamma=0.7)
    n, C, epsilon = data.n_examples, 1.0, 1e-3
    C_light = C * 100 / n
    K = kernel.matrix(data.X, data.X)
    Q = np.outer(data.y, data.y) * K
    alpha = quadprog.solve_qp(
        Q + 1e-9 * np.eye(n),
        np.ones(n),
        np.hstack([np.eye(n), -np.eye(n)]),
        np.concatenate([np.zeros(n), -np.full(n, C_light)]),
    )[0]
    alpha = np.clip(alpha, 0.0, C_light)
    coef = alpha * data.y

    def svmlight_objective(coef):
        return 0.5 * coef @ K @ coef + C_light * np.maximum(0.0, 1.0 - data.y * (K @ coef)).sum()

    lower, upper = alpha.sum() - 0.5 * coef @ K @ coef, svmlight_objective(coef)
    assert upper - lower <= 1e-6 * upper
    model, info = train(data, StructParams(C=C, epsilon=epsilon, algorithm=4, kernel=kernel))
    assert info.algorithm == 3 and any("using -w 3" in note for note in info.notes)
    assert isinstance(model, KernelModel) and model.b == 0.0
    # The support vectors are training examples; their coefficients the expansion's.
    full = np.zeros(n)
    rows = [
        int(np.flatnonzero((data.X.toarray() == sv).all(axis=1))[0])
        for sv in model.support_vectors.toarray()
    ]
    full[rows] = model.coef
    ours = svmlight_objective(full)
    assert ours == pytest.approx(info.result.primal, rel=1e-9)
    assert lower * (1 - 1e-12) <= ours <= upper + C * epsilon
    assert info.norm_w == pytest.approx(np.sqrt(full @ K @ full), rel=1e-9)
    assert info.kernel_evaluations > 0


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_progress_bounds_the_optimum_and_stops_return_the_reported_model(algorithm):
    """Each report's dual is a lower bound of the optimum and (1-slack, OCAS, dual
    coordinate descent: in the problem's scale) its primal an upper one; should_stop and
    max_iterations end the run with the model whose objective is reported."""
    problem = case("binary")
    lower, upper = problem.optimum()
    params = dict(C=problem.C, epsilon=1e-3, algorithm=algorithm, options=problem.options)
    reports = []
    train(problem.data, StructParams(**params), callback=reports.append)
    assert reports
    for p in reports:
        assert p.dual <= upper * (1 + 1e-12)
        if algorithm != 0:  # n-slack's per-pass value mixes slacks at several w
            assert p.primal >= lower * (1 - 1e-12)
    asked = []
    model, info = train(
        problem.data,
        StructParams(**params),
        should_stop=lambda: asked.append(1) or len(asked) > 1,  # after one step
    )
    assert info.result.status == "interrupted"
    assert problem.objective(model) == pytest.approx(info.result.primal, rel=1e-9)
    model, info = train(problem.data, StructParams(**params, max_iterations=1))
    assert info.result.status == "max_iterations"
    assert problem.objective(model) == pytest.approx(info.result.primal, rel=1e-9)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_stopped_at_once_the_model_is_w_0_and_its_objective_is_reported(algorithm):
    """Ctrl-C before the first step: w = 0, every example's hinge 1, C·100 reported."""
    problem = case("binary")
    params = StructParams(C=problem.C, algorithm=algorithm, options=problem.options)
    model, info = train(problem.data, params, should_stop=lambda: True)
    assert info.result.status == "interrupted"
    assert np.all(model.w == 0.0)
    assert info.result.primal == pytest.approx(100.0 * problem.C, rel=1e-12)


def test_the_default_algorithm_is_the_faster_of_5_and_9():
    """fastest_algorithm: 5 for multiclass; for the binary hinge 5 while the mean
    C_i·|x_i|² of the plain hinge (C_i = C·cost_i/n·100²/100) is at most DCD_CONDITION."""
    data = binary_data(4, costs=True)
    X, n = data.X.toarray(), data.n_examples
    problem = BinaryProblem(data.X, data.y)
    costs = data.cost / n
    mean = np.mean(costs * 100 * (X * X).sum(axis=1))  # at C = 1
    at_threshold = DCD_CONDITION / mean
    assert fastest_algorithm(problem, costs, 0.99 * at_threshold) == 5
    assert fastest_algorithm(problem, costs, 1.01 * at_threshold) == 9
    multiclass = MulticlassProblem(data.X, np.arange(n) % 3 + 1)
    assert fastest_algorithm(multiclass, np.ones(n) / n, 1e6) == 5
    # Through train, with -w not given.
    for C, expected in ((0.99 * at_threshold, 5), (1.01 * at_threshold, 9)):
        _, info = train(data, StructParams(C=C, options={"bias": 0.0}))
        assert info.algorithm == expected


@pytest.mark.parametrize(
    "params, error, message",
    [
        (dict(C=0.0), InputError, "expected a finite C > 0"),
        (dict(C=-1.0), InputError, "expected a finite C > 0"),
        (dict(C=1.0, epsilon=0.0), InputError, "expected epsilon > 0"),
        (dict(C=1.0, algorithm=7), InputError, "expected -w 0, 1, 2, 3, 4, 5 or 9"),
        (dict(C=1.0, rescaling=3), InputError, "expected -o 1 (slack) or 2"),
        (dict(C=1.0, algorithm=5, rescaling=1), OptionError, "-w 5 (dual coordinate descent)"),
        (dict(C=1.0, algorithm=5, margin_bounds=True), OptionError, "cannot be used with -w 5"),
        (dict(C=1.0, loss_id=99), InputError, "expected -l 0, 1, 2, 3, 4, 5 or 10, got 99"),
        (dict(C=1.0, problem="nosuch"), ProblemSpecError, "unknown problem 'nosuch'"),
        (dict(C=1.0, problem="binary", options={"bias": 1.0}, kernel=Kernel(2)), OptionError,
         "--b 1 needs the linear kernel"),
    ],
)  # fmt: skip
def test_bad_settings_are_refused(params, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        train(binary_data(), StructParams(**params))


def test_data_the_problem_refuses():
    multiclass = multiclass_data()
    with pytest.raises(OptionError, match="supported for binary problems only"):
        train(multiclass, StructParams(C=1.0, kernel=Kernel(2)))
    with pytest.raises(InputError, match="expected binary targets"):
        train(multiclass, StructParams(C=1.0, problem="binary"))
