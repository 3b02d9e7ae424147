"""cp_learn's structured problems on the cluster (hmm, rank, a user's ``module:Class``):
the worker's side. Each worker builds the problem's own object (its entry's ``build``,
:mod:`cpsvm.problems`) on its shard's units — sentences, queries, a user's examples —
and, given w, runs the problem's own separation oracle there and returns its partial
cut: Σ_i a_i·Δ_i and Σ_i a_i·δΨ_i(ŷ_i) over its units (a_i = cost_i/n, times Δ_i with
slack rescaling), exact, so that the sum along the tree is the same for any sharding.

Exact δΨ sums, the cheapest form for each problem:

* SVMhmm's Ψ (:class:`cpsvm.problems.hmm.problem.HmmProblem`): the terms of δΨ, token
  by token (emission entries a_i·x_tj in the rows of the true and the found state,
  transitions ±a_i), the tokens whose state is the same in both dropped (they cancel
  exactly), added on the fixed grids of :mod:`.numerics` (bounds from the global column
  maxima) by compiled kernels (:mod:`.kernels`): a fold's sum is exact in any order.
* any other problem (rank, a user's): the unit's δΨ from the problem's own
  ``delta_psi_sum`` (one unit at a time: the same bits in any shard), its non-zero
  entries added as exact integers (multiples of 2^-1074, :func:`exact_ints`); the
  losses too.

Units never split across shards: a byte range of one file is cut at qid boundaries
(:func:`plan_unit_shards`); shard files of a glob that split one (its qid ending a file
and starting the next) are refused in one line (:func:`check_units_whole`).
"""

from __future__ import annotations

import dataclasses
import re
import time

import numpy as np
import scipy.sparse as sp

from ..data import Dataset
from ..errors import InputError
from ..problems.entry import ProblemSpecError
from ..problems.hmm.problem import HmmProblem
from ..problems.registry import entry_of
from ..problems.user import UserProblemError, load_user_problem
from .kernels import deposit_emissions, deposit_pairs
from .numerics import fold_value
from .partials import SPARSE_SHARE, SparseFolds, add_folds
from .shards import ShardSpec, _line_start, plan_shards, worker_task
from .sources import open_source, worker_name

EXACT_SHIFT = 1074  # a double is an integer multiple of 2^-1074
_QID = re.compile(rb"(?:^|\s)qid:(\d+)")
_SCAN = 1 << 16


# -- planning: byte ranges cut at qid boundaries --------------------------------------------


def _qid_of(line: bytes):
    """The qid of a line (None for a blank or comment line, or a line without one)."""
    text = line.split(b"#", 1)[0]
    if not text.strip():
        return "skip"
    m = _QID.search(text)
    return int(m.group(1)) if m else None


def _previous_line(f, pos):
    """The line that ends at ``pos`` (a line start > 0)."""
    start = pos - 1
    while start > 0:
        at = max(0, start - _SCAN)
        f.seek(at)
        chunk = f.read(start - at)
        k = chunk.rfind(b"\n")
        if k >= 0:
            start = at + k + 1
            break
        start = at
    f.seek(start)
    return f.read(pos - start)


def _unit_start(f, pos, size):
    """The first line start >= pos whose qid differs from the line before it (blank and
    comment lines skipped): where a unit begins."""
    pos = _line_start(f, pos, size)
    if pos <= 0 or pos >= size:
        return pos
    before = _previous_line(f, pos)
    k = 0
    while before and _qid_of(before) == "skip" and k < 64:  # a comment: the one before
        start = pos - len(before)
        if start <= 0:
            return pos
        before = _previous_line(f, start)
        k += 1
    previous = _qid_of(before)
    if previous is None or previous == "skip":
        return pos
    f.seek(pos)
    at = pos
    while at < size:
        line = f.readline()
        if not line:
            return size
        q = _qid_of(line)
        if q != "skip" and q != previous:
            return at
        at += len(line)
    return size


@worker_task
def plan_unit_shards(source: str, parts: int, timeout=None) -> list[ShardSpec]:
    """:func:`.shards.plan_shards`, each byte range then moved to begin where a unit (a
    run of equal qid) begins, so that no sentence or query is split."""
    specs = plan_shards(source, parts, timeout)
    if len(specs) <= 1 or specs[0].whole:
        return specs
    opened = open_source(source, timeout)
    size = specs[0].size
    with opened.f as f:
        cuts = [0] + [_unit_start(f, s.start, size) for s in specs[1:]] + [size]
    for k in range(1, len(cuts)):
        cuts[k] = max(cuts[k], cuts[k - 1])
    return [
        ShardSpec(s.path, a, b, s.size, s.timeout, s.planned)
        for s, a, b in zip(specs, cuts, cuts[1:])
    ]


