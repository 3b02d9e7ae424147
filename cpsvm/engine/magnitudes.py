"""How large a C the arithmetic of training can take, and how precisely an objective
at a huge C can be known.

Overflow. Every weight vector a solver forms is a combination of cuts (or, in dual
coordinate descent, of examples) with coefficients that sum to at most C, so |w| is at
most C times the largest cut's norm (C·Σ_i C_i·|x_i| for coordinate descent). Past
NORM_LIMIT, |w|², the QP's products and the hinge's margins overflow double precision
(1.8e308) and training would stop on a non-finite number: such a C is refused, with the
largest C the data allow (:class:`CTooLarge`; the solvers name the user's C with
:func:`c_bound`).

Precision. F(w) = ½|w|² + C·Σ_i C_i·loss_i(w) is a sum whose terms are computed with
relative rounding errors of the order of the machine epsilon, and w itself is known to
that precision: once C is so large that C·Σ_i C_i·(1 + |⟨w, x_i⟩|)·eps exceeds the
stopping tolerance, the duality gap cannot be seen to close. :func:`objective_rounding`
is that floor; the cutting-plane loop stops there (status "precision") instead of
running on without progress.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from ..errors import OptionError

# A weight vector's norm at most this: its square, products of two such numbers and sums
# of many stay finite in double precision.
NORM_LIMIT = 1e150
EPSILON = float(np.finfo(np.float64).eps)


class CTooLarge(OptionError):
    """C is too large for the data: the largest C allowed is ``factor`` times the C the
    engine was given (``C``, once known, the user's: the message then says it)."""

    def __init__(self, factor: float, why: str, C: float | None = None):
        self.factor, self.why, self.C = factor, why, C
        if C is None:
            text = f"expected a C at most {factor:.3g} times the one given ({why})"
        elif factor > 0:
            text = f"expected C <= {C * factor:.3g} for this data, got {C:g} ({why})"
        else:  # the bound itself overflowed: no factor to give
            text = f"expected a smaller C for this data, got {C:g} ({why})"
        super().__init__(text)


@contextlib.contextmanager
def c_bound(C: float):
    """Within the block, a CTooLarge of the engine is re-raised naming ``C``, the value
    of the caller's own -c (the engine's C may be another scale of it)."""
    try:
        yield
    except CTooLarge as e:
        if e.C is not None:
            raise
        raise CTooLarge(e.factor, e.why, C) from None


def check_cut(C: float, self_product: float) -> None:
    """CTooLarge when C times a cut's norm (its inner product with itself given) passes
    NORM_LIMIT."""
    norm = math.sqrt(self_product) if self_product >= 0 else math.nan
    if not C * norm <= NORM_LIMIT:
        if not 0 < norm < math.inf:
            raise CTooLarge(0.0, "a cut's squared norm overflows double precision")
        raise CTooLarge(
            NORM_LIMIT / norm / C,
            f"C times a cut's norm, a bound on |w|, would be {C * norm:.3g}, past "
            f"{NORM_LIMIT:g}, and |w|^2 overflow",
        )


def check_costs(costs, norms) -> None:
    """CTooLarge when Σ_i C_i·|x_i| (``norms`` the |x_i|), which bounds |w| in dual
    coordinate descent, passes NORM_LIMIT."""
    costs = np.asarray(costs, dtype=np.float64)
    largest = float(np.max(costs)) if len(costs) else 0.0
    if not 0 < largest < math.inf:
        return  # (no example; the solvers refuse C_i <= 0 and inf themselves)
    with np.errstate(over="ignore", invalid="ignore"):
        share = float(np.dot(costs / largest, norms))  # Σ_i (C_i/max C)·|x_i|
    if not largest * share <= NORM_LIMIT:
        raise CTooLarge(
            NORM_LIMIT / share / largest if 0 < share < math.inf else 0.0,
            f"sum_i C_i*|x_i|, a bound on |w|, would be {largest * share:.3g}, past "
            f"{NORM_LIMIT:g}, and |w|^2 overflow",
        )


def objective_rounding(half_norm: float, C: float, costs, loss_scale: float, margins) -> float:
    """How precisely F(w) = ½|w|² + C·Σ_i costs_i·loss_scale·ξ_i is known at w, given
    ``margins`` the |outputs| that enter each ξ_i (binary (n,), multiclass (n, k): the
    largest of each row counts): eps times the sum of the terms' magnitudes."""
    margins = np.abs(np.asarray(margins, dtype=np.float64))
    if margins.ndim > 1:
        margins = margins.max(axis=1) if margins.shape[1] else np.zeros(len(margins))
    terms = float(np.dot(np.asarray(costs, dtype=np.float64), 1.0 + margins))
    return EPSILON * (half_norm + C * loss_scale * terms)
