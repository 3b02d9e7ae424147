"""The kernel rows of cpsvm.kernel_rows against Kernel.matrix (scipy's product and the
kernel's definition) and against SVMlight's float32 arithmetic written out per pair."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import ROOT, checkerboard

from cpsvm.io.model_file import read_model
from cpsvm.io.svmlight import read_svmlight
from cpsvm.kernel_rows import (
    RowKernel,
    _exact_products,
    kernel_matrix,
    kernel_times,
    row_sq_norms,
    stacked,
)
from cpsvm.kernels import Kernel
from cpsvm.models import KernelModel

KERNELS = [
    Kernel(0),
    Kernel(1, 3, 0.5, 0.3, 1.0),
    Kernel(2, gamma=0.05),
    Kernel(3, coef_lin=0.02, coef_const=-0.5),
]


@pytest.fixture(scope="module")
def a9a():
    return read_svmlight(ROOT / "data" / "samples" / "a9a3k.train")


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: f"t{k.kind}")
@pytest.mark.parametrize("path", ["bits", "dense", "index"])
def test_row_kernel_matches_kernel_matrix(a9a, kernel, path):
    """All three ways of holding the basis (a9a's features are 0/1: bitsets), with
    repeated rows and basis examples (merged), against Kernel.matrix."""
    data = a9a
    rk = RowKernel(data.X, kernel)
    assert rk.binary and rk.has_duplicates
    rk.BITSETS = path == "bits"
    if path == "index":
        rk.DENSE_BASIS_MAX = 0  # force the inverted index
    rk.BASIS_CHUNK = 16  # several blocks of basis examples
    rng = np.random.default_rng(1)
    rows, basis = rng.choice(data.n_examples, 300), rng.choice(data.n_examples, 70)
    reference = kernel.matrix(data.X[rows], data.X[basis])
    prepared = rk.basis(basis)
    assert prepared.is_dense == (path != "index")
    assert prepared.is_bits == (path == "bits")
    np.testing.assert_allclose(rk.matrix(rows, basis), reference, rtol=1e-12, atol=1e-12)
    beta = rng.standard_normal(len(basis))
    np.testing.assert_allclose(
        rk.times(rows, basis, beta), reference @ beta, rtol=1e-10, atol=1e-10
    )
    np.testing.assert_allclose(
        rk.times(basis, rows, beta[:1] * np.ones(len(rows))),
        reference.T @ (beta[:1] * np.ones(len(rows))),
        rtol=1e-10,
        atol=1e-10,
    )
    assert rk.evaluations == 3 * len(rows) * len(basis)
    assert 0 < rk.computed < rk.evaluations  # repeated examples computed once


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: f"t{k.kind}")
@pytest.mark.parametrize("blas", [True, False], ids=["blas", "numba"])
def test_row_kernel_real_valued_rows_in_several_batches_and_blocks(kernel, blas):
    """Distinct real-valued rows (no sharing), a row count that is not a multiple of the
    batch or task size and a basis in several padded blocks; dense rows by BLAS products
    or by the numba kernels."""
    data = checkerboard(1001, 4)
    rk = RowKernel(data.X, kernel)
    assert not rk.binary and not rk.has_duplicates and rk.dense is not None
    rk.BLAS = blas
    rk.BLAS_BLOCK = 5000  # several blocks of rows
    rk.BASIS_CHUNK = 16
    rng = np.random.default_rng(5)
    rows, basis = rng.permutation(1001)[:777], rng.choice(1001, 37, replace=False)
    reference = kernel.matrix(data.X[rows], data.X[basis])
    np.testing.assert_allclose(rk.matrix(rows, basis), reference, rtol=1e-12, atol=1e-12)
    beta = rng.standard_normal(len(basis))
    np.testing.assert_allclose(
        rk.times(rows, basis, beta), reference @ beta, rtol=1e-10, atol=1e-10
    )
    np.testing.assert_allclose(
        rk.times(None, basis, beta),
        kernel.matrix(data.X, data.X[basis]) @ beta,
        rtol=1e-10,
        atol=1e-10,
    )
    assert rk.computed == rk.evaluations


def test_row_kernel_results_do_not_depend_on_the_thread_count(a9a):
    from cpsvm.threads import max_threads, thread_count

    if max_threads() < 2:
        pytest.skip("one thread only")
    data = a9a
    rng = np.random.default_rng(7)
    basis, beta = rng.choice(data.n_examples, 90), rng.standard_normal(90)
    results = []
    for threads in (1, 2):
        with thread_count(threads):
            for bits in (True, False):
                rk = RowKernel(data.X, Kernel(2, gamma=0.05))
                rk.BITSETS = bits
                results.append(
                    (
                        rk.times(None, basis, beta).tobytes(),
                        rk.matrix(np.arange(700), basis).tobytes(),
                    )
                )
    assert results[0] == results[2] and results[1] == results[3]


def test_vectorized_exp_within_two_ulp_of_numpy():
    from cpsvm.kernel_row_loops import exp_nonpositive

    x = np.concatenate(
        [
            -np.logspace(-300, np.log10(708.0), 200001),
            [0.0, -0.0, -1e-320],
            -np.arange(0, 708.5, 0.5),
        ]
    )
    values, scale = x.copy(), np.empty_like(x)
    exp_nonpositive(values, scale, len(x))
    reference = np.exp(x)
    assert np.all(np.abs(values - reference) <= 2 * np.spacing(reference))
    assert values[200001] == values[200002] == 1.0
    far = np.array([-708.5, -745.0, -1e6])  # clamped to exp(-708) ~ 3e-308
    exp_nonpositive(far, np.empty(3), 3)
    assert np.all((far >= 0) & (far <= 4e-308))


def test_identical_rows_share_kernel_values():
    X = sp.csr_matrix(
        np.array(
            [
                [1.0, 0, 2.0],
                [0, 0, 0],
                [1.0, 0, 2.0],
                [1.0, 0, 2.5],
                [0, 0, 0],
                [0, 1.0, 0],
                [1.0, 0, 2.0],
            ]
        )
    )
    rk = RowKernel(X, Kernel(2, gamma=0.5))
    assert list(rk.distinct) == [0, 1, 3, 5]
    np.testing.assert_allclose(
        rk.matrix(None, [6, 2, 0, 3]), Kernel(2, gamma=0.5).matrix(X, X[[6, 2, 0, 3]]), rtol=1e-14
    )
    assert rk.computed == 4 * 4


def test_row_kernel_test_features_beyond_the_basis_are_ignored():
    """The numba paths (dense basis blocks, inverted index): these rows are dense
    enough for BLAS, which would hold every used feature."""
    X = sp.csr_matrix(np.array([[1.0, 0, 0, 2.0], [0, 1.0, 0, 0], [3.0, 0, 0, 0]]))
    kernel = Kernel(2, gamma=0.3)
    for dense in (True, False):
        rk = RowKernel(X, kernel)
        rk.BLAS = False
        rk.DENSE_BASIS_MAX = 1 << 24 if dense else 0
        assert rk.basis([1, 2]).is_dense == dense
        np.testing.assert_allclose(
            rk.matrix([0, 1, 2], [1, 2]), kernel.matrix(X, X[[1, 2]]), rtol=1e-14
        )


def svmlight_kernel(kernel, A, B):
    """SVMlight's kernel values pair by pair: values stored as float32, each product of
    two rounded to float32, the sums (sprod_ss) in double in index order."""
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)

    def sprod(a, b):
        pairs = dict(zip(b.indices, b.data.astype(np.float32)))
        total = 0.0
        for index, value in zip(a.indices, a.data.astype(np.float32)):
            if index in pairs:
                total += float(np.float32(value) * pairs[index])
        return total

    out = np.empty((A.shape[0], B.shape[0]))
    for i in range(A.shape[0]):
        for j in range(B.shape[0]):
            a, b = A[i], B[j]
            dot = np.array([[sprod(a, b)]])
            out[i, j] = kernel.from_dots(dot, np.array([sprod(a, a)]), np.array([sprod(b, b)]))[
                0, 0
            ]
    return out


def real_valued(n, d, density, seed, values=None):
    rng = np.random.default_rng(seed)
    X = sp.random(
        n,
        d,
        density=density,
        format="csr",
        random_state=seed,
        data_rvs=lambda k: rng.uniform(-1, 1, k) if values is None else rng.choice(values, k),
    )
    return X


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: f"t{k.kind}")
@pytest.mark.parametrize("path", ["dense", "index"])
def test_single_precision_is_svmlight_arithmetic(kernel, path):
    """Values with full float32 mantissas: inner products equal SVMlight's to the bit on
    the numba paths (the BLAS path is never used for them), the kernels within an ulp
    or two; double precision differs."""
    A, B = real_valued(40, 30, 0.3, 1), real_valued(25, 33, 0.3, 2)
    rk_rows = RowKernel(sp.vstack([A, B[:, :30]], format="csr"), kernel, single_precision=True)
    assert rk_rows.single and rk_rows.dense is None
    rk_rows.DENSE_BASIS_MAX = 1 << 24 if path == "dense" else 0
    rows, basis = np.arange(40), 40 + np.arange(25)
    assert rk_rows.basis(basis).is_dense == (path == "dense")
    reference = svmlight_kernel(kernel, A, B[:, :30])
    rtol = 0 if kernel.is_linear else 5e-16  # numpy's pow, exp, tanh are not libm's
    np.testing.assert_allclose(rk_rows.matrix(rows, basis), reference, rtol=rtol, atol=0)
    assert np.max(np.abs(kernel_matrix(kernel, A, B) - reference)) > 1e-9
    np.testing.assert_allclose(
        kernel_matrix(kernel, A, B, single_precision=True), reference, rtol=rtol, atol=0
    )


def test_values_with_few_bits_take_the_fast_paths_with_the_same_results():
    """0/1, small integers and halves: products and sums exact, so BLAS (dense data) or
    bitsets give SVMlight's values to the bit."""
    assert _exact_products(np.array([1.0, 1.0]), 120)
    assert _exact_products(np.array([0.5, 3.0, -2.0, 1.5, 7.0]), 100)
    assert not _exact_products(np.array([0.708333, 1.0]), 10)
    assert not _exact_products(np.array([1.0, 2.0**14]), 10)  # 15 bits a product side
    A = real_valued(60, 8, 0.9, 3, values=[0.5, 1.0, 1.5, 2.0, -3.0])
    B = real_valued(20, 8, 0.9, 4, values=[0.5, 1.0, 1.5, 2.0, -3.0])
    for kernel, rtol in ((Kernel(0), 0), (Kernel(2, gamma=0.3), 5e-16)):
        rk, rows, basis = stacked(kernel, A, B, single_precision=True)
        assert not rk.single and rk.dense is not None
        np.testing.assert_allclose(
            rk.matrix(rows, basis), svmlight_kernel(kernel, A, B), rtol=rtol, atol=0
        )


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: f"t{k.kind}")
def test_two_matrices_and_the_kernel_model(kernel):
    """kernel_times / KernelModel with test rows wider and narrower than the support
    vectors (extra features ignored, missing ones zero), dense and sparse data."""
    for density in (0.9, 0.05):
        A, B = real_valued(300, 50, density, 5), real_valued(45, 40, density, 6)
        coef = np.random.default_rng(7).standard_normal(45)
        reference = kernel.matrix(A[:, :40], B) @ coef
        np.testing.assert_allclose(
            kernel_times(kernel, A[:, :40], B, coef, block_rows=64),
            reference,
            rtol=1e-10,
            atol=1e-10,
        )
        model = KernelModel(B, coef, 0.25, kernel)
        np.testing.assert_allclose(
            model.decision_function(A), reference - 0.25, rtol=1e-10, atol=1e-10
        )
        narrow = A[:, :30]
        np.testing.assert_allclose(
            model.decision_function(narrow),
            kernel.matrix(A[:, :40].multiply(np.arange(40) < 30), B) @ coef - 0.25,
            rtol=1e-10,
            atol=1e-10,
        )


