"""Plain-text model files in the formats of SVMlight V6.20 and SVMmulticlass V2.20.

Binary models are written as SVMlight models (version line exactly
``SVM-light Version V6.20``, which ``svm_classify`` insists on); a linear model in
SVMperf's compressed form, one "support vector" with coefficient 1 holding w.
Multiclass models use SVMmulticlass's layout: its header, then w of all classes
stacked (class y's block at offset (y-1)·d) as the single support vector.

Numbers are written with ``repr`` so that write → read is exact; writes are atomic.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..kernels import Kernel
from ..models import KernelModel, LinearModel, MulticlassModel, fit_columns
from .atomic import atomic_output
from .svmlight import format_example, parse_svmlight_bytes, read_bytes, source_name

SVMLIGHT_VERSION = "SVM-light Version V6.20"
MULTICLASS_VERSION = "SVM-multiclass Version V2.20"

# Header fields after the version line: (what the file's comment says, type).
_KERNEL_FIELDS = [
    ("kernel type", int),
    ("kernel parameter -d", int),
    ("kernel parameter -g", float),
    ("kernel parameter -s", float),
    ("kernel parameter -r", float),
    ("kernel parameter -u", str),
    ("highest feature index", int),
    ("number of training documents", int),
    ("number of support vectors plus 1", int),
    ("threshold b", float),
]
_MULTICLASS_FIELDS = [
    ("number of classes", int),
    ("number of base features", int),
    ("loss function", int),
] + _KERNEL_FIELDS
_SV_HEADER_COMMENT = "threshold b, each following line is a SV (starting with alpha*y)"


def _model_kind(first_line: str):
    """The header fields for a model file's version line, or None if unknown."""
    if first_line.startswith(("SVM-light Version V6.", "SVM-light Version V5.")):
        return "svmlight", _KERNEL_FIELDS
    if first_line.startswith("SVM-multiclass Version V2."):
        return "multiclass", _MULTICLASS_FIELDS
    return None, None


def read_model(source, *, float32_features=False):
    """Read a model file written by cpsvm, SVMlight V5/V6, SVMperf or SVMmulticlass V2.

    Returns a :class:`LinearModel` (SVMlight models with the linear kernel, SVMperf's
    compressed models), :class:`KernelModel` or :class:`MulticlassModel`.
    ``float32_features`` rounds the support vectors' feature values to 32-bit floats, as
    SVMlight stores them (its FVAL type), before a linear model's w is summed from them;
    with test features rounded alike, decision values then match ``svm_classify``'s.
    """
    name = source_name(source)
    raw = read_bytes(source)
    first, _, _ = raw.partition(b"\n")
    version = first.decode("utf-8", "replace").strip()
    kind, fields = _model_kind(version)
    if kind is None:
        if version.startswith("SVM-HMM"):
            raise InputError(f"SVM-hmm sequence models ({version!r}) are not supported yet",
                             source=name, line=1)
        shown = version[:60] if version else "an empty file"
        raise InputError("expected a model file starting 'SVM-light Version V6.xx' or "
                         f"'SVM-multiclass Version V2.xx', got {shown!r}",
                         source=name, line=1)
    lines = raw.split(b"\n", len(fields) + 1)
    header = {}
    for k, (label, typ) in enumerate(fields):
        line_no = k + 2
        at_end = k + 1 >= len(lines) or (k + 2 == len(lines) and not lines[k + 1].strip())
        if at_end:
            raise InputError(f"expected '{label}', found the end of the file "
                             "(truncated model file?)", source=name, line=line_no)
        text = lines[k + 1].decode("utf-8", "replace")
        value_text = text.split("#", 1)[0].strip()
        try:
            header[label] = value_text if typ is str else typ(value_text)
        except ValueError:
            raise InputError(f"expected '{label}' ({typ.__name__}), got {text.strip()!r}",
                             source=name, line=line_no) from None
    body = lines[len(fields) + 1] if len(lines) > len(fields) + 1 else b""
    first_sv_line = len(fields) + 2
    n_sv = header["number of support vectors plus 1"] - 1
    dim = header["highest feature index"]
    if n_sv < 0 or dim < 0:
        raise InputError("expected non-negative counts in the header",
                         source=name, line=first_sv_line - 2)
    svs = parse_svmlight_bytes(body, name, first_line=first_sv_line, keep_comments=True,
                               allow_empty=True)
    if svs.n_examples != n_sv:
        what = "truncated model file?" if svs.n_examples < n_sv else "extra lines"
        raise InputError(f"expected {n_sv} support vectors as the header says, found "
                         f"{svs.n_examples} ({what})", source=name,
                         line=first_sv_line + svs.n_examples)
    if svs.n_features > dim:
        raise InputError(f"expected support vector indices up to the highest feature index "
                         f"{dim}, found {svs.n_features}", source=name, line=first_sv_line)
    sv_matrix = fit_columns(svs.X, dim)
    if float32_features:
        sv_matrix.data = sv_matrix.data.astype(np.float32).astype(np.float64)
    try:
        kernel = Kernel(header["kernel type"], header["kernel parameter -d"],
                        header["kernel parameter -g"], header["kernel parameter -s"],
                        header["kernel parameter -r"])
    except InputError as e:
        raise InputError(str(e), source=name, line=2) from None
    b = header["threshold b"]
    n_train = header["number of training documents"]

    if kind == "multiclass":
        if not kernel.is_linear:
            raise InputError("expected a linear multiclass model (kernel type 0), got "
                             f"kernel type {kernel.kind}", source=name, line=5)
        k = header["number of classes"]
        d = header["number of base features"]
        w = np.asarray(sv_matrix.T @ svs.y).ravel()
        if k < 1 or d < 0 or len(w) < k * d:
            raise InputError(f"expected {k} classes x {d} features to fit in the highest "
                             f"feature index {dim}", source=name, line=2)
        return MulticlassModel(W=w[:k * d].reshape(k, d).copy(), n_train=n_train,
                               loss_id=header["loss function"])
    model = KernelModel(support_vectors=sv_matrix, coef=svs.y, b=b, kernel=kernel,
                        n_train=n_train, sv_comments=svs.comments)
    return model.to_linear() if kernel.is_linear else model


