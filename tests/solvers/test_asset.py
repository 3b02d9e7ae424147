"""asset_learn: ASSET/ASSET* against independent references (a Pegasos written here,
libsvm's optimum of the exact problem), the model files against numpy's reading of
them, determinism, bad input and Ctrl-C."""

import os
import re

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import ROOT, SAMPLES, interrupt_cli
from conftest import run_cli as run

from cpsvm.data import Dataset
from cpsvm.errors import InputError
from cpsvm.io.model_file import format_model, read_model, write_model
from cpsvm.io.svmlight import read_svmlight, write_svmlight
from cpsvm.kernels import Kernel
from cpsvm.solvers.asset import AssetParams, train

TRAIN, TEST = SAMPLES / "a9a3k.train", SAMPLES / "a9a2k.test"


def rbf(A, B, g):
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return np.exp(-g * d2)


def two_moons(m, seed):
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, np.pi, m)
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    A = np.c_[np.cos(t) + (y < 0), np.sin(t) * y] + rng.normal(scale=0.25, size=(m, 2))
    return A, y


# --- ASSET* is Pegasos; ASSET reaches the optimum ---------------------------------------


def pegasos(X, y, lam, k, epochs, seed):
    """Shalev-Shwartz et al.'s Pegasos with projection; each epoch's mini-batches are
    consecutive slices of one permutation drawn from the seeded generator."""
    rng = np.random.default_rng(seed)
    m = X.shape[0]
    w = np.zeros(X.shape[1])
    t = 0
    for _ in range(epochs):
        perm = rng.permutation(m)
        for lo in range(0, m, k):
            batch = perm[lo : lo + k]
            t += 1
            eta = 1.0 / (lam * t)
            active = batch[y[batch] * (X[batch] @ w) < 1]
            w = (1 - eta * lam) * w + eta / len(batch) * (X[active].T @ y[active])
            norm = np.linalg.norm(w)
            if norm > 1 / np.sqrt(lam):
                w *= 1 / np.sqrt(lam) / norm
    return w


@pytest.mark.parametrize("lam, k", [(1e-2, 1), (1e-4, 1), (1e-3, 7)])
def test_asset_star_without_approximation_is_pegasos(lam, k):
    data = read_svmlight(TRAIN).subset(slice(0, 700))
    model, info = train(
        data,
        AssetParams(lam=lam, approx="none", star=True, batch=k, epochs=3, tolerance=0, seed=11),
    )
    reference = pegasos(data.X.toarray(), data.y, lam, k, 3, 11)
    assert model.b == 0.0
    np.testing.assert_allclose(model.w, reference, rtol=1e-9, atol=1e-12)
    X = data.X.toarray()
    objective = lam / 2 * reference @ reference + np.mean(
        np.maximum(0, 1 - data.y * (X @ reference))
    )
    assert info.objective == pytest.approx(objective, rel=1e-9)


def svc_objective(K, y, C, lam):
    """λ/2|w|² + mean hinge at libsvm's optimum of ½|w|² + C Σ hinge (C = 1/(λm))."""
    from sklearn.svm import SVC

    svc = SVC(C=C, kernel="precomputed", tol=1e-10).fit(K, y)
    beta = np.zeros(len(y))
    beta[svc.support_] = svc.dual_coef_[0]
    f = K @ beta + svc.intercept_[0]
    return lam / 2 * beta @ K @ beta + np.mean(np.maximum(0, 1 - y * f))


