"""asset_learn: ASSET/ASSET* against independent references (a Pegasos written here,
libsvm's optimum of the exact problem), the model files against numpy's reading of
them, determinism, bad input and Ctrl-C."""

import os
import re

import numpy as np
import pytest
import scipy.sparse as sp

from cpsvm.data import Dataset
from cpsvm.errors import InputError
from cpsvm.io.model_file import format_model, read_model, write_model
from cpsvm.io.svmlight import read_svmlight, write_svmlight
from cpsvm.kernels import Kernel
from cpsvm.solvers.asset import AssetParams, train

from conftest import SAMPLES, interrupt_cli, run_cli as run

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
            batch = perm[lo:lo + k]
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
    model, info = train(data, AssetParams(lam=lam, approx="none", star=True, batch=k,
                                          epochs=3, seed=11))
    reference = pegasos(data.X.toarray(), data.y, lam, k, 3, 11)
    assert model.b == 0.0
    np.testing.assert_allclose(model.w, reference, rtol=1e-9, atol=1e-12)
    X = data.X.toarray()
    objective = lam / 2 * reference @ reference + np.mean(np.maximum(0, 1 - data.y * (X @ reference)))
    assert info.objective == pytest.approx(objective, rel=1e-9)


def svc_objective(K, y, C, lam):
    """λ/2|w|² + mean hinge at libsvm's optimum of ½|w|² + C Σ hinge (C = 1/(λm))."""
    from sklearn.svm import SVC
    svc = SVC(C=C, kernel="precomputed", tol=1e-10).fit(K, y)
    beta = np.zeros(len(y))
    beta[svc.support_] = svc.dual_coef_[0]
    f = K @ beta + svc.intercept_[0]
    return lam / 2 * beta @ K @ beta + np.mean(np.maximum(0, 1 - y * f))


@pytest.mark.parametrize("average_last, tolerance", [(0, 0.08), (100, 0.03)])
def test_asset_gets_close_to_the_exact_optimum(average_last, tolerance):
    """60 examples, 1000 epochs: the gap of the average of all iterates falls as 1/sqrt(N),
    that of the last 100 faster."""
    A, y = two_moons(60, 1)
    g, C = 1.0, 1.0
    m = len(y)
    lam = 1 / (C * m)
    optimum = svc_objective(rbf(A, A, g), y, C, lam)
    data = Dataset(sp.csr_matrix(A), y)
    # s = m: V·Vᵀ is the exact kernel, so (PL) is the SVM with intercept.
    model, info = train(data, AssetParams(C=C, kernel=Kernel(2, gamma=g), basis_size=m,
                                          eig_threshold=1e-10, epochs=1000,
                                          average_last=average_last, seed=2))
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
    model, info = train(Dataset(sp.csr_matrix(A), y),
                        AssetParams(C=C, approx="none", task="regression", tube=eps,
                                    epochs=1000, average_last=0, seed=0))
    # The average of all iterates: a gap falling as 1/sqrt(N).
    assert optimum * (1 - 1e-6) <= info.objective <= optimum * 1.08, (info.objective, optimum)
    f = A @ model.w - model.b
    assert np.mean(np.maximum(0, np.abs(f - y) - eps)) + lam / 2 * model.w @ model.w == \
        pytest.approx(info.objective, rel=1e-9)


def test_regression_with_targets_far_from_zero_trains_as_well_as_centred_ones():
    """The defaults (window: half of the iterations; targets centred into b) get near
    the SVR optimum however far the targets sit from 0."""
    rng = np.random.default_rng(5)
    A = rng.normal(size=(200, 3))
    y = A @ np.array([1.0, -2.0, 0.5]) + 500.0 + rng.normal(scale=0.3, size=200)
    C, eps = 1.0, 0.1
    lam, optimum = linear_svr_optimum(A, y, C, eps)
    model, info = train(Dataset(sp.csr_matrix(A), y),
                        AssetParams(C=C, approx="none", task="regression", tube=eps,
                                    epochs=50, seed=0))
    assert info.average_last == 50 * 200 // 2
    assert optimum * (1 - 1e-6) <= info.objective <= optimum * 1.1, (info.objective, optimum)


def test_regression_targets_must_be_finite():
    data = Dataset(sp.csr_matrix(np.eye(3)), np.array([1.0, np.nan, 2.0]), source="r.dat",
                   line_numbers=np.array([1, 2, 3]))
    with pytest.raises(InputError, match=r"r.dat:2: expected a finite regression target"):
        train(data, AssetParams(C=1, approx="none", task="regression"))


# --- models, cp_classify ----------------------------------------------------------------

def printed_objective(stdout):
    return float(re.search(r"mean\(loss\) = (\S+)", stdout).group(1))


