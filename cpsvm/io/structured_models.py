"""The model file kinds of the structured problems, entries of
:data:`cpsvm.io.model_file.MODEL_KINDS`: SVMhmm V3.10's sequence taggers (``SVM-HMM
Version V3.10``, :class:`cpsvm.models.SequenceModel`) and cp_learn --problem cfg's
grammars (``cpsvm cfg model V1``/``V2``, :class:`cpsvm.models.CfgModel`); the layouts
are in :mod:`cpsvm.io.model_file`'s docstring and the man pages.
"""

from __future__ import annotations

from ..errors import InputError
from ..memory import check_fits
from .model_text import (
    KERNEL_FIELDS,
    body_rows,
    format_number,
    header_lines,
    kernel_header,
    nonzero_entries,
    read_header,
    sv_line,
)

HMM_VERSION = "SVM-HMM Version V3.10"
_HMM_FIELDS = KERNEL_FIELDS[:7] + [
    ("number of emission features", int),
    ("number of classes", int),
    ("HMM order of transitions", int),
    ("HMM order of emissions", int),
    ("loss function", int),
    ("number of support vectors plus 1", int),
    ("threshold b", float),
]


def read_hmm(raw, name, float32_features):
    """SVMhmm V3.10 models: SVMlight's kernel lines, the emission features, tags and
    orders, then w as support vectors (one, holding w, as svm_hmm_learn compacts a
    linear model; several are summed alpha-weighted). w[j] is feature j+1."""
    import numpy as np

    from ..columns import worth_renumbering
    from ..decoding.viterbi import HmmLayout
    from ..models import SequenceModel, svmlight_floats
    from .svmlight import parse_svmlight_bytes

    n_fields = len(_HMM_FIELDS)
    lines, body_start = header_lines(raw, n_fields)
    header = read_header(lines, _HMM_FIELDS, name)
    field_line = {label: k + 2 for k, (label, _) in enumerate(_HMM_FIELDS)}
    if header["kernel type"] != 0:
        raise InputError(
            f"expected a linear SVM-hmm model (kernel type 0), got kernel type "
            f"{header['kernel type']}",
            source=name,
            line=field_line["kernel type"],
        )
    try:
        layout = HmmLayout(
            header["number of emission features"],
            header["number of classes"],
            header["HMM order of transitions"],
            header["HMM order of emissions"],
        )
    except ValueError as e:
        label = (
            "HMM order of emissions"
            if "emission order" in str(e)
            else "HMM order of transitions"
            if "order" in str(e)
            else "number of classes"
        )
        raise InputError(
            f"expected a valid SVM-hmm header: {e}", source=name, line=field_line[label]
        ) from None
    n_sv = header["number of support vectors plus 1"] - 1
    if n_sv < 0:
        raise InputError(
            "expected a non-negative number of support vectors",
            source=name,
            line=field_line["number of support vectors plus 1"],
        )
    first = n_fields + 2
    svs = parse_svmlight_bytes(raw, name, start=body_start, first_line=first, allow_empty=True)
    if svs.n_examples != n_sv:
        what = "truncated model file?" if svs.n_examples < n_sv else "extra lines"
        raise InputError(
            f"expected {n_sv} support vectors as the header says, found {svs.n_examples} ({what})",
            source=name,
            line=first + svs.n_examples,
        )
    if svs.n_features > layout.size_psi:
        raise InputError(
            f"expected weight indices up to {layout.size_psi} ({layout.n_tags} "
            f"tags, {layout.n_features} emission features, orders "
            f"{layout.trans_order}/{layout.emit_order}), found {svs.n_features}",
            source=name,
            line=first,
        )
    X = svs.X
    if float32_features:  # svm_hmm_classify keeps the weights read as 32-bit floats
        X = X.copy()
        X.data = svmlight_floats(X.data)[0]
    if X.nnz and worth_renumbering(layout.size_psi, X.indices):  # huge or hashed indices
        model = _hmm_in_distinct_features(
            X, svs.y, layout, header["loss function"], name, field_line
        )
        _check_highest_index(header, layout, name, field_line)
        return model
    _check_highest_index(header, layout, name, field_line)
    check_fits(
        8.0 * layout.size_psi,
        f"the header's {layout.n_tags} tags x {layout.n_features} emission features "
        f"(orders {layout.trans_order}/{layout.emit_order})",
        source=name,
        line=field_line["number of emission features"],
    )
    w = np.zeros(layout.size_psi)
    if n_sv:
        w[: X.shape[1]] = np.asarray(X.T @ svs.y).ravel()
    return SequenceModel.from_layout(w, layout, loss_id=header["loss function"])


