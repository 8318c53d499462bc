"""Processes and sessions that die: SIGKILL storm (1), zombie worker (2), connections killed at
chosen points (3), PostgreSQL restarted (4), a worker idle in a transaction (14)."""

from __future__ import annotations

import random
import re
import signal
import threading
import time


from faults.checker import measure
from faults.harness import WORKER_LOGIN, Context, Producer, wait_until
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
    # Two processes of 8 (concurrency): one is always up while the other is killed, and each
    # kill orphans up to 8 tasks at once.
    workers = 2
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
        name = rng.choice(sorted(fleet.processes))
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
    orphans = [len(row[0]) for row in ctx.execute(
        "SELECT detail->'orphans' FROM fault_events WHERE kind = 'kill'")]
    result.check("a kill orphaned several tasks at once", max(orphans, default=0) > 1,
                 f"at most {max(orphans, default=0)} a kill")
    result.figure("orphans per kill max", max(orphans, default=0))
    result.figure("throughput tasks/s", count / seconds)
    result.figure("drain after the storm s", elapsed)


@scenario(2, "Zombie worker")
def zombie_worker(ctx: Context, result: Result) -> None:
    """SIGSTOP a worker past its stale threshold; the task is recovered and re-claimed; SIGCONT.

    Each round stops the zombie at another point of its handler (the handler's work counts steps,
    so time stopped is not work done): early, its heartbeat comes back `lost` and aborts it; near
    the end, its handler may finish first and its completion is refused. Tasks have no store (a
    stopped process holds nothing the claim can see; see docs/reliability.md).
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
        zombie.processes[name].signal(signal.SIGSTOP)
        ctx.event("sigstop", name, zombie.processes[name].pid, task_id=task_id)
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
        # The zombie's token: the one its recovered attempt kept in the history.
        heartbeat = ctx.scalar(
            "SELECT heartbeat_task(a.task_id, %s, 1, a.claim_token) FROM worker_task_attempts a"
            " WHERE a.task_id = %s AND a.attempt = 1",
            (name, task_id),
        )
        result.check(f"round {number}: the zombie's heartbeat is answered lost", heartbeat == "lost", heartbeat)
        log_before = zombie.processes[name].log()
        zombie.processes[name].signal(signal.SIGCONT)
        ctx.event("sigcont", name, zombie.processes[name].pid, task_id=task_id)
        pattern = re.compile(
            rf"Task {task_id}: heartbeat answered lost|Task {task_id} was lost before its outcome was recorded"
        )
        found = wait_until(
            lambda: pattern.search(zombie.processes[name].log()[len(log_before):]), 15,
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
                session.execute(
                    "SELECT complete_task(a.task_id, %s, 1, a.claim_token, '{}') FROM worker_task_attempts a"
                    " WHERE a.task_id = %s AND a.attempt = 1",
                    (name, task_id),
                )
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
    result.check("the zombie logged no completion", not re.search(r"Task \d+ completed", zombie.processes[name].log()))
    result.figure("zombie refused at", paths)


# The worker's calls where scenario 3 injects its faults (complete_task also matches complete_tasks,
# heartbeat_task heartbeat_tasks).
FAULT_POINTS = ("claim_and_start_tasks", "heartbeat_task", "complete_task")

# pg_terminate_backend aimed at a worker session inside one of FAULT_POINTS.
TERMINATE_ACTIVE = """
SELECT s.point, pg_terminate_backend(s.pid)
FROM (SELECT a.pid, substring(a.query from '(""" + "|".join(FAULT_POINTS) + """)') AS point
      FROM pg_stat_activity a
      WHERE a.datname = current_database() AND a.state = 'active'
        AND a.application_name LIKE 'pyworker %%' AND a.pid <> pg_backend_pid()
        -- A session gets a second's grace after it connects: without it a slow machine can kill
        -- each reconnection's first claim, and the worker's backoff grows until the run times out.
        AND a.backend_start < now() - interval '1 second') s
WHERE s.point IS NOT NULL AND (%(waiting_only)s IS FALSE OR EXISTS (
      SELECT FROM pg_stat_activity w WHERE w.pid = s.pid AND w.wait_event_type = 'Lock'))
