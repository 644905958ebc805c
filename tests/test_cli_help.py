"""Every command's --help shows what a user types (NAME=PATH, N, FILE, 3%), never a Python type name."""

import re

import pytest
import typer
from typer.testing import CliRunner

from pgolab.cli import app

COMMANDS = sorted(typer.main.get_command(app).commands)
# What typer prints for an annotation where no metavar is given, and a %-escape that shows as is.
PYTHON_TYPES = re.compile(r"list\[|<(bool|str|int|float|path|text|integer)>|%%", re.IGNORECASE)


def help_of(*args: str) -> str:
    # Wide, so that no name is folded over two lines and slips past the pattern.
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "250", "TERMINAL_WIDTH": "250"})
    assert result.exit_code == 0, result.output
    return result.output


def test_every_command_is_checked():
    assert {"build", "bench", "matrix", "report", "source", "builds"} <= set(COMMANDS)


SUBCOMMANDS = [(group, sub) for group, cmd in typer.main.get_command(app).commands.items()
               for sub in getattr(cmd, "commands", {})]     # pgolab profile export, ...


@pytest.mark.parametrize("command", ["", *COMMANDS, *(" ".join(pair) for pair in SUBCOMMANDS)])
def test_help_names_no_python_type(command):
    text = help_of(*command.split())
    found = sorted({m.group(0) for m in PYTHON_TYPES.finditer(text)})
    assert not found, f"pgolab {command} --help shows {found}:\n{text}"


def test_options_show_what_a_user_types():
    bench = help_of("bench")
    for shown in ("--binary", "NAME=PATH"), ("--target-ci", "N%"), ("--measure", "qps,cost"), ("--store", "FILE"):
        assert re.search(rf"{re.escape(shown[0])}\s+{re.escape(shown[1])}\s", bench), shown
    assert "3%" in bench
    build = help_of("build")
    assert re.search(r"--train\s+LOADS\s", build) and re.search(r"--jobs\s+-j\s+N\s", build)
    assert re.search(r"--json\s{2,}print", build)   # a flag shows no value at all
