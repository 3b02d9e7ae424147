"""Compile the package's kernels ahead of time: run by setup.py's build_ext at install,
or by hand after editing a kernel (``python -m cpsvm.compiled.build``, into the source
tree).

Reads ``signatures.txt`` (kernel, return type, argument types a line), imports the
modules holding the kernels, and compiles every listed signature with numba's ahead-of-time
compiler (``numba.pycc``) into ``PARTS`` extension modules, one process each, so that the
build uses the machine's cores; then writes ``index.json``: the digest of the sources
compiled (:func:`kernel_sources`, the list the Makefile's rule reads with ``--sources``),
and per variant (one per target CPU) the CPU features its code may use, each module's
file, size and SHA-256 (checked before a run imports it), and per kernel its argument
types and the module and symbol of each compiled function. A kernel keeps its numba
options (fastmath, nogil, error model) and its calls to other kernels are inlined or
linked as numba does. The compiled modules depend on numpy only, not on numba.

Targets: ``host`` (this machine's CPU, or ``NUMBA_CPU_NAME``) always; a wheel meant for
other machines also carries a portable variant, asked for with
``CPSVM_KERNEL_TARGETS=host,x86-64-v3,x86-64-v2`` (each one as long again to build: a
plain ``pip install .`` builds the host's alone). A run takes the first variant whose
features the CPU has.

If the build fails (``numba.pycc`` missing, no C compiler, ...), index.json records the
cause and its remedy instead, and no module of an earlier build is left beside it: the
first run's line says why it compiles.

numba.pycc, and what this module takes from numba's internals: pycc compiles every
export with one set of default flags, so :func:`_kernel_flags` replaces
``numba.pycc.compiler.compile_extra`` (a private function) for the duration of a build,
to give each kernel the flags of its own ``@njit`` options, as its dispatcher would. That
is why ``numba`` is bounded in pyproject.toml to the releases this was tested with
(0.68); a failure of that patch fails the build, which is then recorded as above, never a
wrong module. numba marks ``pycc`` for deprecation; the move to its successor (numba's
planned AOT tool) replaces :func:`compile_part` alone: the signature list, index and
run-time lookup stay.

``python -m cpsvm.compiled.build --add LOG...`` adds the signatures numba compiled at run
time (the lines written to $CPSVM_KERNEL_LOG, e.g. by the test suite) to signatures.txt.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)
SOURCE_ROOT = os.path.dirname(PACKAGE_ROOT)
PARTS = 2
TARGETS_VARIABLE = "CPSVM_KERNEL_TARGETS"
# What a portable target's code may use, in numpy's names of CPU features (the x86-64
# micro-architecture levels; a run checks those its numpy knows).
_V2 = ["CX16", "LAHF", "POPCNT", "SSE", "SSE2", "SSE3", "SSE41", "SSE42", "SSSE3"]
LEVEL_FEATURES = {
    "x86-64-v2": _V2,
    "x86-64-v3": sorted(_V2 + ["AVX", "AVX2", "BMI", "BMI2", "F16C", "FMA3", "LZCNT", "MOVBE"]),
}
# Files beside the kernel sources whose change makes a build stale (the build itself, the
# run-time lookup, the signature list).
BUILD_FILES = ["compiled/__init__.py", "compiled/build.py", "compiled/signatures.txt"]


def module_name(part: int, target: str = "host") -> str:
    """The extension module of one part of one target's variant."""
    if target == "host":
        return f"_kernels{part}"
    return f"_kernels_{re.sub(r'[^0-9a-zA-Z]', '_', target)}_{part}"


def targets() -> list[str]:
    """The targets to compile for: ``host`` first, then those $CPSVM_KERNEL_TARGETS adds."""
    listed = [t.strip() for t in os.environ.get(TARGETS_VARIABLE, "").split(",") if t.strip()]
    return ["host"] + [t for t in dict.fromkeys(listed) if t != "host"]


def read_signatures(path=None) -> list[tuple[str, str, str]]:
    """(kernel, return type, argument types) of each line of signatures.txt."""
    entries = []
    with open(path or os.path.join(HERE, "signatures.txt")) as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                name, returns, arguments = line.split("\t")
                entries.append((name, returns, arguments))
    return entries


# The widths the data's edge hands a kernel's index arrays, by parameter name: RowBlocks
# narrows the column indices of 0/1 rows to one or two bytes when the columns allow (else
# X's int32), and its column copy's row indices to two bytes (else int32); scikit-learn's
# int64 indices are made int32 where estimators take X (cpsvm/sklearn/_base.py). A listed
# signature with one narrow width stands for all of them.
NARROWED = {
    "indices": ("uint8", "uint16", "int32"),
    "out_indices": ("uint8", "uint16", "int32"),  # as its indices
    "rows": ("uint16", "int32"),
}


