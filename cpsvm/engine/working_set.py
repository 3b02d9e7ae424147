"""The working set of cuts of the cutting-plane loop and its master QP.

:class:`CutWorkingSet` keeps only the cuts' inner products (the Gram matrix G), their
offsets h, groups and duals α, and solves the dual QP warm-started from the previous α
(:func:`cpsvm.engine.qp.solve_dual`); the oracle keeps the cut vectors.
:class:`PrimalCutWorkingSet` solves the 1-slack QP in its primal form instead (SVMstruct's
-w 2), from the cut vectors.
"""

from __future__ import annotations

import numpy as np

from .qp import DEFAULT_TOL, IDLE_THRESHOLD, METHODS, QPResult, kkt_violation, solve_dual_trusted

__all__ = ["CutWorkingSet", "PrimalCutWorkingSet"]


def _readonly(array):
    view = array.view()
    view.flags.writeable = False
    return view


class CutWorkingSet:
    """Incrementally grown working set of cuts and its master QP.

    Only inner products are stored: the caller keeps the cut vectors and
    supplies, for each new cut, its offset, its inner products with the
    existing cuts (in the current order) and with itself.

    Parameters
    ----------
    bounds : array_like, shape (n_groups,)
        Bound on the alpha sum of each group id; ``[C]`` for 1-slack.
    tol : float
        Relative KKT tolerance passed to :func:`cpsvm.engine.qp.solve_dual`.
    method : str
        Passed to :func:`cpsvm.engine.qp.solve_dual`; with "auto" every solve is warm-started
        from the previous alpha (zero for new cuts).
    capacity : int
        Initial number of cut slots; doubles when full.
    """

    def __init__(self, bounds, *, tol=DEFAULT_TOL, method="auto", capacity=16):
        bounds = np.array(bounds, dtype=np.float64).reshape(-1)
        if bounds.size == 0 or not np.all(np.isfinite(bounds)) or np.any(bounds < 0):
            raise ValueError("bounds must be a non-empty array of finite values >= 0")
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        self._bounds = bounds
        self._tol = tol
        self._method = method
        self._size = 0
        self._allocate(max(int(capacity), 1))
        self.last_result = None

    def _allocate(self, capacity):
        """Move the live part into arrays of the given capacity."""
        n = self._size
        G = np.zeros((capacity, capacity))
        h = np.zeros(capacity)
        alpha = np.zeros(capacity)
        groups = np.zeros(capacity, dtype=np.int64)
        idle = np.zeros(capacity, dtype=np.int64)
        if n:
            G[:n, :n] = self._G[:n, :n]
            h[:n] = self._h[:n]
            alpha[:n] = self._alpha[:n]
            groups[:n] = self._groups[:n]
            idle[:n] = self._idle[:n]
        self._G, self._h, self._alpha, self._groups, self._idle = G, h, alpha, groups, idle

    # Live views (read-only: mutate through add/remove/solve).
    @property
    def size(self):
        return self._size

    def __len__(self):
        return self._size

    @property
    def G(self):
        return _readonly(self._G[: self._size, : self._size])

    @property
    def h(self):
        return _readonly(self._h[: self._size])

    @property
    def alpha(self):
        return _readonly(self._alpha[: self._size])

    @property
    def groups(self):
        return _readonly(self._groups[: self._size])

    @property
    def idle(self):
        """Consecutive solves after which each cut had alpha == 0."""
        return _readonly(self._idle[: self._size])

    @property
    def bounds(self):
        return _readonly(self._bounds)

    def set_bounds(self, bounds):
        """New bounds on the groups' alpha sums (a path over C): each group's alpha is
        scaled by new/old bound, so the next solve starts feasible and warm."""
        bounds = np.array(bounds, dtype=np.float64).reshape(-1)
        if bounds.shape != self._bounds.shape or not np.all(np.isfinite(bounds) & (bounds >= 0)):
            raise ValueError(f"expected {self._bounds.shape[0]} finite bounds >= 0")
        n = self._size
        old = self._bounds[self._groups[:n]]
        ratio = np.divide(bounds[self._groups[:n]], old, out=np.zeros(n), where=old > 0)
        self._alpha[:n] *= ratio
        self._bounds = bounds
        self.last_result = None

    def add(self, h_new, g_cross, g_self, group=0):
        """Append a cut; return its index.

        Parameters
        ----------
        h_new : float
            Offset of the cut.
        g_cross : array_like, shape (size,)
            Inner products of the new cut vector with the existing ones.
        g_self : float
            Squared norm of the new cut vector.
        group : int
            Group id (index into ``bounds``).
        """
        n = self._size
        g_cross = np.asarray(g_cross, dtype=np.float64).reshape(-1)
        if g_cross.shape != (n,):
            raise ValueError(f"g_cross must have shape ({n},), got {g_cross.shape}")
        if not (0 <= group < self._bounds.shape[0]):
            raise ValueError(f"group {group} out of range for {self._bounds.shape[0]} bounds")
        if not (np.isfinite(h_new) and np.isfinite(g_self) and np.all(np.isfinite(g_cross))):
            raise ValueError("cut inner products and offset must be finite")
        if g_self < 0:
            raise ValueError("g_self is a squared norm and cannot be negative")
        if n == self._G.shape[0]:
            self._allocate(2 * n)
        self._G[n, :n] = g_cross
        self._G[:n, n] = g_cross
        self._G[n, n] = g_self
        self._h[n] = h_new
        self._alpha[n] = 0.0
        self._groups[n] = group
        self._idle[n] = 0
        self._size = n + 1
        return n

    def solve(self):
        """Solve the master QP, warm-started from the current alpha."""
        n = self._size
        result = solve_dual_trusted(
            np.ascontiguousarray(self._G[:n, :n]),
            self._h[:n],
            self._groups[:n],
            self._bounds,
            self._alpha[:n],
            self._tol,
            self._method,
            None,
        )
        self._alpha[:n] = result.alpha
        groups = self._groups[:n]
        group_sums = np.bincount(groups, weights=result.alpha, minlength=self._bounds.shape[0])
        zero = result.alpha <= IDLE_THRESHOLD * group_sums[groups]
        self._idle[:n] = np.where(zero, self._idle[:n] + 1, 0)
        self.last_result = result
        return result

    def remove(self, keep_mask):
        """Keep only the cuts where ``keep_mask`` is True (order preserved).

        alpha of the kept cuts is retained: it stays feasible, and is the
        warm start of the next solve.  ``last_result`` is cleared (it
        describes the old set).
        """
        n = self._size
        keep_mask = np.asarray(keep_mask)
        if keep_mask.shape != (n,) or keep_mask.dtype != np.bool_:
            raise ValueError(f"keep_mask must be a boolean array of shape ({n},)")
        kept = np.flatnonzero(keep_mask)
        k = kept.shape[0]
        if k == n:
            return
        self._G[:k, :k] = self._G[np.ix_(kept, kept)]
        for array in (self._h, self._alpha, self._groups, self._idle):
            array[:k] = array[kept]
        # Clear the freed slots so stale values can never leak into views.
        self._G[k:n, :n] = 0.0
        self._G[:n, k:n] = 0.0
        self._size = k
        self.last_result = None

    def remove_idle(self, max_idle):
        """Drop cuts idle for ``max_idle`` or more solves; return the keep mask."""
        if max_idle < 1:
            raise ValueError("max_idle must be >= 1")
        keep = self._idle[: self._size] < max_idle
        self.remove(keep)
        return keep


