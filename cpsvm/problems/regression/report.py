"""How regression models report themselves: cp_classify's decision value a line (as a
binary model's) and the mean squared and absolute errors; a held-out fold's root mean
squared error (numpy imported where used)."""

from __future__ import annotations

from ...errors import OptionError
from ..binary.report import BinaryModels, draw_scores


class RegressionModels(BinaryModels):
    """cp_classify's handler of regression models (asset_learn -z r) and of any binary
    model's file on real targets: the decision values as binary models write them, and
    the errors of f(x) as a prediction of y. It takes no setting of its own: -f is the
    binary models' (which this kind's handlers take)."""

    settings = ()

    @staticmethod
    def claims(model, data) -> bool:
        """A model trained for regression, or a file whose labelled targets (0:
        unlabelled) are not all +1/-1: SVMlight's regression models carry no mark."""
        import numpy as np

        y = data.y
        return is_regression(model) or bool(np.any((y != 0) & (np.abs(y) != 1)))

    @classmethod
    def classify(cls, model, data, X, settings):
        decision, lines = cls.decisions(model, data, X, settings)

        def draw(path, title):
            if is_regression(model):
                raise OptionError("--plot draws a classifier's scores, not a regression model's")
            draw_scores(data.y, decision, path, title)

        return lines, lambda out: report_regression(data.y, decision, out), draw


def is_regression(model) -> bool:
    return getattr(model, "task", None) == "regression"


def report_regression(y, decision, out):
    """The errors of f(x) as a prediction of y over the test file."""
    import numpy as np

    if len(y):
        residual = decision - y
        print(
            f"Mean squared error on test set: {float(np.mean(residual**2)):.6g} "
            f"({len(y)} examples)",
            file=out,
        )
        print(f"Mean absolute error on test set: {float(np.mean(np.abs(residual))):.6g}", file=out)


def cv_figures(model, data):
    """A held-out fold's root mean squared error (asset_learn -z r), whatever its targets."""
    import numpy as np

    from ...models import fit_columns

    decision = model.decision_function(fit_columns(data.X, model.n_features))
    return [("RMSE", float(np.sqrt(np.mean((decision - data.y) ** 2))), -1)]
