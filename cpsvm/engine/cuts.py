"""Oracles that turn a structured problem into cuts for the cutting-plane loop.

``LinearCutOracle`` keeps every cut as an explicit vector g in Ψ-space, so
w = Σ α_k g_k is a dense vector. For the 1-slack formulation the cut at labelling ŷ is
c = (1/n) Σ Δ_i(ŷ_i) and g = (1/n) Σ δΨ_i(ŷ_i) (margin rescaling) or
g = (1/n) Σ Δ_i(ŷ_i) δΨ_i(ŷ_i) (slack rescaling).
"""

from __future__ import annotations

import numpy as np

from ..problems.base import MARGIN_RESCALING, violation


class LinearCutOracle:
    def __init__(self, problem, rescaling=MARGIN_RESCALING, cache_size=0):
        self.problem = problem
        self.rescaling = rescaling
        self.cache_size = cache_size
        self.cache = []            # most recent labellings from the exact oracle
        self.oracle_calls = 0
        self._vectors = np.empty((8, problem.size_psi))
        self._m = 0

    @property
    def vectors(self) -> np.ndarray:
        """Kept cut vectors, one row per cut of the working set."""
        return self._vectors[:self._m]

    def weights(self, alpha) -> np.ndarray:
        if self._m == 0:
            return np.zeros(self.problem.size_psi)
        return alpha @ self.vectors

    def _cut(self, labels, rows=None):
        n = self.problem.n_examples if rows is None else len(rows)
        losses = self.problem.losses(labels, rows)
        weights = np.full(n, 1.0 / n) if self.rescaling == MARGIN_RESCALING else losses / n
        return float(np.mean(losses)), self.problem.delta_psi_sum(weights, labels, rows)

    def separate(self, alpha):
        labels = self.problem.separate(self.weights(alpha), self.rescaling)
        self.oracle_calls += self.problem.n_examples
        if self.cache_size:
            self.cache.append(labels)
            del self.cache[:-self.cache_size]
        return self._cut(labels)

    def separate_cached(self, alpha, threshold):
        """The most violated cut built from cached labellings, if violated > threshold."""
        if not self.cache:
            return None
        w = self.weights(alpha)
        candidates = [self.problem.true_labels()] + self.cache
        scores = np.stack([
            violation(self.problem.losses(labels), self.problem.margins(w, labels),
                      self.rescaling) for labels in candidates])
        scores[0] = 0.0  # the true label: no loss, no violation
        labels = self.problem.pick(candidates, np.argmax(scores, axis=0))
        c, g = self._cut(labels)
        return (c, g) if c - float(w @ g) > threshold else None

    def separate_rows(self, alpha, rows):
        """n-slack: one cut (Δ_i, δΨ_i) per example of ``rows`` at the current w."""
        labels = self.problem.separate(self.weights(alpha), self.rescaling, rows)
        self.oracle_calls += len(rows)
        losses = self.problem.losses(labels, rows)
        cuts = []
        for j, i in enumerate(rows):
            weight = 1.0 if self.rescaling == MARGIN_RESCALING else losses[j]
            cuts.append(self.problem.delta_psi_sum([weight], labels[j:j + 1], [i]))
        return losses, cuts

    def gram_row(self, g):
        return self.vectors @ g, float(g @ g)

    def add(self, g):
        if self._m == len(self._vectors):
            grown = np.empty((2 * len(self._vectors), self._vectors.shape[1]))
            grown[:self._m] = self._vectors[:self._m]
            self._vectors = grown
        self._vectors[self._m] = g
        self._m += 1

    def keep(self, mask):
        kept = self.vectors[np.asarray(mask, dtype=bool)]
        self._m = len(kept)
        self._vectors[:self._m] = kept
