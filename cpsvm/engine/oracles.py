"""Oracles that turn a structured problem into cuts for the cutting-plane loop.

``LinearCutOracle`` keeps every cut as an explicit vector g in Ψ-space, so
w = Σ α_k g_k is a dense vector. For the 1-slack formulation the cut at labelling ŷ is
c = (1/n) Σ cost_i·Δ_i(ŷ_i) and g = (1/n) Σ cost_i·δΨ_i(ŷ_i) (margin rescaling) or
g = (1/n) Σ cost_i·Δ_i(ŷ_i) δΨ_i(ŷ_i) (slack rescaling), cost_i SVMlight's ``cost:``
factor of example i (1 by default). ``KernelCutOracle`` keeps binary kernel cuts as
expansions over the examples. The cuts are stored as :mod:`cpsvm.engine.cuts` keeps them;
OCAS's oracle extends the linear one (:mod:`cpsvm.engine.ocas`), and the sampled cuts'
oracles are :mod:`cpsvm.engine.sampled_cuts`.
"""

from __future__ import annotations

import math

import numpy as np

from ..conventions import LOSS_SCALE, MARGIN_RESCALING, PSI_SCALE, violation
from ..kernel_rows import RowKernel
from .cuts import CutVectors, RowTable
from .hinge import hinge_violators


class CutOracle:
    """What the cutting-plane loops (:mod:`cpsvm.engine.cutting_plane`) call on an oracle,
    every oracle's base: the methods each oracle implements, and the optional figures
    with the defaults the loops take when an oracle does not set them."""

    oracle_calls = 0  # per-example argmax calls so far
    # c′ − w·g′ of an exact cut that the stop test uses instead of the returned cut's
    # (sampled cuts, Yu & Joachims Alg. 3); None: the returned cut's.
    exact_excess: float | None = None
    # The objective at the oracle's own best point (OCAS's w_b), the primal bound instead
    # of the one the loop computes from the cut; None: the loop's.
    primal: float | None = None
    # How precisely that objective is known (cpsvm.engine.magnitudes): a gap within it
    # ends the run as "precision"; -inf: not known, never.
    rounding: float = -math.inf

    def separate(self, alpha, threshold=None):
        """(c, cut): the most violated cut at w(α); ``threshold`` (the working set's ξ + ε)
        is a hint for sampling oracles, which may resample until their cut exceeds it."""
        raise NotImplementedError

    def separate_cached(self, alpha, threshold):
        """(c, cut) from a constraint cache violated by more than ``threshold``, or None
        (the default: the oracle keeps no cache)."""
        return None

    def gram_row(self, cut):
        """(⟨g, g_k⟩ for the kept cuts k, ⟨g, g⟩)."""
        raise NotImplementedError

    def add(self, cut):
        """Keep ``cut`` (the working set added it)."""
        raise NotImplementedError

    def keep(self, mask):
        """Keep only the cuts of ``mask`` (the working set dropped the others)."""
        raise NotImplementedError


