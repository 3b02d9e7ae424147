"""The registry of problems: what each problem declares about itself (its
:class:`ProblemEntry`) and where the built-in ones live.

A problem's entry is everything the toolkit needs to know about it besides its numerics:
its own options (SVMstruct's ``--x`` options, declared once: flag, type, range, default,
help) and their checks, its losses (``-l``), its default tolerance (``-e``) and algorithm
(``-w``), its C convention, how ``auto`` recognises its files and how its labels are
checked, how it is built on a dataset, what the learners' statistics add for it, and how
cp_classify evaluates its models. The commands, the solvers and the scikit-learn
estimators read entries; none of them branches on a problem's name.

The built-in problems are the packages named in :data:`BUILT_IN`: each package's
``__init__`` holds its ``ENTRY`` and imports nothing heavy (``cp_learn -h`` reads every
entry), its numerics live in the package's other modules and load when the problem is
built. A user's problem (``--problem module:Class``) gets its entry from its class
(:mod:`cpsvm.problems.user`).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import OptionError

# The built-in problems, in the order --help lists them: each name is the package
# cpsvm.problems.<name>, whose ENTRY is the problem.
BUILT_IN = ("binary", "multiclass", "hmm", "cfg", "rank")
# The order in which ``auto`` asks the structured problems' ``detect``, the most specific
# first: a ranking file (graded targets, some below 1) would pass hmm's test too.
AUTO_ORDER = ("cfg", "rank", "hmm")


class ProblemSpecError(OptionError):
    """A --problem value that names no problem: a usage error (exit 2) for the commands."""


@dataclass(frozen=True)
class ProblemOption:
    """One option of a problem.

    ``flag`` on the command line (``--t``); ``name`` the keyword the problem receives it
    by (``trans_order``); ``kind`` "int", "float", "choice", "text", "flag" or
    "examples" (a file of examples, which the command reads: the problem receives the
    dataset); ``low``/``high`` the range of a number, ``choices`` of a choice,
    ``integral`` a number that must be whole; ``default`` its value when not given (a
    callable of the run's params when it depends on them); ``what`` a few words on what
    it sets, for error messages; ``help`` the problem's meaning of it, for --help and the
    man page; ``metavar`` its value in --help.
    """

    flag: str
    name: str
    kind: str = "int"
    default: Any = None
    what: str = ""
    help: str = ""
    low: float = -math.inf
    high: float = math.inf
    choices: tuple = ()
    integral: bool = False
    metavar: str = "N"

    def wanted(self) -> str:
        """The values it takes, as an error message says them (``--t 0..3``)."""
        if self.kind == "choice":
            *first, last = map(str, self.choices)
            return f"{self.flag} " + (f"{', '.join(first)} or {last}" if first else last)
        low, high = self.low, self.high
        if low > -math.inf and high < math.inf:
            return f"{self.flag} {low:g}..{high:g}"
        if low > -math.inf:
            return f"{self.flag} >= {low:g}"
        if high < math.inf:
            return f"{self.flag} <= {high:g}"
        return f"{self.flag}, a number"

    def parse(self, text: str, problem: str):
        """The value of ``text`` as given on the command line, checked (OptionError, a
        usage error, if the problem cannot take it)."""
        if self.kind in ("text", "flag", "examples") or (
            self.kind == "choice" and all(isinstance(c, str) for c in self.choices)
        ):
            return self.check(text, problem)
        number = int if self.kind in ("int", "choice") and not self.integral else float
        try:
            value = number(text)
        except (TypeError, ValueError):
            what = "an integer" if number is int else "a number"
            raise OptionError(f"expected {what} for {self.flag}, got {text!r}") from None
        return self.check(value, problem, text)

    def check(self, value, problem: str, text=None):
        """``value`` (from the command line or from Python) as the problem takes it, or
        OptionError naming the values it takes."""
        if value is None or self.kind in ("text", "flag", "examples"):
            return value  # None: not set (the problem's default applies)
        shown = value if text is None else text
        about = f" ({problem}: {self.what})" if self.what else f" ({problem})"
        if self.kind == "choice":
            if value not in self.choices:
                raise OptionError(f"expected {self.wanted()}{about}, got {shown}")
            return value
        whole = self.integral or self.kind == "int"
        if not (self.low <= value <= self.high) or (whole and value != int(value)):
            integer = ", an integer" if self.integral else ""
            raise OptionError(f"expected {self.wanted()}{integer}{about}, got {shown}")
        return int(value) if whole else float(value)


@dataclass(frozen=True)
class ProblemEntry:
    """A problem as the toolkit knows it. The fields that are functions are called only
    when needed; the module that defines an entry imports nothing heavy at module level.

    Declarations:
      ``name``; ``summary`` (its gloss in --problem's help); ``tool`` (the program whose
      conventions its options follow); ``options`` (ProblemOption); ``losses`` (-l ids,
      the default first) and ``loss_help``; ``c_help`` (what -c means for it);
      ``epsilon`` (default -e) and ``epsilon_help``; ``default_algorithm`` (-w when OCAS's
      line search does not apply) and ``line_search`` (-w 9 applies with margin
      rescaling, trained linearly); ``coordinate_descent`` (-w 5 applies: a hinge whose
      dual cpsvm.engine.dcd solves, margin rescaled, linear); ``kernels`` (-t 1..3
      apply); ``structured`` (only cp_learn trains it: ocas_learn takes binary and
      multiclass); ``detect_help`` (how auto recognises it, for --help).
    Reading and checking the data:
      ``detect(dataset)`` -> bool: auto takes it (the structured problems, in
      BUILT_IN's order); ``sniff(path)`` -> bool: a file that is this problem's own
      format (not SVMlight), read by ``read(path, options)``; ``check_labels(dataset)``;
      ``auto_note(dataset)`` -> the line saying why auto chose it, or None.
    Training:
      ``check_options(options)``: checks between its options; ``check_run(params,
      loss_id, options, notes)`` -> the loss id to train: the problem's refusals of
      settings (rescaling, kernel), before any data is read; ``build(dataset, loss_id,
      options)`` -> the StructuredProblem, for a problem whose examples are groups of
      lines (None: the solver builds it on the features with ``build_on(X, y, loss_id,
      options)``); ``decomposes(loss_id)`` -> False for a loss over the whole label
      vector (per-example costs then do not apply; None: every loss is a sum over the
      examples); ``examples(dataset)`` -> what the examples are, for the "Reading
      training examples" line.
    Reporting:
      ``work_lines(info)`` and ``scale_lines(info, params)`` -> lines of the learners'
      statistics (after the counters; last: the objective in its own convention);
      ``c_of_sum(C, n)`` -> the -c of the C of ½|w|² + C·Σ ξ_i (the scikit-learn
      estimators'); ``classify``: cp_classify's handler of its models (``model_kinds``,
      ``settings`` the cp_classify settings it takes, ``load``, ``describe``,
      ``classify(model, data, X, settings)`` -> (lines, report) or, with "plot" in its
      settings, (lines, report, draw): ``draw(path, title)`` the --plot picture);
      ``baseline(dataset, options)`` -> a model made without training (cfg's PCFG).
    Model selection (``--cv``, ``--c-path``: cpsvm.selection):
      ``cv_measure(model, dataset, loss_id)`` -> the figures a held-out fold is judged
      by, [(name, value, +1 if higher is better else -1)], the one to choose by first;
      ``cv_units(dataset)`` -> (each example's unit id or None: one unit an example,
      each example's class to stratify by or None).
    """

    name: str
    summary: str = ""
    tool: str = ""
    options: tuple = ()
    losses: tuple = (0,)
    loss_help: str = ""
    c_help: str = ""
    epsilon: float = 0.1
    epsilon_help: str = ""
    default_algorithm: int = 3
    line_search: bool = False
    coordinate_descent: bool = False
    kernels: bool = False
    structured: bool = True
    detect_help: str = ""
    detect: Callable | None = None
    sniff: Callable | None = None
    read: Callable | None = None
    check_labels: Callable | None = None
    auto_note: Callable | None = None
    check_options: Callable | None = None
    check_run: Callable | None = None
    build: Callable | None = None
    build_on: Callable | None = None
    decomposes: Callable | None = None
    examples: Callable | None = None
    work_lines: Callable | None = None
    scale_lines: Callable | None = None
    c_of_sum: Callable | None = None
    classify: Any = None
    baseline: Callable | None = None
    cv_measure: Callable | None = None
    cv_units: Callable | None = None

    def option(self, flag: str) -> ProblemOption | None:
        return next((o for o in self.options if o.flag == flag), None)

    def flags(self) -> list:
        return [o.flag for o in self.options]

    def loss_of(self, loss_id) -> int:
        """-l for this problem (its default when None), checked."""
        loss_id = self.losses[0] if loss_id is None else loss_id
        if loss_id not in self.losses:
            raise OptionError(
                f"loss -l {loss_id} is not a loss of the {self.name} problem: expected "
                + " or ".join(f"-l {i}" for i in self.losses)
            )
        return loss_id

    def refuse_foreign(self, flags) -> None:
        """OptionError if some of ``flags`` (given on the command line) are not options
        of this problem."""
        foreign = [f for f in flags if self.option(f) is None]
        if foreign:
            its = f"its options: {', '.join(self.flags())}" if self.options else "it has none"
            owners = []
            for flag in foreign:
                names = [e.name for e in entries() if e.option(flag) is not None]
                if names:
                    owners.append(f"{flag} is {' and '.join(names)}'s")
            raise OptionError(
                f"{' and '.join(foreign)}: not {'options' if len(foreign) > 1 else 'an option'}"
                f" of the {self.name} problem ({its})" + "".join(f"; {o}" for o in owners)
            )

    def parse_options(self, given: dict) -> dict:
        """Its options from the command line's text (``{flag: text}``), checked, with
        the defaults of those not given."""
        self.refuse_foreign(given)
        values = {
            o.name: o.parse(given[o.flag], self.name) for o in self.options if o.flag in given
        }
        return self.options_of(values)

    def options_of(self, values: dict | None = None) -> dict:
        """Its options from Python values by name (``{"trans_order": 2}``), checked, with
        the defaults of those not given."""
        values = dict(values or {})
        unknown = sorted(set(values) - {o.name for o in self.options})
        if unknown:
            raise OptionError(f"{', '.join(unknown)}: not options of the {self.name} problem")
        options = {
            o.name: o.check(values[o.name], self.name) if o.name in values else o.default
            for o in self.options
        }
        if self.check_options is not None:
            self.check_options(options)
        return options


def problem_entry(name: str) -> ProblemEntry:
    """The entry of a built-in problem (KeyError for another name)."""
    if name not in BUILT_IN:
        raise KeyError(name)
    return importlib.import_module(f"{__package__}.{name}").ENTRY


def problem_names() -> list:
    return list(BUILT_IN)


def problem_choices() -> str:
    """The --problem values to name in an error."""
    return ", ".join(["auto", *BUILT_IN]) + " or module:Class"


def entries() -> list:
    """Every built-in entry, in BUILT_IN's order."""
    return [problem_entry(name) for name in BUILT_IN]
