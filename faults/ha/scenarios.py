"""The failovers, and how one is run: a pair of its own, the fleet on it, the fault, the checks.

A scenario is a function `inject(run)` that hits the pair while the fleet works; it returns the
moment progress is timed from (the fault, or the second switchover of single-host). run() does the
rest, the same for all: start the pair (synchronous replication or not), deploy, enqueue, start
2 workers × 8, the tick and a producer, watch the workers (exits, `/healthz`) and the workers' URL
(does it reach a server that takes writes, which one), inject, wait for progress, drain, count.

Time to progress is from the fault to the first completion committed on the new primary, once the
workers' URL reaches it for good (the start of the last unbroken run of writable samples). The
bound: 10 s from that moment for a switchover and a postmaster kill (the new primary is reachable
at once), the HA manager's TTL + 15 s from the fault for a node loss or a frozen primary (the
replica is promoted only once the leader key expires).
"""

from __future__ import annotations

import os
import random
import re
import secrets
import signal
import threading
import time
import traceback
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import psycopg
from psycopg.types.json import Jsonb

from faults.ha import checker
from faults.ha.handlers import RECORDS_ENVVAR
from faults.harness import Context, Fleet, Producer, ScenarioError, wait_until
from faults.report import Result, format_value
from pyworker.admin.probes import call_within
from pyworker.errors import DatabaseUnavailable
from testkit import databases
from testkit.patroni import HAPair, Ports

TEMPLATE = "taskpool_faults_ha_template"
# A reachable new primary must have the fleet completing within this (switchover, postmaster kill).
PROGRESS_AFTER_REACHABLE = 10.0
# A node loss or a frozen primary: within the HA manager's TTL plus this, from the fault.
PROGRESS_AFTER_TTL = 15.0
STALE_THRESHOLD = 30
SAMPLE_SECONDS = 0.25
# A sample's bound: libpq's connect_timeout of each of two hosts, and the query.
SAMPLE_TIMEOUT = 6.0
HEALTH_SECONDS = 0.5
METRICS_PORT_LINE = re.compile(r"Serving /metrics, /healthz and /readyz on port (\d+)")

COLUMNS = [
    "scenario", "replication", "workers' URL", "tasks", "time to progress (s)", "lost enqueues",
    "lost completions", "ran twice", "completed twice", "worker exits", "healthz failures", "verdict",
]


@dataclass
class FailoverResult(Result):
    """A failover scenario's result: its own table (COLUMNS)."""

    columns: ClassVar[list[str]] = COLUMNS
    notes_heading: ClassVar[str] = (
        "Notes (figures reported, not asserted; reachable: from the fault to the workers' URL reaching"
        " the new primary for good; acknowledged completions: from the workers' logs; executions: from"
        " the handler's records):")
    replication: str = "-"
    url_kind: str = "-"
    dcs: str = "-"
    cost: checker.Cost | None = None
    progress: float | None = None
    exits: int = 0
    health_failures: int = 0

    def row(self) -> list[str]:
        dash = "-"
        cost = self.cost
        counts = (
            [str(cost.enqueued), dash if self.progress is None else f"{self.progress:.1f}",
             str(cost.lost_enqueues), str(cost.lost_completions), str(cost.ran_twice), str(cost.completed_twice)]
            if cost else [dash] * 6
        )
        return [self.name, self.replication, self.url_kind, *counts, str(self.exits),
                str(self.health_failures), self.verdict]

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "replication": self.replication, "url": self.url_kind, "dcs": self.dcs,
                "cost": self.cost.as_dict() if self.cost else None, "progress": self.progress,
                "exits": self.exits, "health_failures": self.health_failures}


@dataclass
class Options:
    quick: bool = False
    url_kind: str = "haproxy"
    dcs: str = "etcd"
    ports: Ports = field(default_factory=Ports)

    def scale(self, quick: Any, full: Any) -> Any:
        return quick if self.quick else full


class KeyedProducer(Producer):
    """The harness's producer, keeping each acknowledged enqueue's key (its payload's)."""

    def __init__(self, ctx: Context, specs: Callable[[], list[dict[str, Any]]], interval: float) -> None:
        self.keys: list[str] = []
        super().__init__(ctx, specs, interval)

    def _enqueue(self, conn: psycopg.Connection, specs: list[dict[str, Any]]) -> None:
        rows = conn.execute("SELECT id, payload->>'key' FROM enqueue_tasks(%s::jsonb)", (Jsonb(specs),)).fetchall()
        self.acknowledged.extend(row[0] for row in rows)
        self.keys.extend(row[1] for row in rows)


