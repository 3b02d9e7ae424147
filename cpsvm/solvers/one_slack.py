"""Structural SVM training by cutting planes (SVMstruct / SVMperf / SVMmulticlass /
SVMhmm).

``train(dataset, params)`` picks the problem (binary — with the error rate, or one of
SVMperf's multivariate losses, :mod:`cpsvm.problems.multivariate` —, multiclass, hmm, cfg,
rank or a user's class),
the representation (linear, exact kernel expansion, or a Nyström basis trained
linearly — SVMperf's ``--t 1``) and the algorithm (``-w``: 0 n-slack, 2 1-slack with
the primal QP, 3 1-slack dual, 4 1-slack dual with constraint cache, 9 — SVMperf's
"custom algorithm" slot — 1-slack dual with OCAS's line search), runs the engine and
returns the model with what the run measured.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ..conventions import MARGIN_RESCALING, PERF_LOSS_NAMES, PERF_MULTIVARIATE_LOSSES
from ..data import Dataset
from ..engine.cutting_plane import CuttingPlaneParams, n_slack, one_slack
from ..engine.ocas import OcasOracle, merged_examples
from ..engine.oracles import KernelCutOracle, LinearCutOracle
from ..engine.threads import thread_count
from ..engine.working_set import CutWorkingSet, PrimalCutWorkingSet
from ..errors import InputError, OptionError
from ..kernels import Kernel
from ..models import KernelModel
from ..problems import (
    choose_problem,
    load_user_problem,
    problem_entry,
    resolve_problem,
)

ALGORITHMS = (0, 2, 3, 4, 9)
# The fastest correct -w (benchmarks/bench_cp_learn.py): for the built-in problems with
# margin rescaling, trained linearly, -w 9 — OCAS's line search and cut point cut the
# iterations on a9a from ~900 to ~70 at the same guarantee. Otherwise -w 4 calls the
# oracle far less, but its cached cuts are weaker (multiclass: 2x the iterations, 3-4x
# the time on satimage) and for binary they equal the exact ones: -w 3. hmm with slack
# rescaling: -w 4, SVMhmm's default, the fewest Viterbi calls.
DEFAULT_ALGORITHM = {"binary": 3, "multiclass": 3, "hmm": 4, "user": 4, "cfg": 4, "rank": 3}
# --margin-bounds when not given, per -w (benchmarks/bench_margin_bounds.py): the binary
# linear cut (-w 2, 3) and OCAS's iteration (-w 9).
MARGIN_BOUNDS_DEFAULT = {2: False, 3: False, 9: False}
LINE_SEARCH = ("binary", "multiclass", "hmm", "rank")  # -w 9: OCAS's line search
# -l of each problem, its default first: binary SVMperf's numbering (2 the error rate;
# the others SVMperf's multivariate losses, problems/multivariate.py), multiclass and user
# problems zero/one per example (-l 2 the same), hmm SVMhmm's Hamming, cfg brackets or
# zero/one (benchmarks/bench_cfg.py), rank SVMrank's swapped pairs (1) or their fraction
# per query (2).
LOSSES_OF = {
    "binary": (2, 0, 1, 3, 4, 5, 10),
    "multiclass": (0, 2),
    "user": (0, 2),
    "hmm": (1, 0),
    "cfg": (1, 0),
    "rank": (1, 2),
}


@dataclass
class StructParams:
    C: float
    epsilon: float = 0.1
    algorithm: int | None = None  # None (or 9): the default for the problem
    rescaling: int = MARGIN_RESCALING
    loss_id: int | None = None  # None: the problem's default (hmm, cfg 1, else 0)
    max_iterations: int = 100000
    max_idle: int = 50
    cache_size: int = 5
    batch: int = 100
    bias: float | None = None  # --b: None = 1 for the linear kernel, 0 with a kernel
    kernel: Kernel = field(default_factory=Kernel)
    basis_method: int = 0  # SVMperf --t: 0 exact, 1 random basis (Nyström)
    basis_size: int = 500  # --k
    basis_data: Dataset | None = None  # --f
    problem: str = "auto"
    trans_order: int = 1  # hmm --t: order of the transitions (SVMhmm)
    emit_order: int = 0  # hmm --e: order of the emissions
    beam: int = 0  # hmm --b: Viterbi beam width, 0 = exact
    seed: int = 0
    time_limit: float = math.inf
    n_threads: int | None = None  # numba threads for the run (None: the caller's)
    tree_options: object = None  # cfg: the trees' preprocessing (io.trees.TreeOptions)
    margin_bounds: bool | None = None  # binary linear: None = MARGIN_BOUNDS_DEFAULT[-w]
    k_fraction: float = 0.0  # binary --p: k of Prec@k/Rec@k over #positives

    def validate(self):
        if not self.C > 0:
            raise InputError(f"expected C > 0 (-c), got {self.C:g}")
        if not self.epsilon > 0:
            raise InputError(f"expected epsilon > 0 (-e), got {self.epsilon:g}")
        if self.algorithm not in (None, 1) + ALGORITHMS:
            raise InputError(f"expected -w 0, 1, 2, 3, 4 or 9, got {self.algorithm}")
        if self.rescaling not in (1, 2):
            raise InputError(f"expected -o 1 (slack) or 2 (margin rescaling), got {self.rescaling}")
        if self.loss_id is not None and self.loss_id not in set().union(*LOSSES_OF.values()):
            raise InputError(
                f"loss -l {self.loss_id} is not supported: binary -l 0, 1, 2, "
                "3, 4, 5 or 10 (SVMperf's), multiclass -l 0 or 2, hmm and cfg "
                "-l 0 or 1, rank -l 1 or 2"
            )
        _check_multivariate(self)
        from ..decoding.viterbi import MAX_EMIT_ORDER, MAX_TRANS_ORDER

        if not 0 <= self.trans_order <= MAX_TRANS_ORDER:
            raise InputError(
                f"expected --t 0..{MAX_TRANS_ORDER} (order of the hmm's "
                f"transitions), got {self.trans_order}"
            )
        if not 0 <= self.emit_order <= min(MAX_EMIT_ORDER, self.trans_order):
            raise InputError(
                f"expected --e 0..{min(MAX_EMIT_ORDER, self.trans_order)} "
                f"(order of the hmm's emissions, at most --t), got "
                f"{self.emit_order}"
            )
        if self.beam < 0:
            raise InputError(f"expected --b >= 0 (Viterbi beam width, 0 = exact), got {self.beam}")
        if self.basis_method not in (0, 1):
            raise InputError(
                f"--t {self.basis_method} is not supported: --t 0 (exact) or "
                "--t 1 (random basis, Nyström)"
            )
        if self.basis_method == 1 and self.basis_size < 1:
            raise InputError(f"expected --k >= 1 basis functions, got {self.basis_size}")
        if self.bias and not self.kernel.is_linear:
            # SVMperf refuses it too: its kernel expansion has no bias term.
            raise InputError(
                f"--b {self.bias:g} needs the linear kernel: with -t "
                f"{self.kernel.kind} there is no bias (give --b 0 or leave it)"
            )
        self.problem = resolve_problem(self.problem)
        if self.problem in LOSSES_OF:
            self.loss_of(self.problem)

    def loss_of(self, kind) -> int:
        """-l for the problem ``kind`` (its default when not given), checked."""
        loss_id = self.loss_id if self.loss_id is not None else LOSSES_OF[kind][0]
        if loss_id not in LOSSES_OF[kind]:
            raise InputError(
                f"loss -l {loss_id} is not a loss of the {kind} problem: "
                "expected " + " or ".join(f"-l {i}" for i in LOSSES_OF[kind])
            )
        return loss_id


@dataclass
class TrainInfo:
    problem: str
    algorithm: int
    n_examples: int
    result: object  # engine CuttingPlaneResult
    norm_w: float
    n_sv: int  # cuts with α > 0
    notes: list = field(default_factory=list)
    kernel_evaluations: int = 0
    class_counts: tuple | None = None  # (positives, negatives) of a multivariate loss
    epsilon: float = math.nan  # the tolerance used, in the loss's units (rank: -e x
    # pairs per query with -l 1)


def train(dataset: Dataset, params: StructParams, *, callback=None, should_stop=None):
    """The model and TrainInfo; the whole run (merging, features, engine) uses
    ``params.n_threads`` numba threads and leaves the caller's count as it was."""
    with thread_count(params.n_threads):
        return _train(dataset, params, callback=callback, should_stop=should_stop)


