"""sampled_learn: kernel SVMs trained with sampled cutting planes (Yu & Joachims, KDD
2008): the constant-time and the linear-time algorithm. Its flags are SampledParams'
fields (cpsvm.params.sampled); the run is the learners' (:mod:`.runner`)."""

from __future__ import annotations

import click

from ..params.sampled import SampledParams
from ..reporting.monitor import note
from .common import run
from .runner import Learner

# The reader and the solver are imported inside the command (cpsvm/cli/__init__.py).


class SampledLearn(Learner):
    """Learn a binary kernel SVM from EXAMPLE_FILE (targets +1/-1) with sampled cuts and
    write MODEL_FILE, an SVMlight kernel model (cp_classify and svm_classify read it).
    """

    name = "sampled_learn"
    params = SampledParams
    follows = "SVM-perf V3.00's command line (Yu & Joachims' sampled cuts)"
    doc = __doc__
    trace_columns = "iteration (primal, dual, gap, ..., kernel_evaluations)"
    style = "SAMPLED"

    def check(self, job):
        params = job.params
        if job.run.verbosity >= 1 and _coef_const_unused(params.kernel):
            note(
                f"Warning: -r is the constant of the polynomial and sigmoid kernels, unused "
                f"with -t {params.kernel.kind}; the sample size is --r (now {params.sample_size})"
            )
        super().check(job)

    def solver_train(self, job):
        from ..solvers.sampled import train

        return train

    def statistics(self, job, info, cpu):
        from ..reporting.statistics import sampled_statistics

        sampled_statistics(info, job.params, cpu, job.report)


def _coef_const_unused(kernel) -> bool:
    """-r was typed on the command line with a kernel that ignores it (linear, RBF):
    SVMlight's habit for what is --r (the sample size) here."""
    from click.core import ParameterSource

    from ..kernels import LINEAR, RBF

    given = click.get_current_context().get_parameter_source("coef_const")
    return given is ParameterSource.COMMANDLINE and kernel.kind in (LINEAR, RBF)


LEARNER = SampledLearn()
command = LEARNER.command()


def main(argv=None):
    run(command, argv, "sampled_learn")


if __name__ == "__main__":
    main()
