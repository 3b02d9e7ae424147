"""Model files: the original tools' files are read, cpsvm's are read back exactly."""

import numpy as np
import pytest
import scipy.sparse as sp

from cpsvm.errors import InputError
from cpsvm.io.model_file import format_model, read_model, write_model
from cpsvm.kernels import Kernel
from cpsvm.models import KernelModel, LinearModel, MulticlassModel, UserProblemModel


def test_written_linear_model_is_svmlight_compressed_form(tmp_path):
    model = LinearModel(w=np.array([0.5, 0.0, -1.0 / 3.0, 1e-300]), b=0.1 + 0.2, n_train=7)
    path = tmp_path / "m"
    write_model(path, model)
    lines = path.read_text().splitlines()
    assert lines[0] == "SVM-light Version V6.20"
    assert lines[1] == "0 # kernel type"
    assert lines[7] == "4 # highest feature index "
    assert lines[9] == "2 # number of support vectors plus 1 "
    assert lines[11].startswith("1 1:0.5 3:-0.3333333333333333 4:1e-300") and len(lines) == 12
    again = read_model(path)
    assert isinstance(again, LinearModel)
    np.testing.assert_array_equal(again.w, model.w)
    assert again.b == model.b and again.n_train == 7


@pytest.mark.parametrize(
    "kernel",
    [
        Kernel(1, 2, 1.0, 0.1, 1.0),
        Kernel(2, gamma=0.1 / 3),
        Kernel(3, coef_lin=0.01, coef_const=-0.5),
    ],
)
def test_kernel_model_round_trip(tmp_path, kernel):
    rng = np.random.default_rng(0)
    sv = sp.random(20, 9, density=0.4, format="csr", random_state=rng)
    model = KernelModel(
        sv, rng.standard_normal(20), b=-0.123456789012345, kernel=kernel, n_train=100
    )
    write_model(tmp_path / "k", model)
    again = read_model(tmp_path / "k")
    assert again.kernel == kernel
    assert (again.support_vectors != sv).nnz == 0
    np.testing.assert_array_equal(again.coef, model.coef)
    assert again.b == model.b
    X = sp.random(30, 9, density=0.5, format="csr", random_state=rng)
    np.testing.assert_array_equal(again.decision_function(X), model.decision_function(X))


def test_kernel_model_lines_as_svmlight_writes_them():
    """Support vectors are formatted all at once: each line is still its own coefficient
    and its own features (an empty row, repeated and tiny values), as written by hand."""
    rows = [[(0, 0.5), (3, 1 / 3)], [], [(1, 0.5), (8, -2.0)], [(2, 1e-300)]]
    sv = sp.csr_matrix(
        (
            [v for r in rows for _, v in r],
            [j for r in rows for j, _ in r],
            np.cumsum([0] + [len(r) for r in rows]),
        ),
        shape=(4, 9),
    )
    model = KernelModel(sv, np.array([0.25, -1.5, 3.0, 1e-5]), b=0.0, kernel=Kernel(2), n_train=10)
    assert format_model(model).splitlines()[-4:] == [
        "0.25 1:0.5 4:0.3333333333333333 #",
        "-1.5 #",
        "3 2:0.5 9:-2.0 #",
        "1e-05 3:1e-300 #",
    ]


def test_multiclass_round_trip(tmp_path):
    W = np.random.default_rng(1).standard_normal((4, 6))
    W[1, 2] = 0.0
    write_model(tmp_path / "mc", MulticlassModel(W, n_train=41))
    text = (tmp_path / "mc").read_text().splitlines()
    assert text[0] == "SVM-multiclass Version V2.20" and text[1] == "4 # number of classes"
    assert text[10] == "25 # highest feature index "  # k·d + 1, as SVMmulticlass writes
    again = read_model(tmp_path / "mc")
    np.testing.assert_array_equal(again.W, W)


@pytest.mark.parametrize(
    "name",
    [
        "heart_scale.light_linear",
        "heart_scale.light_rbf",
        "heart_scale.light_poly",
        "heart_scale.light_sigmoid",
        "a9a3k.perf_linear",
        "dna.multiclass",
    ],
)
def test_reference_models_survive_rewrite(fixtures, tmp_path, name):
    model = read_model(fixtures / f"{name}.model")
    write_model(tmp_path / "m", model)
    assert format_model(read_model(tmp_path / "m")) == format_model(model)


