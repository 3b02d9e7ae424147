"""Parsing (cp_learn --problem cfg): the tree reader and its preprocessing, CKY and 2-best
CKY against brute-force enumeration of every tree of a toy grammar, Ψ against rule
counts written here, the model file, and the commands end to end. The trees are toy
ones written for these tests (Penn-Treebank-like: function tags, indices, -NONE-,
unary chains, punctuation)."""

import itertools
from collections import Counter

import numpy as np
import pytest
from conftest import run_cli

from cpsvm.conventions import MARGIN_RESCALING, SLACK_RESCALING
from cpsvm.decoding.grammar import Grammar, cky
from cpsvm.decoding.trees import (
    TreeOptions,
    bracket_match,
    brackets,
    debinarise,
    drop_none,
    format_tree,
    preprocess,
    strip_functions,
    with_root,
)
from cpsvm.errors import InputError
from cpsvm.io.model_file import format_model, read_model
from cpsvm.io.trees import parse_trees
from cpsvm.problems.cfg.problem import LOSS_BRACKETS, LOSS_ZERO_ONE, CfgProblem

TREEBANK = """\
( (S (NP-SBJ-1 (DT The) (JJ old) (NN man))
     (VP (VBD saw)
         (NP (NP (DT a) (NN dog)) (PP-LOC (IN in) (NP (DT the) (NN park))))
         (S-ADV (NP-SBJ (-NONE- *-1)) (VP (VBG running))))
     (. .)) )
( (S (NP-SBJ (PRP She)) (VP (VBD left)) (. .)) )
( (SINV (`` ``) (S-TPC-2 (NP-SBJ (NNS dogs)) (VP (VBP bark))) (, ,) ('' '')
     (VP (VBD said) (S (-NONE- *T*-2))) (NP-SBJ=3 (NNP Ann)) (. .)) )
( (FRAG (NP (NN Nothing)) (. .)) )
( (S (NP-SBJ (DT The) (NN dog)) (VP (VBD barked) (ADVP-MNR (RB loudly))) (. .)) )
"""

TOY = """\
( (S (NP (DT the) (NN dog))
     (VP (VBD saw) (NP (NP (DT the) (NN cat)) (PP (IN with) (NP (DT a) (NN hat)))))) )
( (S (NP (NN dogs)) (VP (VBD saw) (NP (NN cats)) (PP (IN with) (NP (NN hats))))) )
( (S (NP (PRP it)) (VP (VBD ran))) )
( (NP (NP (DT the) (NN dog)) (PP (IN with) (NP (NN hats)))) )
( (S (S (NP (NN it)) (VP (VBD ran))) (CC and) (S (VP (VBD saw) (NP (NN dogs))))) )
"""
TOY_SENTENCES = [
    ["DT", "NN", "VBD", "NN"],
    ["NN", "VBD", "NN", "IN", "NN"],
    ["PRP", "VBD"],
    ["DT", "NN", "IN", "NN"],
    ["NN"],
    ["NN", "VBD", "NN", "CC", "VBD", "NN"],
]
# their words: some of the training trees', some never seen
TOY_WORDS = [
    ["the", "dog", "saw", "cats"],
    ["dogs", "saw", "birds", "with", "hats"],
    ["it", "ran"],
    ["a", "cat", "with", "fleas"],
    ["it"],
    ["dogs", "ran", "home", "and", "saw", "cats"],
]
WORD_TEMPLATES = "first_word,last_word,before_word,after_word,length,last_after"


# -- reading ---------------------------------------------------------------------------


def test_reader_keeps_labels_words_and_lines():
    trees = parse_trees(TREEBANK, "bank.mrg")
    assert len(trees) == 5
    assert [t.line for t in trees] == [1, 6, 7, 9, 10]
    assert trees[0].label == "" and trees[0].children[0].label == "S"
    assert trees[0].words()[:3] == ["The", "old", "man"]
    assert trees[2].tags()[0] == "``" and "-NONE-" in trees[2].tags()
    # written on one line and read again: the same tree
    again = parse_trees(format_tree(trees[2]))
    assert again == [trees[2]]


