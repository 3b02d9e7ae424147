"""``--scheduler``: ocas_learn and cp_learn with the examples on a Dask cluster.

The commands keep their flags, messages and model files; what changes is where the
data are read (each worker reads its shards: byte ranges of one file, or the files of a
glob) and which solver runs (:mod:`cpsvm.cluster.solver`). The flags are declared here
(:class:`ClusterOptions`); the run is the learners' own (cpsvm.cli.runner), with a
:class:`ClusterData` standing for the data: their sizes, a ``train`` with the
single-machine solvers' signature, the monitor's extra columns, the cluster's line of
statistics. Dask is imported only when the flag is given
(:class:`cpsvm.cluster.session.Session`): the learners read :class:`ClusterOptions` at
start-up, so at module level this module imports nothing heavy (no numpy, scipy, numba
or dask).
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass

from ..errors import InputError, OptionError
from ..options import Range, option, with_values
from . import WORKER_TIMEOUT


@dataclass
class ClusterOptions:
    """--scheduler and --worker-timeout."""

    scheduler: str | None = option(
        "--scheduler",
        help="Train on a Dask cluster, the examples staying on the workers: ADDRESS of a "
        "running 'dask scheduler' (e.g. tcp://host:8786) or local:N (N worker "
        "processes on this machine). EXAMPLE_FILE is then read by the workers: one "
        "file (cut into byte ranges) or a quoted glob of shard files ('part-*.svm', "
        ".gz too), a path every worker sees or an fsspec URL: s3://, gs://, hdfs://, "
        "http(s)://, file:// (s3fs, gcsfs, pyarrow on the workers for the first three). "
        "Linear: binary, multiclass, hmm, rank and module:Class (man cp_learn: the table "
        "at --scheduler); needs pip install cpsvm[dask].",
        default=None,
        metavar="ADDRESS|local:N",
    )
    worker_timeout: float | None = option(
        "--worker-timeout",
        help=f"With --scheduler: how long the cluster may have no worker before the run "
        f"ends (exit 1, the best model so far written), and a worker may stay silent (no "
        f"heartbeat) beyond the longest task before it is dropped and its shard read "
        f"again elsewhere; default {WORKER_TIMEOUT:g}.",
        default=None,
        type=Range(
            float,
            0.0,
            math.inf,
            min_open=True,
            max_open=True,
            expected="--worker-timeout a finite number of seconds > 0",
        ),  # fmt: skip
        metavar="SECONDS",
    )

    def timeout(self) -> float:
        """The worker timeout of the run, checked (before any data is read)."""
        return check_worker_timeout(self.scheduler, self.worker_timeout)


def check_worker_timeout(scheduler, worker_timeout) -> float:
    """The worker timeout of a run (only with --scheduler; its range is its
    declaration's)."""
    if worker_timeout is None:
        return WORKER_TIMEOUT
    if scheduler is None:
        raise OptionError("--worker-timeout needs --scheduler")
    return worker_timeout


def _shard_count(session) -> int:
    return max(1, session.n_workers)


def open_data(scheduler, example_file, parts=None, worker_timeout=WORKER_TIMEOUT, planner=None):
    """Connect (or start a local cluster) and load the shards on the workers; ``planner``
    plans them (:func:`.shards.plan_shards` by default)."""
    from .session import Session, ShardedData
    from .shards import check_source, plan_shards, shard_loaders
    from .sources import is_url

    check_source(example_file)
    session = Session(scheduler, worker_timeout=worker_timeout)
    # The workers resolve a relative path in their own directory: made absolute here,
    # where the user named it (a URL names its store).
    if not is_url(example_file):
        example_file = os.path.abspath(example_file)
    try:
        count = parts or _shard_count(session)
        # Planned where the shards will be read: the client need not see the files.
        specs = session.run(planner or plan_shards, example_file, count, worker_timeout)
        data = ShardedData(session, *shard_loaders(specs, count))
    except BaseException:
        session.close()
        raise
    return data


def lost_cluster(error, model_file, best):
    """A run whose cluster went away (ClusterLost): the model reached so far written,
    and the one line that says so (an input error: exit 1)."""
    from ..io.model_file import write_model

    if error.model is None:
        return error
    write_model(model_file, error.model)
    so_far = "the best model so far" if best else "the model so far"
    return InputError(
        f"{error.reason} after iteration {error.iterations}; {so_far} was written to {model_file}"
    )


def refuse_margin_bounds(margin_bounds):
    """The workers compute every margin: --margin-bounds 1 is a single-machine option."""
    if margin_bounds:
        raise OptionError("--margin-bounds 1 cannot be used with --scheduler")


def refuse_ocas(params, first_n, cost_file):
    """What ocas_learn --scheduler cannot do, refused before the cluster starts."""
    from .solver import refuse_method

    refuse_margin_bounds(params.margin_bounds)
    refuse_method(params.method)
    if first_n is not None:
        raise OptionError("-n cannot be used with --scheduler")
    if cost_file is not None:
        raise OptionError(
            "-C FILE cannot be used with --scheduler (give cost: factors in the examples instead)"
        )
    if params.loss != "hinge":
        raise OptionError(
            "--loss squared-hinge cannot be used with --scheduler (the cluster trains the hinge)"
        )


def refuse_struct(params, given, example_file=None):
    """What cp_learn --scheduler cannot train, refused before the cluster starts;
    ``given`` the problems' own options as the command line gave them (a random basis,
    the binary problem's --t 1, is not linear). With auto, a file in a problem's own
    format (cfg's trees) is recognised as on one machine (the registry's own_format),
    and refused by its problem's name."""
    from ..problems import own_format, problem_entry, resolve_problem
    from .solver import refuse_struct_options
    from .struct_solver import refuse_units_options, trains_units

    refuse_margin_bounds(params.margin_bounds)
    problem = resolve_problem(params.problem)
    own = own_format(example_file) if problem == "auto" and example_file is not None else None
    params = with_values(params, problem=problem if own is None else own.name)
    if trains_units(params.problem):
        refuse_units_options(params)
        return
    basis = 0
    if "--t" in given:
        binary = problem_entry("binary").command_line
        try:
            basis = binary.option("--t").parse(given["--t"], "binary")
        except OptionError:  # another problem's --t: no linear binary run either
            basis = None
    refuse_struct_options(params, basis)


def _tree_file(example_file) -> bool:
    """Bracketed trees (the cfg problem's own format, the registry's sniff)."""
    from ..problems import own_format

    return example_file != "-" and own_format(example_file) is not None


class ClusterData:
    """The examples on the cluster as a learner's run sees them: their sizes, ``train``
    with the single-machine solvers' signature (``solver``: "ocas" for ocas_learn,
    "struct" for cp_learn), the cluster's columns of the monitor and its line of
    statistics (:meth:`report`); :meth:`close` ends the session."""

    columns = ("rounds", "compute_seconds", "communication_seconds")
    on_cluster = True  # what the learners' run asks of its data (cpsvm.cli.runner.Job)

    def __init__(self, options: ClusterOptions, example_file, model_file, solver: str):
        self.model_file = model_file
        self.solver = solver
        planner = None
        if solver == "struct":  # sentences and queries never split (cluster.units)
            from .units import plan_unit_shards as planner
        if solver == "struct" and _tree_file(example_file):
            from .trees import open_trees

            self.data = open_trees(options.scheduler, example_file, options.timeout())
        else:
            self.data = open_data(
                options.scheduler, example_file, worker_timeout=options.timeout(), planner=planner
            )
        self.n_examples = self.data.n_examples
        self.n_features = self.data.n_features
        self.nnz = self.data.nnz
        self.closed = False

    def choose_kind(self, requested: str) -> str:
        """binary or multiclass, from the shards' labels (as on one machine: the
        registry's choose_entry)."""
        from .solver import choose_kind
        from .struct_solver import choose_units

        if self.solver == "struct":
            chosen = choose_units(self.data, requested)
            if chosen is not None:  # the single machine's structured problem
                return chosen
        return choose_kind(self.data, requested)

    def train(self, _, run, *, callback=None, should_stop=None):
        """The solver's ``train`` on the cluster's data; ``run`` the run's Resolved."""
        from .session import ClusterLost
        from .solver import train_ocas, train_struct
        from .struct_solver import train_units, trains_units

        solve = train_ocas if self.solver == "ocas" else train_struct
        if self.solver == "struct" and trains_units(run.params.problem):
            solve = train_units
        try:
            return solve(self.data, run, callback=callback, should_stop=should_stop)
        except ClusterLost as e:
            # OCAS keeps its best point (ocas_learn, cp_learn -w 9); -w 3 its last.
            best = self.solver == "ocas" or run.params.algorithm in (None, 9)
            best = best and not (self.solver == "struct" and trains_units(run.params.problem))
            raise lost_cluster(e, self.model_file, best) from None
        finally:
            self.close()

    def close(self):
        if not self.closed:
            self.closed = True
            self.data.session.close()

    def report(self, info, out=None):
        """The cluster's line, after the learner's own statistics."""
        report_cluster(info, self.data, self.model_file, out)


def report_cluster(info, data, model_file, out=None):
    out = out or (sys.stderr if model_file == "-" else sys.stdout)
    iterations = max(1, info.result.iterations)
    files = f" ({data.n_files} files)" if data.n_files != len(data.loaded) else ""
    print(
        f"Cluster: {len(data.loaded)} shards{files}; {info.rounds} rounds "
        f"({info.rounds / iterations:.1f} per iteration"
        + (
            f", line search {info.line_search_rounds / max(1, info.line_searches):.2f} per search"
            if info.line_searches
            else ""
        )
        + f"); compute {info.compute_seconds:.3f} s, communication "
        f"{info.communication_seconds:.3f} s "
        f"({info.communication_seconds / iterations:.4f} s per iteration)",
        file=out,
    )
