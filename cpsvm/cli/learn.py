"""cp_learn: 1-slack cutting-plane training of structural SVMs (SVMstruct / SVMperf /
SVMmulticlass / SVMhmm / SVMcfg / SVMrank command lines).

The problems' own options (SVMstruct's ``--x`` options: SVMperf's ``--b --t --k --f --p``,
SVMhmm's ``--t --e --b``, the parser's tree options) are declared by each problem's
registry entry (:mod:`cpsvm.problems.registry`); this command turns them into click
options and hands what was given, as text, to the problem's entry, which parses and checks
it: before the data are read when ``--problem`` names the problem, after (auto) otherwise.
The same letter may mean different things to different problems (``--t``, ``--b``).
"""

from __future__ import annotations

import click

from ..cluster.command import check_worker_timeout, scheduler_option
from ..errors import OptionError
from ..problems import entries, entry_of, resolve_problem
from .common import (
    CONTEXT_SETTINGS,
    FilePath,
    IntChoice,
    OutputPath,
    positive,
    run,
    validate_options,
    verbosity_option,
    version_option,
)
from .scaffold import (
    LEARNER_VERBOSITY,
    TrainingMonitor,
    c_option,
    draw_trace,
    finish,
    kernel_options,
    margin_bounds_option,
    max_idle_option,
    max_iterations_option,
    peak_rss_line,
    plot_option,
    print_struct_statistics,
    reading_line,
    report_stream,
    seed_option,
    threads_option,
    time_limit_option,
    trace_option,
    train_and_save,
)
from .selection import (
    check_model_file,
    path_picture,
    refuse,
    select_c,
    selection_options,
    wanted,
)

# The reader and the solver are imported inside the command (cpsvm/cli/__init__.py).

_PREFIX = "problem_"  # of the click names of the problems' options


def _param_name(flag: str) -> str:
    return _PREFIX + flag.lstrip("-").replace("-", "_")


def problem_options(command):
    """Every built-in problem's own options as click options, each flag once: its help
    says what it means to each problem that takes it (grouped when two say the same);
    its value stays text (or a flag) until the problem is known."""
    by_flag: dict = {}
    for entry in entries():
        for option in entry.options:
            by_flag.setdefault(option.flag, []).append((entry, option))
    for flag, owners in reversed(list(by_flag.items())):
        meanings: dict = {}
        for entry, option in owners:
            meanings.setdefault(option.help, []).append(entry)
        help_text = " ".join(
            f"{', '.join(e.name for e in who)} ({who[0].tool}): {text}"
            for text, who in meanings.items()
        )
        if all(option.kind == "flag" for _, option in owners):
            command = click.option(
                flag, _param_name(flag), is_flag=True, default=None, help=help_text
            )(command)
        else:
            command = click.option(
                flag, _param_name(flag), metavar=owners[0][1].metavar, default=None, help=help_text
            )(command)
    return command


def _c_help() -> str:
    return "Trade-off C (required, except with --baseline or --c-path). " + " ".join(
        e.c_help for e in entries() if e.c_help
    )


def _epsilon_help() -> str:
    default = entries()[0].epsilon
    others = "; ".join(e.epsilon_help for e in entries() if e.epsilon_help)
    return (
        "Tolerance: stop when the most violated constraint is violated by at most this much "
        f"(default {default:g}" + (f"; {others}" if others else "") + ")."
    )


def _loss_ids() -> list:
    return sorted({i for e in entries() for i in e.losses})


def _algorithm_help() -> str:
    searched = ", ".join(e.name for e in entries() if e.line_search)
    descent = " and ".join(e.name for e in entries() if e.coordinate_descent)
    cached = [e.name for e in entries() if e.default_algorithm == 4] + ["--problem module:Class"]
    return (
        "Algorithm: 0 n-slack, 1 n-slack (as 0), 2 1-slack primal QP, 3 1-slack dual, 4 "
        "1-slack dual with constraint cache, 5 dual coordinate descent with shrinking "
        f"(LIBLINEAR's method; {descent}, -l 2 for binary), 9 (SVMperf's custom slot) "
        f"1-slack dual with OCAS's line search for {searched} (linear, also --t 1) with "
        f"margin rescaling, else 3 (4 for {', '.join(cached[:-1])} and {cached[-1]}). "
        "Default: the fastest for the problem: 5 for multiclass, and for binary when the "
        "mean C_i*|x_i|^2 of its plain hinge is at most 3; else 9. 5 and 9 stop at a duality "
        "gap of C*epsilon; the statistics say which ran."
    )


