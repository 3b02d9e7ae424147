"""The learners' one run: read → choose C (--cv, --c-path) → train → write → report → end,
the same code for cp_learn, ocas_learn, sampled_learn and asset_learn, on one machine or
with the examples on a Dask cluster (a :class:`cpsvm.cluster.command.ClusterData` then
stands for the data and trains them).

A learner is a :class:`Learner`: its Params (cpsvm.params, whose fields declare the
solver's flags), the command's other declared options (:attr:`Learner.options`), and the
hooks where its tool differs (its checks, how it reads, its statistics); the base class
holds the defaults. Its click command is built from the declarations
(:mod:`.command`), the flags every learner shares (--trace, --plot, -v, --cv, --c-path,
the files) declared once in :class:`Run`. Like :mod:`.common`, this module imports
nothing heavy: the reader, the solvers and numpy load when the command runs.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import click

from ..options import FILE, METADATA_KEY, OUTPUT, option, validate_options, with_values
from .command import DeclaredCommand, parameters, values_of
from .common import plot_option, version_option
from .selection import (
    DEFAULT_FOLDS,
    ColdPath,
    check_model_file,
    fits_along,
    path_picture,
    select_c,
    wanted,
)

LEARNER_VERBOSITY = (
    "Verbosity 0..3: 0 silent but errors; 1 statistics (and a progress "
    "bar on a terminal); 2 also one line per iteration on stderr; 3 also "
    "each iteration's time and its QP and oracle shares."
)


def read_init_model(path, data=None):
    """--init-model FILE: the model read (any kind cp_classify reads; a truncated file, one
    of no kind, refused in one line by the reader). The solver checks it against the data
    and the problem (cpsvm.models.start_weights)."""
    from ..io.model_file import read_model

    return read_model(path)


@dataclass
class Run:
    """The flags of a learner's run that are not the solver's: what it writes besides the
    model, how much it says, the model selection and the files. ``{trace_columns}``,
    ``{verbosity}`` and ``{fold_units}`` in the help are the learner's
    (:meth:`Learner.texts`)."""

    trace_path: str | None = option(
        "--trace",
        help="Write one TSV row per {trace_columns} of the training that writes MODEL_FILE.",
        default=None,
        type=OUTPUT,
    )
    plot_file: str | None = plot_option(
        "the training trace (the objectives and the duality gap against iterations and "
        "against seconds, as --trace writes them) or, with --c-path, the C path (the "
        "cross-validated measure against C)"
    )
    verbosity: int = option(
        "-v", help="{verbosity}", default=1, type=click.IntRange(0, 3), show_default=True
    )
    cv_folds: int | None = option(
        "--cv",
        help="K-fold cross-validation ({fold_units}; --seed fixes the folds): print the "
        "problem's measure per fold and as mean +- sd. MODEL_FILE may then be left out "
        "(nothing is written); given, it is trained on all the data.",
        default=None,
        type=click.IntRange(min=2),
        metavar="K",
    )
    c_path: str | None = option(
        "--c-path",
        help="Train along these C values (a list 0.1,1,10 or LOW:HIGH:N, N log-spaced), "
        "smallest first, each warm from the last where the method allows, in each fold "
        f"of --cv (default {DEFAULT_FOLDS} folds); print C -> cross-validated measure, "
        "pick the best C (ties: the smaller) and write MODEL_FILE trained on all the "
        "data at it.",
        default=None,
        metavar="VALUES",
    )
    example_file: str = option(argument=True, default=None, type=FILE, required=True)
    model_file: str | None = option(argument=True, default=None, type=OUTPUT)


@dataclass
class Job:
    """One run of a learner: what the command line gave (``params`` the solver's,
    ``run``, ``extra`` the learner's other options by class, ``files`` the files its
    Params fields name (by field), ``given`` the values no declaration took: cp_learn's problems'
    own options) and what the run finds (the data, the problem's entry, the settings
    resolved for the data, the report stream)."""

    params: Any
    run: Run
    extra: dict
    files: dict
    given: dict
    data: Any = None
    entry: Any = None
    resolved: Any = None  # the settings trained by (cpsvm.params.resolved.Resolved)
    report: Any = None
    plot_file: str | None = None

    @property
    def on_cluster(self) -> bool:
        """The data are a cluster's (cpsvm.cluster.command.ClusterData), which trains them."""
        return getattr(self.data, "on_cluster", False)


