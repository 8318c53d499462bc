"""The harness: a scenario's database, its worker processes, the tick, and the faults it injects.

A Context is one scenario's world: a database of its own (a fresh copy of the deployed plan) with
the suite's fixture (FIXTURE: the execution record, the fault events, the completion log),
worker processes (`python -m pyworker`, handlers from faults.handlers), the scheduler's tick
(`pyworker scheduler`), and a log directory. Faults are recorded in fault_events at the instant
they hit, in database time (clock_timestamp()), so the checker can line them up with claims and
executions. Python here never writes a task row: tasks are enqueued with enqueue_tasks and
everything else is the workers' doing. The processes and the waiting are the test kit's
(testkit/: fleet, waiting), with ScenarioError as their failure.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

import testkit.fleet
from pyworker.testing.database import insert_role
from testkit import waiting
from testkit.env import REPO_ROOT, server_url  # noqa: F401 (the suite imports them from here)
from testkit.fleet import Process, pyworker_argv, worker_env

T = TypeVar("T")

# What the suite adds to a scenario's database; none of it is part of the schema.
FIXTURE = """
CREATE TABLE fault_executions (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id       bigint      NOT NULL,
    attempt       integer     NOT NULL,
    worker_id     text        NOT NULL,
    pid           integer     NOT NULL,
    dispensary_id integer,
    claimed_at    timestamptz,
    started_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    ended_at      timestamptz,
    outcome       text,
    -- One row per execution, even when the recorder retries a start whose answer a fault lost.
    CONSTRAINT fault_executions_once UNIQUE (task_id, attempt, pid)
);

CREATE TABLE fault_events (
    id        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    kind      text        NOT NULL,
    worker_id text,
    pid       integer,
    detail    jsonb       NOT NULL DEFAULT '{}'
);

