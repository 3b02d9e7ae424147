"""SVMperf's multivariate losses (cp_learn -l 0, 1, 3, 4, 5, 10) against independent
references: every labelling (threshold losses) or every ranking (ROC area) of tiny sets
for the separation oracles, an all-constraints QP and scikit-learn's LinearSVC on the
pair differences for the objectives, scikit-learn's ranking scores for the measures, and
a model and figures written by svm_perf_learn / svm_perf_classify for compatibility."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import FIXTURES, SAMPLES, brute_force, run_cli

from cpsvm.conventions import PSI_SCALE
from cpsvm.data import Dataset
from cpsvm.io.model_file import format_model, read_model
from cpsvm.io.svmlight import read_svmlight
from cpsvm.measures import contingency_loss, perf_figures
from cpsvm.problems.binary.multivariate import MultivariateProblem
from cpsvm.solvers.one_slack import StructParams, train

THRESHOLD_LOSSES = (0, 1, 3, 4, 5)


def admissible(loss_id, a, b, c, k=0) -> bool:
    """Whether SVMperf's separation oracle considers a labelling with these counts:
    PRBEP as many predicted positives as positives, Prec@k at least k, Rec@k at most k."""
    if loss_id == 3:
        return a + b == a + c
    if loss_id == 4:
        return a + b >= k
    if loss_id == 5:
        return a + b <= k
    return True


def tiny(seed, n, ties=False):
    """n examples of both classes, 3 features; ``ties``: rounded, so scores repeat."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    if ties:
        X = np.round(X)
    y = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    return X, y


def counts(y, ybar):
    a = int(np.sum((y > 0) & (ybar > 0)))
    b = int(np.sum((y < 0) & (ybar > 0)))
    c = int(np.sum((y > 0) & (ybar < 0)))
    return a, b, c, len(y) - a - b - c


def labellings(y, loss_id, k):
    """(Δ, ȳ) of every labelling SVMperf's oracle may return: admissible, Δ > 0."""
    for ybar in itertools.product([-1.0, 1.0], repeat=len(y)):
        ybar = np.array(ybar)
        a, b, c, d = counts(y, ybar)
        if admissible(loss_id, a, b, c, k):
            loss = contingency_loss(loss_id, a, b, c, d, k)
            if loss > 0:
                yield loss, ybar


def k_fraction_for(loss_id, seed):
    """--p values to try: SVMperf's default (0) and others within its bounds."""
    choices = {4: (0.0, 0.3, 1.0), 5: (0.0, 1.0, 1.5)}.get(loss_id, (0.0,))
    return choices[seed % len(choices)]


@pytest.mark.parametrize("loss_id", THRESHOLD_LOSSES)
@pytest.mark.parametrize("rescaling", [2, 1])
def test_threshold_oracle_is_the_best_labelling(loss_id, rescaling):
    """Its violation Δ + w·Ψ(ȳ) − w·Ψ(y) (margin) or Δ·(1 + w·Ψ(ȳ) − w·Ψ(y)) (slack),
    Ψ = (50/n)·Σ ȳ_i x_i as SVMperf scales it, is the maximum over all 2^n labellings."""
    for seed in range(24):
        n = 3 + seed % 6
        X, y = tiny(seed, n, ties=seed % 3 == 0)
        w = np.random.default_rng(100 + seed).standard_normal(3) * [0, 0.02, 0.2, 2][seed % 4]
        problem = MultivariateProblem(X, y, loss_id, k_fraction=k_fraction_for(loss_id, seed))
        s = X @ w
        found = problem.most_violated(s, rescaling)
        margin = float(found.delta @ s)
        ours = found.loss - margin if rescaling == 2 else found.loss * (1 - margin)
        best = -np.inf
        for loss, ybar in labellings(y, loss_id, problem.k):
            gain = PSI_SCALE / n * float((ybar - y) @ s)
            best = max(best, loss + gain if rescaling == 2 else loss * (1 + gain))
        if rescaling == 1:  # slack: only a positive violation needs its argmax
            ours, best = max(ours, 0.0), max(best, 0.0)
        assert ours == pytest.approx(best, rel=1e-10, abs=1e-10), (seed, n, w)
        # the labelling it names: its Δ from the definition and a δΨ of ±100/n entries
        flipped = found.delta != 0
        ybar = np.where(flipped, -y, y)
        assert found.loss == pytest.approx(contingency_loss(loss_id, *counts(y, ybar)))
        assert np.allclose(found.delta[flipped], 2 * PSI_SCALE / n * y[flipped])