def all_signatures() -> list[tuple[str, str, str]]:
    """signatures.txt's entries and those derived from them (:data:`NARROWED`): what the
    build compiles."""
    from . import KERNELS

    entries = read_signatures()
    seen = set(entries)
    derived = []
    for name, returns, arguments in entries:
        types = _split(arguments)
        importlib.import_module(name.split(":")[0])
        code = KERNELS[name].py_func.__code__
        params = code.co_varnames[: code.co_argcount]
        narrow = [
            i
            for i, (param, text) in enumerate(zip(params, types))
            if param in NARROWED and text.split("[")[0] in NARROWED[param][:-1]
        ]
        if not narrow:
            continue
        for width in NARROWED[params[narrow[0]]]:
            varied = list(types)
            for i in narrow:
                varied[i] = width + types[i][types[i].index("[") :]
            entry = (name, returns, ", ".join(varied))
            if entry not in seen:
                seen.add(entry)
                derived.append(entry)
    return entries + derived


def parts_of(entries, parts: int = PARTS) -> list[list[tuple[int, tuple]]]:
    """The entries (with their line numbers, which name their symbols) in ``parts``
    groups of about the same size, a module's kernels in one group."""
    by_module: dict[str, list] = {}
    for number, entry in enumerate(entries):
        by_module.setdefault(entry[0].split(":")[0], []).append((number, entry))
    groups = [[] for _ in range(parts)]
    for _, members in sorted(by_module.items(), key=lambda kv: -len(kv[1])):
        min(groups, key=len).extend(members)
    return [sorted(g) for g in groups]


def kernel_sources() -> list[str]:
    """What the compiled code is made from (paths relative to the package root), the
    list both the sources digest and the Makefile's rule read: the package's modules
    holding kernels (a kernel inlines others), the package's modules whose names a kernel
    reads (numba freezes a global's value into the code: kernel_row_loops' kernel codes
    from kernels.py), and the build's own files."""
    found = set()
    for directory, _, files in os.walk(PACKAGE_ROOT):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                if re.search(r"^@(njit|intrinsic)\b", text, re.MULTILINE):
                    relative = os.path.relpath(path, PACKAGE_ROOT).replace(os.sep, "/")
                    found.add(relative)
                    found.update(_modules_read_by_kernels(relative, text))
    found.update(BUILD_FILES)
    return sorted(found)


def _modules_read_by_kernels(relative: str, text: str) -> set[str]:
    """The package's modules from which a kernel of this module reads an imported name."""
    tree = ast.parse(text)
    package = relative.split("/")[:-1]
    origin = {}  # imported name -> the package module it comes from
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            parts = package[: len(package) - node.level + 1] + (node.module or "").split(".")
        elif (node.module or "").split(".")[0] == "cpsvm":
            parts = node.module.split(".")[1:]
        else:
            continue
        parts = [p for p in parts if p]
        for alias in node.names:
            for candidate in ("/".join(parts + [alias.name]), "/".join(parts)):
                for path in (candidate + ".py", candidate + "/__init__.py"):
                    if candidate and os.path.exists(os.path.join(PACKAGE_ROOT, path)):
                        origin.setdefault(alias.asname or alias.name, path)
    read = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(
            "njit" in ast.unparse(d) for d in node.decorator_list
        ):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and inner.id in origin:
                    read.add(origin[inner.id])
    return read - {relative, "compiled/__init__.py"}


def target_cpu(target: str = "host") -> str:
    """The CPU name numba compiles a target for ("host": this one, or NUMBA_CPU_NAME)."""
    if target == "host":
        return os.environ.get("NUMBA_CPU_NAME") or "host"
    return target


def _numba_type(text: str):
    """A signature's type text evaluated with numba's types."""
    from numba.core import types

    namespace = dict(vars(types))
    value = eval(text, {"__builtins__": {}}, namespace)  # the package's own signature file
    return _as_type(value)


def _as_type(value):
    from numba.core import types

    if isinstance(value, tuple):
        return types.Tuple(tuple(_as_type(v) for v in value))
    return value


@contextlib.contextmanager
def _kernel_flags(options_of):
    """numba.pycc compiles every export with default flags: give each kernel its own
    numba options (fastmath, nogil, error model, ...), as its dispatcher would."""
    import numba.pycc.compiler as pycc_compiler
    from numba.core.registry import cpu_target

    plain = pycc_compiler.compile_extra

    def compile_extra(typingctx, targetctx, func, args, return_type, flags, locals, library):
        options = {k: v for k, v in options_of[func].items() if k not in ("cache", "inline")}
        flags = flags.copy()  # pycc passes one Flags to every export: this kernel's own
        cpu_target.options.parse_as_flags(flags, options)
        flags.no_compile = True
        try:
            return plain(typingctx, targetctx, func, args, return_type, flags, locals, library)
        except Exception:
            print(f"cannot compile {func.__module__}.{func.__qualname__}{args}", file=sys.stderr)
            raise

    pycc_compiler.compile_extra = compile_extra
    try:
        yield
    finally:
        pycc_compiler.compile_extra = plain


