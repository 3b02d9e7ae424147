"""The house rules on imports, read from the source of every module (ast): the layers of
tests/layers.py (no import upward, no cycle between layers or modules), the engine's and
the solvers' own rules. (That importing cpsvm leaves the process as it found it is
tests/e2e/test_cli_common.py's.)"""

import ast
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


def imported_names(path: Path, source: str | None = None):
    """Every module the file imports (anywhere in it, lazy imports too), absolute; for
    ``from X import a`` both X and X.a (a may be a submodule). ``source`` stands in for
    the file's text."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    text = path.read_text() if source is None else source
    for node in ast.walk(ast.parse(text, str(path))):
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
        (line, name)
        for line, name in imported_names(path)
        if any(within(name, f) for f in forbidden)
    ]
    assert bad == [], f"{module_name(path)} imports {bad}"


@pytest.mark.parametrize("path", modules("solvers"), ids=lambda p: p.name)
def test_no_solver_imports_another(path):
    me = module_name(path)
    others = {module_name(p) for p in modules("solvers") if p.name != "__init__.py"} - {me}
    bad = [
        (line, name)
        for line, name in imported_names(path)
        if any(within(name, other) for other in others)
    ]
    assert bad == [], f"{me} imports {bad}"


def import_graph(planted: dict | None = None) -> dict:
    """cpsvm's modules and the cpsvm modules each imports (anywhere in it: imports inside
    functions count), a ``from X import a`` read as X.a when that is a module, else X.
    ``planted``: {path: text} read instead of those files (the checkers' own tests)."""
    planted = planted or {}
    names = {module_name(p): p for p in [*PACKAGE.rglob("*.py"), *planted]}
    graph = {}
    for name, path in names.items():
        targets = set()
        for _, target in imported_names(path, planted.get(path)):
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


def test_no_import_cycle():
    assert cycles(import_graph()) == []


# -- layers (tests/layers.py) -------------------------------------------------------------

# The upward imports allowed, each (importer, imported module): none (issue 41 moved the
# learners' ending and monitors below cli). The test fails when one comes, and the
# planted one below shows it would.
ALLOWED_UPWARD_IMPORTS: set = set()


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


def test_the_checkers_catch_a_planted_upward_import_and_layer_cycle():
    """decoding/viterbi.py importing io/atomic.py inside a function: no cycle between
    modules (atomic imports no decoding), but an import upward and a cycle between the
    layers (io imports decoding, and models.py, which imports decoding); and the allowed
    imports upward, taken out, reported gone."""
    viterbi = PACKAGE / "decoding" / "viterbi.py"
    planted = (
        viterbi.read_text() + "\n\ndef planted():\n    from ..io.atomic import atomic_output\n"
    )
    graph = import_graph({viterbi: planted})
    assert cycles(graph) == []
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
