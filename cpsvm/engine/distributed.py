"""The linear oracles on a Dask cluster (``--scheduler``): OCAS (binary and
Crammer-Singer multiclass, as :mod:`cpsvm.engine.ocas`) and the plain 1-slack cut of
``cp_learn -w 3``, with the examples staying on the workers.

Data. Each worker loads its shards once (a loader callable the caller gives, run on the
worker) and keeps them in memory; the client holds only d-vectors. Per iteration the
client broadcasts w (OCAS: the two points w_b, w_t) and gets back per-shard sums: the
cut, the loss, counts — O(d) per worker, never O(n).

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
moves w_b (every worker finds the step from all the gathered pieces), so an iteration
usually costs two round trips: the outputs, the move (:meth:`_Rounds.chained`).

Same answer for any sharding. Floating-point sums depend on how the rows are grouped,
so every sum over examples (the cut vector, the loss, G, J) is *exact*: each per-row
term is split into two or three slices on fixed grids (binned summation, as in Demmel &
Nguyen's reproducible BLAS); slice sums on a grid are exact in float64, so adding them
in any order, on any worker, gives the same bits. The grids come from bounds the client
derives from global maxima (max |x_ij| per column, max row 1-norm, max cost) and |w|,
the same for every sharding. Scalars are rounded once (``math.fsum``) on the client.
The per-row terms themselves (x_i·w, hinge tests) are computed row by row, in the same
order whatever the shard. So the model is byte-identical for any number of workers and
shards; against the single-machine solver (other summation order, merged duplicate
examples) it agrees to the stopping tolerance.

Faults. Worker state (outputs, breakpoints, the last cut's coefficients) is a cache:
a task that lands on a worker that lost the shard (Dask recomputes the shard from its
loader) and misses the outputs it needs raises StateLost; the client then ships w_b
(otherwise it never travels: the workers move their outputs themselves) and repeats the
round, which recomputes the outputs from w_b and w_t, and training continues.
"""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import numpy as np
from numba import njit

from ..errors import InputError, OptionError
from ..sparse_ops import rows_times
from .cuts import LinearCutOracle
from .hinge import hinge_excess, multiclass_most_violated
from .ocas import class_lines, upper_envelope

FOLDS = 3  # at most; 2 when a sum has at most 2^23 terms (fold_grid)
TWO_FOLD_HEADROOM = 26
GRID_SAMPLES = 8  # breakpoint positions per worker and grid interval
BUCKET_SAMPLES = 16  # per worker and candidate interval, with each evaluation
MAX_CANDIDATES = 256
MIN_GATHER = 8192  # breakpoints gathered at most (or size_psi, if larger)
# The steps whose jump sums come back with the outputs: 0 and 2^k, k in [-24, 8], 32
# per octave; the same for every iteration and sharding.
STEP_GRID = np.concatenate([[0.0], np.exp2(np.arange(-24 * 32, 8 * 32 + 1) / 32.0)])

SHIP_INLINE = 1 << 16  # vectors up to this size travel inside the tasks, larger ones
# are scattered to every worker first
PLACEMENT_CHECK = 2.0  # seconds between checks that the shards' workers are alive
DASK_MISSING = "--scheduler needs Dask: pip install cpsvm[dask]"


class StateLost(Exception):
    """A task on a worker that lost its shard (rebuilt by Dask) found neither the outputs
    it needs nor the vector to recompute them: the client ships it and repeats."""


# -- exact (binned) sums --------------------------------------------------------------------


def fold_grid(bound, n_terms):
    """σ (len(bound), folds) for sums of at most ``n_terms`` terms |x| <= bound: fold
    k rounds to the grid of ulp(σ_k); each fold's sum is exact (|sum| < 2^53 ulps).
    A column's folds are adjacent in memory (one cache line per deposit)."""
    bound = np.atleast_1d(np.asarray(bound, dtype=np.float64))
    headroom = int(math.ceil(math.log2(n_terms + 1))) + 3
    # The last fold's quantum is 2^(e + folds·headroom − 53·folds + 1), e the bound's
    # exponent: with two folds and headroom <= 26, at most half an ulp of the bound, the
    # error a float sum of the same terms makes in each addition.
    folds = 2 if headroom <= TWO_FOLD_HEADROOM else FOLDS
    safe = np.where(bound > 0, bound, 2.0**-900)
    _, e = np.frexp(safe * (1.0 + 2.0**-40))  # bound <= 2^e
    e = np.minimum(e.astype(np.int64), 1020 - headroom)
    sig = np.empty(bound.shape + (folds,))
    for k in range(folds):
        sig[:, k] = 1.5 * np.ldexp(1.0, e + headroom)
        e = e + headroom - 53
    return sig


def fold_value(acc):
    """The folds' total per column (deterministic; exact folds in, one rounding each)."""
    total = acc[:, 0].copy()
    for k in range(1, acc.shape[1]):
        total += acc[:, k]
    return total


def exact_scalar(*parts) -> float:
    """Correctly rounded sum of doubles and fold columns (a monotone function of the
    exact total)."""
    terms = []
    for p in parts:
        terms.extend(np.ravel(p).tolist())
    return math.fsum(terms)


@njit(cache=True, inline="always")
def _deposit(acc, sig, j, x, sign):
    for k in range(acc.shape[1]):
        s = sig[j, k]
        q = (s + x) - s
        acc[j, k] += sign * q
        x = x - q


@njit(cache=True, inline="always")
def _deposit_packed(acc, j, x, sign, shift):
    """_deposit for a packed accumulator: row j holds [σ_0, fold sums...] (σ_k+1 =
    σ_k·shift, a power of 2), so a deposit touches one cache line (measured 1.85x
    faster than separate σ and sum arrays for the cut vector's random columns)."""
    s = acc[j, 0]
    for k in range(1, acc.shape[1]):
        q = (s + x) - s
        acc[j, k] += sign * q
        x = x - q
        s = s * shift


