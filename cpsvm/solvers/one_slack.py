"""Structural SVM training by cutting planes (SVMstruct / SVMperf / SVMmulticlass /
SVMhmm).

``train(dataset, params)`` picks the problem (binary — with the error rate, or one of
SVMperf's multivariate losses, :mod:`cpsvm.problems.binary.multivariate` —, multiclass, hmm, cfg,
rank or a user's class),
the representation (linear, exact kernel expansion, or a Nyström basis trained
linearly — SVMperf's ``--t 1``) and the algorithm (``-w``: 0 n-slack, 2 1-slack with
the primal QP, 3 1-slack dual, 4 1-slack dual with constraint cache, 5 dual coordinate
descent — :mod:`cpsvm.engine.dcd` — on the same objective, 9 — SVMperf's "custom
algorithm" slot — 1-slack dual with OCAS's line search; not given: 5 or 9, the faster
for the problem, :func:`fastest_algorithm`), runs the engine and returns the model with
what the run measured.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from ..conventions import LOSS_SCALE, MARGIN_RESCALING, PSI_SCALE
from ..data import Dataset
from ..engine.cutting_plane import CuttingPlaneParams, CuttingPlaneResult, n_slack, one_slack
from ..engine.dcd import DcdParams, binary_hinge_dcd, crammer_singer_dcd, path_start
from ..engine.magnitudes import NORM_LIMIT, c_bound, check_c, check_costs
from ..engine.ocas import OcasOracle, merged_examples
from ..engine.oracles import KernelCutOracle, LinearCutOracle
from ..engine.solver_table import CP_LEARN
from ..engine.warm import dcd_from_weights
from ..engine.working_set import CutWorkingSet, PrimalCutWorkingSet
from ..errors import InputError, OptionError
from ..kernels import check_kernel_values, kernel_diagonal
from ..models import KernelModel, LinearModel, MulticlassModel, fit_columns, linear_start
from ..params.one_slack import StructParams
from ..params.resolved import Resolved, resolved
from ..params.shared import class_weights, training_classes, weighed
from ..problems import choose_entry
from ..problems.binary.problem import BinaryProblem
from ..problems.multiclass.problem import MulticlassProblem
from ..sparse_ops import squared_norms
from ..threads import thread_count

# The default's choice for the binary hinge: -w 5 up to this mean C_i·|x_i|² of the
# plain hinge's C_i (as ocas_learn's, solvers/ocas.py).
DCD_CONDITION = 3.0
# --margin-bounds when not given, per -w (benchmarks/bench_margin_bounds.py): the binary
# linear cut (-w 2, 3) and OCAS's iteration (-w 9), the methods whose cuts they prune
# (the solver table's ``prunes``).
MARGIN_BOUNDS_DEFAULT = {2: False, 3: False, 9: False}


def engine_settings(params, epsilon: float) -> CuttingPlaneParams:
    """The 1-slack loop's settings of cp_learn's ``params`` (their C, -#, --max-idle, -t)
    at the tolerance ``epsilon`` (in the problem's scale), on one machine or a cluster."""
    return CuttingPlaneParams(
        C=params.C,
        epsilon=epsilon,
        max_iterations=params.max_iterations,
        max_idle=params.max_idle,
        time_limit=params.time_limit,
    )


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
    loss_id: int = 0
    class_counts: tuple | None = None  # (positives, negatives) of a multivariate loss
    epsilon: float = math.nan  # the tolerance used, in the loss's units (rank: -e x
    # pairs per query with -l 1)


def train(dataset: Dataset, run: Resolved | StructParams, *, callback=None, should_stop=None):
    """The model and TrainInfo of ``run`` (a Params is resolved first: :func:`settings`);
    the whole run (merging, features, engine) uses its ``n_threads`` numba threads and
    leaves the caller's count as it was."""
    params = run.params if isinstance(run, Resolved) else run
    with thread_count(params.n_threads):
        return _train(dataset, run, callback=callback, should_stop=should_stop)


def _train(dataset: Dataset, run, *, callback=None, should_stop=None):
    path = StructPath(dataset, run)
    return path.fit(path.params.C, callback=callback, should_stop=should_stop)


def settings(dataset: Dataset, params: StructParams) -> Resolved:
    """The settings of a run of ``params`` on ``dataset``: the problem (its labels checked;
    auto decided by the data), its loss id, its options with their defaults and the notes
    of its checks of the run's settings."""
    entry = choose_entry(dataset, params.problem, sequences=True)
    loss_id, options, notes = params.checked(entry)
    problem = params.problem if ":" in params.problem else entry.name  # a user's: module:Class
    return Resolved(
        params, problem, entry=entry, loss_id=loss_id, options=MappingProxyType(options),
        notes=tuple(notes), classes=training_classes(dataset, params),
    )  # fmt: skip


class StructPath:
    """cp_learn's training of one dataset, set up once (problem, features, algorithm) and
    run at one C or along increasing C values (``--c-path``), each run started from the
    last one's end where the algorithm allows: the 1-slack working sets (-w 3, 4, 9)
    keep their cuts, which do not depend on C, -w 5 starts from the last dual point
    (:func:`~cpsvm.engine.dcd.path_start`); -w 0, 2, margin bounds and exact kernels
    start cold."""

    def __init__(self, dataset: Dataset, run: Resolved | StructParams):
        run = resolved(run, dataset, settings)
        params = run.params
        self.dataset, self.params = dataset, params
        self.entry = entry = run.entry
        entry.reading.check_labels(dataset)  # (a fold's part: one class only?)
        self.loss_id, self.options, self.notes = run.loss_id, dict(run.options), list(run.notes)
        self.classes = run.classes
        # each example's factor of C: its cost: token times its class's weight
        self.factors = dataset.cost_factors(class_weights(params), run.classes)
        self.nonlinear = not params.kernel.is_linear
        self._check_kernel()
        # A loss over the whole label vector (SVMperf's multivariate ones): one example.
        self.decomposes = entry.training.decomposes(self.loss_id)
        self.basis_method = self.options.get("basis_method", 0)
        # Examples that are groups of lines (sentences, queries, trees) or a user's; None:
        # built on the features (_build_on_features).
        problem = entry.training.build(dataset, self.loss_id, self.options)
        self.n = dataset.n_examples if problem is None else problem.n_examples
        algorithm = self._choose_algorithm()
        self.epsilon = self._epsilon(problem)
        self.nystrom = None
        if self.nonlinear and self.basis_method == 0:
            self.algorithm, self.problem = self._exact_kernel_algorithm(algorithm), None
            factors = self.factors
            # k(x_i, x_i) is |φ(x_i)|², the flip's term 2·PSI_SCALE·φ(x_i) (C's bound)
            norms = 2 * PSI_SCALE * np.sqrt(np.abs(kernel_diagonal(params.kernel, dataset.X)))
            unit = (np.ones(self.n) if factors is None else factors) / self.n
            self.c_terms = (unit, norms, LOSS_SCALE)
            self._initial_weights()  # (refused: an exact kernel expansion)
            return
        costs, cost_factors = self._costs(problem)
        # (C_i/C, |δΨ_i|) of C's bound (cpsvm.engine.magnitudes.check_c): the norms known
        # where the problem is built on features; elsewhere C·C_i alone is checked here
        # and each cut's norm as it is made (check_cut).
        self.c_terms = (costs, np.zeros(len(costs)), 0.0)
        if problem is None:
            problem, costs = self._build_on_features(algorithm, costs)
        if not self.decomposes and params.margin_bounds:
            self.notes.append(
                f"--margin-bounds 1 ignored: -l {self.loss_id} has no per-example hinge"
            )
        self.algorithm, self.problem = algorithm, problem
        self.costs, self.cost_factors = costs, cost_factors
        self._warm = None  # (algorithm, state) of the last run that can go on
        self._w_0 = self._initial_weights()  # --init-model: the first fit starts there

    def _initial_weights(self):
        """w_0 of --init-model in the problem's layout (binary: w, the --b feature's
        weight −b/B last; multiclass: the (d, k) W flat), or None. cp_learn starts the
        linear binary problem of a per-example loss and multiclass, by -w 5 or 9; the
        rest is refused in one line, as a model that does not fit the data
        (cpsvm.models.start_weights)."""
        model, problem = self.params.init_model, self.problem
        if model is None:
            return None
        kinds = {BinaryProblem: (LinearModel,), MulticlassProblem: (MulticlassModel,)}
        if problem is None or self.nystrom is not None or type(problem) not in kinds:
            raise InputError(
                "--init-model starts linear binary (a per-example loss) and multiclass "
                f"problems only, not {self.entry.name}"
                + (" with a kernel" if self.nonlinear else "")
            )
        if CP_LEARN[self.algorithm].loop != "dcd" and self.algorithm != 9:
            raise InputError(
                f"--init-model starts -w 5 and -w 9 (a start point is theirs), not -w "
                f"{self.algorithm}"
            )
        binary = type(problem) is BinaryProblem
        n_classes = None if binary else problem.n_classes
        bias = problem.bias if binary else 0.0
        return linear_start(model, binary, self.dataset, bias, n_classes, bias_flag="--b")

    def _check_kernel(self):
        """-t 1..3: for the problems that take kernels, with values the kernel takes."""
        if self.nonlinear and not self.entry.training.kernels:
            raise OptionError("kernels (-t 1..3) are supported for binary problems only")
        if self.nonlinear:
            check_kernel_values(self.params.kernel, self.dataset)

    def _choose_algorithm(self) -> int:
        """-w, resolved by its row of the solver table: an alias's method; not given, 5
        where it applies (decided on the examples in _fit: fastest_algorithm), else 9; a
        method that needs what the problem or the settings do not allow refused, or (9
        without the line search) the problem's default_algorithm."""
        params, entry = self.params, self.entry
        linear = not self.nonlinear or self.basis_method == 1  # also Nyström's basis
        margin = params.rescaling == MARGIN_RESCALING
        applies = {  # what a method may need, trained linearly with margin rescaling
            "coordinate_descent": entry.training.coordinate_descent and linear and margin
            and self.decomposes,
            "line_search": entry.training.line_search and margin and linear,
        }  # fmt: skip
        algorithm = params.algorithm
        if algorithm is None:
            default_dcd = applies["coordinate_descent"] and not params.margin_bounds
            algorithm = 5 if default_dcd else 9
        method = CP_LEARN[algorithm]
        if method.same_as is not None:
            return method.same_as  # -w 1, n-slack with shrinking: the same optimum as 0
        if method.needs is not None and not applies[method.needs]:
            if method.refused is not None:
                raise OptionError(method.refused)
            return entry.training.default_algorithm
        if params.margin_bounds and not method.margin_bounds:
            raise OptionError(
                f"--margin-bounds 1 prunes cuts: it cannot be used with -w {algorithm}"
            )
        return algorithm

    def _epsilon(self, problem) -> float:
        """-e (or the problem's default) in the loss's units: a problem whose loss is a
        count may scale it (rank: svm_rank_learn's -e is relative to the average number
        of pairs per query)."""
        params, entry = self.params, self.entry
        epsilon = entry.command_line.epsilon if params.epsilon is None else params.epsilon
        return epsilon * (1.0 if problem is None else problem.epsilon_scale)

    def _exact_kernel_algorithm(self, algorithm) -> int:
        """The -w of an exact kernel expansion: the method that trains them (said)."""
        if CP_LEARN[algorithm].exact_kernels:
            return algorithm
        kernels = next(i for i, m in CP_LEARN.items() if m.exact_kernels)
        self.notes.append(
            f"-w {algorithm} with a kernel: using -w {kernels} ({CP_LEARN[kernels].name})"
        )
        return kernels

    def _costs(self, problem):
        """(each example's weight cost_i/n in the 1-slack risk, SVMlight's cost: factors
        or None): a user's problem gets the factors when its examples are the file's
        lines, a loss over the whole label vector never (said)."""
        cost_factors = self.factors
        if (
            cost_factors is not None
            and problem is not None
            and problem.n_examples != (self.dataset.n_examples)
        ):
            self.notes.append(
                f"cost: factors ignored: the problem has {problem.n_examples} "
                f"examples, the file {self.dataset.n_examples} lines"
            )
            cost_factors = None
        if cost_factors is not None and not self.decomposes:
            self.notes.append(
                f"cost: factors ignored: the loss -l {self.loss_id} counts every example "
                "once, as SVMperf's"
            )
            cost_factors = None
        n = self.n
        return (np.ones(n) if cost_factors is None else cost_factors) / n, cost_factors

    def _build_on_features(self, algorithm, costs):
        """(the problem on the file's features, or on a Nyström basis's (--t 1), its
        costs): examples that are equal merged for OCAS's and coordinate descent's
        passes, the bias feature the entry's --b (default 1 when linear)."""
        dataset, options = self.dataset, self.options
        X, y = dataset.X, dataset.y
        if self.nonlinear:
            from ..approx import NystromMap

            nystrom = NystromMap(self.params.kernel, _basis(dataset, options, self.params.seed))
            if nystrom.n_dropped:
                self.notes.append(
                    f"basis kernel matrix is singular: {nystrom.n_dropped} of "
                    f"{nystrom.basis.shape[0]} directions dropped"
                )
            X = nystrom.transform(dataset.X)
            self.nystrom = nystrom
        method = CP_LEARN[algorithm]
        if not self.decomposes:
            costs = np.ones(1)
        elif method.loop == "dcd" or method.oracle == "ocas":
            X, y, costs, _ = merged_examples(X, y, costs)
        bias = options.get("bias")
        if bias is None:
            bias = float(not self.nonlinear)
        if not abs(bias) <= NORM_LIMIT:  # |x|² + b² finite
            raise OptionError(
                f"expected a bias feature --b with |b| <= {NORM_LIMIT:g}, got {bias:g}"
            )
        problem = self.entry.training.build_on(X, y, self.loss_id, options, bias)
        if self.decomposes:
            # |δΨ_i|: flip_gain·|x_i| (binary), or x_i in two classes' blocks (multiclass)
            gain = math.sqrt(2) if problem.flip_gain is None else problem.flip_gain
            norms = gain * np.sqrt(squared_norms(problem.X))
            self.c_terms = (costs, norms, problem.loss_scale)
        return problem, costs

    def fit(self, C: float, *, callback=None, should_stop=None):
        """The model and TrainInfo at ``C``, warm from the previous fit where the
        algorithm allows; OptionError (CTooLarge) for a C too large for the data."""
        self.check_c(C)
        with c_bound(C):
            return self._fit(C, callback, should_stop)

    def check_c(self, C: float) -> None:
        """C against the data before any work (cpsvm.engine.magnitudes.check_c):
        OptionError (CTooLarge, CTooSmall) naming the bound."""
        if not 0 < C < math.inf:
            raise InputError(f"expected a finite C > 0 (-c), got {C:g}")
        with c_bound(C):
            check_c(C, *self.c_terms)

    def _fit(self, C, callback, should_stop):
        params = dataclasses.replace(self.params, C=C)
        algorithm, notes = self.algorithm, list(self.notes)
        engine_params = engine_settings(params, self.epsilon)
        if self.problem is None:
            return self._fit_kernel(params, engine_params, notes, callback, should_stop)
        problem, costs = self.problem, self.costs
        if CP_LEARN[algorithm].loop == "dcd" and params.algorithm is None:
            algorithm = fastest_algorithm(problem, costs, C)
        method = CP_LEARN[algorithm]
        engine_params.use_cache = method.cache
        # The per-example hinge of the binary problem is what the margin bounds prune.
        bounds = problem.margin_bounds is not None and (
            MARGIN_BOUNDS_DEFAULT.get(algorithm, False)
            if params.margin_bounds is None
            else params.margin_bounds
        )
        if bounds and method.prunes and method.oracle == "linear":
            problem.margin_bounds = True  # the problem's cut prunes (OCAS's oracle: below)
        warm = self._warm[1] if self._warm is not None and self._warm[0] == algorithm else None
        w_0, self._w_0 = self._w_0, None
        if method.loop == "dcd":
            w, result, state = _coordinate_descent(
                problem, costs, params, self.epsilon, callback, should_stop, warm, w_0
            )
        else:
            w, result, state = _cutting_planes(
                problem, costs, self.cost_factors, params, engine_params, algorithm, bounds,
                callback, should_stop, None if bounds else warm, w_0,
            )  # fmt: skip
        self._warm = None if state is None or bounds else (algorithm, state)
        n, loss_id = self.n, self.loss_id
        if self.nystrom is not None:
            model = KernelModel(
                self.nystrom.basis, self.nystrom.expansion_coef(w), 0.0, params.kernel, n_train=n
            )
            if not self.decomposes:
                problem.record_loss(model)
        else:
            model = problem.to_model(w, n_train=n, loss_id=loss_id)
        weighed(model, self.dataset, params, self.classes)
        info = TrainInfo(
            self.entry.name,
            algorithm,
            n,
            result,
            float(np.linalg.norm(w)),
            int(np.count_nonzero(result.alpha)),
            notes,
            loss_id=loss_id,
            epsilon=self.epsilon,
        )
        if not self.decomposes:
            info.class_counts = (problem.n_positive, problem.n_negative)
        return model, info

    def _fit_kernel(self, params, engine_params, notes, callback, should_stop):
        """An exact kernel expansion (-t 1..3 without --t 1), trained cold."""
        dataset, n = self.dataset, self.n
        engine_params.use_cache = False
        oracle = KernelCutOracle(
            dataset.X, dataset.y, params.kernel, params.rescaling, costs=self.factors
        )
        result = one_slack(oracle, engine_params, callback=callback, should_stop=should_stop)
        coef = oracle.expansion(result.alpha)
        support = np.flatnonzero(coef)
        model = KernelModel(dataset.X[support], coef[support], 0.0, params.kernel, n_train=n)
        weighed(model, dataset, params, self.classes)
        norm_w = math.sqrt(max(0.0, float(coef @ oracle.scores(result.alpha))))
        return model, TrainInfo(
            self.entry.name,
            self.algorithm,
            n,
            result,
            norm_w,
            int(np.count_nonzero(result.alpha)),
            notes,
            oracle.kernel_evaluations,
            loss_id=self.loss_id,
            epsilon=self.epsilon,
        )


def _cutting_planes(
    problem, costs, cost_factors, params, engine_params, algorithm, bounds, callback, should_stop,
    warm=None, w_0=None,
):  # fmt: skip
    """(w, engine result, state to go on from at another C or None) of the cutting-plane
    algorithms (-w 0, 2, 3, 4, 9); ``warm``: such a state (the solver table's ``warm``
    methods); ``w_0``: OCAS's (-w 9) first point and cut (--init-model)."""
    method = CP_LEARN[algorithm]
    ocas = method.oracle == "ocas"
    if warm is not None:
        oracle, working_set = warm
        working_set.set_bounds([params.C])
        if ocas:
            oracle.set_C(params.C)
            engine_params.tol_abs = params.C * engine_params.epsilon
            engine_params.epsilon = -math.inf
    elif ocas:
        # OCAS in the problem's scale: F(w) = ½|w|² + C·(1/n)·Σ ξ_i is the 1-slack primal;
        # a duality gap of C·ε gives the 1-slack ε guarantee.
        # the class read at the call, where a test may replace it
        oracle_class = OcasOracle
        if bounds:  # (the bounds' modules load only when asked for: start-up)
            from ..engine.ocas_bounds import PrunedOcasOracle as oracle_class
        oracle = oracle_class(problem, costs, params.C)
        if w_0 is not None:
            oracle.start_at(w_0, cut=True)
        engine_params.tol_abs = params.C * engine_params.epsilon
        engine_params.epsilon = -math.inf
    else:
        oracle = LinearCutOracle(
            problem, params.rescaling, params.cache_size if method.cache else 0, cost_factors
        )
    if warm is None and method.loop == "n_slack":
        result = n_slack(
            oracle,
            problem.n_examples,
            engine_params,
            batch=params.batch,
            callback=callback,
            should_stop=should_stop,
        )
    else:
        if warm is None:
            working_set = (
                PrimalCutWorkingSet(params.C, lambda: oracle.vectors)
                if method.primal_qp
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
    if ocas:
        w = oracle.w_best.copy()  # (moved in place by a later run of a path)
        result = dataclasses.replace(result, xi=(result.primal - 0.5 * float(w @ w)) / params.C)
    state = (oracle, working_set) if method.warm else None
    return w, result, state


def _hinge_scale(problem):
    """(m, L) of the problem's hinge ξ_i = max(0, L − m·margin_i): the binary problem's
    flip gain and Δ; multiclass m = 1 and Δ (cpsvm.problems.multiclass)."""
    m = problem.flip_gain
    return (1.0 if m is None else float(m)), problem.loss_scale


def fastest_algorithm(problem, costs, C) -> int:
    """-w when not given, for a problem -w 5 can train: 5 for multiclass, and for the
    binary hinge when the mean C_i·|x_i|² of the plain hinge's C_i is at most
    DCD_CONDITION (above it the dual's coordinates couple strongly and coordinate descent
    needs many passes: benchmarks/bench_liblinear.py); else 9."""
    if problem.flip_gain is None:
        return 5
    m, L = _hinge_scale(problem)
    plain_costs = C * costs * m * m / L
    return 5 if float(np.mean(plain_costs * squared_norms(problem.X))) <= DCD_CONDITION else 9


def _coordinate_descent(
    problem, costs, params, epsilon, callback, should_stop, warm=None, w_0=None
):  # fmt: skip
    """-w 5: F(w) = ½|w|² + C·Σ_i c_i·ξ_i(w) by dual coordinate descent. With ξ_i =
    max(0, L − m·margin_i), w = r·v for r = L/m makes ξ_i = L·(the plain hinge of v), so F =
    r²·P(v) at C_i = C·c_i·m²/L; the run stops at a duality gap of C·ε (as -w 9).
    Returns (w, result, (C, DcdResult) to start another C from); ``warm``: such a pair;
    ``w_0``: a model's w to start from (cpsvm.engine.warm)."""
    m, L = _hinge_scale(problem)
    r2 = (L / m) ** 2
    dcd_params = DcdParams(
        tol_rel=0.0,
        tol_abs=params.C * epsilon / r2,
        max_iterations=params.max_iterations,
        time_limit=params.time_limit,
        seed=params.seed,
    )
    report = None
    if callback is not None:

        def report(p):
            callback(dataclasses.replace(p, primal=r2 * p.primal, dual=r2 * p.dual, gap=r2 * p.gap))

    multiclass = problem.flip_gain is None
    run = dict(params=dcd_params, callback=report, should_stop=should_stop)
    plain_costs = params.C * costs * m * m / L
    check_costs(plain_costs, np.sqrt(squared_norms(problem.X)))  # before α is scaled
    if warm is not None:
        alpha, w_start = path_start(warm[1], params.C / warm[0], multiclass)
        run.update(alpha=alpha, **({"W": w_start} if multiclass else {"w": w_start}))
    if w_0 is not None:
        dcd = dcd_from_weights(
            problem.X, problem.y, plain_costs, w_0 * (m / L), multiclass=multiclass,
            n_classes=problem.n_classes if multiclass else None, **run,
        )  # fmt: skip
    elif multiclass:
        dcd = crammer_singer_dcd(
            problem.X, problem.y, plain_costs, n_classes=problem.n_classes, **run
        )
    else:
        dcd = binary_hinge_dcd(problem.X, problem.y, plain_costs, **run)
    v = dcd.w.reshape(-1)
    # an example is a support vector or not (multiclass: any of its k variables)
    alpha = np.abs(dcd.alpha).sum(axis=1) if multiclass else dcd.alpha
    w = (L / m) * v
    xi = (r2 * dcd.primal - 0.5 * float(w @ w)) / params.C
    result = CuttingPlaneResult(
        alpha=alpha,
        status=dcd.status,
        iterations=dcd.iterations,
        primal=r2 * dcd.primal,
        dual=r2 * dcd.dual,
        violation=dcd.violation,
        working_set=dcd.active,
        cuts_added=0,
        oracle_calls=dcd.updates,
        xi_working_set=xi,
        xi=xi,
        seconds_total=dcd.seconds_total,
    )
    return w, result, (params.C, dcd)


def _basis(dataset: Dataset, options: dict, seed: int):
    """--k basis examples drawn at random (seeded) from --f's file or the training set."""
    source = options["basis_data"] if options["basis_data"] is not None else dataset
    X = source.X
    if source is not dataset and X.shape[1] != dataset.n_features:
        X = fit_columns(X, dataset.n_features)
    k = min(options["basis_size"], X.shape[0])
    rows = np.sort(np.random.default_rng(seed).choice(X.shape[0], k, replace=False))
    return X[rows]
