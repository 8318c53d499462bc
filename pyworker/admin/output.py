"""How the `pyworker` commands print: a table fitted to the terminal, fields, or JSON.

A command returns what it shows and `@prints` prints it, as JSON with --json: commands registered
by other packages (the crawler's, through the `pyworker.commands` entry points) print as the
core's do.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import click
from tabulate import tabulate

from pyworker.db import dump_json

@dataclass
class Shown:
    """What a command shows when a table or fields will not do: `value`, which --json prints,
    `text()`, which prints it for a person, and the command's exit code."""

    value: Any
    text: Callable[[], None]
    exit_code: int = 0


def prints(
    columns: Sequence[Column] = (), *, empty: str = ""
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator of a command that returns what it shows, and takes --json for it.

    The command returns rows (a table of `columns`, or `empty` when there are none), one row (a
    dict: `key: value` lines), or a Shown; --json prints the value as one JSON document.
    """

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def printing(*args: Any, as_json: bool, **kwargs: Any) -> None:
            shown = command(*args, **kwargs)
            value = shown.value if isinstance(shown, Shown) else shown
            if as_json:
                echo_json(value)
            elif isinstance(shown, Shown):
                shown.text()
            elif isinstance(shown, dict):
                echo_fields(shown)
            else:
                echo_table(shown, columns, empty)
            if isinstance(shown, Shown) and shown.exit_code:
                click.get_current_context().exit(shown.exit_code)

        return json_option(printing)

    return decorate


def json_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """The --json flag every operator command takes."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON document instead of a table."
    )(command)


def _json_value(value: Any) -> Any:
    """What dump_json writes for the values it does not know: an interval as its seconds."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def json_text(data: Any) -> str:
    """`data` as indented JSON, numbers with every digit the database holds, intervals in seconds:
    what --json prints, and the dashboard's API serves."""
    return dump_json(data, indent=2, default=_json_value)


def echo_json(data: Any) -> None:
    click.echo(json_text(data))


# Cells longer than this are cut, in every table but a --wide one.
CELL_WIDTH = 60
# Fitting a table to the terminal cuts no text cell narrower than this (or than its header):
# a column cut shorter says too little, better leave it out.
NARROWEST_CELL = 12


