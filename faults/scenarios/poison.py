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
    # A bystander is orphaned at most once by each death, and a killer's attempts bound the deaths:
    # retries enough that being beside a killer never fails a healthy task.
    bystander_retries = len(killers) * (MAX_RETRIES + 1)
    others = ctx.enqueue([{**spec, "max_retries": bystander_retries}
                          for spec in task_specs(count, other_stores, 20, rng)])
    ctx.scheduler(1)
    # Processes of 8 (concurrency): a self-killing task takes the tasks beside it down too; they
    # come back by stale recovery, which spends an attempt of each (raisers included).
    fleet = ctx.fleet(2)
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
        "SELECT t.id, t.status, t.attempt FROM worker_tasks t WHERE t.id = ANY(%s) ORDER BY t.id", (poison,),
    ).fetchall()
    wrong = [row for row in rows if row[1:] != ("failed", MAX_RETRIES + 1)]
    result.check(
        f"each poison task had exactly max_retries + 1 = {MAX_RETRIES + 1} attempts, then failed",
        not wrong and len(rows) == len(poison),
        f"(id, status, attempts) off: {wrong[:5]}",
    )
    # An attempt that never ran was orphaned by a killer's death beside it (it was claimed, not
    # begun, or begun but not yet recorded): stale recovery spent it. Any other gap is an attempt
    # spent for nothing; two executions of one attempt would be fencing broken. The death names
    # its orphans when the harness sees it; on a loaded machine the tick may have recovered them
    # first (a 2 s threshold): then the attempt ended stale, and the worker that claimed it died
    # after the claim (its first death after it: a worker restarts only once its death is recorded).
    attempts = ctx.conn.execute(
        "SELECT t.id, a.n, (SELECT count(*) FROM fault_executions e WHERE e.task_id = t.id AND e.attempt = a.n),"
        " EXISTS (SELECT FROM fault_events k, jsonb_array_elements(k.detail->'orphans') o"
        "         WHERE k.kind = 'died' AND (o->>0)::bigint = t.id AND (o->>1)::integer = a.n)"
        " OR EXISTS (SELECT FROM worker_task_attempts w JOIN fault_events k"
        "            ON k.kind = 'died' AND k.worker_id = w.worker_id AND k.at >= w.claimed_at"
        "            WHERE w.task_id = t.id AND w.attempt = a.n AND w.error_message LIKE 'stale:%%')"
        " FROM worker_tasks t CROSS JOIN LATERAL generate_series(1, t.attempt) a(n)"
        " WHERE t.id = ANY(%s) ORDER BY 1, 2",
        (poison,),
    ).fetchall()
    unexplained = [row[:3] for row in attempts if row[2] > 1 or (row[2] == 0 and not row[3])]
    result.check("each attempt ran once, or was orphaned by a death before it ran", not unexplained,
                 f"(id, attempt, executions) off: {unexplained[:5]}")
    # With 8 tasks a process, two killers may share a death: deaths are counted by process.
    died, killed_itself = ctx.conn.execute(
        "SELECT array(SELECT pid FROM fault_events WHERE kind = 'died' ORDER BY pid),"
        " array(SELECT DISTINCT pid FROM fault_executions WHERE task_id = ANY(%s) ORDER BY pid)",
        (killers,),
    ).fetchone()
    result.check("each process that ran a killer task died, and no other", died == killed_itself,
                 f"{len(died)} deaths, {len(killed_itself)} processes ran a killer")
    result.figure("attempts orphaned before they ran", sum(1 for row in attempts if row[2] == 0))
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
