"""The master QP's compiled steps (numba), driven by :mod:`cpsvm.engine.qp`: the
projection onto the feasible set, the KKT evaluation and tolerance, SMO's pair steps and
the exact active-set refinement (see :func:`cpsvm.engine.qp.solve_dual` for how they are
combined). The checks run after every stage of every solve: in numba they cost a tenth of
the numpy version's dozen array calls (a third of OCAS's QP time on a9a).
"""

import numpy as np

from ..compiled import njit


@njit(cache=True)
def project_feasible(alpha, groups, bounds):
    """Clip to ``alpha >= 0`` and scale groups down into their bounds.

    Afterwards every group sum, as computed in index order (:func:`_group_sums`), is
    ``<=`` its bound exactly (no tolerance).
    """
    alpha = np.maximum(alpha, 0.0) + 0.0  # "+ 0.0" turns -0.0 into 0.0
    n_groups = bounds.shape[0]
    for _ in range(60):  # each pass shrinks offending groups; 1-2 passes suffice
        sums = _group_sums(alpha, groups, n_groups)
        factor = np.ones(n_groups)
        over = False
        for j in range(n_groups):
            if sums[j] > bounds[j]:
                over = True
                factor[j] = bounds[j] / sums[j]
                # If the plain ratio left the sum one ulp over, shrink a little more.
                if factor[j] >= 1.0:
                    factor[j] = 1.0 - 4.0 * np.finfo(np.float64).eps
        if not over:
            return alpha
        for k in range(alpha.shape[0]):
            alpha[k] *= factor[groups[k]]
    raise RuntimeError("could not scale alpha into its group bounds")  # pragma: no cover


@njit(cache=True)
def evaluate_kkt(G, h, groups, bounds, alpha, bound_threshold):
    """KKT violation, primal slacks, dual value and duality gap of alpha
    (:func:`cpsvm.engine.qp.kkt_violation` and the checks of every stage)."""
    m, n_groups = h.shape[0], bounds.shape[0]
    Galpha = G @ alpha if m else np.zeros(0)
    r = h - Galpha
    r_max = np.full(n_groups, -np.inf)
    for k in range(m):
        r_max[groups[k]] = max(r_max[groups[k]], r[k])
    xi = np.maximum(r_max, 0.0)
    sums = _group_sums(alpha, groups, n_groups)
    violation = 0.0
    for k in range(m):
        j = groups[k]
        theta = xi[j] if bounds[j] - sums[j] <= bound_threshold * bounds[j] else 0.0
        violation = max(violation, r[k] - theta)  # r_k <= theta_j
        if alpha[k] > 0.0:  # r_k == theta_j on the support
            violation = max(violation, abs(r[k] - theta))
    dual = h @ alpha - 0.5 * (alpha @ Galpha) if m else 0.0
    # P - D = sum_j (C_j xi_j - sum_{k in j} alpha_k r_k); summed this way it
    # avoids cancelling the large terms of P and D.
    gap = bounds @ xi - (alpha @ r if m else 0.0)
    return violation, xi, dual, max(gap, 0.0)


