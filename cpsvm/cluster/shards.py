"""The training set's shards: how they are planned and read, and what each worker
keeps of its own.

A shard is a byte range of one SVMlight file, widened to whole lines (a range starts at
the first line that begins inside it and ends where the next range's first line
begins, so every line belongs to exactly one shard), or one whole file of a glob such
as ``'part-*.svm'`` (compressed files included: they cannot be cut, so each is one
shard). A file is a path every worker mounts or an fsspec URL (:mod:`.sources`). A
worker reads its own shard with the numba reader of :mod:`cpsvm.io.svmlight`; the
process that plans the shards only lists the files and their sizes.

Line numbers: a byte range does not know how many lines precede it. Its rows carry
line numbers counted from the range's first line, and :func:`global_line` turns one
into the file's by counting the newlines before the range — done only when a message
needs it (a parse error, a bad label), never on the normal path.

On its worker a shard is a :class:`Shard`: the examples plus the run's cached state
(outputs, breakpoints, the last cut), which a worker that rebuilt the shard has lost
(:class:`StateLost`). A shard of huge or hashed indices is held in its own distinct
columns from the start, and in the run's columns once :func:`prepare_shard` gives them
(the same task rebuilds a lost shard: it reads, then renumbers again). Each file read
leaves its :class:`.sources.Fingerprint`; a shard read again after a worker was lost
must match the first reading's (:class:`ShardChanged` otherwise). A file that changed
between the plan and its first reading, or during it, is told from one that changed
after it: the first reading's fingerprint says so (``changed``), and the run ends
before training (:func:`check_first_reading`).

The shards say which structured problem cp_learn's ``auto`` would take their file for
(the registry's own ``detect``; bracketed trees by its ``sniff``): the cluster trains
binary and multiclass problems only, and refuses those rather than train another model.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from ..columns import (
    REMAP_MIN_WIDTH,
    distinct_columns,
    original_columns,
    present_columns,
    renumbered_onto,
    renumbering_pays,
    seen_columns,
)
from ..data import ClassWeights
from ..errors import InputError, OptionError
from ..io.streams import InputStream
from ..io.svmlight import BLOCK_SIZE, parse_svmlight_stream, stream_blocks
from ..problems.registry import auto_order, own_format
from ..sparse_ops import rows_times
from .kernels import abs_bounds
from .partials import touched_rows
from .sources import (
    check_local,
    detached,
    is_pattern,
    is_url,
    list_pattern,
    local_stamp,
    open_source,
    stamp_change,
    unreadable,
    worker_name,
)


class StateLost(Exception):
    """A task on a worker that lost its shard (rebuilt by Dask) found neither the outputs
    it needs nor the vector to recompute them: the client ships it and repeats."""


class ShardChanged(InputError):
    """A shard read again (its worker lost) is not the bytes first read."""


_SCAN = 1 << 16  # bytes read at a time when looking for a line end


@dataclass(frozen=True)
class Replay:
    """How the workers formed the outputs at OCAS's best point w_b, for a worker that
    lost them: X·``anchor``, then for each (w_t, step) of ``moves`` the move
    out + step·(X·w_t − out), the same operations as :func:`.tasks.ocas_move`. So a
    shard read again elsewhere has the same bits as the one lost, and the iterate does
    not depend on which worker computed what (X·w_b itself would differ in the last
    bits)."""

    anchor: np.ndarray
    moves: tuple = ()

    @property
    def nbytes(self) -> int:
        return self.anchor.nbytes + sum(w.nbytes for w, _ in self.moves)


@dataclass(frozen=True)
class ShardSpec:
    """``path`` (a path or a URL) whole (``end`` None) or its bytes [start, end) widened
    to whole lines."""

    path: str
    start: int = 0
    end: int | None = None
    size: int = 0  # the file's bytes (compressed ones: as stored), to balance groups
    timeout: float | None = None  # bounds every wait on a URL's store (--worker-timeout)
    # (size, modification stamp) when the shards were planned (None: unknown): a file
    # that changed before its first reading is told from one that changed after it
    planned: tuple | None = None

    @property
    def whole(self) -> bool:
        return self.end is None


def check_source(source: str) -> None:
    """What the workers cannot read, refused before the cluster starts: standard input
    (each worker reads its own shard of the file)."""
    if source == "-":
        raise OptionError(
            "standard input (-) cannot be sharded to a cluster (--scheduler): the workers "
            "read the examples themselves; give a file every worker sees, or a URL"
        )


def check_visible(path: str) -> None:
    """A file the workers must read: if this worker cannot, say so."""
    if not is_url(path):
        check_local(path)


def worker_task(fn):
    """``fn`` as a task run on a worker: an InputError it raises reaches the client as
    itself (:func:`.sources.detached`), one line."""

    @functools.wraps(fn)
    def task(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except InputError as e:
            error = e
        raise detached(error)

    return task


@worker_task
def plan_shards(source: str, parts: int, timeout: float | None = None) -> list[ShardSpec]:
    """The shards of ``source``: every file a glob matches (sorted by name), or ``parts``
    byte ranges of one uncompressed file (one shard if it is compressed, small, or an
    HTTP response of no known length). ``timeout`` bounds every wait on a URL's store
    (the worker timeout's default if None)."""
    if is_pattern(source):
        files = list_pattern(source, timeout)
        if not files:
            raise InputError(
                f"no file matches this pattern as seen from {worker_name()} (the workers "
                "read the examples themselves, so the files must be visible to every "
                "worker under this " + ("URL)" if is_url(source) else "path)"),
                source=source,
            )
        return [
            ShardSpec(name, size=size or 0, timeout=timeout, planned=_planned(size, None))
            for name, size in files
        ]
    check_visible(source)
    opened = open_source(source, timeout)
    with InputStream(source, opened.reader(source)) as f:
        compressed = f.compression is not None
    size = opened.size
    planned = _planned(size, opened.modified)
    if size is None or compressed or parts <= 1 or size < parts:
        return [ShardSpec(source, size=size or 0, timeout=timeout, planned=planned)]
    cuts = [size * k // parts for k in range(parts + 1)]
    return [ShardSpec(source, a, b, size, timeout, planned) for a, b in zip(cuts, cuts[1:])]


def _planned(size, modified):
    return None if size is None else (size, modified)


def group_shards(specs: list[ShardSpec], groups: int) -> list[list[ShardSpec]]:
    """Many shard files in ``groups`` groups (one per worker, so that a round is not a
    task per file), balanced by bytes: the largest file first to the lightest group;
    each group in the files' order. The model does not depend on the grouping (exact
    sums)."""
    if len(specs) <= groups:
        return [[s] for s in specs]
    load = [0] * groups
    members = [[] for _ in range(groups)]
    for i in sorted(range(len(specs)), key=lambda i: -specs[i].size):
        g = min(range(groups), key=lambda g: (load[g], g))
        load[g] += specs[i].size
        members[g].append(i)
    return [[specs[i] for i in sorted(m)] for m in members if m]


def _line_start(f, pos: int, size: int) -> int:
    """The first position >= pos that starts a line (size if none)."""
    if pos <= 0:
        return 0
    if pos >= size:
        return size
    f.seek(pos - 1)
    at = pos - 1
    while True:
        chunk = f.read(_SCAN)
        if not chunk:
            return size
        k = chunk.find(b"\n")
        if k >= 0:
            return at + k + 1
        at += len(chunk)


def _lines_before(spec: ShardSpec, pos: int) -> int:
    count = 0
    opened = open_source(spec.path, spec.timeout)
    with opened.reader(spec.path, 0, pos) as reader:
        buf = bytearray(_SCAN * 16)
        while True:
            n = reader.readinto(buf)
            if not n:
                break
            count += buf.count(b"\n", 0, n)
    return count


def _range(spec: ShardSpec, f, size):
    try:
        return _line_start(f, spec.start, size), _line_start(f, spec.end, size)
    except InputError:
        raise
    except Exception as e:
        raise unreadable(spec.path, e, spec.timeout) from None


@worker_task
def global_line(spec: ShardSpec, line):
    """The file's line number of the shard's line ``line`` (counted from its first)."""
    if line is None or spec.whole:
        return line
    opened = open_source(spec.path, spec.timeout)
    with opened.f as f:
        begin = _range(spec, f, opened.size)[0]
    return line + _lines_before(spec, begin)


def read_fingerprinted(spec: ShardSpec):
    """The shard's examples as a Dataset (maybe empty) and the
    :class:`.sources.Fingerprint` of what was read; errors name the file and its line.
    Byte ranges number their rows' lines from the range's first line (see
    :func:`global_line`)."""
    check_visible(spec.path)
    opened = open_source(spec.path, spec.timeout)
    size, modified = opened.size, opened.modified
    change = stamp_change(spec.planned, (size, modified)) if spec.planned else None
    changed = None if change is None else _changed(change, "before")
    with opened.f as f:
        if spec.whole:
            begin, stop = 0, size
            reader = opened.reader(spec.path)
        else:
            begin, stop = _range(spec, f, size)
            reader = opened.reader(spec.path, begin, stop)
        with InputStream(spec.path, reader) as text:
            # (a small file needs no buffer larger than itself)
            small = stop is not None and not text.compression
            block = min(BLOCK_SIZE, stop - begin + 1) if small else BLOCK_SIZE
            try:
                data = parse_svmlight_stream(
                    stream_blocks(text.readinto, block),
                    spec.path,
                    first_line=1,
                    n_features=None,
                    zero_based=False,
                    keep_comments=False,
                    allow_empty=True,
                )
            except InputError as e:
                _refuse_own_format(spec.path)
                if e.line is None or spec.whole:
                    raise
                message = str(e)[len(f"{e.source}:{e.line}: ") :]
                raise InputError(
                    message, source=e.source, line=e.line + _lines_before(spec, begin)
                ) from None
            # Changed while it was read (cut short, or grown): the bytes read are not
            # those the opening's size gave, or a path's size or time are no longer.
            if changed is None and not is_url(spec.path):  # a path: asked again
                change = stamp_change((size, modified), local_stamp(f))
                changed = None if change is None else _changed(change, "while")
            if changed is None and stop is not None and not text.compression:
                if reader.length != stop - begin:
                    change = f"{stop - begin} bytes to read, {reader.length} read"
                    changed = _changed(change, "while")
        return data, reader.fingerprint(size, modified, changed)


def _changed(change, when):
    """What a reading says of a file that changed ``when`` ("before", "while") it was
    read (a first reading's is refused by :func:`check_first_reading`; a reading again
    is compared with the first by :func:`check_fingerprints`)."""
    said = {
        "before": "after the run planned its shards, before it read them",
        "while": "while the run read it",
    }
    return f"changed {said[when]} ({change})"


def read_shard(spec: ShardSpec):
    """The shard's examples as a Dataset (:func:`read_fingerprinted` without the
    fingerprint)."""
    return read_fingerprinted(spec)[0]


# -- a shard on its worker ----------------------------------------------------------------


def read_group(specs):
    """The examples of a group of shards, as one Dataset per shard."""
    return [read_shard(s) for s in specs]


@dataclass(frozen=True)
class ReadFiles:
    """What a loader read: one Dataset per file (or byte range) and their
    fingerprints."""

    parts: list
    fingerprints: tuple


@worker_task
def read_files(specs) -> ReadFiles:
    """The loader of a shard of one or several files (or one byte range)."""
    read = [read_fingerprinted(s) for s in specs]
    return ReadFiles([d for d, _ in read], tuple(f for _, f in read))


def shard_loaders(specs, count):
    """The loaders of ``specs`` on ``count`` workers: shard files beyond the count in
    groups of one per worker, else one shard each; and, for byte ranges, how a
    shard's line number becomes its file's (None for whole files)."""
    if len(specs) > count:
        return [functools.partial(read_files, g) for g in group_shards(specs, count)], None
    loaders = [functools.partial(read_files, [s]) for s in specs]
    return loaders, [functools.partial(global_line, s) for s in specs]


def _joined(parts):
    """One Dataset's fields from several (a group of shard files): the rows one after
    the other, the width the widest; each row's file (``sources``, ``part_of``)."""
    width = max(p.X.shape[1] for p in parts)
    X = sp.vstack(
        [
            sp.csr_matrix((p.X.data, p.X.indices, p.X.indptr), shape=(p.X.shape[0], width))
            for p in parts
        ],
        format="csr",
    )
    if all(p.cost is None for p in parts):
        cost = None
    else:
        cost = np.concatenate(
            [np.ones(p.n_examples) if p.cost is None else np.asarray(p.cost, float) for p in parts]
        )
    lines = None
    if all(p.line_numbers is not None for p in parts):
        lines = np.concatenate([p.line_numbers for p in parts])
    part_of = np.repeat(np.arange(len(parts)), [p.n_examples for p in parts])
    y = np.concatenate([np.asarray(p.y, dtype=np.float64) for p in parts])
    return X, y, cost, lines, [p.source for p in parts], part_of


def _refuse_own_format(path):
    """A file that is not SVMlight's but a problem's own format (bracketed trees: the
    registry's ``sniff``, as cp_learn's auto asks it), refused in those words rather
    than by the SVMlight reader's."""
    entry = own_format(path)
    if entry is not None:
        raise InputError(
            f"the {entry.name} problem's own format ({entry.command_line.detect_help}), which "
            "cp_learn trains without --scheduler only: a cluster reads SVMlight files",
            source=path,
        ) from None


def structured_problem(dataset):
    """(name, source) of the structured problem cp_learn's ``auto`` takes ``dataset``
    for (the registry's own ``detect``, in its order), None if none."""
    for entry in auto_order():
        if entry.reading.detect(dataset):
            return entry.name, dataset.source
    return None


class Shard:
    """One shard's examples on its worker (one Dataset, a group's list of them, or what
    :func:`read_files` read: then with its files' ``fingerprints``), plus the run's
    cached state. ``problem``: the structured problem one of its files is
    (:func:`structured_problem`), None if none."""

    def __init__(self, data, index):
        self.fingerprints = None
        if isinstance(data, ReadFiles):
            data, self.fingerprints = data.parts, data.fingerprints
            if len(data) == 1:
                data = data[0]
        parts = data if isinstance(data, list) else [data]
        self.problem = next(filter(None, map(structured_problem, parts)), None)
        # The lines' qid (sentences, queries: the units of cpsvm.cluster.units), None if
        # a file has none.
        qids = [getattr(p, "qid", None) for p in parts]
        self.qid = None if any(q is None for q in qids) else np.concatenate(qids)
        if isinstance(data, list):
            X, y, cost, lines, self.sources, self.part_of = _joined(data)
            data = SimpleNamespace(X=X, y=y, cost=cost, line_numbers=lines, source=self.sources[0])
        else:
            self.sources, self.part_of = [data.source], None
        # Huge or hashed indices, a width beyond twice its values: the shard in its own
        # distinct columns (``columns``, their original indices) until the run knows
        # every shard's (:meth:`onto_run_columns`). A wide shard of more values keeps the
        # file's columns (the union of the shards may well be dense).
        X, self.columns = data.X, None
        self.original_width = X.shape[1]
        if renumbering_pays(X.shape[1], X.nnz):
            X, self.columns = distinct_columns(X, always=True)
        self._set_columns(X)
        self.in_run_columns = False
        self.n = X.shape[0]
        self.y = np.asarray(data.y, dtype=np.float64)
        self.factors = data.cost
        self.class_weights = None  # {label: weight} of the run (prepare_shard)
        self.lines = data.line_numbers
        self.source = data.source
        self.index = index
        self.d = self.width
        self.bias = 0.0
        self.n_classes = 0
        self.touched = None  # the rows of the cut it can touch, if few (prepare_shard)
        self.state = {}

    def _set_columns(self, X):
        self.X = X
        self.indptr, self.indices, self.data = X.indptr, X.indices, X.data
        self.width = X.shape[1]

    def onto_run_columns(self, feature_ids):
        """The shard in the run's columns, once: ``feature_ids`` (every shard's distinct
        original indices, sorted) when the run renumbers them, else (None) the file's
        indices."""
        if self.in_run_columns:
            return
        X, columns = self.X, self.columns
        if feature_ids is not None:
            if columns is None:
                X, columns = distinct_columns(X, always=True)
            self._set_columns(renumbered_onto(X, columns, feature_ids))
        elif columns is not None:
            self._set_columns(original_columns(X, columns))
        self.columns = None
        self.in_run_columns = True

    def __sizeof__(self):
        # What Dask weighs when it places a task that needs the shard (its default,
        # sys.getsizeof, would see a small object and move it to any idle worker).
        return object.__sizeof__(self) + sum(
            a.nbytes for a in (self.indptr, self.indices, self.data, self.y)
        )

    def costs(self, scale):
        """C_i = scale·cost_i (cost_i SVMlight's cost: factor, 1 if none)."""
        key = ("costs", scale)
        if key not in self.state:
            if self.class_weights is not None:
                # as a single machine's: the cost: factor times the class's weight
                # (cpsvm.data.Dataset.cost_factors), then the scale
                weighed = ClassWeights.of_labels(self.y, self.class_weights)
                if self.factors is not None:
                    weighed = np.asarray(self.factors, dtype=np.float64) * weighed
                self.state[key] = scale * weighed
            else:
                self.state[key] = (
                    np.full(self.n, scale)
                    if self.factors is None
                    else scale * np.asarray(self.factors, dtype=np.float64)
                )
        return self.state[key]

    def classes(self):
        if "classes" not in self.state:
            self.state["classes"] = self.y.astype(np.int64)
        return self.state["classes"]

    def outputs(self, key, w):
        """x_i·w (n,) or every class's score (n, k), cached under ``key``; ``w`` a
        vector or the :class:`Replay` that formed the outputs."""
        cache = self.state.setdefault("out", {})
        if key not in cache:
            if w is None:
                raise StateLost(key)
            if isinstance(w, Replay):
                out = self.product(w.anchor)
                for w_t, step in w.moves:
                    out = out + step * (self.product(w_t) - out)
                cache[key] = out
            else:
                cache[key] = self.product(w)
        return cache[key]

    def product(self, w):
        """x_i·w (n,) or every class's score (n, k)."""
        if self.n_classes:
            out = np.empty((self.n, self.n_classes))
            # W (d, k) in the layout of Crammer-Singer's Ψ (x_j of class c at j·k + c);
            # the row kernel sums each row in its stored order (no block threads).
            W = np.ascontiguousarray(w.reshape(self.d, self.n_classes))
            rows_times(self.indptr, self.indices, self.data, 0, self.n, W, out)
            return out
        # SciPy's CSR product sums each row in stored order, as a plain loop would (the
        # same bits), and measured faster than one in numba.
        out = self.X @ w[: self.width]
        if self.bias != 0.0:
            out += self.bias * w[self.d]
        return out

    def keep_outputs(self, *keys):
        cache = self.state.setdefault("out", {})
        for key in list(cache):
            if key not in keys:
                del cache[key]


def load_shard(loader, index):
    """The task that builds a shard on its worker (``loader`` reads its examples)."""
    return Shard(loader(), index)


def summarize_shard(shard):
    """What the client needs to know of a shard: sizes, global bounds, the labels.
    ``width`` is the file's (its largest index + 1). A shard in its own distinct columns
    gives them (``columns``) and its bounds in them; a shard of 2^20 columns or more
    that kept the file's gives the columns it uses as a bitmap (``present``, a bit a
    column: its width is at most twice its values)."""
    X_max = np.zeros(shard.width)
    abs_rows = np.zeros(shard.n)
    abs_bounds(shard.indptr, shard.indices, shard.data, X_max, abs_rows)
    y = shard.y
    not_pm1 = np.flatnonzero(np.abs(y) != 1)
    not_class = np.flatnonzero((y != np.round(y)) | (y < 1))

    def where(rows, values):
        """(line, value, file) of the first of ``rows``, None if none."""
        if not len(rows):
            return None
        i = rows[0]
        line = shard.lines[i] if shard.lines is not None else None
        part = shard.part_of[i] if shard.part_of is not None else 0
        return line, float(values[i]), shard.sources[part]

    bad_cost = None
    if shard.factors is not None:
        f = np.asarray(shard.factors, dtype=np.float64)
        bad_cost = where(np.flatnonzero(~((f > 0) & np.isfinite(f))), f)
    return dict(
        n=shard.n,
        width=shard.original_width,
        columns=shard.columns,
        present=np.packbits(seen_columns(shard.X))
        if shard.columns is None and shard.width >= REMAP_MIN_WIDTH
        else None,
        nnz=len(shard.data),
        col_max=X_max,
        row_norm=float(abs_rows.max()) if shard.n else 0.0,
        max_factor=float(np.max(shard.factors)) if shard.factors is not None and shard.n else 1.0,
        not_pm1=where(not_pm1, y),
        not_class=where(not_class, y),
        n_pos=int(np.count_nonzero(y == 1)),
        n_neg=int(np.count_nonzero(y == -1)),
        y_min=float(y.min()) if shard.n else math.inf,
        y_max=float(y.max()) if shard.n else -math.inf,
        bad_cost=bad_cost,
        source=shard.source,
        files=len(shard.sources),
        fingerprints=shard.fingerprints,
        problem=shard.problem,
    )


def shard_columns(shard):
    """The sorted distinct columns of a shard that kept the file's indices (a narrow
    one: its summary did not list them)."""
    return present_columns(shard.X)


def check_first_reading(fingerprints):
    """The shards' first reading: ShardChanged naming the first file that changed after
    the run planned its shards or while it was read."""
    for fingerprint in fingerprints or ():
        if fingerprint.changed is not None:
            raise ShardChanged(
                f"{fingerprint.changed}; a shard must stay the same for the whole run",
                source=fingerprint.source,
            )


def check_fingerprints(shard, fingerprints):
    """A shard read again (its worker lost) must be the bytes first read: ShardChanged
    naming the first file that is not."""
    if fingerprints is None or shard.fingerprints is None:
        return
    for first, now in zip(fingerprints, shard.fingerprints):
        change = first.differs(now)
        if change is not None:
            raise ShardChanged(
                f"changed since the run first read it ({change}); a shard must stay the "
                "same for the whole run",
                source=first.source,
            )


def class_counts(shard):
    """(labels, their counts) of a shard's examples (class weights: ``balanced`` counts
    the classes over all shards)."""
    return np.unique(shard.y, return_counts=True)


def prepare_shard(
    shard, d, bias, n_classes, feature_ids=None, fingerprints=None, class_weights=None
):
    """The shard for a run: the same bytes as the first reading's ``fingerprints`` (if
    given), in its columns (:meth:`Shard.onto_run_columns`), Ψ's size ``d`` of a class
    (its bias column at d), the bias, the classes (0: binary), the rows of the cut it
    can touch if few (``touched``, :func:`.partials.touched_rows`); the cached state of
    any earlier run is dropped; ``class_weights`` {label: weight} of the run, or None."""
    check_fingerprints(shard, fingerprints)
    shard.class_weights = class_weights
    shard.onto_run_columns(feature_ids)
    shard.d, shard.bias, shard.n_classes = d, float(bias), int(n_classes)
    size = d * n_classes if n_classes else d + (1 if bias else 0)
    shard.touched = touched_rows(
        present_columns(shard.X), size, n_classes, d if bias and not n_classes else None
    )
    shard.state = {}
    return shard


def shard_size(shard):
    """Its number of examples (a small result that says the shard is ready)."""
    return shard.n