@pytest.mark.parametrize("average_last, tolerance", [(0, 0.08), (100, 0.03), ("half", 0.03)])
def test_asset_gets_close_to_the_exact_optimum(average_last, tolerance):
    """60 examples, 1000 epochs: the gap of the average of all iterates falls as 1/sqrt(N),
    those of the last 100 and of the last half faster."""
    A, y = two_moons(60, 1)
    g, C = 1.0, 1.0
    m = len(y)
    lam = 1 / (C * m)
    optimum = svc_objective(rbf(A, A, g), y, C, lam)
    data = Dataset(sp.csr_matrix(A), y)
    # s = m: V·Vᵀ is the exact kernel, so (PL) is the SVM with intercept.
    model, info = train(
        data,
        AssetParams(
            C=C,
            kernel=Kernel(2, gamma=g),
            basis_size=m,
            eig_threshold=1e-10,
            epochs=1000,
            tolerance=0,
            average_last=average_last,
            seed=2,
        ),
    )
    assert info.objective >= optimum * (1 - 1e-6)
    assert info.objective <= optimum * (1 + tolerance), (info.objective, optimum)
    # The model file's kernel expansion gives the objective the solver printed.
    f = rbf(A, model.support_vectors.toarray(), g) @ model.coef - model.b
    K_SS = rbf(model.support_vectors.toarray(), model.support_vectors.toarray(), g)
    recomputed = lam / 2 * model.coef @ K_SS @ model.coef + np.mean(np.maximum(0, 1 - y * f))
    assert recomputed == pytest.approx(info.objective, rel=1e-6)


def linear_svr_optimum(A, y, C, eps):
    """(λ, the optimum of λ/2|w|² + mean ε-insensitive loss) by libsvm's SVR."""
    from sklearn.svm import SVR

    lam = 1 / (C * len(y))
    svr = SVR(kernel="linear", C=C, epsilon=eps, tol=1e-10).fit(A, y)
    w = svr.coef_.ravel()
    losses = np.maximum(0, np.abs(A @ w + svr.intercept_[0] - y) - eps)
    return lam, lam / 2 * w @ w + np.mean(losses)


def test_regression_gets_close_to_the_svr_optimum():
    rng = np.random.default_rng(4)
    A = rng.normal(size=(80, 3))
    y = A @ np.array([1.0, -2.0, 0.5]) + 0.3 + rng.normal(scale=0.3, size=80)
    C, eps = 1.0, 0.1
    lam, optimum = linear_svr_optimum(A, y, C, eps)
    model, info = train(
        Dataset(sp.csr_matrix(A), y),
        AssetParams(
            C=C,
            approx="none",
            task="regression",
            tube=eps,
            epochs=1000,
            tolerance=0,
            average_last=0,
            seed=0,
        ),
    )
    # The average of all iterates: a gap falling as 1/sqrt(N).
    assert optimum * (1 - 1e-6) <= info.objective <= optimum * 1.08, (info.objective, optimum)
    f = A @ model.w - model.b
    assert np.mean(
        np.maximum(0, np.abs(f - y) - eps)
    ) + lam / 2 * model.w @ model.w == pytest.approx(info.objective, rel=1e-9)


def test_regression_with_targets_far_from_zero_trains_as_well_as_centred_ones():
    """The default window (the last half of the iterations) and the targets centred into
    b get near the SVR optimum however far the targets sit from 0."""
    rng = np.random.default_rng(5)
    A = rng.normal(size=(200, 3))
    y = A @ np.array([1.0, -2.0, 0.5]) + 500.0 + rng.normal(scale=0.3, size=200)
    C, eps = 1.0, 0.1
    lam, optimum = linear_svr_optimum(A, y, C, eps)
    model, info = train(
        Dataset(sp.csr_matrix(A), y),
        AssetParams(
            C=C, approx="none", task="regression", tube=eps, epochs=50, tolerance=0, seed=0
        ),
    )
    assert info.average_last == "half" and info.result.status == "epochs"
    assert optimum * (1 - 1e-6) <= info.objective <= optimum * 1.1, (info.objective, optimum)


def test_regression_targets_must_be_finite():
    data = Dataset(
        sp.csr_matrix(np.eye(3)),
        np.array([1.0, np.nan, 2.0]),
        source="r.dat",
        line_numbers=np.array([1, 2, 3]),
    )
    with pytest.raises(InputError, match=r"r.dat:2: expected a finite regression target"):
        train(data, AssetParams(C=1, approx="none", task="regression"))


# --- models, cp_classify ----------------------------------------------------------------


def printed_objective(stdout):
    return float(re.search(r"mean\(loss\) = (\S+)", stdout).group(1))


