"""The problem registry: the built-in problems' names and the refusals of what names none,
the label checks the learners share, how `auto` picks a problem, and each problem's entry
(light to import, complete, its options parsed and checked in one place)."""

import re
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from cpsvm.data import Dataset
from cpsvm.errors import InputError, OptionError
from cpsvm.problems import ProblemSpecError, choose_problem, problem_names, resolve_problem

# -- the registry -------------------------------------------------------------------------


def test_registered_names_and_refusals():
    assert problem_names()[:2] == ["binary", "multiclass"]
    for name in ("auto", "binary", "multiclass", "hmm", "cfg", " binary "):
        assert resolve_problem(name) == name.strip()
    for bad, expected in [
        ("foo", "unknown problem 'foo'"),
        ("", "unknown problem"),
        ("nosuchmodule_xyz:P", "No module named"),
        ("os:nosuch", "has no 'nosuch'"),
        ("os:path", "not a class derived"),
        (":X", "module:Class"),
    ]:
        with pytest.raises(ProblemSpecError, match=expected):
            resolve_problem(bad)
    # The learners of built-in problems only (ocas_learn) take no module:Class.
    data = Dataset(sp.csr_matrix(np.ones((2, 1))), np.array([1.0, -1.0]))
    assert choose_problem(data, "auto") == "binary"
    # hmm only for a learner of sequences (cp_learn): ocas_learn's choice has none.
    for bad, expected in [
        ("ordinal:OrdinalRegression", "expected auto, binary or multiclass"),
        ("hmm", "expected auto, binary or multiclass"),
        ("foo", "'foo'"),
    ]:
        with pytest.raises(ProblemSpecError, match=expected):
            choose_problem(data, bad)
    # A usage error for the commands (exit 2), and still an InputError for library callers.
    assert issubclass(ProblemSpecError, OptionError) and issubclass(OptionError, InputError)


@pytest.mark.parametrize(
    "y, expected",
    [
        ([0, 1, 1, 0], "binary problems need targets +1/-1; 0/1 labels: map 0 to -1"),
        ([0, 3, 1, 2], "multiclass labels start at 1; 0-based labels: add 1"),
        ([1, 2, -1, 2], "expected class labels 1..k"),
    ],
)
def test_label_errors_say_what_the_problems_need(y, expected):
    # The check that cp_learn and ocas_learn share.
    data = Dataset(
        sp.csr_matrix(np.ones((4, 2))),
        np.array(y, dtype=float),
        source="d",
        line_numbers=np.arange(1, 5),
    )
    with pytest.raises(InputError, match="got target") as err:
        choose_problem(data, "auto")
    assert expected in str(err.value) and str(err.value).startswith("d:")


def test_binary_named_with_zero_one_labels_says_map_0_to_minus_1():
    data = Dataset(
        sp.csr_matrix(np.ones((3, 1))),
        np.array([1.0, 0.0, 1.0]),
        source="d",
        line_numbers=np.arange(1, 4),
    )
    with pytest.raises(
        InputError,
        match=r"d:2: expected binary targets \+1 or -1, got "
        r"target 0 \(binary problems need targets "
        r"\+1/-1: map 0 to -1\)",
    ):
        choose_problem(data, "binary")


def test_auto_picks_hmm_only_for_sequence_files_of_a_sequence_learner():
    tokens = Dataset(
        sp.csr_matrix(np.ones((4, 1))), np.array([1.0, 2.0, 2.0, 1.0]), qid=np.array([1, 1, 2, 2])
    )
    assert choose_problem(tokens, "auto", sequences=True) == "hmm"
    assert choose_problem(tokens, "auto") == "multiclass"
    # One line a qid (no sentence of two tokens), or ±1 targets: not SVM-hmm's shape.
    for qid, y in [([1, 2, 3, 4], [1.0, 2.0, 2.0, 1.0]), ([1, 1, 2, 2], [1.0, -1.0, 1.0, -1.0])]:
        data = Dataset(tokens.X, np.array(y), qid=np.array(qid))
        assert choose_problem(data, "auto", sequences=True) != "hmm"


# -- the registry: each problem one entry ----------------------------------------------------


def test_every_entry_is_light_and_complete():
    """Importing the registry and every entry loads no numpy, scipy or numba (cp_learn -h
    reads them), and each entry declares what the commands need."""
    code = (
        "import sys\nfrom cpsvm.problems import entries\nfor e in entries():\n"
        "    assert e.classifying.handler.model_kinds and e.command_line.tool, e.name\n"
        "for e in entries('cp_learn'):\n"
        "    assert e.command_line.losses and e.command_line.loss_help, e.name\n"
        "print([m for m in ('numpy', 'scipy', 'numba') if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "[]", done.stderr


def test_a_problem_option_is_parsed_and_checked_in_one_place():
    from cpsvm.problems import problem_entry

    hmm = problem_entry("hmm").command_line
    assert hmm.parse_options({"--t": "2", "--e": "1"}) == {
        "trans_order": 2,
        "emit_order": 1,
        "beam": 0,
    }
    assert hmm.options_of({"trans_order": 2}) == hmm.parse_options({"--t": "2"})
    for given, message in [
        ({"--t": "4"}, "expected --t 0..3 (hmm: order of the transitions), got 4"),
        ({"--t": "x"}, "expected an integer for --t, got 'x'"),
        ({"--b": "2.5"}, "expected --b 0..1e+09, an integer (hmm: width of the Viterbi beam"),
        ({"--t": "0", "--e": "1"}, "expected --e 0..0"),
        ({"--k": "5"}, "--k: not an option of the hmm problem"),
    ]:
        with pytest.raises(OptionError, match=re.escape(message)):
            hmm.parse_options(given)
    binary = problem_entry("binary").command_line
    assert binary.parse_options({"--b": "-2.5"})["bias"] == -2.5
    with pytest.raises(OptionError, match="expected --t 0 or 1"):
        binary.options_of({"basis_method": 2})
