"""asset_learn's parameters (:class:`AssetParams`, the solver cpsvm.solvers.asset's), each
field with its flag: Lee & Wright's ASSET with SVMlight's -c, -z, -w and kernel flags."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from ..errors import OptionError
from ..options import Checked, FilePath, at_least, option, positive
from . import shared

if TYPE_CHECKING:
    from ..data import Dataset
    from ..kernels import Kernel

APPROXIMATIONS = ("nystrom", "rff", "none")
TASKS = ("classification", "regression")
# The problem (cpsvm.problems) of each task: what judges a fold and a classified file.
TASK_PROBLEMS = {"classification": "binary", "regression": "regression"}
METHODS = ("sgd", "gd")
LOSSES = ("hinge", "huber")
# --margin-bounds when not given (benchmarks/bench_margin_bounds.py, man page DEFAULTS;
# --approx none only): off for sgd (the refresh pass costs about what the skipped
# products save); on for gd from GD_BOUNDS_MIN_NNZ non-zeros (below, a pruned
# evaluation's fixed cost is that of a plain one).
MARGIN_BOUNDS_DEFAULT = {"sgd": False, "gd": True}
GD_BOUNDS_MIN_NNZ = 200_000
HALF = "half"  # --average-last half: the last half of the iterations so far
# The stopping rule's defaults (man page DEFAULTS; benchmarks/bench_asset.py part 6): at
# most 64 epochs; converged when the objective, measured on at most OBJECTIVE_SAMPLE
# training examples spread evenly over the file, fell by less than 1% over the last half,
# never before MIN_EPOCHS (the early averages' objective is noisy at the 1% level).
EPOCHS = 64
TOLERANCE = 0.01
OBJECTIVE_SAMPLE = 5000
MIN_EPOCHS = 10
BASIS_SIZE = 512  # --k when not given (the paper's setting for ADULT)


class AveragingWindow(click.ParamType):
    """--average-last: a number of iterations >= 0, or 'half'."""

    name = "N|half"

    def convert(self, value, param, ctx):
        if value == HALF:
            return value
        try:
            number = int(value)
        except (TypeError, ValueError):
            number = -1
        if number < 0:
            self.fail(f"expected --average-last >= 0 or half, got {value!r}", param, ctx)
        return number


def read_validation(path, data):
    """--validate FILE: its examples in the training data's columns."""
    from ..io.svmlight import read_examples

    validation = read_examples(path, training=False)
    return validation.onto_columns_of(data) if data.feature_ids is not None else validation


