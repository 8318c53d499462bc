"""Throwaway taskpool databases for tests: deploy the Sqitch plan, copy it per test, drain the
queue with a real worker, and report what happened to every task.

Used by the `taskpool` pytest fixture (pyworker.testing.pytest_plugin), and usable without
pytest. Needs a PostgreSQL server on which the connecting user may CREATE DATABASE. The deploy is
pyworker.schema's (what `pyworker schema apply` runs): no Sqitch needed.

Where:
- the server: TASKPOOL_TEST_DATABASE_URL, else DATABASE_URL, else pyworker's default (libpq's:
  PGHOST, PGPORT, PGUSER, PGDATABASE, ..., else the local socket). The databases are
  made on that server, as that user; the database it names is only connected to, to create and
  drop them.
- the Sqitch project (sqitch.plan, deploy/, revert/, verify/): TASKPOOL_SQITCH_DIR, else the
  one the package carries (pyworker/sqitch/ in the wheel; the checkout's root for an editable
  install, `pip install -e`, of the taskpool repository); then the Sqitch project of every
  installed package that names one in the `pyworker.schemas` entry points (the reference
  crawler's, which requires the core's), in the order of their names.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from pyworker import handlers
from pyworker.config import default_database_url
from pyworker.db import dump_json
from pyworker.errors import ConfigurationError, TaskpoolError, translate
from pyworker.admin.schema import Deployer, Plan, database_url_for, packaged_project
from pyworker.testing.draining import drain

SERVER_ENV = "TASKPOOL_TEST_DATABASE_URL"
SQITCH_DIR_ENV = "TASKPOOL_SQITCH_DIR"
DATABASE_PREFIX = "taskpool_testing_"
# Packages built on taskpool that bring SQL of their own name their Sqitch project here: each
# entry point names a function of no arguments that returns the project's directory.
SCHEMAS_ENTRY_POINT_GROUP = "pyworker.schemas"

# libpq's connection parameters and their environment variables: for Sqitch (psql), which takes
# the server from the environment when it is given as a key=value string (no db:pg: URI form),
# and for the other libpq tools a test runs (pgbench, psql).
LIBPQ_ENV = {
    "host": "PGHOST",
    "hostaddr": "PGHOSTADDR",
    "port": "PGPORT",
    "dbname": "PGDATABASE",
    "user": "PGUSER",
    "password": "PGPASSWORD",
    "passfile": "PGPASSFILE",
    "options": "PGOPTIONS",
    "application_name": "PGAPPNAME",
    "connect_timeout": "PGCONNECT_TIMEOUT",
    "client_encoding": "PGCLIENTENCODING",
    "service": "PGSERVICE",
    "sslmode": "PGSSLMODE",
    "sslrootcert": "PGSSLROOTCERT",
    "sslcert": "PGSSLCERT",
    "sslkey": "PGSSLKEY",
    "sslcrl": "PGSSLCRL",
    "gssencmode": "PGGSSENCMODE",
    "channel_binding": "PGCHANNELBINDING",
    "target_session_attrs": "PGTARGETSESSIONATTRS",
}


def libpq_env(url: str, dbname: str | None = None) -> dict[str, str]:
    """os.environ (less SQITCH_TARGET) plus the PG* variables that point libpq tools at `url`'s
    server as its user, and at `dbname` if given (else at `url`'s database)."""
    env = {k: v for k, v in os.environ.items() if k != "SQITCH_TARGET"}
    params = conninfo_to_dict(url)
    if dbname is not None:
        params["dbname"] = dbname
    for key, value in params.items():
        if key in LIBPQ_ENV and value is not None:
            env[LIBPQ_ENV[key]] = str(value)
    return env


class TestDatabaseError(ConfigurationError):
    """The throwaway test database cannot be made."""

    __test__ = False  # not a pytest test class, whatever its name


def server_url(explicit: str | None = None) -> str:
    """The server the test databases are made on (see the module docstring)."""
    return explicit or os.environ.get(SERVER_ENV) or os.environ.get("DATABASE_URL") or default_database_url()


def sqitch_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The Sqitch project that holds taskpool's schema (see the module docstring)."""
    given = explicit or os.environ.get(SQITCH_DIR_ENV)
    if not given:
        try:
            return packaged_project()
        except ConfigurationError as error:
            raise TestDatabaseError(f"{error}; or set {SQITCH_DIR_ENV} (--taskpool-sqitch-dir)") from error
    if not (Path(given) / "sqitch.plan").is_file():
        raise TestDatabaseError(
            f"no Sqitch project (sqitch.plan) in {SQITCH_DIR_ENV}={given}: the taskpool test"
            " databases are deployed from taskpool's Sqitch plan"
        )
    return Path(given)


def plugin_projects() -> list[Path]:
    """The Sqitch projects the `pyworker.schemas` entry points name, in the order of their names;
    TestDatabaseError naming the entry point whose project cannot be found."""
    projects = []
    for entry_point in sorted(entry_points(group=SCHEMAS_ENTRY_POINT_GROUP), key=lambda point: point.name):
        where = f"{entry_point.name!r} ({entry_point.value}, entry point group {SCHEMAS_ENTRY_POINT_GROUP})"
        try:
            project = Path(entry_point.load()())
        except Exception as error:
            raise TestDatabaseError(f"the Sqitch project of {where} cannot be found: {error}") from error
        if not (project / "sqitch.plan").is_file():
            raise TestDatabaseError(f"the Sqitch project of {where} has no sqitch.plan: {project}")
        projects.append(project)
    return projects


def connect_admin(url: str) -> psycopg.Connection:
    """An autocommit connection to `url` (the server's own database), to create and drop databases."""
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as error:
        raise TestDatabaseError(
            f"cannot connect to the test server ({SERVER_ENV}, else DATABASE_URL): {str(error).strip()}"
        ) from error


def create_database(server: str, name: str, *, template: str | None = None) -> str:
    """CREATE DATABASE `name` on `server` (a copy of `template`); its URL."""
    with connect_admin(server) as admin:
        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            statement = sql.SQL("{} TEMPLATE {}").format(statement, sql.Identifier(template))
        admin.execute(statement)
    return database_url_for(server, name)


def drop_database(server: str, name: str) -> None:
    """DROP DATABASE `name` on `server` if it exists, ending its sessions first."""
    with connect_admin(server) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def deploy(url: str, project: Path, *, verify: bool = False) -> None:
    """Deploy the plan of `project` into the database of `url`, as `pyworker schema apply` does
    (into Sqitch's registry, as `sqitch deploy` would), then the plug-ins' (plugin_projects);
    each change's verify script runs with `verify`."""
    for top in (project, *plugin_projects()):
        try:
            Deployer(url, Plan.load(top), verify=verify).deploy(install=True)
        except TaskpoolError as error:
            raise TestDatabaseError(f"deploying {top}/sqitch.plan failed: {error}") from error


def insert_role(conn: psycopg.Connection, role: str, **settings: Any) -> None:
    """Insert a role into task_roles through `conn` (settings: its columns, e.g. max_retries=0,
    backoff_base="1 second"); the others take their defaults."""
    columns = ["role", *settings]
    conn.execute(
        sql.SQL("INSERT INTO task_roles ({}) VALUES ({})").format(
            sql.SQL(", ").join(map(sql.Identifier, columns)),
            sql.SQL(", ").join([sql.Placeholder()] * len(columns)),
        ),
        [role, *settings.values()],
    )


class Template:
    """A database holding the deployed plan, made once (per test session), copied per test.

    `name` is a fixed name (a leftover of that name is dropped first), else a random one;
    `verify` deploys with `sqitch deploy --verify`."""

    def __init__(
        self,
        server: str | None = None,
        project: str | os.PathLike[str] | None = None,
        *,
        name: str | None = None,
        verify: bool = False,
    ) -> None:
        self.server = server_url(server)
        self.project = sqitch_dir(project)
        self.name = name or DATABASE_PREFIX + secrets.token_hex(4)
        self.verify = verify
        self._copies = 0
        self._made = False

    def create(self, setup: Callable[[str], None] | None = None) -> None:
        """Create and deploy the template; `setup(url)` then adds what every copy shares (roles,
        tables), before the template is closed to connections."""
        drop_database(self.server, self.name)
        url = create_database(self.server, self.name)
        self._made = True
        deploy(url, self.project, verify=self.verify)
        if setup is not None:
            setup(url)
        with connect_admin(self.server) as admin:
            # CREATE DATABASE ... TEMPLATE fails while anyone is connected to the template, and a
            # pg_cron job scheduled into it would connect every minute: keep everyone out.
            admin.execute(
                sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(sql.Identifier(self.name))
            )
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (self.name,))

    def copy(self, name: str | None = None) -> TaskpoolDatabase:
        """A fresh database with the deployed plan (named `name`, else after the template), for
        one test; drop() it after."""
        if name is None:
            self._copies += 1
            name = f"{self.name}_{self._copies}"
        url = create_database(self.server, name, template=self.name)
        return TaskpoolDatabase(url, server=self.server, name=name)

    def drop(self) -> None:
        if self._made:
            drop_database(self.server, self.name)
            self._made = False