@njit(cache=True)
def smo_kernel(G, h, groups, bounds, alpha, slack, tol_abs, bound_threshold, max_iter):
    """Pairwise coordinate ascent on the master QP, in place on alpha and slack.

    Each group j is the simplex ``sum_{k in j} alpha_k + slack_j = C_j``; the
    slack variable has gradient 0 and no curvature.  Each step moves mass
    from the variable with the smallest gradient among positive ones to the
    one with the largest (second-order choice of the giving side), i.e. the
    maximal-violating pair in the sense of the KKT conditions.  Returns the
    number of steps and the final violation (from incrementally updated r,
    which the caller re-checks).
    """
    m = h.shape[0]
    n_groups = bounds.shape[0]
    r = h.copy()
    for k in range(m):
        for i in range(m):
            r[k] -= G[k, i] * alpha[i]
    up_value = np.empty(n_groups)
    up_index = np.empty(n_groups, dtype=np.int64)  # -1 means the slack variable
    down_value = np.empty(n_groups)
    slack_floor = bound_threshold * bounds  # smaller slack counts as zero
    steps = 0
    worst = 0.0
    while steps < max_iter:
        # Per group: largest gradient (any variable can gain mass) and
        # smallest gradient among variables that can give mass.
        for j in range(n_groups):
            up_value[j] = 0.0
            up_index[j] = -1
            down_value[j] = 0.0 if slack[j] > slack_floor[j] else np.inf
        for k in range(m):
            j = groups[k]
            if r[k] > up_value[j]:
                up_value[j] = r[k]
                up_index[j] = k
            if alpha[k] > 0.0 and r[k] < down_value[j]:
                down_value[j] = r[k]
        best_group = -1
        worst = 0.0
        for j in range(n_groups):
            if down_value[j] < np.inf and up_value[j] - down_value[j] > worst:
                worst = up_value[j] - down_value[j]
                best_group = j
        if worst <= tol_abs:
            break
        j = best_group
        i = up_index[j]
        r_i = up_value[j]
        g_ii = G[i, i] if i >= 0 else 0.0
        # Giving side: maximise the guaranteed gain (r_i - r_l)^2 / eta,
        # LIBSVM's second-order rule; eta <= 0 means a linear (or
        # rounding-negative) direction, which is best of all.
        best_l = -2
        best_gain = -1.0
        if slack[j] > slack_floor[j] and i >= 0:
            diff = r_i
            eta = g_ii
            gain = np.inf if eta <= 0.0 else diff * diff / eta
            best_l = -1
            best_gain = gain
        for l in range(m):
            if groups[l] != j or l == i or alpha[l] <= 0.0:
                continue
            diff = r_i - r[l]
            if diff <= 0.0:
                continue
            eta = g_ii + G[l, l] - 2.0 * G[i, l] if i >= 0 else G[l, l]
            gain = np.inf if eta <= 0.0 else diff * diff / eta
            if gain > best_gain:
                best_gain = gain
                best_l = l
        if best_l == -2:  # no giver with smaller gradient: nothing to gain
            break
        l = best_l
        r_l = r[l] if l >= 0 else 0.0
        g_ll = G[l, l] if l >= 0 else 0.0
        if i >= 0 and l >= 0:
            eta = g_ii + g_ll - 2.0 * G[i, l]
        else:
            eta = g_ii + g_ll
        available = alpha[l] if l >= 0 else slack[j]
        step = available
        if eta > 0.0:
            step = min((r_i - r_l) / eta, available)
        if step <= 0.0:
            break
        # Apply; a giver that empties is set to exactly 0.
        if l >= 0:
            alpha[l] = 0.0 if step == available else alpha[l] - step
        else:
            slack[j] = 0.0 if step == available else slack[j] - step
        if i >= 0:
            alpha[i] += step
        else:
            slack[j] += step
        for k in range(m):
            delta = 0.0
            if i >= 0:
                delta += G[k, i]
            if l >= 0:
                delta -= G[k, l]
            r[k] -= step * delta
        steps += 1
    return steps, worst


# A face's G_FF counts as safely definite when its Cholesky factor's diagonal spans
# at most this ratio (condition number <= ~1e8): its solve is then accurate to ~1e-8
# before the refinement below. Other faces take the eigendecomposition step.
_DEFINITE_DIAGONAL_RATIO = 1e-6


@njit(cache=True)
def _group_sums(alpha, groups, n_groups):
    sums = np.zeros(n_groups)
    for k in range(alpha.shape[0]):
        sums[groups[k]] += alpha[k]
    return sums


