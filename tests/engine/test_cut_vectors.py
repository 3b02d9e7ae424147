"""CutVectors (the working set's cut vectors, sparse ones as their nonzeros) against a
plain dense matrix kept beside it through appends, drops and compactions."""

import numpy as np
import pytest

from cpsvm.engine.cuts import CutVectors


@pytest.mark.parametrize("seed", range(4))
def test_cut_vectors_match_a_dense_matrix(seed):
    rng = np.random.default_rng(seed)
    width = 50
    cuts = CutVectors(width)
    reference = np.zeros((0, width))
    kinds = set()
    for step in range(60):
        # Sparse (a few nonzeros) and dense cuts, interleaved.
        density = rng.choice([0.02, 0.1, 0.3, 0.9])
        row = np.where(rng.random(width) < density, rng.normal(size=width), 0.0)
        cuts.append(row)
        kinds.add(cuts._is_sparse[-1])
        reference = np.vstack([reference, row])
        if step % 7 == 6:  # drop most cuts now and then: the buffers compact
            keep = rng.random(len(reference)) < 0.3
            cuts.keep(keep)
            reference = reference[keep]
        assert cuts.size == len(reference)
        np.testing.assert_array_equal(cuts.rows, reference)
        alpha = rng.random(len(reference)) * (rng.random(len(reference)) < 0.7)
        np.testing.assert_allclose(cuts.combine(alpha), alpha @ reference, rtol=1e-12, atol=1e-12)
        vector = rng.normal(size=width)
        np.testing.assert_allclose(cuts.dot(vector), reference @ vector, rtol=1e-12, atol=1e-12)
    assert kinds == {True, False}  # both storages were exercised
