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
import json
import math
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
    missing = missing_methods(target)
    if missing:
        raise ProblemSpecError(
            f"problem {spec!r} lacks {', '.join(m + '()' for m in missing)}: a "
            "PerExampleProblem defines psi, true_label, loss, most_violated and classify"
        )
    return target


class UserProblemError(InputError):
    """A method of a user's problem failed or returned what the engine cannot use: said
    once, by the guard closest to the user's code (a guard around it passes it on)."""


class UserProblemNotImplemented(UserProblemError, NotImplementedError):
    """A method of a user's problem raised NotImplementedError: still one to whoever asks
    (cp_classify's figures are left out when the problem's loss is)."""


def called(spec: str, method: str, function, *args, **kwargs):
    """``function(*args, **kwargs)``, a method of the user's problem: whatever it raises,
    sys.exit included, is one UserProblemError naming the problem and the method (Ctrl-C
    passes)."""
    try:
        return function(*args, **kwargs)
    except UserProblemError:
        raise
    except (Exception, SystemExit) as e:
        raise _failure(spec, method, e) from None


def _failure(spec: str, method: str, e: BaseException) -> UserProblemError:
    kind = UserProblemNotImplemented if isinstance(e, NotImplementedError) else UserProblemError
    return kind(f"problem {spec!r}: its {method}() raised {type(e).__name__}: {e}")


# What PerExampleProblem builds each batched method from: the methods a user writes.
_BUILT_FROM = {
    "true_labels": ("true_label",),
    "separate": ("most_violated",),
    "losses": ("loss",),
    "margins": ("psi", "true_label"),
    "delta_psi_sum": ("psi", "true_label"),
    "predict": ("classify",),
}


def missing_methods(cls) -> list:
    """The methods ``cls`` (a StructuredProblem) lacks for cp_learn and cp_classify: the
    batched ones it neither defines nor inherits from PerExampleProblem, and the
    per-example ones PerExampleProblem builds those it does not override from."""
    from .base import PerExampleProblem, StructuredProblem

    missing = [
        name
        for name in ("true_labels", "separate", "losses", "margins", "delta_psi_sum", "to_model")
        if getattr(cls, name) is getattr(StructuredProblem, name)
    ]
    if not callable(getattr(cls, "predict", None)):
        missing.append("predict")
    if issubclass(cls, PerExampleProblem):
        for batched, parts in _BUILT_FROM.items():
            if getattr(cls, batched) is getattr(PerExampleProblem, batched):
                missing += [m for m in parts if not callable(getattr(cls, m, None))]
    return list(dict.fromkeys(missing))


def load_user_problem(spec: str, dataset, options=None):
    """Instantiate ``module:Class`` with the dataset: a user's StructuredProblem, its
    methods guarded (:func:`guard`)."""
    import numpy as np

    cls = import_problem_class(spec)
    problem = called(spec, "__init__", cls, dataset, **(options or {}))
    for name in ("n_examples", "size_psi"):
        value = getattr(problem, name, None)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise UserProblemError(
                f"problem {spec!r}: its __init__() set {name} to {value!r}, expected an "
                "integer >= 1"
            )
    # The training data's width: cp_classify gives the problem test rows of this width.
    problem._cpsvm_n_features = dataset.n_features
    guard(spec, problem)
    # What the model file keeps, checked before the training rather than after it.
    problem.model_options()
    return problem


# -- the guard: every method of a user's problem the engine calls, its result checked ------


def guard(spec: str, problem) -> None:
    """Shadow each method of the user's ``problem`` that cpsvm calls with one that says
    in a line which method failed or returned what (:class:`UserProblemError`): what it
    raises, sys.exit included; a loss or a vector that is not finite; a vector, a list of
    labels or of figures of the wrong length. ``model_options`` returns plain Python
    values (numpy's converted) that JSON writes, or is refused. The engine sees the same
    problem, its results unchanged."""
    checks = _Checks(spec, problem)
    for name in _GUARDED:
        method = getattr(problem, name, None)
        if callable(method):
            if name in checks.from_psi:  # numpy's warnings of a non-finite Ψ: checked
                method = _quiet(method, checks.np)
            setattr(problem, name, _guarded(spec, name, method, getattr(checks, name, None)))


# The methods guarded: what PerExampleProblem asks a user to write, the batched protocol
# (cpsvm.problems.base), and the hooks a problem may override (their defaults call the
# former). Those whose result is checked: the methods of _Checks of the same name.
_GUARDED = (
    *("true_label", "psi", "loss", "most_violated", "classify", "model_options"),
    *("true_labels", "separate", "losses", "margins", "delta_psi_sum", "to_model"),
    *("pick", "margins_many", "split_labels", "cut_table", "scores", "margins_at"),
    *("margins_many_at", "cut", "separate_at", "format_label"),
)