class Monitor:
    """Watches, in threads, from start() to stop(): each worker's process (an exit) and `/healthz`
    (every answer but 200, with no answer counted too), and `url` (samples: when, and the port
    of the server taking writes it reached, or None)."""

    def __init__(self, fleet: Fleet, url: str) -> None:
        self.fleet = fleet
        self.url = url
        self.health_ports = {
            name: int(METRICS_PORT_LINE.search(process.wait_for_log("Serving /metrics", 30)).group(1))
            for name, process in fleet.processes.items()
        }
        self.exits: dict[str, int] = {}
        self.health_failures: list[tuple[float, str, str]] = []
        self.samples: list[tuple[float, int | None]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=target, daemon=True, name=f"monitor {target.__name__}")
                         for target in (self._watch_workers, self._sample)]

    def start(self) -> Monitor:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def _watch_workers(self) -> None:
        while not self._stop.wait(HEALTH_SECONDS):
            for name, process in self.fleet.processes.items():
                if not process.alive:
                    self.exits.setdefault(name, process.returncode)
                    continue
                status = _get_status(f"http://127.0.0.1:{self.health_ports[name]}/healthz")
                if status != 200:
                    self.health_failures.append((time.time(), name, str(status or "no answer")))

    def _sample(self) -> None:
        while not self._stop.is_set():
            began = time.time()
            self.samples.append((began, writable_port(self.url)))
            self._stop.wait(max(0.0, SAMPLE_SECONDS - (time.time() - began)))

    def reachable_since(self, after: float) -> float | None:
        return reachable_since(self.samples, after)


def reachable_since(samples: list[tuple[float, int | None]], after: float) -> float | None:
    """When a URL began reaching, for good, the server taking writes it reaches last: the first of
    the last unbroken run of `samples` (when, port of the server taking writes or None) on one
    server that began after `after`; None while the samples show no break after `after` (the
    failover not seen yet) or the last one reached none."""
    if not samples or samples[-1][1] is None:
        return None
    port = samples[-1][1]
    since = None
    for at, reached in reversed(samples):
        if reached != port:
            return since
        if at < after:
            return None
        since = at
    return None


def _get_status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


def writable_port(url: str) -> int | None:
    """The port of the server `url` reaches, if it takes writes now; None too when no answer
    comes within SAMPLE_TIMEOUT (a server frozen between the connect and the query would
    otherwise hold the sampler until it thaws)."""

    def sample() -> tuple[int, bool]:
        with psycopg.connect(url, connect_timeout=2, autocommit=True) as conn:
            port, primary = conn.execute("SELECT inet_server_port(), NOT pg_is_in_recovery()").fetchone()
        return port, primary

    try:
        port, primary = call_within(SAMPLE_TIMEOUT, sample)
    except (psycopg.Error, DatabaseUnavailable):
        return None
    return port if primary else None


@dataclass
class Run:
    """One scenario's world while it runs."""

    pair: HAPair
    ctx: Context
    options: Options
    result: FailoverResult
    fleet: Fleet | None = None
    monitor: Monitor | None = None
    # Measured by the first wait_progress(): when the workers' URL reached the new primary, and
    # the first completion committed there (later events, a thawed node leading again, may
    # take that primary's commits away).
    reachable: float | None = None
    progress_at: float | None = None

    def wait_progress(self, since: float, timeout: float) -> None:
        """Until a completion commits on the server the workers' URL reaches for good after `since`."""
        if self.progress_at is not None:
            return

        def progressed() -> bool:
            reachable = self.monitor.reachable_since(since)
            if reachable is None:
                return False
            self.reachable, self.progress_at = reachable, self.ctx.scalar(
                "SELECT extract(epoch FROM min(at))::float8 FROM fault_completions WHERE at >= to_timestamp(%s)",
                (reachable,))
            return self.progress_at is not None
        wait_until(progressed, timeout, "the fleet to complete tasks again", 0.5)


# The scenarios: each injects its fault and returns the moment progress is timed from.

Inject = Callable[[Run], float]


def kill_postmaster(run: Run) -> float:
    leader = run.pair.leader()
    at = time.time()
    run.pair.kill_postmaster(leader.name)
    run.result.faults = f"kill -9 of {leader.name}'s postmaster"
    return at


def node_loss(run: Run) -> float:
    leader = run.pair.leader()
    at = time.time()
    run.pair.lose(leader.name)
    run.result.faults = f"{leader.name} lost (kill -9 of Patroni and PostgreSQL)"
    return at


def switchover(run: Run) -> float:
    leader = run.pair.leader()
    candidate = run.pair.other(leader)
    at = time.time()
    run.pair.switchover(leader.name, candidate.name)
    run.result.faults = f"patronictl switchover {leader.name} → {candidate.name}"
    return at


