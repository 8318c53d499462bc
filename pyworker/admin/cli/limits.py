"""`pyworker limits list | set | clear`: caps on how many tasks run at once per key, fleet-wide
(concurrency_limits: per store, platform, proxy, role or a key a task names)."""

from __future__ import annotations

from typing import Any

import click

from pyworker.admin.queries import AdminDatabase
from pyworker.admin.output import Column, Shown, prints
from pyworker.admin.cli import SharedOptionsGroup, pass_db

KINDS = ("store", "platform", "proxy", "role", "key")

LIMIT_COLUMNS: list[Column] = [
    ("kind", "kind"),
    ("key", "key"),
    ("max_running", "max_running"),
    ("running", "running"),
    ("limit", "limit_source"),
]


@click.group(cls=SharedOptionsGroup)
def limits() -> None:
    """Caps on how many tasks run at once per key, fleet-wide: list, set or clear one.

    A kind is store (one task at a time, always), platform, proxy, role or key (the key a task
    names in its concurrency_key header; 'proxy:NAME' is proxy NAME). KEY '*' is the kind's
    default: every key of the kind without a limit of its own."""


@limits.command("list")
@prints(LIMIT_COLUMNS, empty="no limits")
@pass_db
def list_limits(db: AdminDatabase) -> list[dict[str, Any]]:
    """Each limit, and each key running under its kind's default, with how many of its tasks are
    claimed or running now (a default's row: the sum over its keys)."""
    return db.concurrency_limits()


@limits.command("set")
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("key")
@click.argument("max_running", type=int)
@prints()
@pass_db
def set_limit(db: AdminDatabase, kind: str, key: str, max_running: int) -> Shown:
    """At most MAX_RUNNING tasks of KIND KEY run at once, across every worker ('*': every key of
    KIND without its own limit). Tasks that run already finish; a limit below 1, an empty key or
    an unknown role exits 2 and changes nothing."""
    row = db.set_concurrency_limit(kind, key, max_running)
    return Shown(
        row,
        lambda: click.echo(f"{row['kind']} {row['key']}: at most {row['max_running']} running at once"),
    )


@limits.command("clear")
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("key")
@prints()
@pass_db
def clear_limit(db: AdminDatabase, kind: str, key: str) -> Shown:
    """Lift the limit of KIND KEY (its kind's default, if one is set, then holds it). Clearing a
    limit that is not set changes nothing."""
    cleared = db.clear_concurrency_limit(kind, key)
    text = f"{kind} {key}: limit cleared" if cleared else f"{kind} {key} had no limit of its own"
    return Shown({"kind": kind, "key": key, "cleared": cleared}, lambda: click.echo(text))
