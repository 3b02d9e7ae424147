"""cp_learn against independent references: a brute-force primal QP over all
constraints (scipy SLSQP), scikit-learn's LinearSVC and SVC, and n-slack vs 1-slack."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import ROOT, brute_force, crammer_singer_objective, hinge_objective, interrupt_cli
from scipy.optimize import minimize
from sklearn.svm import SVC, LinearSVC

from cpsvm.data import Dataset
from cpsvm.io.model_file import read_model
from cpsvm.io.svmlight import read_svmlight
from cpsvm.kernels import Kernel
from cpsvm.models import MulticlassModel, UserProblemModel, fit_columns
from cpsvm.problems import PerExampleProblem
from cpsvm.problems.user import predict_user_problem
from cpsvm.solvers.one_slack import StructParams, train


def tiny_binary(seed, n=8, d=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * 0.02
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    y[:2] = [1.0, -1.0]
    return Dataset(sp.csr_matrix(X), y)


def tiny_multiclass(seed, n=7, d=3, k=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.integers(1, k + 1, n).astype(float)
    y[:k] = np.arange(1, k + 1)
    return Dataset(sp.csr_matrix(X), y)


def enumerate_constraints(problem, rescaling, labels_of):
    """Every (example, label) constraint of the n-slack problem, from the problem's Ψ, Δ."""
    out = []
    for i in range(problem.n_examples):
        for label in labels_of:
            ybar = np.array([label])
            loss = float(problem.losses(ybar, [i])[0])
            delta = problem.delta_psi_sum([1.0], ybar, [i])
            out.append((i, loss, delta * (loss if rescaling == 1 else 1.0)))
    return out


@pytest.mark.parametrize("rescaling", [1, 2])
@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_tiny_problems_match_brute_force(kind, rescaling):
    from cpsvm.problems.binary.problem import BinaryProblem
    from cpsvm.problems.multiclass.problem import MulticlassProblem

    for seed in range(3):
        if kind == "binary":
            data, labels, C = tiny_binary(seed), [-1.0, 1.0], 5.0
            problem = BinaryProblem(data.X, data.y, bias=0.0)
        else:
            data, labels, C = tiny_multiclass(seed), [1, 2, 3], 50.0
            problem = MulticlassProblem(data.X, data.y)
        constraints = enumerate_constraints(problem, rescaling, labels)
        optimum = brute_force(constraints, problem.n_examples, problem.size_psi, C)
        eps = 1e-3
        for algorithm in (0, 2, 3, 4, 9):
            model, info = train(
                data,
                StructParams(
                    C=C,
                    epsilon=eps,
                    algorithm=algorithm,
                    rescaling=rescaling,
                    problem=kind,
                    options={"bias": 0.0} if kind == "binary" else {},
                ),
            )
            assert info.result.status == "converged"
            # The returned w is feasible with ξ = its true slack: primal ≥ optimum, and
            # 1-slack guarantees primal ≤ optimum + C·ε (n-slack: mean slack, likewise).
            assert optimum - 1e-7 * abs(optimum) - 1e-9 <= info.result.primal
            assert info.result.primal <= optimum + C * eps + 1e-7 * abs(optimum), (
                algorithm,
                info.result.primal,
                optimum,
            )
            assert info.result.dual <= optimum + 1e-7 * abs(optimum) + 1e-9


def test_tiny_binary_margin_rescaling_is_the_hinge_svm():
    """Independent of the problem's own Ψ/Δ: the SVMlight objective at C_light = 100C/n."""
    data = tiny_binary(7, n=10)
    C = 4.0
    C_light = C * 100 / 10
    w0 = minimize(
        lambda w: hinge_objective(w, data.X.toarray(), data.y, C_light),
        np.zeros(3),
        method="Nelder-Mead",
        options={"xatol": 1e-12, "fatol": 1e-12, "maxiter": 40000},
    ).x
    reference = hinge_objective(w0, data.X.toarray(), data.y, C_light)
    model, info = train(data, StructParams(C=C, epsilon=1e-4, options={"bias": 0.0}))
    ours = hinge_objective(model.w, data.X.toarray(), data.y, C_light)
    assert ours == pytest.approx(info.result.primal, rel=1e-9)
    assert reference - 1e-6 <= ours <= reference + C * 1e-4 + 1e-6


@pytest.fixture(scope="module")
def a9a(samples_dir=ROOT / "data" / "samples"):
    return read_svmlight(samples_dir / "a9a3k.train"), read_svmlight(samples_dir / "a9a2k.test")