def dense(path, n_features):
    d = read_svmlight(path)
    return d.X.toarray()[:, :n_features] if d.X.shape[1] >= n_features else np.c_[
        d.X.toarray(), np.zeros((d.n_examples, n_features - d.X.shape[1]))
    ], d.y


def test_nystrom_model_is_an_svmlight_kernel_model_cp_classify_reads(tmp_path):
    model, pred = tmp_path / "m", tmp_path / "p"
    r = run(
        "asset", "-c", "10", "-t", "2", "-g", "0.05", "--k", "60", "--epochs", "2", TRAIN, model
    )
    assert r.returncode == 0, r.stderr
    lines = model.read_text().splitlines()
    assert lines[0] == "SVM-light Version V6.20"
    n_sv = int(lines[9].split("#")[0]) - 1
    b = float(lines[10].split("#")[0])
    assert n_sv == 60
    # The file read by hand: alpha and the support vectors.
    coef, S = np.zeros(n_sv), np.zeros((n_sv, 123))
    for i, line in enumerate(lines[11 : 11 + n_sv]):
        tokens = line.split("#")[0].split()
        coef[i] = float(tokens[0])
        for t in tokens[1:]:
            j, v = t.split(":")
            S[i, int(j) - 1] = float(v)
    Xt, yt = dense(TEST, 123)
    expected = rbf(Xt, S, 0.05) @ coef - b
    c = run("classify", "--double", TEST, model, pred)
    assert c.returncode == 0, c.stderr
    np.testing.assert_allclose(np.loadtxt(pred), expected, rtol=1e-6, atol=1e-6)
    accuracy = float(re.search(r"Accuracy on test set: ([\d.]+)%", c.stdout).group(1))
    assert accuracy == pytest.approx(100 * np.mean(np.where(expected > 0, 1, -1) == yt), abs=0.01)
    # The objective printed is the one of the written model (|gamma|² = alphaᵀ K_SS alpha).
    X, y = dense(TRAIN, 123)
    lam = 1 / (10 * len(y))
    f = rbf(X, S, 0.05) @ coef - b
    objective = lam / 2 * coef @ rbf(S, S, 0.05) @ coef + np.mean(np.maximum(0, 1 - y * f))
    assert printed_objective(r.stdout) == pytest.approx(objective, rel=1e-6)


def test_rff_model_file_and_cp_classify(tmp_path):
    model, pred = tmp_path / "m", tmp_path / "p"
    r = run(
        "asset",
        "-c",
        "10",
        "-t",
        "2",
        "-g",
        "0.05",
        "--approx",
        "rff",
        "--k",
        "50",
        "--epochs",
        "2",
        TRAIN,
        model,
    )
    assert r.returncode == 0, r.stderr
    lines = model.read_text().splitlines()
    assert lines[0] == "cpsvm rff model V1"
    assert int(lines[9].split("#")[0]) == 50 and lines[10].startswith("classification")
    b = float(lines[11].split("#")[0])
    n = int(lines[7].split("#")[0])
    assert n == read_svmlight(TRAIN).n_features
    rows = np.array([[float(v) for v in line.split()] for line in lines[12:]])
    assert rows.shape == (50, 2 + n)
    coef, nu, omega = rows[:, 0], rows[:, 1], rows[:, 2:].T
    Xt, _ = dense(TEST, n)
    expected = np.cos(Xt @ omega + nu) @ coef - b
    c = run("classify", "--double", TEST, model, pred)
    assert c.returncode == 0, c.stderr
    assert "50 random features" in c.stderr and "Accuracy on test set" in c.stdout
    np.testing.assert_allclose(np.loadtxt(pred), expected, rtol=1e-6, atol=1e-6)
    X, y = dense(TRAIN, n)
    lam = 1 / (10 * len(y))
    f = np.cos(X @ omega + nu) @ coef - b
    gamma_sq = coef @ coef * 50 / 2  # coef = sqrt(2/D)·gamma
    objective = lam / 2 * gamma_sq + np.mean(np.maximum(0, 1 - y * f))
    assert printed_objective(r.stdout) == pytest.approx(objective, rel=1e-6)
    # Written -> read -> written is the same text; the values are exact.
    restored = read_model(model)
    assert format_model(restored) == model.read_text()
    np.testing.assert_array_equal(restored.omega, omega)


