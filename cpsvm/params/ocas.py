"""ocas_learn's parameters (:class:`OcasParams`, the solver cpsvm.solvers.ocas's), each
field with its flag: libocas's svmocas / msvmocas command line."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..conventions import CUT_LAMBDA
from ..engine.solver_table import OCAS_LEARN
from ..errors import InputError
from ..options import FILE, Choice, Range, check_fields, non_negative, option
from . import shared

if TYPE_CHECKING:
    import numpy as np

    from ..data import ClassWeights

PROBLEMS = ("auto", "binary", "multiclass")
METHODS = {i: m.name for i, m in OCAS_LEARN.items()}
LOSSES = ("hinge", "squared-hinge")


@dataclass(frozen=True)
class OcasParams:
    C: float = shared.trade_off(
        "C of 1/2|w|^2 + C*sum(loss_i) (SVMlight's convention; multiclass: Crammer-Singer's).",
        default=1.0,
        show_default=True,
    )
    example_costs: np.ndarray | None = option(
        "-C",
        help="File of per-example C_i, one positive number per line "
        "(overrides -c; binary and multiclass).",
        default=None,
        dest="cost_file",
        type=FILE,
        file=True,
    )
    bias: float = option(
        "-b",
        help="Value of the bias feature appended to every example; 0 = no bias (binary only).",
        default=0.0,
        type=Range(float, -1e150, 1e150, expected="a bias -b of magnitude at most 1e150"),
        show_default=True,
    )
    cost_factor: float = shared.cost_factor()
    method: int | None = option(
        "-m",
        help="0 plain cutting plane (BMRM, as SVMperf), 1 OCAS, 2 dual coordinate descent with "
        "shrinking (LIBLINEAR's -s 3 / -s 4 method), stopped by -a or -r on its duality gap. "
        "Default: 2 for multiclass, and for binary when the mean C_i*|x_i|^2 is at most 3; "
        "else 1 (also with -q or --margin-bounds 1, and on a cluster). The statistics say "
        "which.",
        default=None,
        type=Choice(
            tuple(OCAS_LEARN),
            expected="-m 0 (cutting plane), 1 (OCAS) or 2 (dual coordinate descent)",
        ),
    )  # None: picked (solvers.ocas.choose_method)
    buffer_size: int = option(
        "-s",
        help="Cutting-plane buffer size: cuts kept at most.",
        default=2000,
        type=Range(int, 2, expected="a cut buffer -s >= 2"),
        show_default=True,
    )
    n_threads: int | None = shared.threads("-p", "--threads")  # None: the caller's
    tol_abs: float = option(
        "-a",
        help="TolAbs: stop when Q_P - Q_D <= TolAbs.",
        default=0.0,
        type=non_negative("TolAbs"),
        show_default=True,
    )
    tol_rel: float = option(
        "-r",
        help="TolRel: stop when Q_P - Q_D <= |Q_P|*TolRel.",
        default=0.01,
        type=non_negative("TolRel"),
        show_default=True,
    )
    qp_bound: float = option(
        "-q",
        help="QPBound: stop when Q_P <= QPBound.",
        default=0.0,
        type=float,
        show_default=True,
    )
    time_limit: float = shared.time_limit(
        "-t", "Maximal training time in seconds (reading excluded); default none."
    )
    cut_lambda: float = option(
        "--lambda",
        help="Cut point w_c = (1-lambda)*w_best + lambda*w_t.",
        default=CUT_LAMBDA,
        type=Range(float, 0, 1, min_open=True, expected="0 < lambda <= 1"),
        show_default=True,
    )
    max_iterations: int = shared.max_iterations()
    problem: str = option(
        "--problem",
        help="binary, multiclass or auto (binary if the targets are +-1, multiclass if 1..k).",
        default="auto",
        show_default=True,
    )
    seed: int = shared.seed(
        "Seed of dual coordinate descent's pass orders (-m 2); OCAS is deterministic."
    )
    probability: bool = shared.probability()
    margin_bounds: bool | None = shared.margin_bounds(
        "Binary problems (-m 1); default 0."
    )  # None: the solver's MARGIN_BOUNDS_DEFAULT
    loss: str = option(
        "--loss",
        help="hinge: C_i*max(0, 1 - y_i*w.x_i) (svmocas, LIBLINEAR's -s 3); squared-hinge: "
        "C_i*max(0, 1 - y_i*w.x_i)^2, the L2-loss SVM (LIBLINEAR's -s 1, LinearSVC's "
        "default), binary only, by -m 0, 1 or 2 (default 2).",
        default="hinge",
        type=Choice(LOSSES, expected="--loss hinge or squared-hinge"),
        show_default=True,
    )
    class_weight: ClassWeights | None = shared.class_weight()
    init_model: object | None = shared.init_model(
        "Start from this model's w (a warm start; binary: an SVMlight linear model, with "
        "its threshold b when -b is given; multiclass: an SVMmulticlass model of the same "
        "classes): OCAS's and BMRM's first point and first cut, dual coordinate descent's "
        "alphas from its margins. The stopping rule is unchanged (the gap to the optimum). "
        "With --cv/--c-path it starts each fold's first C."
    )  # a cpsvm.models model, read by the command (None: from w = 0)

    def __post_init__(self):
        check_fields(self)

    def validate(self):
        """The rules between fields (each field's own range is its declaration's, checked
        as the Params is made)."""
        shared.class_weights(self)  # -j and --class-weight: not both
        if self.method == 2 and self.qp_bound > 0:
            raise InputError("-q (QPBound) stops OCAS only: -m 2 stops on -a, -r or -t")
        if self.method == 2 and self.margin_bounds:
            raise InputError("--margin-bounds 1 prunes OCAS's cuts: it cannot be used with -m 2")
        if self.loss == "squared-hinge" and self.margin_bounds:
            raise InputError(
                "--margin-bounds 1 prunes the hinge's cuts: it cannot be used with "
                "--loss squared-hinge"
            )
        # F(w) > 0 for every w (some example has a loss at w = 0, and w ≠ 0 adds ½|w|²):
        # a QPBound ≤ 0 never stops the run.
        if (
            self.tol_abs == 0
            and self.tol_rel == 0
            and self.time_limit == math.inf
            and not self.qp_bound > 0
        ):
            raise InputError("no stopping condition: give -a, -r, -q > 0 or -t")
        # --problem is text on the command line, checked here (a usage error of its own
        # wording, after the other options').
        if self.problem not in PROBLEMS:
            raise InputError(
                f"expected --problem auto, binary or multiclass (OCAS trains "
                f"linear SVMs), got {self.problem!r}"
            )
