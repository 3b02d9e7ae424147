"""CKY's charts and memory (issue 30): a sentence whose chart cannot fit is refused
before anything is allocated, naming its file, line, length and the chart's size; a
sentence whose parse fails for memory inside the kernel (a failed allocation raised,
or a chunk of sentences left undone) is an input error too, never a flat
fallback tree; the charts parsed at once are bounded by running fewer threads."""

import numpy as np
import pytest

import cpsvm.decoding.cky as cky_kernels
import cpsvm.memory
from cpsvm.decoding.cky import chart_bytes, check_charts
from cpsvm.errors import InputError
from cpsvm.io.trees import parse_trees
from cpsvm.problems.cfg.problem import LOSS_BRACKETS, LOSS_ZERO_ONE, CfgProblem

TRAIN = """\
( (S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat)))) )
( (S (NP (NN it)) (VP (VBD ran))) )
( (S (NP (DT the) (NN cat)) (VP (VBD saw) (NP (NN it)))) )
"""
LONG = "( (S " + " ".join("(NP (DT the) (NN dog))" for _ in range(30)) + " (VP (VBD ran))) )\n"


@pytest.fixture
def problem():
    trees = parse_trees(TRAIN + LONG, "train.mrg")
    return CfgProblem(trees, loss_id=LOSS_ZERO_ONE, source="train.mrg")


def test_chart_bytes_follow_the_spans():
    one = chart_bytes(10, 20, 7, 5, False)
    assert chart_bytes(20, 20, 7, 5, False) == one * (20 * 21) // (10 * 11)
    assert chart_bytes(10, 20, 7, 5, True) == one + 11 * 11 * 5
    assert chart_bytes(10, 40, 7, 5, False) > one


def test_a_chart_too_large_is_refused_before_parsing(problem, monkeypatch):
    g = problem.grammar.arrays()
    needed = chart_bytes(61, g["n_sym"], len(g["kinds"]), g["n_base"], False)
    monkeypatch.setattr(cpsvm.memory, "physical_memory", lambda: needed - 1)
    kernel_ran = []
    monkeypatch.setattr(cky_kernels, "cky_rows", lambda *a: kernel_ran.append(1))
    with pytest.raises(InputError) as caught:
        problem.separate(np.zeros(problem.size_psi), 1)
    message = str(caught.value)
    assert message.startswith("train.mrg:4: a sentence of 61 words would need a CKY chart of ")
    assert "more than this machine's memory" in message and "--max-length" in message
    assert "\n" not in message and not kernel_ran
    # the short sentences alone fit
    monkeypatch.undo()
    assert len(problem.separate(np.zeros(problem.size_psi), 1, rows=[0, 1, 2])) == 3


def test_the_charts_parsed_at_once_run_on_fewer_threads(problem, monkeypatch):
    g = problem.grammar.arrays()
    sizes = [chart_bytes(n, g["n_sym"], len(g["kinds"]), g["n_base"], False) for n in (61, 5)]
    monkeypatch.setattr(cpsvm.memory, "physical_memory", lambda: sizes[0] + sizes[1] - 1)
    lengths, sentences = np.array([61, 5, 61]), np.arange(3)
    assert check_charts(g, lengths, sentences, n_threads=4) == 1
    assert check_charts(g, lengths[1:2], sentences[1:2], n_threads=4) == 4
    monkeypatch.setattr(cpsvm.memory, "physical_memory", lambda: 2 * sizes[0] + 1)
    assert check_charts(g, lengths, sentences, n_threads=4) == 2


def _raises_memory_error(*args):
    raise MemoryError("Allocation failed (probably too large).")


def _drops_its_work(*args):
    """A chunk of sentences left undone (its allocation failed): nothing written."""


@pytest.mark.parametrize("kernel", [_raises_memory_error, _drops_its_work])
@pytest.mark.parametrize("loss_id", [LOSS_BRACKETS, LOSS_ZERO_ONE])
def test_memory_running_out_in_the_kernel_is_an_input_error(problem, monkeypatch, kernel, loss_id):
    problem.loss_id = loss_id
    monkeypatch.setattr(cky_kernels, "cky_rows", kernel)
    with pytest.raises(InputError) as caught:
        problem.separate(np.zeros(problem.size_psi), 2)
    assert str(caught.value).startswith(
        "train.mrg:4: a sentence of 61 words ran out of memory in CKY (its chart needs "
    )


def test_a_model_parsing_never_falls_back_for_memory(problem, monkeypatch):
    model = problem.to_model(np.zeros(problem.size_psi))
    tests = parse_trees(TRAIN + "( (X (ZZ unknown)) )\n", "test.mrg")
    trees, parsed = model.parse(tests, source="test.mrg")
    assert parsed == [True, True, True, False]  # a tag never seen: the flat tree is right
    monkeypatch.setattr(cky_kernels, "cky_rows", _drops_its_work)
    with pytest.raises(InputError, match=r"^test.mrg:1: a sentence of 5 words ran out of memory"):
        model.parse(tests, source="test.mrg")


def test_without_a_file_the_sentence_is_numbered(monkeypatch):
    problem = CfgProblem(parse_trees(TRAIN, "t"), loss_id=LOSS_ZERO_ONE)
    monkeypatch.setattr(cpsvm.memory, "physical_memory", lambda: 1000)
    with pytest.raises(InputError, match=r"^sentence 1 \(5 words\) would need a CKY chart"):
        problem.separate(np.zeros(problem.size_psi), 2)
