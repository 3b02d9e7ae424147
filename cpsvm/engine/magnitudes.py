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


class CTooSmall(CTooLarge):
    """C is too small for the data: the smallest C allowed is ``factor`` times the C the
    engine was given (C·C_i would be 0 or lose its precision)."""

    def __init__(self, factor: float, why: str, C: float | None = None):
        self.factor, self.why, self.C = factor, why, C
        if C is None:
            text = f"expected a C at least {factor:.3g} times the one given ({why})"
        else:
            text = f"expected C >= {C * factor:.3g} for this data, got {C:g} ({why})"
        OptionError.__init__(self, text)


class ValuesTooLarge(OptionError):
    """What overflows is not C's doing: the data's values or the kernel's parameters
    (a cut's squared norm is past double precision whatever C is)."""


@contextlib.contextmanager
def c_bound(C: float):
    """Within the block, a CTooLarge of the engine is re-raised naming ``C``, the value
    of the caller's own -c (the engine's C may be another scale of it)."""
    try:
        yield
    except CTooLarge as e:
        if e.C is not None:
            raise
        raise type(e)(e.factor, e.why, C) from None


def check_cut(C: float, self_product: float) -> None:
    """CTooLarge when C times a cut's norm (its inner product with itself given) passes
    NORM_LIMIT."""
    norm = math.sqrt(self_product) if self_product >= 0 else math.nan
    if not C * norm <= NORM_LIMIT:
        if not 0 < norm < math.inf:
            raise ValuesTooLarge(
                "expected data values and kernel parameters (-t -d -g -s -r) whose products "
                f"stay finite: a cut's squared norm is {self_product:g}, whatever C is"
            )
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


# C·C_i at least this: a normal double, so that C·C_i·loss and the bounds α_i <= C·C_i
# keep their precision (below it, subnormal numbers round to 0).
SMALLEST_COST = float(np.finfo(np.float64).tiny)


def check_c(C: float, unit_costs, norms, loss: float = 1.0) -> None:
    """C against the examples, before any work: the C_i are C·unit_costs_i, ``norms``
    the |δΨ_i| (the norms of the examples' cut terms) and ``loss`` their loss at w = 0.
    |w| <= C·Σ_i unit_costs_i·|δΨ_i| for every method and F(0) = C·Σ_i unit_costs_i·loss:
    both at most NORM_LIMIT (CTooLarge), and every C·unit_costs_i a normal double
    (CTooSmall). Computed in the units' scale, so that no product overflows."""
    unit = np.asarray(unit_costs, dtype=np.float64)
    if not len(unit):
        return
    largest, smallest = float(np.max(unit)), float(np.min(unit))
    if not 0 < smallest <= largest < math.inf:
        return  # (the solvers refuse costs C_i <= 0, inf or nan themselves)
    terms = np.maximum(np.asarray(norms, dtype=np.float64), abs(loss))
    with np.errstate(over="ignore", invalid="ignore"):
        share = float(np.dot(unit / largest, terms))  # Σ_i (unit_i/max unit)·max(|δΨ_i|, L)
    if not share < math.inf:
        raise ValuesTooLarge(
            "expected feature values whose sum over the examples, sum_i |x_i|, stays "
            "finite in double precision"
        )
    if share > 0:
        most = NORM_LIMIT / share / largest  # the largest C
        if not C <= most:
            raise CTooLarge(
                most / C,
                f"sum_i C_i*max(|x_i|, loss), a bound on |w| and on the objective at "
                f"w = 0, would be {C * largest * share:.3g}, past {NORM_LIMIT:g}",
            )
    least = SMALLEST_COST / smallest  # the smallest C
    if not C >= least:
        raise CTooSmall(
            least / C,
            f"the smallest C_i would be {C * smallest:.3g}, below {SMALLEST_COST:.3g}, "
            "the smallest normal double",
        )


def check_small_c(C: float, n: int) -> None:
    """CTooSmall when λ = 1/(C·n) (stochastic subgradient's regularisation of C) would
    not be finite: C·n at least a normal double."""
    if not C * n >= SMALLEST_COST:
        raise CTooSmall(
            SMALLEST_COST / (C * n) if C * n > 0 else math.inf,
            f"lambda = 1/(C*n) would be {1 / (C * n) if C * n > 0 else math.inf:.3g}",
            C,
        )


def check_domain(radius: float, scale: float, lam: float, C: float | None = None) -> None:
    """Stochastic subgradient's domain |w| <= ``radius`` (∝ 1/sqrt(λ)) and its margins up
    to radius·``scale`` (the examples' largest norm) at most NORM_LIMIT: CTooLarge naming
    the largest C (λ = 1/(C·n)), or an OptionError naming the smallest -l λ."""
    bound = radius * max(scale, 1.0)
    if bound <= NORM_LIMIT:
        return
    factor = (NORM_LIMIT / bound) ** 2 if bound < math.inf else 0.0
    why = (
        f"|w| and the margins are bounded by {bound:.3g} for this lambda, past "
        f"{NORM_LIMIT:g}, and |w|^2 overflow"
    )
    if C is not None:
        raise CTooLarge(factor, why, C)
    if factor == 0:
        raise OptionError(f"expected a larger lambda (-l) for this data, got {lam:g} ({why})")
    raise OptionError(
        f"expected lambda (-l) >= {lam / factor:.3g} for this data, got {lam:g} ({why})"
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
