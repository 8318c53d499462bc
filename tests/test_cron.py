"""`pyworker cron install|uninstall|status`: the tick as a pg_cron job.

pg_cron keeps a server's jobs in one database, cron.database_name (`taskpool` on the project
cluster). A test's own database is a copy elsewhere, so installing for it goes through
cron.schedule_in_database; installing for the cron database itself is a plain cron.schedule.
Every test that schedules a job removes it in a `finally`. The tests that need pg_cron skip when
the server has none loaded, or when its database lacks the extension.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import psycopg
import pytest
from core_fixtures import database_url, login_in_role, url_for_database
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from worker_support import Run, cli_runner_for, run_json, wait_for

from pyworker.admin import cron
from pyworker.db import Database


def cron_database_name() -> str | None:
    """cron.database_name of the test server, or None without pg_cron."""
    with psycopg.connect(database_url(), autocommit=True) as conn:
        row = conn.execute("SELECT current_setting('cron.database_name', true)").fetchone()
    return row[0] or None


@pytest.fixture(scope="module")
def cron_db() -> str:
    """The name of the database holding pg_cron's jobs; skips the test without pg_cron."""
    name = cron_database_name()
    if name is None:
        pytest.skip("pg_cron is not loaded on the test server (no cron.database_name)")
    try:
        with psycopg.connect(url_for_database(database_url(), name), autocommit=True) as conn:
            has_cron = conn.execute("SELECT to_regnamespace('cron') IS NOT NULL").fetchone()[0]
    except psycopg.OperationalError as error:
        pytest.skip(f"cannot connect to pg_cron's database {name!r}: {error}")
    if not has_cron:
        pytest.skip(f"pg_cron's database {name!r} has no pg_cron extension (make db creates it)")
    return name


@pytest.fixture
def cron_conn(cron_db: str) -> Iterator[psycopg.Connection]:
    """An autocommit connection to pg_cron's database, rows as dicts."""
    with psycopg.connect(
        url_for_database(database_url(), cron_db), autocommit=True, row_factory=dict_row
    ) as conn:
        yield conn


def dbname(url: str) -> str:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT current_database()").fetchone()[0]


def jobs(cron_conn: psycopg.Connection, name: str, user: str | None = None) -> list[dict[str, Any]]:
    """The jobs named `name` of `user` (by default the connection's: pg_cron's jobs are per user)."""
    return cron_conn.execute(
        "SELECT jobid, schedule, command, database, active FROM cron.job"
        " WHERE jobname = %s AND username = coalesce(%s, current_user)",
        (name, user),
    ).fetchall()


def remove_job(cron_conn: psycopg.Connection, name: str, user: str | None = None) -> None:
    """Unschedule job `name` (of `user`) if it is there, and forget its runs."""
    for row in jobs(cron_conn, name, user):
        cron_conn.execute("DELETE FROM cron.job_run_details WHERE jobid = %s", (row["jobid"],))
        cron_conn.execute("SELECT cron.unschedule(%s::bigint)", (row["jobid"],))


@pytest.fixture
def job(db_url: str, cron_conn: psycopg.Connection) -> Iterator[str]:
    """The test database's job name; whatever the test installed is removed afterwards."""
    name = f"taskpool_tick:{dbname(db_url)}"
    try:
        yield name
    finally:
        remove_job(cron_conn, name)


# Installing for another database (cron.schedule_in_database)


def test_install_twice_is_one_job_and_uninstall_removes_it(
    run: Run, db_url: str, cron_db: str, cron_conn: psycopg.Connection, job: str
) -> None:
    database = dbname(db_url)
    result = run("cron", "install")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"pg_cron job {job} (id ")
    assert f"every minute in {database} (a job of pg_cron's database {cron_db})" in result.stdout
    installed = run_json(run, "cron", "install")
    assert (installed["job_name"], installed["database"], installed["cron_database"]) == (
        job, database, cron_db
    )
    (row,) = jobs(cron_conn, job)
    assert row == {"jobid": installed["job"]["jobid"], "schedule": "* * * * *",
                   "command": "SELECT tick_schedules()", "database": database, "active": True}

    removed = run("cron", "uninstall")
    assert removed.exit_code == 0, removed.output
    assert removed.stdout.strip() == f"removed pg_cron job {job} (id {row['jobid']})"
    assert jobs(cron_conn, job) == []
    again = run("cron", "uninstall")
    assert again.exit_code == 0, again.output
    assert again.stdout.strip() == f"no pg_cron job {job}: nothing to remove"
    assert run_json(run, "cron", "uninstall")["removed"] is None


