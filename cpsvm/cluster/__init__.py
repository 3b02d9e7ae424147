"""Linear training with the examples on a Dask cluster (``--scheduler``): OCAS
(binary and Crammer-Singer multiclass, as :mod:`cpsvm.engine.ocas`) and the plain
1-slack cut of ``cp_learn -w 3``, with the examples staying on the workers.

Data. Each worker loads its shards once (a loader callable the caller gives, run on the
worker: a path every worker mounts or an fsspec URL) and keeps them in memory; the
client holds only d-vectors. Per iteration the client sends w (OCAS: the new point w_t)
and gets back the sums over the shards: the cut, the loss, counts — O(d), never O(n),
and not O(d) per worker: w leaves the client once and is copied from worker to worker
along a binary tree, and the shards' sums are added on the workers along a binary tree
of tasks, the client receiving the root.

Huge or hashed feature indices (up to 2^63): each shard renumbers its own columns as it
loads when its width is far beyond them; the client merges every shard's distinct
columns and, by the single machine's rule on the union (:mod:`cpsvm.columns`), the run
is renumbered to them (each worker maps its shard onto the union, broadcast once): d
is then the number of distinct features of the whole data, the models carry the
original indices (``feature_ids``), and no process holds anything of the largest index.

Same answer for any sharding. Floating-point sums depend on how the rows are grouped,
so every sum over examples (the cut vector, the loss, the line search's slopes) is
*exact* (:mod:`.numerics`). The grids come from bounds the client derives from global
maxima (max |x_ij| per column, max row 1-norm, max cost) and |w|, the same for every
sharding. Scalars are rounded once (``math.fsum``) on the client. The per-row terms
themselves (x_i·w, hinge tests) are computed row by row, in the same order whatever the
shard. So the model is byte-identical for any number of workers and shards; against the
single-machine solver (other summation order, merged duplicate examples) it agrees to
the stopping tolerance.

The modules, from the bottom up:

    numerics    exact (binned) sums and the sign of an exact sum
    kernels     the numba kernels a worker runs on its shard
    sources     where a shard's bytes live (path or fsspec URL), their fingerprints
    partials    a round's partial results and how two are added (sparse folds)
    shards      planning, grouping and reading the shards; a shard on its worker
                (Shard) and the replay of its lost outputs (Replay)
    tasks       what the workers run each round, one task per shard
    local       the process that runs local:N's workers in a session of their own
    session     the Dask session (bounded waits: ClusterLost; frozen workers
                removed), the sharded training set
    rounds      the rounds (client side): the tasks, the tree that adds their
                results, the tree that copies w
    oracles     ClusterCutOracle and ClusterOcasOracle for the engine's 1-slack loop
    solver      train_ocas and train_struct: the oracles on the engine's loop
    units       the structured problems (hmm, rank, cfg, a user's) on the workers: each
                shard's units as the problem's own object, its oracle's exact partial
                cut; byte ranges cut at qid boundaries
    trees       cfg's bracketed trees: every worker reads the treebank (the grammar is
                all of it) and parses its share
    struct_solver  cp_learn -w 3 of those problems: their oracle on the engine's loop
    command     the learners' --scheduler option and their flow on a cluster

Faults. A worker lost mid-run (or frozen past WORKER_TIMEOUT and the longest task,
then removed): Dask reads its shard again elsewhere and the worker replays how its
outputs were formed, so the model is the undisturbed run's, byte for byte. No worker
for WORKER_TIMEOUT seconds (--worker-timeout), the scheduler gone, or a shard that
reads differently the second time (changed, gone): ClusterLost, carrying the model
reached so far, which the command writes.

This ``__init__`` imports nothing: the learners read :class:`.command.ClusterOptions`
at start-up (click only), and the rest of the package, Dask with it, loads when
``--scheduler`` is given.
"""

WORKER_TIMEOUT = 60.0  # seconds a run waits while the cluster has no worker (--worker-timeout)
