"""What the workers run, one task per shard and round: the cut at a point, the loss,
the OCAS line search's breakpoints and the move of w_b. Each returns its exact partial
sums (folds, :mod:`.numerics`; the cut's sparse where the shard touches few of its
rows) and its seconds (:func:`_timed`); the workers add them along a tree
(:mod:`.partials`).

A shard keeps what the next round needs (outputs, this iteration's breakpoints, the
last binary cut) in its ``state``; a task that finds it gone raises
:class:`.shards.StateLost`. :func:`final_step`, :func:`grid_sums` and
:func:`moved_risk_grid` run on the client too, with the same bits.
"""

from __future__ import annotations

import time

import numpy as np

from ..engine.hinge import multiclass_most_violated
from .kernels import (
    binary_breakpoints,
    binary_coef,
    bucket_jumps,
    class_breakpoints,
    deposit_class_cut,
    deposit_class_risk,
    deposit_hinge_risk,
    deposit_rows,
    walk_to_zero,
)
from .numerics import exact_scalar, fold_grid, packed_accumulator
from .partials import cut_folds

GRID_SAMPLES = 8  # breakpoint positions per worker and grid interval
BUCKET_SAMPLES = 16  # per worker and candidate interval, with each evaluation


def _timed(fn):
    """fn returning (its result, its seconds): the client books the slowest worker's."""

    def run(*args):
        t0 = time.perf_counter()
        result = fn(*args)
        return result, time.perf_counter() - t0

    run.__name__ = fn.__name__
    run.__qualname__ = fn.__qualname__
    return run


def _scalar_acc(columns, sig):
    return np.zeros((columns, sig.shape[1]))


def _binary_cut(shard, out, a, b, cscale, wscale, costs, acc_s, sig_s, sig_g, last=None):
    """The cut's folds Σ coef_i·x_i for the violators at ``out``, formed the cheapest
    exact way: from the ``last`` cut (coef, packed folds) plus the changed rows, from
    the violators, or from the sum over all examples minus the others (kept in the
    shard). All give the same bits. Returns (coef, packed folds, violators)."""
    old = last[0] if last is not None else np.zeros(shard.n)
    new = np.empty(shard.n)
    nv, from_old, from_viol, from_all = binary_coef(
        shard.y, costs, out, a, b, cscale, wscale, old, new, acc_s, sig_s, shard.indptr
    )
    key = ("all", a, b, wscale, costs[0] if shard.n else 0.0)
    have_all = shard.state.get(key)
    cost_all = from_all + (0 if have_all is not None else from_viol + from_all)
    args = (shard.indptr, shard.indices, shard.data, shard.bias, shard.d)
    zero, shift = packed_accumulator(sig_g)
    if last is not None and from_old <= min(from_viol, cost_all):
        acc = last[1]
        changed = new != old
        deposit_rows(*args, np.where(changed, old, 0.0), -1.0, acc, shift)
        deposit_rows(*args, np.where(changed, new, 0.0), 1.0, acc, shift)
    elif from_viol <= cost_all:
        acc = zero
        deposit_rows(*args, new, 1.0, acc, shift)
    else:
        every = costs * wscale * shard.y
        if have_all is None:
            have_all = zero.copy()
            deposit_rows(*args, every, 1.0, have_all, shift)
            shard.state[key] = have_all
        acc = have_all.copy()
        deposit_rows(*args, np.where(new == 0.0, every, 0.0), -1.0, acc, shift)
    return new, acc, nv


def _shard_class_cut(shard, out, costs, loss, margin_rescaling, acc_s, sig_s, sig_g):
    acc_g, shift = packed_accumulator(sig_g)
    y = shard.classes()
    labels = multiclass_most_violated(out, y, margin_rescaling, loss)
    nv = deposit_class_cut(
        shard.indptr,
        shard.indices,
        shard.data,
        shard.n_classes,
        y,
        labels,
        costs,
        loss,
        margin_rescaling,
        acc_g,
        shift,
        acc_s,
        sig_s,
    )
    return cut_folds(acc_g, shard.touched), acc_s, nv


