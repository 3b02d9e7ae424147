"""Binary classification as SVMperf trains it: targets ±1, the error rate or one of
SVMperf's multivariate losses (F1, PRBEP, Prec@k, Rec@k, ROC area, zero/one over the label
vector), a bias feature, exact kernels or a Nyström basis (``--t 1``).

The entry below is what the toolkit knows of the problem; the numerics are
:mod:`.problem` (the per-example loss) and :mod:`.multivariate` (the losses over the whole
label vector), the reports :mod:`.report`.
"""

from __future__ import annotations

from ...conventions import (
    MARGIN_RESCALING,
    PERF_ERROR_RATE,
    PERF_LOSS_NAMES,
    PERF_MULTIVARIATE_LOSSES,
    perf_from_c_light,
)
from ...errors import OptionError
from ...options import Choice, Range, member
from ..entry import (
    Classifying,
    ClassifyOption,
    CommandLine,
    Estimators,
    ProblemEntry,
    ProblemOption,
    Reading,
    Reports,
    Selection,
    Training,
)
from ..labels import check_binary_labels
from .report import BinaryModels, cv_figures, multivariate_scale_line, svmlight_scale_line

OPTIONS = (
    ProblemOption(
        "--b",
        "bias",
        type=float,
        default=None,
        metavar="VALUE",
        what="value of the bias feature",
        help="value of the bias feature; 0 = no bias. Linear kernel only: default 1 with -t "
        "0, none with a kernel (as SVMperf, which has no bias in its kernel expansion and "
        "refuses --b other than 0 with -t 1..3).",
    ),
    ProblemOption(
        "--t",
        "basis_method",
        type=Choice((0, 1)),
        default=0,
        what="kernel approximation",
        help="kernel approximation, 0 exact kernel expansion (default), 1 random basis of "
        "--k examples (Nyström, SVMperf's CPNY), trained linearly.",
    ),
    ProblemOption(
        "--k",
        "basis_size",
        type=Range(int, 1),
        default=500,
        what="basis functions for --t 1",
        help="number of basis functions for --t 1 (default 500).",
    ),
    ProblemOption(
        "--f",
        "basis_data",
        kind="examples",
        metavar="FILE",
        help="file of candidate basis vectors for --t 1 (default: the training set).",
    ),
    ProblemOption(
        "--p",
        "k_fraction",
        # k = --p x positives stays an integer of the oracle's (int64)
        type=Range(float, 0, 1e9),
        default=0.0,
        metavar="FRACTION",
        what="k of Prec@k and Rec@k over the positives",
        help="-l 4 and -l 5: k of Prec@k and Rec@k as a fraction of the positive training "
        "examples; 0 (default) means 0.5 for Prec@k, 2 for Rec@k. Prec@k needs --p <= 1, "
        "Rec@k --p >= 1.",
    ),
)

# cp_classify's options for binary models.
CLASSIFY_OPTIONS = (
    ClassifyOption(
        "pred_format",
        member(
            "-f",
            type=Range(int, 0, 1),
            cli_default=1,
            show_default=True,
            help="Output format for binary models: 1 decision value per line; 0 "
            "SVMlight V1.0's pairs of value:class, the predicted class first "
            "(see the man page).",
        ),
    ),
    ClassifyOption(
        "perf_measures",
        member(
            "--perf-measures",
            is_flag=True,
            help="Binary models: also print svm_perf_classify's figures (Accuracy, "
            "Precision, Recall, F1, PRBEP, ROCArea, AvgPrec; ties in the ranking "
            "broken pessimistically), in its format.",
        ),
        refused_elsewhere=True,
    ),
)


def decomposes(loss_id: int) -> bool:
    """The error rate is a sum over the examples; SVMperf's other losses are not."""
    return loss_id not in PERF_MULTIVARIATE_LOSSES


class BinaryCommandLine(CommandLine):
    tool = "SVMperf"
    options = OPTIONS
    losses = (PERF_ERROR_RATE, 0, 1, 3, 4, 5, 10)
    loss_help = (
        "Binary, SVMperf's: 2 error rate (default), 0 zero/one over the whole label "
        "vector, 1 F1, 3 PRBEP, 4 Prec@k, 5 Rec@k (k from --p), 10 ROC area; each 100 minus "
        "the measure in percent (zero/one: 1)."
    )
    c_help = "Binary: SVMperf's convention, C_light = C*100/n."
    detect_help = "binary if the targets are +-1"


