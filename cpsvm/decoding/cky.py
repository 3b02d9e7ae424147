"""CKY over a binarised grammar with bounded unary chains: best and 2-best parses,
optionally loss-augmented, batched over sentences on threads
(:func:`cpsvm.threads.in_row_chunks`; each sentence is parsed on its own, so results do
not depend on the thread count).

The grammar (:class:`cpsvm.decoding.grammar.Grammar`) reaches the kernels as arrays:

* symbols 0..S-1 (phrase labels, intermediate ``@`` labels and POS tags alike);
* binary rules A → B C, sorted by B (``bin_ptr`` indexes them by B), each with its
  score; a POS tag t is the item of its one-word span;
* unary *chains*: every sequence of at most U unary rules A → X1 → ... → B, each with
  its score (the sum of its rules'), the symbols of its nodes above B and its rules,
  indexed by B (``chain_ptr``). A span's items are layer 0 (a binary rule or the tag)
  and layer 1 (a chain over a layer-0 item of the same span), so every tree has exactly
  one derivation;
* root scores per symbol (−inf: not a root);
* span features: a phrase symbol (one with a row in ``sym_row``; POS tags have none)
  over the words i..j has the features ``span_feat[row, c]`` (−1: none) of the columns
  c of the span, one per template (:func:`span_value`: the tags at and beside the
  span's ends, its length, the words at its ends), and scores their weights; a node's
  score depends on its symbol and span only, so CKY stays exact.

A derivation's score is the sum of its rules' and its nodes' span scores plus, with
``loss_weight`` > 0, loss_weight·(+1 for each bracket of a node not in the gold tree, −1
for each in it): the bracket loss's part that depends on ŷ (:mod:`cpsvm.problems.cfg.problem`).
``kbest`` 2 keeps the two best derivations of each (span, symbol, layer), so the root
yields the two best trees.

Memory: :func:`chart_bytes` is what a sentence's chart takes at first;
:func:`check_charts` refuses a sentence whose chart cannot fit before anything is
allocated (and lowers the thread count when only the charts parsed at once would not
fit), :func:`chart_refused` says so, naming the sentence.

A tree comes out as its nodes in preorder, (symbol, start, end) each — the POS tags
included, the root not — and its feature indices: its rules' (root rule first), each
followed by the span features of the node it builds.
"""

from __future__ import annotations

import numpy as np

from .. import memory
from ..compiled import njit
from ..errors import InputError
from ..memory import format_bytes
from ..threads import get_num_threads

NEG = -np.inf

# The chart of a sentence of n words has a cell per span (n(n+1)/2 of them) and, per
# cell, a slot per symbol (int32) and the span features' columns (int64 per template);
# its entries (a symbol with a derivation over a span: 104 bytes) start at
# INITIAL_ENTRIES a span and double when full; slots are int32, so at most MAX_ENTRIES.
INITIAL_ENTRIES = 4
ENTRY_BYTES = 8 + 4 * 8 + 4 * 8 + 2 * 8 + 2 * 8
MAX_ENTRIES = 2**31 - 1


def chart_bytes(n, n_sym, n_kinds, n_base, augmented):
    """Bytes the CKY of one sentence of ``n`` words allocates at least (:func:`_cky_one`,
    and the gold brackets of :func:`cky_rows` when ``augmented``): what it needs before
    its entries outgrow their first allocation."""
    spans = n * (n + 1) // 2
    per_span = 4 * n_sym + 8 * max(n_kinds, 1) + 16 + INITIAL_ENTRIES * ENTRY_BYTES
    gold = (n + 1) * (n + 1) * max(n_base, 1) if augmented else 0
    return spans * per_span + gold


def run_kernel(kernel, *args, **options):
    """``kernel(*args, **options)``, a MemoryError raised in it (numba wraps one in a
    SystemError) raised as such."""
    try:
        kernel(*args, **options)
    except SystemError as e:
        if isinstance(e.__cause__, MemoryError):
            raise e.__cause__ from None
        raise


