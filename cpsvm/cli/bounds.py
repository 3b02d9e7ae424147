"""The ``--margin-bounds 0|1`` option shared by cp_learn, ocas_learn and asset_learn.

The option is taken out of the command's arguments and kept in click's context
(:func:`margin_bounds_value`), so a command gains it by one decorator and one line."""

from __future__ import annotations

import functools

import click

from .common import IntChoice

META_KEY = "cpsvm.margin_bounds"


def margin_bounds_option(default_text: str):
    """``--margin-bounds 0|1``; ``default_text`` says where it is on when not given."""

    def decorate(command):
        @functools.wraps(command)
        def wrapped(*args, **kwargs):
            click.get_current_context().meta[META_KEY] = kwargs.pop("margin_bounds")
            return command(*args, **kwargs)

        return click.option(
            "--margin-bounds", "margin_bounds",
            type=IntChoice(0, 1, expected="--margin-bounds 0 or 1"), default=None,
            help="1: skip the examples whose loss cannot have changed since the margins "
                 "were last sorted (Guillory & Bilmes' bounds on the change of the "
                 "margin): the same result, fewer products; 0: compute every margin. "
                 + default_text)(wrapped)
    return decorate


def margin_bounds_value() -> bool | None:
    """The command's --margin-bounds: True, False, or None when not given."""
    value = click.get_current_context().meta.get(META_KEY)
    return None if value is None else bool(value)