@dataclass
class AssetParams:
    C: float | None = shared.trade_off(
        "Trade-off C in SVMlight's convention, 1/2|w|^2 + C*sum(loss): "
        "lambda = 1/(C*m). Exactly one of -c and -l.",
        default=None,
    )  # SVMlight's C; λ = 1/(C·m)
    lam: float | None = option(
        "-l",
        help="lambda of lambda/2|gamma|^2 + (1/m)*sum(loss) (ASSET's convention). "
        "Exactly one of -c and -l.",
        default=None,
        type=positive("lambda"),
    )  # λ directly (exactly one of C and lam)
    task: str = option(
        "-z",
        help="c classification (hinge loss, targets +1/-1), r regression "
        "(epsilon-insensitive loss, real targets).",
        default="classification",
        type=click.Choice(["c", "r"]),
        cli_default="c",
        show_default=True,
        convert={"c": "classification", "r": "regression"}.get,
    )
    tube: float = option(
        "-w",
        help="Regression: width epsilon of the insensitive tube (SVMlight's -w).",
        default=0.1,
        type=Checked(float, lambda v: v >= 0, "a tube width -w >= 0"),
        show_default=True,
    )  # ε of the ε-insensitive loss (regression)
    approx: str = option(
        "--approx",
        help="Kernel approximation: nystrom (ASSET_M, any kernel), rff (random Fourier "
        "features, ASSET_F, RBF only), none (the input features, linear kernel "
        "only: with --star, Pegasos).",
        default="nystrom",
        type=click.Choice(APPROXIMATIONS),
        show_default=True,
    )
    basis_size: int = option(
        "--k",
        help="nystrom: number s of sampled basis examples (default: min(512, the number "
        "of training examples); more is capped to it); rff: number D of random features "
        "(default 512).",
        default=None,
        type=at_least(1, "--k"),
    )  # s (Nyström) or D (random features); None: BASIS_SIZE (Nyström: at most m)
    eig_threshold: float = option(
        "--eig-threshold",
        help="nystrom: keep the eigenvalues of the basis kernel matrix above this "
        "(the paper's epsilon_d); D is how many.",
        default=1e-16,
        type=Checked(float, lambda v: v >= 0, "--eig-threshold >= 0"),
        show_default=True,
    )  # ε_d
    kernel: Kernel = shared.kernel()
    star: bool = option(
        "--star",
        help="ASSET*: step 1/(lambda*j), no intercept, the last iterate (no averaging).",
        default=False,
        is_flag=True,
    )  # ASSET*: η = 1/(λj), no intercept, no averaging
    batch: int = option(
        "-k",
        help="Mini-batch size: examples per subgradient step.",
        default=1,
        type=at_least(1, "-k"),
        show_default=True,
    )
    epochs: int = option(
        "--epochs",
        help="Cap on the passes over the training set: the run stops earlier once "
        "converged (--tolerance; DEFAULTS in the man page).",
        default=EPOCHS,
        type=at_least(1, "--epochs"),
        show_default=True,
    )  # the cap on passes over the data
    average_last: int | str | None = option(
        "--average-last",
        help="ASSET: the model is the step-weighted average of the iterates of the "
        "last N iterations before each check; 0 averages from the first "
        "iteration on; half (the default) the last half of the iterations so "
        "far (50-60%).",
        default=None,
        type=AveragingWindow(),
    )  # ASSET: average the last N iterates (0: all; HALF, or None: the last half so far)
    dg_samples: int = option(
        "--dg-samples",
        help="ASSET: examples M sampled to estimate D_G for the step size.",
        default=1000,
        type=at_least(1, "--dg-samples"),
        show_default=True,
    )  # M, examples estimating D_G
    memory_mb: float = option(
        "--memory",
        help="MB for the approximation's rows: they are kept after the first epoch "
        "when m*D*8 bytes fit, else computed again each epoch.",
        default=1024.0,
        type=Checked(float, lambda v: v >= 0, "--memory >= 0"),
        show_default=True,
    )
    tolerance: float = option(
        "--tolerance",
        help="The stopping rule: converged once the objective, measured on at most "
        "5000 training examples spread over the file, fell by less than this "
        "fraction of itself over the last half of the run; 0 runs all --epochs.",
        default=TOLERANCE,
        type=Checked(float, lambda v: 0 <= v < 1, "0 <= --tolerance < 1"),
        show_default=True,
    )  # the stopping rule's relative fall (0: no rule)
    validation: Dataset | None = option(
        "--validate",
        help="Check the model's error (regression: mean squared error) on this file "
        "ten times per epoch; keep the best.",
        default=None,
        dest="validation_file",
        type=FilePath(),
        read=read_validation,
    )
    seed: int = shared.seed(
        "Seed of every draw (basis, random features, sampling order): the same "
        "seed gives the same model file at any --threads."
    )
    n_threads: int | None = shared.threads(
        work="the approximation's rows and the validation checks"
    )
    method: str = option(
        "--method",
        help="sgd: ASSET/ASSET* (stochastic subgradient); gd: gradient descent on "
        "the Huber loss with an intercept (needs --approx none --loss huber): "
        "step 100, halved whenever the objective would increase, until it "
        "drops by less than -e relative.",
        default="sgd",
        type=click.Choice(METHODS),
        show_default=True,
    )  # sgd: ASSET/ASSET*; gd: gradient descent (Huber)
    loss: str = option(
        "--loss",
        help="Classification loss: hinge, or (with --method gd) the Huber loss of width --h.",
        default="hinge",
        type=click.Choice(LOSSES),
        show_default=True,
    )  # huber: gd only
    huber_h: float = option(
        "--h",
        help="--loss huber: width h (quadratic for margins within h of 1).",
        default=0.01,
        type=positive("--h"),
        show_default=True,
    )
    gd_epsilon: float = option(
        "-e",
        help="--method gd: stop when a step lowers the objective by less than this fraction of it.",
        default=1e-4,
        type=positive("-e"),
        show_default=True,
    )  # gd: stop when the objective drops by less (relative)
    margin_bounds: bool | None = shared.margin_bounds(
        "--approx none only; default 0, except with --method gd on data with at least "
        f"{GD_BOUNDS_MIN_NNZ} non-zeros."
    )  # None: MARGIN_BOUNDS_DEFAULT[method]

    def validate(self) -> None:
        from ..kernels import LINEAR, RBF

        if (self.C is None) == (self.lam is None):
            raise OptionError("expected exactly one of -c (C) and -l (lambda)")
        for name, value in (("C", self.C), ("lambda", self.lam)):
            if value is not None and not (value > 0 and math.isfinite(value)):
                raise OptionError(f"expected {name} > 0, got {value:g}")
        if self.approx not in APPROXIMATIONS:
            raise OptionError(f"expected --approx nystrom, rff or none, got {self.approx!r}")
        if self.task not in TASKS:
            raise OptionError(f"expected task classification or regression, got {self.task!r}")
        if self.approx == "rff" and self.kernel.kind != RBF:
            raise OptionError(
                f"--approx rff needs the RBF kernel (-t 2), got -t {self.kernel.kind}"
            )
        if self.approx == "none" and self.kernel.kind != LINEAR:
            raise OptionError(
                "--approx none trains on the input features: it needs the "
                f"linear kernel (-t 0), got -t {self.kernel.kind}"
            )
        checks = [
            ("--k", BASIS_SIZE if self.basis_size is None else self.basis_size, 1),
            ("-k", self.batch, 1),
            ("--epochs", self.epochs, 1),
            ("--dg-samples", self.dg_samples, 1),
        ]
        if self.average_last != HALF:
            checks.append(("--average-last", self.average_last or 0, 0))
        for name, value, least in checks:
            if value < least:
                raise OptionError(f"expected {name} >= {least}, got {value}")
        if not 0 <= self.tolerance < 1:
            raise OptionError(f"expected 0 <= --tolerance < 1, got {self.tolerance:g}")
        if not self.tube >= 0:
            raise OptionError(f"expected a tube width -w >= 0, got {self.tube:g}")
        if not self.eig_threshold >= 0:
            raise OptionError(f"expected --eig-threshold >= 0, got {self.eig_threshold:g}")
        if not self.memory_mb >= 0:
            raise OptionError(f"expected --memory >= 0, got {self.memory_mb:g}")
        if self.method not in METHODS:
            raise OptionError(f"expected --method sgd or gd, got {self.method!r}")
        if self.loss not in LOSSES:
            raise OptionError(f"expected --loss hinge or huber, got {self.loss!r}")
        if self.method == "gd":
            if (
                self.approx != "none"
                or self.task != "classification"
                or self.star
                or self.loss != "huber"
                or self.validation is not None
            ):
                raise OptionError(
                    "--method gd trains a linear classifier with the Huber "
                    "loss: it needs --approx none --loss huber, and takes "
                    "neither -z r, --star nor --validate"
                )
        elif self.loss != "hinge":
            raise OptionError("--loss huber needs --method gd (--approx none)")
        if not (self.huber_h > 0 and math.isfinite(self.huber_h)):
            raise OptionError(f"expected --h > 0, got {self.huber_h:g}")
        if not (self.gd_epsilon > 0 and math.isfinite(self.gd_epsilon)):
            raise OptionError(f"expected -e > 0, got {self.gd_epsilon:g}")
        if self.margin_bounds and self.approx != "none":
            raise OptionError("--margin-bounds 1 needs --approx none (the input features)")

    def bounds(self, nnz: int) -> bool:
        """Whether a run on examples with ``nnz`` non-zeros uses margin-change bounds."""
        if self.approx != "none":
            return False
        if self.margin_bounds is None:
            return MARGIN_BOUNDS_DEFAULT[self.method] and (
                self.method != "gd" or nnz >= GD_BOUNDS_MIN_NNZ
            )
        return self.margin_bounds

    def lambda_for(self, m: int) -> float:
        return self.lam if self.lam is not None else 1.0 / (self.C * m)

    @property
    def problem(self) -> str:
        """The problem of the task (cpsvm.problems): binary, or regression for -z r."""
        return TASK_PROBLEMS[self.task]