def _problem_help() -> str:
    named = ", ".join(e.name + (f" ({e.summary})" if e.summary else "") for e in entries())
    detected = "; ".join(e.detect_help for e in entries() if e.detect_help and e.structured)
    fallback = ", ".join(e.detect_help for e in entries() if e.detect_help and not e.structured)
    return (
        f"{named}, auto ({detected}; else {fallback}; a choice made from qid is said) or "
        "module:Class: your own subclass of cpsvm.problems.PerExampleProblem, imported from the "
        "current directory or PYTHONPATH (its model records module:Class for cp_classify)."
    )


def _c_unless_baseline(ctx, param, value):
    """-c is required, except with --baseline or --c-path (given on the command line,
    they are processed before a missing -c)."""
    if (
        value is None
        and not ctx.params.get(_param_name("--baseline"))
        and ctx.params.get("c_path") is None
        and not ctx.resilient_parsing
    ):
        raise click.MissingParameter(ctx=ctx, param=param)
    return value


@click.command("cp_learn", context_settings=CONTEXT_SETTINGS)
@c_option(_c_help(), default=None, callback=_c_unless_baseline)
@click.option("-e", "epsilon", type=positive("epsilon"), default=None, help=_epsilon_help())
@click.option(
    "-w",
    "algorithm",
    type=IntChoice(0, 1, 2, 3, 4, 5, 9, expected="-w 0, 1, 2, 3, 4, 5 or 9"),
    default=None,
    help=_algorithm_help(),
)
@click.option(
    "-o",
    "rescaling",
    type=IntChoice(1, 2, expected="-o 1 (slack) or 2 (margin rescaling)"),
    default=2,
    show_default=True,
    help="Loss rescaling: 1 slack rescaling, 2 margin rescaling.",
)
@click.option(
    "-l",
    "loss_id",
    type=IntChoice(
        *_loss_ids(),
        expected="-l " + ", ".join(map(str, _loss_ids()[:-1])) + f" or {_loss_ids()[-1]}",
    ),
    default=None,
    help="Loss. " + " ".join(e.loss_help for e in entries()),
)
@click.option(
    "-k",
    "batch",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="-w 0: new constraints before the QP is re-solved.",
)
@click.option(
    "-f",
    "cache_size",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="-w 4: constraints cached per example.",
)
@max_iterations_option()
@time_limit_option()
@max_idle_option(50)
@kernel_options()
@problem_options
@click.option(
    "--i",
    "preimage",
    type=int,
    default=0,
    show_default=True,
    help="SVMperf's CPSP preimage search: only 0 (none) is supported.",
)
@click.option("--problem", default="auto", show_default=True, help=_problem_help())
@seed_option("Seed for the random basis (--t 1).")
@threads_option()
@trace_option("iteration (primal, dual, gap, ...)")
@plot_option()
@scheduler_option()
@verbosity_option(1, LEARNER_VERBOSITY)
@click.option(
    "-y",
    "qp_verbosity",
    type=click.IntRange(0, 3),
    default=0,
    show_default=True,
    help="SVMstruct's verbosity of the inner QP solver; accepted for compatibility, the QP "
    "prints nothing.",
)
@click.option(
    "-p",
    "slack_norm",
    type=IntChoice(1, 2, expected="-p 1 or 2"),
    default=1,
    show_default=True,
    help="SVMstruct's L-norm of the slacks: 1 (L1, as cp_learn trains); 2 (squared slacks) "
    "is not supported and refused.",
)
@click.option(
    "-m",
    "kernel_cache_mb",
    type=click.IntRange(min=1),
    default=40,
    show_default=True,
    help="SVMlight's and SVMperf's kernel cache size in MB; accepted for compatibility, "
    "cp_learn sizes what it keeps of the kernel itself.",
)
@version_option("SVM-struct V3.10, SVM-perf V3.00, SVM-multiclass V2.20 and SVM-hmm V3.10")
@margin_bounds_option("Binary problems with a linear model (-w 2, 3, 9); default 0.")
@selection_options(
    "folds of whole units: a query (rank), a sentence (hmm), a tree (cfg); stratified by "
    "class for binary and multiclass"
)
@click.argument("example_file", type=FilePath())
@click.argument("model_file", type=OutputPath(), required=False)
def command(
    C,
    epsilon,
    algorithm,
    rescaling,
    loss_id,
    batch,
    cache_size,
    max_iterations,
    time_limit,
    max_idle,
    kernel,
    preimage,
    problem,
    seed,
    threads,
    trace_path,
    plot_file,
    scheduler,
    worker_timeout,
    verbosity,
    qp_verbosity,
    slack_norm,
    kernel_cache_mb,
    margin_bounds,
    cv_folds,
    c_path,
    example_file,
    model_file,
    **flags,
):
    """Learn a structural SVM from EXAMPLE_FILE and write MODEL_FILE.

    Binary targets (+1/-1) give an SVMperf-style linear or kernel model in SVMlight's
    format (svm_classify reads it); class labels 1..k a Crammer-Singer model in
    SVMmulticlass's format; an SVM-hmm file (one token a line, qid the sentence) an
    SVM-HMM V3.10 model (svm_hmm_classify reads it); a ranking file (qid the query,
    graded targets) SVMrank's linear model in SVMlight's format; --problem module:Class
    a 'cpsvm user-problem model V1'. Classify with cp_classify.
    """
    if preimage != 0:
        raise click.UsageError(
            f"--i {preimage} (CPSP preimage search) is not supported; use --i 0 with --t 1 --k K"
        )
    if slack_norm != 1:
        raise click.UsageError("-p 2 (squared slacks) is not supported: cp_learn trains -p 1")
    given = {
        "--" + name[len(_PREFIX) :].replace("_", "-"): value
        for name, value in flags.items()
        if value is not None
    }
    spec = resolve_problem(problem)
    entry = entry_of(spec) if spec != "auto" else None
    options = entry.parse_options(given) if entry is not None else _check_for_any(given)
    from ..solvers.one_slack import StructParams, train
    from ..threads import thread_count

    params = StructParams(
        C=C or 1.0,
        epsilon=epsilon,
        algorithm=algorithm,
        rescaling=rescaling,
        loss_id=loss_id,
        max_iterations=max_iterations,
        max_idle=max_idle,
        cache_size=cache_size,
        batch=batch,
        kernel=kernel,
        n_threads=threads,
        problem=spec,
        options=options,
        seed=seed,
        time_limit=time_limit,
        margin_bounds=margin_bounds,
    )
    check_model_file(model_file, cv_folds, c_path, trace_path)
    refuse(
        cv_folds,
        c_path,
        ("--baseline" in given, "--baseline"),
        (scheduler is not None, "--scheduler"),
    )
    if "--baseline" in given:
        if scheduler is not None:
            raise OptionError("--baseline cannot be used with --scheduler")
        if plot_file is not None:
            raise OptionError("--baseline trains nothing: it has no trace for --plot")
        return _learn_baseline(entry, given, example_file, model_file, verbosity)
    validate_options(params)
    worker_timeout = check_worker_timeout(scheduler, worker_timeout)
    if scheduler is not None:  # the examples stay on a Dask cluster (cpsvm/cluster)
        from ..cluster.command import learn_on_cluster

        return learn_on_cluster(
            params,
            given,
            scheduler,
            example_file,
            model_file,
            verbosity,
            trace_path,
            plot_file,
            worker_timeout,
        )
    with thread_count(threads):
        data, entry = _read_examples(example_file, entry, given)
    report = report_stream(model_file)
    if spec == "auto":
        params.problem, params.options = entry.name, entry.parse_options(given)
        chosen = entry.auto_note(data) if entry.auto_note else None
        if chosen and verbosity >= 1:
            print(f"Problem chosen from the file: {entry.name}: {chosen}", file=report)
    if entry.name == "user":  # a user's Ψ is over the file's own feature indices
        from ..io.svmlight import check_width

        data = check_width(data.with_original_columns())
    _read_example_options(entry, params.options, given, data)
    if verbosity >= 1:
        print(reading_line(data, entry.examples(data) if entry.examples else None), file=report)
    if wanted(cv_folds, c_path):
        picture = path_picture(plot_file, c_path, model_file)
        params.C = _selected_c(
            data, entry, params, cv_folds, c_path, seed, verbosity, report, picture
        )
        if model_file is None:
            return
        plot_file = None if picture is not None else plot_file
    monitor = TrainingMonitor(verbosity, trace_path, "cp_learn", keep_rows=plot_file is not None)
    info, cpu = train_and_save(train, data, params, model_file, monitor)
    if verbosity >= 1:
        print_struct_statistics(info, params, cpu, report)
    if verbosity >= 2:
        print(peak_rss_line(), file=report)
    draw_trace(plot_file, monitor, f"cp_learn {example_file}: training trace")
    finish("cp_learn", info.result, model_file, verbosity, notes=info.notes)


