"""Races: recovery against completion, scripted (5); per-store exclusion under stress (6); ticks
racing pg_cron (8); fifty sessions enqueueing one dedupe key (10)."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import psycopg

from faults.checker import measure
from faults.harness import Context, wait_until
from faults.report import Result
from faults.scenarios import scenario

# The role's stale threshold in the scripted races: a claimed task is stale this long after.
STALE_SECONDS = 0.5


class Racer:
    """A session running one statement in a thread, so the script can watch it block."""

    def __init__(self, ctx: Context, name: str) -> None:
        self.conn = ctx.connect(application_name=f"fault racer {name}", autocommit=False)
        self.name = name
        self.outcome: Any = None
        self.error: psycopg.Error | None = None
        self._thread: threading.Thread | None = None

    def run(self, query: str, params: Any = None) -> Any:
        """Run now, in the current transaction; the first column of the first row."""
        cursor = self.conn.execute(query, params)
        row = cursor.fetchone() if cursor.description else None
        return row[0] if row else None

    def start(self, query: str, params: Any = None) -> None:
        def target() -> None:
            try:
                self.outcome = self.run(query, params)
            except psycopg.Error as error:
                self.error = error

        self._thread = threading.Thread(target=target, daemon=True)
        self._thread.start()

    def join(self) -> None:
        assert self._thread is not None
        self._thread.join(timeout=30)

    def close(self) -> None:
        self.conn.close()


def claim(ctx: Context, worker: Racer) -> tuple[int, int, uuid.UUID]:
    """A new task claimed by `worker`; an earlier task that went back to the pool, claimed
    first (it is older), is re-run: completed on the spot."""
    [task_id] = ctx.enqueue([{"role": "fault_work", "payload": {}}])
    while True:
        row = worker.conn.execute(
            "SELECT id, attempt, claim_token FROM claim_task('fault_work', %s)", (worker.name,)
        ).fetchone()
        assert row is not None, f"no task to claim, expected task {task_id}"
        if row[0] == task_id:
            break
        worker.run(COMPLETE, (row[0], worker.name, row[1], row[2]))
        worker.conn.commit()
    worker.conn.commit()
    # Silent past the threshold: stale to any recovery from now on.
    time.sleep(STALE_SECONDS + 0.1)
    return row


def blocked(ctx: Context, racer: Racer) -> bool:
    """True while `racer`'s statement waits for a lock."""
    return bool(
        ctx.scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s"
            " AND wait_event_type = 'Lock'",
            (f"fault racer {racer.name}",),
        )
    )


def status(ctx: Context, task_id: int) -> tuple[str, int]:
    return ctx.conn.execute("SELECT status, attempt FROM worker_tasks WHERE id = %s", (task_id,)).fetchone()


COMPLETE = "SELECT status FROM complete_task(%s, %s, %s, %s, '{\"done\": true}')"
RECOVER = "SELECT recover_stale_tasks()"
TICK = "SELECT (tick_schedules()->>'recovered')::integer"


