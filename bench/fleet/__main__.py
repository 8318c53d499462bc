"""`python -m bench.fleet` (`make bench-fleet`): a crawl fleet of 24,000 stores on four platforms,
six crawls a day, compressed into minutes; what the queue does with it (issue 29, item 5).

Time runs `--compression` times faster than the fleet's: the resync schedule's 4 hours, the
platforms' rate limits, the tick's minute (pg_cron's) and retention's keep all scale by it; the
platforms' latencies do not (a request takes as long as it takes). Real `pyworker` processes run
the crawler's real handlers (bench/fleet/handlers.py says what is simulated and why), as many
and as wide as the Kubernetes manifests say (kubernetes/crawler/roles: tasks at once a pod,
maxReplicaCount pods; --max-pods caps the pods of a role on a small machine). The bench itself
only calls the SQL functions an operator would (upsert_discovered_stores, update_schedule,
set_retention_policy, tick_schedules) and reads.

It prints a table and writes results/bench-fleet-<time>.{json,md} (bench-fleet-latest.*).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import platform as host_platform
import tempfile
import threading
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click
import psycopg
from psycopg.types.json import Jsonb

from bench.__main__ import git_revision, server_label
from bench.figures import progress
from bench.fleet import figures
from bench.fleet.figures import CADENCE_HOURS, PLATFORMS, manifest_fleet
from bench.fleet.report import markdown_report, text_report
from testkit import databases
from testkit.env import REPO_ROOT, server_url
from testkit.fleet import Fleet, pyworker_argv, worker_env
from testkit.waiting import wait_until

TEMPLATE = "taskpool_fleet_template"
FLEET_DB = "taskpool_fleet"
RESYNC, REFRESH, FILE_REMOVAL = "product_resync", "product_refresh", "payload_file_removal"
ROLES = (RESYNC, REFRESH, FILE_REMOVAL)
RESYNC_SCHEDULE = "resync_every_4_hours"
STATES = ("AZ", "CA", "CO", "MI")
STORE_ROUNDS = 240


class FleetBenchError(Exception):
    """A step of the fleet bench failed; the message says which."""


@dataclasses.dataclass(frozen=True)
class Settings:
    stores: int
    compression: float
    duration: float
    max_pods: int | None
    products: int
    keep_fleet_hours: float
    rate_window: float
    sample_seconds: float

    @property
    def cadence_seconds(self) -> float:
        return CADENCE_HOURS * 3600 / self.compression

    @property
    def tick_seconds(self) -> float:
        """pg_cron runs the tick every minute of fleet time."""
        return 60 / self.compression


def fleet_minutes(seconds: float, compression: float) -> float:
    return seconds * compression / 60


class Sampler:
    """The readings taken while the fleet runs, on a connection of its own."""

    def __init__(self, conn: psycopg.Connection, platforms: list[str]) -> None:
        self.conn = conn
        self.platforms = platforms
        self.began = time.monotonic()
        self.requests: dict[str, list[tuple[float, int]]] = defaultdict(list)
        self.samples = 0
        self.ready: dict[str, list[int]] = defaultdict(list)
        self.sizes: list[tuple[float, int]] = []
        self.lateness: dict[int, tuple[str, float]] = {}

    def now(self) -> float:
        return time.monotonic() - self.began

    def sample(self) -> None:
        """Requests let through so far (at the server's clock) and resync tasks ready, by platform."""
        for name, at, total in self.conn.execute(
            "SELECT platform, extract(epoch FROM clock_timestamp())::float8, requests_total"
            " FROM platform_governance WHERE platform = ANY(%s)", (self.platforms,)
        ):
            self.requests[name].append((at, total))
        ready = dict(self.conn.execute(
            "SELECT platform, count(*) FROM worker_tasks WHERE role = %s AND status = 'pending'"
            " AND scheduled_for <= now() GROUP BY 1", (RESYNC,)
        ).fetchall())
        for name in self.platforms:
            self.ready[name].append(ready.get(name, 0))
        self.samples += 1

    def sample_completions(self) -> None:
        """Each resync completed lately: how long after its due time (scheduled_for) it ended.
        Read as they come: retention may prune the tasks before the run ends."""
        for task_id, name, late in self.conn.execute(
            "SELECT id, platform, extract(epoch FROM completed_at - scheduled_for)::float8 FROM worker_tasks"
            " WHERE role = %s AND status = 'completed' AND completed_at > now() - interval '60 seconds'",
            (RESYNC,),
        ):
            self.lateness[task_id] = (name, max(0.0, late))

    def sample_size(self) -> None:
        (size,) = self.conn.execute("SELECT pg_database_size(current_database())").fetchone()
        self.sizes.append((self.now(), size))


class Ticker(threading.Thread):
    """Runs tick_schedules() every `period` seconds, as pg_cron would every fleet minute: the
    schedules and retention. Keeps each tick's duration and what retention pruned."""

    def __init__(self, url: str, period: float) -> None:
        super().__init__(name="fleet-ticker", daemon=True)
        self.url, self.period = url, period
        self.stopping = threading.Event()
        self.durations: list[float] = []
        self.pruned: dict[str, int] = defaultdict(int)
        self.scheduled = 0
        self.errors: list[str] = []

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            next_at = time.monotonic()
            while not self.stopping.is_set():
                began = time.monotonic()
                try:
                    (report,) = conn.execute("SELECT tick_schedules()").fetchone()
                except psycopg.Error as error:
                    self.errors.append(str(error).strip())
                    report = {}
                self.durations.append(time.monotonic() - began)
                for run in report.get("schedules", []):
                    self.scheduled += run.get("tasks") or 0
                    if run.get("error"):
                        self.errors.append(f"{run['schedule']}: {run['error']}")
                for policy, outcome in (report.get("retention") or {}).items():
                    self.pruned[policy] += outcome.get("pruned") or 0
                next_at += self.period
                self.stopping.wait(max(0.0, next_at - time.monotonic()))


def set_up(conn: psycopg.Connection, settings: Settings) -> dict[str, int]:
    """The platforms' limits, the stores, the compressed schedule and retention; the stores by
    platform."""
    counts = figures.store_counts(settings.stores)
    for spec in PLATFORMS:
        # Operators tune a platform's row (platform_governance's comment); the bench does so too.
        conn.execute(
            "INSERT INTO platform_governance AS g (platform, requests_per_minute) VALUES (%s, %s)"
            " ON CONFLICT (platform) DO UPDATE SET requests_per_minute = excluded.requests_per_minute",
            (spec.name, figures.compressed_limit(spec, settings.compression)),
        )
    # The per-store schedule spreads first crawls over the cadence in store id order: the
    # platforms' stores are discovered in rounds, so that their ids, like a real fleet's, mix.
    for platform, first, count in figures.discovery_rounds(counts, STORE_ROUNDS):
        stores = [{"platform_store_id": f"{platform}-{n}", "name": f"{platform.title()} store {n}",
                   "state": STATES[n % len(STATES)], "city": "Fleetville",
                   "menu_url": f"https://{platform}.example/stores/{n}"}
                  for n in range(first, first + count)]
        conn.execute("SELECT upsert_discovered_stores(%s, %s)", (platform, Jsonb(stores)))
    # The fleet crawls; nothing else runs (no worker serves discovery, analytics or the sweep).
    for (name,) in conn.execute("SELECT name FROM task_schedules WHERE name <> %s", (RESYNC_SCHEDULE,)).fetchall():
        conn.execute("SELECT update_schedule(name => %s, enabled => false)", (name,))
    conn.execute(
        "SELECT update_schedule(name => %s, enabled => true, every => make_interval(secs => %s),"
        " next_run_at => now())",
        (RESYNC_SCHEDULE, settings.cadence_seconds),
    )
    keep = settings.keep_fleet_hours * 3600 / settings.compression
    # The worker registry's policy keeps its own time: a worker slowed down by a busy server is
    # not gone after a few compressed hours.
    for (name,) in conn.execute("SELECT name FROM retention_policies WHERE name <> 'silent_workers'").fetchall():
        conn.execute("SELECT set_retention_policy(name => %s, keep => make_interval(secs => %s))", (name, keep))
    return counts


def statements_tracked(conn: psycopg.Connection) -> bool:
    """Whether the server loads pg_stat_statements (then the extension is made here)."""
    preload = conn.execute("SELECT current_setting('shared_preload_libraries')").fetchone()[0]
    if "pg_stat_statements" not in preload:
        return False
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    return True


def statement_stats(conn: psycopg.Connection) -> dict[str, dict[str, float]]:
    """calls and mean ms of the claim and of the handlers' token requests (acquire_platform_request,
    reserve_platform_request) in this database."""
    stats: dict[str, dict[str, float]] = {}
    # A claim function is called as claim...(: claim_and_start_tasks(, claim_task(, claim_tasks(.
    for key, pattern in (("claim", r"\mclaim[a-z_]*\("), ("acquire", r"\m(acquire|reserve)_platform_request\(")):
        calls, total_ms = conn.execute(
            "SELECT coalesce(sum(calls), 0)::bigint, coalesce(sum(total_exec_time), 0)::float8"
            " FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid"
            " WHERE d.datname = current_database() AND s.query ~* %s AND s.query !~* 'pg_stat_statements'",
            (pattern,),
        ).fetchone()
        stats[key] = {"calls": calls, "mean_ms": total_ms / calls if calls else None}
    return stats


@dataclasses.dataclass
class Attempts:
    """The attempts' slot time within the measured stretch, by role and platform."""

    busy: dict[tuple[str, str], float]
    waited: dict[str, float]


def read_attempts(directory: Path, began: float, ended: float) -> Attempts:
    """Sum the attempt lines (bench/fleet/handlers.py) clipped to [began, ended] (wall clock):
    each attempt's seconds busy, and its seconds in await_turn in proportion to the part kept."""
    busy: dict[tuple[str, str], float] = defaultdict(float)
    waited: dict[str, float] = defaultdict(float)
    for path in directory.glob("attempts-*.log"):
        for line in path.read_text().splitlines():
            role, name, start, end, wait = line.split()
            start_at, end_at = float(start), float(end)
            kept = max(0.0, min(end_at, ended) - max(start_at, began))
            busy[role, name] += kept
            if role == RESYNC and end_at > start_at:
                waited[name] += float(wait) * kept / (end_at - start_at)
    return Attempts(dict(busy), dict(waited))


# A worker process holds at most this many connections of its own, beside its handlers' pool of
# --concurrency (pyworker --help).
WORKER_OWN_CONNECTIONS = 4
# Connections left for the bench's own, psql and the superuser's reserve.
SPARE_CONNECTIONS = 20


def check_connections(url: str, fleet: dict[str, tuple[int, int]]) -> None:
    """Refuse a fleet whose processes could hold more connections than the server has free."""
    needed = sum(pods * (WORKER_OWN_CONNECTIONS + concurrency) for pods, concurrency in fleet.values())
    with psycopg.connect(url, autocommit=True) as conn:
        limit, in_use = conn.execute(
            "SELECT current_setting('max_connections')::int, (SELECT count(*) FROM pg_stat_activity)").fetchone()
    if needed > limit - in_use - SPARE_CONNECTIONS:
        shape = ", ".join(f"{role} {pods} × (4 + {concurrency})" for role, (pods, concurrency) in fleet.items())
        raise FleetBenchError(
            f"the fleet's workers may hold {needed} connections ({shape}), and the server has"
            f" {limit - in_use} free of max_connections {limit} ({SPARE_CONNECTIONS} kept spare):"
            " run fewer processes a role (--max-pods) or raise max_connections")


def plan_workers(settings: Settings) -> dict[str, tuple[int, int]]:
    """Each role's processes and their concurrency: the manifests' (kubernetes/), the processes
    capped by --max-pods."""
    roles = manifest_fleet(REPO_ROOT / "kubernetes", ROLES)
    return {role: (spec.max_pods if settings.max_pods is None else min(spec.max_pods, settings.max_pods),
                   spec.concurrency) for role, spec in roles.items()}


def start_workers(fleet: Fleet, url: str, workers: dict[str, tuple[int, int]],
                  env_extra: dict[str, str]) -> dict[str, int]:
    """Start `workers` (role: processes, concurrency); the slots of each role."""
    slots = {}
    env = worker_env(url, pythonpath=[REPO_ROOT], **env_extra)
    for role, (pods, concurrency) in workers.items():
        slots[role] = pods * concurrency
        for n in range(1, pods + 1):
            worker_id = f"fleet-{role}-{n}"
            fleet.start(worker_id, pyworker_argv(
                "--role", role, "--concurrency", str(concurrency), "--handlers", "bench.fleet.handlers",
                "--worker-id", worker_id, "--log-level", "warning"), env)
    return slots


def wait_registered(fleet: Fleet, conn: psycopg.Connection) -> None:
    def registered() -> bool:
        fleet.check_alive()
        query = "SELECT count(*) FROM task_workers WHERE worker_id = ANY(%s)"
        return conn.execute(query, (list(fleet.processes),)).fetchone()[0] == len(fleet.processes)

    wait_until(registered, 60, "the fleet's workers to register", error=FleetBenchError)


def run(database_url: str, settings: Settings, results_dir: Path, keep_db: bool,
        in_database: str | None = None) -> dict[str, Any]:
    """Run the fleet in a database of its own on `database_url`'s server (deployed, dropped at
    the end unless `keep_db`), or in `in_database`, deployed already and left as it is."""
    started = datetime.now(timezone.utc)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    log_dir = results_dir / f"bench-fleet-{stamp}-logs"
    platforms = [p.name for p in PLATFORMS]
    workers = plan_workers(settings)
    check_connections(in_database or database_url, workers)
    if in_database is None:
        progress(f"fleet: deploying the plan into {TEMPLATE} on {server_label(database_url)}")
        try:
            databases.template(database_url, TEMPLATE)
            url = databases.create(database_url, FLEET_DB, TEMPLATE)
        except databases.DatabaseError as error:
            raise FleetBenchError(f"deploying the fleet's database: {error}") from error
    else:
        url = in_database
    fleet = Fleet(log_dir, error=FleetBenchError)
    ticker = Ticker(url, settings.tick_seconds)
    try:
        with contextlib.ExitStack() as stack:
            scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-fleet-"))
            # Left in reverse order: the workers stop before their storage directory goes.
            stack.callback(fleet.stop, 10)
            stack.callback(ticker.stopping.set)
            conn = stack.enter_context(psycopg.connect(url, autocommit=True))
            progress(f"fleet: {settings.stores:,} stores on {len(platforms)} platforms, cadence "
                     f"{settings.cadence_seconds:g} s (4 h / {settings.compression:g})")
            counts = set_up(conn, settings)
            has_statements = statements_tracked(conn)
            attempts_dir = Path(scratch) / "attempts"
            attempts_dir.mkdir()
            env_extra = {
                "TASKPOOL_STORAGE": str(Path(scratch) / "storage"),
                "BENCH_FLEET_LATENCY_MS": json.dumps({p.name: p.latency_ms for p in PLATFORMS}),
                "BENCH_FLEET_PRODUCTS": str(settings.products),
                "BENCH_FLEET_ATTEMPTS_DIR": str(attempts_dir),
            }
            slots = start_workers(fleet, url, workers, env_extra)
            progress(f"fleet: workers {', '.join(f'{r} {n} slots' for r, n in slots.items())}; starting")
            wait_registered(fleet, conn)
            if has_statements:
                conn.execute("SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database"
                             " WHERE datname = current_database()), 0)")
            requests_before = dict(conn.execute("SELECT platform, requests_total FROM platform_governance").fetchall())
            sampler = Sampler(conn, platforms)
            sampler.sample_size()
            began = time.time()
            ticker.start()
            deadline = time.monotonic() + settings.duration
            next_progress = time.monotonic() + 30
            while time.monotonic() < deadline:
                sampler.sample()
                fleet.check_alive()
                n = sampler.samples
                if n % 5 == 0:
                    sampler.sample_completions()
                if n % 10 == 0:
                    sampler.sample_size()
                if time.monotonic() >= next_progress:
                    next_progress += 30
                    progress(f"fleet: {sampler.now():.0f} s of {settings.duration:g}, "
                             f"{len(sampler.lateness):,} crawls done")
                time.sleep(max(0.0, min(settings.sample_seconds, deadline - time.monotonic())))
            elapsed, ended = sampler.now(), time.time()
            sampler.sample()
            sampler.sample_completions()
            sampler.sample_size()
            ticker.stopping.set()
            ticker.join()
            stats = statement_stats(conn) if has_statements else None
            overdue = {name: (count, age) for name, count, age in conn.execute(
                "SELECT platform, count(*), extract(epoch FROM max(now() - scheduled_for))::float8"
                " FROM worker_tasks WHERE role = %s AND status = 'pending' AND scheduled_for <= now()"
                " GROUP BY 1", (RESYNC,))}
            tables = conn.execute(
                "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'm')"
                " ORDER BY 2 DESC LIMIT 6").fetchall()
            requests_after = dict(conn.execute("SELECT platform, requests_total FROM platform_governance").fetchall())
            fleet.stop(30)
            attempts = read_attempts(attempts_dir, began, ended)
    finally:
        if in_database is None:
            if not keep_db:
                databases.drop(database_url, FLEET_DB)
            databases.drop(database_url, TEMPLATE)
    return summarize(settings, counts, slots, sampler, ticker, stats, overdue, tables, attempts,
                     requests_before, requests_after, elapsed, started, url, log_dir)


def summarize(settings: Settings, counts: dict[str, int], slots: dict[str, int], sampler: Sampler,
              ticker: Ticker, stats: dict[str, dict[str, float]] | None,
              overdue: dict[str, tuple[int, float]], tables: list[tuple[str, int]], attempts: Attempts,
              requests_before: dict[str, int],
              requests_after: dict[str, int], elapsed: float, started: datetime, database_url: str,
              log_dir: Path) -> dict[str, Any]:
    """The report: per platform and for the fleet, as JSON-ready data."""
    c = settings.compression
    window = min(settings.rate_window, elapsed / 2)
    slot_seconds = slots[RESYNC] * elapsed
    resync_shares = figures.slot_shares(
        {name: seconds for (role, name), seconds in attempts.busy.items() if role == RESYNC},
        slot_seconds, [p.name for p in PLATFORMS])
    refresh_seconds = sum(seconds for (role, _), seconds in attempts.busy.items() if role == REFRESH)
    waited = attempts.waited
    lateness_by: dict[str, list[float]] = defaultdict(list)
    for name, late in sampler.lateness.values():
        lateness_by[name].append(fleet_minutes(late, c))
    rows = []
    for spec in PLATFORMS:
        limit = figures.compressed_limit(spec, c)
        samples = sampler.requests[spec.name]
        max_rate = figures.max_window_rate(samples, window)
        limit_per_s = limit / 60
        allowance = limit_per_s + figures.bucket_burst(limit) / window
        requests = requests_after.get(spec.name, 0) - requests_before.get(spec.name, 0)
        rows.append({
            "platform": spec.name,
            "stores": counts[spec.name],
            "latency_ms": spec.latency_ms,
            "limit_per_minute_fleet": spec.requests_per_minute,
            "demand_per_minute_fleet": counts[spec.name] * 24 / CADENCE_HOURS / 1440,
            "limit_per_s": limit_per_s,
            "requests": requests,
            "mean_rate_per_s": figures.mean_rate(samples),
            "max_rate_per_s": max_rate,
            "max_over_limit": max_rate / limit_per_s if max_rate is not None else None,
            "bucket_allowance_per_s": allowance,
            "within_limit": max_rate is None or max_rate <= allowance + 1 / window,
            "slot_share": resync_shares.get(spec.name, 0.0),
            "waiting_slot_share": waited.get(spec.name, 0.0) / slot_seconds if slot_seconds else 0.0,
            "ready_backlog_mean": _mean(sampler.ready[spec.name]),
            "ready_backlog_max": max(sampler.ready[spec.name], default=0),
            "lateness_fleet_minutes": figures.spread(lateness_by[spec.name]),
            "overdue_at_end": overdue.get(spec.name, (0, 0.0))[0],
            "oldest_overdue_fleet_minutes": fleet_minutes(overdue.get(spec.name, (0, 0.0))[1], c),
        })
    sizes = sampler.sizes
    steady = [s for s in sizes if s[0] >= elapsed / 2] or sizes
    requests_total = sum(r["requests"] for r in rows)
    claim = stats["claim"] if stats else None
    acquire = stats["acquire"] if stats else None
    fleet = {
        "slots": slots,
        "resync_slot_shares": resync_shares,
        "refresh_busy_share": refresh_seconds / (slots[REFRESH] * elapsed),
        "waiting_slot_share": sum(waited.values()) / slot_seconds if slot_seconds else 0.0,
        "crawls_completed": len(sampler.lateness),
        "crawl_demand_per_s": settings.stores / settings.cadence_seconds,
        "lateness_fleet_minutes": figures.spread([late for v in lateness_by.values() for late in v]),
        "overdue_at_end": sum(count for count, _ in overdue.values()),
        "db_size_bytes": {"start": sizes[0][1], "end": sizes[-1][1], "max": max(b for _, b in sizes),
                          "steady_mean": sum(b for _, b in steady) / len(steady)},
        "db_growth_bytes_per_fleet_day": _per_fleet_day(figures.growth_per_hour(steady), c),
        "largest_tables_bytes": dict(tables),
        "claim": None if claim is None else {
            "calls": claim["calls"], "calls_per_s": claim["calls"] / elapsed, "mean_ms": claim["mean_ms"]},
        "acquire_platform_request": None if acquire is None else {
            "calls": acquire["calls"], "calls_per_s": acquire["calls"] / elapsed, "mean_ms": acquire["mean_ms"],
            "calls_per_request": acquire["calls"] / requests_total if requests_total else None},
        "claim_note": None if stats else "pg_stat_statements is not in shared_preload_libraries",
        "ticks": {"count": len(ticker.durations), "mean_ms": _mean(ticker.durations) * 1000,
                  "max_ms": max(ticker.durations, default=0) * 1000, "errors": ticker.errors[:5],
                  "tasks_scheduled": ticker.scheduled},
        "retention_pruned": dict(ticker.pruned),
    }
    meta = {
        "started_at": started.isoformat(timespec="seconds"),
        "server": server_label(database_url),
        "machine": f"{host_platform.machine()}, {os.cpu_count()} CPUs, load average at end "
                   f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        "revision": git_revision(REPO_ROOT),
        "settings": dataclasses.asdict(settings),
        "cadence_seconds": settings.cadence_seconds,
        "tick_seconds": settings.tick_seconds,
        "rate_window_seconds": window,
        "measured_seconds": elapsed,
        "handlers": "the crawler's real handlers; the platform answers in-process (bench/fleet/handlers.py)",
        "worker_logs": str(log_dir),
    }
    return {"meta": meta, "platforms": rows, "fleet": fleet}


def _mean(values: list[float] | list[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def _per_fleet_day(per_hour: float | None, compression: float) -> float | None:
    """Bytes an hour of bench time → bytes a day of fleet time."""
    return None if per_hour is None else per_hour * 24 / compression


def write(results_dir: Path, report: dict[str, Any]) -> tuple[Path, Path]:
    results_dir.mkdir(parents=True, exist_ok=True)
    stamp = report["meta"]["started_at"].replace("-", "").replace(":", "").replace("+0000", "Z")
    json_path = results_dir / f"bench-fleet-{stamp}.json"
    md_path = results_dir / f"bench-fleet-{stamp}.md"
    json_path.write_text(json.dumps(report, indent=2) + "\n")
    md_path.write_text(markdown_report(report))
    for path, latest in ((json_path, "bench-fleet-latest.json"), (md_path, "bench-fleet-latest.md")):
        (results_dir / latest).write_text(path.read_text())
    return json_path, md_path


QUICK = {"duration": 75.0}
FULL = {"duration": 480.0}


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--quick", is_flag=True, help="A short run (about 2 minutes with the deploy).")
@click.option("--stores", type=click.IntRange(min=len(PLATFORMS)), default=24_000, show_default=True,
              help="Simulated stores, split over the four platforms 40/30/20/10 %.")
@click.option("--compression", type=click.FloatRange(min=1, max=240), default=24, show_default=True,
              help="Fleet time runs this many times faster: the 4-hour cadence, the rate limits, the "
                   "tick's minute and retention's keep scale by it (240 at most: a schedule runs at "
                   "most every minute).")
@click.option("--duration", type=click.FloatRange(min=10), help="Seconds of fleet run, after the set-up "
              f"(default {FULL['duration']:g}; --quick {QUICK['duration']:g}).")
@click.option("--max-pods", type=click.IntRange(min=1), default=5, show_default=True,
              help="Run at most this many worker processes a role (the manifests' maxReplicaCount is "
                   "the other bound): each holds up to its concurrency + 4 connections, which must fit "
                   "the server's max_connections.")
@click.option("--products", type=click.IntRange(min=1, max=200), default=8, show_default=True,
              help="Products in each store's menu.")
@click.option("--keep-fleet-hours", type=click.FloatRange(min=0.1), default=2.0, show_default=True,
              help="Every retention policy keeps this many fleet hours (compressed like the rest), so "
                   "that retention reaches its steady state within the run.")
@click.option("--rate-window", type=click.FloatRange(min=1), default=60.0, show_default=True,
              help="Seconds over which a platform's request rate is measured (at most half the run).")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path),
              default=REPO_ROOT / "results", show_default=True, help="Where the JSON and Markdown go.")
@click.option("--database-url", envvar="DATABASE_URL", default=server_url, show_envvar=True,
              metavar="URL", help="The server; the bench makes its own databases there.")
@click.option("--keep-db", is_flag=True, help=f"Leave the database {FLEET_DB} for a look afterwards.")
@click.option("--in-database", metavar="URL",
              help="Run in this database, deployed already (its stores, schedules and retention are "
                   "changed, and it is left so), instead of making one on DATABASE_URL's server.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON instead of the table.")
def main(quick: bool, stores: int, compression: float, duration: float | None, max_pods: int | None,
         products: int, keep_fleet_hours: float, rate_window: float, results_dir: Path, database_url: str,
         keep_db: bool, in_database: str | None, as_json: bool) -> None:
    """Run a crawl fleet of STORES stores in compressed time; report rates against limits, slot
    shares, waiting on limits, freshness, database size and the claim's cost."""
    settings = Settings(
        stores=stores, compression=compression,
        duration=duration if duration is not None else (QUICK if quick else FULL)["duration"],
        max_pods=max_pods, products=products, keep_fleet_hours=keep_fleet_hours,
        rate_window=rate_window, sample_seconds=1.0,
    )
    try:
        report = run(database_url, settings, results_dir, keep_db, in_database)
    except FleetBenchError as error:
        raise click.ClickException(str(error)) from error
    json_path, md_path = write(results_dir, report)
    click.echo(json.dumps(report, indent=2) if as_json else text_report(report))
    click.echo(f"\nWritten: {json_path}, {md_path}", err=as_json)


if __name__ == "__main__":
    main(prog_name="python -m bench.fleet")
