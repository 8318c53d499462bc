"""`pyworker prune` and `pyworker retention list | set`: finished tasks and old rows deleted, by
age or by policy."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import click

from pyworker.admin.queries import AdminDatabase
from pyworker.admin.output import (
    Column,
    counted,
    echo_table,
    prints,
    Shown,
)
from pyworker.admin.cli import (
    SharedOptionsGroup,
    pass_db,
)


def describe_interval(interval: timedelta) -> str:
    """An interval as the tables show it, in its largest whole unit: "1 day", "7 days", "12 h",
    "30 min" or "45 s" (a retention policy's keep, a schedule's every)."""
    seconds = round(interval.total_seconds())
    if seconds == 86400:
        return "1 day"
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


RETENTION_RUN_COLUMNS: list[Column] = [
    ("policy", "policy"),
    ("pruned", "pruned"),
    ("error", "error"),
]

RETENTION_DRY_RUN_COLUMNS: list[Column] = [
    ("policy", "policy"),
    ("enabled", "enabled"),
    ("keep", lambda row: describe_interval(row["keep"])),
    ("would_prune", "would_prune"),
    ("error", "error"),
]


@click.command()
@click.option(
    "--older-than",
    metavar="INTERVAL",
    help="Instead of the policies: delete the finished tasks older than this PostgreSQL interval,"
    " e.g. '7 days' or '12 hours'.",
)
@click.option(
    "--max-tasks",
    type=click.IntRange(min=1),
    metavar="N",
    help="With --older-than: delete at most N, oldest first.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    metavar="N",
    help="With --older-than: delete N at a time, each batch in its own transaction (default 1000).",
)
@click.option(
    "--max-batches",
    type=click.IntRange(min=1),
    metavar="N",
    help="With the policies: stop after N rounds of a batch per policy.",
)
@click.option(
    "--max-seconds",
    type=click.FloatRange(min=0, min_open=True),
    metavar="S",
    help="With the policies: stop after the round that passes S seconds.",
)
@click.option(
    "--pause-ratio",
    type=click.FloatRange(0, 100),
    metavar="R",
    help="With the policies: after each round, pause R times as long as it took, leaving the server"
    " to the workers (default 3; 0: flat out).",
)
@click.option("--dry-run", is_flag=True, help="Count what would be deleted; delete nothing.")
@prints()
@pass_db
def prune(
    db: AdminDatabase,
    older_than: str | None,
    max_tasks: int | None,
    batch_size: int | None,
    max_batches: int | None,
    max_seconds: float | None,
    pause_ratio: float | None,
    dry_run: bool,
) -> Shown:
    """Apply the retention policies now, or delete finished tasks older than --older-than.

    \b
    Without --older-than, every enabled policy of retention_policies (`pyworker retention list`)
    is applied until nothing is left to prune, a round of one batch per policy a transaction
    (apply_retention_in_batches), pausing after each round --pause-ratio times as long as it took
    so that the workers keep the server, and it prints what went per policy; a policy that failed says
    why and makes the exit code 1. The tick applies a batch of each policy every minute anyway:
    this is for a backlog, or for a deployment without a tick. --dry-run prints what each policy
    would delete now (count_retention()). With --json, {"policies": [{"policy", "pruned",
    "error"}]}, or with --dry-run {"dry_run": true, "policies": [{"policy", "enabled", "keep",
    "would_prune", "error"}]}.

    \b
    With --older-than, finished tasks (and their attempt history) finished longer ago than that
    go, whatever their status, oldest first, in batches (prune_tasks_in_batches): an interrupted
    prune keeps what it deleted. Prints how many went (with --json, {"pruned": N}); with
    --dry-run, how many would go ({"would_prune": N}). Pending, claimed and running tasks are
    never deleted either way.
    """
    if older_than is None:
        if max_tasks is not None or batch_size is not None:
            raise click.UsageError("--max-tasks and --batch-size go with --older-than")
        return apply_retention(db, max_batches, max_seconds, 3 if pause_ratio is None else pause_ratio, dry_run)
    if max_batches is not None or max_seconds is not None or pause_ratio is not None:
        raise click.UsageError(
            "--max-batches, --max-seconds and --pause-ratio go with the policies, not --older-than"
        )
    if dry_run:
        would_prune = db.count_prunable_tasks(older_than)
        if max_tasks is not None:
            would_prune = min(would_prune, max_tasks)
        return Shown(
            {"would_prune": would_prune},
            lambda: click.echo(f"would prune {counted(would_prune, 'task')} (dry run: nothing deleted)"),
        )
    pruned = db.prune_tasks_in_batches(older_than, batch_size or 1000, max_tasks)
    return Shown({"pruned": pruned}, lambda: click.echo(f"pruned {counted(pruned, 'task')}"))


def apply_retention(
    db: AdminDatabase, max_batches: int | None, max_seconds: float | None, pause_ratio: float, dry_run: bool
) -> Shown:
    """`prune` without --older-than: the policies applied, or counted with --dry-run."""
    if dry_run:
        rows = db.count_retention()

        def show_counts() -> None:
            echo_table(rows, RETENTION_DRY_RUN_COLUMNS, empty="no retention policies")
            total = sum(row["would_prune"] or 0 for row in rows if row["enabled"])
            click.echo(f"would prune {counted(total, 'row')} (dry run: nothing deleted)")

        return Shown({"dry_run": True, "policies": rows}, show_counts)
    pruned = db.apply_retention_in_batches(max_batches, max_seconds, pause_ratio)
    rows = [{"policy": policy, **outcome} for policy, outcome in sorted(pruned.items())]
    failed = [row for row in rows if row["error"] is not None]

    def show_pruned() -> None:
        echo_table(rows, RETENTION_RUN_COLUMNS, empty="no retention policy enabled")
        click.echo(f"pruned {counted(sum(row['pruned'] for row in rows), 'row')}")
        if failed:
            click.echo(f"{len(failed)} of {len(rows)} policies failed: see their error", err=True)

    return Shown({"policies": rows}, show_pruned, exit_code=1 if failed else 0)


RETENTION_POLICY_COLUMNS: list[Column] = [
    ("name", "name"),
    ("enabled", "enabled"),
    ("keep", lambda row: describe_interval(row["keep"])),
    ("statuses", lambda row: ",".join(row["statuses"]) if row["statuses"] else ""),
    ("batch", "batch_size"),
    ("last_run_at", "last_run_at"),
    ("last_pruned", "last_pruned"),
    ("pruned_total", "pruned_total"),
    ("backlog", "backlog"),
    ("behind_since", "behind_since"),
    ("last_error", "last_error"),
    ("what", "description"),
]


@click.group(cls=SharedOptionsGroup)
def retention() -> None:
    """List and change the retention policies (the tick applies them; `pyworker prune` now)."""


@retention.command("list")
@prints(RETENTION_POLICY_COLUMNS, empty="no retention policies")
@pass_db
def list_retention(db: AdminDatabase) -> list[dict[str, Any]]:
    """List the retention policies: what each deletes after how long, how its last run went, and
    whether it keeps up (backlog: rows left due; behind_since: since when runs end with rows left).

    With --json, the retention_policies rows (keep in seconds).
    """
    return db.retention_policies()


@retention.command("set")
@click.argument("name")
@click.option("--keep", metavar="INTERVAL", help="Keep rows this long (a PostgreSQL interval, e.g. '14 days').")
@click.option("--enable/--disable", "enabled", default=None, help="Apply the policy, or not.")
@click.option(
    "--batch-size", type=int, metavar="N", help="Delete at most N rows a batch (1 to 100000): what each tick deletes."
)
@click.option(
    "--statuses",
    metavar="S[,S...]",
    help="For a task policy: the finished statuses it prunes (completed, failed, cancelled).",
)
@prints()
@pass_db
def set_retention(
    db: AdminDatabase,
    name: str,
    keep: str | None,
    enabled: bool | None,
    batch_size: int | None,
    statuses: str | None,
) -> dict[str, Any]:
    """Change retention policy NAME; options left out keep their value. Prints the policy.

    An unknown NAME exits 2, naming the policies there are, as does a bad value.
    """
    if keep is None and enabled is None and batch_size is None and statuses is None:
        raise click.UsageError("give at least one of --keep, --enable/--disable, --batch-size, --statuses")
    return db.set_retention_policy(
        name,
        keep=keep,
        enabled=enabled,
        batch_size=batch_size,
        statuses=[status.strip() for status in statuses.split(",")] if statuses is not None else None,
    )