# -- exact sums ----------------------------------------------------------------------------


def exact_ints(values) -> list:
    """Each double as the integer value·2^1074 (exact)."""
    out = []
    for x in np.asarray(values, dtype=np.float64).tolist():
        p, q = x.as_integer_ratio()
        out.append(p << (EXACT_SHIFT - (q.bit_length() - 1)))
    return out


def exact_value(n: int) -> float:
    """The double nearest the integer n·2^-1074 (Python's division rounds correctly)."""
    return n / (1 << EXACT_SHIFT)


# -- a shard's units -------------------------------------------------------------------------


class UnitShard:
    """A shard's units as the problem's own object (``problem``), their weights in the
    1-slack sums and what the cut needs; built on the worker by :func:`build_units`."""

    def __init__(self, problem, factors, index, source):
        self.problem = problem
        self.factors = factors  # cost: factors of the units (lines), or None
        self.index = index
        self.source = source
        self.weights = None  # a_i = cost_i/n, once n is known (:func:`set_total`)
        self.grid = None  # the fold grid of the hmm's δΨ (None: exact integers)
        self.ends = ()  # (file, first qid, last qid) of each file of the shard
        self.rows = None  # the problem's units this shard sums (None: all of them)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_scratch", None)  # the cut's accumulator: made again where needed
        return state

    def __sizeof__(self):
        problem = self.problem
        X = getattr(problem, "X", None)
        size = X.data.nbytes + X.indices.nbytes if sp.issparse(X) else 0
        return object.__sizeof__(self) + size


def _shard_dataset(shard, d):
    """The shard's lines as a Dataset of the run's width ``d`` (its qid kept)."""
    shard.onto_run_columns(None)
    X = shard.X
    if X.shape[1] != d:
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], d))
    return Dataset(
        X=X,
        y=shard.y,
        qid=shard.qid,
        cost=shard.factors,
        source=shard.source,
        line_numbers=shard.lines,
    )


def _problem_error(spec, e):
    """A user's problem that cannot be built here: one line naming it and the worker."""
    if ":" in spec and isinstance(e, (ImportError, UserProblemError, ProblemSpecError)):
        what = str(e).splitlines()[0] if str(e) else type(e).__name__
        what = what.replace(f"cannot import problem {spec!r}: ", "")
        verb = "imported" if isinstance(e, (ImportError, ProblemSpecError)) else "built"
        return InputError(
            f"--problem {spec} cannot be {verb} on {worker_name()}: {what}"
            + (" (its module must be importable on every worker)" if verb == "imported" else "")
        )
    return None


def _file_ends(shard):
    """(file, its first qid, its last qid) of each file of the shard (qid None: none)."""
    if shard.qid is None or shard.n == 0:
        return ()
    part_of = shard.part_of if shard.part_of is not None else np.zeros(shard.n, np.int64)
    ends = []
    for k, source in enumerate(shard.sources):
        rows = np.flatnonzero(part_of == k)
        if len(rows):
            ends.append((source, int(shard.qid[rows[0]]), int(shard.qid[rows[-1]])))
    return tuple(ends)


@worker_task
def build_units(shard, spec, loss_id, options, d, fix):
    """The shard's units as the problem ``spec`` (a name or module:Class) on the run's
    width ``d``; ``fix``: what the run sets for every shard (hmm's number of tags, a
    user's model options) so that Ψ is the same everywhere."""
    data = _shard_dataset(shard, d)
    if shard.n == 0:
        units = UnitShard(None, None, shard.index, shard.source)
        units.ends = _file_ends(shard)
        return units
    try:
        entry = entry_of(spec)
        entry.reading.check_labels(data)
        if ":" in spec:
            problem = load_user_problem(spec, data, fix)
        else:
            problem = entry.training.build(data, loss_id, dict(options, **(fix or {})))
    except Exception as e:
        error = _problem_error(spec, e)
        if error is None:
            raise
        raise error from None
    factors = data.cost if problem.n_examples == data.n_examples else None
    units = UnitShard(problem, factors, shard.index, shard.source)
    units.ends = _file_ends(shard)
    return units