@_timed
def cut_at(shard, key, w, p, sig_g, sig_s):
    """The most violated cut at w (1-slack, ``cp_learn -w 3``): folds of g, and of c."""
    out = shard.outputs(key, w)
    shard.keep_outputs()
    costs = shard.costs(p["scale"])
    acc_s = _scalar_acc(1, sig_s)
    if shard.n_classes:
        return _shard_class_cut(
            shard, out, costs, p["loss"], p["margin_rescaling"], acc_s, sig_s, sig_g
        )
    _, acc_g, nv = _binary_cut(
        shard, out, p["a"], p["b"], p["cscale"], p["wscale"], costs, acc_s, sig_s, sig_g
    )
    return cut_folds(acc_g, shard.touched), acc_s, nv


def _ocas_cut(shard, out_c, p, sig_g, sig_s):
    """OCAS's cut where the outputs are out_c; binary incrementally from the last."""
    costs = shard.costs(p["scale"])
    acc_s = _scalar_acc(1, sig_s)
    if shard.n_classes:
        return _shard_class_cut(shard, out_c, costs, p["loss"], True, acc_s, sig_s, sig_g)
    coef, acc_g, nv = _binary_cut(
        shard,
        out_c,
        p["loss"],
        p["margin"],
        p["loss"],
        p["margin"],
        costs,
        acc_s,
        sig_s,
        sig_g,
        shard.state.get("cut"),
    )
    shard.state["cut"] = (coef, acc_g)
    return cut_folds(acc_g, shard.touched), acc_s, nv


def _risk(shard, out, p, sig_r):
    acc = _scalar_acc(1, sig_r)
    costs = shard.costs(p["scale"])
    if shard.n_classes:
        deposit_class_risk(shard.y, costs, out, p["loss"], acc, sig_r, 0)
    else:
        deposit_hinge_risk(shard.y, costs, out, p["loss"], p["margin"], acc, sig_r, 0)
    return acc


@_timed
def ocas_at(shard, keep, key, w, p, sig_g, sig_s, sig_r):
    """The first OCAS iteration (and -m 0): loss and cut at w itself."""
    out = shard.outputs(key, w)
    shard.keep_outputs(key, keep)
    risk = _risk(shard, out, p, sig_r)
    acc_g, acc_s, nv = _ocas_cut(shard, out, p, sig_g, sig_s)
    return risk, acc_g, acc_s, nv


def _line(shard, it, kb, wb, kt, wt, p, sig):
    """This iteration's breakpoints along w_b → w_t (computed once, then cached)."""
    line = shard.state.get("line")
    if line is not None and line[0] == it:
        return line
    out_b, out_t = shard.outputs(kb, wb), shard.outputs(kt, wt)
    shard.keep_outputs(kb, kt)
    costs = p["C"] * shard.costs(p["scale"])
    acc = _scalar_acc(2, sig)
    if shard.n_classes:
        at, jump = class_breakpoints(shard.y, out_b, out_t, costs, p["loss"], acc, sig)
    else:
        at, jump = binary_breakpoints(
            shard.y, out_b, out_t, costs, p["loss"], p["margin"], acc, sig
        )
    line = shard.state["line"] = (it, at, jump, acc)
    return line


def _bucket_sums(at, jump, cand, sig, per_bucket):
    acc = np.zeros((len(cand) + 1, sig.shape[1]))
    counts = np.zeros(len(cand) + 1, np.int64)
    wide = np.repeat(sig[:1], len(cand) + 1, axis=0)
    samples = bucket_jumps(at, jump, cand, acc, wide, counts, per_bucket)
    return acc, counts, samples


def grid_sums(at, jump, grid, sig):
    """The jump sums, counts and samples of breakpoints on the global step ``grid``: a
    worker's in :func:`ocas_outputs`, and the client's for the shards that sent all
    their breakpoints (the same bits)."""
    return _bucket_sums(at, jump, grid, sig, GRID_SAMPLES)


@_timed
def ocas_outputs(shard, it, kb, wb, kt, wt, p, sig, whole, grid):
    """The slope at 0 and the breakpoints: all of them if at most ``whole`` (the
    search then needs no further round), else their jump sums on the global step
    ``grid`` (as :func:`ocas_eval`), so that the client can bracket the step at once."""
    _, at, jump, acc = _line(shard, it, kb, wb, kt, wt, p, sig)
    m = len(at)
    if m <= whole:
        return acc, m, None, (at, jump)
    return acc, m, grid_sums(at, jump, grid, sig), None


