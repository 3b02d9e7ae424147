"""The separation oracles against hand computations: each cut's offset and vector are
the loss-weighted sums of the problems' definitions (SVMperf's binary Ψ = 50·y·x and
Δ = 100, SVMmulticlass's class blocks, SVMlight's cost: factors) recomputed here with
numpy, the most violated labelling is checked by enumerating every labelling of a few
examples, kernel cuts against Kernel.matrix, and the sampled cuts (Yu & Joachims) against
the exact cut: over every possible sample, their mean is the exact cut.

cpsvm.engine.oracles: LinearCutOracle (vectors, class-cut tables, a user's problem),
KernelCutOracle; cpsvm.engine.sampled_cuts: ConstantTimeOracle, LinearTimeOracle."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from cpsvm.conventions import MARGIN_RESCALING, SLACK_RESCALING
from cpsvm.engine.cuts import ClassCuts
from cpsvm.engine.oracles import KernelCutOracle, LinearCutOracle
from cpsvm.engine.sampled_cuts import ConstantTimeOracle, LinearTimeOracle
from cpsvm.kernels import Kernel
from cpsvm.problems import PerExampleProblem
from cpsvm.problems.binary.problem import BinaryProblem
from cpsvm.problems.multiclass import problem as multiclass
from cpsvm.problems.multiclass.problem import MulticlassProblem

RESCALINGS = [MARGIN_RESCALING, SLACK_RESCALING]


def binary_data(seed, n=7, d=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    y[:2] = [1.0, -1.0]
    return X, y, rng.uniform(0.5, 2.0, n)


def multiclass_data(seed, n=6, d=2, k=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.integers(1, k + 1, n)
    y[:k] = np.arange(1, k + 1)
    return X, y, rng.uniform(0.5, 2.0, n)


def delta_psi_multiclass(X, y, i, c, k):
    """δΨ_i(c): x_i in the column of y_i minus x_i in the column of c, (d, k) flat."""
    out = np.zeros((X.shape[1], k))
    out[:, y[i] - 1] += X[i]
    out[:, c - 1] -= X[i]
    return out.ravel()


def hand_binary_cut(X, y, weights, w, rescaling):
    """(c, g, flipped): the labels whose flip is violated at w — Δ − w·δΨ = 100 −
    100·y·x·w > 0 (margin rescaling) or Δ·(1 − w·δΨ) > 0 (slack) — and their sums
    c = Σ weights·Δ, g = Σ weights·(Δ)·δΨ with δΨ = 100·y·x."""
    margins = 100.0 * y * (X @ w)
    violation = 100.0 - margins if rescaling == MARGIN_RESCALING else 100.0 * (1.0 - margins)
    flipped = violation > 0
    factor = weights * flipped * (1.0 if rescaling == MARGIN_RESCALING else 100.0)
    return float(100.0 * weights @ flipped), (factor * 100.0 * y) @ X, flipped


def hand_multiclass_labels(X, y, w, k, rescaling):
    """Each example's most violated label: argmax_c of Δ − w·δΨ_i(c) (margin rescaling)
    or Δ·(1 − w·δΨ_i(c)) (slack), Δ = 100·[c ≠ y_i]."""
    labels = np.empty(len(y), dtype=np.int64)
    for i in range(len(y)):
        best = -np.inf
        for c in range(1, k + 1):
            loss = 100.0 * (c != y[i])
            margin = w @ delta_psi_multiclass(X, y, i, c, k)
            score = loss - margin if rescaling == MARGIN_RESCALING else loss * (1.0 - margin)
            if score > best:
                best, labels[i] = score, c
    return labels


def hand_multiclass_cut(X, y, weights, labels, k, rescaling):
    wrong = labels != y
    c = float(100.0 * weights @ wrong)
    factor = 1.0 if rescaling == MARGIN_RESCALING else 100.0
    g = sum(
        (weights[i] * factor * delta_psi_multiclass(X, y, i, labels[i], k) for i in range(len(y))),
        np.zeros(X.shape[1] * k),
    )
    return c, g


def max_violation(offsets, vectors, w):
    return float(np.max(offsets - vectors @ w))


def enumerated_binary(X, y, weights, rescaling):
    """Every labelling's 1-slack constraint (c, g): flip sets S."""
    offsets, vectors = [], []
    factor = 1.0 if rescaling == MARGIN_RESCALING else 100.0
    for flips in itertools.product([0.0, 1.0], repeat=len(y)):
        flips = np.array(flips)
        offsets.append(100.0 * weights @ flips)
        vectors.append((weights * flips * factor * 100.0 * y) @ X)
    return np.array(offsets), np.array(vectors)


