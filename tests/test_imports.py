"""The house rules on imports, read from the source of every module (ast): the layers of
tests/layers.py (no import upward, no cycle between layers or modules), the engine's and
the solvers' own rules. (That importing cpsvm leaves the process as it found it is
tests/e2e/test_cli_common.py's.)"""

import ast
import functools
import re
from pathlib import Path

import pytest
from layers import LAYERS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "cpsvm"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def _parsed(path: Path, text: str):
    return ast.parse(text, str(path))


def parsed(path: Path, source: str | None = None):
    """The file's syntax tree (``source`` standing in for its text), parsed once."""
    return _parsed(path, path.read_text() if source is None else source)


def imported_names(path: Path, source: str | None = None):
    """Every module the file imports (anywhere in it, lazy imports too), absolute; for
    ``from X import a`` both X and X.a (a may be a submodule). ``source`` stands in for
    the file's text."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(parsed(path, source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            yield node.lineno, target
            for alias in node.names:
                yield node.lineno, f"{target}.{alias.name}"


# -- imports by string ---------------------------------------------------------------------
# What no import statement shows: importlib.import_module / __import__ calls, the
# "module:function" strings of the compiled kernels (JitOnly's targets; the build imports
# the modules cpsvm/compiled/signatures.txt names) and ``python -m cpsvm.x`` subprocesses.
# The reader works a name out of constants, ``__name__`` and ``__package__``; a name it
# cannot (a variable) is declared in STRING_IMPORT_SOURCES, by where its values come from.

IMPORT_CALLS = ("import_module", "__import__")
KERNEL_TARGET = re.compile(r"(cpsvm(?:\.\w+)+):\w+")  # "cpsvm.engine.prefetch:prefetch"


def _text(node, known: dict):
    """The value of a str expression made of constants and the names of ``known``
    (f-strings and + included), or None."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.FormattedValue):
        return _text(node.value, known) if node.conversion == -1 and not node.format_spec else None
    if isinstance(node, ast.JoinedStr):
        parts = [_text(value, known) for value in node.values]
        return None if None in parts else "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left, known), _text(node.right, known)
        return None if left is None or right is None else left + right
    return None


def string_imports(path: Path, source: str | None = None):
    """(line, module or None, the argument's source text) of each import by string in the
    file: an import_module / __import__ call (module None when the reader cannot work
    its argument out), a "cpsvm.x:function" string, ``"-m", "cpsvm.x"`` in a list or
    tuple. ``source`` stands in for the file's text."""
    name = module_name(path)
    known = {
        "__name__": name,
        "__package__": name if path.name == "__init__.py" else name.rpartition(".")[0],
    }
    for node in ast.walk(parsed(path, source)):
        if isinstance(node, ast.Call) and node.args:
            called = getattr(node.func, "attr", getattr(node.func, "id", None))
            if called in IMPORT_CALLS:
                yield node.lineno, _text(node.args[0], known), ast.unparse(node.args[0])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            target = KERNEL_TARGET.fullmatch(node.value)
            if target:
                yield node.lineno, target.group(1), repr(node.value)
        elif isinstance(node, (ast.List, ast.Tuple)):
            for flag, argument in zip(node.elts, node.elts[1:]):
                target = _text(argument, known)
                if _text(flag, known) == "-m" and target and within(target, "cpsvm"):
                    yield node.lineno, target, ast.unparse(argument)


