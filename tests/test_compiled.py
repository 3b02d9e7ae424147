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
    entries = build.read_signatures()
    assert entries, "signatures.txt lists no kernel"
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
    assert "CPSVM_COMPILED=0" in said[0]
    assert runs[1].stderr == ""  # loaded from numba's cache: nothing to say
    assert runs[0].stdout == runs[1].stdout


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """A package root with one kernel module and an index made from it."""
    (tmp_path / "mod.py").write_text("@njit\ndef f(x):\n    return x\n")
    index = {
        "sources": ["mod.py"],
        "target_cpu": "x",
        "cpu_features": [],
        "kernels": {},
    }
    monkeypatch.setattr(compiled, "PACKAGE_ROOT", str(tmp_path))
    monkeypatch.setattr(compiled, "INDEX_FILE", str(tmp_path / "index.json"))
    monkeypatch.delenv("CPSVM_COMPILED", raising=False)
    index["sources_digest"] = compiled.sources_digest(index["sources"])

    def write(**changes):
        (tmp_path / "index.json").write_text(json.dumps({**index, **changes}))

    write()
    return tmp_path, write


def test_an_index_is_refused_once_a_source_changed(fake_package):
    root, _ = fake_package
    assert compiled.Library().usable
    (root / "mod.py").write_text("@njit\ndef f(x):\n    return x + 1\n")
    library = compiled.Library()
    assert not library.usable and "older than their sources" in library.reason


def test_an_index_is_refused_on_a_cpu_without_its_features(fake_package):
    _, write = fake_package
    write(cpu_features=[compiled.cpu_features()[0], "NO_SUCH_FEATURE"])
    library = compiled.Library()
    assert not library.usable and "NO_SUCH_FEATURE" in library.reason
    write(cpu_features=compiled.cpu_features())
    assert compiled.Library().usable


def test_a_missing_or_switched_off_index(fake_package, monkeypatch):
    root, _ = fake_package
    monkeypatch.setenv("CPSVM_COMPILED", "0")
    assert compiled.Library().reason == "CPSVM_COMPILED=0"
    monkeypatch.delenv("CPSVM_COMPILED")
    (root / "index.json").unlink()
    assert not compiled.Library().usable


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