def _number(v) -> str:
    v = float(v)
    if not np.isfinite(v):
        raise ValueError(f"refusing to write a non-finite number ({v}) into a model file")
    text = repr(v)  # shortest text that reads back to the same double
    return text[:-2] if text.endswith(".0") else text


def _kernel_header(kernel: Kernel, dim: int, n_train: int, n_sv: int, b: float) -> list:
    return [
        f"{kernel.kind} # kernel type",
        f"{kernel.degree} # kernel parameter -d ",
        f"{_number(kernel.gamma)} # kernel parameter -g ",
        f"{_number(kernel.coef_lin)} # kernel parameter -s ",
        f"{_number(kernel.coef_const)} # kernel parameter -r ",
        "empty# kernel parameter -u ",
        f"{dim} # highest feature index ",
        f"{n_train} # number of training documents ",
        f"{n_sv + 1} # number of support vectors plus 1 ",
        f"{_number(b)} # {_SV_HEADER_COMMENT}",
    ]


def _sv_line(coef: float, indices, values, prefix="", comment="") -> str:
    features = format_example(indices, values)
    parts = [_number(coef)] + ([prefix] if prefix else []) + ([features] if features else [])
    return " ".join(parts) + " #" + comment


def _nonzero(w):
    idx = np.flatnonzero(w)
    return idx, w[idx]


def format_model(model) -> str:
    """The text of a model file (see the module docstring for the layouts)."""
    if isinstance(model, LinearModel):
        lines = [SVMLIGHT_VERSION] + _kernel_header(Kernel(), model.n_features, model.n_train,
                                                    1, model.b)
        lines.append(_sv_line(1.0, *_nonzero(np.asarray(model.w, dtype=np.float64))))
    elif isinstance(model, KernelModel):
        sv = sp.csr_matrix(model.support_vectors)
        sv.sort_indices()
        lines = [SVMLIGHT_VERSION] + _kernel_header(model.kernel, model.n_features,
                                                    model.n_train, sv.shape[0], model.b)
        comments = model.sv_comments or [""] * sv.shape[0]
        for i in range(sv.shape[0]):
            lo, hi = sv.indptr[i], sv.indptr[i + 1]
            lines.append(_sv_line(model.coef[i], sv.indices[lo:hi], sv.data[lo:hi],
                                  comment=comments[i]))
    elif isinstance(model, MulticlassModel):
        k, d = model.W.shape
        lines = [MULTICLASS_VERSION, f"{k} # number of classes",
                 f"{d} # number of base features", f"{model.loss_id} # loss function"]
        # SVMmulticlass sizes its joint feature space k·d + 1.
        lines += _kernel_header(Kernel(), k * d + 1, model.n_train, 1, 0.0)
        lines.append(_sv_line(1.0, *_nonzero(np.ravel(model.W)), prefix="qid:0"))
    else:
        raise TypeError(f"cannot write a {type(model).__name__} as a model file")
    return "\n".join(lines) + "\n"


def write_model(path, model) -> None:
    """Write ``model`` to ``path`` atomically (``-`` for standard output)."""
    text = format_model(model)
    with atomic_output(path) as out:
        out.write(text)