def interleavings(ctx: Context, result: Result, recover: str) -> int:
    """The scripted interleavings of a completion and a recovery (`recover` returns a count)."""
    cases = 0
    worker, operator = Racer(ctx, "worker"), Racer(ctx, "operator")
    try:
        # 1. The completion holds the row; the recovery skips it; the completion commits.
        task_id, attempt, token = claim(ctx, worker)
        worker.run(COMPLETE, (task_id, "worker", attempt, token))
        skipped = operator.run(recover)
        operator.conn.commit()
        worker.conn.commit()
        again = operator.run(recover)
        operator.conn.commit()
        result.check(
            f"{recover}: completion in flight, recovery skips it, stays completed",
            skipped == 0 and again == 0 and status(ctx, task_id) == ("completed", attempt),
            f"recovered {skipped} then {again}, task {status(ctx, task_id)}",
        )
        # 2. The recovery holds the row; the completion waits, then is refused (55000).
        task_id, attempt, token = claim(ctx, worker)
        recovered = operator.run(recover)
        worker.start(COMPLETE, (task_id, "worker", attempt, token))
        wait_until(lambda: blocked(ctx, worker), 10, "the completion to wait for the recovery's lock")
        operator.conn.commit()
        worker.join()
        worker.conn.rollback()
        result.check(
            f"{recover}: recovery first, the waiting completion is refused and the task re-runs",
            recovered == 1 and worker.error is not None and worker.error.sqlstate == "55000"
            and status(ctx, task_id) == ("pending", attempt),
            f"recovered {recovered}, completion {worker.error or worker.outcome!r}, task {status(ctx, task_id)}",
        )
        worker.error = None
        # 3. The completion commits first; a recovery after it finds nothing.
        task_id, attempt, token = claim(ctx, worker)
        worker.run(COMPLETE, (task_id, "worker", attempt, token))
        worker.conn.commit()
        recovered = operator.run(recover)
        operator.conn.commit()
        result.check(
            f"{recover}: completion committed, recovery after it does nothing",
            recovered == 0 and status(ctx, task_id) == ("completed", attempt),
            f"recovered {recovered}, task {status(ctx, task_id)}",
        )
        # 4. The recovery's snapshot predates the completion's commit (REPEATABLE READ): the
        #    recovery is refused (40001) or finds nothing; the task stays completed.
        task_id, attempt, token = claim(ctx, worker)
        worker.run(COMPLETE, (task_id, "worker", attempt, token))
        with ctx.connect("fault racer snapshot", autocommit=True) as snapshot:
            snapshot.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            snapshot.execute("SELECT count(*) FROM worker_tasks")
            worker.conn.commit()
            try:
                answer: Any = snapshot.execute(recover).fetchone()[0]
            except psycopg.Error as error:
                answer = error.sqlstate
            snapshot.execute("ROLLBACK")
        result.check(
            f"{recover}: recovery from a snapshot older than the completion leaves it completed",
            answer in (0, "40001") and status(ctx, task_id) == ("completed", attempt),
            f"recovery answered {answer!r}, task {status(ctx, task_id)}",
        )
        # 5. The completion's transaction rolls back (its connection died): recovery takes the task.
        task_id, attempt, token = claim(ctx, worker)
        worker.run(COMPLETE, (task_id, "worker", attempt, token))
        skipped = operator.run(recover)
        operator.conn.commit()
        worker.conn.rollback()
        recovered = operator.run(recover)
        operator.conn.commit()
        result.check(
            f"{recover}: a completion rolled back leaves the task to recovery",
            skipped == 0 and recovered == 1 and status(ctx, task_id) == ("pending", attempt),
            f"recovered {skipped} then {recovered}, task {status(ctx, task_id)}",
        )
        cases += 5
    finally:
        worker.close()
        operator.close()
    return cases


@scenario(5, "Recovery racing completion")
def recovery_racing_completion(ctx: Context, result: Result) -> None:
    ctx.prepare(stale_threshold=f"{STALE_SECONDS} seconds")
    rounds = ctx.scale(2, 10)
    cases = 0
    for _ in range(rounds):
        for recover in (RECOVER, TICK):
            cases += interleavings(ctx, result, recover)
    # The last re-run tasks are still pending: a worker finishes them, beating well within the
    # scripted races' short stale threshold (a worker refuses a heartbeat as slow as it).
    fleet = ctx.fleet(1, heartbeat_ms=100)
    ctx.drain(60)
    fleet.stop()
    result.faults = f"{cases} scripted interleavings"
    result.hold(measure(ctx.conn, ctx.enqueued, fleet.logs()))


