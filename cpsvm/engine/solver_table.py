"""The one table of the learners' training methods: cp_learn's ``-w``, ocas_learn's ``-m``,
sampled_learn's ``--algorithm`` and asset_learn's ``--method``. Each row says what the
method is called, what it trains, whether a cluster (``--scheduler``) runs it and which
statistics lines report it; cp_learn's rows also say how the solver runs them
(cpsvm.solvers.one_slack picks a method by its row, not by its number). The parameters'
sets of values, the cluster's refusals and the statistics read it.

It imports nothing: ``-h`` reads it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Method:
    """One training method of a learner."""

    id: int | str  # the flag's value
    name: str  # what the statistics and the messages call it
    trains: str  # what it trains
    cluster: bool = False  # a cluster (--scheduler) runs it
    # Its statistics lines: "cuts" (iterations, cutting planes, oracle calls), "passes"
    # (dual coordinate descent: passes, coordinate updates, active examples), asset_learn's
    # "asset" or "gd".
    statistics: str = "cuts"
    # The run stops at a duality gap of C*epsilon (worded so), not when the most violated
    # constraint is violated by at most epsilon.
    stops_on_gap: bool = False
    same_as: int | str | None = None  # another id whose method this one runs
    # -- how cp_learn's solver runs it ---------------------------------------------------
    loop: str = "one_slack"  # the engine's loop: one_slack, n_slack, or dcd
    oracle: str = "linear"  # the 1-slack oracle: linear (LinearCutOracle) or ocas
    primal_qp: bool = False  # the master QP in the primal (PrimalCutWorkingSet)
    cache: bool = False  # the constraint cache (-f) tried before the oracle
    warm: bool = False  # a path over C goes on from the last run's cuts or dual point
    exact_kernels: bool = False  # trains exact kernel expansions (-t 1..3 without --t 1)
    # What the problem's entry must allow (cpsvm.problems.registry.ProblemEntry's flag of
    # that name, trained linearly with margin rescaling), and else: a refusal (its
    # message) or, None, the problem's default_algorithm.
    needs: str | None = None
    refused: str | None = None
    margin_bounds: bool = True  # --margin-bounds 1 can be given with it
    prunes: bool = False  # --margin-bounds 1 prunes its cuts (the binary problem's hinge)


def _table(*methods) -> dict:
    return {m.id: m for m in methods}


CP_LEARN = _table(
    Method(0, "n-slack", "every problem", loop="n_slack"),
    Method(1, "n-slack with shrinking", "every problem", same_as=0),
    Method(2, "1-slack with the primal QP", "every problem", primal_qp=True, prunes=True),
    Method(
        3,
        "1-slack dual",
        "every problem; exact kernel expansions",
        cluster=True,
        warm=True,
        exact_kernels=True,
        prunes=True,
    ),
    Method(
        4,
        "1-slack dual with constraint cache",
        "every problem",
        cache=True,
        warm=True,
    ),
    Method(
        5,
        "dual coordinate descent with shrinking",
        "binary (error rate, -l 2) and multiclass problems, linear, margin rescaling",
        statistics="passes",
        stops_on_gap=True,
        loop="dcd",
        warm=True,
        needs="coordinate_descent",
        refused="-w 5 (dual coordinate descent) trains binary (error rate, -l 2) and "
        "multiclass problems, linear (-t 0 or --t 1), with margin rescaling (-o 2)",
        margin_bounds=False,
    ),
    Method(
        9,
        "1-slack dual with OCAS's line search",
        "the problems with the line search, linear, margin rescaling (else -w 3 or 4)",
        cluster=True,
        stops_on_gap=True,
        oracle="ocas",
        warm=True,
        needs="line_search",
        prunes=True,
    ),
)

OCAS_LEARN = _table(
    Method(0, "standard cutting plane", "binary and multiclass, linear", cluster=True),
    Method(1, "OCAS", "binary and multiclass, linear", cluster=True),
    Method(
        2,
        "dual coordinate descent",
        "binary and multiclass, linear",
        statistics="passes",
        loop="dcd",
    ),
)

SAMPLED_LEARN = _table(
    Method("const", "constant-time (Algorithm 2)", "binary, kernels"),
    Method("linear", "linear-time (Algorithm 3)", "binary, kernels"),
)

ASSET_LEARN = _table(
    Method("sgd", "ASSET's stochastic subgradient", "binary and regression", statistics="asset"),
    Method("gd", "gradient descent, Huber loss", "binary, linear", statistics="gd"),
)


def choices_text(flag: str, table: dict) -> str:
    """The values of ``flag`` as a message names them: '-w 0, 1, 2, 3, 4, 5 or 9'."""
    ids = [str(i) for i in table]
    return f"{flag} {', '.join(ids[:-1])} or {ids[-1]}" if len(ids) > 1 else f"{flag} {ids[0]}"


def cluster_ids(table: dict) -> list:
    """The ids of the methods a cluster runs."""
    return [i for i, m in table.items() if m.cluster]
