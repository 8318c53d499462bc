"""Processes and sessions that die: SIGKILL storm (1), zombie worker (2), connections killed at
chosen points (3), PostgreSQL restarted (4), a worker idle in a transaction (14)."""

from __future__ import annotations

import random
import re
import signal
import time

from faults.checker import measure
from faults.harness import Context, wait_until
from faults.report import Result
from faults.scenarios import scenario

TICK_SECONDS = 1
# A re-claim needs the tick to run after the threshold, then a worker to claim; this is the
# claim's share, a generous one for a loaded two-core machine.
CLAIM_ALLOWANCE = 1.0


def task_specs(count: int, stores: list[int], max_ms: int, rng: random.Random) -> list[dict]:
    return [
        {"role": "fault_work", "dispensary_id": rng.choice(stores), "payload": {"ms": rng.randint(0, max_ms), "n": n}}
        for n in range(count)
    ]


@scenario(1, "SIGKILL storm")
def sigkill_storm(ctx: Context, result: Result) -> None:
    rng = random.Random(1)
    workers = ctx.scale(4, 8)
    count = ctx.scale(1500, 20000)
    pause = ctx.scale((1.0, 2.0), (2.0, 4.0))
    threshold = 3
    ctx.prepare(stale_threshold=f"{threshold} seconds")
    stores = ctx.stores(100)
    ids = ctx.enqueue(task_specs(count, stores, 30, rng))
    ctx.scheduler(TICK_SECONDS)
    started = time.monotonic()
    fleet = ctx.fleet(workers)
    kills = 0
    deadline = time.monotonic() + ctx.scale(180, 900)
    while ctx.unfinished() > 0 and time.monotonic() < deadline:
        time.sleep(rng.uniform(*pause))
        name = rng.choice(sorted(fleet.workers))
        fleet.kill(name)
        kills += 1
        fleet.restart(name)
    elapsed = ctx.drain(60)
    seconds = time.monotonic() - started
    fleet.stop()
    metrics = measure(ctx.conn, ids, fleet.logs())
    result.faults = f"{kills} × kill -9 + restart"
    result.hold(metrics)
    bound = threshold + TICK_SECONDS + CLAIM_ALLOWANCE
    late = [s for s in metrics.recovery if s > bound]
    result.check(
        f"each orphan re-claimed within its stale threshold + one tick ({bound:g} s)",
        not late and not metrics.unrecovered,
        f"{len(late)} late (max {max(late, default=0):.2f} s), {len(metrics.unrecovered)} never re-claimed",
    )
    result.check("the storm killed workers holding tasks", metrics.recovery, "no orphan to recover")
    result.figure("throughput tasks/s", count / seconds)
    result.figure("drain after the storm s", elapsed)


@scenario(2, "Zombie worker")
def zombie_worker(ctx: Context, result: Result) -> None:
    """SIGSTOP a worker past its stale threshold; the task is recovered and re-claimed; SIGCONT.

    Each round stops the zombie at another point of its handler (the handler's work counts steps,
    so time stopped is not work done): early, its heartbeat comes back `lost` and aborts it; near
    the end, its handler may finish first and its completion is refused. Tasks have no store (a
    stopped process holds nothing the claim can see; see the README).
    """
    rounds = ctx.scale(2, 6)
    threshold = 2
    ctx.prepare(stale_threshold=f"{threshold} seconds")
    ctx.scheduler(TICK_SECONDS)
    zombie = ctx.fleet(1, prefix="zombie")
    name = "zombie1"
    rescuer_logs: dict[str, str] = {}
    ids = []
    paths = {"heartbeat refused": 0, "completion refused": 0}
    for number in range(rounds):
        work_ms = 1500
        stop_after = 0.2 if number % 2 == 0 else 1.35
        [task_id] = ctx.enqueue([{"role": "fault_work", "payload": {"ms": work_ms, "round": number}}])
        ids.append(task_id)
        wait_until(
            lambda: ctx.scalar("SELECT started_at FROM fault_executions WHERE task_id = %s AND attempt = 1", (task_id,)),
            20, f"the zombie to start task {task_id}",
        )
        time.sleep(stop_after)
        zombie.workers[name].signal(signal.SIGSTOP)
        ctx.event("sigstop", name, zombie.workers[name].pid, task_id=task_id)
        # A rescuer per round, gone before the next: each round's task goes to the zombie.
        rescuer = ctx.fleet(1, prefix=f"rescuer{number}-")
        wait_until(
            lambda: ctx.scalar(
                "SELECT status = 'completed' AND attempt = 2 AND worker_id = %s FROM worker_tasks WHERE id = %s",
                (f"rescuer{number}-1", task_id),
            ),
            threshold + 20, f"task {task_id} to be recovered and completed by the rescuer",
        )
        rescuer.stop()
        rescuer_logs.update(rescuer.logs())
        heartbeat = ctx.scalar("SELECT heartbeat_task(%s, %s, 1)", (task_id, name))
        result.check(f"round {number}: the zombie's heartbeat is answered lost", heartbeat == "lost", heartbeat)
        log_before = zombie.workers[name].log()
        zombie.workers[name].signal(signal.SIGCONT)
        ctx.event("sigcont", name, zombie.workers[name].pid, task_id=task_id)
        pattern = re.compile(
            rf"Task {task_id}: heartbeat answered lost|Task {task_id} was lost before its outcome was recorded"
        )
        found = wait_until(
            lambda: pattern.search(zombie.workers[name].log()[len(log_before):]), 15,
            f"the zombie to learn it lost task {task_id}",
        )
        paths["heartbeat refused" if "heartbeat" in found.group(0) else "completion refused"] += 1
        wait_until(
            lambda: ctx.scalar("SELECT ended_at IS NOT NULL FROM fault_executions WHERE task_id = %s AND attempt = 1", (task_id,)),
            15, f"the zombie's execution of {task_id} to end",
        )
    # What the zombie would send, sent for it: refused, and nothing changes.
    refused = 0
    for task_id in ids:
        with ctx.connect() as session:
            try:
                session.execute("SELECT complete_task(%s, %s, 1, '{}')", (task_id, name))
            except Exception as error:  # noqa: BLE001 - the refusal is what we check
                refused += getattr(error, "sqlstate", None) == "55000"
    result.check("a late completion of the zombie's attempt is refused (55000)", refused == len(ids), f"{refused} of {len(ids)}")
    zombie.stop()
    logs = {**zombie.logs(), **rescuer_logs}
    metrics = measure(ctx.conn, ids, logs)
    result.faults = f"{rounds} × SIGSTOP past {threshold} s, SIGCONT"
    result.hold(metrics)
    completions = ctx.scalar(
        "SELECT count(*) FILTER (WHERE worker_id LIKE 'rescuer%%' AND attempt = 2) = %s AND count(*) = %s"
        " FROM fault_completions",
        (len(ids), len(ids)),
    )
    result.check("one completion per task, the rescuer's", completions)
    result.check("the zombie logged no completion", not re.search(r"Task \d+ completed", zombie.workers[name].log()))
    result.figure("zombie refused at", paths)
