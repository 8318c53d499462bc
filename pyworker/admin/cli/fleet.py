"""`pyworker workers | capacity | health | pause | resume`, `roles list | show | sync` and
`platforms list | disable | enable`: the workers, the roles they serve, the platforms they reach."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from pyworker import __version__
from pyworker.admin.queries import AdminDatabase
from pyworker.db import REQUIRED_SCHEMA_VERSION
from pyworker.errors import (
    DatabaseUnavailable,
    SchemaMismatch,
    SchemaMissing,
    InvalidInput,
)
from pyworker.admin.output import (
    CAPACITY_COLUMNS,
    Column,
    echo_fields,
    echo_table,
    prints,
    Shown,
    wrapped,
)
from pyworker.admin.cli.tasks import COUNT_COLUMNS, check_role
from pyworker.admin.cli import (
    SharedOptionsGroup,
    pass_db,
)


WORKER_COLUMNS: list[Column] = [
    ("worker", "worker_id"),
    # Every role it serves (v_workers.roles), the first first; an older schema: its one role.
    ("role", lambda row: ",".join(row.get("roles") or [row["role"]])),
    ("host", "host"),
    ("pid", "pid"),
    ("started_at", "started_at"),
    ("last_seen_at", "last_seen_at"),
    ("seen_ago", "last_seen_age"),
    ("state", lambda row: "SILENT" if row["liveness"] == "silent" else row["liveness"]),
    ("tasks", lambda row: ",".join(map(str, row["task_ids"]))),
]


@click.command()
@prints()
@pass_db
def workers(db: AdminDatabase) -> Shown:
    """List the registered workers: when each was last seen, live or silent, and its tasks.

    A worker is SILENT when it has not been heard from for longer than its role's stale
    threshold: probably killed, as it never deregistered. Its tasks stay claimed or running
    until the tick recovers them. A worker of several roles lists them all. With --json, one
    object per worker: last_seen_age and stale_threshold in seconds, liveness ("live" or
    "silent"), task_ids and roles.
    """
    rows = db.workers()
    return Shown(rows, lambda: echo_workers(rows))


def echo_workers(rows: list[dict[str, Any]]) -> None:
    echo_table(rows, WORKER_COLUMNS, empty="no workers registered")
    silent = [row for row in rows if row["liveness"] == "silent"]
    if silent:
        click.echo()
        click.echo(
            wrapped(
                f"{len(silent)} silent worker{'' if len(silent) == 1 else 's'}: not heard from for"
                " longer than the role's stale threshold, probably dead. The tick hands their"
                " tasks back to the pool (`pyworker recover-stale` does it now);"
                f" SELECT deregister_worker('{silent[0]['worker_id']}') removes one from this list."
            )
        )


# Capacity and health


ACTIVE_WORKER_COLUMNS: list[Column] = [
    ("worker", "worker_id"),
    # Every role it serves (v_workers.roles), the first first; an older schema: its one role.
    ("role", lambda row: ",".join(row.get("roles") or [row["role"]])),
    ("host", "host"),
    ("pid", "pid"),
    ("last_seen_at", "last_seen_at"),
    ("task", "task_id"),
    ("task_status", "task_status"),
    ("store", "dispensary_id"),
]

STUCK_TASK_COLUMNS: list[Column] = [
    ("id", "id"),
    ("role", "role"),
    ("store", "dispensary_id"),
    ("status", "status"),
    ("worker", "worker_id"),
    ("attempt", "attempt"),
    ("last_heartbeat_at", "last_heartbeat_at"),
    ("silent_for", "silent_for"),
    ("stale_after", "stale_threshold"),
]


@click.command()
@click.argument("role", required=False)
@prints()
@pass_db
def capacity(db: AdminDatabase, role: str | None) -> Shown:
    """Show each role's backlog, workers, throughput and the workers it takes to drain it.

    A row of v_worker_capacity per role; with ROLE, that role's row alone, as fields. With
    --json, a list of those rows either way (with ROLE, a list of one). An unknown ROLE exits 2.
    Capacity is in slots (a slot runs one task at a time) and in worker processes (one has
    --concurrency slots): the rate is a slot's, the drain estimate counts the live slots, and
    the processes needed are the slots needed over a process's slots. Rates cover the last
    hour: empty (null) when no task of the role completed in it. The autoscaler's document is
    SQL: SELECT worker_capacity('ROLE').
    """
    if role is not None:
        check_role(db, role)
    rows = db.worker_capacity_rows(role)
    if role is not None:
        return Shown(rows, lambda: echo_fields(rows[0]))
    return Shown(rows, lambda: echo_table(rows, CAPACITY_COLUMNS, empty="no roles"))


@click.command()
@click.option(
    "--max-tick-age",
    metavar="INTERVAL",
    help="Attention when the last tick is older than this PostgreSQL interval (default 10 minutes).",
)
@click.option(
    "--max-snapshot-age",
    metavar="INTERVAL",
    help="Attention when a session has held a snapshot longer than this (default 10 minutes).",
)
@prints()
@pass_db
def health(db: AdminDatabase, max_tick_age: str | None, max_snapshot_age: str | None) -> Shown:
    """Check what needs a person (taskpool_health()); exit 1 when something does.

    \b
    The checks:
      stuck_tasks      claimed or running tasks silent past their role's stale threshold
      schedule_tick    schedules enabled, and no tick for longer than --max-tick-age
      schedule_errors  enabled schedules whose last run failed
      open_circuits    platforms whose circuit breaker is open
      paused_roles     paused roles (attention: one with ready tasks waiting)
      disabled_platforms  disabled platforms (attention: one with ready tasks waiting)
      xmin_horizon     a session holding a snapshot longer than --max-snapshot-age

    Each check is printed, one that needs attention with what to do; then the tasks by role and
    status, the active workers and the stuck tasks. With --json, one document:
    {"status": "ok" | "attention", "checks": {NAME: {"status", "detail", "action"}, ...},
    "task_counts": [...], "active_workers": [...], "stuck_tasks": [...]}.

    Exit codes, for a probe or an alert: 0 every check ok; 1 a check needs attention (or the
    database could not be asked); 2 bad usage, such as a malformed interval.
    """
    checks = db.health_checks(max_tick_age, max_snapshot_age)
    attention = [check for check in checks if check["status"] != "ok"]
    report = {
        "status": "attention" if attention else "ok",
        "checks": {
            check["check_name"]: {key: check[key] for key in ("status", "detail", "action")}
            for check in checks
        },
        "task_counts": db.task_counts(),
        "active_workers": db.active_workers(),
        "stuck_tasks": db.stuck_tasks(),
    }
    return Shown(report, lambda: echo_health(checks, attention, report), exit_code=1 if attention else 0)


def echo_health(
    checks: list[dict[str, Any]], attention: list[dict[str, Any]], report: dict[str, Any]
) -> None:
    if attention:
        click.echo(f"health: ATTENTION, {len(attention)} of {len(checks)} checks need a person")
    else:
        click.echo(f"health: ok, all {len(checks)} checks")
    for check in checks:
        marker = "ok" if check["status"] == "ok" else "ATTENTION"
        click.echo(wrapped(f"{check['check_name']}: {check['detail']}", f"{marker:<11}", " " * 11))
        if check["action"]:
            click.echo(wrapped(f"what to do: {check['action']}", " " * 11, " " * 11))
    click.echo()
    click.echo("tasks by role and status:")
    echo_table(report["task_counts"], COUNT_COLUMNS, empty="no tasks")
    click.echo()
    click.echo("active workers (seen in the last 2 minutes):")
    echo_table(report["active_workers"], ACTIVE_WORKER_COLUMNS, empty="none")
    click.echo()
    click.echo("stuck tasks (silent past their role's stale threshold):")
    echo_table(report["stuck_tasks"], STUCK_TASK_COLUMNS, empty="none")


# Pausing roles and disabling platforms


def since(moment: datetime) -> str:
    """A pause's start as the confirmations print it, to the second."""
    return moment.isoformat(sep=" ", timespec="seconds")


