"""Command-line options declared on dataclass fields, and the value types they take.

A learner's parameters are one dataclass (its solver's Params); each field that a flag
sets carries that flag in its metadata, made by :func:`option`: the flags, the click type
(with its range), the default, the help. The commands are built from these declarations
(:mod:`cpsvm.cli.command`), so that an option is written once: no decorator, signature
and constructor to keep in step. A field may take its value in three ways besides the
plain one: ``convert`` (the flag's value becomes the field's, e.g. ``-z r`` →
"regression"), ``group`` (several flags make one value: SVMlight's kernel flags a
Kernel) and ``read`` (the flag names a file, read once the training data are).

The types are click's where click has them (IntRange, FloatRange, Choice) and, where the
message must name what the tools call the value (``expected C > 0, got 0``), a
:class:`Checked` one. This module imports click and nothing heavy: the commands' ``-h``
reads every declaration.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from .errors import InputError, OptionError

METADATA_KEY = "option"


class _FieldDefault:
    """Option.cli_default when click's default is the field's own."""

    def __repr__(self):
        return "FIELD_DEFAULT"


FIELD_DEFAULT = _FieldDefault()


@dataclass(frozen=True)
class Option:
    """What the command line knows of one field.

    ``flags`` the option's names (``("-p", "--threads")``), none for an ``argument``
    (EXAMPLE_FILE); ``help`` its text, or a function giving it when the command is built
    (a text made of the problems registered by then); ``type`` its click type;
    ``cli_default`` click's default when it is not the field's (``-z``'s "c" for the
    field's "classification"; None for a value the command leaves unset); ``dest`` the
    name the command gets it by when the field's value is made from it (``convert``,
    ``read``); ``required``: the command refuses a missing value, unless an option the
    command names (--c-path) makes it optional; ``group`` the options of a field made of
    several, ``convert(**their values)`` making the field's value; ``read(path, data)``
    the field's value from the file given, once the training data are read.
    """

    flags: tuple = ()
    help: str | Callable = ""
    type: Any = None
    show_default: bool = False
    metavar: str | None = None
    is_flag: bool = False
    cli_default: Any = FIELD_DEFAULT
    dest: str | None = None
    required: bool = False
    callback: Callable | None = None
    convert: Callable | None = None
    read: Callable | None = None
    group: tuple = ()
    argument: bool = False


def option(
    *flags, help="", default=dataclasses.MISSING, default_factory=dataclasses.MISSING, **settings
):
    """A dataclass field set by ``flags``: ``default`` (or ``default_factory``) is the
    field's, ``settings`` the :class:`Option`'s."""
    return dataclasses.field(
        default=default,
        default_factory=default_factory,
        metadata={METADATA_KEY: Option(tuple(flags), help, **settings)},
    )


def member(*flags, help="", **settings) -> Option:
    """An option of a group (the kernel's -t, -d, ...): not a field of its own."""
    return Option(tuple(flags), help, **settings)


def declared(cls) -> list:
    """(field, Option) of every field of the dataclass ``cls`` that a flag sets, in the
    order of the fields."""
    return [
        (f, f.metadata[METADATA_KEY]) for f in dataclasses.fields(cls) if METADATA_KEY in f.metadata
    ]


def field_default(f):
    """A dataclass field's default (None when it has none)."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def validate_options(params) -> None:
    """``params.validate()`` as the command line sees it: a refused value is a usage
    error (exit 2), whatever exception class the library's check raised it with."""
    try:
        params.validate()
    except OptionError:
        raise
    except InputError as e:
        raise OptionError(str(e)) from None


# -- value types ---------------------------------------------------------------------------


class Checked(click.ParamType):
    """A number that must pass a test (``C > 0``): a value failing it is a usage error,
    found before anything is read or imported, and worded as the library's checks are
    (``expected C > 0, got 0``)."""

    def __init__(self, base, test, expected: str):
        self.base, self.test, self.expected = base, test, expected
        self.name = "float" if base is float else "integer"

    def convert(self, value, param, ctx):
        try:
            number = value if isinstance(value, self.base) else self.base(value)
        except (TypeError, ValueError):
            self.fail(f"expected {self.expected}, got {value!r}", param, ctx)
        if not self.test(number):
            self.fail(f"expected {self.expected}, got {value}", param, ctx)
        return number


class IntChoice(Checked):
    """An integer from a fixed set (SVMstruct's -w 0..4|9 and the like)."""

    def __init__(self, *choices: int, expected: str | None = None):
        self.choices = tuple(choices)
        super().__init__(
            int, lambda v: v in self.choices, expected or "one of " + ", ".join(map(str, choices))
        )

    def get_metavar(self, param, ctx=None):
        return "[" + "|".join(map(str, self.choices)) + "]"


def positive(what: str) -> Checked:
    return Checked(float, lambda v: v > 0, f"{what} > 0")


def non_negative(what: str) -> Checked:
    return Checked(float, lambda v: v >= 0, f"{what} >= 0")


def at_least(n: int, what: str) -> Checked:
    return Checked(int, lambda v: v >= n, f"{what} >= {n}")


class FilePath(click.Path):
    """A file argument (``-`` for standard input or output): an empty name is a usage
    error before anything is read or trained, not a failure at the end."""

    def __init__(self):
        super().__init__(dir_okay=False, allow_dash=True)

    def convert(self, value, param, ctx):
        if value == "":
            self.fail("expected a file name (or - for standard input/output), got ''", param, ctx)
        return super().convert(value, param, ctx)


class OutputPath(FilePath):
    """A file the command writes (``-``: standard output): its folder must exist, checked
    as the command line is read, before anything is read or trained."""

    def convert(self, value, param, ctx):
        value = super().convert(value, param, ctx)
        from .io.atomic import check_output_folder

        check_output_folder(value)
        return value
