"""`pyworker schedules list | create | update | delete | trigger`, `cron install | uninstall |
status` and `scheduler`: the schedules, and the tick that runs them (pg_cron or the scheduler
loop)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import click

from pyworker.admin import cron as cron_jobs
from pyworker.admin.queries import AdminDatabase
from pyworker.admin.output import (
    Column,
    counted,
    echo_fields,
    echo_table,
    prints,
    Shown,
)
from pyworker.admin.cli.retention import describe_interval
from pyworker.admin.cli.tasks import JsonValue
from pyworker.admin.cli import (
    Settings,
    SharedOptionsGroup,
    pass_db,
    pass_settings,
)


# Schedules and planning

SCHEDULE_COLUMNS: list[Column] = [
    ("name", "name"),
    ("role", "role"),
    ("kind", "kind"),
    ("enabled", "enabled"),
    ("every", lambda row: row["cron"] or describe_interval(row["every"])),
    ("time_zone", "time_zone"),
    ("priority", "priority"),
    ("next_run_at", "next_run_at"),
    ("last_run_at", "last_run_at"),
    ("last_tasks", "last_task_count"),
    ("last_error", "last_error"),
]


@click.group(cls=SharedOptionsGroup)
def schedules() -> None:
    """List, change and run the recurring schedules (the tick runs the due ones)."""


@schedules.command("list")
@prints(SCHEDULE_COLUMNS, empty="no schedules")
@pass_db
def list_schedules(db: AdminDatabase) -> list[dict[str, Any]]:
    """List the schedules by name, with when each runs next and how its last run went."""
    return db.schedules()


def schedule_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The fields of a schedule, as create and update take them (SQL checks each value)."""
    options = [
        click.option(
            "--kind", type=click.Choice(["single", "per_store", "day_plan"]),
            help="single: one task a run; per_store: one per active store; day_plan: --planner plans the day.",
        ),
        click.option(
            "--every", metavar="INTERVAL",
            help="Run every INTERVAL of elapsed time, 1 minute to 365 days ('15 minutes', '2h', '1 day').",
        ),
        click.option(
            "--cron", metavar="EXPR",
            help="Run at the slots of a five-field cron expression ('*/15 * * * *', '0 7 * * mon-fri', @daily).",
        ),
        click.option(
            "--interval-hours", type=int, metavar="N",
            help="Run every N hours (1..8760): --every in hours.",
        ),
        click.option(
            "--time-zone", metavar="ZONE",
            help="IANA time zone of the cron slots and day plans (UTC if never set).",
        ),
        click.option(
            "--payload", type=JsonValue(),
            help="Payload of its tasks, a JSON object.",
        ),
        click.option(
            "--state", "state_code", metavar="XX",
            help="Only stores of this state (two capital letters; '' clears it).",
        ),
        click.option(
            "--priority", type=int, metavar="N",
            help="Priority of its tasks (-100..100).",
        ),
        click.option(
            "--batches", type=int, metavar="N",
            help="Batches of a day plan (1..1440).",
        ),
        click.option(
            "--planner", metavar="FUNCTION",
            help="A day plan's SQL function planner(schedule, day) → integer.",
        ),
        click.option(
            "--next-run-at", metavar="TIME",
            help="When it is next due (a timestamp PostgreSQL reads).",
        ),
        click.option("--enable", is_flag=True, help="Turn the schedule on."),
        click.option("--disable", is_flag=True, help="Turn the schedule off."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def schedule_fields(enable: bool, disable: bool, **fields: Any) -> dict[str, Any]:
    """The options of schedule_options as the fields of create_schedule and update_schedule."""
    if enable and disable:
        raise click.UsageError("give --enable or --disable, not both")
    return {**fields, "enabled": True if enable else False if disable else None}


@schedules.command("create")
@click.argument("name")
@click.option("--role", required=True, metavar="ROLE", help="The role of its tasks.")
@schedule_options
@prints()
@pass_db
def create_schedule(db: AdminDatabase, name: str, role: str, **options: Any) -> dict[str, Any]:
    """Add schedule NAME of ROLE, on one cadence: --every, --interval-hours or --cron.

    An every schedule is due at once, a cron schedule at its next slot, a day plan at today's local
    midnight, unless --next-run-at says otherwise. Prints the schedule. A bad value exits 2 naming
    it, and nothing is written.
    """
    return db.create_schedule(name, role, **schedule_fields(**options))


@schedules.command("update")
@click.argument("name")
@schedule_options
@prints()
@pass_db
def update_schedule(db: AdminDatabase, name: str, **options: Any) -> dict[str, Any]:
    """Change schedule NAME: any of its fields; options left out keep their value.

    One cadence at a time: --cron drops the interval, --every or --interval-hours drops the cron. A
    new cadence or time zone moves the next run (an interval counts from the last run, never
    earlier than now; cron to its next slot) unless --next-run-at is given. Prints the schedule.
    An unknown NAME exits 2, naming the schedules there are, as does a bad value.
    """
    fields = schedule_fields(**options)
    if all(value is None for value in fields.values()):
        raise click.UsageError("give at least one field to change (see --help)")
    return db.update_schedule(name, **fields)


@schedules.command("delete")
@click.argument("name")
@prints()
@pass_db
def delete_schedule(db: AdminDatabase, name: str) -> Shown:
    """Delete schedule NAME; the tasks it made stay. An unknown NAME exits 2."""
    row = db.delete_schedule(name)
    return Shown(row, lambda: click.echo(f"schedule {row['name']} deleted"))


@schedules.command("trigger")
@click.argument("name")
@prints()
@pass_db
def trigger_schedule(db: AdminDatabase, name: str) -> Shown:
    """Run schedule NAME now, enabled or not; its next regular run stays where it was.

    Prints how many tasks it created (with --json, the schedule). An unknown NAME exits 2.
    """
    row = db.trigger_schedule(name)
    return Shown(row, lambda: click.echo(f"schedule {row['name']} ran: {counted(row['last_task_count'], 'task')} created"))


# The tick: pg_cron or the scheduler loop


@click.group(cls=SharedOptionsGroup)
def cron() -> None:
    """Run the tick (tick_schedules()) every minute with pg_cron.

    The job is named taskpool_tick:<database>, one per taskpool database on the server. It goes
    into this database when pg_cron is installed here, else into pg_cron's database
    (cron.database_name) with cron.schedule_in_database. Without pg_cron, run
    `pyworker scheduler` instead.
    """


@cron.command("install")
@prints()
@pass_db
def cron_install(db: AdminDatabase) -> Shown:
    """Schedule the tick every minute; again, and it is still one job.

    Exits 1 when pg_cron is not loaded on the server, or not installed in its database.
    """
    installed = cron_jobs.install(db)
    job = installed["job"]
    where = (
        "" if installed["cron_database"] == installed["database"]
        else f" (a job of pg_cron's database {installed['cron_database']})"
    )
    return Shown(installed, lambda: click.echo(
        f"pg_cron job {installed['job_name']} (id {job['jobid']}) runs"
        f" `{job['command']}` every minute in {installed['database']}{where}"
    ))


@cron.command("uninstall")
@prints()
@pass_db
def cron_uninstall(db: AdminDatabase) -> Shown:
    """Remove the tick's job. With no job (or no pg_cron), there is nothing to do: exit 0."""
    removed = cron_jobs.uninstall(db)
    if removed["removed"] is not None:
        said = f"removed pg_cron job {removed['job_name']} (id {removed['removed']})"
    elif "reason" in removed:
        said = f"no pg_cron job {removed['job_name']} to remove: {removed['reason']}"
    else:
        said = f"no pg_cron job {removed['job_name']}: nothing to remove"
    return Shown(removed, lambda: click.echo(said))


CRON_RUN_COLUMNS: list[Column] = [
    ("run", "runid"),
    ("status", "status"),
    ("start_time", "start_time"),
    ("end_time", "end_time"),
    ("message", "return_message"),
]


@cron.command("status")
@click.option(
    "--runs",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    metavar="N",
    help="Show the last N runs.",
)
@prints()
@pass_db
def cron_status(db: AdminDatabase, runs: int) -> Shown:
    """Show the tick's job (schedule, command, database, active) and its last runs.

    Not installed: says so (exit 0; with --json, "job" is null). Exits 1 without pg_cron.
    """
    report = cron_jobs.status(db, runs)
    return Shown(report, lambda: echo_cron_status(report))


def echo_cron_status(report: dict[str, Any]) -> None:
    job = report["job"]
    if job is None:
        click.echo(
            f"no pg_cron job {report['job_name']}: run `pyworker cron install` (or"
            " `pyworker scheduler`)"
        )
        return
    echo_fields({**job, "cron_database": report["cron_database"]})
    click.echo()
    if report["runs"]:
        click.echo("last runs:")
        echo_table(report["runs"], CRON_RUN_COLUMNS, empty="none")
    else:
        click.echo("last runs: none yet (pg_cron starts it at the next minute)")


@click.command()
@click.option(
    "--interval-seconds",
    type=click.IntRange(min=1),
    default=60,
    show_default=True,
    metavar="N",
    help="Tick every N seconds (the first tick is at once).",
)
@click.option(
    "--once",
    is_flag=True,
    help="Tick once and exit, retrying nothing: for a cron job that runs it every minute"
    " (a Kubernetes CronJob).",
)
@pass_settings
def scheduler(settings: Settings, interval_seconds: int, once: bool) -> None:
    """Run the tick (tick_schedules()) on a loop, where pg_cron is not available.

    It recovers stale tasks and runs the due schedules, logging each tick that did something
    (in --log-format, tagged with --worker-id). Several schedulers, or a scheduler and pg_cron,
    may tick at once: each due schedule still runs once. A lost connection is retried;
    SIGTERM or SIGINT stop it at once (exit 0). With --once: one tick, exit 0 once it ran, 1
    when it could not (no database, no schema).
    """
    # Imported here: the other commands need none of the loop's machinery.
    scheduler_module = importlib.import_module("pyworker.admin.scheduler")
    code = scheduler_module.run_scheduler(
        settings.database_url,
        interval_seconds,
        settings.worker["worker_id"],
        settings.worker["log_format"],
        settings.worker["log_level"],
        once,
        pooled=settings.pooled,
    )
    click.get_current_context().exit(code)