@njit(cache=True)
def active_set_kernel(G, h, groups, bounds, alpha, tol, max_iter, definite_only):
    """The iterations of the active-set refinement (:mod:`cpsvm.engine.qp`), in place on
    alpha. A face whose G_FF is
    safely definite is solved by Cholesky, the bound groups' sums held through the
    Schur complement (EᵀG⁻¹E) θ = EᵀG⁻¹r_F; any other by the eigendecomposition of its
    KKT matrix, following a null direction when the system is inconsistent. Returns
    (alpha, iterations, done); with ``definite_only`` it stops at the first face that is
    not definite, done False."""
    m = h.shape[0]
    n_groups = bounds.shape[0]
    movable = np.empty(m, np.bool_)
    for k in range(m):
        movable[k] = bounds[groups[k]] > 0.0
        if not movable[k]:
            alpha[k] = 0.0
    group_max = np.zeros(n_groups)
    for k in range(m):
        group_max[groups[k]] = max(group_max[groups[k]], alpha[k])
    free = np.empty(m, np.bool_)
    for k in range(m):
        if alpha[k] <= 1e-14 * group_max[groups[k]]:
            alpha[k] = 0.0
        free[k] = alpha[k] > 0.0
    sums = _group_sums(alpha, groups, n_groups)
    at_bound = (bounds > 0.0) & (bounds - sums <= 1e-9 * bounds) & (sums > 0.0)
    h_scale = tol * np.max(np.abs(h))
    r = np.empty(m)
    iteration = 0
    refinements = 0
    trust_cholesky = True  # until a face it passed could not be solved accurately
    while iteration < max_iter:
        iteration += 1
        sums = _snap(alpha, groups, bounds, at_bound)
        free_count = np.zeros(n_groups, np.int64)
        for k in range(m):
            if free[k]:
                free_count[groups[k]] += 1
        pinned = at_bound & (free_count == 1)
        F = np.array([k for k in range(m) if free[k] and not pinned[groups[k]]], np.int64)
        B = np.array([j for j in range(n_groups) if at_bound[j] and not pinned[j]], np.int64)
        n_free, n_bound = F.shape[0], B.shape[0]
        if n_free:
            G_FF = np.empty((n_free, n_free))
            for a in range(n_free):
                for b in range(n_free):
                    G_FF[a, b] = G[F[a], F[b]]
            # Cholesky by hand: LAPACK's raises, and a failed face is an answer here.
            L = np.zeros((n_free, n_free))
            definite = True
            for a in range(n_free):
                for b in range(a + 1):
                    acc = G_FF[a, b]
                    for c in range(b):
                        acc -= L[a, c] * L[b, c]
                    if a == b:
                        if acc <= 0.0:
                            definite = False
                            break
                        L[a, a] = np.sqrt(acc)
                    else:
                        L[a, b] = acc / L[b, b]
                if not definite:
                    break
            if definite:
                diagonal = np.diag(L)
                definite = (
                    diagonal.min() > _DEFINITE_DIAGONAL_RATIO * diagonal.max() and trust_cholesky
                )
            if not definite and definite_only:
                return alpha, iteration - 1, False
            rhs = np.zeros((n_free, 1 + n_bound))
            for a in range(n_free):
                rhs[a, 0] = h[F[a]] - G[F[a]] @ alpha
                for b in range(n_bound):
                    rhs[a, 1 + b] = 1.0 if groups[F[a]] == B[b] else 0.0
            t = 1.0
            if definite:
                solved = _cholesky_solve(L, rhs)
                p = solved[:, 0].copy()
                if n_bound:
                    Et = np.ascontiguousarray(rhs[:, 1:].T)
                    GiE = np.ascontiguousarray(solved[:, 1:])
                    theta = _lu_solve(Et @ GiE, Et @ p)
                    p -= GiE @ theta
            else:
                p, t = _semidefinite_step(
                    G_FF, rhs, n_free, n_bound, 0.25 * kkt_tolerance(G, h_scale, alpha)
                )
            # Ratio test: free alphas hitting 0, open groups hitting their bound.
            blocker_kind, blocker = 0, -1
            for a in range(n_free):
                if p[a] < 0.0:
                    ratio = alpha[F[a]] / -p[a]
                    if ratio < t:
                        t, blocker_kind, blocker = ratio, 1, F[a]
            growth = np.zeros(n_groups)
            for a in range(n_free):
                growth[groups[F[a]]] += p[a]
            for j in range(n_groups):
                if growth[j] > 0.0 and not at_bound[j]:
                    ratio = max(bounds[j] - sums[j], 0.0) / growth[j]
                    if ratio < t:
                        t, blocker_kind, blocker = ratio, 2, j
            if not np.isfinite(t):
                break  # numerically empty ray: give up, the caller checks KKT
            for a in range(n_free):
                alpha[F[a]] = max(alpha[F[a]] + t * p[a], 0.0)
            if blocker_kind == 1:
                alpha[blocker] = 0.0
                free[blocker] = False
                continue
            if blocker_kind == 2:
                at_bound[blocker] = True
                continue
            _snap(alpha, groups, bounds, at_bound)
        # Stationary on the current face: check the dropped constraints. (Only here
        # is all of r needed: O(m²), while a face step costs O(m·|F|) + O(|F|³).)
        support = np.flatnonzero(alpha)
        r = h - G[:, support] @ alpha[support]
        tol_abs = 0.25 * kkt_tolerance(G, h_scale, alpha)  # the refinement's target
        free_count = np.zeros(n_groups, np.int64)
        theta_sum = np.zeros(n_groups)
        for k in range(m):
            if free[k]:
                free_count[groups[k]] += 1
                theta_sum[groups[k]] += r[k]
        theta = np.zeros(n_groups)
        for j in range(n_groups):
            if at_bound[j]:
                theta[j] = theta_sum[j] / max(free_count[j], 1)
        k_best, gain_best = 0, -np.inf
        residual = 0.0
        for k in range(m):
            if free[k]:
                residual = max(residual, abs(r[k] - theta[groups[k]]))
            elif movable[k] and r[k] - theta[groups[k]] > gain_best:
                k_best, gain_best = k, r[k] - theta[groups[k]]
        j_best, bound_gain_best = 0, -np.inf
        for j in range(n_groups):
            if at_bound[j] and -theta[j] > bound_gain_best:
                j_best, bound_gain_best = j, -theta[j]
        if residual > tol_abs and refinements < 3:
            # The solve lost accuracy: solve again for the remaining residual.
            refinements += 1
            continue
        refinements = 0
        if residual > tol_abs and trust_cholesky:
            # Still inaccurate: a singular G_FF whose rounding passed the diagonal test
            # (more free cuts than G's rank, duplicated cuts). Solve the faces from here on
            # by the eigendecomposition, which handles it; found by test_qp's hypothesis.
            if definite_only:
                return alpha, iteration, False
            trust_cholesky = False
            continue
        if max(gain_best, bound_gain_best) <= tol_abs:
            break
        if gain_best >= bound_gain_best:
            free[k_best] = True  # alpha_k wants to grow
        else:
            at_bound[j_best] = False  # the group wants to shrink
    return alpha, iteration, True