def dense(path, n_features):
    d = read_svmlight(path)
    return d.X.toarray()[:, :n_features] if d.X.shape[1] >= n_features else \
        np.c_[d.X.toarray(), np.zeros((d.n_examples, n_features - d.X.shape[1]))], d.y


def test_nystrom_model_is_an_svmlight_kernel_model_cp_classify_reads(tmp_path):
    model, pred = tmp_path / "m", tmp_path / "p"
    r = run("asset", "-c", "10", "-t", "2", "-g", "0.05", "--k", "60", "--epochs", "2",
            TRAIN, model)
    assert r.returncode == 0, r.stderr
    lines = model.read_text().splitlines()
    assert lines[0] == "SVM-light Version V6.20"
    n_sv = int(lines[9].split("#")[0]) - 1
    b = float(lines[10].split("#")[0])
    assert n_sv == 60
    # The file read by hand: alpha and the support vectors.
    coef, S = np.zeros(n_sv), np.zeros((n_sv, 123))
    for i, line in enumerate(lines[11:11 + n_sv]):
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
    r = run("asset", "-c", "10", "-t", "2", "-g", "0.05", "--approx", "rff", "--k", "50",
            "--epochs", "2", TRAIN, model)
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
    gamma_sq = coef @ coef * 50 / 2          # coef = sqrt(2/D)·gamma
    objective = lam / 2 * gamma_sq + np.mean(np.maximum(0, 1 - y * f))
    assert printed_objective(r.stdout) == pytest.approx(objective, rel=1e-6)
    # Written -> read -> written is the same text; the values are exact.
    restored = read_model(model)
    assert format_model(restored) == model.read_text()
    np.testing.assert_array_equal(restored.omega, omega)


def test_rff_model_file_errors_name_the_line(tmp_path):
    data = read_svmlight(TRAIN)
    lines = format_model(train(data, AssetParams(C=10, kernel=Kernel(2, gamma=0.05),
                                                 approx="rff", basis_size=5,
                                                 epochs=1))[0]).splitlines()
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
            r = run("asset", "-z", "r", "-w", "0.05", "-c", "10", "-t", "2", "-g", "2",
                    "--k", "50", "--epochs", "100", tmp_path / "train", model)
            assert r.returncode == 0, r.stderr
            assert "Training mean squared error" in r.stdout
        else:
            write_model(model, train(read_svmlight(tmp_path / "train"), AssetParams(
                C=10, kernel=Kernel(2, gamma=2), approx="rff", basis_size=50,
                task="regression", tube=0.05, epochs=100))[0])
        c = run("classify", "--double", tmp_path / "test", model, pred)
        assert c.returncode == 0, c.stderr
        f = np.loadtxt(pred)
        mse = float(re.search(r"Mean squared error on test set: (\S+)", c.stdout).group(1))
        mae = float(re.search(r"Mean absolute error on test set: (\S+)", c.stdout).group(1))
        assert mse == pytest.approx(np.mean((f - y[200:]) ** 2), rel=1e-5)
        assert mae == pytest.approx(np.mean(np.abs(f - y[200:])), rel=1e-5)
        assert mse < 0.3 * np.var(y[200:])      # it did learn the function


def test_rff_regression_model_reports_errors_even_on_binary_targets(tmp_path):
    rng = np.random.default_rng(1)
    A = rng.uniform(-1, 1, size=(100, 2))
    write_svmlight(tmp_path / "train", sp.csr_matrix(A), A[:, 0] * 3)
    write_svmlight(tmp_path / "test", sp.csr_matrix(A[:10]), np.where(A[:10, 0] > 0, 1.0, -1.0))
    model = tmp_path / "m"
    write_model(model, train(read_svmlight(tmp_path / "train"),
                             AssetParams(C=1, kernel=Kernel(2), approx="rff", basis_size=8,
                                         task="regression", epochs=1))[0])
    c = run("classify", tmp_path / "test", model, tmp_path / "p")
    assert "Mean squared error" in c.stdout and "Accuracy" not in c.stdout


# --- determinism, validation, trace -------------------------------------------------------

@pytest.mark.parametrize("options", [
    dict(approx="nystrom"), dict(approx="rff"),
    dict(approx="nystrom", memory_mb=0, batch=3),
    dict(approx="nystrom", validation=True, patience=100),
])
def test_same_seed_same_model_at_any_thread_count(options):
    data = read_svmlight(TRAIN)
    if options.pop("validation", False):
        options["validation"] = read_svmlight(TEST)

    def model_text(threads, seed=0):
        params = AssetParams(C=100, kernel=Kernel(2, gamma=0.05), basis_size=100, epochs=2,
                             n_threads=threads, seed=seed, **options)
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


