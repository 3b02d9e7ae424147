"""Parsing with a context-free grammar as a structural SVM (SVMcfg; Joachims, Finley &
Yu 2009, §5; Tsochantaridis et al. 2005).

An example is a sentence x, its POS tags (the gold tags: the terminals of the grammar),
and y its parse tree, preprocessed as :mod:`cpsvm.decoding.trees` describes (function tags
and -NONE- removed, unary chains joined or bounded, Markovised binarisation). The
grammar is the set of rules seen in the training trees: binary A → B C, unary A → B and
root rules ROOT → A. Ψ(x, y) counts how often y uses each rule (one feature per rule, in
the grammar's order) and, with span templates (``--features``, FEATURE_SETS of
:mod:`cpsvm.decoding.grammar`), the span features of y's constituents: a label with what
the sentence has at and beside the constituent's ends and its length (SPAN_TEMPLATES;
Taskar et al. 2004). A feature exists for every label and value, seen in the training
trees or not, so that wrong trees' constituents can get negative weight. Every part of
w·Ψ(x, y) depends on one rule or one labelled span, so argmax_y is CKY
(:mod:`cpsvm.decoding.grammar`, whose :class:`~cpsvm.decoding.grammar.Grammar` numbers
the features).

Losses (``-l``):

* 0: Δ(y, ŷ) = 100·[ŷ ≠ y] (LOSS_SCALE). The separation oracle needs the best tree
  other than y: a 2-best CKY; the better of its two trees that is not y.
* 1 (default; 0 with slack rescaling): a loss over brackets, Δ(y, ŷ) =
  100·(FP + FN)/(2·|y|), FP the labelled brackets of ŷ not in y, FN those of y not in
  ŷ, |y| y's number of brackets (at least 1); brackets are (label, start, end) of every
  node of the tree with its binarisation and joined chains undone (``@`` nodes none,
  ``S+VP`` two), the POS tags and the root not brackets. Since FP + FN = |y| + Σ over
  ŷ's brackets of (+1 if not in y, −1 if in y), the margin-rescaled argmax is a CKY
  whose items carry that ±1 (slack rescaling does not decompose and is refused with
  it, when -l 1 is asked for). Equals 100·(1 − F1) when |ŷ| = |y|.

A labelling of the examples is a list of :class:`~cpsvm.decoding.grammar.Parse` (one per
sentence): the tree's nodes in preorder and its feature indices. ``CfgProblem(trees)`` builds the
problem from trees as :func:`cpsvm.io.trees.read_trees` returns them (Python use, the
scikit-learn estimators); ``to_model`` gives a :class:`cpsvm.models.CfgModel`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np

from ... import memory
from ...conventions import LOSS_SCALE, MARGIN_RESCALING
from ...decoding.grammar import Grammar, Parse, cky, pcfg_weights, span_templates
from ...decoding.trees import TreeOptions, preprocess
from ...errors import OptionError
from ...memory import format_bytes
from ..base import StructuredProblem

LOSS_ZERO_ONE = 0
LOSS_BRACKETS = 1
LOSSES = (LOSS_ZERO_ONE, LOSS_BRACKETS)


# -- the unary chains' bound ---------------------------------------------------------------

# Memory of the grammar's unary chains (Grammar._freeze lists every path of at most
# --unary unary rules, and CKY walks them): per rule in a chain (its Python lists and
# arrays), and per chain.
CHAIN_RULE_BYTES = 64
CHAIN_BYTES = 256


def unary_chain_sizes(unaries, bound: int, limit: float):
    """``(chains, rules in them, longest chain)`` of the paths of at most ``bound`` rules
    through the unary rules ``[(parent, child)]`` (the chains Grammar._freeze makes),
    counted by length without making them; counting stops at the first length whose
    chains' memory passes ``limit`` bytes (their rules grow with the square of the bound
    when the rules have a cycle, such as S -> VP -> S)."""
    parents: dict = {}
    tops: dict = {}  # chains of the current length, by their top symbol
    for a, b in unaries:
        parents.setdefault(b, []).append(a)
        tops[a] = tops.get(a, 0) + 1
    chains = rules = length = 0
    while tops and length < bound:
        length += 1
        count = sum(tops.values())
        chains, rules = chains + count, rules + length * count
        if chains * CHAIN_BYTES + rules * CHAIN_RULE_BYTES > limit:
            break
        longer: dict = {}
        for top, k in tops.items():
            for a in parents.get(top, ()):
                longer[a] = longer.get(a, 0) + k
        tops = longer
    return chains, rules, length


def check_unary_chains(grammar: Grammar, source=None):
    """OptionError naming --unary when the grammar's unary chains of at most --unary rules
    would not fit in this machine's memory (with the largest value that fits)."""
    bound = max(grammar.unary, 1)
    if bound <= 1:
        return
    limit = memory.physical_memory()  # read at the call, where a test may replace it
    unaries = grammar.rule_lists()[1]
    chains, rules, length = unary_chain_sizes(unaries, bound, limit)
    need = chains * CHAIN_BYTES + rules * CHAIN_RULE_BYTES
    if need <= limit:
        return
    fits = length - 1
    raise OptionError(
        f"--unary {grammar.unary}: this grammar's {len(unaries)} unary rules make more than "
        f"{chains:,} chains of up to {length} rules ({format_bytes(need)}), more than this "
        f"machine's memory ({format_bytes(limit)}); --unary {fits} is the most that fits",
        source=source,
    )


