"""Dual coordinate descent for the squared hinge (the L2-loss SVM): Hsieh, Chang, Lin,
Keerthi & Sundararajan (ICML 2008), Algorithm 3 with U = ∞ and D_ii = 1/(2·C_i), the
method of LIBLINEAR's ``-s 1``. The passes, the shrinking, the gap checks and the stopping
rules are :mod:`cpsvm.engine.dcd`'s; what differs is the pass and the objectives::

    P(w) = ½|w|² + Σ_i C_i·max(0, 1 − y_i·⟨w, x_i⟩)²
    D(α) = Σ_i α_i − ½|w(α)|² − Σ_i α_i²/(4·C_i),   α_i ≥ 0,   w(α) = Σ_i α_i·y_i·x_i

(at the optimum α_i = 2·C_i·max(0, 1 − y_i·⟨w, x_i⟩)). With no upper bound, an example is
shrunk only at α_i = 0 (LIBLINEAR's rule), and the primal estimate needs no linear part.
"""

from __future__ import annotations

import numpy as np

from ..compiled import njit
from ..sparse_ops import RowBlocks, row_squared_norms
from .dcd import (
    ALPHA,
    LOSS,
    NORM,
    UPPER,
    DcdResult,
    Y,
    _inputs,
    _prefetch_ahead,
    _Problem,
    _result,
    _shuffle,
)

# UPPER holds D_ii = 1/(2·C_i) here (no example has an upper bound).
DIAG = UPPER


@njit(cache=True, nogil=True)
def _squared_hinge_pass(indptr, indices, data, bias, ex, w, index, active, pg_old, seed, sums):
    """One pass over index[:active], shuffled; ``ex`` the examples' table (Y, DIAG, NORM
    (|x_i|² + b²), ALPHA, LOSS: C_i·max(0, 1 − y_i·⟨w, x_i⟩)² when last visited), w[-1]
    the bias weight, ``pg_old`` the last pass's (max, min) projected gradient (±inf:
    shrink nothing). ``sums``: [Σα − ½Σ D_ii·α_i², |w|², the losses]. The shrunk examples
    go after the others in index[:active]. Returns (active, max PG, min PG, updates,
    non-zeros visited)."""
    d = w.shape[0] - 1
    shrunk = index[len(ex) :]  # scratch: the second half of the index array
    _shuffle(index, active, seed)
    pg_max, pg_min = -np.inf, np.inf
    linear, norm2, risk = sums[0], sums[1], sums[2]
    updates = kept = n_shrunk = visited = 0
    for s in range(active):
        _prefetch_ahead(indptr, indices, data, index, s, active, ex)
        i = index[s]
        lo, hi = np.uint64(indptr[i]), np.uint64(indptr[i + 1])
        visited += indptr[i + 1] - indptr[i]
        dot = bias * w[d]
        for p in range(lo, hi):
            dot += data[p] * w[np.uint64(indices[p])]
        e = ex[i]
        yi, a, diag = e[Y], e[ALPHA], e[DIAG]
        slack = max(0.0, 1.0 - yi * dot)
        loss = 0.5 * slack * slack / diag  # C_i·slack²
        risk += loss - e[LOSS]
        e[LOSS] = loss
        g = yi * dot - 1.0 + diag * a
        pg = g
        if a == 0.0:
            if g > pg_old[0]:  # stays at 0
                shrunk[n_shrunk] = i
                n_shrunk += 1
                continue
            pg = min(g, 0.0)
        pg_max = max(pg_max, pg)
        pg_min = min(pg_min, pg)
        if abs(pg) > 1e-12:
            q = e[NORM] + diag
            new = max(a - g / q, 0.0)
            step = (new - a) * yi
            e[ALPHA] = new
            linear += (new - a) - 0.5 * diag * (new * new - a * a)
            norm2 += step * (2.0 * dot + step * e[NORM])
            for p in range(lo, hi):
                w[np.uint64(indices[p])] += step * data[p]
            w[d] += step * bias
            updates += 1
        index[kept] = i
        kept += 1
    for t in range(n_shrunk):  # (a loop: slice assignment took numba seconds to compile)
        index[kept + t] = shrunk[t]
    sums[0], sums[1], sums[2] = linear, norm2, risk
    return kept, pg_max, pg_min, updates, visited


