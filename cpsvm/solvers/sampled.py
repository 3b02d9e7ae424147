"""Kernel SVMs trained with sampled cutting planes (Yu & Joachims, *Training Structural
SVMs with Kernels Using Sampled Cuts*, KDD 2008), on the engine's 1-slack loop.

Binary classification with Ψ(x, y) = 50·y·φ(x) and Δ = 100·[y ≠ ŷ], the scales of
:class:`cpsvm.engine.cuts.KernelCutOracle` and SVMperf: a flipped label gives
δΨ = 100·y·φ(x), ``C`` is SVMperf's (C_light = C·100/n) and the engine's primal is
SVMlight's objective ½|w|² + C_light·Σ hinge. Every cut is a kernel expansion
g = Σ_j β_j φ(x_j) over a few *basis examples* j:

* ``algorithm="const"`` — constant time (Algorithm 2): each cut is built from r
  examples drawn uniformly, c = 100·|F|/r and β_j = 100·y_j/r over the drawn examples F
  the current w gets wrong (margin below 1). Scoring the r draws needs their kernels
  with the union of the kept cuts' basis examples, which does not grow with n. The loop
  stops once p consecutive drawn cuts are not violated by more than ε.
* ``algorithm="linear"`` — linear time (Algorithm 3): every iteration scores all n
  examples from the table A_ki = g_k·φ(x_i) (no kernel evaluation), which gives the exact
  cut (c′, g′) over the set I of examples with non-zero loss; its excess c′ − w·g′ is the
  stop test. The cut that enters the QP draws r examples of I, β_j = 100·y_j·|I|/(n·r)
  (so that its expectation is g′, and its offset equals c′), redrawn until it is
  violated — cheap, the draws are scored from A — or the exact cut is satisfied. The
  new cut's row of A costs n·r kernel evaluations; its Gram row is read from A.

SVMlight's ``cost:`` factors multiply each example's weight: its term of c and its β
(a drawn example stands for its cost, as in the exact cut).

With r ≥ n (const) or r ≥ |I| (linear) the cuts are exact and both algorithms are the
exact 1-slack algorithm. Kernel evaluations — the paper's measure of work — are
counted. Kernel rows come from :class:`cpsvm.kernel_rows.RowKernel`; they are most of
the training time, far more than the master QP (``benchmarks/bench_sampled.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np
import scipy.sparse as sp

from ..conventions import LOSS_SCALE, PSI_SCALE
from ..data import Dataset
from ..engine.cuts import RowTable
from ..engine.cutting_plane import CuttingPlaneParams, Progress, one_slack
from ..engine.hinge import hinge_violators
from ..engine.threads import thread_count
from ..errors import InputError
from ..kernel_rows import RowKernel
from ..kernels import Kernel
from ..models import KernelModel
from ..problems import check_binary_labels

ALGORITHMS = ("const", "linear")
DELTA_PSI_SCALE = 2.0 * PSI_SCALE  # |δΨ| / |φ(x)| for a flipped label
# Algorithm 3 redraws a sample that is not violated; draws are scored from the table A
# (no kernel evaluation), so many are affordable. Past this, the most violated is used.
MAX_DRAWS = 1000


@dataclass
class SampledParams:
    """Options of :func:`train` (the ``sampled_learn`` flags).

    ``epsilon`` is in the engine's units, cp_learn's ``-e``: the loss is 100 per wrong
    example, so ε = 1 is the paper's ε = 0.01 on the zero/one loss.
    """

    C: float
    epsilon: float = 1.0  # sampled_learn's default (man page, DEFAULTS)
    algorithm: str = "linear"  # "const" (Algorithm 2) or "linear" (Algorithm 3)
    sample_size: int = 400  # r
    patience: int = 4  # p: const stops after p unviolated draws in a row
    kernel: Kernel = field(default_factory=Kernel)
    max_iterations: int = 100000
    max_idle: int = 20  # drop a cut whose α stayed 0 for this many QPs
    seed: int = 0
    time_limit: float = math.inf
    n_threads: int | None = None  # numba threads for the run (None: the caller's)

    def validate(self):
        if not self.C > 0:
            raise InputError(f"expected C > 0 (-c), got {self.C:g}")
        if not self.epsilon > 0:
            raise InputError(f"expected epsilon > 0 (-e), got {self.epsilon:g}")
        if self.algorithm not in ALGORITHMS:
            raise InputError(f"expected --algorithm const or linear, got {self.algorithm!r}")
        if self.sample_size < 1:
            raise InputError(f"expected a sample size --r >= 1, got {self.sample_size}")
        if self.patience < 1:
            raise InputError(
                f"expected -p >= 1 (unviolated draws before stopping), got {self.patience}"
            )
        if self.max_iterations < 1:
            raise InputError(f"expected -# >= 1, got {self.max_iterations}")
        if self.max_idle < 1:
            raise InputError(f"expected --max-idle >= 1, got {self.max_idle}")


@dataclass
class SampledProgress(Progress):
    """The engine's per-iteration report plus the kernel evaluations so far."""

    kernel_evaluations: int = 0


