"""The kernels compiled ahead of time (cpsvm/compiled): found for the types they were
compiled for, equal to numba's own compilation, checked against their sources and the
CPU, and the fallback to numba announced once."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cpsvm import compiled
from cpsvm.compiled import build

ROOT = Path(__file__).resolve().parent.parent


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CPSVM_", "NUMBA_"))}
    env.update(PYTHONPATH=str(ROOT), **extra)
    return env


def test_signature_text_round_trips_to_the_types_of_values():
    from numba import typeof
    from numba.core import types

    values = [
        np.zeros(3),
        np.zeros((2, 3), np.int32),
        np.zeros((2, 3))[:, ::2],  # not contiguous: numba's "A" layout
        np.zeros(4, np.bool_),
        np.zeros(2, np.uint8),
        1.5,
        7,
        True,
        np.int32(3),
        np.float32(2.0),
        None,
        (1.0, 2),
        (np.zeros(2), np.zeros(2)),
    ]
    for value in values:
        numba_type = typeof(value)
        if isinstance(numba_type, types.Array):
            numba_type = numba_type.copy(readonly=False)
        text = compiled.type_text(numba_type)
        assert compiled.parse_argument_types(text) == compiled.argument_types((value,)), text
        assert build._numba_type(text) == numba_type, text
    # A Python int beyond int64 is numba's uint64, never a compiled int64.
    assert compiled.argument_types((1 << 63,)) == ("uint64",)


def test_every_listed_signature_is_compiled_and_found():
    library = compiled.library()
    assert library.usable, library.reason
    entries = build.all_signatures()
    assert len(entries) > len(build.read_signatures()) > 0
    for name, _returns, arguments in entries:
        module = name.split(":")[0]
        __import__(module)
        functions = compiled.KERNELS[name]._compiled or library.functions(name)
        assert compiled.parse_argument_types(arguments) in functions, name


def test_compiled_kernels_equal_numbas_on_this_cpu():
    """The same code as numba's JIT (same CPU target): the same bits, fastmath sums too."""
    from cpsvm.engine.hinge import hinge_cut
    from cpsvm.sparse_ops import _dense_dot

    library = compiled.library()
    assert library.usable, library.reason
    import llvmlite.binding as llvm

    if library.target_cpu != (os.environ.get("NUMBA_CPU_NAME") or llvm.get_host_cpu_name()):
        pytest.skip("compiled for another CPU than numba's JIT targets here")
    rng = np.random.default_rng(5)
    n = 10_001
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    out, costs = rng.standard_normal(n), rng.random(n) + 0.5
    coef_a, coef_b = np.empty(n), np.empty(n)
    assert hinge_cut(y, out, costs, 1.0, 2.0, coef_a) == hinge_cut.dispatcher()(
        y, out, costs, 1.0, 2.0, coef_b
    )
    assert np.array_equal(coef_a, coef_b)
    dense, W = rng.standard_normal((37, 29)), rng.standard_normal((3, 29))
    a, b = np.empty((37, 3)), np.empty((37, 3))
    _dense_dot(dense, W, a)
    _dense_dot.dispatcher()(dense, W, b)
    assert np.array_equal(a, b)


def test_types_not_compiled_run_under_numba(monkeypatch):
    """float32 values were never compiled for hinge_labels: numba compiles them (not
    logged: the suite's check is of the calls the library makes)."""
    from cpsvm.engine.hinge import hinge_labels

    monkeypatch.delenv(compiled.LOG_VARIABLE, raising=False)
    y = np.array([1.0, -1.0, 1.0], np.float32)
    out = np.array([2.0, 0.5, -1.0], np.float32)
    assert compiled.argument_types((y, out, 1.0, 1.0)) not in (hinge_labels._compiled or {})
    assert np.array_equal(hinge_labels(y, out, 1.0, 1.0), [1.0, 1.0, -1.0])