def test_rff_model_file_errors_name_the_line(tmp_path):
    data = read_svmlight(TRAIN)
    lines = format_model(
        train(
            data,
            AssetParams(C=10, kernel=Kernel(2, gamma=0.05), approx="rff", basis_size=5, epochs=1),
        )[0]
    ).splitlines()
    (tmp_path / "short").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(InputError, match=r"short:17: expected 5 random features"):
        read_model(tmp_path / "short")
    bad = lines[:13] + [lines[13].replace(lines[13].split()[3], "x")] + lines[14:]
    (tmp_path / "bad").write_text("\n".join(bad) + "\n")
    with pytest.raises(InputError, match=r"bad:14: expected 124 finite numbers"):
        read_model(tmp_path / "bad")


def test_regression_model_and_cp_classify_errors(tmp_path):
    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, size=(300, 2))
    y = np.sin(3 * A[:, 0]) + A[:, 1] ** 2
    write_svmlight(tmp_path / "train", sp.csr_matrix(A[:200]), y[:200])
    write_svmlight(tmp_path / "test", sp.csr_matrix(A[200:]), y[200:])
    for approx in ("nystrom", "rff"):
        model, pred = tmp_path / f"m.{approx}", tmp_path / f"p.{approx}"
        if approx == "nystrom":
            r = run(
                "asset",
                "-z",
                "r",
                "-w",
                "0.05",
                "-c",
                "10",
                "-t",
                "2",
                "-g",
                "2",
                "--k",
                "50",
                "--epochs",
                "100",
                tmp_path / "train",
                model,
            )
            assert r.returncode == 0, r.stderr
            assert "Training mean squared error" in r.stdout
        else:
            write_model(
                model,
                train(
                    read_svmlight(tmp_path / "train"),
                    AssetParams(
                        C=10,
                        kernel=Kernel(2, gamma=2),
                        approx="rff",
                        basis_size=50,
                        task="regression",
                        tube=0.05,
                        epochs=100,
                    ),
                )[0],
            )
        c = run("classify", "--double", tmp_path / "test", model, pred)
        assert c.returncode == 0, c.stderr
        f = np.loadtxt(pred)
        mse = float(re.search(r"Mean squared error on test set: (\S+)", c.stdout).group(1))
        mae = float(re.search(r"Mean absolute error on test set: (\S+)", c.stdout).group(1))
        assert mse == pytest.approx(np.mean((f - y[200:]) ** 2), rel=1e-5)
        assert mae == pytest.approx(np.mean(np.abs(f - y[200:])), rel=1e-5)
        assert mse < 0.3 * np.var(y[200:])  # it did learn the function


def test_rff_regression_model_reports_errors_even_on_binary_targets(tmp_path):
    rng = np.random.default_rng(1)
    A = rng.uniform(-1, 1, size=(100, 2))
    write_svmlight(tmp_path / "train", sp.csr_matrix(A), A[:, 0] * 3)
    write_svmlight(tmp_path / "test", sp.csr_matrix(A[:10]), np.where(A[:10, 0] > 0, 1.0, -1.0))
    model = tmp_path / "m"
    write_model(
        model,
        train(
            read_svmlight(tmp_path / "train"),
            AssetParams(
                C=1, kernel=Kernel(2), approx="rff", basis_size=8, task="regression", epochs=1
            ),
        )[0],
    )
    c = run("classify", tmp_path / "test", model, tmp_path / "p")
    assert "Mean squared error" in c.stdout and "Accuracy" not in c.stdout


