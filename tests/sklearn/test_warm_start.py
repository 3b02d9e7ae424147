"""warm_start=True (issue 46, item 3): the next fit starts from the last fit's model_,
as scikit-learn's SGDClassifier and LogisticRegression do; a fit of other classes is
refused."""

import numpy as np
import pytest

pytest.importorskip("sklearn")

from conftest import SAMPLES  # noqa: E402

from cpsvm.io.svmlight import read_svmlight  # noqa: E402
from cpsvm.sklearn import ASSETClassifier, CuttingPlaneSVC, OCASClassifier  # noqa: E402


@pytest.fixture(scope="module")
def a9a():
    data = read_svmlight(SAMPLES / "a9a3k.train")
    return data.X, data.y


@pytest.mark.parametrize("method", ["cutting_plane", "ocas", "dual_cd"])
def test_ocas_warm_fit_starts_from_the_last_one(method, a9a):
    """At C = 2 after C = 1: the cold fit's objective within the stopping rule, in no
    more iterations; a warm fit at the same C stops within a few."""
    X, y = a9a
    estimator = OCASClassifier(C=1.0, method=method, tol=1e-3, warm_start=True).fit(X, y)
    cold = OCASClassifier(C=2.0, method=method, tol=1e-3).fit(X, y)
    estimator.set_params(C=2.0).fit(X, y)
    assert estimator.objective_ == pytest.approx(cold.objective_, rel=1e-3)
    assert estimator.n_iter_ <= cold.n_iter_
    again = estimator.n_iter_
    estimator.fit(X, y)
    assert estimator.n_iter_ <= max(3, again)


def test_warm_start_off_starts_cold(a9a):
    X, y = a9a
    estimator = OCASClassifier(C=1.0, method="ocas").fit(X, y)
    first = estimator.n_iter_
    assert estimator.fit(X, y).n_iter_ == first


def test_warm_start_refuses_other_classes(a9a):
    X, y = a9a
    estimator = OCASClassifier(warm_start=True).fit(X, y)
    with pytest.raises(ValueError, match="warm_start: the classes of y"):
        estimator.fit(X, np.where(y > 0, 2, 1))


def test_cutting_plane_and_asset_take_warm_start(a9a):
    X, y = a9a
    svc = CuttingPlaneSVC(C=0.01, warm_start=True).fit(X, y)
    cold = CuttingPlaneSVC(C=0.02).fit(X, y)
    svc.set_params(C=0.02).fit(X, y)
    assert svc.objective_ == pytest.approx(cold.objective_, rel=0.02)
    asset = ASSETClassifier(approximation="none", max_iter=3, warm_start=True).fit(X[:500], y[:500])
    first = asset.coef_.copy()
    asset.fit(X[:500], y[:500])
    assert np.linalg.norm(asset.coef_ - first) < np.linalg.norm(first)