def compile_part(part: int, numbered_entries, output_dir: str, target: str = "host") -> None:
    """Compile one group of entries into the extension module ``module_name(part,
    target)``."""
    from numba.pycc import CC

    from . import KERNELS

    cc = CC(module_name(part, target), source_module=__name__)
    cc.output_dir = output_dir
    cc.target_cpu = target_cpu(target)
    options_of = {}
    for number, (name, returns, arguments) in numbered_entries:
        module = name.split(":")[0]
        importlib.import_module(module)
        dispatcher = KERNELS[name].dispatcher()
        options_of[dispatcher.py_func] = dispatcher.targetoptions
        signature = _numba_type(returns)(*[_numba_type(t) for t in _split(arguments)])
        cc.export(f"k{number}", signature)(dispatcher.py_func)
    with _kernel_flags(options_of):
        cc.compile()


def _split(arguments: str) -> list[str]:
    from . import _split_top_level

    return [a.strip() for a in _split_top_level(arguments)]


class BuildFailed(RuntimeError):
    """The kernels could not be compiled: ``cause`` in a line, and its ``remedy``."""

    def __init__(self, cause: str, remedy: str):
        super().__init__(f"{cause} ({remedy})")
        self.cause, self.remedy = cause, remedy


REINSTALL = (
    "then reinstall cpsvm (pip install --force-reinstall --no-deps cpsvm), or run "
    "`python -m cpsvm.compiled.build` in its source tree"
)


def _remedy(cause: str) -> str:
    if "numba" in cause and ("pycc" in cause or "No module" in cause):
        return f"install numba>=0.68,<0.69, whose numba.pycc the build is tested with, {REINSTALL}"
    if re.search(r"\b(gcc|cc|clang|compiler|CompileError|LinkError|linker)\b", cause):
        return f"install a C compiler (the one $CC or Python's build names), {REINSTALL}"
    return REINSTALL


def _our_files(output_dir: str) -> list[str]:
    """The files a build writes in output_dir: its extension modules and index.json."""
    return [
        os.path.join(output_dir, name)
        for name in os.listdir(output_dir)
        if name == "index.json" or (name.startswith("_kernels") and not name.endswith(".py"))
    ]