def _train(dataset: Dataset, params: StructParams, *, callback=None, should_stop=None):
    params.validate()
    if ":" in params.problem:
        kind, problem = "user", load_user_problem(params.problem, dataset)
    else:
        kind = choose_problem(dataset, params.problem, sequences=True)
        problem = None
    loss_id = params.loss_of(kind)
    if kind == "cfg" and loss_id == 1 and params.rescaling != MARGIN_RESCALING:
        if params.loss_id is not None:
            raise OptionError(
                "the bracket loss (-l 1) of the cfg problem needs margin "
                "rescaling (-o 2): with slack rescaling its argmax is no CKY"
            )
        loss_id = 0  # cfg's default loss with slack rescaling: zero/one
    if kind == "rank" and params.rescaling != MARGIN_RESCALING:
        raise OptionError("the rank problem has margin rescaling only (-o 2), as SVMrank")
    kernel = params.kernel
    nonlinear = not kernel.is_linear
    if nonlinear and kind != "binary":
        raise InputError("kernels (-t 1..3) are supported for binary problems only")
    # SVMperf's losses over the whole label vector: one structured example.
    multivariate = kind == "binary" and loss_id in PERF_MULTIVARIATE_LOSSES
    if multivariate and nonlinear and params.basis_method == 0:
        raise OptionError(
            f"-l {loss_id} ({PERF_LOSS_NAMES[loss_id]}) trains linear models: "
            "with a kernel use its Nyström basis (--t 1 --k K)"
        )
    entry = problem_entry(kind) if kind != "user" else None
    n = dataset.n_examples
    if entry is not None and entry.from_dataset is not None:
        # Examples that are groups of lines (sentences): built from the whole dataset.
        options = (
            {"options": params.tree_options}
            if kind == "cfg"
            else dict(
                trans_order=params.trans_order, emit_order=params.emit_order, beam=params.beam
            )
        )
        problem = entry.from_dataset(
            dataset, loss_id=loss_id, **(options if kind != "rank" else {})
        )
        n = problem.n_examples
    bias = params.bias if params.bias is not None else float(params.kernel.is_linear)
    algorithm = params.algorithm
    if algorithm in (None, 9):
        # -w 9 needs a linear model of binary, multiclass or hmm, margin rescaled.
        line_search = (
            kind in LINE_SEARCH
            and params.rescaling == MARGIN_RESCALING
            and (not nonlinear or params.basis_method == 1)
        )
        algorithm = 9 if line_search else DEFAULT_ALGORITHM[kind]
    elif algorithm == 1:
        algorithm = 0  # n-slack with shrinking: the same optimum as plain n-slack
    notes = []
    # A problem whose loss is a count may scale -e to it (rank: svm_rank_learn's -e is
    # relative to the average number of pairs per query).
    epsilon = params.epsilon * getattr(problem, "epsilon_scale", 1.0)
    engine_params = CuttingPlaneParams(
        C=params.C,
        epsilon=epsilon,
        max_iterations=params.max_iterations,
        max_idle=params.max_idle,
        time_limit=params.time_limit,
        use_cache=algorithm == 4,
    )

    if nonlinear and params.basis_method == 0:
        if algorithm != 3:
            notes.append(f"-w {algorithm} with a kernel: using -w 3 (1-slack dual)")
            algorithm = 3
            engine_params.use_cache = False
        oracle = KernelCutOracle(
            dataset.X, dataset.y, kernel, params.rescaling, costs=dataset.checked_cost()
        )
        result = one_slack(oracle, engine_params, callback=callback, should_stop=should_stop)
        coef = oracle.expansion(result.alpha)
        support = np.flatnonzero(coef)
        model = KernelModel(dataset.X[support], coef[support], 0.0, kernel, n_train=n)
        norm_w = math.sqrt(max(0.0, float(coef @ oracle.scores(result.alpha))))
        return model, TrainInfo(
            kind,
            algorithm,
            n,
            result,
            norm_w,
            int(np.count_nonzero(result.alpha)),
            notes,
            oracle.kernel_evaluations,
        )

    nystrom = None
    # Each example's cost: factor (SVMlight's, 1 if none) and, for -w 9, its weight
    # cost_i/n in the 1-slack risk. A user's problem gets them when its examples are
    # the file's lines.
    cost_factors = dataset.checked_cost()
    if (
        cost_factors is not None
        and problem is not None
        and problem.n_examples != dataset.n_examples
    ):
        notes.append(
            f"cost: factors ignored: the problem has {problem.n_examples} "
            f"examples, the file {dataset.n_examples} lines"
        )
        cost_factors = None
    if cost_factors is not None and multivariate:
        notes.append(
            f"cost: factors ignored: the loss -l {loss_id} counts every example once, as SVMperf's"
        )
        cost_factors = None
    costs = (np.ones(n) if cost_factors is None else cost_factors) / n
    if problem is None:
        X, y = dataset.X, dataset.y
        if nonlinear:
            from ..approx import NystromMap

            nystrom = NystromMap(kernel, _basis(dataset, params))
            if nystrom.n_dropped:
                notes.append(
                    f"basis kernel matrix is singular: {nystrom.n_dropped} of "
                    f"{nystrom.basis.shape[0]} directions dropped"
                )
            X = nystrom.transform(dataset.X)
        if multivariate:
            from ..problems.multivariate import MultivariateProblem

            problem = MultivariateProblem(X, y, loss_id, bias=bias, k_fraction=params.k_fraction)
            costs = np.ones(1)
        else:
            if algorithm == 9:
                X, y, costs, _ = merged_examples(X, y, costs)
            problem = problem_entry(kind).build(X, y, bias=bias)
    if multivariate and params.margin_bounds:
        notes.append(f"--margin-bounds 1 ignored: -l {loss_id} has no per-example hinge")
    bounds = (
        kind == "binary"
        and not multivariate
        and (
            MARGIN_BOUNDS_DEFAULT.get(algorithm, False)
            if params.margin_bounds is None
            else params.margin_bounds
        )
    )
    if bounds and algorithm in (2, 3):
        problem.margin_bounds = True
    if algorithm == 9:
        # OCAS in the problem's scale: F(w) = ½|w|² + C·(1/n)·Σ ξ_i is the 1-slack primal;
        # a duality gap of C·ε gives the 1-slack ε guarantee.
        if bounds:
            # imported only then: its module and kernels would add to every run's start-up
            from ..engine.ocas_bounds import PrunedOcasOracle as oracle_class
        else:
            oracle_class = OcasOracle
        oracle = oracle_class(problem, costs, params.C)
        engine_params.epsilon = -math.inf
        engine_params.tol_abs = params.C * epsilon
    else:
        oracle = LinearCutOracle(
            problem, params.rescaling, params.cache_size if algorithm == 4 else 0, cost_factors
        )
    if algorithm == 0:
        result = n_slack(
            oracle,
            problem.n_examples,
            engine_params,
            batch=params.batch,
            callback=callback,
            should_stop=should_stop,
        )
    else:
        working_set = (
            PrimalCutWorkingSet(params.C, lambda: oracle.vectors)
            if algorithm == 2
            else CutWorkingSet([params.C])
        )
        result = one_slack(
            oracle,
            engine_params,
            callback=callback,
            should_stop=should_stop,
            working_set=working_set,
        )
    w = oracle.weights(result.alpha)
    if algorithm == 9:
        w = oracle.w_best
        result = dataclasses.replace(result, xi=(result.primal - 0.5 * float(w @ w)) / params.C)
    if nystrom is not None:
        model = KernelModel(nystrom.basis, nystrom.expansion_coef(w), 0.0, kernel, n_train=n)
        if multivariate:
            problem.record_loss(model)
    else:
        model = problem.to_model(w, n_train=n, loss_id=loss_id)
    info = TrainInfo(
        kind,
        algorithm,
        n,
        result,
        float(np.linalg.norm(w)),
        int(np.count_nonzero(result.alpha)),
        notes,
        epsilon=epsilon,
    )
    if multivariate:
        info.class_counts = (problem.n_positive, problem.n_negative)
    return model, info