def describe_units(units):
    """What the client needs of a shard's problem: its units, Ψ's size, its options (a
    user's), the factor of -e times its units, its model's n_train, bounds of the loss."""
    problem = units.problem
    if problem is None:
        return dict(n=0, size_psi=None, options=None, eps_units=0.0, n_train=0, max_len=0,
                    n_terms=0, hmm=False, ends=units.ends)  # fmt: skip
    options = problem.model_options() if hasattr(problem, "model_options") else None
    n = _count(units)
    if units.rows is None:
        model = problem.to_model(np.zeros(problem.size_psi), n_train=n)
        n_train = int(getattr(model, "n_train", 0) or 0)
    else:
        n_train = n
    eps = float(problem.epsilon_scale) * n
    nearest = round(eps)
    if abs(eps - nearest) <= 1e-9 * max(1.0, abs(eps)):
        eps = float(nearest)  # a count (rank's pairs): the same in every sharding
    max_len = 0
    if isinstance(problem, HmmProblem):
        max_len = int(np.max(np.diff(problem.starts), initial=0))
    return dict(
        n=n,
        size_psi=problem.size_psi,
        options=options,
        eps_units=eps,
        n_train=n_train,
        max_len=max_len,
        n_terms=_term_count(problem),
        hmm=isinstance(problem, HmmProblem),
        ends=units.ends,
    )


def _count(units):
    return units.problem.n_examples if units.rows is None else len(units.rows)


def _term_count(problem):
    if isinstance(problem, HmmProblem):
        layout = problem.layout
        return 2 * (problem.X.nnz * (1 + layout.emit_order) + problem.n_tokens * layout.trans_order)
    return 0


def model_template(units, n_train, loss_id):
    """The shard's model at w = 0 with the run's ``n_train``: the client makes the run's
    model from it (:func:`dataclasses.replace` of w), with or without the cluster."""
    model = units.problem.to_model(
        np.zeros(units.problem.size_psi), n_train=n_train, loss_id=loss_id
    )
    if hasattr(model, "n_train"):
        model = dataclasses.replace(model, n_train=n_train)
    return model


def set_total(units, n, grid):
    """The run's number of units (the weights a_i = cost_i/n) and the hmm's fold grid."""
    if units.problem is not None:
        m = _count(units)
        units.weights = (np.ones(m) if units.factors is None else np.asarray(units.factors)) / n
    units.grid = grid
    return units


# -- the cut ---------------------------------------------------------------------------------


def _hmm_cut(units, weights, labels):
    """The folds of Σ_i weights_i·δΨ_i(labels) (SVMhmm's Ψ) on the grid ``units.grid``:
    each term (emission entries ±a_i·x_tj in the rows of the true and the found state,
    transitions ±a_i) deposited by a compiled kernel into the shard's accumulator, kept
    between rounds (zeroed on the rows a round touched); the tokens whose state is the
    same in both labellings left out (their terms cancel exactly). Sparse on the rows
    touched while they are few (:mod:`.partials`), else dense."""
    problem, sig = units.problem, units.grid
    layout = problem.layout
    k, f = layout.n_tags, layout.n_features
    X, y, starts = problem.X, problem.tags, problem.starts
    # One round at a time uses the accumulator; a concurrent one makes its own.
    acc, seen = units.__dict__.pop("_scratch", None) or (
        np.zeros(sig.shape),
        np.zeros(len(sig), dtype=np.uint8),
    )
    indptr = np.asarray(X.indptr, dtype=np.int64)
    cols = np.asarray(X.indices, dtype=np.int32)
    data = np.asarray(X.data, dtype=np.float64)
    yhat = np.asarray(labels, dtype=np.int64)
    lengths = np.diff(starts)
    weight = np.repeat(np.asarray(weights, dtype=np.float64), lengths)
    position = np.arange(len(y)) - np.repeat(starts[:-1], lengths)
    a, b = y - 1, yhat - 1

    def emit(state_a, state_b, tokens):
        differ = state_a != state_b
        tokens, start = tokens[differ], layout.emission_start
        row_a, row_b = start + state_a[differ] * f, start + state_b[differ] * f
        deposit_emissions(
            indptr, cols, data, tokens, row_a, row_b, weight[tokens], f, acc, sig, seen
        )

    emit(a, b, np.arange(len(y)))
    if layout.emit_order == 1:
        later = np.flatnonzero(position >= 1)
        emit(k + a[later] + k * a[later - 1], k + b[later] + k * b[later - 1], later)
    for m in range(1, layout.trans_order + 1):
        at = np.flatnonzero(position >= m)
        ia = np.full(len(at), layout.trans_start(m), dtype=np.int64)
        ib = ia.copy()
        for back in range(m + 1):
            ia += a[at - back] * k**back
            ib += b[at - back] * k**back
        differ = ia != ib
        deposit_pairs(ia[differ], ib[differ], weight[at[differ]], acc, sig, seen)
    rows = np.flatnonzero(seen)
    if len(rows) <= SPARSE_SHARE * len(sig):
        out = SparseFolds(rows, acc[rows], len(sig))
    else:
        out = acc.copy()
    acc[rows] = 0.0
    seen[rows] = 0
    units._scratch = (acc, seen)
    return out


