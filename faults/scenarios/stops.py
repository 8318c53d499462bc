"""Stopping a worker that runs 8 tasks at once (18): an operator's cancel of one of them, a
graceful SIGTERM, and a second signal."""

from __future__ import annotations

import re
import signal
import time

from faults.checker import measure
from faults.harness import Context, wait_until
from faults.report import Result
from faults.scenarios import scenario
from faults.scenarios.crashes import CLAIM_ALLOWANCE, TICK_SECONDS
from pyworker.worker import ABORT_WIND_DOWN_SECONDS

THRESHOLD = 2
GRACE = 1.0
# Long enough to outlast the grace (so SIGTERM must hand them back), short enough that the
# re-runs after the second signal finish soon.
TASK_MS = 8000


@scenario(18, "Cancel, graceful stop, second signal")
def stops(ctx: Context, result: Result) -> None:
    """One process with every slot busy on a long task. (a) An operator cancels one: that attempt
    alone ends, cancelled; the others run on. (b) SIGTERM: the tasks in flight outlast the grace,
    so the worker aborts them, hands every one back (pending, no retry spent, no stale recovery)
    and exits 0. (c) SIGTERM twice: the worker exits at once (1), orphaning every task it held;
    stale recovery brings them back and the restarted worker completes them."""
    ctx.prepare(stale_threshold=f"{THRESHOLD} seconds")
    ctx.scheduler(TICK_SECONDS)
    fleet = ctx.fleet(1, prefix="stopper", grace=GRACE, heartbeat_ms=300)
    name = "stopper1"
    worker = fleet.processes[name]
    slots = fleet.concurrency

    def running(ids: list[int]) -> bool:
        """Every task of `ids` runs in the worker, its handler begun for its current attempt."""
        return ctx.scalar(
            "SELECT count(*) FROM worker_tasks t JOIN fault_executions e ON e.task_id = t.id AND e.attempt = t.attempt"
            " WHERE t.id = ANY(%s) AND t.status = 'running' AND t.worker_id = %s AND e.ended_at IS NULL",
            (ids, name),
        ) == len(ids)

    def long_tasks(count: int) -> list[int]:
        return ctx.enqueue([{"role": "fault_work", "payload": {"ms": TASK_MS, "n": n}} for n in range(count)])

    # (a) Cancel one of the tasks in flight.
    ids = long_tasks(slots)
    wait_until(lambda: running(ids), 30, f"{slots} tasks to run at once")
    cancelled, others = ids[0], ids[1:]
    ctx.scalar("SELECT status FROM cancel_task(%s)", (cancelled,))
    ctx.event("cancel", name, worker.pid, task_id=cancelled)
    wait_until(lambda: ctx.scalar("SELECT status = 'cancelled' FROM worker_tasks WHERE id = %s", (cancelled,)),
               10, f"the cancel of task {cancelled} to end its attempt")
    outcome = ctx.scalar("SELECT outcome FROM fault_executions WHERE task_id = %s", (cancelled,))
    result.check("the cancelled attempt was aborted as cancelled", outcome == "aborted: cancelled", str(outcome))
    result.check("the other tasks in flight ran on", running(others), "some stopped with the cancel")

    # (b) Graceful SIGTERM: every slot busy again, every task outlasting the grace.
    in_flight = others + long_tasks(1)
    wait_until(lambda: running(in_flight), 30, f"{slots} tasks to run at once again")
    stopped_at = time.monotonic()
    worker.signal(signal.SIGTERM)
    ctx.event("sigterm", name, worker.pid, in_flight=in_flight)
    returncode = worker.popen.wait(timeout=GRACE + ABORT_WIND_DOWN_SECONDS + 20)
    took = time.monotonic() - stopped_at
    result.check("SIGTERM: the worker exited 0", returncode == 0, f"exit {returncode}")
    handed = ctx.execute(
        "SELECT id, status, retry_count, (SELECT outcome FROM fault_executions e WHERE e.task_id = t.id"
        "  AND e.attempt = t.attempt) FROM worker_tasks t WHERE id = ANY(%s) ORDER BY id", (in_flight,),
    )
    wrong = [row for row in handed if row[1:] != ("pending", 0, "aborted: shutdown")]
    result.check(f"SIGTERM: all {slots} tasks in flight were aborted at the grace and handed back, no retry spent",
                 not wrong and len(handed) == slots, f"(id, status, retries, outcome) off: {wrong[:4]}")
    released = set(map(int, re.findall(r"Task (\d+) handed back", worker.log())))
    result.check("SIGTERM: the worker logged each hand-back", set(in_flight) <= released,
                 f"missing {sorted(set(in_flight) - released)}")
    result.figure("SIGTERM to exit s", round(took, 2))

    # (c) Two signals: out at once, every task held orphaned.
    fleet.restart(name)
    wait_until(lambda: running(in_flight), 30, f"the {slots} handed-back tasks to run again")
    worker.signal(signal.SIGTERM)
    time.sleep(0.3)
    second_at = time.monotonic()
    worker.signal(signal.SIGTERM)
    returncode = worker.popen.wait(timeout=10)
    took = time.monotonic() - second_at
    result.check("a second signal: the worker exited 1 at once", returncode == 1 and took < 2,
                 f"exit {returncode} after {took:.2f} s")
    orphans = fleet._record_death(name, "kill", signal="SIGTERM twice")
    result.check(f"a second signal orphaned all {slots} tasks in flight", sorted(t for t, _ in orphans) == sorted(in_flight),
                 f"orphaned {orphans}")
    fleet.restart(name)
    ctx.drain(TASK_MS / 1000 + THRESHOLD + 30)
    fleet.stop()
    metrics = measure(ctx.conn, ctx.enqueued, fleet.logs())
    result.hold(metrics)
    bound = THRESHOLD + TICK_SECONDS + CLAIM_ALLOWANCE + 3
    result.check(f"the orphans were re-claimed within the stale threshold + one tick (+ a restart: {bound:g} s)",
                 len(metrics.recovery) == slots and max(metrics.recovery) <= bound,
                 f"{len(metrics.recovery)} re-claimed, max {max(metrics.recovery, default=0):.2f} s")
    result.faults = "1 cancel, SIGTERM, SIGTERM × 2"