@pytest.mark.parametrize(
    "text, line, what",
    [
        ("( (S (NP (DT a) (NN b)) )\n", 1, "expected ')' to close the tree that opens here"),
        ("( (S (NN a)) )\n)\n", 2, "expected '(' to open a tree, got ')'"),
        ("( (S (NN)) )\n", 1, "expected a word or subtrees in '(NN)'"),
        ("\n( (S (NN a b)) )\n", 2, "expected a preterminal '(TAG word)'"),
        ("( (S (NP (NN a))\n  word) )\n", 2, "expected '(' or ')' after a subtree"),
        ("word ( (S (NN a)) )\n", 1, "expected '(' to open a tree, got 'word'"),
        ("\n\n", None, "expected at least one bracketed tree"),
    ],
)
def test_reader_errors_name_the_line(text, line, what):
    with pytest.raises(InputError) as e:
        parse_trees(text, "bad.mrg")
    prefix = f"bad.mrg:{line}: " if line else "bad.mrg: "
    assert str(e.value).startswith(prefix) and what in str(e.value)


# -- preprocessing -----------------------------------------------------------------------


def test_function_tags_none_elements_and_chains():
    tree = parse_trees(TREEBANK)[0]
    clean = drop_none(strip_functions(tree))
    assert format_tree(clean) == (
        "( (S (NP (DT The) (JJ old) (NN man)) (VP (VBD saw) (NP (NP (DT a) (NN dog)) "
        "(PP (IN in) (NP (DT the) (NN park)))) (S (VP (VBG running)))) (. .)))"
    )
    # joined chains (unary 0): S over VP over a tag becomes one node over the tag
    top = preprocess(tree, TreeOptions(unary=0, markov=-1))
    assert "(S+VP (VBG running))" in format_tree(top)
    kept = preprocess(tree, TreeOptions(unary=2, markov=-1))
    assert "(S (VP (VBG running)))" in format_tree(kept)
    one = preprocess(tree, TreeOptions(unary=1, markov=-1))
    assert "(S+VP (VBG running))" in format_tree(one)
    # Markovised binarisation: order 1 keeps the last sibling, order 0 none
    top = preprocess(tree, TreeOptions(markov=1))
    assert format_tree(top).startswith(
        "(S (NP (DT The) (@NP|DT (JJ old) (NN man))) (@S|NP (VP (VBD saw) (@VP|VBD (NP "
    )
    assert "(@NP (JJ old)" in format_tree(preprocess(tree, TreeOptions(markov=0)))
    # options that keep the function tags and the -NONE- elements
    raw = preprocess(tree, TreeOptions(strip_functions=False, drop_none=False, markov=-1, unary=3))
    assert "(NP-SBJ (-NONE- *-1))" in format_tree(raw)


@pytest.mark.parametrize("unary", [0, 1, 2])
@pytest.mark.parametrize("markov", [-1, 0, 1, 2])
def test_binarise_debinarise_round_trip(unary, markov):
    for tree in parse_trees(TREEBANK + TOY):
        top = preprocess(tree, TreeOptions(unary=unary, markov=markov))
        assert _is_binary(top)
        expected = drop_none(strip_functions(tree))
        assert format_tree(with_root(debinarise(top))) == format_tree(expected)


def _is_binary(node):
    return node.is_preterminal or (
        len(node.children) <= 2 and all(_is_binary(c) for c in node.children)
    )


def test_brackets_follow_evalb():
    gold = parse_trees(
        "( (S (NP-SBJ (DT The) (NN dog)) (VP (VBD barked) (NP (-NONE- *))) (. .)) )"
    )[0]
    test = parse_trees("( (S (NP (DT The)) (VP (NN dog) (VBD barked)) (. .)) )")[0]
    g, t = brackets(gold), brackets(test)
    # root ignored, punctuation not counted in spans, the -NONE- NP dropped
    assert g == {("S", 0, 3): 1, ("NP", 0, 2): 1, ("VP", 2, 3): 1}
    assert t == {("S", 0, 3): 1, ("NP", 0, 1): 1, ("VP", 1, 3): 1}
    assert bracket_match(g, t) == 1
    assert brackets(parse_trees("( (S (PRT (RP up))) )")[0]) == brackets(
        parse_trees("( (S (ADVP (RP up))) )")[0]
    )


# -- the grammar and Ψ -------------------------------------------------------------------


def _rules(node, out):
    """Rule counts of a binarised tree, by name (written here, not the grammar's)."""
    if node.is_preterminal:
        return out
    out[(node.label,) + tuple(c.label for c in node.children)] += 1
    for c in node.children:
        _rules(c, out)
    return out


