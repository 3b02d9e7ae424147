"""What every command shares, checked from fresh interpreters: importing the library
changes nothing in the process while the commands still set what they need; one
exit-status rule; --version; the -v levels; -h, --version and usage errors import
nothing heavy."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data" / "samples"
FIXTURES = ROOT / "tests" / "fixtures"
TRAIN = SAMPLES / "a9a3k.train"
COMMANDS = {
    "cp_learn": "learn",
    "cp_classify": "classify",
    "ocas_learn": "ocas",
    "sampled_learn": "sampled",
    "asset_learn": "asset",
}
HEAVY = (
    "numpy",
    "scipy",
    "numba",
    "tqdm",
    "cpsvm.kernels",
    "cpsvm.models",
    "cpsvm.io.svmlight",
    "cpsvm.solvers",
)


def clean_env(**extra):
    """The user's environment without the settings under test (the Makefile sets
    OPENBLAS_NUM_THREADS for pytest itself; a Dask LocalCluster started in the test process,
    as tests/cluster's fixture does, sets OMP_NUM_THREADS and MKL_NUM_THREADS too)."""
    under_test = (
        "OPENBLAS_NUM_THREADS",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "NUMBA_THREADING_LAYER",
        "NUMBA_NUM_THREADS",
    )
    env = {k: v for k, v in os.environ.items() if k not in under_test}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def python(code, env=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env or clean_env(),
        cwd=ROOT,
        timeout=timeout,
    )


def command(name, *args, env=None):
    """The command as users run it (``python -m cpsvm.cli.<module>``, as bin/ does)."""
    return subprocess.run(
        [sys.executable, "-m", f"cpsvm.cli.{COMMANDS[name]}", *map(str, args)],
        capture_output=True,
        text=True,
        env=env or clean_env(),
        cwd=ROOT,
        timeout=300,
    )


# --- importing the library changes nothing --------------------------------------------


def test_import_cpsvm_loads_nothing_and_sets_nothing():
    run = python(
        "import os, sys\nbefore = dict(os.environ)\nimport cpsvm\n"
        "print(dict(os.environ) == before, 'numba' in sys.modules, "
        "'numpy' in sys.modules)"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "False", "False"]


LIBRARY_USE = """
import json, os, sys
environ = dict(os.environ)
mask = os.umask(0o027); os.umask(mask)
import cpsvm.threads
threads = cpsvm.threads.get_num_threads()
import cpsvm, cpsvm.data, cpsvm.kernels, cpsvm.models, cpsvm.approx, cpsvm.problems
import cpsvm.io.svmlight, cpsvm.io.model_file
import cpsvm.engine.cutting_plane, cpsvm.engine.qp, cpsvm.engine.cuts, cpsvm.engine.oracles
import cpsvm.solvers.ocas, cpsvm.solvers.one_slack, cpsvm.solvers.sampled
from cpsvm.io.svmlight import read_svmlight
from cpsvm.io.model_file import write_model
from cpsvm.solvers.ocas import OcasParams, train
data = read_svmlight(sys.argv[1]).subset(slice(0, 500))
params = OcasParams(C=1.0, n_threads=1)
model, info = train(data, params)
write_model(sys.argv[2], model)
mask_after = os.umask(0o027); os.umask(mask_after)
print(json.dumps({"environ": dict(os.environ) == environ,
                  "numba": "numba" in sys.modules,
                  "threads": [threads, cpsvm.threads.get_num_threads()],
                  "umask": [mask, mask_after]}))
"""


