"""OCASClassifier(loss="squared_hinge"): the objective of scikit-learn's
LinearSVC(loss="squared_hinge", dual=True) at the same C, by every method; the hinge the
default; an unknown loss and a multiclass squared hinge refused."""

import numpy as np
import pytest

pytest.importorskip("sklearn")

from conftest import SAMPLES  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

from cpsvm.io.svmlight import read_svmlight  # noqa: E402
from cpsvm.sklearn import OCASClassifier, OCASClassifierCV  # noqa: E402


def l2_objective(w, X, y, C, weights=None):
    weights = np.ones(len(y)) if weights is None else weights
    slack = np.maximum(0.0, 1.0 - y * (X @ w))
    return 0.5 * w @ w + C * weights @ (slack * slack)


@pytest.fixture(scope="module")
def data():
    ds = read_svmlight(SAMPLES / "a9a3k.train")
    return ds.X[:800], ds.y[:800]


@pytest.mark.parametrize("method", [None, "dual_cd", "ocas", "cutting_plane"])
def test_objective_of_linearsvc_squared_hinge(data, method):
    X, y = data
    weights = np.random.default_rng(1).choice([0.5, 1.0, 2.0], len(y))
    svc = LinearSVC(loss="squared_hinge", dual=True, C=0.5, tol=1e-10, max_iter=10**6,
                    fit_intercept=False)  # fmt: skip
    svc.fit(X, y, sample_weight=weights)
    reference = l2_objective(svc.coef_.ravel(), X, y, 0.5, weights)
    ours = OCASClassifier(C=0.5, loss="squared_hinge", method=method, tol=1e-7)
    ours.fit(X, y, sample_weight=weights)
    found = l2_objective(ours.coef_.ravel(), X, y, 0.5, weights)
    assert found == pytest.approx(ours.objective_, rel=1e-9)
    assert found == pytest.approx(reference, rel=2e-6)
    assert np.mean(ours.predict(X) == svc.predict(X)) >= 0.99


def test_hinge_default_unknown_and_multiclass_refused(data):
    X, y = data
    assert OCASClassifier().get_params()["loss"] == "hinge"
    assert OCASClassifierCV().get_params()["loss"] == "hinge"
    hinge = OCASClassifier(method="dual_cd").fit(X, y)
    squared = OCASClassifier(method="dual_cd", loss="squared_hinge").fit(X, y)
    assert not np.allclose(hinge.coef_, squared.coef_)
    with pytest.raises(ValueError, match="expected loss 'hinge' or 'squared_hinge'"):
        OCASClassifier(loss="squared-hinge").fit(X, y)
    mc = read_svmlight(SAMPLES / "dna1k.train")
    with pytest.raises(ValueError, match="binary problems only"):
        OCASClassifier(loss="squared_hinge").fit(mc.X[:200], mc.y[:200])


def test_cv_chooses_along_the_squared_hinge(data):
    X, y = data
    cv = OCASClassifierCV(Cs=[0.1, 1.0], cv=3, loss="squared_hinge").fit(X, y)
    refit = OCASClassifier(C=cv.C_, loss="squared_hinge").fit(X, y)
    assert np.allclose(cv.coef_, refit.coef_)
