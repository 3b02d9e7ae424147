"""asset_learn: kernel SVMs by stochastic subgradient on Nyström or random Fourier
features (Lee & Wright's ASSET and ASSET*), classification and regression. Its flags are
AssetParams' fields (cpsvm.params.asset); the run is the learners' (:mod:`.runner`)."""

from __future__ import annotations

from ..errors import OptionError
from ..options import validate_options
from ..params.asset import AssetParams, check_approximation, check_init_model, check_trade_off
from .common import run
from .runner import Learner, read_init_model

# numpy, the reader and the solver are imported inside the command (cpsvm/cli/__init__.py).


def read_validation(path, data):
    """--validate FILE: its examples in the training data's columns."""
    from ..io.svmlight import read_examples

    validation = read_examples(path, training=False)
    return validation.onto_columns_of(data) if data.feature_ids is not None else validation


ASSET_VERBOSITY = (
    "Verbosity 0..3: 0 silent but errors; 1 statistics (and a progress bar "
    "with ETA on a terminal); 2 also one line per check (ten per epoch) on "
    "stderr; 3 as 2."
)


class AssetLearn(Learner):
    """Learn a kernel SVM (or SVR with -z r) from EXAMPLE_FILE by ASSET and write
    MODEL_FILE: Nyström models as SVMlight kernel models (cp_classify and svm_classify
    read them), random-feature models as 'cpsvm rff model V1' (cp_classify reads them),
    --approx none as SVMlight linear models.
    """

    name = "asset_learn"
    params = AssetParams
    follows = "Lee & Wright's ASSET, with SVMlight's -c, -z, -w and kernel flags"
    doc = __doc__
    trace_columns = (
        "check: epoch, iteration, objective estimate, validation error, seconds, the stopping "
        "rule's objective"
    )
    fold_units = "folds stratified by class; -z r: not stratified"
    verbosity_help = ASSET_VERBOSITY
    warn = False
    readers = {"validation": read_validation, "init_model": read_init_model}

    def check_values(self, values):
        """What -l cannot be used with (the model selection's flags), and AssetParams'
        rules between its fields that need no Kernel, applied before the Kernel is built
        (its import loads numpy): a usage error is answered without."""
        if values["c_path"] is not None and values["lam"] is not None:
            raise OptionError("--c-path sets C: it cannot be used with -l (lambda)")
        if values["cv_folds"] is not None and values["lam"] is not None:
            raise OptionError("--cv cross-validates at -c: give -c, not -l (lambda)")
        if values["c_path"] is None:
            check_trade_off(values["C"], values["lam"])
        check_approximation(values["approx"], values["kernel_type"])
        check_init_model(values["init_model_file"] is not None, values["star"], values["method"])

    def check(self, job):
        if job.params.method == "gd" and "validation" in job.files:
            raise OptionError("--method gd takes no --validate")
        validate_options(job.params)

    def monitor(self, job):
        from ..reporting import monitor

        gd = job.params.method == "gd"
        return monitor.Monitor(
            monitor.GD if gd else monitor.ASSET,
            job.run.verbosity,
            job.run.trace_path,
            self.name,
            total=None if gd else job.params.epochs * -(-job.data.n_examples // job.params.batch),
            keep_rows=job.plot_file is not None,
        )

    def solver_train(self, job):
        from ..solvers.asset import train

        return train

    def statistics(self, job, info, cpu):
        from ..reporting.statistics import asset_learn_statistics

        asset_learn_statistics(info, job.params, cpu, job.report)

    def notes(self, job, info):
        return () if job.params.method == "gd" else info.notes


LEARNER = AssetLearn()
command = LEARNER.command()


def main(argv=None):
    run(command, argv, "asset_learn")


if __name__ == "__main__":
    main()
