"""Users' own problems (``--problem module:Class``): the class imported from its spec, built
on a dataset, and rebuilt on a test set to predict with a trained
:class:`cpsvm.models.UserProblemModel` (cp_classify, the scikit-learn estimators).

The class is a :class:`cpsvm.problems.base.StructuredProblem`, usually a
:class:`~cpsvm.problems.base.PerExampleProblem`; it is found on sys.path (PYTHONPATH) or in
the current directory. Every failure is a one-line error: ProblemSpecError (a usage error)
while the spec is checked, InputError once a model or a dataset is involved.
"""

from __future__ import annotations

import importlib
import os
import sys

from ..errors import InputError
from .entry import (
    Classifying,
    CommandLine,
    Estimators,
    ProblemEntry,
    ProblemSpecError,
    Reading,
    Reports,
    Training,
)


def import_problem_class(spec: str):
    """The class named by ``module:Class`` (imported from sys.path: the current directory
    when run as a command, and PYTHONPATH); ProblemSpecError if it cannot be (the
    registry's resolve_problem has refused a spec of another shape, naming the choices)."""
    module_name, colon, class_name = spec.partition(":")
    if not colon or not module_name or not class_name:
        raise ProblemSpecError(f"expected module:Class, got {spec!r}")
    # `python -m` puts the current directory on sys.path, an installed console script
    # does not: look there too (after PYTHONPATH), and leave sys.path as it was.
    cwd = os.getcwd()
    added = "" not in sys.path and cwd not in sys.path
    if added:
        sys.path.append(cwd)
    try:
        target = importlib.import_module(module_name)
        for part in class_name.split("."):
            target = getattr(target, part)
    except ImportError as e:
        raise ProblemSpecError(
            f"cannot import problem {spec!r}: {e} (modules are found "
            "in the current directory and on PYTHONPATH)"
        ) from None
    except AttributeError:
        raise ProblemSpecError(
            f"cannot import problem {spec!r}: module {module_name!r} has no {class_name!r}"
        ) from None
    except Exception as e:  # the user's module failed while importing: say how, in a line
        raise ProblemSpecError(
            f"cannot import problem {spec!r}: importing {module_name!r} "
            f"raised {type(e).__name__}: {e}"
        ) from None
    finally:
        if added:
            sys.path.remove(cwd)
    from .base import StructuredProblem

    if not (isinstance(target, type) and issubclass(target, StructuredProblem)):
        raise ProblemSpecError(
            f"problem {spec!r} is not a class derived from cpsvm.problems.PerExampleProblem"
        )
    return target


def called(spec: str, method: str, function, *args, **kwargs):
    """``function(*args, **kwargs)``, a method of the user's problem: whatever it raises,
    sys.exit included, is one InputError naming the problem and the method (Ctrl-C
    passes)."""
    try:
        return function(*args, **kwargs)
    except (Exception, SystemExit) as e:
        raise InputError(
            f"problem {spec!r}: its {method}() raised {type(e).__name__}: {e}"
        ) from None


def load_user_problem(spec: str, dataset, options=None):
    """Instantiate ``module:Class`` with the dataset: a user's StructuredProblem."""
    cls = import_problem_class(spec)
    problem = called(spec, "__init__", cls, dataset, **(options or {}))
    missing = [
        m
        for m in (
            "separate",
            "losses",
            "margins",
            "delta_psi_sum",
            "true_labels",
            "predict",
            "to_model",
        )
        if not callable(getattr(problem, m, None))
    ]
    if missing or not hasattr(problem, "size_psi"):
        raise InputError(
            f"problem {spec!r} lacks {', '.join(missing) or 'size_psi'}: "
            "subclass cpsvm.problems.PerExampleProblem"
        )
    # The training data's width: cp_classify gives the problem test rows of this width.
    problem._cpsvm_n_features = dataset.n_features
    return problem


# -- a trained model's problem ------------------------------------------------------------


def user_problem_class(model):
    """The class a :class:`~cpsvm.models.UserProblemModel` names, imported (InputError if
    it cannot be)."""
    try:
        return import_problem_class(model.spec)
    except ProblemSpecError as e:
        raise InputError(f"the model's problem cannot be loaded: {e}") from None


