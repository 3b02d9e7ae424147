"""Trees nested and spread far beyond Python's recursion limit (issue 30): reading,
writing, comparing, preprocessing and its undoing, brackets, and the grammar's encoding
and rebuilding all walk with their own stacks."""

import sys

import pytest

from cpsvm.decoding.grammar import Grammar
from cpsvm.decoding.trees import (
    TreeOptions,
    brackets,
    debinarise,
    drop_none,
    format_tree,
    n_words,
    preprocess,
    strip_functions,
)
from cpsvm.io.trees import parse_trees

DEPTH = 3000  # three times Python's default recursion limit


def right_branching(depth):
    """( (S (NN w0) (S (NN w1) ... (S (NN wD) (VB end))))): depth S nodes, depth + 1 words."""
    return "( " + "".join(f"(S (NN w{k}) " for k in range(depth)) + "(VB end)" + ")" * depth + ")"


def unary_chain(depth):
    """( (S-SBJ (NP (S (NP ... (NN w) (-NONE- *T*-1)))))): a unary chain of depth
    labels with function tags over a word and a -NONE- element."""
    labels = ["S-SBJ", "NP"] * (depth // 2)
    return (
        "( "
        + "".join(f"({label} " for label in labels)
        + "(NN w) (-NONE- *T*-1)"
        + ")" * len(labels)
        + ")"
    )


def test_the_depth_is_beyond_the_recursion_limit():
    assert DEPTH > sys.getrecursionlimit()


@pytest.mark.parametrize("make", [right_branching, unary_chain])
def test_writing_copying_and_comparing(make):
    text = make(DEPTH)
    (tree,) = parse_trees(text, "deep.mrg")
    assert format_tree(tree) == text
    twin = tree.copy()
    assert twin == tree and twin is not tree
    twin.children[0].label = "X"
    assert twin != tree
    assert repr(tree) == text


def test_function_tags_and_empty_elements():
    (tree,) = parse_trees(unary_chain(DEPTH), "deep.mrg")
    stripped = strip_functions(tree)
    assert "S-SBJ" not in format_tree(stripped) and "(S (NP (S " in format_tree(stripped)
    dropped = drop_none(tree)
    assert "-NONE-" not in format_tree(dropped) and n_words(dropped) == 1


@pytest.mark.parametrize("unary, markov", [(0, 0), (2, 1), (1, -1)])
def test_preprocessing_and_its_undoing(unary, markov):
    options = TreeOptions(unary=unary, markov=markov)
    for text in (right_branching(DEPTH), unary_chain(DEPTH)):
        (tree,) = parse_trees(text, "deep.mrg")
        top = preprocess(tree, options)
        expected = strip_functions(drop_none(tree)).children[0]
        assert debinarise(top) == expected
        grammar = Grammar(unary)
        grammar.add_tree(top)
        parse = grammar.encode(top)
        assert parse is not None and parse.nodes[0].tolist() == [
            grammar.index[top.label],
            0,
            n_words(tree),
        ]
        assert grammar.build_tree(parse.nodes, top.words()) == top


def test_brackets_of_a_deep_tree():
    (tree,) = parse_trees(right_branching(DEPTH), "deep.mrg")
    found = brackets(tree)
    # every S spans from its word to the end
    assert found == {("S", k, DEPTH + 1): 1 for k in range(DEPTH)}


def test_a_wide_node_binarises_in_linear_depth():
    width = 5000
    (tree,) = parse_trees("( (S " + " ".join(f"(NN w{k})" for k in range(width)) + ") )", "w")
    top = preprocess(tree, TreeOptions(markov=2))
    assert len(top.words()) == width
    assert debinarise(top) == tree.children[0]
