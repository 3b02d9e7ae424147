"""ocas_learn: linear SVMs by OCAS (libocas svmocas / msvmocas command line). Its flags
are OcasParams' fields (cpsvm.params.ocas), -n and the cluster's; the run is the
learners' (:mod:`.runner`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..cluster.command import ClusterData, ClusterOptions, refuse_ocas
from ..errors import InputError, OptionError
from ..options import Range, option, validate_options
from ..params.ocas import OcasParams
from .common import run
from .runner import Learner, read_init_model
from .selection import fits_along, refuse

# numpy, the reader and the solver are imported inside the command (cpsvm/cli/__init__.py).


def read_costs(path, data=None):
    """-C FILE: one positive number per line (blank lines skipped); with ``data`` (the
    training examples), one per example."""
    import math

    import numpy as np

    from ..io.streams import read_bytes, source_name

    name = source_name(path)
    costs = []
    for line_no, line in enumerate(read_bytes(path).decode("utf-8", "replace").splitlines(), 1):
        text = line.strip()
        if not text:
            continue
        try:
            value = float(text)
        except ValueError:
            raise InputError(
                f"expected a number C_i > 0, got {text!r}", source=name, line=line_no
            ) from None
        if not (value > 0 and math.isfinite(value)):
            raise InputError(f"expected a finite C_i > 0, got {text!r}", source=name, line=line_no)
        costs.append(value)
    if data is not None and len(costs) != data.n_examples:
        raise InputError(
            f"expected {data.n_examples} costs, one per example, found {len(costs)}", source=name
        )
    return np.array(costs)


@dataclass
class FirstExamples:
    first_n: int | None = option(
        "-n", help="Use only the first n examples.", default=None, type=Range(int, 1)
    )


class OcasLearn(Learner):
    """Train a linear SVM on EXAMPLE_FILE by OCAS and write MODEL_FILE.

    Targets +1/-1 train svmocas's binary SVM (an SVMlight linear model, which
    cp_classify and svm_classify read); class labels 1..k msvmocas's Crammer-Singer
    machine (an SVMmulticlass model).
    """

    name = "ocas_learn"
    params = OcasParams
    options = (FirstExamples, ClusterOptions)
    follows = "libocas's svmocas and msvmocas"
    doc = __doc__
    trace_columns = "iteration (Q_P, Q_D, gap, ...)"
    style = "OCAS"
    warn = False
    best = True
    peak_rss = True
    readers = {"example_costs": read_costs, "init_model": read_init_model}

    def check(self, job):
        params, cluster = job.params, job.extra[ClusterOptions]
        validate_options(params)
        cluster.timeout()
        cost_file = job.files.get("example_costs")
        refuse(
            job.run.cv_folds,
            job.run.c_path,
            (cluster.scheduler is not None, "--scheduler"),
            (cost_file is not None, "-C (per-example C_i; cost: factors in the file are kept)"),
        )
        if cluster.scheduler is not None:
            refuse_ocas(params, job.extra[FirstExamples].first_n, cost_file)
            if job.files.get("init_model") is not None:
                raise OptionError("--init-model cannot be used with --scheduler yet")

    def read(self, job):
        cluster = job.extra[ClusterOptions]
        if cluster.scheduler is not None:  # the examples stay on a Dask cluster
            return ClusterData(cluster, job.run.example_file, job.run.model_file, "ocas")
        data = super().read(job)
        first_n = job.extra[FirstExamples].first_n
        if first_n is not None and first_n < data.n_examples:
            data = data.subset(slice(0, first_n))
        return data

    def after_read(self, job):
        """svmocas says nothing of the reading (its statistics come before training)."""

    def select_c(self, job, picture):
        """--cv/--c-path: each fold's path warm along the values."""
        import numpy as np

        from ..problems import problem_entry
        from ..solvers.ocas import OcasPath, settings

        data = job.data
        run = settings(data, job.params, pick=False)  # each C of a path picks its -m
        entry = problem_entry(run.problem)
        n_classes = int(np.max(data.y)) if entry.name == "multiclass" else None
        make_path = fits_along(lambda part: OcasPath(part, run, n_classes))
        return self.cross_validate(job, entry, make_path, picture)

    def resolve(self, job):
        """The problem and the method for the data at the C trained (on a cluster, -m as
        given: it runs -m 0 or 1, and 1 by default)."""
        if job.on_cluster:
            return super().resolve(job)
        from ..solvers.ocas import settings

        return settings(job.data, job.params)

    def before_training(self, job):
        from ..reporting.statistics import ocas_settings

        if job.run.verbosity >= 1:
            ocas_settings(job.data, job.params, job.report, job.resolved.method)

    def solver_train(self, job):
        from ..solvers.ocas import train

        return train

    def statistics(self, job, info, cpu):
        from ..reporting.statistics import ocas_statistics

        ocas_statistics(info, job.params, job.run.model_file, job.report)

    def notes(self, job, info):
        return ()


LEARNER = OcasLearn()
command = LEARNER.command()


def main(argv=None):
    run(command, argv, "ocas_learn")


if __name__ == "__main__":
    main()
