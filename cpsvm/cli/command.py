"""A click command built from declarations: the fields of dataclasses whose options
(cpsvm.options) say their flags, types, defaults and help, and the values the command
receives turned back into those dataclasses. Nothing is written twice: the parameters of
a learner are its Params' fields, and the command hands them over by name.

Like :mod:`.common`, it imports nothing heavy."""

from __future__ import annotations

import click

from ..options import FIELD_DEFAULT, METADATA_KEY, declared, field_default
from .common import CONTEXT_SETTINGS


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
        return click.Argument([name], type=option.type, required=option.required, **given)
    # A help made of the registered problems' texts is made as the command is built.
    text = option.help() if callable(option.help) else option.help
    settings = dict(
        type=option.type,
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
    ``values``), and the files its ``read`` fields name: {field name: path}."""
    fields, reads = {}, {}
    for f, option in declared(cls):
        if option.group:
            fields[f.name] = option.convert(**{m.dest: values.pop(m.dest) for m in option.group})
            continue
        value = values.pop(option.dest or f.name)
        if option.read is not None:
            if value is not None:
                reads[f.name] = value
        elif option.convert is not None:
            fields[f.name] = option.convert(value)
        elif value is not None or field_default(f) is None:
            fields[f.name] = value
    return cls(**fields), reads


def read_files(params, reads: dict, data) -> None:
    """The fields of ``params`` whose flags name files (``reads``, by field, as
    :func:`values_of` gives them), read now that the training ``data`` are."""
    fields = type(params).__dataclass_fields__
    for name, path in reads.items():
        setattr(params, name, fields[name].metadata[METADATA_KEY].read(path, data))
