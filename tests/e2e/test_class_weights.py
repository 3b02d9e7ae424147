"""--class-weight LABEL:W[,...] | balanced and -j W (its binary shorthand 1:W), in every
learner that takes them: the reference is independent of the new code path, the same file
with a cost: token on each example of the weighed classes (which the readers carried to
the solvers before class weights existed); a model records its weights in the comment of
its 'number of training documents' line, which the comparison takes out."""

import re

import numpy as np
import pytest

from cpsvm.data import ClassWeights
from cpsvm.io.model_file import read_model
from cpsvm.io.svmlight import read_examples

WEIGHTS_COMMENT = re.compile(rb", class weights [^\n]*? \n")


def unweighed(path):
    """A model file's bytes without its class weights' comment."""
    return WEIGHTS_COMMENT.sub(b" \n", path.read_bytes())


def with_tokens(source, weights, path):
    """``source`` with cost:W on each line whose label ``weights`` {label: W} names;
    returns ``path``."""
    lines = source.read_text().splitlines()
    out = []
    for line in lines:
        target, rest = line.split(" ", 1)
        weight = weights.get(float(target))
        out.append(f"{target} cost:{weight!r} {rest}" if weight is not None else line)
    path.write_text("\n".join(out) + "\n")
    return path


def balanced_weights(source):
    y = read_examples(source).y
    labels, counts = np.unique(y, return_counts=True)
    return {float(a): len(y) / (len(labels) * int(c)) for a, c in zip(labels, counts)}


BINARY_RUNS = [
    ("ocas", ["-m", "0", "-c", "1"]),
    ("ocas", ["-m", "1", "-c", "1"]),
    ("ocas", ["-m", "2", "-c", "1"]),
    ("learn", ["-w", "3", "-c", "10"]),
    ("learn", ["-w", "5", "-c", "10"]),
    ("learn", ["-w", "9", "-c", "10"]),
    ("learn", ["-w", "0", "-c", "10", "-#", "3"]),
    ("sampled", ["-t", "2", "-g", "0.05", "-c", "10"]),
]


@pytest.mark.parametrize(("command", "settings"), BINARY_RUNS)
def test_j_is_class_weight_one_and_a_cost_token_on_each_positive(
    cli, samples, tmp_path, command, settings
):
    plain = tmp_path / "a9a600.train"  # (600 lines: -w 0's n-slack QP grows with n)
    plain.write_text("".join((samples / "a9a3k.train").open().readlines()[:600]))
    tokens = with_tokens(plain, {1.0: 5.0}, tmp_path / "tokens.train")
    for name, args in (("j", ["-j", "5", plain]), ("w", ["--class-weight", "1:5", plain])):
        run = cli(command, "-v", "0", *settings, *args, tmp_path / name)
        assert run.returncode == 0, run.stderr
    assert cli(command, "-v", "0", *settings, tokens, tmp_path / "t").returncode == 0
    assert (tmp_path / "j").read_bytes() == (tmp_path / "w").read_bytes()
    assert b"# number of training documents, class weights 1:5 \n" in (tmp_path / "w").read_bytes()
    assert unweighed(tmp_path / "w") == (tmp_path / "t").read_bytes()


@pytest.mark.parametrize(
    ("command", "settings"),
    [
        ("ocas", ["-m", "0", "-c", "1"]),
        ("ocas", ["-m", "1", "-c", "1"]),
        ("ocas", ["-m", "2", "-c", "1"]),
        ("learn", ["-w", "5", "-c", "10"]),
        ("learn", ["-w", "9", "-c", "10"]),
    ],
)
def test_multiclass_and_balanced_weigh_as_cost_tokens(cli, samples, tmp_path, command, settings):
    """Crammer-Singer with two classes weighed, and balanced (n/(k*n_class) of the file)
    on binary and multiclass data."""
    dna, a9a = samples / "dna1k.train", samples / "a9a3k.train"
    cases = [
        (dna, "2:3,3:0.5", {2.0: 3.0, 3.0: 0.5}),
        (dna, "balanced", balanced_weights(dna)),
        (a9a, "balanced", balanced_weights(a9a)),
    ]
    for k, (data, given, weights) in enumerate(cases):
        tokens = with_tokens(data, weights, tmp_path / f"t{k}.train")
        run = cli(command, "-v", "0", *settings, "--class-weight", given, data, tmp_path / f"w{k}")
        assert run.returncode == 0, run.stderr
        assert cli(command, "-v", "0", *settings, tokens, tmp_path / f"t{k}").returncode == 0
        assert unweighed(tmp_path / f"w{k}") == (tmp_path / f"t{k}").read_bytes()
        recorded = read_model(tmp_path / f"w{k}").class_weights
        if given == "balanced":
            shown = ",".join(f"{a:g}:{w:.6g}" for a, w in sorted(weights.items()))
            assert recorded == f"balanced {shown}"
        else:
            assert recorded == given


