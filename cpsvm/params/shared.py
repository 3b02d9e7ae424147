"""The options every learner has, declared once: -c, --seed, the threads, the time limit,
-#, --max-idle, SVMlight's kernel flags and --margin-bounds. Each learner's Params uses
these factories for its fields, passing its own wording where the tools it follows
differ (what -c means, what the seed draws)."""

from __future__ import annotations

import dataclasses
import math

from ..errors import InputError, OptionError
from ..options import FILE, Choice, Range, ValueType, finite_positive, member, option


def trade_off(help: str, default=dataclasses.MISSING, **settings):
    """-c, the trade-off C (finite, > 0). The conventions differ by the tool each learner
    follows, so ``help`` says which; ``required`` learners refuse a missing -c unless the
    command names what makes it optional (--c-path). How large a finite C the data allow,
    the solvers say (cpsvm.engine.magnitudes)."""
    settings.setdefault("cli_default", None if default is dataclasses.MISSING else default)
    return option("-c", help=help, default=default, type=finite_positive("C"), **settings)


def seed(help: str):
    return option(
        "--seed",
        help=help + " Any integer >= 0.",
        default=0,
        type=Range(int, 0, expected="--seed >= 0"),
        show_default=True,
    )


def threads(*flags, work="the separation oracle"):
    """The threads of the run (None: all cores)."""
    return option(
        *(flags or ("--threads",)),
        help=f"Threads for {work} and for parsing the input file (default: all cores). "
        "Results do not depend on it.",
        default=None,
        type=Range(int, 1, expected="--threads >= 1"),
    )


def max_iterations():
    return option(
        "-#",
        help="Maximum number of iterations.",
        default=100000,
        type=Range(int, 1),
        show_default=True,
    )


def max_idle(default: int):
    return option(
        "--max-idle",
        help="Drop a cut whose dual variable stayed 0 for this many QPs.",
        default=default,
        type=Range(int, 1),
        show_default=True,
    )


def time_limit(flag: str = "--max-time", help: str | None = None):
    """The time limit in seconds of training (--max-time; svmocas's -t); none by default."""
    return option(
        flag,
        help=help or "Stop after this many seconds of training (the model is still written).",
        default=math.inf,
        type=float,
    )


def margin_bounds(default_text: str):
    """``--margin-bounds 0|1``: True, False, or None when not given (the solver's default);
    ``default_text`` says where it is on when not given."""
    return option(
        "--margin-bounds",
        help="1: skip the examples whose loss cannot have changed since the margins were "
        "last sorted (Guillory & Bilmes' bounds on the change of the margin): the "
        "same result, fewer products; 0: compute every margin. " + default_text,
        default=None,
        type=Choice((0, 1), expected="--margin-bounds 0 or 1"),
        convert=lambda value: None if value is None else bool(value),
    )


def linear_kernel():
    from ..kernels import Kernel

    return Kernel()


def kernel(r_note=""):
    """SVMlight's kernel flags -t -d -g -s -r (one definition for every learner, so their
    command lines agree), making the field's Kernel. The Kernel is built when the command
    runs (:func:`kernel_of`), not as the flags are read, so that -h and usage errors do not
    import the kernel code (numba, scipy)."""
    return option(
        default_factory=linear_kernel,
        convert=kernel_of,
        group=(
            member(
                "-t",
                dest="kernel_type",
                type=Choice((0, 1, 2, 3), expected="kernel type 0, 1, 2 or 3"),
                cli_default=0,
                show_default=True,
                help="Kernel: 0 linear, 1 polynomial (s a.b+r)^d, 2 RBF "
                "exp(-g|a-b|^2), 3 sigmoid tanh(s a.b+r).",
            ),
            member(
                "-d",
                dest="degree",
                type=int,
                cli_default=3,
                show_default=True,
                help="Polynomial degree.",
            ),  # fmt: skip
            member(
                "-g",
                dest="gamma",
                type=float,
                cli_default=1.0,
                show_default=True,
                help="RBF gamma.",
            ),  # fmt: skip
            member(
                "-s",
                dest="coef_lin",
                type=float,
                cli_default=1.0,
                show_default=True,
                help="s of the polynomial and sigmoid kernels.",
            ),
            member(
                "-r",
                dest="coef_const",
                type=float,
                cli_default=1.0,
                show_default=True,
                help="r (c) of the polynomial and sigmoid kernels" + r_note + ".",
            ),
        ),
    )