class _BinarySquaredHinge(_Problem):
    def __init__(self, X, y, costs, bias, alpha, w, shrinking):
        ex = self.setup(X, costs, bias, w, 5)
        ex[:, Y], ex[:, DIAG], ex[:, ALPHA], ex[:, LOSS] = y, 0.5 / costs, alpha, costs
        row_squared_norms(X.indptr, X.data, self.bias**2, ex[:, NORM])
        self.y = ex[:, Y]
        self.shrinking = shrinking
        self.pg_old = np.array([np.inf, -np.inf])
        self.pg = (np.inf, -np.inf)
        self.sums[:3] = (self.dual_linear(), w @ w, costs.sum())
        if alpha.any():
            self.objectives()

    def alpha(self):
        return self.ex[:, ALPHA].copy()

    def dual_linear(self):
        alpha = self.ex[:, ALPHA]
        return float(alpha.sum() - 0.5 * (self.ex[:, DIAG] * alpha) @ alpha)

    def run_pass(self, seed):
        X = self.X
        self.active, pg_max, pg_min, updates, visited = _squared_hinge_pass(
            X.indptr, X.indices, X.data, self.bias, self.ex, self.w, self.index,
            self.active, self.pg_old, seed, self.sums,
        )  # fmt: skip
        self.pg = (pg_max, pg_min)
        return pg_max - pg_min, updates, visited

    def phase_done(self, eps):
        pg_max, pg_min = self.pg
        none = self.active == 0
        if none or (pg_max - pg_min <= eps and abs(pg_max) <= eps and abs(pg_min) <= eps):
            if self.active == len(self.ex):
                return "all"
            self.unshrink()
            return "active"
        if self.shrinking:  # LIBLINEAR's threshold: only a positive largest PG
            self.pg_old[0] = pg_max if pg_max > 0 else np.inf
        return None

    def unshrink(self):
        self.active = len(self.ex)
        self.pg_old[:] = (np.inf, -np.inf)

    def objectives(self):
        if self.rows is None:
            self.rows = RowBlocks(self.X)
        out = self.rows.dot(self.w[:-1])
        out += self.bias * self.w[-1]
        slack = np.maximum(0.0, 1.0 - self.y * out)
        self.ex[:, LOSS] = loss = self.costs * slack * slack
        return self.checked(float(loss.sum()))


def squared_hinge_dcd(
    X, y, costs, *, bias=0.0, params=None, alpha=None, w=None, rng=None, callback=None,
    should_stop=None,
) -> DcdResult:  # fmt: skip
    """Minimise ½|w|² + Σ_i C_i·max(0, 1 − y_i·⟨w, x_i⟩)² (labels ±1, ``costs`` the C_i
    or one C) by dual coordinate descent; the arguments and the result as
    :func:`cpsvm.engine.dcd.binary_hinge_dcd`'s (α ≥ 0 only: a warm start is clipped
    below)."""
    X, costs, params = _inputs(X, costs, params)
    n, d = X.shape
    y = np.where(np.asarray(y, dtype=np.float64) > 0, 1.0, -1.0)
    if alpha is None:
        alpha, w = np.zeros(n), np.zeros(d + 1)
    else:
        alpha = np.asarray(alpha, dtype=np.float64)
        if alpha.shape != (n,):
            raise ValueError(f"expected alpha of shape ({n},), got {alpha.shape}")
        clipped = np.maximum(alpha, 0.0)
        if w is not None and np.array_equal(clipped, alpha):
            w = np.asarray(w, dtype=np.float64)
            if w.shape != (d + (bias != 0),):
                raise ValueError(f"expected w of shape ({d + (bias != 0)},), got {w.shape}")
            w = np.append(w, 0.0) if bias == 0 else w.copy()
        else:
            coef = clipped * y
            w = np.append(np.asarray(X.T @ coef).ravel(), bias * coef.sum())
        alpha = clipped
    problem = _BinarySquaredHinge(X, y, costs, bias, alpha, w, params.shrinking)
    return _result(problem, params, rng, callback, should_stop)