def at_once(count: int, connect: Callable[[int], psycopg.Connection], work: Callable[[psycopg.Connection, int], Any]) -> list[Any]:
    """Run `work` in `count` sessions released together by a barrier; each one's answer or error."""
    sessions = [connect(n) for n in range(count)]
    barrier = threading.Barrier(count)
    answers: list[Any] = [None] * count

    def target(n: int) -> None:
        barrier.wait()
        try:
            answers[n] = work(sessions[n], n)
        except psycopg.Error as error:
            answers[n] = error

    threads = [threading.Thread(target=target, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for session in sessions:
        session.close()
    return answers


@scenario(10, "Duplicate enqueue")
def duplicate_enqueue(ctx: Context, result: Result) -> None:
    ctx.prepare()
    rounds = ctx.scale(4, 40)
    sessions = 50

    def enqueue(conn: psycopg.Connection, n: int) -> int:
        # Half commit at once, half hold their transaction open a moment: racers meet both
        # a committed task and one still being inserted.
        key = conn.info.parameter_status("application_name").rsplit(" ", 1)[0]
        with conn.transaction():
            task_id = conn.execute(
                "SELECT id FROM enqueue_task('fault_work', '{}', dedupe_key := %s)", (key,)
            ).fetchone()[0]
            if n % 2:
                conn.execute("SELECT pg_sleep(0.05)")
        return task_id

    bad_rounds = []
    for number in range(rounds):
        key = f"dedupe-{number}"
        answers = at_once(sessions, lambda n, key=key: ctx.connect(f"{key} {n}", autocommit=True), enqueue)
        ids = {a for a in answers if isinstance(a, int)}
        errors = [a for a in answers if not isinstance(a, int)]
        rows = ctx.scalar("SELECT count(*) FROM worker_tasks WHERE dedupe_key = %s", (key,))
        if len(ids) != 1 or errors or rows != 1:
            bad_rounds.append(f"round {number}: ids {sorted(ids)}, {rows} rows, errors {errors[:2]}")
        ctx.enqueued += sorted(ids)
    result.check(f"{sessions} racing sessions get one task and its id, every round", not bad_rounds, "; ".join(bad_rounds[:3]))
    fleet = ctx.fleet(1)
    ctx.drain(60)
    fleet.stop()
    result.faults = f"{rounds} rounds × {sessions} sessions at once"
    result.hold(measure(ctx.conn, ctx.enqueued, fleet.logs()))


@scenario(6, "Per-store exclusion under stress")
def store_exclusion(ctx: Context, result: Result) -> None:
    """Many workers, few stores, tiny tasks, and stale recovery every 100 ms: the store rule holds."""
    from faults.proxy import watch
    from faults.scenarios.crashes import task_specs

    rng = random.Random(6)
    # Processes of 8 (concurrency): 16 slots, 32 in full, on 10 stores.
    workers = ctx.scale(2, 4)
    count = ctx.scale(1500, 20000)
    ctx.prepare(stale_threshold="1 second")
    stores = ctx.stores(10)
    deadlocks = "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
    before = ctx.scalar(deadlocks)
    ids = ctx.enqueue(task_specs(count, stores, 3, rng))
    stop = threading.Event()
    recoverer = ctx.connect("fault recoverer", autocommit=True)
    recovered = [0, 0]

    def recover() -> None:
        recovered[0] += 1
        recovered[1] += recoverer.execute("SELECT recover_stale_tasks()").fetchone()[0]

    started = time.monotonic()
    fleet = ctx.fleet(workers, heartbeat_ms=200, poll_ms=200)
    thread = watch(stop, recover, 0.1)
    try:
        ctx.drain(ctx.scale(240, 900))
    finally:
        stop.set()
        thread.join(timeout=10)
        recoverer.close()
    seconds = time.monotonic() - started
    fleet.stop()
    result.hold(measure(ctx.conn, ids, fleet.logs()))
    # pg_stat_database is updated by each backend as it reports; give the last ones a moment.
    time.sleep(1.0)
    found = ctx.scalar(deadlocks) - before
    result.check("no deadlocks (pg_stat_database)", found == 0, f"{found} deadlocks")
    result.faults = f"{recovered[0]} recoveries every 100 ms, {workers * fleet.concurrency} slots on 10 stores"
    result.figure("throughput tasks/s", count / seconds)
    result.figure("tasks recovered as stale", recovered[1])


def pyworker_cli(ctx: Context, *args: str) -> str:
    """Run `python -m pyworker ARGS` on the scenario's database; its output (ScenarioError if it fails)."""
    import subprocess
    import sys

    from faults.harness import REPO_ROOT, ScenarioError

    done = subprocess.run([sys.executable, "-m", "pyworker", *args], env=ctx.base_env(),
                          capture_output=True, text=True, cwd=REPO_ROOT)
    if done.returncode != 0:
        raise ScenarioError(f"pyworker {' '.join(args)} exited {done.returncode}: {done.stdout}{done.stderr}")
    return done.stdout


@scenario(8, "Ticks racing, pg_cron's among them")
def ticks_racing(ctx: Context, result: Result) -> None:
    """Ten ticks at once, two `pyworker scheduler` loops and (full form) pg_cron's own job, all at
    the minute boundary when pg_cron fires: each due schedule makes one set of tasks."""
    ctx.prepare()
    stores = ctx.stores(12)
    with_cron = not ctx.quick
    if with_cron:
        pyworker_cli(ctx, "cron", "install")
    try:
        for number in range(2):
            ctx.scheduler(1, name=f"scheduler{number}")
        if with_cron:
            # pg_cron fires at second 0 of each minute: start the race a moment before.
            wait_until(lambda: ctx.scalar("SELECT extract(second FROM clock_timestamp()) BETWEEN 59.85 AND 59.99"),
                       65, "the end of a minute", 0.01)
            cron_started = ctx.scalar("SELECT clock_timestamp()")
        # Due from now on (they have been since the deploy): the race starts.
        ctx.conn.execute("SELECT update_schedule(name, enabled => true) FROM task_schedules")

        def tick(conn: psycopg.Connection, n: int) -> Any:
            reports = []
            for _ in range(ctx.scale(3, 30)):
                reports.append(conn.execute("SELECT tick_schedules()").fetchone()[0])
                time.sleep(0.05)
            return reports

        answers = at_once(10, lambda n: ctx.connect(f"fault tick {n}", autocommit=True), tick)
        errors = [a for a in answers if isinstance(a, psycopg.Error)]
        result.check("no tick failed", not errors, str(errors[:3]))
        if with_cron:
            job_runs = wait_until(lambda: cron_runs(ctx, cron_started), 20, "pg_cron to run the tick")
            result.figure("pg_cron runs", job_runs)
        else:
            result.figure("pg_cron", "full form only (it fires once a minute)")
        time.sleep(1.5)  # the schedulers tick once more
        tasks = dict(ctx.conn.execute(
            "SELECT role, count(*) FROM worker_tasks WHERE role <> 'fault_work' GROUP BY role").fetchall())
        expected = {"store_discovery": 1, "analytics_refresh": 1, "payload_storage_sweep": 1, "product_resync": len(stores)}
        result.check("exactly one set of tasks per due schedule", tasks == expected, f"{tasks}, expected {expected}")
        runs = ctx.conn.execute(
            "SELECT count(*) FILTER (WHERE last_run_at IS NULL), count(*) FILTER (WHERE next_run_at <= taskpool_now())"
            " FROM task_schedules").fetchone()
        result.check("every schedule ran and is no longer due", runs == (0, 0), f"not run, due: {runs}")
        wins = sum(1 for reports in answers if isinstance(reports, list) for r in reports if r["schedules"])
        result.figure("racing ticks that ran a schedule", wins)
    finally:
        if with_cron:
            pyworker_cli(ctx, "cron", "uninstall")
    result.faults = "10 ticks + 2 schedulers" + (" + pg_cron" if with_cron else "")
    result.hold(measure(ctx.conn, ctx.enqueued))


def cron_runs(ctx: Context, since: Any) -> int:
    """Runs of this database's tick job in pg_cron since `since` (pg_cron lives in cron.database_name)."""
    from pyworker.admin.schema import database_url_for

    cron_db = ctx.scalar("SELECT current_setting('cron.database_name', true)")
    with psycopg.connect(database_url_for(ctx.url, cron_db), autocommit=True) as cron:
        return cron.execute(
            "SELECT count(*) FROM cron.job_run_details d JOIN cron.job j USING (jobid)"
            " WHERE j.database = %s AND d.start_time >= %s AND d.status = 'succeeded'",
            (ctx.scalar("SELECT current_database()"), since),
        ).fetchone()[0]
