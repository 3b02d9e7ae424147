"""Platt's sigmoid (cpsvm.engine.platt): the fit is LIBSVM's sigmoid_train (Lin, Lin and
Weng), the probabilities stay on the label's side of 0.5, the figures are scikit-learn's."""

import math

import numpy as np
import pytest

from cpsvm.engine.platt import (
    ABOVE_HALF,
    BELOW_HALF,
    brier_score,
    fit_sigmoid,
    log_loss,
    probabilities,
    sigmoid,
)


def libsvm_sigmoid_train(dec_values, labels):
    """svm.cpp's sigmoid_train, statement by statement (scalar loops)."""
    prior1 = sum(1.0 for y in labels if y > 0)
    prior0 = len(labels) - prior1
    max_iter, min_step, sigma, eps = 100, 1e-10, 1e-12, 1e-5
    hi, lo = (prior1 + 1.0) / (prior1 + 2.0), 1 / (prior0 + 2.0)
    t = [hi if y > 0 else lo for y in labels]
    A, B = 0.0, math.log((prior0 + 1.0) / (prior1 + 1.0))

    def f(A, B):
        total = 0.0
        for d, ti in zip(dec_values, t):
            z = d * A + B
            total += (
                ti * z + math.log1p(math.exp(-z))
                if z >= 0
                else (ti - 1) * z + math.log1p(math.exp(z))
            )
        return total

    fval = f(A, B)
    for _ in range(max_iter):
        h11, h22, h21, g1, g2 = sigma, sigma, 0.0, 0.0, 0.0
        for d, ti in zip(dec_values, t):
            z = d * A + B
            if z >= 0:
                p, q = math.exp(-z) / (1.0 + math.exp(-z)), 1.0 / (1.0 + math.exp(-z))
            else:
                p, q = 1.0 / (1.0 + math.exp(z)), math.exp(z) / (1.0 + math.exp(z))
            d2 = p * q
            h11 += d * d * d2
            h22 += d2
            h21 += d * d2
            d1 = ti - p
            g1 += d * d1
            g2 += d1
        if abs(g1) < eps and abs(g2) < eps:
            break
        det = h11 * h22 - h21 * h21
        dA, dB = -(h22 * g1 - h21 * g2) / det, -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= min_step:
            newA, newB = A + step * dA, B + step * dB
            newf = f(newA, newB)
            if newf < fval + 0.0001 * step * gd:
                A, B, fval = newA, newB, newf
                break
            step /= 2.0
        if step < min_step:
            break
    return A, B


def _scores(n, seed, shift=0.0, scale=2.0):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.3, 1.0, -1.0)
    f = scale * y + rng.normal(0, 2.0, n) + shift
    return f, y


@pytest.mark.parametrize("seed, shift", [(0, 0.0), (1, 1.5), (2, -3.0), (3, 40.0)])
def test_fit_is_libsvm_sigmoid_train(seed, shift):
    f, y = _scores(400, seed, shift)
    fitted = fit_sigmoid(f, y)
    A, B = libsvm_sigmoid_train(f.tolist(), y.tolist())
    assert fitted.status == "converged"
    assert fitted.A == pytest.approx(A, rel=1e-9, abs=1e-12)
    assert fitted.B == pytest.approx(B, rel=1e-9, abs=1e-12)


def test_fit_agrees_with_scikit_learns_platt():
    from sklearn.calibration import _sigmoid_calibration

    f, y = _scores(2000, 5, shift=0.7)
    fitted = fit_sigmoid(f, y)
    A, B = _sigmoid_calibration(f, y)  # the same targets and objective, by L-BFGS
    assert fitted.A == pytest.approx(A, rel=1e-4)
    assert fitted.B == pytest.approx(B, rel=1e-3, abs=1e-4)


def test_separable_scores_stop_without_overflow():
    f = np.array([-50.0, -40.0, -30.0, 30.0, 40.0, 50.0])
    fitted = fit_sigmoid(f, np.sign(f))
    assert math.isfinite(fitted.A) and math.isfinite(fitted.B) and fitted.A < 0
    p = sigmoid(f * 1e3, fitted.A, fitted.B)
    assert np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))


def test_fit_refuses_mismatched_input():
    with pytest.raises(ValueError):
        fit_sigmoid([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        fit_sigmoid([], [])


@pytest.mark.parametrize("A, B", [(-2.0, 1.0), (-2.0, -1.0), (-0.5, 3.0), (-3.0, 0.0)])
def test_probability_is_on_the_labels_side_of_one_half(A, B):
    """With B != 0 the sigmoid's 0.5 point is -B/A, not 0: between the two the value is
    held next to 0.5, on the side of the label sign(f) (f > 0: +1); elsewhere it is the
    sigmoid's."""
    f = np.concatenate([np.linspace(-4, 4, 801), [0.0, -0.0, 1e-300, -1e-300, -B / A]])
    p = probabilities(f, A, B)
    assert np.array_equal(p > 0.5, f > 0)
    assert np.array_equal(p < 0.5, f <= 0)
    s = sigmoid(f, A, B)
    consistent = (s > 0.5) == (f > 0)
    assert np.array_equal(p[consistent & (s != 0.5)], s[consistent & (s != 0.5)])
    between = ~consistent
    if B != 0:
        assert between.sum() > 10  # the data do fall between 0 and -B/A
    assert set(p[between & (f > 0)]) <= {ABOVE_HALF}
    assert set(p[between & (f <= 0)]) <= {BELOW_HALF}
    assert np.all(np.diff(probabilities(np.sort(f), A, B)) >= 0)  # still monotone in f


def test_log_loss_and_brier_are_scikit_learns():
    from sklearn.metrics import brier_score_loss
    from sklearn.metrics import log_loss as sk_log_loss

    f, y = _scores(500, 7)
    p = probabilities(f, -1.1, 0.3)
    assert log_loss(y, p) == pytest.approx(sk_log_loss(y, p), rel=1e-12)
    assert brier_score(y, p) == pytest.approx(brier_score_loss(y, p, pos_label=1), rel=1e-12)
    assert log_loss([1.0, -1.0], [1.0, 0.0]) < 1e-10  # clipped, not log(0)