@dataclass
class SampledInfo:
    algorithm: str
    n_examples: int
    sample_size: int
    result: object  # engine CuttingPlaneResult
    norm_w: float
    n_sv: int  # basis examples in the model (non-zero coefficient)
    n_cuts: int  # cuts with α > 0
    kernel_evaluations: int  # the algorithm's (the paper's measure of work)
    kernel_values_computed: int  # values formed: identical examples share theirs
    draws: int  # samples drawn (linear redraws unviolated ones)
    primal_is_estimate: bool  # const: ξ measured on a sample, not on all examples
    notes: list = field(default_factory=list)


def train(dataset: Dataset, params: SampledParams, *, callback=None, should_stop=None):
    """Train a kernel SVM with sampled cuts; returns ``(KernelModel, SampledInfo)``.

    ``callback`` receives a :class:`SampledProgress` after every iteration;
    ``should_stop()`` returning True ends training after the current iteration (the
    model so far is returned, status "interrupted"). The run uses ``params.n_threads``
    numba threads and leaves the caller's count as it was.
    """
    with thread_count(params.n_threads):
        return _train(dataset, params, callback=callback, should_stop=should_stop)


def _train(dataset: Dataset, params: SampledParams, *, callback=None, should_stop=None):
    params.validate()
    check_binary_labels(dataset)
    rng = np.random.default_rng(params.seed)
    const = params.algorithm == "const"
    oracle_class = ConstantTimeOracle if const else LinearTimeOracle
    oracle = oracle_class(
        dataset.X, dataset.y, params.kernel, params.sample_size, rng, costs=dataset.checked_cost()
    )
    engine_params = CuttingPlaneParams(
        C=params.C,
        epsilon=params.epsilon,
        max_iterations=params.max_iterations,
        max_idle=params.max_idle,
        time_limit=params.time_limit,
        use_cache=False,
        # Algorithm 3's stop test is exact: a second look at the same w adds nothing.
        patience=params.patience if const else 1,
        # No stopping on the gap: sampled cuts are not constraints of the 1-slack
        # problem (weights |I|/(n·r), not 1/n), so the working set's dual is no lower
        # bound, and const's primal, its ξ measured on a sample, no upper bound.
        tol_abs=-math.inf,
        tol_rel=-math.inf,
    )

    report = None
    if callback is not None:

        def report(progress):
            callback(
                SampledProgress(
                    **{f.name: getattr(progress, f.name) for f in fields(Progress)},
                    kernel_evaluations=oracle.kernel.evaluations,
                )
            )

    result = one_slack(oracle, engine_params, callback=report, should_stop=should_stop)
    rows, coef = oracle.expansion(result.alpha)
    nonzero = coef != 0
    rows, coef = rows[nonzero], coef[nonzero]
    n = dataset.n_examples
    model = KernelModel(dataset.X[rows], coef, 0.0, params.kernel, n_train=n)
    alpha = result.alpha
    norm_w = (
        math.sqrt(max(0.0, 2.0 * (result.primal - params.C * result.xi))) if len(alpha) else 0.0
    )
    notes = []
    if params.sample_size >= n:
        notes.append(f"sample size {params.sample_size} >= {n} examples: every cut is exact")
    info = SampledInfo(
        params.algorithm,
        n,
        params.sample_size,
        result,
        norm_w,
        len(rows),
        int(np.count_nonzero(alpha)),
        oracle.kernel.evaluations,
        oracle.kernel.computed,
        oracle.draws,
        primal_is_estimate=const and params.sample_size < n,
        notes=notes,
    )
    return model, info