@dataclass
class TaskReport:
    """What happened to a task: its row, as the database has it now, and the error of each of
    its attempts that ended without completing (worker_task_attempts), oldest first."""

    id: int
    role: str
    status: str
    payload: dict[str, Any]
    result: Any
    error: str | None
    attempts: int
    retry_count: int
    dispensary_id: int | None
    scheduled_for: datetime | None
    attempt_errors: list[str | None] = field(default_factory=list)


@dataclass
class DrainResult:
    """Every task of the database after a drain (in id order), and how many attempts it ran."""

    tasks: list[TaskReport]
    ran: int

    def __iter__(self):
        return iter(self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)

    def task(self, task_id: int) -> TaskReport:
        for report in self.tasks:
            if report.id == task_id:
                return report
        raise KeyError(f"no task {task_id} (tasks: {', '.join(str(t.id) for t in self.tasks) or 'none'})")

    def by_role(self, role: str) -> list[TaskReport]:
        return [report for report in self.tasks if report.role == role]

    @property
    def statuses(self) -> dict[int, str]:
        """Each task's status by id."""
        return {report.id: report.status for report in self.tasks}


_TASKS = """
SELECT t.id, t.role, t.status, t.payload, t.result, t.error_message AS error, t.attempt AS attempts,
       t.retry_count, t.dispensary_id, t.scheduled_for,
       coalesce((SELECT array_agg(a.error_message ORDER BY a.attempt)
                   FROM worker_task_attempts a WHERE a.task_id = t.id), '{}') AS attempt_errors
  FROM worker_tasks t
 ORDER BY t.id
"""


