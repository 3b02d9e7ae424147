"""cp_learn's parameters (:class:`StructParams`, the solver cpsvm.solvers.one_slack's), each
field with its flag. The texts that depend on the problems (what -c, -e, -l and -w mean
for each) are assembled from the problems' entries; the problems' own options (SVMstruct's
``--x`` options) are the entries', in ``options``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..conventions import MARGIN_RESCALING
from ..engine.solver_table import CP_LEARN, choices_text
from ..errors import OptionError
from ..options import Choice, Later, Range, check_fields, option, positive
from ..problems import entries, entry_of, resolve_problem
from . import shared

if TYPE_CHECKING:
    from ..data import ClassWeights
    from ..kernels import Kernel

ALGORITHMS = tuple(i for i, m in CP_LEARN.items() if m.same_as is None)  # -w's own methods


def _trained() -> list:
    """The entries of the problems cp_learn trains, in the registry's order."""
    return entries("cp_learn")


def _c_help() -> str:
    return "Trade-off C (required, except with --baseline or --c-path). " + " ".join(
        e.command_line.c_help for e in _trained() if e.command_line.c_help
    )


def _epsilon_help() -> str:
    default = _trained()[0].command_line.epsilon
    others = "; ".join(
        e.command_line.epsilon_help for e in _trained() if e.command_line.epsilon_help
    )
    return (
        "Tolerance: stop when the most violated constraint is violated by at most this much "
        f"(default {default:g}" + (f"; {others}" if others else "") + ")."
    )


def _loss_ids() -> list:
    return sorted({i for e in _trained() for i in e.command_line.losses})


def _algorithm_help() -> str:
    searched = ", ".join(e.name for e in _trained() if e.training.line_search)
    descent = " and ".join(e.name for e in _trained() if e.training.coordinate_descent)
    cached = [e.name for e in _trained() if e.training.default_algorithm == 4] + [
        "--problem module:Class"
    ]
    return (
        "Algorithm: 0 n-slack, 1 n-slack (as 0), 2 1-slack primal QP, 3 1-slack dual, 4 "
        "1-slack dual with constraint cache, 5 dual coordinate descent with shrinking "
        f"(LIBLINEAR's method; {descent}, -l 2 for binary), 9 (SVMperf's custom slot) "
        f"1-slack dual with OCAS's line search for {searched} (linear, also --t 1) with "
        f"margin rescaling, else 3 (4 for {', '.join(cached[:-1])} and {cached[-1]}). "
        "Default: the fastest for the problem: 5 for multiclass, and for binary when the "
        "mean C_i*|x_i|^2 of its plain hinge is at most 3; else 9. 5 and 9 stop at a duality "
        "gap of C*epsilon; the statistics say which ran."
    )


def _problem_help() -> str:
    named = ", ".join(
        e.name + (f" ({e.command_line.summary})" if e.command_line.summary else "")
        for e in _trained()
    )
    told = [(e, e.command_line.detect_help) for e in _trained() if e.command_line.detect_help]
    detected = "; ".join(text for e, text in told if e.structured)
    fallback = ", ".join(text for e, text in told if not e.structured)
    return (
        f"{named}, auto ({detected}; else {fallback}; a choice made from qid is said) or "
        "module:Class: your own subclass of cpsvm.problems.PerExampleProblem, imported from the "
        "current directory or PYTHONPATH (its model records module:Class for cp_classify)."
    )


def _loss_help() -> str:
    return "Loss. " + " ".join(e.command_line.loss_help for e in _trained())


def _loss_type() -> Choice:
    """-l's values: the loss ids of the problems registered when it is asked (as the
    command is built, or a StructParams made)."""
    ids = _loss_ids()
    return Choice(tuple(ids), expected="-l " + ", ".join(map(str, ids[:-1])) + f" or {ids[-1]}")