def test_validation_patience_and_trace(tmp_path):
    model, trace = tmp_path / "m", tmp_path / "t.tsv"
    # A feature the training data never has: ignored, as cp_classify ignores it.
    text = TEST.read_text().splitlines()
    text[0] += " 500:1"
    (tmp_path / "val").write_text("\n".join(text) + "\n")
    r = run("asset", "-c", "1000", "-t", "2", "-g", "0.05", "--k", "50", "--epochs", "200",
            "--validate", tmp_path / "val", "--patience", "3", "--trace", trace, TRAIN, model)
    assert r.returncode == 0, r.stderr
    assert "1 validation feature values above" in r.stderr
    assert "did not improve for --patience checks" in r.stdout
    rows = [line.split("\t") for line in trace.read_text().splitlines()]
    assert rows[0] == ["epoch", "iteration", "objective", "validation_error", "seconds"]
    errors = [float(row[3]) for row in rows[1:]]
    objectives = [float(row[2]) for row in rows[1:]]   # plain numbers, as a TSV reader wants
    assert all(o > 0 for o in objectives)
    assert len(errors) < 2000                     # stopped early
    best = min(errors)
    assert errors.index(best) == len(errors) - 4  # then 3 checks without improvement
    iterations = [int(row[1]) for row in rows[1:]]
    assert iterations[:3] == [300, 600, 900]      # ten checks per epoch of 3000
    # The model written is the best one: its validation error is the best in the trace.
    c = run("classify", TEST, model, tmp_path / "p")
    accuracy = float(re.search(r"Accuracy on test set: ([\d.]+)%", c.stdout).group(1))
    assert accuracy == pytest.approx(100 * (1 - best), abs=0.06)


# --- bad input ----------------------------------------------------------------------------

@pytest.mark.parametrize("args, code, message", [
    (["-t", "2", "--k", "3001", "-c", "1"], 2, "expected --k <= the number of training examples (3000)"),
    (["-t", "1", "--approx", "rff", "-c", "1"], 2, "--approx rff needs the RBF kernel"),
    (["-t", "2", "--approx", "none", "-c", "1"], 2, "--approx none trains on the input features"),
    (["-l", "0"], 2, "expected lambda > 0"),
    (["-l", "-1e-3"], 2, "expected lambda > 0"),
    (["-c", "1", "-l", "1"], 2, "exactly one of -c (C) and -l"),
    ([], 2, "exactly one of -c (C) and -l"),
    (["-c", "1", "-z", "p"], 2, "'p' is not one of"),
    (["-c", "1", "--epochs", "0"], 2, "--epochs >= 1"),
    (["-c", "1", "--validate", "MISSING"], 1, "MISSING"),
])
def test_bad_options_one_line_no_model(tmp_path, args, code, message):
    model = tmp_path / "m"
    args = [str(tmp_path / "missing") if a == "MISSING" else a for a in args]
    r = run("asset", *args, TRAIN, model)
    assert r.returncode == code, r.stderr
    assert r.stderr.startswith("asset_learn: ") and r.stderr.count("\n") == 1, r.stderr
    assert message.replace("MISSING", "missing") in r.stderr
    assert not model.exists()


@pytest.mark.parametrize("content, flags, where", [
    ("+1 1:1\n-1 2:1\n+1 1:x\n", ["-c", "1"], "train:3:"),
    ("+1 1:1\n+2 2:1\n", ["-c", "1"], "train:2: expected a target +1 or -1"),
    ("+1 1:1\n+1 2:1\n", ["-c", "1"], "expected examples of both classes"),
    ("0.5 1:1\ninf 2:1\n", ["-c", "1", "-z", "r"], "train:2: expected a finite target"),
    ("", ["-c", "1"], "train"),
])
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
    r = run("asset", "-c", "1", "--approx", "none", "--validate", tmp_path / "val", TRAIN,
            tmp_path / "m")
    assert r.returncode == 1 and "val:2: expected a target +1 or -1" in r.stderr
    assert not (tmp_path / "m").exists()


# --- Ctrl-C -------------------------------------------------------------------------------

def test_ctrl_c_writes_a_valid_model_and_exits_130(tmp_path):
    model, trace = tmp_path / "m", tmp_path / "t.tsv"
    code, out, err = interrupt_cli("asset", ["-c", "1000", "-t", "2", "-g", "0.05", "--k", "50",
                                             "--epochs", "1000000", "--trace", trace, TRAIN,
                                             model], trace)
    assert code == 130, err
    assert "interrupted at iteration" in err and "Traceback" not in err
    assert "Stopped because: interrupted" in out
    restored = read_model(model)
    assert restored.support_vectors.shape[0] == 50 and np.any(restored.coef != 0)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
