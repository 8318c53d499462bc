"""The tick's pg_cron job: install, uninstall and status, wherever pg_cron keeps its jobs.

pg_cron keeps the jobs of a whole server in one database, cron.database_name. When that is the
taskpool database (it has the `cron` schema), the job is a plain cron.schedule. Otherwise the
job is written into pg_cron's database with cron.schedule_in_database and runs in the taskpool
database; that takes a connection to a second database (same server, same credentials), which
is why this lives in Python. The tick itself is tick_schedules(), in SQL.

Several taskpool databases can share a server (test copies, staging), so each gets its own job,
named after it: `taskpool_tick:<database>`. pg_cron upserts jobs by name, so installing twice
leaves one job. pg_cron stores job names as `name` (63 bytes): databases whose names agree on
their first 49 bytes would share a job.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pyworker.admin.schema import database_url_for
from pyworker.db import Database
from pyworker.errors import DatabaseUnavailable, TaskpoolError


class CronMissing(TaskpoolError):
    """pg_cron is not available on this server: run `pyworker scheduler` to tick the schedules."""


JOB_PREFIX = "taskpool_tick:"
JOB_SCHEDULE = "* * * * *"
JOB_COMMAND = "SELECT tick_schedules()"

# pg_cron (1.4: jobs are upserted by name; cron.job and cron.job_run_details are per user)
# cron.database_name is a superuser-only setting: current_setting() raises for a login without
# pg_read_all_settings even with missing_ok, and pg_settings hides its row instead.
CRON_PLACEMENT = (
    "SELECT current_database() AS database, to_regnamespace('cron') IS NOT NULL AS has_cron,"
    " (SELECT nullif(s.setting, '') FROM pg_settings s WHERE s.name = 'cron.database_name') AS cron_database,"
    " pg_has_role('pg_read_all_settings', 'USAGE') AS reads_all_settings"
)
CRON_SCHEDULE = (
    "SELECT cron.schedule(job_name => %(job_name)s::text, schedule => %(schedule)s::text,"
    " command => %(command)s::text) AS jobid"
)
CRON_SCHEDULE_IN_DATABASE = (
    "SELECT cron.schedule_in_database(job_name => %(job_name)s::text,"
    " schedule => %(schedule)s::text, command => %(command)s::text,"
    " database => %(database)s::text) AS jobid"
)
CRON_JOB = (
    "SELECT jobid, jobname, schedule, command, database, username, active FROM cron.job"
    " WHERE jobname = %(job_name)s::name AND username = current_user"
)
CRON_UNSCHEDULE = (
    "SELECT j.jobid, cron.unschedule(j.jobid) AS removed FROM cron.job j"
    " WHERE j.jobname = %(job_name)s::name AND j.username = current_user"
)
# Newest first, by the primary key: job_run_details has no index on jobid.
CRON_JOB_RUNS = (
    "SELECT runid, status, start_time, end_time, return_message FROM cron.job_run_details"
    " WHERE jobid = %(jobid)s::bigint ORDER BY runid DESC LIMIT %(limit)s::integer"
)


# The SQL, on a Database's connection (the taskpool database's or pg_cron's)


def placement(db: Database) -> dict[str, Any]:
    """This database's name, whether it has the `cron` schema, and cron.database_name (None when
    pg_cron is not loaded)."""
    return db.query_one(CRON_PLACEMENT)


def schedule(db: Database, job_name: str, schedule: str, command: str) -> int:
    """cron.schedule: the job runs in this database; returns its jobid."""
    params = {"job_name": job_name, "schedule": schedule, "command": command}
    return db.query_one(CRON_SCHEDULE, params)["jobid"]


def schedule_in_database(db: Database, job_name: str, schedule: str, command: str, database: str) -> int:
    """cron.schedule_in_database: the job runs in `database`; returns its jobid."""
    params = {"job_name": job_name, "schedule": schedule, "command": command, "database": database}
    return db.query_one(CRON_SCHEDULE_IN_DATABASE, params)["jobid"]


def find_job(db: Database, job_name: str) -> dict[str, Any] | None:
    """The current user's pg_cron job of that name, or None."""
    return db.query_one(CRON_JOB, {"job_name": job_name})


