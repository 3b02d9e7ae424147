"""Plain-text model files in the formats of SVMlight V6.20 and SVMmulticlass V2.20.

Binary models are written as SVMlight models (version line exactly
``SVM-light Version V6.20``, which ``svm_classify`` insists on); a linear model in
SVMperf's compressed form, one "support vector" with coefficient 1 holding w. A ranking
function (``cp_learn --problem rank``) is the same, its support vector's comment
``RANKING_COMMENT`` saying what it is.
Multiclass models use SVMmulticlass's layout: its header, then w of all classes
stacked (class y's block at offset (y-1)·d) as the single support vector.
Sequence models use SVMhmm V3.10's (``SVM-HMM Version V3.10``, which svm_hmm_classify
insists on): kernel lines, emission features, tags, orders and loss, then w in SVMhmm's
layout (:class:`cpsvm.decoding.viterbi.HmmLayout`) as the single support vector.
A user's problem (``--problem module:Class``) has a cpsvm kind of its own: the version
line ``cpsvm user-problem model V1``, the problem's ``module:Class``, its options (JSON),
size_psi, the training data's number of features and examples, then w as one line of
``index:value`` pairs (see man cp_learn). asset_learn's random Fourier feature models
are the kind ``cpsvm rff model V1``: SVMlight's first header lines, the number of random
features, the task and b, then one line per feature, ``coef nu omega_1 ... omega_d``
(see man asset_learn); ``cpsvm rff model V2`` adds a header line listing the original
indices of the features of a model trained on renumbered columns. Parsing models
(``cp_learn --problem cfg``) are the kind ``cpsvm cfg model V1``: the preprocessing
(JSON), svm or pcfg weights, the fallback label, the numbers of training sentences and
rules, then one rule a line with its weight (see man cp_learn, PARSING);
``cpsvm cfg model V2`` adds Ψ's span templates and the weights of the span features, one
a line after the rules (V1 is still written for a model of rules only, such as the PCFG
baseline, and read).

Every kind is one entry of ``MODEL_KINDS`` (version line, reader, a writer per model
class), added by one function, ``register_model_kind``: the built-in kinds below, and the
kinds a problem registered at run time brings (cpsvm.problems.register calls it). Reading
dispatches on the first line, writing on the model's class. The SVMhmm and cfg kinds'
readers and writers are :mod:`cpsvm.io.structured_models`, the text pieces all kinds share
:mod:`cpsvm.io.model_text`.

A model trained on renumbered columns (huge or hashed indices, :mod:`cpsvm.columns`) is
written with the original indices (its ``feature_ids``); a model file whose highest
feature index is far beyond the features its weights use is read in those features.

Numbers are written with ``repr`` so that write → read is exact; writes are atomic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import InputError
from ..memory import check_fits
from .atomic import atomic_output
from .header_notes import (
    platt_note,
    read_platt,
    read_trained_for,
    read_weights_note,
    trained_for,
    weights_note,
)
from .model_text import (
    KERNEL_FIELDS,
    body_rows,
    format_features,
    format_number,
    header_lines,
    kernel_header,
    nonzero_entries,
    read_header,
    sv_line,
)
from .streams import read_bytes, source_name
from .structured_models import (
    CFG_SPANS_VERSION,
    CFG_VERSION,
    format_cfg,
    format_hmm,
    read_cfg,
    read_hmm,
)

# numpy, scipy, the models and the SVMlight parser are imported by the readers and writers
# that use them: a file whose first line names no kind is refused without them.

SVMLIGHT_VERSION = "SVM-light Version V6.20"
MULTICLASS_VERSION = "SVM-multiclass Version V2.20"
USER_PROBLEM_VERSION = "cpsvm user-problem model V1"
# The comment of a ranking function's support vector (cp_learn --problem rank).
RANKING_COMMENT = " ranking function (cp_learn --problem rank)"

_MULTICLASS_FIELDS = [
    ("number of classes", int),
    ("number of base features", int),
    ("loss function", int),
] + KERNEL_FIELDS
_USER_FIELDS = [
    ("problem (module:Class)", str),
    ("problem options (JSON)", dict),
    ("size_psi", int),
    ("number of base features", int),
    ("number of training examples", int),
]


def _read_svmlight_kind(kind, raw, name, float32_features):
    """SVMlight V5/V6 (and SVMperf) models, and SVMmulticlass V2 ones (same layout)."""
    from ..columns import worth_renumbering
    from ..models import fit_columns, svmlight_floats

    fields = _MULTICLASS_FIELDS if kind == "multiclass" else KERNEL_FIELDS
    lines, body_start = header_lines(raw, len(fields))
    header = read_header(lines, fields, name)
    first_sv_line = len(fields) + 2
    n_sv = header["number of support vectors plus 1"] - 1
    dim = header["highest feature index"]
    if n_sv < 0 or dim < 0:
        raise InputError(
            "expected non-negative counts in the header", source=name, line=first_sv_line - 2
        )
    svs = _support_vectors(raw, name, body_start, first_sv_line, n_sv, dim)
    # Huge or hashed indices: the weights held in the support vectors' distinct columns;
    # else a dense weight vector of ``width``.
    if kind == "multiclass":
        k, d = _multiclass_shape(header, svs, dim, name)
        # k rows of d weights (indices beyond are unused): the distinct base features
        # decide, since zero weights are left out of the file.
        renumber = bool(svs.X.nnz) and worth_renumbering(d, svs.X.indices % max(d, 1))
        width, sized_by, size = k * d, "number of base features", d
    else:
        renumber = bool(svs.X.nnz) and worth_renumbering(dim, svs.X.indices)
        width, sized_by, size = dim, "highest feature index", dim
    if header["kernel type"] == 0 and not renumber:
        check_fits(
            8.0 * width,
            f"the header's {sized_by} {size}",
            source=name,
            line=[label for label, _ in fields].index(sized_by) + 2,
        )
    sv_matrix = svs.X if renumber else fit_columns(svs.X, width)
    if float32_features:
        sv_matrix.data = svmlight_floats(sv_matrix.data)[0]
    kernel = _header_kernel(header, name)
    if kind == "multiclass":
        model = _multiclass_model(header, kernel, sv_matrix, svs.y, renumber, k, d, name)
    else:
        model = _kernel_model(header, kernel, sv_matrix, svs, renumber, lines, name)
    model.class_weights = read_weights_note(_documents_line(lines, fields))
    return model


def _documents_line(lines, fields) -> bytes:
    """The 'number of training documents' line of a header of ``fields``."""
    return lines[[label for label, _ in fields].index("number of training documents") + 1]


def _support_vectors(raw, name, body_start, first_sv_line, n_sv, dim):
    """The support vectors (a Dataset, their comments kept), as many as the header says
    and within its highest feature index."""
    from .svmlight import parse_svmlight_bytes

    svs = parse_svmlight_bytes(
        raw,
        name,
        start=body_start,
        first_line=first_sv_line,
        keep_comments=True,
        allow_empty=True,
    )
    if svs.n_examples != n_sv:
        what = "truncated model file?" if svs.n_examples < n_sv else "extra lines"
        raise InputError(
            f"expected {n_sv} support vectors as the header says, found {svs.n_examples} ({what})",
            source=name,
            line=first_sv_line + svs.n_examples,
        )
    if svs.n_features > dim:
        raise InputError(
            f"expected support vector indices up to the highest feature index "
            f"{dim}, found {svs.n_features}",
            source=name,
            line=first_sv_line,
        )
    return svs


def _multiclass_shape(header, svs, dim, name):
    """(classes, base features) of a multiclass model, checked against its weights."""
    k = header["number of classes"]
    d = header["number of base features"]
    if k < 1 or d < 0 or dim < k * d:
        raise InputError(
            f"expected {k} classes x {d} features to fit in the highest feature index {dim}",
            source=name,
            line=2,
        )
    # Class y's weights are at (y-1)·d + 1..y·d: a weight beyond k·d means a header
    # edited to fewer classes or base features than the weights were written with.
    if svs.n_features > k * d:
        raise InputError(
            f"expected weight indices up to {k * d} ({k} classes x {d} base features, "
            f"lines 2 and 3), found {svs.n_features}: the header contradicts its weights",
            source=name,
            line=2,
        )
    return k, d


def _header_kernel(header, name):
    """The kernel of the header's kernel lines."""
    from ..kernels import Kernel

    try:
        return Kernel(
            header["kernel type"],
            header["kernel parameter -d"],
            header["kernel parameter -g"],
            header["kernel parameter -s"],
            header["kernel parameter -r"],
        )
    except InputError as e:
        raise InputError(str(e), source=name, line=2) from None


