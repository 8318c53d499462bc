"""`pyworker enqueue | list | show | counts | recover-stale | cancel | retry | tasks`: the tasks, one
at a time or by filter, completed or deleted by hand, and their changes as they happen."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any, BinaryIO

import click

from pyworker.admin.queries import AdminDatabase
from pyworker.db import dump_json, load_exact_json
from pyworker.errors import (
    InvalidInput,
    NotFound,
    TaskpoolError,
)
from pyworker.admin.output import (
    Column,
    counted,
    echo_fields,
    echo_page,
    echo_table,
    prints,
    Shown,
)
from pyworker.admin.cli import Settings, pass_db, pass_settings
from pyworker.admin.task_changes import follow_task_changes, follower_name

# The task states, as worker_tasks' status CHECK allows them (for `list --status`).
TASK_STATUSES = ("pending", "claimed", "running", "completed", "failed", "cancelled")

# enqueue_tasks takes at most 10000 specs a call; a file goes in batches of this many.
ENQUEUE_BATCH = 1000


COUNT_COLUMNS: list[Column] = [("role", "role"), ("status", "status"), ("count", "tasks")]

ENQUEUED_COLUMNS: list[Column] = [
    ("id", "id"),
    ("role", "role"),
    ("store", "dispensary_id"),
    ("status", "status"),
    ("scheduled_for", "scheduled_for"),
]

TASK_COLUMNS: list[Column] = [
    ("id", "id"),
    ("role", "role"),
    ("store", "dispensary_id"),
    ("status", "status"),
    ("priority", "priority"),
    ("attempt", "attempt"),
    ("retries", lambda row: f"{row['retry_count']}/{row['max_retries']}"),
    ("scheduled_for", "scheduled_for"),
    ("worker", "worker_id"),
    ("error", "error_message"),
]

SPEC_RUN_COLUMNS: list[Column] = [
    ("id", "id"),
    ("status", "status"),
    ("created_at", "created_at"),
    ("completed_at", "completed_at"),
    ("in_history", "in_history"),
    ("error", "error_message"),
]

ATTEMPT_COLUMNS: list[Column] = [
    ("attempt", "attempt"),
    ("worker", "worker_id"),
    ("claimed_at", "claimed_at"),
    ("started_at", "started_at"),
    ("last_heartbeat_at", "last_heartbeat_at"),
    ("ended_at", "ended_at"),
    ("outcome", "outcome"),
    ("error", "error_message"),
]


# Operator commands


class JsonValue(click.ParamType):
    """Any JSON text, parsed on the client (the database checks what it must be).

    Numbers with a fraction or an exponent (or too many digits for an int) are read as Decimal,
    not float, so they reach the database as written (jsonb keeps every digit; a double would not).
    """

    name = "json"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return load_exact_json(value)
        except (ValueError, RecursionError) as error:
            self.fail(f"not valid JSON: {json_error(error)}", param, ctx)


def json_error(error: ValueError | RecursionError) -> str:
    """Why JSON text could not be read, in a few words."""
    return "nested too deeply" if isinstance(error, RecursionError) else str(error)


# enqueue_tasks names a bad spec by its index in the batch: "tasks[3]: unknown role 'x'".
_SPEC_INDEX = re.compile(r"^tasks\[(\d+)\]: ")


def _enqueue_batch(
    db: AdminDatabase, specs: list[dict[str, Any]], line_numbers: list[int] | None, done: int
) -> list[dict[str, Any]]:
    """enqueue_tasks for one batch, its errors naming the file line (or, for one task, nothing)."""
    try:
        return db.enqueue_tasks(specs)
    except TaskpoolError as error:
        message = error.args[0] if error.args else str(error)
        match = _SPEC_INDEX.match(message)
        if match is None:
            raise
        reason = message[match.end() :]
        if line_numbers is None:
            raise type(error)(reason, hint=error.hint) from error
        line = line_numbers[int(match.group(1))]
        reason = f"line {line}: {reason}"
        if done:
            reason += (
                f"; the {done} tasks before line {line_numbers[0]} were enqueued,"
                f" none from line {line_numbers[0]} on"
            )
        raise type(error)(reason, hint=error.hint) from error


def _enqueue_file(
    db: AdminDatabase, specs: list[Any], line_numbers: list[int]
) -> list[dict[str, Any]]:
    """enqueue_tasks for a file's specs, ENQUEUE_BATCH at a time, with a progress bar on stderr
    when there is more than one batch and stderr is a terminal."""
    tasks: list[dict[str, Any]] = []
    with click.progressbar(
        length=len(specs),
        label="enqueueing",
        file=sys.stderr,
        hidden=len(specs) <= ENQUEUE_BATCH or not sys.stderr.isatty(),
        show_pos=True,
    ) as progress:
        for start in range(0, len(specs), ENQUEUE_BATCH):
            end = start + ENQUEUE_BATCH
            tasks += _enqueue_batch(db, specs[start:end], line_numbers[start:end], done=len(tasks))
            progress.update(len(specs[start:end]))
    return tasks


def describe_enqueued(tasks: list[dict[str, Any]], lines: int, source: str) -> str:
    """One line: how many tasks the `lines` task lines of a file enqueued, of which roles."""
    if not lines:
        return f"no tasks enqueued: {source} has no task lines"
    distinct = {task["id"]: task["role"] for task in tasks}
    by_role = Counter(distinct.values())
    roles = ", ".join(f"{count} {role}" for role, count in sorted(by_role.items()))
    summary = f"enqueued {counted(len(distinct), 'task')} from {source}: {roles}"
    if len(distinct) < lines:
        summary += f" ({lines} lines: the lines of one dedupe key share its task)"
    return summary


def _read_specs(spec_file: BinaryIO) -> tuple[list[Any], list[int]]:
    """The JSON lines of `spec_file` (blank lines skipped) and their line numbers."""
    specs: list[Any] = []
    line_numbers: list[int] = []
    for number, raw in enumerate(spec_file, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise click.BadParameter(
                f"line {number} is not UTF-8: byte 0x{raw[error.start]:02x} at byte {error.start + 1}"
                " of the line",
                param_hint="'--file'",
            ) from error
        if not line.strip():
            continue
        try:
            specs.append(load_exact_json(line))
        except (ValueError, RecursionError) as error:
            raise click.BadParameter(
                f"line {number} is not valid JSON: {json_error(error)}", param_hint="'--file'"
            ) from error
        line_numbers.append(number)
    return specs, line_numbers


@click.command()
@click.argument("role", required=False)
@click.option("--payload", type=JsonValue(), help="The task's input, a JSON object.")
@click.option("--store", type=int, metavar="ID", help="The store (dispensary_id) it acts on.")
@click.option("--priority", type=int, help="-100..100, higher runs first (default 0).")
@click.option(
    "--scheduled-for", metavar="TIMESTAMP", help="Not before this time (ISO 8601; default now)."
)
@click.option("--dedupe-key", metavar="KEY", help="Enqueue nothing while a task with it is active.")
@click.option(
    "--dedupe-window",
    metavar="INTERVAL",
    help="Hold the key for the period of INTERVAL the task is made in, finished or not: one task"
    " a period ('1 hour': 10:00-11:00 UTC, ...; 1 second to 366 days).",
)
@click.option(
    "--dedupe-by-content",
    is_flag=True,
    default=None,
    help="Make the key of the role, store and payload (task_spec_hash) instead of --dedupe-key.",
)
@click.option("--max-retries", type=int, metavar="N", help="0..1000 (default: the role's).")
@click.option("--platform", metavar="P", help="Platform (default: the store's).")
@click.option(
    "--backoff-base",
    type=float,
    metavar="SECONDS",
    help="The task's delay before its first retry (default: the role's backoff_base).",
)
@click.option(
    "--backoff-cap",
    type=float,
    metavar="SECONDS",
    help="The task's longest delay between retries (default: the role's backoff_cap).",
)
@click.option(
    "--file",
    "spec_file",
    # Bytes, decoded line by line: text that is not UTF-8 is named by its line.
    type=click.File("rb"),
    metavar="PATH",
    help="Read task specs from JSON lines instead (- for stdin): one object per line, with the"
    " fields of enqueue_tasks (role, payload, dispensary_id, ...).",
)
@prints(ENQUEUED_COLUMNS, empty="no task enqueued")
@pass_db
def enqueue(
    db: AdminDatabase,
    role: str | None,
    payload: Any,
    store: int | None,
    priority: int | None,
    scheduled_for: str | None,
    dedupe_key: str | None,
    dedupe_window: str | None,
    dedupe_by_content: bool | None,
    max_retries: int | None,
    platform: str | None,
    backoff_base: float | None,
    backoff_cap: float | None,
    spec_file: BinaryIO | None,
) -> list[dict[str, Any]] | Shown:
    """Add one task of ROLE, or every task of a JSON-lines --file.

    A file goes in batches of 1000 tasks; each batch is all or nothing, and a bad line is named
    by its number. Prints the task, or for a file how many tasks of each role (with --json, a list
    of task objects either way). A file of more than one batch shows its progress on stderr when
    stderr is a terminal.
    """
    fields = {
        "payload": payload,
        "dispensary_id": store,
        "priority": priority,
        "scheduled_for": scheduled_for,
        "dedupe_key": dedupe_key,
        "dedupe_window": dedupe_window,
        "dedupe_by_content": dedupe_by_content,
        "max_retries": max_retries,
        "platform": platform,
        "backoff_base": backoff_base,
        "backoff_cap": backoff_cap,
    }
    if spec_file is not None:
        if role is not None or any(value is not None for value in fields.values()):
            raise click.UsageError(
                "--file takes every field from its lines: give no ROLE or task options with it"
            )
        specs, line_numbers = _read_specs(spec_file)
        tasks = _enqueue_file(db, specs, line_numbers)
        name = getattr(spec_file, "name", None)
        source = name if name not in (None, "<stdin>") else "stdin"
        return Shown(tasks, lambda: click.echo(describe_enqueued(tasks, len(specs), source)))
    if role is None:
        raise click.UsageError("give the ROLE of the task to enqueue, or --file PATH")
    spec = {"role": role, **{key: value for key, value in fields.items() if value is not None}}
    return _enqueue_batch(db, [spec], None, done=0)


@click.command("list")
@click.option("--role", metavar="ROLE", help="Only tasks of this role.")
@click.option("--status", type=click.Choice(TASK_STATUSES), help="Only tasks in this state.")
@click.option("--store", type=int, metavar="ID", help="Only tasks of this store (dispensary_id).")
@click.option(
    "--error", metavar="TEXT", help="Only tasks whose error message contains TEXT (any case)."
)
@click.option(
    "--limit", type=click.IntRange(1, 1000), default=50, show_default=True, help="Tasks per page."
)
@click.option(
    "--page", type=click.IntRange(min=1), default=1, show_default=True, help="Page number."
)
@prints()
@pass_db
def list_tasks(
    db: AdminDatabase,
    role: str | None,
    status: str | None,
    store: int | None,
    error: str | None,
    limit: int,
    page: int,
) -> Shown:
    """List tasks, newest first, a page at a time, and how many there are in all.

    An unknown --role or --store exits 2. With --json, the page's task objects.
    """
    if role is not None:
        check_role(db, role)
    if store is not None:
        db.check_store(store)
    tasks = db.list_tasks(
        role=role, status=status, store=store, error=error, limit=limit, offset=(page - 1) * limit
    )

    def page_of_all() -> None:
        total = db.count_tasks(role=role, status=status, store=store, error=error)
        filtered = any(value is not None for value in (role, status, store, error))
        echo_page(
            tasks, TASK_COLUMNS, total=total, page=page, limit=limit,
            noun="matching task" if filtered else "task",
        )

    return Shown(tasks, page_of_all)


def check_role(db: AdminDatabase, role: str) -> None:
    """Refuse a role that task_roles does not have (exit 2), naming the roles there are."""
    roles = db.roles()
    if role not in roles:
        raise InvalidInput(f"unknown role {role!r}", hint=f"Known roles: {', '.join(roles)}.")


@click.command()
@click.argument("task_id", metavar="ID", type=int)
@prints()
@pass_db
def show(db: AdminDatabase, task_id: int) -> Shown:
    """Show task ID: every field, its chain (the tasks whose completion led to it, and its
    follow-ups, with their status), then the attempts that ended without completing it, each
    with its error data (a command's exit code and output tails) and its error details (a failed
    handler's traceback) in full."""
    task = db.get_task(task_id)
    if task is None:
        raise NotFound(f"task {task_id} does not exist")
    attempts = db.task_attempts(task_id)
    chain = db.task_chain(task_id)
    return Shown(
        {"task": task, "chain": chain, "attempts": attempts},
        lambda: echo_task(task, chain, attempts),
    )


def echo_task(task: dict[str, Any], chain: list[dict[str, Any]], attempts: list[dict[str, Any]]) -> None:
    task_id = task["id"]
    echo_fields(task)
    click.echo()
    if len(chain) > 1:
        click.echo("chain:")
        for member in chain:
            indent = "  " * (member["depth"] - chain[0]["depth"])
            mark = "*" if member["id"] == task_id else " "
            click.echo(f" {mark}{indent}{member['id']} {member['role']} {member['status']}".rstrip())
        click.echo()
    else:
        click.echo("chain: none (no parent, no follow-ups)")
        click.echo()
    if attempts:
        click.echo("attempt history:")
        echo_table(attempts, ATTEMPT_COLUMNS, empty="none")
        for attempt in attempts:
            if attempt.get("error_data"):
                # A command's exit code, signal and output tails; a Python handler's exception type.
                click.echo(f"\nerror data of attempt {attempt['attempt']}: {dump_json(attempt['error_data'])}")
            if attempt["error_details"]:
                click.echo(f"\nerror details of attempt {attempt['attempt']}:")
                click.echo(textwrap.indent(attempt["error_details"].rstrip("\n"), "    "))
    else:
        click.echo("attempt history: none ended without completing")


@click.command()
@prints(COUNT_COLUMNS, empty="no tasks")
@pass_db
def counts(db: AdminDatabase) -> list[dict[str, Any]]:
    """Count tasks by role and status."""
    return db.counts()


@click.command("recover-stale")
@click.option(
    "--threshold-minutes",
    type=click.IntRange(min=1),
    metavar="N",
    help="Stale after N minutes without a heartbeat (default: each role's stale_threshold).",
)
@prints()
@pass_db
def recover_stale(db: AdminDatabase, threshold_minutes: int | None) -> Shown:
    """Take back claimed or running tasks whose worker stopped heartbeating.

    Each goes back to pending while it has retries left, else to failed (cancelled if a cancel
    was requested). Prints how many.
    """
    recovered = db.recover_stale_tasks(threshold_minutes)
    return Shown({"recovered": recovered}, lambda: click.echo(f"recovered {counted(recovered, 'stale task')}"))


TASK_SAMPLE_COLUMNS: list[Column] = [
    ("id", "id"),
    ("role", "role"),
    ("status", "status"),
    ("store", "dispensary_id"),
    ("platform", "platform"),
    ("created_at", "created_at"),
    ("error", "error_message"),
]


def task_filter_options(statuses: list[str]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The filters of retry_tasks and cancel_tasks, --dry-run and --batch-size, for a command
    that otherwise takes one task ID."""
    options = [
        click.argument("task_id", metavar="[ID]", type=int, required=False),
        click.option("--role", metavar="ROLE", help="Tasks of this role."),
        click.option("--status", type=click.Choice(statuses), help="Tasks in this state."),
        click.option("--store", type=int, metavar="ID", help="Tasks of this store (dispensary_id)."),
        click.option("--platform", metavar="NAME", help="Tasks of this platform."),
        click.option(
            "--error", "error_like", metavar="PATTERN",
            help="Tasks whose error matches this ILIKE pattern ('%timeout%').",
        ),
        click.option("--created-before", metavar="TIME", help="Tasks created before this time."),
        click.option("--created-after", metavar="TIME", help="Tasks created after this time."),
        click.option("--dry-run", is_flag=True, help="Show how many tasks it would take, and the first 10."),
        click.option(
            "--batch-size", type=click.IntRange(1, 100000), default=1000, show_default=True,
            help="Tasks a transaction.",
        ),
    ]

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def bulk_task_action(
    db: AdminDatabase, action: str, past: str, task_id: int | None, dry_run: bool, batch_size: int, **filters: Any
) -> Shown | None:
    """A bulk retry or cancel by filters (or its dry run); None when the command names one task ID."""
    given = any(value is not None for value in filters.values())
    if task_id is not None:
        if given or dry_run:
            raise click.UsageError("give a task ID or filters, not both")
        return None
    if not given:
        raise click.UsageError(f"give the ID of a task to {action}, or filters (see --help)")
    if dry_run:
        count, sample = db.tasks_matching(action, filters)

        def show() -> None:
            click.echo(f"would {action} {counted(count, 'task')}")
            if sample:
                echo_table(sample, TASK_SAMPLE_COLUMNS, empty="")

        return Shown({"dry_run": True, "tasks": count, "sample": sample}, show)
    done = 0
    for batch in db.bulk_task_action(action, filters, batch_size):
        done += batch
    return Shown({"tasks": done}, lambda: click.echo(f"{past} {counted(done, 'task')}"))


@click.command()
@task_filter_options(["pending", "claimed", "running"])
@prints()
@pass_db
def cancel(db: AdminDatabase, task_id: int | None, **options: Any) -> Shown:
    """Cancel task ID: a pending one now, a claimed or running one as soon as its worker hears.

    Finished tasks cannot be cancelled (exit 1). With filters instead of an ID, cancels every
    pending, claimed or running task they select, --batch-size tasks a transaction, and prints
    how many; --dry-run shows how many it would and the first 10.
    """
    bulk = bulk_task_action(db, "cancel", "cancelled", task_id, **options)
    if bulk is not None:
        return bulk
    task = db.cancel_task(task_id)
    if task["status"] == "cancelled":
        return Shown(task, lambda: click.echo(f"task {task_id} cancelled"))
    return Shown(task, lambda: click.echo(
        f"task {task_id} is {task['status']}: cancel requested; its worker is notified and stops it"
    ))


@click.command()
@task_filter_options(["failed", "cancelled"])
@prints()
@pass_db
def retry(db: AdminDatabase, task_id: int | None, **options: Any) -> Shown:
    """Put failed or cancelled task ID back to pending now, with a fresh retry budget.

    Any other task is refused (exit 1). With filters instead of an ID, retries every failed or
    cancelled task they select that retry_task would take, --batch-size tasks a transaction, and
    prints how many; --dry-run shows how many it would and the first 10.
    """
    bulk = bulk_task_action(db, "retry", "retried", task_id, **options)
    if bulk is not None:
        return bulk
    task = db.retry_task(task_id)
    return Shown(task, lambda: click.echo(
        f"task {task_id} is {task['status']} again, retries reset to 0/{task['max_retries']}"
    ))


# `pyworker tasks`: an operator's completion and deletion of one task, and the stream of task
# changes (pyworker/admin/task_changes.py).


@click.group()
def tasks() -> None:
    """Complete or delete one task by hand; watch task changes as they happen."""


@tasks.command("complete")
@click.argument("task_id", metavar="ID", type=int)
@click.option("--result", "result_text", metavar="JSON", help="The task's result: a JSON value (default: none).")
@prints()
@pass_db
def complete_task_by_hand(db: AdminDatabase, task_id: int, result_text: str | None) -> Shown:
    """Complete pending, claimed or running task ID by hand, without a worker (mark_task_completed).

    Its chain follows and whoever waits for it hears, as for a worker's completion. The worker
    that held a claimed or running task is told to stop and can no longer complete or fail it.
    A completed, failed or cancelled task is refused (exit 1) and nothing changes.
    """
    result = None
    if result_text is not None:
        try:
            result = load_exact_json(result_text)
        except (ValueError, RecursionError) as error:
            raise click.BadParameter(f"not JSON: {json_error(error)}", param_hint="--result")
    task = db.mark_task_completed(task_id, result)
    held = f"; worker {task['worker_id']}, which held it, can no longer complete or fail it" if task["worker_id"] else ""
    return Shown(task, lambda: click.echo(f"task {task_id} completed by hand{held}"))


@tasks.command("delete")
@click.argument("task_id", metavar="ID", type=int)
@prints()
@pass_db
def delete_task(db: AdminDatabase, task_id: int) -> Shown:
    """Delete task ID, whatever its status, with its attempt history (delete_task); print it as it was.

    The worker of a claimed or running task is told to stop. The tasks it queued stay. The
    metrics' counters keep what they counted of it.
    """
    task = db.delete_task(task_id)
    return Shown(task, lambda: click.echo(f"task {task_id} deleted (it was {task['status']}, role {task['role']})"))


@tasks.command("runs")
@click.argument("task_id", metavar="ID", type=int)
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10000), help="The most runs to list.")
@prints(SPEC_RUN_COLUMNS, empty="no runs")
@pass_db
def spec_runs(db: AdminDatabase, task_id: int, limit: int) -> list[dict[str, Any]]:
    """List the runs of task ID's spec (its role, store and payload), newest first, itself included.

    A replay's view of what became of the earlier runs, whatever their dedupe key or window:
    task_spec_runs() finds them in worker_tasks and in the history (by its spec_hash index).
    """
    if db.get_task(task_id) is None:
        raise NotFound(f"task {task_id} does not exist")
    return db.task_spec_runs(task_id, limit)


@tasks.command("watch")
@click.option("--role", "roles", metavar="ROLE", multiple=True, help="Only this role's changes (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print each message as it came, one JSON document a line.")
@pass_settings
def watch_tasks(settings: Settings, roles: tuple[str, ...], as_json: bool) -> None:
    """Print task changes as they happen, until interrupted: every enqueue, status change,
    cancel request and deletion, whoever made it (the channel taskpool_task_changes).

    One line a message: the time, the role, from -> to, and the ids (a statement that changed
    many tasks is a few lines, up to 300 ids each). The stream is published only while someone
    follows it: this command holds a lease (follow_task_changes) and renews it.
    """
    try:
        for message in follow_task_changes(settings.database_url, follower_name("watch")):
            if message is None or (roles and message.get("role") not in roles):
                continue
            if as_json:
                click.echo(json.dumps(message))
            else:
                moment = datetime.now().strftime("%H:%M:%S")
                ids = " ".join(str(task_id) for task_id in message.get("ids", []))
                click.echo(
                    f"{moment} {message.get('role')} {message.get('from') or 'new'} -> "
                    f"{message.get('to') or 'deleted'}"
                    f"{' (cancel requested)' if message.get('event') == 'cancel_requested' else ''}: {ids}"
                )
            # Piped into another program, each change is its news now, not at a full buffer.
            sys.stdout.flush()
    except KeyboardInterrupt:
        return
