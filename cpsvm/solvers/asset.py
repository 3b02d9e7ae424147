"""ASSET and ASSET* (Lee & Wright): stochastic subgradient training on a low-dimensional
approximation V_i = φ(x_i) of the kernel's feature map.

    minimise  λ/2·|γ|² + (1/m)·Σ_i c_i·ℓ(y_i, V_i·γ + b)

λ = 1/(C·m) for SVMlight's C; c_i the example's factor of C (its ``cost:`` token times
its class's weight, cpsvm.data.Dataset.cost_factors; 1 without them). φ is the Nyström
map of ``basis_size`` sampled training examples (eigenvalues of K_SS above
``eig_threshold`` kept), random Fourier features (RBF only, D = ``basis_size``) or, with
``approx="none"`` and the linear kernel, the input features themselves (ASSET* is then
Pegasos).

Randomness: one ``numpy.random.default_rng(seed)`` draws, in this order, the
approximation (the basis, ``choice(m, s, replace=False)`` sorted; or Ω then ν), the
examples that estimate D_G (ASSET only, ``choice(m, min(M, m), replace=False)``), and one
``permutation(m)`` per epoch, whose consecutive mini-batches are the iterations.

Memory: V's m×D float64 rows are kept after the first epoch when they fit in
``memory_mb``; otherwise each epoch computes them again, a block at a time.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..data import Dataset
from ..engine.gradient_descent import huber_gd
from ..engine.magnitudes import check_domain, check_small_c
from ..engine.margin_bounds import HUBER, SortedMargins
from ..engine.sgd import EPSILON_INSENSITIVE, HINGE, SGDSettings, run_sgd
from ..errors import InputError
from ..kernel_rows import row_sq_norms
from ..kernels import RBF, Kernel, check_kernel_values
from ..models import KernelModel, LinearModel, RandomFeaturesModel, model_kind_name, start_weights
from ..params.asset import (
    BASIS_SIZE,
    HALF,
    MIN_EPOCHS,
    OBJECTIVE_SAMPLE,
    AssetParams,
)
from ..params.resolved import Resolved, as_given, resolved
from ..params.shared import class_weights, training_classes, weighed
from ..threads import thread_count


@dataclass
class AssetInfo:
    n_examples: int
    lam: float
    dim: int  # D, the approximation's dimension
    n_dropped: int  # Nyström eigenvalues below ε_d
    objective: float  # λ/2|γ|² + mean loss at the model, exact
    training_error: float  # error rate (classification) or MSE (regression)
    norm_gamma: float
    result: object  # engine.sgd.SGDResult
    radius: float
    b_radius: float
    step_scale: float
    average_last: int | str  # the averaging window used (ASSET; HALF)
    cached: bool  # V's rows kept in memory after the first epoch
    seconds_map: float  # building the approximation
    n_sample: int = 0  # training examples the stopping rule measures on
    kernel_evaluations: int = 0
    notes: list = field(default_factory=list)
    basis_size: int = 0  # s (Nyström) or D (random features) used: --k resolved
    batch: int = 1  # the mini-batch size used: -k, at most the examples

    @property
    def c_light(self) -> float:
        return 1.0 / (self.lam * self.n_examples)

    @property
    def svmlight_objective(self) -> float:
        """½|γ|² + C·Σ ℓ with C = 1/(λm): the objective divided by λ."""
        return self.objective / self.lam


class _CachedRows:
    """The engine's dense row source: φ of training rows, kept once computed when
    ``cache`` (the whole m×D array fits the memory budget)."""

    sparse = False

    def __init__(self, rows_of, m: int, dim: int, cache: bool):
        self.rows_of = rows_of
        self.dim = dim
        self.cache = np.empty((m, dim)) if cache else None
        self.sq = np.empty(m) if cache else None
        self.have = np.zeros(m, dtype=bool) if cache else None

    def block(self, rows):
        rows = np.asarray(rows, dtype=np.int64)
        if self.cache is None:
            V = self.rows_of(rows)
            return V, np.arange(len(rows)), np.einsum("ij,ij->i", V, V)
        missing = rows[~self.have[rows]]
        if len(missing):
            V = self.rows_of(missing)
            self.cache[missing] = V
            self.sq[missing] = np.einsum("ij,ij->i", V, V)
            self.have[missing] = True
        return self.cache, rows, self.sq

    def outputs(self, sample: slice, gamma) -> np.ndarray:
        """V_i·γ for the rows of ``sample`` (a slice): a view of the kept rows (computed
        first where missing), or the rows computed again."""
        if self.cache is None:
            return _recomputed_outputs(self.rows_of, sample, gamma)
        self.block(np.arange(len(self.have))[sample])
        return self.cache[sample] @ gamma


def _recomputed_outputs(rows_of, sample: slice, gamma, block_rows: int = 4096):
    rows = np.arange(sample.stop)[sample]
    return np.concatenate(
        [rows_of(rows[lo : lo + block_rows]) @ gamma for lo in range(0, len(rows), block_rows)]
    )


class _SparseRows:
    """The input features themselves (--approx none)."""

    sparse = True

    def __init__(self, X):
        X = X.tocsr()
        X.sort_indices()
        self.indptr = X.indptr.astype(np.int64)
        self.indices = X.indices.astype(np.int64)
        self.data = np.ascontiguousarray(X.data, dtype=np.float64)
        self.dim = X.shape[1]
        self.row_sq = np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
        self.X = X

    def outputs(self, sample: slice, gamma) -> np.ndarray:
        return np.asarray(self.X[sample] @ gamma).ravel()


def train(dataset: Dataset, run: Resolved | AssetParams, callback=None, should_stop=None):
    """Train on ``dataset`` by ``run`` (a Params is checked first); returns (model,
    AssetInfo). ``callback(check)`` gets each :class:`cpsvm.engine.sgd.Check` (--method
    gd: each :class:`GDStep`); ``should_stop()`` is asked at each check."""
    run = resolved(run, dataset, settings)
    params = run.params
    with thread_count(params.n_threads):
        return _train(dataset, params, callback, should_stop, run.classes)


def settings(dataset: Dataset, params: AssetParams) -> Resolved:
    """The run's settings: the Params as given, and the training set's classes when class
    weights are given (a fold's part is weighed knowing them)."""
    return replace(as_given(dataset, params), classes=training_classes(dataset, params))


def _check_targets(data: Dataset, task: str, what: str):
    y = data.y
    if task == "regression":
        bad = np.flatnonzero(~np.isfinite(y))
        expected = "a finite regression target"
    else:
        bad = np.flatnonzero((y != 1) & (y != -1))
        expected = "a target +1 or -1"
    if len(bad):
        i = int(bad[0])
        raise InputError(
            f"expected {expected}, got {y[i]:g}", source=data.source, line=data.line_of(i)
        )
    if task == "classification" and what == "training" and len(np.unique(y)) < 2:
        raise InputError(
            f"expected examples of both classes, got only {y[0]:+g}", source=data.source
        )


def _train(dataset: Dataset, params: AssetParams, callback, should_stop, classes=None):
    m = dataset.n_examples
    if m == 0:
        raise InputError("expected at least one training example", source=dataset.source)
    _check_targets(dataset, params.task, "training")
    # c_i: None when every example's factor is 1 (the unweighted steps, bit for bit)
    factors = dataset.cost_factors(class_weights(params), classes)
    if params.method == "gd":
        model, info = _train_gd(dataset, params, callback, should_stop, factors)
        return weighed(model, dataset, params, classes), info
    check_kernel_values(params.kernel, dataset)
    notes = []
    validation = _checked_validation(dataset, params, notes)
    if params.lam is None:
        check_small_c(params.C, m)
    lam = params.lambda_for(m)
    rng = np.random.default_rng(params.seed)
    regression = params.task == "regression"
    # Regression trains on centred targets and puts their mean into b: the bounds and
    # the step size then follow the targets' spread, not their distance from 0.
    offset = float(np.mean(dataset.y)) if regression else 0.0
    y = np.ascontiguousarray(dataset.y - offset, dtype=np.float64)

    started = time.perf_counter()
    basis_size = _basis_size(params, m, notes)
    feature_map, n_dropped = _feature_map(dataset, params, basis_size, rng, notes)
    source, kernel_rows, cached, max_sq = _row_source(dataset, feature_map, params)
    # A mini-batch above the examples is all of them (a step divides by its rows: the
    # same steps), and no larger scratch than they need.
    batch = min(params.batch, m)
    seconds_map = time.perf_counter() - started

    _check_domain(y, lam, max_sq, params, m, regression, factors)
    radius, b_radius = _radii(y, lam, max_sq, params, regression, factors)
    step_scale = 1.0
    if not params.star:
        step_scale = _step_scale(
            source, kernel_rows, (y, factors), rng, radius, b_radius, params, regression
        )

    average_last = _average_last(params, m)
    settings = _sgd_settings(
        params, lam, regression, batch, average_last, (radius, b_radius), step_scale,
        dataset.X.nnz, factors,
    )  # fmt: skip

    validate = None
    if validation is not None:
        validate = _validator(
            validation,
            feature_map,
            params,
            params.memory_mb * 2**20 - (m * source.dim * 8 if cached else 0),
            regression,
            offset,
        )
    sample = slice(0, m, -(-m // OBJECTIVE_SAMPLE))
    rule_objective = _sample_objective(
        source, y, sample, lam, params.tube if regression else None, factors
    )
    start = _start(params.init_model, feature_map, dataset, regression, offset)
    result = run_sgd(
        source,
        y,
        settings,
        rng,
        validate=validate,
        objective=rule_objective,
        callback=callback,
        should_stop=should_stop,
        start=start,
    )
    gamma, b = result.gamma, result.b + offset
    objective, training_error = _training_fit(source, gamma, b, y + offset, lam, params, m, factors)

    model = weighed(_model(feature_map, gamma, b, params, dataset, m), dataset, params, classes)
    info = AssetInfo(
        n_examples=m,
        lam=lam,
        dim=source.dim,
        n_dropped=n_dropped,
        objective=objective,
        training_error=training_error,
        norm_gamma=float(np.linalg.norm(gamma)),
        result=result,
        radius=radius,
        b_radius=b_radius,
        step_scale=step_scale,
        average_last=average_last,
        cached=cached,
        seconds_map=seconds_map,
        kernel_evaluations=0 if kernel_rows is None else kernel_rows.kernel_evaluations,
        notes=notes,
        n_sample=len(range(m)[sample]),
        basis_size=basis_size,
        batch=batch,
    )
    return model, info


def _sgd_settings(params, lam, regression, batch, average_last, radii, step_scale, nnz, weights):
    """The engine's SGDSettings of the run (``weights`` the examples' factors of their
    loss, None: all 1)."""
    radius, b_radius = radii
    return SGDSettings(
        lam=lam,
        loss=EPSILON_INSENSITIVE if regression else HINGE,
        epsilon=params.tube,
        star=params.star,
        intercept=not params.star,
        batch=batch,
        epochs=params.epochs,
        average_last=0 if average_last == HALF else average_last,
        average_half=average_last == HALF,
        radius=radius,
        b_radius=b_radius,
        step_scale=step_scale,
        tolerance=params.tolerance,
        min_epochs=MIN_EPOCHS,
        margin_bounds=params.bounds(nnz),
        weights=weights,
    )


def _checked_validation(dataset, params: AssetParams, notes):
    """The validation set (None: none) checked, cut to the training data's features."""
    validation = params.validation
    if validation is None:
        return None
    _check_targets(validation, params.task, "validation")
    check_kernel_values(params.kernel, validation)
    validation, dropped = validation.with_n_features(dataset.n_features)
    if dropped:
        notes.append(
            f"{dropped} validation feature values above the training data's "
            f"highest feature index ({dataset.n_features}) ignored"
        )
    return validation


def _basis_size(params: AssetParams, m: int, notes) -> int:
    """s of the Nyström basis (D of random features): --k, by default min(BASIS_SIZE, m);
    a Nyström --k above a small file's (or a fold's) examples is all of them, said."""
    basis_size = BASIS_SIZE if params.basis_size is None else params.basis_size
    if params.approx == "nystrom" and basis_size > m:
        if params.basis_size is not None:
            notes.append(f"--k {basis_size} > the {m} training examples: s = {m}")
        basis_size = m
    return basis_size


def _feature_map(dataset, params: AssetParams, basis_size: int, rng, notes):
    """The kernel approximation of ``basis_size`` components (None: the input features
    themselves) and how many of the Nyström basis's eigenvalues it dropped."""
    from ..approx import NystromMap, RandomFourierMap, check_random_features

    m = dataset.n_examples
    if params.approx == "rff":
        check_random_features(params.kernel, dataset.X)
        feature_map = RandomFourierMap.draw(params.kernel, dataset.n_features, basis_size, rng)
        return feature_map, 0
    if params.approx != "nystrom":
        return None, 0
    basis = np.sort(rng.choice(m, basis_size, replace=False))
    feature_map = NystromMap(params.kernel, dataset.X[basis], threshold=params.eig_threshold)
    n_dropped = feature_map.n_dropped
    if n_dropped:
        notes.append(
            f"{n_dropped} of {basis_size} eigenvalues of the basis kernel "
            f"matrix are at most --eig-threshold {params.eig_threshold:g}: "
            f"D = {feature_map.n_components}"
        )
    return feature_map, n_dropped


def _row_source(dataset, feature_map, params: AssetParams):
    """The rows the engine steps over (the input features', or the feature map's, cached
    when they fit in --memory), the map's rows (None: none), whether they are cached,
    and a bound on a row's squared norm."""
    from ..approx import FeatureRows

    if feature_map is None:
        source = _SparseRows(dataset.X)
        return source, None, True, float(np.max(source.row_sq, initial=0.0))
    m = dataset.n_examples
    kernel_rows = FeatureRows(feature_map, dataset.X)
    dim = feature_map.n_components
    cached = m * dim * 8 <= params.memory_mb * 2**20
    source = _CachedRows(kernel_rows, m, dim, cached)
    if params.approx == "rff":
        max_sq = 2.0  # (2/D)·Σ cos² ≤ 2
    else:
        # The Nyström approximation never exceeds the kernel's diagonal.
        max_sq = float(np.max(_kernel_diagonal(params.kernel, dataset.X), initial=0.0))
    return source, kernel_rows, cached, max_sq


def _check_domain(y, lam, max_sq, params: AssetParams, m, regression, factors=None):
    """The domain's radius against the data before any work (engine.magnitudes'
    check_domain), R = sqrt(2·at_zero/λ) formed without C·m."""
    at_zero = _objective_at_zero(y, params, regression, factors)
    if not regression:
        at_zero *= 0.5  # (the hinge's R: the dual's λ|γ*|² <= mean c_i)
    root = math.sqrt(params.C) * math.sqrt(m) if params.lam is None else 1.0 / math.sqrt(lam)
    check_domain(
        math.sqrt(2.0 * at_zero) * root, math.sqrt(max_sq), lam,
        params.C if params.lam is None else None,
    )  # fmt: skip


def _objective_at_zero(y, params: AssetParams, regression, factors=None) -> float:
    """The mean loss (1/m)·Σ c_i·ℓ_i at γ = 0, b = 0."""
    if regression:
        losses = np.maximum(0.0, np.abs(y) - params.tube)
        return float(np.mean(losses if factors is None else factors * losses))
    return 1.0 if factors is None else float(np.mean(factors))


def _radii(y, lam, max_sq, params: AssetParams, regression, factors=None):
    """(R, B) of X = {|γ| ≤ R, |b| ≤ B}: R from λ/2|γ*|² ≤ objective at 0 (hinge:
    Pegasos' 1/√λ, by the dual λ|γ*|² <= (1/m)·Σ α_i with α_i <= c_i); B from the
    intercept's optimality (all residuals beyond the margin on one side), 0 without an
    intercept (ASSET*)."""
    at_zero = _objective_at_zero(y, params, regression, factors)
    if regression:
        radius = math.sqrt(2.0 * at_zero / lam)
        b_radius = params.tube + float(np.max(np.abs(y))) + math.sqrt(max_sq) * radius
    else:
        radius = 1.0 / math.sqrt(lam) if factors is None else math.sqrt(at_zero / lam)
        b_radius = 1.0 + math.sqrt(max_sq) * radius
    if params.star:
        b_radius = 0.0
    return radius, b_radius


def _step_scale(
    source, kernel_rows, targets, rng, radius, b_radius, params: AssetParams, regression
):
    """ASSET's D_X/D_G, D_G estimated on a sample of the rows (``targets``: y and the
    c_i, None: all 1, which scale each row's subgradient)."""
    y, factors = targets
    m = len(y)
    sample = rng.choice(m, min(params.dg_samples, m), replace=False)
    if source.sparse:
        sq = source.row_sq[sample]
    else:
        V = kernel_rows(sample)
        sq = np.einsum("ij,ij->i", V, V)
    # d_l: |ℓ'| at the starting point (0, 0).
    d = (np.abs(y[sample]) > params.tube).astype(np.float64) if regression else np.ones(len(sample))
    if factors is None:
        dg = math.sqrt(float(np.mean(d * d * (sq + 1.0))))
    else:  # |c_i·ℓ'|, in the largest c_i's scale (no square overflows)
        top = float(np.max(factors[sample]))
        d = d * (factors[sample] / top)
        dg = top * math.sqrt(float(np.mean(d * d * (sq + 1.0))))
    if dg == 0.0:
        dg = math.sqrt(float(np.mean(sq + 1.0)))
    return math.sqrt(radius**2 + b_radius**2) / dg


def _training_fit(source, gamma, b, y, lam, params: AssetParams, m, factors=None):
    """The exact objective (the losses weighted by the c_i ``factors``) and training
    error of the model (γ, b)."""
    f = _decision_on_training(source, gamma, b, m)
    if params.task == "regression":
        losses = np.maximum(0.0, np.abs(f - y) - params.tube)
        error = float(np.mean((f - y) ** 2))
    else:
        losses = np.maximum(0.0, 1.0 - y * f)
        error = float(np.mean(np.where(f > 0, 1.0, -1.0) != y))
    if factors is not None:
        losses = factors * losses
    return 0.5 * lam * float(gamma @ gamma) + float(np.mean(losses)), error


def _sample_objective(source, y, sample: slice, lam: float, tube: float | None, factors=None):
    """objective(γ, b): λ/2|γ|² + the mean loss (hinge; with ``tube`` ε-insensitive;
    weighted by the c_i ``factors``) over the training examples of ``sample``, evenly
    spread over the data: what the stopping rule watches."""
    ys = y[sample]
    cs = None if factors is None else factors[sample]

    def objective(gamma, b):
        f = source.outputs(sample, gamma) + b
        losses = (
            np.maximum(0.0, 1.0 - ys * f)
            if tube is None
            else np.maximum(0.0, np.abs(f - ys) - tube)
        )
        if cs is not None:
            losses = cs * losses
        return 0.5 * lam * float(gamma @ gamma) + float(np.mean(losses))

    return objective


def _average_last(params: AssetParams, m: int) -> int | str:
    """ASSET's window; by default the last half of the iterations so far (see DEFAULTS):
    the paper's last 100 iterates swing between checks, and the ε-insensitive loss's
    iterates stay noisy far longer."""
    if params.average_last is not None:
        return params.average_last
    return HALF


def _kernel_diagonal(kernel: Kernel, X) -> np.ndarray:
    """k(x_i, x_i) for every row."""
    sq = row_sq_norms(X)
    if kernel.kind == RBF:
        return np.ones(len(sq))
    return np.array(kernel.from_dots(sq[None, :].copy(), None, None)[0])


def _decision_on_training(source, gamma, b, m, block_rows=4096) -> np.ndarray:
    if source.sparse:
        return np.asarray(source.X @ gamma).ravel() + b
    out = np.empty(m)
    for lo in range(0, m, block_rows):
        rows = np.arange(lo, min(lo + block_rows, m))
        V, local, _ = source.block(rows)
        out[lo : lo + len(rows)] = V[local] @ gamma
    return out + b


def _validator(validation: Dataset, feature_map, params, budget_bytes, regression, offset):
    """error(γ, b) on the validation set: the error rate, or the mean squared error
    (b in the frame of targets less ``offset``)."""
    from ..approx import FeatureRows

    yv = validation.y
    if feature_map is None:
        X = validation.X

        def values(gamma, b):
            return np.asarray(X @ gamma).ravel() + b
    else:
        rows = FeatureRows(feature_map, validation.X)
        n = validation.n_examples
        if n * rows.dim * 8 <= budget_bytes:
            V = rows(np.arange(n))

            def values(gamma, b):
                return V @ gamma + b
        else:

            def values(gamma, b):
                out = np.empty(n)
                for lo in range(0, n, 4096):
                    hi = min(lo + 4096, n)
                    out[lo:hi] = rows(np.arange(lo, hi)) @ gamma
                return out + b

    def error(gamma, b):
        f = values(gamma, b + offset)
        if regression:
            return float(np.mean((f - yv) ** 2))
        return float(np.mean(np.where(f > 0, 1.0, -1.0) != yv))

    return error


def _start(model, feature_map, dataset: Dataset, regression: bool, offset: float):
    """(γ_0, b_0) of --init-model in the engine's terms (b the intercept, SVMlight's
    threshold negated, regression's target mean taken out), or None. The model must be
    of the run's own kind: the input features' linear model (--approx none), or the
    same feature map's (random features drawn alike, the same Nyström basis)."""
    from ..approx import NystromMap

    if model is None:
        return None
    if feature_map is None:
        (gamma,) = start_weights(model, (LinearModel,), dataset.n_features, dataset.feature_ids)
        return gamma, -model.b - offset
    if isinstance(feature_map, NystromMap):
        same = (
            type(model) is KernelModel
            and model.kernel == feature_map.kernel
            and model.support_vectors.shape == feature_map.basis.shape
            and (model.support_vectors != feature_map.basis).nnz == 0
        )
        if not same:
            raise InputError(
                "--init-model: expected a Nystrom model of this run's basis (the same data, "
                f"--k and --seed), got a {model_kind_name(model)} of another"
            )
        gamma = np.linalg.lstsq(feature_map.projection, model.coef, rcond=None)[0]
        return gamma, -model.b - offset
    same = (
        type(model) is RandomFeaturesModel
        and model.omega.shape == feature_map.omega.shape
        and np.array_equal(model.omega, feature_map.omega)
        and np.array_equal(model.nu, feature_map.nu)
        and (model.task == "regression") == regression
    )
    if not same:
        raise InputError(
            "--init-model: expected a random-features model of this run's map (the same "
            f"features, -g, --k and --seed), got a {model_kind_name(model)} of another"
        )
    return model.coef / feature_map.scale, -model.b - offset


def _model(feature_map, gamma, b, params: AssetParams, dataset: Dataset, m: int):
    """SVMlight's sign convention: f(x) = expansion - threshold, so threshold = -b."""
    from ..approx import NystromMap

    threshold = -float(b) if b != 0 else 0.0
    if feature_map is None:
        return LinearModel(w=np.asarray(gamma, dtype=np.float64).copy(), b=threshold, n_train=m)
    if isinstance(feature_map, NystromMap):
        return KernelModel(
            support_vectors=feature_map.basis,
            coef=feature_map.expansion_coef(gamma),
            b=threshold,
            kernel=params.kernel,
            n_train=m,
        )
    return RandomFeaturesModel(
        omega=feature_map.omega,
        nu=feature_map.nu,
        coef=feature_map.scale * gamma,
        b=threshold,
        gamma=params.kernel.gamma,
        n_train=m,
        task=params.task,
    )


@dataclass
class GDStep:
    """What --method gd reports to the callback after each step it takes."""

    iteration: int
    objective: float
    step: float


def _train_gd(dataset: Dataset, params: AssetParams, callback, should_stop, factors=None):
    """Gradient descent on λ/2·|w|² + (1/m)·Σ c_i·Huber(y_i·(⟨w, x_i⟩ + b)) with an
    intercept (Guillory & Bilmes §4.2), pruned by margin-change bounds unless turned off."""
    m = dataset.n_examples
    if params.lam is None:
        check_small_c(params.C, m)
    lam = params.lambda_for(m)
    started = time.perf_counter()
    margins = SortedMargins(
        dataset.X,
        dataset.y,
        np.full(m, 1.0 / m) if factors is None else factors / m,
        loss=HUBER,
        h=params.huber_h,
        prune=params.bounds(dataset.X.nnz),
    )
    report = None
    if callback is not None:

        def report(iteration, objective, step):
            callback(GDStep(iteration, objective, step))

    result = huber_gd(margins, lam, params.gd_epsilon, callback=report, should_stop=should_stop)
    seconds = time.perf_counter() - started
    f = np.asarray(dataset.X @ result.w).ravel() + result.b
    training_error = float(np.mean(np.where(f > 0, 1.0, -1.0) != dataset.y))
    result.seconds = seconds
    result.margins_computed = margins.computed / max(margins.evaluations, 1) / max(m, 1)
    result.resorts = margins.resorts
    model = _model(None, result.w, result.b, params, dataset, m)
    info = AssetInfo(
        n_examples=m,
        lam=lam,
        dim=dataset.n_features,
        n_dropped=0,
        objective=result.objective,
        training_error=training_error,
        norm_gamma=float(np.linalg.norm(result.w)),
        result=result,
        radius=math.inf,
        b_radius=math.inf,
        step_scale=result.step,
        average_last=0,
        cached=True,
        seconds_map=0.0,
    )
    return model, info