def test_library_use_leaves_the_process_as_it_was(tmp_path):
    script = tmp_path / "use.py"
    script.write_text(LIBRARY_USE)
    run = subprocess.run(
        [sys.executable, str(script), str(TRAIN), str(tmp_path / "m")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env=clean_env(NUMBA_NUM_THREADS="2"),
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout.splitlines()[-1])
    assert seen["environ"], "importing or using cpsvm changed os.environ"
    assert not seen["numba"], "training ran a kernel under numba: not compiled ahead of time"
    assert seen["threads"] == [2, 2]
    assert seen["umask"][0] == seen["umask"][1]


def test_a_command_run_in_process_restores_the_thread_count(tmp_path):
    code = (
        f"from cpsvm.threads import get_num_threads\nfrom cpsvm.cli.ocas import main\ntry:\n"
        f"    main(['-p', '1', '-v', '0', {str(TRAIN)!r}, {str(tmp_path / 'm')!r}])\n"
        f"except SystemExit as e:\n    print(e.code, get_num_threads())"
    )
    run = python(code, env=clean_env(NUMBA_NUM_THREADS="2"))
    assert run.stdout.split() == ["0", "2"], run.stderr


HOOK = """
import atexit, json, os, sys
seen = sys.argv[1]
def report():
    from threadpoolctl import threadpool_info
    blas = [i["num_threads"] for i in threadpool_info() if i["internal_api"] == "openblas"]
    with open(seen, "w") as f:
        json.dump({"blas": blas, "environ": os.environ.get("OPENBLAS_NUM_THREADS"),
                   "numba": "numba" in sys.modules}, f)
atexit.register(report)
from cpsvm.cli.ocas import main   # what the console script ocas_learn does
main(sys.argv[2:])
"""


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: OpenBLAS uses 1 thread anyway")
def test_commands_run_with_one_blas_thread_and_without_numba(tmp_path):
    pytest.importorskip("threadpoolctl")
    script, seen = tmp_path / "hook.py", tmp_path / "seen.json"
    script.write_text(HOOK)
    run = subprocess.run(
        [
            sys.executable,
            str(script),
            str(seen),
            "-p",
            "2",
            "-v",
            "0",
            str(TRAIN),
            str(tmp_path / "m"),
        ],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=tmp_path,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    after = json.loads(seen.read_text())
    assert after["blas"] and set(after["blas"]) == {1}  # numpy's and scipy's OpenBLAS
    assert after["environ"] == "1"  # and what a child would see
    assert not after["numba"]  # the kernels ran compiled ahead of time
    # The control: the same interpreter and environment without the command.
    control = python(
        "import numpy, threadpoolctl\nprint(max(i['num_threads'] for i in "
        "threadpoolctl.threadpool_info() if i['internal_api'] == 'openblas'))"
    )
    assert int(control.stdout) > 1


def test_a_users_setting_wins(tmp_path):
    code = (
        "import os\nfrom cpsvm.cli.common import configure_process\nconfigure_process()\n"
        "print(os.environ['OPENBLAS_NUM_THREADS'])"
    )
    run = python(code, env=clean_env(OPENBLAS_NUM_THREADS="2"))
    assert run.stdout.split() == ["2"], run.stderr


# --- the fast paths import nothing heavy ----------------------------------------------

FAST = """
import sys
from cpsvm.cli.{module} import main
for args in {cases!r}:
    try:
        main(args)
    except SystemExit as e:
        code = e.code
    heavy = [m for m in {heavy!r} if m in sys.modules]
    print("RESULT", args, code, heavy, file=sys.stderr)
"""

FAST_CASES = {
    "cp_learn": [
        ["-h"],
        ["--version"],
        ["-c", "0", "x", "y"],
        ["-w", "7", "-c", "1", "x", "y"],
        ["-c", "1", "-t", "2", "-g", "0", "x", "y"],
        ["--zzz"],
        [],
        ["x", "y"],
        ["-c", "1", "--plot", "p.pdf", "x", "y"],
    ],
    "ocas_learn": [
        ["-h"],
        ["--version"],
        ["-m", "3", "x", "y"],
        ["-c", "0", "x", "y"],
        ["--plot", "p", "x", "y"],
    ],
    "sampled_learn": [
        ["-?"],
        ["--version"],
        ["-c", "1", "-t", "7", "x", "y"],
        ["x", "y"],
        ["-c", "1", "--plot", "p.jpg", "x", "y"],
    ],
    "cp_classify": [
        ["--help"],
        ["--version"],
        ["-f", "2", "x", "y"],
        ["x"],
        ["--plot", "p", "x", "y"],
    ],
    "asset_learn": [["-h"], ["--version"], ["x", "y"], ["-c", "1", "--plot", "p.eps", "x", "y"]],
}


@pytest.mark.parametrize("name", FAST_CASES)
def test_help_version_and_usage_errors_import_nothing_heavy(name):
    code = FAST.format(module=COMMANDS[name], cases=FAST_CASES[name], heavy=HEAVY)
    run = python(code)
    results = [line for line in run.stderr.splitlines() if line.startswith("RESULT")]
    assert len(results) == len(FAST_CASES[name]), run.stderr
    for line, args in zip(results, FAST_CASES[name]):
        assert line.endswith("[]"), line
        expected = 0 if args and args[0] in ("-h", "-?", "--help", "--version") else 2
        assert f"] {expected} [" in line, line


@pytest.mark.parametrize("module", COMMANDS.values())
def test_command_modules_import_no_numpy(module):
    # OpenBLAS reads OPENBLAS_NUM_THREADS when numpy loads it: the command must get to
    # configure_process() first (cpsvm/cli/__init__.py).
    run = python(
        f"import sys\nimport cpsvm.cli.{module}\nprint([m for m in {HEAVY!r} if m in sys.modules])"
    )
    assert run.stdout.strip() == "[]", run.stderr


def test_cli_algorithms_are_the_solvers():
    # The command's --algorithm is declared on the solver's Params: its choices are the
    # ones the solver checks.
    from cpsvm.cli.sampled import command
    from cpsvm.params.sampled import ALGORITHMS

    (algorithm,) = [p for p in command.params if p.name == "algorithm"]
    assert tuple(algorithm.type.choices) == ALGORITHMS


# --- one exit-status rule -------------------------------------------------------------

MALFORMED = "+1 1:0.5 3:1\n-1 2:x\n"
BAD_MODEL = "SVM-light Version V9.99\n0 # kernel type\n"

USAGE_ERRORS = [
    ("cp_learn", ["-c", "0"]),
    ("cp_learn", ["-c", "1", "-w", "7"]),
    ("cp_learn", ["-c", "1", "-e", "0"]),
    ("cp_learn", ["-c", "1", "-o", "3"]),
    ("cp_learn", ["-c", "1", "-t", "2", "-g", "0"]),
    ("cp_learn", ["-c", "1", "--threads", "0"]),
    ("cp_learn", ["-c", "1", "--problem", "foo"]),
    ("cp_learn", ["-c", "1", "--i", "2"]),
    ("cp_learn", ["-c", "1", "--zzz", "1"]),
    ("cp_learn", []),
    ("ocas_learn", ["-c", "0"]),
    ("ocas_learn", ["-m", "3"]),
    ("ocas_learn", ["-s", "1"]),
    ("ocas_learn", ["-a", "0", "-r", "0"]),
    ("ocas_learn", ["-p", "0"]),
    ("ocas_learn", ["--lambda", "2"]),
    ("ocas_learn", ["-r", "-1"]),
    ("sampled_learn", ["-c", "0"]),
    ("sampled_learn", ["-c", "1", "--algorithm", "fast"]),
    ("sampled_learn", ["-c", "1", "--r", "0"]),
    ("sampled_learn", ["-c", "1", "-t", "4"]),
    ("sampled_learn", ["-c", "1", "-p", "0"]),
    ("cp_classify", ["-f", "2"]),
    ("cp_classify", ["-v", "4"]),
    ("cp_classify", ["--zzz"]),
    ("asset_learn", []),
]


@pytest.mark.parametrize("name, args", USAGE_ERRORS)
def test_usage_errors_exit_2(name, args, tmp_path):
    out = tmp_path / "out"
    files = [] if args == [] and name == "cp_learn" else [TRAIN, out]
    if name == "cp_classify":
        files = [TRAIN, FIXTURES / "a9a3k.perf_linear.model", out]
    run = command(name, *args, *files)
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith(f"{name}: ") and run.stderr.count("\n") == 1, run.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    "name, args, files",
    [
        ("cp_learn", ["-c", "1"], ["MALFORMED", "OUT"]),
        ("cp_learn", ["-c", "1"], ["MISSING", "OUT"]),
        ("ocas_learn", [], ["MALFORMED", "OUT"]),
        ("ocas_learn", ["-C", "MALFORMED"], [TRAIN, "OUT"]),
        ("sampled_learn", ["-c", "1"], [SAMPLES / "dna1k.train", "OUT"]),
        ("cp_classify", [], ["MALFORMED", FIXTURES / "a9a3k.perf_linear.model", "OUT"]),
        ("cp_classify", [], [TRAIN, "BAD_MODEL", "OUT"]),
    ],
)
def test_input_errors_exit_1(name, args, files, tmp_path):
    (tmp_path / "malformed").write_text(MALFORMED)
    (tmp_path / "bad.model").write_text(BAD_MODEL)
    names = {
        "MALFORMED": tmp_path / "malformed",
        "MISSING": tmp_path / "missing",
        "BAD_MODEL": tmp_path / "bad.model",
        "OUT": tmp_path / "out",
    }
    run = command(name, *[names.get(a, a) for a in args], *[names.get(f, f) for f in files])
    assert run.returncode == 1, run.stderr
    assert run.stderr.startswith(f"{name}: ") and run.stderr.count("\n") == 1, run.stderr
    assert not (tmp_path / "out").exists()


# --- --version ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, follows",
    [
        ("cp_learn", "SVM-struct"),
        ("cp_classify", "svm_classify"),
        ("ocas_learn", "svmocas"),
        ("sampled_learn", "SVM-perf"),
        ("asset_learn", "ASSET"),
    ],
)
def test_version(name, follows):
    from cpsvm import __version__

    run = command(name, "--version")
    assert run.returncode == 0 and run.stderr == ""
    assert run.stdout.startswith(f"{name} (cpsvm {__version__}), following ")
    assert follows in run.stdout and run.stdout.count("\n") == 1