def test_row_sq_norms():
    X = sp.csr_matrix(np.array([[0.1, 0.0, 3.0], [0.0, 0.0, 0.0]]))
    np.testing.assert_array_equal(row_sq_norms(X), [0.1 * 0.1 + 9.0, 0.0])
    single = row_sq_norms(X, single_precision=True)
    assert single[0] == float(np.float32(0.1 * 0.1)) + 9.0 and single[0] != 0.1 * 0.1 + 9.0


# -- the kernel learners: exact cuts (cp_learn -t), sampled cuts, Nyström (--t 1) -------


def kernel_svm_optimum(K, y, upper):
    """min_v ½ vᵀKv + Σ_i upper_i·max(0, 1 − y_i (Kv)_i) (no bias), as its dual
    max Σα − ½ αᵀ(yyᵀ∘K)α, 0 ≤ α ≤ upper, by quadprog (an independent reference)."""
    import quadprog

    n = len(y)
    Q = np.outer(y, y) * K + 1e-9 * np.eye(n)
    bounds = np.hstack([np.eye(n), -np.eye(n)])
    alpha = quadprog.solve_qp(Q, np.ones(n), bounds, np.concatenate([np.zeros(n), -upper]))[0]
    return alpha.sum() - 0.5 * alpha @ (np.outer(y, y) * K) @ alpha