def _tree_span_counts(top, templates, vocabulary):
    """Span features of a preprocessed tree's constituents, by name, from the tree."""
    tags, words, out = top.tags(), top.words(), Counter()

    def walk(node, start):
        if node.is_preterminal:
            return start + 1
        end = start
        for child in node.children:
            end = walk(child, end)
        out.update(_span_names(templates, node.label, start, end, tags, words, vocabulary))
        return end

    walk(top, 0)
    return out


@pytest.mark.parametrize(
    "unary, features", [(0, "spans"), (2, "spans"), (1, WORD_TEMPLATES + ",first,before")]
)
def test_psi_counts_the_rules_and_spans_of_a_tree(unary, features):
    trees = parse_trees(TREEBANK + TOY)
    options = TreeOptions(unary=unary, markov=1, features=features)
    problem = CfgProblem(trees, options=options)
    binary, unaries, roots = problem.grammar.rule_lists()
    names = problem.grammar.symbols
    keys = (
        [tuple(names[s] for s in r) for r in binary]
        + [tuple(names[s] for s in r) for r in unaries]
        + [("ROOT", names[a]) for a in roots]
    )
    for i, tree in enumerate(trees):
        top = preprocess(tree, options)
        expected = _rules(top, Counter())
        expected[("ROOT", top.label)] += 1
        psi = problem.psi(i)
        assert {k: int(v) for k, v in zip(keys, psi) if v} == dict(expected)
        spans = _tree_span_counts(top, problem.grammar.templates, problem.grammar.words)
        assert sum(spans.values()) > 0
        assert {key: int(v) for key, v in problem.grammar.span_feature_lines(psi)} == dict(spans)
    # margins and δΨ sums agree with Ψ
    w = np.random.default_rng(0).standard_normal(problem.size_psi)
    labels = problem.separate(w, MARGIN_RESCALING)
    margins = problem.margins(w, labels)
    for i, p in enumerate(labels):
        assert margins[i] == pytest.approx(w @ (problem.psi(i) - problem.psi(i, p)))
    total = problem.delta_psi_sum(np.arange(1.0, 1 + len(labels)), labels)
    ref = sum((i + 1.0) * (problem.psi(i) - problem.psi(i, p)) for i, p in enumerate(labels))
    assert np.allclose(total, ref)


# -- span features by hand -----------------------------------------------------------------


def _bucket(length):
    for top, name in (
        (5, str(length)),
        (7, "6-7"),
        (10, "8-10"),
        (15, "11-15"),
        (20, "16-20"),
        (30, "21-30"),
    ):
        if length <= top:
            return name
    return "31+"


def _span_names(templates, label, i, j, tags, words, vocabulary):
    """The span features of a constituent ``label`` over words i..j-1, by name: written
    here from the templates' definitions (man cp_learn, PARSING)."""
    n = len(tags)
    word = lambda t: words[t] if words[t] in vocabulary else "<unk>"  # noqa: E731
    values = {
        "first": (tags[i],),
        "last": (tags[j - 1],),
        "before": (tags[i - 1] if i else "<s>",),
        "after": (tags[j] if j < n else "</s>",),
        "length": (_bucket(j - i),),
        "before_first": (tags[i - 1] if i else "<s>", tags[i]),
        "last_after": (tags[j - 1], tags[j] if j < n else "</s>"),
        "first_word": (word(i),),
        "last_word": (word(j - 1),),
        "before_word": (word(i - 1) if i else "<s>",),
        "after_word": (word(j) if j < n else "</s>",),
    }
    return [(t, label) + values[t] for t in templates]


def _span_counts(grammar, nodes, tags, words):
    """Counter of the span features (by name) of a tree's nodes (POS tags have none)."""
    out = Counter()
    for a, i, j in nodes:
        if a not in grammar.terminals:
            out.update(
                _span_names(grammar.templates, grammar.symbols[a], i, j, tags, words, grammar.words)
            )
    return out


# -- CKY against enumeration ---------------------------------------------------------------


