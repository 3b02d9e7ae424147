"""What a problem declares about itself besides its numerics: its :class:`ProblemEntry`,
made of small parts, one per concern, each a class whose attributes and methods are the
defaults that a problem overrides where it differs:

- :class:`CommandLine`: cp_learn's words for it and its own options (``ProblemOption``:
  flag, type and range, default, help), parsed and checked here; its losses (``-l``), its
  C convention's and default ``-e``'s help;
- :class:`Reading`: how its files are recognised (``auto``) and read, how its labels
  are checked (the same check for a cluster's shards), what the reading line says;
- :class:`Training`: its default ``-w`` and the methods that apply, its refusals of a
  run's settings, how it is built on a dataset (or on features), a model made without
  training (cfg's PCFG);
- :class:`Reports`: the lines it adds to the learners' statistics;
- :class:`Selection`: the measure a held-out fold is judged by (``--cv``, ``--c-path``)
  and the units the folds keep whole;
- :class:`Classifying`: cp_classify's handler of its models, the cp_classify options they
  take (``ClassifyOption``) and the model-file kinds it brings;
- :class:`Estimators`: what the scikit-learn estimators (cpsvm.sklearn.StructuredSVM)
  make of it: what X is, its classes, its C convention, a model's predictions and the
  estimator a model file loads as.

A problem's package fills the parts that differ (``problems/hmm/__init__.py``) and the
registry (:mod:`.registry`) lists the entries. This module imports nothing heavy
(``cp_learn -h`` reads every entry): the methods import what they need.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import OptionError
from ..options import Choice, Option, Range


class ProblemSpecError(OptionError):
    """A --problem value that names no problem: a usage error (exit 2) for the commands."""


@dataclass(frozen=True)
class ProblemOption:
    """One option of a problem on cp_learn's command line.

    ``flag`` on the command line (``--t``); ``name`` the keyword the problem receives it
    by (``trans_order``); ``type`` the type of its values (``float``, or
    cpsvm.options' Range or Choice, plain data), ``integral`` a float that must be whole;
    ``kind`` "value", "text", "flag" or "examples" (a file of examples, which the command
    reads: the problem receives the dataset); ``default`` its value when not given;
    ``what`` a few words on what it sets, for error messages; ``help`` the problem's
    meaning of it, for --help and the man page; ``metavar`` its value in --help;
    ``trains_nothing``: given, the problem's model is made without training (cfg's
    --baseline); ``estimator`` the scikit-learn estimators' name of it
    (StructuredSVM's ``transition_order``), none when they do not take it.
    """

    flag: str
    name: str
    type: Any = None
    kind: str = "value"
    default: Any = None
    what: str = ""
    help: str = ""
    integral: bool = False
    metavar: str = "N"
    trains_nothing: bool = False
    estimator: str = ""

    def _choices(self):
        return getattr(self.type, "choices", None)

    def wanted(self) -> str:
        """The values it takes, as an error message says them (``--t 0..3``)."""
        choices = self._choices()
        if choices is not None:
            *first, last = map(str, choices)
            return f"{self.flag} " + (f"{', '.join(first)} or {last}" if first else last)
        low = -math.inf if getattr(self.type, "min", None) is None else self.type.min
        high = math.inf if getattr(self.type, "max", None) is None else self.type.max
        if low > -math.inf and high < math.inf:
            return f"{self.flag} {low:g}..{high:g}"
        if low > -math.inf:
            return f"{self.flag} >= {low:g}"
        if high < math.inf:
            return f"{self.flag} <= {high:g}"
        return f"{self.flag}, a number"

    def _whole(self) -> bool:
        """Its values are integers (an integer range or choice)."""
        kind = self.type
        return (isinstance(kind, Range) and kind.base is int) or (
            isinstance(kind, Choice) and kind.integral
        )

    def parse(self, text: str, problem: str):
        """The value of ``text`` as given on the command line, checked (OptionError, a
        usage error, if the problem cannot take it)."""
        choices = self._choices()
        if self.kind != "value" or (choices and all(isinstance(c, str) for c in choices)):
            return self.check(text, problem)
        number = int if self._whole() and not self.integral else float
        try:
            value = number(text)
        except (TypeError, ValueError):
            what = "an integer" if number is int else "a number"
            raise OptionError(f"expected {what} for {self.flag}, got {text!r}") from None
        return self.check(value, problem, text)

    def check(self, value, problem: str, text=None):
        """``value`` (from the command line or from Python) as the problem takes it, or
        OptionError naming the values it takes (its type's range or choices)."""
        if value is None or self.kind != "value":
            return value  # None: not set (the problem's default applies)
        shown = value if text is None else text
        about = f" ({problem}: {self.what})" if self.what else f" ({problem})"
        kind = self.type
        words = isinstance(kind, Choice) and not kind.integral
        whole = self.integral or self._whole()
        try:
            number = value
            if not words:
                if isinstance(value, str):
                    number = (int if whole and not self.integral else float)(value)
                if number != number or (whole and number != int(number)):
                    raise ValueError(value)  # NaN, or not a whole number
            if isinstance(kind, (Range, Choice)) and not kind.holds(number):
                raise ValueError(value)
        except (TypeError, ValueError, OverflowError):
            integer = ", an integer" if self.integral else ""
            raise OptionError(f"expected {self.wanted()}{integer}{about}, got {shown}") from None
        if words:
            return number
        return int(number) if whole else float(number)


@dataclass(frozen=True)
class ClassifyOption:
    """An option of cp_classify that a problem's models take: ``name`` the setting its
    handler reads (``settings.beam``), ``option`` the flag, type, default and help;
    ``refused_elsewhere``: given with a model of another kind, a usage error naming the
    problems that take it (else it is ignored there)."""

    name: str
    option: Option
    refused_elsewhere: bool = False


class Part:
    """A part of an entry; ``problem`` is the problem's name (its messages say it), set
    by the entry the part is given to."""

    problem = ""


class CommandLine(Part):
    """The problem on cp_learn's command line: ``summary`` (its gloss in --problem's
    help); ``tool`` (the program whose conventions its options follow); ``options``
    (ProblemOption); ``losses`` (-l ids, the default first) and ``loss_help``; ``c_help``
    (what -c means for it); ``epsilon`` (default -e) and ``epsilon_help``;
    ``detect_help`` (how auto recognises it, for --help)."""

    summary = ""
    tool = ""
    options: tuple = ()
    losses: tuple = (0,)
    loss_help = ""
    c_help = ""
    epsilon = 0.1
    epsilon_help = ""
    detect_help = ""

    def check_options(self, options) -> None:
        """Checks between its options."""

    def option(self, flag: str) -> ProblemOption | None:
        return next((o for o in self.options if o.flag == flag), None)

    def flags(self) -> list:
        return [o.flag for o in self.options]

    def loss_of(self, loss_id) -> int:
        """-l for this problem (its default when None), checked."""
        loss_id = self.losses[0] if loss_id is None else loss_id
        if loss_id not in self.losses:
            raise OptionError(
                f"loss -l {loss_id} is not a loss of the {self.problem} problem: expected "
                + " or ".join(f"-l {i}" for i in self.losses)
            )
        return loss_id

    def refuse_foreign(self, flags, others=()) -> None:
        """OptionError if some of ``flags`` (given on the command line) are not options
        of this problem; the message names which of ``others`` (entries) take them."""
        foreign = [f for f in flags if self.option(f) is None]
        if foreign:
            its = f"its options: {', '.join(self.flags())}" if self.options else "it has none"
            owners = []
            for flag in foreign:
                names = [e.name for e in others if e.command_line.option(flag) is not None]
                if names:
                    owners.append(f"{flag} is {' and '.join(names)}'s")
            raise OptionError(
                f"{' and '.join(foreign)}: not {'options' if len(foreign) > 1 else 'an option'}"
                f" of the {self.problem} problem ({its})" + "".join(f"; {o}" for o in owners)
            )

    def parse_options(self, given: dict, others=()) -> dict:
        """Its options from the command line's text (``{flag: text}``), checked, with
        the defaults of those not given; a flag it does not take is refused naming which
        of ``others`` (entries) take it."""
        self.refuse_foreign(given, others)
        values = {
            o.name: o.parse(given[o.flag], self.problem) for o in self.options if o.flag in given
        }
        return self.options_of(values)

    def options_of(self, values: dict | None = None) -> dict:
        """Its options from Python values by name (``{"trans_order": 2}``), checked, with
        the defaults of those not given."""
        values = dict(values or {})
        unknown = sorted(set(values) - {o.name for o in self.options})
        if unknown:
            raise OptionError(f"{', '.join(unknown)}: not options of the {self.problem} problem")
        options = {
            o.name: o.check(values[o.name], self.problem) if o.name in values else o.default
            for o in self.options
        }
        self.check_options(options)
        return options


class Reading(Part):
    """How the problem's training data are recognised, read and checked.
    ``own_columns``: its Ψ is over the file's own feature indices (a user's problem), not
    the distinct columns the reader renumbers huge indices to."""

    own_columns = False

    def detect(self, dataset) -> bool:
        """Whether ``auto`` takes a dataset for this problem (the structured problems, in
        the registry's AUTO_ORDER)."""
        return False

    def sniff(self, path) -> bool:
        """Whether the file is this problem's own format (not SVMlight), read by
        :meth:`read`."""
        return False

    def read(self, path, options):
        """The training data of the file (SVMlight's, unless the problem has its own)."""
        from ..io.svmlight import read_examples

        return read_examples(path)

    def check_labels(self, dataset) -> None:
        """InputError if the dataset's labels are not the problem's."""

    def auto_note(self, dataset):
        """The line saying why auto chose the problem, or None."""
        return None

    def examples(self, dataset):
        """What the examples are, for the "Reading training examples" line (None: the
        file's lines)."""
        return None


class Training(Part):
    """How the problem is trained: ``default_algorithm`` (-w when OCAS's line search does
    not apply) and ``line_search`` (-w 9 applies with margin rescaling, trained
    linearly); ``coordinate_descent`` (-w 5 applies: a hinge whose dual cpsvm.engine.dcd
    solves, margin rescaled, linear); ``kernels`` (-t 1..3 apply); ``on_features`` (its
    examples are the file's lines, built by the solver on their features with
    :meth:`build_on`; else :meth:`build` builds it)."""

    default_algorithm = 3
    line_search = False
    coordinate_descent = False
    kernels = False
    on_features = False
    class_weights = False  # --class-weight and -j apply (its examples have classes)

    def check_run(self, params, loss_id, options, notes) -> int:
        """The loss id to train: the problem's refusals of the run's settings (rescaling,
        kernel), before any data is read; ``notes`` collects what the run will say."""
        return loss_id

    def build(self, dataset, loss_id, options):
        """The StructuredProblem of a problem whose examples are groups of lines or a
        user's (None: built on the features, :meth:`build_on`)."""
        return None

    def build_on(self, X, y, loss_id, options, bias):
        """The problem on the features X (the file's, or their Nyström map)."""
        raise NotImplementedError(f"the {self.problem} problem is not built on features")

    def decomposes(self, loss_id) -> bool:
        """False for a loss over the whole label vector (per-example costs then do not
        apply)."""
        return True

    def baseline(self, dataset, options):
        """(model made without training, lines saying what it is): the problem's
        ``trains_nothing`` option (cfg's PCFG)."""
        raise OptionError(f"the {self.problem} problem makes no model without training")


class Reports(Part):
    """What the learners' statistics say of the problem."""

    def title(self) -> str:
        """The problem as the statistics' "Problem:" line names it."""
        return self.problem

    def work_lines(self, info) -> list:
        """Lines of the learners' statistics after the counters."""
        return []

    def scale_lines(self, info, params) -> list:
        """The last lines of the learners' statistics: the objective in its own
        convention."""
        return []


class Selection(Part):
    """Model selection (--cv, --c-path: cpsvm.selection) of the problem."""

    def cv_measure(self, model, dataset, loss_id):
        """The figures a held-out fold is judged by, [(name, value, +1 if higher is better
        else -1[, why a NaN])], the one to choose by first."""
        raise OptionError(
            f"--cv and --c-path: the {self.problem} problem has no measure to judge by"
        )

    def cv_units(self, dataset):
        """(each example's unit id or None: one unit an example, each example's class to
        stratify by or None)."""
        return None, None


class Classifying(Part):
    """cp_classify and the problem's models: ``handler`` (cp_classify's handler of its
    models: ``model_kinds``, ``settings`` the cp_classify settings it takes, ``load``,
    ``describe``, ``classify(model, data, X, settings)`` -> (lines, report) or, with
    "plot" in its settings, (lines, report, draw); optionally ``claims(model, data)`` and
    ``read(path, settings)``; None: it has no models of its own); ``options``
    (ClassifyOption); ``model_kinds`` (model-file kinds it brings,
    cpsvm.io.model_file.ModelKind, made known when it is registered)."""

    def __init__(self, handler: Any = None, options: tuple = (), model_kinds: tuple = ()):
        self.handler = handler
        self.options = options
        self.model_kinds = model_kinds


class Estimators(Part):
    """What the scikit-learn estimators (cpsvm.sklearn.StructuredSVM) make of the problem:
    ``takes_sequences`` (X a list of sequences, each a block of rows);
    ``decision_rows`` (its models are decision functions of X's rows, the labels the
    estimator's ``classes_``: the estimator's decision_function, coef_ and labels, and a
    model file loads as the estimators of linear models load)."""

    takes_sequences = False
    decision_rows = False

    def c_of_sum(self, C: float, n: int) -> float:
        """The -c of the C of ½|w|² + C·Σ ξ_i over n examples: SVMstruct's C·n unless the
        problem follows another tool."""
        from ..conventions import struct_from_c_sum

        return struct_from_c_sum(C, n)

    def count_examples(self, dataset) -> int:
        """Its examples in a dataset as its reader gives it (the n of C·n)."""
        return int(getattr(dataset, "n_sequences", 0) or dataset.n_examples)

    def classes(self, labels):
        """The estimator's ``classes_`` of the training labels (None: it sets none)."""
        return None

    def model_options(self, model) -> dict:
        """Its options (by name) that a trained model records, for an estimator loaded
        from the model file."""
        return {}

    def loaded(self, model):
        """(the estimator's parameters, its fitted attributes) of a model read from its
        file, besides the options :meth:`model_options` gives; None: loaded as a linear
        model (or refused)."""
        return None

    def predict(self, model, dataset, options, n_threads=None):
        """What cp_classify writes for each example of ``dataset`` (as its reader gives
        it), by the trained ``model`` with the problem's ``options``."""
        from ..models import fit_columns

        X = dataset.X if model.feature_ids is not None else fit_columns(dataset.X, model.n_features)
        return model.predict(X)


class ProblemEntry:
    """A problem as the toolkit knows it: its ``name``, ``learners`` (the commands that
    train it), ``structured`` (only cp_learn trains it: ocas_learn takes binary and
    multiclass) and its parts, each the defaults where the problem gives none."""

    def __init__(
        self,
        name: str,
        *,
        learners: tuple = ("cp_learn",),
        structured: bool = True,
        command_line: CommandLine | None = None,
        reading: Reading | None = None,
        training: Training | None = None,
        reports: Reports | None = None,
        selection: Selection | None = None,
        classifying: Classifying | None = None,
        estimators: Estimators | None = None,
    ):
        self.name = name
        self.learners = learners
        self.structured = structured
        self.command_line = command_line or CommandLine()
        self.reading = reading or Reading()
        self.training = training or Training()
        self.reports = reports or Reports()
        self.selection = selection or Selection()
        self.classifying = classifying or Classifying()
        self.estimators = estimators or Estimators()
        for part in self.parts():
            part.problem = name

    def parts(self) -> tuple:
        return (
            self.command_line, self.reading, self.training, self.reports, self.selection,
            self.classifying, self.estimators,
        )  # fmt: skip

    def __repr__(self):
        return f"<problem entry {self.name}>"
