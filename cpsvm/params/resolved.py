"""A run's settings, resolved once: :class:`Resolved`, what a solver trains by.

A Params (this package's dataclasses) holds the values given, each checked by its
declaration as it is made; its ``validate()`` holds the rules between its fields. What a
run derives from them and from its data is not a Params field: the problem trained
(``auto`` decided by the data's labels), the method picked for the data (ocas_learn's
``-m``), cp_learn's loss id, its problem's options with their defaults and the notes of
the problem's checks. A :class:`Resolved` holds them beside the Params, made once per
run: by the learners' runner (cpsvm.cli.runner), whose ``validate()`` came before any
data was read, and by a solver's ``train`` when it is given a plain Params (a library
call, an estimator), which :func:`resolved` checks then, once. The solvers read a
Resolved and check nothing again. Like the rest of the package, it loads no numpy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from ..options import with_values


@dataclass(frozen=True)
class Resolved:
    """``params`` the run's Params (its rules between fields checked); ``problem`` the
    problem it trains (a registered name or ``module:Class``; ``auto`` only where a
    cluster's shards decide it as they are trained); ``method`` ocas_learn's -m for
    these data (None: each C of a path picks its own); ``entry`` cp_learn's problem
    entry, ``loss_id`` its -l, ``options`` its options with their defaults filled,
    ``notes`` what its checks said of the settings; ``classes`` the labels of the
    whole training set when class weights are given (a fold's part may miss one)."""

    params: Any
    problem: str
    method: int | None = None
    entry: Any = None
    loss_id: int | None = None
    options: Mapping = field(default_factory=lambda: MappingProxyType({}))
    notes: tuple = ()
    classes: tuple | None = None  # the training data's labels, when class weights need them

    def at(self, C: float) -> Resolved:
        """The same settings at another C (a value of a path, the C chosen by --cv): no
        setting resolved here depends on C but ocas_learn's picked -m, which a path picks
        per C (``method`` None)."""
        return replace(self, params=with_values(self.params, C=C))


def as_given(dataset, params) -> Resolved:
    """The settings of a solver that derives none from the data (sampled_learn's,
    asset_learn's): the Params and their problem."""
    return Resolved(params, params.problem)


def resolved(given, dataset, settings: Callable) -> Resolved:
    """``given`` itself when it is a Resolved; a Params: its rules between fields checked
    (``validate()``) and its settings for ``dataset`` made by ``settings(dataset,
    params)``, once."""
    if isinstance(given, Resolved):
        return given
    given.validate()
    return settings(dataset, given)


def checked_params(given):
    """The Params of ``given`` (a Resolved's, or a Params whose rules between fields are
    checked now): for a solver that resolves its settings itself (the cluster's)."""
    if isinstance(given, Resolved):
        return given.params
    given.validate()
    return given