# quadprog needs a strictly convex objective: a tiny curvature on ξ, negligible
# against C (it moves ξ by about _XI_RIDGE·ξ/C).
_XI_RIDGE = 1e-12


class PrimalCutWorkingSet(CutWorkingSet):
    """The 1-slack working set whose QP is solved in its primal form (SVMstruct's -w 2):

        minimize ½|w|² + C·ξ   subject to  g_k·w + ξ ≥ c_k (every kept cut k),  ξ ≥ 0

    over (w, ξ) with quadprog; the cuts' Lagrange multipliers are the dual α. It needs the
    cut vectors themselves (linear problems only) and costs O(d³) in the dimension d, so
    it serves as a second, independent solver for the working set rather than a fast one.
    """

    def __init__(self, C: float, vectors):
        """``vectors()`` returns the kept cut vectors, one row per cut, in order."""
        super().__init__([C])
        self.C = float(C)
        self._cut_vectors = vectors

    def solve(self):
        n = self.size
        V = np.asarray(self._cut_vectors(), dtype=np.float64)
        d = V.shape[1]
        G = np.eye(d + 1)
        G[d, d] = _XI_RIDGE
        linear = np.zeros(d + 1)
        linear[d] = -self.C
        constraints = np.zeros((d + 1, n + 1))
        constraints[:d, :n] = V.T
        constraints[d, :] = 1.0
        offsets = np.concatenate([self._h[:n], [0.0]])
        import quadprog  # here: a run that never needs it does not load it

        solution = quadprog.solve_qp(G, linear, constraints, offsets, 0)
        alpha = np.clip(solution[4][:n], 0.0, None)
        total = alpha.sum()
        if total > self.C:
            alpha *= self.C / total
        self._alpha[:n] = alpha
        zero = alpha <= IDLE_THRESHOLD * max(total, 1e-300)
        self._idle[:n] = np.where(zero, self._idle[:n] + 1, 0)
        Galpha = self.G @ alpha
        dual = float(self.h @ alpha - 0.5 * alpha @ Galpha)
        groups = np.zeros(n, dtype=np.int64)
        violation = kkt_violation(self.G, self.h, groups, self.bounds, alpha)
        xi = np.array([max(0.0, float(np.max(self.h - Galpha)))])
        result = QPResult(
            alpha=alpha.copy(),
            dual=dual,
            kkt_violation=float(violation),
            tolerance=np.inf,
            converged=True,
            n_active=int(np.count_nonzero(alpha)),
            xi=xi,
            gap=float(0.5 * alpha @ Galpha + self.C * xi[0] - dual),
            method="primal_quadprog",
        )
        self.last_result = result
        return result
