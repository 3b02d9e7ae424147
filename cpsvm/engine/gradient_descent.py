"""Gradient descent with halving steps on a loss whose margins are held sorted
(Guillory & Bilmes §4.2; asset_learn --method gd): each step evaluates the
loss through :class:`~cpsvm.engine.margin_bounds.SortedMargins`, which computes only
the margins that can have crossed a kink since it last sorted."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class GDResult:
    w: np.ndarray
    b: float
    objective: float
    iterations: int  # steps taken (accepted)
    evaluations: int  # loss evaluations (rejected steps included)
    step: float  # the last step size
    status: str  # "converged", "max_iterations", "interrupted"
    seconds: float = 0.0
    margins_computed: float = 1.0  # mean share of the margins computed per evaluation
    resorts: int = 0


def huber_gd(
    margins,
    lam,
    epsilon,
    *,
    intercept=True,
    step=100.0,
    max_iterations=100000,
    callback=None,
    should_stop=None,
) -> GDResult:
    """Gradient descent on λ/2·|w|² + Σ_i c_i·ℓ(y_i·(⟨w, x_i⟩ + b)) (Guillory & Bilmes
    §4.2): ``margins`` a :class:`~cpsvm.engine.margin_bounds.SortedMargins` holding the
    loss and weights c_i (1/m for the mean). The step starts at ``step`` and halves
    whenever it would increase the objective (the step is then not taken); the run stops
    when a step lowers the objective by less than ``epsilon`` relative to it.
    ``callback(iteration, objective, step)`` after each accepted step."""
    w = np.zeros(margins.d)
    b = 0.0
    ev = margins.evaluate(w, b)
    F = ev.loss
    iterations, evaluations, status = 0, 1, "max_iterations"
    while iterations < max_iterations:
        if should_stop is not None and should_stop():
            status = "interrupted"
            break
        gw = lam * w - ev.grad
        gb = -ev.grad_b if intercept else 0.0
        w_new = w - step * gw
        b_new = b - step * gb
        ev_new = margins.evaluate(w_new, b_new)
        evaluations += 1
        F_new = 0.5 * lam * float(w_new @ w_new) + ev_new.loss
        if not F_new <= F:
            step *= 0.5
            if step == 0.0:
                status = "converged"
                break
            continue
        iterations += 1
        change = (F - F_new) / abs(F) if F != 0 else 0.0
        w, b, ev, F = w_new, b_new, ev_new, F_new
        if callback is not None:
            callback(iterations, F, step)
        if change < epsilon:
            status = "converged"
            break
    return GDResult(
        w=w,
        b=b,
        objective=F,
        iterations=iterations,
        evaluations=evaluations,
        step=step,
        status=status,
    )