def test_roc_area_oracle_is_the_best_ranking():
    """ROC area: Δ + w·Ψ(ȳ) − w·Ψ(y) with Ψ = (50/(P·N))·Σ_ij ȳ_ij·(x_i − x_j) and Δ the
    percentage of swapped pairs, maximised over every permutation of the examples."""
    for seed in range(30):
        n = 2 + seed % 5
        X, y = tiny(seed, n, ties=seed % 3 == 0)
        w = np.random.default_rng(200 + seed).standard_normal(3) * [0, 0.3, 1, 3][seed % 4]
        s = X @ w
        pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
        unit = 100.0 / (len(pos) * len(neg))
        best = -np.inf
        for order in itertools.permutations(range(n)):
            rank = np.argsort(order)
            value = 0.0
            for i, j in itertools.product(pos, neg):
                if rank[i] > rank[j]:  # swapped: Δ += unit, ȳ_ij = −1
                    value += unit - unit * (s[i] - s[j])
            best = max(best, value)
        found = MultivariateProblem(X, y, 10).most_violated(s)
        assert found.loss - found.delta @ s == pytest.approx(best, abs=1e-10), seed
        # SVMperf's own reading of the loss: Σ|Ψ coefficients of y − those of ȳ| / 2
        assert np.sum(np.abs(found.delta)) / 2 == pytest.approx(found.loss)


@pytest.mark.parametrize(
    "loss_id, algorithm, rescaling",
    [
        (1, 3, 2),
        (1, 9, 2),
        (3, 4, 2),
        (4, 0, 2),
        (5, 9, 2),
        (0, 3, 2),
        (1, 3, 1),
        (4, 2, 1),
        (0, 3, 1),
    ],
)
def test_objective_matches_all_constraints_qp(loss_id, algorithm, rescaling):
    """The trained objective against quadprog on the 1-slack QP with every labelling's
    constraint written out (the problem is one structured example)."""
    C, eps = 5.0, 1e-3
    for seed in range(2):
        X, y = tiny(seed, 7)
        X *= 0.05
        n = len(y)
        k = MultivariateProblem(X, y, loss_id).k
        constraints = []
        for loss, ybar in labellings(y, loss_id, k):
            a = PSI_SCALE / n * ((y - ybar) @ X)
            constraints.append((0, loss, a * (loss if rescaling == 1 else 1.0)))
        optimum = brute_force(constraints, 1, 3, C)
        model, info = train(
            Dataset(sp.csr_matrix(X), y),
            StructParams(
                C=C,
                epsilon=eps,
                algorithm=algorithm,
                rescaling=rescaling,
                loss_id=loss_id,
                problem="binary",
                options={"bias": 0.0},
            ),
        )
        assert info.result.status == "converged" and info.algorithm == algorithm
        w = model.w
        xi = max(0.0, max(loss - a @ w for _, loss, a in constraints))
        ours = 0.5 * w @ w + C * xi
        assert optimum - 1e-7 * abs(optimum) <= ours <= optimum + C * eps + 1e-6, (
            seed,
            ours,
            optimum,
        )
        assert ours == pytest.approx(info.result.primal, rel=1e-6)


def test_roc_area_objective_is_linear_svc_on_pair_differences():
    """ROC area's objective is SVMlight's on the P·N differences x_i − x_j at
    C_pairs = 100·C/(P·N): scikit-learn's LinearSVC on them is the reference."""
    from sklearn.svm import LinearSVC

    data = read_svmlight(FIXTURES / "heart_scale")
    X, y = data.X[:60].toarray(), data.y[:60]
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
    D = (X[pos][:, None, :] - X[neg][None, :, :]).reshape(-1, X.shape[1])
    labels = np.ones(len(D))
    D[1::2], labels[1::2] = -D[1::2], -1.0  # both classes for LinearSVC
    C = 2.0
    C_pairs = 100.0 * C / (len(pos) * len(neg))
    svc = LinearSVC(
        C=C_pairs, loss="hinge", fit_intercept=False, tol=1e-10, max_iter=1_000_000
    ).fit(D, labels)
    v = svc.coef_.ravel()
    reference = 0.5 * v @ v + C_pairs * np.maximum(0, 1 - labels * (D @ v)).sum()
    model, info = train(
        Dataset(sp.csr_matrix(X), y), StructParams(C=C, epsilon=1e-4, loss_id=10, problem="binary")
    )
    w = model.w
    ours = 0.5 * w @ w + C_pairs * np.maximum(0, 1 - labels * (D @ w)).sum()
    assert info.algorithm == 9 and model.b == 0.0  # the bias feature: blind to it
    assert reference - 1e-6 * reference <= ours <= reference + 1e-4 * C
    assert ours == pytest.approx(info.result.primal, rel=1e-9)


