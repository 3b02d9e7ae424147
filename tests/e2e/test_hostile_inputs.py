"""Hostile inputs through every command: hypothesis draws families of damaged files
(huge or odd targets, values and indices, byte-order marks, truncation, deep nesting)
and one subprocess per family runs each command on all of them, in-process one after
another (tests/e2e/hostile_driver.py). The property: exit 0, 1 or 2; on failure one line
on stderr, no traceback and no output file; on success the output file exists."""

import json
import subprocess
import sys
from pathlib import Path

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
