"""ASSETClassifier's class_weight (a dict of classes_ or "balanced") and sample_weight, and
ASSETRegressor's sample_weight: class weights are the sample weights of their classes
(the same fit), and the weighted objective comes near LinearSVC's optimum of the same
weighted problem (liblinear, an independent solver)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("sklearn")

from sklearn.datasets import load_svmlight_file  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402
from test_class_weight import per_example, weighted_hinge  # noqa: E402

from cpsvm.sklearn import ASSETClassifier, ASSETRegressor  # noqa: E402


@pytest.fixture(scope="module")
def a9a():
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "data" / "samples" / "a9a3k.train"
    X, y = load_svmlight_file(str(path))
    X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), X.shape)
    return X, np.where(y > 0, "yes", "no")


@pytest.mark.parametrize("class_weight", [{"yes": 5.0}, {"no": 0.5, "yes": 2.0}, "balanced"])
@pytest.mark.parametrize("approximation", ["none", "nystrom"])
def test_class_weight_is_the_sample_weight_of_its_classes(a9a, class_weight, approximation):
    X, y = a9a
    settings = dict(approximation=approximation, n_components=32, max_iter=3, random_state=1)
    if approximation == "nystrom":
        settings.update(kernel="rbf", gamma=0.05)
    sample_weight = np.linspace(0.5, 2.0, len(y))
    weighed = ASSETClassifier(class_weight=class_weight, **settings)
    weighed.fit(X, y, sample_weight=sample_weight)
    reference = ASSETClassifier(**settings)
    reference.fit(X, y, sample_weight=sample_weight * per_example(y, class_weight))
    np.testing.assert_array_equal(weighed.decision_function(X), reference.decision_function(X))
    plain = ASSETClassifier(**settings).fit(X, y)
    assert not np.array_equal(plain.decision_function(X), weighed.decision_function(X))


def test_cost_factor_is_class_weight_of_the_second_class(a9a):
    X, y = a9a
    settings = dict(approximation="none", max_iter=3)
    j = ASSETClassifier(cost_factor=4.0, **settings).fit(X, y)
    w = ASSETClassifier(class_weight={"yes": 4.0}, **settings).fit(X, y)
    np.testing.assert_array_equal(j.coef_, w.coef_)


def test_the_weighted_objective_near_linearsvcs(a9a):
    """star (Pegasos, no intercept) on the input features against LinearSVC(loss='hinge',
    fit_intercept=False) with the same class and sample weights."""
    X, y = a9a
    class_weight = {"yes": 3.0}
    sample_weight = np.linspace(0.5, 2.0, len(y))
    ours = ASSETClassifier(
        approximation="none", star=True, max_iter=200, tol=0.0, class_weight=class_weight
    ).fit(X, y, sample_weight=sample_weight)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svc = LinearSVC(
            C=1.0, loss="hinge", fit_intercept=False, class_weight=class_weight, tol=1e-8,
            max_iter=200000, dual=True,
        ).fit(X, y, sample_weight=sample_weight)  # fmt: skip
    weights = per_example(y, class_weight) * sample_weight
    theirs = weighted_hinge(X, y, svc.coef_.ravel(), weights)
    mine = weighted_hinge(X, y, ours.coef_.ravel(), weights)
    assert theirs * (1 - 1e-6) <= mine <= 1.04 * theirs, (mine, theirs)
    assert ours.objective_ == pytest.approx(mine, rel=1e-6)


def test_regressor_takes_sample_weight_and_no_class_weight(a9a):
    X, y = a9a
    target = np.where(y == "yes", 1.0, -1.0)
    settings = dict(approximation="none", max_iter=2)
    plain = ASSETRegressor(**settings).fit(X, target)
    ones = ASSETRegressor(**settings).fit(X, target, sample_weight=np.ones(len(y)))
    np.testing.assert_array_equal(plain.predict(X), ones.predict(X))
    some = ASSETRegressor(**settings).fit(X, target, sample_weight=np.where(target > 0, 3.0, 1.0))
    assert not np.array_equal(plain.predict(X), some.predict(X))
    assert "class_weight" not in ASSETRegressor().get_params()


def test_bad_class_weights_are_value_errors(a9a):
    X, y = a9a
    for class_weight in ({"maybe": 2.0}, {"yes": 0.0}, {"yes": np.inf}, "even"):
        with pytest.raises(ValueError, match="class_weight"):
            ASSETClassifier(approximation="none", class_weight=class_weight).fit(X, y)
