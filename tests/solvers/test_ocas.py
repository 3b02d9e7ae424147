"""OCAS: the exact line search, and the optimum against independent solvers."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import crammer_singer_objective, hinge_objective, interrupt_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar
from sklearn.svm import LinearSVC

from cpsvm.conventions import c_light_from_perf
from cpsvm.data import Dataset
from cpsvm.engine.ocas import binary_line_search, line_search
from cpsvm.errors import InputError
from cpsvm.io.model_file import read_model
from cpsvm.io.svmlight import read_svmlight
from cpsvm.solvers.ocas import OcasParams, train
from cpsvm.solvers.one_slack import StructParams
from cpsvm.solvers.one_slack import train as train_one_slack


def along_line(lam, A0, B0, intercepts, slopes, costs):
    """The objective along the line at λ = ``lam``, a number or an array of them."""
    lam = np.asarray(lam, dtype=float)
    t = lam.reshape(-1, 1)
    highest = intercepts[:, 0] + t * slopes[:, 0]
    for c in range(1, intercepts.shape[1]):  # the max of each example's lines
        np.maximum(highest, intercepts[:, c] + t * slopes[:, c], out=highest)
    return (0.5 * A0 * lam**2 + B0 * lam + (highest @ costs).reshape(lam.shape))[()]


def assert_minimises(line, lam):
    """The minimum of ``line`` = (A0, B0, intercepts, slopes, costs) over λ >= 0 is at
    ``lam``, as found independently: a dense grid, then golden-section refinement around
    its best point."""
    f = lambda t: float(along_line(t, *line))  # noqa: E731
    assert lam >= 0.0
    upper = max(4.0 * lam, 10.0)
    grid = np.linspace(0.0, upper, 4001)
    values = np.concatenate(
        [along_line(grid[i : i + 128], *line) for i in range(0, len(grid), 128)]
    )
    j = int(np.argmin(values))
    lo, hi = grid[max(j - 1, 0)], grid[min(j + 1, len(grid) - 1)]
    refined = (
        minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12}).fun
        if hi > lo
        else values[j]
    )
    best = min(values.min(), refined)
    assert f(lam) <= best + 1e-9 * max(1.0, abs(best))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 5), st.booleans())
def test_line_search_is_exact(seed, n, k, flat):
    rng = np.random.default_rng(seed)
    A0 = 0.0 if flat and rng.random() < 0.3 else rng.exponential() * 10 ** rng.uniform(-3, 3)
    B0 = rng.standard_normal() * 10
    intercepts = rng.standard_normal((n, k)).round(rng.integers(0, 3))
    slopes = rng.standard_normal((n, k)).round(rng.integers(0, 3))
    costs = rng.exponential(size=n)
    if A0 == 0.0:  # keep the function bounded below: non-decreasing pieces
        B0, slopes = abs(B0), np.abs(slopes)
    lam = line_search(A0, B0, intercepts, slopes, costs)
    assert_minimises((A0, B0, intercepts, slopes, costs), lam)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 7, 60, 3000]), st.booleans())
def test_binary_line_search_is_exact(seed, n, ties):
    """The hinge-loss search (from outputs, as OCAS calls it) on up to thousands of
    breakpoints, so that its selection partitions more than once."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    out_from, out_to = rng.standard_normal(n), rng.standard_normal(n)
    if ties:  # breakpoints and hinge corners that coincide
        out_from, out_to = out_from.round(1), out_to.round(1)
    costs = rng.exponential(size=n)
    A0 = rng.exponential() * 10 ** rng.uniform(-2, 3)
    B0 = -rng.exponential() * costs.sum()
    lam = binary_line_search(A0, B0, y, out_from, out_to, costs)
    # The same function as a maximum of two lines per example, for the reference.
    intercepts = np.column_stack([np.zeros(n), 1.0 - y * out_from])
    slopes = np.column_stack([np.zeros(n), -y * (out_to - out_from)])
    assert_minimises((A0, B0, intercepts, slopes, costs), lam)
    assert lam == pytest.approx(line_search(A0, B0, intercepts, slopes, costs), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_tiny_problems_every_method_reaches_the_one_slack_dual_qps_optimum(kind):
    """ocas_learn's -m 0, 1, 2 and cp_learn's -w 5 and 9 against an independent route:
    cp_learn's 1-slack dual QP (-w 3) at the converted C (SVMperf's and SVMmulticlass's
    documented conversions, written out)."""
    rng = np.random.default_rng(11)
    n, d = 30, 4
    X = sp.csr_matrix(rng.standard_normal((n, d)))
    if kind == "binary":
        y = np.where(X @ np.ones(d) + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
        C = 2.0
    else:
        y = rng.integers(1, 4, n).astype(float)
        C = 0.5

    def objective(model, scale=1.0):
        if kind == "binary":
            return hinge_objective(model.w, X, y, C)
        return crammer_singer_objective(model.W / scale, X, y, C)

    data = Dataset(X, y)
    objectives = {}
    for method in (1, 0, 2):
        # TolAbs well above the master QP's own tolerance (1e-10·max|h| ≈ 6e-9 here):
        # G has rank 4 with 30 cuts, and its α is only that exact.
        model, info = train(data, OcasParams(C=C, tol_rel=0.0, tol_abs=1e-7, method=method))
        assert info.result.status == "converged" and info.method == method
        assert objective(model) == pytest.approx(info.result.primal, rel=1e-12)
        objectives[f"-m {method}"] = objective(model)
    c_struct = C * n / 100 if kind == "binary" else 100 * n * C
    options = {"bias": 0.0} if kind == "binary" else {}
    scale = 1.0 if kind == "binary" else 100.0  # SVMmulticlass's w is 100x
    for algorithm in (5, 9):
        params = StructParams(C=c_struct, epsilon=1e-7, algorithm=algorithm, options=options)
        model, info = train_one_slack(data, params)
        assert info.algorithm == algorithm and info.result.status == "converged"
        objectives[f"-w {algorithm}"] = objective(model, scale)
    params = StructParams(C=c_struct, epsilon=1e-8, algorithm=3, options=options)
    reference = objective(train_one_slack(data, params)[0], scale)
    for name, value in objectives.items():
        assert value == pytest.approx(reference, rel=1e-7, abs=1e-7), name


def _int32(X):
    return sp.csr_matrix(
        (X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape
    )


def test_binary_within_tolerance_of_linearsvc(samples):
    data = read_svmlight(samples / "a9a3k.train")
    svc = LinearSVC(loss="hinge", fit_intercept=False, tol=1e-8, max_iter=10**6, C=1.0)
    optimum = hinge_objective(svc.fit(_int32(data.X), data.y).coef_.ravel(), data.X, data.y, 1.0)
    model, info = train(data, OcasParams(C=1.0, tol_rel=0.001))
    ours = hinge_objective(model.w, data.X, data.y, 1.0)
    assert optimum * (1 - 1e-6) <= ours <= optimum * 1.001
    # Plain cutting plane reaches the same tolerance in more iterations.
    model0, info0 = train(data, OcasParams(C=1.0, tol_rel=0.001, method=0))
    assert hinge_objective(model0.w, data.X, data.y, 1.0) <= optimum * 1.001
    assert info0.result.iterations > info.result.iterations


def test_multiclass_within_tolerance_of_crammer_singer(samples):
    data = read_svmlight(samples / "dna1k.train")
    svc = LinearSVC(
        multi_class="crammer_singer", fit_intercept=False, tol=1e-8, max_iter=10**6, C=0.01
    ).fit(_int32(data.X), data.y)
    optimum = crammer_singer_objective(svc.coef_, data.X, data.y, 0.01)
    model, info = train(data, OcasParams(C=0.01, tol_rel=0.001))
    assert info.problem == "multiclass"
    assert (
        optimum * (1 - 1e-6)
        <= crammer_singer_objective(model.W, data.X, data.y, 0.01)
        <= optimum * 1.001
    )


def test_bias_and_per_example_costs(tmp_path):
    rng = np.random.default_rng(3)
    X = sp.csr_matrix(rng.standard_normal((40, 3)) + 2.0)
    y = np.where(rng.random(40) < 0.5, 1.0, -1.0)
    costs = rng.uniform(0.5, 2.0, 40)
    model, info = train(
        Dataset(X, y), OcasParams(example_costs=costs, bias=1.0, tol_rel=0.0, tol_abs=1e-9)
    )
    # With bias feature 1 the threshold is -w_bias: the objective regularises it too.
    w_full = np.append(model.w, -model.b)
    X1 = sp.hstack([X, np.ones((40, 1))]).tocsr()
    value = 0.5 * w_full @ w_full + costs @ np.maximum(0, 1 - y * (X1 @ w_full))
    assert value == pytest.approx(info.result.primal, rel=1e-12)
    assert model.b != 0.0


@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_repeated_examples_are_one_with_their_costs_added(kind):
    """Every example three times over at C is the data once at 3C (the objective is the
    same function), and the merged training sees each example once."""
    from cpsvm.engine.ocas import merged_examples

    rng = np.random.default_rng(8)
    X = sp.csr_matrix(np.round(rng.standard_normal((60, 4)), 1))
    y = (
        np.where(rng.random(60) < 0.5, 1.0, -1.0)
        if kind == "binary"
        else rng.integers(1, 4, 60).astype(float)
    )
    tripled = Dataset(sp.vstack([X, X, X], format="csr"), np.tile(y, 3))
    X_kept, y_kept, costs, position = merged_examples(tripled.X, tripled.y, np.full(180, 0.5))
    assert (X_kept != X).nnz == 0 and np.array_equal(y_kept, y) and np.all(costs == 1.5)
    assert np.array_equal(position, np.tile(np.arange(60), 3))
    params = dict(tol_rel=0.0, tol_abs=1e-7, method=1)
    once, _ = train(Dataset(X, y), OcasParams(C=1.5, **params))
    thrice, info = train(tripled, OcasParams(C=0.5, **params))
    objective = hinge_objective if kind == "binary" else crammer_singer_objective
    w_once, w_thrice = (once.w, thrice.w) if kind == "binary" else (once.W, thrice.W)
    assert objective(w_thrice, X, y, 1.5) == pytest.approx(objective(w_once, X, y, 1.5), rel=1e-6)
    assert info.result.oracle_calls == 60 * info.result.iterations


def test_cli_model_classifies_and_is_thread_independent(cli, samples, tmp_path):
    outputs = []
    for threads in (1, 2):
        model = tmp_path / f"m{threads}"
        run = cli("ocas", "-p", threads, "-c", "1", "-r", "0.001", samples / "a9a3k.train", model)
        assert run.returncode == 0, run.stderr
        assert "Stopping condition: 1-Q_D/Q_P <= TolRel" in run.stdout
        outputs.append(model.read_bytes())
    assert outputs[0] == outputs[1]
    assert read_model(tmp_path / "m1").w.shape[0] >= 122
    run = cli("classify", "-v", "1", samples / "a9a2k.test", tmp_path / "m1", tmp_path / "p")
    assert float(run.stdout.split(": ")[1].split("%")[0]) > 80


def test_cli_cost_file_and_first_n(cli, samples, tmp_path):
    costs = tmp_path / "costs"
    costs.write_text("\n".join(["1"] * 100) + "\n")
    run = cli("ocas", "-n", "100", "-C", costs, samples / "a9a3k.train", tmp_path / "m")
    assert run.returncode == 0, run.stderr
    assert "# of examples  : 100" in run.stdout
    costs.write_text("1\n-2\n")
    run = cli("ocas", "-n", "2", "-C", costs, samples / "a9a3k.train", tmp_path / "m2")
    assert run.returncode == 1 and f"{costs}:2: expected a finite C_i > 0" in run.stderr
    assert not (tmp_path / "m2").exists()


@pytest.mark.parametrize(
    "args, expected",
    [
        (["-c", "0"], "C > 0"),
        (["-m", "3"], "-m 0"),
        (["-r", "-1"], ">= 0"),
        (["--lambda", "0"], "lambda"),
        (["-s", "1"], "-s >= 2"),
        (["-a", "0", "-r", "0"], "no stopping condition"),
        (["-x", "1"], "No such option"),
        (["--margin-bounds", "2"], "--margin-bounds 0 or 1"),
    ],
)
def test_bad_options(cli, samples, tmp_path, args, expected):
    """Usage errors: exit 2, one line, no model."""
    run = cli("ocas", *args, samples / "a9a3k.train", tmp_path / "m")
    assert run.returncode == 2 and expected in run.stderr
    assert run.stderr.count("\n") == 1 and not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    "stops, ok",
    [
        (dict(tol_abs=0.0, tol_rel=0.0), False),
        (dict(tol_abs=0.0, tol_rel=0.0, qp_bound=0.0), False),
        (dict(tol_abs=0.0, tol_rel=0.0, qp_bound=-5.0), False),
        (dict(tol_abs=0.0, tol_rel=0.0, qp_bound=1.0), True),
        (dict(tol_abs=0.0, tol_rel=0.0, time_limit=10.0), True),
        (dict(tol_abs=1e-3, tol_rel=0.0), True),
        (dict(tol_abs=0.0, tol_rel=1e-3), True),
    ],
)
def test_a_run_without_stopping_condition_is_refused(stops, ok):
    """-a 0 -r 0 without -t and with QPBound <= 0 (F(w) > 0 never reaches it) would run
    to the iteration limit: refused as libocas does, before any data is read."""
    params = OcasParams(**stops)
    if ok:
        params.validate()
    else:
        with pytest.raises(InputError, match="no stopping condition"):
            params.validate()


@pytest.mark.parametrize("share", [0.2, 0.9])
def test_cut_sum_from_the_nearest_known_sum(share):
    """The cut is a known sum (none, all examples', the previous cut's) plus the rows whose
    coefficients differ from it — still Xᵀcoef, iteration after iteration."""
    from cpsvm.engine.ocas import OcasOracle
    from cpsvm.problems.binary.problem import BinaryProblem

    rng = np.random.default_rng(5)
    X = sp.random(300, 20, density=0.3, format="csr", random_state=rng)
    y = np.where(rng.random(300) < 0.5, 1.0, -1.0)
    problem = BinaryProblem(X, y, loss_scale=1.0, psi_scale=0.5)
    oracle = OcasOracle(problem, rng.exponential(size=300))
    violated = rng.random(300) < share
    for _ in range(5):  # then a few rows change, as in late iterations
        coef = np.where(violated, oracle.costs * oracle.margin * y, 0.0)
        n_changed = int(np.count_nonzero(coef != oracle._cut_coef))
        got = oracle._violators_sum(coef, int(violated.sum()), n_changed)
        np.testing.assert_allclose(got, X.T @ coef, rtol=1e-12, atol=1e-12)
        flip = rng.choice(300, 4, replace=False)
        violated[flip] = ~violated[flip]
    assert (oracle._all_coef is not None) == (share > 0.5)


# -- cost: ----------------------------------------------------------------------------------


def _cost_files(samples, tmp_path, n=300, seed=2):
    """The first n examples of a9a3k with cost:k_i (k_i in 1..3) on each line, and the
    same examples repeated k_i times; returns both paths and k."""
    lines = (samples / "a9a3k.train").read_text().splitlines()[:n]
    k = np.random.default_rng(seed).integers(1, 4, n)
    weighted, repeated = tmp_path / "weighted", tmp_path / "repeated"
    with_cost = []
    for line, k_i in zip(lines, k):
        target, _, features = line.partition(" ")
        with_cost.append(f"{target} cost:{k_i} {features}")
    weighted.write_text("\n".join(with_cost) + "\n")
    repeated.write_text("".join((line + "\n") * int(k_i) for line, k_i in zip(lines, k)))
    return weighted, repeated, k.astype(float)


def _weighted_optimum(X, y, C_light, weights):
    """½|w|² + C_light·Σ weights_i·hinge_i at liblinear's solution (sample_weight)."""
    svc = LinearSVC(loss="hinge", fit_intercept=False, tol=1e-10, max_iter=10**7, C=C_light)
    w = svc.fit(_int32(X), y, sample_weight=weights).coef_.ravel()
    return weighted_hinge(w, X, y, C_light, weights)


def weighted_hinge(w, X, y, C_light, weights):
    return 0.5 * w @ w + C_light * weights @ np.maximum(0.0, 1.0 - y * (X @ w))


def test_ocas_honours_cost(samples, tmp_path):
    """cost:k trains as the example repeated k times, at liblinear's weighted optimum;
    with -C FILE the costs multiply."""
    weighted, repeated, k = _cost_files(samples, tmp_path)
    data = read_svmlight(weighted)
    assert np.array_equal(data.cost, k)
    params = dict(C=0.5, tol_rel=0.0, tol_abs=1e-9)
    model, info = train(data, OcasParams(**params))
    ours = weighted_hinge(model.w, data.X, data.y, 0.5, k)
    assert ours == pytest.approx(info.result.primal, rel=1e-12)
    assert ours == pytest.approx(_weighted_optimum(data.X, data.y, 0.5, k), rel=1e-6)
    model_r, _ = train(read_svmlight(repeated), OcasParams(**params))
    assert weighted_hinge(model_r.w, data.X, data.y, 0.5, k) == pytest.approx(ours, rel=1e-7)
    # -C FILE: C_i times cost_i.
    c_i = np.random.default_rng(3).uniform(0.2, 2.0, data.n_examples)
    model, info = train(data, OcasParams(example_costs=c_i, tol_rel=0.0, tol_abs=1e-9))
    assert weighted_hinge(model.w, data.X, data.y, 1.0, c_i * k) == pytest.approx(
        _weighted_optimum(data.X, data.y, 1.0, c_i * k), rel=1e-6
    )


def test_ocas_multiclass_honours_cost(samples, tmp_path):
    lines = (samples / "dna1k.train").read_text().splitlines()[:200]
    k = np.random.default_rng(4).integers(1, 4, 200)
    weighted, repeated = tmp_path / "w", tmp_path / "r"
    weighted.write_text(
        "".join(
            f"{t} cost:{k_i} {rest}\n"
            for (t, _, rest), k_i in zip((line.partition(" ") for line in lines), k)
        )
    )
    repeated.write_text("".join((line + "\n") * int(k_i) for line, k_i in zip(lines, k)))
    data = read_svmlight(weighted)
    params = dict(C=0.01, tol_rel=0.0, tol_abs=1e-5)
    model, info = train(data, OcasParams(**params))
    model_r, _ = train(read_svmlight(repeated), OcasParams(**params))
    reference = read_svmlight(repeated)
    # The weighted objective is the repeated file's Crammer-Singer objective.
    ours = crammer_singer_objective(model.W, reference.X, reference.y, 0.01)
    assert ours == pytest.approx(info.result.primal, rel=1e-9)
    assert ours == pytest.approx(
        crammer_singer_objective(model_r.W, reference.X, reference.y, 0.01), abs=2e-5
    )
    unweighted, _ = train(Dataset(data.X, data.y), OcasParams(**params))
    assert crammer_singer_objective(unweighted.W, reference.X, reference.y, 0.01) > ours * (
        1 + 1e-3
    )


@pytest.mark.parametrize("cost", ["-2", "0"])
def test_bad_cost_is_an_input_error(tmp_path, cost):
    path = tmp_path / "d"
    path.write_text(f"1 1:1\n-1 cost:{cost} 2:1\n")
    data = read_svmlight(path)
    with pytest.raises(InputError, match=r"d:2: expected cost: > 0"):
        train(data, OcasParams())
    with pytest.raises(InputError, match=r"d:2: expected cost: > 0"):
        train_one_slack(data, StructParams(C=1.0))


@pytest.mark.parametrize("algorithm", [0, 2, 3, 4, 9])
def test_cp_learn_linear_honours_cost(samples, tmp_path, algorithm):
    """cp_learn's linear paths: the objective ½|w|² + C_light·Σ cost_i·hinge_i, C_light =
    C·100/n, at liblinear's weighted optimum (within the 1-slack ε, C·ε absolute)."""
    weighted, repeated, k = _cost_files(samples, tmp_path, n=200)
    data = read_svmlight(weighted)
    C, eps = 2.0, 1e-4
    C_light = c_light_from_perf(C, data.n_examples)
    model, info = train_one_slack(
        data, StructParams(C=C, epsilon=eps, algorithm=algorithm, options={"bias": 0.0})
    )
    ours = weighted_hinge(model.w, data.X, data.y, C_light, k)
    optimum = _weighted_optimum(data.X, data.y, C_light, k)
    assert optimum - 1e-6 <= ours <= optimum + 2 * C * eps
    if algorithm == 3:
        # The repeated file (N lines) at C·N/n is the same objective.
        rep = read_svmlight(repeated)
        model_r, _ = train_one_slack(
            rep,
            StructParams(
                C=C * rep.n_examples / data.n_examples,
                epsilon=eps,
                algorithm=3,
                options={"bias": 0.0},
            ),
        )
        assert weighted_hinge(model_r.w, data.X, data.y, C_light, k) == pytest.approx(
            optimum, abs=2 * C * eps
        )


# -- threads and stop statuses --------------------------------------------------------------


def test_threads_are_a_parameter_and_restored(samples):
    from cpsvm.threads import get_num_threads, max_threads, thread_count

    if max_threads() < 2:
        pytest.skip("needs 2 threads")
    data = read_svmlight(samples / "a9a3k.train")
    with thread_count(2):
        seen = []
        model1, _ = train(
            data, OcasParams(n_threads=1), callback=lambda p: seen.append(get_num_threads())
        )
        assert set(seen) == {1} and get_num_threads() == 2
        seen.clear()
        train_one_slack(
            data,
            StructParams(C=1.0, n_threads=1, algorithm=3),
            callback=lambda p: seen.append(get_num_threads()),
        )
        assert set(seen) == {1} and get_num_threads() == 2

        def fail(progress):
            raise RuntimeError("stop")

        with pytest.raises(RuntimeError):
            train(data, OcasParams(n_threads=1), callback=fail)
        assert get_num_threads() == 2
        model2, _ = train(data, OcasParams(n_threads=2))
        assert np.array_equal(model1.w, model2.w)


def test_stop_statuses(samples, monkeypatch):
    """time_limit (also before the first iteration) and buffer_full: the model returned is
    the one whose objective is reported. The engine's clock is a fake one that each
    iteration moves by 0.04 s, so the limit falls at a known iteration."""
    import types

    from cpsvm.engine import cutting_plane

    data = read_svmlight(samples / "a9a3k.train")
    model, info = train(data, OcasParams(time_limit=1e-12))
    assert info.result.status == "time_limit" and info.result.iterations == 0
    assert np.all(model.w == 0) and info.result.primal == pytest.approx(data.n_examples)

    clock = types.SimpleNamespace(now=0.0)
    clock.perf_counter = lambda: clock.now
    monkeypatch.setattr(cutting_plane, "time", clock)

    def tick(progress):
        clock.now += 0.04

    model, info = train(data, OcasParams(time_limit=0.1, tol_rel=1e-9), callback=tick)
    assert info.result.status == "time_limit" and info.result.iterations == 3
    assert hinge_objective(model.w, data.X, data.y, 1.0) == pytest.approx(
        info.result.primal, rel=1e-12
    )
    model, info = train(data, OcasParams(buffer_size=2, tol_rel=1e-9))
    assert info.result.status == "buffer_full"
    assert hinge_objective(model.w, data.X, data.y, 1.0) == pytest.approx(
        info.result.primal, rel=1e-12
    )
    # The engine's time limit through cp_learn's 1-slack solver.
    clock.now = 0.0
    model, info = train_one_slack(
        data,
        StructParams(C=1.0, epsilon=1e-9, algorithm=3, time_limit=0.1, options={"bias": 0.0}),
        callback=tick,
    )
    assert info.result.status == "time_limit" and info.result.iterations == 3
    C_light = c_light_from_perf(1.0, data.n_examples)
    assert hinge_objective(model.w, data.X, data.y, C_light) == pytest.approx(
        info.result.primal, rel=1e-9
    )


def test_ctrl_c_writes_a_valid_model_and_exits_130(samples, tmp_path):
    """A run that cannot end soon (large C, no tolerance, long time limit) interrupted
    after its first iterations: the model so far is written, exit 130."""
    model, trace = tmp_path / "m", tmp_path / "t.tsv"
    code, out, err = interrupt_cli(
        "ocas",
        [
            "-c",
            "100000",
            "-a",
            "0",
            "-r",
            "0",
            "-t",
            "600",
            "--trace",
            trace,
            samples / "a9a3k.train",
            model,
        ],
        trace,
    )
    assert code == 130, err
    assert "interrupted at iteration" in err and "Traceback" not in err
    assert "Stopping condition: interrupted" in out
    restored = read_model(model)
    assert restored.w.shape[0] >= 122 and np.any(restored.w != 0)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_default_method_follows_the_problem(samples):
    """-m not given: DCD for multiclass, and for the hinge loss while the mean C_i·|x_i|²
    is at most DCD_CONDITION (a9a3k: |x_i|² = 14, so C = 0.2 is below, C = 1 above);
    OCAS when -q or the margin bounds ask for what only it does."""
    from cpsvm.solvers.ocas import DCD_CONDITION, settings

    binary = read_svmlight(samples / "a9a3k.train")
    mean_norm = float(binary.X.multiply(binary.X).sum(axis=1).mean())
    below, above = 0.9 * DCD_CONDITION / mean_norm, 1.1 * DCD_CONDITION / mean_norm
    assert settings(binary, OcasParams(C=below)).method == 2
    assert settings(binary, OcasParams(C=above)).method == 1
    assert settings(binary, OcasParams(C=below, qp_bound=1.0)).method == 1
    assert settings(binary, OcasParams(C=below, margin_bounds=True)).method == 1
    multiclass = read_svmlight(samples / "dna1k.train")
    assert settings(multiclass, OcasParams(C=100.0)).method == 2
    _, info = train(multiclass.subset(slice(0, 200)), OcasParams(C=1.0))
    assert info.method == 2


def test_dcd_refuses_what_only_ocas_does(cli, samples, tmp_path):
    for args, expected in (
        (["-m", "2", "-q", "1"], "-q (QPBound) stops OCAS only"),
        (["-m", "2", "--margin-bounds", "1"], "cannot be used with -m 2"),
    ):
        run = cli("ocas", *args, samples / "a9a3k.train", tmp_path / "m")
        assert run.returncode != 0 and expected in run.stderr, run.stderr
        assert len(run.stderr.strip().splitlines()) == 1 and not (tmp_path / "m").exists()
