"""Parsing with a context-free grammar as SVMcfg trains it: bracketed trees (Penn Treebank
form), rule counts and span features, CKY as the separation oracle, the bracket or the
zero/one loss; the trees' preprocessing (function tags, -NONE-, unary chains,
binarisation) and the maximum-likelihood PCFG as a baseline.

The entry below is what the toolkit knows of the problem; the numerics are
:mod:`.problem` (on :mod:`cpsvm.decoding.grammar`), the reports :mod:`.report`.
"""

from __future__ import annotations

from ...conventions import MARGIN_RESCALING
from ...errors import InputError, OptionError
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
from .report import ParsingModels, cv_figures

OPTIONS = (
    ProblemOption(
        "--max-length",
        "max_length",
        type=Range(int, 0),
        default=0,
        what="longest sentence to train on",
        help="train on only the sentences of at most N words (-NONE- elements not counted); "
        "0 = all (default).",
    ),
    ProblemOption(
        "--markov",
        "markov",
        type=Range(int, -1),
        default=0,
        metavar="H",
        what="horizontal Markov order",
        help="horizontal Markov order of the binarisation: an intermediate label keeps the "
        "last H siblings (default 0; -1 all of them).",
    ),
    ProblemOption(
        "--unary",
        "unary",
        type=Range(int, 0),
        default=0,
        metavar="U",
        what="unary chains",
        help="unary chains: 0 joins each chain into one label such as S+VP (default); U >= 1 "
        "keeps up to U unary rules on top of each other (a longer chain has its top labels "
        "joined).",
    ),
    ProblemOption(
        "--keep-functions",
        "keep_functions",
        kind="flag",
        default=False,
        help="keep function tags and indices in the labels (NP-SBJ-1); by default they are "
        "stripped (NP).",
    ),
    ProblemOption(
        "--keep-none",
        "keep_none",
        kind="flag",
        default=False,
        help="keep the -NONE- elements (empty categories) as tags of the sentence; by default "
        "they and the constituents they leave empty are dropped.",
    ),
    ProblemOption(
        "--features",
        "features",
        kind="text",
        default="spans",
        metavar="SET",
        help="the joint feature map: spans (default) counts the rules and, for each "
        "constituent, its label with the tags and words at its ends, the tags beside them "
        "and its length; rules counts the rules only (SVMcfg's); or span templates joined by "
        "',' (see man cp_learn, PARSING).",
    ),
    ProblemOption(
        "--baseline",
        "baseline",
        type=Choice(("pcfg",)),
        default=None,
        metavar="pcfg",
        what="a model made without training",
        help="write the maximum-likelihood PCFG of the training trees (log-probabilities as "
        "rule weights) instead of training; cp_classify parses with it by the same CKY.",
        trains_nothing=True,
    ),
)

CLASSIFY_OPTIONS = (
    ClassifyOption(
        "max_length",
        member(
            "--max-length",
            type=Range(int, 0),
            cli_default=None,
            help="cfg: parse only the sentences of at most N words (-NONE- elements not "
            "counted); 0 = all (default).",
        ),
        refused_elsewhere=True,
    ),
)


def tree_options(options):
    """The trees' preprocessing (and feature set) of the problem's options."""
    from ...decoding.trees import TreeOptions

    return TreeOptions(
        strip_functions=not options["keep_functions"],
        drop_none=not options["keep_none"],
        unary=options["unary"],
        markov=options["markov"],
        features=options["features"],
    )


def check_trees(dataset):
    """Parse trees (a :class:`cpsvm.data.TreeDataset`) with at least one tree."""
    if not hasattr(dataset, "trees"):
        raise InputError(
            "expected bracketed parse trees ('( (S ...) )', Penn Treebank format) for the cfg "
            "problem",
            source=getattr(dataset, "source", None),
        )
    if not dataset.trees:
        raise InputError("expected at least one tree (within --max-length)", source=dataset.source)