def test_measures_match_scikit_learn_and_break_ties_pessimistically():
    from sklearn.metrics import average_precision_score, f1_score, roc_auc_score

    rng = np.random.default_rng(5)
    y = np.where(rng.random(300) < 0.3, 1.0, -1.0)
    scores = rng.standard_normal(300) + y
    figures = dict(perf_figures(y, scores))
    assert figures["ROCArea"] == pytest.approx(100 * roc_auc_score(y, scores))
    assert figures["AvgPrec"] == pytest.approx(100 * average_precision_score(y, scores))
    assert figures["F1"] == pytest.approx(100 * f1_score(y > 0, scores > 0))
    # a tie between a positive and a negative counts as swapped, and ranks the
    # negative first for PRBEP and average precision
    tied = dict(perf_figures(np.array([1.0, -1.0, 1.0, -1.0]), np.array([1.0, 1.0, 0.5, 0.0])))
    assert tied["ROCArea"] == pytest.approx(50.0)  # 2 of 4 pairs: one swapped, one tied
    assert tied["PRBEP"] == pytest.approx(50.0)
    assert tied["AvgPrec"] == pytest.approx(100 * (1 / 2 + 2 / 3) / 2)


def test_svm_perf_roc_model_classifies_as_svm_perf_classify(tmp_path):
    """A model written by svm_perf_learn -l 10: the same predictions and the same seven
    figures as svm_perf_classify printed. Fixtures: svm_perf_learn -c 20 -l 10 -w 3
    a9a3k.train a9a3k.perf_roc.model, then svm_perf_classify a9a2k.test with it
    (a9a2k.perf_roc.pred, its output in a9a2k.perf_roc.classify.txt)."""
    out = tmp_path / "pred"
    run = run_cli(
        "classify",
        "--perf-measures",
        SAMPLES / "a9a2k.test",
        FIXTURES / "a9a3k.perf_roc.model",
        out,
    )
    assert run.returncode == 0, run.stderr
    ours, ref = np.loadtxt(out), np.loadtxt(FIXTURES / "a9a2k.perf_roc.pred")
    # svm_perf_classify prints %.8f, cp_classify %.8g
    assert np.allclose(ours, ref, rtol=1e-7, atol=1e-7)
    expected = [
        line
        for line in (FIXTURES / "a9a2k.perf_roc.classify.txt").read_text().splitlines()
        if line[:9].strip()
        in {"Accuracy", "Precision", "Recall", "F1", "PRBEP", "ROCArea", "AvgPrec"}
    ]
    assert len(expected) == 7
    assert run.stdout.splitlines()[-7:] == expected


def test_cp_learn_roc_model_records_its_loss(tmp_path):
    model = tmp_path / "roc.model"
    run = run_cli("learn", "-c", "20", "-l", "10", SAMPLES / "a9a3k.train", model)
    assert run.returncode == 0, run.stderr
    assert "Loss -l 10 (ROC area, SVMperf)" in run.stdout
    text = model.read_text()
    assert (
        text.splitlines()[8] == "3000 # number of training documents, trained for -l 10 (ROC area) "
    )
    parsed = read_model(model)
    assert parsed.loss_id == 10 and format_model(parsed) == text
    run = run_cli("classify", SAMPLES / "a9a2k.test", model, tmp_path / "p")
    assert run.returncode == 0, run.stderr
    line = run.stdout.splitlines()[-1]
    assert line.startswith("ROC area on test set: ") and "trained for -l 10" in line
    value = float(line.split(": ")[1].split("%")[0])
    ref = dict(perf_figures(read_svmlight(SAMPLES / "a9a2k.test").y, np.loadtxt(tmp_path / "p")))[
        "ROCArea"
    ]
    assert value == pytest.approx(ref, abs=0.005)
    # Prec@k keeps its --p, read back by cp_classify for k on the test set
    run = run_cli("learn", "-c", "20", "-l", "4", "--p", "0.25", SAMPLES / "a9a3k.train", model)
    assert run.returncode == 0, run.stderr
    assert read_model(model).k_fraction == 0.25
    run = run_cli("classify", SAMPLES / "a9a2k.test", model, tmp_path / "p")
    n_pos = int(np.sum(read_svmlight(SAMPLES / "a9a2k.test").y > 0))
    assert f"k = {int(0.25 * n_pos)}: 0.25 x {n_pos} positives" in run.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["-o", "1", "-l", "10"], "margin rescaling only"),
        (["-t", "2", "-l", "1"], "Nyström basis"),
        (["-l", "4", "--p", "2"], "--p <= 1"),
        (["-l", "5", "--p", "0.5"], "--p >= 1"),
        (["-l", "4", "--p", "-1"], "--p 0..1e+09"),
        (["-l", "6"], "expected -l 0, 1, 2, 3, 4, 5 or 10"),
        (["--problem", "multiclass", "-l", "10"], "not a loss of the multiclass problem"),
        (["--problem", "hmm", "--p", "0.5"], "--p: not an option of the hmm problem"),
    ],
)
def test_refused_options(tmp_path, args, message):
    model = tmp_path / "m"
    train_file = SAMPLES / (
        "dna1k.train"
        if "multiclass" in args
        else "ewt60.hmm.train"
        if "hmm" in args
        else "a9a3k.train"
    )
    run = run_cli("learn", "-c", "1", *args, train_file, model)
    assert run.returncode == 2 and message in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and not model.exists()
