"""ocas_learn -j (SVMlight's cost factor): the C_i of the positive examples multiplied.
The reference is independent of the new code path: the same file with a cost: token on
each positive example, which the readers already carried to the solvers."""

import re

import numpy as np
import pytest

from cpsvm.io.svmlight import read_examples


def unweighed(path):
    """A model file's bytes without what -j records in its header (', class weights
    1:5' on the 'number of training documents' line): the model itself."""
    return re.sub(rb", class weights [^\n]*? \n", b" \n", path.read_bytes())


@pytest.fixture
def weighted(samples, tmp_path):
    """(the plain file, the same file with cost:5 on each positive line)."""
    plain = samples / "a9a3k.train"
    lines = plain.read_text().splitlines()
    tokens = [line.split(" ", 1) for line in lines]
    text = [f"{t[0]} cost:5 {t[1]}" if t[0] == "+1" else line for t, line in zip(tokens, lines)]
    path = tmp_path / "w5.train"
    path.write_text("\n".join(text) + "\n")
    return plain, path


@pytest.mark.parametrize("method", ["0", "1", "2"])
def test_j_is_a_cost_token_on_every_positive_example(cli, weighted, tmp_path, method):
    plain, tokens = weighted
    for args, name in ((["-j", "5", plain], "j"), ([tokens], "c")):
        run = cli("ocas", "-v", "0", "-m", method, "-c", "1", *args, tmp_path / name)
        assert run.returncode == 0, run.stderr
    assert unweighed(tmp_path / "j") == (tmp_path / "c").read_bytes()
    assert b"training documents, class weights 1:5 \n" in (tmp_path / "j").read_bytes()


def test_j_multiplies_a_cost_file_and_keeps_the_path(cli, weighted, tmp_path):
    plain, tokens = weighted
    y = read_examples(plain).y
    costs = np.linspace(0.5, 2.0, len(y))
    weighted_costs = np.where(y > 0, 5.0, 1.0) * costs
    for name, values in (("C", costs), ("C5", weighted_costs)):
        (tmp_path / name).write_text("".join(f"{float(c)!r}\n" for c in values))
    run = cli("ocas", "-v", "0", "-j", "5", "-C", tmp_path / "C", plain, tmp_path / "a")
    assert run.returncode == 0, run.stderr
    assert cli("ocas", "-v", "0", "-C", tmp_path / "C5", plain, tmp_path / "b").returncode == 0
    assert unweighed(tmp_path / "a") == (tmp_path / "b").read_bytes()
    path = ["--cv", "3", "--c-path", "0.01:10:4"]
    runs = [
        cli("ocas", *path, "-j", "5", plain, tmp_path / "pj"),
        cli("ocas", *path, tokens, tmp_path / "pc"),
    ]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    best = [next(line for line in r.stdout.splitlines() if line.startswith("Best C")) for r in runs]
    assert best[0] == best[1]
    assert unweighed(tmp_path / "pj") == (tmp_path / "pc").read_bytes()


def test_j_one_changes_nothing_and_other_j_is_said(cli, samples, tmp_path):
    plain = samples / "a9a3k.train"
    runs = [
        cli("ocas", "-c", "1", *j, plain, tmp_path / n) for j, n in ((["-j", "1"], "a"), ([], "b"))
    ]
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
    untimed = [[line for line in r.stdout.splitlines() if " s" not in line] for r in runs]
    assert untimed[0] == [line.replace("/b", "/a") for line in untimed[1]]
    said = cli("ocas", "-c", "1", "-j", "5", plain, tmp_path / "c").stdout
    assert "   CostFactor     : 5\n" in said and "CostFactor" not in runs[1].stdout


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e200", "x"])
def test_j_out_of_range_is_one_line(cli, samples, tmp_path, value):
    run = cli("ocas", "-c", "1", "-j", value, samples / "a9a3k.train", tmp_path / "m")
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert "-j" in run.stderr and not (tmp_path / "m").exists()


def test_j_is_binary_only(cli, samples, tmp_path):
    """(A cluster takes it too: tests/e2e/test_class_weights.py.)"""
    run = cli("ocas", "-c", "1", "-j", "2", samples / "dna1k.train", tmp_path / "m")
    assert run.returncode == 1 and run.stderr.strip().endswith("is for binary problems only")
    assert not (tmp_path / "m").exists()


def test_the_estimator_takes_it_as_its_params_field(samples):
    """OCASClassifier's cost_factor, picked up from OcasParams with nothing written for it:
    the fit equals the one whose positive examples weigh 5."""
    from sklearn.datasets import load_svmlight_file

    from cpsvm.sklearn import OCASClassifier

    X, y = load_svmlight_file(str(samples / "a9a3k.train"))
    assert OCASClassifier().get_params()["cost_factor"] == 1.0
    by_factor = OCASClassifier(C=1.0, cost_factor=5.0).fit(X, y)
    by_weight = OCASClassifier(C=1.0).fit(X, y, sample_weight=np.where(y > 0, 5.0, 1.0))
    np.testing.assert_array_equal(by_factor.coef_, by_weight.coef_)
