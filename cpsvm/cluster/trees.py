"""cp_learn's cfg problem on the cluster: bracketed trees (cfg's own format, not SVMlight
lines) whose CKY oracle runs on the workers.

SVMcfg's Ψ is indexed by the grammar read from every training tree (its rules, symbols
and, with span features, the words, in the order they first appear): so that Ψ is the
single machine's on every worker, each worker reads every tree file (a path every
worker sees, or a glob of them, in the glob's order) and builds the whole problem, and
its units are its own share of the trees — one file of the glob each when there are as
many files as workers, else an even range of the trees. A tree is never split. The
oracle's work (CKY, cubic in a sentence's length) is shared; the reading is not, which
costs little beside it. The partial cuts are the shards' exact sums of
:mod:`.units`, so the model is the same for any number of workers and any sharding.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import InputError
from ..io.trees import read_tree_dataset
from ..problems.registry import entry_of
from .session import Session
from .shards import worker_task
from .sources import is_pattern, is_url, list_pattern
from .units import UnitShard

TREE_PROBLEM = "cfg"


@worker_task
def tree_files(source: str, timeout=None) -> list:
    """The tree files of ``source``: every file its glob matches (sorted), or itself."""
    if is_url(source):
        raise InputError(
            "a cluster reads the cfg problem's trees from paths every worker sees, not URLs",
            source=source,
        )
    if is_pattern(source):
        files = [name for name, _ in list_pattern(source, timeout)]
        if not files:
            raise InputError("no file matches this pattern where the workers look", source=source)
        return files
    if not os.path.isfile(source):
        raise InputError("no such file where the workers look", source=source)
    return [source]


def _read(files, max_length):
    """Every tree of ``files`` in order, as one dataset, and where each file's begin."""
    parts = [read_tree_dataset(f, max_length) for f in files]
    first = parts[0]
    trees = [t for p in parts for t in p.trees]
    first.trees = trees
    first.n_skipped = sum(p.n_skipped for p in parts)
    return first, [len(p.trees) for p in parts]


@worker_task
def build_tree_units(files, index, count, loss_id, options):
    """The whole treebank's problem on this worker, its units the ``index``-th of
    ``count`` shares (one file each when the glob has ``count`` files)."""
    entry = entry_of(TREE_PROBLEM)
    dataset, sizes = _read(files, options.get("max_length") or 0)
    entry.reading.check_labels(dataset)
    problem = entry.training.build(dataset, loss_id, options)
    n = problem.n_examples
    if len(files) == count and not problem.n_skipped:
        bounds = np.concatenate([[0], np.cumsum(sizes)])
    else:
        bounds = [n * k // count for k in range(count + 1)]
    units = UnitShard(problem, None, index, files[min(index, len(files) - 1)])
    units.rows = np.arange(bounds[index], bounds[index + 1], dtype=np.int64)
    return units


def open_trees(scheduler, source, worker_timeout):
    """Connect (or start a local cluster) and list the tree files on a worker."""
    session = Session(scheduler, worker_timeout=worker_timeout)
    try:
        return TreeShards(session, source, worker_timeout)
    except BaseException:
        session.close()
        raise


class TreeShards:
    """The trees' shares on the workers, as the structured solver reads a cluster's
    data (:mod:`.struct_solver`): sizes, summaries naming the problem, the session."""

    n_features = 0
    nnz = 0
    feature_ids = None
    col_max = None

    def __init__(self, session, source, worker_timeout):
        self.session = session
        if not is_url(source):
            source = os.path.abspath(source)
        self.files = session.run(tree_files, source, worker_timeout)
        self.count = max(1, session.n_workers)
        self.loaded = list(range(self.count))  # (the report counts the shards)
        self.n_files = len(self.files)
        self.summaries = [dict(problem=(TREE_PROBLEM, self.files[0]), source=self.files[0], n=1)]
        self.n_examples = 0  # (known once the problem is built)

    def build(self, loss_id, options):
        """The units' futures, one per share."""
        client = self.session.client
        return [
            client.submit(build_tree_units, self.files, k, self.count, loss_id, options, pure=False)
            for k in range(self.count)
        ]