def test_status_shows_the_job_or_its_absence(
    run: Run, db_url: str, cron_db: str, job: str
) -> None:
    result = run("cron", "status")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (
        f"no pg_cron job {job}: run `pyworker cron install` (or `pyworker scheduler`)"
    )
    assert run_json(run, "cron", "status") == {
        "job_name": job, "database": dbname(db_url), "cron_database": cron_db,
        "job": None, "runs": [],
    }

    jobid = run_json(run, "cron", "install")["job"]["jobid"]
    shown = run("cron", "status")
    assert shown.exit_code == 0, shown.output
    fields = dict(
        (key.strip(), value.strip())
        for key, value in (line.split(":", 1) for line in shown.stdout.split("\n\n")[0].splitlines())
    )
    assert fields == {
        "jobid": str(jobid), "jobname": job, "schedule": "* * * * *",
        "command": "SELECT tick_schedules()", "database": dbname(db_url),
        "username": fields["username"], "active": "true", "cron_database": cron_db,
    }
    assert "last runs:" in shown.stdout
    status = run_json(run, "cron", "status", "--runs", "3")
    assert status["job"]["jobid"] == jobid and status["job"]["active"] is True
    assert isinstance(status["runs"], list)


def test_different_databases_get_different_jobs(
    db_url: str, empty_db_url: str, cron_conn: psycopg.Connection, job: str
) -> None:
    other = f"taskpool_tick:{dbname(empty_db_url)}"
    try:
        assert cli_runner_for(db_url)("cron", "install").exit_code == 0
        # An empty database has no tick to run, but the job is its own.
        assert cli_runner_for(empty_db_url)("cron", "install").exit_code == 0
        assert len(jobs(cron_conn, job)) == 1 and len(jobs(cron_conn, other)) == 1
        assert cli_runner_for(empty_db_url)("cron", "uninstall").exit_code == 0
        assert len(jobs(cron_conn, job)) == 1 and jobs(cron_conn, other) == []
    finally:
        remove_job(cron_conn, other)


@pytest.mark.waits_for_the_clock
def test_pg_cron_fires_the_tick(
    run: Run, conn: psycopg.Connection, cron_conn: psycopg.Connection, job: str
) -> None:
    """The one test that waits for pg_cron's next minute (up to 75 s; Debian's pg_cron 1.4 has no
    schedule in seconds, and starts a job only when a minute begins): pg_cron itself runs the
    installed job. Marked so that tests/slowest_first.py starts it first, to wait beside the rest."""
    conn.execute("INSERT INTO dispensaries (name) VALUES ('Green Leaf'), ('Blue Sky')")
    jobid = run_json(run, "cron", "install")["job"]["jobid"]

    def succeeded_run() -> dict[str, Any] | None:
        return cron_conn.execute(
            "SELECT status, return_message, start_time FROM cron.job_run_details"
            " WHERE jobid = %s AND status = 'succeeded' ORDER BY runid LIMIT 1",
            (jobid,),
        ).fetchone()

    def failures() -> str:
        rows = cron_conn.execute(
            "SELECT status, return_message FROM cron.job_run_details WHERE jobid = %s", (jobid,)
        ).fetchall()
        return f"runs of job {jobid}: {rows}"

    ran = wait_for(succeeded_run, 75, "pg_cron to run the tick", interval=0.5, also=failures)
    tasks = dict(conn.execute("SELECT role, count(*) FROM worker_tasks GROUP BY role").fetchall())
    assert tasks == {"store_discovery": 1, "analytics_refresh": 1, "product_resync": 2, "payload_storage_sweep": 1}
    last_runs = conn.execute("SELECT DISTINCT last_run_at FROM task_schedules WHERE enabled").fetchall()
    assert len(last_runs) == 1 and last_runs[0][0] is not None

    status = run_json(run, "cron", "status")
    assert status["runs"][-1]["status"] == "succeeded"
    assert datetime.fromisoformat(status["runs"][-1]["start_time"]) == ran["start_time"]
    text = run("cron", "status")
    assert "succeeded" in text.stdout.split("last runs:")[1]


# Installing in pg_cron's own database (cron.schedule)


@contextmanager
def login_whose_tick_cannot_run(cron_db: str) -> Iterator[tuple[str, str]]:
    """A login of its own on pg_cron's database and its name: it may use pg_cron (the `cron`
    schema; not pg_read_all_settings, which a login installing in pg_cron's own database does
    not need) and its sessions find no taskpool function
    (search_path = pg_catalog). pg_cron runs a job as the user who scheduled it, so a tick job
    this login schedules fails should a minute start while it exists: tick_schedules() does not
    exist for it. Its jobs, their runs and its grant are removed afterwards."""
    cron_url = url_for_database(database_url(), cron_db)
    with login_in_role(cron_url, "pg_read_all_stats") as url:
        login = conninfo_to_dict(url)["user"]
        with psycopg.connect(cron_url, autocommit=True) as admin:
            admin.execute(sql.SQL("ALTER ROLE {} SET search_path = pg_catalog").format(sql.Identifier(login)))
            admin.execute(sql.SQL("GRANT USAGE ON SCHEMA cron TO {}").format(sql.Identifier(login)))
            try:
                yield url, login
            finally:
                admin.execute("DELETE FROM cron.job_run_details WHERE username = %s", (login,))
                admin.execute("DELETE FROM cron.job WHERE username = %s", (login,))
                admin.execute(sql.SQL("REVOKE USAGE ON SCHEMA cron FROM {}").format(sql.Identifier(login)))


