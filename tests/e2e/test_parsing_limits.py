"""Long and deep sentences through cp_learn --problem cfg and cp_classify (issue 30): a
flat sentence past Python's recursion limit and trees nested thousands deep train and
parse; a sentence whose CKY chart cannot fit in memory, or whose parse runs out of it,
is one line naming the file, the line, its length and the chart's size, exit 1, and no
output file, never a flat fallback tree."""

import json
import subprocess
import sys

from conftest import run_cli

CLEAN = "( (S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat)))) )\n"


def test_a_long_flat_sentence_and_a_deep_tree(tmp_path):
    words = 1050  # binarised, nested deeper than Python's recursion limit
    flat = "( (S " + " ".join(f"(NN w{k % 7})" for k in range(words)) + ") )\n"
    deep = "( " + "(S (NP " * 1500 + "(DT the) (NN dog)" + "))" * 1500 + ")\n"
    train = tmp_path / "long.mrg"
    train.write_text(CLEAN + flat + deep)
    model, parsed = tmp_path / "m", tmp_path / "p"
    run = run_cli("learn", "-v", "0", "--problem", "cfg", "-c", "1", "-#", "1", train, model)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    run = run_cli("classify", train, model, parsed)
    assert run.returncode == 0, run.stderr
    lines = parsed.read_text().splitlines()
    assert len(lines) == 3 and lines[1].count("(NN ") == words
    assert "grammar cannot parse" not in run.stdout + run.stderr


DRIVER = """
import contextlib, io, json, sys
import cpsvm.decoding.cky as kernels
import cpsvm.memory
from cpsvm.cli import classify, learn

def run(main, args, patch):
    saved = cpsvm.memory.physical_memory, kernels.cky_rows
    if patch == "memory":
        cpsvm.memory.physical_memory = lambda: 1 << 20
    elif patch == "kernel":
        def kernel(*args):
            raise MemoryError("Allocation failed (probably too large).")
        kernels.cky_rows = kernel
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            main(args)
        code = 0
    except SystemExit as e:
        code = e.code
    finally:
        cpsvm.memory.physical_memory, kernels.cky_rows = saved
    return [code, err.getvalue()]

print(json.dumps([run(getattr(sys.modules["cpsvm.cli." + c], "main"), a, p)
                  for c, a, p in json.loads(sys.argv[1])]))
"""


def test_a_chart_that_cannot_fit(tmp_path):
    """In one process: the memory made 1 MiB (the refusal before allocating), and a
    kernel whose allocation fails (the error after), for both commands."""
    long = "( (S " + " ".join("(NP (DT the) (NN dog))" for _ in range(100)) + ") )\n"
    train = tmp_path / "train.mrg"
    train.write_text(CLEAN + long)
    model = tmp_path / "m"
    assert run_cli("learn", "-v", "0", "-c", "1", "-#", "2", train, model).returncode == 0
    outputs = [tmp_path / name for name in ("m2", "m3", "p1", "p2")]
    plan = [
        ["learn", ["-v", "0", "-c", "1", str(train), str(outputs[0])], "memory"],
        ["learn", ["-v", "0", "-c", "1", str(train), str(outputs[1])], "kernel"],
        ["classify", ["-v", "0", str(train), str(model), str(outputs[2])], "memory"],
        ["classify", ["-v", "0", str(train), str(model), str(outputs[3])], "kernel"],
    ]
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(plan)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for (command, _, patch), (code, stderr) in zip(plan, json.loads(done.stdout)):
        prog = f"cp_{command}"
        said = "would need a CKY chart of" if patch == "memory" else "ran out of memory in CKY"
        assert code == 1 and stderr.count("\n") == 1, (command, patch, stderr)
        assert stderr.startswith(f"{prog}: {train}:2: a sentence of 200 words {said}"), stderr
    assert not any(path.exists() for path in outputs)
