"""Hostile inputs through every command: hypothesis draws families of damaged files
(huge or odd targets, values and indices, byte-order marks, truncation, deep nesting)
and one subprocess per family runs each command on all of them, in-process one after
another (tests/e2e/hostile_driver.py). The property: exit 0, 1 or 2; on failure one line
on stderr, no traceback and no output file; on success the output file exists."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HERE = Path(__file__).resolve().parent
VALID = [
    "1 1:0.5 2:1 5:0.25",
    "-1 1:1 3:0.5",
    "1 2:0.5 4:1",
    "-1 1:0.25 5:1",
    "1 3:1 4:0.5",
    "-1 2:1 5:0.5",
]
MULTICLASS = ["1 1:0.5 2:1", "2 1:1 3:0.5", "3 2:0.5 4:1", "1 1:0.25 5:1", "2 3:1", "3 4:1"]
HUGE = ["1e19", "1e308", "-1e308", "1e9", "9" * 30, "2147483648", "1e-320", "-0", "0"]
INDICES = ["0", "-1", "2147483648", "1000000000000", "99999999999999999999", "3.5", "x"]


@st.composite
def damaged_file(draw):
    """A small SVMlight file with one kind of damage (or none)."""
    lines = list(draw(st.sampled_from([VALID, MULTICLASS])))
    row = draw(st.integers(0, len(lines) - 1))
    damage = draw(
        st.sampled_from(
            ["target", "value", "index", "truncate", "bom", "utf16", "nul", "qid", "none"]
        )
    )
    target, _, features = lines[row].partition(" ")
    if damage == "target":
        lines[row] = f"{draw(st.sampled_from(HUGE))} {features}"
    elif damage == "value":
        lines[row] = f"{target} 1:{draw(st.sampled_from(HUGE))}"
    elif damage == "index":
        lines[row] = f"{target} {draw(st.sampled_from(INDICES))}:1"
    elif damage == "qid":
        lines[row] = f"{target} qid:{draw(st.sampled_from(HUGE + ['-3']))} {features}"
    text = ("\n".join(lines) + "\n").encode()
    if damage == "truncate":
        text = text[: draw(st.integers(0, len(text) - 1))]
    elif damage == "bom":
        text = b"\xef\xbb\xbf" + text
    elif damage == "utf16":
        text = text.decode().encode("utf-16")
    elif damage == "nul":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + b"\x00" + text[at:]
    return text


@st.composite
def damaged_trees(draw):
    """Trees nested (unary chains, right-branching) or spread far past Python's recursion
    limit, possibly cut short."""
    depth = draw(st.sampled_from([1, 5, 1200, 3000]))
    width = draw(st.sampled_from([1, 3, 150, 1100]))
    words = " ".join(f"(NN w{i})" for i in range(width))
    if draw(st.booleans()):
        tree = "(S " + "(NP " * depth + words + ")" * depth + ")"
    else:
        tree = "(S " + "(VP (VB v) " * depth + words + ")" * depth + ")"
    text = f"{tree}\n(S (NP (NN a)) (VP (VB b)))\n".encode()
    if draw(st.booleans()):
        text = text[: draw(st.integers(1, len(text) - 1))]
    return text


COMMANDS = [
    ("cp_learn", ["-c", "1", "-#", "5"]),
    ("ocas_learn", ["-#", "5"]),
    ("sampled_learn", ["-c", "1", "-#", "2"]),
    ("asset_learn", ["-c", "1", "--epochs", "1", "--k", "4"]),
]


def run_family(tmp_path, cases):
    """Run the cases (command, args, output path) in one driver process; its report."""
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(cases))
    done = subprocess.run(
        [sys.executable, str(HERE / "hostile_driver.py"), str(plan)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def check_outcomes(outcomes):
    for case in outcomes:
        what = f"{case['command']} {case['args']}: exit {case['code']}, stderr {case['stderr']!r}"
        assert case["code"] in (0, 1, 2), what
        if case["code"] == 0:
            assert case["output_exists"], what
            continue
        lines = case["stderr"].strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(case["command"] + ": "), what
        assert "Traceback" not in case["stderr"] and not case["output_exists"], what


SETTINGS = settings(
    max_examples=2,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@SETTINGS
@given(st.lists(damaged_file(), min_size=12, max_size=12))
def test_learners_on_damaged_files(tmp_path, files):
    cases = []
    for k, raw in enumerate(files):
        path = tmp_path / f"f{k}.svm"
        path.write_bytes(raw)
        for command, args in COMMANDS:
            out = tmp_path / f"{command}.{k}.model"
            out.unlink(missing_ok=True)
            cases.append([command, [*args, str(path), str(out)], str(out)])
    check_outcomes(run_family(tmp_path, cases))


@SETTINGS
@given(st.lists(damaged_trees(), min_size=4, max_size=4))
def test_parsing_damaged_trees(tmp_path, trees):
    """Each file trained on (cp_learn) and parsed with a model of clean trees
    (cp_classify), in one process."""
    clean = tmp_path / "clean.mrg"
    clean.write_text(
        "(S (NP (NN a)) (VP (VB b)))\n(S (NP (NP (NN a)) (NN c)) (VP (VB b) (NN d)))\n"
    )
    model = tmp_path / "clean.model"
    cases = [["cp_learn", ["-v", "0", "-c", "1", str(clean), str(model)], str(model)]]
    for k, raw in enumerate(trees):
        path = tmp_path / f"t{k}.mrg"
        path.write_bytes(raw)
        out, parsed = tmp_path / f"t{k}.model", tmp_path / f"t{k}.parsed"
        out.unlink(missing_ok=True)
        parsed.unlink(missing_ok=True)
        cases.append(["cp_learn", ["-c", "1", "-#", "2", str(path), str(out)], str(out)])
        cases.append(["cp_classify", [str(path), str(model), str(parsed)], str(parsed)])
    outcomes = run_family(tmp_path, cases)
    assert outcomes[0]["code"] == 0, outcomes[0]
    check_outcomes(outcomes[1:])


def _models(tmp_path, samples):
    """One small model of each kind, trained here, and their texts."""
    kinds = {
        "binary": (["-c", "1"], "a9a3k.train", "a9a2k.test"),
        "multiclass": (["-c", "10"], "dna1k.train", "dna500.test"),
        "hmm": (["-c", "10", "-e", "1"], "ewt60.hmm.train", "ewt30.hmm.test"),
        "rank": (["-c", "10"], "toy.rank.train", "toy.rank.test"),
        "cfg": (["-c", "1"], "toy.train.mrg", "toy.test.mrg"),
    }
    cases = []
    for kind, (args, train, _) in kinds.items():
        out = tmp_path / f"{kind}.model"
        cases.append(["cp_learn", ["-v", "0", *args, str(samples / train), str(out)], str(out)])
    outcomes = run_family(tmp_path, cases)
    assert all(case["code"] == 0 for case in outcomes), outcomes
    return {
        kind: (tmp_path / f"{kind}.model", samples / test) for kind, (_, _, test) in kinds.items()
    }


@st.composite
def model_damage(draw):
    kind = draw(st.sampled_from(["binary", "multiclass", "hmm", "rank", "cfg"]))
    how = draw(st.sampled_from(["cut", "header", "line"]))
    return kind, how, draw(st.floats(0.0, 1.0)), draw(st.sampled_from(HUGE + ["-5", "x"]))


def test_classify_damaged_models(tmp_path, samples):
    models = _models(tmp_path, samples)

    @SETTINGS
    @given(st.lists(model_damage(), min_size=16, max_size=16))
    def run(damages):
        cases = []
        for k, (kind, how, where, number) in enumerate(damages):
            model, test = models[kind]
            lines = model.read_bytes().split(b"\n")
            if how == "cut":
                raw = model.read_bytes()
                raw = raw[: int(where * (len(raw) - 1))]
            else:
                at = 1 + int(where * (min(len(lines), 16) - 2))  # a header line (or one after)
                head, sep, rest = lines[at].partition(b" ")
                lines[at] = number.encode() + sep + rest if how == "header" else b""
                raw = b"\n".join(lines)
            damaged = tmp_path / f"m{k}"
            damaged.write_bytes(raw)
            out = tmp_path / f"p{k}"
            out.unlink(missing_ok=True)
            cases.append(["cp_classify", ["-v", "0", str(test), str(damaged), str(out)], str(out)])
        check_outcomes(run_family(tmp_path, cases))

    run()


def test_outputs_that_cannot_be_written(cli, samples, tmp_path):
    """An empty name is a usage error before training; a write that fails names the path."""
    run = cli("learn", "-c", "1", samples / "a9a3k.train", "")
    assert run.returncode == 2 and "expected a file name" in run.stderr
    for path in ("/dev/full", "/proc/version"):
        run = cli("learn", "-v", "0", "-c", "1", samples / "a9a3k.train", path)
        assert run.returncode == 1 and run.stderr.startswith(f"cp_learn: {path}: "), run.stderr


def test_figures_a_test_file_cannot_give(cli, samples, tmp_path):
    """One class in the test file: ROC area and the like are undefined, said so; a
    ranking model on a file without qid says it ranked one query."""
    model = tmp_path / "m"
    assert cli("learn", "-v", "0", "-c", "1", samples / "a9a3k.train", model).returncode == 0
    negatives = tmp_path / "neg"
    lines = (samples / "a9a2k.test").read_text().splitlines()
    negatives.write_text("\n".join(x for x in lines if x.startswith("-1")) + "\n")
    run = cli("classify", "--perf-measures", negatives, model, tmp_path / "p")
    assert run.returncode == 0 and "nan" not in run.stdout
    assert "ROCArea  : undefined (the labelled test examples are all of one class)" in run.stdout
    assert cli("learn", "-v", "0", "-c", "1", samples / "toy.rank.train", model).returncode == 0
    run = cli("classify", samples / "dna500.test", model, tmp_path / "p")
    assert (
        run.returncode == 0 and "has no qid: its 500 lines were ranked as one query" in run.stderr
    )
    tagger = ["-c", "10", "-e", "1", samples / "ewt60.hmm.train", model]
    assert cli("learn", "-v", "0", *tagger).returncode == 0
    run = cli("classify", samples / "toy.rank.test", model, tmp_path / "p")
    assert run.returncode == 0 and "tokens have targets outside the model's tags" in run.stderr
    run = cli("classify", samples / "ewt30.hmm.test", model, tmp_path / "p")
    assert run.returncode == 0 and "outside the model's tags" not in run.stderr


# -- model selection, huge C and the other features under hostile input ------------------
#
# One driver process runs every command line of FEATURE_CASES in order (later cases read
# what earlier ones wrote); each case is then its own test, judged by its own check on
# the outcome (exit status, stdout, stderr, output file).


def _lines(path, n=None):
    lines = path.read_text().splitlines()
    return lines if n is None else lines[:n]


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def _feature_files(tmp):
    """The small files the cases read, made from the samples."""
    a9a = _lines(SAMPLES / "a9a3k.train")
    _write(tmp / "first20.train", a9a[:20])
    _write(tmp / "a300.train", a9a[:300])
    big = a9a[:20]
    big[6] = "+1 1:1e100 3:1"
    _write(tmp / "big.train", big)
    positives = [x for x in a9a if x.startswith("+1")][:1]
    _write(tmp / "one.train", positives + [x for x in a9a if x.startswith("-1")][:49])
    zero = a9a[:5]
    zero[2] = "-1 0:1 3:1"
    _write(tmp / "zero.train", zero)
    _write(tmp / "dna60.train", _lines(SAMPLES / "dna1k.train", 60))
    # class 3 on one line only: a fold's training part of --cv 2 has none
    dna = _lines(SAMPLES / "dna1k.train", 60)
    _write(
        tmp / "rare3.train", [x for x in dna if x[0] != "3"] + [next(x for x in dna if x[0] == "3")]
    )
    # regression targets: -1, 0.5, 1 and -1, 0, 1 (a fold's targets may all be +-1)
    sat = [line.split(" ", 1)[1] for line in _lines(SAMPLES / "satimage500.train", 60)]
    _write(tmp / "reg.train", [f"{(-1, 0.5, 1)[k % 3]:g} {x}" for k, x in enumerate(sat)])
    _write(tmp / "reg3.train", [f"{(-1, 0, 1)[k % 3]:g} {x}" for k, x in enumerate(sat)])
    _write(tmp / "longnum.train", [*a9a[:2], "+1 3:0." + "3" * 5000, *a9a[2:20]])
    _write(tmp / "e50.train", ["1 1:1e50", "-1 1:-1e50", "1 1:2e50", "-1 1:-3e50"])
    # no example can be predicted +1: the positives have no features, w.x = 0 for them
    _write(tmp / "noplus.train", ["+1", "-1 1:1 2:0.5"] * 6)
    # a ranking file whose first three queries have no relevant document
    rank = []
    for line in _lines(SAMPLES / "toy.rank.train"):
        target, qid, rest = line.split(" ", 2)
        rank.append(f"{0 if int(qid[4:]) <= 3 else target} {qid} {rest}")
    _write(tmp / "rank0.train", rank)
    # --probability's folds: three examples, and one class
    plus = [x for x in a9a if x.startswith("+1")]
    _write(tmp / "three.train", plus[:1] + [x for x in a9a if x.startswith("-1")][:2])
    _write(tmp / "plus.train", plus[:20])
    _init_models(tmp)


def _init_models(tmp):
    """--init-model's models: of another kind, dimension or class set, with a threshold,
    truncated, and one that fits first20.train."""
    from cpsvm.io.model_file import write_model
    from cpsvm.models import LinearModel, MulticlassModel

    write_model(tmp / "fits.model", LinearModel(np.full(3, 0.1)))
    write_model(tmp / "wide.model", LinearModel(np.full(500, 0.1)))
    write_model(tmp / "threshold.model", LinearModel(np.full(3, 0.1), b=0.5))
    write_model(tmp / "mc3.model", MulticlassModel(np.full((3, 5), 0.1)))
    write_model(tmp / "mc4.model", MulticlassModel(np.full((4, 5), 0.1)))
    text = (tmp / "wide.model").read_bytes()
    (tmp / "cut.model").write_bytes(text[: len(text) // 2])
    for name in ("self-ocas.model", "self-cp.model", "self-asset.model"):
        (tmp / name).write_bytes((tmp / "fits.model").read_bytes())


def _init_model_kept(case):
    """--init-model FILE naming MODEL_FILE: a usage error before anything is read, one
    line, and the file left as it was."""
    assert case["code"] == 2, case
    lines = case["stderr"].strip().splitlines()
    assert len(lines) == 1 and "is the --init-model: refusing to write over it" in lines[0]
    model = Path(case["args"][-1])
    assert model.read_bytes() == model.with_name("fits.model").read_bytes()


def _models_with_edited_headers(tmp):
    """Copies of a multiclass and an SVM-hmm model, each with one header number changed
    (what the body's indices contradict)."""
    edits = {
        "mc.classes": ("mc.model", "# number of classes", -1),
        "mc.base-1": ("mc.model", "# number of base features", -1),
        "mc.base10": ("mc.model", "# number of base features", 10),
        "hmm.classes": ("hmm.model", "# number of classes", +1),
        "hmm.emission": ("hmm.model", "# number of emission features", +1),
        "hmm.order": ("hmm.model", "# HMM order of transitions", +1),
    }
    for name, (source, label, change) in edits.items():
        lines = (tmp / source).read_text().split("\n")
        at = next(k for k, line in enumerate(lines) if label in line)
        value, _, rest = lines[at].partition(" ")
        new = change if change == 10 else int(value) + change
        lines[at] = f"{new} {rest}"
        (tmp / name).write_text("\n".join(lines))


def _ok(*texts, stream="stdout"):
    """A check: exit 0 and each text in the stream."""

    def check(case):
        assert case["code"] == 0, case
        for text in texts:
            assert text in case[stream], (text, case[stream])

    return check


def _refused(code, *texts):
    """A check: exit ``code``, one line on stderr naming the command and holding each
    text, no output file, nothing on stdout (refused before any training)."""

    def check(case):
        assert case["code"] == code, case
        lines = case["stderr"].strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(case["command"] + ": "), case
        for text in texts:
            assert text in lines[0], (text, lines[0])
        assert not case["output_exists"], case

    return check


def _before_training(code, *texts):
    """_refused, and nothing printed on stdout: refused before any training."""

    def check(case):
        _refused(code, *texts)(case)
        assert case["stdout"] == "", case

    return check


def _fold_means_agree(case):
    """The mean printed is the mean of the folds' figures printed, over the folds where
    the figure is defined (recomputed here), and the count left out is said."""
    assert case["code"] == 0, case
    folds = re.findall(r"^Fold \d+: NDCG@10 (\S+)", case["stdout"], re.M)
    defined = [float(v) for v in folds if v != "undefined"]
    assert 0 < len(defined) < len(folds)
    mean = float(re.search(r"Cross-validated NDCG@10: (\S+)", case["stdout"]).group(1))
    assert abs(mean - sum(defined) / len(defined)) <= 5e-5
    left = len(folds) - len(defined)
    assert f"over {len(defined)} of {len(folds)} folds, {left} left out" in case["stdout"]
    assert f"NDCG@10 is undefined on {left} of the {len(folds)} held-out folds" in case["stdout"]


def _regression_folds(case):
    assert case["code"] == 0, case
    assert len(re.findall(r"^Fold \d: RMSE \d", case["stdout"], re.M)) == 5, case["stdout"]
    assert "error" not in case["stdout"], case["stdout"]


def _classified_right(case):
    """1e50 is beyond 32-bit floats: computed in double (said), every example right."""
    assert case["code"] == 0, case
    assert "Accuracy on test set: 100.00% (4 correct" in case["stdout"], case["stdout"]
    assert "kept in double precision" in case["stderr"], case["stderr"]
    assert "nan" not in case["stdout"]


def _chosen_by_error(case):
    assert case["code"] == 0, case
    header = next(line for line in case["stdout"].splitlines() if line.lstrip().startswith("C "))
    assert header.split()[1] == "error" and "Zero/one" not in case["stdout"], case["stdout"]
    assert re.search(r"^Best C: \S+ \(error ", case["stdout"], re.M), case["stdout"]


def _stopped_at_rounding(case):
    assert case["code"] == 0 and case["output_exists"], case
    assert "within the rounding error of Q_P" in case["stdout"], case["stdout"]


def _trained(case):
    assert case["code"] == 0 and case["output_exists"], case
    assert case["stderr"].strip() == "" or "Warning" in case["stderr"], case["stderr"]


LEARNERS = ["cp_learn", "ocas_learn", "sampled_learn", "asset_learn"]

# name: (command, arguments, output file (in the case's folder), check)
FEATURE_CASES = {
    # hang: huge C trains (to the rounding floor) or is refused with its bound
    "ocas -c 1e15": ("ocas_learn", ["-c", "1e15", "{first20}", "{out}"], _stopped_at_rounding),
    "ocas -c 1e30": ("ocas_learn", ["-c", "1e30", "{first20}", "{out}"], _stopped_at_rounding),
    # --loss: an unknown loss, and what the squared hinge does not offer (one line each)
    "ocas --loss unknown": (
        "ocas_learn",
        ["--loss", "l1", "{first20}", "{out}"],
        _before_training(2, "--loss", "'hinge', 'squared-hinge'"),
    ),
    "ocas --loss squared-hinge multiclass": (
        "ocas_learn",
        ["--loss", "squared-hinge", "{dna60}", "{out}"],
        _refused(1, "--loss squared-hinge is for binary problems only"),
    ),
    "ocas --loss squared-hinge --scheduler": (
        "ocas_learn",
        ["--loss", "squared-hinge", "--scheduler", "local:1", "{first20}", "{out}"],
        _before_training(2, "--loss squared-hinge cannot be used with --scheduler"),
    ),
    "ocas --loss squared-hinge --margin-bounds 1": (
        "ocas_learn",
        ["--loss", "squared-hinge", "--margin-bounds", "1", "{first20}", "{out}"],
        _before_training(2, "--margin-bounds 1", "--loss squared-hinge"),
    ),
    "ocas --loss squared-hinge -c 1e30": (
        "ocas_learn",
        ["--loss", "squared-hinge", "-m", "2", "-c", "1e30", "{first20}", "{out}"],
        _trained,
    ),
    "ocas -m 0 -c 1e15": (
        "ocas_learn",
        ["-m", "0", "-c", "1e15", "{first20}", "{out}"],
        _stopped_at_rounding,
    ),
    "ocas -m 1 -c 1e15": (
        "ocas_learn",
        ["-m", "1", "-c", "1e15", "{first20}", "{out}"],
        _stopped_at_rounding,
    ),
    "ocas -m 2 -c 1e30": (
        "ocas_learn",
        ["-m", "2", "-c", "1e30", "{first20}", "{out}"],
        _trained,
    ),
    "ocas --c-path 1e15": (
        "ocas_learn",
        ["--cv", "2", "--c-path", "1e15", "{first20}", "{out}"],
        _stopped_at_rounding,
    ),
    "ocas --c-path 1e-300,1e300": (
        "ocas_learn",
        ["--cv", "2", "--c-path", "1e-300,1e300", "{first20}", "{out}"],
        _refused(2, "expected C <= ", "got 1e+300"),
    ),
    # tracebacks: -c inf and 1e300, --seed -1, a polynomial kernel on 1e100
    "ocas -c 1e300": (
        "ocas_learn",
        ["-c", "1e300", "{first20}", "{out}"],
        _refused(2, "expected C <= ", "got 1e+300"),
    ),
    "ocas -m 2 -c 1e300": (
        "ocas_learn",
        ["-m", "2", "-c", "1e300", "{first20}", "{out}"],
        _refused(2, "expected C <= "),
    ),
    "ocas multiclass -c 1e300": (
        "ocas_learn",
        ["-c", "1e300", "{dna60}", "{out}"],
        _refused(2, "expected C <= "),
    ),
    "cp -c 1e300": (
        "cp_learn",
        ["-v", "0", "-c", "1e300", "{first20}", "{out}"],
        _refused(2, "expected C <= "),
    ),
    "cp -w 5 -c 1e300": (
        "cp_learn",
        ["-v", "0", "-w", "5", "-c", "1e300", "{first20}", "{out}"],
        _refused(2, "expected C <= "),
    ),
    "cp multiclass -c 1e300": (
        "cp_learn",
        ["-v", "0", "-c", "1e300", "{dna60}", "{out}"],
        _refused(2, "expected C <= "),
    ),
    "sampled -c 1e300": (
        "sampled_learn",
        ["-v", "0", "-c", "1e300", "{first20}", "{out}"],
        _refused(2, "expected C <= "),
    ),
    "asset -c 1e300": (
        "asset_learn",
        ["-v", "0", "-c", "1e300", "--k", "5", "{first20}", "{out}"],
        _refused(2, "expected C <= ", "got 1e+300"),
    ),
    # issue 47 item 8: every value checked against the data before the work
    **{
        " ".join([command, *extra, "-c 1e308"]): (
            command,
            ["-v", "0", "-c", "1e308", *extra, "{a300}", "{out}"],
            _before_training(2, "expected C <= ", "got 1e+308"),
        )
        for command, extra in (
            ("cp_learn", []),
            ("cp_learn", ["-w", "3"]),
            ("ocas_learn", []),
            ("ocas_learn", ["-m", "0"]),
            ("asset_learn", ["-t", "2", "-g", "0.1", "--k", "5"]),
        )
    },
    **{
        " ".join([command, *extra, "-c", c]): (
            command,
            ["-v", "0", "-c", c, *extra, "{a300}", "{out}"],
            _before_training(2, "expected C >= ", "for this data"),
        )
        for command, extra, c in (
            ("cp_learn", [], "5e-324"),
            ("cp_learn", ["-w", "9"], "1e-320"),
            ("cp_learn", ["-t", "2"], "1e-320"),
            ("ocas_learn", [], "1e-320"),
            ("ocas_learn", ["-m", "2"], "5e-324"),
            ("sampled_learn", [], "1e-320"),
            ("asset_learn", ["--k", "5"], "5e-324"),
        )
    },
    "cp hmm -c 1e-320": (
        "cp_learn",
        ["-v", "0", "-c", "1e-320", str(SAMPLES / "ewt60.hmm.train"), "{out}"],
        _before_training(2, "expected C >= "),
    ),
    "asset -l 1e-310": (
        "asset_learn",
        ["-v", "0", "-l", "1e-310", "--k", "5", "{a300}", "{out}"],
        _before_training(2, "expected lambda (-l) >= "),
    ),
    "asset rff -g 1e308": (
        "asset_learn",
        ["-v", "0", "-c", "1", "--approx", "rff", "-t", "2", "-g", "1e308", "{a300}", "{out}"],
        _before_training(2, "expected -g <= ", "random Fourier features"),
    ),
    **{
        f"cp -t 3 {flag} inf": (
            "cp_learn",
            ["-v", "0", "-c", "1", "-t", "3", flag, "inf", "{first20}", "{out}"],
            _before_training(2, f"expected a finite kernel parameter {flag}, got inf"),
        )
        for flag in ("-g", "-s", "-r")
    },
    **{
        f"cp --b {value}": (
            "cp_learn",
            ["-v", "0", "-c", "1", "--b", value, "{first20}", "{out}"],
            _before_training(2, "--b with |b| <= 1e+150", f"got {value}"),
        )
        for value in ("inf", "-inf", "1e+308")
    },
    "cp hmm --b 1e308": (
        "cp_learn",
        ["-v", "0", "-c", "1", "--b", "1e308", str(SAMPLES / "ewt60.hmm.train"), "{out}"],
        _before_training(2, "expected --b 0..1e+09"),
    ),
    "ocas -b 1e308": (
        "ocas_learn",
        ["-c", "1", "-b", "1e308", "{first20}", "{out}"],
        _before_training(2, "'-b'", "magnitude at most 1e150"),
    ),
    "asset -z r -w 1e308": (
        "asset_learn",
        ["-z", "r", "-c", "1", "-w", "1e308", "{reg}", "{out}"],
        _before_training(2, "'-w'", "-w <= 1e150"),
    ),
    **{
        f"{command} {flag} nan": (
            command,
            ["-c", "1", flag, "nan", "{first20}", "{out}"],
            _before_training(2, f"'{flag}'", "expected a number, got nan"),
        )
        for command, flag in (
            ("cp_learn", "--max-time"),
            ("ocas_learn", "-t"),
            ("ocas_learn", "-q"),
            ("sampled_learn", "--max-time"),
            ("cp_learn", "-g"),
        )
    },
    "cp --c-path 1e-320,1": (
        "cp_learn",
        ["--cv", "2", "--c-path", "1e-320,1", "{a300}", "{out}"],
        _refused(2, "expected C >= "),
    ),
    "asset --c-path 0,1": (
        "asset_learn",
        ["--cv", "2", "--c-path", "0,1", "{a300}", "{out}"],
        _refused(2, "every value a finite C > 0, got 0"),
    ),
    **{
        f"{command} -c inf": (
            command,
            ["-c", "inf", "{first20}", "{out}"],
            _before_training(2, "expected a finite C > 0"),
        )
        for command in LEARNERS
    },
    "ocas -m 2 -c inf": (
        "ocas_learn",
        ["-m", "2", "-c", "inf", "{first20}", "{out}"],
        _before_training(2, "expected a finite C > 0"),
    ),
    **{
        f"{command} --seed -1": (
            command,
            ["-c", "1", "--seed", "-1", "{first20}", "{out}"],
            _before_training(2, "expected --seed >= 0"),
        )
        for command in LEARNERS
    },
    **{
        f"{command} -t 1 -d 3 on 1e100": (
            command,
            ["-v", "0", "-c", "1", "-t", "1", "-d", "3", "--k", "5", "{big}", "{out}"]
            if command != "sampled_learn"
            else ["-v", "0", "-c", "1", "-t", "1", "-d", "3", "{big}", "{out}"],
            _refused(1, "big.train:7: ", "polynomial kernel"),
        )
        for command in ("cp_learn", "sampled_learn", "asset_learn")
    },
    # silently wrong: the measure, the float32 reading, --c-path's ranges, --trace, -l 0
    "asset -z r --cv on -1 0.5 1": (
        "asset_learn",
        ["-z", "r", "-c", "1", "--k", "5", "--cv", "5", "--seed", "2", "{reg}"],
        _regression_folds,
    ),
    "asset -z r --cv on -1 0 1": (
        "asset_learn",
        ["-z", "r", "-c", "1", "--k", "5", "--cv", "5", "{reg3}"],
        _regression_folds,
    ),
    "ocas -m 2 on 1e50": (
        "ocas_learn",
        ["-v", "0", "-m", "2", "{e50}", "{tmp}/e50.model"],
        _trained,
    ),
    "cp_classify 1e50": (
        "cp_classify",
        ["-v", "1", "{e50}", "{tmp}/e50.model", "{out}"],
        _classified_right,
    ),
    "cp --cv 60 rank": ("cp_learn", ["-c", "10", "--cv", "60", "{rank0}"], _fold_means_agree),
    "ocas --cv precision 0/0": (
        "ocas_learn",
        ["-c", "1", "--cv", "3", "{noplus}"],
        _ok(
            "precision undefined (no example predicted +1)",
            "Note: precision is undefined on 3 of the 3 held-out folds",
        ),
    ),
    "--c-path LOW:HIGH:1": (
        "ocas_learn",
        ["--c-path", "1e-3:1e3:1", "{first20}", "{out}"],
        _before_training(2, "HIGH would be ignored"),
    ),
    "--c-path 5:5:3": (
        "ocas_learn",
        ["--c-path", "5:5:3", "{first20}", "{out}"],
        _before_training(2, "LOW = HIGH gives one value"),
    ),
    "ocas --cv --trace, no model": (
        "ocas_learn",
        ["--cv", "2", "--trace", "{tmp}/t.tsv", "{first20}"],
        _before_training(2, "--trace"),
    ),
    "cp -l 0 --c-path": (
        "cp_learn",
        ["-l", "0", "-w", "3", "--cv", "3", "--c-path", "1,100", "{a300}"],
        _chosen_by_error,
    ),
    # unclear messages: a fold's training part, a 0-based index, missing folders
    "--cv 5 on one +1": (
        "ocas_learn",
        ["--cv", "5", "{one}", "{out}"],
        _refused(1, "the training part of fold", "all targets are -1"),
    ),
    "0-based index": (
        "ocas_learn",
        ["{zero}", "{out}"],
        _refused(1, "zero.train:3: ", "add 1 to every index"),
    ),
    **{
        f"{command} missing {what} folder": (
            command,
            [*args, "{first20}", "{out}"],
            _before_training(1, "/no/such/folder", "the folder"),
        )
        for command in LEARNERS
        for what, args in (
            ("--plot", ["-c", "1", "--cv", "2", "--plot", "/no/such/folder/p.svg"]),
            ("--trace", ["-c", "1", "--trace", "/no/such/folder/t.tsv"]),
        )
    },
    **{
        f"{command} missing model folder": (
            command,
            ["-c", "1", "--cv", "2", "{first20}", "/no/such/folder/m"],
            _before_training(1, "/no/such/folder/m: ", "does not exist"),
        )
        for command in LEARNERS
    },
    # memory without bound: endless lines (NUL bytes) and numbers of megabytes
    "ocas /dev/zero": (
        "ocas_learn",
        ["-c", "1", "/dev/zero", "{out}"],
        _refused(1, "/dev/zero:1: expected text, found a NUL byte"),
    ),
    "ocas -C /dev/zero": (
        "ocas_learn",
        ["-c", "1", "-C", "/dev/zero", "{first20}", "{out}"],
        _refused(1, "/dev/zero:1: expected text, found a NUL byte"),
    ),
    "asset --validate /dev/full": (
        "asset_learn",
        ["-c", "1", "--k", "5", "--validate", "/dev/full", "{first20}", "{out}"],
        _refused(1, "/dev/full:1: expected text, found a NUL byte"),
    ),
    "cp_classify model /dev/zero": (
        "cp_classify",
        ["{first20}", "/dev/zero", "{out}"],
        _refused(1, "/dev/zero:1: expected text, found a NUL byte"),
    ),
    "ocas a number of 5000 digits": (
        "ocas_learn",
        ["-c", "1", "{longnum}", "{out}"],
        _refused(1, "longnum.train:3: expected a number of at most 4096 characters"),
    ),
    # class weights (--class-weight, -j): each refusal one line, no model
    **{
        f"{command} --class-weight 1:{weight}": (
            command,
            ["-c", "1", "--class-weight", f"1:{weight}", "{first20}", "{out}"],
            _before_training(2, "--class-weight weights that are finite numbers > 0"),
        )
        for command in ("ocas_learn", "cp_learn", "sampled_learn")
        for weight in ("0", "-2", "nan", "inf")
    },
    "ocas --class-weight unknown label": (
        "ocas_learn",
        ["-c", "1", "--class-weight", "2:3", "{first20}", "{out}"],
        _refused(1, "--class-weight: no class 2 in the training data (its classes: -1, 1)"),
    ),
    "cp_learn --class-weight unknown label": (
        "cp_learn",
        ["-c", "1", "--class-weight", "4:3", "{dna60}", "{out}"],
        _refused(1, "--class-weight: no class 4 in the training data"),
    ),
    "ocas --class-weight repeated label": (
        "ocas_learn",
        ["-c", "1", "--class-weight", "1:2,-1:3,1:4", "{first20}", "{out}"],
        _before_training(2, "expected each label once in --class-weight, got 1 twice"),
    ),
    "sampled --class-weight repeated label": (
        "sampled_learn",
        ["-c", "1", "--class-weight", "+1:2,1:4", "{first20}", "{out}"],
        _before_training(2, "expected each label once in --class-weight, got 1 twice"),
    ),
    "ocas --class-weight balanced, a class absent from a fold": (
        "ocas_learn",
        ["--cv", "2", "-c", "1", "--class-weight", "balanced", "{rare3}", "{out}"],
        _refused(1, "training part of fold", "class 3 has no example in the data trained on"),
    ),
    "cp_learn --class-weight balanced, a class absent from a fold": (
        "cp_learn",
        ["--cv", "2", "-c", "1", "--class-weight", "balanced", "{rare3}", "{out}"],
        _refused(1, "training part of fold", "class 3 has no example in the data trained on"),
    ),
    "ocas -j with --class-weight": (
        "ocas_learn",
        ["-c", "1", "-j", "2", "--class-weight", "1:2", "{first20}", "{out}"],
        _before_training(2, "give -j or --class-weight, not both"),
    ),
    **{
        f"asset --class-weight 1:{weight}": (
            "asset_learn",
            ["-c", "1", "--class-weight", f"1:{weight}", "{first20}", "{out}"],
            _before_training(2, "--class-weight weights that are finite numbers > 0"),
        )
        for weight in ("0", "-2", "nan", "inf")
    },
    **{
        f"asset -j {factor}": (
            "asset_learn",
            ["-c", "1", "-j", factor, "{first20}", "{out}"],
            _before_training(2, "a cost factor 0 < -j <= 1e150"),
        )
        for factor in ("0", "-2", "nan", "inf")
    },
    "asset --class-weight unknown label": (
        "asset_learn",
        ["-c", "1", "--class-weight", "2:3", "{first20}", "{out}"],
        _refused(1, "--class-weight: no class 2 in the training data (its classes: -1, 1)"),
    ),
    "asset --class-weight repeated label": (
        "asset_learn",
        ["-c", "1", "--class-weight", "-1:2,-1:4", "{first20}", "{out}"],
        _before_training(2, "expected each label once in --class-weight, got -1 twice"),
    ),
    **{
        f"asset {' '.join(weights)} -z r": (
            "asset_learn",
            ["-c", "1", "-z", "r", *weights, "{first20}", "{out}"],
            _before_training(2, "--class-weight and -j weigh classes: -z c only, not -z r"),
        )
        for weights in (["--class-weight", "1:2"], ["--class-weight", "balanced"], ["-j", "2"])
    },
    "asset -j with --class-weight": (
        "asset_learn",
        ["-c", "1", "-j", "2", "--class-weight", "1:2", "{first20}", "{out}"],
        _before_training(2, "give -j or --class-weight, not both"),
    ),
    "asset default --k on 300 examples": (
        "asset_learn",
        ["-c", "1000", "-t", "2", "-g", "0.1", "--epochs", "2", "{a300}", "{out}"],
        _ok("Nystrom, s=300 basis examples"),
    ),
    "asset -k 1000000000 on 300 examples": (
        "asset_learn",
        ["-c", "1", "-k", "1000000000", "--k", "5", "--epochs", "2", "{a300}", "{out}"],
        _ok("mini-batch 300"),
    ),
    "asset --k 1000 on 300 examples": (
        "asset_learn",
        ["-c", "1", "--k", "1000", "--epochs", "2", "{a300}", "{out}"],
        _ok("--k 1000 > the 300 training examples: s = 300", stream="stderr"),
    ),
    "cp_classify missing output folder": (
        "cp_classify",
        ["{first20}", "{tmp}/e50.model", "/no/such/folder/p"],
        _before_training(1, "/no/such/folder/p: "),
    ),
    # --probability: data too few for its 5 folds, one class, not binary classification
    **{
        f"{command} --probability on {what}": (
            command,
            ["-c", "1", "--probability", f"{{{data}}}", "{out}"],
            _refused(1, *texts),
        )
        for command in LEARNERS
        for what, data, texts in (
            ("3 examples", "three", ("at least 5 examples and 2 of each class", "found 3")),
            ("one class", "plus", ("+1",)),
            ("one +1", "one", ("2 of each class", "(1 +1, 49 -1)")),
        )
    },
    "ocas --probability multiclass": (
        "ocas_learn",
        ["-c", "1", "--probability", "{dna60}", "{out}"],
        _refused(2, "--probability", "binary classification", "multiclass"),
    ),
    "asset -z r --probability": (
        "asset_learn",
        ["-c", "1", "-z", "r", "--probability", "{reg}", "{out}"],
        _refused(2, "--probability", "regression"),
    ),
    "cp_classify --probability, model without A and B": (
        "cp_classify",
        ["--probability", "{first20}", "{tmp}/e50.model", "{out}"],
        _before_training(1, "e50.model: ", "--probability needs Platt's sigmoid"),
    ),
}

# --init-model (issue 46): a model that does not fit is one line, no model written
FEATURE_CASES.update(
    {
        f"{command} --init-model {what}": (
            command,
            [*flags, "--init-model", model, data, model if check is _init_model_kept else "{out}"],
            check,
        )
        for command, flags, what, model, data, check in [
            ("ocas_learn", ["-m", "1"], "fits", "{tmp}/fits.model", "{first20}", _trained),
            ("ocas_learn", ["-m", "2"], "fits", "{tmp}/fits.model", "{first20}", _trained),
            ("ocas_learn", ["-m", "2"], "of multiclass", "{tmp}/mc3.model", "{dna60}", _trained),
            (
                "ocas_learn",
                [],
                "of another kind",
                "{tmp}/mc3.model",
                "{first20}",
                _refused(1, "--init-model: expected a binary linear model, got a multiclass"),
            ),
            (
                "ocas_learn",
                ["-m", "0"],
                "of more features",
                "{tmp}/wide.model",
                "{first20}",
                _refused(1, "the model's features go up to index 500"),
            ),
            (
                "ocas_learn",
                ["-m", "2"],
                "of 4 classes",
                "{tmp}/mc4.model",
                "{dna60}",
                _refused(1, "the model has 4 classes, the training data 3"),
            ),
            (
                "ocas_learn",
                [],
                "with b, no -b",
                "{tmp}/threshold.model",
                "{first20}",
                _refused(1, "threshold b = 0.5", "give -b"),
            ),
            (
                "ocas_learn",
                [],
                "truncated",
                "{tmp}/cut.model",
                "{first20}",
                _refused(1, "cut.model", "truncated model file"),
            ),
            (
                "ocas_learn",
                [],
                "the output itself",
                "{tmp}/self-ocas.model",
                "{first20}",
                _init_model_kept,
            ),
            (
                "ocas_learn",
                [],
                "missing",
                "{tmp}/no-such.model",
                "{first20}",
                _before_training(1, "no-such.model: no such file"),
            ),
            ("cp_learn", ["-c", "1"], "fits", "{tmp}/fits.model", "{first20}", _trained),
            (
                "cp_learn",
                ["-c", "1"],
                "of another kind",
                "{tmp}/mc3.model",
                "{first20}",
                _refused(1, "--init-model: expected a binary linear model"),
            ),
            (
                "cp_learn",
                ["-c", "1", "-w", "3"],
                "by -w 3",
                "{tmp}/fits.model",
                "{first20}",
                _refused(1, "--init-model starts -w 5 and -w 9"),
            ),
            (
                "cp_learn",
                ["-c", "1", "-t", "2"],
                "with a kernel",
                "{tmp}/fits.model",
                "{first20}",
                _refused(1, "linear binary"),
            ),
            (
                "cp_learn",
                ["-c", "1"],
                "the output itself",
                "{tmp}/self-cp.model",
                "{first20}",
                _init_model_kept,
            ),
            (
                "asset_learn",
                ["-c", "1", "--approx", "none"],
                "fits",
                "{tmp}/fits.model",
                "{first20}",
                _trained,
            ),
            (
                "asset_learn",
                ["-c", "1", "--approx", "none"],
                "of another kind",
                "{tmp}/mc3.model",
                "{first20}",
                _refused(1, "expected a binary linear model"),
            ),
            (
                "asset_learn",
                ["-c", "1", "-t", "2"],
                "of another map",
                "{tmp}/fits.model",
                "{first20}",
                _refused(1, "expected a Nystrom model of this run's basis"),
            ),
            (
                "asset_learn",
                ["-c", "1", "--star", "--approx", "none"],
                "with --star",
                "{tmp}/fits.model",
                "{first20}",
                _before_training(2, "--init-model starts ASSET"),
            ),
            (
                "asset_learn",
                ["-c", "1"],
                "the output itself",
                "{tmp}/self-asset.model",
                "{first20}",
                _init_model_kept,
            ),
        ]
    }
)

HEADER_CASES = [
    "mc.classes",
    "mc.base-1",
    "mc.base10",
    "hmm.classes",
    "hmm.emission",
    "hmm.order",
]


@pytest.fixture(scope="module")
def feature_outcomes(tmp_path_factory):
    """Every case of FEATURE_CASES and HEADER_CASES run in driver processes: by name."""
    tmp = tmp_path_factory.mktemp("features")
    _feature_files(tmp)
    names = {
        k: str(tmp / f"{k}.train")
        for k in (
            "first20",
            "a300",
            "big",
            "one",
            "zero",
            "dna60",
            "reg",
            "reg3",
            "e50",
            "rank0",
            "noplus",
            "longnum",
            "three",
            "plus",
            "rare3",
        )
    }
    plan, order = [], []
    for k, (name, (command, args, _)) in enumerate(FEATURE_CASES.items()):
        out = tmp / f"case{k}.out"
        filled = [a.format(tmp=tmp, out=out, **names) for a in args]
        # the output file: {out}, or a file the case names in the case's folder
        written = out if "{out}" in args or not args[-1].startswith("{tmp}") else filled[-1]
        plan.append([command, filled, str(written)])
        order.append(name)
    models = [
        [
            "cp_learn",
            ["-v", "0", "-c", "10", str(SAMPLES / "dna1k.train"), str(tmp / "mc.model")],
            str(tmp / "mc.model"),
        ],
        [
            "cp_learn",
            [
                "-v",
                "0",
                "-c",
                "10",
                "-e",
                "1",
                str(SAMPLES / "ewt60.hmm.train"),
                str(tmp / "hmm.model"),
            ],
            str(tmp / "hmm.model"),
        ],
    ]
    outcomes = dict(zip(order, _run_plan(tmp, plan + models)))
    _models_with_edited_headers(tmp)
    plan = []
    for name in HEADER_CASES:
        test = SAMPLES / ("dna500.test" if name.startswith("mc") else "ewt30.hmm.test")
        out = tmp / f"{name}.pred"
        plan.append(["cp_classify", ["-v", "0", str(test), str(tmp / name), str(out)], str(out)])
    outcomes.update(zip(HEADER_CASES, _run_plan(tmp, plan)))
    return outcomes


def _run_plan(tmp, plan):
    return run_family(tmp, plan)


@pytest.mark.parametrize("name", list(FEATURE_CASES))
def test_feature_case(feature_outcomes, name):
    case = feature_outcomes[name]
    assert "Traceback" not in case["stderr"], case["stderr"]
    FEATURE_CASES[name][2](case)


@pytest.mark.parametrize("name", HEADER_CASES)
def test_model_header_contradicting_its_body(feature_outcomes, name):
    """A multiclass or SVM-hmm model whose header was edited (classes, base or emission
    features, transition order) contradicts its highest feature index: refused with the
    line, nothing predicted."""
    _refused(1, "the header contradicts")(feature_outcomes[name])


def _interrupted_in_cross_validation(module, args, model, fits_done):
    """Run ``python -m cpsvm.cli.<module> args`` with its stderr on a terminal (a pty),
    where its progress bar counts the cross-validation's fits as they end; send Ctrl-C
    as soon as the bar shows ``fits_done`` fits done or more (it may skip a count that
    came sooner than its redraw interval). (status, the count shown when the Ctrl-C was
    sent, the lines the terminal shows at the end: the bar's redraws, each after a
    carriage return, not counted.)"""
    import fcntl
    import os
    import pty
    import re
    import select
    import signal
    import struct
    import termios

    from conftest import ROOT

    terminal, its_side = pty.openpty()
    # (tqdm draws no bar on a terminal of width 0)
    fcntl.ioctl(its_side, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", f"cpsvm.cli.{module}", *map(str, args), str(model)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=its_side,
    )
    os.close(its_side)
    shown, sent = b"", None
    try:
        while True:
            if not select.select([terminal], [], [], 300)[0]:
                raise AssertionError(f"no output for 300 s:\n{shown.decode(errors='replace')}")
            try:
                chunk = os.read(terminal, 65536)
            except OSError:  # (EIO: the command has ended, its side of the pty closed)
                break
            if not chunk:
                break
            shown += chunk
            bars = re.findall(rb"\rcross-validation:[^\r]*\| *(\d+)/\d+ ", shown)
            if sent is None and bars and int(bars[-1]) >= fits_done:
                proc.send_signal(signal.SIGINT)
                sent = int(bars[-1])
    except BaseException:
        proc.kill()
        raise
    finally:
        os.close(terminal)
        proc.wait(timeout=300)
    text = shown.decode(errors="replace").replace("\r\n", "\n")
    assert sent is not None and int(bars[-1]) == sent, text  # (no fit ended after it)
    lines = [line.split("\r")[-1].strip() for line in text.split("\n")]
    return proc.returncode, sent, [line for line in lines if line]


# The moments are counted in fits done, as the command's progress bar shows them (each
# fit takes far longer than a Ctrl-C takes to arrive): before the first fit, and in
# later ones; the fold and C the Ctrl-C lands in follow from the count.
@pytest.mark.parametrize(
    ("module", "args", "values", "moments"),
    [
        (
            "ocas",
            ["-r", "1e-6", "-c", "100", "--cv", "5", SAMPLES / "a9a3k.train"],
            [100.0],
            [0, 1, 3],
        ),
        (
            "learn",
            ["-e", "0.001", "--c-path", "100,1000,10000", SAMPLES / "a9a3k.train"],
            [100.0, 1000.0, 10000.0],  # (each fold trains them in turn)
            [0, 1, 7],
        ),
    ],
)
def test_ctrl_c_in_cross_validation(tmp_path, module, args, values, moments):
    """Ctrl-C while the folds train (in a compiled kernel or between two): exit 130, one
    line saying where, no traceback, the model file as it was; at several moments."""
    model = tmp_path / "m"
    prog = "ocas_learn" if module == "ocas" else "cp_learn"
    for fits_done in moments:
        model.write_text("the model of an earlier run\n")
        code, sent, shown = _interrupted_in_cross_validation(module, args, model, fits_done)
        fold, C = sent // len(values) + 1, values[sent % len(values)]
        assert code == 130, shown
        assert shown == [
            f"{prog}: interrupted (Ctrl-C) in the cross-validation, fold {fold} of 5 at "
            f"C = {C:g}: nothing written"
        ]
        assert model.read_text() == "the model of an earlier run\n"


# -- the scikit-learn searches under hostile parameters (in this process) -----------------


def _a9a(n):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(SAMPLES / "a9a3k.train"))
    return X[:n], y[:n]