def test_kernel_matches_scikit_learn():
    from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel, sigmoid_kernel

    rng = np.random.default_rng(2)
    A = sp.random(15, 7, density=0.5, format="csr", random_state=rng)
    B = sp.random(11, 7, density=0.5, format="csr", random_state=rng)
    np.testing.assert_allclose(
        Kernel(1, 3, 1, 0.5, 2).matrix(A, B),
        polynomial_kernel(A, B, degree=3, gamma=0.5, coef0=2),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        Kernel(2, gamma=0.7).matrix(A, B), rbf_kernel(A, B, gamma=0.7), rtol=1e-12
    )
    np.testing.assert_allclose(
        Kernel(3, coef_lin=0.3, coef_const=-1).matrix(A, B),
        sigmoid_kernel(A, B, gamma=0.3, coef0=-1),
        rtol=1e-12,
    )


def _cut(fixtures, tmp_path, n_lines):
    text = (fixtures / "heart_scale.light_rbf.model").read_text().splitlines(keepends=True)
    path = tmp_path / "cut.model"
    path.write_text("".join(text[:n_lines]))
    return path


@pytest.mark.parametrize(
    "n_lines, line, expected",
    [
        (0, 1, "expected a model file"),
        (5, 6, "expected 'kernel parameter -r', found the end"),
        (11, 12, "expected 133 support vectors as the header says, found 0"),
        (50, 51, "found 39"),
    ],
)
def test_truncated_model_files(fixtures, tmp_path, n_lines, line, expected):
    path = _cut(fixtures, tmp_path, n_lines)
    with pytest.raises(InputError) as err:
        read_model(path)
    assert str(err.value).startswith(f"{path}:{line}: ") and expected in str(err.value)


@pytest.mark.parametrize(
    "first, expected",
    [
        ("LIBLINEAR model\n", "expected a model file starting"),
        ("SVM-HMM Version V3.10\n", r"m:2: expected 'kernel type', found the end"),
        ("SVM-light Version V6.20\nx # kernel type\n", r"expected 'kernel type' \(int\)"),
    ],
)
def test_unknown_or_garbled_model_files(tmp_path, first, expected):
    path = tmp_path / "m"
    path.write_text(first)
    with pytest.raises(InputError, match=expected):
        read_model(path)


# -- the user-problem kind and the table of kinds ------------------------------------------


def _user_model():
    w = np.zeros(12)
    w[[0, 4, 11]] = [0.1 + 0.2, -1.0 / 3.0, 1e-300]
    return UserProblemModel(
        spec="ordinal:OrdinalRegression",
        w=w,
        n_train=9,
        n_features=4,
        options={"n_levels": 3, "note": "a # in a string"},
    )


def test_user_problem_model_round_trip(tmp_path):
    model = _user_model()
    write_model(tmp_path / "u", model)
    lines = (tmp_path / "u").read_text().splitlines()
    assert lines[:6] == [
        "cpsvm user-problem model V1",
        "ordinal:OrdinalRegression # problem (module:Class)",
        '{"n_levels": 3, "note": "a # in a string"} # problem options (JSON)',
        "12 # size_psi",
        "4 # number of base features",
        "9 # number of training examples",
    ]
    assert (
        lines[6]
        == (
            "1:0.30000000000000004 5:-0.3333333333333333 12:1e-300 "
            "# w (index:value, zero weights omitted)"
        )
        and len(lines) == 7
    )
    again = read_model(tmp_path / "u")
    assert isinstance(again, UserProblemModel)
    assert (again.spec, again.n_train, again.n_features, again.options) == (
        model.spec,
        9,
        4,
        model.options,
    )
    np.testing.assert_array_equal(again.w, model.w)
    assert format_model(again) == format_model(model)


@pytest.mark.parametrize(
    "n_lines, extra, line, expected",
    [
        (3, "", 4, "expected 'size_psi', found the end"),
        (6, "", 7, "expected the weight line"),
        (6, "1:1 1:2\n", 7, "expected index:value with indices increasing in 1..12"),
        (6, "13:1\n", 7, "increasing in 1..12"),
        (6, "2:nan\n", 7, "finite values"),
        (6, "1:1\n2:1\n", 8, "expected nothing after the weight line"),
    ],
)
def test_bad_user_problem_model_files(tmp_path, n_lines, extra, line, expected):
    write_model(tmp_path / "u", _user_model())
    kept = (tmp_path / "u").read_text().splitlines(keepends=True)[:n_lines]
    path = tmp_path / "cut"
    path.write_text("".join(kept) + extra)
    with pytest.raises(InputError) as err:
        read_model(path)
    assert str(err.value).startswith(f"{path}:{line}: ") and expected in str(err.value)