def units_cut(units, w, rescaling, margin_rescaling):
    """The shard's partial cut at w: (Σ a_i·Δ_i as an exact integer, the δΨ sum — fold
    columns on the hmm's grid, else {index: exact integer}), and its seconds."""
    t0 = time.perf_counter()
    problem = units.problem
    if problem is None:
        return (0, {}), time.perf_counter() - t0
    rows = units.rows
    labels = problem.separate(w, rescaling, rows)
    losses = np.asarray(problem.losses(labels, rows), dtype=np.float64)
    a = units.weights
    c = sum(exact_ints(a * losses))
    weights = a if margin_rescaling else a * losses
    if units.grid is not None:
        return (c, _hmm_cut(units, weights, labels)), time.perf_counter() - t0
    g = {}
    rows = np.arange(problem.n_examples) if rows is None else rows
    own = problem.split_labels(labels, rows)
    for i in np.flatnonzero(weights != 0).tolist():
        v = problem.delta_psi_sum([weights[i]], own[i], [int(rows[i])])
        v = np.asarray(v, dtype=np.float64)
        nz = np.flatnonzero(v)
        for j, x in zip(nz.tolist(), exact_ints(v[nz])):
            g[j] = g.get(j, 0) + x
    return (c, g), time.perf_counter() - t0


def cut_values(pair):
    """The root's (cut, seconds) as the client uses it: the δΨ folds on the hmm's grid
    rounded to doubles here, on a worker (each row's folds added in one order: the same
    bits as on the client), sent as (rows, values) of the non-zero rows while that is
    smaller than the dense vector."""
    (c, g), seconds = pair
    if isinstance(g, dict):
        return (c, g), seconds
    if isinstance(g, SparseFolds):
        rows, values = g.rows, fold_value(g.values)
    else:
        values = fold_value(g)
        rows = np.arange(len(values))
    keep = values != 0.0
    size = g.size if isinstance(g, SparseFolds) else len(g)
    if 3 * np.count_nonzero(keep) > 2 * size:  # 12 bytes a sparse entry, 8 a dense one
        out = np.zeros(size)
        out[rows] = values
        return (c, out), seconds
    index = np.int32 if size < 2**31 else np.int64
    return (c, CutValues(rows[keep].astype(index), values[keep], size)), seconds


@dataclasses.dataclass(frozen=True)
class CutValues:
    """The rows of a cut vector of ``size`` that are not zero, and their values."""

    rows: np.ndarray
    values: np.ndarray
    size: int


def add_cuts(a, b):
    """Two partial cuts added (exact: integers, or folds on one grid)."""
    c = a[0] + b[0]
    ga, gb = a[1], b[1]
    if isinstance(ga, dict) and isinstance(gb, dict):
        if len(ga) < len(gb):
            ga, gb = gb, ga
        out = dict(ga)
        for j, x in gb.items():
            out[j] = out.get(j, 0) + x
        return c, out
    if isinstance(ga, dict):  # an empty shard's
        return c, gb
    if isinstance(gb, dict):
        return c, ga
    if isinstance(ga, SparseFolds) and isinstance(gb, SparseFolds):
        return c, _add_sparse_folds(ga, gb)
    return c, add_folds(ga, gb)


def _add_sparse_folds(a, b):
    """:func:`.partials.add_folds` of two SparseFolds (the same result), their union of
    rows marked in a flag per row rather than sorted (np.union1d: seconds for a million
    rows)."""
    mark = np.zeros(a.size, dtype=bool)
    mark[a.rows] = True
    mark[b.rows] = True
    rows = np.flatnonzero(mark)
    if len(rows) > SPARSE_SHARE * a.size:
        out = np.zeros((a.size, a.values.shape[1]))
        out[a.rows] = a.values
        out[b.rows] += b.values
        return out
    values = np.zeros((len(rows), a.values.shape[1]))
    values[np.searchsorted(rows, a.rows)] += a.values
    values[np.searchsorted(rows, b.rows)] += b.values
    return SparseFolds(rows, values, a.size)
