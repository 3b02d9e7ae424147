"""asset_learn's --class-weight LABEL:W[,...] | balanced and -j W (--class-weight 1:W):
the same per-example factors c_i as a cost: token on each example of the weighed classes
(one code path: the same model file but the weights' comment), and against a reference
independent of that path: the weighted objective recomputed from the model's weights and
an exact solver's optimum of the same weighted problem."""

import re

import numpy as np
import pytest
from test_class_weights import balanced_weights, unweighed, with_tokens

from cpsvm.io.model_file import read_model
from cpsvm.io.svmlight import read_examples

# Each approximation (and its model file format), ASSET*, and --method gd.
RUNS = [
    ("nystrom", ["-t", "2", "-g", "0.05", "--k", "64", "--epochs", "3"]),
    ("rff", ["--approx", "rff", "-t", "2", "-g", "0.05", "--k", "64", "--epochs", "3"]),
    ("none", ["--approx", "none", "--epochs", "3"]),
    ("star", ["--approx", "none", "--star", "--epochs", "3"]),
    ("gd", ["--approx", "none", "--method", "gd", "--loss", "huber"]),
]


@pytest.mark.parametrize(("name", "settings"), RUNS, ids=[n for n, _ in RUNS])
def test_j_is_class_weight_one_and_a_cost_token_on_each_positive(
    cli, samples, tmp_path, name, settings
):
    plain = samples / "a9a3k.train"
    tokens = with_tokens(plain, {1.0: 5.0}, tmp_path / "tokens.train")
    args = ["-v", "0", "-c", "1", *settings]
    for out, given in (("j", ["-j", "5"]), ("w", ["--class-weight", "1:5"])):
        run = cli("asset", *args, *given, plain, tmp_path / out)
        assert run.returncode == 0, run.stderr
    assert cli("asset", *args, tokens, tmp_path / "t").returncode == 0
    assert cli("asset", *args, plain, tmp_path / "p").returncode == 0
    assert (tmp_path / "j").read_bytes() == (tmp_path / "w").read_bytes()
    assert b", class weights 1:5 \n" in (tmp_path / "w").read_bytes()
    assert unweighed(tmp_path / "w") == (tmp_path / "t").read_bytes()
    assert (tmp_path / "t").read_bytes() != (tmp_path / "p").read_bytes()  # tokens weigh
    assert read_model(tmp_path / "w").class_weights == "1:5"


def test_balanced_and_tokens_times_weights(cli, samples, tmp_path):
    """balanced is n/(k*n_class) of the file; --class-weight multiplies cost: tokens."""
    plain = samples / "a9a3k.train"
    weights = balanced_weights(plain)
    tokens = with_tokens(plain, weights, tmp_path / "b.train")
    args = ["-v", "0", "-c", "1", "--approx", "none", "--epochs", "3"]
    run = cli("asset", *args, "--class-weight", "balanced", plain, tmp_path / "b")
    assert run.returncode == 0, run.stderr
    assert cli("asset", *args, tokens, tmp_path / "bt").returncode == 0
    assert unweighed(tmp_path / "b") == (tmp_path / "bt").read_bytes()
    shown = ",".join(f"{a:g}:{w:.6g}" for a, w in sorted(weights.items()))
    assert read_model(tmp_path / "b").class_weights == f"balanced {shown}"
    twice = with_tokens(plain, {-1.0: 2.0}, tmp_path / "twice.train")
    both = with_tokens(plain, {-1.0: 2.0, 1.0: 3.0}, tmp_path / "both.train")
    assert cli("asset", *args, "--class-weight", "1:3", twice, tmp_path / "w").returncode == 0
    assert cli("asset", *args, both, tmp_path / "t").returncode == 0
    assert unweighed(tmp_path / "w") == (tmp_path / "t").read_bytes()


def _weighted_hinge(w, X, y, factors, C):
    return 0.5 * w @ w + C * np.sum(factors * np.maximum(0.0, 1.0 - y * (X @ w)))


