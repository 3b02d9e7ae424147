"""SVMhmm's Ψ layout and the Viterbi decoders against brute-force enumeration.

The references here score every tagging of a tiny random sentence with an explicit
Ψ(x, y) written from SVMhmm's definition (a dense loop over tokens, independent of the
decoders' DP and of psi_sum's sparse products) and take the argmax by enumeration.
"""

import itertools
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from cpsvm.conventions import MARGIN_RESCALING, SLACK_RESCALING
from cpsvm.decoding.segments import selected_starts
from cpsvm.decoding.viterbi import (
    LOSS_HAMMING,
    LOSS_ZERO_ONE,
    HmmLayout,
    emission_scores,
    hamming_losses,
    most_violated,
    psi_sum,
    sequence_scores,
    viterbi,
)

ORDERS = [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (3, 1)]


def reference_psi(x, y, layout):
    """Ψ(x, y) from SVMhmm's definition, in its 1-based model-file indices minus one:
    transition tuple (…, y_{i-1}, y_i) of order m at Σ_k y_{i-k}·K^k (1-based tags),
    emission of tag state s at emitbase + F·s + f."""
    k, f = layout.n_tags, layout.n_features
    psi = np.zeros(layout.size_psi)
    emitbase = sum(k**j for j in range(1, layout.trans_order + 2)) + 1
    for i in range(len(y)):
        for m in range(1, layout.trans_order + 1):
            if i >= m:
                index = sum(y[i - b] * k**b for b in range(m + 1))
                psi[index - 1] += 1
        states = [y[i]]
        if layout.emit_order == 1 and i >= 1:
            states.append(y[i] + y[i - 1] * k)
        for s in states:
            # features 1..F of state s: 1-based emitbase + F·s + 1 .. emitbase + F·s + F
            psi[emitbase + f * s : emitbase + f * s + f] += x[i]
    return psi


def random_problem(rng, k, t, e, lengths, f=4, scale=1.0):
    layout = HmmLayout(f, k, t, e)
    w = rng.normal(scale=scale, size=layout.size_psi)
    n = sum(lengths)
    X = sp.random(n, f, density=0.6, random_state=rng, format="csr")
    X.data = np.round(X.data * 4) / 2  # some ties in features, never in scores
    starts = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    tags = rng.integers(1, k + 1, size=n)
    return layout, w, X, starts, tags


def all_taggings(k, length):
    return itertools.product(range(1, k + 1), repeat=length)


@pytest.mark.parametrize("t,e", ORDERS)
def test_layout_matches_svmhmm_sizes(t, e):
    layout = HmmLayout(7, 5, t, e)
    k, f = 5, 7
    cum = lambda o: sum(k**j for j in range(1, o + 2))  # noqa: E731
    assert layout.size_psi == cum(t) + 1 + (cum(e) + 1) * f
    assert layout.highest_feature_index == layout.size_psi + 1


def test_layout_of_the_reference_model():
    # ewt500.hmm.model: 17 tags, 9290 features, first order: "highest feature index"
    # 167528 and the first transition weight at feature 18 (tags 1 -> 1).
    layout = HmmLayout(9290, 17, 1, 0)
    assert layout.highest_feature_index == 167528
    assert layout.trans_start(1) == 17


def test_bad_orders_are_refused():
    with pytest.raises(ValueError):
        HmmLayout(3, 2, 1, 2)
    with pytest.raises(ValueError):
        HmmLayout(3, 2, 0, 1)
    with pytest.raises(ValueError):
        HmmLayout(3, 2, 4, 0)


@pytest.mark.parametrize("t,e", ORDERS)
def test_psi_sum_and_scores_equal_the_definition(t, e):
    rng = np.random.default_rng(10 * t + e)
    layout, w, X, starts, tags = random_problem(rng, 3, t, e, [1, 4, 2, 5])
    coef = rng.normal(size=4)
    dense = X.toarray()
    ref = sum(
        c * reference_psi(dense[lo:hi], tags[lo:hi], layout)
        for c, lo, hi in zip(coef, starts[:-1], starts[1:])
    )
    np.testing.assert_allclose(psi_sum(coef, tags, X, starts, layout), ref, atol=1e-12)
    E = emission_scores(w, X, layout)
    scores = sequence_scores(E, w, tags, starts, layout)
    ref_scores = [
        w @ reference_psi(dense[lo:hi], tags[lo:hi], layout)
        for lo, hi in zip(starts[:-1], starts[1:])
    ]
    np.testing.assert_allclose(scores, ref_scores, atol=1e-10)
    # a selection of sentences, in another order
    pick = np.array([3, 0])
    sub_tags = np.concatenate([tags[starts[s] : starts[s + 1]] for s in pick])
    np.testing.assert_allclose(
        psi_sum(coef[pick], sub_tags, X, starts, layout, sentences=pick),
        sum(
            c
            * reference_psi(
                dense[starts[s] : starts[s + 1]], tags[starts[s] : starts[s + 1]], layout
            )
            for c, s in zip(coef[pick], pick)
        ),
        atol=1e-12,
    )


