"""The package's numba kernels, compiled ahead of time.

Every kernel is written with numba and decorated with this module's :func:`njit` (which
takes numba's options). ``pip install`` compiles them (:mod:`cpsvm.compiled.build`, run
by setup.py) for the installing machine's CPU, for the argument types listed in
``signatures.txt``, into extension modules beside this file. A call looks its arguments'
types up among them and runs the compiled code: a run imports neither numba nor its
compiler. A kernel runs under numba's own compiler instead (compiled once, then cached on
disk as numba caches) when

- the compiled modules are missing (the build could not make them) or stale (a module
  holding kernels was edited since: the digest of those sources differs),
- they were built for CPU features this machine lacks, or ``CPSVM_COMPILED=0`` is set,
- a call's argument types are not among the compiled ones;

and before numba compiles (rather than loads) a kernel, one line on stderr says so, once
a process.

Under numba, a kernel is a numba dispatcher over a copy of its module's globals in which
the kernels it calls are dispatchers too (:meth:`Kernel.dispatcher`), so that numba
inlines and links them as it always has; the build compiles those dispatchers.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)
INDEX_FILE = os.path.join(HERE, "index.json")
SIGNATURES_FILE = os.path.join(HERE, "signatures.txt")
# A path the test suite sets: each kernel signature numba compiles at run time is
# appended there, so that a call the compiled modules miss does not go unseen.
LOG_VARIABLE = "CPSVM_KERNEL_LOG"

KERNELS: dict[str, Kernel] = {}
_lock = threading.RLock()


def njit(function=None, **options):
    """numba's ``njit`` for the package's kernels: ``@njit(cache=True, fastmath=...)``."""
    if function is None:
        return lambda f: Kernel(f, options)
    return Kernel(function, options)


class Kernel:
    """A numba kernel: compiled code from the extension modules for the argument types
    compiled ahead of time, numba's dispatcher for any other."""

    def __init__(self, py_func, options):
        self.py_func = py_func
        self.options = options
        self.name = f"{py_func.__module__}:{py_func.__qualname__}"
        self.__doc__ = py_func.__doc__
        self.__name__ = py_func.__name__
        self.__qualname__ = py_func.__qualname__
        self.__module__ = py_func.__module__
        self.__wrapped__ = py_func
        self._compiled = None  # {argument types: compiled function}, read at the first call
        self._dispatcher = None
        self._logged = set()
        self._arity = py_func.__code__.co_argcount
        self._defaults = py_func.__defaults__ or ()
        KERNELS[self.name] = self

    def __repr__(self):
        return f"<kernel {self.name}>"

    def __call__(self, *args, **keywords):
        if keywords or len(args) != self._arity:
            args = self._all_arguments(args, keywords)
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = library().functions(self.name)
        if compiled:
            function = compiled.get(argument_types(args))
            if function is not None:
                return function(*args)
        return self._run_under_numba(args)

    def _all_arguments(self, args, keywords):
        """Every parameter's value, positionally: the defaults filled in (compiled code
        has no optional arguments; numba would type an omitted one apart)."""
        if not keywords and self._arity - len(self._defaults) <= len(args) < self._arity:
            return args + self._defaults[len(args) - self._arity :]
        import inspect

        bound = inspect.signature(self.py_func).bind(*args, **keywords)
        bound.apply_defaults()
        return bound.args

    def dispatcher(self):
        """This kernel as a numba dispatcher (numba is imported here)."""
        if self._dispatcher is None:
            with _lock:
                if self._dispatcher is None:
                    self._make_dispatcher()
        return self._dispatcher

    def _make_dispatcher(self):
        import types

        import numba

        namespace = dict(self.py_func.__globals__)
        function = types.FunctionType(
            self.py_func.__code__,
            namespace,
            self.py_func.__name__,
            self.py_func.__defaults__,
            self.py_func.__closure__,
        )
        function.__qualname__ = self.py_func.__qualname__
        function.__doc__ = self.py_func.__doc__
        function.__module__ = self.py_func.__module__
        self._dispatcher = numba.njit(**self.options)(function)
        # Set before the callees are made, so that a kernel calling itself terminates.
        for name, value in list(namespace.items()):
            if isinstance(value, Kernel):
                namespace[name] = value.dispatcher()
            elif isinstance(value, JitOnly):
                namespace[name] = value.resolve()

    def _run_under_numba(self, args):
        dispatcher = self.dispatcher()
        signature = _announce_compiling(dispatcher, args)
        result = dispatcher(*args)
        log = os.environ.get(LOG_VARIABLE)
        if log and signature is not None and signature not in self._logged:
            self._logged.add(signature)
            overload = dispatcher.overloads.get(signature)
            if overload is not None:
                with open(log, "a") as f:
                    f.write(signature_line(self.name, overload.signature) + "\n")
        return result


