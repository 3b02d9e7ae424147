"""Warm starts from a model's weights alone (--init-model): dual coordinate descent
started from w_0, for ocas_learn -m 2 and cp_learn -w 5.

A model file holds w, not α, and dual coordinate descent keeps w = Σ α_i·y_i·x_i: a
start is derived from w_0. Binary: α_i at its KKT value for the margin at w_0
(:func:`alpha_from_margins`), w recomputed from α. Crammer-Singer: α = 0
(α_i,y_i = C_i and −C_i on the most violating class of each example with a loss took
more passes than 0). Either way w_0, with its objective
P(w_0), is the run's best primal point until a better one is checked: the stopping
rule's gap P(w_best) − D(α) stays a true duality gap, the cold run's rule.
"""

from __future__ import annotations

import numpy as np

from .dcd import binary_hinge_dcd, crammer_singer_dcd


def alpha_from_margins(margins, costs):
    """Binary α to start from a w alone: each α_i at its KKT value for the margin m_i =
    y_i·⟨w, x_i⟩, C_i inside the margin and 0 beyond (C_i/2 on the margin, or α scaled
    to D's best along it, took as many passes or more on a9a from C = 1 to 2)."""
    return np.where(np.asarray(margins, dtype=np.float64) < 1.0, costs, 0.0)


def crammer_singer_losses(scores, y0):
    """Each example's Crammer-Singer loss max(0, max_{m ≠ y_i} s_m + 1 − s_{y_i})."""
    rows = np.arange(len(y0))
    violation = scores + 1.0
    violation[rows, y0] = -np.inf
    return np.maximum(0.0, violation.max(axis=1, initial=-np.inf) - scores[rows, y0])


def dcd_from_weights(X, y, costs, w_0, *, multiclass, n_classes=None, bias=0.0, **run):
    """The DcdResult of dual coordinate descent on ½|w|² + Σ_i C_i·loss_i started from
    ``w_0`` (binary: (d,), the bias weight last when ``bias``; multiclass: (d, k) flat);
    ``run`` the rest of binary_hinge_dcd's or crammer_singer_dcd's arguments."""
    d = X.shape[1]
    w_0 = np.asarray(w_0, dtype=np.float64)
    if not multiclass:
        out = X @ w_0[:d]
        if bias != 0:
            out = out + bias * w_0[d]
        margins = np.where(np.asarray(y) > 0, 1.0, -1.0) * out
        primal = 0.5 * float(w_0 @ w_0) + float(costs @ np.maximum(0.0, 1.0 - margins))
        alpha = alpha_from_margins(margins, costs)
        return binary_hinge_dcd(X, y, costs, bias=bias, alpha=alpha, start=(primal, w_0), **run)
    W = w_0.reshape(d + (bias != 0), -1)
    scores = np.asarray(X @ W[:d])
    if bias != 0:
        scores = scores + bias * W[d]
    loss = crammer_singer_losses(scores, np.asarray(y).astype(np.int64) - 1)
    primal = 0.5 * float(w_0 @ w_0) + float(costs @ loss)
    return crammer_singer_dcd(
        X, y, costs, n_classes=n_classes or W.shape[1], bias=bias, start=(primal, W), **run
    )


def squared_hinge_alpha(X, y, costs, w_0, bias=0.0):
    """The squared hinge's α for a w alone: α_i = 2·C_i·max(0, 1 − m_i), the KKT relation
    of ½|w|² + Σ C_i·max(0, 1 − m_i)² (exact at the optimum), m_i = y_i·⟨w_0, x_i⟩ (the
    bias weight last in ``w_0`` when ``bias``)."""
    d = X.shape[1]
    w_0 = np.asarray(w_0, dtype=np.float64)
    out = X @ w_0[:d]
    if bias != 0:
        out = out + bias * w_0[d]
    margins = np.where(np.asarray(y) > 0, 1.0, -1.0) * out
    return 2.0 * np.asarray(costs, dtype=np.float64) * np.maximum(0.0, 1.0 - margins)
