"""--probability end to end: the learners fit Platt's sigmoid on 5-fold cross-validated
decision values (the learner's own training on folds from --seed), store A and B in the
model, and cp_classify --probability writes P(y=+1) per line with the log-loss and the
Brier score."""

import re

import numpy as np
import pytest

from cpsvm.engine.platt import brier_score, fit_sigmoid, log_loss
from cpsvm.io.model_file import read_model
from cpsvm.io.svmlight import read_examples
from cpsvm.params.ocas import OcasParams
from cpsvm.selection.folds import assign_folds
from cpsvm.solvers.ocas import settings, train


def _platt(path):
    return read_model(path).platt


def test_the_sigmoid_is_fitted_on_the_learners_own_folds(cli, samples, tmp_path):
    """A and B are those of the held-out decision values of 5 trainings at the same
    settings on the folds --seed deals (stratified by class), recomputed here."""
    data = read_examples(samples / "a9a3k.train")
    model_file = tmp_path / "m"
    run = cli("ocas", "-c", "1", "-b", "1", "--seed", "3", "--probability",
              samples / "a9a3k.train", model_file)  # fmt: skip
    assert run.returncode == 0, run.stderr
    folds = assign_folds(5, data.n_examples, None, np.sign(data.y), 3)
    resolved = settings(data, OcasParams(C=1.0, bias=1.0))
    held_out = np.empty(data.n_examples)
    for f in range(5):
        rows = np.flatnonzero(folds == f)
        model, _ = train(data.subset(np.flatnonzero(folds != f)), resolved)
        held_out[rows] = model.decision_function(data.X[rows])
    expected = fit_sigmoid(held_out, data.y)
    assert _platt(model_file) == (expected.A, expected.B)
    line = f"A = {expected.A:.6g}, B = {expected.B:.6g}"
    assert re.search(r"Platt's sigmoid .* 5-fold cross-validated decision values \(seed 3\)",
                     run.stdout) and line in run.stdout  # fmt: skip


def test_same_seed_same_file_and_the_seed_deals_the_folds(cli, samples, tmp_path):
    args = ["-c", "1", "-v", "0", "--probability"]
    for name, seed in (("a", "0"), ("b", "0"), ("c", "7")):
        cli("learn", *args, "--seed", seed, samples / "a9a3k.train", tmp_path / name)
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
    assert _platt(tmp_path / "a") != _platt(tmp_path / "c")


def test_without_the_flag_nothing_changes(cli, samples, tmp_path):
    cli("ocas", "-c", "1", samples / "a9a3k.train", tmp_path / "m")
    text = (tmp_path / "m").read_text()
    assert "Platt" not in text and _platt(tmp_path / "m") is None


def test_cp_classify_probability(cli, samples, tmp_path):
    model, test = tmp_path / "m", samples / "a9a2k.test"
    assert cli("ocas", "-c", "1", "--probability", samples / "a9a3k.train", model).returncode == 0
    scores_file, p_file = tmp_path / "scores", tmp_path / "p"
    plain = cli("classify", test, model, scores_file)
    run = cli("classify", "--probability", test, model, p_file)
    assert run.returncode == 0, run.stderr
    scores, p = np.loadtxt(scores_file), np.loadtxt(p_file)
    assert np.all((p > 0) & (p < 1))
    assert np.array_equal(p > 0.5, scores > 0) and np.array_equal(p < 0.5, scores <= 0)
    y = np.array([float(line.split()[0]) for line in test.open()])
    # svm_classify's figures, then the two of the probabilities
    assert run.stdout.splitlines()[:2] == plain.stdout.splitlines()[:2]
    ll = float(re.search(r"^Log-loss on test set: (\S+)$", run.stdout, re.M).group(1))
    brier = float(re.search(r"^Brier score on test set: (\S+)$", run.stdout, re.M).group(1))
    assert ll == pytest.approx(log_loss(y, p), abs=2e-6)
    assert brier == pytest.approx(brier_score(y, p), abs=2e-6)
    # predictions on stdout: the figures on stderr
    piped = cli("classify", "--probability", test, model, "-")
    assert piped.stdout == p_file.read_text() and "Log-loss" in piped.stderr


def test_cp_classify_probability_skips_unlabelled(cli, samples, tmp_path):
    model = tmp_path / "m"
    cli("ocas", "-c", "1", "--probability", samples / "a9a3k.train", model)
    lines = (samples / "a9a2k.test").read_text().splitlines()[:50]
    test = tmp_path / "t"
    test.write_text("\n".join(["0" + line[2:] if k < 10 else line for k, line in
                               enumerate(lines)]) + "\n")  # fmt: skip
    run = cli("classify", "--probability", test, model, tmp_path / "p")
    assert run.returncode == 0, run.stderr
    p = np.loadtxt(tmp_path / "p")
    y = np.array([float(line.split()[0]) for line in lines])[10:]
    assert len(p) == 50
    ll = float(re.search(r"Log-loss on test set: (\S+)", run.stdout).group(1))
    assert ll == pytest.approx(log_loss(y, p[10:]), abs=2e-6)


def test_probability_with_cv_uses_the_chosen_c(cli, samples, tmp_path):
    run = cli("ocas", "--c-path", "0.1,1", "--probability", samples / "a9a3k.train",
              tmp_path / "m")  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "Best C" in run.stdout and _platt(tmp_path / "m") is not None


@pytest.mark.parametrize(
    "command, args, refused",
    [
        ("learn", ["--problem", "multiclass"], "multiclass"),
        ("ocas", ["-C", "{costs}"], "-C"),
        ("ocas", ["--scheduler", "local:1"], "--scheduler"),
        ("learn", ["--scheduler", "local:1"], "--scheduler"),
    ],
)
def test_refused_settings(cli, samples, tmp_path, command, args, refused):
    train = samples / ("dna1k.train" if "multiclass" in args else "a9a3k.train")
    costs = tmp_path / "costs"
    costs.write_text("1\n" * 3000)
    args = [a.format(costs=costs) for a in args]
    run = cli(command, "-c", "1", *args, "--probability", train, tmp_path / "m")
    assert run.returncode == 2
    assert len(run.stderr.strip().splitlines()) == 1 and refused in run.stderr
    assert "--probability" in run.stderr and not (tmp_path / "m").exists()