def enumerated_multiclass(X, y, weights, k, rescaling):
    offsets, vectors = [], []
    for labels in itertools.product(range(1, k + 1), repeat=len(y)):
        c, g = hand_multiclass_cut(X, y, weights, np.array(labels), k, rescaling)
        offsets.append(c)
        vectors.append(g)
    return np.array(offsets), np.array(vectors)


def grow(oracle, steps, rng, scale):
    """Run the oracle as the loop does for a few cuts at random α; yield α and w before
    each separation, and the cut."""
    for _ in range(steps):
        alpha = rng.uniform(0.0, scale, len(oracle.vectors))
        w = np.array(oracle.weights(alpha))
        kept = oracle.vectors
        np.testing.assert_allclose(w, alpha @ kept, rtol=1e-12, atol=1e-12)
        calls = oracle.oracle_calls
        c, cut = oracle.separate(alpha, None)
        assert oracle.oracle_calls == calls + oracle.problem.n_examples
        yield alpha, w, c, cut, kept
        cross, own = oracle.gram_row(cut)
        oracle.add(cut)
        g = oracle.vectors[-1]
        np.testing.assert_allclose(cross, kept @ g, rtol=1e-10, atol=1e-10)
        assert own == pytest.approx(g @ g, rel=1e-10)


# -- LinearCutOracle ----------------------------------------------------------------------


