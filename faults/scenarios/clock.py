"""The database clock jumps (7): forward past the stale threshold, then back an hour.

The jump is the operator's move of the database clock (set_taskpool_clock_offset, which every
session's taskpool_now() follows from its next transaction): the workers' own clocks never move.
"""

from __future__ import annotations

import time

from faults.checker import measure
from faults.harness import Context, wait_until
from faults.report import Result
from faults.scenarios import scenario

# Each retry's delay as fail_task (or anything else) sets it, in database time.
BACKOFF_LOG = """
CREATE TABLE fault_backoffs (task_id bigint, retry_count integer, delay interval, at_offset text);
CREATE FUNCTION fault_log_backoff() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO fault_backoffs VALUES (NEW.id, NEW.retry_count, NEW.scheduled_for - taskpool_now(),
                                       (taskpool_now() - now())::text);
    RETURN NULL;
END;
$$;
CREATE TRIGGER _991_fault_log_backoff AFTER UPDATE OF status ON worker_tasks
    FOR EACH ROW WHEN (NEW.status = 'pending' AND NEW.retry_count > OLD.retry_count)
    EXECUTE FUNCTION fault_log_backoff();
"""

STALE_RECOVERIES = "SELECT count(*) FROM worker_task_attempts WHERE error_message LIKE 'stale:%'"


def set_clock(ctx: Context, offset: str | None) -> None:
    """Move every session's database clock to now() + offset (None: back to the real clock)."""
    ctx.conn.execute("SELECT set_taskpool_clock_offset(%s::interval)", (offset or "0",))

    def applied() -> bool:
        with ctx.connect(autocommit=True) as probe:
            return probe.execute("SELECT taskpool_now() - now() = %s::interval", (offset or "0",)).fetchone()[0]
    wait_until(applied, 10, f"the clock offset {offset} to apply")
    ctx.event("clock", offset=offset)


def wait_for_heartbeat(ctx: Context, task_ids: list[int]) -> None:
    """Return just after a heartbeat of one of the running `task_ids`."""
    query = ("SELECT coalesce(max(last_heartbeat_at), '-infinity') FROM worker_tasks"
             " WHERE id = ANY(%s) AND status = 'running'")
    before = ctx.scalar(query, (task_ids,))
    wait_until(lambda: ctx.scalar(query, (task_ids,)) > before, 10, "a heartbeat of a long task", interval=0.02)


@scenario(7, "Database clock jumps")
def clock_jumps(ctx: Context, result: Result) -> None:
    threshold = 4
    ctx.prepare(stale_threshold=f"{threshold} seconds", backoff_base="1 second", backoff_cap="4 seconds", max_retries=3)
    ctx.conn.execute(BACKOFF_LOG)
    # Due now (since the deploy), every 6 hours: it runs at the first tick, and no jump reaches
    # its next slot.
    ctx.conn.execute("SELECT update_schedule('analytics_refresh', enabled => true)")
    count = ctx.scale(120, 3000)
    ids = ctx.enqueue(
        [{"role": "fault_work", "payload": {"ms": 300 + (n % 10) * 100, "n": n}} for n in range(count)]
        + [{"role": "fault_work", "payload": {"raise": "always", "n": n}} for n in range(ctx.scale(10, 50))]
    )
    ctx.scheduler(1)
    heartbeat = 3
    fleet = ctx.fleet(1, heartbeat_ms=heartbeat * 1000)
    slots = len(fleet.processes) * fleet.concurrency
    phase = ctx.scale(4.0, 20.0)
    try:
        time.sleep(phase)
        # A long task in every slot, long enough to be running at the jump and a tick after it.
        long_tasks = ctx.enqueue([{"role": "fault_work", "priority": 100,
                                   "payload": {"ms": (3 * heartbeat + 1) * 1000, "long": n}}
                                  for n in range(slots)])
        ids += long_tasks
        wait_until(lambda: ctx.scalar("SELECT count(*) FROM fault_executions WHERE task_id = ANY(%s)", (long_tasks,))
                   >= slots, 30, "every slot to run a long task")
        # A heartbeat after the jump stamps its task with the new clock, so the task is rightly
        # fresh; a worker beats every task it holds in one call, once an interval. Jumping just
        # after a beat leaves the tick (every second) most of a heartbeat interval to find the
        # tasks stale.
        wait_for_heartbeat(ctx, long_tasks)
        time.sleep(0.5)
        jump = f"{threshold + 4} seconds"
        set_clock(ctx, jump)
        time.sleep(phase)
        recovered_forward = ctx.scalar(STALE_RECOVERIES)
        set_clock(ctx, "-1 hour")
        time.sleep(phase)
    finally:
        set_clock(ctx, None)
    ctx.drain(ctx.scale(120, 600))
    fleet.stop()
    result.hold(measure(ctx.conn, ids, fleet.logs()))
    negative = ctx.conn.execute(
        "SELECT count(*), min(delay)::text FROM fault_backoffs WHERE delay < interval '0'"
    ).fetchone()
    result.check("no negative backoff", negative[0] == 0, f"{negative[0]} retries scheduled in the past (min {negative[1]})")
    retries = ctx.scalar("SELECT count(*) FROM fault_backoffs")
    result.check("retries happened across the jumps", retries > 0, "none")
    fired = ctx.conn.execute(
        "SELECT count(*) FROM worker_tasks WHERE role = 'analytics_refresh'"
    ).fetchone()[0]
    result.check("the due schedule fired once (no jump reached its next slot)", fired == 1, f"fired {fired} times")
    result.check("the forward jump made running tasks stale, and they were recovered", recovered_forward > 0,
                 "none recovered")
    result.faults = f"clock +{jump}, then -1 hour, then back"
    result.figure("recovered after the forward jump", recovered_forward)
    # Back from -1 hour is a forward jump too: tasks stamped in the past hour's clock go stale.
    result.figure("recovered after the way back", ctx.scalar(STALE_RECOVERIES) - recovered_forward)
    result.figure("retries", retries)
