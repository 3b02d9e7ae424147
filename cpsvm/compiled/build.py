"""Compile the package's kernels ahead of time: run by setup.py's build_ext at install,
or by hand after editing a kernel (``python -m cpsvm.compiled.build``, into the source
tree).

Reads ``signatures.txt`` (kernel, return type, argument types a line), imports the
modules holding the kernels, and compiles every listed signature with numba's ahead-of-time
compiler (``numba.pycc``) into ``PARTS`` extension modules, one process each, so that the
build uses the machine's cores; then writes ``index.json``: the digest of the sources
compiled, the target CPU (the build machine's, or ``NUMBA_CPU_NAME``), the CPU features
the code may use, and per kernel its argument types and the module and symbol of each
compiled function. A kernel keeps its numba options (fastmath, nogil, error model) and
its calls to other kernels are inlined or linked as numba does. The compiled modules
depend on numpy only, not on numba.

``python -m cpsvm.compiled.build --add LOG...`` adds the signatures numba compiled at run
time (the lines written to $CPSVM_KERNEL_LOG, e.g. by the test suite) to signatures.txt.

numba marks ``pycc`` for deprecation; what this module takes from it is one call per
module (``CC``: export, compile), so the move to its successor (numba's planned AOT
tool) replaces :func:`compile_part` alone: the signature list, index and run-time lookup
stay.
"""

from __future__ import annotations

import argparse
import contextlib
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


def module_name(part: int) -> str:
    return f"_kernels{part}"


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
    """The package's modules holding kernels (paths relative to the package root): the
    compiled code is stale once any of them changes (a kernel inlines others)."""
    found = []
    for directory, _, files in os.walk(PACKAGE_ROOT):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as f:
                    if re.search(r"^@(njit|intrinsic)\b", f.read(), re.MULTILINE):
                        found.append(os.path.relpath(path, PACKAGE_ROOT))
    return sorted(found)


def target_cpu() -> str:
    return os.environ.get("NUMBA_CPU_NAME") or "host"


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


def compile_part(part: int, numbered_entries, output_dir: str) -> None:
    """Compile one group of entries into the extension module ``module_name(part)``."""
    from numba.pycc import CC

    from . import KERNELS

    cc = CC(module_name(part), source_module=__name__)
    cc.output_dir = output_dir
    cc.target_cpu = target_cpu()
    options_of = {}
    for number, (name, returns, arguments) in numbered_entries:
        module = name.split(":")[0]
        importlib.import_module(module)
        dispatcher = KERNELS[name].dispatcher()
        options_of[dispatcher.py_func] = dispatcher.targetoptions
        signature = _numba_type(returns)(*[_numba_type(t) for t in _split(arguments)])
        cc.export(f"k{number}", signature)(dispatcher.py_func)
    started = time.perf_counter()
    with _kernel_flags(options_of):
        cc.compile()
    print(
        f"{module_name(part)}: {len(numbered_entries)} signatures in "
        f"{time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )


def _split(arguments: str) -> list[str]:
    from . import _split_top_level

    return [a.strip() for a in _split_top_level(arguments)]


def build(output_dir: str, parts: int = PARTS, log=None) -> list[str]:
    """Compile every signature into ``output_dir`` (the package's compiled/ directory,
    in place or in a build tree) in ``parts`` processes at once; write index.json last,
    so that a failed build leaves no index. Returns the files written."""
    from . import parse_argument_types  # noqa: F401  (fails early on a malformed file)

    entries = read_signatures()
    groups = parts_of(entries, parts)
    started = time.perf_counter()
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [SOURCE_ROOT, os.environ.get("PYTHONPATH")])),
    )
    with tempfile.TemporaryDirectory(prefix="cpsvm-kernels-") as scratch:
        processes = []
        for part, group in enumerate(groups):
            plan = os.path.join(scratch, f"part{part}.json")
            with open(plan, "w") as f:
                json.dump({"part": part, "entries": group, "output_dir": output_dir}, f)
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "cpsvm.compiled.build", "--part", plan], env=env
                )
            )
        failed = [p.args for p in processes if p.wait() != 0]
    if failed:
        raise RuntimeError(f"compiling the kernels failed: {failed}")
    sources = kernel_sources()
    from . import cpu_features, sources_digest

    kernels: dict[str, list] = {}
    for part, group in enumerate(groups):
        for number, (name, _returns, arguments) in group:
            kernels.setdefault(name, []).append([arguments, module_name(part), f"k{number}"])
    index = {
        "sources": sources,
        "sources_digest": sources_digest(sources),
        "target_cpu": target_cpu(),
        # The build machine's features bound what "host" code may use; a named CPU is
        # the user's choice.
        "cpu_features": cpu_features() if target_cpu() == "host" else [],
        "kernels": kernels,
    }
    if index["target_cpu"] == "host":
        import llvmlite.binding as llvm

        index["target_cpu"] = llvm.get_host_cpu_name()
    path = os.path.join(output_dir, "index.json")
    with open(path + ".tmp", "w") as f:
        json.dump(index, f, indent=0, sort_keys=True)
    os.replace(path + ".tmp", path)
    if log is not None:
        log(f"compiled {len(entries)} kernel signatures in {time.perf_counter() - started:.0f} s")
    return [path]


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
    args = parser.parse_args(argv)
    if args.part:
        with open(args.part) as f:
            plan = json.load(f)
        entries = [(n, tuple(e)) for n, e in plan["entries"]]
        compile_part(plan["part"], entries, plan["output_dir"])
    elif args.add:
        print(f"{add_logged(args.add)} new signatures in {os.path.join(HERE, 'signatures.txt')}")
    else:
        build(HERE, args.parts, log=print)


if __name__ == "__main__":
    main()
