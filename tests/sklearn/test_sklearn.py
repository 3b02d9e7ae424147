"""cpsvm.sklearn: scikit-learn's estimator checks, the same model files as the commands,
inputs of every kind, model files and pickles, and scikit-learn's model selection."""

import json
import os
import pickle
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")

from conftest import crammer_singer_objective, hinge_objective  # noqa: E402
from sklearn.datasets import load_svmlight_file  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from cpsvm.decoding.trees import format_tree  # noqa: E402
from cpsvm.io.svmlight import read_svmlight  # noqa: E402
from cpsvm.io.trees import read_tree_dataset  # noqa: E402
from cpsvm.models import fit_columns  # noqa: E402
from cpsvm.sklearn import (
    ASSETClassifier,
    ASSETRegressor,
    CuttingPlaneSVC,  # noqa: E402
    CuttingPlaneSVCCV,
    OCASClassifier,
    OCASClassifierCV,
    RankSVM,
    SampledCutSVC,
    StructuredSVM,
    expected_failed_checks,
    load_model,
)

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data" / "samples"
FIXTURES = ROOT / "tests" / "fixtures"
EXAMPLES = ROOT / "examples"

# -- scikit-learn's checks ------------------------------------------------------------------

# Small runs. CuttingPlaneSVC and StructuredSVM pass the sample-weight checks at a tight
# epsilon (cp_learn's -e is per training example, so a repeated example moves where a
# loose run stops: expected_failed_checks says so for the default epsilon).
CHECKED = [
    OCASClassifier(max_iter=50),
    OCASClassifier(max_iter=50, method="ocas"),
    CuttingPlaneSVC(max_iter=50),
    CuttingPlaneSVC(max_iter=200, epsilon=1e-4, algorithm=9),
    CuttingPlaneSVC(kernel="rbf", gamma=0.1, max_iter=200, epsilon=1e-4),
    SampledCutSVC(kernel="rbf", max_iter=20),
    ASSETClassifier(max_iter=2, n_components=20),
    ASSETRegressor(max_iter=20, n_components=20),
    StructuredSVM(max_iter=200, epsilon=1e-4, algorithm=9),
    RankSVM(max_iter=20, epsilon=0.01),
    # The searches over C: two values, two folds (each check's fit trains 2 x 2 + 1).
    OCASClassifierCV(Cs=2, cv=2, max_iter=50),
    OCASClassifierCV(Cs=2, cv=2, max_iter=50, method="ocas", refit=False),
    CuttingPlaneSVCCV(Cs=2, cv=2, max_iter=200, epsilon=1e-4, algorithm=9),
]


@parametrize_with_checks(CHECKED, expected_failed_checks=expected_failed_checks)
def test_scikit_learn_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # n_components clipped on tiny data
        check(estimator)


# -- the same model files as the commands ---------------------------------------------------


def _svmlight(name, **kw):
    return load_svmlight_file(str(SAMPLES / name), **kw)


def _a9a():
    X, y = _svmlight("a9a3k.train")
    return X, y


def _weights(n):
    return np.random.default_rng(7).integers(1, 5, n) / 2.0


def _sentences(name):
    X, tags, qid = _svmlight(name, query_id=True)
    cuts = np.flatnonzero(np.diff(qid)) + 1
    rows = np.split(np.arange(len(qid)), cuts)
    return [X[r] for r in rows], [tags[r].astype(int) for r in rows]


def _ranking(name):
    X, y, qid = _svmlight(name, query_id=True)
    return X, y, qid


def _ordinal():
    sys.path.insert(0, str(EXAMPLES))
    try:
        import ordinal
    finally:
        sys.path.remove(str(EXAMPLES))
    X, y = load_svmlight_file(str(EXAMPLES / "ordinal.train"))
    return ordinal.OrdinalRegression, X, y


def _c(value):
    return repr(float(value))


