"""Options declared on dataclass fields, as plain data, and the value types they take.

A learner's parameters are one dataclass (its solver's Params); each field that a flag
sets carries that flag in its metadata, made by :func:`option`: the flags, the value type
(its range or choices), the default, the help. Everything else is built from these
declarations: the commands (:mod:`cpsvm.cli.command` turns them into click options, the
only place click is), the Params' own check of their values (:func:`check_fields`, called
by each Params' ``__post_init__``) and the scikit-learn estimators' defaults. A range is
written once, as a :class:`Range` or :class:`Choice`, with its one ``check``.

A field may take its value in three ways besides the plain one: ``convert`` (the flag's
value becomes the field's, e.g. ``-z r`` → "regression"), ``group`` (several flags make
one value: SVMlight's kernel flags a Kernel) and ``file`` (the flag names a file that the
command reads once the training data are, cpsvm.cli.runner). This module imports nothing
but the standard library and cpsvm.errors: the commands' ``-h`` reads every declaration,
and the library below the commands must not load click.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import InputError, OptionError

METADATA_KEY = "option"


class _FieldDefault:
    """Option.cli_default when the command's default is the field's own."""

    def __repr__(self):
        return "FIELD_DEFAULT"


FIELD_DEFAULT = _FieldDefault()


@dataclass(frozen=True)
class Option:
    """What the command line knows of one field.

    ``flags`` the option's names (``("-p", "--threads")``), none for an ``argument``
    (EXAMPLE_FILE); ``help`` its text, or a function giving it when the command is built
    (a text made of the problems registered by then); ``type`` its value type: ``int``,
    ``float``, ``str``, a :class:`ValueType` (:class:`Range`, :class:`Choice`,
    :data:`FILE`, :data:`OUTPUT`, ...) or :class:`Later` (made when the command is built);
    ``cli_default`` the command's default when it is not the field's (``-z``'s "c" for
    the field's "classification"; None for a value the command leaves unset); ``dest`` the
    name the command gets it by when the field's value is made from it (``convert``,
    ``file``); ``required``: the command refuses a missing value, unless an option the
    command names (--c-path) makes it optional; ``group`` the options of a field made of
    several, ``convert(**their values)`` making the field's value; ``convert`` alone, a
    function or a dict, the field's value of the flag's; ``file``: the flag names a file
    the command reads into the field once the training data are read; ``callback`` a
    command-line hook (click's signature), for the options cpsvm.cli declares itself.
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
    convert: Callable | dict | None = None
    file: bool = False
    group: tuple = ()
    argument: bool = False

    @property
    def what(self) -> str:
        """The option as a message names it (its first flag)."""
        return self.flags[0] if self.flags else ""

    def value_type(self):
        """The value type of the field's values (a Later one made now; ``float``:
        :data:`NUMBER`, nan refused)."""
        kind = self.type.make() if isinstance(self.type, Later) else self.type
        if kind is float:
            kind = NUMBER
        if isinstance(self.convert, dict) and isinstance(kind, Choice):
            return Choice(tuple(self.convert.values()))
        if callable(self.convert) or self.group or self.file:
            return None  # the converted value is checked where it is made
        return kind if isinstance(kind, ValueType) else None

    def converted(self, value):
        """The field's value of the command line's ``value``."""
        if isinstance(self.convert, dict):
            return self.convert.get(value)
        return self.convert(value)


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
    """An option of a group (the kernel's -t, -d, ...), or one that is no field of a
    dataclass (a problem's cp_classify option)."""
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


def defaults(cls) -> dict:
    """{field name: default} of the dataclass ``cls``'s fields that have one."""
    return {
        f.name: field_default(f)
        for f in dataclasses.fields(cls)
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    }


# Set while the command line's values, each already checked by its type as it was read,
# are made into a Params: its fields are not checked a second time.
_CHECKED_ON_READING = contextvars.ContextVar("checked_on_reading", default=False)


@contextlib.contextmanager
def checked_on_reading():
    """The dataclasses made in this block take values their types checked already."""
    token = _CHECKED_ON_READING.set(True)
    try:
        yield
    finally:
        _CHECKED_ON_READING.reset(token)


def check_fields(obj) -> None:
    """Each declared field of the dataclass ``obj`` against its value type (None: unset,
    the default applies): OptionError naming the value expected. The Params call it from
    ``__post_init__``, so a Params made in Python is checked as the command line is, once,
    by the same declaration."""
    if _CHECKED_ON_READING.get():
        return
    for f, declaration in declared(type(obj)):
        value = getattr(obj, f.name)
        kind = declaration.value_type()
        if value is not None and kind is not None:
            kind.check(value, declaration.what)


def validate_options(params) -> None:
    """``params.validate()`` (the rules between fields) as the command line sees it: a
    refused value is a usage error (exit 2), whatever exception class the library's check
    raised it with."""
    try:
        params.validate()
    except OptionError:
        raise
    except InputError as e:
        raise OptionError(str(e)) from None


# -- value types ---------------------------------------------------------------------------


class ValueType:
    """The values an option takes: ``parse`` the command line's text, ``check`` a value
    from Python; both raise OptionError with the message the tools give. ``name`` is its
    metavar on the command line."""

    name = "text"

    def parse(self, text):
        return self.check(text)

    def check(self, value, what: str = ""):
        return value


def _shown(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Range(ValueType):
    """A number of type ``base`` (int or float) between ``min`` and ``max`` (None: no
    bound; ``*_open``: the bound itself excluded). ``expected`` what the tools call the
    values (``a finite C > 0``): the messages say it, on the command line too; without
    it the command line words the range as click does (``x>=1``) and a check from Python
    says it from the bounds (``expected -k >= 1, got 0``)."""

    base: type = float
    min: float | None = None
    max: float | None = None
    min_open: bool = False
    max_open: bool = False
    expected: str | None = None

    @property
    def name(self):
        return "float" if self.base is float else "integer"

    def holds(self, number) -> bool:
        if self.min is not None and not (
            number > self.min if self.min_open else number >= self.min
        ):
            return False
        if self.max is not None and not (
            number < self.max if self.max_open else number <= self.max
        ):
            return False
        return number == number  # NaN is in no range

    def wanted(self, what: str = "") -> str:
        if self.expected is not None:
            return self.expected
        low = None if self.min is None else f"{_shown(self.min)} {'<' if self.min_open else '<='} "
        high = None if self.max is None else f" {'<' if self.max_open else '<='} {_shown(self.max)}"
        if low is not None and high is not None:
            return f"{low}{what}{high}"
        if low is not None:
            return f"{what} {'>' if self.min_open else '>='} {_shown(self.min)}"
        if high is not None:
            return f"{what}{high}"
        return f"{what}, a number"

    def parse(self, text):
        try:
            number = text if isinstance(text, self.base) else self.base(text)
        except (TypeError, ValueError):
            raise OptionError(f"expected {self.wanted()}, got {text!r}") from None
        if not self.holds(number):
            raise OptionError(f"expected {self.wanted()}, got {text}")
        return number

    def check(self, value, what: str = ""):
        if not self.holds(value):
            raise OptionError(f"expected {self.wanted(what)}, got {_shown(value)}")
        return value


@dataclass(frozen=True)
class Number(Range):
    """A float option's plain ``type=float``: any number, inf included (a limit that
    is none), nan refused, with one message on the command line and from Python."""

    def wanted(self, what: str = "") -> str:
        return f"a number for {what}" if what else "a number"


NUMBER = Number(float)


@dataclass(frozen=True)
class Choice(ValueType):
    """One of ``choices`` (integers, as SVMstruct's -w 0..4|9, or words); ``expected``
    what the messages say of them (default: the flag and its values)."""

    choices: tuple = ()
    expected: str | None = None

    @property
    def integral(self) -> bool:
        return all(isinstance(c, int) for c in self.choices)

    @property
    def name(self):
        return "integer" if self.integral else "choice"

    def metavar(self) -> str:
        return "[" + "|".join(map(str, self.choices)) + "]"

    def wanted(self, what: str = "") -> str:
        if self.expected is not None:
            return self.expected
        *first, last = map(str, self.choices)
        words = f"{', '.join(first)} or {last}" if first else last
        return f"{what} {words}".strip() if what else "one of " + ", ".join(map(str, self.choices))

    def holds(self, value) -> bool:
        return value in self.choices

    def parse(self, text):
        if not self.integral:
            return self.check(text)
        try:
            number = text if isinstance(text, int) else int(text)
        except (TypeError, ValueError):
            raise OptionError(f"expected {self.wanted()}, got {text!r}") from None
        if number not in self.choices:
            raise OptionError(f"expected {self.wanted()}, got {text}")
        return number

    def check(self, value, what: str = ""):
        if value not in self.choices:
            shown = value if self.integral and isinstance(value, int) else repr(value)
            raise OptionError(f"expected {self.wanted(what)}, got {shown}")
        return value


@dataclass(frozen=True)
class PathType(ValueType):
    """A file name (``-`` for standard input or output); ``output``: a file the command
    writes, whose folder must exist. The command line checks them as it reads them."""

    output: bool = False
    name = "file"


FILE = PathType()
OUTPUT = PathType(output=True)


@dataclass(frozen=True)
class Later:
    """A value type made when it is needed (``make()``): when the command is built, from
    the problems registered by then (cp_learn's -l)."""

    make: Callable


def positive(what: str) -> Range:
    return Range(float, 0, min_open=True, expected=f"{what} > 0")


def finite_positive(what: str) -> Range:
    return Range(float, 0, math.inf, min_open=True, max_open=True, expected=f"a finite {what} > 0")


def non_negative(what: str) -> Range:
    return Range(float, 0, expected=f"{what} >= 0")


def at_least(n: int, what: str) -> Range:
    return Range(int, n, expected=f"{what} >= {n}")


def with_values(obj, **changes):
    """A copy of the frozen dataclass ``obj`` with ``changes`` (a value found in the run:
    the C chosen, a file read), which alone are checked."""
    with checked_on_reading():
        made = dataclasses.replace(obj, **changes)
    for f, declaration in declared(type(obj)):
        kind = declaration.value_type()
        if f.name in changes and changes[f.name] is not None and kind is not None:
            kind.check(changes[f.name], declaration.what)
    return made
