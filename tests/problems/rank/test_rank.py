"""Ranking (SVMrank, cp_learn --problem rank): the O(n log n) oracle against brute force
over every labelling, the evaluation against brute force over every ranking, the
objective against scikit-learn's LinearSVC on the pairs, and the commands."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import SAMPLES

from cpsvm.io.model_file import read_model
from cpsvm.io.svmlight import read_svmlight
from cpsvm.models import LinearModel, RankingModel
from cpsvm.problems.rank.problem import FRACTION_SWAPPED, SWAPPED_PAIRS, RankProblem, query_metrics
from cpsvm.solvers.one_slack import StructParams, train

TOY = SAMPLES / "toy.rank.train"
TOY_TEST = SAMPLES / "toy.rank.test"


def tiny_sets(n_sets, max_pairs=10, seed=0):
    """Random tiny ranking sets: (X, y, starts, w), each with at most ``max_pairs`` pairs
    (1024 labellings), some queries with one level, ties in the targets and in w·x."""
    rng = np.random.default_rng(seed)
    made = 0
    while made < n_sets:
        sizes = rng.integers(1, 5, size=rng.integers(1, 4))
        starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        n = int(starts[-1])
        y = rng.integers(0, 3, size=n).astype(float)
        pairs = sum(
            int(np.sum(y[a:b, None] > y[None, a:b])) for a, b in zip(starts[:-1], starts[1:])
        )
        if not 0 < pairs <= max_pairs:
            continue
        X = rng.integers(-2, 3, size=(n, 3)).astype(float)  # integer scores: exact ties
        w = rng.choice([0.0, 0.5, 1.0]) * rng.integers(-2, 3, size=3)
        made += 1
        yield sp.csr_matrix(X), y, starts, w


def every_labelling(X, y, starts, scale, weights):
    """(c, g) of every orientation of every pair: pair (i, j) with y_i > y_j swapped adds
    weights_k·scale_k to c and weights_k·scale_k·(x_i − x_j) to g."""
    dense = X.toarray()
    coef, diff = [], []
    for k, (a, b) in enumerate(zip(starts[:-1], starts[1:])):
        for i in range(a, b):
            for j in range(a, b):
                if y[i] > y[j]:
                    coef.append(weights[k] * scale[k])
                    diff.append(dense[i] - dense[j])
    flips = np.array(list(itertools.product([0.0, 1.0], repeat=len(coef))))
    coef, diff = np.array(coef), np.array(diff)
    return flips @ coef, flips @ (coef[:, None] * diff)


@pytest.mark.parametrize("loss_id", [SWAPPED_PAIRS, FRACTION_SWAPPED])
def test_the_oracle_is_the_most_violated_of_every_labelling(loss_id):
    for X, y, starts, w in tiny_sets(25, seed=loss_id):
        problem = RankProblem(X, y, starts, loss_id=loss_id)
        weights = np.random.default_rng(1).uniform(0.5, 2.0, problem.n_examples)
        c_all, g_all = every_labelling(X, y, starts, problem.scale, weights)
        violation = c_all - g_all @ w
        best = np.max(violation)
        c, g = problem.cut(w, weights, 2)
        assert c - g @ w == pytest.approx(best, abs=1e-12)
        # Unique argmax (no pair exactly at margin 1): the very same cut.
        if np.sum(violation > best - 1e-9) == 1:
            k = int(np.argmax(violation))
            assert c == pytest.approx(c_all[k]) and np.allclose(g, g_all[k])
        # The labelling's own Δ, margins and δΨ give the cut too (the -w 0/4 path).
        labels = problem.separate(w, 2)
        losses, margins = problem.losses(labels), problem.margins(w, labels)
        assert weights @ losses == pytest.approx(c)
        assert weights @ (losses - margins) == pytest.approx(best, abs=1e-12)
        assert np.allclose(problem.delta_psi_sum(weights, labels), g)
        # A batch of queries alone (n-slack) gives each query's part.
        for q in range(problem.n_examples):
            part = problem.separate(w, 2, rows=[q])
            assert problem.losses(part, rows=[q])[0] == pytest.approx(losses[q])
            assert problem.margins(w, part, rows=[q])[0] == pytest.approx(margins[q])


def worst_ranking_metrics(scores, y, at=10):
    """Swapped pairs, NDCG@at and AP of a query by brute force: every permutation of the
    documents that sorts the scores (highest first), the worst one (ties broken against
    the targets)."""
    m = len(y)
    rel = np.maximum(y, 0.0)
    ndcgs, aps = [], []
    ideal = np.sort(rel)[::-1]
    idcg = sum((2 ** ideal[r] - 1) / np.log2(r + 2) for r in range(min(at, m)))
    for perm in itertools.permutations(range(m)):
        if any(scores[perm[r]] < scores[perm[r + 1]] for r in range(m - 1)):
            continue
        dcg = sum((2 ** rel[perm[r]] - 1) / np.log2(r + 2) for r in range(min(at, m)))
        hits, precisions = 0, []
        for r, d in enumerate(perm):
            if y[d] > 0:
                hits += 1
                precisions.append(hits / (r + 1))
        ndcgs.append(dcg / idcg if idcg > 0 else np.nan)
        aps.append(np.mean(precisions) if precisions else np.nan)
    swapped = sum(1 for i in range(m) for j in range(m) if y[i] > y[j] and scores[i] <= scores[j])
    pairs = sum(1 for i in range(m) for j in range(m) if y[i] > y[j])
    return pairs, swapped, min(ndcgs), min(aps)


def test_evaluation_is_the_worst_ranking_that_sorts_the_scores():
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 7, size=25)
    starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    y = rng.integers(-1, 4, size=starts[-1]).astype(float)
    scores = rng.integers(0, 3, size=starts[-1]).astype(float)  # many ties
    got = query_metrics(scores, y, starts, at=3)
    for q, (a, b) in enumerate(zip(starts[:-1], starts[1:])):
        expected = worst_ranking_metrics(scores[a:b], y[a:b], at=3)
        assert np.allclose(got[q], expected, equal_nan=True), (q, got[q], expected)


def pairs_of(data):
    """The pairs (i, j), y_i > y_j within a query, and each one's query."""
    qid, y = data.qid, data.y
    same = qid[:, None] == qid[None, :]
    i, j = np.nonzero(same & (y[:, None] > y[None, :]))
    return i, j, qid[i]