def _selected_c(data, entry, params, cv_folds, c_path, seed, verbosity, report, plot_file):
    """--cv/--c-path: the C to train at, each fold's path warm along the values."""
    from ..selection.path import Fit
    from ..solvers.one_slack import StructPath

    if entry.cv_measure is None:
        raise OptionError(f"--cv and --c-path: the {entry.name} problem has no measure to judge by")
    loss_id = entry.loss_of(params.loss_id)

    def make_path(part, should_stop):
        path = StructPath(part, params)

        def fit(C):
            model, info = path.fit(C, should_stop=should_stop)
            return Fit(model, info.result.iterations, info.result.cuts_added)

        return fit

    return select_c(
        data, entry, params.C, cv_folds, c_path, seed, make_path, verbosity, report,
        loss_id=loss_id, plot_file=plot_file, prog="cp_learn",
    )  # fmt: skip


def _check_for_any(given: dict) -> dict:
    """Before the data tell which problem the file is: each given option must have a
    value that some problem taking it accepts. Returns no options: they are parsed again,
    by the problem's entry, once it is known."""
    for flag, text in given.items():
        owners = [(e, e.option(flag)) for e in entries() if e.option(flag) is not None]
        refusals = []
        for entry, option in owners:
            try:
                option.parse(text, entry.name)
            except OptionError:
                refusals.append(f"{option.wanted()} ({entry.name}: {option.what})")
            else:
                break
        else:
            raise OptionError(f"expected {' or '.join(refusals)}, got {text}")
    return {}


