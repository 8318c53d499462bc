"""Poison tasks (9): a handler that always raises, one that kills its own process."""

from __future__ import annotations

import random
import time

from faults.checker import measure
from faults.harness import Context, wait_until
from faults.report import Result
from faults.scenarios import scenario
from faults.scenarios.crashes import task_specs

MAX_RETRIES = 2


@scenario(9, "Poison tasks")
def poison_tasks(ctx: Context, result: Result) -> None:
    """Exactly max_retries + 1 attempts, then failed; the other stores' tasks keep flowing."""
    rng = random.Random(9)
    ctx.prepare(stale_threshold="2 seconds", backoff_base="1 second", backoff_cap="2 seconds", max_retries=MAX_RETRIES)
    stores = ctx.stores(21)
    poison_stores, other_stores = stores[:1], stores[1:]
    count = ctx.scale(400, 3000)
    raisers = ctx.enqueue([{"role": "fault_work", "dispensary_id": poison_stores[0], "payload": {"raise": "always"}}])
    raisers += ctx.enqueue([{"role": "fault_work", "payload": {"raise": "always", "n": n}} for n in range(ctx.scale(2, 10))])
    killers = ctx.enqueue([{"role": "fault_work", "payload": {"die": True, "n": n}} for n in range(ctx.scale(2, 5))])
    others = ctx.enqueue(task_specs(count, other_stores, 20, rng))
    ctx.scheduler(1)
    fleet = ctx.fleet(4)
    poison = raisers + killers

    def poison_done() -> bool:
        fleet.revive_dead()
        return not ctx.scalar(
            "SELECT count(*) FROM worker_tasks WHERE id = ANY(%s) AND status NOT IN ('failed', 'completed', 'cancelled')",
            (poison,),
        )

    started = time.monotonic()
    wait_until(poison_done, ctx.scale(120, 300), "the poison tasks to fail", 0.2)
    poison_seconds = time.monotonic() - started
    ctx.drain(120, also=fleet.revive_dead)
    fleet.stop()
    rows = ctx.conn.execute(
        "SELECT t.id, t.status, t.attempt, (SELECT count(*) FROM fault_executions e WHERE e.task_id = t.id)"
        " FROM worker_tasks t WHERE t.id = ANY(%s) ORDER BY t.id",
        (poison,),
    ).fetchall()
    wrong = [row for row in rows if row[1:] != ("failed", MAX_RETRIES + 1, MAX_RETRIES + 1)]
    result.check(
        f"each poison task ran exactly max_retries + 1 = {MAX_RETRIES + 1} times, then failed",
        not wrong and len(rows) == len(poison),
        f"(id, status, attempts, executions) off: {wrong[:5]}",
    )
    deaths = ctx.scalar("SELECT count(*) FROM fault_events WHERE kind = 'died'")
    result.check("each attempt of a killer task took its worker down", deaths == len(killers) * (MAX_RETRIES + 1), f"{deaths} deaths")
    # Flowing: the other stores' tasks completed while the poison was still being retried.
    flowing = ctx.scalar(
        "SELECT count(*) FROM fault_completions c WHERE c.task_id = ANY(%s)"
        " AND c.at < (SELECT max(e.started_at) FROM fault_executions e WHERE e.task_id = ANY(%s))",
        (others, poison),
    )
    result.check("other stores' tasks completed while the poison tasks were retried", flowing > 0, f"{flowing} completed meanwhile")
    result.faults = f"{len(raisers)} raising + {len(killers)} self-killing tasks"
    result.hold(measure(ctx.conn, ctx.enqueued, fleet.logs()))
    result.figure("completed meanwhile", flowing)
    result.figure("poison settled s", poison_seconds)
    result.check("no other task failed", not ctx.scalar(
        "SELECT count(*) FROM worker_tasks WHERE id = ANY(%s) AND status <> 'completed'", (others,)))