@pytest.fixture(scope="module")
def toy():
    return read_svmlight(TOY)


@pytest.mark.parametrize("loss_id", [SWAPPED_PAIRS, FRACTION_SWAPPED])
def test_objective_is_linearsvcs_on_the_pairs(toy, loss_id):
    LinearSVC = pytest.importorskip("sklearn.svm").LinearSVC
    C = 5.0
    i, j, q = pairs_of(toy)
    n = len(np.unique(toy.qid))
    D = (toy.X[i] - toy.X[j]).toarray()
    per_query = np.bincount(q)[q] if loss_id == FRACTION_SWAPPED else np.ones(len(i))
    weight = 1.0 / per_query  # -l 2: each query's pairs averaged
    # Pairs of both orientations, so that LinearSVC sees two classes; the hinge is the same.
    sign = np.where(np.arange(len(i)) % 2 == 0, 1.0, -1.0)
    svc = LinearSVC(C=C / n, loss="hinge", fit_intercept=False, tol=1e-10, max_iter=200000).fit(
        D * sign[:, None], sign, sample_weight=weight
    )

    def objective(w):
        return 0.5 * w @ w + C / n * weight @ np.maximum(0.0, 1.0 - D @ w)

    reference = objective(svc.coef_.ravel())
    model, info = train(toy, StructParams(C=C, epsilon=0.001, problem="rank", loss_id=loss_id))
    assert isinstance(model, RankingModel) and model.b == 0.0
    ours = objective(model.w)
    assert ours == pytest.approx(info.result.primal, rel=1e-9)
    # The 1-slack guarantee: within C·ε (ε in the loss's units) of the optimum.
    assert -1e-6 * reference <= ours - reference <= C * info.epsilon
    assert info.result.dual <= reference + 1e-6 * reference
    assert abs(ours - reference) <= 1e-3 * reference


@pytest.mark.parametrize("algorithm", [0, 2, 3, 4, 9])
def test_every_algorithm_reaches_the_same_optimum(toy, algorithm):
    C = 2.0
    _, reference = train(toy, StructParams(C=C, epsilon=1e-4, problem="rank", algorithm=9))
    optimum = reference.result.primal
    _, info = train(toy, StructParams(C=C, epsilon=0.01, problem="rank", algorithm=algorithm))
    assert info.algorithm == algorithm and info.n_examples == 60
    assert optimum - C * reference.epsilon <= info.result.primal <= optimum + C * info.epsilon


def test_the_model_is_the_same_for_any_thread_count(toy):
    one, _ = train(toy, StructParams(C=2.0, problem="rank", n_threads=1))
    two, _ = train(toy, StructParams(C=2.0, problem="rank", n_threads=2))
    assert np.array_equal(one.w, two.w)


def test_a_query_of_one_level_counts_in_n_and_adds_no_loss():
    # svm_rank_learn counts every query in n: the one without pairs halves C's weight.
    X = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.5]]))
    y = np.array([1.0, 0.0, 2.0, 2.0])
    with_single = RankProblem(X, y, np.array([0, 2, 4]))
    alone = RankProblem(X[:2], y[:2], np.array([0, 2]))
    assert (with_single.n_examples, with_single.n_skipped) == (2, 1)
    w = np.array([0.2, 0.1])
    c, g = with_single.cut(w, np.full(2, 0.5), 2)
    c1, g1 = alone.cut(w, np.full(1, 1.0), 2)
    assert c == pytest.approx(c1 / 2) and np.allclose(g, g1 / 2)


