"""Kernel SVMs trained with sampled cutting planes (Yu & Joachims, *Training Structural
SVMs with Kernels Using Sampled Cuts*, KDD 2008), on the engine's 1-slack loop.

Binary classification with Ψ(x, y) = 50·y·φ(x) and Δ = 100·[y ≠ ŷ], the scales of
:class:`cpsvm.engine.oracles.KernelCutOracle` and SVMperf: a flipped label gives
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
the training time, far more than the master QP (``benchmarks/bench_sampled.py``). The two
oracles are :mod:`cpsvm.engine.sampled_cuts`; this module is the training function.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

import numpy as np

from ..data import Dataset
from ..engine.cutting_plane import CuttingPlaneParams, Progress, one_slack
from ..engine.magnitudes import c_bound, check_c
from ..engine.sampled_cuts import ConstantTimeOracle, LinearTimeOracle
from ..kernels import check_kernel_values, kernel_diagonal
from ..models import KernelModel
from ..params.resolved import Resolved, as_given, resolved
from ..params.sampled import SampledParams
from ..params.shared import class_weights, training_classes, weighed
from ..problems import check_binary_labels
from ..threads import thread_count


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


def train(dataset: Dataset, run: Resolved | SampledParams, *, callback=None, should_stop=None):
    """Train a kernel SVM with sampled cuts by ``run`` (a Params is checked first);
    returns ``(KernelModel, SampledInfo)``.

    ``callback`` receives a :class:`SampledProgress` after every iteration;
    ``should_stop()`` returning True ends training after the current iteration (the
    model so far is returned, status "interrupted"). The run uses ``params.n_threads``
    numba threads and leaves the caller's count as it was.
    """
    run = resolved(run, dataset, settings)
    params = run.params
    with thread_count(params.n_threads), c_bound(params.C):
        return _train(dataset, params, run.classes, callback=callback, should_stop=should_stop)


def settings(dataset: Dataset, params: SampledParams) -> Resolved:
    """The run's settings: the Params as given, and the training set's classes when class
    weights are given (a fold's part is weighed knowing them)."""
    return replace(as_given(dataset, params), classes=training_classes(dataset, params))


def _train(dataset: Dataset, params: SampledParams, classes, *, callback=None, should_stop=None):
    check_binary_labels(dataset)
    check_kernel_values(params.kernel, dataset)
    # C against the data before any work: C_i = C·cost_i/n, |δΨ_i| <= sqrt(k(x_i, x_i))
    # up to the problem's scale (each cut's norm is checked exactly as it is made)
    factors = dataset.cost_factors(class_weights(params), classes)
    n = dataset.n_examples
    unit = (np.ones(n) if factors is None else factors) / max(n, 1)
    check_c(params.C, unit, np.sqrt(np.abs(kernel_diagonal(params.kernel, dataset.X))))
    rng = np.random.default_rng(params.seed)
    const = params.algorithm == "const"
    oracle_class = ConstantTimeOracle if const else LinearTimeOracle
    oracle = oracle_class(
        dataset.X, dataset.y, params.kernel, params.sample_size, rng, costs=factors
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
    weighed(model, dataset, params, classes)
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