def brute_force(x, y, w, layout, objective):
    best, arg = -np.inf, None
    for cand in all_taggings(layout.n_tags, len(x)):
        value = objective(np.array(cand), w @ reference_psi(x, cand, layout))
        if value > best + 1e-12:
            best, arg = value, np.array(cand)
    return best, arg


def value_of(tags, x, w, layout, objective):
    return objective(tags, w @ reference_psi(x, tags, layout))


@pytest.mark.parametrize("t,e", ORDERS)
@pytest.mark.parametrize("loss_weight", [0.0, 1.5])
def test_viterbi_equals_enumeration(t, e, loss_weight):
    rng = np.random.default_rng(100 * t + 10 * e + int(loss_weight))
    k = 3 if t < 3 else 2
    lengths = [1, 2, 3, 4, 5] if t < 3 else [1, 3, 4, 6]
    for _ in range(4):
        layout, w, X, starts, tags = random_problem(rng, k, t, e, lengths)
        E = emission_scores(w, X, layout)
        pred = viterbi(E, w, starts, layout, true_tags=tags, loss_weight=loss_weight)
        dense = X.toarray()
        for lo, hi in zip(starts[:-1], starts[1:]):
            y = tags[lo:hi]
            objective = lambda cand, score: score + loss_weight * np.sum(cand != y)  # noqa
            best, arg = brute_force(dense[lo:hi], y, w, layout, objective)
            np.testing.assert_array_equal(pred[lo:hi], arg)
            assert value_of(pred[lo:hi], dense[lo:hi], w, layout, objective) == pytest.approx(
                best, abs=1e-9
            )


@pytest.mark.parametrize("t,e", [(1, 0), (1, 1), (2, 0), (2, 1)])
@pytest.mark.parametrize(
    "rescaling,loss",
    [
        (SLACK_RESCALING, LOSS_HAMMING),
        (SLACK_RESCALING, LOSS_ZERO_ONE),
        (MARGIN_RESCALING, LOSS_ZERO_ONE),
        (MARGIN_RESCALING, LOSS_HAMMING),
    ],
)
def test_oracles_equal_enumeration(t, e, rescaling, loss):
    rng = np.random.default_rng(7 * t + e + 31 * rescaling + 97 * loss)
    lw = 0.7
    for _ in range(4):
        # small weights: the true tagging is often nearly best, the interesting case
        layout, w, X, starts, tags = random_problem(rng, 3, t, e, [1, 2, 3, 4, 5], scale=0.3)
        E = emission_scores(w, X, layout)
        got = most_violated(
            E, w, starts, layout, tags, rescaling=rescaling, loss=loss, loss_weight=lw
        )
        dense = X.toarray()
        for lo, hi in zip(starts[:-1], starts[1:]):
            x, y = dense[lo:hi], tags[lo:hi]
            true_score = w @ reference_psi(x, y, layout)

            def objective(cand, score):
                wrong = np.sum(cand != y)
                delta = lw * (wrong if loss == LOSS_HAMMING else float(wrong > 0))
                if rescaling == MARGIN_RESCALING:
                    return delta + score
                return delta * (1.0 + score - true_score)

            best, _ = brute_force(x, y, w, layout, objective)
            assert value_of(got[lo:hi], x, w, layout, objective) == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("t,e", [(1, 0), (2, 1)])
def test_beam(t, e):
    rng = np.random.default_rng(5 + t)
    k = 4
    layout, w, X, starts, tags = random_problem(rng, k, t, e, [1, 3, 6, 9, 12], scale=2.0)
    E = emission_scores(w, X, layout)
    exact = viterbi(E, w, starts, layout)
    exact_scores = sequence_scores(E, w, exact, starts, layout)
    narrower_differs = False
    for beam in (1, 2, 3):
        got = viterbi(E, w, starts, layout, beam=beam)
        assert got.min() >= 1 and got.max() <= k and len(got) == len(exact)
        scores = sequence_scores(E, w, got, starts, layout)
        assert np.all(scores <= exact_scores + 1e-12)
        narrower_differs |= bool(np.any(scores < exact_scores - 1e-9))
    assert narrower_differs  # the beam did prune something
    wide = viterbi(E, w, starts, layout, beam=k**t)
    np.testing.assert_array_equal(wide, exact)


