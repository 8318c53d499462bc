"""The `pyworker` command line: the worker (`pyworker --role R`) and the operator verbs.

One click group. Its options (or their environment variables) land in a `Settings` object in
`ctx.obj`, with the invocation's one `Database`; the global ones (GLOBAL_OPTIONS) are taken after
any command's name as well. Each operator verb is one command that calls one or two `Database`
methods and prints a table for people (fitted to the terminal), or one JSON document with `--json`
(pyworker.output). Other packages add commands through the `pyworker.commands` entry points
(TaskpoolGroup.load_plugins): the crawler's payloads, resync and simulator come that way.

Exit codes: 0 done; 1 refused: the database will not do it to something that exists (a finished
task cannot be cancelled, a store with one payload has no diff), or cannot be reached; 2 bad usage
or bad input, and that includes every name or id that names nothing: an unknown role, schedule,
task, payload or store. Errors become those exit codes in one place, `TaskpoolGroup.invoke`;
tracebacks only with `-v`.
"""

from __future__ import annotations

import copy
import functools
import importlib
import ipaddress
import json
import os
import re
import shlex
import sys
import textwrap
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib.metadata import EntryPoint, entry_points
from typing import Any, BinaryIO

import click
from click.core import ParameterSource

from pyworker import __version__, environment, logs
from pyworker import cron as cron_jobs
from pyworker.config import (
    DEFAULT_LOOP_BLOCK_LIMIT,
    DEFAULT_MAX_ABANDONED_THREADS,
    POOLED_ENVVAR,
    WorkerConfig,
    default_database_url,
    default_worker_id,
    parse_roles,
)
from pyworker.db import REQUIRED_SCHEMA_VERSION, Database, NotJson, dump_json, load_exact_json
from pyworker.deadlines import CALL_TIMEOUT_ENVVAR, DEFAULT_CALL_TIMEOUT
from pyworker.errors import (
    ConfigurationError,
    DatabaseUnavailable,
    InvalidInput,
    NotFound,
    SchemaMismatch,
    SchemaMissing,
    TaskpoolError,
    WorkerFailed,
)
from pyworker.logs import LEVELS as LOG_LEVELS
from pyworker.schema import schema as schema_commands
from pyworker.task_changes import follow_task_changes, follower_name
from pyworker.output import (
    CAPACITY_COLUMNS,
    Column,
    counted,
    echo_fields,
    echo_page,
    echo_table,
    prints,
    Shown,
    wrapped,
)

# The task states, as worker_tasks' status CHECK allows them (for `list --status`).
TASK_STATUSES = ("pending", "claimed", "running", "completed", "failed", "cancelled")

# enqueue_tasks takes at most 10000 specs a call; a file goes in batches of this many.
ENQUEUE_BATCH = 1000


class InputRefused(click.ClickException):
    """The database refused a value (or the set-up is unusable): bad input, exit 2."""

    exit_code = 2


class RenamedVariableOption(click.Option):
    """An option whose variable (envvar, its TASKPOOL_ name) is also read under the name it had
    before, deprecated (pyworker.environment)."""

    def resolve_envvar_value(self, ctx: click.Context) -> str | None:
        value = super().resolve_envvar_value(ctx)
        if value is None and isinstance(self.envvar, str):
            return environment.lookup(self.envvar)
        return value


# The options of the main group that every command takes too, after its name (`pyworker list
# -v`), and lists in its --help. Given there, a value wins over the one given before the name.
GLOBAL_OPTIONS: list[click.Option] = [
    click.Option(
        ["--database-url"],
        envvar="DATABASE_URL",
        default=default_database_url,
        show_default="libpq's: PGHOST, PGPORT, PGUSER, PGDATABASE, ..., else the local socket",
        show_envvar=True,
        metavar="URL",
        help="PostgreSQL URL of the taskpool database.",
    ),
    RenamedVariableOption(
        ["--pooled"],
        envvar=POOLED_ENVVAR,
        show_envvar=True,
        is_flag=True,
        help="--database-url goes through a transaction-pooling PgBouncer: prepare no statements,"
        " and LISTEN only on --listen-database-url (docs/pgbouncer.md).",
    ),
    click.Option(
        ["-v", "--verbose"],
        is_flag=True,
        help="Show tracebacks with errors; log at debug unless --log-level says.",
    ),
    click.Option(
        ["--wide"],
        is_flag=True,
        help="Print tables whole, however wide, instead of fitting them to the terminal.",
    ),
]