def _draw_sorted(rng, population: int, size: int) -> np.ndarray:
    """``size`` distinct positions of ``range(population)``, uniformly, in order."""
    return np.sort(rng.choice(population, size, replace=False))


# -- Algorithm 2: constant time ---------------------------------------------------------


class ConstantTimeOracle:
    """Cuts from r examples drawn uniformly (Yu & Joachims, Algorithm 2).

    A cut is kept as its basis examples F (sorted) and β. Scoring a draw needs
    k(x_drawn, x_u) for u in the union U of the kept cuts' bases (w is an expansion over
    U): r·|U| evaluations, bounded by r²·(working-set size) whatever n is. The Gram row
    of a new cut, g_k·g = Σ_u (β of u in cut k)·(g·φ(x_u)), costs |U|·|F| more, and its
    own |F|² — cheaper than keeping every kept cut's products with the draws (a
    contraction with all the cuts' coefficients per drawn example dominated the time).
    """

    def __init__(self, X, y, kernel, sample_size, rng, costs=None):
        self.kernel = RowKernel(X, kernel)
        self.y = np.asarray(y, dtype=np.float64)
        self.n = len(self.y)
        self.costs = np.ones(self.n) if costs is None else np.asarray(costs, np.float64)
        self.sample_size = min(sample_size, self.n)
        self.rng = rng
        self.cuts = []  # (basis rows, β) per kept cut
        self._union = None  # cached (U, coefficients), see _union_expansion
        self.oracle_calls = 0
        self.draws = 0

    def _draw(self):
        self.draws += 1
        if self.sample_size >= self.n:
            return np.arange(self.n)
        return _draw_sorted(self.rng, self.n, self.sample_size)

    def _union_expansion(self):
        """The union U of the bases (sorted rows) and the sparse cuts × |U| matrix of
        coefficients: entry (k, u) is β of U's example u in cut k."""
        if self._union is None:
            rows = np.concatenate([r for r, _ in self.cuts])
            betas = np.concatenate([b for _, b in self.cuts])
            cut_of = np.repeat(np.arange(len(self.cuts)), [len(r) for r, _ in self.cuts])
            union, position = np.unique(rows, return_inverse=True)
            coefficients = sp.csr_matrix(
                (betas, (cut_of, position.ravel())), shape=(len(self.cuts), len(union))
            )
            self._union = (union, coefficients)
        return self._union

    def separate(self, alpha, threshold=None):
        drawn = self._draw()
        self.oracle_calls += len(drawn)
        scores = np.zeros(len(drawn))
        if self.cuts:
            scores = self.kernel.times(drawn, *self.expansion(alpha))
        # Flipped: margin y·score below 1 (a = 1, b = 1).
        flipped, _ = hinge_violators(self.y[drawn], scores, 1.0, 1.0)
        basis_rows = drawn[flipped]
        cost = self.costs[basis_rows]
        beta = DELTA_PSI_SCALE * cost * self.y[basis_rows] / len(drawn)
        c = LOSS_SCALE * float(np.sum(cost)) / len(drawn)
        return c, (basis_rows, beta)

    def separate_cached(self, alpha, threshold):
        return None

    def gram_row(self, cut):
        basis_rows, beta = cut
        if len(basis_rows) == 0:
            return np.zeros(len(self.cuts)), 0.0
        self_product = float(beta @ self.kernel.times(basis_rows, basis_rows, beta))
        if not self.cuts:
            return np.zeros(0), self_product
        union, coefficients = self._union_expansion()
        return coefficients @ self.kernel.times(union, basis_rows, beta), self_product

    def add(self, cut):
        self.cuts.append(cut)
        self._union = None

    def keep(self, mask):
        self.cuts = [cut for cut, kept in zip(self.cuts, mask) if kept]
        self._union = None

    def expansion(self, alpha):
        """(rows, coefficient) of w = Σ_k α_k g_k over the union of the bases."""
        if not self.cuts:
            return np.zeros(0, np.int64), np.zeros(0)
        union, coefficients = self._union_expansion()
        return union, coefficients.T @ np.asarray(alpha, dtype=np.float64)