class JitOnly:
    """A name a kernel uses that exists only under numba (an intrinsic, say), given as
    ``"module:attribute"``: imported when the kernel is compiled, never by a run of the
    compiled code."""

    def __init__(self, target: str):
        self.target = target

    def resolve(self):
        import importlib

        module, attribute = self.target.split(":")
        return getattr(importlib.import_module(module), attribute)


# -- argument types ----------------------------------------------------------------------
# A signature's text names numba types: scalars by name (float64, int64, boolean, none,
# ...), arrays as dtype[:] ("A" layout) or dtype[::1] (C), (a, b) for tuples. Runs parse
# the argument types into argument_types()' form without numba; the build evaluates
# them with numba's types.

# numba's names of the scalar types, filled at the first call (this module imports no
# numpy: --version reads the index without it).
_SCALAR_TYPES: dict = {}
_NDARRAY = None


def _scalar_types() -> dict:
    global _NDARRAY
    import numpy as np

    names = {bool: "boolean", float: "float64", type(None): "none", np.bool_: "boolean"}
    for name in ("float64", "float32", "int64", "int32", "int16", "int8"):
        names[getattr(np, name)] = name
    for name in ("uint64", "uint32", "uint16", "uint8"):
        names[getattr(np, name)] = name
    _NDARRAY = np.ndarray
    return names


def argument_types(args) -> tuple:
    """What selects a compiled function: per argument, an array's (dtype, dimensions,
    C-contiguous) or a scalar's numba type name, as numba types them."""
    if not _SCALAR_TYPES:
        _SCALAR_TYPES.update(_scalar_types())
    return tuple([_value_type(value) for value in args])


def _value_type(value):
    kind = type(value)
    if kind is _NDARRAY:
        return (value.dtype, value.ndim, value.flags.c_contiguous)
    name = _SCALAR_TYPES.get(kind)
    if name is not None:
        return name
    if kind is int:
        return "int64" if -(1 << 63) <= value < (1 << 63) else "uint64"
    if kind is tuple:
        return tuple([_value_type(v) for v in value])
    return ("object", kind)  # never compiled ahead of time: numba types it


def parse_argument_types(text: str) -> tuple:
    """argument_types()' form of a signature's argument text."""
    return tuple(_parse_type(part) for part in _split_top_level(text))


def _parse_type(text: str):
    text = text.strip()
    if text.startswith("("):
        return tuple(_parse_type(part) for part in _split_top_level(text[1:-1]) if part.strip())
    if text.endswith("]"):
        dtype, dims = text[:-1].split("[", 1)
        ndim = dims.count(",") + 1
        import numpy as np

        return (np.dtype("bool" if dtype == "boolean" else dtype), ndim, dims.endswith("::1"))
    return text


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:])
    return parts


def type_text(numba_type) -> str:
    """A numba type in a signature's text (the inverse of the build's evaluation)."""
    from numba.core import types

    if isinstance(numba_type, types.Array):
        dims = ", ".join(
            [":"] * (numba_type.ndim - 1) + ["::1" if numba_type.layout == "C" else ":"]
        )
        dtype = "boolean" if isinstance(numba_type.dtype, types.Boolean) else str(numba_type.dtype)
        return f"{dtype}[{dims}]"
    if isinstance(numba_type, types.BaseTuple):
        inner = ", ".join(type_text(t) for t in numba_type)
        return f"({inner},)" if len(numba_type) == 1 else f"({inner})"
    if isinstance(numba_type, types.Boolean):
        return "boolean"
    if isinstance(numba_type, types.NoneType):
        return "none"
    return str(numba_type)


def signature_line(name: str, signature) -> str:
    """One line of signatures.txt: kernel, return type, argument types (tab-separated)."""
    arguments = ", ".join(type_text(t) for t in signature.args)
    return f"{name}\t{type_text(signature.return_type)}\t{arguments}"


# -- the compiled modules ----------------------------------------------------------------


INDEX_FORMAT = 2