def _all_trees(grammar, w, tags, words=None):
    """Every tree of the grammar over ``tags`` with its score: (score, nodes, feats), the
    nodes (symbol, start, end) in preorder — written from the rule lists, by recursion;
    the score adds the weights of the nodes' span features, found by name (feats: the
    rules only)."""
    binary, unaries, roots = grammar.rule_lists()
    nb, nu = len(binary), len(unaries)
    bound = max(grammar.unary, 1)
    index = grammar.index
    words = words or ["?"] * len(tags)
    by_name = dict(grammar.span_feature_lines(w))
    memo = {}

    def span(a, i, j):
        names = _span_names(grammar.templates, grammar.symbols[a], i, j, tags, words, grammar.words)
        return sum(by_name.get(key, 0.0) for key in names)

    def base(i, j):  # trees whose top node is no unary rule
        out = []
        if j - i == 1:
            t = index.get(tags[i], -1)
            if t >= 0:
                out.append((t, 0.0, [(t, i, j)], []))
            return out
        for k in range(i + 1, j):
            for left in spans(i, k):
                for right in spans(k, j):
                    for r, (a, b, c) in enumerate(binary):
                        if b == left[0] and c == right[0]:
                            out.append(
                                (
                                    a,
                                    w[r] + span(a, i, j) + left[1] + right[1],
                                    [(a, i, j)] + left[2] + right[2],
                                    [r] + left[3] + right[3],
                                )
                            )
        return out

    def spans(i, j):
        if (i, j) not in memo:
            items = base(i, j)
            frontier = items
            for _ in range(bound):
                grown = []
                for sym, score, nodes, feats in frontier:
                    for u, (a, b) in enumerate(unaries):
                        if b == sym:
                            grown.append(
                                (
                                    a,
                                    score + w[nb + u] + span(a, i, j),
                                    [(a, i, j)] + nodes,
                                    [nb + u] + feats,
                                )
                            )
                items = items + grown
                frontier = grown
            memo[(i, j)] = items
        return memo[(i, j)]

    out = []
    for sym, score, nodes, feats in spans(0, len(tags)):
        for k, a in enumerate(roots):
            if a == sym:
                out.append((score + w[nb + nu + k], nodes, [nb + nu + k] + feats))
    return out


def _cky_on(grammar, w, sentences, words=None, **kw):
    tag_ids = np.array([grammar.index.get(t, -1) for s in sentences for t in s])
    starts = np.concatenate(([0], np.cumsum([len(s) for s in sentences])))
    ctx = grammar.context(tag_ids, [x for s in words for x in s]) if words else None
    return cky(grammar, w, tag_ids, starts, ctx=ctx, **kw)


def _span_counts_of(grammar, parse):
    """The span features a parse's feature indices hold, by name (the grammar's
    naming, as the model file writes them)."""
    counts = np.bincount(parse.feats, minlength=grammar.size).astype(np.float64)
    return {key: int(v) for key, v in grammar.span_feature_lines(counts)}


@pytest.mark.parametrize("features", ["spans", "rules", WORD_TEMPLATES])
@pytest.mark.parametrize("unary", [0, 1, 2])
@pytest.mark.parametrize("seed", [0, 1])
def test_cky_and_2best_against_enumeration(features, unary, seed):
    problem = CfgProblem(
        parse_trees(TOY), options=TreeOptions(unary=unary, markov=1, features=features)
    )
    grammar = problem.grammar
    assert grammar.size == problem.size_psi > grammar.n_rules or features == "rules"
    w = np.random.default_rng(seed).standard_normal(grammar.size)
    best = _cky_on(grammar, w, TOY_SENTENCES, TOY_WORDS, kbest=1)
    two = _cky_on(grammar, w, TOY_SENTENCES, TOY_WORDS, kbest=2)
    n_checked = 0
    for tags, words, one, pair in zip(TOY_SENTENCES, TOY_WORDS, best, two):
        trees = sorted(_all_trees(grammar, w, tags, words), key=lambda t: -t[0])
        # every derivation is a different tree
        assert len({tuple(map(tuple, t[1])) for t in trees}) == len(trees)
        if not trees:
            assert one == [] and pair == []
            continue
        n_checked += 1
        assert one[0][1] == pytest.approx(trees[0][0])
        assert [s for _, s in pair] == pytest.approx([t[0] for t in trees[:2]])
        for (parse, score), ref in zip(pair, trees):
            assert score == pytest.approx(sum(w[f] for f in parse.feats))
            rules = sorted(f for f in parse.feats.tolist() if f < grammar.n_rules)
            assert rules == sorted(ref[2]) or score == pytest.approx(ref[0])
            # the kernel's span features are those of the parse's nodes, by name
            assert _span_counts_of(grammar, parse) == dict(
                _span_counts(grammar, parse.nodes.tolist(), tags, words)
            )
        assert not pair[0][0].same_tree(pair[1][0]) if len(pair) == 2 else True
    assert n_checked >= 5