class LinearCutOracle(CutOracle):
    """``costs``: each example's factor cost_i (SVMlight's ``cost:``), or None for 1.
    A problem with a ``cut(w, weights, rescaling)`` hook (binary: one pass of the hinge
    kernel) gives the exact cut directly; otherwise it is built from the labelling of
    ``separate``. A problem whose ``cut_table(weights)`` returns a table
    keeps its cuts there, in their own form (Crammer-Singer:
    :class:`~cpsvm.engine.cuts.ClassCuts`, which needs the loss of a wrong label to be
    one number); the others as vectors (:class:`~cpsvm.engine.cuts.CutVectors`)."""

    def __init__(self, problem, rescaling=MARGIN_RESCALING, cache_size=0, costs=None):
        self.problem = problem
        self.rescaling = rescaling
        self.cache_size = cache_size
        self.cache = []  # most recent labellings from the exact oracle
        self.oracle_calls = 0
        self._last_w = None  # (α, w) of the last weights() call
        n = problem.n_examples
        self.cost_factors = None if costs is None else np.asarray(costs, dtype=np.float64)
        if self.cost_factors is not None and self.cost_factors.shape != (n,):
            raise ValueError(f"expected {n} example costs, got {self.cost_factors.shape}")
        # Each example's weight in the 1-slack sums: cost_i/n.
        self._cut_weights = np.full(n, 1.0 / n) if costs is None else self.cost_factors / n
        self._use_table(self._cut_weights)

    def _use_table(self, weights):
        """Keep the cuts, sums of weights_i·δΨ_i, in the problem's table or as vectors."""
        table = self.problem.cut_table(weights)
        self._own_table = table is not None
        self._table = table if self._own_table else CutVectors(self.problem.size_psi)
        self._table_weights = weights

    def _labelling_cut(self, labels, losses=None):
        """Σ_i weights_i·(losses_i)·δΨ_i(labels_i), the table's weights, in its form."""
        if self._own_table:
            return self._table.cut(labels, losses=losses)
        weights = self._table_weights if losses is None else self._table_weights * losses
        return self.problem.delta_psi_sum(weights, labels)

    @property
    def vectors(self) -> np.ndarray:
        """Kept cut vectors, one row per cut of the working set."""
        return self._table.rows

    def weights(self, alpha) -> np.ndarray:
        if self._table.size == 0:
            return np.zeros(self.problem.size_psi)
        # The loop asks twice for the same α when the cache has no cut (-w 4); add and
        # keep forget it.
        key = np.asarray(alpha, dtype=np.float64).tobytes()
        if self._last_w is None or self._last_w[0] != key:
            self._last_w = (key, self._table.combine(alpha))
        return self._last_w[1]

    def _cut(self, labels):
        losses = self.problem.losses(labels)
        c = float(self._cut_weights @ losses)
        return c, self._labelling_cut(
            labels, None if self.rescaling == MARGIN_RESCALING else losses
        )

    def separate(self, alpha, threshold=None):
        w = self.weights(alpha)
        self.oracle_calls += self.problem.n_examples
        if self.problem.cut is not None and not self.cache_size:
            return self.problem.cut(w, self._cut_weights, self.rescaling)
        labels = self.problem.separate(w, self.rescaling)
        if self.cache_size:
            self.cache.append(labels)
            del self.cache[: -self.cache_size]
        return self._cut(labels)

    def separate_cached(self, alpha, threshold):
        """The most violated cut built from cached labellings, if violated > threshold."""
        if not self.cache:
            return None
        w = self.weights(alpha)
        candidates = [self.problem.true_labels()] + self.cache
        margins = self.problem.margins_many(w, candidates)
        scores = np.stack(
            [
                violation(self.problem.losses(labels), m, self.rescaling)
                for labels, m in zip(candidates, margins)
            ]
        )
        scores[0] = 0.0  # the true label: no loss, no violation
        choice = np.argmax(scores, axis=0)
        labels = self.problem.pick(candidates, choice)
        c, g = self._cut(labels)
        if self._own_table:
            # w·g from the margins at hand: the table keeps no vector of g.
            losses = self.problem.losses(labels)
            weights = (
                self._cut_weights
                if self.rescaling == MARGIN_RESCALING
                else self._cut_weights * losses
            )
            w_dot_g = float(weights @ np.stack(margins)[choice, np.arange(len(choice))])
        else:
            w_dot_g = float(w @ g)
        return (c, g) if c - w_dot_g > threshold else None

    def separate_rows(self, alpha, rows):
        """n-slack: one cut (cost_i·Δ_i, cost_i·δΨ_i) per example of ``rows`` at the
        current w (the slack cost_i·ξ_i: its bound C/n is each example's)."""
        labels = self.problem.separate(self.weights(alpha), self.rescaling, rows)
        self.oracle_calls += len(rows)
        losses = self.problem.losses(labels, rows)
        costs = (
            np.ones(len(rows)) if self.cost_factors is None else self.cost_factors[np.asarray(rows)]
        )
        own = self.problem.split_labels(labels, rows)  # each example's own labelling
        cuts = []
        n = self.problem.n_examples
        for j, i in enumerate(rows):
            if self._own_table:  # weight cost_i = n·(cost_i/n), the table's
                cuts.append(
                    self._table.cut(
                        own[j],
                        scale=n,
                        rows=[i],
                        losses=None if self.rescaling == MARGIN_RESCALING else losses[j : j + 1],
                    )
                )
                continue
            weight = costs[j] * (1.0 if self.rescaling == MARGIN_RESCALING else losses[j])
            cuts.append(self.problem.delta_psi_sum([weight], own[j], [i]))
        return costs * losses, cuts

    def gram_row(self, g):
        if self._own_table:
            self._last_w = None  # the table's buffer held w
            return self._table.gram_row(g)
        return self._table.dot(g), float(g @ g)

    def add(self, g):
        self._table.append(g)
        self._last_w = None

    def keep(self, mask):
        self._table.keep(mask)
        self._last_w = None


