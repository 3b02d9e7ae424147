"""ocas_learn --loss squared-hinge (LIBLINEAR's -s 1 problem): every method (-m 0, 1, 2)
reaches the same optimum, the one an independent solver finds (scipy's L-BFGS on the
primal); per-example C_i (cost: tokens, -C, -j) honoured; the C path and --cv; what is
refused; the statistics; the hinge's runs unchanged."""

import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp

from cpsvm.data import Dataset
from cpsvm.errors import InputError, OptionError
from cpsvm.io.svmlight import read_svmlight
from cpsvm.solvers.ocas import OcasParams, OcasPath, train

SQUARED = "squared-hinge"


def l2_objective(w, X, y, costs):
    slack = np.maximum(0.0, 1.0 - y * (X @ w))
    return 0.5 * w @ w + costs @ (slack * slack)


def l2_optimum(X, y, costs):
    def gradient(w):
        slack = np.maximum(0.0, 1.0 - y * (X @ w))
        return w - X.T @ (2.0 * costs * slack * y)

    return so.minimize(
        lambda w: l2_objective(w, X, y, costs),
        np.zeros(X.shape[1]),
        jac=gradient,
        method="L-BFGS-B",
        options=dict(gtol=1e-11, ftol=1e-15, maxiter=100000),
    ).fun


@pytest.fixture(scope="module")
def a9a_part(samples_dir):
    data = read_svmlight(samples_dir / "a9a3k.train")
    return data.subset(slice(0, 600))


@pytest.fixture(scope="module")
def samples_dir():
    from conftest import SAMPLES

    return SAMPLES


@pytest.mark.parametrize("method", [0, 1, 2, None])
def test_every_method_reaches_the_reference(a9a_part, method):
    data = a9a_part
    C = 0.5
    reference = l2_optimum(data.X, data.y, np.full(data.n_examples, C))
    model, info = train(data, OcasParams(C=C, loss=SQUARED, method=method, tol_rel=1e-6))
    assert info.method == (2 if method is None else method)
    ours = l2_objective(model.w, data.X, data.y, np.full(data.n_examples, C))
    assert ours == pytest.approx(info.result.primal, rel=1e-9)
    assert reference <= ours <= reference * (1 + 2e-6)
    assert info.result.dual <= reference * (1 + 1e-9)


def test_bias_and_per_example_costs(a9a_part, tmp_path):
    """cost: tokens, -C and -j multiply C_i; the bias is a regularised constant feature."""
    data = a9a_part
    n = data.n_examples
    rng = np.random.default_rng(7)
    factors = rng.choice([0.5, 1.0, 3.0], n)
    weighted = Dataset(data.X, data.y, cost=factors)
    c_i = rng.uniform(0.2, 2.0, n)
    costs = c_i * factors * np.where(data.y > 0, 2.0, 1.0)
    X1 = sp.hstack([data.X, np.ones((n, 1))]).tocsr()
    reference = l2_optimum(X1, data.y, costs)
    for method in (0, 1, 2):
        params = OcasParams(
            example_costs=c_i, cost_factor=2.0, bias=1.0, loss=SQUARED, method=method,
            tol_rel=1e-7,
        )  # fmt: skip
        model, info = train(weighted, params)
        w = np.append(model.w[: data.X.shape[1]], -model.b)
        assert l2_objective(w, X1, data.y, costs) == pytest.approx(reference, rel=2e-6)


def test_the_hinge_is_the_default_and_unchanged(a9a_part):
    data = a9a_part
    plain, _ = train(data, OcasParams(C=1.0, method=2))
    hinge, _ = train(data, OcasParams(C=1.0, method=2, loss="hinge"))
    squared, _ = train(data, OcasParams(C=1.0, method=2, loss=SQUARED))
    assert OcasParams().loss == "hinge"
    assert np.array_equal(plain.w, hinge.w)
    assert not np.allclose(plain.w, squared.w)


def test_path_warm_equals_cold(a9a_part):
    data = a9a_part
    for method in (1, 2):
        params = OcasParams(loss=SQUARED, method=method, tol_rel=1e-6)
        path = OcasPath(data, params)
        for C in (0.1, 1.0, 4.0):
            model, info = path.fit(C)
            cold, cold_info = train(data, OcasParams(C=C, loss=SQUARED, method=2, tol_rel=1e-6))
            costs = np.full(data.n_examples, C)
            assert l2_objective(model.w, data.X, data.y, costs) == pytest.approx(
                l2_objective(cold.w, data.X, data.y, costs), rel=3e-6
            )


def test_multiclass_and_margin_bounds_refused(samples_dir):
    data = read_svmlight(samples_dir / "dna1k.train")
    with pytest.raises(InputError, match="binary problems only"):
        train(data, OcasParams(loss=SQUARED))
    with pytest.raises(OptionError, match="--loss hinge or squared-hinge"):
        OcasParams(loss="squared_hinge")
    with pytest.raises(InputError, match="--margin-bounds 1"):
        OcasParams(loss=SQUARED, margin_bounds=True, method=1).validate()


def test_cli_statistics_cv_and_refusals(cli, samples_dir, tmp_path):
    train_file = samples_dir / "a9a3k.train"
    run = cli("ocas", "--loss", SQUARED, "-c", "1", train_file, tmp_path / "m")
    assert run.returncode == 0, run.stderr
    assert "   Loss           : squared-hinge" in run.stdout
    line = next(s for s in run.stdout.splitlines() if s.startswith("Primal objective (squared"))
    q_p = float(next(s for s in run.stdout.splitlines() if s.startswith("Q_P:")).split()[1])
    assert float(line.rsplit("= ", 1)[1]) == pytest.approx(q_p, rel=1e-6)
    plain = cli("ocas", "-c", "1", train_file, tmp_path / "h")
    assert "Loss" not in plain.stdout and "squared" not in plain.stdout
    run = cli("ocas", "--loss", SQUARED, "--cv", "3", "--c-path", "0.1,1", train_file)
    assert run.returncode == 0, run.stderr
    assert "Best C: " in run.stdout
    for args, code, text in (
        (["--loss", "l1"], 2, "'hinge', 'squared-hinge'"),
        (["--loss", SQUARED, "--scheduler", "local:1"], 2, "--scheduler"),
    ):
        run = cli("ocas", *args, train_file, tmp_path / "x")
        assert run.returncode == code and text in run.stderr, run.stderr
        assert run.stderr.count("\n") == 1 and not (tmp_path / "x").exists()
    run = cli("ocas", "--loss", SQUARED, samples_dir / "dna1k.train", tmp_path / "x")
    assert run.returncode == 1 and "binary problems only" in run.stderr
    assert not (tmp_path / "x").exists()
