"""The label checks that several problems and learners share: binary targets ±1 and class
labels 1..k, each refusal one line naming the file, the line and the target (numpy is
imported when a check runs: the entries that use these are read by ``-h``)."""

from __future__ import annotations

from ..errors import InputError


def first_bad(dataset, bad, what, hint=""):
    """InputError at the first example flagged in ``bad``: expected ``what``."""
    import numpy as np

    i = int(np.flatnonzero(bad)[0])
    raise InputError(
        f"expected {what}, got target {dataset.y[i]:g}{hint}",
        source=dataset.source,
        line=dataset.line_of(i),
    )


def _zero_one(y) -> bool:
    import numpy as np

    return bool(np.all((y == 0) | (y == 1)))


def check_binary_labels(dataset):
    import numpy as np

    y = dataset.y
    bad = np.abs(y) != 1
    if np.any(bad):
        hint = " (binary problems need targets +1/-1: map 0 to -1)" if _zero_one(y) else ""
        first_bad(dataset, bad, "binary targets +1 or -1", hint)
    if np.all(y == y[0]):
        raise InputError(
            f"expected examples of both classes, all targets are {y[0]:+g}", source=dataset.source
        )


def check_multiclass_labels(dataset):
    import numpy as np

    y = dataset.y
    bad = (y != np.round(y)) | (y < 1)
    if np.any(bad):
        hint = ""
        if _zero_one(y):
            hint = " (binary problems need targets +1/-1; 0/1 labels: map 0 to -1)"
        elif np.all(y == np.round(y)) and y.min() == 0:
            hint = " (multiclass labels start at 1; 0-based labels: add 1 to each)"
        first_bad(dataset, bad, "class labels 1..k (integers)", hint)
    largest = int(np.argmax(y))
    check_class_count(
        float(y[largest]), dataset.n_features, dataset.source, dataset.line_of(largest)
    )
    if np.all(y == y[0]):
        raise InputError(
            f"expected at least two classes, all targets are {y[0]:g}", source=dataset.source
        )


# Weight matrices of k x d a multiclass run keeps at once (the weights, the best point,
# a cut or the line search's end point).
WEIGHT_COPIES = 3


def check_class_count(k: float, n_features: int, source=None, line=None):
    """The largest class label k must leave room for the k x d weight matrices."""
    from ..memory import check_fits

    check_fits(
        k * max(n_features, 1) * 8 * WEIGHT_COPIES,
        f"class label {k:g} (a model of {k:g} classes x {n_features} features)",
        source=source,
        line=line,
    )


def runs_of_several_lines(dataset) -> bool:
    """qid on the lines, and some qid on consecutive lines (a query or sentence of more
    than one line)."""
    import numpy as np

    qid = getattr(dataset, "qid", None)
    return qid is not None and len(qid) >= 2 and bool(np.any(qid[1:] == qid[:-1]))
