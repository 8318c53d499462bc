"""The short form of the failover suite (issue 30, item 5): the primary fails, its synchronous
replica is promoted, and the fleet goes on without losing or repeating anything.

Each test has servers of its own (testkit/replica.py): a primary copied from the test server
(pg_basebackup, started as a primary on a free port) and its hot standby (`pg_basebackup -R`),
made synchronous (synchronous_standby_names), both stopped by PID at teardown, whatever happens.
Two workers at concurrency 8 drain tasks through a multi-host URL with
target_session_attrs=read-write while a client enqueues alongside; then the primary stops at once
(pg_ctl stop -m immediate: a crash) or freezes (SIGSTOP of its postmaster and backends: a hung
host), and the replica is promoted (pg_ctl promote), as an HA manager would do. Checked:

- no worker exits, and /healthz never fails on the way;
- each worker completes tasks again within 10 s of the promotion (after a crash), or within its
  call's deadline (5 s here) plus 10 s (after a freeze: its calls on the frozen server end at
  the deadline, and each new connection waits out the frozen first host's connect_timeout, 2 s);
- nothing acknowledged is lost: every enqueue the client got an id for, every completion a worker
  logged, is on the new primary (an enqueue whose answer was lost is retried with its dedupe_key);
- no task ran twice: the handler's own record, written outside the database, has each task once.
"""

from __future__ import annotations

import re
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb
from pyworker import Client, DatabaseUnavailable
from testkit.databases import insert_role
from testkit.replica import Replica
from worker_support import Workers, WorkerProcess, wait_for

ROLE = "test_failover"
CALL_TIMEOUT_SECONDS = 5
# Two workers of 8, as the fleet measured on a Patroni pair in issue 30 (the manifests run 1 to
# 20 tasks a pod: kubernetes/crawler/roles/).
CONCURRENCY = 8
WORKERS = 2
SERVING = re.compile(r"Serving /metrics, /healthz and /readyz on port (\d+)")
COMPLETED = re.compile(r"Task (\d+) completed successfully|Completed \d+ tasks \(([\d, ]+)\)")


@pytest.fixture
def pair(conn: psycopg.Connection, db_url: str) -> Iterator[tuple[Replica, Replica]]:
    """A primary of the test's own (a copy of the test server, the test database with its role
    included) and its synchronous hot standby."""
    insert_role(conn, ROLE, max_retries=3)
    with Replica(db_url, standby=False) as primary, Replica(primary.url_for(db_url)) as standby:
        with psycopg.connect(primary.url_for(db_url), autocommit=True) as admin:
            # Set once the standby is copied: a standby that inherited it would wait for a
            # standby of its own once promoted.
            admin.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
            admin.execute("SELECT pg_reload_conf()")
            wait_for(
                lambda: admin.execute("SELECT sync_state FROM pg_stat_replication").fetchone() == ("sync",),
                30, "the standby to be synchronous",
            )
        yield primary, standby


class Enqueuer:
    """Enqueues a task every `interval` seconds through `url`, in a thread, until stop(). Each
    enqueue has a dedupe key of its own, held an hour (a window, so that it holds once its task
    has finished): an enqueue whose answer is lost is retried with the same key, and returns the
    task it made if it made one. `acknowledged`: the task ids the client got back."""

    def __init__(self, url: str, payload: dict[str, object], interval: float) -> None:
        self.url = url
        self.payload = payload
        self.interval = interval
        self.acknowledged: list[int] = []
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="enqueuer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        client: Client | None = None
        number = 0
        while not self._stop.is_set():
            try:
                if client is None:
                    client = Client.connect(self.url, call_timeout=CALL_TIMEOUT_SECONDS)
                task = client.enqueue(
                    ROLE, {**self.payload, "n": number}, dedupe_key=f"failover-{number}", dedupe_window=3600
                )
            except DatabaseUnavailable:
                self.failures += 1
                if client is not None:
                    client.close()
                    client = None
                self._stop.wait(0.2)
                continue
            self.acknowledged.append(task.id)
            number += 1
            self._stop.wait(self.interval)
        if client is not None:
            client.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=CALL_TIMEOUT_SECONDS + 15)