def _multiclass_model(header, kernel, sv_matrix, coef, renumber, k, d, name):
    """The linear multiclass model of an SVMmulticlass file's weights."""
    import numpy as np

    from ..models import MulticlassModel

    n_train = header["number of training documents"]
    if not kernel.is_linear:
        raise InputError(
            f"expected a linear multiclass model (kernel type 0), got kernel type {kernel.kind}",
            source=name,
            line=5,
        )
    if renumber:
        W, ids = _class_weights(sv_matrix, coef, k, d)
        return MulticlassModel(
            W=W, n_train=n_train, loss_id=header["loss function"], feature_ids=ids
        )
    w = np.asarray(sv_matrix.T @ coef).ravel()
    return MulticlassModel(W=w.reshape(k, d), n_train=n_train, loss_id=header["loss function"])


def _kernel_model(header, kernel, sv_matrix, svs, renumber, lines, name):
    """An SVMlight file's model: a kernel model, or with the linear kernel a linear (or
    ranking) one."""
    from ..columns import distinct_columns
    from ..models import KernelModel

    loss_id, k_fraction = read_trained_for(lines[8], name)
    platt = read_platt(lines[10], name, 11)
    ids = None
    if renumber:
        sv_matrix, ids = distinct_columns(sv_matrix, always=True)
    model = KernelModel(
        support_vectors=sv_matrix,
        coef=svs.y,
        b=header["threshold b"],
        kernel=kernel,
        n_train=header["number of training documents"],
        sv_comments=svs.comments,
        loss_id=loss_id,
        k_fraction=k_fraction,
        feature_ids=ids,
        platt=platt,
    )
    if not kernel.is_linear:
        return model
    linear = model.to_linear()
    n_sv = svs.n_examples
    if n_sv == 1 and svs.comments and svs.comments[0].strip() == RANKING_COMMENT.strip():
        from ..models import RankingModel

        return RankingModel(linear.w, linear.b, n_train=linear.n_train, feature_ids=ids)
    return linear


