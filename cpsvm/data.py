"""In-memory datasets: CSR features plus labels, as every solver consumes them."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from .columns import distinct_columns, onto_columns, original_columns
from .errors import InputError, OptionError

BALANCED = "balanced"


@dataclass(frozen=True)
class ClassWeights:
    """``--class-weight``: each class's factor of C (LIBLINEAR's -wi, scikit-learn's
    ``class_weight``). ``pairs`` ((label, weight), ...) as given, a class not named keeping
    1; ``balanced``: each class n / (k·n_class) on the data trained (scikit-learn's
    definition, computed again on each training set: a fold's, a path's). ``-j W`` is
    ``pairs ((1.0, W),)``. A weight is a finite number > 0, a label named once."""

    pairs: tuple = ()
    balanced: bool = False

    @classmethod
    def parse(cls, text: str, flag: str = "--class-weight") -> ClassWeights:
        """The weights of ``LABEL:W[,LABEL:W...]`` or ``balanced``: OptionError naming
        what is wrong."""
        text = str(text).strip()
        if text == BALANCED:
            return cls(balanced=True)
        pairs = []
        for item in text.split(","):
            label, colon, weight = item.strip().partition(":")
            try:
                pair = (float(label), float(weight))
            except ValueError:
                pair = None
            if not colon or pair is None:
                raise OptionError(
                    f"expected {flag} LABEL:W[,LABEL:W...] or {flag} balanced, got {item!r}"
                )
            pairs.append(pair)
        return cls.of_pairs(pairs, flag)

    @classmethod
    def of_pairs(cls, pairs, flag: str = "--class-weight") -> ClassWeights:
        """The weights of (label, weight) pairs, checked: OptionError for a weight that is
        not a finite number > 0, a label that is not finite or named twice."""
        seen = set()
        for label, weight in pairs:
            if not np.isfinite(label):
                raise OptionError(f"expected {flag} with finite labels, got label {label:g}")
            if label in seen:
                raise OptionError(f"expected each label once in {flag}, got {_number(label)} twice")
            seen.add(label)
            if not (weight > 0 and np.isfinite(weight)):
                raise OptionError(
                    f"expected {flag} weights that are finite numbers > 0, got "
                    f"{_number(label)}:{weight:g}"
                )
        return cls(tuple((float(a), float(w)) for a, w in pairs))

    def __str__(self) -> str:
        if self.balanced:
            return BALANCED
        return ",".join(f"{_number(a)}:{_number(w)}" for a, w in self.pairs)

    def per_class(self, y, classes=None, source=None) -> dict:
        """{label: weight} of the classes of ``y`` (the labels trained on), every class
        of ``classes`` (the whole training set's, of which ``y`` may be a fold's part)
        included: InputError for a named label that is no class of the data, or, balanced,
        a class with no example in ``y``."""
        present, counts = np.unique(np.asarray(y, dtype=np.float64), return_counts=True)
        return self.of_counts(present, counts, classes, source)

    def of_counts(self, present, counts, classes=None, source=None) -> dict:
        """:meth:`per_class` of the labels ``present`` in the data trained on and their
        ``counts`` (a cluster sums its shards')."""
        present = np.asarray(present, dtype=np.float64)
        known = present if classes is None else np.union1d(np.asarray(classes, float), present)
        if self.balanced:
            missing = np.setdiff1d(known, present)
            if len(missing):
                raise InputError(
                    f"--class-weight balanced: class {_number(missing[0])} has no example in "
                    "the data trained on (its weight n/(k*n_class) is undefined)",
                    source=source,
                )
            n, k = int(np.sum(counts)), len(present)
            return {float(a): n / (k * int(c)) for a, c in zip(present, counts)}
        for label, _ in self.pairs:
            if label not in known:
                shown = ", ".join(_number(a) for a in known[:10])
                raise InputError(
                    f"--class-weight: no class {_number(label)} in the training data "
                    f"(its classes: {shown}{', ...' if len(known) > 10 else ''})",
                    source=source,
                )
        return {float(a): 1.0 for a in known} | dict(self.pairs)

    @staticmethod
    def of_labels(y, weights: dict) -> np.ndarray:
        """Each example's factor: the weight of its label in ``weights`` (per_class's)."""
        labels = np.array(sorted(weights), dtype=np.float64)
        values = np.array([weights[a] for a in labels], dtype=np.float64)
        return values[np.searchsorted(labels, np.asarray(y, dtype=np.float64))]

    def factors(self, y, classes=None, source=None) -> np.ndarray:
        """Each example's factor of C: its class's weight (:meth:`per_class`)."""
        return self.of_labels(y, self.per_class(y, classes, source))

    def described(self, y, classes=None) -> str:
        """What a model file and the statistics record: the weights given, and for
        balanced each class's weight as computed."""
        return self.text_of(self.per_class(y, classes) if self.balanced else {})

    def text_of(self, weights: dict) -> str:
        """:meth:`described` of the per-class ``weights`` computed (balanced's)."""
        if not self.balanced:
            return str(self)
        return f"{BALANCED} " + ",".join(
            f"{_number(a)}:{w:.6g}" for a, w in sorted(weights.items())
        )


def _number(value: float) -> str:
    """A label or weight as the command line writes it (1, -1, 2.5)."""
    return f"{value:g}" if value != int(value) or abs(value) >= 1e15 else str(int(value))


@dataclass
class Dataset:
    """Examples as rows of a CSR matrix.

    X : scipy.sparse.csr_matrix, float64, shape (n, d); column j is feature j+1 of a
        1-based file.
    y : float64 array (n,) of targets.
    qid : int64 array (n,) or None when no line carried ``qid:``.
    comments : list of str (text after ``#`` per example) or None unless asked for.
    cost : float64 array (n,) of SVMlight ``cost:`` factors (1 where absent) or None.
    sid : int64 array (n,) of SVMlight ``sid:`` slack ids (0 where absent) or None.
    source : name of the file the data came from (for messages).
    feature_ids : int64 array (d,) or None: when the file's columns were renumbered to
        its distinct features (huge or hashed indices, :mod:`cpsvm.columns`), column j
        is the file's 0-based feature ``feature_ids[j]``; None when columns are indices.
    """

    X: sp.csr_matrix
    y: np.ndarray
    qid: np.ndarray | None = None
    comments: list | None = None
    cost: np.ndarray | None = None
    sid: np.ndarray | None = None
    source: str = "<memory>"
    line_numbers: np.ndarray | None = field(default=None, repr=False)
    feature_ids: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_examples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def nnz(self) -> int:
        """The feature values stored (a cluster's shards have the same count)."""
        return self.X.nnz

    def line_of(self, i: int):
        """1-based line number of example i in its file (None for in-memory data)."""
        return None if self.line_numbers is None else int(self.line_numbers[i])

    def n_qid_runs(self) -> int:
        """Runs of equal qid on consecutive lines: the sentences of an SVM-hmm file."""
        if self.qid is None or self.n_examples == 0:
            return 0
        return int(np.count_nonzero(np.diff(self.qid))) + 1

    def checked_cost(self):
        """The ``cost:`` factors as float64 (None when no line has one), refusing a factor
        that is not a finite positive number with the example's file and line."""
        if self.cost is None:
            return None
        costs = np.asarray(self.cost, dtype=np.float64)
        bad = ~((costs > 0) & np.isfinite(costs))
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"expected cost: > 0, got cost:{costs[i]:g}",
                source=self.source,
                line=self.line_of(i),
            )
        return costs

    def cost_factors(self, class_weights: ClassWeights | None = None, classes=None):
        """Each example's factor of C, the one place every solver takes it from: the
        ``cost:`` factor (:meth:`checked_cost`) times its class's weight
        (``class_weights``, :meth:`ClassWeights.factors`, ``classes`` those of the whole
        training set when these data are a part of it); None when neither is given."""
        costs = self.checked_cost()
        if class_weights is None:
            return costs
        factors = class_weights.factors(self.y, classes, self.source)
        return factors if costs is None else costs * factors

    def with_n_features(self, n_features: int) -> tuple[Dataset, int]:
        """Same examples with exactly ``n_features`` columns.

        Columns beyond ``n_features`` are dropped, as SVMlight's classifier drops test
        features above the model's highest index; returns the dataset and the number of
        non-zeros dropped.
        """
        if self.X.shape[1] == n_features:
            return self, 0
        X, dropped = onto_columns(self.X, n_features)
        return replace(self, X=X), int(dropped)

    def subset(self, rows) -> Dataset:
        """Examples ``rows`` (slice or index array), with all per-example fields."""

        def take(a):
            if a is None:
                return None
            if isinstance(a, list):
                return list(np.asarray(a, dtype=object)[rows])
            return a[rows]

        return Dataset(
            self.X[rows],
            take(self.y),
            take(self.qid),
            take(self.comments),
            take(self.cost),
            take(self.sid),
            self.source,
            take(self.line_numbers),
            self.feature_ids,
        )

    def with_distinct_columns(self) -> Dataset:
        """The dataset renumbered to its distinct columns (``feature_ids`` set) when
        that saves much memory (:func:`cpsvm.columns.distinct_columns`), else itself."""
        if self.feature_ids is not None:
            return self
        X, ids = distinct_columns(self.X)
        return self if ids is None else replace(self, X=X, feature_ids=ids)

    def with_original_columns(self) -> Dataset:
        """The dataset with its file's own feature indices as columns again."""
        if self.feature_ids is None:
            return self
        return replace(self, X=original_columns(self.X, self.feature_ids), feature_ids=None)

    def onto_columns_of(self, reference) -> Dataset:
        """These examples in the columns of ``reference`` (a dataset or a model: its
        n_features and feature_ids), features it does not have dropped."""
        X, _ = onto_columns(self.X, reference.n_features, reference.feature_ids)
        return replace(self, X=X, feature_ids=reference.feature_ids)