@pytest.mark.parametrize("rescaling", [MARGIN_RESCALING, SLACK_RESCALING])
@pytest.mark.parametrize("seed", [0, 3])
def test_zero_one_oracle_is_the_best_other_tree(rescaling, seed):
    trees = parse_trees(TOY)
    problem = CfgProblem(trees, options=TreeOptions(unary=1, markov=1), loss_id=LOSS_ZERO_ONE)
    w = 0.5 * np.random.default_rng(seed).standard_normal(problem.size_psi)
    labels = problem.separate(w, rescaling)
    for i, tree in enumerate(trees):
        gold = problem.gold[i]
        true_score = float(w[gold.feats].sum())
        top = preprocess(tree, problem.options)
        others = [
            t
            for t in _all_trees(problem.grammar, w, top.tags(), top.words())
            if [tuple(n) for n in t[1]] != [tuple(n) for n in gold.nodes.tolist()]
        ]
        value = lambda s: (
            100 + s - true_score if rescaling == MARGIN_RESCALING else 100 * (1 + s - true_score)
        )  # noqa: E731
        best = max((value(s) for s, _, _ in others), default=-1.0)
        got = labels[i]
        if best > 0:
            assert not got.same_tree(gold)
            assert value(float(w[got.feats].sum())) == pytest.approx(best)
        else:
            assert got.same_tree(gold)


def test_bracket_loss_oracle_against_enumeration():
    trees = parse_trees(TOY)
    problem = CfgProblem(trees, options=TreeOptions(unary=0, markov=0), loss_id=LOSS_BRACKETS)
    w = np.random.default_rng(5).standard_normal(problem.size_psi)
    labels = problem.separate(w, MARGIN_RESCALING)
    for i, tree in enumerate(trees):
        gold = problem.gold[i]
        top = preprocess(tree, problem.options)
        true_score = float(w[gold.feats].sum())
        best = 0.0
        for score, nodes, feats in _all_trees(problem.grammar, w, top.tags(), top.words()):
            parse = type(gold)(np.array(nodes), np.array(feats))
            best = max(best, problem.losses([parse], [i])[0] + score - true_score)
        got = labels[i]
        value = problem.losses([got], [i])[0] - problem.margins(w, [got], [i])[0]
        assert value == pytest.approx(best)
    assert problem.losses(problem.true_labels()).sum() == 0


# -- models and commands ---------------------------------------------------------------


@pytest.mark.parametrize("features", ["spans", WORD_TEMPLATES])
def test_model_file_round_trip_and_errors(tmp_path, features):
    problem = CfgProblem(
        parse_trees(TREEBANK), options=TreeOptions(unary=1, markov=2, features=features)
    )
    w = np.random.default_rng(1).standard_normal(problem.size_psi)
    w[problem.grammar.n_rules :: 3] = 0.0  # zero weights are not written
    model = problem.to_model(w)
    text = format_model(model)
    assert text.startswith("cpsvm cfg model V2\n")
    path = tmp_path / "m"
    path.write_text(text)
    back = read_model(path)
    assert back.options == model.options and back.grammar.templates == problem.grammar.templates
    assert np.array_equal(back.w[: problem.grammar.n_rules], w[: problem.grammar.n_rules])
    assert sorted(back.w[problem.grammar.n_rules :]) == sorted(
        v for v in w[problem.grammar.n_rules :] if v
    )
    assert format_model(back) == text
    trees = parse_trees(TREEBANK + TOY)
    mine, again = model.parse(trees)[0], back.parse(trees)[0]
    assert [format_tree(t) for t in again] == [format_tree(t) for t in mine]
    lines = text.splitlines()
    n_rules = problem.grammar.n_rules
    first_span = 8 + n_rules  # the line of the first span feature
    span = lines[first_span].split()
    for bad, line, what in [
        (lines[:-2], len(lines) - 1, "truncated model file?"),
        (lines[:9] + ["b x NP DT NN"] + lines[10:], 10, "expected a rule"),
        (
            lines[:8] + [lines[first_span]] + lines[8:first_span] + lines[first_span + 1 :],
            9,
            "expected a rule",
        ),
        (lines[:1] + ["{} # p"] + lines[2:], 2, "JSON object"),
        (lines[:6] + ["first nearby # span templates"] + lines[7:], 7, "expected a feature set"),
        (
            lines[:first_span] + [" ".join(span[:3] + ["NN"] + span[4:])] + lines[first_span + 1 :],
            first_span + 1,
            "expected a phrase label",
        ),
        (
            lines[:first_span]
            + [" ".join(span[:2] + ["middle"] + span[3:])]
            + lines[first_span + 1 :],
            first_span + 1,
            "expected a span feature",
        ),
        (
            lines[:first_span] + [lines[first_span + 1]] + lines[first_span + 1 :],
            first_span + 2,
            "expected each span feature once",
        ),
    ]:
        path.write_text("\n".join(bad) + "\n")
        with pytest.raises(InputError, match=f"m:{line}: .*{what}"):
            read_model(path)


