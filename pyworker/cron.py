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

from pyworker.config import database_url_for
from pyworker.db import Database
from pyworker.errors import CronMissing, DatabaseUnavailable

JOB_PREFIX = "taskpool_tick:"
JOB_SCHEDULE = "* * * * *"
JOB_COMMAND = "SELECT tick_schedules()"


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
    placement = db.cron_placement()
    database = placement["database"]
    if placement["has_cron"]:
        yield CronSite(database, database, db)
        return
    cron_database = placement["cron_database"]
    if cron_database is None:
        raise CronMissing(
            "pg_cron is not loaded on this server (cron.database_name is not set; pg_cron must be"
            " in shared_preload_libraries): run `pyworker scheduler` to tick the schedules instead"
        )
    other = Database(database_url_for(db.url, cron_database), application_name=db.application_name)
    try:
        try:
            has_cron = other.cron_placement()["has_cron"]
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
            site.db.cron_schedule(site.job_name, JOB_SCHEDULE, JOB_COMMAND)
        else:
            site.db.cron_schedule_in_database(site.job_name, JOB_SCHEDULE, JOB_COMMAND, site.database)
        return {**site.describe(), "job": site.db.cron_job(site.job_name)}


def uninstall(db: Database) -> dict[str, Any]:
    """Remove the tick's job of `db`'s database. Idempotent: with no job (or no pg_cron at all)
    there is nothing to remove, and `removed` is None (with `reason` when pg_cron is missing).
    """
    try:
        with cron_site(db) as site:
            return {**site.describe(), "removed": site.db.cron_unschedule(site.job_name)}
    except CronMissing as missing:
        database = db.cron_placement()["database"]
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
        job = site.db.cron_job(site.job_name)
        history = site.db.cron_job_runs(job["jobid"], runs) if job else []
        return {**site.describe(), "job": job, "runs": history}
