"""--unary U: the grammar's unary chains of at most U rules are counted before they are
made; a U whose chains would not fit in memory is refused naming the flag and the most
that fits (their rules grow with U² when the unary rules have a cycle: S -> VP -> S)."""

import pytest
from conftest import SAMPLES, run_cli

import cpsvm.memory
from cpsvm.problems.cfg.problem import CHAIN_BYTES, CHAIN_RULE_BYTES, unary_chain_sizes


def test_chains_counted_by_length():
    cycle = [(0, 1), (1, 0)]  # S -> VP, VP -> S: two chains of each length
    assert unary_chain_sizes(cycle, 10, 1e18) == (20, 2 * sum(range(1, 11)), 10)
    path = [(0, 1), (1, 2), (2, 3)]  # no cycle: chains end at the path's length
    assert unary_chain_sizes(path, 100, 1e18) == (6, 3 + 2 * 2 + 3, 3)
    branching = [(0, 2), (1, 2), (2, 3)]  # two parents above 2: 3 + 2 chains
    assert unary_chain_sizes(branching, 5, 1e18)[:2] == (5, 3 + 2 * 2)


def test_counting_stops_past_the_limit():
    cycle = [(0, 1), (1, 0)]
    limit = 100 * CHAIN_BYTES + 1000 * CHAIN_RULE_BYTES
    chains, rules, length = unary_chain_sizes(cycle, 10**9, limit)
    assert chains * CHAIN_BYTES + rules * CHAIN_RULE_BYTES > limit
    before = (chains - 2) * CHAIN_BYTES + (rules - 2 * length) * CHAIN_RULE_BYTES
    assert before <= limit and length < 100


@pytest.fixture
def small_memory(monkeypatch):
    monkeypatch.setattr(cpsvm.memory, "physical_memory", lambda: 256 << 20)


def test_a_unary_bound_that_cannot_fit_is_refused(tmp_path, small_memory):
    """toy.train.mrg has a unary cycle: --unary 3000 makes 18 million chain rules."""
    model = tmp_path / "m"
    run = run_cli(
        "learn", "-v", "0", "--problem", "cfg", "--unary", "3000", "-c", "1",
        SAMPLES / "toy.train.mrg", model,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and not model.exists()
    assert run.stderr.startswith("cp_learn: ") and "--unary 3000: this grammar's 8 unary" in (
        run.stderr
    )
    fits = int(run.stderr.split("; --unary ")[1].split()[0])
    assert 100 < fits < 3000
    run = run_cli(
        "learn", "-v", "0", "--problem", "cfg", "--unary", "3", "-c", "1", "-#", "1",
        SAMPLES / "toy.train.mrg", model,
    )  # fmt: skip
    assert run.returncode == 0 and model.exists(), run.stderr