def _read_examples(example_file, entry, given):
    """The training data and, for auto, the problem whose own format the file is (the
    entries with a reader of their own, e.g. bracketed trees), or None (chosen from the
    SVMlight file's labels by the solver)."""
    own = [e for e in entries() if e.read is not None]
    if entry is None:
        entry = next((e for e in own if e.sniff(example_file)), None)
        if entry is None:
            from ..io.svmlight import read_examples
            from ..problems import choose_entry

            data = read_examples(example_file)
            return data, choose_entry(data, "auto", sequences=True)
        return entry.read(example_file, entry.parse_options(given)), entry
    if entry.read is not None:
        return entry.read(example_file, entry.parse_options(given)), entry
    from ..io.svmlight import read_examples

    return read_examples(example_file), entry


def _read_example_options(entry, options, given, data):
    """The options that name a file of examples (SVMperf's --f), read into the columns of
    the training data ``data``."""
    for option in entry.options:
        if option.kind == "examples" and option.flag in given:
            from ..io.svmlight import read_examples

            examples = read_examples(given[option.flag], training=False)
            options[option.name] = examples.onto_columns_of(data)


def _learn_baseline(entry, given, example_file, model_file, verbosity):
    """A problem's model made without training (``cp_learn --baseline pcfg``), written."""
    import time

    from ..io.model_file import write_model

    if entry is None:
        entry = next(e for e in entries() if e.baseline is not None)
    if entry.baseline is None:
        raise OptionError(f"--baseline is for the cfg problem, not {entry.name}")
    options = entry.parse_options(given)
    data = entry.read(example_file, options)
    started = time.process_time()
    model, lines = entry.baseline(data, options)
    write_model(model_file, model)
    if verbosity >= 1:
        out = report_stream(model_file)
        print(f"Reading training examples...done ({entry.examples(data)})", file=out)
        for line in lines:
            print(line, file=out)
        print(f"Runtime in cpu-seconds: {time.process_time() - started:.2f}", file=out)


def main(argv=None):
    run(command, argv, "cp_learn")


if __name__ == "__main__":
    main()