# -- the commands ---------------------------------------------------------------------------
# Every command line of these tests runs once, all in one interpreter (one start-up): a
# case is (module, argv, files to write first), with NAME standing for the run's folder.

MODEL_LINES = (
    "SVM-light Version V6.20\n0 # kernel type\n3 # kernel parameter -d \n"
    "1 # kernel parameter -g \n1 # kernel parameter -s \n1 # kernel parameter "
    "-r \nempty# kernel parameter -u \n11 # highest feature index \n8 # number "
    "of training documents \n2 # number of support vectors plus 1 \n0 # "
    "threshold b, each following line is a SV (starting with alpha*y)\n"
    "1 1:0.5 2:-0.25 #\n"
)
ONE_PAIR = "2 qid:1 1:1\n0 qid:1 2:1\n"
BAD = {
    "split": (
        "2 qid:1 1:1\n0 qid:1 2:1\n1 qid:2 1:1\n0 qid:1 2:2\n",
        [],
        1,
        "d:4: expected the documents of query qid:1 on consecutive lines, but it "
        "reappears after qid:2 (it began on line 1)",
    ),
    "text_target": (
        "2 qid:1 1:1\nhigh qid:1 2:1\n",
        ["--problem", "rank"],
        1,
        "d:2: expected a numeric target at the start of the line, got 'high'",
    ),
    "no_pairs": (
        "1 qid:1 1:1\n1 qid:1 2:1\n0 qid:2 1:1\n",
        ["--problem", "rank"],
        1,
        "expected a query with two different targets (a pair to rank), but each "
        "of the 2 queries has one relevance level only",
    ),
    "slack": (ONE_PAIR, ["-o", "1"], 2, "margin rescaling only"),
    "custom": (
        ONE_PAIR,
        ["--t", "1"],
        2,
        "--t: not an option of the rank problem (it has none); --t is binary and hmm's",
    ),
    "loss": (ONE_PAIR, ["-l", "0"], 2, "not a loss of the rank problem"),
    "kernel": (
        ONE_PAIR,
        ["-t", "2"],
        2,
        "kernels (-t 1..3) are supported for binary problems only",
    ),
    "binary_reading": (
        None,
        ["--problem", "binary"],
        1,
        "toy.rank.train:1: expected binary targets +1 or -1, got target 2",
    ),
}
CASES = {
    "toy": [
        ("learn", ["-c", "3", TOY, "NAME/m"], {}),
        ("classify", [TOY_TEST, "NAME/m", "NAME/p"], {}),
    ],
    "plain_model": [("classify", ["-v", "1", TOY_TEST, "NAME/m", "NAME/p"], {"m": MODEL_LINES})],
    "hmm": [("learn", ["-c", "1", "-e", "1", SAMPLES / "ewt60.hmm.train", "NAME/m"], {})],
    "binary_qid": [
        (
            "learn",
            ["-c", "1", "NAME/d", "NAME/m"],
            {"d": "1 qid:1 1:1\n-1 qid:1 2:1\n1 qid:2 1:1 2:0.5\n-1 qid:2 2:2\n"},
        ),
        ("learn", ["-c", "1", "--problem", "rank", "NAME/d", "NAME/m"], {}),
    ],
    "skipped": [
        (
            "learn",
            ["-c", "1", "NAME/d", "NAME/m"],
            {"d": "2 qid:1 1:1\n0 qid:1 2:1\n1 qid:2 1:1\n1 qid:2 2:1\n0.5 qid:3 1:2\n"},
        )
    ],
    "classify_split": [
        ("learn", ["-v", "0", "-c", "1", TOY, "NAME/m"], {}),
        (
            "classify",
            ["-v", "1", "NAME/d", "NAME/m", "NAME/p"],
            {"d": "2 qid:1 1:1\n0 qid:2 2:1\n1 qid:1 1:1\n"},
        ),
    ],
}
for name, (text, args, _, _) in BAD.items():
    data = "NAME/d" if text is not None else TOY
    CASES["bad_" + name] = [
        ("learn", ["-c", "1", *args, data, "NAME/m"], {"d": text} if text is not None else {})
    ]

