"""A click command built from declarations: the fields of dataclasses whose options
(cpsvm.options, plain data) say their flags, value types, defaults and help, and the
values the command receives turned back into those dataclasses. Nothing is written twice:
the parameters of a learner are its Params' fields, the command hands them over by name,
and each value is checked as it is read by its declared type (:func:`click_type`) and not
again when its Params is made. This is the one place a declaration becomes click.

Like :mod:`.common`, it imports nothing heavy."""

from __future__ import annotations

import click

from ..errors import OptionError
from ..options import (
    FIELD_DEFAULT,
    NUMBER,
    Choice,
    Later,
    PathType,
    Range,
    ValueType,
    checked_on_reading,
    declared,
    field_default,
)
from .common import CONTEXT_SETTINGS


class Declared(click.ParamType):
    """A declared value type on the command line: its ``parse`` reads the text, a refusal
    is a usage error worded as the type words it (``expected C > 0, got 0``)."""

    def __init__(self, kind: ValueType):
        self.kind = kind
        self.name = kind.name

    def convert(self, value, param, ctx):
        try:
            return self.kind.parse(value)
        except OptionError as e:
            self.fail(str(e), param, ctx)

    def get_metavar(self, param, ctx=None):
        if isinstance(self.kind, Choice):
            return self.kind.metavar()
        return None


class FloatRange(click.FloatRange):
    """click's float range, nan refused (it compares false with every bound, so click
    lets it through) with the message of a plain float's (:data:`~cpsvm.options.NUMBER`)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if number != number:
            self.fail(f"expected {NUMBER.wanted()}, got {value}", param, ctx)
        return number


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
        from ..io.atomic import check_output_folder

        check_output_folder(value)
        return value


def click_type(kind):
    """The click type of a declared value type: click's own range and choice types where
    the declaration leaves the wording to click (their help and messages), else the
    declaration's ``parse``; ``float`` as :data:`~cpsvm.options.NUMBER` (nan refused);
    Python's int and str, and click types that cli/ declares itself, as they are."""
    if isinstance(kind, Later):
        kind = kind.make()
    if kind is float:
        return Declared(NUMBER)  # nan refused
    if isinstance(kind, PathType):
        return OutputPath() if kind.output else FilePath()
    if isinstance(kind, Range) and kind.expected is None:
        number = click.IntRange if kind.base is int else FloatRange
        return number(kind.min, kind.max, min_open=kind.min_open, max_open=kind.max_open)
    if isinstance(kind, Choice) and not kind.integral:
        return click.Choice(list(kind.choices))
    if isinstance(kind, ValueType):
        return Declared(kind)
    return kind


class DeclaredCommand(click.Command):
    """A command whose ``required`` options are refused missing unless one of the
    parameters named in ``optional_with`` is given (-c with --c-path)."""

    def __init__(self, *args, optional_with=(), **kwargs):
        super().__init__(*args, context_settings=CONTEXT_SETTINGS, **kwargs)
        self.optional_with = tuple(optional_with)


def _unless_given(ctx, param, value):
    """A required option's callback: missing is a usage error, unless the command says
    another given option makes it optional (given on the command line, that option is
    processed before a missing one)."""
    if value is None and not ctx.resilient_parsing:
        if not any(ctx.params.get(name) is not None for name in ctx.command.optional_with):
            raise click.MissingParameter(ctx=ctx, param=param)
    return value


def parameters(cls, texts=None) -> list:
    """The click parameters of the dataclass ``cls``'s declared fields, in their order;
    ``texts`` fills the ``{names}`` of their help (what a shared option says of the
    command that has it)."""
    made = []
    for f, declaration in declared(cls):
        for option in declaration.group or (declaration,):
            name = option.dest or f.name
            default = (
                field_default(f) if option.cli_default is FIELD_DEFAULT else option.cli_default
            )
            made.append(_parameter(option, name, default, texts))
    return made


def member_parameter(option, name):
    """The click parameter of an option that is no dataclass field (a problem's
    cp_classify option), the command getting its value as ``name``."""
    default = None if option.cli_default is FIELD_DEFAULT else option.cli_default
    if option.is_flag and default is None:
        default = False
    return _parameter(option, name, default, None)


def _parameter(option, name, default, texts):
    if option.argument:
        # An optional file's default (cp_classify's svm_predictions), none for the others.
        given = {} if option.required or default is None else {"default": default}
        return click.Argument(
            [name], type=click_type(option.type), required=option.required, **given
        )
    # A help made of the registered problems' texts is made as the command is built.
    text = option.help() if callable(option.help) else option.help
    settings = dict(
        type=click_type(option.type),
        default=default,
        help=text.format_map(texts) if texts else text,
        show_default=option.show_default,
        metavar=option.metavar,
        callback=option.callback or (_unless_given if option.required else None),
    )
    if option.is_flag:
        del settings["type"], settings["metavar"]
        return click.Option([*option.flags, name], is_flag=True, **settings)
    return click.Option([*option.flags, name], **settings)


def values_of(cls, values: dict):
    """An instance of ``cls`` from the command's values (each declared field's, made from
    its group's or converted as its option says; the values are taken out of
    ``values``), and the files its ``file`` fields name: {field name: path}. The values
    were checked as they were read: the instance does not check them again."""
    fields, files = {}, {}
    for f, option in declared(cls):
        if option.group:
            fields[f.name] = option.convert(**{m.dest: values.pop(m.dest) for m in option.group})
            continue
        value = values.pop(option.dest or f.name)
        if option.file:
            if value is not None:
                files[f.name] = value
        elif option.convert is not None:
            fields[f.name] = option.converted(value)
        elif value is not None or field_default(f) is None:
            fields[f.name] = value
    with checked_on_reading():
        return cls(**fields), files