class CfgCommandLine(CommandLine):
    summary = "parsing bracketed trees"
    tool = "SVMcfg"
    options = OPTIONS
    losses = (1, 0)
    loss_help = (
        "cfg: 1 100*(wrong brackets)/(2*gold brackets) (default; with -o 1 the default "
        "is 0), 0 100 per wrong tree."
    )
    detect_help = "cfg for bracketed trees: a .mrg file or one starting with '('"

    def check_options(self, options):
        from ...decoding.grammar import span_templates

        try:
            span_templates(options["features"])
        except ValueError as e:
            raise OptionError(f"--features: {e}") from None


class CfgReading(Reading):
    def sniff(self, path) -> bool:
        """Bracketed trees: a .mrg file, or one whose first character is '('."""
        from ...io.trees import looks_like_trees

        return looks_like_trees(path)

    def detect(self, dataset) -> bool:
        """A dataset of trees (read by :meth:`read`)."""
        return hasattr(dataset, "trees")

    def read(self, path, options):
        from ...io.trees import read_tree_dataset

        return read_tree_dataset(path, options["max_length"] or 0)

    def check_labels(self, dataset):
        check_trees(dataset)

    def examples(self, dataset):
        skipped = f", {dataset.n_skipped} longer ones skipped" if dataset.n_skipped else ""
        return f"{dataset.n_examples} examples (trees{skipped})"


class CfgTraining(Training):
    default_algorithm = 4

    def check_run(self, params, loss_id, options, notes):
        """The bracket loss is a CKY only with margin rescaling: with slack rescaling the
        default loss is zero/one, and -l 1 is refused."""
        if loss_id == 1 and params.rescaling != MARGIN_RESCALING:
            if params.loss_id is not None:
                raise OptionError(
                    "the bracket loss (-l 1) of the cfg problem needs margin rescaling (-o 2): "
                    "with slack rescaling its argmax is no CKY"
                )
            return 0
        return loss_id

    def build(self, dataset, loss_id, options):
        from .problem import CfgProblem

        return CfgProblem.from_dataset(dataset, loss_id=loss_id, options=tree_options(options))

    def baseline(self, dataset, options):
        """--baseline pcfg: the maximum-likelihood PCFG of the trees (rules only), and the
        lines saying what it is."""
        from dataclasses import replace

        from .problem import CfgProblem

        if options["features"] != "spans":
            raise OptionError("--features: the PCFG baseline (--baseline pcfg) has the rules only")
        check_trees(dataset)
        problem = CfgProblem(
            dataset.trees, options=replace(tree_options(options), features="rules")
        )
        grammar = problem.grammar
        return problem.pcfg_model(), [
            f"Problem: cfg, maximum-likelihood PCFG of {problem.n_examples} trees: "
            f"{grammar.size} rules, {len(grammar.symbols)} symbols"
        ]


class CfgReports(Reports):
    def work_lines(self, info):
        r = info.result
        share = 100 * r.seconds_oracle / max(r.seconds_total, 1e-12)
        return [
            f"CKY parses (oracle calls): {r.oracle_calls}, {share:.1f}% of the time in the oracle"
        ]


class CfgSelection(Selection):
    def cv_measure(self, model, dataset, loss_id):
        return cv_figures(model, dataset, loss_id)


class CfgEstimators(Estimators):
    def predict(self, model, dataset, options, n_threads=None):
        """The parse tree of each sentence."""
        return model.parse(
            dataset.trees, n_threads=n_threads, source=getattr(dataset, "source", None)
        )[0]


ENTRY = ProblemEntry(
    "cfg",
    command_line=CfgCommandLine(),
    reading=CfgReading(),
    training=CfgTraining(),
    reports=CfgReports(),
    selection=CfgSelection(),
    classifying=Classifying(ParsingModels, CLASSIFY_OPTIONS),
    estimators=CfgEstimators(),
)