def test_bad_user_problem_header_values(tmp_path):
    text = format_model(_user_model())
    for old, new, line, expected in [
        ("ordinal:OrdinalRegression #", "ordinal #", 2, "module:Class"),
        ('{"n_levels": 3, "note": "a # in a string"}', "[3]", 3, "a JSON object"),
        ("12 # size_psi", "x # size_psi", 4, r"'size_psi' \(int\)"),
        ("12 # size_psi", "0 # size_psi", 4, "expected size_psi >= 1"),
    ]:
        path = tmp_path / "bad"
        path.write_text(text.replace(old, new))
        with pytest.raises(InputError, match=expected) as err:
            read_model(path)
        assert str(err.value).startswith(f"{path}:{line}: ")


def test_one_table_of_kinds():
    """Every model class is written by exactly one kind, whose version line reads back."""
    from cpsvm.io import model_file

    seen = [cls for kind in model_file.MODEL_KINDS for cls in kind.writers]
    assert sorted(seen) == [
        "CfgModel",
        "KernelModel",
        "LinearModel",
        "MulticlassModel",
        "RandomFeaturesModel",
        "RankingModel",
        "SequenceModel",
        "UserProblemModel",
    ]
    assert len(seen) == len(set(seen))
    for model in (LinearModel(w=np.ones(2)), MulticlassModel(np.ones((2, 2))), _user_model()):
        kind = model_file.model_kind_of(model)
        assert format_model(model).startswith(kind.first_lines[0])
    with pytest.raises(TypeError, match="cannot write a str"):
        format_model("not a model")


def test_built_in_and_registered_kinds_are_added_the_same_way(monkeypatch, tmp_path):
    """The built-in kinds are register_model_kind's, in their order; a registered
    problem's kind joins the same table by the same function and reads back."""
    from dataclasses import dataclass as plain_dataclass

    from cpsvm.io import model_file
    from cpsvm.problems import registry

    assert model_file.MODEL_KINDS == list(model_file.BUILT_IN_KINDS)
    monkeypatch.setattr(model_file, "MODEL_KINDS", list(model_file.MODEL_KINDS))
    monkeypatch.setattr(registry, "_REGISTERED", dict(registry._REGISTERED))

    @plain_dataclass
    class CountModel:
        count: int

    def read(raw, name, float32_features):
        return CountModel(int(raw.split(b"\n")[1]))

    kind = model_file.ModelKind(
        "count", ("cpsvm count model V1",), read,
        {"CountModel": lambda m: ["cpsvm count model V1", str(m.count)]},
    )  # fmt: skip

    class CountEntry(registry.ProblemEntry):
        name = "count-kind-test"
        model_kinds = (kind,)

    registry.register(CountEntry())
    assert model_file.MODEL_KINDS[-1] is kind
    registry.register(CountEntry())  # a kind known already is not added twice
    assert model_file.MODEL_KINDS.count(kind) == 1
    path = tmp_path / "count.model"
    model_file.write_model(path, CountModel(7))
    assert read_model(path) == CountModel(7)


def test_test_features_are_rounded_as_svm_classify_reads_them():
    """cp_classify's rounding is the models': 32-bit floats, except the values a 32-bit
    float cannot hold (kept in double, marked), and the input left as it was."""
    import scipy.sparse as sp

    from cpsvm.models import svmlight_features

    X = sp.csr_matrix(np.array([[0.1, 0.0, 1e300], [1e-45, 2.5, 0.0]]))
    before = X.data.copy()
    rounded, kept = svmlight_features(X)
    np.testing.assert_array_equal(X.data, before)
    assert rounded.data[0] == float(np.float32(0.1)) != 0.1
    assert rounded.data[3] == 2.5
    assert kept.tolist() == [False, True, True, False]
    np.testing.assert_array_equal(rounded.data[kept], before[kept])