def _int32(X):
    X = sp.csr_matrix(X)
    return sp.csr_matrix(
        (X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape
    )


def test_binary_linear_matches_linearsvc(a9a):
    train_data, _ = a9a
    n, C_light = train_data.n_examples, 1.0
    svc = LinearSVC(loss="hinge", fit_intercept=False, tol=1e-8, max_iter=10**6, C=C_light)
    svc.fit(_int32(train_data.X), train_data.y)
    optimum = hinge_objective(svc.coef_.ravel(), train_data.X, train_data.y, C_light)
    C = C_light * n / 100
    results = {}
    for algorithm in (3, 4, 9):
        model, info = train(
            train_data, StructParams(C=C, algorithm=algorithm, options={"bias": 0.0})
        )
        ours = hinge_objective(
            fit_columns(model.w[None, :], train_data.n_features).toarray().ravel(),
            train_data.X,
            train_data.y,
            C_light,
        )
        assert ours == pytest.approx(info.result.primal, rel=1e-9)
        assert optimum - 1e-6 * optimum <= ours <= optimum + C * 0.1
        results[algorithm] = info.result
    # -w 4 reaches the same guarantee with far fewer oracle calls, -w 9 (OCAS's line
    # search) with far fewer iterations.
    assert results[4].oracle_calls < results[3].oracle_calls / 5
    assert results[9].iterations < results[3].iterations / 3


@pytest.mark.parametrize("algorithm, used", [(None, 5), (9, 9), (5, 5)])
def test_multiclass_matches_crammer_singer(samples, algorithm, used):
    """The default (dual coordinate descent), OCAS's line search and -w 5 forced: each
    within its reported tolerance of LinearSVC's Crammer-Singer optimum."""
    data = read_svmlight(samples / "dna1k.train")
    n, C_cs = data.n_examples, 0.01
    svc = LinearSVC(
        multi_class="crammer_singer", fit_intercept=False, tol=1e-8, max_iter=10**6, C=C_cs
    ).fit(_int32(data.X), data.y)
    optimum = crammer_singer_objective(svc.coef_, data.X, data.y, C_cs)
    C = 100 * n * C_cs
    model, info = train(data, StructParams(C=C, epsilon=0.01, algorithm=algorithm))
    assert info.problem == "multiclass" and info.algorithm == used
    ours = crammer_singer_objective(model.W / 100, data.X, data.y, C_cs)
    assert ours == pytest.approx(info.result.primal / 1e4, rel=1e-9)
    assert optimum - 1e-6 * optimum <= ours <= optimum + C * 0.01 / 1e4


def test_rbf_kernel_and_nystrom_match_svc_accuracy(a9a):
    train_data, test_data = a9a
    train_data = train_data.subset(slice(0, 2000))
    gamma, C_light = 0.05, 1.0
    n = train_data.n_examples
    svc = SVC(C=C_light, gamma=gamma).fit(train_data.X, train_data.y)
    X_test = fit_columns(test_data.X, train_data.n_features)
    reference = np.mean(svc.predict(X_test) == test_data.y)
    kernel = Kernel(2, gamma=gamma)
    for basis_method in (0, 1):
        model, info = train(
            train_data,
            StructParams(
                C=C_light * n / 100,
                kernel=kernel,
                options={"basis_method": basis_method, "basis_size": 500},
            ),
        )
        accuracy = np.mean(model.predict(test_data.X) == test_data.y)
        assert abs(accuracy - reference) <= 0.01, (basis_method, accuracy, reference)


def test_exact_kernel_one_slack_equals_linear_on_linear_kernel():
    """-t 1 with d=1, s=1, r=0 is the linear kernel: both routes reach the same optimum."""
    data = tiny_binary(3, n=12)
    C = 3.0
    linear, info_linear = train(data, StructParams(C=C, epsilon=1e-5, options={"bias": 0.0}))
    poly, info_poly = train(
        data, StructParams(C=C, epsilon=1e-5, kernel=Kernel(1, 1, 1.0, 1.0, 0.0))
    )
    assert info_poly.result.primal == pytest.approx(info_linear.result.primal, abs=C * 1e-5)
    np.testing.assert_allclose(
        poly.decision_function(data.X), linear.decision_function(data.X), atol=1e-3
    )


class PerExampleMulticlass(PerExampleProblem):
    """Crammer-Singer written the slow, obvious way, as a user would."""

    def __init__(self, dataset):
        self.X = dataset.X.toarray()
        self.y = dataset.y.astype(int)
        self.k = int(self.y.max())
        self.d = self.X.shape[1]
        self.n_examples = len(self.y)
        self.size_psi = self.k * self.d

    def true_label(self, i):
        return self.y[i]

    def psi(self, i, label):
        out = np.zeros(self.size_psi)
        out[(label - 1) * self.d : label * self.d] = self.X[i]
        return out

    def loss(self, i, label):
        return 100.0 * (label != self.y[i])

    def most_violated(self, i, w, rescaling):
        values = [
            self.loss(i, c) - w @ (self.psi(i, self.y[i]) - self.psi(i, c))
            for c in range(1, self.k + 1)
        ]
        return int(np.argmax(values)) + 1

    def classify(self, x, w):
        return int(np.argmax(w.reshape(self.k, self.d) @ x)) + 1


def test_user_problem_plugs_in():
    data = tiny_multiclass(5, n=9)
    builtin, info_builtin = train(data, StructParams(C=50.0, epsilon=1e-3, algorithm=9))
    user, info_user = train(
        data, StructParams(C=50.0, epsilon=1e-3, problem="test_cp_learn:PerExampleMulticlass")
    )
    assert info_user.problem == "user"
    assert info_user.result.primal == pytest.approx(info_builtin.result.primal, abs=50 * 1e-3)
    # The problem decides its model: its own kind, predicting through the class.
    assert isinstance(user, UserProblemModel) and isinstance(builtin, MulticlassModel)
    assert user.spec == "test_cp_learn:PerExampleMulticlass" and user.size_psi == 9
    assert predict_user_problem(user, data) == list(builtin.predict(data.X))


# -- command line ------------------------------------------------------------------------


def test_cli_trains_and_classifies(cli, samples, tmp_path):
    model = tmp_path / "m"
    trace = tmp_path / "trace.tsv"
    run = cli("learn", "-c", "30", "--trace", trace, samples / "a9a3k.train", model)
    assert run.returncode == 0, run.stderr
    assert "Problem: binary" in run.stdout and "Primal objective value: pval=" in run.stdout
    rows = trace.read_text().splitlines()
    assert rows[0].split("\t")[:3] == ["iteration", "primal", "dual"] and len(rows) > 3
    assert model.read_text().startswith("SVM-light Version V6.20\n")
    run = cli("classify", "-v", "1", samples / "a9a2k.test", model, tmp_path / "p")
    accuracy = float(run.stdout.split("Accuracy on test set: ")[1].split("%")[0])
    assert accuracy > 80.0


def test_same_model_bytes_for_any_thread_count(cli, samples, tmp_path):
    outputs = []
    for threads in (1, 2):
        for name, data in (("bin", "a9a3k.train"), ("mc", "dna1k.train")):
            path = tmp_path / f"{name}{threads}"
            run = cli(
                "learn",
                "-v",
                "0",
                "-c",
                "10",
                "-e",
                "1",
                "--threads",
                threads,
                samples / data,
                path,
            )
            assert run.returncode == 0, run.stderr
            outputs.append(path.read_bytes())
    assert outputs[0] == outputs[2] and outputs[1] == outputs[3]


def test_same_seed_same_nystrom_model(cli, samples, tmp_path):
    paths = []
    for seed in (5, 5, 6):
        path = tmp_path / f"m{len(paths)}"
        run = cli(
            "learn",
            "-v",
            "0",
            "-c",
            "10",
            "-t",
            "2",
            "-g",
            "0.05",
            "--t",
            "1",
            "--k",
            "50",
            "--i",
            "0",
            "--seed",
            seed,
            samples / "a9a2k.test",
            path,
        )
        assert run.returncode == 0, run.stderr
        paths.append(path.read_bytes())
    assert paths[0] == paths[1] != paths[2]


@pytest.mark.parametrize(
    "args, data, expected",
    [
        (["-c", "0"], "a9a3k.train", "C > 0"),
        (["-c", "-1"], "a9a3k.train", "C > 0"),
        (["-c", "1", "-e", "0"], "a9a3k.train", "epsilon > 0"),
        (["-c", "1", "-w", "7"], "a9a3k.train", "-w 0, 1, 2, 3, 4, 5 or 9"),
        (["-c", "1", "-w", "5", "-t", "2"], "a9a3k.train", "-w 5 (dual coordinate descent)"),
        (["-c", "1", "-w", "5", "-l", "1"], "a9a3k.train", "-w 5 (dual coordinate descent)"),
        (["-c", "1", "-w", "5", "-o", "1"], "dna1k.train", "-w 5 (dual coordinate descent)"),
        (["-c", "1", "-w", "5", "--margin-bounds", "1"], "a9a3k.train", "with -w 5"),
        (["-c", "1", "--problem", "binary"], "dna1k.train", "binary targets"),
        ([], "a9a3k.train", "-c"),
        (["-c", "1", "--i", "2"], "a9a3k.train", "not supported"),
        (["-c", "1", "-t", "2", "-g", "0"], "a9a3k.train", "gamma > 0"),
    ],
)
def test_bad_options(cli, samples, tmp_path, args, data, expected):
    model = tmp_path / "m"
    run = cli("learn", *args, samples / data, model)
    assert run.returncode != 0
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    assert expected in run.stderr
    assert not model.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1 1:1\n2 2:1\n0 1:1\n", ":3: expected class labels 1..k"),
        # 0/1 labels (mushrooms, svmguide1): the line says what a binary problem needs.
        (
            "0 1:1\n1 2:1\n1 1:1\n",
            ":1: expected class labels 1..k (integers), got target 0 "
            "(binary problems need targets +1/-1; 0/1 labels: map 0 to -1)",
        ),
        ("1 1:1\n2 2:1\n1.5 1:1\n", ":3: expected class labels 1..k"),
        ("1 1:1\n1 2:1\n", "expected examples of both classes"),
    ],
)
def test_bad_labels(cli, tmp_path, text, expected):
    data, model = tmp_path / "d", tmp_path / "m"
    data.write_text(text)
    run = cli("learn", "-c", "1", data, model)
    assert run.returncode == 1 and expected in run.stderr and not model.exists()
    assert run.stderr.strip().count("\n") == 0