class HealthWatch:
    """Asks each worker's /healthz every half second, in a thread, until stop(); `failures`:
    every answer that was not 200."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.failures: list[tuple[int, int, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="health-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            for port in self.ports:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
                        status, body = answer.status, answer.read().decode()
                except urllib.error.HTTPError as error:
                    status, body = error.code, error.read().decode()
                except OSError as error:
                    status, body = 0, str(error)
                if status != 200:
                    self.failures.append((port, status, body))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def completed_by_log(worker: WorkerProcess) -> set[int]:
    """The tasks whose completion the worker logged: the database acknowledged them."""
    ids: set[int] = set()
    for one, many in COMPLETED.findall(worker.log()):
        ids.update(int(task_id) for task_id in (one or many).split(","))
    return ids


def runs_recorded(record: Path) -> Counter[int]:
    """How many times each task's handler ran to its end, by the handlers' own record."""
    return Counter(int(line.split()[0]) for runs in record.glob("*.runs") for line in runs.read_text().splitlines())


@pytest.mark.parametrize("fault", ["crash", "freeze"])
def test_the_fleet_follows_a_promoted_replica_losing_nothing_and_running_nothing_twice(
    fault: str, pair: tuple[Replica, Replica], db_url: str, workers: Workers, tmp_path: Path
) -> None:
    primary, standby = pair
    url = make_conninfo(
        db_url, host="127.0.0.1,127.0.0.1", hostaddr="", port=f"{primary.port},{standby.port}",
        target_session_attrs="read-write", connect_timeout="2",
    )
    record = tmp_path / "runs"
    record.mkdir()
    payload = {"record": str(record), "ms": 20}
    with psycopg.connect(primary.url_for(db_url), autocommit=True) as before:
        before.execute(
            "SELECT count(*) FROM enqueue_tasks((SELECT jsonb_agg(jsonb_build_object('role', %s::text,"
            " 'payload', %s::jsonb || jsonb_build_object('n', -n))) FROM generate_series(1, 400) AS n))",
            (ROLE, Jsonb(payload)),
        )
        preloaded = [row[0] for row in before.execute("SELECT id FROM worker_tasks WHERE role = %s", (ROLE,))]
    fleet = [
        workers.start(
            ROLE, f"failover-{fault}-{number}", handlers="failover_handlers", database_url=url,
            concurrency=CONCURRENCY, args=("--metrics-port", "0"),
            extra_env={"PYWORKER_CALL_TIMEOUT_SECONDS": str(CALL_TIMEOUT_SECONDS)},
        )
        for number in range(1, WORKERS + 1)
    ]
    health = HealthWatch([int(SERVING.search(worker.wait_for_log("Serving /metrics")).group(1)) for worker in fleet])
    enqueuer = Enqueuer(url, payload, interval=0.05)
    try:
        # Both workers at work on the primary before the fault.
        for worker in fleet:
            wait_for(lambda: len(completed_by_log(worker)) >= 20, 30, f"{worker.name} to complete tasks",
                     also=worker.describe)
        if fault == "crash":
            primary.halt()
        else:
            primary.freeze()
        standby.promote()
        new_primary = psycopg.connect(standby.url_for(db_url), autocommit=True)
        promoted_at = new_primary.execute("SELECT clock_timestamp()").fetchone()[0]
        bound = 10 if fault == "crash" else CALL_TIMEOUT_SECONDS + 10

        def first_completions() -> dict[str, float] | None:
            rows = new_primary.execute(
                "SELECT worker_id, extract(epoch FROM min(completed_at) - %s) FROM worker_tasks"
                " WHERE role = %s AND completed_at > %s GROUP BY worker_id",
                (promoted_at, ROLE, promoted_at),
            ).fetchall()
            return dict(rows) if len(rows) == WORKERS else None

        # Waited for longer than the bound, so that a miss fails with its figure.
        progress = wait_for(first_completions, bound + 30, "both workers to complete on the new primary",
                            also=workers.describe)
        print(f"{fault}: each worker's first completion after the promotion, in seconds: {progress}")
        assert all(seconds <= bound for seconds in progress.values()), progress
        # Some more work on the new primary, then everything stops.
        time.sleep(3)
        enqueuer.stop()
        health.stop()
        for worker in fleet:
            assert worker.alive, worker.describe()
    finally:
        enqueuer.stop()
        health.stop()
    workers.stop(grace=15)
    assert [worker.returncode for worker in fleet] == [0] * WORKERS, workers.describe()
    assert health.failures == []

    statuses = dict(new_primary.execute("SELECT id, status FROM worker_tasks WHERE role = %s", (ROLE,)).fetchall())
    new_primary.close()
    acknowledged = preloaded + enqueuer.acknowledged
    assert len(set(enqueuer.acknowledged)) == len(enqueuer.acknowledged), "a retried enqueue made a second task"
    lost_enqueues = [task_id for task_id in acknowledged if task_id not in statuses]
    completions = set().union(*(completed_by_log(worker) for worker in fleet))
    lost_completions = [task_id for task_id in completions if statuses.get(task_id) != "completed"]
    twice = {task_id: runs for task_id, runs in runs_recorded(record).items() if runs > 1}
    print(
        f"{fault}: {len(acknowledged)} acknowledged enqueues ({enqueuer.failures} failed and retried),"
        f" {len(completions)} acknowledged completions; lost: {len(lost_enqueues)} enqueues,"
        f" {len(lost_completions)} completions; ran twice: {len(twice)}"
    )
    assert lost_enqueues == []
    assert lost_completions == []
    assert twice == {}