def _check_multivariate(params: StructParams):
    """SVMperf's own refusals for its multivariate losses (-l, --p), before any data."""
    if not params.k_fraction >= 0:
        raise InputError(f"expected --p >= 0, got {params.k_fraction:g}")
    if params.loss_id == 4 and params.k_fraction > 1:
        raise InputError(
            f"expected --p <= 1 for Prec@k (-l 4): k is that fraction of the "
            f"positives, got {params.k_fraction:g}"
        )
    if params.loss_id == 5 and 0 < params.k_fraction < 1:
        raise InputError(
            f"expected --p >= 1 (or 0) for Rec@k (-l 5): k is that fraction of "
            f"the positives, got {params.k_fraction:g}"
        )
    if params.loss_id == 10 and params.rescaling != MARGIN_RESCALING:
        raise InputError(
            "ROC area (-l 10) is trained with margin rescaling only (-o 2), as in SVMperf"
        )


def _basis(dataset: Dataset, params: StructParams):
    """--k basis examples drawn at random (seeded) from --f's file or the training set."""
    source = params.basis_data if params.basis_data is not None else dataset
    X = source.X
    if source is not dataset and X.shape[1] != dataset.n_features:
        from ..models import fit_columns

        X = fit_columns(X, dataset.n_features)
    k = min(params.basis_size, X.shape[0])
    rows = np.sort(np.random.default_rng(params.seed).choice(X.shape[0], k, replace=False))
    return X[rows]
