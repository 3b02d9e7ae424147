"""How parsing models report themselves: cp_classify's tree per sentence line with the
labelled-bracket precision, recall and F1 and the exact match (evalb's conventions)."""

from __future__ import annotations


class ParsingModels:
    """cp_classify's handler of parsing models (cp_learn --problem cfg): each sentence of
    a bracketed-tree file within --max-length words parsed, one tree a line."""

    model_kinds = ("cfg",)
    settings = ("max_length",)

    @staticmethod
    def read(path, settings):
        from ...io.trees import read_tree_dataset

        return read_tree_dataset(path, settings.max_length or 0)

    @staticmethod
    def load(model):
        pass

    @staticmethod
    def describe(model):
        return (
            f"{model.trained_by} grammar: {model.grammar.size} rules, "
            f"{len(model.grammar.symbols)} symbols"
        )

    @staticmethod
    def classify(model, data, X, settings):
        from ...decoding.trees import format_tree

        if settings.verbosity >= 2:
            skipped = f", {data.n_skipped} longer skipped" if data.n_skipped else ""
            settings.note(f"Reading test examples... {data.n_examples} sentences{skipped}... done.")
        predicted, parsed = model.parse(data.trees, source=data.source)
        lines = [format_tree(t) for t in predicted]
        return lines, lambda out: report_parses(data.trees, predicted, parsed, model, out)


def report_parses(trees, predicted, parsed, model, out):
    """Labelled precision, recall and F1 over the brackets, and the exact-match rate."""
    if not trees:
        return
    precision, recall, f1, matched, n_test, n_gold, exact = bracket_scores(trees, predicted)
    n = len(trees)
    print(
        f"Labelled brackets on test set: precision {precision:.2f}%, recall {recall:.2f}%, "
        f"F1 {f1:.2f}% ({matched} matched, {n_test} predicted, {n_gold} gold)",
        file=out,
    )
    print(f"Exact match on test set: {100.0 * exact / n:.2f}% ({exact} of {n} sentences)", file=out)
    unparsed = parsed.count(False)
    if unparsed:
        print(
            f"Note: {unparsed} sentences the grammar cannot parse got a flat "
            f"'{model.fallback}' tree",
            file=out,
        )


def bracket_scores(trees, predicted):
    """(precision, recall, F1 in percent, matched, predicted and gold brackets, exact
    matches) of the labelled brackets."""
    from ...decoding.trees import bracket_match, brackets

    matched = n_gold = n_test = exact = 0
    for tree, guess in zip(trees, predicted):
        gold = brackets(tree)
        test = brackets(guess)
        m = bracket_match(gold, test)
        g, t = sum(gold.values()), sum(test.values())
        matched, n_gold, n_test = matched + m, n_gold + g, n_test + t
        exact += m == g == t
    precision = 100.0 * matched / n_test if n_test else 0.0
    recall = 100.0 * matched / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1, matched, n_test, n_gold, exact


def cv_figures(model, data, loss_id=None):
    """A held-out fold's labelled-bracket F1, precision and recall (cpsvm.selection)."""
    predicted, _ = model.parse(data.trees)
    precision, recall, f1, *_ = bracket_scores(data.trees, predicted)
    return [("bracket F1", f1, 1), ("precision", precision, 1), ("recall", recall, 1)]