# --- determinism, validation, trace -------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        dict(approx="nystrom"),
        dict(approx="rff"),
        dict(approx="nystrom", memory_mb=0, batch=3),
        dict(approx="nystrom", validation=True),
    ],
)
def test_same_seed_same_model_at_any_thread_count(options):
    data = read_svmlight(TRAIN)
    if options.pop("validation", False):
        options["validation"] = read_svmlight(TEST)

    def model_text(threads, seed=0):
        params = AssetParams(
            C=100,
            kernel=Kernel(2, gamma=0.05),
            basis_size=100,
            epochs=2,
            n_threads=threads,
            seed=seed,
            **options,
        )
        return format_model(train(data, params)[0])

    one = model_text(1)
    assert model_text(2) == one
    assert model_text(1, seed=1) != one
    if "memory_mb" not in options:
        # Rows recomputed every epoch (nothing fits in 0 MB) are the rows kept, up to the
        # last bits of BLAS products over other blocks of rows.
        options["memory_mb"] = 0
        recomputed = read_model_text(model_text(2))
        kept = read_model_text(one)
        np.testing.assert_allclose(recomputed.coef, kept.coef, rtol=1e-6, atol=1e-9)


def read_model_text(text):
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".model", delete=False) as f:
        f.write(text)
    try:
        return read_model(f.name)
    finally:
        os.unlink(f.name)


def test_validation_keeps_the_best_check_and_trace(tmp_path):
    model, trace = tmp_path / "m", tmp_path / "t.tsv"
    # A feature the training data never has: ignored, as cp_classify ignores it.
    text = TEST.read_text().splitlines()
    text[0] += " 500:1"
    (tmp_path / "val").write_text("\n".join(text) + "\n")
    r = run(
        "asset",
        "-c",
        "1000",
        "-t",
        "2",
        "-g",
        "0.05",
        "--k",
        "50",
        "--epochs",
        "3",
        "--tolerance",
        "0",
        "--validate",
        tmp_path / "val",
        "--trace",
        trace,
        TRAIN,
        model,
    )
    assert r.returncode == 0, r.stderr
    assert "1 validation feature values above" in r.stderr
    assert "Stopped because: the epoch cap (--epochs 3) was reached" in r.stdout
    rows = [line.split("\t") for line in trace.read_text().splitlines()]
    assert rows[0] == [
        "epoch",
        "iteration",
        "objective",
        "validation_error",
        "seconds",
        "sample_objective",
    ]
    errors = [float(row[3]) for row in rows[1:]]
    objectives = [float(row[2]) for row in rows[1:]]  # plain numbers, as a TSV reader wants
    assert all(o > 0 for o in objectives)
    iterations = [int(row[1]) for row in rows[1:]]
    assert iterations[:3] == [300, 600, 900] and len(rows) == 31  # ten checks per epoch
    # The model written is the latest of the best checks.
    best = min(errors)
    kept = max(i for i, e in enumerate(errors) if e == best)
    assert f"model of iteration {iterations[kept]} " in r.stdout
    assert f"Validation error: {100 * best:.2f}% (best of 30 checks)" in r.stdout
    c = run("classify", TEST, model, tmp_path / "p")
    accuracy = float(re.search(r"Accuracy on test set: ([\d.]+)%", c.stdout).group(1))
    assert accuracy == pytest.approx(100 * (1 - best), abs=0.06)


