"""pytest fixtures that talk to a real PostgreSQL server.

The server is the one DATABASE_URL names (default: the project cluster that `make db` starts).
The Sqitch plan is deployed once per session into a template database; every test that asks
for `db_url` or `conn` gets a fresh copy of it (CREATE DATABASE ... TEMPLATE), dropped after the
test. Under pytest-xdist each worker is a session of its own, with its own template (named after
the worker: PYTEST_XDIST_WORKER), so that no worker drops or copies another's. All databases live
on DATABASE_URL's server, reached as DATABASE_URL's user. The plumbing is the test kit's
(testkit/, shared with bench/ and faults/); the helpers below keep the names the tests import.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from testkit import databases
from testkit.databases import DatabaseError
from testkit.env import REPO_ROOT, libpq, server_url, sqitch_target, url_for  # noqa: F401 (for tests)
from worker_support import Run, Workers, cli_runner_for, create_test_pool, fail

# Names tests import from here (REPO_ROOT too): the kit's, under the names they had.
database_url = server_url
url_for_database = url_for
libpq_env = libpq

# gw0, gw1, ... under pytest-xdist; unset in a run without workers (-n 0 or no -n).
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
TEMPLATE_DATABASE = "taskpool_pytest_template" + (f"_{XDIST_WORKER}" if XDIST_WORKER else "")
COPY_PREFIX = "taskpool_pytest_"


def pytest_configure(config: pytest.Config) -> None:
    if XDIST_WORKER:
        # xdist's workers run with COLUMNS=80 in their environment, where a run without workers
        # has none: the CLI would fit its tables into 80 columns, as on a terminal.
        os.environ.pop("COLUMNS", None)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Under --dist loadgroup, fail a test whose xdist_group did not reach its node id, where
    xdist's scheduler reads it (so pytest 9.2 with pytest-xdist 3.8): its module would be spread
    over the workers and its module fixtures made once on each, silently."""
    # Set in each worker when the run is --dist loadgroup.
    if getattr(item.config.option, "loadgroup", False) and item.get_closest_marker("xdist_group"):
        if "@" not in item.nodeid:
            fail(
                "--dist loadgroup: this test's xdist_group is not in its node id, so pytest-xdist"
                " does not keep its group on one worker: use the pytest and pytest-xdist versions"
                " that pyproject.toml asks for"
            )


def admin_connect() -> psycopg.Connection:
    """An autocommit connection to DATABASE_URL itself, for CREATE and DROP DATABASE."""
    try:
        return databases.admin(database_url())
    except DatabaseError as exc:
        fail(f"{exc}\nStart the project cluster with `make db`, or point DATABASE_URL at a running server.")


def drop_database(admin: psycopg.Connection, dbname: str) -> None:
    """Drop `dbname` if it exists, terminating its sessions first."""
    admin.execute(
        sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname))
    )


@pytest.fixture(scope="session")
def template_database() -> Iterator[str]:
    """Name of a database holding the deployed plan, made once per session."""
    admin_connect().close()  # the server answers, or the tests fail with the hint
    try:
        template = databases.template(database_url(), TEMPLATE_DATABASE)
    except DatabaseError as exc:
        fail(f"the test template ({TEMPLATE_DATABASE}) could not be made: {exc}")
    yield template.name
    template.drop()


@pytest.fixture
def db_url(template_database: str) -> Iterator[str]:
    """URL of a fresh copy of the deployed template, dropped after the test."""
    name = COPY_PREFIX + secrets.token_hex(4)
    with databases.copy(database_url(), template_database, name) as url:
        yield url


@pytest.fixture
def conn(db_url: str) -> Iterator[psycopg.Connection]:
    """An autocommit psycopg connection to the test's own database."""
    with psycopg.connect(db_url, autocommit=True) as connection:
        yield connection


@pytest.fixture
def in_the_past(conn: psycopg.Connection) -> Iterator[Callable[[str], None]]:
    """Shift taskpool's clock back (e.g. '2 hours') for every session, the CLI's included, until
    real_clock(conn) or the end of the test."""

    def shift(ago: str) -> None:
        conn.execute("SELECT set_taskpool_clock_offset(%s::interval)", (f"-{ago}",))

    yield shift
    real_clock(conn)


def real_clock(conn: psycopg.Connection) -> None:
    """Put taskpool's clock back on the database's own, for every session."""
    conn.execute("SELECT set_taskpool_clock_offset('0')")


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
    with databases.empty(database_url(), COPY_PREFIX + "empty_" + secrets.token_hex(4)) as url:
        yield url


@contextmanager
def login_in_role(db_url: str, group: str) -> Iterator[str]:
    """A connection string for the database of `db_url` as a new login granted only `group`.
    Roles are the server's, so the login's name is unique, and it is dropped after (its sessions
    ended first)."""
    login = f"taskpool_test_{group}_" + secrets.token_hex(4)
    with admin_connect() as admin:
        admin.execute(
            sql.SQL("CREATE ROLE {} LOGIN IN ROLE {}").format(sql.Identifier(login), sql.Identifier(group))
        )
    try:
        yield make_conninfo(db_url, user=login)
    finally:
        with admin_connect() as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (login,))
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(login)))


@pytest.fixture
def worker_login_url(db_url: str) -> Iterator[str]:
    """The test's database as a new login granted only taskpool_worker: what the
    least-privilege deployment gives a worker."""
    with login_in_role(db_url, "taskpool_worker") as url:
        yield url


@pytest.fixture
def monitor_login_url(db_url: str) -> Iterator[str]:
    """The test's database as a new login granted only pg_monitor: what a Prometheus scraper gets."""
    with login_in_role(db_url, "pg_monitor") as url:
        yield url


@pytest.fixture
def run(db_url: str) -> Run:
    """Run `pyworker --database-url <the test's database> ARGS...` (click's CliRunner)."""
    return cli_runner_for(db_url)