-- Every commit that turns a task completed, written in the completing transaction itself: a
-- task completed twice (whatever path led there) shows up as two rows.
CREATE TABLE fault_completions (
    task_id   bigint      NOT NULL,
    attempt   integer     NOT NULL,
    worker_id text,
    at        timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE FUNCTION fault_log_completion() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO fault_completions (task_id, attempt, worker_id) VALUES (NEW.id, NEW.attempt, NEW.worker_id);
    RETURN NULL;
END;
$$;
CREATE TRIGGER _990_fault_log_completion AFTER UPDATE OF status ON worker_tasks
    FOR EACH ROW WHEN (NEW.status = 'completed' AND OLD.status IS DISTINCT FROM 'completed')
    EXECUTE FUNCTION fault_log_completion();
"""

ROLE = "fault_work"
# How many tasks a worker process runs at once unless a scenario says otherwise: the runtime as it
# is deployed (issue 13), so that a process killed orphans up to this many tasks at once.
CONCURRENCY = 8
ROLE_DEFAULTS = {"stale_threshold": "3 seconds", "backoff_base": "1 second", "max_retries": 3}
# The login the suite's workers run as: granted taskpool_worker and nothing else, as the
# least-privilege deployment gives a worker, so a worker that needs more fails here. Roles are
# the server's: it is made if missing and left for the next run; it owns nothing, and its one
# grant (the handlers' fault_executions) goes with the scenario's database. Scenarios running at
# once (pytest-xdist) may both find it missing: the one that loses the race finds it made.
WORKER_LOGIN = "taskpool_fault_worker"


def worker_url(url: str) -> str:
    """`url` (a URL or a key=value string) connecting as WORKER_LOGIN."""
    return make_conninfo(url, user=WORKER_LOGIN)


class ScenarioError(Exception):
    """The scenario could not run as written (a deadline passed, a process would not start)."""


def project_cluster_restarter(url: str) -> Callable[[], None] | None:
    """A restart of the project cluster (scripts/cluster) when `url` is on it, else None: the
    suite restarts no server it did not start."""
    info = subprocess.run([str(REPO_ROOT / "scripts" / "cluster"), "info"], capture_output=True, text=True)
    cluster = dict(line.split("=", 1) for line in info.stdout.splitlines() if "=" in line)
    # Host and port as a session resolves them: the URL may leave them to the libpq environment.
    with psycopg.connect(url, connect_timeout=10) as conn:
        host, port = conn.info.host, str(conn.info.port)
    if cluster.get("running") != "yes" or host not in ("127.0.0.1", "localhost") or port != cluster.get("port"):
        return None
    bindir = os.environ.get("PG_BINDIR", "/usr/lib/postgresql/15/bin")
    argv = [f"{bindir}/pg_ctl", "-D", f"{cluster['dir']}/data", "-l", f"{cluster['dir']}/postgresql.log",
            "-m", "immediate", "-w", "-t", "120", "-s", "restart"]
    if os.geteuid() == 0:
        argv = ["runuser", "-u", cluster["owner"], "--", *argv]
    ready = [f"{bindir}/pg_isready", "-q", "-h", "127.0.0.1", "-p", port, "-t", "1"]

    def restart() -> None:
        subprocess.run(argv, check=True, cwd="/", capture_output=True)
        wait_until(lambda: subprocess.run(ready).returncode == 0, 120, "the restarted server to accept connections", 0.2)

    return restart


def wait_until(check: Callable[[], T], timeout: float, what: str, interval: float = 0.1) -> T:
    """The first truthy value of `check()`; ScenarioError after `timeout` seconds."""
    return waiting.wait_until(check, timeout, what, interval=interval, error=ScenarioError)


def percentile(values: list[float], fraction: float) -> float | None:
    """The nearest-rank percentile of `values` (None when empty)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[rank]


@dataclass
class Context:
    """One scenario's database, processes and settings."""

    url: str
    log_dir: Path
    quick: bool = False
    worker_args: tuple[str, ...] = ()
    soak_seconds: float | None = None
    # pg_ctl -m immediate restart of the scenario's server, waiting until it accepts connections;
    # None where the suite may not restart it (scenarios 4 and 17 then skip or leave it out).
    restart_server: Callable[[], None] | None = None
    processes: list[Process] = field(default_factory=list)
    enqueued: list[int] = field(default_factory=list)
    # The shape of each fleet the scenario started, "processes×concurrency" (the report's column).
    fleet_shapes: list[str] = field(default_factory=list)
    _conn: psycopg.Connection | None = None

    # The database

    @property
    def conn(self) -> psycopg.Connection:
        """The harness's own autocommit connection, reopened after a fault broke it."""
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = wait_until(self._connect, 60, "the database to accept connections", 0.2)
        return self._conn

    def _connect(self) -> psycopg.Connection | None:
        try:
            return psycopg.connect(
                self.url, autocommit=True, connect_timeout=5, application_name="fault harness"
            )
        except psycopg.OperationalError:
            return None

    def connect(self, application_name: str = "fault harness", **kwargs: Any) -> psycopg.Connection:
        """Another connection to the scenario's database (a racer, a session to kill)."""
        return psycopg.connect(self.url, application_name=application_name, **kwargs)

    def scale(self, quick: T, full: T) -> T:
        return quick if self.quick else full

    def prepare(self, **role_settings: Any) -> None:
        """Create the suite's fixture, the role fault_work (ROLE_DEFAULTS, overridden) and the
        workers' login (WORKER_LOGIN)."""
        self.conn.execute(FIXTURE)
        insert_role(self.conn, ROLE, **{**ROLE_DEFAULTS, **role_settings})
        # The default schedules would add crawler tasks no worker here serves.
        self.conn.execute("SELECT update_schedule(name, enabled => false) FROM task_schedules")
        self.conn.execute(
            f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{WORKER_LOGIN}') THEN"
            f" CREATE ROLE {WORKER_LOGIN} LOGIN IN ROLE taskpool_worker; END IF;"
            " EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$"
        )
        # The handlers record each execution through the worker's own connection string.
        self.conn.execute(f"GRANT SELECT, INSERT, UPDATE ON fault_executions TO {WORKER_LOGIN}")

    def stores(self, count: int) -> list[int]:
        """`count` new stores (dispensaries) for per-store tasks."""
        rows = self.conn.execute(
            "INSERT INTO dispensaries (name) SELECT 'fault store ' || n FROM generate_series(1, %s) n"
            " RETURNING id",
            (count,),
        ).fetchall()
        return [row[0] for row in rows]

    def enqueue(self, specs: Iterable[dict[str, Any]], chunk: int = 2000) -> list[int]:
        """Enqueue through enqueue_tasks, in chunks; the acknowledged ids (also kept in `enqueued`)."""
        specs = list(specs)
        ids: list[int] = []
        for start in range(0, len(specs), chunk):
            rows = self.conn.execute(
                "SELECT id FROM enqueue_tasks(%s::jsonb)", (Jsonb(specs[start : start + chunk]),)
            ).fetchall()
            ids += [row[0] for row in rows]
        self.enqueued += ids
        return ids

    def event(self, kind: str, worker_id: str | None = None, pid: int | None = None, **detail: Any) -> None:
        """Record a fault (or another event) in fault_events, stamped now in database time."""
        self.execute(
            "INSERT INTO fault_events (kind, worker_id, pid, detail) VALUES (%s, %s, %s, %s)",
            (kind, worker_id, pid, Jsonb(detail)),
        )

    def execute(self, query: str, params: Any = None) -> list[tuple]:
        """The rows of `query`; run again on a new connection if a fault (a restart) broke the old one."""
        conn = self.conn
        try:
            cursor = conn.execute(query, params)
        except psycopg.OperationalError:
            if not conn.broken:
                raise
            cursor = self.conn.execute(query, params)
        return cursor.fetchall() if cursor.description else []

    def scalar(self, query: str, params: Any = None) -> Any:
        """The first column of the first row (see execute)."""
        rows = self.execute(query, params)
        return rows[0][0] if rows else None

    def unfinished(self) -> int:
        return self.scalar(
            "SELECT count(*) FROM worker_tasks WHERE role = %s AND status IN ('pending', 'claimed', 'running')",
            (ROLE,),
        )

    def drain(self, timeout: float, also: Callable[[], None] | None = None) -> float:
        """Wait until no task is pending, claimed or running (calling `also` meanwhile); seconds taken."""
        started = time.monotonic()

        def done() -> bool:
            if also is not None:
                also()
            return self.unfinished() == 0

        wait_until(done, timeout, "every task to finish", 0.25)
        return time.monotonic() - started

    # Processes

    def _process(self, name: str, argv: list[str], env: dict[str, str]) -> Process:
        process = Process(name, argv, env, self.log_dir / f"{name}.log", error=ScenarioError)
        self.processes.append(process)
        return process

    def base_env(self) -> dict[str, str]:
        """The environment of a pyworker process on the scenario's database (no worker settings)."""
        return worker_env(self.url)

    def fleet(
        self,
        count: int,
        *,
        prefix: str = "w",
        poll_ms: int = 500,
        heartbeat_ms: int = 500,
        grace: float = 5.0,
        url: str | None = None,
        concurrency: int = CONCURRENCY,
        handlers: str = "faults.handlers",
        extra_env: dict[str, str] | None = None,
    ) -> Fleet:
        """`count` worker processes of fault_work, each running up to `concurrency` tasks at once,
        started; ids <prefix>1..N. They connect to `url` (default: the scenario's database) as
        WORKER_LOGIN, run the handlers of the module `handlers`, with `extra_env` added to
        their environment."""
        fleet = Fleet(self, concurrency=concurrency)
        shape = f"{count}×{concurrency}"
        if shape not in self.fleet_shapes:
            self.fleet_shapes.append(shape)
        for number in range(1, count + 1):
            name = f"{prefix}{number}"
            env = worker_env(
                worker_url(url or self.url),
                TASKPOOL_ROLE=ROLE,
                TASKPOOL_WORKER_ID=name,
                TASKPOOL_POLL_INTERVAL_MS=poll_ms,
                TASKPOOL_HEARTBEAT_INTERVAL_MS=heartbeat_ms,
                TASKPOOL_SHUTDOWN_GRACE_SECONDS=grace,
                TASKPOOL_CONCURRENCY=concurrency,
                TASKPOOL_HANDLERS=handlers,
                **(extra_env or {}),
            )
            fleet.processes[name] = self._process(name, pyworker_argv(*self.worker_args), env)
        for worker in fleet.processes.values():
            worker.start()
        fleet.wait_ready()
        return fleet

    def scheduler(self, interval_seconds: int = 1, name: str = "scheduler") -> Process:
        """`pyworker scheduler`: the tick (stale recovery, schedules) every `interval_seconds`."""
        argv = pyworker_argv("--worker-id", name, "scheduler", "--interval-seconds", str(interval_seconds))
        process = self._process(name, argv, self.base_env())
        process.start()
        process.wait_for_log("Starting scheduler", 20)
        return process

    def close(self) -> None:
        for process in self.processes:
            process.stop()
        if self._conn is not None:
            self._conn.close()

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.log()[-4000:]}" for p in self.processes)

    # Sessions

    def sessions_gone(self, worker_id: str) -> bool:
        """No session of worker `worker_id` (pyworker W, W heartbeat, W listener) is left."""
        return not self.scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND (application_name = %(name)s OR starts_with(application_name, %(name)s || ' '))",
            {"name": f"pyworker {worker_id}"},
        )