def unschedule(db: Database, job_name: str) -> int | None:
    """Removes the current user's job of that name; its jobid, or None when there was none."""
    row = db.query_one(CRON_UNSCHEDULE, {"job_name": job_name})
    return row["jobid"] if row else None


def job_runs(db: Database, jobid: int, limit: int = 10) -> list[dict[str, Any]]:
    """The job's last runs from cron.job_run_details, newest first."""
    return db.query(CRON_JOB_RUNS, {"jobid": jobid, "limit": limit})


def job_name(database: str) -> str:
    """The name of the tick's job for that taskpool database."""
    return JOB_PREFIX + database


@dataclass
class CronSite:
    """Where the tick's job of one taskpool database lives."""

    database: str  # the taskpool database, where the job runs
    cron_database: str  # the database holding pg_cron's tables
    db: Database  # a connection to cron_database (the taskpool one when they are the same)

    @property
    def job_name(self) -> str:
        return job_name(self.database)

    @property
    def same_database(self) -> bool:
        return self.cron_database == self.database

    def describe(self) -> dict[str, Any]:
        return {"job_name": self.job_name, "database": self.database, "cron_database": self.cron_database}


@contextmanager
def cron_site(db: Database) -> Iterator[CronSite]:
    """The site of `db`'s tick job; CronMissing, saying what to do, when pg_cron is unusable.

    `db` is the taskpool database. A connection to pg_cron's database, when that is another
    one, is opened here and closed on exit.
    """
    where = placement(db)
    database = where["database"]
    if where["has_cron"]:
        yield CronSite(database, database, db)
        return
    cron_database = where["cron_database"]
    if cron_database is None and not where["reads_all_settings"]:
        raise CronMissing(
            f"this login cannot see which database pg_cron keeps its jobs in (cron.database_name is"
            f" shown only to superusers and members of pg_read_all_settings), and {database!r} has no"
            f" cron schema: GRANT pg_read_all_settings TO the login, or install as a superuser"
        )
    if cron_database is None:
        raise CronMissing(
            "pg_cron is not loaded on this server (cron.database_name is not set; pg_cron must be"
            " in shared_preload_libraries): run `pyworker scheduler` to tick the schedules instead"
        )
    other = Database(database_url_for(db.url, cron_database), application_name=db.application_name)
    try:
        try:
            has_cron = placement(other)["has_cron"]
        except DatabaseUnavailable as error:
            raise DatabaseUnavailable(f"pg_cron's database {cron_database!r}: {error}") from error
        if not has_cron:
            raise CronMissing(
                f"pg_cron is loaded, but its database {cron_database!r} has no pg_cron extension:"
                f" run `CREATE EXTENSION pg_cron` in {cron_database!r} as a superuser, or run"
                " `pyworker scheduler` to tick the schedules instead"
            )
        yield CronSite(database, cron_database, other)
    finally:
        other.close()


def install(db: Database) -> dict[str, Any]:
    """Schedule the tick every minute in `db`'s database (again: the same job, updated).

    Returns where the job lives and the job as cron.job has it.
    """
    with cron_site(db) as site:
        if site.same_database:
            schedule(site.db, site.job_name, JOB_SCHEDULE, JOB_COMMAND)
        else:
            schedule_in_database(site.db, site.job_name, JOB_SCHEDULE, JOB_COMMAND, site.database)
        return {**site.describe(), "job": find_job(site.db, site.job_name)}


def uninstall(db: Database) -> dict[str, Any]:
    """Remove the tick's job of `db`'s database. Idempotent: with no job (or no pg_cron at all)
    there is nothing to remove, and `removed` is None (with `reason` when pg_cron is missing).
    """
    try:
        with cron_site(db) as site:
            return {**site.describe(), "removed": unschedule(site.db, site.job_name)}
    except CronMissing as missing:
        database = placement(db)["database"]
        return {
            "job_name": job_name(database),
            "database": database,
            "cron_database": None,
            "removed": None,
            "reason": str(missing),
        }


def status(db: Database, runs: int = 10) -> dict[str, Any]:
    """The tick's job of `db`'s database (None when not installed) and its last `runs` runs."""
    with cron_site(db) as site:
        job = find_job(site.db, site.job_name)
        history = job_runs(site.db, job["jobid"], runs) if job else []
        return {**site.describe(), "job": job, "runs": history}
