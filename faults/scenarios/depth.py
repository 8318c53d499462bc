"""Depth and the horizon: a deep table (12), a pinned xmin under load (13)."""

from __future__ import annotations

import random
import time


from faults.checker import measure
from faults.harness import Context, Producer, percentile
from faults.report import Result
from faults.scenarios import scenario
from faults.scenarios.crashes import task_specs

# The depth is built through the API, server-side, one committed batch per statement (dead
# index entries of a batch are only skipped cheaply once it committed): enqueue_tasks of 10,000,
# then cancel_task on the oldest to make the finished rows (Python never writes a task row).
ENQUEUE_BATCH = """
SELECT count(*) FROM enqueue_tasks((
    SELECT jsonb_agg(jsonb_build_object('role', 'fault_work', 'payload', jsonb_build_object('n', n)))
    FROM generate_series(1, %(count)s) n))
"""
FINISH_BATCH = """
SELECT count(cancel_task(t.id)) FROM (
    SELECT id FROM worker_tasks WHERE status = 'pending' ORDER BY id LIMIT %(count)s) t
"""


def fill(ctx: Context, pending: int, finished: int) -> None:
    """`finished` rows (cancelled: finished the cheapest way), then `pending` rows after them."""
    with ctx.connect("fault filler", autocommit=True) as conn:
        for total, finish in ((finished, True), (pending, False)):
            for start in range(0, total, 10_000):
                count = min(10_000, total - start)
                conn.execute(ENQUEUE_BATCH, {"count": count})
                if finish:
                    conn.execute(FINISH_BATCH, {"count": count})


# The claim's candidate query, as _claim_tasks runs it for a role whose pending tasks name no
# platform (its plan shows which index it walks).
CLAIM_PLAN = """
EXPLAIN (FORMAT JSON)
SELECT t.id FROM worker_tasks t
WHERE t.role = 'fault_work' AND t.status = 'pending' AND coalesce(t.platform, '') = ''
  AND coalesce(t.headers ->> 'concurrency_key', '') = ''
  AND t.scheduled_for <= now()
ORDER BY t.priority DESC, t.created_at, t.id
LIMIT 1 FOR UPDATE OF t SKIP LOCKED
"""


def plan_indexes(plan: object) -> set[str]:
    found: set[str] = set()
    if isinstance(plan, dict):
        if "Index Name" in plan:
            found.add(plan["Index Name"])
        for value in plan.values():
            found |= plan_indexes(value)
    elif isinstance(plan, list):
        for value in plan:
            found |= plan_indexes(value)
    return found


def table_bytes(ctx: Context) -> int:
    return ctx.scalar("SELECT pg_table_size('worker_tasks')")


@scenario(12, "Depth: a deep pool")
def depth(ctx: Context, result: Result) -> None:
    pending = ctx.scale(20_000, 1_000_000)
    finished = ctx.scale(50_000, 5_000_000)
    ctx.prepare()
    started = time.monotonic()
    fill(ctx, pending, finished)
    ctx.conn.execute("VACUUM ANALYZE worker_tasks")
    result.figure("fill s", round(time.monotonic() - started))
    indexes = plan_indexes(ctx.conn.execute(CLAIM_PLAN).fetchone()[0])
    result.check("the claim walks worker_tasks_claim_order_idx", "worker_tasks_claim_order_idx" in indexes, str(indexes))
    latencies = []
    with ctx.connect("fault claimer", autocommit=True) as conn:
        for _ in range(ctx.scale(300, 2000)):
            begun = time.perf_counter()
            row = conn.execute("SELECT id, attempt, claim_token FROM claim_task('fault_work', 'prober')").fetchone()
            latencies.append((time.perf_counter() - begun) * 1000)
            conn.execute("SELECT complete_task(%s, 'prober', %s, %s, '{}')", row)
    result.figure("claim ms p50/p99", f"{percentile(latencies, 0.5):.2f} / {percentile(latencies, 0.99):.2f}")
    # Prune keeps the table flat: rounds of work, each pruning what finished, then vacuum.
    sizes = []
    with ctx.connect("fault pruner", autocommit=True) as conn:
        for _ in range(ctx.scale(3, 5)):
            conn.execute(
                "DO $$ DECLARE v_task worker_tasks; BEGIN FOR i IN 1..%s LOOP"
                " FOR v_task IN SELECT * FROM claim_tasks('fault_work', 'pruner', 1000) LOOP"
                " PERFORM complete_task(v_task.id, 'pruner', v_task.attempt, v_task.claim_token, '{}'); END LOOP; END LOOP; END $$"
                % ctx.scale(5, 20)
            )
            conn.execute("SELECT prune_tasks(interval '0 seconds', max_tasks => 10000000)")
            conn.execute("VACUUM worker_tasks")
            sizes.append(table_bytes(ctx))
    result.check("prune keeps the table size flat (each round within 10 % of the first)",
                 all(size <= sizes[0] * 1.10 for size in sizes), f"sizes {sizes}")
    result.figure("table MB per round", [round(size / 2**20) for size in sizes])
    result.faults = f"{pending:,} pending + {finished:,} finished (cancelled) rows"
    result.figure("claims measured", len(latencies))
    result.metrics = measure(ctx.conn, [])
    result.check("the pool still holds the pending rows", ctx.unfinished() > 0, "nothing pending")


@scenario(13, "Pinned xmin under load")
def pinned_xmin(ctx: Context, result: Result) -> None:
    """A transaction holding a snapshot for 2 minutes (quick: 20 s) while workers work: throughput
    before, during and after; v_xmin_horizon names the pinning session."""
    rng = random.Random(13)
    ctx.prepare()
    stores = ctx.stores(100)
    phase = ctx.scale(10.0, 60.0)
    pin = ctx.scale(20.0, 120.0)
    fleet = ctx.fleet(1)
    def completions() -> int:
        return ctx.scalar("SELECT count(*) FROM fault_completions")

    producer = Producer(ctx, lambda: task_specs(40, stores, 5, rng), interval=0.1)
    rates = {}
    try:
        mark = completions()
        time.sleep(phase)
        rates["before"] = (completions() - mark) / phase
        pinner = ctx.connect("fault xmin pinner", autocommit=True)
        pinner.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        pinner.execute("SELECT count(*) FROM worker_tasks")
        ctx.event("xmin pinned", pid=pinner.info.backend_pid)
        mark = completions()
        time.sleep(pin)
        rates["during"] = (completions() - mark) / pin
        named = ctx.conn.execute(
            "SELECT pid, application_name FROM v_xmin_horizon LIMIT 1").fetchone()
        result.check("v_xmin_horizon names the pinning session first",
                     named == (pinner.info.backend_pid, "fault xmin pinner"), str(named))
        dead = ctx.scalar("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'worker_tasks'")
        pinner.execute("ROLLBACK")
        pinner.close()
        mark = completions()
        time.sleep(phase)
        rates["after"] = (completions() - mark) / phase
    finally:
        acknowledged = producer.stop()
    ctx.drain(ctx.scale(120, 300))
    fleet.stop()
    result.hold(measure(ctx.conn, acknowledged, fleet.logs()))
    result.faults = f"a snapshot held {pin:.0f} s"
    result.figure("tasks/s before, during, after", {k: round(v, 1) for k, v in rates.items()})
    result.figure("dead task rows while pinned", dead)