class Producer:
    """Enqueues `specs()` every `interval` seconds on a connection of its own, in a thread.

    It reconnects after a fault; an enqueue whose answer was lost is in doubt (counted), not
    acknowledged: only the ids enqueue_tasks returned are in `acknowledged`.
    """

    def __init__(self, ctx: Context, specs: Callable[[], list[dict[str, Any]]], interval: float = 0.2) -> None:
        self.ctx = ctx
        self.specs = specs
        self.interval = interval
        self.acknowledged: list[int] = []
        self.in_doubt = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="producer")
        self._thread.start()

    def _run(self) -> None:
        conn = None
        while not self._stop.is_set():
            try:
                if conn is None or conn.closed or conn.broken:
                    conn = self.ctx.connect("fault producer", autocommit=True, connect_timeout=3)
                self._enqueue(conn, self.specs())
            except psycopg.Error:
                self.in_doubt += 1
                time.sleep(0.2)
            self._stop.wait(self.interval)
        if conn is not None:
            conn.close()

    def _enqueue(self, conn: psycopg.Connection, specs: list[dict[str, Any]]) -> None:
        """Enqueue `specs`; keep what was acknowledged."""
        rows = conn.execute("SELECT id FROM enqueue_tasks(%s::jsonb)", (Jsonb(specs),)).fetchall()
        self.acknowledged.extend(row[0] for row in rows)

    def stop(self) -> list[int]:
        """Stop producing; the acknowledged ids."""
        self._stop.set()
        self._thread.join(timeout=30)
        return self.acknowledged