def kernel_of(kernel_type, degree, gamma, coef_lin, coef_const):
    """The Kernel of SVMlight's flags; a value it refuses is a usage error."""
    # Kernel makes the same check, but importing it loads numpy: a usage error is
    # answered without (tests/e2e/test_cli_common.py, FAST_CASES).
    if kernel_type == 2 and not gamma > 0:
        raise OptionError(f"expected an RBF gamma > 0 (-g), got {gamma:g}")
    from ..kernels import Kernel

    try:
        return Kernel(kernel_type, degree, gamma, coef_lin, coef_const)
    except InputError as e:
        raise OptionError(str(e)) from None


def probability():
    """--probability: Platt's sigmoid fitted after training on cross-validated decision
    values (cpsvm.selection.calibration), stored in the model file."""
    return option(
        "--probability",
        help="Also fit Platt's sigmoid P(y=+1|f) = 1/(1+exp(A*f+B)) of the decision value "
        "f on 5-fold cross-validated decision values (folds stratified by class, from "
        "--seed; each fold trained at the same settings), by Lin, Lin and Weng's method "
        "as LIBSVM fits it, and store A and B in MODEL_FILE (cp_classify --probability). "
        "Binary classification only; at least 5 examples, 2 of each class.",
        default=False,
        is_flag=True,
    )


class ClassWeightType(ValueType):
    """``--class-weight``'s values: ``LABEL:W[,LABEL:W...]`` or ``balanced``, made a
    :class:`cpsvm.data.ClassWeights` (loaded when a value is given: -h loads no numpy)."""

    name = "LABEL:W,...|balanced"

    def parse(self, text):
        from ..data import ClassWeights

        return ClassWeights.parse(text)

    def check(self, value, what: str = ""):
        from ..data import ClassWeights

        if not isinstance(value, ClassWeights):
            raise OptionError(
                "expected --class-weight a cpsvm.data.ClassWeights (ClassWeights.parse"
                f"('1:5') or ClassWeights(balanced=True)), got {value!r}"
            )
        return value


def class_weight(classes: str = "the class LABEL"):
    """--class-weight: each class's factor of C (None: none)."""
    return option(
        "--class-weight",
        help=f"Multiply C for the examples of {classes} by W (LIBLINEAR's class weights, "
        "scikit-learn's class_weight); 'balanced': each class by n/(k*n_class), computed on "
        "the data trained (each fold's own in cross-validation). Multiplies the cost: tokens "
        "and a cost file alike; recorded in the model file and the statistics.",
        default=None,
        type=ClassWeightType(),
        metavar="LABEL:W,...",
    )


def cost_factor():
    """-j, SVMlight's cost factor: ``--class-weight 1:W`` (binary problems)."""
    return option(
        "-j",
        help="Cost factor (SVMlight's): training errors on positive examples outweigh "
        "errors on negative ones by this factor, which multiplies their C_i (and cost: "
        "tokens, a cost file) alike: class weight 1:W, the same model. Binary problems only.",
        default=1.0,
        type=Range(float, 0, 1e150, min_open=True, expected="a cost factor 0 < -j <= 1e150"),
        show_default=True,
    )


def class_weights(params):
    """The class weights of a learner's ``params``: its --class-weight, or -j's
    ``1:W`` (None: neither). Both given: OptionError."""
    weights = getattr(params, "class_weight", None)
    factor = getattr(params, "cost_factor", 1.0)
    if factor == 1:
        return weights
    if weights is not None:
        raise OptionError("give -j or --class-weight, not both (-j W is --class-weight 1:W)")
    from ..data import ClassWeights

    return ClassWeights(((1.0, float(factor)),))


def weighed(model, dataset, params, classes=None):
    """``model`` with the class weights of its training (``params``' on ``dataset``, a
    part of a training set of ``classes``) recorded, as its model file says them."""
    weights = class_weights(params)
    if weights is not None:
        model.class_weights = weights.described(dataset.y, classes)
    return model


def training_classes(dataset, params) -> tuple | None:
    """The labels of the whole training set when ``params`` give class weights (a fold's
    part is weighed knowing them: cpsvm.params.resolved.Resolved.classes), else None."""
    if class_weights(params) is None:
        return None
    import numpy as np

    return tuple(float(a) for a in np.unique(dataset.y))


def init_model(help: str):
    """``--init-model FILE``: a model to start training from (a warm start). Its value is
    the model read (cpsvm.models), by the command's reader once the data are read, or
    given as such in Python (an estimator's warm_start); None: a cold start."""
    return option(
        "--init-model",
        help=help,
        default=None,
        dest="init_model_file",
        type=FILE,
        file=True,
    )
