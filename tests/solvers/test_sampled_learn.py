"""sampled_learn against independent references: the exact 1-slack kernel solution of
cp_learn's solver, the SVMlight objective recomputed from the model with
Kernel.matrix and scikit-learn's SVC (the kernel rows: tests/test_kernel_rows.py)."""

import numpy as np
import pytest
from conftest import ROOT, checkerboard, interrupt_cli
from sklearn.svm import SVC

from cpsvm.cli.sampled import main
from cpsvm.io.model_file import read_model
from cpsvm.io.svmlight import read_svmlight
from cpsvm.kernels import Kernel
from cpsvm.solvers.one_slack import StructParams
from cpsvm.solvers.one_slack import train as train_exact
from cpsvm.solvers.sampled import SampledParams, train


@pytest.fixture(scope="module")
def a9a():
    samples = ROOT / "data" / "samples"
    train_data = read_svmlight(samples / "a9a3k.train")
    return train_data, read_svmlight(samples / "a9a2k.test", n_features=train_data.n_features)


def svmlight_objective(model, data, C):
    """½|w|² + C_light Σ hinge of a kernel model, from Kernel.matrix (b = 0)."""
    K = model.kernel.matrix(data.X, model.support_vectors)
    sv_K = model.kernel.matrix(model.support_vectors, model.support_vectors)
    scores = K @ model.coef
    C_light = C * 100 / data.n_examples
    return 0.5 * model.coef @ sv_K @ model.coef + C_light * np.maximum(
        0.0, 1.0 - data.y * scores
    ).sum(), scores


# -- the algorithms -----------------------------------------------------------------------


@pytest.mark.parametrize("algorithm", ["const", "linear"])
@pytest.mark.parametrize(
    "kernel", [Kernel(2, gamma=3.0), Kernel(1, 2, 1.0, 1.0, 1.0)], ids=["rbf", "poly"]
)
def test_tiny_problems_reach_the_exact_one_slack_solution(algorithm, kernel):
    """r >= n: the cuts are exact, so both algorithms are cp_learn -t's 1-slack algorithm
    and reach its optimum within C·ε (and the same w, hence decision values)."""
    C, eps = 20.0, 1e-3
    for seed in range(3):
        data = checkerboard(40, seed, noise=0.1)
        exact, exact_info = train_exact(data, StructParams(C=C, epsilon=eps, kernel=kernel))
        model, info = train(
            data,
            SampledParams(
                C=C, epsilon=eps, kernel=kernel, algorithm=algorithm, sample_size=50, seed=seed
            ),
        )
        assert info.result.status == "converged" and not info.primal_is_estimate
        objective, scores = svmlight_objective(model, data, C)
        assert objective == pytest.approx(info.result.primal, rel=1e-9)
        reference, _ = svmlight_objective(exact, data, C)
        assert reference == pytest.approx(exact_info.result.primal, rel=1e-9)
        # Both primal values lie in [optimum, optimum + C·ε].
        assert abs(objective - reference) <= C * eps * (1 + 1e-9)
        # ½|w − w*|² <= P(w) − P(w*) for both: |f − f*| <= 2·sqrt(2Cε)·|φ(x)|.
        sq_norms = np.array(
            [float(kernel.matrix(data.X[i], data.X[i])[0, 0]) for i in range(data.n_examples)]
        )
        bound = 2 * np.sqrt(2 * C * eps) * np.sqrt(sq_norms)
        assert np.all(np.abs(scores - exact.decision_function(data.X)) <= bound + 1e-9)


@pytest.mark.parametrize("algorithm", ["const", "linear"])
def test_a9a_accuracy_close_to_svc(a9a, algorithm):
    """r = 400 of 3000 examples: test accuracy within 1 point of libsvm's at the
    equivalent C and gamma; linear-time's exact primal near the exact optimum."""
    train_data, test_data = a9a
    gamma, C_light = 0.05, 1.0
    n = train_data.n_examples
    svc = SVC(C=C_light, gamma=gamma).fit(train_data.X, train_data.y)
    reference = np.mean(svc.predict(test_data.X) == test_data.y)
    C = C_light * n / 100
    model, info = train(
        train_data,
        SampledParams(C=C, kernel=Kernel(2, gamma=gamma), algorithm=algorithm, sample_size=400),
    )
    accuracy = np.mean(model.predict(test_data.X) == test_data.y)
    assert abs(accuracy - reference) <= 0.01, (accuracy, reference)
    assert info.primal_is_estimate == (algorithm == "const")
    assert info.result.status == "converged"
    if algorithm == "const":
        # It stops only after p = 4 draws in a row that cut nothing (none is added).
        assert info.result.iterations >= info.result.cuts_added + 4
    if algorithm == "linear":
        # The exact stop test certifies a feasible w: its primal is exact. It cannot be
        # below the optimum, and sampled cuts leave it a little above.
        objective, _ = svmlight_objective(model, train_data, C)
        assert objective == pytest.approx(info.result.primal, rel=1e-9)
        _, exact_info = train_exact(
            train_data, StructParams(C=C, epsilon=0.1, kernel=Kernel(2, gamma=gamma))
        )
        optimum_lower = exact_info.result.primal - C * 0.1
        assert optimum_lower <= objective <= 1.05 * exact_info.result.primal


