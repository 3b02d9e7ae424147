"""Training SVMhmm's problem (cp_learn hmm) against independent references: a brute-force
n-slack QP over every labelling of tiny sentences, with Ψ and Δ written here from
SVMhmm's definition; SVMhmm's own objective on the sample file; the command line."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import SAMPLES, brute_force, run_cli

from cpsvm.data import Dataset
from cpsvm.io.model_file import read_model
from cpsvm.io.svmlight import read_svmlight
from cpsvm.solvers.one_slack import StructParams, train

# -- SVMhmm's problem written out independently --------------------------------------------


def tiny_sentences(seed, n=4, k=2, d=2, max_len=3):
    """n sentences of 1..max_len tokens, d dense features, tags 1..k (all present)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, max_len + 1, n)
    lengths[0] = max_len
    X = np.round(rng.standard_normal((lengths.sum(), d)), 2)
    y = rng.integers(1, k + 1, lengths.sum())
    y[:k] = np.arange(1, k + 1)
    qid = np.repeat(np.arange(1, n + 1), lengths)
    return Dataset(sp.csr_matrix(X), y.astype(float), qid=qid), lengths


def psi(x, tags, k, t, e):
    """Ψ(x, y) in a layout of this test's own: order-0 emissions (k, d), order-1
    emissions (k, k, d), transition pairs (k, k) and triples (k, k, k); tags 0-based."""
    d = x.shape[1]
    em0, em1 = np.zeros((k, d)), np.zeros((k, k, d))
    tr1, tr2 = np.zeros((k, k)), np.zeros((k, k, k))
    for i, c in enumerate(tags):
        em0[c] += x[i]
        if i >= 1:
            if e >= 1:
                em1[tags[i - 1], c] += x[i]
            if t >= 1:
                tr1[tags[i - 1], c] += 1
        if i >= 2 and t >= 2:
            tr2[tags[i - 2], tags[i - 1], c] += 1
    return np.concatenate([em0.ravel(), em1.ravel(), tr1.ravel(), tr2.ravel()])


def loss(y, ybar, loss_id):
    wrong = int(np.sum(np.asarray(y) != np.asarray(ybar)))
    return float(wrong) if loss_id == 1 else float(wrong > 0)


