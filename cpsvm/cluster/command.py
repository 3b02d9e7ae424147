"""``--scheduler``: ocas_learn and cp_learn with the examples on a Dask cluster.

The commands keep their flags, messages and model files; what changes is where the
data are read (each worker reads its shards: byte ranges of one file, or the files of a
glob) and which solver runs (:mod:`cpsvm.cluster.solver`). Dask is imported only when
the flag is given (:class:`cpsvm.cluster.session.Session`): the learners import
:func:`scheduler_option` from here at start-up, so at module level this module imports
nothing heavy (no numpy, scipy, numba or dask).
"""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

import click

from ..cli.common import validate_options
from ..cli.scaffold import (
    TrainingMonitor,
    draw_trace,
    finish,
    peak_rss_line,
    print_struct_statistics,
    reading_line,
    report_stream,
    train_and_save,
)
from ..errors import InputError, OptionError
from . import WORKER_TIMEOUT


def scheduler_option():
    """--scheduler and --worker-timeout (the command gets ``scheduler`` and
    ``worker_timeout``)."""
    scheduler = click.option(
        "--scheduler",
        default=None,
        metavar="ADDRESS|local:N",
        help="Train on a Dask cluster, the examples staying on the workers: ADDRESS of a "
        "running 'dask scheduler' (e.g. tcp://host:8786) or local:N (N worker "
        "processes on this machine). EXAMPLE_FILE is then read by the workers: one "
        "file (cut into byte ranges) or a quoted glob of shard files ('part-*.svm', "
        ".gz too), a path every worker sees or an fsspec URL: s3://, gs://, hdfs://, "
        "http(s)://, file:// (s3fs, gcsfs, pyarrow on the workers for the first three). "
        "Linear binary and multiclass only; needs pip install cpsvm[dask].",
    )
    timeout = click.option(
        "--worker-timeout",
        "worker_timeout",
        type=click.FloatRange(min=0.0, min_open=True),
        default=None,
        metavar="SECONDS",
        help=f"With --scheduler: how long the cluster may have no worker before the run "
        f"ends (exit 1, the best model so far written), and a worker may stay silent (no "
        f"heartbeat) beyond the longest task before it is dropped and its shard read "
        f"again elsewhere; default {WORKER_TIMEOUT:g}.",
    )

    def options(f):
        return scheduler(timeout(f))

    return options


def check_worker_timeout(scheduler, worker_timeout) -> float:
    """The worker timeout of a run (only with --scheduler; a finite number of seconds)."""
    import math

    if worker_timeout is None:
        return WORKER_TIMEOUT
    if scheduler is None:
        raise OptionError("--worker-timeout needs --scheduler")
    if not math.isfinite(worker_timeout):
        raise OptionError(
            f"expected --worker-timeout a finite number of seconds > 0, got {worker_timeout:g}"
        )
    return worker_timeout


class ClusterMonitor(TrainingMonitor):
    """The learners' monitor, with each iteration's rounds and seconds on the cluster."""

    COLUMNS = TrainingMonitor.COLUMNS + ("rounds", "compute_seconds", "communication_seconds")


def _shard_count(session) -> int:
    return max(1, session.n_workers)


def open_data(scheduler, example_file, parts=None, worker_timeout=WORKER_TIMEOUT):
    """Connect (or start a local cluster) and load the shards on the workers."""
    from .session import Session, ShardedData
    from .shards import plan_shards, shard_loaders
    from .sources import is_url

    session = Session(scheduler, worker_timeout=worker_timeout)
    # The workers resolve a relative path in their own directory: made absolute here,
    # where the user named it (a URL names its store).
    if not is_url(example_file):
        example_file = os.path.abspath(example_file)
    try:
        count = parts or _shard_count(session)
        # Planned where the shards will be read: the client need not see the files.
        specs = session.run(plan_shards, example_file, count)
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