class _Checks:
    """The checks of what a user's problem's methods return, one method each, given the
    result and the call's arguments: the result passed on, or UserProblemError."""

    def __init__(self, spec: str, problem):
        import numpy as np

        from .base import PerExampleProblem

        self.np, self.spec = np, spec
        self.size, self.n = problem.size_psi, problem.n_examples
        # The batched sums PerExampleProblem builds from the user's psi(): theirs to blame.
        self.from_psi = {
            name
            for name in ("margins", "delta_psi_sum")
            if isinstance(problem, PerExampleProblem)
            and getattr(type(problem), name) is getattr(PerExampleProblem, name)
        }

    def _error(self, text: str) -> UserProblemError:
        return UserProblemError(f"problem {self.spec!r}: {text}")

    def _count(self, rows) -> int:
        return self.n if rows is None else len(rows)

    def _labels(self, method, labels, expected):
        try:
            length = len(labels)
        except TypeError:
            length = None
        if length != expected:
            got = type(labels).__name__ if length is None else f"{length} labels"
            raise self._error(f"its {method}() returned {got}, expected {expected} labels")
        return labels

    def _figures(self, method, values, expected, what="numbers"):
        np = self.np
        array = np.asarray(values)
        if array.shape != (expected,) or not np.issubdtype(array.dtype, np.number):
            raise self._error(
                f"its {method}() returned shape {array.shape} of {array.dtype}, expected "
                f"({expected},) {what}"
            )
        if not np.isfinite(array).all():
            bad = array[~np.isfinite(array)][0]
            raise self._error(
                f"its psi() gave a non-finite value ({method}() returned {bad}), expected "
                "finite numbers"
                if method in self.from_psi
                else f"its {method}() returned a non-finite value ({bad}), expected finite {what}"
            )
        return values

    # -- what PerExampleProblem asks the user to write

    def psi(self, value, i, y):
        # Its shape only, per call: a non-finite Ψ shows in the batched sums built from it
        # (from_psi), checked once per call of theirs.
        size = self.size
        if isinstance(value, self.np.ndarray):
            shape, shapes = value.shape, ((size,),)
        elif hasattr(value, "tocoo"):  # a scipy.sparse row (or column)
            shape, shapes = value.shape, ((1, size), (size, 1))
        else:
            shape, shapes = None, ()
        if shape not in shapes:
            got = type(value).__name__ if shape is None else f"shape {shape}"
            raise self._error(
                f"its psi() returned {got}, expected a numpy vector of shape ({size},) "
                f"(size_psi) or a scipy.sparse row of {size} columns"
            )
        return value

    def loss(self, value, i, y):
        if not isinstance(value, (int, float, self.np.number)):
            raise self._error(f"its loss() returned {type(value).__name__}, expected a number >= 0")
        if not (math.isfinite(value) and value >= 0):
            raise self._error(f"its loss() returned {value}, expected a finite number >= 0")
        return value

    def model_options(self, value):
        if not isinstance(value, dict):
            raise self._error(
                f"its model_options() returned {type(value).__name__}, expected a dict"
            )
        plain = _plain(value)
        try:
            json.dumps(plain, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise self._error(
                f"its model_options() returned what JSON cannot write ({e}), expected a "
                "dict of numbers, strings, lists and dicts"
            ) from None
        return plain

    # -- the batched protocol

    def true_labels(self, value):
        return self._labels("true_labels", value, self.n)

    def separate(self, value, w, rescaling, rows=None):
        return self._labels("separate", value, self._count(rows))

    def losses(self, value, labels, rows=None):
        return self._figures("losses", value, self._count(rows), "losses")

    def margins(self, value, w, labels, rows=None):
        return self._figures("margins", value, self._count(rows))

    def delta_psi_sum(self, value, weights, labels, rows=None):
        return self._figures("delta_psi_sum", value, self.size)

    def to_model(self, value, *args, **kwargs):
        from ..models import UserProblemModel

        if isinstance(value, UserProblemModel):
            value.options = self.model_options(value.options)
        return value


def _quiet(method, np):
    def quiet(*args, **kwargs):
        with np.errstate(invalid="ignore", over="ignore"):
            return method(*args, **kwargs)

    return quiet


def _guarded(spec, name, method, check):
    """``method`` as :func:`called` calls it (inlined: psi is called per example), its
    result passed through ``check``."""

    def guarded(*args, **kwargs):
        try:
            value = method(*args, **kwargs)
        except UserProblemError:
            raise
        except (Exception, SystemExit) as e:
            raise _failure(spec, name, e) from None
        return value if check is None else check(value, *args, **kwargs)

    guarded.__name__ = name
    return guarded


def _plain(value):
    """``value`` with numpy's scalars and arrays as Python's numbers and lists (what
    model_options() may hold), tuples as lists."""
    import numpy as np

    if isinstance(value, dict):
        return {_plain(k) if isinstance(k, np.generic) else k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


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
