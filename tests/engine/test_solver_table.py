"""The one solver table (cpsvm.engine.solver_table): cp_learn's -w, ocas_learn's -m,
sampled_learn's --algorithm and asset_learn's --method are read from it by the
parameters, the cluster's refusals, the solver's choice and the statistics."""

from __future__ import annotations

import io
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from cpsvm.data import Dataset
from cpsvm.engine.solver_table import (
    ASSET_LEARN,
    CP_LEARN,
    OCAS_LEARN,
    SAMPLED_LEARN,
    choices_text,
    cluster_ids,
)
from cpsvm.errors import OptionError
from cpsvm.params import asset, ocas, one_slack, sampled
from cpsvm.reporting.statistics import ocas_statistics, struct_statistics
from cpsvm.solvers.one_slack import StructParams, train


def test_the_table_imports_nothing_heavy():
    """-h reads it: importing it loads neither numpy nor click."""
    code = (
        "import sys, cpsvm.engine.solver_table; "
        "print(sorted(m for m in ('numpy', 'scipy', 'click') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_parameters_read_the_sets_from_the_table():
    assert one_slack.ALGORITHMS == tuple(i for i, m in CP_LEARN.items() if m.same_as is None)
    for algorithm in CP_LEARN:
        StructParams(C=1.0, algorithm=algorithm).validate()
    for method in OCAS_LEARN:
        ocas.OcasParams(method=method).validate()
    with pytest.raises(Exception, match="-m 0"):
        ocas.OcasParams(method=max(OCAS_LEARN) + 1).validate()
    assert ocas.METHODS == {i: m.name for i, m in OCAS_LEARN.items()}
    assert asset.METHODS == tuple(ASSET_LEARN)
    assert sampled.ALGORITHMS == tuple(SAMPLED_LEARN)
    assert choices_text("-w", CP_LEARN) == "-w 0, 1, 2, 3, 4, 5 or 9"
    with pytest.raises(Exception, match=r"expected -w 0, 1, 2, 3, 4, 5 or 9, got 7"):
        StructParams(C=1.0, algorithm=7).validate()


@pytest.mark.parametrize("algorithm", list(CP_LEARN))
def test_the_cluster_takes_the_methods_the_table_says(algorithm):
    pytest.importorskip("dask")
    from cpsvm.cluster.solver import refuse_struct_options

    params = StructParams(C=1.0, algorithm=algorithm, problem="binary")
    if CP_LEARN[algorithm].cluster:
        assert refuse_struct_options(params, 0) == algorithm
    else:
        runs = " or ".join(f"-w {i}" for i in cluster_ids(CP_LEARN))
        with pytest.raises(OptionError, match=f"--scheduler takes {runs}$"):
            refuse_struct_options(params, 0)


@pytest.mark.parametrize("method", list(OCAS_LEARN))
def test_the_cluster_takes_the_ocas_methods_the_table_says(method):
    pytest.importorskip("dask")
    from cpsvm.cluster.solver import refuse_method

    if OCAS_LEARN[method].cluster:
        refuse_method(method)
    else:
        with pytest.raises(OptionError, match=f"-m {method} .*cannot run on a cluster: -m 0 or 1"):
            refuse_method(method)


def _binary(n=60, d=5, seed=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    import scipy.sparse as sp

    return Dataset(sp.csr_matrix(X), y)


@pytest.mark.parametrize("algorithm", list(CP_LEARN))
def test_cp_learn_runs_and_reports_each_method_by_its_row(algorithm):
    """The run's -w is the row's (an alias's own), its statistics lines and stop wording
    are the row's."""
    method = CP_LEARN[algorithm]
    params = StructParams(C=1.0, algorithm=algorithm, problem="binary", epsilon=0.01)
    _, info = train(_binary(), params)
    ran = algorithm if method.same_as is None else method.same_as
    assert info.algorithm == ran
    out = io.StringIO()
    struct_statistics(info, params, 0.0, out)
    text = out.getvalue()
    assert ("Number of passes over the examples" in text) == (CP_LEARN[ran].statistics == "passes")
    assert ("the duality gap is at most C*epsilon" in text) == CP_LEARN[ran].stops_on_gap


def test_a_method_the_problem_cannot_take_is_refused_by_its_row():
    params = StructParams(C=1.0, algorithm=5, problem="binary", loss_id=10)
    with pytest.raises(OptionError, match="^" + CP_LEARN[5].refused.replace("(", r"\(")[:30]):
        train(_binary(), params)


@pytest.mark.parametrize("method", list(OCAS_LEARN))
def test_ocas_statistics_by_the_row(method):
    result = SimpleNamespace(
        status="max_iterations", iterations=3, working_set=2, cuts_added=3, primal=2.0,
        dual=1.0, gap=1.0, updates=10, active=4,
    )  # fmt: skip
    seconds = dict(output=0.0, line_search=0.0, cut=0.0, qp=0.0, passes=0.0, gap=0.0, total=0.0)
    info = SimpleNamespace(problem="binary", result=result, seconds=seconds, training_error=0.0)
    info.method = method
    out = io.StringIO()
    ocas_statistics(info, ocas.OcasParams(), "model", out)
    passes = OCAS_LEARN[method].statistics == "passes"
    assert ("Number of passes" in out.getvalue()) == passes
    assert ("Number of cutting planes" in out.getvalue()) == (not passes)
