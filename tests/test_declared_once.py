"""What is written once stays written once: the commands hand their options over by
declaration, not by relaying each value (``x=x``), and no module outside
``cpsvm/problems/`` branches on a structured problem's name."""

import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "cpsvm"

RELAY = re.compile(r"\b(\w+)=\1\b")
# The relays cli/ may keep (a value handed to a keyword of the same name that no
# declaration gives: a click context, a callback).
MOST_RELAYS = 5

_NAME = r"""["'](?:hmm|cfg|rank)["']"""
# A comparison with a structured problem's name: == / != on either side, or membership in
# a literal tuple, list or set that names one.
BRANCH = re.compile(rf"(?:[=!]=\s*{_NAME})|(?:{_NAME}\s*[=!]=)|(?:\bin\s*[(\[{{][^)\]}}]*{_NAME})")


def relay_lines(text: str) -> list:
    return [line for line in text.splitlines() if RELAY.search(line)]


def branches(text: str) -> list:
    return [line.strip() for line in text.splitlines() if BRANCH.search(line)]


def test_the_checks_see_what_they_look_for():
    assert relay_lines("f(C=C, seed=1)\nf(a=b)\n") == ["f(C=C, seed=1)"]
    assert branches('if kind == "hmm":\n  x = "rank"\nif k in ("binary", "cfg"):\n') == [
        'if kind == "hmm":',
        'if k in ("binary", "cfg"):',
    ]
    assert branches("if 'rank' != spec:\n") == ["if 'rank' != spec:"]


def test_cli_relays_at_most_a_few_values():
    found = {
        path.name: relay_lines(path.read_text())
        for path in sorted((PACKAGE / "cli").glob("*.py"))
        if relay_lines(path.read_text())
    }
    assert sum(len(lines) for lines in found.values()) <= MOST_RELAYS, found


def test_no_branch_on_a_structured_problem_outside_problems():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if (PACKAGE / "problems") in path.parents:
            continue
        lines = branches(path.read_text())
        if lines:
            found[str(path.relative_to(PACKAGE))] = lines
    assert found == {}


def test_click_is_the_commands_alone():
    # The options are declared as plain data; cpsvm/cli/ alone makes click of them.
    importing = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if (PACKAGE / "cli") not in path.parents
        and re.search(r"^\s*(import click|from click)", path.read_text(), re.M)
    ]
    assert importing == []
    modules = [
        "cpsvm.solvers.ocas", "cpsvm.solvers.one_slack", "cpsvm.solvers.sampled",
        "cpsvm.solvers.asset", "cpsvm.problems.hmm.problem", "cpsvm.problems.cfg.problem",
        "cpsvm.params.one_slack", "cpsvm.params.asset", "cpsvm.cluster.command",
        "cpsvm.problems.registry",
    ]  # fmt: skip
    code = f"import sys\nimport {', '.join(modules)}\nprint('click' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.stdout.strip() == "False", run.stderr
