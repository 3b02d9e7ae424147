"""OCASClassifierCV and CuttingPlaneSVCCV: the C chosen along the warm path is the one
GridSearchCV chooses over the same folds, the final model is the base estimator's at
that C, cv_results_ is GridSearchCV's, the scoring is the selection measure."""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.datasets import load_svmlight_file  # noqa: E402
from sklearn.model_selection import GridSearchCV, StratifiedKFold  # noqa: E402

from cpsvm.sklearn import (  # noqa: E402
    CuttingPlaneSVC,
    CuttingPlaneSVCCV,
    OCASClassifier,
    OCASClassifierCV,
)

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
PAIRS = [(OCASClassifierCV, OCASClassifier), (CuttingPlaneSVCCV, CuttingPlaneSVC)]
FOLDS = StratifiedKFold(3, shuffle=True, random_state=0)


def _a9a(n=600):
    X, y = load_svmlight_file(str(SAMPLES / "a9a3k.train"))
    return X[:n], y[:n]


# Values whose cross-validated measure is clearly apart on these 600 examples (accuracy
# 0.78 and 0.82; ROC area 0.76, 0.87, 0.85): no tie within the solvers' tolerance.
@pytest.mark.parametrize(("search", "base"), PAIRS)
@pytest.mark.parametrize(
    ("scoring", "Cs", "expected"),
    [(None, [1e-3, 1e-1], 1e-1), ("roc_auc", [1e-3, 1e-1, 10.0], 1e-1)],
)
def test_c_agrees_with_grid_search(search, base, scoring, Cs, expected):
    X, y = _a9a()
    found = search(Cs=Cs, cv=FOLDS, scoring=scoring).fit(X, y)
    grid = GridSearchCV(base(), {"C": Cs}, cv=FOLDS, scoring=scoring).fit(X, y)
    assert found.C_ == grid.best_params_["C"] == expected
    assert found.best_index_ == grid.best_index_
    # warm and cold runs are both within the tolerance: the same measure, nearly
    np.testing.assert_allclose(
        found.cv_results_["mean_test_score"], grid.cv_results_["mean_test_score"], atol=0.01
    )


@pytest.mark.parametrize(("search", "base"), PAIRS)
def test_scoring_is_the_selection_measure(search, base):
    X, y = _a9a()
    Cs = [1e-3, 1e-1, 10.0]
    accuracy = search(Cs=Cs, cv=FOLDS).fit(X, y)
    auc = search(Cs=Cs, cv=FOLDS, scoring="roc_auc").fit(X, y)
    # on these folds accuracy prefers the largest C, the ROC area C = 0.1
    assert accuracy.C_ == 10.0 and auc.C_ == 0.1
    assert not np.allclose(
        auc.cv_results_["mean_test_score"], accuracy.cv_results_["mean_test_score"], atol=0.01
    )
    assert auc.best_score_ == pytest.approx(np.max(auc.cv_results_["mean_test_score"]))


@pytest.mark.parametrize(("search", "base"), PAIRS)
@pytest.mark.parametrize("weighted", [False, True])
def test_refit_is_the_base_estimator_at_the_chosen_c(search, base, weighted, tmp_path):
    X, y = _a9a(300)
    weight = np.random.default_rng(3).integers(0, 4, len(y)) / 2.0 if weighted else None
    found = search(Cs=[1e-2, 1.0], cv=3).fit(X, y, sample_weight=weight)
    alone = base(C=found.C_).fit(X, y, sample_weight=weight)
    found.save_model(tmp_path / "found")
    alone.save_model(tmp_path / "alone")
    assert (tmp_path / "found").read_bytes() == (tmp_path / "alone").read_bytes()
    assert found.n_iter_ == alone.n_iter_ and found.objective_ == alone.objective_


def test_multiclass_refit_and_average():
    X, y = load_svmlight_file(str(SAMPLES / "dna1k.train"))
    X, y = X[:400], y[:400]
    for search, base in PAIRS:
        found = search(Cs=[1e-3, 1.0], cv=FOLDS).fit(X, y)
        alone = base(C=found.C_).fit(X, y)
        np.testing.assert_array_equal(found.coef_, alone.coef_)
        average = search(Cs=[1e-3, 1.0], cv=FOLDS, refit=False).fit(X, y)
        assert average.C_ == found.C_ and average.coef_.shape == (3, X.shape[1])
        assert average.score(X, y) > 0.85


def test_no_refit_averages_the_folds_weights():
    # one value: each fold's path is a single training, as OCASClassifier's on the fold
    X, y = _a9a(300)
    folds = list(FOLDS.split(X, y))
    average = OCASClassifierCV(Cs=[0.1], cv=folds, refit=False, method="ocas").fit(X, y)
    each = [OCASClassifier(C=0.1, method="ocas").fit(X[tr], y[tr]).coef_ for tr, _ in folds]
    np.testing.assert_allclose(average.coef_, np.mean(each, axis=0), rtol=1e-6, atol=1e-9)
    assert average.n_iter_ > 0


def test_cv_results_are_grid_search_cv_s():
    X, y = _a9a(300)
    found = OCASClassifierCV(Cs=4, cv=3).fit(X, y)
    np.testing.assert_allclose(found.Cs_, np.logspace(-4, 4, 4))
    results = found.cv_results_
    assert set(results) == {
        "mean_fit_time",
        "std_fit_time",
        "param_C",
        "params",
        "split0_test_score",
        "split1_test_score",
        "split2_test_score",
        "mean_test_score",
        "std_test_score",
        "rank_test_score",
    }
    for key in set(results) - {"params"}:
        assert len(results[key]) == 4, key
    assert [p["C"] for p in results["params"]] == list(found.Cs_)
    splits = np.array([results[f"split{i}_test_score"] for i in range(3)])
    np.testing.assert_allclose(results["mean_test_score"], splits.mean(axis=0))
    assert results["rank_test_score"][found.best_index_] == 1
    assert found.C_ == found.Cs_[found.best_index_]
    assert found.best_score_ == results["mean_test_score"][found.best_index_]


def test_cs_in_any_order_trained_increasing():
    X, y = _a9a(300)
    found = OCASClassifierCV(Cs=[10.0, 0.01, 1.0], cv=3).fit(X, y)
    np.testing.assert_array_equal(found.Cs_, [0.01, 1.0, 10.0])


@pytest.mark.parametrize("Cs", [0, [], [1.0, -1.0], "many"])
def test_bad_cs_refused(Cs):
    X, y = _a9a(100)
    with pytest.raises(ValueError, match="Cs|C values"):
        OCASClassifierCV(Cs=Cs, cv=2).fit(X, y)


def test_ties_go_to_the_smaller_c():
    # separable by a wide margin: every value classifies every held-out example right
    rng = np.random.default_rng(0)
    y = np.repeat([-1.0, 1.0], 30)
    X = rng.normal(size=(60, 3)) + 5 * y[:, None]
    found = OCASClassifierCV(Cs=[0.1, 1.0, 10.0], cv=3).fit(X, y)
    np.testing.assert_array_equal(found.cv_results_["mean_test_score"], 1.0)
    assert found.C_ == 0.1 and list(found.cv_results_["rank_test_score"]) == [1, 1, 1]