@dataclass
class SequenceDataset:
    """Sequences for tagging (SVM-hmm format): one CSR row per token.

    X : token features, CSR (n_tokens, d).
    tags : int64 array (n_tokens,) of tags 1..K (0 allowed in test files: unknown).
    starts : int64 array (n_sequences + 1,): tokens of sequence s are rows
        starts[s]:starts[s+1].
    qid : int64 array (n_sequences,) of the sequence ids in the file.
    comments : list of str (token text after ``#``) or None.
    line_numbers : int64 array (n_tokens,) of each token's line in its file, or None.
    """

    X: sp.csr_matrix
    tags: np.ndarray
    starts: np.ndarray
    qid: np.ndarray
    comments: list | None = None
    source: str = "<memory>"
    line_numbers: np.ndarray | None = field(default=None, repr=False)
    feature_ids: np.ndarray | None = field(default=None, repr=False)  # as Dataset's

    @property
    def n_sequences(self) -> int:
        return len(self.starts) - 1

    @property
    def n_tokens(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def n_tags(self) -> int:
        return int(self.tags.max()) if len(self.tags) else 0

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.starts)

    def line_of(self, token: int):
        """1-based line number of a token in its file (None for in-memory data)."""
        return None if self.line_numbers is None else int(self.line_numbers[token])

    @classmethod
    def from_dataset(cls, ds: Dataset, *, for_training: bool = True) -> SequenceDataset:
        """The sentences of an SVM-hmm file read as a :class:`Dataset` (one example per
        token line), checked: every token line carries ``qid:<sentence>`` with a
        sentence id >= 1 (0 is what SVMlight's format means by no qid), the tokens of a
        sentence are contiguous (a qid may not reappear after another), tags are
        integers >= 1 — >= 0 in a test file, as svm_hmm_classify accepts (0 or a tag
        above the model's is counted as an error), and sentence ids non-decreasing, as
        svm_hmm requires. Raises InputError naming file and line.
        """
        name = ds.source
        n = ds.n_examples
        if n == 0:
            raise InputError(
                "expected at least one token line "
                "(<tag> qid:<sentence> <index>:<value> ...), found none",
                source=name,
            )
        if ds.qid is None:
            raise InputError(
                "expected qid:<sentence> on every token line (SVM-hmm format)",
                source=name,
                line=ds.line_of(0),
            )
        qid = np.asarray(ds.qid, dtype=np.int64)
        bad = np.flatnonzero(qid < 1)
        if len(bad):
            i = int(bad[0])
            got = "no qid (or qid:0)" if qid[i] == 0 else f"qid:{qid[i]}"
            raise InputError(
                f"expected qid:<sentence> with a sentence id >= 1 on every "
                f"token line (SVM-hmm format), got {got}",
                source=name,
                line=ds.line_of(i),
            )
        y = np.asarray(ds.y, dtype=np.float64)
        lowest = 1 if for_training else 0
        bad = np.flatnonzero((y != np.floor(y)) | (y < lowest) | (y >= 2.0**62))
        if len(bad):
            i = int(bad[0])
            raise InputError(
                f"expected an integer tag >= {lowest}"
                f"{'' if for_training else ' (0: unknown)'}, got {y[i]:g}",
                source=name,
                line=ds.line_of(i),
            )
        first = np.concatenate(([0], np.flatnonzero(qid[1:] != qid[:-1]) + 1))
        ids = qid[first]
        down = np.flatnonzero(ids[1:] < ids[:-1])
        if len(down):
            run = int(down[0]) + 1
            row = int(first[run])
            seen = np.flatnonzero(ids[:run] == ids[run])
            if len(seen):
                where = ds.line_of(int(first[int(seen[0])]))
                raise InputError(
                    f"expected the tokens of sentence qid:{ids[run]} on "
                    f"consecutive lines (qid non-decreasing), but it reappears "
                    f"after qid:{ids[run - 1]}"
                    + (f" (it began on line {where})" if where is not None else ""),
                    source=name,
                    line=ds.line_of(row),
                )
            raise InputError(
                f"expected non-decreasing qid (sentences in increasing order, "
                f"as svm_hmm requires), got qid:{ids[run]} after "
                f"qid:{ids[run - 1]}",
                source=name,
                line=ds.line_of(row),
            )
        starts = np.concatenate((first, [n])).astype(np.int64)
        return cls(
            X=ds.X,
            tags=y.astype(np.int64),
            starts=starts,
            qid=ids,
            comments=ds.comments,
            source=name,
            line_numbers=ds.line_numbers,
            feature_ids=ds.feature_ids,
        )

    def to_dataset(self) -> Dataset:
        """One example per token (qid repeated per token), as the file holds them."""
        return Dataset(
            self.X,
            self.tags.astype(np.float64),
            np.repeat(self.qid, self.lengths),
            self.comments,
            source=self.source,
            line_numbers=self.line_numbers,
            feature_ids=self.feature_ids,
        )


@dataclass
class TreeDataset:
    """Parse trees (bracketed, Penn Treebank), one example per tree, as
    :func:`cpsvm.io.trees.read_trees` returns them (root bracket included);
    :func:`cpsvm.io.trees.read_tree_dataset` reads a file into one.

    trees : list of :class:`cpsvm.decoding.trees.Tree` (each knows its first line).
    n_skipped : trees of the file left out (``--max-length``).
    """

    trees: list
    source: str = "<memory>"
    n_skipped: int = 0

    @property
    def n_examples(self) -> int:
        return len(self.trees)

    @property
    def n_features(self) -> int:
        return 0

    def line_of(self, i: int):
        return self.trees[i].line

    def checked_cost(self):
        return None

    def cost_factors(self, class_weights=None, classes=None):
        """Trees carry no cost: token and no class (class weights are refused before)."""
        return None

    def subset(self, rows) -> TreeDataset:
        """Trees ``rows`` (an index array)."""
        return TreeDataset([self.trees[i] for i in rows], self.source, 0)
