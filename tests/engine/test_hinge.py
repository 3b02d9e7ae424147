"""The hinge and multiclass margin kernels against plain numpy written from the definitions,
and the binary problem's one-pass cut against the labelling route."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from cpsvm.conventions import MARGIN_RESCALING, SLACK_RESCALING
from cpsvm.engine.hinge import hinge_cut, hinge_labels, hinge_violators, multiclass_most_violated
from cpsvm.problems.binary.problem import BinaryProblem


def _outputs(rng, n, ties):
    out = rng.standard_normal(n) * 2
    if ties:  # outputs on the hinge's corner (y·o = a/b exactly) and at zero
        out[rng.random(n) < 0.3] = 0.5
        out[rng.random(n) < 0.2] = -0.5
        out[rng.random(n) < 0.1] = 0.0
    return out


@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 50),
    st.booleans(),
    st.sampled_from([(1.0, 1.0), (1.0, 2.0), (100.0, 100.0), (0.01, 1.0)]),
)
def test_hinge_cut_matches_the_definition(seed, n, ties, ab):
    a, b = ab
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    out = _outputs(rng, n, ties) * a / b
    costs = rng.exponential(size=n)
    coef = np.full(n, np.nan)
    risk, c, n_violated = hinge_cut(y, out, costs, a, b, coef)
    slack = np.maximum(0.0, a - b * y * out)
    violated = slack > 0
    assert risk == pytest.approx(float(costs @ slack), rel=1e-12, abs=1e-300)
    assert c == pytest.approx(a * costs[violated].sum(), rel=1e-12, abs=1e-300)
    assert n_violated == violated.sum()
    np.testing.assert_array_equal(coef, np.where(violated, costs * b * y, 0.0))
    rows, excess = hinge_violators(y, out, a, b)
    np.testing.assert_array_equal(rows, np.flatnonzero(violated))
    np.testing.assert_allclose(excess, slack[violated], rtol=1e-15)
    np.testing.assert_array_equal(hinge_labels(y, out, a, b), np.where(violated, -y, y))


def test_threshold_form_is_the_exact_comparison():
    """With b = 1 the kernel's test a − y·o > 0 is exactly y·o < a, for outputs one ulp
    either side of the threshold (the comparison binary problems and kernel oracles
    made before)."""
    a = 0.01
    out = np.array([np.nextafter(a, 0), a, np.nextafter(a, 1), -np.nextafter(a, 0), -a])
    y = np.array([1.0, 1.0, 1.0, -1.0, -1.0])
    rows, _ = hinge_violators(y, out, a, 1.0)
    np.testing.assert_array_equal(rows, np.flatnonzero(y * out < a))
    assert list(rows) == [0, 3]


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 30), st.integers(2, 6), st.booleans())
def test_multiclass_most_violated_matches_the_definition(seed, n, k, margin_rescaling):
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((n, k)).round(1)
    y = rng.integers(1, k + 1, n)
    loss = 1.0 if rng.random() < 0.5 else 100.0
    got = multiclass_most_violated(scores, y, margin_rescaling, loss)
    for i in range(n):
        gap = scores[i, y[i] - 1] - scores[i]
        value = loss - gap if margin_rescaling else loss * (1.0 - gap)
        value[y[i] - 1] = 0.0
        best = value.max()
        # The true class on ties, else the first class reaching the maximum.
        expected = y[i] if value[y[i] - 1] == best else int(np.argmax(value)) + 1
        assert got[i] == expected


@pytest.mark.parametrize("rescaling", [MARGIN_RESCALING, SLACK_RESCALING])
@pytest.mark.parametrize("scales", [(100.0, 50.0), (1.0, 0.5)])
def test_binary_cut_equals_the_labelling_route(rescaling, scales):
    """BinaryProblem.cut (one pass of the hinge kernel) gives the cut that the labelling
    from separate, the losses and Σ weights·δΨ give — written here from the definitions
    Δ = loss·[ŷ ≠ y], δΨ = psi·(y − ŷ)·x."""
    loss, psi = scales
    rng = np.random.default_rng(4)
    X = sp.random(200, 15, density=0.3, format="csr", random_state=rng)
    y = np.where(rng.random(200) < 0.5, 1.0, -1.0)
    problem = BinaryProblem(X, y, loss_scale=loss, psi_scale=psi)
    threshold = (loss if rescaling == MARGIN_RESCALING else 1.0) / (2 * psi)
    w = rng.standard_normal(15) * threshold
    weights = rng.exponential(size=200) / 200
    c, g = problem.cut(w, weights, rescaling)
    m = y * (X @ w)
    flipped = m < threshold
    assert 0 < flipped.sum() < 200
    labels = np.where(flipped, -y, y)
    np.testing.assert_array_equal(problem.separate(w, rescaling), labels)
    delta = loss * flipped
    scale = weights if rescaling == MARGIN_RESCALING else weights * delta
    assert c == pytest.approx(float(weights @ delta), rel=1e-12)
    np.testing.assert_allclose(g, X.T @ (scale * psi * (y - labels)), rtol=1e-12, atol=1e-14)
