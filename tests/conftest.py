"""pytest fixtures that talk to a real PostgreSQL server.

The server is the one DATABASE_URL names (default: the project cluster that `make db` starts).
The Sqitch plan is deployed once per session into a template database; every test that asks
for `db_url` or `conn` gets a fresh copy of it (CREATE DATABASE ... TEMPLATE), dropped after the
test. All databases live on DATABASE_URL's server, reached as DATABASE_URL's user.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pyworker.config import default_database_url
from worker_support import Run, Workers, cli_runner_for, create_test_pool

REPO_ROOT = Path(__file__).resolve().parent.parent
# The Sqitch projects a test database gets, in order: the queue core and the reference crawler.
SQITCH_PROJECTS = (REPO_ROOT, REPO_ROOT / "crawler" / "sqitch")
TEMPLATE_DATABASE = "taskpool_pytest_template"
COPY_PREFIX = "taskpool_pytest_"

# libpq connection parameters and their environment variables, for the tools run as subprocesses.
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


def database_url() -> str:
    """The server to test against: $DATABASE_URL, else the project cluster as the libpq
    environment (PGPORT, ...) amends it."""
    return os.environ.get("DATABASE_URL") or default_database_url()


def url_for_database(url: str, dbname: str) -> str:
    """The same server and user as `url` (a URL or a key=value string), another database."""
    if "://" in url:
        # Not urlunsplit(): it drops the "//" of an empty host (postgresql:///db?host=/socket).
        parts = urlsplit(url)
        query = f"?{parts.query}" if parts.query else ""
        return f"{parts.scheme}://{parts.netloc}/{quote(dbname, safe='')}{query}"
    return make_conninfo(url, dbname=dbname)


def sqitch_target(url: str, dbname: str) -> str:
    """The db:pg:// URI Sqitch wants for `dbname` on `url`'s server."""
    if url.startswith(("postgresql://", "postgres://")):
        return "db:pg:" + url_for_database(url, dbname).split(":", 1)[1]
    # A key=value string has no URI form: the server comes from the libpq environment.
    return "db:pg:///" + quote(dbname, safe="")


def libpq_env(url: str, dbname: str) -> dict[str, str]:
    """os.environ plus the PG* variables that point libpq tools at `dbname` on `url`'s server."""
    env = {k: v for k, v in os.environ.items() if k != "SQITCH_TARGET"}
    params = conninfo_to_dict(url)
    params["dbname"] = dbname
    for key, value in params.items():
        if key in LIBPQ_ENV and value is not None:
            env[LIBPQ_ENV[key]] = str(value)
    return env


def admin_connect() -> psycopg.Connection:
    """An autocommit connection to DATABASE_URL itself, for CREATE and DROP DATABASE."""
    try:
        return psycopg.connect(database_url(), autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"cannot connect to the server in DATABASE_URL: {exc}\n"
            "Start the project cluster with `make db`, or point DATABASE_URL at a running server.",
            pytrace=False,
        )


def drop_database(admin: psycopg.Connection, dbname: str) -> None:
    """Drop `dbname` if it exists, terminating its sessions first."""
    admin.execute(
        sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname))
    )


def deploy(dbname: str) -> None:
    """`sqitch deploy --verify` the core's plan, then the crawler's (crawler/sqitch/, which
    requires the core's), into `dbname`, failing the tests with Sqitch's output."""
    sqitch = shutil.which("sqitch")
    if sqitch is None:
        pytest.fail("sqitch is not installed: run `make deps`", pytrace=False)
    url = database_url()
    for project in SQITCH_PROJECTS:
        result = subprocess.run(
            [sqitch, "deploy", "--verify", sqitch_target(url, dbname)],
            cwd=project,
            env=libpq_env(url, dbname),
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            pytest.fail(
                f"sqitch deploy of {project} into {dbname} failed (exit {result.returncode}):\n"
                f"{result.stdout}{result.stderr}",
                pytrace=False,
            )


@pytest.fixture(scope="session")
def template_database() -> Iterator[str]:
    """Name of a database holding the deployed plan, made once per session."""
    name = sql.Identifier(TEMPLATE_DATABASE)
    with admin_connect() as admin:
        drop_database(admin, TEMPLATE_DATABASE)
        admin.execute(sql.SQL("CREATE DATABASE {}").format(name))
    deploy(TEMPLATE_DATABASE)
    with admin_connect() as admin:
        # CREATE DATABASE ... TEMPLATE fails while anyone is connected to the template, and a
        # pg_cron job scheduled into it would connect every minute: keep everyone out.
        admin.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(name))
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
            (TEMPLATE_DATABASE,),
        )
    yield TEMPLATE_DATABASE
    with admin_connect() as admin:
        drop_database(admin, TEMPLATE_DATABASE)


@pytest.fixture
def db_url(template_database: str) -> Iterator[str]:
    """URL of a fresh copy of the deployed template, dropped after the test."""
    name = COPY_PREFIX + secrets.token_hex(4)
    with admin_connect() as admin:
        admin.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template_database)
            )
        )
    try:
        yield url_for_database(database_url(), name)
    finally:
        with admin_connect() as admin:
            drop_database(admin, name)


@pytest.fixture
def conn(db_url: str) -> Iterator[psycopg.Connection]:
    """An autocommit psycopg connection to the test's own database."""
    with psycopg.connect(db_url, autocommit=True) as connection:
        yield connection


# Worker processes (tests/test_worker*.py; the plumbing is in worker_support.py)


@pytest.fixture
def pool(conn: psycopg.Connection) -> psycopg.Connection:
    """`conn`, its database given the test handlers' tables and the test roles."""
    create_test_pool(conn)
    return conn


@pytest.fixture
def workers(db_url: str, tmp_path: Path) -> Iterator[Workers]:
    """`workers.start(role, worker_id, ...)` starts a worker process (`python -m pyworker`).

    At teardown every worker still running is killed (SIGKILL, by PID) with the commands it
    runs, and the workers' logs are printed (pytest shows them when the test failed).
    """
    started = Workers(db_url, tmp_path)
    try:
        yield started
    finally:
        started.kill_all()
        if started.started:
            print(started.describe())


@pytest.fixture
def empty_db_url() -> Iterator[str]:
    """URL of an empty database (no taskpool schema) on the test server, dropped after the test."""
    name = COPY_PREFIX + "empty_" + secrets.token_hex(4)
    with admin_connect() as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield url_for_database(database_url(), name)
    finally:
        with admin_connect() as admin:
            drop_database(admin, name)


@pytest.fixture
def worker_login_url(db_url: str) -> Iterator[str]:
    """A connection string for the test's database as a new login granted only taskpool_worker:
    what the least-privilege deployment gives a worker. Roles are the server's, so the login's
    name is unique to the test, and it is dropped after (its sessions ended first)."""
    login = "taskpool_test_worker_" + secrets.token_hex(4)
    with admin_connect() as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE taskpool_worker").format(sql.Identifier(login)))
    try:
        yield make_conninfo(db_url, user=login)
    finally:
        with admin_connect() as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (login,))
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(login)))


@pytest.fixture
def run(db_url: str) -> Run:
    """Run `pyworker --database-url <the test's database> ARGS...` (click's CliRunner)."""
    return cli_runner_for(db_url)
