"""The options each man page documents are exactly each command's options, and --help
lists every one of them; the README's promise.

The man page's options are parsed from the tags of its OPTIONS section (the line after
each ``.TP``: ``.BI \\-c " C"``, ``.BR \\-h ", " \\-? ", " \\-\\-help``, ``.B \\-\\-double``)
and compared as sets with the command's click options, both ways, per command.
"""

import importlib
import re
from pathlib import Path

import click
import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = {
    "cp_learn": "learn",
    "cp_classify": "classify",
    "ocas_learn": "ocas",
    "sampled_learn": "sampled",
    "asset_learn": "asset",
}

_FLAG = re.compile(r"^--?[A-Za-z0-9#?][A-Za-z0-9-]*$")
_ARG = re.compile(r'"([^"]*)"|(\S+)')


def _roman(text: str) -> str:
    """troff escapes of an argument to plain text: \\- to -, font changes dropped."""
    text = re.sub(r"\\f[BIRP]|\\f\(..|\\f\[[^]]*\]", "", text)
    return text.replace("\\-", "-").replace("\\(en", "-").replace("\\&", "")


def tag_flags(tag_line: str) -> set[str]:
    """The flags a ``.B``/``.BI``/``.BR``/``.IR`` tag line names (its bold words that
    look like options: ``-c``, ``--max-idle``, ``-#``, ``-?``)."""
    macro, _, rest = tag_line.partition(" ")
    if macro not in (".B", ".BI", ".BR", ".IR", ".I"):
        return set()
    flags = set()
    for quoted, bare in _ARG.findall(rest):
        for word in _roman(quoted or bare).replace(",", " ").split():
            if _FLAG.match(word):
                flags.add(word)
    return flags


def man_options(text: str) -> set[str]:
    """Every flag tagged by a .TP entry in the OPTIONS section of a man page."""
    lines = text.splitlines()
    try:
        start = lines.index(".SH OPTIONS")
    except ValueError:
        raise AssertionError("no .SH OPTIONS section") from None
    flags = set()
    for i in range(start + 1, len(lines)):
        if lines[i].startswith(".SH "):
            break
        if lines[i] == ".TP" and i + 1 < len(lines):
            flags |= tag_flags(lines[i + 1])
    return flags


def command_options(command: click.Command, name: str) -> set[str]:
    ctx = click.Context(command, info_name=name, **command.context_settings)
    return {
        flag
        for param in command.get_params(ctx)
        if isinstance(param, click.Option)
        for flag in (*param.opts, *param.secondary_opts)
    }


def help_options(command: click.Command, name: str) -> set[str]:
    """The flags in the option column of the command's --help."""
    text = command.get_help(click.Context(command, info_name=name, **command.context_settings))
    flags = set()
    for line in text.split("Options:", 1)[1].splitlines():
        match = re.match(r"^  (-\S.*?)(?:\s{2,}|$)", line)
        if match:
            for word in match.group(1).replace(",", " ").replace("/", " ").split():
                if _FLAG.match(word):
                    flags.add(word)
    return flags


def commands():
    for name, module in COMMANDS.items():
        yield name, importlib.import_module(f"cpsvm.cli.{module}").command


@pytest.mark.parametrize("name, command", list(commands()))
def test_man_page_documents_exactly_the_options(name, command):
    documented = man_options((ROOT / "man" / f"{name}.1").read_text())
    options = command_options(command, name)
    undocumented, nonexistent = sorted(options - documented), sorted(documented - options)
    assert not undocumented, f"{undocumented} missing from man/{name}.1"
    assert not nonexistent, f"man/{name}.1 documents {nonexistent}, which {name} lacks"


@pytest.mark.parametrize("name, command", list(commands()))
def test_help_lists_every_option(name, command):
    assert help_options(command, name) == command_options(command, name)


def phantom_flags(command: click.Command, name: str, width: int) -> list[str]:
    """Words that open a wrapped line of --help's option texts and look like a flag
    and are not one of its options (a reader takes '-d:-1' at the start of a line for an
    option -d; a wrapped reference to a real option such as '-t 2' is fine)."""
    settings = {**command.context_settings, "terminal_width": width, "max_content_width": width}
    ctx = click.Context(command, info_name=name, **settings)
    options = command.get_help(ctx).split("Options:", 1)[1]
    words = re.findall(r"^ {3,}(-[A-Za-z#?][^\s.,;:)'\"]*)", options, flags=re.M)
    return [word for word in words if word not in command_options(command, name)]


WIDTHS = range(60, 121)  # terminal widths: click wraps --help to min(this, 100)


@pytest.mark.parametrize("name, command", list(commands()))
def test_help_texts_wrap_into_no_phantom_flag(name, command):
    assert {w: found for w in WIDTHS if (found := phantom_flags(command, name, w))} == {}