@click.command()
@click.argument("role")
@click.option("--reason", metavar="TEXT", help="Why, kept with the pause and shown by health.")
@prints()
@pass_db
def pause(db: AdminDatabase, role: str, reason: str | None) -> Shown:
    """Pause ROLE: no worker is handed its tasks until `pyworker resume ROLE` (pause_role()).

    Enqueues still land, and tasks already claimed or running finish. Pausing a paused role
    changes nothing: it keeps when, by whom and why it was first paused. Prints the pause (with
    --json, the role's row); an unknown ROLE exits 2.
    """
    row = db.pause_role(role, reason)
    why = f": {row['pause_reason']}" if row["pause_reason"] else ""
    return Shown(
        row,
        lambda: click.echo(
            f"role {row['role']} paused since {since(row['paused_at'])} by {row['paused_by']}{why}"
        ),
    )


@click.command()
@click.argument("role")
@prints()
@pass_db
def resume(db: AdminDatabase, role: str) -> Shown:
    """Resume ROLE: its ready tasks are handed out again, and the workers waiting for it woken.

    Resuming a role that is not paused changes nothing. With --json, the role's row; an unknown
    ROLE exits 2.
    """
    row = db.resume_role(role)
    return Shown(row, lambda: click.echo(f"role {row['role']} is not paused: its ready tasks are handed out"))