# --- -v levels ------------------------------------------------------------------------

OCAS_LINE = re.compile(
    r"^\s*(\d+): tim=[\d.]+, Q_P=([\d.]+), Q_D=([-\d.]+), "
    r"Q_P-Q_D=[-\d.]+, 1-Q_D/Q_P=[-\d.]+, nza=\s*\d+"
)
STRUCT_LINE = re.compile(
    r"^Iter (\d+): pval=\S+, dval=\S+, gap=\S+, violation=\S+, "
    r"NumConst=\d+, calls=\d+"
)


def _iterations(stdout):
    return int(re.search(r"Number of iterations: (\d+)", stdout).group(1))


def test_ocas_verbosity_levels(tmp_path):
    quiet = command("ocas_learn", "-v", "1", TRAIN, tmp_path / "m1")
    assert quiet.returncode == 0 and not any(OCAS_LINE.match(s) for s in quiet.stderr.splitlines())
    run = command("ocas_learn", "-v", "2", "--trace", tmp_path / "trace", TRAIN, tmp_path / "m2")
    assert run.returncode == 0, run.stderr
    lines = [OCAS_LINE.match(s) for s in run.stderr.splitlines()]
    assert all(lines) and [int(m.group(1)) for m in lines] == list(
        range(1, _iterations(run.stdout) + 1)
    )
    rows = (tmp_path / "trace").read_text().splitlines()[1:]
    assert len(rows) == len(lines)
    q_p = re.search(r"Q_P: ([\d.]+)", run.stdout).group(1)
    assert float(lines[-1].group(2)) == pytest.approx(float(q_p), rel=1e-6)
    detailed = command("ocas_learn", "-v", "3", TRAIN, tmp_path / "m3")
    assert detailed.returncode == 0
    timed = [s for s in detailed.stderr.splitlines() if OCAS_LINE.match(s)]
    assert timed and all(
        re.search(r", time=[\d.]+s \(QP [\d.]+s, oracle [\d.]+s\)$", s) for s in timed
    ), timed[:2]