def _check_highest_index(header, layout, name, field_line):
    """SVMhmm writes size_psi + 1 as the highest feature index: a header edited to other
    numbers of tags or emission features, or other orders, contradicts it (and the
    weights' places), InputError naming its line."""
    if header["highest feature index"] != layout.highest_feature_index:
        raise InputError(
            f"expected the highest feature index {layout.highest_feature_index} of "
            f"{layout.n_tags} classes, {layout.n_features} emission features and orders "
            f"{layout.trans_order}/{layout.emit_order} (lines 9 to 12), found "
            f"{header['highest feature index']}: the header contradicts itself",
            source=name,
            line=field_line["highest feature index"],
        )


def _emission_features(index, layout):
    """(block, feature) of w's indices past the transitions: block 0 the F indices
    before the emissions, block 1 + s the emission state s (see HmmLayout)."""
    rest = index - (layout.size_trans + 1)
    f = max(layout.n_features, 1)
    return rest // f, rest % f


def _hmm_in_distinct_features(X, coef, layout, loss_id, name, field_line):
    """A SequenceModel in the distinct emission features of the weights X holds (SVMhmm's
    indices of ``layout``), with their original indices as feature_ids. A weight in the
    block SVMhmm leaves unused (before the emissions) means the header's number of
    emission features is not the one the weights were written with: refused."""
    import numpy as np

    from ..columns import distinct_values
    from ..decoding.viterbi import HmmLayout
    from ..models import SequenceModel

    entries = X.tocoo()
    index = np.asarray(entries.col, dtype=np.int64)
    values = entries.data * np.asarray(coef)[entries.row]
    feature = index > layout.size_trans
    block, original = _emission_features(index[feature], layout)
    unused = np.flatnonzero((block == 0) & (values[feature] != 0))
    if len(unused):
        raise InputError(
            f"expected no weight at indices {layout.size_trans + 2}.."
            f"{layout.emission_start} (unused by SVM-hmm), found index "
            f"{int(index[feature][unused[0]]) + 1}: the weights do not match the header's "
            f"{layout.n_features} emission features",
            source=name,
            line=field_line["number of emission features"],
        )
    ids, columns = distinct_values(original)
    compact = HmmLayout(len(ids), layout.n_tags, layout.trans_order, layout.emit_order)
    w = np.zeros(compact.size_psi)
    np.add.at(w, index[~feature], values[~feature])
    np.add.at(w, compact.size_trans + 1 + block * len(ids) + columns, values[feature])
    model = SequenceModel.from_layout(w, compact, loss_id=loss_id)
    model.feature_ids = ids
    return model


def format_hmm(model) -> list:
    import numpy as np

    from ..kernels import Kernel

    layout = model.layout
    w = np.asarray(model.w, dtype=np.float64)
    if len(w) != layout.size_psi:
        raise ValueError(f"expected w of length {layout.size_psi}, got {len(w)}")
    entries = nonzero_entries(w)
    if model.feature_ids is not None:  # renumbered columns: the original indices
        entries, layout = _original_hmm_entries(entries, layout, model.feature_ids)
    header = kernel_header(Kernel(), layout.highest_feature_index, 0, 1, 0.0)
    return (
        [HMM_VERSION]
        + header[:7]
        + [
            f"{layout.n_features} # number of emission features ",
            f"{layout.n_tags} # number of classes ",
            f"{layout.trans_order} # HMM order of transitions ",
            f"{layout.emit_order} # HMM order of emissions ",
            f"{model.loss_id} # loss function ",
        ]
        + header[8:]
        + [sv_line(1.0, *entries)]
    )


