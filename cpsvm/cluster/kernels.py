"""The numba kernels each worker runs on its shard, row by row and without
reassociation, so that every per-row term has the same bits for any sharding; their sums
go into the exact accumulators of :mod:`.numerics`. They release the GIL (nogil), so that
a worker busy with its shard still answers its scheduler and its peers.

Kernels that need no exact sum are not here: a shard's scores X·W are
:func:`cpsvm.sparse_ops.rows_times` (each row summed in its own order), and the
multiclass line search traces each example's envelope with the single-machine walk,
:func:`cpsvm.engine.ocas.upper_envelope`.
"""

from __future__ import annotations

import numpy as np

from ..compiled import njit
from ..engine.hinge import hinge_excess
from ..engine.ocas import class_lines, upper_envelope
from .numerics import deposit, deposit_packed, exact_sign


@njit(cache=True, nogil=True)
def deposit_hinge_risk(y, costs, out, a, b, acc, sig, col):
    """Σ costs_i·max(0, a − b·y_i·out_i) into column ``col`` of ``acc``."""
    for i in range(len(y)):
        e = hinge_excess(a, b, y[i], out[i])
        if e > 0.0:
            deposit(acc, sig, col, costs[i] * e, 1.0)


@njit(cache=True, nogil=True)
def deposit_class_risk(y, costs, out, loss, acc, sig, col):
    """Σ costs_i·max(0, max_{c ≠ y_i} out_ic − out_iy + loss) into column ``col`` of
    ``acc`` (Crammer-Singer's risk, y 1-based)."""
    n, k = out.shape
    for i in range(n):
        yi = int(y[i]) - 1
        slack = 0.0
        for c in range(k):
            if c != yi:
                m = out[i, c] - out[i, yi] + loss
                slack = m if m > slack else slack
        if slack > 0.0:
            deposit(acc, sig, col, costs[i] * slack, 1.0)


@njit(cache=True, nogil=True)
def binary_coef(y, costs, out, a, b, cscale, wscale, old, new, acc_s, sig_s, indptr):
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
            deposit(acc_s, sig_s, 0, costs[i] * cscale, 1.0)
            n_violated += 1
            from_violators += nnz
        else:
            new[i] = 0.0
            from_all += nnz
        if new[i] != old[i]:
            from_old += nnz * ((old[i] != 0.0) + (new[i] != 0.0))
    return n_violated, from_old, from_violators, from_all


@njit(cache=True, nogil=True)
def deposit_rows(indptr, indices, data, bias, d, coef, sign, acc, shift):
    """Deposit sign·coef_i·x_i (the bias feature at column d) for every coef_i ≠ 0 into
    the packed accumulator ``acc``."""
    for i in range(len(coef)):
        c = coef[i]
        if c == 0.0:
            continue
        for p in range(indptr[i], indptr[i + 1]):
            deposit_packed(acc, indices[p], c * data[p], sign, shift)
        if bias != 0.0:
            deposit_packed(acc, d, c * bias, sign, shift)


