"""Every flag of every command is in its --help and its man page; the README's promise."""

import importlib
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {"cp_learn": "learn", "cp_classify": "classify", "ocas_learn": "ocas",
            "sampled_learn": "sampled", "asset_learn": "asset"}


def implemented():
    for name, module in COMMANDS.items():
        command = importlib.import_module(f"cpsvm.cli.{module}").command
        if command.help and "Not implemented yet" in command.help:
            continue
        yield name, command


@pytest.mark.parametrize("name, command", list(implemented()))
def test_every_flag_documented(name, command):
    man = (ROOT / "man" / f"{name}.1").read_text()
    help_text = command.get_help(click.Context(command, info_name=name))
    for param in command.params:
        if not isinstance(param, click.Option):
            continue
        for flag in param.opts:
            assert flag in help_text, (name, flag)
            assert flag.replace("-", "\\-") in man, f"{flag} missing from man/{name}.1"


def test_every_console_script_has_a_man_page_and_bin_entry():
    for name in COMMANDS:
        assert (ROOT / "man" / f"{name}.1").exists()
        assert (ROOT / "bin" / name).exists()


def test_readme_opens_with_the_two_commands():
    head = (ROOT / "README.md").read_text().split("\n\n")[1]
    assert "make demo" in head and "make test" in head
