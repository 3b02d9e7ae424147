"""Bracketed (Penn Treebank) trees: :class:`Tree`, the preprocessing a CFG parser needs
and its undoing, one tree on one line, and the brackets PARSEVAL counts.

The PTB wraps each sentence in a bracket without a label, ``( (S ...) )``; a preterminal
is ``(TAG word)``. Reading them from a file is :mod:`cpsvm.io.trees`'s.

Preprocessing (:class:`TreeOptions`, each step an option of ``cp_learn --problem cfg``),
in this order:

1. strip function tags and indices from the phrase labels (``NP-SBJ-1`` → ``NP``,
   ``PP-LOC=2`` → ``PP``; labels beginning with ``-`` such as ``-NONE-`` stay);
2. drop the ``-NONE-`` elements and the constituents left without children;
3. unary chains (a node with a single child): with ``unary`` 0 each chain becomes one
   node whose label joins the chain's labels with ``+`` (``S+VP``; over a POS tag the
   joined node stays above the tag); with ``unary`` U >= 1 the chain is kept, a chain of
   more than U unary rules having its top labels joined so that U remain;
4. binarisation, right-factored and Markovised: a node A with children c1 ... cm (m > 2)
   becomes A → c1 @A|c1, @A|c1 → c2 @A|c1_c2 ... where the label of an intermediate
   node (``@`` first) keeps the last ``markov`` siblings already generated.

:func:`debinarise` undoes 3 and 4; :func:`format_tree` writes a tree on one line.
The root (the unlabelled outer bracket) is kept apart: :func:`preprocess` returns the
tree below it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NONE_TAG = "-NONE-"
ROOT_LABEL = ""  # the PTB's unlabelled outer bracket
INTERMEDIATE = "@"  # first character of a binarisation's intermediate labels
CHAIN_JOIN = "+"  # joins the labels of a collapsed unary chain
# Punctuation tags evalb's COLLINS.prm deletes before counting brackets.
PUNCTUATION = frozenset(["``", "''", ".", ":", ","])
# Labels evalb counts as the same (COLLINS.prm's EQ_LABEL).
EQUAL_LABELS = {"PRT": "ADVP"}


class Tree:
    """A node: ``label`` and ``children`` (Trees); a preterminal has no children and its
    ``word`` (the leaf). ``line``: where the node starts in its file (None if built)."""

    __slots__ = ("label", "children", "word", "line")

    def __init__(self, label, children=None, word=None, line=None):
        self.label = label
        self.children = list(children) if children else []
        self.word = word
        self.line = line

    @property
    def is_preterminal(self) -> bool:
        return self.word is not None

    def preterminals(self):
        """The preterminals (tag, word nodes) left to right."""
        out, stack = [], [self]
        while stack:
            node = stack.pop()
            if node.is_preterminal:
                out.append(node)
            else:
                stack.extend(reversed(node.children))
        return out

    def tags(self) -> list:
        return [p.label for p in self.preterminals()]

    def words(self) -> list:
        return [p.word for p in self.preterminals()]

    def copy(self) -> Tree:
        return _fold(
            self,
            lambda node: node.children,
            lambda node, kids: Tree(node.label, kids, node.word, node.line),
        )

    def __eq__(self, other):
        pairs = [(self, other)]
        while pairs:  # a walk of both trees, not a recursion: trees may nest thousands deep
            a, b = pairs.pop()
            if not (
                isinstance(b, Tree)
                and a.label == b.label
                and a.word == b.word
                and len(a.children) == len(b.children)
            ):
                return False
            pairs.extend(zip(a.children, b.children))
        return True

    def __repr__(self):
        return format_tree(self)


@dataclass(frozen=True)
class TreeOptions:
    """The preprocessing of :mod:`cpsvm.decoding.trees` (module docstring), as the model file
    records it. ``markov`` < 0: no Markovisation (the whole sibling history).
    ``features``: the cfg problem's feature set (``--features``, a name of
    :data:`cpsvm.decoding.grammar.FEATURE_SETS` or templates joined by ','), carried here
    with the preprocessing; :meth:`to_dict` leaves it out (the model file has its own
    line for it)."""

    strip_functions: bool = True
    drop_none: bool = True
    unary: int = 0
    markov: int = 0
    features: str = "spans"

    def to_dict(self) -> dict:
        return {
            "strip_functions": self.strip_functions,
            "drop_none": self.drop_none,
            "unary": self.unary,
            "markov": self.markov,
        }


# -- writing -----------------------------------------------------------------------------


def format_tree(tree: Tree) -> str:
    """One line: ``(S (NP (DT the) (NN dog)) (VP (VBZ barks)))``; the root bracket
    without a label as ``( ... )``."""
    parts = []
    stack = [tree]  # nodes still to write and the text between them, last first
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif item.is_preterminal:
            parts.append(f"({item.label} {item.word})")
        else:
            parts.append(f"({item.label} " if item.label else "( ")
            stack.append(")")
            for k in range(len(item.children) - 1, -1, -1):
                stack.append(item.children[k])
                if k:
                    stack.append(" ")
    return "".join(parts)


def _fold(top, children, combine):
    """``combine(node, results)`` of every node bottom-up, ``results`` those of the nodes
    ``children(node)`` gives (a list; empty at the bottom): the value at ``top``. A
    walk with its own stack, so that trees of any depth stay within Python's
    recursion limit."""
    values = []
    stack = [(top, None)]
    while stack:
        node, kids = stack.pop()
        if kids is None:
            kids = children(node)
            if not kids:
                values.append(combine(node, kids))
                continue
            stack.append((node, kids))
            stack.extend([(kid, None) for kid in reversed(kids)])
        else:
            at = len(values) - len(kids)
            results = values[at:]
            del values[at:]
            values.append(combine(node, results))
    return values[0]


# -- preprocessing -----------------------------------------------------------------------

_FUNCTION = re.compile(r"[-=]")


def base_label(label: str) -> str:
    """``NP-SBJ-1`` → ``NP``, ``PP-LOC=2`` → ``PP``; ``-NONE-``, ``-LRB-`` unchanged."""
    if not label or label.startswith("-"):
        return label
    return _FUNCTION.split(label, 1)[0] or label


def n_words(tree: Tree) -> int:
    """Words of a sentence, -NONE- elements not counted (``--max-length``)."""
    return sum(1 for p in tree.preterminals() if p.label != NONE_TAG)


def _cleaned(tree, strip, drop):
    """:func:`strip_functions` (if ``strip``) and then :func:`drop_none` (if ``drop``) in
    one walk: a copy, None if nothing is left."""

    def clean(node, kids):
        if node.is_preterminal:
            if drop and node.label == NONE_TAG:
                return None
            return Tree(node.label, word=node.word, line=node.line)
        if drop:
            kids = [k for k in kids if k is not None]
            if not kids:
                return None
        return Tree(base_label(node.label) if strip else node.label, kids, line=node.line)

    return _fold(tree, lambda node: node.children, clean)


def strip_functions(tree: Tree) -> Tree:
    """A copy with function tags and indices removed from the phrase labels."""
    return _cleaned(tree, True, False)


def drop_none(tree: Tree):
    """A copy without -NONE- elements and the constituents they leave empty (None if
    nothing is left)."""
    return _cleaned(tree, False, True)


def _chain(node):
    """The labels of the unary chain starting at ``node`` and the node below it."""
    labels = []
    while not node.is_preterminal and len(node.children) == 1:
        labels.append(node.label)
        node = node.children[0]
    return labels, node


def bound_unaries(tree: Tree, unary: int) -> Tree:
    """Unary chains joined (``unary`` 0) or kept up to ``unary`` rules (module
    docstring). Chains over a POS tag keep one node above the tag when joined."""

    def below_chain(top):
        below = _chain(top)[1]
        return [] if below.is_preterminal else below.children

    return _fold(tree, below_chain, lambda top, kids: _bound_chain(top, kids, unary))


def _bound_chain(tree, kids, unary):
    """The chain starting at ``tree`` bounded, over ``kids`` (its bottom's children,
    bounded already)."""
    labels, below = _chain(tree)
    if below.is_preterminal:
        bottom = Tree(below.label, word=below.word, line=below.line)
        if not labels:
            return bottom
        keep = max(unary, 1)
        # len(labels) unary rules over the tag
        if len(labels) > keep:
            labels = [CHAIN_JOIN.join(labels[: len(labels) - keep + 1])] + labels[
                len(labels) - keep + 1 :
            ]
        node = bottom
        for label in reversed(labels):
            node = Tree(label, [node], line=tree.line)
        return node
    labels = labels + [below.label]  # len(labels) - 1 unary rules
    if unary == 0:
        labels = [CHAIN_JOIN.join(labels)]
    elif len(labels) - 1 > unary:
        labels = [CHAIN_JOIN.join(labels[: len(labels) - unary])] + labels[len(labels) - unary :]
    node = Tree(labels[-1], kids, line=below.line)
    for label in reversed(labels[:-1]):
        node = Tree(label, [node], line=tree.line)
    return node


def binarise(tree: Tree, markov: int = 1) -> Tree:
    """Right-factored binarisation with horizontal Markov order ``markov`` (< 0: all)."""
    return _fold(tree, lambda node: node.children, lambda node, kids: _binarise(node, kids, markov))


def _binarise(tree, kids, markov):
    """``tree`` over ``kids`` (its children binarised), binarised."""
    if tree.is_preterminal:
        return tree
    if len(kids) <= 2:
        return Tree(tree.label, kids, line=tree.line)
    base = tree.label
    right = kids[-1]
    # intermediate nodes from the right: the one over kids[j:] has seen kids[:j]
    for j in range(len(kids) - 2, 0, -1):
        seen = [k.label for k in kids[max(j - markov, 0) if markov >= 0 else 0 : j]]
        label = (
            f"{INTERMEDIATE}{base}|" + "_".join(seen) if markov != 0 else f"{INTERMEDIATE}{base}"
        )
        right = Tree(label, [kids[j], right], line=tree.line)
    return Tree(tree.label, [kids[0], right], line=tree.line)


def preprocess(tree: Tree, options: TreeOptions):
    """The tree below the root after every step of ``options`` (None if -NONE- elements
    were all there was)."""
    top = tree
    if not top.is_preterminal and top.label == ROOT_LABEL:
        if len(top.children) == 1:
            top = top.children[0]
        else:  # a root with several children: they hang from one unlabelled node
            top = Tree(ROOT_LABEL, top.children, line=top.line)
    top = _cleaned(top, options.strip_functions, options.drop_none)
    if top is None:
        return None
    top = bound_unaries(top, options.unary)
    return binarise(top, options.markov)


def debinarise(tree: Tree) -> Tree:
    """Undo :func:`binarise` and the joining of unary chains (a new tree)."""
    return _fold(tree, lambda node: node.children, _debinarise)


def _debinarise(tree, flats):
    """``tree`` over ``flats`` (its children debinarised), debinarised."""
    if tree.is_preterminal:
        return Tree(tree.label, word=tree.word, line=tree.line)
    kids = []
    for flat in flats:
        if not flat.is_preterminal and flat.label.startswith(INTERMEDIATE):
            kids.extend(flat.children)
        else:
            kids.append(flat)
    if tree.label.startswith(INTERMEDIATE):
        return Tree(tree.label, kids, line=tree.line)
    labels = tree.label.split(CHAIN_JOIN) if tree.label else [tree.label]
    node = Tree(labels[-1], kids, line=tree.line)
    for label in reversed(labels[:-1]):
        node = Tree(label, [node], line=tree.line)
    return node


def with_root(top: Tree) -> Tree:
    """The PTB's unlabelled root bracket around ``top`` (kept as it is if it already is
    one)."""
    if not top.is_preterminal and top.label == ROOT_LABEL:
        return top
    return Tree(ROOT_LABEL, [top])


# -- evaluation (PARSEVAL, evalb's COLLINS.prm conventions) -----------------------------


def brackets(tree: Tree) -> dict:
    """The labelled brackets of a tree as a multiset {(label, start, end): count}:
    punctuation and -NONE- removed before spans are counted, the root and the
    preterminals not brackets, brackets covering no word dropped, function tags
    stripped, ADVP and PRT the same label."""
    out = {}
    is_root = not tree.is_preterminal and tree.label == ROOT_LABEL
    end = 0  # words counted so far, left to right
    stack = [(tree, None)]  # (node, None) to enter, (node, its start) to leave
    while stack:
        node, start = stack.pop()
        if node.is_preterminal:
            end += node.label not in PUNCTUATION and node.label != NONE_TAG
        elif start is None:
            stack.append((node, end))
            stack.extend((child, None) for child in reversed(node.children))
        elif end > start and not (node is tree and is_root):
            label = base_label(node.label)
            label = EQUAL_LABELS.get(label, label)
            key = (label, start, end)
            out[key] = out.get(key, 0) + 1
    return out


def bracket_match(gold: dict, test: dict) -> int:
    """Brackets in both multisets."""
    return sum(min(c, test.get(k, 0)) for k, c in gold.items())
