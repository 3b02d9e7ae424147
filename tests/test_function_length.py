"""Long functions are split into named steps: none in cpsvm/ over MAX_LINES lines, and
at most MAX_LONG of LONG_LINES or more (the numba kernels that stay long because
splitting them would slow them down)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "cpsvm"
MAX_LINES = 200
LONG_LINES = 100
MAX_LONG = 8


def function_lengths(root=PACKAGE):
    """(lines, "path:name") of every function and method under root, decorators and
    docstrings included."""
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                out.append((lines, f"{path.relative_to(root.parent)}:{node.name}"))
    return sorted(out, reverse=True)


def test_the_lengths_are_measured(tmp_path):
    (tmp_path / "m.py").write_text(
        "def short():\n    return 1\n\n\nclass A:\n    def method(self):\n"
        + "        x = 1\n" * 5
        + "        return x\n"
    )
    assert function_lengths(tmp_path) == [
        (7, f"{tmp_path.name}/m.py:method"),
        (2, f"{tmp_path.name}/m.py:short"),
    ]


def test_no_function_is_too_long():
    lengths = function_lengths()
    assert len(lengths) > 500  # the package was found
    too_long = [f"{name} ({n} lines)" for n, name in lengths if n > MAX_LINES]
    assert not too_long, f"functions over {MAX_LINES} lines: {too_long}"


def test_few_functions_are_long():
    long = [f"{name} ({n} lines)" for n, name in function_lengths() if n >= LONG_LINES]
    assert len(long) <= MAX_LONG, f"{len(long)} functions of {LONG_LINES}+ lines: {long}"