# name: (command module, its flags, training file, fit in Python -> estimator).
# The command's -c is the documented conversion of the estimator's C, written by repr so
# that the command reads the same double.
CASES = {
    "ocas_binary": ("ocas", ["-c", "1"], "a9a3k.train", lambda: OCASClassifier(C=1).fit(*_a9a())),
    "ocas_multiclass": (
        "ocas",
        ["-c", "0.1"],
        "dna1k.train",
        lambda: OCASClassifier(C=0.1).fit(*_svmlight("dna1k.train")),
    ),
    "ocas_weights": (
        "ocas",
        ["-C", "COSTS"],
        "a9a3k.train",
        lambda: OCASClassifier(C=1).fit(*_a9a(), sample_weight=_weights(3000)),
    ),
    "ocas_intercept": (
        "ocas",
        ["-c", "2", "-b", "1"],
        "a9a3k.train",
        lambda: OCASClassifier(C=2, fit_intercept=True).fit(*_a9a()),
    ),
    "cp_linear": (
        "learn",
        ["-c", _c(1.0 * 3000 / 100)],
        "a9a3k.train",
        lambda: CuttingPlaneSVC(C=1).fit(*_a9a()),
    ),
    "cp_weights": (
        "learn",
        ["-c", _c(0.5 * 3000 / 100)],
        "a9a3k.cost.train",
        lambda: CuttingPlaneSVC(C=0.5).fit(*_a9a(), sample_weight=_weights(3000)),
    ),
    "cp_multiclass": (
        "learn",
        ["-c", _c(0.01 * 100 * 1000)],
        "dna1k.train",
        lambda: CuttingPlaneSVC(C=0.01).fit(*_svmlight("dna1k.train")),
    ),
    "cp_roc_area": (
        "learn",
        ["-c", _c(1.0 * 3000 / 100), "-l", "10"],
        "a9a3k.train",
        lambda: CuttingPlaneSVC(C=1, loss="roc_auc").fit(*_a9a()),
    ),
    "cp_prec_at_k": (
        "learn",
        ["-c", _c(1.0 * 3000 / 100), "-l", "4", "--p", "0.2", "-w", "3"],
        "a9a3k.train",
        lambda: CuttingPlaneSVC(C=1, loss="precision_at_k", k_fraction=0.2, algorithm=3).fit(
            *_a9a()
        ),
    ),
    "cp_rbf": (
        "learn",
        ["-c", "30", "-t", "2", "-g", "0.05", "-#", "3"],
        "a9a3k.train",
        lambda: CuttingPlaneSVC(C=1, kernel="rbf", gamma=0.05, max_iter=3).fit(*_a9a()),
    ),
    "cp_poly": (
        "learn",
        ["-c", "30", "-t", "1", "-d", "2", "-s", "0.5", "-r", "0.25", "-#", "3"],
        "a9a3k.train",
        lambda: CuttingPlaneSVC(
            C=1, kernel="poly", degree=2, gamma=0.5, coef0=0.25, max_iter=3
        ).fit(*_a9a()),
    ),
    "cp_nystrom": (
        "learn",
        ["-c", "30", "-t", "2", "-g", "0.05", "--t", "1", "--k", "50", "--seed", "4"],
        "a9a3k.train",
        lambda: CuttingPlaneSVC(
            C=1, kernel="rbf", gamma=0.05, approximation="nystrom", n_components=50, random_state=4
        ).fit(*_a9a()),
    ),
    "sampled_linear_time": (
        "sampled",
        ["-c", "30", "-t", "2", "-g", "0.05", "-#", "3"],
        "a9a3k.train",
        lambda: SampledCutSVC(C=1, kernel="rbf", gamma=0.05, max_iter=3).fit(*_a9a()),
    ),
    "sampled_const_time": (
        "sampled",
        [
            "-c",
            "30",
            "-t",
            "2",
            "-g",
            "0.05",
            "-#",
            "5",
            "--algorithm",
            "const",
            "--r",
            "200",
            "--seed",
            "3",
        ],
        "a9a3k.train",
        lambda: SampledCutSVC(
            C=1,
            kernel="rbf",
            gamma=0.05,
            max_iter=5,
            algorithm="const",
            sample_size=200,
            random_state=3,
        ).fit(*_a9a()),
    ),
    "asset_nystrom": (
        "asset",
        ["-c", "1000", "-t", "2", "-g", "0.001", "--k", "50", "--epochs", "1"],
        "a9a3k.train",
        lambda: ASSETClassifier(C=1000, kernel="rbf", gamma=0.001, n_components=50, max_iter=1).fit(
            *_a9a()
        ),
    ),
    "asset_rff": (
        "asset",
        [
            "-c",
            "1000",
            "-t",
            "2",
            "-g",
            "0.001",
            "--approx",
            "rff",
            "--k",
            "50",
            "--epochs",
            "1",
            "--seed",
            "2",
        ],
        "a9a3k.train",
        lambda: ASSETClassifier(
            C=1000,
            kernel="rbf",
            gamma=0.001,
            approximation="rff",
            n_components=50,
            max_iter=1,
            random_state=2,
        ).fit(*_a9a()),
    ),
    "asset_star_linear": (
        "asset",
        ["-c", "1", "--approx", "none", "--star", "--epochs", "2"],
        "a9a3k.train",
        lambda: ASSETClassifier(C=1, approximation="none", star=True, max_iter=2).fit(*_a9a()),
    ),
    "asset_stopping_rule": (
        "asset",
        [
            "-c",
            "1",
            "-t",
            "2",
            "-g",
            "0.05",
            "--k",
            "50",
            "--tolerance",
            "0.05",
            "--epochs",
            "30",
            "--average-last",
            "100",
        ],
        "a9a3k.train",
        lambda: ASSETClassifier(
            C=1, kernel="rbf", gamma=0.05, n_components=50, tol=0.05, max_iter=30, average_last=100
        ).fit(*_a9a()),
    ),
    "asset_regression": (
        "asset",
        ["-z", "r", "-c", "1", "-w", "0.2", "-t", "1", "-d", "2", "--k", "40", "--epochs", "2"],
        "a9a3k.train",
        lambda: ASSETRegressor(
            C=1, epsilon=0.2, kernel="poly", degree=2, n_components=40, max_iter=2
        ).fit(*_a9a()),
    ),
    "struct_multiclass": (
        "learn",
        ["-c", _c(0.01 * 100 * 1000)],
        "dna1k.train",
        lambda: StructuredSVM(C=0.01).fit(*_svmlight("dna1k.train")),
    ),
    "struct_hmm": (
        "learn",
        ["-c", _c(10.0 * 60), "-e", "0.5"],
        "ewt60.hmm.train",
        lambda: StructuredSVM(problem="hmm", C=10, epsilon=0.5).fit(*_sentences("ewt60.hmm.train")),
    ),
    "struct_hmm_second_order": (
        "learn",
        ["-c", _c(10.0 * 60), "-e", "1", "--t", "2", "--e", "1", "-w", "4"],
        "ewt60.hmm.train",
        lambda: StructuredSVM(
            C=10, epsilon=1, transition_order=2, emission_order=1, algorithm=4
        ).fit(*_sentences("ewt60.hmm.train")),
    ),
    "struct_hmm_dataset": (
        "learn",
        ["-c", _c(10.0 * 60), "-e", "0.5"],
        "ewt60.hmm.train",
        lambda: StructuredSVM(problem="hmm", C=10, epsilon=0.5).fit(
            read_svmlight(SAMPLES / "ewt60.hmm.train")
        ),
    ),
    "struct_binary_dataset": (
        "learn",
        ["-c", "30"],
        "a9a3k.train",
        lambda: StructuredSVM(C=1).fit(read_svmlight(SAMPLES / "a9a3k.train")),
    ),
    "struct_cfg": (
        "learn",
        ["-c", _c(10.0 * 300), "-e", "1"],
        "toy.train.mrg",
        lambda: StructuredSVM(problem="cfg", C=10, epsilon=1).fit(
            read_tree_dataset(SAMPLES / "toy.train.mrg", 0)
        ),
    ),
    "rank": (
        "learn",
        ["-c", _c(0.5 * 60)],
        "toy.rank.train",
        lambda: RankSVM(C=0.5).fit(*_ranking("toy.rank.train")),
    ),
    "rank_fraction": (
        "learn",
        ["-c", _c(2.0 * 60), "-l", "2", "-w", "3"],
        "toy.rank.train",
        lambda: RankSVM(C=2, loss="fraction", algorithm=3).fit(*_ranking("toy.rank.train")),
    ),
    "struct_user": (
        "learn",
        ["-c", _c(0.25 * 120), "--problem", "ordinal:OrdinalRegression"],
        EXAMPLES / "ordinal.train",
        lambda: StructuredSVM(_ordinal()[0], C=0.25).fit(*_ordinal()[1:]),
    ),
}


