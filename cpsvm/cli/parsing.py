"""The cfg (parsing) parts of cp_learn and cp_classify: the tree options, reading
bracketed trees, the PCFG baseline, and parsing a test file with its PARSEVAL figures.

Kept apart from learn.py and classify.py so that those stay about every problem.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

import click

from ..errors import OptionError
from .common import note

_TREE_OPTIONS = ("markov", "unary", "keep_functions", "keep_none", "features")


def c_unless_baseline(ctx, param, value):
    """cp_learn's -c is required, except with --baseline (given on the command line, it
    is processed before a missing -c)."""
    if value is None and not ctx.params.get("baseline") and not ctx.resilient_parsing:
        raise click.MissingParameter(ctx=ctx, param=param)
    return value


def max_length_option(what):
    return click.option(
        "--max-length",
        "max_length",
        type=click.IntRange(min=0),
        default=None,
        help=f"cfg: {what} only the sentences of at most N words (-NONE- "
        "elements not counted); 0 = all (default).",
    )


def tree_options():
    """cp_learn's options of the cfg problem (bracketed trees)."""
    options = [
        max_length_option("train on"),
        click.option(
            "--markov",
            type=click.IntRange(min=-1),
            default=None,
            metavar="H",
            help="cfg: horizontal Markov order of the binarisation: an "
            "intermediate label keeps the last H siblings (default 0; -1 "
            "all of them).",
        ),
        click.option(
            "--unary",
            type=click.IntRange(min=0),
            default=None,
            metavar="U",
            help="cfg: unary chains: 0 joins each chain into one label such as "
            "S+VP (default); U >= 1 keeps up to U unary rules on top of each "
            "other (a longer chain has its top labels joined).",
        ),
        click.option(
            "--keep-functions",
            "keep_functions",
            is_flag=True,
            default=None,
            help="cfg: keep function tags and indices in the labels (NP-SBJ-1); "
            "by default they are stripped (NP).",
        ),
        click.option(
            "--keep-none",
            "keep_none",
            is_flag=True,
            default=None,
            help="cfg: keep the -NONE- elements (empty categories) as tags of "
            "the sentence; by default they and the constituents they leave "
            "empty are dropped.",
        ),
        click.option(
            "--features",
            default=None,
            metavar="SET",
            help="cfg: the joint feature map: spans (default) counts the rules "
            "and, for each constituent, its label with the tags and words at "
            "its ends, the tags beside them and its length; rules counts the "
            "rules only (SVMcfg's); or span templates joined by ',' (see man "
            "cp_learn, PARSING).",
        ),
        click.option(
            "--baseline",
            type=click.Choice(["pcfg"]),
            default=None,
            help="cfg: write the maximum-likelihood PCFG of the training trees "
            "(log-probabilities as rule weights) instead of training; "
            "cp_classify parses with it by the same CKY.",
        ),
    ]

    def decorate(command):
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def wants_trees(problem: str, example_file) -> bool:
    """The cfg problem: named, or auto on a bracketed-tree file (.mrg, or a first '(')."""
    if problem == "cfg":
        return True
    if problem != "auto":
        return False
    from ..io.trees import looks_like_trees

    return looks_like_trees(example_file)


def _given(cfg) -> list:
    return [
        "--" + name.replace("_", "-")
        for name in _TREE_OPTIONS + ("max_length", "baseline")
        if cfg.get(name) is not None
    ]


def tree_preprocessing(cfg):
    from ..decoding.grammar import span_templates
    from ..io.trees import TreeOptions

    default = TreeOptions()
    features = default.features if cfg.get("features") is None else cfg["features"]
    try:
        span_templates(features)
    except ValueError as e:
        raise OptionError(f"--features: {e}") from None
    return TreeOptions(
        strip_functions=not cfg.get("keep_functions"),
        drop_none=not cfg.get("keep_none"),
        unary=default.unary if cfg.get("unary") is None else cfg["unary"],
        markov=default.markov if cfg.get("markov") is None else cfg["markov"],
        features=features,
    )


def read_examples(example_file, params, cfg):
    """cp_learn's training data: trees for cfg (params then name it and carry the
    preprocessing), else the SVMlight file; a cfg option for another problem is a
    usage error."""
    if wants_trees(params.problem, example_file):
        from ..data import TreeDataset

        params.problem = "cfg"
        params.tree_options = tree_preprocessing(cfg)
        return TreeDataset.read(example_file, cfg.get("max_length") or 0)
    given = _given(cfg)
    if given:
        raise OptionError(
            f"{', '.join(given)}: options of the cfg problem (bracketed "
            "trees); this input is not one"
        )
    from ..io.svmlight import read_svmlight

    return read_svmlight(example_file)