@njit(cache=True, nogil=True)
def deposit_class_cut(
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
        deposit(acc_s, sig_s, 0, costs[i] * loss, 1.0)
        weight = costs[i] if margin_rescaling else costs[i] * loss
        for p in range(indptr[i], indptr[i + 1]):
            x = weight * data[p]
            deposit_packed(acc_g, indices[p] * k + yi, x, 1.0, shift)
            deposit_packed(acc_g, indices[p] * k + best, x, -1.0, shift)
    return n_violated


@njit(cache=True, nogil=True)
def binary_breakpoints(y, out_b, out_t, costs, loss, margin, acc, sig):
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
            deposit(acc, sig, 0, cost_slope, 1.0)
        crosses = (s < 0.0) if on_hinge else (s > 0.0)
        if crosses:
            at[m] = -a / s
            jump[m] = abs(cost_slope)
            deposit(acc, sig, 1, jump[m], 1.0)
            m += 1
    return at[:m].copy(), jump[:m].copy()


@njit(cache=True, nogil=True)
def class_breakpoints(y, out_b, out_t, costs, loss, acc, sig):
    """The upper envelope of each example's k lines along out_b → out_t, traced by the
    single-machine line search's walk (:func:`cpsvm.engine.ocas.upper_envelope`, ties
    broken alike): slope at 0+ into acc[0], breakpoints returned, their jumps also
    into acc[1] (exact sums)."""
    n, k = out_b.shape
    cap = max(n * (k - 1), 1)  # at most k − 1 breakpoints an example
    at = np.empty(cap)
    jump = np.empty(cap)
    intercepts = np.empty((1, k))  # the example's lines, as upper_envelope's row 0
    slopes = np.empty((1, k))
    intercepts_row, slopes_row = intercepts[0], slopes[0]
    m = 0
    for i in range(n):
        class_lines(out_b, out_t, i, int(y[i]) - 1, loss, intercepts_row, slopes_row)
        first = m
        slope, m = upper_envelope(intercepts, slopes, 0, costs[i], at, jump, m)
        deposit(acc, sig, 0, slope, 1.0)
        for p in range(first, m):
            deposit(acc, sig, 1, jump[p], 1.0)
    return at[:m].copy(), jump[:m].copy()


@njit(cache=True, nogil=True)
def bucket_jumps(at, jump, cand, acc, sig, counts, per_bucket):
    """Jumps summed (exactly) per interval (cand[b-1], cand[b]] (b = len(cand): above
    all), their counts, and up to ``per_bucket`` positions spread over each interval."""
    n = len(at)
    which = np.empty(n, np.int64)
    for p in range(n):
        b = np.searchsorted(cand, at[p])
        which[p] = b
        deposit(acc, sig, b, jump[p], 1.0)
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


@njit(cache=True, nogil=True)
def walk_to_zero(A0, base, J, at, jump, sig):
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
        if exact_sign(terms) >= 0:
            return 1, t, acc
        q = p
        while q < n and at[q] == t:
            deposit(acc, sig, 0, jump[q], 1.0)
            q += 1
        terms[nb + 1 :] = acc[0]
        if exact_sign(terms) >= 0:
            return 0, t, acc
        p = q
    return 1, np.inf, acc


@njit(cache=True, nogil=True)
def abs_bounds(indptr, indices, data, col_max, row_sum):
    """max |x_ij| per column and Σ_j |x_ij| per row, in one pass."""
    for i in range(len(row_sum)):
        total = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            v = abs(data[p])
            total += v
            if v > col_max[indices[p]]:
                col_max[indices[p]] = v
        row_sum[i] = total


@njit(cache=True, nogil=True)
def deposit_emissions(indptr, cols, data, tokens, row_a, row_b, weight, f, acc, sig, seen):
    """SVMhmm's emission terms of δΨ: for each token t (``tokens``) and its feature j < f,
    +weight_t·x_tj into row row_a_t + j and −weight_t·x_tj into row row_b_t + j of the
    folds ``acc`` (grid ``sig``, exact); the rows touched marked in ``seen``."""
    for i in range(len(tokens)):
        t = tokens[i]
        c = weight[i]
        ra = row_a[i]
        rb = row_b[i]
        for p in range(indptr[t], indptr[t + 1]):
            j = cols[p]
            if j < f:
                v = c * data[p]
                deposit(acc, sig, ra + j, v, 1.0)
                deposit(acc, sig, rb + j, v, -1.0)
                seen[ra + j] = 1
                seen[rb + j] = 1


@njit(cache=True, nogil=True)
def deposit_pairs(row_a, row_b, weight, acc, sig, seen):
    """+weight_i into row row_a_i and −weight_i into row row_b_i of the folds ``acc``
    (grid ``sig``, exact; SVMhmm's transition terms of δΨ); rows marked in ``seen``."""
    for i in range(len(row_a)):
        deposit(acc, sig, row_a[i], weight[i], 1.0)
        deposit(acc, sig, row_b[i], weight[i], -1.0)
        seen[row_a[i]] = 1
        seen[row_b[i]] = 1