def test_stopping_rule_restated_on_the_trace_and_the_model(tmp_path):
    """6000 generated examples, linear (--approx none): the rule's objective is measured on
    every 2nd example (at most 5000) at checks 1..8, 10, 12, 14, 16, 20, ... (at most three
    significant binary digits); the run stops at the first such check n >= 100 (ten
    epochs) whose objective is less than 1% below that of the same kind of check at most
    n/2. The last measure is the exact objective of the model written, computed here from
    its file."""
    rng = np.random.default_rng(7)
    A = rng.normal(size=(6000, 4))
    y = np.where(
        A @ np.array([1.0, -2.0, 0.5, 1.0]) + rng.normal(scale=1.5, size=6000) > 0, 1.0, -1.0
    )
    write_svmlight(tmp_path / "train", sp.csr_matrix(A), y)
    model, trace = tmp_path / "m", tmp_path / "t.tsv"
    r = run("asset", "--approx", "none", "-c", "0.1", "--trace", trace, tmp_path / "train", model)
    assert r.returncode == 0, r.stderr
    rows = [line.split("\t") for line in trace.read_text().splitlines()][1:]
    measured = {n: float(row[5]) for n, row in enumerate(rows, 1) if row[5] != "nan"}
    anchors = [
        n
        for n in range(1, len(rows) + 1)
        if bin(n).rstrip("0").count("1") <= 3 and len(bin(n).rstrip("0")) - 2 <= 3
    ]
    assert sorted(measured) == anchors

    def anchor(n):
        return max(a for a in anchors if a <= n)

    def converged(n):
        return n >= 100 and measured[anchor(n // 2)] - measured[n] <= 0.01 * measured[n]

    assert [n for n in anchors if converged(n)][:1] == [len(rows)]
    assert 100 < len(rows) < 640
    epochs = len(rows) / 10
    assert (
        "Stopped because: converged: the objective fell by less than 1% (--tolerance) "
        "over the last half of the run" in r.stdout
    )
    assert f"Number of iterations: {len(rows) * 600} ({epochs:.1f} epochs)" in r.stdout
    assert (
        f"objective on 3000 of the 6000 training examples "
        f"{measured[anchor(len(rows) // 2)]:.6g}" in r.stdout
    )
    w = read_model(model)
    f = A[::2] @ w.w - w.b
    lam = 1 / (0.1 * 6000)
    exact = lam / 2 * w.w @ w.w + np.mean(np.maximum(0, 1 - y[::2] * f))
    assert measured[len(rows)] == pytest.approx(exact, rel=1e-9)


def plain_asset(X, y, lam, epochs, seed, step_scale, R, B, start):
    """ASSET with mini-batch 1 written out: hinge loss, η_j = step_scale/√j, the iterate
    projected on |γ| <= R and |b| <= B, the η-weighted average of the iterates of the
    iterations after ``start``; the seeded generator draws the D_G sample, then one
    permutation per epoch."""
    rng = np.random.default_rng(seed)
    m = X.shape[0]
    rng.choice(m, min(1000, m), replace=False)
    w, b, j = np.zeros(X.shape[1]), 0.0, 0
    acc, acc_b, acc_eta = np.zeros(X.shape[1]), 0.0, 0.0
    for _ in range(epochs):
        for i in rng.permutation(m):
            j += 1
            eta = step_scale / np.sqrt(j)
            g = -y[i] if y[i] * (X[i] @ w + b) < 1 else 0.0
            w = (1 - eta * lam) * w - eta * g * X[i]
            b = min(max(b - eta * g, -B), B)
            norm = np.linalg.norm(w)
            if norm > R:
                w *= R / norm
            if j > start:
                acc, acc_b, acc_eta = acc + eta * w, acc_b + eta * b, acc_eta + eta
    return acc / acc_eta, acc_b / acc_eta


@pytest.mark.parametrize("window", ["half", 100, 0])
def test_averaged_model_is_the_average_of_the_plain_iterates(window):
    """150 examples, 7 epochs of 10 checks each: the last check is the 70th. 'half'
    averages from check 32 on (the largest number up to 70/2 with at most three
    significant binary digits: 100000), i.e. iteration 3*150 + 30."""
    rng = np.random.default_rng(3)
    A = rng.normal(size=(150, 5))
    y = np.where(A @ np.array([1.0, -1.0, 0.5, 0.0, 2.0]) + rng.normal(size=150) > 0, 1.0, -1.0)
    model, info = train(
        Dataset(sp.csr_matrix(A), y),
        AssetParams(C=1, approx="none", epochs=7, tolerance=0, seed=4, average_last=window),
    )
    start = {"half": 3 * 150 + 30, 100: 7 * 150 - 100, 0: 0}[window]
    w, b = plain_asset(A, y, 1 / 150, 7, 4, info.step_scale, info.radius, info.b_radius, start)
    np.testing.assert_allclose(model.w, w, rtol=1e-9, atol=1e-12)
    assert -model.b == pytest.approx(b, rel=1e-9, abs=1e-12)


def linear_regression(m, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, 5))
    return A, A @ np.array([1.0, -2.0, 0.5, 0.0, 1.5]) + 0.3 + rng.normal(scale=0.5, size=m)


def test_stopping_rule_runs_until_converged_where_ten_epochs_do_not(tmp_path):
    """Linear regression, 2000 examples: the fixed 10 epochs of old end measurably above
    the optimum (libsvm's SVR); the defaults stop by the rule close to it, and say why."""
    A, y = linear_regression(2000, 0)
    At, yt = linear_regression(2000, 1)
    write_svmlight(tmp_path / "train", sp.csr_matrix(A), y)
    C, eps = 1.0, 0.1
    lam, optimum = linear_svr_optimum(A, y, C, eps)
    runs = {}
    for name, extra in (("ten", ["--tolerance", "0", "--epochs", "10"]), ("default", [])):
        r = run(
            "asset",
            "-z",
            "r",
            "-w",
            eps,
            "--approx",
            "none",
            "-c",
            C,
            *extra,
            tmp_path / "train",
            tmp_path / name,
        )
        assert r.returncode == 0, r.stderr
        model = read_model(tmp_path / name)
        objective = lam / 2 * model.w @ model.w + np.mean(
            np.maximum(0, np.abs(A @ model.w - model.b - y) - eps)
        )
        rmse = np.sqrt(np.mean((At @ model.w - model.b - yt) ** 2))
        runs[name] = (objective / optimum, rmse, r.stdout)
    (ten, ten_rmse, ten_out), (default, rmse, out) = runs["ten"], runs["default"]
    assert ten > 1.08 and ten_rmse > 1.01 * rmse  # unconverged
    assert 1 - 1e-6 < default < 1.02  # converged
    assert "Stopped because: the epoch cap (--epochs 10) was reached" in ten_out
    assert (
        "Stopped because: converged: the objective fell by less than 1% (--tolerance) "
        "over the last half of the run" in out
    )
    epochs = float(re.search(r"Number of iterations: \d+ \(([\d.]+) epochs\)", out).group(1))
    assert 10 < epochs < 64


def test_stopping_defaults_are_the_commands_everywhere():
    """--help, the man page's DEFAULTS and the scikit-learn estimators say the solver's
    defaults."""
    import inspect

    from click.testing import CliRunner

    from cpsvm.cli import asset as cli
    from cpsvm.params import asset as declared
    from cpsvm.sklearn import ASSETClassifier, ASSETRegressor
    from cpsvm.solvers import asset as solver

    # The command's flags are the Params' fields: one default, declared once.
    assert (declared.EPOCHS, declared.TOLERANCE) == (64, 0.01)
    params = AssetParams(C=1)
    assert (params.epochs, params.tolerance) == (64, 0.01) and solver._average_last(
        params, 10
    ) == "half"
    for cls in (ASSETClassifier, ASSETRegressor):
        defaults = {k: v.default for k, v in inspect.signature(cls).parameters.items()}
        assert (defaults["max_iter"], defaults["tol"], defaults["average_last"]) == (64, 0.01, None)
    text = " ".join(CliRunner().invoke(cli.command, ["--help"]).output.split())
    for flag, value in (("--epochs", "64"), ("--tolerance", "0.01")):
        assert re.search(
            re.escape(flag) + r" [A-Z]+ [^[]*\[default: " + re.escape(value) + r"\]", text
        ), flag
    man = (ROOT / "man" / "asset_learn.1").read_text()
    defaults_section = man.split(".SH DEFAULTS", 1)[1].split(".SH ", 1)[0]
    for phrase in (r"\-\-epochs 64", r"\-\-tolerance 0.01", r"\-\-average\-last half"):
        assert phrase in defaults_section, phrase


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["-c", "1", "--tolerance", "-0.1"], 2, "0 <= --tolerance < 1"),
        (["-c", "1", "--average-last", "quarter"], 2, "expected --average-last >= 0 or half"),
        (["-t", "1", "--approx", "rff", "-c", "1"], 2, "--approx rff needs the RBF kernel"),
        (
            ["-t", "2", "--approx", "none", "-c", "1"],
            2,
            "--approx none trains on the input features",
        ),
        (["-l", "0"], 2, "expected lambda > 0"),
        (["-l", "-1e-3"], 2, "expected lambda > 0"),
        (["-c", "1", "-l", "1"], 2, "exactly one of -c (C) and -l"),
        ([], 2, "exactly one of -c (C) and -l"),
        (["-c", "1", "-z", "p"], 2, "'p' is not one of"),
        (["-c", "1", "--epochs", "0"], 2, "--epochs >= 1"),
        (["-c", "1", "--validate", "MISSING"], 1, "MISSING"),
    ],
)
def test_bad_options_one_line_no_model(tmp_path, args, code, message):
    model = tmp_path / "m"
    args = [str(tmp_path / "missing") if a == "MISSING" else a for a in args]
    r = run("asset", *args, TRAIN, model)
    assert r.returncode == code, r.stderr
    assert r.stderr.startswith("asset_learn: ") and r.stderr.count("\n") == 1, r.stderr
    assert message.replace("MISSING", "missing") in r.stderr
    assert not model.exists()