RUNNER = """
import contextlib, importlib, io, json, pathlib, sys
results = {}
for name, steps in json.loads(sys.argv[1]).items():
    results[name] = []
    for module, argv, files in steps:
        for file, text in files.items():
            pathlib.Path(file).write_text(text)
        out, err = io.StringIO(), io.StringIO()
        code = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                importlib.import_module('cpsvm.cli.' + module).main(argv)
            except SystemExit as e:
                code = e.code or 0
        results[name].append([code, out.getvalue(), err.getvalue()])
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """name -> (folder, [(exit status, stdout, stderr) of each step])."""
    import json
    import os
    import subprocess
    import sys

    root = tmp_path_factory.mktemp("rank")
    plan = {}
    for name, steps in CASES.items():
        folder = root / name
        folder.mkdir()
        fill = lambda v: str(v).replace("NAME", str(folder))  # noqa: E731
        plan[name] = [
            (module, [fill(a) for a in argv], {fill(f"NAME/{f}"): t for f, t in files.items()})
            for module, argv, files in steps
        ]
    env = dict(os.environ, PYTHONPATH=str(SAMPLES.parent.parent))
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(plan)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    return {name: (root / name, results[name]) for name in CASES}


def test_cp_learn_detects_ranking_and_cp_classify_prints_svm_rank_figures(runs):
    folder, ((code, out, err), (tcode, tout, terr)) = runs["toy"]
    assert code == 0, err
    assert "Problem chosen from the file: rank" in out and "--problem binary" in out
    assert "(60 queries, 723 documents, 3476 pairs, 10 features)" in out
    assert "SVMrank scale (svm_rank_learn -c 3)" in out
    text = (folder / "m").read_text()
    # SVMlight's linear model, b = 0, its one vector marked as a ranking function.
    assert text.startswith("SVM-light Version V6.20\n0 # kernel type\n")
    assert text.splitlines()[-1].endswith("# ranking function (cp_learn --problem rank)")
    parsed = read_model(folder / "m")
    assert isinstance(parsed, RankingModel) and parsed.b == 0.0

    assert tcode == 0, terr
    lines = (folder / "p").read_text().splitlines()
    test = read_svmlight(TOY_TEST)
    assert len(lines) == test.n_examples and all(len(v.split(".")[1]) == 8 for v in lines)
    scores = np.array(lines, dtype=float)
    assert np.allclose(scores, test.X @ parsed.w, atol=1e-6)
    # svm_rank_classify's figures, recomputed pair by pair from the written scores.
    fractions, total = [], 0
    for q in np.unique(test.qid):
        s, t = scores[test.qid == q], test.y[test.qid == q]
        swapped = np.sum((t[:, None] > t[None, :]) & (s[:, None] <= s[None, :]))
        fractions.append(swapped / np.sum(t[:, None] > t[None, :]))
        total += swapped
    assert f"Average loss on test set: {np.mean(fractions):.4f}" in tout
    assert f"Total Num Swappedpairs  : {total:6d}" in tout
    assert f"Avg Swappedpairs Percent: {100 * np.mean(fractions):6.2f}" in tout
    assert "NDCG@10 on test set: 0." in tout and "MAP on test set: 0." in tout
    assert np.mean(fractions) < 0.35  # the toy set is learnable


def test_a_plain_linear_model_ranks_a_file_of_graded_queries(runs):
    # svm_rank_learn's models carry no mark: the queries of the file decide.
    folder, ((code, out, err),) = runs["plain_model"]
    assert type(read_model(folder / "m")) is LinearModel
    assert code == 0 and "Avg Swappedpairs Percent" in out, err


def test_an_hmm_file_stays_hmm_and_says_how_to_rank(runs):
    _, ((code, out, err),) = runs["hmm"]
    assert code == 0, err
    assert "Problem chosen from the file: hmm" in out
    assert "--problem rank" in out and "Problem: hmm" in out


def test_binary_targets_with_qid_stay_binary(runs):
    _, ((code, out, err), (rcode, rout, rerr)) = runs["binary_qid"]
    assert code == 0 and "Problem: binary" in out and "Problem chosen" not in out, err
    assert rcode == 0 and "Problem: rank" in rout, rerr


def test_queries_of_one_level_are_skipped_and_counted(runs):
    _, ((code, out, err),) = runs["skipped"]
    assert code == 0, err
    assert (
        "(3 queries (2 with one relevance level only: no pairs, skipped), 5 documents, "
        "1 pairs" in out
    )


@pytest.mark.parametrize("name", list(BAD))
def test_bad_ranking_input_is_one_line_and_no_model(runs, name):
    folder, ((code, out, err),) = runs["bad_" + name]
    _, _, expected_code, expected = BAD[name]
    assert code == expected_code and err.count("\n") == 1 and "Traceback" not in err, err
    assert expected in err and not (folder / "m").exists()


def test_cp_classify_refuses_split_queries(runs):
    _, (learned, (code, out, err)) = runs["classify_split"]
    assert learned[0] == 0 and code == 1 and err.count("\n") == 1, err
    assert "d:3: expected the documents of query qid:1 on consecutive lines" in err