@_timed
def ocas_eval(shard, it, kb, wb, kt, wt, p, sig, cand):
    """The breakpoints' jump sums between the client's candidate steps ``cand``."""
    _, at, jump, _ = _line(shard, it, kb, wb, kt, wt, p, sig)
    return _bucket_sums(at, jump, cand, sig, BUCKET_SAMPLES)


@_timed
def ocas_gather(shard, it, kb, wb, kt, wt, p, sig, lo, hi):
    """The breakpoints (positions, jumps) in (lo, hi], the interval holding the step."""
    _, at, jump, _ = _line(shard, it, kb, wb, kt, wt, p, sig)
    inside = (at > lo) & (at <= hi)
    return at[inside], jump[inside]


def moved_risk_grid(rg, step):
    """The loss's grid at w_b + step·(w_t − w_b), from a bound on |w| there (|1−step|·
    max|w_b| + step·max|w_t|) that needs no vector, so a worker can form it too."""
    w_max = abs(1.0 - step) * rg["wb_max"] + step * rg["wt_max"]
    return fold_grid(
        rg["cost_bound"] * (rg["loss"] + rg["spread"] * 4.0 * rg["radius"] * w_max), rg["n_terms"]
    )


def final_step(search, pieces):
    """The exact step from the breakpoints gathered in the interval holding it (the
    same on the client and on every worker: exact sums, positions sorted)."""
    A0, B0, G, J_lo, sig = search
    at = np.concatenate([p[0] for p in pieces])
    jump = np.concatenate([p[1] for p in pieces])
    order = np.argsort(at, kind="stable")
    kind, t, J_end = walk_to_zero(
        A0, np.concatenate([[B0], G[0]]), J_lo, at[order], jump[order], sig
    )
    if kind == 0:
        return float(t)
    return -exact_scalar(B0, G, J_end) / A0 if A0 > 0.0 else 0.0


def step_from(search, gathered):
    """The task that finds the step from the gathered breakpoints (``gathered``: the
    pieces of every shard, joined, and the slowest gather's seconds) for the round that
    moves w_b: (step, seconds)."""
    pieces, seconds = gathered
    return final_step(search, [pieces]), seconds


@_timed
def ocas_move(shard, kb, wb, kt, wt, k_new, step, p, sig_g, sig_s, rg, fresh):
    """w_b moves by ``step`` towards w_t (or, chained to the gather of the breakpoints,
    by the step and after the seconds :func:`step_from` gives): the new outputs, the
    loss there and the cut at w_c = (1−λ)·w_b + λ·w_t. The outputs move from the old
    ones, as the single-machine oracle does (``wb`` None, or the
    :class:`.shards.Replay` of the old ones for a worker that lost them), or, when the
    client gives ``fresh`` (w_b itself, every few iterations, so that a replay stays
    short), are X·(w_b + step·(w_t − w_b))."""
    first_seconds = 0.0
    if isinstance(step, tuple):
        step, first_seconds = step
    sig_r = moved_risk_grid(rg, step)
    cache = shard.state.setdefault("out", {})
    out_t = shard.outputs(kt, wt)
    if k_new not in cache:
        if fresh is not None:
            cache[k_new] = shard.product(fresh + step * (wt - fresh))
        else:
            out_b = shard.outputs(kb, wb)
            cache[k_new] = out_b + step * (out_t - out_b)
    out_b = cache[k_new]
    shard.keep_outputs(k_new)
    risk = _risk(shard, out_b, p, sig_r)
    mu = p["cut_lambda"]
    acc_g, acc_s, nv = _ocas_cut(shard, (1.0 - mu) * out_b + mu * out_t, p, sig_g, sig_s)
    return risk, acc_g, acc_s, nv, step, first_seconds


@_timed
def count_errors(shard, key, w):
    """The shard's misclassified examples at w (its outputs cached under ``key``)."""
    out = shard.outputs(key, w)
    if shard.n_classes:
        return int(np.count_nonzero(np.argmax(out, axis=1) + 1 != shard.y))
    return int(np.count_nonzero(np.sign(out) != shard.y))