def test_weights_multiply_cost_tokens_and_the_cost_file(cli, samples, tmp_path):
    plain = samples / "a9a3k.train"
    y = read_examples(plain).y
    costs = np.linspace(0.5, 2.0, len(y))
    (tmp_path / "C").write_text("".join(f"{float(c)!r}\n" for c in costs))
    weighed = np.where(y > 0, 3.0, 1.0) * costs
    (tmp_path / "C3").write_text("".join(f"{float(c)!r}\n" for c in weighed))
    given = ["--class-weight", "1:3", "-C", tmp_path / "C"]
    assert cli("ocas", "-v", "0", *given, plain, tmp_path / "a").returncode == 0
    assert cli("ocas", "-v", "0", "-C", tmp_path / "C3", plain, tmp_path / "b").returncode == 0
    assert unweighed(tmp_path / "a") == (tmp_path / "b").read_bytes()
    # cost: tokens times the class's weight: tokens of 2 on the negatives, 1:3
    twice = with_tokens(plain, {-1.0: 2.0}, tmp_path / "twice.train")
    both = with_tokens(plain, {-1.0: 2.0, 1.0: 3.0}, tmp_path / "both.train")
    for command, c in (("ocas", "1"), ("learn", "10")):
        args = ["-v", "0", "-c", c]
        run = cli(command, *args, "--class-weight", "1:3", twice, tmp_path / f"{command}-w")
        assert run.returncode == 0, run.stderr
        assert cli(command, *args, both, tmp_path / f"{command}-t").returncode == 0
        assert unweighed(tmp_path / f"{command}-w") == (tmp_path / f"{command}-t").read_bytes()


@pytest.mark.parametrize("command", ["ocas", "learn"])
def test_cross_validation_and_the_path_keep_the_weights(cli, samples, tmp_path, command):
    """--cv with --c-path: the folds' trainings weigh as the tokens' file does (1:5), and
    balanced recomputes the weights on each fold's training part (an explicit weight per
    fold as reference is no single file: the best C and model are compared with 1:W's of
    the whole file's balanced weights only where the folds hold the same proportions)."""
    plain = samples / "a9a3k.train"
    tokens = with_tokens(plain, {1.0: 5.0}, tmp_path / "t.train")
    path = ["--cv", "3", "--c-path", "0.1:10:3"]
    runs = [
        cli(command, *path, "--class-weight", "1:5", plain, tmp_path / "w"),
        cli(command, *path, tokens, tmp_path / "t"),
    ]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    best = [[line for line in r.stdout.splitlines() if line.startswith("Best C")] for r in runs]
    assert best[0] == best[1] and len(best[0]) == 1
    assert unweighed(tmp_path / "w") == (tmp_path / "t").read_bytes()
    run = cli(command, *path, "--class-weight", "balanced", plain, tmp_path / "b")
    assert run.returncode == 0, run.stderr
    assert "Class weights: balanced -1:" in run.stdout


def test_balanced_is_computed_on_each_training_part():
    """A fold's training part gets n/(k*n_class) of its own labels (as scikit-learn's fit
    on it), not the whole file's."""
    from cpsvm.data import Dataset
    from cpsvm.params.ocas import OcasParams
    from cpsvm.solvers.ocas import OcasPath, settings

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.where(np.arange(40) < 10, 1.0, -1.0)
    import scipy.sparse as sp

    data = Dataset(sp.csr_matrix(X), y)
    params = OcasParams(class_weight=ClassWeights(balanced=True), method=2)
    run = settings(data, params)
    part = data.subset(np.arange(5, 40))  # 5 positives, 30 negatives
    model, _ = OcasPath(part, run).fit(1.0)
    assert model.class_weights == f"balanced -1:{35 / 60:.6g},1:{35 / 10:.6g}"
    tokens = Dataset(part.X, part.y, cost=np.where(part.y > 0, 35 / 10, 35 / 60))
    reference, _ = OcasPath(tokens, OcasParams(method=2)).fit(1.0)
    np.testing.assert_array_equal(model.w, reference.w)