# -- Algorithm 3: linear time ------------------------------------------------------------


class LinearTimeOracle:
    """Exact argmax over all n examples, sampled cuts (Yu & Joachims, Algorithm 3).

    Keeps A_ki = g_k·φ(x_i) for every kept cut k and example i (O(T·n) memory): the
    scores w·φ(x_i) = Σ_k α_k A_ki need no kernel evaluation, neither do the draws'
    violations nor the Gram row G_k,new = Σ_j β_j A_kj (§4.2).
    """

    def __init__(self, X, y, kernel, sample_size, rng, costs=None):
        self.kernel = RowKernel(X, kernel)
        self.y = np.asarray(y, dtype=np.float64)
        self.n = len(self.y)
        self.costs = np.ones(self.n) if costs is None else np.asarray(costs, np.float64)
        self.sample_size = sample_size
        self.rng = rng
        self._A = RowTable(self.n)
        self.cuts = []  # (basis rows, β) per kept cut
        self.exact_excess = None
        self.oracle_calls = 0
        self.draws = 0

    def scores(self, alpha):
        return self._A.combine(alpha) if self._A.size else np.zeros(self.n)

    def separate(self, alpha, threshold):
        self.oracle_calls += self.n
        # I: non-zero loss, margin y·score below 1 (a = 1, b = 1); hinge 1 − margin.
        violators, hinge = hinge_violators(self.y, self.scores(alpha), 1.0, 1.0)
        cost = self.costs[violators]
        hinge = cost * hinge  # each example's weighted hinge
        n_violators = len(violators)
        c = LOSS_SCALE * float(np.sum(cost)) / self.n
        self.exact_excess = LOSS_SCALE * float(np.sum(hinge)) / self.n  # c′ − w·g′
        if n_violators <= self.sample_size:
            basis_rows = violators  # the exact cut
            scale = 1.0 / self.n
            self.draws += 1
        else:
            scale = n_violators / (self.n * self.sample_size)
            best, best_excess = None, -math.inf
            attempts = 1 if self.exact_excess <= threshold else MAX_DRAWS
            for _ in range(attempts):
                chosen = _draw_sorted(self.rng, n_violators, self.sample_size)
                self.draws += 1
                excess = LOSS_SCALE * scale * float(np.sum(hinge[chosen]))
                if excess > best_excess:
                    best, best_excess = chosen, excess
                if excess > threshold:
                    break
            basis_rows = violators[best]
        beta = DELTA_PSI_SCALE * scale * self.costs[basis_rows] * self.y[basis_rows]
        # The new row of A only matters if the cut can enter the working set.
        A_new = self._row(basis_rows, beta) if self.exact_excess > threshold else None
        return c, (basis_rows, beta, A_new)

    def _row(self, basis_rows, beta):
        if len(basis_rows) == 0:
            return np.zeros(self.n)
        return self.kernel.times(None, basis_rows, beta)

    def separate_cached(self, alpha, threshold):
        return None

    def gram_row(self, cut):
        basis_rows, beta, A_new = cut
        cross = self._A.columns_times(basis_rows, beta)
        if A_new is not None:
            return cross, float(beta @ A_new[basis_rows])
        if len(basis_rows) == 0:
            return cross, 0.0
        return cross, float(beta @ self.kernel.times(basis_rows, basis_rows, beta))

    def add(self, cut):
        basis_rows, beta, A_new = cut
        if A_new is None:
            A_new = self._row(basis_rows, beta)
        self._A.append(A_new)
        self.cuts.append((basis_rows, beta))

    def keep(self, mask):
        mask = np.asarray(mask, dtype=bool)
        self._A.keep(mask)
        self.cuts = [cut for cut, k in zip(self.cuts, mask) if k]

    def expansion(self, alpha):
        """(rows, coefficient) of w = Σ_k α_k g_k; an example in several cuts is merged."""
        coef = np.zeros(self.n)
        for a, (rows, beta) in zip(alpha, self.cuts):
            coef[rows] += a * beta
        rows = np.flatnonzero(coef)
        return rows, coef[rows]