def describe(data) -> str:
    skipped = f", {data.n_skipped} longer ones skipped" if data.n_skipped else ""
    return f"{data.n_examples} examples (trees{skipped})"


def learn_baseline(params, custom, cfg, example_file, model_file, verbosity):
    """``cp_learn --baseline pcfg``: the maximum-likelihood PCFG, written as a model."""
    from ..io.model_file import write_model
    from ..problems.cfg import CfgProblem

    given = [flag for flag, value in custom.items() if value is not None]
    if given:
        raise OptionError(f"{', '.join(given)}: not an option of the cfg problem")
    if params.problem not in ("auto", "cfg"):
        raise OptionError(f"--baseline pcfg is for the cfg problem, not {params.problem}")
    if cfg.get("features") is not None:
        raise OptionError("--features: the PCFG baseline (--baseline pcfg) has the rules only")
    params.problem = "cfg"
    data = read_examples(example_file, params, cfg)
    if not data.trees:
        from ..errors import InputError

        raise InputError("expected at least one tree (within --max-length)", source=data.source)
    started = time.process_time()
    problem = CfgProblem(data.trees, options=replace(params.tree_options, features="rules"))
    model = problem.pcfg_model()
    write_model(model_file, model)
    if verbosity >= 1:
        out = sys.stderr if model_file == "-" else sys.stdout
        print(f"Reading training examples...done ({describe(data)})", file=out)
        print(
            f"Problem: cfg, maximum-likelihood PCFG of {problem.n_examples} trees: "
            f"{problem.grammar.size} rules, {len(problem.grammar.symbols)} symbols",
            file=out,
        )
        print(f"Runtime in cpu-seconds: {time.process_time() - started:.2f}", file=out)


def statistics_line(info) -> str | None:
    if info.problem != "cfg":
        return None
    r = info.result
    share = 100 * r.seconds_oracle / max(r.seconds_total, 1e-12)
    return f"CKY parses (oracle calls): {r.oracle_calls}, {share:.1f}% of the time in the oracle"


# -- cp_classify ------------------------------------------------------------------------


def classify_trees(model, example_file, output_file, max_length, verbosity, report):
    """Parse each sentence of a bracketed-tree file within ``max_length`` words, write one
    tree a line, print labelled precision, recall, F1 and exact match."""
    from ..data import TreeDataset
    from ..io.atomic import atomic_output
    from ..io.trees import bracket_match, brackets, format_tree

    data = TreeDataset.read(example_file, max_length or 0)
    if verbosity >= 2:
        note(
            f"Reading model...OK. ({model.trained_by} grammar: {model.grammar.size} rules, "
            f"{len(model.grammar.symbols)} symbols)"
        )
        skipped = f", {data.n_skipped} longer skipped" if data.n_skipped else ""
        note(f"Reading test examples... {data.n_examples} sentences{skipped}... done.")
    started = time.process_time()
    predicted, parsed = model.parse(data.trees)
    runtime = time.process_time() - started
    with atomic_output(output_file) as out:
        out.write("".join(format_tree(t) + "\n" for t in predicted))
    if verbosity >= 2:
        note(f"Runtime (without IO) in cpu-seconds: {runtime:.2f}")
    if verbosity < 1 or not data.trees:
        return
    matched = n_gold = n_test = exact = 0
    for tree, guess in zip(data.trees, predicted):
        gold = brackets(tree)
        test = brackets(guess)
        m = bracket_match(gold, test)
        g, t = sum(gold.values()), sum(test.values())
        matched, n_gold, n_test = matched + m, n_gold + g, n_test + t
        exact += m == g == t
    precision = 100.0 * matched / n_test if n_test else 0.0
    recall = 100.0 * matched / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    n = len(data.trees)
    print(
        f"Labelled brackets on test set: precision {precision:.2f}%, recall {recall:.2f}%, "
        f"F1 {f1:.2f}% ({matched} matched, {n_test} predicted, {n_gold} gold)",
        file=report,
    )
    print(
        f"Exact match on test set: {100.0 * exact / n:.2f}% ({exact} of {n} sentences)", file=report
    )
    unparsed = parsed.count(False)
    if unparsed:
        print(
            f"Note: {unparsed} sentences the grammar cannot parse got a flat "
            f"'{model.fallback}' tree",
            file=report,
        )
