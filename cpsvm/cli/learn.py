"""cp_learn: 1-slack cutting-plane training of structural SVMs (SVMstruct / SVMperf /
SVMmulticlass / SVMhmm / SVMcfg / SVMrank command lines).

Its flags are StructParams' fields (cpsvm.params.one_slack), SVMstruct's flags kept for
compatibility (:class:`Compatibility`), the cluster's, and the problems' own options
(SVMstruct's ``--x`` options: SVMperf's ``--b --t --k --f --p``, SVMhmm's ``--t --e --b``,
the parser's tree options), declared by each problem's entry (its ``command_line``,
:mod:`cpsvm.problems.entry`): this command turns them into click options and hands what
was given, as text, to the problem's entry, which parses and checks it: before the data
are read when ``--problem`` names the problem, after (auto: the registry tells which
problem the file is) otherwise. The same letter may mean different things to different
problems (``--t``, ``--b``). The run is the learners' (:mod:`.runner`), a model made
without training (``--baseline pcfg``) included.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import click

from ..cluster.command import ClusterData, ClusterOptions, refuse_struct
from ..errors import OptionError
from ..options import Choice, Range, option, validate_options, with_values
from ..params.one_slack import StructParams
from ..problems import entries, entry_of, parse_given, read_training_data, resolve_problem
from ..problems.registry import reserve_flags
from .common import run
from .runner import Learner, read_init_model
from .selection import fits_along, refuse

# The reader and the solver are imported inside the command (cpsvm/cli/__init__.py).

_PREFIX = "problem_"  # of the click names of the problems' options


def _param_name(flag: str) -> str:
    return _PREFIX + flag.lstrip("-").replace("-", "_")


def _trains_nothing() -> list:
    """The problems' options that make a model without training (cfg's --baseline)."""
    return [o.flag for e in entries() for o in e.command_line.options if o.trains_nothing]


def _trains_nothing_given(job) -> str | None:
    """The option given that makes the model without training (cfg's --baseline), if any."""
    return next((flag for flag in _trains_nothing() if flag in job.given), None)


@dataclass
class Compatibility:
    """SVMstruct's and SVMperf's flags that cp_learn accepts and does not use, or refuses
    but for the one value it trains."""

    preimage: int = option(
        "--i",
        help="SVMperf's CPSP preimage search: only 0 (none) is supported.",
        default=0,
        type=int,
        show_default=True,
    )
    qp_verbosity: int = option(
        "-y",
        help="SVMstruct's verbosity of the inner QP solver; accepted for compatibility, the QP "
        "prints nothing.",
        default=0,
        type=Range(int, 0, 3),
        show_default=True,
    )
    slack_norm: int = option(
        "-p",
        help="SVMstruct's L-norm of the slacks: 1 (L1, as cp_learn trains); 2 (squared slacks) "
        "is not supported and refused.",
        default=1,
        type=Choice((1, 2), expected="-p 1 or 2"),
        show_default=True,
    )
    kernel_cache_mb: int = option(
        "-m",
        help="SVMlight's and SVMperf's kernel cache size in MB; accepted for compatibility, "
        "cp_learn sizes what it keeps of the kernel itself.",
        default=40,
        type=Range(int, 1),
        show_default=True,
    )

    def refuse(self):
        if self.preimage != 0:
            raise click.UsageError(
                f"--i {self.preimage} (CPSP preimage search) is not supported; use --i 0 "
                "with --t 1 --k K"
            )
        if self.slack_norm != 1:
            raise click.UsageError("-p 2 (squared slacks) is not supported: cp_learn trains -p 1")


class StructLearn(Learner):
    """Learn a structural SVM from EXAMPLE_FILE and write MODEL_FILE.

    Binary targets (+1/-1) give an SVMperf-style linear or kernel model in SVMlight's
    format (svm_classify reads it); class labels 1..k a Crammer-Singer model in
    SVMmulticlass's format; an SVM-hmm file (one token a line, qid the sentence) an
    SVM-HMM V3.10 model (svm_hmm_classify reads it); a ranking file (qid the query,
    graded targets) SVMrank's linear model in SVMlight's format; --problem module:Class
    a 'cpsvm user-problem model V1'. Classify with cp_classify.
    """

    name = "cp_learn"
    params = StructParams
    options = (Compatibility, ClusterOptions)
    follows = "SVM-struct V3.10, SVM-perf V3.00, SVM-multiclass V2.20 and SVM-hmm V3.10"
    doc = __doc__
    fold_units = (
        "folds of whole units: a query (rank), a sentence (hmm), a tree (cfg); stratified by "
        "class for binary and multiclass"
    )
    peak_rss = True
    readers = {"init_model": read_init_model}

    @property
    def optional_with(self):
        return (*map(_param_name, _trains_nothing()), "c_path")

    def extra_parameters(self):
        """Every problem's own options, each flag once: its help says what it means to each
        problem that takes it (grouped when two say the same); its value stays text (or a
        flag) until the problem is known."""
        by_flag: dict = {}
        for entry in entries():
            for declared in entry.command_line.options:
                by_flag.setdefault(declared.flag, []).append((entry, declared))
        made = []
        for flag, owners in by_flag.items():
            meanings: dict = {}
            for entry, declared in owners:
                meanings.setdefault(declared.help, []).append(entry)
            help_text = " ".join(
                f"{', '.join(e.name for e in who)} ({who[0].command_line.tool}): {text}"
                for text, who in meanings.items()
            )
            if all(declared.kind == "flag" for _, declared in owners):
                settings = dict(is_flag=True)
            else:
                settings = dict(metavar=owners[0][1].metavar)
            made.append(
                click.Option([flag, _param_name(flag)], default=None, help=help_text, **settings)
            )
        return made

    def given(self, values):
        """The problems' options given, as text by flag."""
        return {
            "--" + name[len(_PREFIX) :].replace("_", "-"): value
            for name, value in values.items()
            if name.startswith(_PREFIX) and value is not None
        }

    def input_files(self, job):
        """Also the files of examples the problems' options name (SVMperf's --f)."""
        examples = {
            o.flag for e in entries() for o in e.command_line.options if o.kind == "examples"
        }
        named = [(flag, text) for flag, text in job.given.items() if flag in examples]
        return super().input_files(job) + named

    def check(self, job):
        given = job.given
        job.extra[Compatibility].refuse()
        spec = resolve_problem(job.params.problem)
        job.entry = entry_of(spec) if spec != "auto" else None
        parsed = parse_given(job.entry, given) if job.entry is not None else _check_for_any(given)
        # (C None: a model made without training)
        job.params = params = with_values(
            job.params, problem=spec, options=parsed, C=job.params.C or 1.0
        )
        cluster = job.extra[ClusterOptions]
        nothing = _trains_nothing_given(job)
        refuse(
            job.run.cv_folds,
            job.run.c_path,
            (nothing is not None, nothing),
            (cluster.scheduler is not None, "--scheduler"),
        )
        if nothing is not None:
            if job.files.get("init_model") is not None:
                raise OptionError(f"{nothing} trains nothing: it has no start for --init-model")
            if cluster.scheduler is not None:
                raise OptionError(f"{nothing} cannot be used with --scheduler")
            if job.run.plot_file is not None:
                raise OptionError(f"{nothing} trains nothing: it has no trace for --plot")
            job.entry = _owner(job.entry, nothing)
            job.params = with_values(
                params, problem=job.entry.name, options=parse_given(job.entry, given)
            )
            return
        validate_options(params)
        cluster.timeout()
        if cluster.scheduler is not None:
            refuse_struct(params, given, job.run.example_file)
            if job.files.get("init_model") is not None:
                raise OptionError("--init-model cannot be used with --scheduler yet")

    def read(self, job):
        cluster = job.extra[ClusterOptions]
        if cluster.scheduler is not None:  # the examples stay on a Dask cluster
            data = ClusterData(cluster, job.run.example_file, job.run.model_file, "struct")
            try:
                kind = data.choose_kind(job.params.problem)
                job.entry = entry_of(kind)
                if job.params.problem == "auto":  # the problem's checks, now that it is known
                    job.params = with_values(
                        job.params, problem=kind, options=parse_given(job.entry, job.given)
                    )
                    validate_options(job.params)
            except BaseException:
                data.close()
                raise
            return data
        data, job.entry = read_training_data(job.run.example_file, job.entry, job.given)
        return data

    def after_read(self, job):
        from ..reporting.statistics import reading_line

        data, entry, given = job.data, job.entry, job.given
        if job.on_cluster:
            return super().after_read(job)
        if _trains_nothing_given(job) is not None:
            if job.run.verbosity >= 1:
                examples = entry.reading.examples(data)
                print(f"Reading training examples...done ({examples})", file=job.report)
            return None
        if job.params.problem == "auto":
            job.params = with_values(
                job.params, problem=entry.name, options=parse_given(entry, given)
            )
            chosen = entry.reading.auto_note(data)
            if chosen and job.run.verbosity >= 1:
                print(f"Problem chosen from the file: {entry.name}: {chosen}", file=job.report)
        if entry.reading.own_columns:
            from ..io.svmlight import check_width

            job.data = data = check_width(data.with_original_columns())
        with_examples = _read_example_options(entry, job.params.options, given, data)
        if with_examples is not job.params.options:
            job.params = with_values(job.params, options=with_examples)
        if job.run.verbosity >= 1:
            print(reading_line(data, entry.reading.examples(data)), file=job.report)
        return None

    def select_c(self, job, picture):
        """--cv/--c-path: the C to train at, each fold's path warm along the values."""
        from ..solvers.one_slack import StructPath

        run, entry = self.resolve(job), job.entry
        make_path = fits_along(lambda part: StructPath(part, run))
        loss = entry.command_line.loss_of(run.params.loss_id)
        return self.cross_validate(job, entry, make_path, picture, loss)

    def resolve(self, job):
        """The problem's settings for the data (on a cluster, the shards decide them as
        they are trained)."""
        if job.on_cluster or _trains_nothing_given(job) is not None:
            return super().resolve(job)
        from ..solvers.one_slack import settings

        return settings(job.data, job.params)

    def solver_train(self, job):
        if _trains_nothing_given(job) is not None:
            return _made_without_training(job.entry)
        from ..solvers.one_slack import train

        return train

    def statistics(self, job, info, cpu):
        from ..reporting.statistics import struct_statistics

        if _trains_nothing_given(job) is not None:
            for line in info.lines:
                print(line, file=job.report)
            print(f"Runtime in cpu-seconds: {cpu:.2f}", file=job.report)
            return
        struct_statistics(info, job.params, cpu, job.report)


def _check_for_any(given: dict) -> dict:
    """Before the data tell which problem the file is: each given option must have a
    value that some problem taking it accepts. Returns no options: they are parsed again,
    by the problem's entry, once it is known."""
    for flag, text in given.items():
        owners = [
            (e, e.command_line.option(flag))
            for e in entries()
            if e.command_line.option(flag) is not None
        ]
        refusals = []
        for entry, declared in owners:
            try:
                declared.parse(text, entry.name)
            except OptionError:
                refusals.append(f"{declared.wanted()} ({entry.name}: {declared.what})")
            else:
                break
        else:
            raise OptionError(f"expected {' or '.join(refusals)}, got {text}")
    return {}


def _read_example_options(entry, options, given, data) -> dict:
    """``options`` with those that name a file of examples (SVMperf's --f) read into the
    columns of the training data ``data`` (``options`` itself when none does)."""
    for declared in entry.command_line.options:
        if declared.kind == "examples" and declared.flag in given:
            from ..io.svmlight import read_examples

            examples = read_examples(given[declared.flag], training=False)
            options = {**options, declared.name: examples.onto_columns_of(data)}
    return options


def _owner(entry, flag):
    """The problem whose option ``flag`` makes a model without training: ``entry`` (None:
    auto) if it is one of those that take it (OptionError if not), else the first."""
    owners = [
        e
        for e in entries()
        if any(o.flag == flag and o.trains_nothing for o in e.command_line.options)
    ]
    if entry is None:
        return owners[0]
    if entry not in owners:
        raise OptionError(
            f"{flag} is for the {' and '.join(e.name for e in owners)} problem, not {entry.name}"
        )
    return entry


@dataclass
class MadeWithoutTraining:
    """What the run reports of a model made without training: the problem's lines, and a
    result that is final (no iterations, nothing to warn of)."""

    lines: list
    result: object = field(default_factory=lambda: _Final())
    notes: list = field(default_factory=list)
    terminated: int = 0


@dataclass
class _Final:
    status: str = "converged"
    iterations: int = 0


def _made_without_training(entry):
    """The run's ``train`` for a model made without training (the problem's baseline)."""

    def make(data, run, *, callback=None, should_stop=None):
        model, lines = entry.training.baseline(data, run.params.options)
        return model, MadeWithoutTraining(lines)

    return make


LEARNER = StructLearn()
command = LEARNER.command()
# Its own flags, from its declarations: no problem registered may take one (-c, -v, ...).
reserve_flags(
    flag
    for param in command.get_params(click.Context(command, **command.context_settings))
    if isinstance(param, click.Option) and not param.name.startswith(_PREFIX)
    for flag in (*param.opts, *param.secondary_opts)
)


def main(argv=None):
    run(command, argv, "cp_learn")


if __name__ == "__main__":
    main()