FALLBACK = """
import numpy as np
from cpsvm.engine.hinge import hinge_cut, hinge_labels
y = np.array([1.0, -1.0]); out = np.array([0.5, 0.5]); coef = np.empty(2)
print(hinge_cut(y, out, np.ones(2), 1.0, 1.0, coef), hinge_labels(y, out, 1.0, 1.0))
print(hinge_cut(y, out, np.ones(2), 1.0, 1.0, coef))
"""


def test_compiling_at_run_time_is_said_once_and_cached(tmp_path):
    env = clean_env(CPSVM_COMPILED="0", NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    runs = [
        subprocess.run(
            [sys.executable, "-c", FALLBACK], capture_output=True, text=True, env=env, timeout=600
        )
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    said = runs[0].stderr.splitlines()
    assert len(said) == 1 and said[0].startswith(
        "cpsvm: compiling kernels for this CPU, once: about "
    ), runs[0].stderr
    assert " s a kernel this run calls (" in said[0], said[0]
    assert "CPSVM_COMPILED=0" in said[0]
    assert runs[1].stderr == ""  # loaded from numba's cache: nothing to say
    assert runs[0].stdout == runs[1].stdout


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """A package root with one kernel module, one extension module (bytes standing for
    one) and an index made from them."""
    (tmp_path / "mod.py").write_text("@njit\ndef f(x):\n    return x\n")
    (tmp_path / "_kernels_fake0.so").write_bytes(b"\x7fELF" + bytes(range(256)) * 4)
    monkeypatch.setattr(compiled, "PACKAGE_ROOT", str(tmp_path))
    monkeypatch.setattr(compiled, "HERE", str(tmp_path))
    monkeypatch.setattr(compiled, "INDEX_FILE", str(tmp_path / "index.json"))
    monkeypatch.delenv("CPSVM_COMPILED", raising=False)
    variant = {
        "target": "host",
        "target_cpu": "x",
        "cpu_features": [],
        "modules": {"_kernels_fake0": build.file_record(str(tmp_path / "_kernels_fake0.so"))},
        "kernels": {},
    }
    index = {
        "format": compiled.INDEX_FORMAT,
        "sources": ["mod.py"],
        "sources_digest": compiled.sources_digest(["mod.py"]),
        "variants": [variant],
    }

    def write(**changes):
        (tmp_path / "index.json").write_text(json.dumps({**index, **changes}))

    write()
    return tmp_path, write, variant


def test_an_index_is_refused_once_a_source_changed(fake_package):
    root, _, _ = fake_package
    assert compiled.Library().usable
    (root / "mod.py").write_text("@njit\ndef f(x):\n    return x + 1\n")
    library = compiled.Library()
    assert not library.usable and "older than their sources" in library.reason


def test_the_first_variant_this_cpu_runs_is_taken(fake_package):
    _, write, variant = fake_package
    table = {"AVX2": True, "AVX512F": False}
    wide = {**variant, "target_cpu": "wide", "cpu_features": ["AVX2", "AVX512F"]}
    portable = {**variant, "target_cpu": "x86-64-v3", "cpu_features": ["AVX2"]}
    write(variants=[wide, portable])
    library = compiled.Library(lambda: table)
    assert library.usable and library.target_cpu == "x86-64-v3"
    write(variants=[wide])
    library = compiled.Library(lambda: table)
    assert not library.usable and "['AVX512F']" in library.reason


def test_features_a_numpy_does_not_know_are_not_checked(fake_package):
    """An older numpy's table lacks newer names: the build machine's own features must
    not read as lacking (only a name known and absent is)."""
    _, write, variant = fake_package
    older_numpy = {name: True for name in ("SSE", "AVX2")}
    write(variants=[{**variant, "cpu_features": ["AVX2", "AVX512BF16", "X86_V4"]}])
    assert compiled.Library(lambda: older_numpy).usable
    assert compiled.lacking_features(["AVX2", "NEW"], {"AVX2": False}) == ["AVX2"]
    # numpy's own table on this machine: its features pass, whatever the names.
    assert compiled.lacking_features(compiled.cpu_features() + ["NOT_A_NAME"]) == []


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage", "missing"])
def test_a_damaged_module_is_refused_before_it_is_imported(fake_package, damage):
    root, _, _ = fake_package
    so = root / "_kernels_fake0.so"
    good = so.read_bytes()
    if damage == "truncated":
        so.write_bytes(good[: len(good) // 2])
    elif damage == "empty":
        so.write_bytes(b"")
    elif damage == "garbage":
        so.write_bytes(bytes(reversed(good)))
    else:
        so.unlink()
    library = compiled.Library()
    assert not library.usable
    assert str(so) in library.reason and "reinstall cpsvm" in library.reason, library.reason
    assert "\n" not in library.reason


def test_an_import_failure_falls_back_naming_the_file(fake_package, monkeypatch):
    """Bytes as the index records them that still cannot be imported (a foreign
    build): the kernel runs under numba, the reason names the file and the cause."""
    _, write, variant = fake_package
    write(variants=[{**variant, "kernels": {"mod:f": [["float64", "_kernels_fake0", "k0"]]}}])
    library = compiled.Library()
    assert library.usable
    assert library.functions("mod:f") == {}
    assert not library.usable
    assert "_kernels_fake0.so cannot be imported (" in library.reason, library.reason


def test_a_failed_build_is_said_with_its_cause_and_remedy(fake_package):
    _, write, _ = fake_package
    write(
        variants=[],
        build_failure={"cause": "numba.pycc cannot be imported (ImportError: x)", "remedy": "R"},
    )
    library = compiled.Library()
    assert not library.usable
    assert library.reason == (
        "the install could not compile them: numba.pycc cannot be imported (ImportError: x); R"
    )


def test_a_missing_or_switched_off_index(fake_package, monkeypatch):
    root, _, _ = fake_package
    monkeypatch.setenv("CPSVM_COMPILED", "0")
    assert compiled.Library().reason == "CPSVM_COMPILED=0"
    monkeypatch.delenv("CPSVM_COMPILED")
    (root / "index.json").unlink()
    assert not compiled.Library().usable
    (root / "index.json").write_text('{"sources": []')
    library = compiled.Library()
    assert not library.usable and "cannot be read" in library.reason


HIDE_PYCC = """
import sys
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name == "numba.pycc":
            raise ImportError("numba.pycc hidden")
sys.meta_path.insert(0, Hide())
from cpsvm.compiled import build
try:
    build.build(sys.argv[1])
except build.BuildFailed as e:
    print("failed:", e.cause)
"""


def test_a_build_without_pycc_records_why_and_leaves_no_old_module(tmp_path):
    out = tmp_path / "compiled"
    out.mkdir()
    (out / "_kernels0.cpython-311-x86_64-linux-gnu.so").write_bytes(b"an old build's")
    (out / "index.json").write_text("{}")
    done = subprocess.run(
        [sys.executable, "-c", HIDE_PYCC, str(out)],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=300,
    )
    assert done.stdout.startswith("failed: numba.pycc cannot be imported"), done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["index.json"]
    failure = json.loads((out / "index.json").read_text())["build_failure"]
    assert "numba.pycc" in failure["cause"] and "numba>=0.68,<0.69" in failure["remedy"]


def test_the_digest_covers_what_kernels_read_and_the_makefile_the_same_list():
    sources = build.kernel_sources()
    # kernel_row_loops' kernels read kernels.py's codes: numba freezes them in.
    assert "kernels.py" in sources and "kernel_row_loops.py" in sources
    assert "engine/prefetch.py" in sources and "compiled/signatures.txt" in sources
    assert "threads.py" not in sources  # imported by kernel modules, read by no kernel
    index = json.loads(Path(compiled.INDEX_FILE).read_text())
    assert index["sources"] == sources
    makefile = (ROOT / "Makefile").read_text()
    assert "KERNEL_SOURCES := $(shell $(PYTHON) cpsvm/compiled/build.py --sources)" in makefile
    printed = subprocess.run(
        [sys.executable, "cpsvm/compiled/build.py", "--sources"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": os.environ.get("PATH", "")},  # no numpy needed: the Makefile's python
        timeout=60,
    )
    assert printed.stdout.split() == [f"cpsvm/{p}" for p in sources], printed.stderr


def test_no_listed_signature_is_stale():
    """Every line names a kernel that exists, with as many arguments as it takes, in
    types the run-time lookup reads back."""
    for name, _returns, arguments in build.read_signatures():
        __import__(name.split(":")[0])
        kernel = compiled.KERNELS.get(name)
        assert kernel is not None, f"signatures.txt names {name}, which is no kernel"
        parsed = compiled.parse_argument_types(arguments)
        assert len(parsed) == kernel._arity, f"{name}: {len(parsed)} arguments listed"


def test_version_says_whether_the_compiled_kernels_are_in_use():
    said = compiled.describe()
    library = compiled.library()
    assert library.usable, library.reason
    assert said == f"compiled kernels in use (compiled for {library.target_cpu})"
    light = subprocess.run(
        [sys.executable, "-m", "cpsvm.cli.learn", "--version"],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
    )
    assert light.stdout.rstrip().endswith(said), light.stdout


def test_parts_keep_a_module_together_and_balance(tmp_path):
    entries = [(f"m{i % 5}:k{i}", "none", "float64") for i in range(40)]
    groups = build.parts_of(entries, 2)
    assert sorted(n for g in groups for n, _ in g) == list(range(40))
    modules = [{e[0].split(":")[0] for _, e in g} for g in groups]
    assert not modules[0] & modules[1]
    assert abs(len(groups[0]) - len(groups[1])) <= 8


def test_logged_signatures_are_added_once_in_order(tmp_path, monkeypatch):
    table = tmp_path / "signatures.txt"
    table.write_text("# header\nb:k\tnone\tfloat64\n")
    monkeypatch.setattr(build, "HERE", str(tmp_path))
    log = tmp_path / "log"
    log.write_text("a:k\tnone\tint64\nb:k\tnone\tfloat64\na:k\tnone\tint64\n")
    assert build.add_logged([log]) == 1
    assert table.read_text() == "# header\na:k\tnone\tint64\nb:k\tnone\tfloat64\n"


def test_the_kernel_modules_import_with_the_build_requirements_alone():
    """pip builds in an environment of pyproject.toml's build-system requirements only:
    a kernel module importing a dependency of the project not among them (directly or
    through its package) fails the optional build, and every first run then compiles
    at run time."""
    import re

    root = Path(__file__).resolve().parent.parent
    text = (root / "pyproject.toml").read_text()

    def names(listed):
        return {
            re.split(r"[<>=\[ ]", n.strip().strip('"'))[0] for n in listed.split(",") if n.strip()
        }

    build_requires = names(re.search(r"^requires = \[(.*?)\]", text, re.M | re.S).group(1))
    dependencies = set()
    for listed in re.findall(r"^(?:dependencies|\w+) = \[(.*?)\]", text, re.M | re.S):
        dependencies |= names(listed)
    imported_as = {"scikit-learn": "sklearn", "dask": "distributed"}
    refused = {imported_as.get(n, n) for n in dependencies - build_requires} | {"dask"}
    modules = sorted({name.split(":")[0] for name, _, _ in build.read_signatures()})
    code = (
        "import importlib, sys\n"
        "refused = set(sys.argv[1].split(','))\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in refused:\n"
        "            raise ImportError(f'{name} is not a build requirement')\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "for module in sys.argv[2:]:\n"
        "    importlib.import_module(module)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(root))
    done = subprocess.run(
        [sys.executable, "-c", code, ",".join(sorted(refused)), *modules],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # click is the commands' alone (cpsvm/cli/): no kernel module loads it.
    assert {"quadprog", "tqdm", "sklearn", "click"} <= refused and len(modules) > 10


def test_a_truncated_module_falls_back_in_one_line_to_the_same_model(tmp_path):
    """The goal's case: a damaged extension module, exit 0, one line naming it, and the
    model the good build makes (numba's JIT for this CPU gives the same bits)."""
    import shutil

    library = compiled.library()
    assert library.usable, library.reason
    copy = tmp_path / "tree"
    shutil.copytree(ROOT / "cpsvm", copy / "cpsvm", ignore=shutil.ignore_patterns("__pycache__"))
    (module,) = [
        p for p in (copy / "cpsvm" / "compiled").iterdir() if p.name.startswith("_kernels0.")
    ]
    module.write_bytes(module.read_bytes()[:4096])
    data = ROOT / "data" / "samples" / "a9a2k.test"
    models = []
    for tree, extra in ((ROOT, {}), (copy, {"NUMBA_CACHE_DIR": str(tmp_path / "cache")})):
        model = tmp_path / f"{len(models)}.model"
        run = subprocess.run(
            [sys.executable, "-m", "cpsvm.cli.learn", "-v", "0", "-c", "1", data, model],
            capture_output=True,
            text=True,
            env={**clean_env(**extra), "PYTHONPATH": str(tree)},
            cwd=tmp_path,  # not the source tree: python -m would import it first
            timeout=600,
        )
        assert run.returncode == 0, run.stderr
        models.append((model.read_bytes(), run.stderr))
    assert models[0][1] == ""
    said = models[1][1].splitlines()
    assert len(said) == 1 and f"{module} is damaged: 4096 bytes" in said[0], said
    assert models[1][0] == models[0][0]


# What the edge hands the kernels (the goals of issue 47): the commands on 0/1 and real
# data of 300 and 70,000 columns (one- and two-byte and int32 column indices), binary
# and multiclass; the multiclass products on 70,000 rows (two-byte and int32 row
# indices) and 200 classes (a weight matrix of 4 MB: the products by columns); what
# scikit-learn hands the estimators (load_svmlight_file's int64 indices, float32,
# Fortran-ordered dense arrays).
EDGE = r"""
import os, sys, tempfile
import numpy as np
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

rng = np.random.default_rng(0)
tmp = tempfile.mkdtemp()


def matrix(n, d, per_row, ones):
    rows = np.repeat(np.arange(n), per_row)
    cols = rng.integers(0, d, n * per_row)
    cols[-1] = d - 1  # the widest column present
    X = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, d))
    X.sum_duplicates()
    X.data = np.ones(X.nnz) if ones else np.round(rng.random(X.nnz), 3) + 0.5
    return X


def run(module, *args):
    import importlib
    main = importlib.import_module(f"cpsvm.cli.{module}").main
    try:
        main([str(a) for a in args])
    except SystemExit as e:
        assert e.code in (0, None), (module, args, e.code)
    print("ran", module, *args, file=sys.stderr)


def labelled(X, classes):
    if classes > 2:
        return rng.integers(1, classes + 1, X.shape[0])
    return np.where(rng.random(X.shape[0]) < 0.5, -1, 1)


# The commands on 0/1 and real data, 300 and 70,000 columns, binary and multiclass.
for d in (300, 70_000):
    for ones in (True, False):
        for classes in (2, 4):
            X = matrix(400, d, 12, ones)
            y = labelled(X, classes)
            path = os.path.join(tmp, f"d{d}{ones}{classes}.svm")
            dump_svmlight_file(X, y, path, zero_based=False)
            for learner in ("learn", "ocas"):
                options = ["-c", "1", "-#", "30"]
                model = path + learner + ".model"
                run(learner, "-v", "0", *options, path, model)
                run("classify", "-v", "0", path, model, model + ".pred")
            if classes == 2:
                rbf = ["-c", "1", "-t", "2", "-g", "0.1"]
                for learner, options in [("sampled", rbf), ("asset", rbf + ["--k", "64"])]:
                    model = path + learner + ".model"
                    run(learner, "-v", "0", *options, path, model)
                    run("classify", "-v", "0", path, model, model + ".pred")

# Multiclass with 70,000 rows and 200 classes, a weight matrix of 4 MB or more: the
# products the multiclass oracle makes.
from cpsvm.sparse_ops import RowBlocks

for ones in (True, False):
    X = matrix(70_000, 3_000, 4, ones)
    blocks = RowBlocks(X)
    W = rng.standard_normal((3_000, 200))
    scores = blocks.times(W)
    blocks.transposed_times(scores)
    rows = np.arange(0, 70_000, 7, dtype=np.int64)
    to_class = rng.integers(0, 200, len(rows)).astype(np.int64)
    from_class = (to_class + 1) % 200
    blocks.add_by_class(rows, np.ones(len(rows)), to_class, from_class, np.zeros((3_000, 200)))
    blocks.dot(W[:, 0].copy())
    y = rng.integers(1, 201, 70_000)
    path = os.path.join(tmp, f"big{ones}.svm")
    dump_svmlight_file(X, y, path, zero_based=False)
    run("learn", "-v", "0", "-c", "1", "-#", "2", path, path + ".model")
    run("classify", "-v", "0", path, path + ".model", path + ".pred")
    run("ocas", "-v", "0", "-c", "1", "-#", "2", path, path + ".omodel")

# What scikit-learn hands the estimators: load_svmlight_file's int64 indices, float32
# and Fortran-ordered dense arrays; binary and multiclass.
from cpsvm.sklearn import ASSETClassifier, CuttingPlaneSVC, OCASClassifier, SampledCutSVC

for classes in (2, 4):
    X = matrix(300, 40, 6, False)
    y = labelled(X, classes)
    path = os.path.join(tmp, f"sk{classes}.svm")
    dump_svmlight_file(X, y, path, zero_based=False)
    X64, y64 = load_svmlight_file(path)
    assert X64.indices.dtype == np.int64
    dense = X.toarray()
    single = dense.astype(np.float32)
    inputs = [X64, single, np.asfortranarray(dense), sp.csr_matrix(single)]
    estimators = [OCASClassifier(C=1.0), CuttingPlaneSVC(C=1.0)]
    if classes == 2:
        estimators += [
            SampledCutSVC(C=1.0, kernel="rbf", gamma=0.1),
            ASSETClassifier(C=1.0, kernel="rbf", gamma=0.1, n_components=32),
        ]
    for estimator in estimators:
        for Xin in inputs:
            estimator.fit(Xin, y64)
            estimator.predict(Xin)
            estimator.decision_function(Xin)
        print("ran", type(estimator).__name__, classes, file=sys.stderr)
print("done")
"""


def test_every_type_the_edge_hands_a_kernel_is_compiled(tmp_path):
    """No kernel compiles at run time on what the readers, the narrowing and
    scikit-learn hand the kernels: a line logged names a missing signature (add them
    with ``python -m cpsvm.compiled.build --add LOG``)."""
    pytest.importorskip("sklearn")
    library = compiled.library()
    assert library.usable, library.reason
    log = tmp_path / "kernels.log"
    done = subprocess.run(
        [sys.executable, "-c", EDGE],
        capture_output=True,
        text=True,
        env=clean_env(CPSVM_KERNEL_LOG=str(log), OPENBLAS_NUM_THREADS="1"),
        timeout=1800,
    )
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr[-3000:]
    compiled_at_run_time = log.read_text() if log.exists() else ""
    assert compiled_at_run_time == "", compiled_at_run_time
    assert "compiling kernels" not in done.stderr, done.stderr[-3000:]