def test_balanced_with_a_class_absent_from_a_fold_is_one_line(cli, samples, tmp_path):
    lines = (samples / "dna1k.train").read_text().splitlines()
    rare = [x for x in lines if not x.startswith("3 ")] + [
        next(x for x in lines if x.startswith("3 "))
    ]
    (tmp_path / "rare.train").write_text("\n".join(rare) + "\n")
    for command in ("ocas", "learn"):
        run = cli(
            command, "--cv", "2", "-c", "1", "--class-weight", "balanced",
            tmp_path / "rare.train", tmp_path / "m",
        )  # fmt: skip
        assert run.returncode == 1 and run.stderr.count("\n") == 1, run.stderr
        assert "fold" in run.stderr and "class 3 has no example" in run.stderr
        assert not (tmp_path / "m").exists()
        weighed = cli(command, "--cv", "2", "-c", "1", "--class-weight", "2:2",
                      tmp_path / "rare.train", tmp_path / "w")  # fmt: skip
        assert "class 3" not in weighed.stderr


def test_statistics_say_the_weights_only_when_given(cli, samples, tmp_path):
    plain = samples / "a9a3k.train"
    for command, c in (("ocas", "1"), ("learn", "10"), ("sampled", "10")):
        given = cli(command, "-c", c, "--class-weight", "1:2.5", plain, tmp_path / "a")
        plain_run = cli(command, "-c", c, plain, tmp_path / "b")
        assert "\nClass weights: 1:2.5\n" in given.stdout, given.stdout
        assert "Class weights" not in plain_run.stdout
        assert b"class weights" not in (tmp_path / "b").read_bytes()


def test_weighed_models_classify_as_before(cli, samples, tmp_path):
    """cp_classify reads the model (and an SVMlight reader ignores the comment): the same
    predictions as the model whose comment is taken out."""
    plain = samples / "a9a3k.train"
    assert cli("ocas", "-v", "0", "-j", "3", plain, tmp_path / "m").returncode == 0
    (tmp_path / "u").write_bytes(unweighed(tmp_path / "m"))
    test = samples / "a9a2k.test"
    for name in ("m", "u"):
        run = cli("classify", "-v", "0", test, tmp_path / name, tmp_path / f"{name}.p")
        assert run.returncode == 0, run.stderr
    assert (tmp_path / "m.p").read_bytes() == (tmp_path / "u.p").read_bytes()
    # read and written again: the same bytes
    from cpsvm.io.model_file import format_model

    assert format_model(read_model(tmp_path / "m")) == (tmp_path / "m").read_text()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--class-weight", "1:2", "--problem", "hmm"], "classification problems"),
        (["--class-weight", "1:2", "-l", "10"], "-l 10 is a loss over the whole label vector"),
        (["-j", "2", "-l", "1"], "-l 1 is a loss over the whole label vector"),
        (["-j", "2", "--class-weight", "1:2"], "not both"),
    ],
)
def test_cp_learn_refuses_what_weights_do_not_apply_to(cli, samples, tmp_path, args, expected):
    data = samples / ("ewt60.hmm.train" if "hmm" in args else "a9a3k.train")
    run = cli("learn", "-c", "1", *args, data, tmp_path / "m")
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert expected in run.stderr and not (tmp_path / "m").exists()


def test_a_cluster_weighs_as_one_machine_for_any_sharding(cli, samples, tmp_path):
    """-j and balanced with --scheduler: balanced's model the same for one and two
    workers (its weights counted over every shard), recording the same weights as a single
    machine's run; the objective that of the single machine's OCAS."""
    plain = samples / "a9a3k.train"
    outputs = {}
    # (-j's weights reach the shards as balanced's do, by the label: balanced, counted over
    # the shards, is the one run on both; a cluster's start is most of each run's time)
    for name, workers, args in (
        ("j", "2", ["-j", "5"]),
        ("b", "1", ["--class-weight", "balanced"]),
        ("b", "2", ["--class-weight", "balanced"]),
    ):
        out = tmp_path / f"{name}{workers}"
        run = cli("ocas", "--scheduler", f"local:{workers}", "-r", "1e-6", *args, plain, out)
        assert run.returncode == 0, run.stderr
        outputs[name, workers] = run.stdout
    assert (tmp_path / "b1").read_bytes() == (tmp_path / "b2").read_bytes()
    assert b"class weights 1:5" in (tmp_path / "j2").read_bytes()
    single = cli(
        "ocas", "-m", "1", "-r", "1e-6", "--class-weight", "balanced", plain, tmp_path / "s"
    )
    assert single.returncode == 0
    assert read_model(tmp_path / "b2").class_weights == read_model(tmp_path / "s").class_weights

    def q_p(text):
        return float(re.search(r"Q_P: (\S+)", text).group(1))

    assert abs(q_p(outputs["b", "2"]) - q_p(single.stdout)) <= 1e-5 * q_p(single.stdout)