def old_primary_single_host(run: Run) -> float:
    """The workers' URL names node1 alone: switched over, node1 is a replica for a while (workers
    must wait, not die), then switched back; progress is timed from the switch back."""
    pair = run.pair
    pair.switchover("node1", "node2")
    pair.wait_streaming()
    dwell = run.options.scale(8, 20)
    before = run.ctx.scalar("SELECT count(*) FROM fault_completions")
    time.sleep(dwell)
    served = run.ctx.scalar("SELECT count(*) FROM fault_completions") - before
    pair.wait_writable(pair.nodes["node2"].url())
    at = time.time()
    pair.switchover("node2", "node1")
    run.result.faults = f"switchover node1 → node2, node1 a replica {dwell} s, switchover back"
    run.result.figure("completions while node1 was a replica", served)
    return at


def frozen_primary(run: Run) -> float:
    """SIGSTOP of the leader's Patroni and PostgreSQL; thawed once the fleet works on the new one."""
    pair = run.pair
    leader = pair.leader()
    at = time.time()
    stopped = pair.freeze(leader.name)
    run.wait_progress(at, pair.ttl + 60)
    time.sleep(run.options.scale(3, 10))
    pair.thaw(leader.name)
    thawed = time.time() - at
    # Patroni 3.0.2 may not name a synchronous standby again after this: a leader and a running
    # replica are what the fleet needs.
    pair.wait_streaming(synchronous=False)
    run.result.faults = f"SIGSTOP of {leader.name} ({len(stopped)} processes), SIGCONT after {thawed:.0f} s"
    leader_after = pair.leader()
    run.result.figure("after the thaw, the leader", leader_after.name if leader_after else "none")
    return at


def lagging_replica(run: Run) -> float:
    """The replica stops receiving (SIGSTOP of its walreceiver) while the fleet works; then the
    primary's node is lost and the WAL the replica had not taken in with it (the walreceiver is
    killed: what sat in its socket never reached its disk), and the replica is promoted."""
    pair = run.pair
    leader = pair.leader()
    replica = pair.other(leader)
    walreceiver = replica.child_pid("walreceiver")
    if walreceiver is None:
        raise ScenarioError(f"{replica.name} runs no walreceiver")
    lag = run.options.scale(1.5, 2.0)
    os.kill(walreceiver, signal.SIGSTOP)
    time.sleep(lag)
    at = time.time()
    pair.lose(leader.name)
    os.kill(walreceiver, signal.SIGKILL)
    run.result.faults = f"{replica.name} not receiving for {lag} s, then {leader.name} lost"
    return at


@dataclass(frozen=True)
class Scenario:
    name: str
    inject: Inject
    synchronous: bool = True
    # True: the bound is TTL + 15 s from the fault; False: 10 s from a reachable new primary.
    waits_for_ttl: bool = False
    single_host: bool = False


SCENARIOS = {
    "postmaster-kill": Scenario("kill -9 of the primary's postmaster", kill_postmaster),
    "node-loss": Scenario("node loss", node_loss, waits_for_ttl=True),
    "switchover": Scenario("switchover", switchover),
    "single-host": Scenario("old primary a replica behind a single-host URL", old_primary_single_host,
                            single_host=True),
    "frozen": Scenario("frozen primary", frozen_primary, waits_for_ttl=True),
    "lag-sync": Scenario("lagging replica, synchronous", lagging_replica, waits_for_ttl=True),
    "lag-async": Scenario("lagging replica, asynchronous", lagging_replica, synchronous=False, waits_for_ttl=True),
}


def task_specs(prefix: str, count: int, rng: random.Random) -> list[dict[str, Any]]:
    return [{"role": "fault_work", "payload": {"key": f"{prefix}{n}", "ms": rng.randint(0, 20)}}
            for n in range(count)]