# Roles: their settings, and the declarations of the handlers applied to them

ROLE_COLUMNS: list[Column] = [
    ("role", "role"),
    ("max_retries", "max_retries"),
    ("stale_threshold", "stale_threshold"),
    ("run_timeout", "run_timeout"),
    ("backoff", lambda row: (
        f"{row['backoff_base']}..{row['backoff_cap']} x{row['backoff_multiplier']} {row['backoff_jitter']}"
    )),
    ("max_payload", "max_payload_bytes"),
    ("store", "requires_store"),
    ("paused_at", "paused_at"),
    ("description", "description"),
]


@click.group(cls=SharedOptionsGroup)
def roles() -> None:
    """List the roles, show one, and apply the roles the handlers declare (sync)."""


@roles.command("list")
@prints(ROLE_COLUMNS, empty="no roles: `pyworker roles sync --handlers MODULE` creates those your handlers declare")
@pass_db
def list_roles(db: AdminDatabase) -> list[dict[str, Any]]:
    """The roles of task_roles by name, with their settings. With --json, every column."""
    return db.role_rows()


@roles.command("show")
@click.argument("role")
@prints()
@pass_db
def show_role(db: AdminDatabase, role: str) -> dict[str, Any]:
    """Every setting of ROLE, and its pause. An unknown ROLE exits 2, naming the roles there are."""
    rows = {row["role"]: row for row in db.role_rows()}
    if role not in rows:
        raise InvalidInput(f"unknown role {role!r}", hint=f"Known roles: {', '.join(rows) or 'none'}.")
    return rows[role]


@roles.command("sync")
@click.option(
    "--handlers",
    "modules",
    multiple=True,
    metavar="MODULE",
    help="Import this module for its @handler declarations (repeatable); the installed packages'"
    " (pyworker.handlers entry points) are read too.",
)
@click.option("--dry-run", is_flag=True, help="Print what would change; change nothing.")
@click.option(
    "--remove-missing",
    is_flag=True,
    help="Remove the roles no handler declares (remove_role), with their finished tasks and schedules;"
    " a role with live tasks or workers is refused unless --force.",
)
@click.option("--force", is_flag=True, help="With --remove-missing: remove a role's live tasks too.")
@prints()
@pass_db
def sync_roles(db: AdminDatabase, modules: tuple[str, ...], dry_run: bool, remove_missing: bool, force: bool) -> Shown:
    """Apply the roles the handlers of MODULE declare: create those the database lacks, update
    the settings that differ, report the roles no handler declares.

    A setting a handler does not name is not declared: a new role takes its default, an existing
    one keeps its value. One transaction: a refused value (exit 2, naming the role and the field)
    changes nothing. Prints each role: created, changed (field: old → new) or unchanged; with
    --dry-run the same, and nothing is written. With --json, a list of {role, action, module,
    fields}.
    """
    from pyworker import handlers
    from pyworker.admin import roles as role_sync

    if force and not remove_missing:
        raise click.UsageError("--force goes with --remove-missing")
    handlers.load(modules)
    declarations = handlers.registry.declarations
    if not declarations:
        raise click.UsageError(
            "no handler declares a role: give the module of your @handler functions with --handlers MODULE"
        )
    changes = role_sync.sync_roles(
        db, declarations, dry_run=dry_run, remove_missing=remove_missing, force=force
    )

    def text() -> None:
        for change in changes:
            click.echo(role_sync.describe(change))
        if dry_run:
            click.echo("dry run: nothing was written")

    return Shown([change.as_json() for change in changes], text)