def _original_hmm_entries(entries, layout, feature_ids):
    """((indices, values) of w in SVMhmm's layout of the original features, that layout)
    for the nonzero ``entries`` of a w in the renumbered features of ``layout``."""
    from dataclasses import replace

    index, values = entries
    original = replace(layout, n_features=int(feature_ids[-1]) + 1 if len(feature_ids) else 0)
    index = index.copy()
    feature = index > layout.size_trans
    block, column = _emission_features(index[feature], layout)
    index[feature] = original.size_trans + 1 + block * original.n_features + feature_ids[column]
    return (index, values), original


CFG_VERSION = "cpsvm cfg model V1"  # rules only
CFG_SPANS_VERSION = "cpsvm cfg model V2"  # rules and span features
_CFG_FIELDS = [
    ("preprocessing (JSON)", dict),
    ("weights", str),
    ("fallback label", str),
    ("number of training sentences", int),
    ("number of rules", int),
]
_CFG_SPAN_FIELDS = _CFG_FIELDS + [
    ("span templates", str),
    ("number of span features", int),
]
_CFG_RULE_KINDS = {"b": 3, "u": 2, "r": 1}  # kind -> fields after the weight


def read_cfg(raw, name, float32_features):
    """cp_learn --problem cfg models (see man cp_learn, PARSING): the header, then one
    rule a line, ``b w A B C`` (binary A -> B C), ``u w A B`` (unary A -> B), ``r w A``
    (root -> A), in that order: rule i's weight is w_i of the model. V2: the header
    also names the span templates and counts the span features, whose lines follow the
    rules, ``s w TEMPLATE LABEL VALUE...``."""
    import numpy as np

    from ..decoding.grammar import Grammar, span_templates
    from ..models import CfgModel

    spans = raw.startswith(CFG_SPANS_VERSION.encode())
    fields = _CFG_SPAN_FIELDS if spans else _CFG_FIELDS
    n_fields = len(fields)
    lines = raw.split(b"\n", n_fields + 1)
    header = read_header(lines, fields, name)
    field_line = {label: k + 2 for k, (label, _) in enumerate(fields)}
    templates = ()
    if spans:
        try:
            templates = span_templates(",".join(header["span templates"].split()))
        except ValueError as e:
            raise InputError(str(e), source=name, line=field_line["span templates"]) from None
    options = _cfg_options(header["preprocessing (JSON)"], templates, name, field_line)
    if header["weights"] not in ("svm", "pcfg"):
        raise InputError(
            f"expected weights 'svm' or 'pcfg', got {header['weights']!r}",
            source=name,
            line=field_line["weights"],
        )
    n_rules = header["number of rules"]
    n_spans = header.get("number of span features", 0)
    first = n_fields + 2
    rows = body_rows(
        lines, n_fields, n_rules + n_spans, "rules and span features" if spans else "rules", name
    )
    grammar = Grammar(options.unary, templates)
    w = _read_cfg_rules(grammar, rows[:n_rules], name, first)
    # a symbol that is never a rule's parent is a POS tag (a terminal)
    parents = {a for a, _, _ in grammar.binary} | {a for a, _ in grammar.unaries}
    grammar.terminals = set(range(len(grammar.symbols))) - parents
    if spans:
        try:
            cells, weights = grammar.read_span_features([row.split() for row in rows[n_rules:]])
        except ValueError as e:
            k, what = e.args
            raise InputError(
                f"{what}, got {rows[n_rules + k][:60]!r}", source=name, line=first + n_rules + k
            ) from None
        w = np.concatenate((w, weights))
    return CfgModel(
        grammar=grammar,
        w=w,
        options=options,
        n_train=header["number of training sentences"],
        trained_by=header["weights"],
        fallback=header["fallback label"],
    )