"""


@scenario(3, "Connections killed at claim, heartbeat, complete")
def connections_killed(ctx: Context, result: Result) -> None:
    """Three faults, hundreds of times: pg_terminate_backend of a worker session inside its claim,
    heartbeat_task or complete_task (the latter two made to wait on a row lock the harness holds
    a moment, so the kill lands inside them); and answers lost after the commit (faults.proxy):
    a claim, a heartbeat or a completion that committed but whose worker never heard."""
    from psycopg.conninfo import make_conninfo

    from faults.proxy import Proxy, watch

    rng = random.Random(3)
    ctx.prepare(stale_threshold="2 seconds")
    stores = ctx.stores(50)
    ids = ctx.enqueue(task_specs(ctx.scale(600, 3000), stores, 80, rng))
    # The server the harness's own session reached: a URL may leave host and port to the libpq
    # environment (PGPORT), which the proxy does not read.
    # (A Unix socket's directory is no TCP host: the same server on the loopback then.)
    host = ctx.conn.info.host
    proxy = Proxy("127.0.0.1" if host.startswith("/") else host, ctx.conn.info.port,
                  FAULT_POINTS, probability=ctx.scale(0.04, 0.02))
    terminated: dict[str, int] = {}
    last_kill = [0.0]
    spacing = ctx.scale(0.15, 0.25)
    stop = threading.Event()
    killer = ctx.connect("fault killer", autocommit=True)
    lock = threading.Lock()
    locker = ctx.connect("fault locker", autocommit=True)

    def terminate(waiting_only: bool) -> None:
        # Spaced out, or the workers would spend the run backing off instead of working.
        if time.monotonic() - last_kill[0] < spacing:
            return
        with lock:
            for point, done in killer.execute(TERMINATE_ACTIVE, {"waiting_only": waiting_only}).fetchall():
                if done:
                    terminated[point] = terminated.get(point, 0) + 1
                    last_kill[0] = time.monotonic()

    def hold_a_running_task() -> None:
        # Worker calls on this row now wait: a kill aimed at waiting calls lands inside them.
        with locker.transaction():
            row = locker.execute(
                "SELECT id FROM worker_tasks WHERE status IN ('claimed', 'running')"
                " ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED"
            ).fetchone()
            if row:
                time.sleep(0.15)
                last_kill[0] = 0.0
                terminate(True)

    ctx.scheduler(TICK_SECONDS)
    fleet = ctx.fleet(2, heartbeat_ms=50, poll_ms=200,
                      url=make_conninfo(ctx.url, host="127.0.0.1", port=str(proxy.port)))
    threads = [watch(stop, lambda: terminate(False), 0.005), watch(stop, hold_a_running_task, 0.3)]
    try:
        ctx.drain(ctx.scale(150, 600))
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=10)
        proxy.enabled = False
    # Late answers lost may have left a claimed task to the tick: let it settle.
    ctx.drain(30)
    fleet.stop()
    proxy.close()
    killer.close()
    locker.close()
    metrics = measure(ctx.conn, ids, fleet.logs())
    result.hold(metrics)
    stuck = ctx.scalar("SELECT count(*) FROM worker_tasks WHERE status IN ('claimed', 'running')")
    result.check("no task left claimed or running", stuck == 0, f"{stuck} tasks")
    total = sum(terminated.values()) + sum(proxy.cuts.values())
    result.check("faults landed at each point", all(terminated.get(p) or proxy.cuts.get(p) for p in FAULT_POINTS),
                 f"terminated {terminated}, answers lost {dict(proxy.cuts)}")
    in_doubt = proxy.cuts.get("complete_task", 0)
    retried = sum(len(re.findall(r"complete tasks?: database connection failed", log)) for log in fleet.logs().values())
    result.check("in-doubt completions were retried and the retry accepted", in_doubt == 0 or retried > 0,
                 f"{in_doubt} completions in doubt, {retried} retries logged")
    result.faults = f"{total} ({sum(terminated.values())} pg_terminate_backend, {sum(proxy.cuts.values())} answers lost)"
    result.figure("pg_terminate_backend at", terminated)
    result.figure("answers lost after commit at", dict(proxy.cuts))
    result.figure("stale recoveries", ctx.scalar("SELECT count(*) FROM worker_task_attempts WHERE error_message LIKE 'stale:%'"))


@scenario(14, "A worker idle in a transaction")
def idle_in_transaction(ctx: Context, result: Result) -> None:
    """A worker session (a login role granted taskpool_worker) calls a worker function inside an
    explicit transaction and then goes silent, holding the task's row: the server must end the
    session by a timeout, and the task must come back and be completed by a healthy worker.
    Three ways to hang: after claim_task, after start_task, after heartbeat_task."""
    from faults.scenarios.abuse import as_worker

    threshold = 2
    ctx.prepare(stale_threshold=f"{threshold} seconds")
    ctx.scheduler(TICK_SECONDS)
    ids = []
    ended = {}
    logs: dict[str, str] = {}
    for way in ("claim_task", "start_task", "heartbeat_task"):
        [task_id] = ctx.enqueue([{"role": "fault_work", "payload": {"way": way}}])
        ids.append(task_id)
        with as_worker(ctx, ctx.url) as idler:
            idler.execute("BEGIN")
            if way == "claim_task":
                idler.execute("SELECT claim_task('fault_work', 'idler')")
            else:
                # Claimed (committed), then the call that hangs inside a transaction.
                idler.execute("COMMIT")
                [token] = idler.execute("SELECT claim_token FROM claim_task('fault_work', 'idler')").fetchone()
                idler.execute("BEGIN")
                idler.execute(f"SELECT {way}(%s, 'idler', 1, %s)", (task_id, token))
            ctx.event("idle in transaction", "idler", way=way, task_id=task_id)
            started = time.monotonic()
            # A healthy worker per round, gone before the next: each round's task is the idler's.
            fleet = ctx.fleet(1, prefix=f"healthy-{way}-")

            def gone() -> bool:
                return not ctx.scalar(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND usename = %s AND state LIKE 'idle in transaction%%'", (WORKER_LOGIN,))

            try:
                wait_until(gone, ctx.scale(30, 60), f"the session idle in a transaction after {way} to be ended")
                ended[way] = round(time.monotonic() - started, 1)
            except Exception as error:  # noqa: BLE001 - reported as the failed check below
                ended[way] = None
                result.check(f"the session idle after {way} was ended by a timeout", False, str(error))
                idler.execute("ROLLBACK")
                continue
            result.check(f"the session idle after {way} was ended by a timeout", True)
        wait_until(lambda: ctx.scalar("SELECT status = 'completed' FROM worker_tasks WHERE id = %s", (task_id,)),
                   30, f"task {task_id} to be completed by a healthy worker")
        fleet.stop()
        logs.update(fleet.logs())
    result.hold(measure(ctx.conn, ids, logs))
    result.faults = "3 sessions idle in a transaction (after claim, start, heartbeat)"
    result.figure("ended after s", ended)


@scenario(4, "PostgreSQL restarted under load", restarts_server=True)
def postgres_restarted(ctx: Context, result: Result) -> None:
    """pg_ctl -m immediate restart, three times, while tasks are enqueued and worked: nothing
    acknowledged is lost (enqueues: the ids enqueue_tasks returned; completions: those the
    workers logged), the workers reconnect with backoff and carry on."""
    if ctx.restart_server is None:
        result.skipped = "the server is not one the suite may restart (the project cluster, or the test's own copy)"
        return
    rng = random.Random(4)
    ctx.prepare(stale_threshold="3 seconds")
    stores = ctx.stores(100)
    ctx.scheduler(TICK_SECONDS)
    fleet = ctx.fleet(2)
    producer = Producer(ctx, lambda: task_specs(20, stores, 20, rng))
    restarts = []
    try:
        for _ in range(3):
            time.sleep(ctx.scale(8.0, 25.0))
            restarts.append(time.time())
            ctx.restart_server()
        time.sleep(ctx.scale(8.0, 25.0))
    finally:
        acknowledged = producer.stop()
    ctx.drain(ctx.scale(120, 300))
    alive = sum(worker.alive for worker in fleet.processes.values())
    fleet.stop()
    logs = fleet.logs()
    ctx.enqueued = acknowledged
    result.hold(measure(ctx.conn, acknowledged, logs))
    result.check("every worker survived the restarts", alive == len(fleet.processes), f"{alive} of {len(fleet.processes)} alive")
    backoffs = sum(len(re.findall(r"retrying in \d", log)) for log in logs.values())
    result.check("the workers reconnected with backoff", backoffs > 0, "no retry logged")
    # Completions per second; full throughput = 80 % of the median second before the first restart.
    per_second = dict(ctx.conn.execute(
        "SELECT floor(extract(epoch FROM at))::bigint, count(*) FROM fault_completions GROUP BY 1").fetchall())
    before = sorted(count for second, count in per_second.items() if second < restarts[0] - 1)
    baseline = before[len(before) // 2] if before else 0
    back = []
    for at in restarts:
        second = int(at)
        while second < at + 300 and per_second.get(second, 0) < 0.8 * baseline:
            second += 1
        back.append(round(max(0.0, second - at), 1))
    result.faults = "3 × pg_ctl restart -m immediate"
    result.figure("back to full throughput after s", back)
    result.figure("baseline tasks/s", baseline)
    result.figure("enqueues in doubt (not counted)", producer.in_doubt)
    result.figure("acknowledged completions checked", result.metrics.acked_completions)
