"""The measurements, one function per figure of issue 6; each returns its samples.

Each repetition starts from a fresh copy of the deployed template (or, for pgbench's ceilings,
freshly made and filled tables), so repetitions are comparable. Tasks are only ever written
through the SQL functions (enqueue_tasks, enqueue_task, claim_task, complete_task, cancel_task).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

from bench.report import percentile
from bench.server import BENCH_DB, OTHER_DB, PGBENCH_DB, TEMPLATE, BenchError, Server
from bench.workers import WorkerGroup

ENQUEUE_MAX = 10_000  # enqueue_tasks takes at most this many specs a call


@dataclass(frozen=True)
class Plan:
    """How big and how long each figure runs: the full run, or --quick."""

    name: str
    reps: int
    ceiling_seconds: float
    drain_tasks: int
    wakeup_tasks: int
    enqueue_seconds: float
    batch_enqueue_tasks: int
    depth_small: int
    depth_large: int
    depth_claims_per_client: int
    history_rows: int
    history_seconds: float
    io_tasks: int
    # The retention figure: finished tasks, older than their policy's keep, pruned while a drain runs.
    prune_rows: int
    workers: int = 8
    clients: int = 8
    wakeup_rate: float = 50.0
    # The I/O-bound figure: one process running this many handlers at once, each sleeping.
    io_concurrency: int = 200
    io_sleep_ms: int = 100
    # Added to every worker's command line (`--worker-arg=--metrics-port=0`: the cost of serving metrics).
    worker_args: tuple[str, ...] = ()


FULL = Plan(
    name="full", reps=3, ceiling_seconds=5, drain_tasks=20_000, wakeup_tasks=500,
    enqueue_seconds=5, batch_enqueue_tasks=100_000, depth_small=10_000, depth_large=1_000_000,
    depth_claims_per_client=500, history_rows=1_000_000, history_seconds=4, io_tasks=10_000,
    prune_rows=1_000_000,
)
QUICK = Plan(
    name="quick", reps=1, ceiling_seconds=3, drain_tasks=5_000, wakeup_tasks=150,
    enqueue_seconds=3, batch_enqueue_tasks=20_000, depth_small=10_000, depth_large=100_000,
    depth_claims_per_client=250, history_rows=50_000, history_seconds=3, io_tasks=3_000,
    prune_rows=100_000,
)


def progress(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


# Ceilings: plain tables, pgbench, the same server -------------------------------------------

COMMIT_SETUP = """
DROP TABLE IF EXISTS acc;
CREATE TABLE acc (id integer PRIMARY KEY, n bigint NOT NULL DEFAULT 0);
INSERT INTO acc (id) SELECT g FROM generate_series(1, 100000) g;
VACUUM ANALYZE acc;
"""
COMMIT_SCRIPT = """\\set id random(1, 100000)
UPDATE acc SET n = n + 1 WHERE id = :id;
"""

QUEUE_SETUP = """
DROP TABLE IF EXISTS q;
CREATE TABLE q (id bigserial PRIMARY KEY, status text NOT NULL DEFAULT 'pending', payload jsonb);
INSERT INTO q (payload) SELECT '{}' FROM generate_series(1, %(rows)s);
CREATE INDEX q_pending_idx ON q (id) WHERE status = 'pending';
VACUUM ANALYZE q;
"""
# One pgbench transaction = one task: claim it in one transaction, mark it done in a second.
QUEUE_CYCLE_SCRIPT = """BEGIN;
WITH c AS (SELECT id FROM q WHERE status = 'pending' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) UPDATE q SET status = 'running' FROM c WHERE q.id = c.id RETURNING q.id AS task_id \\gset
COMMIT;
UPDATE q SET status = 'done' WHERE id = :task_id;
"""
# One pgbench transaction = BATCH tasks.
QUEUE_BATCH = 100
QUEUE_BATCH_SCRIPT = f"""BEGIN;
WITH c AS (SELECT id FROM q WHERE status = 'pending' ORDER BY id LIMIT {QUEUE_BATCH} FOR UPDATE SKIP LOCKED), u AS (UPDATE q SET status = 'running' FROM c WHERE q.id = c.id RETURNING q.id) SELECT string_agg(id::text, ',') AS ids FROM u \\gset
COMMIT;
UPDATE q SET status = 'done' WHERE id = ANY (string_to_array(:ids, ',')::bigint[]);
"""


def _scratch(server: Server, setup: str, params: dict[str, int] | None = None) -> None:
    with server.connect(PGBENCH_DB) as conn:
        for statement in filter(str.strip, setup.split(";")):
            conn.execute(statement % (params or {}))


def ceiling_commit(server: Server, plan: Plan) -> float:
    """(a) single-row primary-key UPDATE per transaction: commits/s."""
    _scratch(server, COMMIT_SETUP)
    return server.run_pgbench(PGBENCH_DB, COMMIT_SCRIPT, clients=plan.clients, seconds=plan.ceiling_seconds)


def ceiling_queue(server: Server, plan: Plan, batch: int) -> float:
    """(b) batch=1 / (c) batch=QUEUE_BATCH: the minimal claim-then-done cycle, tasks/s."""
    # Filled for well over twice the rate seen here, so the queue never drains during the run.
    per_second = 8_000 if batch == 1 else 160_000
    rows = int(per_second * plan.ceiling_seconds) + 20_000
    _scratch(server, QUEUE_SETUP, {"rows": rows})
    script = QUEUE_CYCLE_SCRIPT if batch == 1 else QUEUE_BATCH_SCRIPT
    tps = server.run_pgbench(PGBENCH_DB, script, clients=plan.clients, seconds=plan.ceiling_seconds)
    with server.connect(PGBENCH_DB) as conn:
        (left,) = conn.execute("SELECT count(*) FROM q WHERE status = 'pending'").fetchone()
    if left < batch * plan.clients:
        raise BenchError(f"the pgbench queue drained during the run ({rows} rows): prefill more")
    return tps * batch


# Loading tasks through the SQL functions ---------------------------------------------------

def enqueue_noop(conn: psycopg.Connection, count: int, role: str = "bench_noop") -> None:
    """Enqueue `count` tasks with enqueue_tasks, ENQUEUE_MAX a call, each call committed."""
    full = json.dumps([{"role": role}] * ENQUEUE_MAX)
    while count > 0:
        n = min(count, ENQUEUE_MAX)
        specs = full if n == ENQUEUE_MAX else json.dumps([{"role": role}] * n)
        conn.execute("SELECT count(*) FROM enqueue_tasks(%s::jsonb)", (specs,), prepare=True)
        count -= n


def vacuum_analyze(conn: psycopg.Connection) -> None:
    conn.execute("VACUUM ANALYZE worker_tasks")


def completed_rate(conn: psycopg.Connection) -> tuple[int, float]:
    """(completed tasks, tasks/s from the first claim to the last completion, database clock)."""
    count, seconds = conn.execute(
        "SELECT count(*), extract(epoch FROM max(completed_at) - min(claimed_at))::float8"
        " FROM worker_tasks WHERE status = 'completed'"
    ).fetchone()
    if not count or not seconds:
        raise BenchError("no task completed")
    return count, count / seconds


# 2, 3, 8, 9: drain with ONE worker command ---------------------------------------------

@dataclass
class DrainSample:
    rate: float
    peak_rss_mb: float | None
    connections: int


def drain(server: Server, plan: Plan, log_dir: Path, prefetch: int | None) -> DrainSample:
    """One `pyworker --concurrency N` process drains drain_tasks no-op tasks."""
    extra = (["--prefetch", str(prefetch)] if prefetch else []) + list(plan.worker_args)
    return _drain_one_process(server, log_dir, "bench_noop", plan.drain_tasks, plan.workers, extra)


# The batch runtime's drain: its share claimed a call (docs/worker.md#the-batch-runtime).
BATCH_RUNTIME_CONCURRENCY = 500


def drain_batch_runtime(server: Server, plan: Plan, log_dir: Path) -> DrainSample:
    """One `pyworker --batch-runtime --concurrency 500` process drains drain_tasks no-op async tasks."""
    return _drain_one_process(server, log_dir, "bench_noop_async", plan.drain_tasks, BATCH_RUNTIME_CONCURRENCY,
                              ["--batch-runtime", *plan.worker_args])


def drain_io_bound(server: Server, plan: Plan, log_dir: Path, roles: Sequence[str] = ("bench_sleep",)) -> DrainSample:
    """One `pyworker --concurrency 200` process drains io_tasks tasks whose handler sleeps; with
    several roles, one process serves them all (`--role a --role b`), the tasks split evenly."""
    extra = [arg for role in roles[1:] for arg in ("--role", role)] + list(plan.worker_args)
    return _drain_one_process(server, log_dir, roles, plan.io_tasks, plan.io_concurrency, extra,
                              env={"BENCH_SLEEP_MS": str(plan.io_sleep_ms)})


def _drain_one_process(server: Server, log_dir: Path, roles: str | Sequence[str], tasks: int, concurrency: int,
                       extra: list[str], env: dict[str, str] | None = None, url: str | None = None,
                       meanwhile: Background | None = None) -> DrainSample:
    """Start one worker process, make `tasks` visible at once (split evenly over `roles`, the
    worker's), time them from the database's clock; sample the process's connections
    (pg_stat_activity) while it works. In `url` (a fresh copy of the template by default); with
    `meanwhile`, that runs from just before the tasks are enqueued until they are all done."""
    roles = (roles,) if isinstance(roles, str) else tuple(roles)
    url = url or server.fresh_bench_db()
    with WorkerGroup(url, roles[0], 1, log_dir, ["--concurrency", str(concurrency), *extra],
                     env={**(env or {}), **server.worker_settings(url)}, checkout=server.checkout) as group, \
            psycopg.connect(url, autocommit=True) as conn:
        group.wait_registered()
        if meanwhile is not None:
            meanwhile.start()
        with conn.transaction():  # all of them visible at the same instant
            for n, role in enumerate(roles):
                enqueue_noop(conn, tasks // len(roles) + (n < tasks % len(roles)), role)
        deadline = time.monotonic() + max(120.0, tasks / 100)
        connections = 0
        while True:
            (done,) = conn.execute(
                "SELECT count(*) FROM worker_tasks WHERE status = 'completed'"
            ).fetchone()
            connections = max(connections, group.connections(conn))
            if done >= tasks:
                break
            group.check_alive()
            if time.monotonic() > deadline:
                raise BenchError(f"only {done} of {tasks} tasks completed in time")
            time.sleep(0.2)
        if meanwhile is not None:
            meanwhile.stop()
        rss = group.peak_rss_mb()
        _, rate = completed_rate(conn)
    return DrainSample(rate, rss, connections)


class Background:
    """Work on its own connection, in a thread, from start() until stop(): `step(conn)` again and
    again, each call's result added up, until stop() or a step returns 0 (nothing left)."""

    def __init__(self, url: str, step: Callable[[psycopg.Connection], int]) -> None:
        self.url = url
        self.step = step
        self.done = 0
        self.finished_early = False
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            with psycopg.connect(self.url, autocommit=True) as conn:
                while not self._stop.is_set():
                    n = self.step(conn)
                    if n == 0:
                        self.finished_early = True
                        return
                    self.done += n
        except BaseException as error:  # noqa: BLE001 - reported by stop()
            self.error = error

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        if self.error is not None:
            raise BenchError(f"the background work failed: {self.error}")


# 4: wake-up latency -----------------------------------------------------------------------

def wakeup_latencies(server: Server, plan: Plan, log_dir: Path, rep: int) -> list[float]:
    """Milliseconds from each enqueue's commit to its handler's start, idle workers, NOTIFY only."""
    url = server.fresh_bench_db()
    events = log_dir / f"wakeup-events-{rep}.txt"
    events.unlink(missing_ok=True)
    committed: dict[int, float] = {}
    with WorkerGroup(url, "bench_wakeup", plan.workers, log_dir, plan.worker_args,
                     env={"BENCH_EVENTS_FILE": str(events), **server.worker_settings(url)},
                     checkout=server.checkout) as group, \
            psycopg.connect(url, autocommit=True) as conn:
        group.wait_registered()
        time.sleep(1.0)  # registered comes before LISTEN: let every listener settle, idle
        start = time.monotonic()
        for n in range(plan.wakeup_tasks):
            pause = start + n / plan.wakeup_rate - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            (task_id,) = conn.execute("SELECT id FROM enqueue_task('bench_wakeup')", prepare=True).fetchone()
            committed[task_id] = time.time()  # autocommit: the commit has returned
        deadline = time.monotonic() + 15
        started: dict[int, float] = {}
        while time.monotonic() < deadline:
            if events.exists():
                started = {int(a): float(b) for a, b in (line.split() for line in events.read_text().splitlines())}
            if len(started) >= len(committed):
                break
            group.check_alive()
            time.sleep(0.1)
    missing = set(committed) - set(started)
    if missing:
        raise BenchError(f"{len(missing)} of {len(committed)} wake-up tasks never started")
    return [(started[i] - committed[i]) * 1000 for i in committed]


def latency_percentiles(latencies: list[float]) -> dict[str, float]:
    return {f"p{p}": percentile(latencies, p) for p in (50, 95, 99)}


# 5: enqueue -------------------------------------------------------------------------------

def enqueue_single(server: Server, plan: Plan) -> float:
    """enqueue_task, one task per transaction, pgbench with 8 clients: tasks/s."""
    server.fresh_bench_db()
    return server.run_pgbench(BENCH_DB, "SELECT id FROM enqueue_task('bench_noop');\n",
                              clients=plan.clients, seconds=plan.enqueue_seconds)


# 9: the SQL cycle --------------------------------------------------------------------------

# One pgbench transaction pair = one task through the worker's own calls, no worker process:
# claim and start it (one transaction), then complete it (a second), as in ceiling 1b.
SQL_CYCLE_SCRIPT = """SELECT id AS task_id, attempt, claim_token FROM claim_and_start_tasks('bench_noop', 'w' || :client_id, 1) \\gset
SELECT 1 FROM complete_task(:task_id, 'w' || :client_id, :attempt, :claim_token::uuid);
"""


def sql_cycle(server: Server, plan: Plan) -> float:
    """claim_and_start_tasks(role, w, 1) → complete_task cycles/s, pgbench, 8 clients."""
    with psycopg.connect(server.fresh_bench_db(), autocommit=True) as conn:
        return cycle_rate(server, plan, conn, BENCH_DB, SQL_CYCLE_SCRIPT, plan.ceiling_seconds)


def enqueue_batch(server: Server, plan: Plan, per_call: int = 1000) -> float:
    """enqueue_tasks with `per_call` specs a call, one connection, each call committed: tasks/s."""
    url = server.fresh_bench_db()
    specs = json.dumps([{"role": "bench_noop"}] * per_call)
    calls = max(1, plan.batch_enqueue_tasks // per_call)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT count(*) FROM enqueue_tasks(%s::jsonb)", (specs,), prepare=True)  # warm
        began = time.perf_counter()
        for _ in range(calls):
            conn.execute("SELECT count(*) FROM enqueue_tasks(%s::jsonb)", (specs,), prepare=True)
        return calls * per_call / (time.perf_counter() - began)


# 6: depth ---------------------------------------------------------------------------------

CLAIM_SCRIPT = "SELECT id FROM claim_task('bench_noop', 'w' || :client_id);\n"


def claim_rates(server: Server, plan: Plan) -> tuple[list[float], list[float]]:
    """claim_task calls/s with depth_small and with depth_large pending tasks, plan.reps each.

    Two databases, one per depth, measured in turn (small, large, small, ...) so the machine's
    noise falls on both alike. Each run claims a fixed number of tasks (claims_per_client ×
    clients) from a queue topped up to depth + half that number: the depth averages the stated one.
    """
    claims = plan.depth_claims_per_client * plan.clients
    depths = {BENCH_DB: plan.depth_small, OTHER_DB: plan.depth_large}
    conns = {name: psycopg.connect(server.create(name, TEMPLATE), autocommit=True) for name in depths}
    rates: dict[str, list[float]] = {name: [] for name in depths}
    try:
        for _ in range(plan.reps):
            for name, depth in depths.items():
                conn = conns[name]
                (pending,) = conn.execute(
                    "SELECT count(*) FROM worker_tasks WHERE status = 'pending'").fetchone()
                enqueue_noop(conn, depth + claims // 2 - pending)
                vacuum_analyze(conn)
                rates[name].append(server.run_pgbench(
                    name, CLAIM_SCRIPT, clients=plan.clients, transactions=plan.depth_claims_per_client))
    finally:
        for conn in conns.values():
            conn.close()
    return rates[BENCH_DB], rates[OTHER_DB]


# 7: history -------------------------------------------------------------------------------

# One pgbench transaction = one task through the real functions: claim it, then complete it.
CYCLE_SCRIPT = """SELECT id AS task_id, attempt, claim_token FROM claim_task('bench_noop', 'w' || :client_id) \\gset
SELECT 1 FROM complete_task(:task_id, 'w' || :client_id, :attempt, :claim_token::uuid);
"""


def cycle_rate(server: Server, plan: Plan, conn: psycopg.Connection, dbname: str,
               script: str = CYCLE_SCRIPT, seconds: float | None = None) -> float:
    """`script`'s cycles/s (claim_task → complete_task by default), 8 clients, for `seconds`
    (the history figure's by default), on a queue that cannot drain in the run."""
    seconds = plan.history_seconds if seconds is None else seconds
    enqueue_noop(conn, int(6_000 * seconds) + 10_000)
    vacuum_analyze(conn)
    rate = server.run_pgbench(dbname, script, clients=plan.clients, seconds=seconds)
    (left,) = conn.execute("SELECT count(*) FROM worker_tasks WHERE status = 'pending'").fetchone()
    if left < plan.clients:
        raise BenchError("the queue drained during the cycle run: prefill more")
    return rate


def load_finished(conn: psycopg.Connection, rows: int) -> None:
    """Add `rows` finished tasks: enqueued and cancelled at once (cancel_task), ENQUEUE_MAX a call.

    Cancelling is the cheapest way to a finished row through the functions (enqueue + cancel,
    about 4 times faster than claim + complete); a finished row is a finished row to the claim.
    """
    specs = json.dumps([{"role": "bench_noop"}] * ENQUEUE_MAX)
    loaded = 0
    while loaded < rows:
        conn.execute(
            "SELECT count(c.id) FROM enqueue_tasks(%s::jsonb) e, LATERAL cancel_task(e.id) c",
            (specs,), prepare=True,
        )
        loaded += ENQUEUE_MAX
        if loaded % 200_000 == 0:
            progress(f"history: {loaded:,} finished tasks loaded")


def history_rates(server: Server, plan: Plan) -> tuple[list[float], list[float]]:
    """Cycle rates on a fresh table and with history_rows finished tasks, measured in turn."""
    with psycopg.connect(server.create(OTHER_DB, TEMPLATE), autocommit=True) as loaded:
        load_finished(loaded, plan.history_rows)
        fresh_rates, loaded_rates = [], []
        for _ in range(plan.reps):
            with psycopg.connect(server.fresh_bench_db(), autocommit=True) as fresh:
                fresh_rates.append(cycle_rate(server, plan, fresh, BENCH_DB))
            loaded_rates.append(cycle_rate(server, plan, loaded, OTHER_DB))
    return fresh_rates, loaded_rates


# 11: drain while retention prunes ----------------------------------------------------------

def prune_a_second(conn: psycopg.Connection) -> int:
    """About a second of apply_retention_in_batches as `pyworker prune` runs it (rounds of a batch
    per policy, each committed, with the default pause between them): the rows deleted."""
    (pruned,) = conn.execute("CALL apply_retention_in_batches(max_seconds => 1)").fetchone()
    return sum(outcome["pruned"] for outcome in pruned.values())


def load_prunable(server: Server, plan: Plan) -> None:
    """OTHER_DB: the template plus prune_rows finished tasks finished 40 days ago (past the
    failed_tasks policy's 30 days), vacuumed; each run copies it."""
    with psycopg.connect(server.create(OTHER_DB, TEMPLATE), autocommit=True) as conn:
        conn.execute("SELECT set_taskpool_clock_offset('-40 days')")
        load_finished(conn, plan.prune_rows)
        conn.execute("SELECT set_taskpool_clock_offset('0')")
        vacuum_analyze(conn)


def drain_while_pruning(server: Server, plan: Plan, log_dir: Path, pruning: bool) -> tuple[DrainSample, int]:
    """The drain of figure 2 on a copy of OTHER_DB (prune_rows prunable finished tasks), with
    retention pruning them round after round on another connection or not; the drain and how
    many rows went while it ran."""
    url = server.create(BENCH_DB, OTHER_DB)
    pruner = Background(url, prune_a_second) if pruning else None
    sample = _drain_one_process(server, log_dir, "bench_noop", plan.drain_tasks, plan.workers,
                                list(plan.worker_args), url=url, meanwhile=pruner)
    if pruner is not None and pruner.finished_early:
        raise BenchError(f"retention pruned all {plan.prune_rows:,} rows before the drain ended: load more")
    return sample, pruner.done if pruner is not None else 0