def test_bias_with_a_kernel_is_refused_as_svmperf_does(cli, samples, tmp_path):
    # svm_perf_learn -t 2 --b 1: "The value of option --b must be zero when kernels are used."
    model = tmp_path / "m"
    for args in (
        ["-t", "2", "--b", "1"],
        ["-t", "1", "--b", "0.5"],
        ["-t", "2", "--t", "1", "--k", "20", "--b", "1"],
    ):
        run = cli("learn", "-c", "1", *args, samples / "a9a2k.test", model)
        assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
        assert "needs the linear kernel" in run.stderr and not model.exists()
    # Left unset it is no bias with a kernel, and 1 with the linear kernel.
    head = tmp_path / "d"
    head.write_text("".join(open(samples / "a9a2k.test").readlines()[:200]))
    for args, dim in (
        (["-t", "2", "-g", "0.05"], None),
        (["--b", "0", "-t", "2"], None),
        ([], 123),
    ):
        run = cli("learn", "-v", "0", "-c", "1", *args, head, model)
        assert run.returncode == 0, run.stderr
        restored = read_model(model)
        if dim is None:
            assert restored.b == 0.0 and restored.support_vectors.shape[1] <= 123
        else:
            assert restored.b != 0.0  # the bias feature's weight, folded into b