def test_ties_are_broken_as_svm_hmm_classify():
    # All scores equal: svm_hmm_classify's first-order pass keeps, for each tag, the
    # first previous tag, and ends in the first (previous, tag) pair: all tags 1.
    layout = HmmLayout(2, 3, 1, 0)
    w = np.zeros(layout.size_psi)
    X = sp.csr_matrix(np.ones((4, 2)))
    starts = np.array([0, 1, 4])
    E = emission_scores(w, X, layout)
    np.testing.assert_array_equal(viterbi(E, w, starts, layout), [1, 1, 1, 1])
    # a tie between two endings: tag 3 after tag 1 beats tag 2 after tag 2, since
    # (previous 1, tag 3) comes first in svm_hmm_classify's loop.
    w[layout.trans_start(1) + 2 + 3 * 0] = 1.0  # 1 -> 3
    w[layout.trans_start(1) + 1 + 3 * 1] = 1.0  # 2 -> 2
    got = viterbi(E, w, np.array([0, 2]), layout)
    np.testing.assert_array_equal(got, [1, 3])


def test_threads_do_not_change_results():
    rng = np.random.default_rng(3)
    layout, w, X, starts, tags = random_problem(rng, 5, 2, 1, list(rng.integers(1, 12, 60)))
    E = emission_scores(w, X, layout)
    one = viterbi(E, w, starts, layout, true_tags=tags, loss_weight=1.0, n_threads=1)
    two = viterbi(E, w, starts, layout, true_tags=tags, loss_weight=1.0, n_threads=2)
    np.testing.assert_array_equal(one, two)
    s1 = most_violated(E, w, starts, layout, tags, rescaling=SLACK_RESCALING, n_threads=1)
    s2 = most_violated(E, w, starts, layout, tags, rescaling=SLACK_RESCALING, n_threads=2)
    np.testing.assert_array_equal(s1, s2)


def test_sentence_selection_and_losses():
    rng = np.random.default_rng(4)
    layout, w, X, starts, tags = random_problem(rng, 4, 1, 0, [3, 1, 5, 2])
    E = emission_scores(w, X, layout)
    full = viterbi(E, w, starts, layout)
    pick = np.array([2, 0])
    part = viterbi(E, w, starts, layout, sentences=pick)
    np.testing.assert_array_equal(part, np.concatenate([full[4:9], full[0:3]]))
    np.testing.assert_array_equal(selected_starts(starts, pick), [0, 5, 8])
    wrong = hamming_losses(tags, full, starts)
    np.testing.assert_array_equal(
        wrong, [np.sum(tags[lo:hi] != full[lo:hi]) for lo, hi in zip(starts[:-1], starts[1:])]
    )


def test_emissions_ignore_features_beyond_the_model():
    rng = np.random.default_rng(8)
    layout, w, X, starts, tags = random_problem(rng, 3, 1, 1, [4, 3], f=4)
    wider = sp.hstack([X, sp.csr_matrix(np.ones((X.shape[0], 2)))], format="csr")
    np.testing.assert_array_equal(emission_scores(w, wider, layout), emission_scores(w, X, layout))
    np.testing.assert_allclose(
        psi_sum(np.ones(2), tags, wider, starts, layout),
        psi_sum(np.ones(2), tags, X, starts, layout),
    )


def test_decoders_run_compiled_without_numba(tmp_path):
    """The decoders' kernels were compiled at install: a fresh process imports no numba."""
    code = (
        "import sys, numpy as np, scipy.sparse as sp\n"
        "from cpsvm.conventions import SLACK_RESCALING\n"
        "from cpsvm.decoding import viterbi as v\n"
        "L = v.HmmLayout(3, 2, 1, 0); w = np.ones(L.size_psi)\n"
        "X = sp.csr_matrix(np.ones((3, 3))); s = np.array([0, 3])\n"
        "E = v.emission_scores(w, X, L); y = np.array([1, 2, 1])\n"
        "v.viterbi(E, w, s, L); v.viterbi(E, w, s, L, true_tags=y, loss_weight=1.0, beam=1)\n"
        "v.most_violated(E, w, s, L, y, rescaling=SLACK_RESCALING)\n"
        "v.sequence_scores(E, w, y, s, L)\n"
        "print('numba' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
