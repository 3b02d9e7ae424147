"""The grammar of SVMcfg's parser and its inference: what problems and models share.

:class:`Grammar` holds the symbols, the rules seen in the training trees (binary A → B C,
unary A → B, root ROOT → A) and the span templates (``--features``, FEATURE_SETS; Taskar
et al. 2004), and numbers Ψ's features: one per rule, in the grammar's order, then the
span features, a label with what the sentence has at and beside a constituent's ends and
its length (SPAN_TEMPLATES). A tree of a sentence is a :class:`Parse` (its nodes in
preorder and its feature indices). :func:`cky` finds the best or two best parses of
sentences under weights w (the kernels are :mod:`cpsvm.decoding.cky`);
:func:`parse_sentences` parses the sentences of trees and returns trees, preprocessing
undone (:mod:`cpsvm.decoding.trees`); :func:`pcfg_weights` are the maximum-likelihood PCFG's
log-probabilities. The problem built on them is :class:`cpsvm.problems.cfg.problem.CfgProblem`,
the model :class:`cpsvm.models.CfgModel`.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..threads import in_row_chunks, thread_count
from . import cky as cky_kernels
from .cky import chart_refused, check_charts, run_kernel, span_features
from .trees import (
    CHAIN_JOIN,
    INTERMEDIATE,
    Tree,
    TreeOptions,
    debinarise,
    with_root,
)

# Span templates, in the order of their codes in the kernels (cky.span_value): of a
# constituent over the words i..j−1, the tag of its first and last word, the tags just
# before and after it (a boundary value beyond the sentence), its length (bucketed), the
# pairs (tag before, first tag) and (last tag, tag after), and the same of the words.
SPAN_TEMPLATES = (
    "first",
    "last",
    "before",
    "after",
    "length",
    "before_first",
    "last_after",
    "first_word",
    "last_word",
    "before_word",
    "after_word",
)
# The length buckets (cky._length_bucket), by name.
LENGTH_BUCKETS = ("1", "2", "3", "4", "5", "6-7", "8-10", "11-15", "16-20", "21-30", "31+")
# Names of the values beyond the sentence and of a word not in the vocabulary.
BEFORE_SENTENCE, AFTER_SENTENCE, UNKNOWN_WORD = "<s>", "</s>", "<unk>"


# --features: the default, spans, measured best on the PTB sample (man cp_learn, PARSING)
FEATURE_SETS = {
    "rules": (),
    "spans": ("first", "last", "before", "after", "length", "first_word", "last_word"),
}


def span_templates(features: str) -> tuple:
    """The templates of a feature set: a name of FEATURE_SETS, or template names joined
    by ','."""
    if features in FEATURE_SETS:
        return FEATURE_SETS[features]
    names = tuple(t for t in features.split(",") if t)
    unknown = [t for t in names if t not in SPAN_TEMPLATES]
    if unknown or not names:
        raise ValueError(
            f"expected a feature set ({', '.join(FEATURE_SETS)}) or span "
            f"templates joined by ',' ({', '.join(SPAN_TEMPLATES)}), got "
            f"{features!r}"
        )
    return names


def feature_set_name(templates) -> str:
    """The --features value of a tuple of templates."""
    for name, chosen in FEATURE_SETS.items():
        if tuple(templates) == chosen:
            return name
    return ",".join(templates)


def span_template_sizes(n_tags: int, n_words: int) -> dict:
    """Values each template takes: a tag or the boundary, a word, unknown or the
    boundary."""
    t, v = n_tags, n_words
    return {
        "first": t,
        "last": t,
        "before": t + 1,
        "after": t + 1,
        "length": len(LENGTH_BUCKETS),
        "before_first": (t + 1) * t,
        "last_after": t * (t + 1),
        "first_word": v + 1,
        "last_word": v + 1,
        "before_word": v + 2,
        "after_word": v + 2,
    }


@dataclass
class Parse:
    """One sentence's tree: ``nodes`` (m, 3) int64, (symbol, start, end) in preorder
    with the POS tags; ``feats`` its features' indices, one per rule it uses and per
    span feature of its nodes (Ψ is their count)."""

    nodes: np.ndarray
    feats: np.ndarray
    brackets: Counter | None = None  # (base label, start, end) multiset, once asked
    loss: float | None = None  # Δ against its sentence's true tree, once asked

    def same_tree(self, other) -> bool:
        return self.nodes.shape == other.nodes.shape and bool(
            np.array_equal(self.nodes, other.nodes)
        )


class Grammar:
    """Symbols, rules and span templates. Features are the binary rules, then the unary,
    then the root rules, each in the order first seen, then the span features: a block
    of ``span_width`` columns per phrase symbol (in symbol order; POS tags have none),
    one run of columns per template of ``templates`` (SPAN_TEMPLATES names; () none).
    ``unary``: the chain bound (0 or 1: one unary rule at most, over a POS tag when
    chains are joined). ``words``: the vocabulary the word templates know."""

    def __init__(self, unary: int = 0, templates=()):
        unknown = [t for t in templates if t not in SPAN_TEMPLATES]
        if unknown:
            raise ValueError(
                f"unknown span template {unknown[0]!r}: expected " + ", ".join(SPAN_TEMPLATES)
            )
        self.unary = int(unary)
        self.templates = tuple(templates)
        self.symbols: list = []
        self.index: dict = {}
        self.terminals: set = set()
        self.binary: dict = {}  # (A, B, C) -> order
        self.unaries: dict = {}  # (A, B) -> order
        self.roots: dict = {}  # A -> order
        self.words: dict = {}  # word -> index (word templates only)
        # the span features there are: None every (row, column), else the sorted
        # row·span_width + column of those there are (a model file's)
        self.support = None
        self._frozen = None

    @property
    def reads_words(self) -> bool:
        return any(t.endswith("_word") for t in self.templates)

    def set_vocabulary(self, words) -> None:
        """The words the word templates know: every word of ``words`` (the training
        sentences'), in order first seen; none without a word template."""
        if self.reads_words:
            self.words = {word: k for k, word in enumerate(dict.fromkeys(words))}
            self._frozen = None

    # -- building -------------------------------------------------------------------------
    def symbol(self, name: str, add: bool = True) -> int:
        k = self.index.get(name)
        if k is None and add:
            k = self.index[name] = len(self.symbols)
            self.symbols.append(name)
            self._frozen = None
        return -1 if k is None else k

    def add_tree(self, top: Tree) -> None:
        """Every rule of a preprocessed tree (the tree below the root)."""
        self.roots.setdefault(self.symbol(top.label), len(self.roots))
        stack = [top]
        while stack:
            node = stack.pop()
            a = self.symbol(node.label)
            if node.is_preterminal:
                self.terminals.add(a)
                continue
            kids = [self.symbol(c.label) for c in node.children]
            if len(kids) == 2:
                self.binary.setdefault((a, kids[0], kids[1]), len(self.binary))
            elif len(kids) == 1:
                self.unaries.setdefault((a, kids[0]), len(self.unaries))
            else:
                raise ValueError(
                    f"expected a binarised tree, got a node {node.label} with {len(kids)} children"
                )
            stack.extend(node.children)
        self._frozen = None

    def rules_only(self) -> Grammar:
        """The same rules without span features."""
        out = copy.copy(self)
        out.templates, out.words, out.support, out._frozen = (), {}, None, None
        return out

    @property
    def n_rules(self) -> int:
        return len(self.binary) + len(self.unaries) + len(self.roots)

    @property
    def size(self) -> int:
        """The length of Ψ: the rules, then the span features."""
        return self.n_rules + self.arrays()["n_span"]

    def rule_lists(self):
        """(binary [(A, B, C)], unary [(A, B)], root [A]) in feature order."""

        def ordered(d):
            out = [None] * len(d)
            for key, k in d.items():
                out[k] = key
            return out

        return ordered(self.binary), ordered(self.unaries), ordered(self.roots)

    # -- what the CKY kernels read -------------------------------------------------------
    def arrays(self):
        if self._frozen is None:
            self._frozen = self._freeze()
        return self._frozen

    def _freeze(self):
        S = len(self.symbols)
        binary, unaries, roots = self.rule_lists()
        nb, nu = len(binary), len(unaries)
        B = np.array(binary, dtype=np.int64).reshape(-1, 3)
        order = np.argsort(B[:, 1], kind="stable")
        bin_ptr = np.zeros(S + 1, dtype=np.int64)
        np.add.at(bin_ptr, B[:, 1] + 1, 1)
        bin_ptr = np.cumsum(bin_ptr)
        # unary chains of at most max(unary, 1) rules, each a path A -> ... -> bottom
        bound = max(self.unary, 1)
        by_child: dict = {}
        for k, (_, b) in enumerate(unaries):
            by_child.setdefault(b, []).append(k)
        chains = []  # (top, bottom, [rule ks top first])
        for b in sorted(by_child):
            frontier = [([k], unaries[k][0]) for k in by_child[b]]
            while frontier:
                rules, top = frontier.pop(0)
                chains.append((top, b, rules))
                if len(rules) < bound:
                    frontier.extend(([k] + rules, unaries[k][0]) for k in by_child.get(top, []))
        chains.sort(key=lambda c: c[1])
        chain_ptr = np.zeros(S + 1, dtype=np.int64)
        for _, b, _ in chains:
            chain_ptr[b + 1] += 1
        chain_ptr = np.cumsum(chain_ptr)
        chain_rules = [np.array(c[2], dtype=np.int64) for c in chains]
        lengths = np.array([len(r) for r in chain_rules], dtype=np.int64)
        ptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        flat_rules = np.concatenate(chain_rules) if chains else np.zeros(0, np.int64)
        U = np.array(unaries, dtype=np.int64).reshape(-1, 2)
        root_feat = np.full(S, -1, dtype=np.int64)
        for k, a in enumerate(roots):
            root_feat[a] = nb + nu + k
        # brackets each symbol stands for (joined chains several, @ and POS tags none)
        bases, base_ids, base_ptr = [], {}, [0]
        for k, name in enumerate(self.symbols):
            if k not in self.terminals and not name.startswith(INTERMEDIATE):
                for part in name.split(CHAIN_JOIN) if name else [name]:
                    bases.append(base_ids.setdefault(part, len(base_ids)))
            base_ptr.append(len(bases))
        # span features: a row per phrase symbol, a column run per template
        is_tag = np.isin(np.arange(S), list(self.terminals))
        tag_index = np.where(is_tag, np.cumsum(is_tag) - 1, -1).astype(np.int64)
        sym_row = np.where(is_tag, -1, np.cumsum(~is_tag) - 1).astype(np.int64)
        n_tags, n_words = int(is_tag.sum()), len(self.words)
        sizes = span_template_sizes(n_tags, n_words)
        kinds = np.array([SPAN_TEMPLATES.index(t) for t in self.templates], dtype=np.int64)
        widths = np.array([sizes[t] for t in self.templates], dtype=np.int64)
        offsets = np.concatenate(([0], np.cumsum(widths)[:-1])).astype(np.int64)
        n_rows = int(S - n_tags) if len(kinds) else 0
        cells = n_rows * int(widths.sum())
        span_feat = np.full(cells, -1, dtype=np.int64)
        present = np.arange(cells) if self.support is None else self.support
        span_feat[present] = self.n_rules + np.arange(len(present))
        return dict(
            span_feat=span_feat.reshape(n_rows, int(widths.sum())),
            n_span=len(present),
            tag_index=tag_index,
            sym_row=sym_row,
            n_rows=n_rows,
            n_tags=n_tags,
            n_words=n_words,
            kinds=kinds,
            offsets=offsets,
            span_width=int(widths.sum()),
            n_sym=S,
            bin_ptr=bin_ptr,
            bin_parent=B[order, 0].copy(),
            bin_right=B[order, 2].copy(),
            bin_feat=order.astype(np.int64),
            chain_ptr=chain_ptr,
            chain_top=np.array([c[0] for c in chains], dtype=np.int64),
            chain_bottom=np.array([c[1] for c in chains], dtype=np.int64),
            chain_sym_ptr=ptr,
            chain_syms=U[flat_rules, 0].copy() if len(flat_rules) else np.zeros(0, np.int64),
            chain_feat_ptr=ptr,
            chain_feats=(flat_rules + nb).astype(np.int64),
            chain_rule_index=flat_rules,
            root_feat=root_feat,
            base_ptr=np.array(base_ptr, dtype=np.int64),
            base_idx=np.array(bases, dtype=np.int64),
            base_ids=base_ids,
            n_base=len(base_ids),
        )

    def scores(self, w):
        """Rule, chain and root scores of w, and w itself (contiguous: the kernels read
        the span features' weights from it)."""
        g = self.arrays()
        w = np.ascontiguousarray(w, dtype=np.float64)
        if len(w) != self.size:
            raise ValueError(f"expected {self.size} weights, got {len(w)}")
        bin_score = w[g["bin_feat"]]
        per_rule = w[g["chain_feats"]]
        ptr = g["chain_feat_ptr"]
        chain_score = np.add.reduceat(per_rule, ptr[:-1]) if len(per_rule) else np.zeros(0)
        root_score = np.full(g["n_sym"], -np.inf)
        has = g["root_feat"] >= 0
        root_score[has] = w[g["root_feat"][has]]
        return bin_score, chain_score, root_score, w

    # -- span features by name (the model file) ----------------------------------------
    def span_value_names(self) -> dict:
        """Per template, the name of each of its values (a tuple of strings)."""
        tags = [self.symbols[k] for k in sorted(self.terminals)]
        words = sorted(self.words, key=self.words.get) + [UNKNOWN_WORD]
        before, after = tags + [BEFORE_SENTENCE], tags + [AFTER_SENTENCE]
        one = lambda values: [(v,) for v in values]  # noqa: E731
        return {
            "first": one(tags),
            "last": one(tags),
            "before": one(before),
            "after": one(after),
            "length": one(LENGTH_BUCKETS),
            "before_first": [(b, f) for b in before for f in tags],
            "last_after": [(last, a) for last in tags for a in after],
            "first_word": one(words),
            "last_word": one(words),
            "before_word": one(words + [BEFORE_SENTENCE]),
            "after_word": one(words + [AFTER_SENTENCE]),
        }

    def _row_names(self):
        g = self.arrays()
        return [self.symbols[a] for a in np.flatnonzero(g["sym_row"] >= 0)]

    def span_feature_lines(self, w):
        """The span features of nonzero weight in w as ((template, label, value...),
        weight), sorted by template (in ``templates`` order), then by name."""
        g = self.arrays()
        width = g["span_width"]
        cells = np.arange(g["n_rows"] * width) if self.support is None else self.support
        values = np.asarray(w, dtype=np.float64)[self.n_rules :]
        names, labels = self.span_value_names(), self._row_names()
        out = []
        for q in np.flatnonzero(values):
            row, col = divmod(int(cells[q]), width)
            k = int(np.searchsorted(g["offsets"], col, side="right")) - 1
            template = self.templates[k]
            key = (template, labels[row]) + names[template][col - g["offsets"][k]]
            out.append(((k,) + key[1:], key, float(values[q])))
        out.sort(key=lambda item: item[0])
        return [(key, value) for _, key, value in out]

    def read_span_features(self, rows):
        """Set the span features from model-file lines split into fields (``s weight
        TEMPLATE LABEL VALUE...``): (their cells, their weights in that order). A bad
        line raises ValueError((its position, what was expected))."""
        arity = {t: 2 if t in ("before_first", "last_after") else 1 for t in self.templates}
        expected = (
            "expected a span feature 's weight TEMPLATE LABEL VALUE...' of a "
            "template of the header with a finite weight"
        )
        parsed = []
        for k, parts in enumerate(rows):
            try:
                value = float(parts[1]) if len(parts) > 1 else float("nan")
            except ValueError:
                value = float("nan")
            if (
                len(parts) < 4
                or parts[0] != "s"
                or parts[2] not in arity
                or len(parts) != 4 + arity[parts[2]]
                or not np.isfinite(value)
            ):
                raise ValueError(k, expected)
            parsed.append((parts[2], parts[3], tuple(parts[4:]), value))
            if parts[2].endswith("_word") and parts[4] not in (
                UNKNOWN_WORD,
                BEFORE_SENTENCE,
                AFTER_SENTENCE,
            ):
                self.words.setdefault(parts[4], len(self.words))
        self._frozen = None
        self.support = None
        g = self.arrays()
        lookup = {
            t: {v: i for i, v in enumerate(names)}
            for t, names in self.span_value_names().items()
            if t in arity
        }
        offsets = dict(zip(self.templates, g["offsets"].tolist()))
        cells, weights = [], []
        for k, (template, label, values, value) in enumerate(parsed):
            a = self.index.get(label, -1)
            row = g["sym_row"][a] if a >= 0 else -1
            v = lookup[template].get(values)
            if row < 0 or v is None:
                raise ValueError(
                    k,
                    f"expected a phrase label of the rules and values its "
                    f"template '{template}' takes",
                )
            cells.append(int(row) * g["span_width"] + offsets[template] + v)
            weights.append(value)
        cells, weights = np.array(cells, dtype=np.int64), np.array(weights)
        order = np.argsort(cells, kind="stable")
        cells, weights = cells[order], weights[order]
        twice = np.flatnonzero(cells[1:] == cells[:-1])
        if len(twice):
            raise ValueError(int(order[twice[0] + 1]), "expected each span feature once")
        self.support = cells
        self._frozen = None
        return cells, weights

    def context(self, tag_symbols, words=None) -> np.ndarray:
        """What the span templates read of each token: (tag index, word index), int64
        (n, 2); a symbol that is no tag gets tag 0 (CKY refuses its sentence anyway), a
        word not in the vocabulary (or none given) the index len(words)."""
        g = self.arrays()
        tag_symbols = np.asarray(tag_symbols, dtype=np.int64)
        ctx = np.zeros((len(tag_symbols), 2), dtype=np.int64)
        known = tag_symbols >= 0
        ctx[known, 0] = np.maximum(g["tag_index"][tag_symbols[known]], 0)
        if words is not None and self.words:
            vocabulary = self.words
            ctx[:, 1] = [vocabulary.get(word, len(vocabulary)) for word in words]
        else:
            ctx[:, 1] = len(self.words)
        return ctx

    def span_features(self, nodes, ctx) -> np.ndarray:
        """The span feature indices of a tree's nodes over its sentence's ``ctx``."""
        g = self.arrays()
        if not len(g["kinds"]):
            return np.zeros(0, dtype=np.int64)
        return span_features(
            np.ascontiguousarray(nodes, dtype=np.int64),
            ctx,
            g["kinds"],
            g["offsets"],
            g["n_tags"],
            g["n_words"],
            g["sym_row"],
            g["span_feat"],
        )

    # -- trees --------------------------------------------------------------------------
    def encode(self, top: Tree, add: bool = False):
        """The :class:`Parse` of a preprocessed tree, None if it uses a symbol or rule
        the grammar does not have."""
        nodes, feats = [], []
        binary, unaries = self.binary, self.unaries
        nb, nu = len(binary), len(unaries)
        root = self.index.get(top.label)
        if root is None or root not in self.roots:
            return None
        feats.append(nb + nu + self.roots[root])
        widths = _widths(top)
        stack = [(top, 0)]
        while stack:
            node, start = stack.pop()
            a = self.index.get(node.label)
            if a is None:
                return None
            if node.is_preterminal:
                nodes.append((a, start, start + 1))
                continue
            nodes.append((a, start, start + widths[id(node)]))
            kids = [self.index.get(c.label) for c in node.children]
            if None in kids:
                return None
            if len(kids) == 2:
                k = binary.get((a, kids[0], kids[1]))
                if k is None:
                    return None
                feats.append(k)
                left = widths[id(node.children[0])]
                stack.append((node.children[1], start + left))
                stack.append((node.children[0], start))
            else:
                k = unaries.get((a, kids[0]))
                if k is None:
                    return None
                feats.append(nb + k)
                stack.append((node.children[0], start))
        return Parse(
            np.array(nodes, dtype=np.int64).reshape(-1, 3), np.array(feats, dtype=np.int64)
        )

    def build_tree(self, nodes, words) -> Tree:
        """Rebuild from preorder (symbol, start, end): a node's children follow it and
        tile its span; a one-word node with nothing below it is a preterminal."""
        rows = np.asarray(nodes, dtype=np.int64).tolist()
        top = None
        open_nodes = []  # (node, end) of the nodes whose span is not yet tiled
        for pos, (a, i, j) in enumerate(rows):
            after = rows[pos + 1] if pos + 1 < len(rows) else None
            leaf = after is None or not (after[1] >= i and after[2] <= j)
            node = Tree(self.symbols[a], word=words[i]) if leaf else Tree(self.symbols[a])
            if open_nodes:
                open_nodes[-1][0].children.append(node)
            else:
                top = node
            if not leaf:
                open_nodes.append((node, j))
                continue
            while open_nodes and open_nodes[-1][1] <= j:
                open_nodes.pop()
        return top


def _widths(top: Tree) -> dict:
    """The words under each node of a tree, by the node's id (a walk, no recursion)."""
    widths = {}
    stack = [(top, False)]
    while stack:
        node, left = stack.pop()
        if node.is_preterminal:
            widths[id(node)] = 1
        elif not left:
            stack.append((node, True))
            stack.extend((child, False) for child in node.children)
        else:
            widths[id(node)] = sum(widths[id(child)] for child in node.children)
    return widths


# -- parsing ------------------------------------------------------------------------------


def cky(
    grammar: Grammar,
    w,
    tag_ids,
    starts,
    sentences=None,
    *,
    kbest=1,
    loss_weight=0.0,
    gold=None,
    ctx=None,
    n_threads=None,
    where=None,
):
    """The best (kbest 1) or two best (2) parses of the selected sentences: a list per
    sentence of up to kbest (Parse, score), best first (empty: no parse).

    tag_ids : int64 symbols of the POS tags of all sentences (−1 for a tag the grammar
    lacks), sentence s being ``tag_ids[starts[s]:starts[s+1]]``; ctx : what the span
    templates read of each token (:meth:`Grammar.context`; by default of the tags,
    every word unknown). loss_weight, gold: the bracket loss's augmentation, gold a
    pair (triples (start, end, base) int64 (m, 3), their starts per sentence).
    where : sentence s -> (file, line) for the messages (None: "sentence s+1").

    A sentence whose chart cannot fit in memory is an InputError naming it, before
    anything is allocated (:func:`cpsvm.decoding.cky.check_charts`; fewer threads run
    when only the charts parsed at once would not fit), or, should its chart outgrow
    memory while parsing, after: never a missing parse."""
    g = grammar.arrays()
    bin_score, chain_score, root_score, w = grammar.scores(w)
    if ctx is None:
        ctx = grammar.context(tag_ids)
    starts = np.asarray(starts, dtype=np.int64)
    if sentences is None:
        sentences = np.arange(len(starts) - 1, dtype=np.int64)
    sentences = np.ascontiguousarray(sentences, dtype=np.int64)
    lengths = np.diff(starts)[sentences]
    n_threads = check_charts(
        g, lengths, sentences, augmented=loss_weight != 0.0, where=where, n_threads=n_threads
    )
    m = len(sentences)
    outputs = _parse_outputs(lengths, kbest, grammar.unary, len(g["kinds"]))
    if gold is None:
        triples, gstarts = np.zeros((0, 3), np.int64), np.zeros(len(starts), np.int64)
    else:
        triples, gstarts = gold
    out_done = np.zeros(m, dtype=np.int8)
    try:
        with thread_count(n_threads):
            run_kernel(
                in_row_chunks,
                cky_kernels.cky_rows,  # read here, where a test may replace it
                m,
                np.ascontiguousarray(tag_ids, dtype=np.int64),
                starts,
                sentences,
                *_rule_arrays(g, bin_score, chain_score, root_score),
                int(kbest),
                float(loss_weight),
                triples,
                gstarts,
                g["n_base"],
                g["base_ptr"],
                g["base_idx"],
                ctx,
                g["sym_row"],
                g["span_feat"],
                w,
                g["kinds"],
                g["offsets"],
                g["n_tags"],
                g["n_words"],
                *outputs,
                out_done,
                min_rows=1,
            )
    except MemoryError:
        pass  # out_done tells which sentences were not parsed
    if not out_done.all():
        undone = np.flatnonzero(out_done == 0)
        q = int(undone[np.argmax(lengths[undone])])
        chart_refused(g, int(lengths[q]), int(sentences[q]), loss_weight != 0.0, where, True)
    return _parses_found(outputs, m, kbest)


def _rule_arrays(g, bin_score, chain_score, root_score):
    """The grammar's arrays as :func:`cpsvm.decoding.cky.cky_rows` takes them, from
    ``n_sym`` to ``root_feat``, with the rules' scores under the weights."""
    return (
        g["n_sym"],
        g["bin_ptr"],
        g["bin_parent"],
        g["bin_right"],
        bin_score,
        g["bin_feat"],
        g["chain_ptr"],
        g["chain_top"],
        g["chain_bottom"],
        chain_score,
        g["chain_sym_ptr"],
        g["chain_syms"],
        g["chain_feat_ptr"],
        g["chain_feats"],
        root_score,
        g["root_feat"],
    )


def _parse_outputs(lengths, kbest, unary, n_kinds):
    """The arrays :func:`cpsvm.decoding.cky.cky_rows` writes the parses of sentences of
    ``lengths`` into: (out_nodes, out_feats, out_nn, out_nf, out_score, out_base, caps,
    out_fbase, fcaps), ``kbest`` parses a sentence."""
    bound = max(unary, 1)
    caps = np.maximum(2 * lengths - 1, 1) * (bound + 1) + 1
    out_base = np.concatenate(([0], np.cumsum(caps * kbest)[:-1])).astype(np.int64)
    total = int(np.sum(caps * kbest))
    # a node's rule and span features; the root rule
    fcaps = caps * (n_kinds + 1) + 1
    out_fbase = np.concatenate(([0], np.cumsum(fcaps * kbest)[:-1])).astype(np.int64)
    out_nodes = np.zeros((total, 3), dtype=np.int64)
    out_feats = np.zeros(int(np.sum(fcaps * kbest)), dtype=np.int64)
    m = len(lengths)
    out_nn = np.zeros((m, kbest), dtype=np.int64)
    out_nf = np.zeros((m, kbest), dtype=np.int64)
    out_score = np.full((m, kbest), -np.inf)
    return (
        out_nodes,
        out_feats,
        out_nn,
        out_nf,
        out_score,
        out_base,
        caps.astype(np.int64),
        out_fbase,
        fcaps.astype(np.int64),
    )


def _parses_found(outputs, m, kbest):
    """A list per sentence of its (Parse, score), best first, from the kernel's outputs."""
    out_nodes, out_feats, out_nn, out_nf, out_score, out_base, caps, out_fbase, fcaps = outputs
    results = []
    for q in range(m):
        found = []
        for r in range(kbest):
            if out_score[q, r] == -np.inf and out_nn[q, r] == 0:
                continue
            at = out_base[q] + r * caps[q]
            fat = out_fbase[q] + r * fcaps[q]
            found.append(
                (
                    Parse(
                        out_nodes[at : at + out_nn[q, r]].copy(),
                        out_feats[fat : fat + out_nf[q, r]].copy(),
                    ),
                    float(out_score[q, r]),
                )
            )
        results.append(found)
    return results


def pcfg_weights(grammar: Grammar, parses) -> np.ndarray:
    """Log-probabilities of the maximum-likelihood PCFG of the training trees: each
    binary or unary rule's count over its parent's count, root rules' over the number of
    trees."""
    counts = np.bincount(np.concatenate([p.feats for p in parses]), minlength=grammar.size).astype(
        np.float64
    )
    binary, unaries, roots = grammar.rule_lists()
    parents = np.array([a for a, _, _ in binary] + [a for a, _ in unaries], dtype=np.int64)
    nr = len(parents)
    per_parent = np.bincount(parents, weights=counts[:nr], minlength=len(grammar.symbols))
    w = np.zeros(grammar.size)
    n_rules = grammar.n_rules
    w[:nr] = np.log(counts[:nr] / per_parent[parents])
    w[nr:n_rules] = np.log(counts[nr:n_rules] / counts[nr:n_rules].sum())
    return w


def parse_sentences(
    grammar: Grammar, w, options: TreeOptions, trees, fallback="S", n_threads=None, source=None
):
    """Each tree's sentence (its POS tags, -NONE- dropped as training did) parsed: the
    predicted tree with its root bracket, binarisation and joined chains undone, and
    whether the grammar parsed it (else, a tag the grammar does not know, a flat
    ``fallback`` node over the tags). A sentence too long for CKY's chart to fit in
    memory is an InputError naming ``source`` and the tree's line."""
    sentences = []
    for tree in trees:
        leaves = [p for p in tree.preterminals() if not (options.drop_none and p.label == "-NONE-")]
        sentences.append(leaves)
    tag_ids = np.array(
        [
            grammar.index.get(p.label, -1)
            if grammar.index.get(p.label, -1) in grammar.terminals
            else -1
            for leaves in sentences
            for p in leaves
        ],
        dtype=np.int64,
    )
    starts = np.concatenate(([0], np.cumsum([len(s) for s in sentences]))).astype(np.int64)
    ctx = grammar.context(tag_ids, [p.word for leaves in sentences for p in leaves])
    found = cky(
        grammar,
        w,
        tag_ids,
        starts,
        kbest=1,
        ctx=ctx,
        n_threads=n_threads,
        where=lambda s: (source, getattr(trees[s], "line", None)),
    )
    out, parsed = [], []
    for leaves, parses in zip(sentences, found):
        words = [p.word for p in leaves]
        if parses:
            binarised = grammar.build_tree(parses[0][0].nodes, words)
            out.append(with_root(debinarise(binarised)))
            parsed.append(True)
        else:
            flat = (
                Tree(fallback, [Tree(p.label, word=p.word) for p in leaves])
                if leaves
                else Tree(fallback, [])
            )
            out.append(with_root(flat))
            parsed.append(False)
    return out, parsed
