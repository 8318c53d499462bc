"""The `pyworker` command line: the worker (`pyworker --role R`) and the operator verbs.

One click group. Its options (or their environment variables) land in a `Settings` object in
`ctx.obj`, with the invocation's one `Database`; the global ones (GLOBAL_OPTIONS) are taken after
any command's name as well. Each operator verb is one command that calls one or two `Database`
methods and prints a table for people (fitted to the terminal), or one JSON document with `--json`
(pyworker.admin.output). The verbs live in a module per noun (tasks, retention, fleet, schedules,
limits; the schema's in pyworker.admin.schema), loaded when one of them runs. Other packages add commands through the `pyworker.commands` entry points
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
import os
import shlex
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from pyworker import __version__, environment, logs
from pyworker.admin.logs import setup as setup_logs, warn_if_pid_1
from pyworker.config import (
    DEFAULT_LOOP_BLOCK_LIMIT,
    DEFAULT_MAX_ABANDONED_THREADS,
    POOLED_ENVVAR,
    WorkerConfig,
    default_database_url,
    default_worker_id,
    parse_roles,
)
from pyworker.db import NotJson
from pyworker.deadlines import DEFAULT_CALL_TIMEOUT
from pyworker.errors import (
    ConfigurationError,
    InvalidInput,
    NotFound,
    TaskpoolError,
    WorkerFailed,
)
from pyworker.logs import LEVELS as LOG_LEVELS

if TYPE_CHECKING:
    from pyworker.admin.queries import AdminDatabase
    from pyworker.db import Database
    from pyworker.handlers import RoleDeclaration

F = TypeVar("F", bound=Callable[..., Any])


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


def worker_option(flag: str, **attributes: Any) -> Callable[[F], F]:
    """A worker's option, read from its variable too when not given: TASKPOOL_ and its name
    (`--poll-interval-ms`: TASKPOOL_POLL_INTERVAL_MS), or the name that had before."""
    envvar = "TASKPOOL_" + flag.removeprefix("--").upper().replace("-", "_")
    return click.option(flag, envvar=envvar, cls=RenamedVariableOption, show_envvar=True, **attributes)


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


# The operator commands, by noun, each module imported the first time one of its commands is
# looked up (the help lists them all): `pyworker --role R` runs none and imports none of them.
OPERATOR_COMMANDS = {
    **dict.fromkeys(
        ("enqueue", "list", "show", "counts", "recover-stale", "cancel", "retry", "tasks"), "pyworker.admin.cli.tasks"
    ),
    **dict.fromkeys(("prune", "retention"), "pyworker.admin.cli.retention"),
    **dict.fromkeys(
        ("workers", "capacity", "health", "pause", "resume", "roles", "platforms", "version"),
        "pyworker.admin.cli.fleet",
    ),
    **dict.fromkeys(("schedules", "cron", "scheduler"), "pyworker.admin.cli.schedules"),
    "limits": "pyworker.admin.cli.limits",
    "schema": "pyworker.admin.schema",
}
# Where a command's function is not named as the command.
OPERATOR_COMMAND_FUNCTIONS = {"list": "list_tasks", "recover-stale": "recover_stale"}


class TaskpoolGroup(SharedOptionsGroup):
    """The main group: it turns pyworker's exceptions into exit codes, for every command at once,
    and loads its commands lazily: the operator commands (OPERATOR_COMMANDS) when one is looked
    up, the commands of the `pyworker.commands` entry points the first time it lists or looks up
    a command (a worker, which runs none, loads neither)."""

    group_class = SharedOptionsGroup

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.plugins_loaded = False
        # The plug-ins that could not be added, by name: why (pyworker.admin.cli.plugins).
        self.broken_plugins: dict[str, str] = {}

    def load_plugins(self) -> None:
        """Add the commands of the `pyworker.commands` entry points, once (pyworker.admin.cli.plugins:
        loaded then, so that a worker, which lists and looks up no command, loads none of it)."""
        if self.plugins_loaded:
            return
        self.plugins_loaded = True
        plugins = importlib.import_module("pyworker.admin.cli.plugins")
        self.broken_plugins.update(plugins.add_commands(self, reserved=OPERATOR_COMMANDS))

    def load_operator_command(self, name: str) -> None:
        if name in OPERATOR_COMMANDS and name not in self.commands:
            module = importlib.import_module(OPERATOR_COMMANDS[name])
            function = OPERATOR_COMMAND_FUNCTIONS.get(name, name)
            self.add_command(getattr(module, function), name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.load_plugins()
        return sorted({*super().list_commands(ctx), *OPERATOR_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self.load_operator_command(cmd_name)
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
            setup_logs(worker["log_format"], worker["log_level"], worker["worker_id"], " ".join(worker["role"]))
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
    _db: AdminDatabase | None = field(default=None, init=False, repr=False)

    @property
    def db(self) -> AdminDatabase:
        """The invocation's one AdminDatabase, made on first use: a --database-url given after
        the command's name has been read by then. Imported here: a worker needs none of the
        operator's SQL."""
        from pyworker.admin.queries import AdminDatabase

        if self._db is None:
            self._db = AdminDatabase(
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


pass_settings = click.make_pass_decorator(Settings)


def pass_db(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: the command gets the invocation's AdminDatabase as its first argument."""

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
@worker_option(
    "--role",
    multiple=True,
    metavar="ROLE[=N]",
    help="Run a worker for this role (with no command). Repeat it for a worker that serves several"
    " roles from one process (the variable: space-separated); ROLE=N runs at most N of the role's"
    " tasks at once.",
)
@worker_option(
    "--worker-id",
    show_default="host-pid-random",
    metavar="ID",
    help="The worker's name in the registry and on its tasks.",
)
@worker_option(
    "--poll-interval-ms",
    type=click.IntRange(min=1),
    default=5000,
    show_default=True,
    help="Look for tasks at least this often when no notification comes.",
)
@worker_option(
    "--heartbeat-interval-ms",
    type=click.IntRange(min=1),
    default=30000,
    show_default=True,
    help="Heartbeat a running task this often.",
)
@worker_option(
    "--handlers",
    multiple=True,
    metavar="MODULE",
    help="Import this module to register handlers (repeatable; the variable: space-separated).",
)
@worker_option(
    "--command",
    metavar="COMMAND",
    help="Run each task with this external command (split like a shell line).",
)
@worker_option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Worker log lines as text or JSON.",
)
@worker_option(
    "--log-level",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    show_default="info; debug with -v",
    help="Log the lines of this level and above: pyworker's, the handlers', their libraries'.",
)
@worker_option(
    "--shutdown-grace-seconds",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="On SIGTERM, let running tasks finish this long before handing them back.",
)
@worker_option(
    "--concurrency",
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
@worker_option(
    "--prefetch",
    type=click.IntRange(min=1, max=1000),
    default=1,
    show_default=True,
    help="Hold up to N tasks (claimed ahead of the free slots when N is over --concurrency);"
    " completions are recorded in batches (a crash re-runs the unrecorded ones).",
)
@worker_option(
    "--listen-database-url",
    metavar="URL",
    show_default="--database-url, unless --pooled: then the worker polls",
    help="LISTEN for wake-ups on this database URL, a session of its own: the server's own address"
    " when --database-url goes through a transaction pooler.",
)
@worker_option(
    "--metrics-port",
    type=click.IntRange(min=0, max=65535),
    metavar="PORT",
    help="Serve /metrics, /healthz and /readyz over HTTP on this port (0: any free port, logged)."
    " With --processes M, worker i of M serves PORT+i-1.",
)
@click.option(
    "--batch-runtime",
    envvar="TASKPOOL_BATCH_RUNTIME",
    show_envvar=True,
    is_flag=True,
    default=False,
    help="Run the roles whose handlers are async on one event loop that claims up to a role's share"
    " a call and records outcomes once per turn (docs/worker.md); sync roles keep their threads.",
)
@worker_option(
    "--loop-block-limit-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_LOOP_BLOCK_LIMIT,
    show_default=True,
    help="An async handler that blocks the event loop this long fails its attempt; the other"
    " async tasks go on on a new loop (handed back and run again, no retry spent).",
)
@worker_option(
    "--max-abandoned-threads",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_ABANDONED_THREADS,
    show_default=True,
    help="With this many handler threads left behind past their run timeout, stop claiming (and"
    " fail /healthz) until one returns; the tasks not begun are handed back.",
)
@worker_option(
    "--call-timeout-seconds",
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
        setup_logs(config.log_format, config.log_level, config.worker_id, " ".join(config.role_names))
        warn_if_pid_1()
        # The probes' HTTP server only when asked for: a worker without it loads none.
        serve_probes = importlib.import_module("pyworker.admin.probes").serve if config.metrics_port is not None else None
        batch_runtime = (
            importlib.import_module("pyworker.admin.batches").start_batch_runtime if worker["batch_runtime"] else None
        )
        code = importlib.import_module("pyworker.worker").run_worker(
            config, serve_probes, batch_runtime, compare_declarations=_compare_declarations
        )
    else:
        supervisor = importlib.import_module("pyworker.admin.supervisor")
        code = supervisor.run_workers(config, worker["processes"], supervisor.worker_environment(settings, ctx))
    ctx.exit(code)


def _compare_declarations(db: Database, declarations: list[RoleDeclaration]) -> None:
    """The worker's check of its declared roles, loaded only for a worker that has some."""
    importlib.import_module("pyworker.admin.declarations").compare_declarations(db, declarations)
