"""The values of a path and the folds of cross-validation."""

import numpy as np
import pytest

from cpsvm.errors import InputError, OptionError
from cpsvm.selection.folds import assign_folds
from cpsvm.selection.grid import parse_values
from cpsvm.selection.path import PathPoint, best_point


def test_range_is_log_spaced_with_exact_ends():
    values = parse_values("1e-3:1e3:13")
    assert len(values) == 13
    assert values[0] == 1e-3 and values[-1] == 1e3
    np.testing.assert_allclose(np.diff(np.log10(values)), 0.5)


def test_list_is_sorted_and_distinct():
    assert parse_values("10, 0.1,1,10") == [0.1, 1.0, 10.0]


@pytest.mark.parametrize("text", ["", "a,b", "1:10", "0:1:3", "10:1:3", "1:10:0", "-1,2", "inf"])
def test_bad_values_are_usage_errors(text):
    with pytest.raises(OptionError, match="--c-path"):
        parse_values(text)


def test_folds_are_stratified_and_balanced():
    y = np.array([1] * 30 + [-1] * 70)
    folds = assign_folds(5, len(y), None, y, seed=3)
    for f in range(5):
        assert np.count_nonzero(folds == f) == 20
        assert np.count_nonzero((folds == f) & (y == 1)) == 6


def test_folds_keep_units_whole_and_follow_the_seed():
    units = np.repeat(np.arange(12), 3)
    folds = assign_folds(4, len(units), units, None, seed=0)
    for u in range(12):
        assert len(set(folds[units == u])) == 1
    assert np.array_equal(folds, assign_folds(4, len(units), units, None, seed=0))
    assert not np.array_equal(folds, assign_folds(4, len(units), units, None, seed=1))


def test_more_folds_than_units_is_an_input_error():
    with pytest.raises(InputError, match="--cv 5 needs at least 5"):
        assign_folds(5, 6, np.array([0, 0, 1, 1, 2, 2]), None)


def test_best_point_prefers_the_smaller_C_on_ties():
    def point(C, error):
        return PathPoint(C, figures=[[("error", error, -1)], [("error", error, -1)]])

    assert best_point([point(0.1, 5.0), point(1, 3.0), point(10, 3.0)]).C == 1
    high = [PathPoint(C, figures=[[("F1", v, 1)]]) for C, v in ((1, 50.0), (2, 70.0), (3, 60.0))]
    assert best_point(high).C == 2