def test_constant_time_work_does_not_grow_with_n():
    """The paper's measure: kernel evaluations for a fixed number of iterations stay the
    same for 10x the examples with const, and grow 10x with linear."""
    counts = {}
    for n in (2000, 20000):
        data = checkerboard(n, 0)
        for algorithm in ("const", "linear"):
            _, info = train(
                data,
                SampledParams(
                    C=n / 10,
                    kernel=Kernel(2, gamma=20.0),
                    algorithm=algorithm,
                    sample_size=100,
                    max_iterations=12,
                    epsilon=1e-9,
                ),
            )
            assert info.result.iterations == 12
            counts[algorithm, n] = info.kernel_evaluations
    assert counts["const", 20000] < 1.5 * counts["const", 2000]
    assert counts["linear", 20000] > 5 * counts["linear", 2000]
    assert counts["const", 20000] < counts["linear", 20000] / 5


def test_the_model_lists_each_basis_example_once():
    """Violators stay violators, so examples recur in many cuts: the model merges them
    (all points of a checkerboard are distinct)."""
    data = checkerboard(600, 3)
    for algorithm in ("const", "linear"):
        model, info = train(
            data,
            SampledParams(
                C=60.0, kernel=Kernel(2, gamma=20.0), algorithm=algorithm, sample_size=100
            ),
        )
        assert info.result.cuts_added > 5
        sv = model.support_vectors.toarray()
        assert len(np.unique(sv, axis=0)) == len(sv) == info.n_sv
        assert np.all(model.coef != 0)


# -- command line -------------------------------------------------------------------------


def test_cli_trains_and_cp_classify_reads_the_model(cli, samples, tmp_path):
    model, trace = tmp_path / "m", tmp_path / "trace.tsv"
    run = cli(
        "sampled",
        "-c",
        "30",
        "-t",
        "2",
        "-g",
        "0.05",
        "--trace",
        trace,
        samples / "a9a3k.train",
        model,
    )
    assert run.returncode == 0, run.stderr
    assert "Algorithm: linear-time" in run.stdout and "Number of kernel evaluations: " in run.stdout
    evaluations = int(run.stdout.split("Number of kernel evaluations: ")[1].split()[0])
    rows = trace.read_text().splitlines()
    assert rows[0].split("\t")[-1] == "kernel_evaluations" and len(rows) > 3
    assert int(rows[-1].split("\t")[-1]) <= evaluations
    assert model.read_text().startswith("SVM-light Version V6.20\n2 # kernel type\n")
    run = cli("classify", "-v", "1", samples / "a9a2k.test", model, tmp_path / "p")
    accuracy = float(run.stdout.split("Accuracy on test set: ")[1].split("%")[0])
    assert accuracy > 81.0


@pytest.mark.parametrize("algorithm", ["const", "linear"])
def test_same_seed_same_model_bytes_for_any_thread_count(cli, samples, tmp_path, algorithm):
    small = tmp_path / "small"
    small.write_text("".join((samples / "a9a3k.train").read_text().splitlines(True)[:600]))
    outputs = []
    for seed, threads in ((5, 1), (5, 2), (6, 2)):
        path = tmp_path / f"m{seed}{threads}"
        run = cli(
            "sampled",
            "-v",
            "0",
            "-c",
            "6",
            "-t",
            "2",
            "-g",
            "0.05",
            "--r",
            "100",
            "--algorithm",
            algorithm,
            "--seed",
            seed,
            "--threads",
            threads,
            small,
            path,
        )
        assert run.returncode == 0, run.stderr
        outputs.append(path.read_bytes())
    assert outputs[0] == outputs[1] != outputs[2]