def sentences_of(data, lengths):
    X = data.X.toarray()
    y = data.y.astype(int) - 1
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    return [(X[a:b], y[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def all_constraints(sentences, k, t, e, loss_id, rescaling):
    """(sentence, Δ, a) for every labelling ŷ ≠ y: a·w ≥ Δ − ξ is margin rescaling
    (a = δΨ); slack rescaling is Δ·δΨ·w ≥ Δ − ξ."""
    out = []
    for i, (x, y) in enumerate(sentences):
        true = psi(x, y, k, t, e)
        for ybar in itertools.product(range(k), repeat=len(y)):
            delta = loss(y, ybar, loss_id)
            if delta == 0:
                continue
            a = true - psi(x, np.array(ybar), k, t, e)
            out.append((i, delta, a * (delta if rescaling == 1 else 1.0)))
    return out


def w_in_test_layout(model, k, t, e):
    """The model's w (SVMhmm V3.10's layout, as its model file documents it: transitions
    of order m at K + ... + K^m + Σ a_j·K^j, a_0 the current tag; then an unused block of
    F; then one F-block per emission state, tag c at row c and the pair (p, c) at row
    K + c + K·p) in this test's layout; also |w|² of the whole vector."""
    w, f = np.asarray(model.w), model.n_features
    cum = lambda m: sum(k**j for j in range(1, m + 2))  # noqa: E731
    size_trans = cum(t)
    em_start = size_trans + 1 + f
    states = cum(e)
    em = w[em_start : em_start + states * f].reshape(states, f)
    em1 = np.zeros((k, k, f))
    if e >= 1:
        em1 = em[k:].reshape(k, k, f)  # row K + c + K·p -> [p, c]
    tr1, tr2 = np.zeros((k, k)), np.zeros((k, k, k))
    if t >= 1:
        tr1 = w[k : k + k * k].reshape(k, k)
    if t >= 2:
        tr2 = w[k + k * k : k + k * k + k**3].reshape(k, k, k)
    assert len(w) == em_start + states * f
    return np.concatenate([em[:k].ravel(), em1.ravel(), tr1.ravel(), tr2.ravel()])


def objective(v, norm2, constraints, n, C):
    xi = np.zeros(n)
    for i, delta, a in constraints:
        xi[i] = max(xi[i], delta - a @ v)
    return 0.5 * norm2 + C / n * xi.sum()


CASES = [  # (loss -l, --t, --e, -o, -w)
    (1, 1, 0, 2, 3),
    (1, 1, 0, 2, 4),
    (1, 1, 0, 2, 0),
    (0, 1, 0, 2, 3),
    (1, 2, 0, 2, 3),
    (0, 2, 0, 2, 4),
    (1, 2, 1, 2, 3),
    (1, 1, 1, 2, 4),
    (1, 1, 0, 1, 3),
    (0, 1, 0, 1, 3),
    (1, 2, 0, 1, 4),
    (0, 2, 1, 1, 3),
    (1, 1, 0, 2, 9),
    (0, 2, 1, 2, 9),
    (1, 2, 1, 2, 9),
    (1, 2, 1, 1, 2),
]


@pytest.mark.parametrize("loss_id, t, e, rescaling, algorithm", CASES)
def test_tiny_sentences_match_brute_force(loss_id, t, e, rescaling, algorithm):
    k, C, eps = 3 if t == 1 else 2, 20.0, 1e-3
    for seed in range(2):
        data, lengths = tiny_sentences(seed, k=k)
        constraints = all_constraints(sentences_of(data, lengths), k, t, e, loss_id, rescaling)
        n = len(lengths)
        size = len(constraints[0][2])
        optimum = brute_force(constraints, n, size, C)
        model, info = train(
            data,
            StructParams(
                C=C,
                epsilon=eps,
                algorithm=algorithm,
                rescaling=rescaling,
                loss_id=loss_id,
                problem="hmm",
                options={"trans_order": t, "emit_order": e},
            ),
        )
        assert info.result.status == "converged" and info.n_examples == n
        assert info.algorithm == algorithm
        v = w_in_test_layout(model, k, t, e)
        ours = objective(v, float(model.w @ model.w), constraints, n, C)
        # Feasible with its true slacks: at least the optimum; the stopping rule (1-slack,
        # and n-slack's per-example ε) guarantees at most C·ε more.
        assert optimum - 1e-7 * abs(optimum) - 1e-9 <= ours <= optimum + C * eps + 1e-7, (
            seed,
            ours,
            optimum,
        )
        assert ours == pytest.approx(info.result.primal, rel=1e-7, abs=1e-9)


# -- the sample file: SVMhmm's objective, -w 3 against -w 4 -------------------------------


@pytest.fixture(scope="module")
def ewt60():
    return read_svmlight(SAMPLES / "ewt60.hmm.train")


def test_cache_reaches_the_same_objective_with_fewer_viterbi_calls(ewt60):
    C, eps = 5.0, 0.2
    results = {}
    for algorithm in (3, 4):
        _, info = train(ewt60, StructParams(C=C, epsilon=eps, algorithm=algorithm))
        assert info.problem == "hmm" and info.result.status == "converged"
        results[algorithm] = info.result
    # Both within C·ε of the optimum, so of each other.
    assert results[3].primal == pytest.approx(results[4].primal, abs=C * eps)
    assert max(results[3].dual, results[4].dual) <= min(results[3].primal, results[4].primal) + 1e-9
    assert results[4].oracle_calls < results[3].oracle_calls


def test_objective_brackets_svm_hmm_learn(ewt60):
    # svm_hmm_learn -c 5 -e 0.5 ewt60.hmm.train printed dval=52.62742 (a lower bound on the
    # optimum) and pval=54.80085 (an upper bound).
    _, info = train(ewt60, StructParams(C=5.0, epsilon=0.5))
    assert 52.62742 - 1e-4 <= info.result.primal <= 54.80085 + 5.0 * 0.5
    assert info.result.dual <= 54.80085 + 1e-4


# -- the commands -----------------------------------------------------------------------


def one_line(result):
    return result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_cp_learn_detects_hmm_and_cp_classify_tags_the_test_file(tmp_path):
    model, predictions = tmp_path / "m", tmp_path / "p"
    learned = run_cli("learn", "-c", "5", "-e", "0.5", SAMPLES / "ewt60.hmm.train", model)
    assert learned.returncode == 0, learned.stderr
    assert "Problem: hmm" in learned.stdout and "SVMhmm scale" in learned.stdout
    assert model.read_text().startswith("SVM-HMM Version V3.10\n")
    parsed = read_model(model)
    assert (parsed.n_tags, parsed.trans_order, parsed.emit_order) == (16, 1, 0)
    tested = run_cli("classify", SAMPLES / "ewt30.hmm.test", model, predictions)
    assert tested.returncode == 0, tested.stderr
    # One tag a token line; the error the command prints is the one the file shows.
    truth = read_svmlight(SAMPLES / "ewt30.hmm.test").y.astype(int)
    tags = np.array(predictions.read_text().split(), dtype=int)
    assert len(tags) == len(truth) == 501
    per_token = np.mean(tags != truth)
    assert f"Average loss per token: {per_token:.4f}" in tested.stdout
    assert per_token < 0.35


def test_problem_hmm_named_and_orders_written(tmp_path):
    model = tmp_path / "m"
    learned = run_cli(
        "learn",
        "-c",
        "5",
        "-e",
        "1",
        "--problem",
        "hmm",
        "--t",
        "2",
        "--e",
        "1",
        "--b",
        "0",
        "-l",
        "0",
        SAMPLES / "ewt60.hmm.train",
        model,
    )
    assert learned.returncode == 0, learned.stderr
    parsed = read_model(model)
    assert (parsed.trans_order, parsed.emit_order, parsed.loss_id) == (2, 1, 0)


@pytest.mark.parametrize(
    "args, code, expected",
    [
        (["--t", "5"], 2, "expected --t 0 or 1"),
        (["--e", "2"], 2, "expected --e 0 or 1"),
        (["--t", "0", "--e", "1"], 2, "expected --e 0..0"),
        (["--b", "-1"], 2, "expected --b 0..1e+09"),
        (["--b", "2.5"], 2, "expected --b 0..1e+09, an integer"),
        (
            ["--k", "10"],
            2,
            "--k: not an option of the hmm problem (its options: --t, --e, --b); --k is binary's",
        ),
        (["-l", "2"], 2, "not a loss of the hmm problem"),
        (["--problem", "hmm", "--t", "x"], 2, "expected an integer for --t"),
    ],
)
def test_bad_hmm_options_one_line_no_model(tmp_path, args, code, expected):
    model = tmp_path / "m"
    result = run_cli("learn", "-c", "1", *args, SAMPLES / "ewt60.hmm.train", model)
    assert result.returncode == code and one_line(result), result.stderr
    assert expected in result.stderr and not model.exists()


def test_hmm_options_keep_their_svmperf_meaning_for_binary(tmp_path):
    model = tmp_path / "m"
    refused = run_cli("learn", "-c", "1", "--e", "1", SAMPLES / "a9a3k.train", model)
    assert (
        refused.returncode == 2
        and one_line(refused)
        and "--e: not an option of the binary problem" in refused.stderr
        and "--e is hmm's" in refused.stderr
        and not model.exists()
    )
    refused = run_cli(
        "learn", "-c", "1", "--problem", "binary", "--t", "2", SAMPLES / "a9a3k.train", model
    )
    assert refused.returncode == 2 and "expected --t 0 or 1 (binary" in refused.stderr
    assert not model.exists()


def test_tag_0_in_training_is_an_input_error(tmp_path):
    data, model = tmp_path / "d", tmp_path / "m"
    data.write_text("1 qid:1 1:1\n2 qid:1 2:1\n0 qid:2 1:1\n1 qid:2 2:1\n")
    result = run_cli("learn", "-c", "1", "--problem", "hmm", data, model)
    assert result.returncode == 1 and one_line(result), result.stderr
    assert f"{data}:3: expected an integer tag >= 1, got 0" in result.stderr
    assert not model.exists()
    # Left to auto, a qid file with a target 0 is a ranking problem (graded relevance).
    ranked = run_cli("learn", "-c", "1", data, model)
    assert ranked.returncode == 0 and "Problem: rank" in ranked.stdout