class Fleet(testkit.fleet.Fleet):
    """Worker processes of one scenario, by id; kills are recorded with the tasks they orphan."""

    def __init__(self, context: Context, concurrency: int = CONCURRENCY) -> None:
        super().__init__(context.log_dir, error=ScenarioError)
        self.context = context
        self.concurrency = concurrency

    def wait_ready(self, names: Iterable[str] | None = None) -> None:
        for name in names or list(self.processes):
            self.processes[name].wait_for_log(f"Starting worker {name} for role", 30, since_restart=True)

    def kill(self, name: str, signum: int = signal.SIGKILL) -> list[list[int]]:
        """Kill worker `name` (its whole process group); record the kill and its orphans."""
        worker = self.processes[name]
        worker.signal(signum)
        worker.popen.wait(timeout=10)
        return self._record_death(name, "kill", signal=signal.Signals(signum).name)

    def _record_death(self, name: str, kind: str, **detail: object) -> list[list[int]]:
        """Record in fault_events that worker `name` died, stamped now, with its orphans.

        The orphans are the tasks the worker held once its sessions are gone (a statement in
        flight when the client died may still commit): those the tick must recover.
        """
        worker = self.processes[name]
        died_at = self.context.scalar("SELECT clock_timestamp()")
        wait_until(
            lambda: self.context.sessions_gone(name), 20, f"the sessions of {name} to end"
        )
        # A restart keeps the name: what an earlier death under it orphaned, and the tick has not
        # recovered yet, still names it, and is that death's orphan, timed from that death.
        orphans = [
            list(row)
            for row in self.context.execute(
                "SELECT t.id, t.attempt FROM worker_tasks t"
                " WHERE t.worker_id = %s AND t.status IN ('claimed', 'running')"
                " AND NOT EXISTS (SELECT FROM fault_events k, jsonb_array_elements(k.detail->'orphans') o"
                "                 WHERE (o->>0)::bigint = t.id AND (o->>1)::integer = t.attempt)"
                " ORDER BY t.id",
                (name,),
            )
        ]
        self.context.execute(
            "INSERT INTO fault_events (at, kind, worker_id, pid, detail) VALUES (%s, %s, %s, %s, %s)",
            (died_at, kind, name, worker.pid, Jsonb({**detail, "orphans": orphans})),
        )
        return orphans

    def restart(self, name: str) -> Process:
        """Start worker `name` again, under the same id (a pod restarted with its name)."""
        worker = super().restart(name)
        self.wait_ready([name])
        return worker

    def revive_dead(self) -> list[str]:
        """Restart every worker that died on its own (a handler killed it); record each death."""
        revived = []
        for name, worker in self.processes.items():
            if worker.popen is not None and not worker.alive:
                self._record_death(name, "died", returncode=worker.popen.returncode)
                self.restart(name)
                revived.append(name)
        return revived