def module_constant(path: Path, constant: str):
    """The value of a module-level ``constant = <literal>`` of the file."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == constant for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise LookupError(f"{path}: no {constant} = <literal>")


def kernel_modules():
    """The modules whose kernels cpsvm/compiled/signatures.txt lists (the build imports
    each)."""
    lines = (PACKAGE / "compiled" / "signatures.txt").read_text().splitlines()
    return sorted({line.split(":")[0] for line in lines if line and not line.startswith("#")})


# Where the names of the imports by string the reader cannot work out come from, each
# (module, the argument's source text): a function giving the cpsvm modules it may import.
STRING_IMPORT_SOURCES = {
    # a user's problem, --problem module:Class: the user's module, not one of cpsvm
    ("cpsvm.problems.user", "module_name"): list,
    # JitOnly.resolve: the "module:function" given to JitOnly, read where it is written
    ("cpsvm.compiled", "module"): list,
    # the compiled extensions _kernels<N> (no Python source; they import no cpsvm module)
    ("cpsvm.compiled", "f'{__name__}.{module}'"): list,
    # the build compiles the kernels of the modules signatures.txt names
    ("cpsvm.compiled.build", "module"): kernel_modules,
    ("cpsvm.compiled.build", "name.split(':')[0]"): kernel_modules,
}


def resolved_string_imports(path: Path, source: str | None = None):
    """(line, module) of each import by string of the file, the declared ones expanded;
    (line, None) for one neither worked out nor declared."""
    for line, target, argument in string_imports(path, source):
        if target is not None:
            yield line, target
        elif (module_name(path), argument) in STRING_IMPORT_SOURCES:
            for declared in STRING_IMPORT_SOURCES[(module_name(path), argument)]():
                yield line, declared
        else:
            yield line, None


def every_import(path: Path, source: str | None = None):
    """(line, module) of every import of the file: statements and imports by string."""
    yield from imported_names(path, source)
    for line, target in resolved_string_imports(path, source):
        if target is not None:
            yield line, target


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def modules(folder):
    return sorted((PACKAGE / folder).rglob("*.py"))


def test_the_reader_resolves_relative_and_lazy_imports():
    """What the rules below read: relative imports resolved against the module's package,
    imports inside functions included, ``from . import x`` seen as the module x."""
    engine = PACKAGE / "engine" / "probe.py"
    solver = PACKAGE / "solvers" / "probe.py"
    lazy = "def f():\n    from ..io.svmlight import read_svmlight\n    import tqdm\n"
    assert {n for _, n in imported_names(engine, lazy)} >= {"cpsvm.io.svmlight", "tqdm"}
    assert "cpsvm.solvers.ocas" in {n for _, n in imported_names(solver, "from . import ocas")}
    assert "cpsvm.solvers.ocas" in {n for _, n in imported_names(solver, "from .ocas import x")}
    init = PACKAGE / "engine" / "__init__.py"
    assert "cpsvm.engine.hinge" in {n for _, n in imported_names(init, "from .hinge import h")}


@pytest.mark.parametrize("path", modules("engine"), ids=lambda p: p.name)
def test_engine_imports_no_io_cli_click_or_tqdm(path):
    forbidden = ("cpsvm.io", "cpsvm.cli", "click", "tqdm")
    bad = [
        (line, name) for line, name in every_import(path) if any(within(name, f) for f in forbidden)
    ]
    assert bad == [], f"{module_name(path)} imports {bad}"


@pytest.mark.parametrize("path", modules("solvers"), ids=lambda p: p.name)
def test_no_solver_imports_another(path):
    me = module_name(path)
    others = {module_name(p) for p in modules("solvers") if p.name != "__init__.py"} - {me}
    bad = [
        (line, name)
        for line, name in every_import(path)
        if any(within(name, other) for other in others)
    ]
    assert bad == [], f"{me} imports {bad}"


def import_graph(planted: dict | None = None) -> dict:
    """cpsvm's modules and the cpsvm modules each imports (anywhere in it: imports inside
    functions and imports by string count), a ``from X import a`` read as X.a when that
    is a module, else X. ``planted``: {path: text} read instead of those files (the
    checkers' own tests)."""
    planted = planted or {}
    names = {module_name(p): p for p in [*PACKAGE.rglob("*.py"), *planted]}
    graph = {}
    for name, path in names.items():
        targets = set()
        for _, target in every_import(path, planted.get(path)):
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target and target != name:
                targets.add(target)
        graph[name] = targets
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


# The cycles between modules allowed, each the sorted modules of one (a strongly
# connected component: a cycle that grows into another is new): none since issue 45
# broke the registry's (problem_entry imported each built-in problem's package by name,
# and each package's entry imported the registry).
ALLOWED_CYCLES: list = []


def cycles_not_allowed(graph: dict, allowed=None) -> dict:
    """The cycles between modules that ``allowed`` (ALLOWED_CYCLES) does not list, and
    the ones it lists that are gone."""
    allowed = ALLOWED_CYCLES if allowed is None else allowed
    found = cycles(graph)
    return {
        "new (break it)": [c for c in found if c not in allowed],
        "gone (delete it from ALLOWED_CYCLES)": [c for c in allowed if c not in found],
    }


def test_no_import_cycle():
    assert cycles_not_allowed(import_graph()) == {
        "new (break it)": [],
        "gone (delete it from ALLOWED_CYCLES)": [],
    }


def test_the_reader_sees_imports_by_string():
    """import_module and __import__ with a name made of constants, __name__ and
    __package__ (f-strings, +); a kernel's "module:function"; ``-m cpsvm.x`` in an
    argument list; a name it cannot work out reported as None, with its text."""
    path = PACKAGE / "engine" / "probe.py"
    source = (
        "import importlib, subprocess, sys\n"
        "def f(name):\n"
        "    importlib.import_module('cpsvm.io.atomic')\n"
        "    importlib.import_module(f'{__package__}.hinge')\n"
        "    __import__('cpsvm.' + 'kernels')\n"
        "    subprocess.run([sys.executable, '-m', 'cpsvm.cluster.local', '2'])\n"
        "    subprocess.run(['svm_learn', '-m', '100'])\n"  # (-m of another tool)
        "    importlib.import_module(name)\n"
        "TARGET = 'cpsvm.engine.prefetch:prefetch'\n"
    )
    assert sorted(string_imports(path, source)) == [
        (3, "cpsvm.io.atomic", "'cpsvm.io.atomic'"),
        (4, "cpsvm.engine.hinge", "f'{__package__}.hinge'"),
        (5, "cpsvm.kernels", "'cpsvm.' + 'kernels'"),
        (6, "cpsvm.cluster.local", "'cpsvm.cluster.local'"),
        (8, None, "name"),
        (9, "cpsvm.engine.prefetch", "'cpsvm.engine.prefetch:prefetch'"),
    ]
    assert (8, None) in set(resolved_string_imports(path, source))


def test_every_import_by_string_is_worked_out_or_declared():
    """An import by a name the reader cannot work out is declared in
    STRING_IMPORT_SOURCES (else the graph would miss it), and every cpsvm module named
    by string exists."""
    names = {module_name(p) for p in PACKAGE.rglob("*.py")}
    unknown, missing = [], []
    for path in PACKAGE.rglob("*.py"):
        for line, target in resolved_string_imports(path):
            where = f"{path.relative_to(ROOT)}:{line}"
            if target is None:
                unknown.append(where)
            elif within(target, "cpsvm") and target not in names:
                missing.append((where, target))
    assert unknown == [], "declare where their names come from in STRING_IMPORT_SOURCES"
    assert missing == []
    for (module, argument), source in STRING_IMPORT_SOURCES.items():  # none stale
        path = PACKAGE / (module.removeprefix("cpsvm").replace(".", "/").lstrip("/"))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        assert argument in {a for _, t, a in string_imports(path) if t is None}, module
        assert set(source()) <= names


PLANTED_FUNCTION = "\n\ndef planted():\n    import importlib, subprocess\n\n    {}\n"


@pytest.mark.parametrize(
    ("planted_in", "planted", "in_cycle"),
    [
        (  # model_file imports atomic; atomic imports it back by name
            "io/atomic.py",
            PLANTED_FUNCTION.format("importlib.import_module(f'{__package__}.model_file')"),
            ["cpsvm.io.atomic", "cpsvm.io.model_file"],
        ),
        (  # session runs -m cpsvm.cluster.local; local runs -m cpsvm.cluster.session
            "cluster/local.py",
            PLANTED_FUNCTION.format(
                "subprocess.run([sys.executable, '-m', 'cpsvm.cluster.session'])"
            ),
            ["cpsvm.cluster.local", "cpsvm.cluster.session"],
        ),
        (  # dcd names prefetch:prefetch for its kernel; prefetch names a dcd kernel
            "engine/prefetch.py",
            "\n\nPLANTED = 'cpsvm.engine.dcd:_cs_pass'\n",
            ["cpsvm.engine.dcd", "cpsvm.engine.prefetch"],
        ),
    ],
    ids=["import_module", "-m", "module:function"],
)
def test_the_checkers_catch_a_planted_cycle_by_string(planted_in, planted, in_cycle):
    """A cycle closed by an import by string is one cycle more: the test fails."""
    path = PACKAGE / planted_in
    found = cycles_not_allowed(import_graph({path: path.read_text() + planted}))
    assert len(found["new (break it)"]) == 1 and found["gone (delete it from ALLOWED_CYCLES)"] == []
    assert set(in_cycle) <= set(found["new (break it)"][0])


def test_an_allowed_cycle_is_allowed_until_it_goes():
    """A cycle listed is no failure; broken, the listed one is reported gone (a cycle
    that grows is another: test_no_import_cycle compares whole components)."""
    atomic = PACKAGE / "io" / "atomic.py"
    planted = PLANTED_FUNCTION.format("importlib.import_module(f'{__package__}.model_file')")
    graph = import_graph({atomic: atomic.read_text() + planted})
    [cycle] = cycles(graph)
    assert cycles_not_allowed(graph, [cycle]) == {
        "new (break it)": [],
        "gone (delete it from ALLOWED_CYCLES)": [],
    }
    assert cycles_not_allowed(import_graph(), [cycle]) == {
        "new (break it)": [],
        "gone (delete it from ALLOWED_CYCLES)": [cycle],
    }


# -- layers (tests/layers.py) -------------------------------------------------------------

# The upward imports allowed, each (importer, imported module): those of the build alone
# (issue 41 moved the learners' ending and monitors below cli). The test fails when one
# comes, and the planted one below shows it would.
# The build (``python -m cpsvm.compiled.build``, run at install) is a program over the
# layers it compiles: it imports by name the modules signatures.txt lists, and no
# module imports it (test_no_module_imports_the_build).
BUILD = "cpsvm.compiled.build"
ALLOWED_UPWARD_IMPORTS: set = {(BUILD, module) for module in kernel_modules()}


def layer_of(module: str) -> str:
    """The layer of a cpsvm module, spelt as LAYERS spells it: ``io/`` for cpsvm.io and
    its modules, ``data.py`` for cpsvm.data, ``__init__.py`` for cpsvm itself."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__.py"
    return f"{parts[1]}/" if (PACKAGE / parts[1]).is_dir() else f"{parts[1]}.py"


def upward_imports(graph: dict) -> set:
    """(importer, imported) pairs of modules where the imported one's layer is above the
    importer's."""
    rank = {layer: k for k, layer in enumerate(LAYERS)}
    return {
        (importer, imported)
        for importer, targets in graph.items()
        for imported in targets
        if rank[layer_of(imported)] < rank[layer_of(importer)]
    }


def upward_imports_not_allowed(graph: dict) -> dict:
    """The imports upward that ALLOWED_UPWARD_IMPORTS does not list, and the ones it lists
    that are gone."""
    upward = upward_imports(graph)
    return {
        "new (import from a lower layer only)": sorted(upward - ALLOWED_UPWARD_IMPORTS),
        "gone (delete it from ALLOWED_UPWARD_IMPORTS)": sorted(ALLOWED_UPWARD_IMPORTS - upward),
    }


def layer_graph(graph: dict, leaving_out=frozenset()) -> dict:
    """The layers and the other layers each imports, the module imports ``leaving_out``
    (importer, imported) not counted."""
    layers = {}
    for importer, targets in graph.items():
        imports = layers.setdefault(layer_of(importer), set())
        imports.update(
            layer_of(imported)
            for imported in targets
            if (importer, imported) not in leaving_out and layer_of(imported) != layer_of(importer)
        )
    return layers


@pytest.mark.parametrize(
    "planted_import",
    [
        "from ..io.atomic import atomic_output",
        "import importlib\n\n    importlib.import_module('cpsvm.io.atomic')",  # by string
    ],
    ids=["statement", "by string"],
)
def test_the_checkers_catch_a_planted_upward_import_and_layer_cycle(planted_import):
    """decoding/viterbi.py importing io/atomic.py inside a function: no cycle between
    modules (atomic imports no decoding), but an import upward and a cycle between the
    layers (io imports decoding, and models.py, which imports decoding); and the allowed
    imports upward, taken out, reported gone."""
    viterbi = PACKAGE / "decoding" / "viterbi.py"
    planted = viterbi.read_text() + f"\n\ndef planted():\n    {planted_import}\n"
    graph = import_graph({viterbi: planted})
    assert cycles_not_allowed(graph)["new (break it)"] == []
    assert cycles(layer_graph(graph, ALLOWED_UPWARD_IMPORTS)) == [["decoding/", "io/", "models.py"]]
    for importer, imported in ALLOWED_UPWARD_IMPORTS:  # and the allowed ones gone
        graph[importer].discard(imported)
    assert upward_imports_not_allowed(graph) == {
        "new (import from a lower layer only)": [("cpsvm.decoding.viterbi", "cpsvm.io.atomic")],
        "gone (delete it from ALLOWED_UPWARD_IMPORTS)": sorted(ALLOWED_UPWARD_IMPORTS),
    }


def test_every_module_is_in_one_declared_layer():
    assert len(set(LAYERS)) == len(LAYERS)
    assert {layer_of(module) for module in import_graph()} == set(LAYERS)


def test_cluster_and_the_estimators_import_nothing_from_cli():
    graph = import_graph()
    from_cli = sorted(
        (importer, imported)
        for importer, targets in graph.items()
        if layer_of(importer) in ("cluster/", "sklearn/")
        for imported in targets
        if layer_of(imported) == "cli/"
    )
    assert from_cli == []
    assert any(layer_of(i) == "cluster/" for i in graph["cpsvm.cli.learn"])  # (it sees cli)


def test_no_upward_import_but_the_allowed_ones():
    assert upward_imports_not_allowed(import_graph()) == {
        "new (import from a lower layer only)": [],
        "gone (delete it from ALLOWED_UPWARD_IMPORTS)": [],
    }


def test_no_module_imports_the_build():
    graph = import_graph()
    assert sorted(m for m, targets in graph.items() if BUILD in targets and m != BUILD) == []


def test_no_cycle_between_layers():
    assert cycles(layer_graph(import_graph(), ALLOWED_UPWARD_IMPORTS)) == []


def page_layers(page: str) -> list:
    """The layers docs/ARCHITECTURE.md lists, in its order: the first word of each line
    of the code block under "## Layers" that does not start with a space (the others
    carry on a description)."""
    block = page.split("## Layers", 1)[1].split("```", 2)[1]
    return [line.split()[0] for line in block.splitlines()[1:] if line[:1].strip()]


def test_the_architecture_page_lists_the_declared_layers():
    sample = "## Layers\n\ntext\n\n```\nio/     readers,\n        writers\ndata.py Dataset\n```\n"
    assert page_layers(sample) == ["io/", "data.py"]
    assert page_layers((ROOT / "docs" / "ARCHITECTURE.md").read_text()) == list(LAYERS)


def test_no_module_over_800_lines():
    long = {
        module_name(p): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 800
    }
    assert long == {}