@pytest.mark.parametrize("cache_size", [0, 2], ids=["hinge-cut", "labelling"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unit", "cost"])
@pytest.mark.parametrize("rescaling", RESCALINGS, ids=["slack", "margin"])
def test_binary_cut_is_the_loss_weighted_sum_of_the_flipped_examples(
    rescaling, weighted, cache_size
):
    """The hinge kernel's cut (problem.cut) and the one built from the labelling (with a
    cache) alike."""
    X, y, costs = binary_data(1)
    n = len(y)
    costs = costs if weighted else None
    weights = (np.ones(n) if costs is None else costs) / n
    oracle = LinearCutOracle(BinaryProblem(sp.csr_matrix(X), y), rescaling, cache_size, costs)
    offsets, vectors = enumerated_binary(X, y, weights, rescaling)
    some_kept_some_flipped = False
    for _, w, c, g, _ in grow(oracle, 6, np.random.default_rng(2), 0.02):
        c_hand, g_hand, flipped = hand_binary_cut(X, y, weights, w, rescaling)
        some_kept_some_flipped |= 0 < flipped.sum() < n
        assert c == pytest.approx(c_hand, rel=1e-12)
        np.testing.assert_allclose(g, g_hand, rtol=1e-12, atol=1e-12)
        # The most violated of every labelling's constraint.
        assert c - w @ g == pytest.approx(max_violation(offsets, vectors, w), rel=1e-12, abs=1e-9)
    assert some_kept_some_flipped


@pytest.mark.parametrize("storage", ["class-cuts", "vectors"])
@pytest.mark.parametrize("rescaling", RESCALINGS, ids=["slack", "margin"])
def test_multiclass_cut_is_each_examples_most_violated_label(rescaling, storage, monkeypatch):
    X, y, costs = multiclass_data(3)
    n, k = len(y), 3
    if storage == "vectors":  # the storage of a problem whose vectors are small
        monkeypatch.setattr(multiclass, "VECTOR_CUTS", 0)
    oracle = LinearCutOracle(MulticlassProblem(sp.csr_matrix(X), y, k), rescaling, costs=costs)
    assert isinstance(oracle._table, ClassCuts) == (storage == "class-cuts")
    weights = costs / n
    offsets, vectors = enumerated_multiclass(X, y, weights, k, rescaling)
    for step, (_, w, c, cut, _) in enumerate(grow(oracle, 5, np.random.default_rng(4), 0.002)):
        if step == 0:  # w = 0: every wrong label ties; any is the most violated
            assert c == pytest.approx(100.0 * weights.sum(), rel=1e-12)
            continue
        labels = hand_multiclass_labels(X, y, w, k, rescaling)
        c_hand, g_hand = hand_multiclass_cut(X, y, weights, labels, k, rescaling)
        assert c == pytest.approx(c_hand, rel=1e-12, abs=1e-12)
        g = cut if storage == "vectors" else oracle._table.dense(cut)
        np.testing.assert_allclose(g, g_hand, rtol=1e-12, atol=1e-12)
        assert c - w @ g == pytest.approx(max_violation(offsets, vectors, w), rel=1e-12, abs=1e-9)


@pytest.mark.parametrize("kind", ["binary", "multiclass"])
@pytest.mark.parametrize("rescaling", RESCALINGS, ids=["slack", "margin"])
def test_separate_rows_gives_each_example_its_own_constraint(kind, rescaling):
    """n-slack: for each row i, (cost_i·Δ_i, cost_i·(Δ_i)·δΨ_i) at its most violated
    label, its weight in the sum cost_i (the group bound is C/n)."""
    k = 3
    if kind == "binary":
        X, y, costs = binary_data(5)
        problem = BinaryProblem(sp.csr_matrix(X), y)
    else:
        X, y, costs = multiclass_data(5)
        problem = MulticlassProblem(sp.csr_matrix(X), y, k)
    oracle = LinearCutOracle(problem, rescaling, costs=costs)
    rng = np.random.default_rng(6)
    for _ in range(4):  # cuts at w = 0: a w in their span below
        _, cut = oracle.separate(np.zeros(len(oracle.vectors)))
        oracle.gram_row(cut)
        oracle.add(cut)
    alpha = rng.uniform(0.0, 0.01, len(oracle.vectors))
    w = np.array(oracle.weights(alpha))
    rows = np.array([1, 2, 5])
    calls = oracle.oracle_calls
    offsets, cuts = oracle.separate_rows(alpha, rows)
    assert oracle.oracle_calls == calls + len(rows)
    if kind == "binary":
        _, _, flipped = hand_binary_cut(X, y, np.ones(len(y)), w, rescaling)
        labels = np.where(flipped, -y, y)
    else:
        labels = hand_multiclass_labels(X, y, w, k, rescaling)
    factor = 1.0 if rescaling == MARGIN_RESCALING else 100.0
    for i, c, cut in zip(rows, offsets, cuts):
        wrong = labels[i] != y[i]
        assert c == pytest.approx(costs[i] * 100.0 * wrong, rel=1e-12)
        if kind == "binary":
            delta = 100.0 * y[i] * X[i]
            g = cut
        else:
            delta = delta_psi_multiclass(X, y, i, labels[i], k)
            g = oracle._table.dense(cut)
        np.testing.assert_allclose(g, costs[i] * factor * wrong * delta, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_cached_cut_takes_each_examples_most_violated_cached_label(kind):
    """-w 4: the cache keeps the last cache_size labellings of the exact oracle; the
    cached cut takes, per example, the most violated of its true label and the cached
    ones, and is returned only when violated by more than the threshold."""
    k = 3
    if kind == "binary":
        X, y, costs = binary_data(7)
        problem = BinaryProblem(sp.csr_matrix(X), y)
    else:
        X, y, costs = multiclass_data(7)
        problem = MulticlassProblem(sp.csr_matrix(X), y, k)
    n = len(y)
    weights = costs / n
    oracle = LinearCutOracle(problem, MARGIN_RESCALING, cache_size=2, costs=costs)
    assert oracle.separate_cached(np.zeros(0), 0.0) is None  # nothing cached yet
    rng = np.random.default_rng(8)
    scale = 0.02 if kind == "binary" else 0.002
    exact_labels = []
    for _, w, _, _, _ in grow(oracle, 5, rng, scale):
        if kind == "binary":
            flipped = hand_binary_cut(X, y, weights, w, MARGIN_RESCALING)[2]
            exact_labels.append(np.where(flipped, -y, y))
        else:
            exact_labels.append(hand_multiclass_labels(X, y, w, k, MARGIN_RESCALING))
    assert len(oracle.cache) == 2
    for cached, expected in zip(oracle.cache, exact_labels[-2:]):  # (w = 0 ties: first)
        np.testing.assert_array_equal(cached, expected)
    alpha = rng.uniform(0.0, scale, len(oracle.vectors))
    w = np.array(oracle.weights(alpha))
    candidates = [y] + list(oracle.cache)
    if kind == "binary":
        deltas = [100.0 * y[:, None] * X * (labels != y)[:, None] for labels in candidates]
        scores = np.array([100.0 * (labels != y) - d @ w for labels, d in zip(candidates, deltas)])
    else:
        scores = np.array(
            [
                [
                    100.0 * (labels[i] != y[i]) - w @ delta_psi_multiclass(X, y, i, labels[i], k)
                    for i in range(n)
                ]
                for labels in candidates
            ]
        )
    scores[0] = 0.0
    choice = np.argmax(scores, axis=0)
    labels = np.array([candidates[choice[i]][i] for i in range(n)])
    if kind == "binary":
        flipped = labels != y
        c_hand = float(100.0 * weights @ flipped)
        g_hand = (weights * flipped * 100.0 * y) @ X
    else:
        c_hand, g_hand = hand_multiclass_cut(X, y, weights, labels, k, MARGIN_RESCALING)
    violated = c_hand - w @ g_hand
    assert violated > 0
    found = oracle.separate_cached(alpha, violated - 1e-6)
    assert found is not None
    c, cut = found
    g = cut if kind == "binary" else oracle._table.dense(cut)
    assert c == pytest.approx(c_hand, rel=1e-12)
    np.testing.assert_allclose(g, g_hand, rtol=1e-12, atol=1e-12)
    assert oracle.separate_cached(alpha, violated + 1e-6) is None


class OneHotClasses(PerExampleProblem):
    """A user's problem written per example (no batched shortcut): Crammer-Singer with
    one block of weights per class, Δ = 2 for a wrong class."""

    def __init__(self, X, y, k):
        self.X, self.y, self.k = X, y, k
        self.n_examples, self.size_psi = len(y), X.shape[1] * k

    def psi(self, i, label):
        out = np.zeros(self.size_psi)
        out[(label - 1) * self.X.shape[1] : label * self.X.shape[1]] = self.X[i]
        return out

    def true_label(self, i):
        return int(self.y[i])

    def loss(self, i, label):
        return 2.0 * (label != self.y[i])

    def most_violated(self, i, w, rescaling):
        def score(c):
            margin = w @ (self.psi(i, self.y[i]) - self.psi(i, c))
            loss = self.loss(i, c)
            return loss - margin if rescaling == MARGIN_RESCALING else loss * (1 - margin)

        return max(range(1, self.k + 1), key=score)

    def classify(self, x, w):
        return 1 + int(np.argmax(w.reshape(self.k, -1) @ x))


@pytest.mark.parametrize("rescaling", RESCALINGS, ids=["slack", "margin"])
def test_a_users_problem_cut_from_its_labelling(rescaling):
    """The generic path (delta_psi_sum of the labelling): c = Σ cost_i/n·Δ_i,
    g = Σ cost_i/n·(Δ_i)·δΨ_i, from the problem's per-example psi and loss."""
    X, y, costs = multiclass_data(9, n=5)
    problem = OneHotClasses(X, y, 3)
    oracle = LinearCutOracle(problem, rescaling, costs=costs)
    for _, w, c, g, _ in grow(oracle, 4, np.random.default_rng(10), 0.05):
        labels = [problem.most_violated(i, w, rescaling) for i in range(len(y))]
        losses = np.array([problem.loss(i, label) for i, label in enumerate(labels)])
        factor = np.ones(len(y)) if rescaling == MARGIN_RESCALING else losses
        g_hand = sum(
            costs[i] / len(y) * factor[i] * (problem.psi(i, y[i]) - problem.psi(i, labels[i]))
            for i in range(len(y))
        )
        assert c == pytest.approx(costs @ losses / len(y), rel=1e-12)
        np.testing.assert_allclose(g, g_hand, rtol=1e-12, atol=1e-12)


def test_keep_mirrors_the_working_set_and_costs_are_checked():
    X, y, _ = binary_data(11)
    oracle = LinearCutOracle(BinaryProblem(sp.csr_matrix(X), y))
    for _ in grow(oracle, 5, np.random.default_rng(12), 0.02):
        pass
    V = oracle.vectors
    mask = np.array([True, False, True, False, True])
    oracle.keep(mask)
    np.testing.assert_array_equal(oracle.vectors, V[mask])
    alpha = np.array([0.01, 0.02, 0.005])
    np.testing.assert_allclose(oracle.weights(alpha), alpha @ V[mask], rtol=1e-12)
    _, g = oracle.separate(alpha)
    cross, own = oracle.gram_row(g)
    np.testing.assert_allclose(cross, V[mask] @ g, rtol=1e-12)
    assert own == pytest.approx(g @ g, rel=1e-12)
    with pytest.raises(ValueError, match="expected 7 example costs"):
        LinearCutOracle(BinaryProblem(sp.csr_matrix(X), y), costs=np.ones(6))


# -- KernelCutOracle -----------------------------------------------------------------------

KERNEL = Kernel(2, gamma=0.5)


@pytest.mark.parametrize("weighted", [False, True], ids=["unit", "cost"])
@pytest.mark.parametrize("rescaling", RESCALINGS, ids=["slack", "margin"])
def test_kernel_cut_is_the_expansion_over_the_flipped_examples(rescaling, weighted):
    """A cut is g = Σ_flipped β_i·φ(x_i), β_i = (Δ)·100·y_i·cost_i/n, flipped where
    y_i·w·φ(x_i) < 1 (margin rescaling) or < 1/100 (slack); c = 100·Σ cost_i/n; its
    row A = K β and Gram row from Kernel.matrix; the most violated of every flip set."""
    X, y, costs = binary_data(13)
    n = len(y)
    costs = costs if weighted else None
    unit = np.ones(n) if costs is None else costs
    oracle = KernelCutOracle(sp.csr_matrix(X), y, KERNEL, rescaling, costs=costs)
    K = KERNEL.matrix(sp.csr_matrix(X), sp.csr_matrix(X))
    factor = 1.0 if rescaling == MARGIN_RESCALING else 100.0
    threshold = 1.0 if rescaling == MARGIN_RESCALING else 0.01
    coef = factor * 100.0 * y * unit / n
    kept = []  # the cuts' coefficients over all examples, dense
    rng = np.random.default_rng(14)
    some_kept_some_flipped = False
    for _ in range(6):
        alpha = rng.uniform(0.0, 0.05 / factor, len(kept))
        expansion = alpha @ np.array(kept) if kept else np.zeros(n)
        np.testing.assert_allclose(oracle.expansion(alpha), expansion, rtol=1e-12, atol=1e-15)
        scores = K @ expansion
        np.testing.assert_allclose(oracle.scores(alpha), scores, rtol=1e-10, atol=1e-12)
        c, (flipped, beta, A_new) = oracle.separate(alpha)
        expected = np.flatnonzero(y * scores < threshold)
        some_kept_some_flipped |= 0 < len(expected) < n
        np.testing.assert_array_equal(flipped, expected)
        assert c == pytest.approx(100.0 * unit[expected].sum() / n, rel=1e-12)
        np.testing.assert_allclose(beta, coef[expected], rtol=1e-15)
        g = np.zeros(n)
        g[expected] = coef[expected]
        np.testing.assert_allclose(A_new, K @ g, rtol=1e-10, atol=1e-12)
        # c − w·g is the largest over every flip set S: c_S = 100·Σ_S cost/n,
        # w·g_S = Σ_S coef_i·score_i.
        best = max(
            100.0 * unit[list(S)].sum() / n - coef[list(S)] @ scores[list(S)]
            for r in range(n + 1)
            for S in itertools.combinations(range(n), r)
        )
        assert c - g @ K @ expansion == pytest.approx(best, rel=1e-10, abs=1e-10)
        cross, own = oracle.gram_row((flipped, beta, A_new))
        np.testing.assert_allclose(cross, np.array(kept).reshape(-1, n) @ K @ g, rtol=1e-10)
        assert own == pytest.approx(g @ K @ g, rel=1e-10)
        oracle.add((flipped, beta, A_new))
        kept.append(g)
    assert some_kept_some_flipped
    mask = np.array([True, False, True, True, False, True])
    oracle.keep(mask)
    alpha = rng.uniform(0.0, 0.05, mask.sum())
    np.testing.assert_allclose(oracle.expansion(alpha), alpha @ np.array(kept)[mask], rtol=1e-12)


# -- sampled cuts ----------------------------------------------------------------------------


class EveryDraw:
    """An rng whose choice(n, r, replace=False) returns each r-subset of range(n) in
    turn: the sampled oracles' draws enumerated, for their expectation."""

    def __init__(self):
        self._subsets = {}
        self.last = None  # the subset drawn last

    def choice(self, population, size, replace=False):
        assert not replace
        key = (population, size)
        if key not in self._subsets:
            self._subsets[key] = itertools.cycle(itertools.combinations(range(population), size))
        self.last = np.array(next(self._subsets[key]))
        return self.last


def sampled_setup(seed=15, n=6):
    X, y, costs = binary_data(seed, n=n)
    return sp.csr_matrix(X), y, costs, KERNEL.matrix(sp.csr_matrix(X), sp.csr_matrix(X))


def expansion_vector(rows, beta, n):
    g = np.zeros(n)
    np.add.at(g, rows, beta)
    return g


def test_constant_time_cut_with_every_example_drawn_is_the_exact_cut():
    """r ≥ n: ConstantTimeOracle's cuts are KernelCutOracle's (a second route), run in
    lockstep at the same α; its expansion and Gram rows from Kernel.matrix."""
    X, y, costs, K = sampled_setup()
    n = len(y)
    sampled = ConstantTimeOracle(X, y, KERNEL, n + 3, np.random.default_rng(0), costs=costs)
    exact = KernelCutOracle(X, y, KERNEL, costs=costs)
    kept = []
    rng = np.random.default_rng(16)
    for _ in range(5):
        alpha = rng.uniform(0.0, 0.05, len(kept))
        rows, coef = sampled.expansion(alpha)
        w = alpha @ np.array(kept) if kept else np.zeros(n)
        np.testing.assert_allclose(expansion_vector(rows, coef, n), w, rtol=1e-12, atol=1e-15)
        c, (basis, beta) = sampled.separate(alpha)
        c_exact, (flipped, beta_exact, A) = exact.separate(alpha)
        assert sampled.oracle_calls == exact.oracle_calls
        assert c == pytest.approx(c_exact, rel=1e-12)
        np.testing.assert_array_equal(basis, flipped)
        np.testing.assert_allclose(beta, beta_exact, rtol=1e-12)
        g = expansion_vector(basis, beta, n)
        cross, own = sampled.gram_row((basis, beta))
        np.testing.assert_allclose(cross, np.array(kept).reshape(-1, n) @ K @ g, rtol=1e-10)
        assert own == pytest.approx(g @ K @ g, rel=1e-10)
        sampled.add((basis, beta))
        exact.gram_row((flipped, beta_exact, A))
        exact.add((flipped, beta_exact, A))
        kept.append(g)


def test_constant_time_cuts_average_to_the_exact_cut():
    """r < n: a cut from r drawn examples, c = 100·Σ_F cost/r and β_j = 100·y_j·cost_j/r
    over the drawn F the current w gets wrong; over every r-subset, the mean cut is the
    exact one (c′, g′) of all n examples."""
    X, y, costs, K = sampled_setup()
    n, r = len(y), 3
    oracle = ConstantTimeOracle(X, y, KERNEL, r, EveryDraw(), costs=costs)
    # Two cuts first, so that w ≠ 0 and some examples are right.
    for _ in range(2):
        cut = oracle.separate(np.zeros(len(oracle.cuts)))[1]
        oracle.gram_row(cut)
        oracle.add(cut)
    alpha = np.array([0.01, 0.02])
    rows, coef = oracle.expansion(alpha)
    scores = K @ expansion_vector(rows, coef, n)
    wrong = y * scores < 1.0
    assert 0 < wrong.sum() < n
    subsets = list(itertools.combinations(range(n), r))
    offsets, cuts = [], []
    for _ in subsets:  # each subset once (a whole period of the draws)
        calls = oracle.oracle_calls
        c, (basis, beta) = oracle.separate(alpha)
        assert oracle.oracle_calls == calls + r
        drawn_wrong = [i for i in oracle.rng.last if wrong[i]]
        np.testing.assert_array_equal(basis, drawn_wrong)
        np.testing.assert_allclose(beta, 100.0 * y[drawn_wrong] * costs[drawn_wrong] / r)
        assert c == pytest.approx(100.0 * costs[drawn_wrong].sum() / r, rel=1e-12)
        offsets.append(c)
        cuts.append(expansion_vector(basis, beta, n))
    assert np.mean(offsets) == pytest.approx(100.0 * costs[wrong].sum() / n, rel=1e-12)
    np.testing.assert_allclose(
        np.mean(cuts, axis=0), 100.0 * y * costs * wrong / n, rtol=1e-12, atol=1e-15
    )


@pytest.mark.parametrize("weighted", [False, True], ids=["unit", "cost"])
def test_linear_time_cut_is_exact_when_few_are_wrong_and_unbiased_when_sampled(weighted):
    """Algorithm 3: the exact slack 100·Σ_I cost·(1 − y·score)/n over the examples I with
    a loss (exact_excess, the stop test), and the exact cut (c = 100·Σ_I cost/n, g) when
    |I| ≤ r, else r examples S of I with β_j = 100·y_j·cost_j·|I|/(n·r) and c = 100·Σ_S
    cost·|I|/(n·r), redrawn until violated beyond the threshold; over every r-subset of I
    the mean c and g are the exact ones."""
    X, y, costs, K = sampled_setup(17, n=7)
    n = len(y)
    if not weighted:
        costs = np.ones(n)
    rng = np.random.default_rng(18)
    sampled = 0  # separations with more examples wrong than r
    for r in (n, 2):
        oracle = LinearTimeOracle(X, y, KERNEL, r, EveryDraw(), costs=costs)
        kept = []
        for _ in range(4):
            alpha = rng.uniform(0.0, 0.02, len(kept))
            w = alpha @ np.array(kept) if kept else np.zeros(n)
            np.testing.assert_allclose(oracle.scores(alpha), K @ w, rtol=1e-10, atol=1e-12)
            scores = K @ w
            wrong = np.flatnonzero(y * scores < 1.0)
            excess = 100.0 * costs[wrong] @ (1.0 - y[wrong] * scores[wrong]) / n
            # A threshold the cut cannot pass: one draw, and no row of A for it.
            draws = oracle.draws
            c, (basis, beta, A) = oracle.separate(alpha, excess + 1.0)
            assert oracle.draws == draws + 1 and A is None
            assert oracle.exact_excess == pytest.approx(excess, rel=1e-10)
            exact_offset = 100.0 * costs[wrong].sum() / n
            if len(wrong) <= r:
                assert c == pytest.approx(exact_offset, rel=1e-12)
                np.testing.assert_array_equal(basis, wrong)
                np.testing.assert_allclose(beta, 100.0 * y[wrong] * costs[wrong] / n)
            else:
                sampled += 1
                assert len(basis) == r and set(basis) <= set(wrong)
                scale = len(wrong) / (n * r)
                np.testing.assert_allclose(beta, 100.0 * y[basis] * costs[basis] * scale)
                # The offset is the sample's, as its vector is: 100·Σ_S cost·|I|/(n·r).
                assert c == pytest.approx(100.0 * costs[basis].sum() * scale, rel=1e-12)
                mean, mean_offset = np.zeros(n), 0.0
                subsets = list(itertools.combinations(range(len(wrong)), r))
                for _ in subsets:
                    c, (basis, beta, _) = oracle.separate(alpha, excess + 1.0)
                    mean += expansion_vector(basis, beta, n) / len(subsets)
                    mean_offset += c / len(subsets)
                exact = expansion_vector(wrong, 100.0 * y[wrong] * costs[wrong] / n, n)
                np.testing.assert_allclose(mean, exact, rtol=1e-12, atol=1e-15)
                assert mean_offset == pytest.approx(exact_offset, rel=1e-12)
            # A threshold below the exact slack: a cut violated beyond it, with its row.
            threshold = 0.5 * excess
            c, cut = oracle.separate(alpha, threshold)
            basis, beta, A = cut
            g = expansion_vector(basis, beta, n)
            np.testing.assert_allclose(A, K @ g, rtol=1e-10, atol=1e-12)
            assert c - g @ K @ w > threshold
            cross, own = oracle.gram_row(cut)
            np.testing.assert_allclose(cross, np.array(kept).reshape(-1, n) @ K @ g, rtol=1e-10)
            assert own == pytest.approx(g @ K @ g, rel=1e-10)
            oracle.add(cut)
            kept.append(g)
            rows, coef = oracle.expansion(rng.uniform(0, 1, len(kept)))
            assert np.all(coef != 0) and np.all(np.diff(rows) > 0)
    assert sampled >= 2


def test_linear_time_cut_drawn_past_the_threshold_is_violated_past_it_with_costs():
    """The docstring's "redrawn until it is violated": the returned cut's own violation
    c − w·g exceeds the threshold it was drawn for (holds with unit costs, above)."""
    below = 0
    for seed in range(10):
        X, y, costs, K = sampled_setup(seed, n=10)
        n = len(y)
        oracle = LinearTimeOracle(X, y, KERNEL, 3, np.random.default_rng(seed), costs=costs)
        kept = []
        rng = np.random.default_rng(100 + seed)
        for _ in range(4):
            alpha = rng.uniform(0.0, 0.02, len(kept))
            w = alpha @ np.array(kept) if kept else np.zeros(n)
            oracle.separate(alpha, np.inf)  # the exact slack, for the threshold
            threshold = 0.9 * oracle.exact_excess
            c, cut = oracle.separate(alpha, threshold)
            g = expansion_vector(cut[0], cut[1], n)
            below += not c - g @ K @ w > threshold
            oracle.gram_row(cut)
            oracle.add(cut)
            kept.append(g)
    assert below == 0