@pytest.mark.parametrize(
    "content, flags, where",
    [
        ("+1 1:1\n-1 2:1\n+1 1:x\n", ["-c", "1"], "train:3:"),
        ("+1 1:1\n+2 2:1\n", ["-c", "1"], "train:2: expected a target +1 or -1"),
        ("+1 1:1\n+1 2:1\n", ["-c", "1"], "expected examples of both classes"),
        ("0.5 1:1\ninf 2:1\n", ["-c", "1", "-z", "r"], "train:2: expected a finite target"),
        ("", ["-c", "1"], "train"),
    ],
)
def test_bad_training_files_one_line_no_model(tmp_path, content, flags, where):
    (tmp_path / "train").write_text(content)
    model = tmp_path / "m"
    r = run("asset", *flags, "--approx", "none", tmp_path / "train", model)
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("asset_learn: ") and r.stderr.count("\n") == 1, r.stderr
    assert where in r.stderr
    assert not model.exists()


def test_bad_validation_labels(tmp_path):
    (tmp_path / "val").write_text("+1 1:1\n3 2:1\n")
    r = run(
        "asset",
        "-c",
        "1",
        "--approx",
        "none",
        "--validate",
        tmp_path / "val",
        TRAIN,
        tmp_path / "m",
    )
    assert r.returncode == 1 and "val:2: expected a target +1 or -1" in r.stderr
    assert not (tmp_path / "m").exists()