# -- the problem -------------------------------------------------------------------------


def _bracket_multiset(grammar: Grammar, parse: Parse) -> Counter:
    g = grammar.arrays()
    out = Counter()
    for a, i, j in parse.nodes.tolist():
        for p in range(g["base_ptr"][a], g["base_ptr"][a + 1]):
            out[(int(g["base_idx"][p]), i, j)] += 1
    return out


class CfgProblem(StructuredProblem):
    """SVMcfg's problem on training trees (as read: the root bracket included).

    options : the preprocessing and Ψ's feature set (:class:`cpsvm.decoding.trees.TreeOptions`);
    loss_id : ``-l`` (LOSS_BRACKETS, the default, or LOSS_ZERO_ONE); loss_scale : Δ of a
    wrong tree; source : the trees' file, named with their lines by CKY's refusal of a
    sentence too long for memory.
    Trees that preprocessing empties (nothing but -NONE-) are left out (``n_skipped``).
    """

    flip_gain = None

    def __init__(
        self,
        trees,
        options: TreeOptions | None = None,
        loss_id=LOSS_BRACKETS,
        loss_scale=LOSS_SCALE,
        source=None,
    ):
        if loss_id not in LOSSES:
            raise ValueError(f"expected loss 0 (zero/one) or 1 (brackets), got {loss_id}")
        self.options = options or TreeOptions()
        self.loss_id = loss_id
        self.loss_scale = float(loss_scale)
        self.grammar = Grammar(self.options.unary, span_templates(self.options.features))
        tops, words, kept = [], [], []
        for k, tree in enumerate(trees):
            top = preprocess(tree, self.options)
            if top is None:
                continue
            tops.append(top)
            words.append(top.words())
            kept.append(k)
            self.grammar.add_tree(top)
        if not tops:
            raise ValueError("expected at least one tree with a word")
        check_unary_chains(self.grammar, source)
        self.kept = np.array(kept, dtype=np.int64)
        self.source = source
        self.lines = [getattr(trees[k], "line", None) for k in kept]
        self.n_skipped = len(trees) - len(tops)
        self.words = words
        self.tag_ids = np.array(
            [self.grammar.index[t] for top in tops for t in top.tags()], dtype=np.int64
        )
        self.starts = np.concatenate(([0], np.cumsum([len(w) for w in words]))).astype(np.int64)
        flat = [w for ws in words for w in ws]
        self.grammar.set_vocabulary(flat)
        self.ctx = self.grammar.context(self.tag_ids, flat)
        self.gold = [self.grammar.encode(t) for t in tops]
        for s, parse in enumerate(self.gold):
            own = self.ctx[self.starts[s] : self.starts[s + 1]]
            parse.feats = np.concatenate(
                (parse.feats, self.grammar.span_features(parse.nodes, own))
            )
        self._true = tuple(self.gold)
        self._packs = {}
        self.n_examples = len(tops)
        self.size_psi = self.grammar.size
        self.top_label = Counter(t.label for t in tops).most_common(1)[0][0]
        self._gold_brackets = [_bracket_multiset(self.grammar, p) for p in self.gold]
        triples, gstarts = [], [0]
        for c in self._gold_brackets:
            triples.extend((i, j, b) for (b, i, j) in c)
            gstarts.append(len(triples))
        self._gold_arrays = (
            np.array(triples, dtype=np.int64).reshape(-1, 3),
            np.array(gstarts, dtype=np.int64),
        )
        self._gold_scale = np.array(
            [self.loss_scale / (2.0 * max(sum(c.values()), 1)) for c in self._gold_brackets]
        )

    @classmethod
    def from_dataset(cls, dataset, loss_id=LOSS_BRACKETS, options=None, **ignored):
        return cls(dataset.trees, options=options, loss_id=loss_id, source=dataset.source)

    def _where(self, s):
        """(file, line) of sentence s, for CKY's messages."""
        return self.source, self.lines[s]

    def _rows(self, rows):
        return np.arange(self.n_examples) if rows is None else np.asarray(rows, np.int64)

    def true_labels(self):
        return self._true

    # Labellings packed for the -w 4 cache (margins_many, losses): at most this many kept.
    PACKED = 16

    def _packed(self, labels):
        """(feature indices of the trees end to end, where each tree's start, Δ of each
        or None until asked) of a labelling of all examples, kept by identity (with a
        reference, so that the identity stays its) while it is among the PACKED last
        used."""
        key = id(labels)
        entry = self._packs.pop(key, None)
        if entry is not None and entry[0] is labels:
            self._packs[key] = entry
        else:
            lengths = np.array([len(p.feats) for p in labels], dtype=np.int64)
            entry = [
                labels,
                np.concatenate([p.feats for p in labels]),
                np.concatenate(([0], np.cumsum(lengths)[:-1])),
                None,
            ]
            self._packs[key] = entry
            while len(self._packs) > self.PACKED:
                del self._packs[next(iter(self._packs))]
        return entry

    def margins_many(self, w, labellings):
        """Margins of several labellings of all examples (the -w 4 cache: the true one
        and the cached ones, the same lists from one iteration to the next): one gather
        and one segmented sum each."""
        w = np.asarray(w, dtype=np.float64)
        _, feats, at, _ = self._packed(self._true)
        true_scores = np.add.reduceat(w[feats], at)
        out = []
        for labels in labellings:
            _, feats, at, _ = self._packed(labels)
            out.append(true_scores - np.add.reduceat(w[feats], at))
        return out

    def separate(self, w, rescaling, rows=None):
        rows = self._rows(rows)
        w = np.asarray(w, dtype=np.float64)
        if self.loss_id == LOSS_BRACKETS:
            if rescaling != MARGIN_RESCALING:
                raise ValueError("the bracket loss (-l 1) needs margin rescaling (-o 2)")
            # one loss-augmented CKY per sentence; its per-bracket weight is the
            # sentence's scale, so the sentences are parsed in groups of equal scale
            out = [None] * len(rows)
            scales = self._gold_scale[rows]
            for scale in np.unique(scales):
                at = np.flatnonzero(scales == scale)
                found = cky(
                    self.grammar,
                    w,
                    self.tag_ids,
                    self.starts,
                    rows[at],
                    kbest=1,
                    loss_weight=float(scale),
                    gold=self._gold_arrays,
                    ctx=self.ctx,
                    where=self._where,
                )
                for q, parses in zip(at, found):
                    out[q] = parses[0][0]
            return [self._better_than_true(w, i, p, rescaling) for i, p in zip(rows, out)]
        found = cky(
            self.grammar,
            w,
            self.tag_ids,
            self.starts,
            rows,
            kbest=2,
            ctx=self.ctx,
            where=self._where,
        )
        out = []
        for i, parses in zip(rows, found):
            other = [p for p, _ in parses if not p.same_tree(self.gold[i])]
            out.append(self._better_than_true(w, i, other[0], rescaling) if other else self.gold[i])
        return out

    def _better_than_true(self, w, i, parse, rescaling):
        """``parse`` if its constraint is violated at all, else the true tree."""
        loss = self._loss(i, parse)
        margin = float(w[self.gold[i].feats].sum() - w[parse.feats].sum())
        value = loss - margin if rescaling == MARGIN_RESCALING else loss * (1.0 - margin)
        return parse if value > 0 else self.gold[i]

    def _loss(self, i, parse) -> float:
        # kept on the parse: the -w 4 cache asks for a cached tree's loss again and again
        if parse.loss is None:
            parse.loss = self._compute_loss(i, parse)
        return parse.loss

    def _compute_loss(self, i, parse) -> float:
        if self.loss_id == LOSS_ZERO_ONE:
            return 0.0 if parse.same_tree(self.gold[i]) else self.loss_scale
        gold = self._gold_brackets[i]
        mine = _bracket_multiset(self.grammar, parse)
        wrong = sum(((gold - mine) + (mine - gold)).values())
        return float(self._gold_scale[i] * wrong)

    def _scores(self, w, parses) -> np.ndarray:
        """w·Ψ of each parse: one gather and one segmented sum."""
        lengths = np.array([len(p.feats) for p in parses], dtype=np.int64)
        if len(parses) == 0:
            return np.zeros(0)
        at = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        return np.add.reduceat(w[np.concatenate([p.feats for p in parses])], at)

    def losses(self, labels, rows=None):
        if rows is None and len(labels) == self.n_examples:
            entry = self._packed(labels)
            if entry[3] is None:
                entry[3] = np.array(
                    [self._loss(i, p) for i, p in enumerate(labels)], dtype=np.float64
                )
            entry[3].flags.writeable = False
            return entry[3]
        return np.array(
            [self._loss(i, p) for i, p in zip(self._rows(rows), labels)], dtype=np.float64
        )

    def margins(self, w, labels, rows=None):
        w = np.asarray(w, dtype=np.float64)
        rows = self._rows(rows)
        return self._scores(w, [self.gold[i] for i in rows]) - self._scores(w, list(labels))

    def delta_psi_sum(self, weights, labels, rows=None):
        feats, coef = [], []
        for i, p, a in zip(self._rows(rows), labels, weights):
            if a == 0 or p is self.gold[i] or p.same_tree(self.gold[i]):
                continue
            feats += [self.gold[i].feats, p.feats]
            coef += [np.full(len(self.gold[i].feats), a), np.full(len(p.feats), -a)]
        if not feats:
            return np.zeros(self.size_psi)
        return np.bincount(
            np.concatenate(feats), weights=np.concatenate(coef), minlength=self.size_psi
        )

    def psi(self, i, parse=None) -> np.ndarray:
        """Ψ(x_i, y) (dense rule counts) of a Parse (the true tree by default)."""
        parse = self.gold[i] if parse is None else parse
        return np.bincount(parse.feats, minlength=self.size_psi).astype(np.float64)

    def split_labels(self, labels, rows):
        return [[p] for p in labels]

    def pick(self, candidates, choice):
        return [candidates[c][i] for i, c in enumerate(choice)]

    def predict(self, w, trees):
        """The parse trees (with their root bracket, preprocessing undone) of the
        sentences of ``trees`` (their POS tags and words are read)."""
        return self.to_model(w).parse(trees, source=self.source)[0]

    def to_model(self, w, n_train: int = 0, loss_id: int = LOSS_ZERO_ONE, trained_by: str = "svm"):
        from ...models import CfgModel

        return CfgModel(
            grammar=self.grammar,
            w=np.asarray(w, dtype=np.float64).copy(),
            options=self.options,
            n_train=n_train or self.n_examples,
            trained_by=trained_by,
            fallback=self.top_label,
        )

    def pcfg_model(self):
        """The maximum-likelihood PCFG of the training trees as a model: of the rules
        only, whatever the feature set (a 'cpsvm cfg model V1')."""
        from ...models import CfgModel

        w = pcfg_weights(self.grammar, self.gold)[: self.grammar.n_rules]
        return CfgModel(
            grammar=self.grammar.rules_only(),
            w=w,
            options=replace(self.options, features="rules"),
            n_train=self.n_examples,
            trained_by="pcfg",
            fallback=self.top_label,
        )
