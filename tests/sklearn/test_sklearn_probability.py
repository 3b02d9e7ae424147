"""probability=True: predict_proba and predict_log_proba as SVC's (absent without it),
Platt's sigmoid fitted as the commands fit it, and the label never disagreeing with the
probability, on data where the sigmoid's 0.5 point is far from the score's 0."""

import numpy as np
import pytest
from conftest import SAMPLES
from sklearn.datasets import load_svmlight_file

from cpsvm.sklearn import (
    ASSETClassifier,
    CuttingPlaneSVC,
    OCASClassifier,
    SampledCutSVC,
    load_model,
)

ESTIMATORS = [
    (OCASClassifier, {}),
    (CuttingPlaneSVC, {}),
    (SampledCutSVC, {"kernel": "rbf", "gamma": 0.05}),
    (ASSETClassifier, {"n_components": 64}),
]


@pytest.fixture(scope="module")
def a9a():
    X, y = load_svmlight_file(str(SAMPLES / "a9a3k.train"))
    Xt, yt = load_svmlight_file(str(SAMPLES / "a9a2k.test"), n_features=X.shape[1])
    return X, np.where(y > 0, "yes", "no"), Xt


@pytest.mark.parametrize("cls, params", ESTIMATORS)
def test_predict_proba_only_with_probability(a9a, cls, params):
    X, y, Xt = a9a
    plain = cls(**params).fit(X, y)
    assert not hasattr(plain, "predict_proba") and not hasattr(plain, "predict_log_proba")
    with pytest.raises(AttributeError, match="no attribute 'predict_proba'") as raised:
        plain.predict_proba(Xt)
    assert "probability=False" in str(raised.value.__cause__)
    fitted = cls(probability=True, **params).fit(X, y)
    P = fitted.predict_proba(Xt)
    assert P.shape == (Xt.shape[0], 2) and np.allclose(P.sum(axis=1), 1.0)
    assert np.array_equal(fitted.classes_[np.argmax(P, axis=1)], fitted.predict(Xt))
    np.testing.assert_allclose(fitted.predict_log_proba(Xt), np.log(P))
    # the same model as without probability; the sigmoid besides
    np.testing.assert_array_equal(fitted.decision_function(Xt), plain.decision_function(Xt))


def test_label_and_probability_agree_where_b_shifts_one_half():
    """A small C: the scores crowd below the margin, Platt's B is far from 0 and many
    test examples fall between f = 0 and the sigmoid's 0.5 point -B/A. There
    P(classes_[1]) is held next to 0.5 on the label's side: the label follows the score,
    and so does the probability (unlike SVC's, which may disagree)."""
    X, y = load_svmlight_file(str(SAMPLES / "a9a3k.train"))
    model = OCASClassifier(C=0.01, probability=True).fit(X[:2000], y[:2000])
    A, B = model.model_.platt
    Xt = X[2000:]
    scores = model.decision_function(Xt)
    between = (scores > 0) != (scores > -B / A)
    assert abs(B) > 0.5 and between.sum() >= 20
    P = model.predict_proba(Xt)[:, 1]
    predicted = model.predict(Xt)
    assert np.array_equal(P > 0.5, predicted == 1)
    assert np.array_equal(P > 0.5, scores > 0)
    assert np.all(np.abs(P[between] - 0.5) < 1e-15)
    assert np.array_equal(model.classes_[np.argmax(model.predict_proba(Xt), axis=1)], predicted)


def test_the_model_file_keeps_the_sigmoid(a9a, tmp_path):
    X, y, Xt = a9a
    fitted = OCASClassifier(probability=True, fit_intercept=True).fit(X, y)
    fitted.save_model(tmp_path / "m")
    assert "Platt's sigmoid A" in (tmp_path / "m").read_text()
    loaded = load_model(tmp_path / "m")
    assert loaded.probability and loaded.model_.platt == fitted.model_.platt
    np.testing.assert_array_equal(loaded.predict_proba(Xt)[:, 1], fitted.predict_proba(Xt)[:, 1])


def test_probability_refuses_what_it_cannot_fit():
    X, y = load_svmlight_file(str(SAMPLES / "dna1k.train"))
    with pytest.raises(ValueError, match="binary classification only"):
        OCASClassifier(probability=True).fit(X, y)
    Xs, ys = load_svmlight_file(str(SAMPLES / "a9a3k.train"))
    with pytest.raises(ValueError, match="at least 5 examples and 2 of each class"):
        OCASClassifier(probability=True).fit(Xs[:3], [1, 0, 0])
