"""The label checks that several problems and learners share: binary targets ±1 and class
labels 1..k, each refusal one line naming the file, the line and the target (numpy is
imported when a check runs: the entries that use these are read by ``-h``)."""

from __future__ import annotations

from ..errors import InputError

# The tests of the targets a check asks for the first failure of: not ±1, not 1..k.
NOT_PM1, NOT_CLASS = "not_pm1", "not_class"


class DatasetTargets:
    """What the label checks read of a dataset's targets (each refusal naming the file
    and the line). A cluster's shards give the same from their summaries
    (cpsvm.cluster.session.ShardedData.targets): one check for both."""

    def __init__(self, dataset):
        self.dataset = dataset
        self.source = dataset.source
        self.n_features = dataset.n_features

    def _bad(self, test):
        import numpy as np

        y = self.dataset.y
        if test == NOT_PM1:
            return np.abs(y) != 1
        return (y != np.round(y)) | (y < 1)

    def first_bad(self, test):
        """(source, line, target) of the first target failing ``test`` (NOT_PM1: not ±1;
        NOT_CLASS: not a class label 1..k), or None."""
        import numpy as np

        bad = np.flatnonzero(self._bad(test))
        if not len(bad):
            return None
        i = int(bad[0])
        return self.source, self.dataset.line_of(i), float(self.dataset.y[i])

    def hint(self, test) -> str:
        """Why targets failing ``test`` may be another problem's (0/1 or 0-based labels)."""
        import numpy as np

        y = self.dataset.y
        zero_one = bool(np.all((y == 0) | (y == 1)))
        if test == NOT_PM1:
            return " (binary problems need targets +1/-1: map 0 to -1)" if zero_one else ""
        if zero_one:
            return " (binary problems need targets +1/-1; 0/1 labels: map 0 to -1)"
        if np.all(y == np.round(y)) and y.min() == 0:
            return " (multiclass labels start at 1; 0-based labels: add 1 to each)"
        return ""

    def counts(self):
        """(positives, negatives): the targets +1 and -1."""
        import numpy as np

        y = self.dataset.y
        return int(np.count_nonzero(y == 1)), int(np.count_nonzero(y == -1))

    def extremes(self):
        """(smallest target, largest, source and line of the largest)."""
        import numpy as np

        y = self.dataset.y
        largest = int(np.argmax(y))
        return float(y.min()), float(y[largest]), self.source, self.dataset.line_of(largest)


def targets_of(data):
    """The targets the label checks read: a dataset's, or what stands for them (a
    cluster's shards: their ``targets()``)."""
    own = getattr(data, "targets", None)
    return own() if own is not None else DatasetTargets(data)


def _refuse(targets, test, what):
    bad = targets.first_bad(test)
    if bad is not None:
        source, line, target = bad
        raise InputError(
            f"expected {what}, got target {target:g}{targets.hint(test)}", source=source, line=line
        )


def check_binary_labels(data):
    """Binary targets ±1, both classes present."""
    targets = targets_of(data)
    _refuse(targets, NOT_PM1, "binary targets +1 or -1")
    n_pos, n_neg = targets.counts()
    if not (n_pos and n_neg):
        raise InputError(
            f"expected examples of both classes, all targets are {'+1' if n_pos else '-1'}",
            source=targets.source,
        )


def check_multiclass_labels(data):
    """Class labels 1..k, at least two, k leaving room for the k x d weights."""
    targets = targets_of(data)
    _refuse(targets, NOT_CLASS, "class labels 1..k (integers)")
    low, high, source, line = targets.extremes()
    check_class_count(high, targets.n_features, source, line)
    if low == high:
        raise InputError(
            f"expected at least two classes, all targets are {low:g}", source=targets.source
        )


def all_pm1(data) -> bool:
    """Every target ±1 (auto: binary, else multiclass)."""
    return targets_of(data).first_bad(NOT_PM1) is None


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