def model_objective(model, data, upper, scale=1.0):
    """½|w|² + Σ upper_i·hinge of the model's decision values times ``scale``, from
    Kernel.matrix."""
    coef = scale * model.coef
    K_sv = model.kernel.matrix(model.support_vectors, model.support_vectors)
    f = model.kernel.matrix(data.X, model.support_vectors) @ coef
    return 0.5 * coef @ K_sv @ coef + upper @ np.maximum(0.0, 1.0 - data.y * f)


def weighted_checkerboard(seed, n=40):
    data = checkerboard(n, seed, noise=0.1)
    data.cost = np.random.default_rng(seed).choice([1.0, 3.0, 10.0], n)
    return data


@pytest.mark.parametrize("learner", ["exact", "const", "linear"])
def test_costs_weight_each_examples_slack(learner):
    """SVMlight's cost:k multiplies example i's C: the model reaches the optimum of
    ½|w|² + C_light·Σ cost_i·hinge_i (quadprog's), within the 1-slack guarantee C·ε.
    Before, costs were ignored: the objective missed it by far more."""
    from cpsvm.solvers.one_slack import StructParams
    from cpsvm.solvers.one_slack import train as train_exact
    from cpsvm.solvers.sampled import SampledParams
    from cpsvm.solvers.sampled import train as train_sampled

    kernel, C, eps = Kernel(2, gamma=3.0), 20.0, 1e-3
    for seed in range(2):
        data = weighted_checkerboard(seed)
        upper = C * 100 / data.n_examples * data.cost
        optimum = kernel_svm_optimum(kernel.matrix(data.X, data.X), data.y, upper)
        if learner == "exact":
            model, _ = train_exact(data, StructParams(C=C, epsilon=eps, kernel=kernel))
        else:
            model, _ = train_sampled(
                data,
                SampledParams(C=C, epsilon=eps, kernel=kernel, algorithm=learner, sample_size=50),
            )
        objective = model_objective(model, data, upper)
        assert optimum - 1e-6 <= objective <= optimum + C * eps * 1.001 + 1e-6