class Library:
    """The compiled modules' index (index.json), checked once a process: the digest of
    the sources they were compiled from, then the first variant (one per target CPU)
    whose CPU features this machine has, and its modules' sizes and SHA-256 digests;
    per kernel its compiled argument types and where each function is. ``reason`` says
    why they are not used (a line's worth, naming the file and the cause)."""

    def __init__(self, cpu_table=None):
        self._cpu_table = cpu_table or _numpy_cpu_table
        self.usable = False
        self.reason = "no compiled kernels: the install did not build them"
        self.target_cpu = None
        self.seconds_per_signature = None
        self._kernels: dict = {}
        self._modules: dict = {}
        if os.environ.get("CPSVM_COMPILED", "1") == "0":
            self.reason = "CPSVM_COMPILED=0"
            return
        try:
            with open(INDEX_FILE) as f:
                index = json.load(f)
        except FileNotFoundError:
            return
        except (OSError, ValueError) as e:
            self.reason = f"{INDEX_FILE} cannot be read ({type(e).__name__}: {e}); {REINSTALL}"
            return
        self.seconds_per_signature = index.get("seconds_per_signature")
        failure = index.get("build_failure")
        if failure:
            self.reason = (
                f"the install could not compile them: {failure.get('cause')}; "
                f"{failure.get('remedy')}"
            )
            return
        if index.get("format") != INDEX_FORMAT:
            self.reason = f"{INDEX_FILE} is of another cpsvm's build; {REINSTALL}"
            return
        if index.get("sources_digest") != sources_digest(index.get("sources", ())):
            self.reason = "the compiled kernels are older than their sources"
            return
        variant, lacking = None, []
        for candidate in index.get("variants", ()):
            lacking = lacking_features(candidate.get("cpu_features", ()), self._cpu_table())
            if not lacking:
                variant = candidate
                break
        if variant is None:
            self.reason = (
                f"the compiled kernels need CPU features this CPU lacks: {lacking} (a wheel "
                f"for other machines: build it with CPSVM_KERNEL_TARGETS=host,x86-64-v2)"
            )
            return
        for module, record in variant.get("modules", {}).items():
            damage = _damage(record)
            if damage:
                self.reason = f"{os.path.join(HERE, record.get('file', module))} {damage}"
                return
        self.usable = True
        self.reason = None
        self.target_cpu = variant.get("target_cpu")
        self._modules = variant.get("modules", {})
        self._kernels = variant.get("kernels", {})

    def functions(self, name: str) -> dict:
        """{argument types: compiled function} of one kernel (importing their modules);
        empty, and the library unusable, if one of them cannot be imported."""
        import importlib

        found = {}
        for arguments, module, symbol in self._kernels.get(name, ()):
            try:
                extension = importlib.import_module(f"{__name__}.{module}")
                found[parse_argument_types(arguments)] = getattr(extension, symbol)
            except Exception as e:  # a foreign or damaged module: numba compiles instead
                file = self._modules.get(module, {}).get("file", module)
                with _lock:
                    self.usable, self._kernels = False, {}
                    self.reason = (
                        f"{os.path.join(HERE, file)} cannot be imported "
                        f"({type(e).__name__}: {e}); {REINSTALL}"
                    )
                return {}
        return found


def describe() -> str:
    """For --version: whether the compiled kernels are in use, and for which CPU, or why
    not. Without numpy (--version imports nothing heavy), this CPU's features are read
    from /proc/cpuinfo where there is one."""
    light = "numpy" not in sys.modules and _cpuinfo_table() is not None
    found = Library(_cpuinfo_table) if light else library()
    if found.usable:
        return f"compiled kernels in use (compiled for {found.target_cpu})"
    return f"compiled kernels not in use: {found.reason}"


REINSTALL = "reinstall cpsvm (pip install --force-reinstall --no-deps cpsvm)"


def _damage(record) -> str | None:
    """What is wrong with a module's file against the index's record of it, if anything."""
    path = os.path.join(HERE, record.get("file", ""))
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return f"cannot be read ({e.strerror or e}); {REINSTALL}"
    if len(data) != record.get("size"):
        return f"is damaged: {len(data)} bytes, the build wrote {record.get('size')}; {REINSTALL}"
    if hashlib.sha256(data).hexdigest() != record.get("sha256"):
        return f"is damaged: its SHA-256 differs from the build's; {REINSTALL}"
    return None


_library: Library | None = None


def library() -> Library:
    global _library
    if _library is None:
        with _lock:
            if _library is None:
                _library = Library()
    return _library