# A model of rules only (SVMcfg's Ψ), as cpsvm wrote before span features: still read.
V1_MODEL = """\
cpsvm cfg model V1
{"drop_none": true, "markov": 1, "strip_functions": true, "unary": 0} # preprocessing (JSON)
svm # weights (svm: cp_learn's structural SVM)
S # fallback label (a flat tree for a sentence the grammar cannot parse)
2 # number of training sentences
5 # number of rules; each line: b weight A B C | u weight A B | r weight A
b 1.5 S NP VP
b 0.5 NP DT NN
b -2 VP VBD NP
u 0.25 VP VBD
r 1 S
"""


def test_version_1_models_are_read_and_written_for_rules(tmp_path):
    path = tmp_path / "v1.model"
    path.write_text(V1_MODEL)
    model = read_model(path)
    assert model.grammar.templates == () and model.options.features == "rules"
    assert model.w.tolist() == [1.5, 0.5, -2.0, 0.25, 1.0]
    assert format_model(model) == V1_MODEL
    trees = parse_trees(
        "( (S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat)))) )"
        "\n( (S (NP (DT the) (NN dog)) (VP (VBD ran))) )"
    )
    out, parsed = model.parse(trees)
    assert parsed == [True, True]
    assert [format_tree(t) for t in out] == [format_tree(t) for t in trees]
    # trained with --features rules, a model is still V1
    problem = CfgProblem(parse_trees(TOY), options=TreeOptions(features="rules"))
    assert problem.size_psi == problem.grammar.n_rules
    assert format_model(problem.to_model(np.ones(problem.size_psi))).startswith(
        "cpsvm cfg model V1\n"
    )


def test_cp_learn_and_cp_classify_on_trees(tmp_path):
    train = tmp_path / "train.mrg"
    train.write_text(TREEBANK + TOY)
    model, out = tmp_path / "model", tmp_path / "parses"
    result = run_cli("learn", "-c", "100", "-e", "1", "-w", "3", train, model)
    assert result.returncode == 0, result.stderr
    assert "Problem: cfg, algorithm -w 3" in result.stdout and "CKY parses" in result.stdout
    # the defaults: rules and span features (a V2 model), Markov order 0
    header = model.read_text().splitlines()[:7]
    assert header[0] == "cpsvm cfg model V2" and TreeOptions().features == "spans"
    assert '"markov": 0' in header[1] and TreeOptions().markov == 0
    assert header[6] == "first last before after length first_word last_word # span templates"
    result = run_cli("classify", "--max-length", "5", train, model, out)
    assert result.returncode == 0, result.stderr
    lines = out.read_text().splitlines()
    trees = parse_trees(TREEBANK + TOY)
    short = [t for t in trees if len([w for w in t.tags() if w != "-NONE-"]) <= 5]
    assert len(lines) == len(short) == 7
    for line, tree in zip(lines, short):
        parsed = parse_trees(line)[0]
        assert parsed.words() == [w for w, t in zip(tree.words(), tree.tags()) if t != "-NONE-"]
        assert "-NONE-" not in line and "-SBJ" not in line and "@" not in line
    assert "Labelled brackets on test set: precision" in result.stdout
    assert "Exact match on test set:" in result.stdout and "of 7 sentences" in result.stdout
    # the PCFG baseline is a model cp_classify reads (no -c needed); -w 0 and -l 1 train;
    # rules alone and other templates
    for args, version in (
        (["--baseline", "pcfg"], "V1"),
        (["-c", "100", "-w", "0", "-l", "1", "--unary", "2"], "V2"),
        (["-c", "100", "--features", "rules"], "V1"),
        (["-c", "100", "--features", "before_word,last_after"], "V2"),
    ):
        result = run_cli("learn", *args, train, model)
        assert result.returncode == 0, result.stderr
        assert model.read_text().startswith(f"cpsvm cfg model {version}\n")
        result = run_cli("classify", train, model, out)
        assert result.returncode == 0 and len(out.read_text().splitlines()) == 10