def test_cost_k_trains_like_k_copies(cli, tmp_path):
    """From the file to the model: an example with cost:3 gives the model of a file in
    which it appears three times (at the same C_light), cp_learn -t 2 and sampled_learn."""
    data = checkerboard(30, 8, noise=0.1)
    lines = [f"{y:+g} 1:{x[0]:.6f} 2:{x[1]:.6f}" for x, y in zip(data.X.toarray(), data.y)]
    weighted = tmp_path / "weighted"
    weighted.write_text(
        "".join(
            f"{line.split(' ', 1)[0]} cost:3 {line.split(' ', 1)[1]}\n"
            if i % 4 == 0
            else line + "\n"
            for i, line in enumerate(lines)
        )
    )
    copies = tmp_path / "copies"
    copies.write_text(
        "".join((line + "\n") * (3 if i % 4 == 0 else 1) for i, line in enumerate(lines))
    )
    n_copies = 30 + 2 * len(range(0, 30, 4))
    test = read_svmlight(weighted).X
    for command in ("learn", "sampled"):
        decisions = []
        for path, n in ((weighted, 30), (copies, n_copies)):
            # The same C_light = 5: C = C_light·n/100.
            run = cli(
                command,
                "-v",
                "0",
                "-c",
                5 * n / 100,
                "-e",
                "1e-4",
                "-t",
                "2",
                "-g",
                "3",
                *(["--r", "100"] if command == "sampled" else []),
                path,
                tmp_path / "m",
            )
            assert run.returncode == 0, run.stderr
            decisions.append(read_model(tmp_path / "m").decision_function(test))
        np.testing.assert_allclose(decisions[0], decisions[1], atol=0.02)