@njit(cache=True)
def kkt_tolerance(G, h_scale, alpha):
    """h_scale (tol·max|h|) plus the rounding floor 4·m·eps·max(|G|·alpha) of computing
    the gradient."""
    support = np.flatnonzero(alpha)
    if len(support) == 0:
        return h_scale
    floor = np.max(np.abs(G[:, support]) @ alpha[support])
    return h_scale + 4.0 * G.shape[0] * np.finfo(np.float64).eps * floor


@njit(cache=True)
def _semidefinite_step(G_FF, rhs, n_free, n_bound, tol_abs):
    """The face step (p, longest step length) when G_FF is singular or ill-conditioned:
    the KKT matrix [G_FF sE; sE' 0] is symmetric, so its eigendecomposition gives the
    least-squares solution; a right-hand side with a component in its null space means
    the dual grows linearly along that null direction, which is followed (length ∞)."""
    s = np.max(np.diag(G_FF))
    s = s if s > 0.0 else 1.0  # all-zero cuts: any unit will do
    size = n_free + n_bound
    K = np.zeros((size, size))
    right = np.zeros(size)
    # Loops, not slice assignments: those compile numba's shape-mismatch error path.
    for a in range(n_free):
        for b in range(n_free):
            K[a, b] = G_FF[a, b]
        for b in range(n_bound):
            K[a, n_free + b] = s * rhs[a, 1 + b]
            K[n_free + b, a] = s * rhs[a, 1 + b]
        right[a] = rhs[a, 0]
    eigenvalues, U = np.linalg.eigh(K)
    null = np.abs(eigenvalues) <= 1e-12 * np.max(np.abs(eigenvalues))
    coef = U.T @ right
    if np.linalg.norm(coef[null]) > 0.1 * tol_abs:
        return (U[:, null] @ coef[null])[:n_free], np.inf
    return (U[:, ~null] @ (coef[~null] / eigenvalues[~null]))[:n_free], 1.0


@njit(cache=True)
def _lu_solve(A, b):
    """x with A x = b for a small square A: LU with partial pivoting, as LAPACK's gesv
    (np.linalg.solve in numba compiles a large error-handling path: a slow cold start)."""
    n = A.shape[0]
    M = A.copy()
    x = b.copy()
    for c in range(n):
        pivot = c
        for a in range(c + 1, n):
            if abs(M[a, c]) > abs(M[pivot, c]):
                pivot = a
        if M[pivot, c] == 0.0:
            raise np.linalg.LinAlgError("Matrix is singular to machine precision.")
        if pivot != c:
            for b2 in range(n):
                M[c, b2], M[pivot, b2] = M[pivot, b2], M[c, b2]
            x[c], x[pivot] = x[pivot], x[c]
        for a in range(c + 1, n):
            f = M[a, c] / M[c, c]
            for b2 in range(c + 1, n):
                M[a, b2] -= f * M[c, b2]
            x[a] -= f * x[c]
    for a in range(n - 1, -1, -1):
        acc = x[a]
        for b2 in range(a + 1, n):
            acc -= M[a, b2] * x[b2]
        x[a] = acc / M[a, a]
    return x


@njit(cache=True)
def _snap(alpha, groups, bounds, at_bound):
    """Put bound groups exactly on their bound despite rounding drift; the new sums."""
    sums = _group_sums(alpha, groups, bounds.shape[0])
    for j in range(bounds.shape[0]):
        at_bound[j] = at_bound[j] and sums[j] > 0.0
    for k in range(alpha.shape[0]):
        j = groups[k]
        if at_bound[j]:
            alpha[k] *= bounds[j] / sums[j]
    return _group_sums(alpha, groups, bounds.shape[0])


@njit(cache=True)
def _cholesky_solve(L, rhs):
    """X with L Lᵀ X = rhs, L lower triangular."""
    n, k = rhs.shape
    Y = rhs.copy()
    for c in range(k):
        for a in range(n):
            acc = Y[a, c]
            for b in range(a):
                acc -= L[a, b] * Y[b, c]
            Y[a, c] = acc / L[a, a]
        for a in range(n - 1, -1, -1):
            acc = Y[a, c]
            for b in range(a + 1, n):
                acc -= L[b, a] * Y[b, c]
            Y[a, c] = acc / L[a, a]
    return Y