def _packed(sig):
    """A zero packed accumulator on the grid ``sig``, and its shift."""
    acc = np.zeros((sig.shape[0], sig.shape[1] + 1))
    acc[:, 0] = sig[:, 0]
    return acc, (sig[0, 1] / sig[0, 0] if len(sig) else 1.0)


# -- per-shard kernels (row by row, no reassociation: the same bits for any sharding) ----


@njit(cache=True)
def _hinge_risk(y, costs, out, a, b, acc, sig, col):
    for i in range(len(y)):
        e = hinge_excess(a, b, y[i], out[i])
        if e > 0.0:
            _deposit(acc, sig, col, costs[i] * e, 1.0)


@njit(cache=True)
def _class_risk(y, costs, out, loss, acc, sig, col):
    n, k = out.shape
    for i in range(n):
        yi = int(y[i]) - 1
        slack = 0.0
        for c in range(k):
            if c != yi:
                m = out[i, c] - out[i, yi] + loss
                slack = m if m > slack else slack
        if slack > 0.0:
            _deposit(acc, sig, col, costs[i] * slack, 1.0)


@njit(cache=True)
def _binary_coef(y, costs, out, a, b, cscale, wscale, old, new, acc_s, sig_s, indptr):
    """Violators of a − b·y·out > 0: c += costs·cscale into acc_s, their coefficient
    costs·wscale·y into ``new`` (0 for the others). Returns the violators and the
    non-zeros each way of forming Σ new_i·x_i would visit: from ``old``'s sum (its
    changed rows twice), from the violators, from the all-examples sum (the others)."""
    n_violated = 0
    from_old = 0
    from_violators = 0
    from_all = 0
    for i in range(len(y)):
        nnz = indptr[i + 1] - indptr[i] + 1
        e = hinge_excess(a, b, y[i], out[i])
        if e > 0.0:
            new[i] = costs[i] * wscale * y[i]
            _deposit(acc_s, sig_s, 0, costs[i] * cscale, 1.0)
            n_violated += 1
            from_violators += nnz
        else:
            new[i] = 0.0
            from_all += nnz
        if new[i] != old[i]:
            from_old += nnz * ((old[i] != 0.0) + (new[i] != 0.0))
    return n_violated, from_old, from_violators, from_all


@njit(cache=True)
def _add_rows(indptr, indices, data, bias, d, coef, sign, acc, shift):
    """Deposit sign·coef_i·x_i (the bias feature at column d) for every coef_i ≠ 0 into
    the packed accumulator ``acc``."""
    for i in range(len(coef)):
        c = coef[i]
        if c == 0.0:
            continue
        for p in range(indptr[i], indptr[i + 1]):
            _deposit_packed(acc, indices[p], c * data[p], sign, shift)
        if bias != 0.0:
            _deposit_packed(acc, d, c * bias, sign, shift)


def _binary_cut(shard, out, a, b, cscale, wscale, costs, acc_s, sig_s, sig_g, last=None):
    """The cut's folds Σ coef_i·x_i for the violators at ``out``, formed the cheapest
    exact way: from the ``last`` cut (coef, packed folds) plus the changed rows, from
    the violators, or from the sum over all examples minus the others (kept in the
    shard). All give the same bits. Returns (coef, packed folds, violators)."""
    old = last[0] if last is not None else np.zeros(shard.n)
    new = np.empty(shard.n)
    nv, from_old, from_viol, from_all = _binary_coef(
        shard.y, costs, out, a, b, cscale, wscale, old, new, acc_s, sig_s, shard.indptr
    )
    key = ("all", a, b, wscale, costs[0] if shard.n else 0.0)
    have_all = shard.state.get(key)
    cost_all = from_all + (0 if have_all is not None else from_viol + from_all)
    args = (shard.indptr, shard.indices, shard.data, shard.bias, shard.d)
    zero, shift = _packed(sig_g)
    if last is not None and from_old <= min(from_viol, cost_all):
        acc = last[1]
        changed = new != old
        _add_rows(*args, np.where(changed, old, 0.0), -1.0, acc, shift)
        _add_rows(*args, np.where(changed, new, 0.0), 1.0, acc, shift)
    elif from_viol <= cost_all:
        acc = zero
        _add_rows(*args, new, 1.0, acc, shift)
    else:
        every = costs * wscale * shard.y
        if have_all is None:
            have_all = zero.copy()
            _add_rows(*args, every, 1.0, have_all, shift)
            shard.state[key] = have_all
        acc = have_all.copy()
        _add_rows(*args, np.where(new == 0.0, every, 0.0), -1.0, acc, shift)
    return new, acc, nv


@njit(cache=True)
def _class_cut(
    indptr, indices, data, k, y, labels, costs, loss, margin_rescaling, acc_g, shift, acc_s, sig_s
):
    """Crammer-Singer's cut for the most violated classes ``labels`` (of
    :func:`cpsvm.engine.hinge.multiclass_most_violated`): c += costs·loss and ±w_i·x_i
    into the columns of the true and the chosen class (w_i = costs_i, times the loss
    with slack rescaling; x_j of class c at j·k + c). Returns the number of violators."""
    n_violated = 0
    for i in range(len(y)):
        yi = y[i] - 1
        best = labels[i] - 1
        if best == yi:
            continue
        n_violated += 1
        _deposit(acc_s, sig_s, 0, costs[i] * loss, 1.0)
        weight = costs[i] if margin_rescaling else costs[i] * loss
        for p in range(indptr[i], indptr[i + 1]):
            x = weight * data[p]
            _deposit_packed(acc_g, indices[p] * k + yi, x, 1.0, shift)
            _deposit_packed(acc_g, indices[p] * k + best, x, -1.0, shift)
    return n_violated