def test_defaults_are_documented_and_shared():
    """One set of defaults: the command's and the scikit-learn estimator's are the
    library's, --help shows them and the man page's DEFAULTS section names each with
    its measured figures."""
    import click

    from cpsvm.cli.sampled import command

    # (with the command's settings: click keeps the first help option it makes)
    ctx = click.Context(command, info_name="sampled_learn", **command.context_settings)
    shown = {p.name: p.default for p in command.get_params(ctx)}
    library = SampledParams(C=1.0)
    for name in ("epsilon", "algorithm", "sample_size", "patience", "max_idle", "seed"):
        assert shown[name] == getattr(library, name), name
    assert library.epsilon == 1.0 and library.sample_size == 400 and library.patience == 4
    import inspect

    from cpsvm.sklearn import SampledCutSVC

    estimator = inspect.signature(SampledCutSVC).parameters
    for name in ("epsilon", "algorithm", "sample_size", "patience", "max_idle"):
        assert estimator[name].default == getattr(library, name), name
    help_text = " ".join(command.get_help(ctx).split())
    assert "much. 1 is the paper's 0.01" in help_text and "[default: 1.0]" in help_text
    man = (ROOT / "man" / "sampled_learn.1").read_text()
    defaults = man.split(".SH DEFAULTS", 1)[1].split(".SH ", 1)[0]
    for flag in ("\\-e 1", "\\-\\-r 400", "\\-p 4", "Measured 2026-11"):
        assert flag in defaults, flag


@pytest.mark.parametrize(
    "args, warned",
    [
        (["-t", "2", "-g", "0.05", "-r", "100"], True),  # SVMlight's habit for --r 100
        (["-r", "100"], True),  # linear kernel: -r unused too
        (["-t", "1", "-r", "100"], False),  # polynomial: -r is its constant
        (["-t", "2", "-g", "0.05", "--r", "100"], False),
        (["-v", "0", "-t", "2", "-g", "0.05", "-r", "100"], False),  # -v 0: errors only
    ],
)
def test_kernel_constant_r_unused_warns_of_sample_size_r(capsys, samples, tmp_path, args, warned):
    model = tmp_path / "m"
    with pytest.raises(SystemExit) as stop:
        main(["-c", "1", "-#", "2", *args, str(samples / "a9a2k.test"), str(model)])
    assert stop.value.code == 0 and model.exists()
    err = capsys.readouterr().err
    warning = [line for line in err.splitlines() if "-r is the constant" in line]
    assert len(warning) == warned, err
    if warned:
        assert "the sample size is --r (now 400)" in warning[0]


@pytest.mark.parametrize(
    "args, data, expected",
    [
        (["-c", "0"], "a9a2k.test", "C > 0"),
        (["-c", "-1"], "a9a2k.test", "C > 0"),
        (["-c", "1", "-e", "0"], "a9a2k.test", "epsilon > 0"),
        (["-c", "1", "--r", "0"], "a9a2k.test", "sample size --r >= 1"),
        (["-c", "1", "-p", "0"], "a9a2k.test", "-p >= 1"),
        (["-c", "1", "--algorithm", "quadratic"], "a9a2k.test", "--algorithm"),
        (["-c", "1", "-t", "2", "-g", "0"], "a9a2k.test", "gamma > 0"),
        (["-c", "1", "-t", "5"], "a9a2k.test", "kernel type"),
        (["-c", "1", "--threads", "0"], "a9a2k.test", "--threads >= 1"),
        ([], "a9a2k.test", "-c"),
        (["-c", "1"], "dna500.test", "binary targets +1 or -1"),
    ],
)
def test_bad_options(capsys, samples, tmp_path, args, data, expected):
    model = tmp_path / "m"
    with pytest.raises(SystemExit) as stop:
        main([*args, str(samples / data), str(model)])
    assert stop.value.code != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sampled_learn: "), err
    assert expected in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1 1:1\n-1 2:1\n0 1:1\n", ":3: expected binary targets"),
        ("1 1:1\n1 2:1\n", "expected examples of both classes"),
    ],
)
def test_bad_labels(capsys, tmp_path, text, expected):
    data, model = tmp_path / "d", tmp_path / "m"
    data.write_text(text)
    with pytest.raises(SystemExit) as stop:
        main(["-c", "1", str(data), str(model)])
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1 and not model.exists()


def test_ctrl_c_writes_a_valid_model_and_exits_130(samples, tmp_path):
    model, trace = tmp_path / "m", tmp_path / "t.tsv"
    code, out, err = interrupt_cli(
        "sampled",
        [
            "-c",
            "3000",
            "-t",
            "2",
            "-g",
            "0.05",
            "--algorithm",
            "const",
            "-p",
            "1000000",
            "-e",
            "1e-9",
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
    assert restored.kernel.kind == 2 and restored.support_vectors.shape[0] > 0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
