"""The registry of problems: the built-in entries (each problem's package's ``ENTRY``,
:mod:`.entry`'s parts filled), those registered at run time, users' problems
(``--problem module:Class``, :mod:`.user`), and what the toolkit asks of them as a whole:
which problem a --problem value names, which problem a file is (``auto``: one function,
:func:`choose_entry`, for a file read on one machine and for a cluster's shards), which
entry handles a model.

The commands, the solvers, the cluster and the estimators read entries; none of them
branches on a structured problem's name. Another problem joins with :func:`register`
(one call, its package anywhere on the path). Every entry imports nothing heavy
(``cp_learn -h`` reads every entry): the numerics load when a problem is built.
"""

from __future__ import annotations

from .binary import ENTRY as BINARY
from .cfg import ENTRY as CFG
from .entry import ProblemEntry, ProblemSpecError
from .hmm import ENTRY as HMM
from .labels import all_pm1
from .multiclass import ENTRY as MULTICLASS
from .rank import ENTRY as RANK
from .regression import ENTRY as REGRESSION
from .user import UserProblemModels, import_problem_class, user_entry

# The built-in problems, in the order --help lists them.
BUILT_IN = (BINARY, MULTICLASS, HMM, CFG, RANK, REGRESSION)
_BUILT_IN = {entry.name: entry for entry in BUILT_IN}
# The order in which ``auto`` asks the structured problems' ``detect``, the most specific
# first: a ranking file (graded targets, some below 1) would pass hmm's test too.
AUTO_ORDER = (CFG, RANK, HMM)
# The problems registered at run time (register): name -> entry, and those auto asks.
_REGISTERED: dict = {}
_REGISTERED_AUTO: list = []
# cp_learn's own flags (its declarations', given by cpsvm.cli.learn when it builds its
# command: reserve_flags): no problem's option may take one, or it would shadow it.
_RESERVED_FLAGS: set = set()