def test_install_in_pg_cron_s_own_database(cron_db: str, cron_conn: psycopg.Connection) -> None:
    """Against the project database itself (make test deploys there first), where the tick must
    never run: installed by a login whose job cannot run it (login_whose_tick_cannot_run), so
    that the test needs no quiet moment away from pg_cron's minute. pg_cron's jobs are per user:
    a tick job that `make cron` installed there (as postgres) is not touched."""
    has_tick = cron_conn.execute(
        "SELECT to_regprocedure('tick_schedules()') IS NOT NULL AS has_tick"
    ).fetchone()["has_tick"]
    if not has_tick:
        pytest.skip(f"the taskpool schema (0.2.0) is not deployed in {cron_db!r}")
    name = f"taskpool_tick:{cron_db}"
    postgres_s_own = jobs(cron_conn, name)
    with login_whose_tick_cannot_run(cron_db) as (url, login):
        run = cli_runner_for(url)
        installed = run_json(run, "cron", "install")
        assert (installed["database"], installed["cron_database"]) == (cron_db, cron_db)
        result = run("cron", "install")
        assert result.exit_code == 0
        assert "a job of pg_cron's database" not in result.stdout
        (row,) = jobs(cron_conn, name, login)
        assert (row["database"], row["command"]) == (cron_db, "SELECT tick_schedules()")
        assert run_json(run, "cron", "status")["job"]["jobid"] == row["jobid"]
        assert run_json(run, "cron", "uninstall")["removed"] == row["jobid"]
        assert jobs(cron_conn, name, login) == []
        # Had a minute started meanwhile, its run would have failed: the tick never ran here.
        runs = cron_conn.execute(
            "SELECT status, return_message FROM cron.job_run_details WHERE jobid = %s", (row["jobid"],)
        ).fetchall()
        assert all(attempt["status"] != "succeeded" for attempt in runs), runs
    assert jobs(cron_conn, name) == postgres_s_own


# Without pg_cron (simulated: the project cluster always has it)


def fake_placement(
    monkeypatch: pytest.MonkeyPatch, cron_database: str | None, *, cron_has_extension: bool
) -> None:
    """pyworker.admin.cron.placement as on a server where the taskpool database has no `cron` schema,
    cron.database_name is `cron_database`, and that database has the extension or not."""

    def placement(db: Database) -> dict[str, Any]:
        database = db.connect().execute("SELECT current_database() AS name").fetchone()["name"]
        if database == cron_database:
            return {"database": database, "has_cron": cron_has_extension,
                    "cron_database": cron_database, "reads_all_settings": True}
        return {"database": database, "has_cron": False, "cron_database": cron_database,
                "reads_all_settings": True}

    monkeypatch.setattr(cron, "placement", placement)


def test_without_pg_cron_install_and_status_exit_1_pointing_to_the_scheduler(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_placement(monkeypatch, None, cron_has_extension=False)
    for command in ("install", "status"):
        result = run("cron", command)
        assert result.exit_code == 1, result.output
        assert "pg_cron is not loaded on this server" in result.stderr
        assert "pyworker scheduler" in result.stderr
    removed = run("cron", "uninstall")
    assert removed.exit_code == 0, removed.output
    assert "nothing" not in removed.stdout and "pg_cron is not loaded" in removed.stdout
    assert run_json(run, "cron", "uninstall")["removed"] is None


def test_a_login_that_cannot_see_pg_cron_s_database_is_told_what_to_grant(db_url: str) -> None:
    """cron.database_name is shown only to superusers and pg_read_all_settings: a login without
    either, in a database with no cron schema, learns that, not that pg_cron is missing."""
    with login_in_role(db_url, "pg_read_all_stats") as url:
        run = cli_runner_for(url)
        for command in ("install", "status"):
            result = run("cron", command)
            assert result.exit_code == 1, result.output
            assert "GRANT pg_read_all_settings TO the login" in result.stderr, result.stderr
            assert "not loaded" not in result.stderr


def test_a_cron_database_without_the_extension_exits_1(
    run: Run, empty_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_placement(monkeypatch, dbname(empty_db_url), cron_has_extension=False)
    result = run("cron", "install")
    assert result.exit_code == 1, result.output
    assert f"run `CREATE EXTENSION pg_cron` in '{dbname(empty_db_url)}'" in result.stderr


def test_a_cron_database_that_cannot_be_reached_exits_1(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_placement(monkeypatch, "taskpool_no_such_database", cron_has_extension=True)
    result = run("cron", "install")
    assert result.exit_code == 1, result.output
    assert "pg_cron's database 'taskpool_no_such_database'" in result.stderr
    assert "database connection failed" in result.stderr