@dataclass(frozen=True)
class StructParams:
    """cp_learn's settings. The problem's own settings are ``options`` (by name, those
    its entry declares: ``{"trans_order": 2}`` for hmm; the defaults fill the rest); a
    None ``epsilon``, ``algorithm`` or ``loss_id`` is the problem's default."""

    C: float = shared.trade_off(_c_help, required=True)
    epsilon: float | None = option("-e", help=_epsilon_help, default=None, type=positive("epsilon"))
    algorithm: int | None = option(
        "-w",
        help=_algorithm_help,
        default=None,
        type=Choice(tuple(CP_LEARN), expected=choices_text("-w", CP_LEARN)),
    )
    rescaling: int = option(
        "-o",
        help="Loss rescaling: 1 slack rescaling, 2 margin rescaling.",
        default=MARGIN_RESCALING,
        type=Choice((1, 2), expected="-o 1 (slack) or 2 (margin rescaling)"),
        show_default=True,
    )
    loss_id: int | None = option(
        "-l",
        help=_loss_help,
        default=None,
        type=Later(_loss_type),
    )
    batch: int = option(
        "-k",
        help="-w 0: new constraints before the QP is re-solved.",
        default=100,
        type=Range(int, 1),
        show_default=True,
    )
    cache_size: int = option(
        "-f",
        help="-w 4: constraints cached per example.",
        default=5,
        type=Range(int, 1),
        show_default=True,
    )
    max_iterations: int = shared.max_iterations()
    time_limit: float = shared.time_limit()
    max_idle: int = shared.max_idle(50)
    kernel: Kernel = shared.kernel()
    problem: str = option("--problem", help=_problem_help, default="auto", show_default=True)
    options: dict = field(default_factory=dict)
    seed: int = shared.seed("Seed for the random basis (--t 1).")
    probability: bool = shared.probability()
    n_threads: int | None = shared.threads()  # numba threads for the run (None: the caller's)
    margin_bounds: bool | None = shared.margin_bounds(
        "Binary problems with a linear model (-w 2, 3, 9); default 0."
    )  # binary linear: None = the solver's MARGIN_BOUNDS_DEFAULT[-w]
    cost_factor: float = shared.cost_factor()
    class_weight: ClassWeights | None = shared.class_weight()
    init_model: object | None = shared.init_model(
        "Start from this model's w (a warm start): linear binary problems (the error "
        "rate's hinge; an SVMlight linear model, its threshold b the --b feature's "
        "weight) and multiclass (an SVMmulticlass model of the same classes), by -w 9 "
        "(OCAS's first point and cut) or -w 5 (coordinate descent's alphas from its "
        "margins). The stopping rule is unchanged. With --cv/--c-path it starts each "
        "fold's first C."
    )  # a cpsvm.models model, read by the command (None: from w = 0)

    def __post_init__(self):
        check_fields(self)

    def validate(self):
        """The rules between fields: the spec, and, when the problem is named, its own
        checks of the run's settings (:meth:`checked`); every refusal before any data is
        read. Each field's own range is its declaration's, checked as the Params is
        made. Changes nothing: the settings derived (the problem, its loss and options)
        are the run's Resolved (cpsvm.solvers.one_slack.settings)."""
        shared.class_weights(self)  # -j and --class-weight: not both
        spec = resolve_problem(self.problem)
        if spec != "auto":
            self.checked(entry_of(spec))

    def checked(self, entry):
        """(loss id, the problem's options, notes) of these settings for ``entry``;
        OptionError if the problem refuses them."""
        loss_id = entry.command_line.loss_of(self.loss_id)
        options = entry.command_line.options_of(self.options)
        notes = []
        loss_id = entry.training.check_run(self, loss_id, options, notes)
        self._check_class_weights(entry, loss_id)
        return loss_id, options, notes

    def _check_class_weights(self, entry, loss_id):
        """--class-weight and -j: classification problems whose loss is a sum over the
        examples (not SVMperf's losses over the whole label vector); -j binary only."""
        if self.cost_factor != 1 and entry.name != "binary":
            raise OptionError("a cost factor (-j) is for binary problems only")
        if self.class_weight is None and self.cost_factor == 1:
            return
        flag = "-j" if self.class_weight is None else "--class-weight"
        if not entry.training.class_weights:
            raise OptionError(f"{flag} is for classification problems (binary, multiclass) only")
        if not entry.training.decomposes(loss_id):
            raise OptionError(
                f"{flag} weighs each example's loss: -l {loss_id} is a loss over the whole "
                "label vector (use -l 2, the error rate)"
            )