class Learner:
    """A learner command: its declarations and the hooks of :meth:`learn` where its tool
    differs. The defaults are the plain run: every check the Params make, the examples
    read from the SVMlight file, the model selection trained from scratch at each C (the
    learners with warm paths override :meth:`select_c`), no statistics."""

    name = ""
    params: type = object  # the solver's Params (cpsvm.params)
    options: tuple = ()  # the command's other declared dataclasses
    follows = ""  # the tool --version names
    doc = ""
    trace_columns = "iteration (primal, dual, gap, ...)"
    fold_units = "folds stratified by class"
    verbosity_help = LEARNER_VERBOSITY
    optional_with = ("c_path",)  # the options that make a required one (-c) optional
    style = "STRUCT"  # of the monitor (cpsvm.reporting.monitor)
    warn = True  # a run that did not converge is warned of
    best = False  # the model written is the best point so far, not the last
    peak_rss = False  # -v 2 prints the peak memory
    # The readers of the files its Params' ``file`` fields name: {field: read(path, data)},
    # run once the training data are read (-C FILE, --validate FILE).
    readers: dict = {}

    def texts(self) -> dict:
        """What the shared flags' help says of this learner (:class:`Run`)."""
        return {
            "trace_columns": self.trace_columns,
            "verbosity": self.verbosity_help,
            "fold_units": self.fold_units,
        }

    def extra_parameters(self) -> list:
        """Click parameters of the command that no dataclass declares (cp_learn's
        problems' options)."""
        return []

    def command(self) -> click.Command:
        declared = [self.params, *self.options]
        made = [p for cls in declared for p in parameters(cls)] + self.extra_parameters()
        made += parameters(Run, self.texts()) + [version_option(self.follows)]
        return DeclaredCommand(
            self.name,
            params=made,
            callback=self.invoke,
            help=inspect.cleandoc(self.doc),
            optional_with=self.optional_with,
        )

    def invoke(self, **values):
        self.check_values(values)
        extra = {cls: values_of(cls, values)[0] for cls in self.options}
        run, _ = values_of(Run, values)
        params, files = values_of(self.params, values)
        if run.c_path is not None and params.C is None:
            params = with_values(params, C=1.0)  # each fold's fits set their own
        return self.learn(Job(params, run, extra, files, self.given(values)))

    # -- the run ------------------------------------------------------------------------------

    def learn(self, job: Job):
        """The run, the same for every learner."""
        from ..io.atomic import refuse_same_files
        from ..reporting.run import draw_trace, finish, train_and_save
        from ..reporting.statistics import peak_rss_line, report_stream
        from ..threads import thread_count

        run = job.run
        check_model_file(run.model_file, run.cv_folds, run.c_path, run.trace_path)
        outputs = [("MODEL_FILE", run.model_file), ("--trace", run.trace_path)]
        refuse_same_files(self.input_files(job), [*outputs, ("--plot", run.plot_file)])
        self.check(job)
        self.refuse_probability(job)
        job.report = report_stream(run.model_file)
        job.plot_file = run.plot_file
        with thread_count(job.params.n_threads):
            job.data = self.read(job)
            self.read_files(job)
        try:
            self.after_read(job)
            self.check_probability(job)
            if wanted(run.cv_folds, run.c_path):
                picture = path_picture(run.plot_file, run.c_path, run.model_file)
                job.params = with_values(job.params, C=self.select_c(job, picture))
                if run.model_file is None:
                    return None
                job.plot_file = None if picture is not None else run.plot_file
            job.resolved = self.resolve(job)
            self.before_training(job)
            train = job.data.train if job.on_cluster else self.solver_train(job)
            sigmoid = self.fit_probability(job, train)
            if sigmoid is not None:
                train = _with_sigmoid(train, sigmoid)
            monitor = self.monitor(job)
            info, cpu = train_and_save(
                train, job.data, job.resolved, run.model_file, monitor, terminate=True
            )
        finally:
            if job.on_cluster:
                job.data.close()
        if run.verbosity >= 1:
            self.statistics(job, info, cpu)
            if job.on_cluster:
                job.data.report(info, job.report)
            if sigmoid is not None:
                print(_sigmoid_line(sigmoid, job.params.seed), file=job.report)
        if run.verbosity >= 2 and self.peak_rss:
            print(peak_rss_line(), file=job.report)
        draw_trace(job.plot_file, monitor, f"{self.name} {run.example_file}: training trace")
        finish(
            self.name,
            info.result,
            run.model_file,
            run.verbosity,
            notes=self.notes(job, info),
            warn=self.warn,
            best=self.best,
            terminated=getattr(info, "terminated", 0),
        )
        return None

    # -- the hooks ------------------------------------------------------------------------------

    def given(self, values: dict) -> dict:
        """What the run takes of the values no declaration took (none by default)."""
        return {}

    def check_values(self, values: dict) -> None:
        """Checks between the command line's values before anything is built from them
        (the Kernel's import loads numpy)."""

    def input_files(self, job: Job) -> list:
        """(what, path) of every file the run reads: EXAMPLE_FILE and the files its
        Params' fields name (-C, --validate)."""
        fields = type(job.params).__dataclass_fields__
        named = [
            (fields[name].metadata[METADATA_KEY].flags[0], path) for name, path in job.files.items()
        ]
        return [("EXAMPLE_FILE", job.run.example_file), *named]

    def check(self, job: Job):
        """The refusals before any data is read."""
        validate_options(job.params)

    def read_files(self, job: Job) -> None:
        """The files the Params' fields name, read now that the training data are: each
        field's value its reader's (:attr:`readers`)."""
        if job.files:
            read = {name: self.readers[name](path, job.data) for name, path in job.files.items()}
            job.params = with_values(job.params, **read)

    def read(self, job: Job):
        """The training data."""
        from ..io.svmlight import read_examples

        return read_examples(job.run.example_file)

    def after_read(self, job: Job) -> None:
        """What the run says of the data it read (SVMstruct's reading line)."""
        from ..reporting.statistics import reading_line

        if job.run.verbosity >= 1:
            print(reading_line(job.data), file=job.report)

    def refuse_probability(self, job: Job) -> None:
        """--probability's refusals before anything is read: the cluster's data
        (--scheduler), -C FILE (per-example costs, which the folds would not split)."""
        if not getattr(job.params, "probability", False):
            return
        from ..errors import OptionError

        if any(getattr(given, "scheduler", None) is not None for given in job.extra.values()):
            raise OptionError("--probability cannot be used with --scheduler")
        if "example_costs" in job.files:
            raise OptionError(
                "--probability cannot be used with -C (per-example C_i; cost: factors in "
                "the file are kept)"
            )

    def check_probability(self, job: Job) -> None:
        """--probability's refusals once the data are read and before any training: a
        problem other than binary classification, data too few for the folds."""
        if not getattr(job.params, "probability", False):
            return
        from ..errors import OptionError
        from ..selection.calibration import check_calibration_data

        problem = self.resolve(job).problem
        if problem != "binary":
            raise OptionError(
                f"--probability fits P(y=+1) of binary classification; the problem here is "
                f"{problem} (see PROBABILITIES in the man page)"
            )
        check_calibration_data(job.data.y, job.data.source)

    def fit_probability(self, job: Job, train):
        """--probability: Platt's sigmoid (cpsvm.engine.platt.Sigmoid) on the 5-fold
        cross-validated decision values, each fold trained by ``train`` at the run's
        settings; None without the flag. Ctrl-C stops it between two trainings (exit
        130, nothing written)."""
        if not getattr(job.params, "probability", False):
            return None
        from ..reporting.monitor import progress
        from ..reporting.run import StopOnInterrupt
        from ..selection.calibration import PROBABILITY_FOLDS, platt_sigmoid

        with (
            StopOnInterrupt(message=None) as stop,
            progress(PROBABILITY_FOLDS, job.run.verbosity, "probability folds", "fit") as bar,
        ):
            return platt_sigmoid(
                job.data, train, job.resolved, job.params.C, job.params.seed,
                progress=bar.update, should_stop=stop,
            )  # fmt: skip

    def select_c(self, job: Job, picture):
        """The C to train at: --cv or --c-path, each value trained from scratch."""
        from ..problems import problem_entry

        train, run = self.solver_train(job), self.resolve(job)
        make_path = fits_along(lambda part: ColdPath(train, part, run))
        return self.cross_validate(job, problem_entry(run.problem), make_path, picture)

    def cross_validate(self, job: Job, entry, make_path, picture, loss=None):
        """select_c of the run: ``make_path`` the folds' paths, ``entry`` the problem whose
        measure judges them (by the loss id ``loss``, cp_learn's -l), ``picture`` the --plot
        file of the path, if any."""
        run = job.run
        return select_c(
            job.data, entry, job.params.C, run.cv_folds, run.c_path, job.params.seed,
            make_path, run.verbosity, job.report, loss_id=loss, plot_file=picture,
            prog=self.name,
        )  # fmt: skip

    def resolve(self, job: Job):
        """The settings the run trains by, made once from its Params (whose rules between
        fields :meth:`check` checked) and its data: by default the Params and their
        problem, nothing derived but the classes class weights need."""
        from ..params.resolved import Resolved
        from ..params.shared import training_classes

        labels = None if job.on_cluster else training_classes(job.data, job.params)
        return Resolved(job.params, job.params.problem, classes=labels)

    def before_training(self, job: Job) -> None:
        """What is said of the settings before training."""

    def monitor(self, job: Job):
        from ..reporting import monitor

        style = getattr(monitor, self.style)
        if job.on_cluster:
            style = style.with_columns(job.data.columns)
        return monitor.Monitor(
            style,
            job.run.verbosity,
            job.run.trace_path,
            self.name,
            total=self.total(job),
            keep_rows=job.plot_file is not None,
        )

    def total(self, job: Job):
        """The progress bar's length, when known."""
        return None

    def solver_train(self, job: Job):
        """The solver's ``train(dataset, run, callback, should_stop)`` (``run`` a Resolved),
        or what makes the run's model in its place (cp_learn's --baseline)."""
        raise NotImplementedError

    def statistics(self, job: Job, info, cpu) -> None:
        """The figures printed after training (-v 1)."""

    def notes(self, job: Job, info) -> list:
        return getattr(info, "notes", [])


def _with_sigmoid(train, sigmoid):
    """``train`` whose model carries Platt's (A, B) (written in its file's threshold line)."""

    def train_with_sigmoid(data, run, **settings):
        model, info = train(data, run, **settings)
        model.platt = (sigmoid.A, sigmoid.B)
        return model, info

    return train_with_sigmoid


def _sigmoid_line(sigmoid, seed) -> str:
    """The statistics' line of --probability."""
    from ..selection.calibration import PROBABILITY_FOLDS

    ended = "" if sigmoid.status == "converged" else f", {sigmoid.status}"
    return (
        f"Platt's sigmoid P(y=+1|f) = 1/(1+exp(A*f+B)) on {PROBABILITY_FOLDS}-fold "
        f"cross-validated decision values (seed {seed}): A = {sigmoid.A:.6g}, "
        f"B = {sigmoid.B:.6g} ({sigmoid.iterations} Newton iterations{ended})"
    )
