"""cp_classify end to end: the original tools' predictions and printed figures."""

import gzip

import numpy as np
import pytest

from cpsvm.io.model_file import write_model
from cpsvm.models import LinearModel


def printed(path, prefix):
    return [line for line in path.read_text().splitlines() if line.startswith(prefix)]


@pytest.mark.parametrize("kind", ["linear", "rbf", "poly", "sigmoid"])
def test_svmlight_models_reproduce_svm_classify(cli, fixtures, tmp_path, kind):
    name = f"heart_scale.light_{kind}"
    out = tmp_path / "pred"
    run = cli("classify", fixtures / "heart_scale", fixtures / f"{name}.model", out)
    assert run.returncode == 0, run.stderr
    ours, ref = np.loadtxt(out), np.loadtxt(fixtures / f"{name}.pred")
    # svm_classify prints %.8g: agreement to its printed precision.
    np.testing.assert_allclose(ours, ref, rtol=1e-7, atol=0)
    reference_lines = printed(fixtures / f"{name}.classify.txt", ("Accuracy", "Precision"))
    assert run.stdout.splitlines() == reference_lines


def test_svmperf_model(cli, samples, fixtures, tmp_path):
    out = tmp_path / "pred"
    run = cli(
        "classify", "-v", "1", samples / "a9a2k.test", fixtures / "a9a3k.perf_linear.model", out
    )
    assert run.returncode == 0, run.stderr
    ours, ref = np.loadtxt(out), np.loadtxt(fixtures / "a9a2k.perf_linear.pred")
    # svm_perf_classify prints %.8f: half a unit of the 8th decimal.
    np.testing.assert_allclose(ours, ref, rtol=1e-7, atol=5.1e-9)
    y = np.array([float(line.split()[0]) for line in (samples / "a9a2k.test").open()])
    correct = int(np.sum((ref > 0) == (y > 0)))
    assert run.stdout.splitlines()[0] == (
        f"Accuracy on test set: {100 * correct / len(y):.2f}% ({correct} correct, "
        f"{len(y) - correct} incorrect, {len(y)} total)"
    )


def test_multiclass_model(cli, samples, fixtures, tmp_path):
    out = tmp_path / "pred"
    run = cli("classify", samples / "dna500.test", fixtures / "dna.multiclass.model", out)
    assert run.returncode == 0, run.stderr
    assert out.read_text() == (fixtures / "dna500.multiclass.pred").read_text()
    ref = np.loadtxt(fixtures / "dna500.multiclass.pred")
    y = np.loadtxt(
        samples / "dna500.test",
        usecols=0,
        converters={0: float},
        comments=None,
        delimiter=" ",
        max_rows=None,
        dtype=str,
    )
    y = np.array([float(v) for v in y])
    wrong = int(np.sum(ref[:, 0] != y))
    assert (
        f"Zero/one-error on test set: {100 * wrong / 500:.2f}% ({500 - wrong} correct, "
        f"{wrong} incorrect, 500 total)" in run.stdout
    )
    assert f"Average loss on test set: {100 * wrong / 500:.4f}" in run.stdout


def test_multiclass_label_0_lines_are_counted_aloud(cli, samples, fixtures, tmp_path):
    # pendigits.t has classes 0..9: its 363 lines of class 0 were dropped from the error
    # rate with a note on stderr only. The note now stands beside the figures.
    lines = (samples / "dna500.test").read_text().splitlines()[:40]
    relabelled = [
        "0" + line[line.index(" ") :] if i % 4 == 0 else line for i, line in enumerate(lines)
    ]
    data, out = tmp_path / "d", tmp_path / "p"
    data.write_text("\n".join(relabelled) + "\n")
    run = cli("classify", data, fixtures / "dna.multiclass.model", out)
    assert run.returncode == 0, run.stderr
    assert len(out.read_text().splitlines()) == 40  # every line still predicted
    assert "Note: 10 of 40 test examples have target 0" in run.stdout
    assert "not scored" in run.stdout and "add 1" in run.stdout
    assert "incorrect, 30 total)" in run.stdout.split("Note:")[1]
    # With the predictions on stdout the note goes with the figures, to stderr.
    run = cli("classify", data, fixtures / "dna.multiclass.model", "-")
    assert len(run.stdout.splitlines()) == 40 and "Note: 10 of 40" in run.stderr


def test_stdout_stdin_gzip_and_unlabelled(cli, tmp_path):
    model = tmp_path / "m"
    write_model(model, LinearModel(w=np.array([1.0, -2.0]), b=0.5))
    data = "1 1:2\n0 2:1\n-1 1:1 2:1 7:3\n"
    run = cli("classify", "-", model, "-", stdin=data)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["1.5", "-2.5", "-1.5"]  # feature 7 ignored
    assert "Accuracy on test set: 100.00% (2 correct, 0 incorrect, 2 total)" in run.stderr
    assert "1 test examples are unlabeled" in run.stderr
    gz = tmp_path / "d.gz"
    gz.write_bytes(gzip.compress(data.encode()))
    run = cli("classify", "-v", "0", "-f", "0", gz, model, "-")
    assert run.stdout.splitlines() == ["1.5:+1 -1.5:-1", "2.5:-1 -2.5:+1", "1.5:-1 -1.5:+1"]
    assert run.stderr == ""


@pytest.mark.parametrize(
    "data, model_text, expected",
    [
        (None, None, "no such file"),
        ("", None, "expected at least one example"),
        ("1 1:1\nx 1:1\n", None, ":2: expected a numeric target"),
        ("1 1:1 1:2\n", None, ":1: expected strictly increasing"),
        (
            "1 1:1\n",
            "SVM-light Version V6.20\n0 # kernel type\n",
            ":3: expected 'kernel parameter -d'",
        ),
        ("1 1:1\n", "something else\n", ":1: expected a model file"),
    ],
)
def test_bad_input_one_line_no_output(cli, tmp_path, data, model_text, expected):
    data_path, model_path = tmp_path / "d", tmp_path / "m"
    if data is not None:
        data_path.write_text(data)
    if model_text is None:
        write_model(model_path, LinearModel(w=np.ones(2)))
    else:
        model_path.write_text(model_text)
    out = tmp_path / "out"
    run = cli("classify", data_path, model_path, out)
    assert run.returncode != 0
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert run.stderr.startswith("cp_classify: ") and expected in run.stderr
    assert {p.name for p in tmp_path.iterdir()} <= {"d", "m"}  # no output, no temp file


def test_bad_option(cli, samples, tmp_path):
    run = cli("classify", "-f", "3", samples / "a9a2k.test", samples / "a9a3k.perf.model")
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "-f" in run.stderr
