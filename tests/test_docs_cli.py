"""docs/cli.md's command table against the installed `pyworker` command: every command it runs
(a subcommand of a group counts, the group itself not) has a row, and every row names one. A
row is a table row whose first cell starts with `pyworker <command words>` in backticks; the
words that follow in capitals, brackets or dashes (NAME, [ROLE], --version) are its arguments."""

from __future__ import annotations

import re
from importlib.metadata import entry_points

import click
from core_fixtures import REPO_ROOT

CLI_PAGE = REPO_ROOT / "docs" / "cli.md"
ROW = re.compile(r"^\|\s*`pyworker(?P<words>(?: [a-z][a-z-]*)*)(?: [^`]*)?`")


def pyworker_command() -> click.Command:
    (script,) = entry_points(group="console_scripts", name="pyworker")
    return script.load()


def command_paths(command: click.Command, ctx: click.Context, path: tuple[str, ...] = ()) -> set[str]:
    """The space-separated names of every command `command` runs, leaves only."""
    if not isinstance(command, click.Group):
        return {" ".join(path)}
    paths: set[str] = set()
    for name in command.list_commands(ctx):
        sub = command.get_command(ctx, name)
        if sub is not None and not sub.hidden:
            paths |= command_paths(sub, click.Context(sub, info_name=name, parent=ctx), (*path, name))
    return paths


def documented_paths(markdown: str) -> set[str]:
    """The command of each row of the page's tables; a bare `pyworker` (with options) is none."""
    return {row["words"].strip() for line in markdown.splitlines() if (row := ROW.match(line))} - {""}


def test_the_cli_page_has_a_row_for_every_command_and_no_other() -> None:
    group = pyworker_command()
    commands = command_paths(group, click.Context(group, info_name="pyworker"))
    documented = documented_paths(CLI_PAGE.read_text())
    assert (sorted(commands - documented), sorted(documented - commands)) == ([], []), (
        "(commands without a row in docs/cli.md, rows naming no command)"
    )


def test_rows_are_read_as_commands() -> None:
    text = (
        "| `pyworker --version` | v |\n| `pyworker schedules update NAME` | u |\n"
        "| `pyworker capacity [ROLE]` | c |\n| `pyworker prune` | p |\nprose `pyworker counts`\n"
    )
    assert documented_paths(text) == {"schedules update", "capacity", "prune"}
