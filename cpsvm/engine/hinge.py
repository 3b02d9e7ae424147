"""The hinge loss and the multiclass margin, in one place: per example and batched.

Binary: an example with output o = ⟨w, x⟩ (or Σ_k α_k·g_k·φ(x)) and label y = ±1 has the
hinge argument e = a − b·y·o; its slack is max(0, e), and it is a *violator* — its label
flips in the most violated cut — when e > 0. The scales of each convention:

* margin rescaling, Δ = loss_scale, δΨ = b·y·x (b = 2·psi_scale): a = loss_scale;
* slack rescaling, Δ·max(0, 1 − b·y·o): a = 1 and every cost multiplied by Δ;
* with b = 1 the test e > 0 is exactly y·o < a (a − m is exact near a), so callers
  holding y·o against a threshold t use a = t, b = 1.

Every hinge test of the library goes through :func:`hinge_excess` (inlined), so that a
change of the rule — the margin-change bounds will skip examples whose e cannot have
changed sign — is made here once. The batched kernels give what the oracles need from
outputs, labels and costs: the loss, the violators and the cut coefficients.

numba's on-disk cache keys a function on its own file only: after editing
:func:`hinge_excess`, delete the cached kernels of its callers in other modules
(``cpsvm/engine/__pycache__/ocas.*.nb*``) or they keep the old rule.
"""

from __future__ import annotations

import numpy as np

from ..compiled import njit
from ..threads import in_row_chunks


@njit(cache=True, inline="always")
def hinge_excess(a, b, y, out):
    """e = a − b·y·out: the example violates (its hinge is active) when e > 0."""
    return a - b * y * out


@njit(cache=True, fastmath={"reassoc", "contract"})
def hinge_cut(y, out, costs, a, b, coef):
    """One pass over the examples at outputs ``out``: returns the risk
    Σ costs_i·max(0, e_i), the cut offset c = Σ costs_i·a over the violators and their
    number, and fills ``coef`` with each example's weight costs_i·b·y_i in the cut vector
    g = Σ coef_i·x_i (0 for the others). Selects instead of branches, summed in any order
    (fastmath), so that the loop vectorizes."""
    risk = 0.0
    c = 0.0
    n_violated = 0
    for i in range(len(y)):
        e = hinge_excess(a, b, y[i], out[i])
        violated = e > 0.0
        risk += costs[i] * e if violated else 0.0
        c += costs[i] * a if violated else 0.0
        coef[i] = costs[i] * b * y[i] if violated else 0.0
        n_violated += 1 if violated else 0
    return risk, c, n_violated


@njit(cache=True)
def hinge_violators(y, out, a, b):
    """The violators (ascending rows) and their hinge values e_i > 0: the sparse form of
    :func:`hinge_cut`, for oracles whose cut is an expansion over its violators."""
    rows = np.empty(len(y), np.int64)
    excess = np.empty(len(y))
    m = 0
    for i in range(len(y)):
        e = hinge_excess(a, b, y[i], out[i])
        rows[m] = i
        excess[m] = e
        m += 1 if e > 0.0 else 0
    return rows[:m].copy(), excess[:m].copy()


@njit(cache=True)
def hinge_labels(y, out, a, b):
    """The most violated labelling: −y_i for the violators, y_i for the others."""
    labels = np.empty(len(y))
    for i in range(len(y)):
        labels[i] = -y[i] if hinge_excess(a, b, y[i], out[i]) > 0.0 else y[i]
    return labels


def multiclass_most_violated(scores, y, margin_rescaling, loss_scale):
    """Crammer-Singer's loss-augmented argmax: per row of ``scores`` (n, k) and true
    class y_i (1-based), the class maximising Δ − (s_y − s_c) (margin rescaling) or
    Δ·(1 − (s_y − s_c)) (slack rescaling), Δ = ``loss_scale``; the true class (value 0)
    on ties. Returns 1-based classes."""
    out = np.empty(scores.shape[0], np.int64)
    in_row_chunks(
        _most_violated_rows, scores.shape[0], scores, y, margin_rescaling, loss_scale, out
    )
    return out


@njit(cache=True, nogil=True)
def _most_violated_rows(lo, hi, scores, y, margin_rescaling, loss_scale, out):
    """:func:`multiclass_most_violated` of rows lo..hi into ``out``."""
    k = scores.shape[1]
    for i in range(lo, hi):
        yi = y[i] - 1
        best, best_value = yi, 0.0
        for c in range(k):
            if c == yi:
                continue
            gap = scores[i, yi] - scores[i, c]
            value = loss_scale - gap if margin_rescaling else loss_scale * (1.0 - gap)
            if value > best_value:
                best, best_value = c, value
        out[i] = best + 1
