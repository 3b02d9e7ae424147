"""class_weight (a dict of classes_ or "balanced") and sample_weight on the estimators, as
LinearSVC takes them: the weighted objective against LinearSVC's (liblinear, an
independent solver) and the same fit as sample weights that are the class weights."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("sklearn")

from sklearn.datasets import load_svmlight_file  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

from cpsvm.sklearn import (  # noqa: E402
    CuttingPlaneSVC,
    OCASClassifier,
    OCASClassifierCV,
    SampledCutSVC,
)


@pytest.fixture(scope="module")
def a9a(samples_dir):
    X, y = load_svmlight_file(str(samples_dir / "a9a3k.train"))
    X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), X.shape)
    return X, np.where(y > 0, "yes", "no")


@pytest.fixture(scope="module")
def samples_dir():
    from pathlib import Path

    return Path(__file__).resolve().parents[2] / "data" / "samples"


def weighted_hinge(X, y, w, weights):
    """½|w|² + Σ c_i·max(0, 1 - y_i·w·x_i), y_i = +1 for "yes"."""
    signs = np.where(y == "yes", 1.0, -1.0)
    return 0.5 * w @ w + np.sum(weights * np.maximum(0.0, 1.0 - signs * (X @ w)))


def per_example(y, class_weight):
    if class_weight == "balanced":
        labels, counts = np.unique(y, return_counts=True)
        class_weight = {a: len(y) / (len(labels) * c) for a, c in zip(labels, counts)}
    return np.array([class_weight.get(label, 1.0) for label in y])


@pytest.mark.parametrize("class_weight", [{"yes": 5.0}, {"no": 0.5, "yes": 2.0}, "balanced"])
@pytest.mark.parametrize("method", ["ocas", "dual_cd", "cutting_plane"])
def test_ocas_reaches_linearsvcs_weighted_objective(a9a, class_weight, method):
    X, y = a9a
    sample_weight = np.linspace(0.5, 2.0, len(y))
    weights = per_example(y, class_weight) * sample_weight
    ours = OCASClassifier(C=1.0, class_weight=class_weight, method=method, tol=1e-6)
    ours.fit(X, y, sample_weight=sample_weight)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = LinearSVC(
            loss="hinge", C=1.0, class_weight=class_weight, fit_intercept=False, tol=1e-8,
            max_iter=200000,
        ).fit(X, y, sample_weight=sample_weight)  # fmt: skip
    mine = weighted_hinge(X, y, ours.coef_.ravel(), weights)
    reference = weighted_hinge(X, y, theirs.coef_.ravel(), weights)
    assert mine <= reference * (1 + 1e-4)
    assert abs(mine - ours.objective_) <= 1e-6 * mine


@pytest.mark.parametrize(
    "estimator",
    [
        OCASClassifier(C=1.0),
        CuttingPlaneSVC(C=1.0),
        CuttingPlaneSVC(C=1.0, algorithm=9),
        SampledCutSVC(C=1.0, kernel="rbf", gamma=0.05),
    ],
)
def test_class_weight_is_the_sample_weight_of_its_classes(a9a, estimator):
    """The same fit (the same coefficients) as sample weights equal to the class weights,
    the path scikit-learn's sample_weight already took."""
    from sklearn.base import clone

    X, y = a9a[0][:600], a9a[1][:600]
    for class_weight in ({"yes": 3.0}, "balanced"):
        weighed = clone(estimator).set_params(class_weight=class_weight).fit(X, y)
        reference = clone(estimator).fit(X, y, sample_weight=per_example(y, class_weight))
        np.testing.assert_allclose(
            weighed.decision_function(X), reference.decision_function(X), rtol=1e-12, atol=1e-12
        )


def test_multiclass_weights_against_crammer_singer(samples_dir):
    X, y = load_svmlight_file(str(samples_dir / "dna1k.train"))
    X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), X.shape)
    class_weight = {1.0: 2.0, 3.0: 0.5}
    ours = OCASClassifier(C=0.1, class_weight=class_weight, tol=1e-6).fit(X, y)
    reference = OCASClassifier(C=0.1, tol=1e-6).fit(
        X, y, sample_weight=np.array([class_weight.get(a, 1.0) for a in y])
    )
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-12, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = LinearSVC(
            C=0.1, multi_class="crammer_singer", class_weight=class_weight, fit_intercept=False,
            tol=1e-8, max_iter=100000,
        ).fit(X, y)  # fmt: skip
    assert np.mean(ours.predict(X) == theirs.predict(X)) >= 0.99


def test_the_search_keeps_the_weights(a9a):
    X, y = a9a
    search = OCASClassifierCV(Cs=[0.1, 1.0], cv=2, class_weight="balanced").fit(X, y)
    assert search.model_.class_weights.startswith("balanced -1:")


@pytest.mark.parametrize(
    ("class_weight", "expected"),
    [
        ({"maybe": 2.0}, "class 'maybe' is not in classes_"),
        ({"yes": 0.0}, "finite numbers > 0"),
        ({"yes": -1.0}, "finite numbers > 0"),
        ({"yes": float("nan")}, "finite numbers > 0"),
        ({"yes": float("inf")}, "finite numbers > 0"),
        ("even", "expected class_weight 'balanced' or a dict"),
        ([1, 2], "expected class_weight 'balanced' or a dict"),
    ],
)
def test_a_bad_class_weight_is_a_value_error(a9a, class_weight, expected):
    X, y = a9a
    with pytest.raises(ValueError, match=expected.replace("(", r"\(")):
        OCASClassifier(class_weight=class_weight).fit(X, y)