def _cfg_options(opts, templates, name, field_line):
    """The TreeOptions of a cfg model's preprocessing line (a JSON object)."""
    from ..decoding.grammar import feature_set_name
    from ..decoding.trees import TreeOptions

    try:
        options = TreeOptions(
            strip_functions=bool(opts["strip_functions"]),
            drop_none=bool(opts["drop_none"]),
            unary=int(opts["unary"]),
            markov=int(opts["markov"]),
            features=feature_set_name(templates),
        )
        if options.unary < 0:
            raise ValueError
    except (KeyError, TypeError, ValueError):
        raise InputError(
            "expected the preprocessing as a JSON object with strip_functions, "
            "drop_none, unary >= 0 and markov",
            source=name,
            line=field_line["preprocessing (JSON)"],
        ) from None
    return options


def _read_cfg_rules(grammar, rows, name, first):
    """The rules of a cfg model's lines (``first``: the first one's line number) added to
    ``grammar``; their weights."""
    import numpy as np

    w = np.empty(len(rows))
    order = "bur"
    last = 0
    for k, row in enumerate(rows):
        parts = row.split()
        kind = parts[0] if parts else ""
        try:
            value = float(parts[1]) if len(parts) > 1 else float("nan")
        except ValueError:
            value = float("nan")
        fields = _CFG_RULE_KINDS.get(kind)
        bad = (
            fields is None
            or len(parts) != fields + 2
            or not np.isfinite(value)
            or order.index(kind) < last
        )
        if bad:
            raise InputError(
                "expected a rule 'b weight A B C', 'u weight A B' or 'r weight "
                f"A' (b, then u, then r lines; finite weights), got {row[:60]!r}",
                source=name,
                line=first + k,
            )
        last = order.index(kind)
        ids = tuple(grammar.symbol(s) for s in parts[2:])
        table = {"b": grammar.binary, "u": grammar.unaries, "r": grammar.roots}[kind]
        key = ids if kind != "r" else ids[0]
        if key in table:
            raise InputError(
                f"expected each rule once, got {row[:60]!r} again", source=name, line=first + k
            )
        table[key] = len(table)
        w[k] = value
    return w


def format_cfg(model) -> list:
    import json

    import numpy as np

    grammar = model.grammar
    w = np.asarray(model.w, dtype=np.float64)
    if len(w) != grammar.size:
        raise ValueError(f"expected {grammar.size} weights, got {len(w)}")
    what = (
        "svm: cp_learn's structural SVM"
        if model.trained_by == "svm"
        else "pcfg: log-probabilities of the maximum-likelihood PCFG"
    )
    spans = grammar.span_feature_lines(w) if grammar.templates else None
    lines = [
        CFG_SPANS_VERSION if spans is not None else CFG_VERSION,
        json.dumps(model.options.to_dict(), sort_keys=True) + " # preprocessing (JSON)",
        f"{model.trained_by} # weights ({what})",
        f"{model.fallback} # fallback label (a flat tree for a sentence the grammar cannot parse)",
        f"{model.n_train} # number of training sentences",
        f"{grammar.n_rules} # number of rules; each line: b weight A B C | u weight A "
        "B | r weight A",
    ]
    if spans is not None:
        lines += [
            " ".join(grammar.templates) + " # span templates",
            f"{len(spans)} # number of span features (nonzero weights); each line: s "
            "weight TEMPLATE LABEL VALUE...",
        ]
    binary, unaries, roots = grammar.rule_lists()
    names = grammar.symbols
    k = 0
    for a, b, c in binary:
        lines.append(f"b {format_number(w[k])} {names[a]} {names[b]} {names[c]}")
        k += 1
    for a, b in unaries:
        lines.append(f"u {format_number(w[k])} {names[a]} {names[b]}")
        k += 1
    for a in roots:
        lines.append(f"r {format_number(w[k])} {names[a]}")
        k += 1
    if spans is not None:
        lines += [f"s {format_number(value)} {' '.join(key)}" for key, value in spans]
    return lines
