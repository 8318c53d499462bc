"""The server the bench runs on: its databases, the deployed template, pgbench.

All bench databases live on DATABASE_URL's server, reached as its user (a superuser: the bench
creates databases and adds its roles to task_roles). The plan is deployed once per run into
TEMPLATE; each figure's repetition gets a fresh copy (CREATE DATABASE ... TEMPLATE), so every
repetition starts from an empty worker_tasks. pgbench's ceilings use a scratch database of their
own with plain tables.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import psycopg
from psycopg import sql

from pyworker.testing.database import insert_role
from testkit import databases
from testkit.env import libpq, url_for
from testkit.pgbouncer import PgBouncer

TEMPLATE = "taskpool_bench_template"
BENCH_DB = "taskpool_bench"
OTHER_DB = "taskpool_bench_other"  # the second database of the depth and history figures
PGBENCH_DB = "taskpool_bench_pgbench"

# The roles the bench's handlers serve (bench/handlers.py), added to the template.
BENCH_ROLES = ("bench_noop", "bench_noop_async", "bench_sleep", "bench_sleep_other", "bench_wakeup")

class BenchError(Exception):
    """A step of the bench failed; the message says which and why."""


class Server:
    """DATABASE_URL's server: make and drop databases, deploy, run pgbench."""

    def __init__(self, url: str, pg_bindir: str, checkout: Path) -> None:
        self.url = url
        self.checkout = checkout
        # Set (by --pgbouncer) while the worker processes reach their database through it.
        self.pgbouncer: PgBouncer | None = None
        self.pgbench = shutil.which("pgbench", path=pg_bindir) or shutil.which("pgbench")
        if self.pgbench is None:
            raise BenchError(f"pgbench is not in {pg_bindir} nor on PATH: run `make deps`")

    def url_for(self, dbname: str) -> str:
        return url_for(self.url, dbname)

    def worker_settings(self, url: str) -> dict[str, str]:
        """The environment that points a worker process at `url`'s database: through PgBouncer
        (pooled, LISTENing on `url` itself) when the run has one, else nothing more."""
        if self.pgbouncer is None:
            return {}
        return {
            "DATABASE_URL": self.pgbouncer.url_for(url),
            "TASKPOOL_POOLED": "1",
            "TASKPOOL_LISTEN_DATABASE_URL": url,
        }

    def admin(self) -> psycopg.Connection:
        """An autocommit connection to DATABASE_URL's own database."""
        try:
            return databases.admin(self.url)
        except databases.DatabaseError as exc:
            raise BenchError(
                f"{exc}\nStart the project cluster with `make db`, or point DATABASE_URL at a running server."
            ) from exc

    def connect(self, dbname: str) -> psycopg.Connection:
        return psycopg.connect(self.url_for(dbname), autocommit=True)

    def settings(self) -> dict[str, str]:
        """The server settings that shape the figures."""
        names = ("server_version", "synchronous_commit", "fsync", "shared_buffers", "max_connections")
        with self.admin() as conn:
            return {name: conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()[0]
                    for name in names}

    def drop(self, dbname: str) -> None:
        databases.drop(self.url, dbname)

    def create(self, dbname: str, template: str | None = None) -> str:
        """(Re)create `dbname`, empty or as a copy of `template`; its URL."""
        return databases.create(self.url, dbname, template)

    def env(self, dbname: str) -> dict[str, str]:
        """os.environ plus the PG* variables that point libpq tools at `dbname`."""
        return libpq(self.url, dbname)

    def deploy_template(self) -> None:
        """Deploy the Sqitch plan (of the checkout) into TEMPLATE, add the bench roles, then keep
        everyone out."""

        def add_roles(url: str) -> None:
            with psycopg.connect(url, autocommit=True) as conn:
                for role in BENCH_ROLES:
                    insert_role(conn, role, description="make bench", requires_store=False)

        try:
            databases.template(self.url, TEMPLATE, setup=add_roles, project=self.checkout)
        except databases.DatabaseError as error:
            raise BenchError(f"the bench template ({TEMPLATE}, plan in {self.checkout}): {error}") from error

    def fresh_bench_db(self) -> str:
        """A new copy of the deployed template as BENCH_DB; its URL."""
        return self.create(BENCH_DB, TEMPLATE)

    def cleanup(self) -> None:
        for dbname in (BENCH_DB, OTHER_DB, PGBENCH_DB, TEMPLATE):
            self.drop(dbname)

    def run_pgbench(
        self,
        dbname: str,
        script: str,
        *,
        clients: int = 8,
        seconds: float | None = None,
        transactions: int | None = None,
        extra: Sequence[str] = (),
    ) -> float:
        """Run `script` with pgbench on `dbname` (prepared statements); its tps."""
        with tempfile.NamedTemporaryFile("w", suffix=".sql", prefix="bench-") as file:
            file.write(script)
            file.flush()
            args = [self.pgbench, "-n", "-M", "prepared", "-c", str(clients),
                    "-j", str(min(clients, 2)), "-f", file.name, *extra]
            if seconds is not None:
                args += ["-T", str(max(1, round(seconds)))]
            else:
                args += ["-t", str(transactions)]
            result = subprocess.run(args, env=self.env(dbname), capture_output=True, text=True)
        match = re.search(r"^tps = ([0-9.]+)", result.stdout, re.M)
        failed = re.search(r"number of failed transactions: ([1-9][0-9]*)", result.stdout)
        if result.returncode != 0 or match is None or failed:
            raise BenchError(
                f"pgbench failed (exit {result.returncode}):\n{result.stdout[-1500:]}{result.stderr[-1500:]}"
            )
        return float(match.group(1))