class BinaryReading(Reading):
    def check_labels(self, dataset):
        check_binary_labels(dataset)


class BinaryTraining(Training):
    default_algorithm = 3
    line_search = True
    coordinate_descent = True
    kernels = True
    on_features = True
    class_weights = True

    def check_run(self, params, loss_id, options, notes):
        """SVMperf's own refusals for its losses and its bias, before any data is read."""
        k_fraction = options["k_fraction"]
        if loss_id == 4 and k_fraction > 1:
            raise OptionError(
                f"expected --p <= 1 for Prec@k (-l 4): k is that fraction of the positives, "
                f"got {k_fraction:g}"
            )
        if loss_id == 5 and 0 < k_fraction < 1:
            raise OptionError(
                f"expected --p >= 1 (or 0) for Rec@k (-l 5): k is that fraction of the "
                f"positives, got {k_fraction:g}"
            )
        if k_fraction and loss_id not in (4, 5):
            notes.append(
                f"--p is used by -l 4 (Prec@k) and -l 5 (Rec@k) only; ignored with -l {loss_id}"
            )
        if loss_id == 10 and params.rescaling != MARGIN_RESCALING:
            raise OptionError(
                "ROC area (-l 10) is trained with margin rescaling only (-o 2), as in SVMperf"
            )
        if loss_id == 10 and options["bias"]:
            notes.append(
                f"--b {options['bias']:g} ignored: ROC area (-l 10) is blind to a bias, the "
                "model's threshold is 0"
            )
        kernel = params.kernel
        if options["bias"] and not kernel.is_linear:
            # SVMperf refuses it too: its kernel expansion has no bias term.
            raise OptionError(
                f"--b {options['bias']:g} needs the linear kernel: with -t {kernel.kind} "
                "there is no bias (give --b 0 or leave it)"
            )
        if not decomposes(loss_id) and not kernel.is_linear and options["basis_method"] == 0:
            raise OptionError(
                f"-l {loss_id} ({PERF_LOSS_NAMES[loss_id]}) trains linear models: with a "
                "kernel use its Nyström basis (--t 1 --k K)"
            )
        return loss_id

    def build_on(self, X, y, loss_id, options, bias):
        """The problem on the features X (the file's, or their Nyström map) with the bias
        feature ``bias`` (0 for none)."""
        if decomposes(loss_id):
            from .problem import BinaryProblem

            return BinaryProblem(X, y, bias=bias)
        from .multivariate import MultivariateProblem

        return MultivariateProblem(X, y, loss_id, bias=bias, k_fraction=options["k_fraction"])

    def decomposes(self, loss_id):
        return decomposes(loss_id)


class BinaryReports(Reports):
    def scale_lines(self, info, params):
        r = info.result
        if info.loss_id != PERF_ERROR_RATE:
            return [multivariate_scale_line(params.C, info.loss_id, info.class_counts, r.primal)]
        return [svmlight_scale_line(params.C, info.n_examples, r.primal)]


class BinarySelection(Selection):
    def cv_measure(self, model, dataset, loss_id):
        return cv_figures(model, dataset, loss_id)

    def cv_units(self, dataset):
        """Folds stratified by the ±1 target (real targets: not stratified)."""
        import numpy as np

        y = dataset.y
        return None, (np.sign(y) if np.all(np.abs(y) == 1) else None)


class BinaryEstimators(Estimators):
    decision_rows = True

    def c_of_sum(self, C, n):
        return perf_from_c_light(C, n)

    def classes(self, labels):
        import numpy as np

        return np.array([-1.0, 1.0])


ENTRY = ProblemEntry(
    "binary",
    learners=("cp_learn", "ocas_learn", "sampled_learn", "asset_learn"),
    structured=False,
    command_line=BinaryCommandLine(),
    reading=BinaryReading(),
    training=BinaryTraining(),
    reports=BinaryReports(),
    selection=BinarySelection(),
    classifying=Classifying(BinaryModels, CLASSIFY_OPTIONS),
    estimators=BinaryEstimators(),
)
