"""asset_learn's parameters (:class:`AssetParams`, the solver cpsvm.solvers.asset's), each
field with its flag: Lee & Wright's ASSET with SVMlight's -c, -z, -w and kernel flags."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..engine.solver_table import ASSET_LEARN
from ..errors import OptionError
from ..options import FILE, Choice, Range, ValueType, at_least, check_fields, option
from . import shared

if TYPE_CHECKING:
    from ..data import ClassWeights, Dataset
    from ..kernels import Kernel

APPROXIMATIONS = ("nystrom", "rff", "none")
TASKS = ("classification", "regression")
# The problem (cpsvm.problems) of each task: what judges a fold and a classified file.
TASK_PROBLEMS = {"classification": "binary", "regression": "regression"}
METHODS = tuple(ASSET_LEARN)
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


def _finite_positive(what: str) -> Range:
    """A finite number > 0, worded ``expected <what> > 0`` as ASSET's checks always were."""
    return Range(float, 0, float("inf"), min_open=True, max_open=True, expected=f"{what} > 0")


class AveragingWindow(ValueType):
    """--average-last: a number of iterations >= 0, or 'half'."""

    name = "N|half"

    def parse(self, text):
        if text == HALF:
            return text
        try:
            number = int(text)
        except (TypeError, ValueError):
            number = -1
        if number < 0:
            raise OptionError(f"expected --average-last >= 0 or half, got {text!r}")
        return number

    def check(self, value, what: str = ""):
        if value != HALF and not (isinstance(value, int) and value >= 0):
            raise OptionError(f"expected --average-last >= 0 or half, got {value!r}")
        return value


@dataclass(frozen=True)
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
        type=_finite_positive("lambda"),
    )  # λ directly (exactly one of C and lam)
    task: str = option(
        "-z",
        help="c classification (hinge loss, targets +1/-1), r regression "
        "(epsilon-insensitive loss, real targets).",
        default="classification",
        type=Choice(("c", "r")),
        cli_default="c",
        show_default=True,
        convert={"c": "classification", "r": "regression"},
    )
    tube: float = option(
        "-w",
        help="Regression: width epsilon of the insensitive tube (SVMlight's -w).",
        default=0.1,
        type=Range(float, 0, 1e150, expected="a tube width 0 <= -w <= 1e150"),
        show_default=True,
    )  # ε of the ε-insensitive loss (regression)
    approx: str = option(
        "--approx",
        help="Kernel approximation: nystrom (ASSET_M, any kernel), rff (random Fourier "
        "features, ASSET_F, RBF only), none (the input features, linear kernel "
        "only: with --star, Pegasos).",
        default="nystrom",
        type=Choice(APPROXIMATIONS),
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
        type=Range(float, 0, expected="--eig-threshold >= 0"),
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
        type=Range(float, 0, expected="--memory >= 0"),
        show_default=True,
    )
    tolerance: float = option(
        "--tolerance",
        help="The stopping rule: converged once the objective, measured on at most "
        "5000 training examples spread over the file, fell by less than this "
        "fraction of itself over the last half of the run; 0 runs all --epochs.",
        default=TOLERANCE,
        type=Range(float, 0, 1, max_open=True, expected="0 <= --tolerance < 1"),
        show_default=True,
    )  # the stopping rule's relative fall (0: no rule)
    validation: Dataset | None = option(
        "--validate",
        help="Check the model's error (regression: mean squared error) on this file "
        "ten times per epoch; keep the best.",
        default=None,
        dest="validation_file",
        type=FILE,
        file=True,
    )
    seed: int = shared.seed(
        "Seed of every draw (basis, random features, sampling order): the same "
        "seed gives the same model file at any --threads."
    )
    probability: bool = shared.probability()
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
        type=Choice(METHODS),
        show_default=True,
    )  # sgd: ASSET/ASSET*; gd: gradient descent (Huber)
    loss: str = option(
        "--loss",
        help="Classification loss: hinge, or (with --method gd) the Huber loss of width --h.",
        default="hinge",
        type=Choice(LOSSES),
        show_default=True,
    )  # huber: gd only
    huber_h: float = option(
        "--h",
        help="--loss huber: width h (quadratic for margins within h of 1).",
        default=0.01,
        type=_finite_positive("--h"),
        show_default=True,
    )
    gd_epsilon: float = option(
        "-e",
        help="--method gd: stop when a step lowers the objective by less than this fraction of it.",
        default=1e-4,
        type=_finite_positive("-e"),
        show_default=True,
    )  # gd: stop when the objective drops by less (relative)
    margin_bounds: bool | None = shared.margin_bounds(
        "--approx none only; default 0, except with --method gd on data with at least "
        f"{GD_BOUNDS_MIN_NNZ} non-zeros."
    )  # None: MARGIN_BOUNDS_DEFAULT[method]
    init_model: object | None = shared.init_model(
        "Start ASSET's stochastic subgradient at this model's (gamma, b): a model of its "
        "own kind, an SVMlight linear model (--approx none), a random-features model of the "
        "same map (-g, --k, --seed, the same features), a Nystrom model of the same basis; "
        "not --star (its first step, 1/(lambda*1), scales the start to 0) nor --method gd. "
        "With --cv/--c-path it starts every fold at every C."
    )  # a cpsvm.models model, read by the command (None: from 0)
    cost_factor: float = shared.cost_factor()
    class_weight: ClassWeights | None = shared.class_weight("the class LABEL (+1 or -1)")

    def __post_init__(self):
        check_fields(self)

    def validate(self) -> None:
        """The rules between fields (each field's own range is its declaration's, checked
        as the Params is made)."""
        check_trade_off(self.C, self.lam)
        check_approximation(self.approx, self.kernel.kind)
        if shared.class_weights(self) is not None and self.task != "classification":
            raise OptionError("--class-weight and -j weigh classes: -z c only, not -z r")
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
        check_init_model(self.init_model is not None, self.star, self.method)
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


# The rules between fields that asset_learn's command line applies as it reads its values,
# before the Kernel is built (its import loads numpy): written once, here.


def check_init_model(given: bool, star: bool, method: str) -> None:
    """--init-model starts ASSET's subgradient only (the command line's check before the
    model is read, and the Params')."""
    if given and (star or method == "gd"):
        raise OptionError(
            "--init-model starts ASSET (--method sgd without --star): ASSET*'s first step "
            "scales any start to 0, gradient descent takes none"
        )


def check_trade_off(C, lam) -> None:
    """Exactly one of C and lambda."""
    if (C is None) == (lam is None):
        raise OptionError("expected exactly one of -c (C) and -l (lambda)")


def check_approximation(approx: str, kernel_kind: int) -> None:
    """The approximations' kernels: rff the RBF kernel's, none the linear one's (SVMlight's
    -t 2 and -t 0, cpsvm.kernels' RBF and LINEAR)."""
    if approx == "rff" and kernel_kind != 2:
        raise OptionError(f"--approx rff needs the RBF kernel (-t 2), got -t {kernel_kind}")
    if approx == "none" and kernel_kind != 0:
        raise OptionError(
            "--approx none trains on the input features: it needs the "
            f"linear kernel (-t 0), got -t {kernel_kind}"
        )