def test_the_weighted_objective_against_an_exact_solver(cli, samples, tmp_path):
    """ASSET* on the input features (Pegasos, no intercept) minimises ½|w|² +
    C·Σ c_i·hinge_i with c_i = 5 on the positives: its model's objective, recomputed here
    from its weights, comes within a few percent of ocas_learn's optimum of that problem
    (-b 0, a tight -r), and far below that of the model trained unweighted: 2% above
    the optimum at 200 epochs where the unweighted model is 65% above it."""
    plain = samples / "a9a3k.train"
    data = read_examples(plain)
    factors = np.where(data.y > 0, 5.0, 1.0)
    asset = ["-v", "0", "-c", "1", "--approx", "none", "--star", "--epochs", "200"]
    asset += ["--tolerance", "0"]  # (the weighted problem's iterates converge slower)
    assert cli("asset", *asset, "-j", "5", plain, tmp_path / "a").returncode == 0
    assert cli("asset", *asset, plain, tmp_path / "u").returncode == 0
    run = cli("ocas", "-v", "0", "-c", "1", "-r", "1e-8", "-j", "5", plain, tmp_path / "o")
    assert run.returncode == 0, run.stderr

    def objective(name):
        model = read_model(tmp_path / name)
        w = np.zeros(data.X.shape[1])
        n = min(len(w), len(model.w))
        w[:n] = model.w[:n]
        assert model.b == 0.0
        return _weighted_hinge(w, data.X, data.y, factors, 1.0)

    optimum, weighed, unweighted = objective("o"), objective("a"), objective("u")
    assert optimum <= weighed <= 1.03 * optimum, (optimum, weighed)
    assert weighed < 0.9 * unweighted, (weighed, unweighted)
    # the statistics' objective is that weighted objective
    stats = cli("asset", *asset[2:], "-j", "5", plain, tmp_path / "s").stdout
    said = float(re.search(r"objective 1/2\|w\|\^2 \+ C\*sum\(loss\) = (\S+)", stats).group(1))
    assert said == pytest.approx(weighed, rel=1e-6)


def test_the_bounds_and_step_follow_the_weights(cli, samples, tmp_path):
    """|gamma| <= sqrt(mean c_i / lambda) (Pegasos' 1/sqrt(lambda) when all c_i are 1):
    -j 4 on a file of n+ positives among n multiplies R by sqrt((n- + 4 n+)/n)."""
    plain = samples / "a9a3k.train"
    y = read_examples(plain).y
    args = ["-c", "1", "--approx", "none", "--epochs", "1"]

    def radius(*given):
        run = cli("asset", *args, *given, plain, tmp_path / "m")
        assert run.returncode == 0, run.stderr
        return float(re.search(r"\|gamma\| <= (\S+),", run.stdout).group(1))

    ratio = radius("-j", "4") / radius()
    assert ratio == pytest.approx(np.sqrt(np.mean(np.where(y > 0, 4.0, 1.0))), rel=1e-5)


def test_cross_validation_and_the_path_keep_the_weights(cli, samples, tmp_path):
    plain = samples / "a9a3k.train"
    tokens = with_tokens(plain, {1.0: 5.0}, tmp_path / "t.train")
    path = ["--approx", "none", "--epochs", "2", "--cv", "3", "--c-path", "0.1:10:3"]
    runs = [
        cli("asset", *path, "--class-weight", "1:5", plain, tmp_path / "w"),
        cli("asset", *path, tokens, tmp_path / "t"),
    ]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    best = [[line for line in r.stdout.splitlines() if line.startswith("Best C")] for r in runs]
    assert best[0] == best[1] and len(best[0]) == 1
    assert unweighed(tmp_path / "w") == (tmp_path / "t").read_bytes()
    run = cli("asset", *path, "--class-weight", "balanced", plain, tmp_path / "b")
    assert run.returncode == 0, run.stderr
    assert "Class weights: balanced -1:" in run.stdout


