"""Adding a problem is one package and one registry line: a toy problem (levels 1..k
with the zero/one loss), its entry declaring a cp_learn option of its own and a handler of
its models with a cp_classify option of its own, is registered here as a package kept
elsewhere would be (``register(ENTRY)``), then cp_learn trains it and cp_classify
classifies its model, both commands built after the registration as the console scripts
build theirs at start-up. Nothing outside its entry names it."""

import numpy as np
import pytest

from cpsvm.cli import classify, learn
from cpsvm.io import model_file
from cpsvm.options import Range, member
from cpsvm.problems import (
    ClassifyOption,
    PerExampleProblem,
    ProblemEntry,
    ProblemOption,
    register,
    registry,
)
from cpsvm.problems.user import UserProblemModels

SPEC = f"{__name__}:ToyProblem"  # what the models record of the toy's class


class ToyProblem(PerExampleProblem):
    """Levels 1..k (``n_levels``, default the largest label), each a block of Ψ, the
    zero/one loss."""

    def __init__(self, dataset, n_levels=None):
        self.X = dataset.X.tocsr()
        self.y = dataset.y.astype(np.int64)
        self.k = int(n_levels or self.y.max())
        self.d = self.X.shape[1]
        self.n_examples = len(self.y)
        self.size_psi = self.k * self.d

    def true_label(self, i):
        return int(self.y[i])

    def psi(self, i, label):
        out = np.zeros(self.size_psi)
        out[(label - 1) * self.d : label * self.d] = self.X[i].toarray().ravel()
        return out

    def loss(self, i, label):
        return float(int(label) != int(self.y[i]))

    def most_violated(self, i, w, rescaling):
        scores = w.reshape(self.k, self.d) @ self.X[i].toarray().ravel()
        values = (np.arange(1, self.k + 1) != self.y[i]) + scores - scores[self.y[i] - 1]
        values[self.y[i] - 1] = 0.0
        return int(np.argmax(values)) + 1

    def predict(self, w, X):
        return list(np.argmax(np.asarray(X @ w.reshape(self.k, self.d).T), axis=1) + 1)

    def model_options(self):
        return {"n_levels": self.k}


class ToyModels(UserProblemModels):
    """cp_classify's handler of the toy's models: the user problems' figures, and with
    --toy-levels-seen the levels it predicted."""

    settings = ("levels_seen",)

    @staticmethod
    def claims(model, data):
        return model.spec == SPEC

    @staticmethod
    def classify(model, data, X, settings):
        lines, report = UserProblemModels.classify(model, data, X, settings)

        def figures(out):
            report(out)
            if settings.levels_seen:
                print(f"Toy levels predicted: {sorted(set(lines))}", file=out)

        return lines, figures


# A loss id no built-in problem has: -l's values are the problems' registered when the
# command is built, not when cpsvm.params.one_slack was imported.
TOY_LOSS = 7


class Toy(ProblemEntry):
    name = "toy"
    tool = "the tests"
    summary = "toy levels, zero/one loss"
    losses = (0, 2, TOY_LOSS)
    default_algorithm = 4
    options = (
        ProblemOption(
            "--toy-levels",
            "n_levels",
            type=Range(int, 2),
            what="number of levels",
            help="number of levels k (default: the largest label).",
        ),
    )
    classify = ToyModels
    classify_options = (
        ClassifyOption(
            "levels_seen",
            member("--toy-levels-seen", is_flag=True, help="Toy models: the levels predicted."),
            refused_elsewhere=True,
        ),
    )

    def build(self, dataset, loss_id, options):
        return ToyProblem(dataset, options["n_levels"])


TRAIN = "".join(f"{1 + i % 3} 1:{(i % 3) - 1} 2:{0.1 * (i % 5)} 3:1\n" for i in range(30))
TEST = "1 1:-1 2:0.2 3:1\n2 1:0 2:0.3 3:1\n3 1:1 2:0.1 3:1\n"


@pytest.fixture
def toy(monkeypatch):
    """The toy registered (for this test only) and the commands built anew."""
    monkeypatch.setattr(registry, "_REGISTERED", dict(registry._REGISTERED))
    monkeypatch.setattr(model_file, "MODEL_KINDS", list(model_file.MODEL_KINDS))
    register(Toy())
    monkeypatch.setattr(learn, "command", learn.StructLearn().command())
    monkeypatch.setattr(classify, "command", classify.make_command())


def test_a_registered_problem_is_trained_and_classified(toy, cli, tmp_path):
    train, test = tmp_path / "toy.train", tmp_path / "toy.test"
    train.write_text(TRAIN)
    test.write_text(TEST)
    model, predictions = tmp_path / "toy.model", tmp_path / "toy.pred"

    r = cli("learn", "-h")
    assert r.returncode == 0 and "--toy-levels" in r.stdout
    assert "toy (toy levels, zero/one loss)" in " ".join(r.stdout.split())
    r = cli("learn", "-c", "10", "--problem", "toy", "--toy-levels", "4", train, model)
    assert r.returncode == 0, r.stderr
    assert "Problem: toy" in r.stdout
    assert SPEC in model.read_text() and "n_levels" in model.read_text()
    # Its option is checked by its declaration, before anything is read.
    r = cli("learn", "-c", "10", "--problem", "toy", "--toy-levels", "1", train, model)
    assert r.returncode == 2 and "--toy-levels >= 2" in r.stderr

    # Its own loss id: listed by -h, taken by the parser, trained.
    r = cli("learn", "-h")
    assert f"|{TOY_LOSS}|" in r.stdout.split("-l [", 1)[1].split("]", 1)[0]
    r = cli("learn", "-c", "10", "--problem", "toy", "-l", str(TOY_LOSS), train, model)
    assert r.returncode == 0, r.stderr
    assert "Problem: toy" in r.stdout

    r = cli("classify", "-h")
    assert r.returncode == 0 and "--toy-levels-seen" in r.stdout
    r = cli("classify", "--toy-levels-seen", test, model, predictions)
    assert r.returncode == 0, r.stderr
    assert len(predictions.read_text().split()) == 3
    assert "Average loss on test set" in r.stdout and "Toy levels predicted:" in r.stdout


def test_without_the_registration_the_toy_is_unknown(cli, tmp_path):
    train = tmp_path / "toy.train"
    train.write_text(TRAIN)
    r = cli("learn", "-c", "10", "--problem", "toy", train, tmp_path / "m")
    assert r.returncode == 2 and "unknown problem 'toy'" in r.stderr
    r = cli("classify", "-h")
    assert "--toy-levels-seen" not in r.stdout
