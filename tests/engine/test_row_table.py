"""RowTable: slots reused, blocks never copied; products against a plain list of rows."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cpsvm.engine.cuts import RowTable


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 2**31 - 1)), min_size=1, max_size=80))
def test_row_table_matches_a_list_of_rows(steps):
    width = 7
    table, reference = RowTable(width), []
    for append, seed in steps:
        rng = np.random.default_rng(seed)
        if append or not reference:
            row = rng.normal(size=width)
            table.append(row)
            reference.append(row)
        else:
            mask = rng.random(len(reference)) < 0.7
            table.keep(mask)
            reference = [r for r, k in zip(reference, mask) if k]
        assert table.size == len(reference)
        if not reference:
            continue
        R = np.array(reference)
        alpha = rng.random(len(reference))
        vector = rng.normal(size=width)
        columns = rng.choice(width, size=3, replace=False)
        beta = rng.normal(size=3)
        np.testing.assert_array_equal(table.rows, R)
        np.testing.assert_allclose(table.combine(alpha), alpha @ R, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(table.dot(vector), R @ vector, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(
            table.columns_times(columns, beta), R[:, columns] @ beta, rtol=1e-12, atol=1e-12
        )


def test_growing_keeps_earlier_blocks_in_place():
    table = RowTable(3)
    table.append(np.ones(3))
    first = table._blocks[0]
    for k in range(100):
        table.append(np.full(3, float(k)))
    assert table._blocks[0] is first  # never reallocated
    assert sum(len(b) for b in table._blocks) < 2 * 101 + RowTable.FIRST_BLOCK
