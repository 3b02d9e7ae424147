"""The problem contract is written down: every hook the engine or a solver may call on a
problem (or an oracle) is declared, with its default, on cpsvm.problems.base's
StructuredProblem (cpsvm.engine.oracles' CutOracle), so that no caller probes for one."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import cpsvm
from cpsvm.conventions import MARGIN_RESCALING, SLACK_RESCALING
from cpsvm.engine.cutting_plane import CuttingPlaneParams, n_slack, one_slack
from cpsvm.engine.oracles import CutOracle, LinearCutOracle
from cpsvm.problems.base import StructuredProblem

PACKAGE = Path(cpsvm.__file__).parent
# Where a problem or an oracle is called: no probing here, and in the cluster's solver
# and oracles (the engine's loop over data on a cluster).
CHECKED = [
    *sorted((PACKAGE / "engine").glob("*.py")),
    *sorted((PACKAGE / "solvers").glob("*.py")),
    PACKAGE / "cluster" / "solver.py",
    PACKAGE / "cluster" / "oracles.py",
]


def probes(source: str) -> list:
    """The probes of an attribute in ``source``: every ``hasattr``, and every ``getattr``
    that names the attribute literally (it could be written ``obj.name``) or takes a
    default (it tolerates the attribute's absence). ``getattr(obj, f.name)`` over a
    dataclass's fields reads a declared field: not a probe."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        name = node.func.id
        literal = len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
        if name == "hasattr" or (name == "getattr" and (literal or len(node.args) >= 3)):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", CHECKED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_probe_of_a_problem_or_an_oracle(path):
    assert probes(path.read_text()) == []


def test_the_probe_finder_finds_probes():
    source = (
        "a = getattr(problem, 'cut', None)\n"
        "b = hasattr(problem, 'margin_bounds')\n"
        "c = getattr(oracle, 'primal')\n"
        "d = getattr(oracle, name, 0)\n"
        "e = {f.name: getattr(progress, f.name) for f in fields(Progress)}\n"
    )
    assert [p.split(":")[0] for p in probes(source)] == ["line 1", "line 2", "line 3", "line 4"]


# -- a problem with only the required methods trains: the hooks' defaults serve ---------------


class Threshold(StructuredProblem):
    """Binary labels ±1 of 1-D points, Ψ(x, y) = y·x/2 and a 0/1 loss, written with the
    required methods alone: every optional hook is StructuredProblem's default."""

    def __init__(self, x, y):
        self.x, self.y = np.asarray(x, float), np.asarray(y, float)
        self.n_examples, self.size_psi = len(self.y), 1

    def true_labels(self):
        return self.y

    def _rows(self, rows):
        return slice(None) if rows is None else np.asarray(rows)

    def separate(self, w, rescaling, rows=None):
        x, y = self.x[self._rows(rows)], self.y[self._rows(rows)]
        flipped = 1.0 - w[0] * y * x  # the loss 1 minus the margin of the flip
        return np.where(flipped > 0, -y, y)

    def losses(self, labels, rows=None):
        return (np.asarray(labels) != self.y[self._rows(rows)]).astype(float)

    def margins(self, w, labels, rows=None):
        r = self._rows(rows)
        return 0.5 * (self.y[r] - labels) * self.x[r] * w[0]

    def delta_psi_sum(self, weights, labels, rows=None):
        r = self._rows(rows)
        coef = np.asarray(weights) * 0.5 * (self.y[r] - labels)
        return np.array([float(coef @ self.x[r])])


def _threshold_problem():
    rng = np.random.default_rng(3)
    x = rng.normal(size=40)
    return Threshold(x, np.where(x + 0.3 * rng.normal(size=40) > 0, 1.0, -1.0))


def test_the_defaults_of_the_hooks():
    problem = _threshold_problem()
    assert problem.cut is None and problem.separate_at is None
    assert problem.cut_table(np.ones(3)) is None
    assert problem.flip_gain is None and problem.margin_bounds is None
    assert problem.epsilon_scale == 1.0 and problem.n_weights_at is None
    w, labels = np.array([0.7]), -problem.y
    np.testing.assert_array_equal(
        problem.margins_many(w, [labels, problem.y])[0], problem.margins(w, labels)
    )
    rows = np.arange(5, 9)
    assert [list(s) for s in problem.split_labels(labels[rows], rows)] == [
        [v] for v in labels[rows]
    ]
    oracle = CutOracle()
    assert (oracle.exact_excess, oracle.primal, oracle.rounding) == (None, None, -np.inf)
    assert oracle.separate_cached(np.zeros(0), 0.0) is None


@pytest.mark.parametrize("rescaling", [MARGIN_RESCALING, SLACK_RESCALING])
def test_a_problem_without_hooks_trains_by_each_loop(rescaling):
    """1-slack (the vector cuts of separate's labellings), with the cache (margins_many)
    and n-slack (split_labels): the three reach the same optimum."""
    params = CuttingPlaneParams(C=10.0, epsilon=1e-6)
    objectives = []
    for cache, loop in ((0, "one"), (3, "one"), (0, "n")):
        problem = _threshold_problem()
        oracle = LinearCutOracle(problem, rescaling, cache_size=cache)
        if loop == "n":
            result = n_slack(oracle, problem.n_examples, params, batch=7)
        else:
            params.use_cache = bool(cache)
            result = one_slack(oracle, params)
        assert result.status == "converged"
        objectives.append(result.primal)
    np.testing.assert_allclose(objectives, objectives[0], rtol=1e-3)