PLATFORM_COLUMNS: list[Column] = [
    ("platform", "platform"),
    ("enabled", "enabled"),
    ("circuit", "circuit"),
    ("open_until", "open_until"),
    ("per_minute", "requests_per_minute"),
    ("failures", "consecutive_failures"),
    ("disabled_at", "disabled_at"),
    ("disabled_by", "disabled_by"),
    ("reason", "disable_reason"),
]


@click.group(cls=SharedOptionsGroup)
def platforms() -> None:
    """List the platforms, and disable or enable one (no task of a disabled platform is claimed)."""


@platforms.command("list")
@prints(PLATFORM_COLUMNS, empty="no platforms")
@pass_db
def list_platforms(db: AdminDatabase) -> list[dict[str, Any]]:
    """The platforms of v_platforms: enabled or not, their circuit and rate limit. With --json,
    every column."""
    return db.platforms()


@platforms.command("disable")
@click.argument("name")
@click.option("--reason", metavar="TEXT", help="Why, shown by health and the dashboard.")
@prints()
@pass_db
def disable_platform(db: AdminDatabase, name: str, reason: str | None) -> Shown:
    """Disable platform NAME: no task of it is claimed, whatever its role, until it is enabled.

    Enqueues still land, tasks already claimed or running finish. Disabling a disabled platform
    changes nothing. A platform no store, task or governance row names exits 2.
    """
    row = db.disable_platform(name, reason)
    why = f": {row['disable_reason']}" if row["disable_reason"] else ""
    return Shown(
        row,
        lambda: click.echo(
            f"platform {row['platform']} disabled since {since(row['disabled_at'])} by {row['disabled_by']}{why}"
        ),
    )


@platforms.command("enable")
@click.argument("name")
@prints()
@pass_db
def enable_platform(db: AdminDatabase, name: str) -> Shown:
    """Enable platform NAME: its tasks are claimed again (while its circuit is closed).

    Enabling an enabled platform changes nothing. A platform nothing names exits 2.
    """
    row = db.enable_platform(name)
    return Shown(row, lambda: click.echo(f"platform {row['platform']} is enabled: its tasks are handed out"))


@click.command()
@prints()
@pass_db
def version(db: AdminDatabase) -> Shown:
    """Print pyworker's version, the schema version it needs, and the database's when it answers.

    `pyworker --version` prints pyworker's alone, without connecting. Exits 0 whatever the
    database says: a schema too old, missing or unreachable is printed with what to do.
    """
    required = ".".join(map(str, REQUIRED_SCHEMA_VERSION))
    report: dict[str, str | None] = {
        "pyworker": __version__,
        "required_schema": required,
        "database": None,
        "database_schema": None,
        "problem": None,
    }
    try:
        report["database"] = db.where()
        report["database_schema"] = db.schema_version()
        db.check_schema()
    except (DatabaseUnavailable, SchemaMissing, SchemaMismatch) as error:
        report["problem"] = str(error)
    return Shown(report, lambda: echo_version(report))


def echo_version(report: dict[str, str | None]) -> None:
    required = report["required_schema"]
    click.echo(f"pyworker {__version__}")
    click.echo(f"schema required: {required} or a later {REQUIRED_SCHEMA_VERSION[0]}.x")
    if report["database"] is None:
        database = "not reachable"
    else:
        database = report["database"]
        if report["database_schema"] is not None:
            database += f", schema {report['database_schema']}"
    click.echo(f"database: {database}" + (f": {report['problem']}" if report["problem"] else ""))