def user_problem_on(model, dataset):
    """The model's problem built on ``dataset``, and the dataset it was built on (InputError
    if the class cannot be imported or does not fit the model). Test rows are first cut or
    padded to the training width, as SVMlight ignores test features above the model's."""
    user_problem_class(model)
    if model.n_features:
        dataset, _ = dataset.with_n_features(model.n_features)
    problem = load_user_problem(model.spec, dataset, model.options)
    if problem.size_psi != model.size_psi:
        raise InputError(
            f"problem {model.spec!r} built on the test data has size_psi "
            f"{problem.size_psi}, the model's w has {model.size_psi} "
            "(its model_options() should record what fixes it)"
        )
    return problem, dataset


def predict_user_problem(model, dataset) -> list:
    """One prediction per example of ``dataset``, by the problem's ``predict`` with the
    model's w."""
    problem, dataset = user_problem_on(model, dataset)
    return _predictions(model, problem, dataset)


def _predictions(model, problem, dataset) -> list:
    """The problem's ``predict`` with the model's w: one label per example, checked."""
    predictions = called(model.spec, "predict", problem.predict, model.w, dataset.X)
    try:
        predictions = list(predictions)
    except TypeError:
        raise InputError(
            f"problem {model.spec!r}: its predict() returned {type(predictions).__name__}, "
            "expected one label per example"
        ) from None
    if len(predictions) != dataset.n_examples:
        raise InputError(
            f"problem {model.spec!r} predicted {len(predictions)} labels "
            f"for {dataset.n_examples} examples",
            source=dataset.source,
        )
    return predictions


# -- the entry of a user's problem --------------------------------------------------------


class UserProblemModels:
    """cp_classify's handler of a user's problem's models: its class rebuilt on the test
    data predicts, one label a line; its loss against the file's labels gives SVMstruct's
    average loss."""

    model_kinds = ("user-problem",)
    settings = ()

    @staticmethod
    def load(model):
        user_problem_class(model)  # a class that cannot be imported: said before anything else

    @staticmethod
    def describe(model):
        return f"problem {model.spec}, size_psi {model.size_psi}"

    @staticmethod
    def classify(model, data, X, settings):
        problem, fitted = user_problem_on(model, data)
        predictions = _predictions(model, problem, fitted)
        lines = [str(called(model.spec, "format_label", problem.format_label, p))
                 for p in predictions]  # fmt: skip
        return lines, lambda out: report_user_problem(problem, predictions, out)


def report_user_problem(problem, predictions, out):
    """SVMstruct's figures: the average of the problem's loss Δ(y_i, ŷ_i) against the
    file's labels and the share of examples with a positive loss."""
    import numpy as np

    try:
        losses = np.asarray(problem.losses(predictions), dtype=np.float64)
    except NotImplementedError:
        print("Note: the problem defines no loss: no figures computed", file=out)
        return
    total = len(losses)
    if not total:
        return
    correct = int(np.count_nonzero(losses == 0))
    error = 100.0 * (total - correct) / total
    print(f"Average loss on test set: {float(np.mean(losses)):.4f}", file=out)
    print(
        f"Zero/one-error on test set: {error:.2f}% ({correct} correct, "
        f"{total - correct} incorrect, {total} total)",
        file=out,
    )


class UserCommandLine(CommandLine):
    losses = (0, 2)

    def __init__(self, spec: str):
        self.summary = spec


class UserReading(Reading):
    own_columns = True  # Ψ is the user's, over the file's own feature indices


class UserTraining(Training):
    default_algorithm = 4

    def __init__(self, spec: str):
        self.spec = spec

    def build(self, dataset, loss_id, options):
        return load_user_problem(self.spec, dataset)


class UserReports(Reports):
    def __init__(self, spec: str):
        self.spec = spec

    def title(self):
        return f"user ({self.spec})"


class UserEstimators(Estimators):
    def loaded(self, model):
        return {"problem": model.spec}, {"fill_label_": None}

    def predict(self, model, dataset, options, n_threads=None):
        import numpy as np

        return np.asarray(predict_user_problem(model, dataset))


def user_entry(spec: str, *, check: bool = True) -> ProblemEntry:
    """The entry of ``module:Class``: its examples are whatever the class makes of the
    dataset; no options of its own; SVMstruct's zero/one loss ids and C convention.
    ``check``: its class imported first (ProblemSpecError if it cannot be); without, a
    model's class is imported when the model is used."""
    if check:
        import_problem_class(spec)
    return ProblemEntry(
        "user",
        command_line=UserCommandLine(spec),
        reading=UserReading(),
        training=UserTraining(spec),
        reports=UserReports(spec),
        classifying=Classifying(UserProblemModels),
        estimators=UserEstimators(),
    )