def test_ctrl_c_writes_a_valid_model_and_exits_130(samples, tmp_path):
    model, trace = tmp_path / "m", tmp_path / "t.tsv"
    code, out, err = interrupt_cli(
        "learn",
        [
            "-c",
            "1000",
            "-e",
            "1e-9",
            "-#",
            "1000000",
            "--trace",
            trace,
            samples / "a9a3k.train",
            model,
        ],
        trace,
    )
    assert code == 130, err
    assert "interrupted at iteration" in err and "Traceback" not in err
    restored = read_model(model)
    assert restored.w.shape[0] >= 122
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_margin_bounds_flag(cli, samples, tmp_path):
    """--margin-bounds 0|1: the same model either way (tests/engine/test_margin_bounds.py has
    the runs), anything else a usage error."""
    model = tmp_path / "m"
    run = cli("learn", "-c", "1", "--margin-bounds", "2", samples / "a9a2k.test", model)
    assert run.returncode == 2 and "--margin-bounds 0 or 1" in run.stderr
    assert run.stderr.count("\n") == 1 and not model.exists()
    objectives = []
    for flag in ("0", "1"):
        run = cli(
            "learn", "-c", "10", "-w", "9", "--margin-bounds", flag, samples / "a9a2k.test", model
        )
        assert run.returncode == 0, run.stderr
        line = [ln for ln in run.stdout.splitlines() if ln.startswith("SVMlight scale")][0]
        objectives.append(float(line.rsplit("=", 1)[1]))
    assert objectives[1] == pytest.approx(objectives[0], rel=1e-9)


def test_the_default_algorithm_follows_the_problem(samples):
    """-w not given: 5 (dual coordinate descent) for multiclass, and for binary while the
    mean C_i·|x_i|² of the plain hinge is at most DCD_CONDITION (a9a3k, bias 1: |x_i|² =
    15, C_i = C·100/n), else 9; ranking keeps 9."""
    from cpsvm.solvers.one_slack import DCD_CONDITION

    data = read_svmlight(samples / "a9a3k.train")
    n = data.n_examples
    threshold = DCD_CONDITION / 15 * n / 100  # -c at which the mean reaches it
    for C, used in ((0.9 * threshold, 5), (1.1 * threshold, 9)):
        _, info = train(data.subset(slice(0, n)), StructParams(C=C, max_iterations=3))
        assert info.algorithm == used
    _, info = train(read_svmlight(samples / "dna1k.train"), StructParams(C=1e4))
    assert info.algorithm == 5
    _, info = train(read_svmlight(samples / "toy.rank.train"), StructParams(C=1.0))
    assert info.algorithm == 9