def test_kernel_with_slack_rescaling_is_the_hinge_svm_at_10000_times_c_light():
    """cp_learn -t 2 -o 1: Δ = 100 and δΨ = 100·y·φ(x), so the slack-rescaled 1-slack
    problem in v = 100·w is the hinge SVM with C_light = C·10⁶/n (quadprog's optimum),
    within 10⁴·C·ε."""
    from cpsvm.solvers.one_slack import StructParams, train

    kernel, eps = Kernel(2, gamma=3.0), 1e-3
    for seed in range(2):
        data = checkerboard(40, seed, noise=0.1)
        C = 5.0 * data.n_examples / 1e6
        upper = np.full(data.n_examples, C * 1e6 / data.n_examples)
        optimum = kernel_svm_optimum(kernel.matrix(data.X, data.X), data.y, upper)
        model, info = train(data, StructParams(C=C, epsilon=eps, kernel=kernel, rescaling=1))
        assert info.result.status == "converged"
        objective = model_objective(model, data, upper, scale=100.0)
        assert optimum - 1e-6 <= objective <= optimum + 1e4 * C * eps * 1.001


def test_nystrom_basis_from_a_file(cli, tmp_path):
    """cp_learn --t 1 --f FILE --k m: the basis is FILE's examples (all of them when
    m ≥ its size); the model is the optimum of the linear SVM on the Nyström features
    of that basis, K_XB K_BB⁻¹ K_BX as kernel (quadprog), within C·ε."""
    data = checkerboard(60, 11, noise=0.1)
    basis = checkerboard(15, 12, noise=0.1)
    write = lambda path, d: path.write_text(
        "".join(  # noqa: E731
            f"{y:+g} 1:{x[0]:.17g} 2:{x[1]:.17g}\n" for x, y in zip(d.X.toarray(), d.y)
        )
    )
    write(tmp_path / "train", data)
    write(tmp_path / "basis", basis)
    kernel, C, eps = Kernel(2, gamma=3.0), 30.0, 1e-3
    run = cli(
        "learn",
        "-v",
        "0",
        "-c",
        C,
        "-e",
        eps,
        "-t",
        "2",
        "-g",
        "3",
        "--t",
        "1",
        "--k",
        "100",
        "--f",
        tmp_path / "basis",
        tmp_path / "train",
        tmp_path / "m",
    )
    assert run.returncode == 0, run.stderr
    model = read_model(tmp_path / "m")
    sv = {tuple(row) for row in model.support_vectors.toarray()}
    assert sv == {tuple(row) for row in basis.X.toarray()}
    K_xb, K_bb = kernel.matrix(data.X, basis.X), kernel.matrix(basis.X, basis.X)
    upper = np.full(data.n_examples, C * 100 / data.n_examples)
    optimum = kernel_svm_optimum(K_xb @ np.linalg.solve(K_bb, K_xb.T), data.y, upper)
    assert optimum - 1e-4 <= model_objective(model, data, upper) <= optimum + C * eps * 1.01


@pytest.mark.parametrize("full_matrix", [True, False])
def test_exact_kernel_cuts_built_from_the_previous_cut(full_matrix):
    """KernelCutOracle's cut rows A = K[:, flipped]·β, whether computed afresh or as the
    previous cut plus the examples that changed sides, against Kernel.matrix; with
    costs. Dense rows: the BLAS path when the matrix is not kept."""
    from cpsvm.engine.oracles import KernelCutOracle

    data = weighted_checkerboard(5, n=300)
    kernel = Kernel(2, gamma=3.0)
    oracle = KernelCutOracle(data.X, data.y, kernel, costs=data.cost)
    if not full_matrix:
        oracle.full_matrix = None
        assert oracle.rows.dense is not None
    K = kernel.matrix(data.X, data.X)
    rng = np.random.default_rng(0)
    updated = 0
    for step in range(12):
        alpha = rng.random(oracle._A.size) * 0.02 / (1 + step)
        c, (flipped, beta, A_new) = oracle.separate(alpha)
        scores = oracle.scores(alpha)
        np.testing.assert_array_equal(flipped, np.flatnonzero(data.y * scores < 1.0))
        np.testing.assert_allclose(beta, 100 * data.y[flipped] * data.cost[flipped] / 300)
        assert c == pytest.approx(100 * data.cost[flipped].sum() / 300)
        np.testing.assert_allclose(A_new, K[:, flipped] @ beta, rtol=1e-10, atol=1e-12)
        updated += oracle._last[2] > 0
        oracle.add((flipped, beta, A_new))
    assert updated > 0  # some cuts were built from the previous one
