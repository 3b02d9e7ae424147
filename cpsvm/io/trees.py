"""Bracketed (Penn Treebank) trees: reading them.

A file holds trees one after another, ``(LABEL child ...)``, a preterminal being
``(TAG word)``; the PTB wraps each sentence in a bracket without a label, ``( (S ...) )``.
Several ``.mrg`` files concatenated are one such file. :func:`read_trees` gives
:class:`~cpsvm.decoding.trees.Tree` objects with the line each tree starts on,
:func:`read_tree_dataset` a :class:`~cpsvm.data.TreeDataset`; a malformed file is refused
with an :class:`~cpsvm.errors.InputError` naming the file and line. What is done with the
trees (a CFG parser's preprocessing, one tree on one line) is :mod:`cpsvm.decoding.trees`.
"""

from __future__ import annotations

import re

from ..data import TreeDataset
from ..decoding.trees import ROOT_LABEL, Tree, n_words
from ..errors import InputError
from .streams import InputStream, read_bytes, source_name

_TOKEN = re.compile(rb"\(|\)|[^\s()]+|\n")


def parse_trees(raw: bytes, name: str = "<memory>", first_line: int = 1) -> list:
    """The trees of ``raw`` (bytes or str); InputError naming ``name`` and the line.
    Any depth and any number of children: no function of this module recurses (the
    length of a sentence is bounded by what CKY's chart needs, checked where it parses)."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8")
    trees = []
    stack = []  # open nodes: [label or None, children, line, atoms]
    line = first_line
    for match in _TOKEN.finditer(raw):
        tok = match.group()
        if tok == b"\n":
            line += 1
        elif tok == b"(":
            stack.append([None, [], line, []])
        elif tok == b")":
            if not stack:
                raise InputError("expected '(' to open a tree, got ')'", source=name, line=line)
            label, children, start, atoms = stack.pop()
            node = _close(label, children, atoms, start, name, line)
            if stack:
                stack[-1][1].append(node)
            else:
                trees.append(node)
        else:
            text = tok.decode("utf-8", "replace")
            if not stack:
                raise InputError(
                    f"expected '(' to open a tree, got {text!r}", source=name, line=line
                )
            top = stack[-1]
            if top[0] is None and not top[1] and not top[3]:
                top[0] = text
            else:
                if top[1]:
                    raise InputError(
                        f"expected '(' or ')' after a subtree, got word {text!r}",
                        source=name,
                        line=line,
                    )
                top[3].append(text)
    if stack:
        raise InputError(
            f"expected ')' to close the tree that opens here ({len(stack)} "
            "brackets open), found the end of the file (truncated file?)",
            source=name,
            line=stack[0][2],
        )
    if not trees:
        raise InputError(
            "expected at least one bracketed tree '( (S ...) )', found none", source=name
        )
    return trees


def _close(label, children, atoms, start, name, line):
    if atoms:
        if len(atoms) > 1 or label is None:
            raise InputError(
                f"expected a preterminal '(TAG word)', got '({label or ''} {' '.join(atoms)})'",
                source=name,
                line=start,
            )
        return Tree(label, word=atoms[0], line=start)
    if not children:
        raise InputError(
            f"expected a word or subtrees in '({label or ''})'", source=name, line=start
        )
    return Tree(ROOT_LABEL if label is None else label, children, line=start)


def read_trees(source) -> list:
    """The trees of a file (``-`` for stdin; gzip, bzip2, xz read transparently)."""
    return parse_trees(read_bytes(source), source_name(source))


def looks_like_trees(source) -> bool:
    """A regular file (or standard input, uncompressed) whose first non-blank byte is '('
    (bracketed trees), or a name ending in .mrg (possibly compressed)."""
    import os

    name = os.fspath(source)
    base = re.sub(r"\.(gz|bz2|xz)$", "", name)
    if base.endswith(".mrg"):
        return True
    if name == "-":  # standard input's first bytes, peeked: the reader still gets them
        import sys

        peek = getattr(sys.stdin.buffer, "peek", None)
        return peek is not None and peek(4096).lstrip().startswith(b"(")
    if not os.path.isfile(name):
        return False
    try:
        with InputStream(name) as f:
            buf = bytearray(4096)
            n = f.readinto(memoryview(buf))
    except InputError:
        return False
    head = bytes(buf[:n]).lstrip()
    return head.startswith(b"(")


def read_tree_dataset(source, max_length: int = 0) -> TreeDataset:
    """The trees of a file, only those of at most ``max_length`` words (-NONE-
    elements not counted) when it is > 0."""
    trees = read_trees(source)
    kept = [t for t in trees if max_length <= 0 or n_words(t) <= max_length]
    return TreeDataset(kept, source_name(source), len(trees) - len(kept))
