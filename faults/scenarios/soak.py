"""The soak (17): a steady load for minutes, with a random fault of scenarios 1-4 every 20-60 s."""

from __future__ import annotations

import random
import signal
import time


from faults.checker import measure
from faults.harness import Context, Fleet, Producer
from faults.report import Result
from faults.scenarios import scenario
from faults.scenarios.crashes import task_specs

THRESHOLD = 3


def kill_a_worker(ctx: Context, fleet: Fleet, rng: random.Random) -> str:
    name = rng.choice(sorted(fleet.processes))
    fleet.kill(name)
    fleet.restart(name)
    return "kill -9"


def stop_a_worker(ctx: Context, fleet: Fleet, rng: random.Random) -> str:
    name = rng.choice(sorted(fleet.processes))
    worker = fleet.processes[name]
    worker.signal(signal.SIGSTOP)
    ctx.event("sigstop", name, worker.pid)
    time.sleep(THRESHOLD + 2.5)
    worker.signal(signal.SIGCONT)
    ctx.event("sigcont", name, worker.pid)
    return "SIGSTOP"


def terminate_sessions(ctx: Context, fleet: Fleet, rng: random.Random) -> str:
    name = rng.choice(sorted(fleet.processes))
    ctx.scalar(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database()"
        " AND (application_name = %(name)s OR starts_with(application_name, %(name)s || ' '))",
        {"name": f"pyworker {name}"},
    )
    return "pg_terminate_backend"


def restart_the_server(ctx: Context, fleet: Fleet, rng: random.Random) -> str:
    ctx.restart_server()
    return "PostgreSQL restart"


@scenario(17, "Soak", restarts_server=True)
def soak(ctx: Context, result: Result) -> None:
    """Steady load (a producer enqueueing at a fixed rate, workers keeping up) for soak_seconds
    (default: quick 45 s, full 10 min); every 20-60 s (quick 6-12 s) a random fault of 1-4: a
    worker killed, a worker stopped past the stale threshold, a worker's sessions terminated, the
    server restarted (when the suite may: ctx.restart_server). All invariants must hold at the end."""
    rng = random.Random(17)
    seconds = ctx.soak_seconds or ctx.scale(45.0, 600.0)
    gap = ctx.scale((6.0, 12.0), (20.0, 60.0))
    faults = [kill_a_worker, stop_a_worker, terminate_sessions]
    if ctx.restart_server is not None:
        faults.append(restart_the_server)
    ctx.prepare(stale_threshold=f"{THRESHOLD} seconds")
    stores = ctx.stores(100)
    ctx.scheduler(1)
    # Two processes of 8 (concurrency): a fault to one leaves the other working.
    fleet = ctx.fleet(2)
    rate = ctx.scale(40, 60)
    producer = Producer(ctx, lambda: task_specs(rate // 5, stores, 20, rng))
    injected: dict[str, int] = {}
    started = time.monotonic()
    try:
        while time.monotonic() - started < seconds:
            time.sleep(min(rng.uniform(*gap), max(0.0, seconds - (time.monotonic() - started))))
            if time.monotonic() - started >= seconds:
                break
            fleet.revive_dead()
            kind = rng.choice(faults)(ctx, fleet, rng)
            injected[kind] = injected.get(kind, 0) + 1
    finally:
        acknowledged = producer.stop()
    load_seconds = time.monotonic() - started
    ctx.drain(ctx.scale(120, 300), also=fleet.revive_dead)
    fleet.stop()
    logs = fleet.logs()
    ctx.enqueued = acknowledged
    result.hold(measure(ctx.conn, acknowledged, logs))
    result.check("faults were injected", injected, "none")
    completed = ctx.scalar("SELECT count(*) FROM fault_completions")
    result.faults = f"{sum(injected.values())} random faults of 1-4"
    result.figure("faults survived", injected)
    result.figure("load s", round(load_seconds))
    result.figure("offered tasks/s", round(len(acknowledged) / load_seconds, 1))
    result.figure("completed tasks/s", round(completed / load_seconds, 1))
    result.figure("stale recoveries", ctx.scalar("SELECT count(*) FROM worker_task_attempts WHERE error_message LIKE 'stale:%'"))