def test_default_loss_is_the_bracket_loss():
    """cp_learn's default -l for cfg is 1 (the same model as -l 1, not -l 0's); with -o 1,
    which the bracket loss cannot take, the default is 0."""
    from cpsvm.data import TreeDataset
    from cpsvm.solvers.one_slack import StructParams, train

    data = TreeDataset(parse_trees(TREEBANK + TOY))
    models = {}
    for name, loss, rescaling in (
        ("default", None, 2),
        ("l1", 1, 2),
        ("l0", 0, 2),
        ("o1", None, 1),
        ("o1l0", 0, 1),
    ):
        params = StructParams(C=100, epsilon=1, loss_id=loss, rescaling=rescaling, problem="cfg")
        models[name] = format_model(train(data, params)[0])
    assert models["default"] == models["l1"] != models["l0"]
    assert models["o1"] == models["o1l0"]


@pytest.mark.parametrize(
    "args, code, what",
    [
        (["--problem", "cfg", "-c", "1", "BAD", "MODEL"], 1, "BAD:1: expected ')'"),
        (["-c", "1", "-o", "1", "-l", "1", "GOOD", "MODEL"], 2, "needs margin rescaling"),
        (["-c", "1", "--t", "1", "GOOD", "MODEL"], 2, "--t: not an option of the cfg problem"),
        (
            ["-c", "1", "--markov", "2", "SVM", "MODEL"],
            2,
            "--markov: not an option of the binary problem",
        ),
        (["GOOD", "MODEL"], 2, "Missing option '-c'"),
        (
            ["-c", "1", "--features", "first,middle", "GOOD", "MODEL"],
            2,
            "--features: expected a feature set (rules, spans) or span templates",
        ),
        (
            ["--baseline", "pcfg", "--features", "rules", "GOOD", "MODEL"],
            2,
            "the PCFG baseline (--baseline pcfg) has the rules only",
        ),
    ],
)
def test_bad_input_is_one_line_and_no_model(tmp_path, args, code, what):
    (tmp_path / "BAD").write_text("( (S (NP (DT a) (NN b))\n  (VP (VBD c))\n")
    (tmp_path / "GOOD").write_text(TOY)
    (tmp_path / "SVM").write_text("1 1:1\n-1 1:2\n")
    result = run_cli("learn", *args, cwd=tmp_path)
    assert result.returncode == code and what in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "MODEL").exists()


def test_auto_picks_cfg_for_trees_only_in_cp_learn():
    from cpsvm.data import TreeDataset
    from cpsvm.problems import ProblemSpecError, choose_problem

    data = TreeDataset(parse_trees(TOY))
    assert choose_problem(data, "auto", sequences=True) == "cfg"
    with pytest.raises(ProblemSpecError, match="expected auto, binary or multiclass"):
        choose_problem(data, "cfg")
    with pytest.raises(InputError, match="expected at least one tree"):
        choose_problem(TreeDataset([]), "cfg", sequences=True)


def test_cfg_problem_from_python_trees():
    trees = parse_trees(TOY)
    problem = CfgProblem(trees)
    assert problem.n_examples == 5 and problem.size_psi == problem.grammar.size
    predicted = problem.predict(np.zeros(problem.size_psi), trees)
    assert [t.words() for t in predicted] == [t.words() for t in trees]
    # a tag the grammar never saw: no parse, a flat tree under the fallback label
    unseen = parse_trees("( (S (NP (NN dogs)) (VP (VBZ bark)) (. .)) )")
    out, parsed = problem.to_model(np.zeros(problem.size_psi)).parse(unseen)
    assert parsed == [False]
    assert format_tree(out[0]) == "( (S (NN dogs) (VBZ bark) (. .)))"
    assert isinstance(problem.grammar, Grammar)
    assert list(itertools.islice(problem.true_labels(), 1))[0] is problem.gold[0]