def check_charts(g, lengths, sentences, *, augmented=False, where=None, n_threads=None):
    """The thread count to parse sentences of ``lengths`` (of indices ``sentences``)
    with a grammar of arrays ``g`` (:meth:`cpsvm.decoding.grammar.Grammar.arrays`):
    ``n_threads`` (None: the caller's), or fewer when the charts of the longest
    sentences parsed at once would not fit in memory together. InputError naming the
    sentence whose chart alone would not (``where`` as
    :func:`cpsvm.decoding.grammar.cky`'s)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if not len(lengths):
        return n_threads
    need = np.array(
        [
            float(chart_bytes(int(n), g["n_sym"], len(g["kinds"]), g["n_base"], augmented))
            for n in lengths
        ]
    )
    limit = memory.physical_memory()
    worst = int(np.argmax(need))
    if need[worst] > limit:
        chart_refused(g, int(lengths[worst]), int(sentences[worst]), augmented, where)
    threads = n_threads or get_num_threads()
    largest = np.cumsum(np.sort(need)[::-1][:threads])
    fitting = int(np.searchsorted(largest, limit, side="right"))
    return n_threads if fitting >= len(largest) else max(fitting, 1)


def chart_refused(g, n, s, augmented, where, while_parsing=False):
    """InputError: the chart of sentence s (n words) does not fit in memory (or, with
    ``while_parsing``, outgrew it)."""
    need = format_bytes(chart_bytes(n, g["n_sym"], len(g["kinds"]), g["n_base"], augmented))
    source, line = where(s) if where is not None else (None, None)
    what = f"a sentence of {n} words" if source is not None else f"sentence {s + 1} ({n} words)"
    installed = format_bytes(memory.physical_memory())
    if while_parsing:
        said = f"ran out of memory in CKY (its chart needs {need}, and more as it fills)"
    else:
        said = f"would need a CKY chart of {need}, more than this machine's memory ({installed})"
    raise InputError(
        f"{what} {said}; --max-length leaves longer sentences out", source=source, line=line
    )


@njit(cache=True)
def _span(i, j, n):
    """The index of the span of words i..j−1 (0 <= i < j <= n) among a sentence's
    n(n+1)/2: by start, then by end."""
    return i * (2 * n - i + 1) // 2 + j - i - 1


@njit(cache=True)
def _length_bucket(length):
    """The bucket of a span's length (grammar.LENGTH_BUCKETS: 1, 2, 3, 4, 5, 6-7, 8-10, 11-15,
    16-20, 21-30, 31+)."""
    if length <= 5:
        return length - 1
    if length <= 7:
        return 5
    if length <= 10:
        return 6
    if length <= 15:
        return 7
    if length <= 20:
        return 8
    if length <= 30:
        return 9
    return 10


@njit(cache=True)
def span_value(ctx, i, j, kind, n_tags, n_words):
    """The value of template ``kind`` (its index in grammar.SPAN_TEMPLATES) on the words
    i..j−1 of a sentence whose token t is ``ctx[t]`` = (tag index 0..n_tags−1, word
    index 0..n_words, n_words for a word not in the vocabulary); beyond the sentence
    the tag is n_tags, the word n_words + 1."""
    n = ctx.shape[0]
    if kind == 0:
        return ctx[i, 0]
    if kind == 1:
        return ctx[j - 1, 0]
    if kind == 2:
        return ctx[i - 1, 0] if i > 0 else n_tags
    if kind == 3:
        return ctx[j, 0] if j < n else n_tags
    if kind == 4:
        return _length_bucket(j - i)
    if kind == 5:
        return (ctx[i - 1, 0] if i > 0 else n_tags) * n_tags + ctx[i, 0]
    if kind == 6:
        return ctx[j - 1, 0] * (n_tags + 1) + (ctx[j, 0] if j < n else n_tags)
    if kind == 7:
        return ctx[i, 1]
    if kind == 8:
        return ctx[j - 1, 1]
    if kind == 9:
        return ctx[i - 1, 1] if i > 0 else n_words + 1
    return ctx[j, 1] if j < n else n_words + 1


@njit(cache=True)
def _span_columns(ctx, kinds, offsets, n_tags, n_words):
    """Each span's columns (by :func:`_span`, one per template) of the span weights."""
    n = ctx.shape[0]
    n_kinds = len(kinds)
    cols = np.zeros((max(n * (n + 1) // 2, 1), max(n_kinds, 1)), dtype=np.int64)
    for i in range(n):
        for j in range(i + 1, n + 1):
            for k in range(n_kinds):
                cols[_span(i, j, n), k] = offsets[k] + span_value(
                    ctx, i, j, kinds[k], n_tags, n_words
                )
    return cols


@njit(cache=True)
def _span_score(a, sp, sym_row, span_feat, w, cols, n_kinds):
    row = sym_row[a]
    if row < 0:
        return 0.0
    total = 0.0
    for k in range(n_kinds):
        f = span_feat[row, cols[sp, k]]
        if f >= 0:
            total += w[f]
    return total


@njit(cache=True)
def _emit_span_features(a, sp, sym_row, span_feat, cols, n_kinds, out, at):
    """Write the span features of symbol a over span sp at out[at:]; the new end."""
    row = sym_row[a]
    if row < 0:
        return at
    for k in range(n_kinds):
        f = span_feat[row, cols[sp, k]]
        if f >= 0:
            out[at] = f
            at += 1
    return at


@njit(cache=True)
def span_features(nodes, ctx, kinds, offsets, n_tags, n_words, sym_row, span_feat):
    """The span feature indices of a tree's nodes (symbol, start, end) over a sentence
    (``ctx`` as :func:`span_value`), in node order."""
    n_kinds = len(kinds)
    out = np.empty(len(nodes) * n_kinds, dtype=np.int64)
    at = 0
    for m in range(len(nodes)):
        row = sym_row[nodes[m, 0]]
        if row < 0:
            continue
        for k in range(n_kinds):
            f = span_feat[
                row,
                offsets[k] + span_value(ctx, nodes[m, 1], nodes[m, 2], kinds[k], n_tags, n_words),
            ]
            if f >= 0:
                out[at] = f
                at += 1
    return out[:at]


@njit(cache=True)
def _insert(sc, bp, a, value, code, kbest):
    if value > sc[a, 0]:
        if kbest > 1:
            sc[a, 1] = sc[a, 0]
            bp[a, 1] = bp[a, 0]
        sc[a, 0] = value
        bp[a, 0] = code
    elif kbest > 1 and value > sc[a, 1]:
        sc[a, 1] = value
        bp[a, 1] = code


@njit(cache=True)
def _node_loss(gold, i, j, a, base_ptr, base_idx, lw):
    total = 0.0
    for p in range(base_ptr[a], base_ptr[a + 1]):
        total += -lw if gold[i, j, base_idx[p]] else lw
    return total


@njit(cache=True)
def _cky_one(tags, n_sym, binary, chains, roots, kbest, loss, spans, out, row_at):
    """The ``kbest`` best parses of one sentence into one row of the outputs.

    binary, chains, roots: the grammar's arrays (:func:`cky_rows`' ``bin_*``, ``chain_*``
    and ``root_*``, in its order); loss: (lw, gold, base_ptr, base_idx); spans: (ctx,
    sym_row, span_feat, w, kinds, offsets, n_tags, n_words); out: (out_nodes, out_feats,
    and the row's nn, nf, score); row_at: where the row's nodes and features start and how
    many a parse may take (base, cap, fbase, fcap)."""
    out_nodes, out_feats, out_nn, out_nf, out_score = out
    n = len(tags)
    for r in range(kbest):
        out_nn[r] = 0
        out_nf[r] = 0
        out_score[r] = NEG
    if n == 0:
        return
    for t in range(n):
        if tags[t] < 0:
            return
    ctx, sym_row, span_feat, w, kinds, offsets, n_tags, n_words = spans
    cols = _span_columns(ctx, kinds, offsets, n_tags, n_words)
    scoring = (sym_row, span_feat, w, cols, len(kinds))
    chart = _fill_chart(tags, n_sym, binary, chains, kbest, loss, scoring)
    best_e, best_r, best_v = _best_roots(chart, roots[0], n, kbest)
    base, cap, fbase, fcap = row_at
    for r in range(kbest):
        if best_e[r] < 0:
            continue
        out_score[r] = best_v[r]
        out_nn[r], out_nf[r] = _read_parse(
            chart,
            binary,
            chains,
            roots[1],
            scoring,
            n,
            n_sym,
            best_e[r],
            best_r[r],
            out_nodes,
            out_feats,
            base + r * cap,
            fbase + r * fcap,
        )


@njit(cache=True)
def _fill_chart(tags, n_sym, binary, chains, kbest, loss, scoring):
    """The chart of a sentence, span by span from the shortest: (slot, lo, hi, e_sym,
    e_bp, e_top, e_tsc). ``slot[span * n_sym + symbol]`` is the symbol's entry over the
    span (−1: none) and ``lo[span]:hi[span]`` the span's entries; an entry has its
    symbol, the back-pointers of its four derivations (layer 0's two best, then layer
    1's), which two of them are best overall (−1: none) and their scores. A span's steps
    are written out here: calls to helpers per span or entry slowed CKY down."""
    bin_ptr, bin_parent, bin_right, bin_score, _ = binary
    chain_ptr, chain_top, _, chain_score, chain_sym_ptr, chain_syms, _, _ = chains
    lw, gold, base_ptr, base_idx = loss
    sym_row, span_feat, w, cols, n_kinds = scoring
    n = len(tags)
    n_span = n * (n + 1) // 2
    slot = np.full(n_span * n_sym, -1, dtype=np.int32)
    lo = np.zeros(n_span, dtype=np.int64)
    hi = np.zeros(n_span, dtype=np.int64)
    capacity = INITIAL_ENTRIES * n_span + 16
    e_sym = np.empty(capacity, dtype=np.int64)
    e_sc = np.empty((capacity, 4))
    e_bp = np.empty((capacity, 4), dtype=np.int64)
    e_top = np.empty((capacity, 2), dtype=np.int64)
    e_tsc = np.empty((capacity, 2))
    used = 0
    # one span's derivations as they are found, per layer: each symbol's two best scores
    # and back-pointers, the symbols found and a mark of them
    s0 = np.full((n_sym, 2), NEG)
    b0 = np.zeros((n_sym, 2), dtype=np.int64)
    s1 = np.full((n_sym, 2), NEG)
    b1 = np.zeros((n_sym, 2), dtype=np.int64)
    t0 = np.empty(n_sym, dtype=np.int64)
    t1 = np.empty(n_sym, dtype=np.int64)
    in0 = np.zeros(n_sym, dtype=np.bool_)
    in1 = np.zeros(n_sym, dtype=np.bool_)
    for length in range(1, n + 1):
        for i in range(n - length + 1):
            j = i + length
            sp = _span(i, j, n)
            n0 = 0
            n1 = 0
            if length == 1:
                a = tags[i]
                s0[a, 0] = 0.0
                b0[a, 0] = -1
                t0[0] = a
                in0[a] = True
                n0 = 1
            else:
                for k in range(i + 1, j):
                    ls = _span(i, k, n)
                    rs = _span(k, j, n)
                    for e in range(lo[ls], hi[ls]):
                        bsym = e_sym[e]
                        l0 = e_tsc[e, 0]
                        l1 = e_tsc[e, 1]
                        for r in range(bin_ptr[bsym], bin_ptr[bsym + 1]):
                            f = slot[rs * n_sym + bin_right[r]]
                            if f < 0:
                                continue
                            a = bin_parent[r]
                            if not in0[a]:
                                in0[a] = True
                                t0[n0] = a
                                n0 += 1
                            code = (r * (n + 1) + k) * 4
                            rule = bin_score[r]
                            _insert(s0, b0, a, rule + l0 + e_tsc[f, 0], code, kbest)
                            if kbest > 1:
                                if e_tsc[f, 1] > NEG:
                                    _insert(s0, b0, a, rule + l0 + e_tsc[f, 1], code + 1, kbest)
                                if l1 > NEG:
                                    _insert(s0, b0, a, rule + l1 + e_tsc[f, 0], code + 2, kbest)
                if lw != 0.0 or n_kinds > 0:
                    for q in range(n0):
                        a = t0[q]
                        d = _span_score(a, sp, sym_row, span_feat, w, cols, n_kinds)
                        if lw != 0.0:
                            d += _node_loss(gold, i, j, a, base_ptr, base_idx, lw)
                        for r in range(kbest):
                            if s0[a, r] > NEG:
                                s0[a, r] += d
            # layer 1: unary chains over layer-0 items
            for q in range(n0):
                bsym = t0[q]
                for c in range(chain_ptr[bsym], chain_ptr[bsym + 1]):
                    a = chain_top[c]
                    extra = chain_score[c]
                    for p in range(chain_sym_ptr[c], chain_sym_ptr[c + 1]):
                        if n_kinds > 0:
                            extra += _span_score(
                                chain_syms[p], sp, sym_row, span_feat, w, cols, n_kinds
                            )
                        if lw != 0.0:
                            extra += _node_loss(gold, i, j, chain_syms[p], base_ptr, base_idx, lw)
                    for r in range(kbest):
                        if s0[bsym, r] > NEG:
                            if not in1[a]:
                                in1[a] = True
                                t1[n1] = a
                                n1 += 1
                            _insert(s1, b1, a, s0[bsym, r] + extra, c * 2 + r, kbest)
            # the cell's entries: every symbol with a derivation, its two best overall
            lo[sp] = used
            for pass_ in range(2):
                count = n0 if pass_ == 0 else n1
                for q in range(count):
                    a = t0[q] if pass_ == 0 else t1[q]
                    if pass_ == 1 and in0[a]:
                        continue
                    if used == capacity:
                        capacity = _grown_capacity(capacity)
                        e_sym = _grow1(e_sym, capacity)
                        e_sc = _grow2(e_sc, capacity)
                        e_bp = _grow2(e_bp, capacity)
                        e_top = _grow2(e_top, capacity)
                        e_tsc = _grow2(e_tsc, capacity)
                    e_sym[used] = a
                    e_sc[used, 0] = s0[a, 0]
                    e_sc[used, 1] = s0[a, 1]
                    e_sc[used, 2] = s1[a, 0]
                    e_sc[used, 3] = s1[a, 1]
                    e_bp[used, 0] = b0[a, 0]
                    e_bp[used, 1] = b0[a, 1]
                    e_bp[used, 2] = b1[a, 0]
                    e_bp[used, 3] = b1[a, 1]
                    best = -1
                    second = -1
                    for m in range(4):
                        v = e_sc[used, m]
                        if v == NEG:
                            continue
                        if best < 0 or v > e_sc[used, best]:
                            second = best
                            best = m
                        elif second < 0 or v > e_sc[used, second]:
                            second = m
                    if kbest == 1:
                        second = -1
                    e_top[used, 0] = best
                    e_top[used, 1] = second
                    e_tsc[used, 0] = e_sc[used, best]
                    e_tsc[used, 1] = e_sc[used, second] if second >= 0 else NEG
                    slot[sp * n_sym + a] = used
                    used += 1
            hi[sp] = used
            for q in range(n0):
                a = t0[q]
                s0[a, 0] = NEG
                s0[a, 1] = NEG
                in0[a] = False
            for q in range(n1):
                a = t1[q]
                s1[a, 0] = NEG
                s1[a, 1] = NEG
                in1[a] = False
    return slot, lo, hi, e_sym, e_bp, e_top, e_tsc


@njit(cache=True)
def _grown_capacity(capacity):
    """The entries' next capacity: twice, up to the int32 slots' limit."""
    if capacity >= MAX_ENTRIES:
        raise MemoryError("CKY chart entries beyond int32 slots")
    return min(2 * capacity, MAX_ENTRIES)


@njit(cache=True)
def _best_roots(chart, root_score, n, kbest):
    """The two best (entry, rank, score) over the whole span with their root rules
    (entry −1: none)."""
    _, lo, hi, e_sym, _, _, e_tsc = chart
    top = _span(0, n, n)
    best_e = np.full(2, -1, dtype=np.int64)
    best_r = np.zeros(2, dtype=np.int64)
    best_v = np.full(2, NEG)
    for e in range(lo[top], hi[top]):
        rs = root_score[e_sym[e]]
        if rs == NEG:
            continue
        for r in range(kbest):
            if e_tsc[e, r] == NEG:
                continue
            v = rs + e_tsc[e, r]
            if v > best_v[0]:
                best_v[1] = best_v[0]
                best_e[1] = best_e[0]
                best_r[1] = best_r[0]
                best_v[0] = v
                best_e[0] = e
                best_r[0] = r
            elif v > best_v[1]:
                best_v[1] = v
                best_e[1] = e
                best_r[1] = r
    return best_e, best_r, best_v


@njit(cache=True)
def _read_parse(
    chart, binary, chains, root_feat, scoring, n, n_sym, root, rank, out_nodes, out_feats, at, fat
):
    """The parse of derivation ``rank`` of root entry ``root`` read back from the chart:
    its nodes written at ``out_nodes[at:]``, its features at ``out_feats[fat:]``; their
    counts."""
    slot, _, _, e_sym, e_bp, e_top, _ = chart
    bin_ptr, _, bin_right, _, bin_feat = binary
    _, _, chain_bottom, _, chain_sym_ptr, chain_syms, chain_feat_ptr, chain_feats = chains
    sym_row, span_feat, _, cols, n_kinds = scoring
    stack_e = np.empty(4 * n + 4, dtype=np.int64)
    stack_q = np.empty(4 * n + 4, dtype=np.int64)
    stack_i = np.empty(4 * n + 4, dtype=np.int64)
    stack_j = np.empty(4 * n + 4, dtype=np.int64)
    nn = 0
    nf = 0
    out_feats[fat + nf] = root_feat[e_sym[root]]
    nf += 1
    stack_e[0] = root
    stack_q[0] = e_top[root, rank]
    stack_i[0] = 0
    stack_j[0] = n
    depth = 1
    while depth > 0:
        depth -= 1
        e = stack_e[depth]
        q = stack_q[depth]
        i = stack_i[depth]
        j = stack_j[depth]
        code = e_bp[e, q]
        sp = _span(i, j, n)
        if q >= 2:  # a chain over the layer-0 item of the same span
            c = code // 2
            for p in range(chain_sym_ptr[c], chain_sym_ptr[c + 1]):
                out_nodes[at + nn, 0] = chain_syms[p]
                out_nodes[at + nn, 1] = i
                out_nodes[at + nn, 2] = j
                nn += 1
                # the chain's rules are in its nodes' order, top first
                out_feats[fat + nf] = chain_feats[chain_feat_ptr[c] + p - chain_sym_ptr[c]]
                nf += 1
                nf = (
                    _emit_span_features(
                        chain_syms[p], sp, sym_row, span_feat, cols, n_kinds, out_feats, fat + nf
                    )
                    - fat
                )
            stack_e[depth] = slot[sp * n_sym + chain_bottom[c]]
            stack_q[depth] = code % 2
            stack_i[depth] = i
            stack_j[depth] = j
            depth += 1
            continue
        out_nodes[at + nn, 0] = e_sym[e]
        out_nodes[at + nn, 1] = i
        out_nodes[at + nn, 2] = j
        nn += 1
        if code < 0:
            continue
        rr = code % 2
        rl = (code // 2) % 2
        k = (code // 4) % (n + 1)
        rule = code // (4 * (n + 1))
        out_feats[fat + nf] = bin_feat[rule]
        nf += 1
        nf = (
            _emit_span_features(
                e_sym[e], sp, sym_row, span_feat, cols, n_kinds, out_feats, fat + nf
            )
            - fat
        )
        left = slot[_span(i, k, n) * n_sym + _left_of(bin_ptr, rule)]
        right = slot[_span(k, j, n) * n_sym + bin_right[rule]]
        stack_e[depth] = right
        stack_q[depth] = e_top[right, rr]
        stack_i[depth] = k
        stack_j[depth] = j
        depth += 1
        stack_e[depth] = left
        stack_q[depth] = e_top[left, rl]
        stack_i[depth] = i
        stack_j[depth] = k
        depth += 1
    return nn, nf


@njit(cache=True)
def _left_of(bin_ptr, rule):
    """The left child of binary rule ``rule`` (rules are sorted by it)."""
    lo = 0
    hi = len(bin_ptr) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if bin_ptr[mid] <= rule:
            lo = mid
        else:
            hi = mid
    return lo


@njit(cache=True)
def _grow1(a, size):
    out = np.empty(size, dtype=a.dtype)
    out[: len(a)] = a
    return out


@njit(cache=True)
def _grow2(a, size):
    out = np.empty((size, a.shape[1]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(cache=True)
def _gold_chart(gold_triples, gold_starts, s, n, n_base, lw):
    """gold[i, j, base]: whether sentence s's gold tree has a bracket (i, j) of that base
    symbol (a dummy when the loss is off)."""
    if lw == 0.0:
        return np.zeros((1, 1, 1), dtype=np.bool_)
    gold = np.zeros((n + 1, n + 1, max(n_base, 1)), dtype=np.bool_)
    for g in range(gold_starts[s], gold_starts[s + 1]):
        gold[gold_triples[g, 0], gold_triples[g, 1], gold_triples[g, 2]] = True
    return gold


@njit(cache=True, nogil=True)
def cky_rows(
    lo,
    hi,
    tags,
    starts,
    sentences,
    n_sym,
    bin_ptr,
    bin_parent,
    bin_right,
    bin_score,
    bin_feat,
    chain_ptr,
    chain_top,
    chain_bottom,
    chain_score,
    chain_sym_ptr,
    chain_syms,
    chain_feat_ptr,
    chain_feats,
    root_score,
    root_feat,
    kbest,
    lw,
    gold_triples,
    gold_starts,
    n_base,
    base_ptr,
    base_idx,
    ctx,
    sym_row,
    span_feat,
    w,
    kinds,
    offsets,
    n_tags,
    n_words,
    out_nodes,
    out_feats,
    out_nn,
    out_nf,
    out_score,
    out_base,
    caps,
    out_fbase,
    fcaps,
    out_done,
):
    """:func:`_cky_one` of sentences ``sentences[lo:hi]`` (rows of the outputs lo..hi;
    :func:`cpsvm.threads.in_row_chunks` runs chunks of them on threads). ``out_done[q]``
    is set to 1 once sentence q is parsed, and a sentence left at 0 tells which were not
    (an allocation that failed)."""
    binary = (bin_ptr, bin_parent, bin_right, bin_score, bin_feat)
    chains = (
        chain_ptr,
        chain_top,
        chain_bottom,
        chain_score,
        chain_sym_ptr,
        chain_syms,
        chain_feat_ptr,
        chain_feats,
    )
    for q in range(lo, hi):
        s = sentences[q]
        a, b = starts[s], starts[s + 1]
        _cky_one(
            tags[a:b],
            n_sym,
            binary,
            chains,
            (root_score, root_feat),
            kbest,
            (lw, _gold_chart(gold_triples, gold_starts, s, b - a, n_base, lw), base_ptr, base_idx),
            (ctx[a:b], sym_row, span_feat, w, kinds, offsets, n_tags, n_words),
            (out_nodes, out_feats, out_nn[q], out_nf[q], out_score[q]),
            (out_base[q], caps[q], out_fbase[q], fcaps[q]),
        )
        out_done[q] = 1
