"""Users' own problems (cp_learn --problem module:Class): finding the module, refusing a
spec that names no problem, and the worked example of examples/ end to end from the shell
(cp_learn --problem ordinal:OrdinalRegression, cp_classify). The registry of the built-in
problems: test_registry.py."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from conftest import ROOT

import cpsvm.cli.learn  # noqa: F401  (cp_learn's command built: its flags reserved)
from cpsvm.io.model_file import read_model
from cpsvm.io.svmlight import read_svmlight
from cpsvm.models import UserProblemModel
from cpsvm.options import Range
from cpsvm.problems import ProblemEntry, ProblemOption, import_problem_class, register, registry
from cpsvm.problems.entry import CommandLine
from cpsvm.problems.user import predict_user_problem

EXAMPLES = ROOT / "examples"


def run(module, *args, pythonpath=(), cwd=None):
    """A command as a user runs it: a child process with the checkout (and
    ``pythonpath``) on PYTHONPATH, in ``cwd``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*map(str, pythonpath), str(ROOT)]))
    return subprocess.run(
        [sys.executable, "-m", f"cpsvm.cli.{module}", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def one_line(result):
    return result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_user_module_found_in_the_current_directory_and_sys_path_restored(monkeypatch):
    # An installed console script has neither '' nor the current directory on sys.path.
    monkeypatch.chdir(EXAMPLES)
    stripped = [p for p in sys.path if p not in ("", str(EXAMPLES), os.getcwd())]
    monkeypatch.setattr(sys, "path", stripped)
    monkeypatch.delitem(sys.modules, "ordinal", raising=False)
    cls = import_problem_class("ordinal:OrdinalRegression")
    assert cls.__name__ == "OrdinalRegression"
    assert sys.path == stripped


# -- cp_learn refuses what names no problem, before reading the data ---------------------


@pytest.mark.parametrize(
    "spec, expected",
    [
        (
            "foo",
            "unknown problem 'foo': expected auto, binary, multiclass, hmm, cfg, rank or "
            "module:Class",
        ),
        ("nosuchmodule_xyz:Problem", "cannot import problem"),
        ("ordinal:NoSuchClass", "has no 'NoSuchClass'"),
        ("os:path", "not a class derived from cpsvm.problems.PerExampleProblem"),
    ],
)
def test_bad_problem_is_a_usage_error_before_reading(tmp_path, spec, expected):
    model = tmp_path / "m"
    missing = tmp_path / "no-such-data"  # never opened: the spec is checked first
    result = run("learn", "-c", "1", "--problem", spec, missing, model, pythonpath=[EXAMPLES])
    assert result.returncode == 2, result.stderr
    assert one_line(result) and expected in result.stderr
    assert "no-such-data" not in result.stderr and not model.exists()


# -- the worked example, end to end -------------------------------------------------------


def _w_of(model_path):
    """w from the model file's last line, parsed here independently of the reader."""
    lines = model_path.read_text().splitlines()
    size = int(lines[3].split("#")[0])
    w = np.zeros(size)
    for token in lines[6].split("#")[0].split():
        j, v = token.split(":")
        w[int(j) - 1] = float(v)
    return w


@pytest.fixture(scope="module")
def ordinal_model(tmp_path_factory):
    """The README's cp_learn command, run once for this module's tests."""
    tmp = tmp_path_factory.mktemp("ordinal")
    model = tmp / "ordinal.model"
    learn = run(
        "learn",
        "-c",
        "100",
        "--problem",
        "ordinal:OrdinalRegression",
        EXAMPLES / "ordinal.train",
        model,
        pythonpath=[EXAMPLES],
        cwd=tmp,
    )
    assert learn.returncode == 0, learn.stderr
    assert "Problem: user (ordinal:OrdinalRegression)" in learn.stdout
    return model


def test_ordinal_example_end_to_end(ordinal_model, tmp_path):
    model, predictions = ordinal_model, tmp_path / "ordinal.predictions"
    header = model.read_text().splitlines()[:6]
    # Before: "SVM-light Version V6.20", a binary model of the Ψ-space weights.
    assert header[0] == "cpsvm user-problem model V1"
    assert header[1].startswith("ordinal:OrdinalRegression #")
    assert header[2].startswith('{"n_levels": 5} #') and header[3].startswith("20 #")

    classify = run(
        "classify",
        EXAMPLES / "ordinal.test",
        model,
        predictions,
        pythonpath=[EXAMPLES],
        cwd=tmp_path,
    )
    assert classify.returncode == 0, classify.stderr
    test = read_svmlight(EXAMPLES / "ordinal.test")
    predicted = np.array([int(line) for line in predictions.read_text().splitlines()])
    assert len(predicted) == test.n_examples == 60
    # The class's prediction: argmax over the 5 blocks of w, recomputed here.
    W = _w_of(model).reshape(5, 4)
    assert np.array_equal(predicted, np.argmax(test.X.toarray() @ W.T, axis=1) + 1)
    # Its loss (the absolute error) averaged against the file's labels.
    mae = np.mean(np.abs(predicted - test.y))
    wrong = int(np.count_nonzero(predicted != test.y))
    assert f"Average loss on test set: {mae:.4f}" in classify.stdout
    assert (
        f"Zero/one-error on test set: {100 * wrong / 60:.2f}% ({60 - wrong} correct, "
        f"{wrong} incorrect, 60 total)" in classify.stdout
    )
    # It learned something: far better than always predicting the median level.
    assert mae < 0.5 * np.mean(np.abs(np.median(test.y) - test.y))


def test_test_file_without_the_top_level_uses_the_models_levels(ordinal_model, tmp_path):
    # model_options() keeps k = 5: a test file whose labels stop at 2 still classifies.
    model = ordinal_model
    test = tmp_path / "t"
    test.write_text("1 1:-0.9 2:0.9 4:1\n2 1:-0.3 2:0.3 4:1\n")
    out = tmp_path / "p"
    result = run("classify", test, model, out, pythonpath=[EXAMPLES])
    assert result.returncode == 0, result.stderr
    assert len(out.read_text().splitlines()) == 2
    restored = read_model(model)
    assert isinstance(restored, UserProblemModel) and restored.options == {"n_levels": 5}
    predicted = predict_user_problem(restored, read_svmlight(test))
    assert predicted == [int(v) for v in out.read_text().split()]


def test_model_whose_class_cannot_be_imported(ordinal_model, tmp_path):
    model = ordinal_model
    out = tmp_path / "p"
    # Neither PYTHONPATH nor the current directory holds ordinal.py.
    result = run("classify", EXAMPLES / "ordinal.test", model, out, cwd=tmp_path)
    assert result.returncode == 1 and one_line(result), result.stderr
    assert "the model's problem cannot be loaded" in result.stderr
    assert "No module named 'ordinal'" in result.stderr and "PYTHONPATH" in result.stderr
    assert not out.exists()
    # From the example's directory it is found without PYTHONPATH.
    result = run("classify", EXAMPLES / "ordinal.test", model, out, cwd=EXAMPLES)
    assert result.returncode == 0, result.stderr
    assert len(out.read_text().splitlines()) == 60


def test_user_problem_honours_cost(tmp_path, monkeypatch):
    """A line with cost:3 trains as the line written three times (1-slack, -w 3: the
    repeated file at C·N/n is the same objective), through the user's problem."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    from cpsvm.solvers.one_slack import StructParams, train

    lines = (EXAMPLES / "ordinal.train").read_text().splitlines()[:40]
    weighted = tmp_path / "weighted.train"
    repeated = tmp_path / "repeated.train"
    k = 3
    weighted.write_text(
        "\n".join(
            f"{line.split(' ', 1)[0]} cost:{k} {line.split(' ', 1)[1]}" if i % 4 == 0 else line
            for i, line in enumerate(lines)
        )
        + "\n"
    )
    repeated.write_text(
        "\n".join(line for i, line in enumerate(lines) for _ in range(k if i % 4 == 0 else 1))
        + "\n"
    )
    data, rep = read_svmlight(weighted), read_svmlight(repeated)
    spec = "ordinal:OrdinalRegression"
    C, eps = 50.0, 1e-3
    _, info_w = train(data, StructParams(C=C, epsilon=eps, algorithm=3, problem=spec))
    _, info_r = train(
        rep,
        StructParams(
            C=C * rep.n_examples / data.n_examples, epsilon=eps, algorithm=3, problem=spec
        ),
    )
    _, info_1 = train(
        read_svmlight(EXAMPLES / "ordinal.train").subset(slice(0, 40)),
        StructParams(C=C, epsilon=eps, algorithm=3, problem=spec),
    )
    tolerance = 2 * C * eps
    assert info_w.result.primal == pytest.approx(info_r.result.primal, abs=tolerance)
    assert abs(info_w.result.primal - info_1.result.primal) > 10 * tolerance


HOSTILE = """
import sys
from ordinal import OrdinalRegression


class InitRaises(OrdinalRegression):
    def __init__(self, dataset, **options):
        raise RuntimeError("no data for me")


class InitExits(OrdinalRegression):
    def __init__(self, dataset, **options):
        sys.exit(0)


class NoLoss(OrdinalRegression):
    def loss(self, i, label):
        raise NotImplementedError


class PredictsNone(OrdinalRegression):
    def predict(self, w, X):
        return None
"""


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("InitRaises", "its __init__() raised RuntimeError: no data for me"),
        ("InitExits", "its __init__() raised SystemExit: 0"),
    ],
)
def test_user_problem_whose_init_fails_is_one_line(tmp_path, name, said):
    """Issue 47 item 9: an __init__ that raises or calls sys.exit (even with status 0)
    is one line naming the method, exit 1, no model."""
    (tmp_path / "hostile.py").write_text(HOSTILE)
    model = tmp_path / "m"
    result = run(
        "learn", "-c", "1", "--problem", f"hostile:{name}", EXAMPLES / "ordinal.train", model,
        pythonpath=[EXAMPLES, tmp_path],
    )  # fmt: skip
    assert result.returncode == 1 and one_line(result), result.stderr
    assert said in result.stderr and f"'hostile:{name}'" in result.stderr
    assert not model.exists()


def test_user_problem_predicting_none_writes_no_predictions(ordinal_model, tmp_path):
    """A predict() that returns None: one line naming it, no predictions file."""
    (tmp_path / "hostile.py").write_text(HOSTILE)
    model = tmp_path / "m"
    text = ordinal_model.read_text().replace("ordinal:OrdinalRegression", "hostile:PredictsNone")
    model.write_text(text)
    out = tmp_path / "p"
    result = run("classify", EXAMPLES / "ordinal.test", model, out, pythonpath=[EXAMPLES, tmp_path])
    errors = [line for line in result.stderr.splitlines() if line.startswith("cp_classify:")]
    assert result.returncode == 1 and len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "its predict() returned NoneType, expected one label per example" in result.stderr
    assert not out.exists()


# -- what a user's problem does during the training: one line naming the method ----------

TRAINING_HOSTILE = """
import sys

import numpy as np

from cpsvm.problems import PerExampleProblem
from ordinal import OrdinalRegression


class LossNaN(OrdinalRegression):
    def loss(self, i, label):
        return float("nan")


class LossNegative(OrdinalRegression):
    def loss(self, i, label):
        return -1.0


class PsiShort(OrdinalRegression):
    def psi(self, i, label):
        return super().psi(i, label)[:-1]


class PsiList(OrdinalRegression):
    def psi(self, i, label):
        return list(super().psi(i, label))


class PsiInfinite(OrdinalRegression):
    def psi(self, i, label):
        out = super().psi(i, label)
        out[0] = np.inf
        return out


class LossesShort(OrdinalRegression):
    def losses(self, labels, rows=None):
        return np.zeros(3)


class DeltaPsiLong(OrdinalRegression):
    def delta_psi_sum(self, weights, labels, rows=None):
        return np.zeros(self.size_psi + 1)


class OracleRaises(OrdinalRegression):
    def most_violated(self, i, w, rescaling):
        raise ValueError("lost my way")


class OracleExits(OrdinalRegression):
    def most_violated(self, i, w, rescaling):
        sys.exit(0)


class SizePsiFloat(OrdinalRegression):
    def __init__(self, dataset, **options):
        super().__init__(dataset, **options)
        self.size_psi = float(self.size_psi)


class OptionsObject(OrdinalRegression):
    def model_options(self):
        return {"n_levels": self.k, "how": object()}


class NumpyOptions(OrdinalRegression):
    def __init__(self, dataset, n_levels=None, scale=None, sizes=None, pair=None):
        super().__init__(dataset, n_levels)
        self.scale, self.sizes = scale, sizes

    def model_options(self):
        return {
            "n_levels": np.int64(self.k),
            "scale": np.float64(0.5),
            "sizes": np.arange(2),
            "pair": (np.int32(1), 2),
        }


class Missing(PerExampleProblem):
    def __init__(self, dataset):
        self.n_examples, self.size_psi = dataset.n_examples, 1

    def psi(self, i, y):
        return np.zeros(1)
"""


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    """TRAINING_HOSTILE as the module ``hostile_training`` in ``tmp_path`` (importable
    with the worked example), imported afresh; returns the folder of the outputs."""
    (tmp_path / "hostile_training.py").write_text(TRAINING_HOSTILE)
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "hostile_training", raising=False)
    out = tmp_path / "out"
    out.mkdir()
    return out


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("LossNaN", "its loss() returned nan, expected a finite number >= 0"),
        ("LossNegative", "its loss() returned -1.0, expected a finite number >= 0"),
        ("PsiShort", "its psi() returned shape (19,), expected a numpy vector of shape (20,)"),
        ("PsiList", "its psi() returned list, expected a numpy vector of shape (20,)"),
        ("PsiInfinite", "its psi() gave a non-finite value (delta_psi_sum() returned nan)"),
        ("LossesShort", "its losses() returned shape (3,) of float64, expected (120,) losses"),
        ("DeltaPsiLong", "its delta_psi_sum() returned shape (21,) of float64, expected (20,)"),
        ("OracleRaises", "its most_violated() raised ValueError: lost my way"),
        ("OracleExits", "its most_violated() raised SystemExit: 0"),
        ("SizePsiFloat", "its __init__() set size_psi to 20.0, expected an integer >= 1"),
        ("OptionsObject", "its model_options() returned what JSON cannot write"),
    ],
)
def test_user_problem_failing_in_training_is_one_line(hostile, cli, name, said):
    """Issue 47 item 9: a method of the user's problem that raises, exits (even with
    status 0), or returns a non-finite or ill-shaped value: one line naming the problem and
    the method, exit 1, no model and nothing else left behind."""
    model = hostile / "m"
    with warnings.catch_warnings(record=True) as warned:  # a warning is a line more
        warnings.simplefilter("always")
        result = cli(
            "learn", "-c", "1", "--problem", f"hostile_training:{name}",
            EXAMPLES / "ordinal.train", model,
        )  # fmt: skip
    assert [str(w.message) for w in warned] == []
    assert result.returncode == 1 and one_line(result), result.stderr
    assert f"problem 'hostile_training:{name}': {said}" in result.stderr
    assert list(hostile.iterdir()) == []


def test_user_problem_missing_methods_named_before_reading(hostile, cli):
    model = hostile / "m"
    missing = hostile / "no-such-data"  # never opened: the class is checked first
    result = cli("learn", "-c", "1", "--problem", "hostile_training:Missing", missing, model)
    assert result.returncode == 2 and one_line(result), result.stderr
    assert (
        "problem 'hostile_training:Missing' lacks true_label(), most_violated(), loss(), "
        "classify(): a PerExampleProblem defines psi, true_label, loss, most_violated and "
        "classify" in result.stderr
    )
    assert list(hostile.iterdir()) == []


def test_user_problem_numpy_options_are_written_as_plain_values(hostile, cli):
    """model_options() holding numpy scalars and arrays: the model is written (they are
    Python's numbers and lists in it), and cp_classify rebuilds the problem from them."""
    model, predictions = hostile / "m", hostile / "p"
    spec = "hostile_training:NumpyOptions"
    result = cli("learn", "-c", "1", "--problem", spec, EXAMPLES / "ordinal.train", model)
    assert result.returncode == 0, result.stderr
    restored = read_model(model)
    assert restored.options == {"n_levels": 5, "scale": 0.5, "sizes": [0, 1], "pair": [1, 2]}
    types = {k: type(v) for k, v in restored.options.items()}
    assert types == {"n_levels": int, "scale": float, "sizes": list, "pair": list}
    result = cli("classify", EXAMPLES / "ordinal.test", model, predictions)
    assert result.returncode == 0, result.stderr
    assert len(predictions.read_text().splitlines()) == 60
    assert sorted(p.name for p in hostile.iterdir()) == ["m", "p"]


# -- a registered problem may not take cp_learn's own flags --------------------------------


class _ClashingCommandLine(CommandLine):
    tool = "the tests"
    summary = "a problem whose option is -c"
    options = (ProblemOption("-c", "cost", type=Range(float, 0), what="cost", help="a cost."),)


def test_registered_problem_may_not_take_cp_learns_own_flag(cli, tmp_path):
    """Issue 47 item 9: an option -c made every cp_learn run say "Missing option '-c'".
    register() refuses it naming the flag, and the registry is left as it was; the flags
    are cp_learn's declarations' (reserved when its command is built), -c among them."""
    assert {"-c", "-v", "--trace", "--scheduler", "-h"} <= registry._RESERVED_FLAGS
    before = registry.problem_names()
    clashing = ProblemEntry("clashing", command_line=_ClashingCommandLine())
    with pytest.raises(ValueError, match="its option -c is one of cp_learn's own flags"):
        register(clashing)
    assert registry.problem_names() == before
    # A problem registered before cp_learn's command is built is refused when it is.
    registry._REGISTERED["clashing"] = clashing
    try:
        with pytest.raises(ValueError, match="'clashing': its option -c"):
            registry.reserve_flags(["-c"])
    finally:
        del registry._REGISTERED["clashing"]
    model = tmp_path / "m"
    result = cli("learn", "-c", "1", EXAMPLES / "ordinal.train", model, "--problem", "multiclass")
    assert result.returncode == 0 and model.exists(), result.stderr


def test_user_problem_whose_loss_is_not_implemented_classifies_without_figures(
    ordinal_model, tmp_path
):
    """A loss() that raises NotImplementedError when cp_classify asks it (guarded as every
    method is): the predictions, and a note instead of the figures."""
    (tmp_path / "hostile.py").write_text(HOSTILE)
    model = tmp_path / "m"
    model.write_text(
        ordinal_model.read_text().replace("ordinal:OrdinalRegression", "hostile:NoLoss")
    )
    out = tmp_path / "p"
    result = run("classify", EXAMPLES / "ordinal.test", model, out, pythonpath=[EXAMPLES, tmp_path])
    assert result.returncode == 0, result.stderr
    assert "Note: the problem defines no loss: no figures computed" in result.stdout
    assert len(out.read_text().splitlines()) == 60
