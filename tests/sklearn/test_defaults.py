"""No default written twice: every estimator parameter that is a field of its solver's
Params takes the field's default (not a literal of its own), a parameter in scikit-learn's
convention converts to the field's default, every Params field is a parameter or says
what sets it instead, and cut_lambda's 0.1 is written once in cpsvm/."""

import ast
import dataclasses
import inspect
import re
from pathlib import Path

import pytest

pytest.importorskip("sklearn")

import cpsvm  # noqa: E402
from cpsvm import sklearn as estimators  # noqa: E402
from cpsvm.options import defaults  # noqa: E402

CPSVM = Path(cpsvm.__file__).parent
ESTIMATORS = [
    estimators.OCASClassifier,
    estimators.OCASClassifierCV,
    estimators.CuttingPlaneSVC,
    estimators.CuttingPlaneSVCCV,
    estimators.SampledCutSVC,
    estimators.ASSETClassifier,
    estimators.ASSETRegressor,
    estimators.StructuredSVM,
    estimators.RankSVM,
]


def _signature_defaults(cls) -> dict:
    return {
        name: p.default
        for name, p in inspect.signature(cls.__init__).parameters.items()
        if name != "self"
    }


def _source_defaults(cls) -> dict:
    """{parameter: its default's AST node} as the class's own __init__ writes it."""
    source = inspect.getsource(cls.__init__)
    tree = ast.parse(inspect.cleandoc("\n" + source) if source[0] == " " else source)
    init = tree.body[0]
    arguments = init.args
    positional = arguments.args[len(arguments.args) - len(arguments.defaults) :]
    nodes = dict(zip((a.arg for a in positional), arguments.defaults))
    nodes.update(
        {a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None}
    )
    return nodes


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_parameters_of_params_fields_take_the_fields_defaults(cls):
    field_defaults = defaults(cls._PARAMS)
    given = _signature_defaults(cls)
    nodes = _source_defaults(cls)
    assert cls._FIELDS, cls
    for name, field in cls._FIELDS.items():
        if name not in given:  # CuttingPlaneSVCCV's kernel parameters are not its own
            continue
        expected = field_defaults[field]
        if field == "epsilon" and expected is None:
            # cp_learn's -e when not given is the problem's own: the estimator's problem's
            problem = "rank" if cls is estimators.RankSVM else "binary"
            from cpsvm.problems import problem_entry

            expected = problem_entry(problem).command_line.epsilon
        assert given[name] == expected, (cls.__name__, name)
        # (a field picked up from the Params has no default written: none in the source)
        assert not isinstance(nodes.get(name), ast.Constant), (
            f"{cls.__name__}.{name}'s default is written as a literal: take the Params'"
        )


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_converted_parameters_default_to_the_fields_defaults(cls):
    field_defaults = defaults(cls._PARAMS)
    estimator = cls()
    for name, (field, convert) in cls._CONVERTED.items():
        assert convert(estimator) == field_defaults[field], (cls.__name__, name)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_params_field_is_a_parameter_or_set_otherwise(cls):
    """Every field of the Params is a parameter (written: _FIELDS, _CONVERTED; or picked
    up as it is: _PICKED_UP) or says what sets it instead (_NOT_PARAMETERS), once."""
    named = (
        set(cls._FIELDS.values())
        | {field for field, _ in cls._CONVERTED.values()}
        | set(cls._NOT_PARAMETERS)
        | set(cls._PICKED_UP)
    )
    fields = {f.name for f in dataclasses.fields(cls._PARAMS)}
    assert fields - named == set(), cls.__name__
    assert named - fields == set(), cls.__name__
    overlap = (set(cls._FIELDS.values()) | {f for f, _ in cls._CONVERTED.values()}) & set(
        cls._NOT_PARAMETERS
    )
    assert overlap == set(), cls.__name__


def test_cut_lambda_default_is_written_once():
    """cut_lambda's 0.1 (libocas's cut point) in one place: cpsvm.conventions.CUT_LAMBDA."""
    pattern = re.compile(r"(cut_lambda|CUT_LAMBDA)\s*[:=][^=\n]*\b0\.1\b")
    found = [
        f"{path.relative_to(CPSVM)}:{n}"
        for path in sorted(CPSVM.rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == ["conventions.py:26"]
    from cpsvm.conventions import CUT_LAMBDA
    from cpsvm.params.ocas import OcasParams

    assert OcasParams().cut_lambda == CUT_LAMBDA
    assert estimators.OCASClassifier().cut_lambda == CUT_LAMBDA


def test_a_field_added_to_the_params_reaches_the_estimator_as_it_is():
    """A flag added to a learner (a field of its Params) is a parameter of its estimators
    with nothing written for them: its name, the field's default, stored by __init__,
    seen by get_params, set_params and clone, and handed to the Params the fit makes."""
    from dataclasses import dataclass

    from sklearn.base import clone

    from cpsvm.options import Range, option
    from cpsvm.params.ocas import OcasParams
    from cpsvm.sklearn import OCASClassifier
    from cpsvm.sklearn._base import _given_fields

    @dataclass(frozen=True)
    class WithShrink(OcasParams):
        shrink: float = option("--shrink", help="A new flag.", default=0.5, type=Range(float, 0))

    class WithShrinkClassifier(OCASClassifier):
        _PARAMS = WithShrink

        def __init__(self, C=1.0, *, tol=0.01):
            super().__init__(C, tol=tol)

    estimator = WithShrinkClassifier(C=2.0, shrink=0.25)
    assert estimator.shrink == 0.25 and estimator.C == 2.0
    assert WithShrinkClassifier().get_params()["shrink"] == 0.5
    assert clone(estimator.set_params(shrink=0.75)).shrink == 0.75
    assert _given_fields(estimator)["shrink"] == 0.75
    assert "shrink" not in OCASClassifier().get_params()  # the Params' own estimator: none