def _shard_class_cut(shard, out, costs, loss, margin_rescaling, acc_s, sig_s, sig_g):
    acc_g, shift = _packed(sig_g)
    y = shard.classes()
    labels = multiclass_most_violated(out, y, margin_rescaling, loss)
    nv = _class_cut(
        shard.indptr,
        shard.indices,
        shard.data,
        shard.n_classes,
        y,
        labels,
        costs,
        loss,
        margin_rescaling,
        acc_g,
        shift,
        acc_s,
        sig_s,
    )
    return acc_g[:, 1:].copy(), acc_s, nv


@njit(cache=True)
def _binary_breakpoints(y, out_b, out_t, costs, loss, margin, acc, sig):
    """The hinge terms along out_b → out_t as in :func:`cpsvm.engine.ocas.binary_line_search`:
    the slope at 0+ into acc[0], the breakpoints (position, jump) returned, their
    jumps also into acc[1]."""
    n = len(y)
    at = np.empty(n)
    jump = np.empty(n)
    m = 0
    for i in range(n):
        a = hinge_excess(loss, margin, y[i], out_b[i])
        s = -margin * y[i] * (out_t[i] - out_b[i])
        cost_slope = costs[i] * s
        on_hinge = (a > 0.0) or (a == 0.0 and s > 0.0)
        if on_hinge:
            _deposit(acc, sig, 0, cost_slope, 1.0)
        crosses = (s < 0.0) if on_hinge else (s > 0.0)
        if crosses:
            at[m] = -a / s
            jump[m] = abs(cost_slope)
            _deposit(acc, sig, 1, jump[m], 1.0)
            m += 1
    return at[:m].copy(), jump[:m].copy()


@njit(cache=True)
def _class_breakpoints(y, out_b, out_t, costs, loss, acc, sig):
    """The upper envelope of each example's k lines along out_b → out_t, traced by the
    single-machine line search's walk (:func:`cpsvm.engine.ocas.upper_envelope`, ties
    broken alike): slope at 0+ into acc[0], breakpoints returned, their jumps also
    into acc[1] (exact sums)."""
    n, k = out_b.shape
    cap = max(n * (k - 1), 1)  # at most k − 1 breakpoints an example
    at = np.empty(cap)
    jump = np.empty(cap)
    intercepts = np.empty(k)
    slopes = np.empty(k)
    m = 0
    for i in range(n):
        class_lines(out_b[i], out_t[i], int(y[i]) - 1, loss, intercepts, slopes)
        first = m
        slope, m = upper_envelope(intercepts, slopes, costs[i], at, jump, m)
        _deposit(acc, sig, 0, slope, 1.0)
        for p in range(first, m):
            _deposit(acc, sig, 1, jump[p], 1.0)
    return at[:m].copy(), jump[:m].copy()