def problem_entry(name: str) -> ProblemEntry:
    """The entry of a built-in or registered problem (KeyError for another name)."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    return _BUILT_IN[name]


def register(entry: ProblemEntry, *, auto: bool = False) -> None:
    """Add a problem to the registry, as the built-in ones are: its name for --problem,
    its options on cp_learn's command line (for the commands built after this call), its
    model kinds for the model files, its handler for cp_classify; ``auto``: ``auto``
    asks its ``detect`` (after the built-in problems')."""
    if entry.name in _BUILT_IN or not entry.name or ":" in entry.name or entry.name == "auto":
        raise ValueError(f"cannot register a problem named {entry.name!r}")
    _refuse_reserved(entry)
    if entry.classifying.model_kinds:
        from ..io.model_file import register_model_kind

        for kind in entry.classifying.model_kinds:
            register_model_kind(kind)
    _REGISTERED[entry.name] = entry
    if auto and entry.name not in _REGISTERED_AUTO:
        _REGISTERED_AUTO.append(entry.name)


def reserve_flags(flags) -> None:
    """Take ``flags`` (cp_learn's own) from the problems' options: ValueError if a problem
    registered already has one, as :func:`register` refuses one registered later."""
    _RESERVED_FLAGS.update(flags)
    for entry in _REGISTERED.values():
        _refuse_reserved(entry)


def _refuse_reserved(entry: ProblemEntry) -> None:
    taken = [flag for flag in entry.command_line.flags() if flag in _RESERVED_FLAGS]
    if taken:
        raise ValueError(
            f"cannot register problem {entry.name!r}: its option {taken[0]} is one of "
            "cp_learn's own flags"
        )


def problem_names() -> list:
    return [*_BUILT_IN, *_REGISTERED]


def auto_order() -> list:
    """The entries whose ``detect`` auto asks, in order."""
    return [*AUTO_ORDER, *(_REGISTERED[name] for name in _REGISTERED_AUTO)]


def problem_choices() -> str:
    """The --problem values to name in an error."""
    return ", ".join(["auto", *(e.name for e in entries("cp_learn"))]) + " or module:Class"


def entries(learner: str | None = None) -> list:
    """Every entry (of the problems ``learner`` trains), in the registry's order."""
    every = [*BUILT_IN, *_REGISTERED.values()]
    return every if learner is None else [e for e in every if learner in e.learners]


def parse_given(entry: ProblemEntry, given: dict) -> dict:
    """``entry``'s options from the command line's text (``{flag: text}``), checked; a
    flag it does not take refused naming the problems that take it."""
    return entry.command_line.parse_options(given, entries())


# -- --problem --------------------------------------------------------------------------------


def resolve_problem(spec: str) -> str:
    """Check a --problem value before any data is read; returns it, stripped.

    The names of the problems cp_learn trains and ``auto`` pass; ``module:Class`` must
    import; anything else raises ProblemSpecError naming the choices.
    """
    spec = (spec or "").strip()
    if spec == "auto" or spec in (e.name for e in entries("cp_learn")):
        return spec
    module_name, colon, class_name = spec.partition(":")
    if not colon:
        raise ProblemSpecError(f"unknown problem {spec!r}: expected {problem_choices()}")
    if not module_name or not class_name:
        raise ProblemSpecError(f"expected {problem_choices()}, got {spec!r}")
    import_problem_class(spec)
    return spec


def entry_of(spec: str) -> ProblemEntry:
    """The entry of a resolved spec that names a problem (not ``auto``)."""
    return user_entry(spec) if ":" in spec else problem_entry(spec)


# -- auto: which problem a file is -------------------------------------------------------------


def own_format(path) -> ProblemEntry | None:
    """The problem whose own format (not SVMlight) the file is, read by its entry's reader
    (cfg's bracketed trees), or None."""
    return next((e for e in entries() if e.reading.sniff(path)), None)


def choose_entry(dataset, requested: str, sequences: bool = False) -> ProblemEntry:
    """The entry for ``requested`` (auto, a name, or for ``sequences`` module:Class) after
    checking the data's labels against it. ``sequences``: the caller trains structured
    problems (cp_learn), so auto tries each structured problem's ``detect`` first;
    without it, only the problems that are not (binary and multiclass) are taken.
    ``dataset`` may be what stands for one (a cluster's shards: cpsvm.problems.labels)."""
    requested = (requested or "").strip()
    allowed = [e for e in entries("cp_learn") if sequences or not e.structured]
    if requested == "auto":
        structured = auto_order() if sequences else []
        found = next((e for e in structured if e.reading.detect(dataset)), None)
        entry = found or problem_entry("binary" if all_pm1(dataset) else "multiclass")
    elif sequences and ":" in requested:
        return user_entry(requested)
    else:
        entry = next((e for e in allowed if e.name == requested), None)
        if entry is None:
            names = ["auto"] + [e.name for e in allowed]
            choices = ", ".join(names[:-1]) + " or " + names[-1]
            raise ProblemSpecError(f"unknown problem {requested!r}: expected {choices}")
    entry.reading.check_labels(dataset)
    return entry


def read_training_data(path, entry: ProblemEntry | None, given: dict):
    """The training data of ``path`` and its problem's entry: ``entry`` None (auto) the
    one whose own format the file is (:func:`own_format`), else the one the SVMlight
    file's labels choose (:func:`choose_entry`)."""
    if entry is None:
        entry = own_format(path)
        if entry is None:
            from ..io.svmlight import read_examples

            data = read_examples(path)
            return data, choose_entry(data, "auto", sequences=True)
    return entry.reading.read(path, parse_given(entry, given)), entry


def choose_problem(dataset, requested: str, sequences: bool = False) -> str:
    """The name of :func:`choose_entry`'s choice."""
    return choose_entry(dataset, requested, sequences).name


# -- models -----------------------------------------------------------------------------------


def model_handlers() -> list:
    """cp_classify's handlers of the model kinds (each entry's, and users' problems'),
    those that claim a model by its data first."""
    handlers = [e.classifying.handler for e in entries() if e.classifying.handler is not None]
    handlers.append(UserProblemModels)
    return sorted(handlers, key=lambda h: not hasattr(h, "claims"))


def entry_of_model(model) -> ProblemEntry:
    """The entry whose models ``model`` is (by its model kind: the first entry whose
    handler takes it or that brought it; a user problem's model: its class's entry, the
    class not imported yet)."""
    from ..io.model_file import model_kind_of

    kind = model_kind_of(model).name
    if kind in UserProblemModels.model_kinds:
        return user_entry(model.spec, check=False)
    return next(e for e in entries() if kind in _kinds_of(e))


def _kinds_of(entry) -> set:
    """The names of the model kinds ``entry`` handles or brings."""
    handler = entry.classifying.handler
    return {
        *(handler.model_kinds if handler is not None else ()),
        *(k.name for k in entry.classifying.model_kinds),
    }