@pytest.mark.parametrize(
    "name, args, data",
    [
        ("cp_learn", ["-c", "30"], TRAIN),
        ("sampled_learn", ["-c", "100", "-t", "2", "-g", "0.1"], FIXTURES / "heart_scale"),
    ],
)
def test_struct_verbosity_levels(name, args, data, tmp_path):
    quiet = command(name, *args, "-v", "1", data, tmp_path / "m1")
    assert quiet.returncode == 0, quiet.stderr
    assert not any(STRUCT_LINE.match(s) for s in quiet.stderr.splitlines())
    run = command(name, *args, "-v", "2", data, tmp_path / "m2")
    assert run.returncode == 0, run.stderr
    lines = [s for s in run.stderr.splitlines() if STRUCT_LINE.match(s)]
    numbers = [int(STRUCT_LINE.match(s).group(1)) for s in lines]
    assert numbers and numbers == sorted(numbers) and numbers[-1] == _iterations(run.stdout)
    if name == "sampled_learn":
        assert all(re.search(r", kernel_evaluations=\d+$", s) for s in lines)
    detailed = command(name, *args, "-v", "3", data, tmp_path / "m3")
    timed = [s for s in detailed.stderr.splitlines() if STRUCT_LINE.match(s)]
    assert timed and all(
        re.search(r"time=[\d.]+s \(QP [\d.]+s, oracle [\d.]+s\)$", s) for s in timed
    ), timed[:2]


def test_a_file_that_is_no_model_is_refused_before_anything_heavy_loads(tmp_path):
    bad = tmp_path / "bad.model"
    bad.write_text("SVM-perf model, honest\n1 # kernel type\n")
    code = FAST.format(
        module="classify",
        cases=[[str(SAMPLES / "a9a2k.test"), str(bad), str(tmp_path / "out")]],
        heavy=HEAVY,
    )
    run = python(code)
    result = [line for line in run.stderr.splitlines() if line.startswith("RESULT")]
    assert result and result[0].endswith("] 1 []"), run.stderr
    assert f"{bad}:1: expected a model file" in run.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "error, words",
    [
        (MemoryError("Unable to allocate 7.28 TiB for an array"), "out of memory (Unable"),
        (RecursionError("maximum recursion depth exceeded"), "nested too deeply"),
    ],
)
def test_memory_and_recursion_errors_are_one_line(capsys, monkeypatch, error, words):
    """What the input checks did not foresee ends as an input error, one line, exit 1."""
    import click

    from cpsvm.cli import common
    from cpsvm.cli.common import run

    monkeypatch.setattr(common, "configure_process", lambda: None)  # this process stays as is

    @click.command("probe")
    def probe():
        raise error

    with pytest.raises(SystemExit) as caught:
        run(probe, [], "probe")
    err = capsys.readouterr().err
    assert caught.value.code == 1 and err.startswith("probe: ") and words in err
    assert len(err.strip().splitlines()) == 1