class ClusterInputs:
    """What ocas_learn reads of its input, for a cluster: sizes for its statistics, a
    ``train`` with the single-machine solver's signature, the cluster's monitor."""

    Monitor = ClusterMonitor

    def __init__(
        self,
        scheduler,
        example_file,
        model_file,
        *,
        first_n=None,
        cost_file=None,
        margin_bounds=None,
        verbosity=1,
        worker_timeout=WORKER_TIMEOUT,
        method=None,
    ):
        from .solver import refuse_method

        refuse_margin_bounds(margin_bounds)
        refuse_method(method)
        if first_n is not None:
            raise OptionError("-n cannot be used with --scheduler")
        if cost_file is not None:
            raise OptionError(
                "-C FILE cannot be used with --scheduler (give cost: factors "
                "in the examples instead)"
            )
        self.model_file = model_file
        self.verbosity = verbosity
        self.data = open_data(scheduler, example_file, worker_timeout=worker_timeout)
        self.n_examples = self.data.n_examples
        self.n_features = self.data.n_features
        self.X = SimpleNamespace(nnz=self.data.nnz)

    def train(self, _, params, *, callback=None, should_stop=None):
        from .session import ClusterLost
        from .solver import train_ocas

        try:
            model, info = train_ocas(self.data, params, callback=callback, should_stop=should_stop)
        except ClusterLost as e:
            raise lost_cluster(e, self.model_file, best=True) from None
        finally:
            self.data.session.close()
        self.info = info
        return model, info

    def report(self):
        """The cluster's line, after the command's own statistics."""
        if self.verbosity >= 1:
            report_cluster(self.info, self.data, self.model_file)


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


def refuse_margin_bounds(margin_bounds):
    """The workers compute every margin: --margin-bounds 1 is a single-machine option."""
    if margin_bounds:
        raise OptionError("--margin-bounds 1 cannot be used with --scheduler")


def learn_on_cluster(
    params,
    given,
    scheduler,
    example_file,
    model_file,
    verbosity,
    trace_path,
    plot_file=None,
    worker_timeout=WORKER_TIMEOUT,
):
    """cp_learn --scheduler: the command's flow with the data on the cluster; ``given``
    the problem's own options as the command line gave them."""
    from ..problems import problem_entry, resolve_problem
    from .session import ClusterLost
    from .solver import choose_kind, refuse_struct_options, train_struct

    def train(_, p, **kw):
        try:
            return train_struct(data, p, **kw)
        except ClusterLost as e:
            best = p.algorithm in (None, 9)  # OCAS keeps its best point; -w 3 its last
            raise lost_cluster(e, model_file, best) from None

    refuse_margin_bounds(params.margin_bounds)
    params.problem = resolve_problem(params.problem)
    refuse_struct_options(params, 0 if given.get("--t") in (None, "0") else 1)
    data = open_data(scheduler, example_file, worker_timeout=worker_timeout)
    try:
        kind = choose_kind(data, params.problem)
        params.problem, params.options = kind, problem_entry(kind).parse_options(given)
        validate_options(params)
        shape = SimpleNamespace(n_examples=data.n_examples, n_features=data.n_features)
        report = report_stream(model_file)
        if verbosity >= 1:
            print(reading_line(shape), file=report)
        monitor = ClusterMonitor(verbosity, trace_path, "cp_learn", keep_rows=plot_file is not None)
        info, cpu = train_and_save(train, shape, params, model_file, monitor, terminate=True)
    finally:
        data.session.close()
    if verbosity >= 1:
        print_struct_statistics(info, params, cpu, report)
        report_cluster(info, data, model_file, report)
    if verbosity >= 2:
        print(peak_rss_line(), file=report)
    draw_trace(plot_file, monitor, f"cp_learn {example_file}: training trace")
    finish(
        "cp_learn", info.result, model_file, verbosity, notes=info.notes, terminated=info.terminated
    )
