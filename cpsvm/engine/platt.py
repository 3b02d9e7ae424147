"""Platt's sigmoid P(y = +1 | f) = 1 / (1 + exp(A·f + B)) of a binary model's decision
value f, fitted by the algorithm of Lin, Lin and Weng (*A note on Platt's probabilistic
outputs for support vector machines*, Machine Learning 68, 2007), as LIBSVM's
``sigmoid_train`` fits it: Newton's method on the regularised targets
t₊ = (N₊ + 1)/(N₊ + 2), t₋ = 1/(N₋ + 2), the Hessian made strictly positive definite by
σ = 1e-12, a backtracking line search (Armijo, 1e-4) halving the step down to 1e-10,
stopped when both gradient components are below 1e-5 or after 100 iterations, every
log(1 + exp(·)) in the form that cannot overflow.

What a model reports (:func:`probabilities`) is the sigmoid held on the side of 0.5
that the model's label is on: a binary model predicts +1 exactly when f > 0, and the
sigmoid's 0.5 point is at f = −B/A, not 0, so between the two the probability is held
just above 0.5 (f > 0) or just below it (f ≤ 0), the doubles next to 0.5: P > 0.5
exactly when the label is +1 and P < 0.5 exactly when it is −1, never 0.5 itself, so
that the larger of P(+1) and 1 − P(+1) is always the label's. Outside that interval the
value is the sigmoid's.

Numerics only: no I/O, nothing said (the callers report the iterations and how it ended).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_ITERATIONS = 100
MIN_STEP = 1e-10
HESSIAN_RIDGE = 1e-12  # σ: H + σI strictly positive definite
GRADIENT_TOLERANCE = 1e-5
SUFFICIENT_DECREASE = 1e-4
# The doubles next to 0.5: a probability held on the +1 or the −1 side of it.
ABOVE_HALF = float(np.nextafter(0.5, 1.0))
BELOW_HALF = float(np.nextafter(0.5, 0.0))


@dataclass(frozen=True)
class Sigmoid:
    """A fitted sigmoid: ``A``, ``B``, the Newton iterations taken and how the fit ended
    (``converged``, ``line search failed``, ``iteration limit``)."""

    A: float
    B: float
    iterations: int = 0
    status: str = "converged"


def _targets(labels: np.ndarray) -> np.ndarray:
    positive = labels > 0
    n_pos = float(np.count_nonzero(positive))
    n_neg = float(len(labels) - n_pos)
    return np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


def _objective(f, t, A, B) -> float:
    """Σ t·(Af+B) + log(1 + exp(−(Af+B))) written without overflow (LIBSVM's two
    branches in one: (t − [z<0])·z + log1p(exp(−|z|)))."""
    z = f * A + B
    return float(np.sum((t - (z < 0)) * z + np.log1p(np.exp(-np.abs(z)))))


def fit_sigmoid(decision, labels) -> Sigmoid:
    """Platt's A, B for decision values ``decision`` of examples labelled ``labels``
    (> 0: +1, else −1), by Lin, Lin and Weng's Newton method (see the module)."""
    f = np.asarray(decision, dtype=np.float64)
    y = np.asarray(labels)
    if f.shape != y.shape or f.ndim != 1 or not len(f):
        raise ValueError("expected as many labels as decision values, at least one")
    n_pos = float(np.count_nonzero(y > 0))
    n_neg = float(len(y) - n_pos)
    t = _targets(y)
    A, B = 0.0, float(np.log((n_neg + 1.0) / (n_pos + 1.0)))
    value = _objective(f, t, A, B)
    status, steps = "iteration limit", 0
    while steps < MAX_ITERATIONS:
        z = f * A + B
        # p = 1/(1+exp(z)) and q = 1 − p, each from exp(−|z|).
        e = np.exp(-np.abs(z))
        p = np.where(z >= 0, e, 1.0) / (1.0 + e)
        q = np.where(z >= 0, 1.0, e) / (1.0 + e)
        d2 = p * q
        h11 = HESSIAN_RIDGE + float(np.dot(f * f, d2))
        h22 = HESSIAN_RIDGE + float(np.sum(d2))
        h21 = float(np.dot(f, d2))
        d1 = t - p
        g1, g2 = float(np.dot(f, d1)), float(np.sum(d1))
        if abs(g1) < GRADIENT_TOLERANCE and abs(g2) < GRADIENT_TOLERANCE:
            status = "converged"
            break
        det = h11 * h22 - h21 * h21
        dA = -(h22 * g1 - h21 * g2) / det
        dB = -(-h21 * g1 + h11 * g2) / det
        slope = g1 * dA + g2 * dB
        step = 1.0
        while step >= MIN_STEP:
            new_A, new_B = A + step * dA, B + step * dB
            new_value = _objective(f, t, new_A, new_B)
            if new_value < value + SUFFICIENT_DECREASE * step * slope:
                A, B, value = new_A, new_B, new_value
                break
            step /= 2.0
        if step < MIN_STEP:
            status = "line search failed"
            break
        steps += 1
    return Sigmoid(A, B, steps, status)


def sigmoid(decision, A: float, B: float) -> np.ndarray:
    """1 / (1 + exp(A·f + B)) of each decision value, without overflow."""
    z = np.asarray(decision, dtype=np.float64) * A + B
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, e, 1.0) / (1.0 + e)


def probabilities(decision, A: float, B: float) -> np.ndarray:
    """P(y = +1) of each decision value as a model reports it: the sigmoid, held just
    above 0.5 where f > 0 and just below where f ≤ 0 when the sigmoid would put it on
    the other side of 0.5 than the label (see the module): P > 0.5 exactly when f > 0."""
    f = np.asarray(decision, dtype=np.float64)
    p = sigmoid(f, A, B)
    return np.where(f > 0, np.maximum(p, ABOVE_HALF), np.minimum(p, BELOW_HALF))


def log_loss(labels, p) -> float:
    """The mean negative log-likelihood of ``labels`` (> 0: +1) under P(y = +1) = ``p``,
    ``p`` clipped to [ε, 1 − ε] (ε the double's machine epsilon, as scikit-learn)."""
    y = np.asarray(labels) > 0
    eps = np.finfo(np.float64).eps
    p = np.clip(np.asarray(p, dtype=np.float64), eps, 1.0 - eps)
    return float(-np.mean(np.where(y, np.log(p), np.log1p(-p))))


def brier_score(labels, p) -> float:
    """The mean squared difference between P(y = +1) = ``p`` and the outcome (1 or 0)."""
    y = (np.asarray(labels) > 0).astype(np.float64)
    return float(np.mean((np.asarray(p, dtype=np.float64) - y) ** 2))