def test_phantom_flags_are_found():
    # cp_classify's -f text once wrapped into a line starting '-d:-1', read as an option.
    @click.command(context_settings={"max_content_width": 100})
    @click.option(
        "-f",
        type=click.IntRange(0, 1),
        default=1,
        show_default=True,
        help="Output format for binary models: 1 decision value per line; 0 "
        "SVMlight V1.0 format 'd:+1 -d:-1'.",
    )
    def command(f):
        pass

    assert any(phantom_flags(command, "x", width) == ["-d"] for width in WIDTHS)


def test_the_parser_sees_each_entry():
    # The failure the old substring test missed: -t's entry deleted, --trace kept.
    man = (ROOT / "man" / "cp_learn.1").read_text()
    entry = '.TP\n.BI \\-t " type"\n'
    assert man.count(entry) == 1
    assert "-t" in man_options(man)
    assert "-t" not in man_options(man.replace(entry, ""))
    assert "--trace" in man_options(man.replace(entry, ""))
    assert tag_flags('.BR \\-p ", " \\-\\-threads " \\fIn\\fR"') == {"-p", "--threads"}
    assert tag_flags('.BR \\-h ", " \\-? ", " \\-\\-help') == {"-h", "-?", "--help"}
    assert tag_flags('.BI \\-# " n"') == {"-#"}


@pytest.mark.parametrize("name", COMMANDS)
def test_man_page_version_is_the_package_version(name):
    from cpsvm import __version__

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["version"] == __version__
    first = (ROOT / "man" / f"{name}.1").read_text().splitlines()[0]
    assert f'"cpsvm {__version__}"' in first


@pytest.mark.parametrize("name", COMMANDS)
def test_man_page_exit_status_is_the_common_rule(name):
    man = (ROOT / "man" / f"{name}.1").read_text()
    section = man.split(".SH EXIT STATUS\n", 1)[1].split("\n.SH ", 1)[0]
    entries = re.findall(r"^\.TP\n\.B (\d+)\n(.*)$", section, flags=re.M)
    expected = [("0", "success"), ("1", "an input error"), ("2", "a usage error")]
    # Every command: Ctrl-C is one line, exit 130; SIGHUP, SIGQUIT, SIGTERM 128 + their number.
    expected += [("129", "terminated by SIGHUP"), ("130", "interrupted")]
    expected += [("131", "terminated by SIGQUIT"), ("143", "terminated by SIGTERM")]
    assert [code for code, _ in entries] == [code for code, _ in expected]
    for (_, text), (_, words) in zip(entries, expected):
        assert text.startswith(words), (name, text)


def test_every_console_script_has_a_man_page_and_bin_entry():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert set(scripts) == set(COMMANDS)
    for name, module in COMMANDS.items():
        assert scripts[name] == f"cpsvm.cli.{module}:main"
        assert (ROOT / "man" / f"{name}.1").exists()
        assert (ROOT / "bin" / name).exists()


def test_readme_opens_with_the_two_commands():
    head = (ROOT / "README.md").read_text().split("\n\n")[1]
    assert "make demo" in head and "make test" in head


def _flags_section(name: str) -> str:
    text = (ROOT / "man" / f"{name}.1").read_text()
    return text.split(".SH FLAGS ACROSS COMMANDS", 1)[1].split(".SH ", 1)[0]


def test_the_flags_table_is_one_table():
    """The table of which letter means what in which command is the same in every man
    page, and its rows are README.md's."""
    names = [name for name, _ in commands()]
    sections = {name: _flags_section(name) for name in names}
    assert len(set(sections.values())) == 1, sections.keys()
    rows = sections[names[0]].split(".TS", 1)[1].split(".TE", 1)[0].splitlines()[3:]
    man_rows = [
        row.replace("\\-", "-").replace("\\(*e", "ε").replace("\\(*l", "λ").split("\t")
        for row in rows
    ]
    readme = (ROOT / "README.md").read_text().split("| flag |", 1)[1].split("\n\n", 1)[0]
    readme_rows = [
        [cell.strip().strip("`").replace("`", "") or "-" for cell in line.strip("|").split("|")]
        for line in readme.splitlines()[2:]
    ]
    assert man_rows == readme_rows


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_limits_section_follows_the_constants(name):
    """Each man page's LIMITS section states the reading limits as the constants hold
    them (the constants named, their values written)."""
    from cpsvm.io import streams, svmlight
    from cpsvm.models import SCORE_BLOCK_CELLS
    from cpsvm.problems.multiclass.problem import ROW_CLASS_ARRAYS

    text = (ROOT / "man" / f"{name}.1").read_text()
    section = text.split(".SH LIMITS\n", 1)[1].split("\n.SH ", 1)[0]
    assert f"a line longer than {streams.line_limit_text()} (\\fBLINE_LIMIT\\fR" in section
    assert f"a number longer than {svmlight.NUMBER_LIMIT} characters" in section
    assert f"read block ({svmlight.BLOCK_SIZE >> 20} MiB)" in section
    if name in ("cp_learn", "ocas_learn"):
        assert f"({8 * ROW_CLASS_ARRAYS} bytes an example and class)" in section
    if name == "cp_classify":
        assert f"(about {SCORE_BLOCK_CELLS // 10**6} million scores)" in section