# --- Ctrl-C -------------------------------------------------------------------------------


def test_ctrl_c_writes_a_valid_model_and_exits_130(tmp_path):
    model, trace = tmp_path / "m", tmp_path / "t.tsv"
    code, out, err = interrupt_cli(
        "asset",
        [
            "-c",
            "1000",
            "-t",
            "2",
            "-g",
            "0.05",
            "--k",
            "50",
            "--tolerance",
            "0",
            "--epochs",
            "1000000",
            "--trace",
            trace,
            TRAIN,
            model,
        ],
        trace,
    )
    assert code == 130, err
    assert "interrupted at iteration" in err and "Traceback" not in err
    assert "Stopped because: interrupted" in out
    restored = read_model(model)
    assert restored.support_vectors.shape[0] == 50 and np.any(restored.coef != 0)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_basis_and_batch_sizes_above_the_examples():
    """--k's default is min(512, m); a larger --k takes all m examples (with a note), a
    larger -k mini-batch all of them too: the same model as --k m, -k m."""
    rng = np.random.default_rng(3)
    X = sp.csr_matrix(rng.standard_normal((40, 5)))
    data = Dataset(X=X, y=np.where(rng.standard_normal(40) > 0, 1.0, -1.0))
    base = dict(C=1, kernel=Kernel(2, gamma=0.5), epochs=3)
    default, info = train(data, AssetParams(**base))
    assert (info.basis_size, info.batch, info.notes) == (40, 1, [])
    exact, _ = train(data, AssetParams(**base, basis_size=40, batch=40))
    capped, info = train(data, AssetParams(**base, basis_size=10**9, batch=10**9))
    assert (info.basis_size, info.batch) == (40, 40)
    assert info.notes == ["--k 1000000000 > the 40 training examples: s = 40"]
    assert np.array_equal(capped.coef, exact.coef) and capped.b == exact.b
    rff, info = train(data, AssetParams(**base, approx="rff"))
    assert info.basis_size == 512 and info.dim == 512