@pytest.fixture(scope="module")
def command_models(tmp_path_factory):
    """Every case's command run once, all in one interpreter (one start-up)."""
    tmp = tmp_path_factory.mktemp("commands")
    weights = _weights(3000)
    (tmp / "costs").write_text("".join(f"{float(w)!r}\n" for w in weights))
    lines = (SAMPLES / "a9a3k.train").read_text().splitlines()
    with open(tmp / "a9a3k.cost.train", "w") as out:
        for line, w in zip(lines, weights):
            label, _, rest = line.partition(" ")
            out.write(f"{label} cost:{float(w)!r} {rest}\n")
    runs = []
    for name, (module, flags, data, _) in CASES.items():
        data = Path(data)
        if not data.is_absolute():
            data = tmp / data if (tmp / data).exists() else SAMPLES / data
        flags = [str(tmp / "costs") if f == "COSTS" else f for f in flags]
        runs.append((module, ["-v", "0", *flags, str(data), str(tmp / f"{name}.model")]))
    code = (
        "import importlib, json, sys\n"
        "for module, argv in json.loads(sys.argv[1]):\n"
        "    try:\n"
        "        importlib.import_module('cpsvm.cli.' + module).main(argv)\n"
        "    except SystemExit as e:\n"
        "        if e.code:\n"
        "            sys.exit(f'{module} {argv}: exit {e.code}')\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(EXAMPLES)]))
    run = subprocess.run(
        [sys.executable, "-c", code, json.dumps(runs)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp,
    )
    assert run.returncode == 0, run.stderr
    return tmp


@pytest.mark.parametrize("case", list(CASES))
def test_fit_writes_the_commands_model_file(case, command_models, tmp_path):
    estimator = CASES[case][3]()
    estimator.save_model(tmp_path / "python.model")
    ours = (tmp_path / "python.model").read_bytes()
    assert ours == (command_models / f"{case}.model").read_bytes()


def test_c_is_scikit_learns_convention():
    """objective_ and coef_ in LinearSVC's terms: ½|w|² + C·Σ hinge (binary) and
    Crammer-Singer's ½|W|² + C·Σ ξ (multiclass), recomputed here from the weights."""
    X, y = _a9a()
    cp = CuttingPlaneSVC(C=0.5, fit_intercept=False, epsilon=0.01).fit(X, y)
    ocas = OCASClassifier(C=0.5, tol=1e-4).fit(X, y)
    for est in (cp, ocas):
        w = est.coef_.ravel()
        assert est.objective_ == pytest.approx(hinge_objective(w, X, y, 0.5), rel=1e-9)
        assert np.allclose(est.decision_function(X), X @ w + est.intercept_[0])
    # Both minimise the same objective: their optima agree within their tolerances.
    assert cp.objective_ == pytest.approx(ocas.objective_, rel=2e-3)
    Xd, yd = _svmlight("dna1k.train")
    mc = OCASClassifier(C=0.05, tol=1e-4).fit(Xd, yd)
    assert mc.objective_ == pytest.approx(
        crammer_singer_objective(mc.coef_, Xd, yd, 0.05), rel=1e-9
    )
    cs = CuttingPlaneSVC(C=0.05, epsilon=0.01).fit(Xd, yd)
    assert cs.objective_ == pytest.approx(mc.objective_, rel=1e-2)


# -- inputs ---------------------------------------------------------------------------------


def _small(n=400):
    X, y = _a9a()
    return X[:n], y[:n]


@pytest.mark.parametrize(
    "fmt, index",
    [
        ("csr", np.int32),
        ("csr", np.int64),
        ("csc", np.int32),
        ("csc", np.int64),
        ("coo", np.int32),
        ("coo", np.int64),
        ("dense", None),
    ],
)
def test_every_matrix_format_gives_the_same_model(fmt, index):
    X, y = _small()
    reference = OCASClassifier(C=1).fit(X, y).coef_
    M = X.toarray() if fmt == "dense" else X.asformat(fmt)
    if fmt == "coo":
        M.coords = tuple(c.astype(index) for c in M.coords)
    elif fmt != "dense":
        M.indices, M.indptr = M.indices.astype(index), M.indptr.astype(index)
    for name in ("indices", "indptr", "row", "col"):
        if hasattr(M, name):
            assert getattr(M, name).dtype == index
    np.testing.assert_array_equal(OCASClassifier(C=1).fit(M, y).coef_, reference)


def test_pandas_frames_and_string_labels():
    pd = pytest.importorskip("pandas")
    X, y = _small()
    frame = pd.DataFrame(X.toarray(), columns=[f"f{j}" for j in range(X.shape[1])])
    names = pd.Series(np.where(y > 0, "rich", "poor"))
    est = CuttingPlaneSVC(C=1).fit(frame, names)
    assert list(est.classes_) == ["poor", "rich"]
    reference = CuttingPlaneSVC(C=1).fit(X, y)
    np.testing.assert_array_equal(est.coef_, reference.coef_)
    assert set(est.predict(frame)) <= {"poor", "rich"}
    np.testing.assert_array_equal(est.predict(frame) == "rich", reference.predict(X) > 0)
    assert list(est.feature_names_in_) == list(frame.columns)


def test_multiclass_labels_of_any_type_map_to_1_to_k_and_back():
    X, y = _svmlight("dna1k.train")
    letters = np.array(["a", "b", "c"])[y.astype(int) - 1]
    est = OCASClassifier(C=0.05).fit(X, letters)
    ref = OCASClassifier(C=0.05).fit(X, y)
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    np.testing.assert_array_equal(
        est.predict(X), np.array(["a", "b", "c"])[ref.predict(X).astype(int) - 1]
    )


def test_a_zero_weight_is_a_missing_example():
    X, y = _small()
    w = np.ones(len(y))
    w[::3] = 0
    keep = w > 0
    a = OCASClassifier(C=1).fit(X, y, sample_weight=w)
    b = OCASClassifier(C=1).fit(X[keep], y[keep])
    np.testing.assert_array_equal(a.coef_, b.coef_)
    with pytest.raises(ValueError):
        OCASClassifier(C=1).fit(X, y, sample_weight=-w)


def test_solver_refusals_are_value_errors():
    X, y = _small()
    with pytest.raises(ValueError, match="C > 0"):
        OCASClassifier(C=0).fit(X, y)
    with pytest.raises(ValueError, match="Only binary"):
        SampledCutSVC().fit(*_svmlight("dna1k.train"))
    with pytest.raises(ValueError, match="bias"):
        OCASClassifier(fit_intercept=True).fit(*_svmlight("dna1k.train"))
    with pytest.raises(ValueError, match="expected loss 'error_rate'"):
        CuttingPlaneSVC(loss="auc").fit(X, y)
    with pytest.raises(ValueError, match="two classes, no sample_weight"):
        CuttingPlaneSVC(loss="f1").fit(*_svmlight("dna1k.train"))
    with pytest.raises(ValueError, match="--p <= 1"):
        CuttingPlaneSVC(loss=4, k_fraction=3).fit(X, y)


def test_a_multivariate_loss_is_kept_by_the_model_file(tmp_path):
    """loss= and k_fraction= come back from the model file (load_model), and the loaded
    estimator writes the same file."""
    X, y = _small(300)
    est = CuttingPlaneSVC(C=1, loss="recall_at_k", k_fraction=1.5).fit(X, y)
    est.save_model(tmp_path / "m")
    again = load_model(tmp_path / "m")
    assert (again.loss, again.k_fraction) == ("recall_at_k", 1.5)
    np.testing.assert_array_equal(again.decision_function(X), est.decision_function(X))
    again.save_model(tmp_path / "m2")
    assert (tmp_path / "m2").read_bytes() == (tmp_path / "m").read_bytes()


# -- sequences and user problems ------------------------------------------------------------


def test_sequence_tagging_on_lists_of_sentences_with_any_tags():
    sentences, tags = _sentences("ewt60.hmm.train")
    names = np.array([f"TAG{t:02d}" for t in range(1, 18)])
    named = [names[t - 1] for t in tags]
    est = StructuredSVM(problem="hmm", C=10, epsilon=1).fit(sentences, named)
    # Names are numbered 1..K in sorted order: the tag numbers of the seen tags' ranks.
    seen = np.unique(np.concatenate(tags))
    ranks = [np.searchsorted(seen, t) + 1 for t in tags]
    ref = StructuredSVM(problem="hmm", C=10, epsilon=1).fit(sentences, ranks)
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    assert list(est.classes_) == list(names[seen - 1])
    test, test_tags = _sentences("ewt30.hmm.test")
    test = [fit_columns(t, est.n_features_in_) for t in test]
    predicted = est.predict(test)
    assert [len(p) for p in predicted] == [len(t) for t in test_tags]
    assert all(p.dtype.kind == "U" for p in predicted)
    accuracy = est.score(test, [names[t - 1] for t in test_tags])
    rank_of = dict(zip(seen, range(1, len(seen) + 1)))
    test_ranks = [np.array([rank_of.get(t, 0) for t in s]) for s in test_tags]
    assert accuracy == pytest.approx(ref.score(test, test_ranks))
    assert accuracy > 0.5  # 17 tags: far above chance after 60 sentences


def _cp_classify(test_file, model_file, output_file):
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "cpsvm.cli.classify",
            "-v",
            "0",
            str(test_file),
            str(model_file),
            str(output_file),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=300,
    )
    assert run.returncode == 0, run.stderr


def test_a_dataset_predicts_what_cp_classify_writes(tmp_path):
    """X given as cp_learn's input object: predictions as cp_classify's output file."""
    est = StructuredSVM(problem="hmm", C=10, epsilon=0.5).fit(
        read_svmlight(SAMPLES / "ewt60.hmm.train")
    )
    est.save_model(tmp_path / "m")
    _cp_classify(SAMPLES / "ewt30.hmm.test", tmp_path / "m", tmp_path / "p")
    predicted = est.predict(read_svmlight(SAMPLES / "ewt30.hmm.test"))
    np.testing.assert_array_equal(predicted, np.loadtxt(tmp_path / "p"))


def test_parsing_a_tree_dataset_writes_what_cp_classify_writes(tmp_path):
    """cfg from Python: the trees cp_classify writes for the same model and test file."""
    est = StructuredSVM(problem="cfg", C=10, epsilon=1).fit(
        read_tree_dataset(SAMPLES / "toy.train.mrg", 0)
    )
    est.save_model(tmp_path / "m")
    _cp_classify(SAMPLES / "toy.test.mrg", tmp_path / "m", tmp_path / "p")
    predicted = est.predict(read_tree_dataset(SAMPLES / "toy.test.mrg", 0))
    written = (tmp_path / "p").read_text().splitlines()
    assert len(written) > 10
    assert [format_tree(t) for t in predicted] == written


def test_gamma_scale_and_auto_are_svcs():
    from sklearn.svm import SVC

    X, y = _small(200)
    for gamma in ("scale", "auto"):
        ours = CuttingPlaneSVC(kernel="rbf", gamma=gamma, max_iter=2).fit(X, y)
        assert ours.model_.kernel.gamma == pytest.approx(
            SVC(gamma=gamma).fit(X, y)._gamma, rel=1e-12
        )


def test_hmm_model_of_svm_hmm_predicts_its_tags():
    est = load_model(FIXTURES / "hmm_syn_t1e0.model")
    assert isinstance(est, StructuredSVM)
    X, tags, qid = load_svmlight_file(
        str(FIXTURES / "hmm_syn.test"), query_id=True, n_features=est.n_features_in_
    )
    rows = np.split(np.arange(len(qid)), np.flatnonzero(np.diff(qid)) + 1)
    predicted = np.concatenate(est.predict([X[r] for r in rows]))
    np.testing.assert_array_equal(predicted, np.loadtxt(FIXTURES / "hmm_syn_t1e0.pred"))


def test_user_problem_class_predicts_as_cp_classify(tmp_path):
    cls, X, y = _ordinal()
    est = StructuredSVM(cls, C=0.25).fit(X, y)
    Xt, yt = load_svmlight_file(str(EXAMPLES / "ordinal.test"), n_features=X.shape[1])
    predicted = est.predict(Xt)
    W = est.coef_.reshape(est.model_.options["n_levels"], -1)
    np.testing.assert_array_equal(predicted, np.argmax(Xt @ W.T, axis=1) + 1)
    assert np.mean(np.abs(predicted - yt)) < 0.5
    with pytest.raises(ValueError, match="inside a function"):

        class Local(cls):
            pass

        StructuredSVM(Local).fit(X, y)


# -- model files and pickles ----------------------------------------------------------------


def _test_rows(path, estimator):
    """A test file's rows at the model's width (cp_classify ignores features above it)."""
    X, _ = load_svmlight_file(str(path))
    return fit_columns(X, estimator.n_features_in_)


@pytest.mark.parametrize("kind", ["linear", "rbf", "poly", "sigmoid"])
def test_load_svmlight_models(kind):
    est = load_model(FIXTURES / f"heart_scale.light_{kind}.model")
    X = _test_rows(FIXTURES / "heart_scale", est)
    reference = np.loadtxt(FIXTURES / f"heart_scale.light_{kind}.pred")
    # svm_classify computes in 32-bit floats and prints %.8g.
    np.testing.assert_allclose(est.decision_function(X), reference, rtol=2e-6, atol=1e-6)
    assert est.kernel == kind


def test_load_svmperf_and_svmmulticlass_models():
    perf = OCASClassifier.load_model(FIXTURES / "a9a3k.perf_linear.model")
    X = _test_rows(SAMPLES / "a9a2k.test", perf)
    np.testing.assert_allclose(
        perf.decision_function(X),
        np.loadtxt(FIXTURES / "a9a2k.perf_linear.pred"),
        rtol=1e-6,
        atol=1e-7,
    )  # svm_perf_classify: 32-bit floats
    mc = load_model(FIXTURES / "dna.multiclass.model")
    Xd = _test_rows(SAMPLES / "dna500.test", mc)
    reference = np.loadtxt(FIXTURES / "dna500.multiclass.pred")
    np.testing.assert_array_equal(mc.predict(Xd), reference[:, 0])
    with pytest.raises(ValueError, match="SequenceModel"):
        OCASClassifier.load_model(FIXTURES / "hmm_syn_t1e0.model")


@pytest.mark.parametrize(
    "make",
    [
        lambda: CuttingPlaneSVC(C=1, kernel="rbf", gamma=0.05, max_iter=3),
        lambda: ASSETClassifier(
            C=100, kernel="rbf", gamma=0.01, approximation="rff", n_components=30, max_iter=1
        ),
        lambda: ASSETRegressor(C=1, kernel="rbf", gamma=0.05, n_components=30, max_iter=1),
        lambda: OCASClassifier(C=1, fit_intercept=True),
    ],
    ids=["kernel", "rff", "regression", "linear"],
)
def test_save_load_and_pickle_round_trips(make, tmp_path):
    X, y = _small(300)
    est = make().fit(X, y)
    est.save_model(tmp_path / "m")
    again = type(est).load_model(tmp_path / "m")
    # An SVMlight kernel model does not say it is a regression: the module's load_model
    # reads it as CuttingPlaneSVC (the same decision values), a linear one likewise.
    expected = CuttingPlaneSVC if isinstance(est, (ASSETRegressor, OCASClassifier)) else type(est)
    generic = load_model(tmp_path / "m")
    assert type(generic) is expected
    np.testing.assert_allclose(
        generic.decision_function(X),
        est.predict(X) if isinstance(est, ASSETRegressor) else est.decision_function(X),
        rtol=1e-12,
        atol=1e-12,
    )
    # A linear-kernel expansion is read back as one weight vector: w·x sums differently.
    np.testing.assert_allclose(again.predict(X), est.predict(X), rtol=1e-12, atol=1e-12)
    again.save_model(tmp_path / "m2")
    assert (tmp_path / "m2").read_bytes() == (tmp_path / "m").read_bytes()
    unpickled = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(unpickled.predict(X), est.predict(X))


# -- model selection ------------------------------------------------------------------------


def test_cross_val_score_grid_search_and_pipeline():
    X, y = _small(600)
    scores = cross_val_score(OCASClassifier(C=1), X, y, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.7)
    grid = GridSearchCV(
        CuttingPlaneSVC(kernel="rbf", max_iter=10), {"C": [0.1, 1.0], "gamma": [0.01, 0.1]}, cv=2
    ).fit(X, y)
    assert set(grid.best_params_) == {"C", "gamma"}
    assert grid.best_score_ > 0.7
    pipe = make_pipeline(
        StandardScaler(with_mean=False),
        ASSETClassifier(C=10, kernel="rbf", gamma=0.01, n_components=50, max_iter=2),
    ).fit(X, y)
    assert pipe.score(X, y) > 0.7


# -- the package without scikit-learn -------------------------------------------------------


def _python(code):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )


def test_cpsvm_does_not_import_scikit_learn_and_says_which_extra_is_missing():
    run = _python(
        "import sys, cpsvm, cpsvm.models, cpsvm.cli.learn\nprint('sklearn' in sys.modules)"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"
    blocked = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'sklearn' or name.startswith('sklearn.'):\n"
        "            raise ImportError('No module named ' + repr(name))\n"
        "sys.meta_path.insert(0, Block())\n"
        "import cpsvm.sklearn\n"
    )
    run = _python(blocked)
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError:") and "cpsvm[sklearn]" in last


# -- the README's example -------------------------------------------------------------------


def test_readme_from_python_example_runs(tmp_path):
    text = (ROOT / "README.md").read_text()
    section = text.split("## From Python", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    assert blocks, "no python block in the README's From Python section"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run(
        [sys.executable, "-c", "\n".join(blocks)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip(), "the example prints its results"


# -- verbosity and threads ------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, marker",
    [
        (lambda: OCASClassifier(C=1, verbose=1), "Q_P="),
        (lambda: CuttingPlaneSVC(C=1, verbose=1), "Iter 1:"),
        (lambda: SampledCutSVC(C=1, kernel="rbf", gamma=0.05, max_iter=2, verbose=1), "Iter 1:"),
        (lambda: ASSETClassifier(C=10, n_components=20, max_iter=1, verbose=1), "Epoch"),
    ],
    ids=["ocas", "cp", "sampled", "asset"],
)
def test_verbose_prints_the_commands_iteration_lines(make, marker, capsys):
    X, y = _small(300)
    make().fit(X, y)
    err = capsys.readouterr().err
    assert marker in err
    quiet = make().set_params(verbose=0).fit(X, y)
    assert capsys.readouterr().err == "" and quiet.n_iter_ >= 1


def test_n_jobs_changes_nothing_but_the_threads():
    from cpsvm.threads import get_num_threads

    X, y = _small()
    before = get_num_threads()
    one = CuttingPlaneSVC(C=1, n_jobs=1).fit(X, y)
    assert get_num_threads() == before
    every = CuttingPlaneSVC(C=1, n_jobs=-1).fit(X, y)
    np.testing.assert_array_equal(one.coef_, every.coef_)
    with pytest.raises(ValueError, match="n_jobs"):
        CuttingPlaneSVC(n_jobs=0).fit(X, y)


def test_sentences_are_counted_once_for_the_command_and_the_estimator(tmp_path):
    """cp_learn's count of sentences (its message, and n in -c's conversion) is the
    number of qid runs: 60 in ewt60, as sklearn's reader sees them."""
    sentences, _ = _sentences("ewt60.hmm.train")
    data = read_svmlight(SAMPLES / "ewt60.hmm.train")
    assert data.n_qid_runs() == len(sentences) == 60
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "cpsvm.cli.learn",
            "-v",
            "1",
            "-#",
            "1",
            "-c",
            "1",
            str(SAMPLES / "ewt60.hmm.train"),
            str(tmp_path / "m"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert f"({len(sentences)} examples (sentences), {data.n_examples} tokens" in run.stdout


def test_asset_estimators_stop_by_the_commands_rule():
    """ASSETRegressor at its defaults (asset_learn's) stops by the rule on generated data
    that 10 epochs leave unconverged, and says so."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(2000, 5))
    y = A @ np.array([1.0, -2.0, 0.5, 0.0, 1.5]) + 0.3 + rng.normal(scale=0.5, size=2000)
    est = ASSETRegressor(C=1, approximation="none").fit(A, y)
    assert est.stop_reason_ == "converged" and 10 < est.n_iter_ < 64
    fixed = ASSETRegressor(C=1, approximation="none", tol=0, max_iter=10).fit(A, y)
    assert fixed.stop_reason_ == "epochs" and fixed.n_iter_ == 10
    assert fixed.objective_ > 1.05 * est.objective_


def test_rank_svm_scores_ndcg_as_cp_classify_and_loads_back(tmp_path):
    X, y, qid = _ranking("toy.rank.train")
    Xt, yt, qt = _ranking("toy.rank.test")
    ranker = RankSVM(C=0.5).fit(X, y, groups=qid)
    ranker.save_model(tmp_path / "m")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "cpsvm.cli.classify",
            "-v",
            "1",
            "--double",
            str(SAMPLES / "toy.rank.test"),
            str(tmp_path / "m"),
            str(tmp_path / "p"),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert run.returncode == 0, run.stderr
    assert f"NDCG@10 on test set: {ranker.score(Xt, yt, groups=qt):.4f} " in run.stdout
    written = np.loadtxt(tmp_path / "p")
    assert np.allclose(ranker.predict(Xt), written, atol=1e-6)
    loaded = load_model(tmp_path / "m")
    assert isinstance(loaded, RankSVM)
    assert np.array_equal(loaded.decision_function(Xt), ranker.decision_function(Xt))
    # A query whose rows are apart is refused, as cp_learn refuses such a file.
    with pytest.raises(ValueError, match="consecutive"):
        RankSVM().fit(X[:4], y[:4], groups=[1, 2, 1, 2])


def test_rank_svm_under_cross_validation_gets_its_groups_routed():
    """With metadata routing the folds' fits see their queries (the same scores as a
    hand-made loop over GroupKFold); without, fit warns that it trains one query."""
    import sklearn
    from sklearn.model_selection import GroupKFold, cross_val_score

    rng = np.random.default_rng(3)
    X = rng.random((60, 3))
    q = np.repeat(np.arange(1, 13), 5)
    y = (X @ [1.0, 2.0, -1.0] > 0.8).astype(float) + (X[:, 0] > 0.5)
    cv = GroupKFold(3)
    by_hand = [
        RankSVM(C=1.0).fit(X[a], y[a], groups=q[a]).score(X[b], y[b], groups=q[b])
        for a, b in cv.split(X, y, q)
    ]
    with sklearn.config_context(enable_metadata_routing=True):
        routed = RankSVM(C=1.0).set_fit_request(groups=True).set_score_request(groups=True)
        scores = cross_val_score(routed, X, y, cv=cv, params={"groups": q})
    np.testing.assert_allclose(scores, by_hand, rtol=1e-12)
    with pytest.warns(UserWarning, match="without groups: all rows are one query"):
        unrouted = cross_val_score(RankSVM(C=1.0), X, y, groups=q, cv=cv)
    assert not np.allclose(unrouted, by_hand)