@contextmanager
def _translated() -> Iterator[None]:
    """The database's refusals as pyworker's errors (InvalidInput, Refused, ...), its message kept."""
    try:
        yield
    except psycopg.Error as error:
        raise translate(error) from error


class TaskpoolDatabase:
    """A throwaway database with taskpool deployed: enqueue, drain with a real worker, report.

    `url` is the database's connection string: give it to the code under test."""

    def __init__(self, url: str, *, server: str | None = None, name: str | None = None) -> None:
        self.url = url
        self.server = server
        self.name = name
        self._offset_seconds = 0.0

    def connect(self, **kwargs: Any) -> psycopg.Connection:
        """A new autocommit connection to the database (close it: `with db.connect() as conn`)."""
        kwargs.setdefault("autocommit", True)
        return psycopg.connect(self.url, **kwargs)

    def add_role(self, role: str, **settings: Any) -> None:
        """Insert a role into task_roles (settings: its columns, e.g. max_retries=0,
        backoff_base="1 second"); the others take their defaults. Roles are data: a test
        database has the seeded ones only."""
        with self.connect() as conn, _translated():
            insert_role(conn, role, **settings)

    def enqueue(self, role: str, payload: Mapping[str, Any] | None = None, **fields: Any) -> int:
        """Enqueue one task (fields as enqueue_tasks takes them: dispensary_id, priority,
        scheduled_for, dedupe_key, max_retries, ...); its id."""
        return self.enqueue_many([{"role": role, "payload": dict(payload or {}), **fields}])[0]

    def enqueue_many(self, specs: Iterable[Mapping[str, Any]]) -> list[int]:
        """Enqueue tasks in one statement (specs as enqueue_tasks takes them); their ids."""
        with self.connect() as conn, _translated():
            rows = conn.execute(
                "SELECT id FROM enqueue_tasks(%s::jsonb)", (Jsonb(list(map(dict, specs)), dumps=dump_json),)
            ).fetchall()
        return [row[0] for row in rows]

    def tasks(self) -> list[TaskReport]:
        """Every task, in id order, as the database has it now."""
        with self.connect(row_factory=dict_row) as conn:
            return [TaskReport(**row) for row in conn.execute(_TASKS).fetchall()]

    def drain(
        self,
        registry: handlers.Registry = handlers.registry,
        roles: str | Sequence[str] | None = None,
        *,
        timeout: float = 60.0,
        **settings: Any,
    ) -> DrainResult:
        """Run a real worker (pyworker.testing.drain) in this thread until no task of `roles`
        (default: the registry's) is ready, then report every task. Tasks scheduled for later
        (a retry's backoff, a snooze) stay pending: advance() the clock and drain again."""
        ran = drain(self.url, roles, registry, timeout=timeout, **settings)
        return DrainResult(self.tasks(), ran)

    def advance(self, seconds: float) -> None:
        """Move taskpool's clock `seconds` ahead (set_taskpool_clock_offset, for every session of
        this database), so that retries, snoozes and scheduled tasks come due."""
        self._offset_seconds += seconds
        with self.connect() as conn:
            conn.execute(
                "SELECT set_taskpool_clock_offset(make_interval(secs => %s))", (self._offset_seconds,)
            )

    def drop(self) -> None:
        """Drop the database (its sessions ended first)."""
        if self.server is None or self.name is None:
            raise TestDatabaseError("this TaskpoolDatabase was not made by a Template: drop it yourself")
        drop_database(self.server, self.name)
