"""sampled_learn's parameters (:class:`SampledParams`, the solver cpsvm.solvers.sampled's),
each field with its flag: SVMperf's command line with Yu & Joachims' sampled cuts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..engine.solver_table import SAMPLED_LEARN
from ..options import Choice, Range, check_fields, option, positive
from . import shared

if TYPE_CHECKING:
    from ..data import ClassWeights
    from ..kernels import Kernel

ALGORITHMS = tuple(SAMPLED_LEARN)


@dataclass(frozen=True)
class SampledParams:
    """Options of cpsvm.solvers.sampled's ``train`` (the ``sampled_learn`` flags).

    ``epsilon`` is in the engine's units, cp_learn's ``-e``: the loss is 100 per wrong
    example, so ε = 1 is the paper's ε = 0.01 on the zero/one loss.
    """

    C: float = shared.trade_off(
        "Trade-off C (required, except with --c-path), SVMperf's convention as cp_learn: "
        "C_light = C*100/n.",
        required=True,
    )
    epsilon: float = option(
        "-e",
        help="Tolerance in cp_learn's units (loss 100 per error): stop when the "
        "(sampled, for const) most violated constraint is violated by at most "
        "this much. 1 is the paper's 0.01 on the zero/one loss; its 0.001 is "
        "-e 0.1 (see DEFAULTS in the man page).",
        default=1.0,  # sampled_learn's default (man page, DEFAULTS)
        type=positive("epsilon"),
        show_default=True,
    )
    algorithm: str = option(
        "--algorithm",
        help="const: constant-time (Algorithm 2), cuts from r uniform draws; "
        "linear: linear-time (Algorithm 3), exact argmax and stop test, cuts "
        "from r draws among the examples with non-zero loss.",
        default="linear",
        type=Choice(ALGORITHMS),
        show_default=True,
    )  # "const" (Algorithm 2) or "linear" (Algorithm 3)
    sample_size: int = option(
        "--r",
        "--sample-size",
        help="Sample size r: examples drawn for each cut. Not -r, which is the "
        "kernel's constant as in SVMlight (a warning says so when -r is given "
        "with -t 0 or 2, whose kernels ignore it).",
        default=400,
        type=Range(int, 1, expected="a sample size --r >= 1"),
        show_default=True,
    )  # r
    patience: int = option(
        "-p",
        help="const: stop after this many sampled constraints in a row are not "
        "violated by more than epsilon.",
        default=4,
        type=Range(int, 1, expected="-p >= 1 (unviolated draws before stopping)"),
        show_default=True,
    )  # p: const stops after p unviolated draws in a row
    max_iterations: int = shared.max_iterations()
    time_limit: float = shared.time_limit()
    max_idle: int = shared.max_idle(20)  # drop a cut whose α stayed 0 for this many QPs
    kernel: Kernel = shared.kernel(
        ", as in SVMlight; not the sample size, which is --r (-r given with -t 0 "
        "or 2, whose kernels ignore it, gets a warning)"
    )
    seed: int = shared.seed("Seed of the draws: the same seed gives the same model file.")
    probability: bool = shared.probability()
    n_threads: int | None = shared.threads()  # numba threads for the run (None: the caller's)
    cost_factor: float = shared.cost_factor()
    class_weight: ClassWeights | None = shared.class_weight()

    @property
    def problem(self) -> str:
        """The problem it trains (cpsvm.problems): sampled cuts are binary."""
        return "binary"

    def __post_init__(self):
        check_fields(self)

    def validate(self):
        """The one rule between its fields: -j and --class-weight not both (each field's
        range is its declaration's, checked as the Params is made)."""
        shared.class_weights(self)