class KernelCutOracle(CutOracle):
    """Binary classification with a kernel (exact 1-slack over kernel expansions).

    A cut is g = Σ_i β_i φ(x_i) over the examples it flips; it is kept as β and as
    A = K β, its inner products with every example, so that scores w·φ(x_i) = Σ_k α_k A_k
    need no kernel evaluation and the new Gram row is β_newᵀ A_k. Scales follow
    :mod:`cpsvm.problems.binary.problem`; ``costs`` (SVMlight's ``cost:``, default 1) multiply
    each example's weight 1/n in the cut. An example's β is the same in every cut that
    flips it, so a new cut is the previous one plus the examples that changed sides:
    n·min(|flipped|, |changed|) kernel evaluations (:class:`cpsvm.kernel_rows.RowKernel`).
    """

    # Up to this many examples the whole kernel matrix is computed once and kept.
    FULL_MATRIX_MAX = 4000
    # A cut built from the previous one carries its rounding; past this many in a row
    # the next one is computed afresh.
    MAX_UPDATES = 32

    def __init__(
        self,
        X,
        y,
        kernel,
        rescaling=MARGIN_RESCALING,
        loss_scale=LOSS_SCALE,
        psi_scale=PSI_SCALE,
        costs=None,
    ):
        self.y = np.asarray(y, dtype=np.float64)
        self.n = len(self.y)
        self.rows = RowKernel(X, kernel)
        self.rescaling = rescaling
        self.loss_scale, self.psi_scale = loss_scale, psi_scale
        self.costs = np.ones(self.n) if costs is None else np.asarray(costs, np.float64)
        # Each example's coefficient in a cut that flips it.
        weight = 1.0 if rescaling == MARGIN_RESCALING else loss_scale
        self.coef = weight * 2.0 * psi_scale * self.y * self.costs / self.n
        self.oracle_calls = 0
        self._A = RowTable(self.n)
        self._betas = []
        self._last = None  # (flipped mask, A, updates in a row) of the last cut
        self.full_matrix = None
        if self.n <= self.FULL_MATRIX_MAX:
            everything = np.arange(self.n)
            self.full_matrix = self.rows.matrix(everything, everything)

    @property
    def kernel_evaluations(self) -> int:
        return self.rows.evaluations

    def scores(self, alpha):
        return self._A.combine(alpha) if self._A.size else np.zeros(self.n)

    def _kernel_times(self, basis, coef):
        """K[:, basis] @ coef."""
        if self.full_matrix is not None:
            return self.full_matrix[:, basis] @ coef
        return self.rows.times(None, basis, coef)

    def separate(self, alpha, threshold=None):
        margin_threshold = 1.0 if self.rescaling == MARGIN_RESCALING else 1.0 / self.loss_scale
        # Flipped: y·score below the threshold (a = threshold, b = 1).
        flipped, _ = hinge_violators(self.y, self.scores(alpha), margin_threshold, 1.0)
        self.oracle_calls += self.n
        beta = self.coef[flipped]
        mask = np.zeros(self.n, dtype=bool)
        mask[flipped] = True
        A_new, updates = None, 0
        if self._last is not None:
            last_mask, last_A, last_updates = self._last
            changed = np.flatnonzero(mask != last_mask)
            if len(changed) < len(flipped) and last_updates < self.MAX_UPDATES:
                sign = np.where(mask[changed], 1.0, -1.0)
                A_new = last_A + self._kernel_times(changed, sign * self.coef[changed])
                updates = last_updates + 1
        if A_new is None:
            A_new = self._kernel_times(flipped, beta) if len(flipped) else np.zeros(self.n)
        self._last = (mask, A_new, updates)
        c = self.loss_scale * float(np.sum(self.costs[flipped])) / self.n
        return c, (flipped, beta, A_new)

    def gram_row(self, cut):
        flipped, beta, A_new = cut
        return self._A.columns_times(flipped, beta), float(beta @ A_new[flipped])

    def add(self, cut):
        self._A.append(cut[2])
        self._betas.append(cut[:2])

    def keep(self, mask):
        mask = np.asarray(mask, dtype=bool)
        self._A.keep(mask)
        self._betas = [b for b, k in zip(self._betas, mask) if k]

    def expansion(self, alpha) -> np.ndarray:
        """Coefficient of every training example in w = Σ_k α_k g_k."""
        coef = np.zeros(self.n)
        for a, (flipped, beta) in zip(alpha, self._betas):
            coef[flipped] += a * beta
        return coef