def _cell(value: Any, width: int | None = CELL_WIDTH, *, exact: bool = False) -> str:
    """A value as one table cell: JSON compact, text longer than `width` cut (None: never).
    Times and intervals to the second, or with `exact` to the microsecond (times with their zone
    either way)."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        text = value.isoformat(sep=" ", timespec="microseconds" if exact else "seconds")
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, timedelta):
        text = str(value if exact else timedelta(seconds=round(value.total_seconds())))
    elif isinstance(value, (dict, list)):
        text = dump_json(value, default=_json_value)
    else:
        text = str(value)
    return _cut(" ".join(text.split()), width)


def shown(value: Any) -> str:
    """A value as the text a table cell shows, whole: times and intervals to the second, JSON
    compact (the dashboard's pages show values as the CLI's tables do)."""
    return _cell(value, width=None)


def _cut(text: str, width: int | None) -> str:
    return text if width is None or len(text) <= width else text[: width - 1] + "…"


# (header, key) or (header, function of the row)
Column = tuple[str, Any]


@dataclass
class Table:
    """A table laid out for printing, and what fitting it into a width took."""

    lines: list[str]
    # The headers of the columns whose cells were cut to fit, and of those left out (the last).
    shortened: list[str]
    left_out: list[str]


def lay_out_table(
    rows: Iterable[dict[str, Any]],
    columns: Sequence[Column],
    *,
    max_width: int | None = None,
    cell_width: int | None = CELL_WIDTH,
) -> Table:
    """Rows as aligned columns under a header; numbers right-aligned (tabulate's plain format).

    Each column is (header, key) or (header, function of the row). Cells are cut to
    `cell_width`; with `max_width`, the table is fitted into that many characters (see _fit).
    """
    headers = [header for header, _ in columns]
    raw = [
        [source(row) if callable(source) else row.get(source) for _, source in columns]
        for row in rows
    ]
    cells = [[_cell(value, cell_width) for value in values] for values in raw]
    natural = [
        max([len(header)] + [len(line[i]) for line in cells]) for i, header in enumerate(headers)
    ]
    numeric = [
        bool(raw)
        and all(
            isinstance(values[i], (int, float, Decimal)) and not isinstance(values[i], bool)
            or values[i] is None
            for values in raw
        )
        for i in range(len(headers))
    ]
    widths = _fit(headers, natural, numeric, max_width)
    kept = len(widths)
    # tabulate lays the cells out (padded, aligned, two spaces apart); the header goes in as the
    # first row, so that it is aligned as its column is and widened by nothing. Cells are cut to
    # the fitted widths first: tabulate wraps a long cell over lines, where a table row must
    # stay one line.
    laid_out = tabulate(
        [[_cut(text, width) for text, width in zip(texts, widths)] for texts in [headers, *cells]],
        tablefmt="plain",
        colalign=["right" if numeric[i] else "left" for i in range(kept)],
        disable_numparse=True,
    )
    return Table(
        lines=[line.rstrip() for line in laid_out.split("\n")],
        shortened=[headers[i] for i in range(kept) if widths[i] < natural[i]],
        left_out=headers[kept:],
    )


def _fit(
    headers: list[str], natural: list[int], numeric: list[bool], max_width: int | None
) -> list[int]:
    """The widths of the columns that fit into `max_width` (the first ones, all when it is None).

    The widest text cells are cut first, down to NARROWEST_CELL or their header's width; the
    first column, which names the row, and numbers are never cut. When that is not enough, the
    last columns are left out.
    """
    if max_width is None:
        return natural
    floors = [
        width if is_number or i == 0 else min(width, max(len(header), NARROWEST_CELL))
        for i, (header, width, is_number) in enumerate(zip(headers, natural, numeric))
    ]

    def total(widths: list[int]) -> int:
        return sum(widths) + 2 * (len(widths) - 1)

    kept = len(natural)
    while kept > 1 and total(floors[:kept]) > max_width:
        kept -= 1

    def under(ceiling: int) -> list[int]:
        return [max(floor, min(width, ceiling)) for width, floor in zip(natural[:kept], floors)]

    ceiling = max(natural[:kept])
    while ceiling > 0 and total(under(ceiling)) > max_width:
        ceiling -= 1
    return under(ceiling)


def render_table(rows: Iterable[dict[str, Any]], columns: Sequence[Column]) -> str:
    """The table at its natural width, fitted to none (for a log or a file)."""
    return "\n".join(lay_out_table(rows, columns).lines)


def terminal_width() -> int | None:
    """The width tables are fitted to: $COLUMNS, else the terminal's; None when stdout is a pipe
    or a file and $COLUMNS is not set (the table goes whole, for grep and friends)."""
    if "COLUMNS" not in os.environ and not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size().columns


def wrapped(text: str, first_indent: str = "", indent: str = "") -> str:
    """Prose in lines of at most 79 characters, commands and names kept whole."""
    return textwrap.fill(
        text,
        width=79,
        initial_indent=first_indent,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def echo_table(rows: list[dict[str, Any]], columns: Sequence[Column], empty: str) -> None:
    """The rows as a table fitted to the terminal (whole with --wide), or `empty` if there are
    none. What fitting it cut or left out is said on stderr."""
    if not rows:
        click.echo(empty)
        return
    # --wide is the CLI's setting (the root context's object); outside a command, never.
    ctx = click.get_current_context(silent=True)
    wide = ctx is not None and bool(getattr(ctx.find_root().obj, "wide", False))
    max_width = None if wide else terminal_width()
    table = lay_out_table(
        rows, columns, max_width=max_width, cell_width=None if wide else CELL_WIDTH
    )
    click.echo("\n".join(table.lines))
    if table.shortened or table.left_out:
        cuts = [
            f"{what}: {', '.join(headers)}"
            for what, headers in (("cut short", table.shortened), ("left out", table.left_out))
            if headers
        ]
        click.echo(
            f"(fitted to {max_width} columns, {'; '.join(cuts)}: --wide prints the table whole,"
            " --json gives every field)",
            err=True,
        )


def echo_fields(row: dict[str, Any]) -> None:
    """One `key: value` line per field, values aligned and whole: times to the microsecond."""
    width = max(len(key) for key in row) + 1
    for key, value in row.items():
        text = _cell(value, width=None, exact=True)
        click.echo(f"{key + ':':<{width}} {text}".rstrip())


def echo_page(
    rows: list[dict[str, Any]],
    columns: Sequence[Column],
    *,
    total: int,
    page: int,
    limit: int,
    noun: str,
) -> None:
    """A page of a list as a table, then which rows of how many it shows."""
    pages = max(1, -(-total // limit))
    if not rows:
        click.echo(
            f"no {noun}s on page {page}: {counted(total, noun)} in all,"
            f" {counted(pages, 'page')} of {limit}"
        )
        return
    echo_table(rows, columns, empty="")
    first = (page - 1) * limit + 1
    more = f"; --page {page + 1} for more" if page < pages else ""
    click.echo(
        f"{first}-{first + len(rows) - 1} of {counted(total, noun)} (page {page} of {pages}{more})"
    )


def counted(number: int, noun: str) -> str:
    """`1 task`, `2 tasks`."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


# The columns of v_worker_capacity (`pyworker capacity`, the demo's report): a slot runs one task
# at a time, a worker process has --concurrency slots.
CAPACITY_COLUMNS: list[Column] = [
    ("role", "role"),
    ("paused", "paused"),
    ("pending", "pending_tasks"),
    ("ready", "ready_tasks"),
    ("running", "running_tasks"),
    ("processes", "active_processes"),
    ("slots", "active_slots"),
    ("per_slot_hour", "tasks_per_slot_hour"),
    ("hours_to_drain", "estimated_hours_to_drain"),
    ("slots_1h", "slots_needed_for_1_hour"),
    ("slots_4h", "slots_needed_for_4_hours"),
    ("slots_8h", "slots_needed_for_8_hours"),
    ("processes_1h", "processes_needed_for_1_hour"),
    ("processes_4h", "processes_needed_for_4_hours"),
    ("processes_8h", "processes_needed_for_8_hours"),
    ("oldest_ready", "oldest_ready_age"),
    ("arrived_1h", "arrivals_last_hour"),
    ("done_1h", "completed_last_hour"),
    ("failed_1h", "failed_attempts_last_hour"),
    ("failure_rate", "failure_rate"),
]
