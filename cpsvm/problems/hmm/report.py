"""How sequence models report themselves: cp_classify's tag per token line and
svm_hmm_classify's figures (numpy imported where used)."""

from __future__ import annotations


class SequenceModels:
    """cp_classify's handler of SVMhmm V3.10 models: the file's sentences tagged by
    Viterbi, one tag a token line, and svm_hmm_classify's figures (losses per sentence
    and per token)."""

    model_kinds = ("hmm",)
    settings = ("beam",)

    @staticmethod
    def load(model):
        pass

    @staticmethod
    def describe(model):
        return (
            f"{model.n_tags} tags, {model.n_features} emission features, transitions "
            f"of order {model.trans_order}, emissions of order {model.emit_order}"
        )

    @staticmethod
    def classify(model, data, X, settings):
        from ...data import SequenceDataset

        seqs = SequenceDataset.from_dataset(data, for_training=False)
        if settings.verbosity >= 2:
            settings.note(
                f"Reading test examples... {seqs.n_sequences} examples, {seqs.n_tokens} "
                f"tokens, {data.n_features} features, {seqs.n_tags} classes... done."
            )
        outside = int(((seqs.tags < 1) | (seqs.tags > model.n_tags)).sum())
        if outside:
            settings.note(
                f"Note: {outside} of {seqs.n_tokens} tokens have targets outside the model's "
                f"tags 1..{model.n_tags} (0: none given); the figures count them as errors"
            )
        tags = model.predict(X, seqs.starts, beam=settings.beam)
        lines = [str(t) for t in tags.tolist()]
        return lines, lambda out: report_sequences(seqs, tags, out)


def report_sequences(seqs, tags, out):
    """svm_hmm_classify's figures: Hamming loss averaged over sentences, the share of
    sentences with an error and the loss per token (the first two as SVMstruct prints
    them, in single precision)."""
    import numpy as np

    from ...decoding.viterbi import hamming_losses

    losses = hamming_losses(seqs.tags, tags, seqs.starts)
    n = len(losses)
    wrong = int(np.count_nonzero(losses))
    average = np.float32(losses.sum() / n)
    error = np.float32(100.0) * np.float32(wrong) / np.float32(n)
    print(f"Average loss on test set: {float(average):.4f}", file=out)
    print(
        f"Zero/one-error on test set: {float(error):.2f}% ({n - wrong} correct, "
        f"{wrong} incorrect, {n} total)",
        file=out,
    )
    print(f"Average loss per token: {losses.sum() / seqs.n_tokens:.4f}", file=out)


def cv_figures(model, data, loss_id=None):
    """A held-out fold's token accuracy in percent (cpsvm.selection)."""
    import numpy as np

    from ...data import SequenceDataset
    from ...models import fit_columns

    seqs = SequenceDataset.from_dataset(data, for_training=False)
    tags = model.predict(fit_columns(data.X, model.n_features), seqs.starts)
    return [("token accuracy", 100.0 * float(np.mean(tags == seqs.tags)), 1)]