def run(number: int, slug: str, options: Options, log_dir: Path) -> FailoverResult:
    """Run scenario `slug` on a pair of its own, whatever happens: an exception is an ERROR verdict."""
    scenario = SCENARIOS[slug]
    result = FailoverResult(number, scenario.name, form=options.scale("quick", "full"))
    result.replication = "synchronous" if scenario.synchronous else "asynchronous"
    result.url_kind = "node1 alone" if scenario.single_host else options.url_kind
    result.dcs = options.dcs
    started = time.monotonic()
    pair = HAPair(log_dir / "pair", ports=options.ports, synchronous=scenario.synchronous, dcs=options.dcs)
    try:
        pair.start()
        server = pair.url()
        template = databases.template(server, TEMPLATE)
        try:
            with databases.copy(server, TEMPLATE, f"taskpool_faults_ha_{secrets.token_hex(3)}") as url:
                ctx = Context(url, log_dir, quick=options.quick, worker_args=("--metrics-port", "0"))
                try:
                    _run(Run(pair, ctx, options, result), scenario)
                finally:
                    ctx.close()
        finally:
            template.drop()
    except Exception as error:  # noqa: BLE001 - any failure is the scenario's verdict
        result.error = f"{type(error).__name__}: {error}"
        (log_dir / "error.txt").write_text(traceback.format_exc())
    finally:
        pair.stop()
        result.seconds = time.monotonic() - started
    return result


def _run(run: Run, scenario: Scenario) -> None:
    ctx, pair, options, result = run.ctx, run.pair, run.options, run.result
    rng = random.Random(scenario.name)
    # Longer than a failover: a task is run again because the failover forgot its claim, not
    # because its worker could not heartbeat while the primary changed.
    ctx.prepare(stale_threshold=f"{STALE_THRESHOLD} seconds")
    dbname = ctx.conn.info.dbname
    if scenario.single_host:
        workers_url = pair.nodes["node1"].url(dbname)
    elif options.url_kind == "multi-host":
        workers_url = pair.multi_host_url(dbname)
    else:
        workers_url = pair.url(dbname)
    initial = options.scale(2000, 8000)
    rows = ctx.execute("SELECT id, payload->>'key' FROM enqueue_tasks(%s::jsonb)",
                       (Jsonb(task_specs("i", initial, rng)),))
    keys = [row[1] for row in rows]
    ctx.scheduler(1)
    records = ctx.log_dir / "records"
    records.mkdir(exist_ok=True)
    run.fleet = fleet = ctx.fleet(2, url=workers_url, handlers="faults.ha.handlers",
                                  extra_env={RECORDS_ENVVAR: str(records)})
    run.monitor = monitor = Monitor(fleet, workers_url).start()
    batch = iter(range(1_000_000))
    producer = KeyedProducer(ctx, lambda: task_specs(f"p{next(batch)}-", 20, rng), interval=0.2)
    try:
        wait_until(lambda: ctx.scalar("SELECT count(*) FROM fault_completions") >= 200, 60,
                   "the fleet to get going", 0.5)
        time.sleep(options.scale(2, 5))
        since = scenario.inject(run)
        bound = pair.ttl + PROGRESS_AFTER_TTL if scenario.waits_for_ttl else PROGRESS_AFTER_REACHABLE
        run.wait_progress(since, bound + 60)
        time.sleep(options.scale(3, 10))
    finally:
        producer.stop()
        keys += producer.keys
    ctx.drain(180)
    monitor.stop()
    fleet.stop()
    reachable, progress_at = run.reachable, run.progress_at
    result.progress = progress_at - since
    after_reachable = progress_at - reachable
    result.exits = len(monitor.exits)
    result.health_failures = len(monitor.health_failures)
    result.cost = cost = checker.measure(ctx.conn, keys, fleet.logs(), records)
    result.figure("reachable after s", reachable - since)
    result.figure("progress after reachable s", after_reachable)
    result.figure("acknowledged completions", cost.acked_completions)
    result.figure("executions", cost.executions)
    if cost.ids_reused:
        result.figure("task ids reused", cost.ids_reused)
    if cost.lost_enqueues:
        result.figure("lost enqueues e.g.", cost.lost_enqueue_sample)
    if monitor.health_failures:
        result.figure("healthz failures e.g.", monitor.health_failures[:5])
    if monitor.exits:
        result.figure("exit codes", monitor.exits)
    result.check("no worker exited", not monitor.exits, format_value(monitor.exits))
    result.check("/healthz never failed", not monitor.health_failures, str(monitor.health_failures[:5]))
    if scenario.waits_for_ttl:
        result.check(f"progress within TTL + {PROGRESS_AFTER_TTL:g} s of the fault ({bound:g} s)",
                     result.progress <= bound, f"{result.progress:.1f} s")
    else:
        result.check(f"progress within {bound:g} s of a reachable new primary",
                     after_reachable <= bound, f"{after_reachable:.1f} s")
    if scenario.synchronous:
        result.check("no acknowledged enqueue lost", cost.lost_enqueues == 0, f"{cost.lost_enqueues} lost")
        result.check("no acknowledged completion lost", cost.lost_completions == 0, f"{cost.lost_completions} lost")
        result.check("no task completed twice", cost.completed_twice == 0, f"{cost.completed_twice} twice")