def test_balanced_is_computed_on_each_training_part():
    """A fold's training part gets n/(k*n_class) of its own labels: the model of the
    part with those weights as cost tokens, bit for bit."""
    import scipy.sparse as sp

    from cpsvm.data import ClassWeights, Dataset
    from cpsvm.params.asset import AssetParams
    from cpsvm.solvers.asset import settings, train

    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.normal(size=(40, 3)))
    y = np.where(np.arange(40) < 10, 1.0, -1.0)
    params = AssetParams(C=1.0, approx="none", epochs=2, class_weight=ClassWeights(balanced=True))
    run = settings(Dataset(X, y), params)
    assert run.classes == (-1.0, 1.0)
    part = Dataset(X, y).subset(np.arange(5, 40))  # 5 positives, 30 negatives
    model, _ = train(part, run)
    assert model.class_weights == f"balanced -1:{35 / 60:.6g},1:{35 / 10:.6g}"
    tokens = Dataset(part.X, part.y, cost=np.where(part.y > 0, 35 / 10, 35 / 60))
    reference, _ = train(tokens, AssetParams(C=1.0, approx="none", epochs=2))
    np.testing.assert_array_equal(model.w, reference.w)
    assert model.b == reference.b


def test_statistics_and_header_say_the_weights_only_when_given(cli, samples, tmp_path):
    plain = samples / "a9a3k.train"
    for name, settings in RUNS:
        given = cli("asset", "-c", "1", *settings, "--class-weight", "1:2.5", plain, tmp_path / "a")
        bare = cli("asset", "-c", "1", *settings, plain, tmp_path / "b")
        assert given.returncode == 0 and bare.returncode == 0, given.stderr + bare.stderr
        assert "\nClass weights: 1:2.5\n" in given.stdout, (name, given.stdout)
        assert "Class weights" not in bare.stdout
        assert b"class weights" not in (tmp_path / "b").read_bytes()
        model = (tmp_path / "a").read_bytes()
        documents = [line for line in model.splitlines() if b"number of training documents" in line]
        assert documents and documents[0].endswith(b", class weights 1:2.5 "), (name, documents)
        if name == "rff":
            assert model.startswith(b"cpsvm rff model")
        assert read_model(tmp_path / "a").class_weights == "1:2.5"


def test_weighed_models_classify_as_before(cli, samples, tmp_path):
    """cp_classify reads a weighed model as the model without the comment; read and
    written again, the same bytes (SVMlight's and the rff format)."""
    from cpsvm.io.model_file import format_model

    plain, test = samples / "a9a3k.train", samples / "a9a2k.test"
    for name, settings in RUNS[:2]:
        run = cli("asset", "-v", "0", "-c", "1", *settings, "-j", "3", plain, tmp_path / "m")
        assert run.returncode == 0, run.stderr
        (tmp_path / "u").write_bytes(unweighed(tmp_path / "m"))
        for model in ("m", "u"):
            run = cli("classify", "-v", "0", test, tmp_path / model, tmp_path / f"{model}.p")
            assert run.returncode == 0, run.stderr
        assert (tmp_path / "m.p").read_bytes() == (tmp_path / "u.p").read_bytes(), name
        assert format_model(read_model(tmp_path / "m")) == (tmp_path / "m").read_text()


def test_regression_honours_cost_tokens(cli, samples, tmp_path):
    """-z r weighs by cost: tokens (no classes to weigh): a token of 1 everywhere is the
    plain run, tokens of 3 on half the examples another model."""
    plain = samples / "a9a3k.train"
    ones = tmp_path / "ones.train"
    ones.write_text(
        "".join(
            f"{t} cost:1 {rest}\n"
            for t, rest in (x.split(" ", 1) for x in plain.read_text().splitlines())
        )
    )
    some = with_tokens(plain, {1.0: 3.0}, tmp_path / "some.train")
    args = ["-v", "0", "-z", "r", "-c", "1", "--approx", "none", "--epochs", "2"]
    for name, data in (("p", plain), ("o", ones), ("s", some)):
        run = cli("asset", *args, data, tmp_path / name)
        assert run.returncode == 0, run.stderr
    assert (tmp_path / "p").read_bytes() == (tmp_path / "o").read_bytes()
    assert (tmp_path / "p").read_bytes() != (tmp_path / "s").read_bytes()
