"""Projected stochastic subgradient with iterate averaging (Lee & Wright's ASSET and
ASSET*; Pegasos when the rows are the input features themselves).

Problem: minimise λ/2·|γ|² + (1/m)·Σ_i c_i·ℓ(y_i, V_i·γ + b) over X = {|γ| ≤ R, |b| ≤ B}
(b fixed at 0 without an intercept), ℓ the hinge loss max(0, 1 - y·f) or the
ε-insensitive loss max(0, |f - y| - ε), c_i the example's factor of C (``weights``:
its ``cost:`` token times its class's weight; 1 without them).

Iteration j takes the next mini-batch A_j of ``batch`` examples of the epoch's
permutation (the last batch of an epoch may be smaller) and steps

    γ ← Π_X(γ - η_j·(λγ + (1/|A_j|)·Σ_{i∈A_j} c_i·ℓ'_i·V_i)),   b ← Π(b - η_j·mean c_i·ℓ'_i)

with η_j = ``step_scale``/√j (ASSET: D_X/D_G) or 1/(λj) (``star``: ASSET*). γ is held
as s·w so that the shrink by (1 - η_jλ) and the projection are one scalar product;
only the rows with a non-zero loss derivative touch w.

ASSET's model is the η-weighted average of the iterates of the last ``average_last``
iterations (0: all) before each check, or with ``average_half`` of the last half of the
iterations so far (from the check numbered by the largest number with at most three
significant bits not above half the current one: 50-60% of the run); ASSET*'s is the
last iterate. Checks come ``checks_per_epoch`` times an epoch: the model is formed,
validated (when a ``validate`` callable is given; the best one is kept, the latest of
equals, else the last), reported to ``callback``, and ``should_stop()`` is asked.

The stopping rule (``tolerance`` > 0 and an ``objective`` callable, the objective of a
model measured on a fixed sample of the training examples): at the checks whose number
has at most three significant bits (those where windows of ``average_half`` start),
and at the last check of the cap, the model's objective is measured; from the end of
epoch ``min_epochs`` on, such a check n stops the run ("converged") when the objective
fell by at most ``tolerance`` of itself since check a, the same kind of number at most
n/2: over the last half of the run. The result holds the last comparison made, so that
a run stopped by the cap says how much the objective still fell.

The rows reach the engine through a *row source*: ``dim``; ``sparse`` (True: CSR arrays
``indptr, indices, data`` and ``row_sq`` for all m rows); otherwise ``block(rows)`` ->
(array V, positions of ``rows`` in V, squared norms of V's rows). The order of the
updates depends only on the generator, never on how or on how many threads the rows
are computed.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from dataclasses import dataclass, field

import numpy as np

from ..compiled import njit
from ..sparse_ops import add_row, row_dot
from .margin_bounds import ResortPolicy

HINGE, EPSILON_INSENSITIVE = 0, 1

# State vector shared with the kernels: γ = s·w, |w|², b, η-weighted sums of b and of η
# (averaging), the sum of the losses seen and how many.
_S, _WNORM2, _B, _ACC_B, _ACC_ETA, _LOSS, _SEEN = range(7)
# Margin-change bounds (Guillory & Bilmes' Algorithm 3): whether to prune, γ·γ′ and |γ′|²
# for the reference γ′, its b′, and the rows skipped and visited.
_PRUNE, _DOTREF, _REFN2, _BREF, _SKIPPED, _VISITED = range(7, 13)
_N_STATE = 13
# Placeholders for the arrays of the other kind of rows (one kernel signature).
_NO_ROWS = np.zeros((0, 0))
_NO_INDEX = np.zeros(0, dtype=np.int64)
_NO_DATA = np.zeros(0)


@dataclass
class SGDSettings:
    lam: float  # λ > 0
    loss: int = HINGE
    epsilon: float = 0.0  # tube width of the ε-insensitive loss
    star: bool = False  # ASSET*: η_j = 1/(λj), no averaging, no intercept
    intercept: bool = True
    batch: int = 1
    epochs: int = 10
    average_last: int = 100  # 0: average from the first iteration on
    average_half: bool = False  # the last half of the iterations so far (not average_last)
    radius: float = math.inf  # R, bound on |γ|
    b_radius: float = math.inf  # B, bound on |b|
    step_scale: float = 1.0  # D_X / D_G (ASSET)
    checks_per_epoch: int = 10
    tolerance: float = 0.0  # the stopping rule's relative fall of the objective (0: off)
    min_epochs: int = 1  # the rule stops no run before the end of this epoch
    block_rows: int = 4096  # rows fetched from the source at a time
    margin_bounds: bool = False  # Algorithm 3 (sparse rows only): skip the rows whose loss
    resort_c: float = 1.0  # is surely 0; its ResortPolicy's c
    resort_period: int | None = None  # fixed refresh period in iterations (tests)
    weights: np.ndarray | None = None  # the c_i, float64 (None: all 1)


@dataclass
class Check:
    epoch: float
    iteration: int
    objective: float  # λ/2|γ̄|² + mean loss of the examples since the last check
    validation_error: float  # nan without validation
    seconds: float
    sample_objective: float = math.nan  # the stopping rule's measure, where taken


@dataclass
class SGDResult:
    gamma: np.ndarray
    b: float
    iterations: int  # iterations run
    best_iteration: int  # iteration of the kept model
    validation_error: float
    status: str  # "converged", "epochs" (all run) or "interrupted"
    n_checks: int = 0
    # The stopping rule's last comparison: (iteration, objective) at its two checks.
    rule_from: tuple | None = None
    rule_to: tuple | None = None
    seconds_rows: float = 0.0  # fetching rows from the source
    seconds_steps: float = 0.0  # the subgradient steps
    rows_visited: int = 0  # rows of the mini-batches (margin bounds on)
    rows_skipped: int = 0  # of them, skipped: loss surely 0
    refreshes: int = 0  # reference margins computed


class _Schedule:
    """When :func:`run_sgd` checks, and where its averaging windows start: the checks are
    at iterations e·n_iter + p for each epoch e and each p of ``positions``."""

    def __init__(self, settings: SGDSettings, n_iter: int):
        self.st = settings
        self.n_iter = n_iter
        checks = settings.checks_per_epoch
        self.positions = sorted({max(1, round(c * n_iter / checks)) for c in range(1, checks + 1)})
        self.per_epoch = len(self.positions)

    def next_check(self, J):
        """The first check after iteration J."""
        e, p = divmod(J, self.n_iter)
        later = [q for q in self.positions if q > p]
        return e * self.n_iter + later[0] if later else (e + 1) * self.n_iter + self.positions[0]

    def check_iteration(self, n):
        """The iteration of check number n (1, 2, ...; 0: the start)."""
        if n == 0:
            return 0
        e, i = divmod(n - 1, self.per_epoch)
        return e * self.n_iter + self.positions[i]

    def check_number(self, J):
        """The number of the check at iteration J."""
        e, p = divmod(J - 1, self.n_iter)
        return e * self.per_epoch + bisect_left(self.positions, p + 1) + 1

    def window_start(self, J):
        """The first iteration of the averaging window of the check at J."""
        st = self.st
        if st.star:
            return 0
        if st.average_half:
            return self.check_iteration(_half_anchor(self.check_number(J) // 2))
        if st.average_last <= 0:
            return 0
        return max(0, J - st.average_last)

    def stops_in_epoch(self, epoch):
        """Iterations of the epoch where a segment must end or begin (its checks and the
        window starts in it), and those window starts (snapshots of the running sums)."""
        st, per_epoch = self.st, self.per_epoch
        lo, hi = epoch * self.n_iter, (epoch + 1) * self.n_iter
        starts = set()
        if not st.star:
            if epoch == 0:
                starts.add(0)
            if st.average_half:
                # Every anchor starts some window; the checks at lo..hi-1 are numbered
                # epoch*per_epoch (the previous epoch's last) onwards.
                starts.update(
                    self.check_iteration(n)
                    for n in range(max(1, epoch * per_epoch), (epoch + 1) * per_epoch)
                    if _half_anchor(n) == n
                )
            elif st.average_last > 0:
                J = self.next_check(lo + st.average_last - 1)
                while self.window_start(J) < hi:
                    starts.add(self.window_start(J))
                    J = self.next_check(J)
        return sorted({lo, hi} | {lo + p for p in self.positions} | starts), starts


@dataclass
class _Checks:
    """What :func:`run_sgd`'s checks found: the model kept (γ, b, iteration, validation
    error), the stopping rule's objective at check numbers and its last comparison
    (check a, check n), and how many checks ran."""

    best: tuple | None = None
    measured: dict = field(default_factory=dict)
    rule: tuple | None = None
    count: int = 0

    def record(self, J, gamma_bar, b_bar, validate, objective, last, per_epoch):
        """Check number ``count + 1``, at iteration J, of the averaged model: its
        validation error and the stopping rule's objective (nan where not measured)."""
        error = float(validate(gamma_bar, b_bar)) if validate is not None else math.nan
        # Of equally good checks the later, more converged one is kept.
        if self.best is None or validate is None or error <= self.best[3]:
            self.best = (gamma_bar.copy(), float(b_bar), J, error)
        self.count += 1
        n = self.count
        sampled = math.nan
        if objective is not None and (_half_anchor(n) == n or last):
            sampled = self.measured[n] = float(objective(gamma_bar, b_bar))
            if n >= per_epoch:
                self.rule = (_half_anchor(n // 2), n)
        return error, sampled

    def converged(self, st: SGDSettings, per_epoch: int) -> bool:
        """Whether the stopping rule stops the run at the last check."""
        return (
            self.rule is not None
            and self.rule[1] == self.count
            and st.tolerance > 0
            and self.count >= per_epoch * st.min_epochs
            and _converged(self.measured, self.rule, st.tolerance)
        )


def run_sgd(
    source,
    y,
    settings: SGDSettings,
    rng: np.random.Generator,
    *,
    validate=None,
    objective=None,
    callback=None,
    should_stop=None,
    start=None,
) -> SGDResult:
    """Train; one ``rng.permutation(m)`` is drawn per epoch, nothing else. ``validate``
    and ``objective`` map a model (γ, b) to its validation error and to the objective the
    stopping rule watches. ``start``: (γ_0, b_0) to start from instead of 0 (a model's,
    --init-model), projected into the radii as every iterate is."""
    st = settings
    y = np.ascontiguousarray(y, dtype=np.float64)
    m = len(y)
    k = int(st.batch)
    n_iter = -(-m // k)
    plan = _Schedule(st, n_iter)
    w = np.zeros(source.dim)
    acc = np.zeros(source.dim)
    state = np.zeros(_N_STATE)
    bounds = _Bounds(source, st, k, m, y) if st.margin_bounds and source.sparse else None
    state[_S] = 1.0
    if start is not None:
        _start_at(start, w, state, st)
    work = (np.zeros(k), np.zeros(k))  # the kernel's gradients and dots of a mini-batch
    snapshots = {}
    accumulated_last = False
    checks = _Checks()
    status = "epochs"
    t_rows = t_steps = 0.0
    started = time.perf_counter()
    J = 0
    stop = False

    for epoch in range(st.epochs):
        perm = rng.permutation(m).astype(np.int64)
        stops, starts = plan.stops_in_epoch(epoch)
        p = 0
        while p < n_iter:
            J = epoch * n_iter + p
            if J in starts and not st.star:
                snapshots[J] = _window_opened(acc, state, accumulated_last)
            q_stop = min(c for c in stops if c > J) - epoch * n_iter
            q = min(q_stop, n_iter, p + max(1, st.block_rows // k))
            upcoming = plan.next_check(J)
            accumulate = (not st.star) and plan.window_start(upcoming) <= J
            rows = perm[p * k : min(q * k, m)]
            seconds = _step_block(
                source, y, rows, st, w, acc, state, J, q - p, accumulate, work, bounds
            )
            t_rows += seconds[0]
            t_steps += seconds[1]
            accumulated_last = accumulate
            p = q
            J = epoch * n_iter + p
            if J != upcoming:
                continue
            # A check: the averaged iterate of the window ending here.
            gamma_bar, b_bar = _averaged(plan, J, w, acc, state, snapshots)
            seen = max(state[_SEEN], 1.0)
            estimate = 0.5 * st.lam * float(gamma_bar @ gamma_bar) + float(state[_LOSS] / seen)
            state[_LOSS] = state[_SEEN] = 0.0
            last = J >= st.epochs * n_iter
            error, sampled = checks.record(
                J, gamma_bar, b_bar, validate, objective, last, plan.per_epoch
            )
            if callback is not None:
                callback(
                    Check(J / n_iter, J, estimate, error, time.perf_counter() - started, sampled)
                )
            if checks.converged(st, plan.per_epoch):
                status, stop = "converged", True
            elif should_stop is not None and should_stop():
                status, stop = "interrupted", True
            if stop:
                break
        if stop:
            break
    gamma, b, best_j, error = checks.best
    rule_from = rule_to = None
    if checks.rule is not None:
        rule_from, rule_to = ((plan.check_iteration(c), checks.measured[c]) for c in checks.rule)
    return SGDResult(
        gamma=gamma,
        b=b,
        iterations=J,
        best_iteration=best_j,
        validation_error=error,
        status=status,
        n_checks=checks.count,
        rule_from=rule_from,
        rule_to=rule_to,
        seconds_rows=t_rows,
        seconds_steps=t_steps,
        rows_visited=int(state[_VISITED]),
        rows_skipped=int(state[_SKIPPED]),
        refreshes=bounds.refreshes if bounds is not None else 0,
    )


def _start_at(start, w, state, st):
    """(γ_0, b_0) into w and the state: γ_0 scaled into the ball of radius st.radius, b_0
    clipped to ±st.b_radius (without an intercept, b stays 0)."""
    gamma, b = start
    w[:] = gamma
    norm = math.sqrt(float(w @ w))
    if norm > st.radius:
        w *= st.radius / norm
    state[_WNORM2] = float(w @ w)
    if st.intercept:
        state[_B] = min(max(float(b), -st.b_radius), st.b_radius)


def _step_block(source, y, rows, st, w, acc, state, J, n_steps, accumulate, work, bounds):
    """``n_steps`` iterations from J on, over the mini-batches of ``rows``; the seconds
    spent fetching the rows and stepping."""
    if bounds is not None:
        bounds.before(w, state)
    t0 = time.perf_counter()
    if source.sparse:
        V, local, sq = _NO_ROWS, rows, source.row_sq
        indptr, indices, data = source.indptr, source.indices, source.data
    else:
        V, local, sq = source.block(rows)
        indptr, indices, data = _NO_INDEX, _NO_INDEX, _NO_DATA
    t1 = time.perf_counter()
    _steps(
        not source.sparse,
        V,
        indptr,
        indices,
        data,
        local,
        sq,
        y[rows],
        _NO_DATA if st.weights is None else st.weights[rows],
        int(st.batch),
        w,
        acc,
        state,
        J,
        n_steps,
        st.lam,
        st.loss,
        st.epsilon,
        st.star,
        st.step_scale,
        st.radius,
        st.b_radius,
        st.intercept,
        accumulate,
        *work,
        *(bounds.arrays() if bounds is not None else _NO_BOUNDS),
    )
    t2 = time.perf_counter()
    if bounds is not None:
        bounds.after(state, n_steps, len(rows))
    return t1 - t0, t2 - t1


def _window_opened(acc, state, accumulated_last):
    """A snapshot of the running sums where a window starts, reset first when no window
    is open, so that they stay small."""
    if not accumulated_last:
        acc[:] = 0.0
        state[_ACC_B] = state[_ACC_ETA] = 0.0
    return acc.copy(), state[_ACC_B], state[_ACC_ETA]


def _averaged(plan: _Schedule, J, w, acc, state, snapshots):
    """The model (γ̄, b̄) of the check at J: ASSET*'s last iterate, else the η-weighted
    average of the iterates of its window (the snapshots no later window needs dropped)."""
    if plan.st.star:
        return state[_S] * w, state[_B]
    snap_acc, snap_b, snap_eta = snapshots[plan.window_start(J)]
    weight = state[_ACC_ETA] - snap_eta
    # Window starts never decrease: older snapshots are done with.
    oldest = plan.window_start(plan.next_check(J))
    for key in [key for key in snapshots if key < oldest]:
        del snapshots[key]
    return (acc - snap_acc) / weight, (state[_ACC_B] - snap_b) / weight


def _converged(measured, rule, tolerance: float) -> bool:
    """The stopping rule at check n (``rule`` = (a, n)): the objective fell by at most a
    ``tolerance`` fraction of its value at n since check a, the start of the last half."""
    before, now = measured[rule[0]], measured[rule[1]]
    return before - now <= tolerance * abs(now)


def _half_anchor(n: int) -> int:
    """The largest number not above n with at most three significant bits (0..7, 8, 10,
    12, 14, 16, 20, ...): the checks where a window of ``average_half`` may start, a
    fixed ratio apart, so that few snapshots of the running sums are alive at once."""
    if n < 8:
        return n
    shift = n.bit_length() - 3
    return (n >> shift) << shift


class _Bounds:
    """Algorithm 3's reference for :func:`_steps`: outputs V_i·γ′ of every row at γ′,
    refreshed when a :class:`~cpsvm.engine.margin_bounds.ResortPolicy` says (the full
    pass is its "sort"; an iteration's plain cost is k/m of it). Rows are skipped only
    where their loss is surely 0, so the steps are the same whenever it refreshes.

    Two bounds on the change of a row's output (§5): |γ − γ′|·|V_i| (the paper's), and
    ⟨γ − γ′, μ⟩ ± |γ − γ′|·|V_i − μ| around the mean μ of the row's class (regression:
    of all rows), ⟨γ, μ⟩ kept along the steps from each row's V_i·μ."""

    # Plain steps until the next refresh once a block skips fewer than this share of its
    # rows: a row's test then costs more than the skipped products save (text-like set).
    FALLBACK = 0.85

    def __init__(self, source, settings, k, m, y):
        self.source, self.k, self.m = source, k, m
        self.policy = ResortPolicy(
            settings.resort_c, settings.resort_period, fallback=self.FALLBACK
        )
        self.gamma_ref = np.zeros(source.dim)
        X = source.X
        group = (y > 0).astype(np.int64) if settings.loss == HINGE else np.zeros(m, np.int64)
        n_groups = int(group.max(initial=0)) + 1
        # The groups' means by one product with their indicators over their sizes.
        sizes = np.bincount(group, minlength=n_groups)
        weights = np.zeros((m, n_groups))
        weights[np.arange(m), group] = 1.0 / sizes[group]
        self.mu = np.ascontiguousarray(np.asarray(X.T @ weights).T)
        self.x_mu = np.ascontiguousarray(np.asarray(X @ self.mu.T).reshape(m, n_groups))
        own = self.x_mu[np.arange(m), group]
        mm = np.einsum("gd,gd->g", self.mu, self.mu)[group]
        sq = source.row_sq
        # |V_i − μ|² by expansion, with more than its rounding error.
        r2 = sq - 2.0 * own + mm + 1e-11 * (sq + 2.0 * np.abs(own) + mm)
        # What a row's test reads, in one cache line: its reference output (set at each
        # refresh), |V_i|, |V_i − μ| and its group.
        self.row_info = np.zeros((m, 4))
        self.row_info[:, 1] = np.sqrt(sq)
        self.row_info[:, 2] = np.sqrt(np.maximum(r2, 0.0)) * (1 + 1e-12)
        self.row_info[:, 3] = group
        self.mu_norm = np.sqrt(np.einsum("gd,gd->g", self.mu, self.mu))
        self.gamma_mu = np.zeros(n_groups)  # ⟨γ, μ_g⟩, kept by the kernel
        self.ref_mu = np.zeros(n_groups)  # ⟨γ′, μ_g⟩
        self.refreshes = 0
        self._visited = self._skipped = 0.0

    def before(self, w, state):
        if not self.policy.should_resort():
            return
        clock = self.policy.clock
        t0 = clock()
        self.gamma_ref = state[_S] * w
        self.row_info[:, 0] = self.source.X @ self.gamma_ref
        pass_time = clock() - t0
        state[_REFN2] = float(self.gamma_ref @ self.gamma_ref)
        state[_BREF] = state[_B]
        state[_PRUNE] = 1.0
        self.ref_mu[:] = self.mu @ self.gamma_ref
        self.refreshes += 1
        self.policy.sorted_now(pass_time, pass_time * self.k / self.m)

    def arrays(self):
        return (
            self.row_info,
            self.gamma_ref,
            self.x_mu,
            self.mu,
            self.mu_norm,
            self.gamma_mu,
            self.ref_mu,
        )

    def after(self, state, n_iterations, n_rows):
        visited = state[_VISITED] - self._visited
        skipped = state[_SKIPPED] - self._skipped
        self._visited, self._skipped = state[_VISITED], state[_SKIPPED]
        if state[_PRUNE] > 0:
            fraction = 1.0 - skipped / max(visited, 1.0)
            self.policy.evaluated(fraction, n_iterations)
            if self.policy.plain:  # too few pruned: plain until the next refresh
                state[_PRUNE] = 0.0
        else:
            self.policy.evaluated(1.0, n_iterations)


# What :func:`_steps` gets in place of :meth:`_Bounds.arrays` without bounds.
_NO_BOUNDS = (_NO_ROWS, _NO_DATA, _NO_ROWS, _NO_ROWS, _NO_DATA, _NO_DATA, _NO_DATA)


# --- the kernels ----------------------------------------------------------------------


@njit(cache=True)
def _loss_and_derivative(loss, y, f, epsilon):
    """ℓ(y, f) and dℓ/df (a subgradient)."""
    if loss == HINGE:
        margin = y * f
        if margin < 1.0:
            return 1.0 - margin, -y
        return 0.0, 0.0
    r = f - y
    if r > epsilon:
        return r - epsilon, 1.0
    if r < -epsilon:
        return -r - epsilon, -1.0
    return 0.0, 0.0


@njit(cache=True)
def _step_size(j, lam, star, step_scale):
    if star:
        return 1.0 / (lam * j)
    return step_scale / math.sqrt(j)


@njit(cache=True)
def _shrink(state, w, eta, lam):
    """γ ← (1 - ηλ)γ as a change of scale; True when γ became 0 (ηλ ≥ 1)."""
    factor = 1.0 - eta * lam
    if factor <= 0.0:
        w[:] = 0.0
        state[_S] = 1.0
        state[_WNORM2] = 0.0
        return True
    state[_S] *= factor
    return False


@njit(cache=True)
def _intercept_step(state, eta, gsum, count, intercept, b_radius):
    if intercept:
        b = state[_B] - eta * gsum / count
        state[_B] = min(max(b, -b_radius), b_radius)


@njit(cache=True)
def _project_and_average(state, w, acc, eta, radius, accumulate):
    """Returns the factor the projection scaled γ by."""
    s = state[_S]
    norm = s * math.sqrt(max(state[_WNORM2], 0.0))
    scaled = 1.0
    if norm > radius:
        scaled = radius / norm
        s *= scaled
    if s < 1e-9:  # fold the scale into w before it underflows
        for c in range(w.shape[0]):
            w[c] *= s
        state[_WNORM2] *= s * s
        s = 1.0
    state[_S] = s
    if accumulate:
        f = eta * s
        for c in range(w.shape[0]):
            acc[c] += f * w[c]
        state[_ACC_B] += eta * state[_B]
        state[_ACC_ETA] += eta
    return scaled


@njit(cache=True, inline="always")
def _surely_zero(loss, y, f_ref, bound, epsilon):
    """The loss is 0 for every output within ``bound`` of ``f_ref`` (hinge: margin ≥ 1;
    ε-insensitive: inside the tube), the tests of :func:`_loss_and_derivative`."""
    if loss == HINGE:
        return y * f_ref - bound >= 1.0
    return f_ref - bound >= y - epsilon and f_ref + bound <= y + epsilon


@njit(cache=True)
def _steps(
    dense,
    V,
    indptr,
    indices,
    data,
    rows,
    sq,
    y,
    weights,
    batch,
    w,
    acc,
    state,
    j0,
    n_steps,
    lam,
    loss,
    epsilon,
    star,
    step_scale,
    radius,
    b_radius,
    intercept,
    accumulate,
    grads,
    dots,
    row_info,
    gamma_ref,
    x_mu,
    mu,
    mu_norm,
    gamma_mu,
    ref_mu,
):
    """``n_steps`` iterations, iteration j0+1 first, over the rows ``rows[i]`` (targets
    y[i], factors of C weights[i] when ``weights`` is not empty, squared norms
    sq[rows[i]]) of a dense V (``dense``) or of a CSR matrix.

    With state[_PRUNE] (CSR rows, :class:`_Bounds`; row_info[r] = V_r·γ′, |V_r|,
    |V_r − μ| (at least), g): V_r·γ is within |γ − γ′|·|V_r| of V_r·γ′, and within
    |γ − γ′|·|V_r − μ| of V_r·γ′ + ⟨γ − γ′, μ⟩ for the mean μ = mu[g] of its group;
    |γ − γ′|² from |γ|², |γ′|² and γ·γ′, the last and ⟨γ, μ⟩ (``gamma_mu``; ⟨γ′, μ⟩ in
    ``ref_mu``) kept along the steps (each added row moves them by its coefficient
    times V_r·γ′, V_r·μ = x_mu[r]), so a row whose loss is surely 0 costs no product."""
    n = rows.shape[0]
    weighted = weights.shape[0] > 0
    state[_WNORM2] = np.dot(w, w)
    prune = state[_PRUNE] > 0.0
    if prune:
        state[_DOTREF] = state[_S] * np.dot(w, gamma_ref)
        for g in range(len(gamma_mu)):
            gamma_mu[g] = state[_S] * np.dot(w, mu[g])
    computed = np.zeros(batch, np.bool_)
    for t in range(n_steps):
        lo = t * batch
        hi = min(lo + batch, n)
        count = hi - lo
        j = j0 + t + 1
        eta = _step_size(j, lam, star, step_scale)
        s = state[_S]
        b = state[_B]
        gsum = 0.0
        delta = 0.0
        tol = 0.0
        if prune:
            g2 = s * s * max(state[_WNORM2], 0.0)
            r2 = state[_REFN2]
            # The three terms are kept to rounding: a slack of 1e-9 of their size.
            dist2 = g2 - 2.0 * state[_DOTREF] + r2
            delta = math.sqrt(max(dist2, 0.0) + 1e-9 * (g2 + r2)) * (1.0 + 1e-9)
            tol = 1e-10 * (math.sqrt(g2) + math.sqrt(r2) + abs(b) + abs(state[_BREF]) + 1.0)
            state[_VISITED] += count
        # The rows' products in a loop of their own (with the loss beside them, one
        # row's product no longer overlapped the next one's), then their losses.
        for i in range(lo, hi):
            r = rows[i]
            if prune:
                out_ref = row_info[r, 0] + b
                norm = row_info[r, 1]
                around = row_info[r, 2]
                g = int(row_info[r, 3])
                if _surely_zero(
                    loss, y[i], out_ref, delta * norm + tol * (norm + 1.0), epsilon
                ) or _surely_zero(
                    loss,
                    y[i],
                    out_ref + gamma_mu[g] - ref_mu[g],
                    delta * around + tol * (around + mu_norm[g] + 1.0),
                    epsilon,
                ):
                    computed[i - lo] = False
                    state[_SKIPPED] += 1
                    continue
            computed[i - lo] = True
            dots[i - lo] = row_dot(dense, V, indptr, indices, data, r, w)
        for i in range(lo, hi):
            if not computed[i - lo]:
                grads[i - lo] = 0.0
                continue
            value, g = _loss_and_derivative(loss, y[i], s * dots[i - lo] + b, epsilon)
            if weighted:  # (a weight > 0 leaves a zero loss zero: pruning holds)
                value *= weights[i]
                g *= weights[i]
            state[_LOSS] += value
            grads[i - lo] = g
            gsum += g
        state[_SEEN] += count
        s_before = state[_S]
        changed = _shrink(state, w, eta, lam)
        if prune:
            # γ·γ′ and ⟨γ, μ⟩ after the shrink (or 0 when γ became 0).
            factor = 0.0 if changed else state[_S] / s_before
            state[_DOTREF] *= factor
            gamma_mu *= factor
        _intercept_step(state, eta, gsum, count, intercept, b_radius)
        for i in range(lo, hi):
            g = grads[i - lo]
            if g == 0.0:
                continue
            r = rows[i]
            coef = -eta * g / (count * state[_S])
            # The dot of the loss is still V_r·w unless w changed since.
            dot = row_dot(dense, V, indptr, indices, data, r, w) if changed else dots[i - lo]
            state[_WNORM2] += 2.0 * coef * dot + coef * coef * sq[r]
            add_row(dense, V, indptr, indices, data, r, coef, w)
            if prune:
                state[_DOTREF] += coef * state[_S] * row_info[r, 0]
                for c in range(len(gamma_mu)):
                    gamma_mu[c] += coef * state[_S] * x_mu[r, c]
            changed = True
        scaled = _project_and_average(state, w, acc, eta, radius, accumulate)
        if prune:
            state[_DOTREF] *= scaled
            gamma_mu *= scaled