def file_record(path: str) -> dict:
    """What a run checks of a module before importing it: its name, size and SHA-256."""
    with open(path, "rb") as f:
        data = f.read()
    return {
        "file": os.path.basename(path),
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def build(output_dir: str, parts: int = PARTS, log=None, kernel_targets=None) -> list[str]:
    """Compile every signature into ``output_dir`` (the package's compiled/ directory,
    in place or in a build tree) for each target (:func:`targets`), ``parts`` processes
    at once; first remove what an earlier build left there; write index.json last.
    A failure writes index.json with its cause and remedy and raises BuildFailed.
    Returns the files written."""
    from . import INDEX_FORMAT, cpu_features, sources_digest

    os.makedirs(output_dir, exist_ok=True)
    for path in _our_files(output_dir):
        os.remove(path)
    sources = kernel_sources()
    index = {
        "format": INDEX_FORMAT,
        "sources": sources,
        "sources_digest": sources_digest(sources),
    }
    kernel_targets = kernel_targets or targets()
    started = time.perf_counter()
    try:
        entries = all_signatures()
        groups = parts_of(entries, parts)
        try:
            import numba.pycc  # noqa: F401  (its absence, said as such)
        except Exception as e:
            raise BuildFailed(f"numba.pycc cannot be imported ({type(e).__name__}: {e})", "") from e
        index["numba"] = importlib.import_module("numba").__version__
        variants, seconds = [], 0.0
        for target in kernel_targets:
            seconds += _compile_parts(groups, output_dir, target)
            variant = {
                "target": target,
                "target_cpu": target_cpu(target),
                # The build machine's features bound what "host" code may use; a level
                # its own; another named CPU is the user's choice, unchecked.
                "cpu_features": (
                    cpu_features()
                    if target_cpu(target) == "host"
                    else LEVEL_FEATURES.get(target_cpu(target), [])
                ),
                "modules": {},
                "kernels": {},
            }
            if variant["target_cpu"] == "host":
                import llvmlite.binding as llvm

                variant["target_cpu"] = llvm.get_host_cpu_name()
            for part, group in enumerate(groups):
                name = module_name(part, target)
                found = [
                    p for p in _our_files(output_dir) if os.path.basename(p).startswith(name + ".")
                ]
                if len(found) != 1:
                    raise BuildFailed(f"{name}: the compiler wrote {len(found)} files", "")
                variant["modules"][name] = file_record(found[0])
                for number, (kernel, _returns, arguments) in group:
                    variant["kernels"].setdefault(kernel, []).append(
                        [arguments, name, f"k{number}"]
                    )
            variants.append(variant)
        index["variants"] = variants
        # CPU seconds a signature took to compile here: what a run's compiling costs.
        index["seconds_per_signature"] = round(seconds / max(1, len(entries) * len(variants)), 3)
    except Exception as e:
        failure = e if isinstance(e, BuildFailed) else BuildFailed(f"{type(e).__name__}: {e}", "")
        failure.remedy = failure.remedy or _remedy(failure.cause)
        for path in _our_files(output_dir):
            os.remove(path)
        index["build_failure"] = {"cause": failure.cause, "remedy": failure.remedy}
        _write_index(output_dir, index)
        raise failure from e
    path = _write_index(output_dir, index)
    if log is not None:
        log(
            f"compiled {len(entries)} kernel signatures for {', '.join(kernel_targets)} in "
            f"{time.perf_counter() - started:.0f} s"
        )
    return [path]


def _write_index(output_dir: str, index: dict) -> str:
    path = os.path.join(output_dir, "index.json")
    with open(path + ".tmp", "w") as f:
        json.dump(index, f, indent=0, sort_keys=True)
    os.replace(path + ".tmp", path)
    return path


def _compile_parts(groups, output_dir: str, target: str) -> float:
    """Compile the groups for one target, a process each; returns their CPU seconds."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [SOURCE_ROOT, os.environ.get("PYTHONPATH")])),
    )
    with tempfile.TemporaryDirectory(prefix="cpsvm-kernels-") as scratch:
        processes = []
        for part, group in enumerate(groups):
            plan = os.path.join(scratch, f"part{part}.json")
            with open(plan, "w") as f:
                json.dump(
                    {"part": part, "entries": group, "output_dir": output_dir, "target": target},
                    f,
                )
            processes.append(
                (
                    plan,
                    subprocess.Popen(
                        [sys.executable, "-m", "cpsvm.compiled.build", "--part", plan],
                        env=env,
                        stderr=subprocess.PIPE,
                        text=True,
                    ),
                )
            )
        seconds, causes = 0.0, []
        for plan, process in processes:
            _, stderr = process.communicate()
            sys.stderr.write(stderr)
            if process.returncode != 0:
                lines = [line for line in stderr.splitlines() if line.strip()]
                causes.append(lines[-1].strip() if lines else f"exit {process.returncode}")
                continue
            with open(plan + ".done") as f:
                seconds += json.load(f)["seconds"]
    if causes:
        raise BuildFailed(f"compiling the kernels for {target} failed: {causes[0]}", "")
    return seconds


def add_logged(log_paths) -> int:
    """Add the lines of $CPSVM_KERNEL_LOG files to signatures.txt (sorted, once each);
    returns how many were new."""
    path = os.path.join(HERE, "signatures.txt")
    with open(path) as f:
        lines = f.read().splitlines()
    header = [line for line in lines if line.startswith("#")]
    known = {line for line in lines if line and not line.startswith("#")}
    new = set()
    for log in log_paths:
        with open(log) as f:
            new.update(line for line in f.read().splitlines() if line)
    added = new - known
    with open(path, "w") as f:
        f.write("\n".join(header + sorted(known | new)) + "\n")
    return len(added)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m cpsvm.compiled.build")
    parser.add_argument("--part", help=argparse.SUPPRESS)
    parser.add_argument("--add", nargs="+", metavar="LOG", help="add logged signatures")
    parser.add_argument("--parts", type=int, default=PARTS)
    parser.add_argument(
        "--sources", action="store_true", help="print the files the build is made from"
    )
    args = parser.parse_args(argv)
    if args.sources:
        print(" ".join(os.path.join(os.path.relpath(PACKAGE_ROOT), p) for p in kernel_sources()))
    elif args.part:
        with open(args.part) as f:
            plan = json.load(f)
        entries = [(n, tuple(e)) for n, e in plan["entries"]]
        started = time.process_time()
        compile_part(plan["part"], entries, plan["output_dir"], plan.get("target", "host"))
        with open(args.part + ".done", "w") as f:
            json.dump({"seconds": time.process_time() - started}, f)
    elif args.add:
        print(f"{add_logged(args.add)} new signatures in {os.path.join(HERE, 'signatures.txt')}")
    else:
        try:
            build(HERE, args.parts, log=print)
        except BuildFailed as e:
            sys.exit(f"cpsvm: the kernels were not compiled: {e.cause} ({e.remedy})")


if __name__ == "__main__":
    main()
