"""The 1-slack master QP solved in its primal form (SVMstruct's -w 2).

    minimize ½|w|² + C·ξ   subject to  g_k·w + ξ ≥ c_k (every kept cut k),  ξ ≥ 0

over (w, ξ) with quadprog; the cuts' Lagrange multipliers are the dual α. It needs the
cut vectors themselves (linear problems only) and costs O(d³) in the dimension d, so
it serves as a second, independent solver for the working set rather than a fast one.
"""

from __future__ import annotations

import numpy as np
import quadprog

from .qp import IDLE_THRESHOLD, CutWorkingSet, QPResult, kkt_violation

# quadprog needs a strictly convex objective: a tiny curvature on ξ, negligible
# against C (it moves ξ by about _XI_RIDGE·ξ/C).
_XI_RIDGE = 1e-12


class PrimalCutWorkingSet(CutWorkingSet):
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