def _set_global_option(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    """A global option given after a command's name: it replaces the value given before."""
    if param.name and ctx.get_parameter_source(param.name) is ParameterSource.COMMANDLINE:
        setattr(ctx.find_object(Settings), param.name, value)


def _take_global_options(command: click.Command) -> None:
    """Give `command`, and every command under it, the global options it does not have yet."""
    taken = {param.name for param in command.params}
    for option in GLOBAL_OPTIONS:
        if option.name not in taken:
            # Same flags, help and defaults; the value goes to Settings, not to the function.
            shared = copy.copy(option)
            shared.expose_value = False
            shared.callback = _set_global_option
            command.params.append(shared)
    if isinstance(command, click.Group):
        for subcommand in command.commands.values():
            _take_global_options(subcommand)


class SharedOptionsGroup(click.Group):
    """A group whose commands, and theirs, take the global options after their names."""

    # Groups made with @group.group() are of this class too, so their commands get them as well.
    group_class = type

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        super().add_command(cmd, name)
        _take_global_options(cmd)


# Commands from other packages: each entry point of this group names a click command (or group),
# added to the main group under the entry point's name. The crawler's `payloads`, `resync` and
# `simulator` come this way (crawler/pyproject.toml).
COMMANDS_ENTRY_POINT_GROUP = "pyworker.commands"


def broken_plugin(entry_point: EntryPoint, error: Exception) -> str:
    """Why a command plug-in could not be added, naming it, its package and what to do."""
    dist = getattr(entry_point, "dist", None)
    package = f"{dist.name} {dist.version}" if dist is not None else "its package"
    cause = f"{type(error).__name__}: {error}" if not isinstance(error, ConfigurationError) else str(error)
    return (
        f"the command plug-in {entry_point.name!r} ({entry_point.value}, from {package}, entry point"
        f" group {COMMANDS_ENTRY_POINT_GROUP}) cannot be loaded: {cause}; reinstall or uninstall"
        f" {dist.name if dist is not None else 'that package'}"
    )


class TaskpoolGroup(SharedOptionsGroup):
    """The main group: it turns pyworker's exceptions into exit codes, for every command at once,
    and adds the commands of the `pyworker.commands` entry points the first time it lists or
    looks up a command (a worker, which runs none, never loads them)."""

    group_class = SharedOptionsGroup

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.plugins_loaded = False
        # The plug-ins that could not be added, by name: why (see broken_plugin).
        self.broken_plugins: dict[str, str] = {}

    def load_plugins(self) -> None:
        """Add the commands of the `pyworker.commands` entry points, once. One that fails to
        import, is not a click command or would replace a core command is left out and noted in
        broken_plugins: the core commands work whatever an installed package does."""
        if self.plugins_loaded:
            return
        self.plugins_loaded = True
        for entry_point in entry_points(group=COMMANDS_ENTRY_POINT_GROUP):
            try:
                if entry_point.name in self.commands:
                    raise ConfigurationError(f"pyworker has a command {entry_point.name!r} already")
                command = entry_point.load()
                if not isinstance(command, click.Command):
                    raise ConfigurationError(
                        f"it names an object of type {type(command).__name__}, not a click command"
                    )
            except Exception as error:
                self.broken_plugins[entry_point.name] = broken_plugin(entry_point, error)
                continue
            self.add_command(command, entry_point.name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.load_plugins()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self.load_plugins()
        if cmd_name in self.broken_plugins and cmd_name not in self.commands:
            raise ConfigurationError(self.broken_plugins[cmd_name])
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_commands(ctx, formatter)
        # On stderr: the help itself stays what it is, with the core commands.
        for problem in self.broken_plugins.values():
            click.echo(f"warning: {problem}", err=True)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            result = self._invoke_with_exit_codes(ctx)
            # Flushed here, not at exit: a reader that stopped early (`| head`) is noticed below.
            sys.stdout.flush()
            return result
        except BrokenPipeError:
            # The reader took what it wanted (`pyworker list | head -1`): done, quietly, status 0
            # as click 8.2+ has it (8.1 says 1), so a `set -o pipefail` script goes on.
            _discard_stdout()
            ctx.exit(0)
        except click.ClickException as error:
            settings = ctx.find_object(Settings)
            if not (_runs_a_worker(ctx, settings) and settings.worker["log_format"] == "json"):
                raise
            # A worker logging JSON says why it cannot run in JSON too: a log shipper reading its
            # stderr gets no line it cannot parse.
            worker = settings.worker
            logs.setup(worker["log_format"], worker["log_level"], worker["worker_id"], " ".join(worker["role"]))
            failed = isinstance(error.__cause__, WorkerFailed)
            logs.log.error(
                error.format_message(), extra=logs.event("worker_failed" if failed else "worker_refused_to_start")
            )
            ctx.exit(error.exit_code)

    def _invoke_with_exit_codes(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, BrokenPipeError):
            raise
        except (InvalidInput, NotFound, ConfigurationError, NotJson) as error:
            # NotFound: a name or id the user gave names nothing, which is bad input too.
            _traceback_if(ctx)
            raise InputRefused(str(error)) from error
        except TaskpoolError as error:
            # Refused, SchemaMissing, DatabaseUnavailable and the rest: refused, exit 1.
            _traceback_if(ctx)
            raise click.ClickException(str(error)) from error
        except Exception as error:
            if _verbose(ctx):
                raise
            raise click.ClickException(
                f"unexpected {type(error).__name__}: {error} (run with -v for the traceback)"
            ) from error


def _discard_stdout() -> None:
    """Point stdout at /dev/null: what is left in its buffer is flushed at exit without a second
    BrokenPipeError ("Exception ignored ... BrokenPipeError" on stderr)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass  # not a file descriptor (CliRunner's stdout): nothing flushes it to a pipe


def _runs_a_worker(ctx: click.Context, settings: Settings | None) -> bool:
    """Whether this invocation is `pyworker --role R` (a worker), not an operator command."""
    return settings is not None and bool(settings.worker["role"]) and ctx.invoked_subcommand is None


def _verbose(ctx: click.Context) -> bool:
    """Whether -v was given, before the command's name or after it."""
    settings = ctx.find_object(Settings)
    return settings.verbose if settings is not None else bool(ctx.params.get("verbose"))


def _traceback_if(ctx: click.Context) -> None:
    if _verbose(ctx):
        click.echo(traceback.format_exc(), err=True, nl=False)


@dataclass
class Settings:
    """The options of the main group, read once from the command line or the environment
    (`ctx.obj`): the global ones, and `worker`, the worker's, by their option names as given (the
    command line's units: milliseconds, a command line as one string)."""

    database_url: str
    pooled: bool
    verbose: bool
    wide: bool
    worker: dict[str, Any]
    _db: Database | None = field(default=None, init=False, repr=False)

    @property
    def db(self) -> Database:
        """The invocation's one Database, made on first use: a --database-url given after the
        command's name has been read by then."""
        if self._db is None:
            self._db = Database(
                self.database_url, application_name="pyworker-cli", exact_numbers=True, pooled=self.pooled
            )
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()

    def worker_config(self) -> WorkerConfig:
        """The WorkerConfig of `pyworker --role R` (intervals in seconds)."""
        worker = self.worker
        try:
            command = tuple(shlex.split(worker["command"])) if worker["command"] else ()
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="'--command' / TASKPOOL_COMMAND")
        try:
            return WorkerConfig(
                database_url=self.database_url,
                roles=parse_roles(worker["role"]),
                worker_id=worker["worker_id"],
                poll_interval=worker["poll_interval_ms"] / 1000,
                heartbeat_interval=worker["heartbeat_interval_ms"] / 1000,
                handler_modules=tuple(worker["handlers"]),
                command=command,
                log_format=worker["log_format"],
                log_level=worker["log_level"],
                shutdown_grace=worker["shutdown_grace_seconds"],
                prefetch=worker["prefetch"],
                concurrency=worker["concurrency"],
                pooled=self.pooled,
                listen_database_url=worker["listen_database_url"],
                metrics_port=worker["metrics_port"],
                loop_block_limit=worker["loop_block_limit_seconds"],
                max_abandoned_threads=worker["max_abandoned_threads"],
                call_timeout=worker["call_timeout_seconds"],
            )
        except ValueError as error:
            raise click.UsageError(str(error))

    def worker_environment(self, ctx: click.Context) -> dict[str, str]:
        """This process's environment with every worker option set in its variable, as the
        worker processes of --processes read them."""
        environment = {**os.environ, "DATABASE_URL": self.database_url}
        if self.pooled:
            environment[POOLED_ENVVAR] = "1"
        for param in ctx.command.params:
            value = self.worker.get(param.name or "")
            if isinstance(param, click.Option) and param.envvar and value is not None:
                environment[str(param.envvar)] = " ".join(value) if param.multiple else str(value)
        return environment


pass_settings = click.make_pass_decorator(Settings)


def pass_db(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: the command gets the invocation's Database as its first argument."""

    @pass_settings
    @functools.wraps(command)
    def with_db(settings: Settings, *args: Any, **kwargs: Any) -> Any:
        return command(settings.db, *args, **kwargs)

    return with_db


@click.group(
    cls=TaskpoolGroup,
    invoke_without_command=True,
    params=list(GLOBAL_OPTIONS),
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="pyworker", message="%(prog)s %(version)s")
@click.option(
    "--role",
    envvar="TASKPOOL_ROLE",
    cls=RenamedVariableOption,
    show_envvar=True,
    multiple=True,
    metavar="ROLE[=N]",
    help="Run a worker for this role (with no command). Repeat it for a worker that serves several"
    " roles from one process (the variable: space-separated); ROLE=N runs at most N of the role's"
    " tasks at once.",
)
@click.option(
    "--worker-id",
    envvar="TASKPOOL_WORKER_ID",
    cls=RenamedVariableOption,
    show_envvar=True,
    show_default="host-pid-random",
    metavar="ID",
    help="The worker's name in the registry and on its tasks.",
)
@click.option(
    "--poll-interval-ms",
    envvar="TASKPOOL_POLL_INTERVAL_MS",
    cls=RenamedVariableOption,
    show_envvar=True,
    type=click.IntRange(min=1),
    default=5000,
    show_default=True,
    help="Look for tasks at least this often when no notification comes.",
)
@click.option(
    "--heartbeat-interval-ms",
    envvar="TASKPOOL_HEARTBEAT_INTERVAL_MS",
    cls=RenamedVariableOption,
    show_envvar=True,
    type=click.IntRange(min=1),
    default=30000,
    show_default=True,
    help="Heartbeat a running task this often.",
)
@click.option(
    "--handlers",
    envvar="TASKPOOL_HANDLERS",
    cls=RenamedVariableOption,
    show_envvar=True,
    multiple=True,
    metavar="MODULE",
    help="Import this module to register handlers (repeatable; the variable: space-separated).",
)
@click.option(
    "--command",
    envvar="TASKPOOL_COMMAND",
    cls=RenamedVariableOption,
    show_envvar=True,
    metavar="COMMAND",
    help="Run each task with this external command (split like a shell line).",
)
@click.option(
    "--log-format",
    envvar="TASKPOOL_LOG_FORMAT",
    cls=RenamedVariableOption,
    show_envvar=True,
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Worker log lines as text or JSON.",
)
@click.option(
    "--log-level",
    envvar="TASKPOOL_LOG_LEVEL",
    cls=RenamedVariableOption,
    show_envvar=True,
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    show_default="info; debug with -v",
    help="Log the lines of this level and above: pyworker's, the handlers', their libraries'.",
)
@click.option(
    "--shutdown-grace-seconds",
    envvar="TASKPOOL_SHUTDOWN_GRACE_SECONDS",
    cls=RenamedVariableOption,
    show_envvar=True,
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="On SIGTERM, let running tasks finish this long before handing them back.",
)
@click.option(
    "--concurrency",
    envvar="TASKPOOL_CONCURRENCY",
    cls=RenamedVariableOption,
    show_envvar=True,
    type=click.IntRange(min=1, max=1000),
    show_default="1 a role; with ROLE=N shares, their sum",
    help="Run up to N tasks at the same time in one worker process, all its roles together"
    " (the worker's own calls on at most 4 connections; its handlers borrow theirs from a pool of N).",
)
@click.option(
    "--processes",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run this many worker processes of the role under this command (ids <worker-id>-1..M).",
)
@click.option(
    "--prefetch",
    envvar="TASKPOOL_PREFETCH",
    cls=RenamedVariableOption,
    show_envvar=True,
    type=click.IntRange(min=1, max=1000),
    default=1,
    show_default=True,
    help="Hold up to N tasks (claimed ahead of the free slots when N is over --concurrency);"
    " completions are recorded in batches (a crash re-runs the unrecorded ones).",
)
@click.option(
    "--listen-database-url",
    envvar="TASKPOOL_LISTEN_DATABASE_URL",
    cls=RenamedVariableOption,
    show_envvar=True,
    metavar="URL",
    show_default="--database-url, unless --pooled: then the worker polls",
    help="LISTEN for wake-ups on this database URL, a session of its own: the server's own address"
    " when --database-url goes through a transaction pooler.",
)
@click.option(
    "--metrics-port",
    envvar="TASKPOOL_METRICS_PORT",
    cls=RenamedVariableOption,
    show_envvar=True,
    type=click.IntRange(min=0, max=65535),
    metavar="PORT",
    help="Serve /metrics, /healthz and /readyz over HTTP on this port (0: any free port, logged)."
    " With --processes M, worker i of M serves PORT+i-1.",
)
@click.option(
    "--loop-block-limit-seconds",
    envvar="TASKPOOL_LOOP_BLOCK_LIMIT_SECONDS",
    cls=RenamedVariableOption,
    show_envvar=True,
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_LOOP_BLOCK_LIMIT,
    show_default=True,
    help="An async handler that blocks the event loop this long fails its attempt; the other"
    " async tasks go on on a new loop (handed back and run again, no retry spent).",
)
@click.option(
    "--max-abandoned-threads",
    envvar="TASKPOOL_MAX_ABANDONED_THREADS",
    cls=RenamedVariableOption,
    show_envvar=True,
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_ABANDONED_THREADS,
    show_default=True,
    help="With this many handler threads left behind past their run timeout, stop claiming (and"
    " fail /healthz) until one returns; the tasks not begun are handed back.",
)
@click.option(
    "--call-timeout-seconds",
    envvar=CALL_TIMEOUT_ENVVAR,
    cls=RenamedVariableOption,
    show_envvar=True,
    type=click.FloatRange(min=0),
    default=DEFAULT_CALL_TIMEOUT,
    show_default=True,
    help="Cut a database call (and its connection) that has not answered within this many seconds,"
    " and retry it on a new connection: a frozen server costs no more (0: no deadline).",
)
@click.pass_context
def main(ctx: click.Context, database_url: str, pooled: bool, verbose: bool, wide: bool, **worker: Any) -> None:
    """taskpool worker and operator commands.

    With --role and no command, run a worker for that role (or for several from one process:
    --role a --role b=4). Otherwise run one of the commands below; each prints a table, or one
    JSON document with --json.

    The options above --role are global: every command also takes them after its name.

    Exit codes: 0 done; 1 refused (the reason is printed); 2 bad usage or bad input, an unknown
    name or id included (a role, schedule, task, payload or store that does not exist).
    """
    worker["worker_id"] = worker["worker_id"] or default_worker_id()
    worker["log_level"] = worker["log_level"] or ("debug" if verbose else "info")
    settings = Settings(database_url, pooled, verbose, wide, worker)
    ctx.call_on_close(settings.close)
    ctx.obj = settings
    if ctx.invoked_subcommand is not None:
        return
    if not worker["role"]:
        click.echo(ctx.get_help())
        ctx.exit(0)
    config = settings.worker_config()
    if config.metrics_port and config.metrics_port + worker["processes"] - 1 > 65535:
        raise click.UsageError(
            f"--metrics-port {config.metrics_port} with --processes {worker['processes']} needs ports"
            " past 65535: the worker processes serve PORT to PORT+M-1"
        )
    # Imported here: the operator commands need none of the worker's machinery.
    if worker["processes"] == 1:
        code = importlib.import_module("pyworker.worker").run_worker(config)
    else:
        code = importlib.import_module("pyworker.supervisor").run_workers(
            config, worker["processes"], settings.worker_environment(ctx)
        )
    ctx.exit(code)


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
    db: Database, specs: list[dict[str, Any]], line_numbers: list[int] | None, done: int
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
    db: Database, specs: list[Any], line_numbers: list[int]
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


@main.command()
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
    db: Database,
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


@main.command("list")
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
    db: Database,
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


def check_role(db: Database, role: str) -> None:
    """Refuse a role that task_roles does not have (exit 2), naming the roles there are."""
    roles = db.roles()
    if role not in roles:
        raise InvalidInput(f"unknown role {role!r}", hint=f"Known roles: {', '.join(roles)}.")


@main.command()
@click.argument("task_id", metavar="ID", type=int)
@prints()
@pass_db
def show(db: Database, task_id: int) -> Shown:
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


@main.command()
@prints(COUNT_COLUMNS, empty="no tasks")
@pass_db
def counts(db: Database) -> list[dict[str, Any]]:
    """Count tasks by role and status."""
    return db.counts()


@main.command("recover-stale")
@click.option(
    "--threshold-minutes",
    type=click.IntRange(min=1),
    metavar="N",
    help="Stale after N minutes without a heartbeat (default: each role's stale_threshold).",
)
@prints()
@pass_db
def recover_stale(db: Database, threshold_minutes: int | None) -> Shown:
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
    db: Database, action: str, past: str, task_id: int | None, dry_run: bool, batch_size: int, **filters: Any
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


@main.command()
@task_filter_options(["pending", "claimed", "running"])
@prints()
@pass_db
def cancel(db: Database, task_id: int | None, **options: Any) -> Shown:
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


@main.command()
@task_filter_options(["failed", "cancelled"])
@prints()
@pass_db
def retry(db: Database, task_id: int | None, **options: Any) -> Shown:
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
# changes (pyworker/task_changes.py).


@main.group()
def tasks() -> None:
    """Complete or delete one task by hand; watch task changes as they happen."""


@tasks.command("complete")
@click.argument("task_id", metavar="ID", type=int)
@click.option("--result", "result_text", metavar="JSON", help="The task's result: a JSON value (default: none).")
@prints()
@pass_db
def complete_task_by_hand(db: Database, task_id: int, result_text: str | None) -> Shown:
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
def delete_task(db: Database, task_id: int) -> Shown:
    """Delete task ID, whatever its status, with its attempt history (delete_task); print it as it was.

    The worker of a claimed or running task is told to stop. The tasks it queued stay. The
    metrics' counters keep what they counted of it.
    """
    task = db.delete_task(task_id)
    return Shown(task, lambda: click.echo(f"task {task_id} deleted (it was {task['status']}, role {task['role']})"))


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


@main.command()
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
    db: Database,
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
    db: Database, max_batches: int | None, max_seconds: float | None, pause_ratio: float, dry_run: bool
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
    ("last_error", "last_error"),
    ("what", "description"),
]


@main.group()
def retention() -> None:
    """List and change the retention policies (the tick applies them; `pyworker prune` now)."""


@retention.command("list")
@prints(RETENTION_POLICY_COLUMNS, empty="no retention policies")
@pass_db
def list_retention(db: Database) -> list[dict[str, Any]]:
    """List the retention policies: what each deletes after how long, and how its last run went.

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
    db: Database,
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


@main.command()
@prints()
@pass_db
def workers(db: Database) -> Shown:
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


@main.command()
@click.argument("role", required=False)
@prints()
@pass_db
def capacity(db: Database, role: str | None) -> Shown:
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


@main.command()
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
def health(db: Database, max_tick_age: str | None, max_snapshot_age: str | None) -> Shown:
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


@main.command()
@click.argument("role")
@click.option("--reason", metavar="TEXT", help="Why, kept with the pause and shown by health.")
@prints()
@pass_db
def pause(db: Database, role: str, reason: str | None) -> Shown:
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


@main.command()
@click.argument("role")
@prints()
@pass_db
def resume(db: Database, role: str) -> Shown:
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


@main.group()
def roles() -> None:
    """List the roles, show one, and apply the roles the handlers declare (sync)."""


@roles.command("list")
@prints(ROLE_COLUMNS, empty="no roles: `pyworker roles sync --handlers MODULE` creates those your handlers declare")
@pass_db
def list_roles(db: Database) -> list[dict[str, Any]]:
    """The roles of task_roles by name, with their settings. With --json, every column."""
    return db.role_rows()


@roles.command("show")
@click.argument("role")
@prints()
@pass_db
def show_role(db: Database, role: str) -> dict[str, Any]:
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
def sync_roles(db: Database, modules: tuple[str, ...], dry_run: bool, remove_missing: bool, force: bool) -> Shown:
    """Apply the roles the handlers of MODULE declare: create those the database lacks, update
    the settings that differ, report the roles no handler declares.

    A setting a handler does not name is not declared: a new role takes its default, an existing
    one keeps its value. One transaction: a refused value (exit 2, naming the role and the field)
    changes nothing. Prints each role: created, changed (field: old → new) or unchanged; with
    --dry-run the same, and nothing is written. With --json, a list of {role, action, module,
    fields}.
    """
    from pyworker import handlers
    from pyworker import roles as role_sync

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


@main.group()
def platforms() -> None:
    """List the platforms, and disable or enable one (no task of a disabled platform is claimed)."""


@platforms.command("list")
@prints(PLATFORM_COLUMNS, empty="no platforms")
@pass_db
def list_platforms(db: Database) -> list[dict[str, Any]]:
    """The platforms of v_platforms: enabled or not, their circuit and rate limit. With --json,
    every column."""
    return db.platforms()


@platforms.command("disable")
@click.argument("name")
@click.option("--reason", metavar="TEXT", help="Why, shown by health and the dashboard.")
@prints()
@pass_db
def disable_platform(db: Database, name: str, reason: str | None) -> Shown:
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
def enable_platform(db: Database, name: str) -> Shown:
    """Enable platform NAME: its tasks are claimed again (while its circuit is closed).

    Enabling an enabled platform changes nothing. A platform nothing names exits 2.
    """
    row = db.enable_platform(name)
    return Shown(row, lambda: click.echo(f"platform {row['platform']} is enabled: its tasks are handed out"))


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


@main.group()
def schedules() -> None:
    """List, change and run the recurring schedules (the tick runs the due ones)."""


@schedules.command("list")
@prints(SCHEDULE_COLUMNS, empty="no schedules")
@pass_db
def list_schedules(db: Database) -> list[dict[str, Any]]:
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
def create_schedule(db: Database, name: str, role: str, **options: Any) -> dict[str, Any]:
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
def update_schedule(db: Database, name: str, **options: Any) -> dict[str, Any]:
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
def delete_schedule(db: Database, name: str) -> Shown:
    """Delete schedule NAME; the tasks it made stay. An unknown NAME exits 2."""
    row = db.delete_schedule(name)
    return Shown(row, lambda: click.echo(f"schedule {row['name']} deleted"))


@schedules.command("trigger")
@click.argument("name")
@prints()
@pass_db
def trigger_schedule(db: Database, name: str) -> Shown:
    """Run schedule NAME now, enabled or not; its next regular run stays where it was.

    Prints how many tasks it created (with --json, the schedule). An unknown NAME exits 2.
    """
    row = db.trigger_schedule(name)
    return Shown(row, lambda: click.echo(f"schedule {row['name']} ran: {counted(row['last_task_count'], 'task')} created"))


# The tick: pg_cron or the scheduler loop


@main.group()
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
def cron_install(db: Database) -> Shown:
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
def cron_uninstall(db: Database) -> Shown:
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
def cron_status(db: Database, runs: int) -> Shown:
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


@main.command()
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
    scheduler_module = importlib.import_module("pyworker.scheduler")
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


def is_loopback(host: str) -> bool:
    """Whether listening on `host` reaches only this machine (localhost, 127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        # A host name: it may resolve to any interface.
        return False


# The modules of the `dashboard` extra (pyproject.toml): a missing one is named with the extra.
DASHBOARD_MODULES = {"starlette", "uvicorn", "jinja2", "python_multipart", "itsdangerous"}


@main.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Listen on this address (0.0.0.0: every interface).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8080,
    show_default=True,
    help="Listen on this port (0: any free one; the log line says which).",
)
@click.option(
    "--token",
    envvar="TASKPOOL_DASHBOARD_TOKEN",
    show_envvar=True,
    metavar="SECRET",
    help="Turn the actions on (cancel, retry, run or switch a schedule) for whoever logs in with"
    " this secret, and for API calls that give it as a bearer token. Without it: read-only.",
)
@click.option(
    "--require-login/--no-require-login",
    default=None,
    envvar="TASKPOOL_DASHBOARD_REQUIRE_LOGIN",
    show_envvar=True,
    help="Reading needs a log-in too (pages; the API and /metrics take the token as a bearer"
    " token), and so a --token. Default: on when --host is not a loopback address.",
)
@pass_settings
def dashboard(
    settings: Settings, host: str, port: int, token: str | None, require_login: bool | None
) -> None:
    """Serve the dashboard: the pool per role, tasks, workers, schedules, platforms, health.

    Every page is also JSON under /api/ (docs/dashboard.md). Needs the dashboard extra:
    pip install 'taskpool-pg[dashboard]' (`make deps` installs it). Stops on SIGINT or SIGTERM.
    """
    if token is not None and not token.strip():
        raise click.BadParameter("the token must not be empty or blank", param_hint="'--token'")
    if require_login is None:
        require_login = not is_loopback(host)
    if require_login and token is None:
        raise click.UsageError(
            "reading requires a log-in (--require-login, the default when --host is not a loopback"
            " address) and there is no token to log in with: give --token (or TASKPOOL_DASHBOARD_TOKEN),"
            " or --no-require-login to let whoever reaches the port read every page"
        )
    try:
        server = importlib.import_module("pyworker.dashboard.server")
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] not in DASHBOARD_MODULES:
            raise
        raise click.ClickException(
            f"the dashboard needs the dashboard extra, and {error.name} is not installed:"
            " pip install 'taskpool-pg[dashboard]' (in a taskpool checkout: make deps)"
        ) from error
    # Refuse to serve a database pyworker cannot read, as a worker does.
    settings.db.check_schema()
    settings.close()
    server.serve(settings.database_url, host, port, token, pooled=settings.pooled, require_login=require_login)


@main.command()
@prints()
@pass_db
def version(db: Database) -> Shown:
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


main.add_command(schema_commands)