def sources_digest(paths) -> str:
    """SHA-256 over files of the package (paths relative to its root): those holding
    kernels, as the build read them."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.encode() + b"\0")
        try:
            with open(os.path.join(PACKAGE_ROOT, path), "rb") as f:
                digest.update(f.read())
        except OSError:
            digest.update(b"\0missing\0")
    return digest.hexdigest()


def cpu_features() -> list[str]:
    """The CPU features numpy found on this machine (its dispatch table's)."""
    return sorted(name for name, present in _numpy_cpu_table().items() if present)


def lacking_features(required, table=None) -> list[str]:
    """The features of ``required`` this CPU lacks, among those this numpy knows: a
    feature newer than the run's numpy is not checked (an older numpy must not refuse
    the build machine's own features)."""
    table = _numpy_cpu_table() if table is None else table
    return sorted(name for name in required if name in table and not table[name])


def _numpy_cpu_table() -> dict:
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # numpy 1.x
        from numpy.core._multiarray_umath import __cpu_features__
    return __cpu_features__


# numpy's names of x86 CPU features -> Linux's /proc/cpuinfo flags.
_CPUINFO_FLAGS = {
    "SSE": "sse", "SSE2": "sse2", "SSE3": "pni", "SSSE3": "ssse3", "SSE41": "sse4_1",
    "SSE42": "sse4_2", "POPCNT": "popcnt", "CX16": "cx16", "LAHF": "lahf_lm", "AVX": "avx",
    "AVX2": "avx2", "F16C": "f16c", "FMA3": "fma", "BMI": "bmi1", "BMI2": "bmi2",
    "LZCNT": "abm", "MOVBE": "movbe", "AVX512F": "avx512f", "AVX512CD": "avx512cd",
    "AVX512BW": "avx512bw", "AVX512DQ": "avx512dq", "AVX512VL": "avx512vl",
    "AVX512IFMA": "avx512ifma", "AVX512VBMI": "avx512vbmi", "AVX512VBMI2": "avx512_vbmi2",
    "AVX512VNNI": "avx512_vnni", "AVX512BITALG": "avx512_bitalg",
    "AVX512VPOPCNTDQ": "avx512_vpopcntdq", "AVX512BF16": "avx512_bf16",
    "AVX512FP16": "avx512_fp16", "GFNI": "gfni", "VAES": "vaes", "VPCLMULQDQ": "vpclmulqdq",
}  # fmt: skip


def _cpuinfo_table() -> dict | None:
    """numpy's form of this CPU's features, from /proc/cpuinfo (None without one)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return {name: flag in flags for name, flag in _CPUINFO_FLAGS.items()}
    except OSError:
        pass
    return None


# -- compiling at run time ---------------------------------------------------------------

_announced = False


def _announce_compiling(dispatcher, args):
    """Before numba first compiles (rather than loads from its cache) a kernel in this
    process, one line on stderr; returns the call's numba signature (None when numba
    cannot type it: numba then says why)."""
    global _announced
    try:
        signature = tuple(dispatcher.typeof_pyval(a) for a in args)
    except Exception:
        return None
    if _announced or signature in dispatcher.overloads or _in_numba_cache(dispatcher, signature):
        return signature
    with _lock:  # kernels may first run on several threads at once
        if not _announced:
            _announced = True
            reason = library().reason or "these argument types were not compiled at install"
            print(
                f"cpsvm: compiling kernels for this CPU, once: about {_seconds_a_kernel()} s "
                f"a kernel this run calls ({reason}; numba caches them for later runs)",
                file=sys.stderr,
                flush=True,
            )
    return signature


def _in_numba_cache(dispatcher, signature) -> bool:
    """Whether numba's disk cache holds the kernel for ``signature`` (numba's own lookup,
    without loading it)."""
    try:
        cache = dispatcher._cache
        key = cache._index_key(signature, dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:  # no cache (a kernel without cache=True), or numba changed inside
        return False


# CPU seconds numba takes to compile a kernel of this package at its first call (the mean
# over a sample of signatures.txt, each compiled with an empty cache, on a 2-core
# machine): what the line says when no build measured it on this machine.
SECONDS_PER_KERNEL = 1.0


def _seconds_a_kernel() -> str:
    """The seconds a kernel takes to compile: as the build measured them on this machine
    (its CPU seconds a signature), else as measured on a 2-core machine."""
    seconds = library().seconds_per_signature or SECONDS_PER_KERNEL
    return f"{seconds:.1f}"