def _class_weights(sv_matrix, coef, k, d):
    """(W in the distinct base features, their 0-based indices) of a multiclass model's
    support vectors, whose index (y-1)·d + j holds class y's weight of feature j."""
    import numpy as np

    from ..columns import distinct_values

    entries = sv_matrix.tocoo()
    index = np.asarray(entries.col, dtype=np.int64)
    values = entries.data * np.asarray(coef)[entries.row]
    inside = index < k * d
    index, values = index[inside], values[inside]
    ids, columns = distinct_values(index % d if d else index)
    W = np.zeros((k, len(ids)))
    np.add.at(W, (index // max(d, 1), columns), values)
    return W, ids


def _read_svmlight(raw, name, float32_features):
    return _read_svmlight_kind("svmlight", raw, name, float32_features)


def _read_multiclass(raw, name, float32_features):
    return _read_svmlight_kind("multiclass", raw, name, float32_features)


def _read_user_problem(raw, name, float32_features):
    import numpy as np

    from ..models import UserProblemModel

    lines = raw.split(b"\n", len(_USER_FIELDS) + 1)
    header = read_header(lines, _USER_FIELDS, name)
    line_no = len(_USER_FIELDS) + 2
    field_line = {label: k + 2 for k, (label, _) in enumerate(_USER_FIELDS)}  # as read
    size_psi = header["size_psi"]
    if size_psi < 1:
        raise InputError(
            f"expected size_psi >= 1, got {size_psi}", source=name, line=field_line["size_psi"]
        )
    spec = header["problem (module:Class)"]
    if spec.count(":") != 1 or not all(spec.split(":")):
        raise InputError(
            f"expected the problem as module:Class, got {spec!r}",
            source=name,
            line=field_line["problem (module:Class)"],
        )
    body = (
        lines[len(_USER_FIELDS) + 1].decode("utf-8", "replace")
        if len(lines) > len(_USER_FIELDS) + 1
        else ""
    )
    rows = body.split("\n")
    if rows[0].strip() == "" and len(rows) == 1:
        raise InputError(
            "expected the weight line (index:value ...), found the end of the "
            "file (truncated model file?)",
            source=name,
            line=line_no,
        )
    if any(r.strip() for r in rows[1:]):
        raise InputError(
            "expected nothing after the weight line, found more lines",
            source=name,
            line=line_no + 1,
        )
    w = np.zeros(size_psi)
    last = 0
    for token in rows[0].split("#", 1)[0].split():
        index, colon, value = token.partition(":")
        try:
            j, v = int(index), float(value)
        except ValueError:
            j, v = -1, 0.0
        if not colon or j <= last or j > size_psi or not np.isfinite(v):
            raise InputError(
                f"expected index:value with indices increasing in 1..{size_psi}"
                f" and finite values, got {token!r}",
                source=name,
                line=line_no,
            )
        w[j - 1], last = v, j
    return UserProblemModel(
        spec=spec,
        w=w,
        n_train=header["number of training examples"],
        n_features=header["number of base features"],
        options=header["problem options (JSON)"],
    )


def _format_user_problem(model) -> list:
    import json

    import numpy as np

    options = json.dumps(model.options, sort_keys=True, allow_nan=False)
    return [
        USER_PROBLEM_VERSION,
        f"{model.spec} # problem (module:Class)",
        f"{options} # problem options (JSON)",
        f"{model.size_psi} # size_psi",
        f"{model.n_features} # number of base features",
        f"{model.n_train} # number of training examples",
        format_features(*nonzero_entries(np.asarray(model.w, dtype=np.float64)))
        + " # w (index:value, zero weights omitted)",
    ]


def _original_indices(model, columns):
    """The 0-based feature indices of a model's columns (its feature_ids, if renumbered)."""
    ids = getattr(model, "feature_ids", None)
    return columns if ids is None else ids[columns]


def _format_linear(model, comment="") -> list:
    import numpy as np

    from ..kernels import Kernel
    from ..models import highest_index

    lines = [SVMLIGHT_VERSION] + kernel_header(
        Kernel(),
        highest_index(model),
        model.n_train,
        1,
        model.b,
        trained_for(model) + weights_note(model),
    )
    lines[-1] += platt_note(model)
    columns, weights = nonzero_entries(np.asarray(model.w, dtype=np.float64))
    lines.append(sv_line(1.0, _original_indices(model, columns), weights, comment=comment))
    return lines


def _format_ranking(model) -> list:
    """A ranking function: SVMperf's compressed linear form, its support vector's comment
    saying what it is (svm_classify keeps a comment and ignores it)."""
    return _format_linear(model, comment=RANKING_COMMENT)


def _format_kernel(model) -> list:
    import scipy.sparse as sp

    from ..models import highest_index
    from .float_text import format_rows

    sv = sp.csr_matrix(model.support_vectors)
    sv.sort_indices()
    lines = [SVMLIGHT_VERSION] + kernel_header(
        model.kernel,
        highest_index(model),
        model.n_train,
        sv.shape[0],
        model.b,
        trained_for(model) + weights_note(model),
    )
    lines[-1] += platt_note(model)
    comments = model.sv_comments or [""] * sv.shape[0]
    features = format_rows(sv.indptr, _original_indices(model, sv.indices), sv.data)
    for coef, text, comment in zip(model.coef, features, comments):
        lines.append(sv_line(coef, text=text, comment=comment))
    return lines


def _format_multiclass(model) -> list:
    import numpy as np

    from ..kernels import Kernel
    from ..models import highest_index

    k = model.W.shape[0]
    d = highest_index(model)
    if k * d + 1 >= 2**63:
        raise InputError(
            f"expected {k} classes x the highest feature index {d} below 2^63, the largest "
            "index of SVMmulticlass's joint feature space"
        )
    lines = [
        MULTICLASS_VERSION,
        f"{k} # number of classes",
        f"{d} # number of base features",
        f"{model.loss_id} # loss function",
    ]
    # SVMmulticlass sizes its joint feature space k·d + 1.
    lines += kernel_header(Kernel(), k * d + 1, model.n_train, 1, 0.0, weights_note(model))
    if model.feature_ids is None:
        entries = nonzero_entries(np.ravel(model.W))
    else:  # class y's weight of feature j at (y-1)·d + j, j its original index
        classes, columns = np.nonzero(model.W)
        entries = (classes * d + model.feature_ids[columns], model.W[classes, columns])
    lines.append(sv_line(1.0, *entries, prefix="qid:0"))
    return lines


RFF_VERSION = "cpsvm rff model V1"
# V2: trained on renumbered columns (huge or hashed indices): one more header line, the
# features' original indices, and omega values for those features only.
RFF_IDS_VERSION = "cpsvm rff model V2"
_RFF_FIELDS = KERNEL_FIELDS[:8] + [
    ("number of random features", int),
    ("task", str),
    ("threshold b", float),
]
_RFF_IDS_FIELDS = _RFF_FIELDS + [("feature indices", str)]
_RFF_TASKS = ("classification", "regression")


def _rff_feature_ids(text, dim, name, line):
    """The 0-based feature indices of a V2 model's line of 1-based ones (increasing,
    1..dim)."""
    import numpy as np

    try:
        ids = np.array(text.split(), dtype=np.int64) - 1
    except (ValueError, OverflowError):
        ids = None
    if ids is None or np.any(ids < 0) or np.any(ids >= dim) or np.any(np.diff(ids) <= 0):
        raise InputError(
            f"expected the feature indices, increasing in 1..{dim}, got {text[:40]!r}",
            source=name,
            line=line,
        )
    return ids


def _read_rff(raw, name, float32_features):
    """asset_learn's random Fourier feature models (see man asset_learn, MODEL FILES):
    SVMlight's header with the number of features D and the task (V2: and the original
    indices of the features), then one line per feature: coef_j nu_j omega_j (a value
    for each input feature 1..highest index; V2: for each listed feature)."""
    import numpy as np

    from ..models import RandomFeaturesModel

    with_ids = raw.startswith(RFF_IDS_VERSION.encode())
    fields = _RFF_IDS_FIELDS if with_ids else _RFF_FIELDS
    n_fields = len(fields)
    lines = raw.split(b"\n", n_fields + 1)
    header = read_header(lines, fields, name)
    field_line = {label: k + 2 for k, (label, _) in enumerate(fields)}
    if header["kernel type"] != 2:
        raise InputError(
            f"expected kernel type 2 (RBF), got {header['kernel type']}",
            source=name,
            line=field_line["kernel type"],
        )
    gamma = header["kernel parameter -g"]
    dim, n_random = header["highest feature index"], header["number of random features"]
    if dim < 0 or n_random < 1:
        raise InputError(
            "expected a highest feature index >= 0 and at least one random feature",
            source=name,
            line=field_line["number of random features"],
        )
    task = header["task"]
    if task not in _RFF_TASKS:
        raise InputError(
            f"expected task classification or regression, got {task!r}",
            source=name,
            line=field_line["task"],
        )
    ids, width = None, dim
    if with_ids:
        label = "feature indices"
        ids = _rff_feature_ids(header[label], dim, name, field_line[label])
        width = len(ids)
    first = n_fields + 2
    rows = body_rows(lines, n_fields, n_random, "random features", name)
    values = np.empty((n_random, width + 2))
    for j, row in enumerate(rows):
        try:
            numbers = np.array(row.split(), dtype=np.float64)
        except ValueError:
            numbers = np.zeros(0)
        if numbers.shape != (width + 2,) or not np.all(np.isfinite(numbers)):
            raise InputError(
                f"expected {width + 2} finite numbers (coef, nu and one omega "
                f"value per feature), got {row[:40]!r}",
                source=name,
                line=first + j,
            )
        values[j] = numbers
    return RandomFeaturesModel(
        omega=np.ascontiguousarray(values[:, 2:].T),
        nu=values[:, 1].copy(),
        coef=values[:, 0].copy(),
        b=header["threshold b"],
        gamma=gamma,
        n_train=header["number of training documents"],
        task=task,
        feature_ids=ids,
        platt=read_platt(lines[field_line["threshold b"] - 1], name, field_line["threshold b"]),
        class_weights=read_weights_note(_documents_line(lines, fields)),
    )


def _format_rff(model) -> list:
    from ..kernels import RBF, Kernel
    from ..models import highest_index

    header = kernel_header(
        Kernel(RBF, gamma=model.gamma),
        highest_index(model),
        model.n_train,
        0,
        model.b,
        weights_note(model),
    )[:8]
    ids = model.feature_ids
    lines = (
        [RFF_VERSION if ids is None else RFF_IDS_VERSION]
        + header
        + [
            f"{model.n_components} # number of random features",
            f"{model.task} # task (classification or regression)",
            f"{format_number(model.b)} # threshold b: "
            "f(x) = sum_j coef_j*cos(omega_j.x + nu_j) - b; "
            "each following line is a random feature: coef_j nu_j omega_j (one value per "
            "input feature)" + platt_note(model),
        ]
    )
    if ids is not None:
        lines.append(
            " ".join(str(i) for i in (ids + 1).tolist())
            + " # feature indices: the features of the omega values"
        )
    for j in range(model.n_components):
        lines.append(
            " ".join(
                [format_number(model.coef[j]), format_number(model.nu[j])]
                + [format_number(v) for v in model.omega[:, j]]
            )
        )
    return lines


@dataclass(frozen=True)
class ModelKind:
    """One kind of model file: the first lines that announce it, its reader, and a writer
    for each model class it holds. A new kind is one call of register_model_kind."""

    name: str
    first_lines: tuple  # prefixes of the version line that mean this kind
    read: Callable  # (raw bytes, file name, float32_features) -> model
    writers: dict  # model class name -> (model -> lines of text)


# Every kind of model file, in the order reading tries them: filled by register_model_kind.
MODEL_KINDS: list = []


def register_model_kind(kind: ModelKind) -> None:
    """Make a kind of model file known, read and written as every other: the built-in
    kinds (below) and a registered problem's (cpsvm.problems.register). A kind whose name
    is known already is left as it is."""
    if all(k.name != kind.name for k in MODEL_KINDS):
        MODEL_KINDS.append(kind)


BUILT_IN_KINDS = (
    ModelKind(
        "svmlight",
        ("SVM-light Version V6.", "SVM-light Version V5."),
        _read_svmlight,
        {
            "LinearModel": _format_linear,
            "KernelModel": _format_kernel,
            "RankingModel": _format_ranking,
        },
    ),
    ModelKind(
        "multiclass",
        ("SVM-multiclass Version V2.",),
        _read_multiclass,
        {"MulticlassModel": _format_multiclass},
    ),
    ModelKind(
        "user-problem",
        (USER_PROBLEM_VERSION,),
        _read_user_problem,
        {"UserProblemModel": _format_user_problem},
    ),
    ModelKind(
        "rff", (RFF_VERSION, RFF_IDS_VERSION), _read_rff, {"RandomFeaturesModel": _format_rff}
    ),
    ModelKind("hmm", ("SVM-HMM Version V3.",), read_hmm, {"SequenceModel": format_hmm}),
    ModelKind("cfg", (CFG_VERSION, CFG_SPANS_VERSION), read_cfg, {"CfgModel": format_cfg}),
)
for _kind in BUILT_IN_KINDS:
    register_model_kind(_kind)


def model_kind_of(model) -> ModelKind:
    """The kind a model object is written as (by its class: one table lookup)."""
    for kind in MODEL_KINDS:
        if type(model).__name__ in kind.writers:
            return kind
    raise TypeError(f"cannot write a {type(model).__name__} as a model file")


def _kind_of_version(version: str):
    for kind in MODEL_KINDS:
        if version.startswith(kind.first_lines):
            return kind
    return None


def read_model(source, *, float32_features=False):
    """Read a model file of any kind in MODEL_KINDS: written by cpsvm, SVMlight V5/V6,
    SVMperf, SVMmulticlass V2 or SVMhmm V3.10.

    Returns a :class:`LinearModel` (SVMlight models with the linear kernel, SVMperf's
    compressed models; a :class:`RankingModel` when cp_learn --problem rank wrote it),
    :class:`KernelModel`, :class:`MulticlassModel`,
    :class:`SequenceModel` (SVMhmm V3.10) or :class:`UserProblemModel`.
    ``float32_features`` rounds the support vectors' feature values to 32-bit floats,
    as SVMlight stores them (its FVAL type), before a linear model's w is summed from
    them; with test features rounded alike, decision values then match
    ``svm_classify``'s (and SVMhmm models' weights are those svm_hmm_classify uses).
    """
    name = source_name(source)
    raw = read_bytes(source)
    end = raw.find(b"\n")  # the first line, without a copy of the rest
    first = raw[: end if end >= 0 else len(raw)]
    version = first.decode("utf-8", "replace").strip()
    kind = _kind_of_version(version)
    if kind is None:
        shown = version[:60] if version else "an empty file"
        expected = " or ".join(
            f"'{k.first_lines[0]}xx'" if k.first_lines[0].endswith(".") else f"'{k.first_lines[0]}'"
            for k in MODEL_KINDS
        )
        raise InputError(
            f"expected a model file starting {expected}, got {shown!r}", source=name, line=1
        )
    if not raw.endswith(b"\n"):
        # Every writer (cpsvm's, SVMlight's, SVMhmm's) ends each line: a file cut short
        # mid-line would otherwise read as a model with the rest of its weights zero.
        raise InputError(
            "expected a newline at the end of the last line: the file ends mid-line "
            "(truncated model file?)",
            source=name,
            line=raw.count(b"\n") + 1,
        )
    return kind.read(raw, name, float32_features)


def _lines(model):
    """The lines of a model file: each a string or an iterable of pieces of one line."""
    return model_kind_of(model).writers[type(model).__name__](model)


def format_model(model) -> str:
    """The text of a model file (see the module docstring for the layouts)."""
    return (
        "\n".join(line if isinstance(line, str) else "".join(line) for line in _lines(model)) + "\n"
    )


def write_model(path, model) -> None:
    """Write ``model`` to ``path`` atomically (``-`` for standard output), a line (or a
    piece of a long one) at a time."""
    lines = _lines(model)
    with atomic_output(path) as out:
        for line in lines:
            for piece in (line,) if isinstance(line, str) else line:
                out.write(piece)
            out.write("\n")