@njit(cache=True)
def _buckets(at, jump, cand, acc, sig, counts, per_bucket):
    """Jumps summed (exactly) per interval (cand[b-1], cand[b]] (b = len(cand): above
    all), their counts, and up to ``per_bucket`` positions spread over each interval."""
    n = len(at)
    which = np.empty(n, np.int64)
    for p in range(n):
        b = np.searchsorted(cand, at[p])
        which[p] = b
        _deposit(acc, sig, b, jump[p], 1.0)
        counts[b] += 1
    m = len(counts)
    seen = np.zeros(m, np.int64)
    kept = np.zeros(m, np.int64)
    samples = np.full((m, per_bucket), np.nan)
    for p in range(n):
        b = which[p]
        stride = max(1, counts[b] // per_bucket)
        if seen[b] % stride == 0 and kept[b] < per_bucket:
            samples[b, kept[b]] = at[p]
            kept[b] += 1
        seen[b] += 1
    return samples


@njit(cache=True)
def _exact_sign(terms):
    """Sign of the exact sum of ``terms`` (Shewchuk's partials: non-overlapping,
    increasing, so the largest non-zero one has the sum's sign)."""
    partials = np.empty(len(terms) + 1)
    n = 0
    for x in terms:
        i = 0
        for j in range(n):
            y = partials[j]
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                partials[i] = lo
                i += 1
            x = hi
        partials[i] = x
        n = i + 1
    for j in range(n - 1, -1, -1):
        if partials[j] != 0.0:
            return 1 if partials[j] > 0.0 else -1
    return 0


@njit(cache=True)
def _walk(A0, base, J, at, jump, sig):
    """In sorted breakpoints (at, jump) above a point where D < 0, the first place where
    D(λ) = A0·λ + base + J(λ) reaches 0: (0, t) at breakpoint t, or (1, -) between the
    previous one and t (or after the last): the caller solves the line there with the
    returned J. ``base`` are exact terms, J the folds so far (1, folds)."""
    acc = J.copy()
    nb = len(base)
    terms = np.empty(nb + 1 + acc.shape[1])
    terms[1 : nb + 1] = base
    n = len(at)
    p = 0
    while p < n:
        t = at[p]
        terms[0] = A0 * t
        terms[nb + 1 :] = acc[0]
        if _exact_sign(terms) >= 0:
            return 1, t, acc
        q = p
        while q < n and at[q] == t:
            _deposit(acc, sig, 0, jump[q], 1.0)
            q += 1
        terms[nb + 1 :] = acc[0]
        if _exact_sign(terms) >= 0:
            return 0, t, acc
        p = q
    return 1, np.inf, acc


# -- the shards on the workers --------------------------------------------------------------


@njit(cache=True)
def _abs_bounds(indptr, indices, data, col_max, row_sum):
    """max |x_ij| per column and Σ_j |x_ij| per row, in one pass."""
    for i in range(len(row_sum)):
        total = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            v = abs(data[p])
            total += v
            if v > col_max[indices[p]]:
                col_max[indices[p]] = v
        row_sum[i] = total


class Shard:
    """One shard's examples on its worker, plus the run's cached state."""

    def __init__(self, data, index):
        X = self.X = data.X
        self.indptr, self.indices, self.data = X.indptr, X.indices, X.data
        self.width = X.shape[1]
        self.n = X.shape[0]
        self.y = np.asarray(data.y, dtype=np.float64)
        self.factors = data.cost
        self.lines = data.line_numbers
        self.source = data.source
        self.index = index
        self.d = self.width
        self.bias = 0.0
        self.n_classes = 0
        self.state = {}

    def __sizeof__(self):
        # What Dask weighs when it places a task that needs the shard (its default,
        # sys.getsizeof, would see a small object and move it to any idle worker).
        return object.__sizeof__(self) + sum(
            a.nbytes for a in (self.indptr, self.indices, self.data, self.y)
        )

    def costs(self, scale):
        """C_i = scale·cost_i (cost_i SVMlight's cost: factor, 1 if none)."""
        key = ("costs", scale)
        if key not in self.state:
            self.state[key] = (
                np.full(self.n, scale)
                if self.factors is None
                else scale * np.asarray(self.factors, dtype=np.float64)
            )
        return self.state[key]

    def classes(self):
        if "classes" not in self.state:
            self.state["classes"] = self.y.astype(np.int64)
        return self.state["classes"]

    def outputs(self, key, w):
        """x_i·w (n,) or every class's score (n, k), cached under ``key``."""
        cache = self.state.setdefault("out", {})
        if key not in cache:
            if w is None:
                raise StateLost(key)
            if self.n_classes:
                out = np.empty((self.n, self.n_classes))
                # W (d, k) in the layout of Crammer-Singer's Ψ (x_j of class c at j·k + c);
                # the row kernel sums each row in its stored order (no block threads).
                W = np.ascontiguousarray(w.reshape(self.d, self.n_classes))
                rows_times(self.indptr, self.indices, self.data, 0, self.n, W, out)
            else:
                # SciPy's CSR product sums each row in stored order, as a plain loop
                # would (the same bits), and measured faster than one in numba.
                out = self.X @ w[: self.width]
                if self.bias != 0.0:
                    out += self.bias * w[self.d]
            cache[key] = out
        return cache[key]

    def keep_outputs(self, *keys):
        cache = self.state.setdefault("out", {})
        for key in list(cache):
            if key not in keys:
                del cache[key]


def _load(loader, index):
    return Shard(loader(), index)


def _summary(shard):
    """What the client needs to know of a shard: sizes, global bounds, the labels."""
    X_max = np.zeros(shard.width)
    abs_rows = np.zeros(shard.n)
    _abs_bounds(shard.indptr, shard.indices, shard.data, X_max, abs_rows)
    y = shard.y
    not_pm1 = np.flatnonzero(np.abs(y) != 1)
    not_class = np.flatnonzero((y != np.round(y)) | (y < 1))
    first = lambda rows: (
        None
        if not len(rows)
        else (  # noqa: E731
            shard.lines[rows[0]] if shard.lines is not None else None,
            float(y[rows[0]]),
        )
    )
    bad_cost = None
    if shard.factors is not None:
        f = np.asarray(shard.factors, dtype=np.float64)
        bad = np.flatnonzero(~((f > 0) & np.isfinite(f)))
        if len(bad):
            bad_cost = (shard.lines[bad[0]] if shard.lines is not None else None, float(f[bad[0]]))
    return dict(
        n=shard.n,
        width=shard.width,
        nnz=len(shard.data),
        col_max=X_max,
        row_norm=float(abs_rows.max()) if shard.n else 0.0,
        max_factor=float(np.max(shard.factors)) if shard.factors is not None and shard.n else 1.0,
        not_pm1=first(not_pm1),
        not_class=first(not_class),
        n_pos=int(np.count_nonzero(y == 1)),
        n_neg=int(np.count_nonzero(y == -1)),
        y_min=float(y.min()) if shard.n else math.inf,
        y_max=float(y.max()) if shard.n else -math.inf,
        bad_cost=bad_cost,
        source=shard.source,
    )


def _prepare(shard, d, bias, n_classes):
    shard.d, shard.bias, shard.n_classes = d, float(bias), int(n_classes)
    shard.state = {}
    return shard


def _size(shard):
    return shard.n


def _timed(fn):
    def run(*args):
        t0 = time.perf_counter()
        result = fn(*args)
        return result, time.perf_counter() - t0

    run.__name__ = fn.__name__
    run.__qualname__ = fn.__qualname__
    return run


def _scalar_acc(columns, sig):
    return np.zeros((columns, sig.shape[1]))


@_timed
def _cut_at(shard, key, w, p, sig_g, sig_s):
    """The most violated cut at w (1-slack, ``cp_learn -w 3``): folds of g, and of c."""
    out = shard.outputs(key, w)
    shard.keep_outputs()
    costs = shard.costs(p["scale"])
    acc_s = _scalar_acc(1, sig_s)
    if shard.n_classes:
        return _shard_class_cut(
            shard, out, costs, p["loss"], p["margin_rescaling"], acc_s, sig_s, sig_g
        )
    _, acc_g, nv = _binary_cut(
        shard, out, p["a"], p["b"], p["cscale"], p["wscale"], costs, acc_s, sig_s, sig_g
    )
    return acc_g[:, 1:].copy(), acc_s, nv


def _ocas_cut(shard, out_c, p, sig_g, sig_s):
    """OCAS's cut where the outputs are out_c; binary incrementally from the last."""
    costs = shard.costs(p["scale"])
    acc_s = _scalar_acc(1, sig_s)
    if shard.n_classes:
        return _shard_class_cut(shard, out_c, costs, p["loss"], True, acc_s, sig_s, sig_g)
    coef, acc_g, nv = _binary_cut(
        shard,
        out_c,
        p["loss"],
        p["margin"],
        p["loss"],
        p["margin"],
        costs,
        acc_s,
        sig_s,
        sig_g,
        shard.state.get("cut"),
    )
    shard.state["cut"] = (coef, acc_g)
    return acc_g[:, 1:].copy(), acc_s, nv


def _risk(shard, out, p, sig_r):
    acc = _scalar_acc(1, sig_r)
    costs = shard.costs(p["scale"])
    if shard.n_classes:
        _class_risk(shard.y, costs, out, p["loss"], acc, sig_r, 0)
    else:
        _hinge_risk(shard.y, costs, out, p["loss"], p["margin"], acc, sig_r, 0)
    return acc


@_timed
def _ocas_at(shard, keep, key, w, p, sig_g, sig_s, sig_r):
    """The first OCAS iteration (and -m 0): loss and cut at w itself."""
    out = shard.outputs(key, w)
    shard.keep_outputs(key, keep)
    risk = _risk(shard, out, p, sig_r)
    acc_g, acc_s, nv = _ocas_cut(shard, out, p, sig_g, sig_s)
    return risk, acc_g, acc_s, nv


def _line(shard, it, kb, wb, kt, wt, p, sig):
    """This iteration's breakpoints along w_b → w_t (computed once, then cached)."""
    line = shard.state.get("line")
    if line is not None and line[0] == it:
        return line
    out_b, out_t = shard.outputs(kb, wb), shard.outputs(kt, wt)
    shard.keep_outputs(kb, kt)
    costs = p["C"] * shard.costs(p["scale"])
    acc = _scalar_acc(2, sig)
    if shard.n_classes:
        at, jump = _class_breakpoints(shard.y, out_b, out_t, costs, p["loss"], acc, sig)
    else:
        at, jump = _binary_breakpoints(
            shard.y, out_b, out_t, costs, p["loss"], p["margin"], acc, sig
        )
    line = shard.state["line"] = (it, at, jump, acc)
    return line


def _bucket_sums(at, jump, cand, sig, per_bucket):
    acc = np.zeros((len(cand) + 1, sig.shape[1]))
    counts = np.zeros(len(cand) + 1, np.int64)
    wide = np.repeat(sig[:1], len(cand) + 1, axis=0)
    samples = _buckets(at, jump, cand, acc, wide, counts, per_bucket)
    return acc, counts, samples


@_timed
def _ocas_outputs(shard, it, kb, wb, kt, wt, p, sig, whole, grid):
    """The slope at 0 and the breakpoints: all of them if at most ``whole`` (the
    search then needs no further round), else their jump sums on the global step
    ``grid`` (as :func:`_ocas_eval`), so that the client can bracket the step at once."""
    _, at, jump, acc = _line(shard, it, kb, wb, kt, wt, p, sig)
    m = len(at)
    if m <= whole:
        return acc, m, None, (at, jump)
    return acc, m, _bucket_sums(at, jump, grid, sig, GRID_SAMPLES), None


@_timed
def _ocas_eval(shard, it, kb, wb, kt, wt, p, sig, cand):
    _, at, jump, _ = _line(shard, it, kb, wb, kt, wt, p, sig)
    return _bucket_sums(at, jump, cand, sig, BUCKET_SAMPLES)


@_timed
def _ocas_gather(shard, it, kb, wb, kt, wt, p, sig, lo, hi):
    _, at, jump, _ = _line(shard, it, kb, wb, kt, wt, p, sig)
    inside = (at > lo) & (at <= hi)
    return at[inside], jump[inside]


def _moved_risk_grid(rg, step):
    """The loss's grid at w_b + step·(w_t − w_b), from a bound on |w| there (|1−step|·
    max|w_b| + step·max|w_t|) that needs no vector, so a worker can form it too."""
    w_max = abs(1.0 - step) * rg["wb_max"] + step * rg["wt_max"]
    return fold_grid(
        rg["cost_bound"] * (rg["loss"] + rg["spread"] * 4.0 * rg["radius"] * w_max), rg["n_terms"]
    )


def _final_step(search, pieces):
    """The exact step from the breakpoints gathered in the interval holding it (the
    same on the client and on every worker: exact sums, positions sorted)."""
    A0, B0, G, J_lo, sig = search
    at = np.concatenate([p[0] for p in pieces])
    jump = np.concatenate([p[1] for p in pieces])
    order = np.argsort(at, kind="stable")
    kind, t, J_end = _walk(A0, np.concatenate([[B0], G[0]]), J_lo, at[order], jump[order], sig)
    if kind == 0:
        return float(t)
    return -exact_scalar(B0, G, J_end) / A0 if A0 > 0.0 else 0.0


@_timed
def _ocas_move(shard, kb, wb, kt, wt, k_new, step, p, sig_g, sig_s, rg, pieces=None):
    """w_b moves by ``step`` towards w_t (``step`` found here from the gathered
    ``pieces`` if given): the new outputs (from the old ones, as the single-machine
    oracle, or from w if they were lost), the loss there and the cut at
    w_c = (1−λ)·w_b + λ·w_t."""
    first_seconds = 0.0
    if pieces is not None:
        step = _final_step(step, [r for r, _ in pieces])
        first_seconds = max(seconds for _, seconds in pieces)
    sig_r = _moved_risk_grid(rg, step)
    cache = shard.state.setdefault("out", {})
    out_t = shard.outputs(kt, wt)
    if k_new not in cache:
        if kb in cache or step == 0.0:
            out_b = shard.outputs(kb, wb)
            cache[k_new] = out_b + step * (out_t - out_b)
        elif wb is None:
            raise StateLost(kb)
        else:
            cache[k_new] = shard.outputs(k_new, wb + step * (wt - wb))
    out_b = cache[k_new]
    shard.keep_outputs(k_new)
    risk = _risk(shard, out_b, p, sig_r)
    mu = p["cut_lambda"]
    acc_g, acc_s, nv = _ocas_cut(shard, (1.0 - mu) * out_b + mu * out_t, p, sig_g, sig_s)
    return risk, acc_g, acc_s, nv, step, first_seconds


def _errors(shard, key, w):
    out = shard.outputs(key, w)
    if shard.n_classes:
        return int(np.count_nonzero(np.argmax(out, axis=1) + 1 != shard.y))
    return int(np.count_nonzero(np.sign(out) != shard.y))


# -- the client side ------------------------------------------------------------------------


def parse_scheduler(spec: str):
    """('local', N) for ``local:N``, else ('address', spec)."""
    if spec.startswith("local:"):
        try:
            n = int(spec[6:])
        except ValueError:
            n = 0
        if n < 1:
            raise OptionError(f"expected --scheduler local:N with N >= 1 workers, got {spec!r}")
        return "local", n
    if not spec:
        raise OptionError("expected --scheduler ADDRESS (e.g. tcp://host:8786) or local:N")
    return "address", spec


class Session:
    """A dask.distributed client on an existing scheduler (``ADDRESS``) or on a
    LocalCluster of N single-threaded worker processes (``local:N``)."""

    def __init__(self, spec: str, timeout=None):
        kind, value = parse_scheduler(spec)
        try:
            import dask
            from distributed import Client, LocalCluster
        except ImportError:
            raise OptionError(DASK_MISSING) from None
        self.cluster = None
        import logging

        if kind == "local":
            # Stealing would copy a shard (and its cache) to an idle worker; with one
            # task per shard and round there is nothing to balance.
            import warnings

            with (
                dask.config.set({"distributed.scheduler.work-stealing": False}),
                warnings.catch_warnings(),
            ):
                warnings.simplefilter("ignore")  # e.g. "port 8787 in use": not ours to say
                self.cluster = LocalCluster(
                    n_workers=value,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=logging.CRITICAL,
                )
            self.client = Client(self.cluster)
        else:
            # Dask's connect timeout (distributed.comm.timeouts.connect, 30 s unless
            # configured, e.g. DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=5s).
            timeout = timeout or dask.config.get("distributed.comm.timeouts.connect")
            try:
                self.client = Client(value, timeout=timeout)
            except (OSError, TimeoutError) as e:
                raise InputError(
                    f"cannot reach the Dask scheduler at {value} within "
                    f"{timeout} ({type(e).__name__})"
                ) from None

    @property
    def n_workers(self) -> int:
        return len(self.client.scheduler_info()["workers"])

    def close(self):
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ShardedData:
    """The training set as shards on the workers: loaded once by ``loaders`` (callables
    run on the workers), summarised for the client (sizes, bounds, labels)."""

    def __init__(self, session, loaders, locate=None):
        self.session = session
        client = session.client
        self.locate = locate
        self.loaded = [
            client.submit(_load, loader, i, pure=False) for i, loader in enumerate(loaders)
        ]
        self.summaries = client.gather(
            [client.submit(_summary, f, pure=False) for f in self.loaded]
        )
        s = self.summaries
        self.n_examples = sum(x["n"] for x in s)
        self.n_features = max(x["width"] for x in s)
        self.nnz = sum(x["nnz"] for x in s)
        self.col_max = np.zeros(self.n_features)
        for x in s:
            np.maximum(
                self.col_max[: len(x["col_max"])],
                x["col_max"],
                out=self.col_max[: len(x["col_max"])],
            )
        self.row_norm = max(x["row_norm"] for x in s)
        self.max_factor = max(x["max_factor"] for x in s)
        self.shards = None

    def global_line(self, shard, line):
        if line is None or self.locate is None:
            return line
        return self.session.client.submit(self.locate[shard], line, pure=False).result()

    def first_bad(self, key):
        for i, x in enumerate(self.summaries):
            if x[key] is not None:
                line, value = x[key]
                return x["source"], self.global_line(i, line), value
        return None

    def prepare(self, d, bias=0.0, n_classes=0):
        client = self.session.client
        self.shards = [
            client.submit(_prepare, f, d, bias, n_classes, pure=False) for f in self.loaded
        ]
        # Waits for them (and fails if one did) without bringing the shards here.
        client.gather([client.submit(_size, f, pure=False) for f in self.shards])


class _Rounds:
    """Submits one task per shard, gathers, and books the time: compute is the slowest
    task, communication the rest of the round's wall time."""

    def __init__(self, session, shards):
        self.client = session.client
        self.shards = shards
        self.rounds = 0
        self.compute = 0.0
        self.communication = 0.0
        self._where = None
        self._checked = 0.0
        self.by_task = {}  # compute seconds of each kind of round

    def _placement(self):
        """The worker holding each shard: its tasks run there (a shard copied elsewhere
        would leave its cache behind). Asked again, at most every PLACEMENT_CHECK
        seconds (each asking is a round trip), when one of them has left; until then
        a task pinned to a lost worker runs where the scheduler puts its shard."""
        now = time.monotonic()
        if self._where is not None and now - self._checked < PLACEMENT_CHECK:
            return self._where
        self._checked = now
        live = self.client.scheduler_info().get("workers", {})
        if self._where is None or any(a not in live for a in self._where.values()):
            held = self.client.who_has(self.shards)
            self._where = {s.key: held[s.key][0] for s in self.shards if held.get(s.key)}
        return self._where

    def __call__(self, fn, *args):
        return self.chained(None, (), fn, *args)

    def chained(self, first, first_args, then, *args):
        """One round trip: ``then`` on every shard, after (if given) ``first`` on every
        shard, whose results ``then`` gets as its last argument, all of them (they
        travel between the workers; ``then`` returns the slowest of them last)."""
        t0 = time.perf_counter()
        where = self._placement()

        def submit(fn, shard, *extra):
            return self.client.submit(
                fn,
                shard,
                *extra,
                pure=False,
                allow_other_workers=True,
                workers=[where[shard.key]] if shard.key in where else None,
            )

        if first is not None:
            stage = [submit(first, shard, *first_args) for shard in self.shards]
            args = args + (stage,)
        results = self.client.gather([submit(then, shard, *args) for shard in self.shards])
        wall = time.perf_counter() - t0
        slowest = max(seconds + (r[-1] if first is not None else 0.0) for r, seconds in results)
        name = then.__name__.lstrip("_")
        self.by_task[name] = self.by_task.get(name, 0.0) + slowest
        self.rounds += 1
        self.compute += slowest
        self.communication += max(0.0, wall - slowest)
        return [r for r, _ in results]

    def scatter(self, w):
        t0 = time.perf_counter()
        future = self.client.scatter(w, broadcast=True, hash=False)
        self.communication += time.perf_counter() - t0
        return future

    def ship(self, w):
        """w itself (it travels with each task) or, if large, a future on every worker."""
        return w if w.nbytes <= SHIP_INLINE else self.scatter(w)

    def snapshot(self):
        return self.rounds, self.compute, self.communication


class _ShapeOnly(SimpleNamespace):
    """What LinearCutOracle reads of a problem: its sizes."""


class ClusterCutOracle(LinearCutOracle):
    """The 1-slack oracle of ``cp_learn -w 3`` on the cluster: the most violated cut at
    w, summed exactly over the shards. ``spec`` gives the problem's scales (see
    :func:`cut_spec`)."""

    def __init__(self, data: ShardedData, size_psi, spec):
        super().__init__(_ShapeOnly(size_psi=size_psi, n_examples=data.n_examples))
        self.data = data
        self.spec = spec
        self.rounds = _Rounds(data.session, data.shards)
        n = data.n_examples
        cost_bound = spec["scale"] * data.max_factor
        col = _column_bounds(data, size_psi, spec.get("n_classes", 0), spec.get("bias", 0.0))
        self.sig_g = self.rounds.scatter(fold_grid(col * cost_bound * spec["g_scale"], n))
        self.sig_s = fold_grid(cost_bound * spec["c_bound"], n)
        self._version = 0
        self.seconds = {"output": 0.0, "line_search": 0.0, "cut": 0.0}
        self.line_search_rounds = 0

    def separate(self, alpha, threshold=None):
        w = self.weights(alpha)
        self._version += 1
        future = self.rounds.ship(w)
        t0 = time.perf_counter()
        results = self.rounds(
            _cut_at, ("w", self._version), future, self.spec, self.sig_g, self.sig_s
        )
        self.oracle_calls += self.data.n_examples
        acc_g = sum(r[0] for r in results)
        acc_s = sum(r[1] for r in results)
        self.seconds["cut"] += time.perf_counter() - t0
        return exact_scalar(acc_s), fold_value(acc_g)


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
        self.rounds = _Rounds(data.session, data.shards)
        n = data.n_examples
        self.n_terms = n * max(1, spec.get("n_classes", 0))
        self.cost_bound = spec["scale"] * data.max_factor
        self.radius = data.row_norm + abs(spec.get("bias", 0.0))
        col = _column_bounds(data, size_psi, spec.get("n_classes", 0), spec.get("bias", 0.0))
        wscale = self.cost_bound * (spec["margin"] if self.binary else 1.0)
        self.sig_g = self.rounds.scatter(fold_grid(col * wscale, n))
        self.sig_s = fold_grid(self.cost_bound * spec["loss"], n)
        self.primal = math.inf
        self.w_best = np.zeros(size_psi)
        self._kb = None  # key of w_best's outputs on the workers
        self._wb_future = None
        self._version = 0
        self.seconds = {"output": 0.0, "line_search": 0.0, "cut": 0.0}
        self.line_search_rounds = 0
        self.line_searches = 0
        self.iteration_log = []  # per separate(): rounds, compute, communication

    # Bounds of the per-row terms (global quantities only, so the grids do not depend
    # on the sharding); 4x for the rounding of the products.
    def _out_bound(self, *ws):
        return 4.0 * self.radius * sum(float(np.max(np.abs(w), initial=0.0)) for w in ws)

    @property
    def _rg(self):
        """What :func:`_moved_risk_grid` needs besides the two points' max |w|."""
        return dict(
            cost_bound=self.cost_bound,
            loss=self.spec["loss"],
            spread=2.0 if not self.binary else self.spec["margin"],
            radius=self.radius,
            n_terms=self.n_terms,
        )

    def _risk_grid(self, w):
        return _moved_risk_grid(
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
        return result

    def _at(self, w_t, kt, wt_future, t0):
        results = self.rounds(
            _ocas_at,
            self._kb,
            kt,
            wt_future,
            self.spec,
            self.sig_g,
            self.sig_s,
            self._risk_grid(w_t),
        )
        self.oracle_calls += self.data.n_examples
        risk = exact_scalar(*(r[0] for r in results))
        f_t = 0.5 * float(w_t @ w_t) + self.C * risk
        if f_t < self.primal:
            self.primal, self.w_best = f_t, w_t
            self._kb, self._wb_future = kt, wt_future
        t1 = time.perf_counter()
        self.seconds["output"] += t1 - t0
        return self._cut(results)

    def _cut(self, results):
        acc_g = sum(r[1] for r in results)
        acc_s = sum(r[2] for r in results)
        return exact_scalar(acc_s), fold_value(acc_g)

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
        results = None
        if isinstance(step, _Pending):
            # The gather of the interval's breakpoints and the move in one round trip:
            # every worker finds the step from all of them.
            try:
                results = self.rounds.chained(
                    _ocas_gather,
                    step.args,
                    _ocas_move,
                    self._kb,
                    self._wb_future,
                    kt,
                    wt_future,
                    k_new,
                    step.search,
                    self.spec,
                    self.sig_g,
                    self.sig_s,
                    rg,
                )
                self.line_search_rounds += 1
            except StateLost:
                if self._wb_future is None:
                    self._wb_future = self.rounds.ship(w_b)
                self.line_searches -= 1  # the same search, finished
                step = self.line_search(A0, B0, w_b, kt, wt_future, w_t)
        if results is None:
            results = self._retried(
                lambda: self.rounds(
                    _ocas_move,
                    self._kb,
                    self._wb_future,
                    kt,
                    wt_future,
                    k_new,
                    step,
                    self.spec,
                    self.sig_g,
                    self.sig_s,
                    rg,
                ),
                w_b,
            )
        step = results[0][4]
        self.w_best = w_b + step * direction
        self.oracle_calls += self.data.n_examples
        self._kb = k_new
        # The workers moved their outputs: w_b itself travels only if one lost them.
        self._wb_future = None
        risk = exact_scalar(*(r[0] for r in results))
        self.primal = 0.5 * float(self.w_best @ self.w_best) + self.C * risk
        cut = self._cut(results)
        self.seconds["cut"] += time.perf_counter() - t1
        return cut

    def _retried(self, round_, w_b):
        """``round_()``, again with w_b shipped if a worker no longer had its outputs."""
        try:
            return round_()
        except StateLost:
            if self._wb_future is not None:
                raise
            self._wb_future = self.rounds.ship(w_b)
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
                if self._wb_future is None:
                    self._wb_future = self.rounds.ship(w_b)
                continue
        else:
            raise RuntimeError("the cluster keeps losing workers during the line search")
        self.line_search_rounds += self.rounds.rounds - rounds_before
        return step

    def _search(self, A0, B0, w_b, kt, wt_future, w_t, chain):
        it = kt
        sig = self._line_grid(w_b, w_t)
        limit = max(MIN_GATHER, len(w_b))
        first = self.rounds(
            _ocas_outputs,
            it,
            self._kb,
            self._wb_future,
            kt,
            wt_future,
            self.spec,
            sig,
            limit // len(self.data.shards),
            STEP_GRID,
        )
        args = (it, self._kb, None, kt, None, self.spec, sig)
        G = sum(r[0][:1] for r in first)
        count = sum(r[1] for r in first)

        def D_sign(t, J):
            return _exact_sign(np.concatenate([[A0 * t, B0], G[0], J[0]]))

        def root(J):
            return -exact_scalar(B0, G, J) / A0 if A0 > 0.0 else 0.0

        if D_sign(0.0, np.zeros((1, sig.shape[1]))) >= 0:
            return 0.0
        lo, hi, J_lo, inside = -math.inf, math.inf, np.zeros((1, sig.shape[1])), count
        if all(r[3] is not None for r in first):
            pieces = [r[3] for r in first]
        else:
            # Jump sums on the global grid: the workers' and, for the shards that sent
            # all their breakpoints, the client's own (exact sums: the same bits).
            cand = STEP_GRID
            results = [
                r[2]
                if r[2] is not None
                else _bucket_sums(r[3][0], r[3][1], cand, sig, GRID_SAMPLES)
                for r in first
            ]
            while True:
                acc = sum(r[0] for r in results)
                counts = sum(r[1] for r in results)
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
                found = np.concatenate([r[2][b] for r in results])
                samples = np.unique(found[~np.isnan(found) & (found > lo) & (found < hi)])
                if inside <= limit or not len(samples):
                    break
                cand = _spread(samples, MAX_CANDIDATES)
                results = self.rounds(_ocas_eval, *args, cand)
            if inside == 0:
                return min(root(J_lo), hi)
            search = (A0, B0, G, J_lo, sig[:1].copy())
            if chain:
                return _Pending(search=search, args=args + (lo, hi))
            pieces = self.rounds(_ocas_gather, *args, lo, hi)
        return _final_step((A0, B0, G, J_lo, sig[:1].copy()), pieces)

    def training_error(self):
        client = self.data.session.client
        wb = self._wb_future if self._wb_future is not None else self.rounds.ship(self.w_best)
        futures = [
            client.submit(_errors, s, self._kb or ("w", -1), wb, pure=False)
            for s in self.data.shards
        ]
        return sum(client.gather(futures)) / max(1, self.data.n_examples)


def _spread(values, m):
    """At most m of the sorted ``values``, evenly spread."""
    if len(values) <= m:
        return np.ascontiguousarray(values)
    return np.ascontiguousarray(values[np.linspace(0, len(values) - 1, m).round().astype(int)])