def test_cv_estimator_refuses_a_c_too_large_with_its_bound():
    from cpsvm.sklearn import OCASClassifierCV

    X, y = _a9a(20)
    with pytest.raises(ValueError, match=r"expected C <= \S+ for this data, got 1e\+300"):
        OCASClassifierCV(Cs=[1e300], cv=2).fit(X, y)


@pytest.mark.parametrize("Cs", [3.0, True, np.float64(2.5), None])
def test_cv_estimator_refuses_cs_that_is_no_count_nor_list(Cs):
    from cpsvm.sklearn import CuttingPlaneSVCCV, OCASClassifierCV

    X, y = _a9a(40)
    for search in (OCASClassifierCV, CuttingPlaneSVCCV):
        with pytest.raises(ValueError, match=r"must be an int in the range \[1, inf\) or"):
            search(Cs=Cs, cv=2).fit(X, y)


def test_cv_split_without_weighted_test_rows_is_left_out():
    """A split whose test rows all weigh 0 has no score: warned and left out of the
    means; C_ is the best of the scored splits' means (recomputed here)."""
    from cpsvm.sklearn import OCASClassifierCV

    X, y = _a9a(120)
    weight = np.ones(120)
    weight[80:] = 0.0
    rows = np.arange(120)
    splits = [(rows[~((rows // 40) == f)], rows[(rows // 40) == f]) for f in range(3)]
    Cs = [0.001, 0.1, 10.0]
    with pytest.warns(UserWarning, match=r"1 of the 3 cross-validation splits \(2\)"):
        search = OCASClassifierCV(Cs=Cs, cv=splits).fit(X, y, sample_weight=weight)
    results = search.cv_results_
    assert np.all(np.isnan(results["split2_test_score"]))
    scored = np.vstack([results["split0_test_score"], results["split1_test_score"]])
    np.testing.assert_allclose(results["mean_test_score"], scored.mean(axis=0))
    assert search.C_ == Cs[int(np.argmax(scored.mean(axis=0)))]
