"""The crawler demo that `make demo` runs (through scripts/demo): a whole crawl, in a few minutes.

    python -m taskpool_crawler.demo --database-url postgresql://.../taskpool_demo

The database must hold the deployed schema (scripts/demo deploys a fresh one each run). Then:

 1. demo settings, time compressed: the crawler roles retry after 1 s (doubling, at most 5 s),
    the platforms allow 3000 requests a minute and pause 8 s when their circuit opens; the
    default schedules are disabled, so the tick (registered with pg_cron, `pyworker cron
    install`; `pyworker scheduler` without it) only recovers stale tasks while the demo runs
    each step itself;
 2. the simulator (`pyworker simulator`, about 300 stores on dutchie and jane in four states)
    with faults: 3% of requests fail (500, 429 or a timeout), 1% answer a corrupt body; 5% of
    its product images are broken; two tinyproxy instances on loopback, registered as proxies of
    both platforms (add_proxy), which every platform request goes through, in turn; and an S3
    object store, moto's server on loopback, whose bucket the workers store payloads and images in
    (TASKPOOL_STORAGE=s3://taskpool-demo, AWS_ENDPOINT_URL);
 3. workers for every role, each role at the concurrency its Kubernetes manifest gives a pod
    (ROLE_CONCURRENCY): a few commands `pyworker --role R=N ... --concurrency C --handlers
    taskpool_crawler.handlers --processes P`, each running P processes that serve one or several
    roles (WORKER_COMMANDS: the discoveries and the crawls share one);
 4. discovery: the store_discovery schedule runs now; the SQL chains queue each new store's
    first crawl (product_discovery) and each crawl's product_refresh, which queues an
    image_download per image URL not stored yet (the round waits for them too);
 5. a resync round with drifted menus: the simulator's clock moves 4 hours, a product_resync is
    queued for every store, and dutchie goes down until its circuit opens;
 6. analytics: the analytics_refresh schedule runs now;
 7. the summary: tasks by role and status, tasks per second of crawling, the concurrency each
    worker process ran at, the payloads and the
    bucket's objects and bytes (listed from it), the images (downloads, unique images stored,
    their bytes), the capacity view at the busiest moment sampled, the summary of one store's
    payload diff, the circuit-breaker events, and each proxy's figures (requests, failures, its
    state; the requests its own log shows).

Progress shows every two seconds, each line followed by what the tasks still to go wait for
(v_waiting_tasks: a worker, a retry's backoff, an open circuit, a snooze, ...; each task when
few are left). Whatever happens, the workers, the simulator, the proxies and the object store are
stopped (SIGTERM by PID, then SIGKILL after a grace) and the cron job removed; the bucket's
objects are copied into the work directory first (moto keeps them in memory). At the end: where
the wall time went, and commands to paste that look at what the run left (its database, payload
files and logs stay).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError
from psycopg.conninfo import conninfo_to_dict

from pyworker import TaskpoolError
from pyworker.admin import (
    CAPACITY_COLUMNS,
    AdminDatabase,
    CronMissing,
    default_database_url,
    install_cron,
    render_table,
    uninstall_cron,
)
from taskpool_crawler import storage
from taskpool_crawler.cli import describe_diff
from taskpool_crawler.db import CrawlerDatabase
from taskpool_crawler.tinyproxy import Tinyproxy, start_tinyproxy

HANDLERS = "taskpool_crawler.handlers"


class DemoDatabase(CrawlerDatabase, AdminDatabase):
    """The demo watches as the operator does (tasks, capacity, schedules) and reads the crawler's
    tables: both sets of calls on one connection."""


# The demo's payloads go to a bucket of moto's S3 server (installed by `make deps`), on loopback;
# moto checks no signature, so any key pair will do.
DEMO_BUCKET = "taskpool-demo"
DEMO_S3_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "taskpool-demo",
    "AWS_SECRET_ACCESS_KEY": "taskpool-demo-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}
# How many tasks of each role one worker process runs at once: the TASKPOOL_CONCURRENCY its
# Kubernetes manifest gives a pod (kubernetes/crawler/roles/ROLE/kustomization.yaml, else the
# base Deployment's; crawler/tests/test_crawler_demo.py checks that they agree).
ROLE_CONCURRENCY = {
    "store_discovery": 1,
    "entry_point_discovery": 4,
    "product_discovery": 10,
    "product_resync": 20,
    "product_refresh": 4,
    "analytics_refresh": 1,
    "image_download": 4,
}
CRAWLER_ROLES = tuple(ROLE_CONCURRENCY)


@dataclass(frozen=True)
class WorkerCommand:
    """One `pyworker --role R=N ... --concurrency C --processes P` command: P worker processes,
    each serving `roles`, every role at its manifest's concurrency (its share of the process),
    the process running their sum at once."""

    name: str
    roles: tuple[str, ...]
    processes: int = 1

    @property
    def concurrency(self) -> int:
        return sum(ROLE_CONCURRENCY[role] for role in self.roles)

    def describe(self) -> str:
        shares = ", ".join(f"{role} {ROLE_CONCURRENCY[role]}" for role in self.roles)
        return f"{self.name} x{self.processes} at --concurrency {self.concurrency} ({shares})"


# The demo's worker commands. The discoveries and the crawls share a process, as they may in a
# deployment: a discovery's transaction runs beside the crawls' payload records, each handler on a
# connection of its own. The refreshes, the busiest on the CPU, get two processes.
WORKER_COMMANDS = (
    WorkerCommand(
        "discovery-and-crawls",
        ("store_discovery", "entry_point_discovery", "product_discovery", "product_resync"),
    ),
    WorkerCommand("refresh-and-analytics", ("product_refresh", "analytics_refresh"), processes=2),
    WorkerCommand("images", ("image_download",)),
)
WORKER_PROCESSES = sum(command.processes for command in WORKER_COMMANDS)
PLATFORMS = ("dutchie", "jane")
STATES = ("AZ", "CA", "CO", "MI")
OUTAGE_PLATFORM = "dutchie"
# The crawl rounds wait for the image downloads their refreshes queue; this share of the
# simulator's images is broken (each fails its own task).
IMAGE_ROLE = "image_download"
BROKEN_IMAGE_SHARE = 0.05
# The share of the simulator's products listed without an id (the crawler hashes theirs).
ID_LESS_SHARE = 0.05
ACTIVE = ("pending", "claimed", "running")
PROGRESS_SECONDS = 2.0
# How often a round looks whether it is over (it ends at once, not at the next progress line).
IDLE_CHECK_SECONDS = 0.25
# With this few tasks to go, each gets a line saying what it waits for.
FEW_TASKS = 3
INDENT = " " * 10
STOP_GRACE_SECONDS = 10.0

# Time compression: the crawler roles' retry backoff, the platforms' rate and cooldown.
BACKOFF_BASE, BACKOFF_CAP = "1 second", "5 seconds"
REQUESTS_PER_MINUTE, COOLDOWN = 3000, "8 seconds"
# The proxies every platform request goes through, and how long a failure rests one.
PROXIES = ("proxy-a", "proxy-b")
PROXY_REST_BASE, PROXY_REST_CAP = "1 second", "4 seconds"
# Failed attempts by cause, from the start of their error message.
CAUSES = (
    ("corrupt", "corrupt menu"),
    ("HTTP 500", "HTTP 500"),
    ("HTTP 429", "HTTP 429"),
    ("no answer within", "timeout"),
    ("is broken:", "broken image"),
    ("downloading the image", "image refused"),
    ("every proxy of", "proxies rested"),
    ("proxies failed", "proxies failed"),
)


# What tasks wait for (v_waiting_tasks.waiting_for), said of several: the count goes first;
# {platforms} and {soonest} (seconds until the first of them may be claimed) are filled in.
WAITS = {
    "handler": "running",
    "worker": "ready, waiting for a free worker",
    "store": "waiting for another task of their store to finish",
    "circuit": "held back while {platforms}'s circuit is open (claims resume in {soonest:.1f} s)",
    "retry": "retrying after a failure (the first in {soonest:.1f} s)",
    "snooze": "snoozed by their worker (the first back in {soonest:.1f} s)",
    "schedule": "scheduled (the first due in {soonest:.1f} s)",
}


def cause(error_message: str | None) -> str | None:
    """A failed attempt's cause in a word or two (CAUSES); None for another error."""
    message = error_message or ""
    return next((name for text, name in CAUSES if text in message), None)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def describe_wait(task: dict[str, Any]) -> str:
    """What one active task (a v_waiting_tasks row) waits for."""
    store = "" if task["dispensary_id"] is None else f", store {task['dispensary_id']}"
    name = f"task {task['id']} ({task['role']}{store})"
    seconds = task["ready_in_seconds"]
    reason = task["waiting_for"]
    if reason == "handler":
        return f"{name} is running: attempt {task['attempt']}, on {task['worker_id']}"
    if reason == "retry":
        return (
            f"{name} failed ({cause(task['error_message']) or task['error_message']}) and retries"
            f" in {seconds:.1f} s (retry {task['retry_count']} of {task['max_retries']})"
        )
    if reason == "circuit":
        return (
            f"{name} is held back while {task['platform']}'s circuit is open"
            f" (claims resume in {seconds:.1f} s)"
        )
    if reason == "snooze":
        return f"{name} was snoozed by its worker (back in {seconds:.1f} s)"
    if reason == "schedule":
        return f"{name} is scheduled (due in {seconds:.1f} s)"
    if reason == "store":
        return f"{name} waits for another task of its store to finish"
    return f"{name} is ready, waiting for a free {task['role']} worker"


def summarize_waits(tasks: list[dict[str, Any]]) -> str:
    """What many active tasks (v_waiting_tasks rows) wait for, the commonest reason first."""
    parts = []
    for reason, count in Counter(t["waiting_for"] for t in tasks).most_common():
        alike = [t for t in tasks if t["waiting_for"] == reason]
        phrase = WAITS[reason].format(
            platforms=" and ".join(sorted({t["platform"] or "?" for t in alike})),
            soonest=min((t["ready_in_seconds"] or 0) for t in alike),
        )
        parts.append(f"{count} {phrase}")
    return ", ".join(parts)


def say(text: str = "") -> None:
    print(text, flush=True)


def heading(text: str) -> None:
    say()
    say(f"== {text}")


@dataclass
class Stopwatch:
    """Wall time cut into laps that add up to it."""

    started_at: float  # time.time()
    laps: list[tuple[str, float]] = field(default_factory=list)

    def elapsed(self) -> float:
        return sum(seconds for _, seconds in self.laps)

    def lap(self, label: str) -> float:
        """End a lap here, named `label`; its seconds."""
        seconds = time.time() - self.started_at - self.elapsed()
        self.laps.append((label, seconds))
        return seconds


@dataclass
class Demo:
    database_url: str
    workdir: Path
    stores: int
    seed: int
    error_rate: float
    corrupt_rate: float
    db: DemoDatabase = field(init=False)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    simulator_url: str = ""
    object_store_url: str = ""
    cron_installed: bool = False
    worker_processes: int = 0
    # The capacity view at the progress line with the most crawler tasks pending or running:
    # (tasks, where and when, the rows).
    busiest: tuple[int, str, list[dict[str, Any]]] | None = None
    # What the closing commands look at: the store whose diff is shown, its newest payload and
    # its resync task.
    featured: dict[str, int] = field(default_factory=dict)
    proxies: list[Tinyproxy] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.db = DemoDatabase(self.database_url, application_name="pyworker demo")
        self.logs = self.workdir / "logs"
        self.storage = self.workdir / "storage"

    # Plumbing: processes, the simulator's admin API, SQL

    def spawn(
        self, name: str, argv: list[str], env: dict[str, str] | None = None
    ) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - the child keeps it
        process = subprocess.Popen(
            argv,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C reaches the demo, which stops them in order
        )
        log.close()
        self.processes[name] = process
        return process

    def admin(self, path: str, body: dict[str, Any] | None = None) -> Any:
        request = urllib.request.Request(
            f"{self.simulator_url}{path}",
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="GET" if body is None else "POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    # The steps

    def prepare(self) -> None:
        for directory in (self.logs, self.storage):
            directory.mkdir(parents=True, exist_ok=True)
        # A fresh run: the payload files of the last one belong to its (dropped) database.
        for old in sorted(self.storage.rglob("*"), reverse=True):
            old.rmdir() if old.is_dir() else old.unlink()
        for old in self.logs.glob("*.log"):
            old.unlink()
        db = self.db
        db.check_schema()
        for role in CRAWLER_ROLES:
            db.set_role_backoff(role, BACKOFF_BASE, BACKOFF_CAP)
        for platform in PLATFORMS:
            db.set_platform_limits(platform, REQUESTS_PER_MINUTE, COOLDOWN)
        for schedule in db.schedules():
            db.update_schedule(schedule["name"], enabled=False)
        say(
            f"demo settings: retries after {BACKOFF_BASE} (at most {BACKOFF_CAP});"
            f" {REQUESTS_PER_MINUTE} requests/minute per platform, {COOLDOWN} circuit cooldown;"
            " default schedules disabled (the demo runs each step)"
        )
        try:
            installed = install_cron(self.db)
            self.cron_installed = True
            say(f"the tick: pg_cron job {installed['job_name']} runs tick_schedules() every minute")
        except CronMissing as missing:
            say(f"the tick: {missing}; starting `pyworker scheduler` instead")
            self.spawn(
                "scheduler",
                [
                    sys.executable,
                    "-m",
                    "pyworker",
                    "--database-url",
                    self.database_url,
                    "scheduler",
                    "--interval-seconds",
                    "60",
                ],
            )

    def start_simulator(self) -> None:
        port_file = self.workdir / "simulator.port"
        port_file.unlink(missing_ok=True)
        self.spawn(
            "simulator",
            [
                sys.executable,
                "-m",
                "pyworker",
                "simulator",
                "--port",
                "0",
                "--port-file",
                str(port_file),
                "--seed",
                str(self.seed),
                "--stores",
                str(self.stores),
                "--platforms",
                ",".join(PLATFORMS),
                "--states",
                ",".join(STATES),
                "--broken-images",
                str(BROKEN_IMAGE_SHARE),
                "--id-less",
                str(ID_LESS_SHARE),
            ],
        )
        deadline = time.monotonic() + 20
        while not port_file.exists():
            if self.processes["simulator"].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"the simulator did not start: see {self.logs / 'simulator.log'}"
                )
            time.sleep(0.05)
        self.simulator_url = f"http://127.0.0.1:{port_file.read_text().strip()}"
        for platform in PLATFORMS:
            self.admin(
                "/admin/faults",
                {
                    "platform": platform,
                    "error_rate": self.error_rate,
                    "error_kinds": ["500", "429", "timeout"],
                    "corrupt_rate": self.corrupt_rate,
                    "latency_ms": 5,
                },
            )
        state = self.admin("/admin/state")
        open_now = sum(state["stores"][p]["open"] for p in PLATFORMS)
        say(
            f"simulator at {self.simulator_url}: {open_now} stores open now (of {self.stores})"
            f" on {', '.join(PLATFORMS)} in {', '.join(STATES)}; faults: {self.error_rate:.0%} of"
            f" requests fail (500, 429, timeout), {self.corrupt_rate:.0%} answer a corrupt body"
        )
        say(
            f"product images: shared by many products; {BROKEN_IMAGE_SHARE:.0%} of them broken"
            " (404, not an image, cut short), each failing its own image_download task"
        )
        say(
            f"products without an id: {ID_LESS_SHARE:.0%} of them, the same in every crawl; each gets"
            " product_hash_id of its name, brand, category and size"
        )

    def start_proxies(self) -> None:
        """Two tinyproxy instances on loopback (files under the workdir's proxies/), each a
        proxy of every platform: the crawl goes through them, in turn."""
        for name in PROXIES:
            directory = self.workdir / "proxies" / name
            if directory.exists():
                for old in directory.iterdir():
                    old.unlink()
            self.proxies.append(start_tinyproxy(directory, name))
        for proxy in self.proxies:
            for platform in PLATFORMS:
                self.db.add_proxy(platform, proxy.url, rest_base=PROXY_REST_BASE, rest_cap=PROXY_REST_CAP)
        say(
            f"proxies: {len(self.proxies)} tinyproxy instances on loopback ("
            + ", ".join(f"{p.name} at {p.url}, pid {p.pid}" for p in self.proxies)
            + f"), each a proxy of {' and '.join(PLATFORMS)}; a failure rests one for"
            f" {PROXY_REST_BASE} (doubling, at most {PROXY_REST_CAP})"
        )

    def show_proxies(self) -> None:
        """Each proxy's figures (v_crawler_proxies), and what each tinyproxy's own log saw."""
        say()
        say("proxies (v_crawler_proxies; `pyworker proxies list`):")
        rows = self.db.list_proxies()
        say(
            render_table(
                rows,
                [
                    ("id", "id"),
                    ("platform", "platform"),
                    ("url", "url"),
                    ("state", "state"),
                    ("requests", "requests_total"),
                    ("failures", "failures_total"),
                    ("last_error", "last_error"),
                ],
            )
            if rows
            else "none"
        )
        say(
            "requests in the proxies' own logs: "
            + ", ".join(f"{p.name} {p.requests()}" for p in self.proxies)
            + f" (of {sum(r['requests_total'] for r in rows)} taken; a failed one is retried"
            " through the next proxy, on the same turn of the platform's rate limit)"
        )

    def stop_proxies(self) -> None:
        """Stop the tinyproxy instances by their PIDs."""
        running = [p for p in self.proxies if p.running()]
        for proxy in running:
            proxy.stop()
        if running:
            say(
                f"stopped the {len(running)} tinyproxy instances (pids "
                + ", ".join(str(p.pid) for p in running)
                + ")"
            )

    # The object store: moto's S3 server, the bucket, its figures, and a copy kept at the end

    def start_object_store(self) -> None:
        """moto's S3 server on a free loopback port (stopped with the other processes) and the
        demo's bucket in it: where the workers store payloads (TASKPOOL_STORAGE=s3://...)."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.spawn(
            "object-store", [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
        )
        self.object_store_url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                self.bucket().client.create_bucket(Bucket=DEMO_BUCKET)
                break
            except EndpointConnectionError:
                if self.processes["object-store"].poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"moto's S3 server did not start: see {self.logs / 'object-store.log'}"
                    ) from None
                time.sleep(0.1)
        say(f"object store: moto's S3 server at {self.object_store_url}, bucket s3://{DEMO_BUCKET}")

    def object_store_env(self) -> dict[str, str]:
        """What points a worker at the demo's bucket: the storage URL, boto3's endpoint and keys."""
        return {
            "TASKPOOL_STORAGE": f"s3://{DEMO_BUCKET}",
            "AWS_ENDPOINT_URL": self.object_store_url,
            **DEMO_S3_CREDENTIALS,
        }

    def bucket(self) -> storage.S3Storage:
        client = boto3.client(
            "s3",
            endpoint_url=self.object_store_url,
            aws_access_key_id=DEMO_S3_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=DEMO_S3_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=DEMO_S3_CREDENTIALS["AWS_DEFAULT_REGION"],
        )
        return storage.S3Storage(DEMO_BUCKET, "", client)

    def show_object_store(self) -> None:
        """The bucket's figures, listed from it, beside the payload rows' own."""
        objects = list(self.bucket().list(storage.PAYLOADS_PREFIX))
        rows, recorded_bytes = self.db.payload_totals()
        say(
            f"object store: {plural(len(objects), 'object')}, {sum(o.size_bytes for o in objects)}"
            f" bytes in s3://{DEMO_BUCKET} (moto's S3 server at {self.object_store_url});"
            f" the payload rows record {plural(rows, 'object')}, {recorded_bytes} bytes"
        )

    def keep_the_bucket(self) -> None:
        """Copy the bucket's payloads and images into the work directory before its server stops
        (moto keeps them in memory): the closing commands read them there, in the same layout."""
        if not self.object_store_url or self.processes["object-store"].poll() is not None:
            return
        bucket, kept = self.bucket(), storage.LocalStorage(self.storage)
        try:
            copied = 0
            for stored in bucket.list(""):
                kept.put(stored.key, bucket.get(stored.key, storage.MAX_PAYLOAD_FILE_BYTES))
                copied += 1
        except (BotoCoreError, ClientError, OSError) as error:
            say(f"could not copy the bucket's objects to {self.storage}: {error}")
            return
        say(f"copied the bucket's {plural(copied, 'object')} (payloads and images) to {self.storage} (the server keeps them in memory)")

    def start_workers(self) -> None:
        env = {
            "DATABASE_URL": self.database_url,
            "TASKPOOL_PLATFORM_URL": self.simulator_url,
            **self.object_store_env(),
            "TASKPOOL_PLATFORM_TIMEOUT": "2",
            "TASKPOOL_PLATFORMS": ",".join(PLATFORMS),
            "TASKPOOL_STATES": ",".join(STATES),
            "TASKPOOL_POLL_INTERVAL_MS": "1000",
            "TASKPOOL_HEARTBEAT_INTERVAL_MS": "5000",
            "TASKPOOL_SHUTDOWN_GRACE_SECONDS": "5",
        }
        for command in WORKER_COMMANDS:
            roles = [f"--role={role}={ROLE_CONCURRENCY[role]}" for role in command.roles]
            self.spawn(
                command.name,
                [
                    sys.executable,
                    "-m",
                    "pyworker",
                    *roles,
                    "--concurrency",
                    str(command.concurrency),
                    "--handlers",
                    HANDLERS,
                    "--worker-id",
                    f"demo-{command.name}",
                    "--processes",
                    str(command.processes),
                ],
                env,
            )
        wanted = WORKER_PROCESSES
        deadline = time.monotonic() + 60
        while (found := self.worker_count()) < wanted:
            self.check_processes()
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {found} of {wanted} workers registered: see {self.logs}")
            time.sleep(0.2)
        self.worker_processes = found
        say(
            f"workers: {found} worker processes, registered, from {len(WORKER_COMMANDS)} commands"
            " `pyworker --role R=N ... --concurrency C --processes P`, each role at the concurrency"
            " of its Kubernetes manifest: "
            + "; ".join(command.describe() for command in WORKER_COMMANDS)
        )

    def check_processes(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise RuntimeError(
                    f"{name} exited with {process.returncode}: see {self.logs / (name + '.log')}"
                )

    def counts(self) -> dict[tuple[str, str], int]:
        return {(r["role"], r["status"]): r["tasks"] for r in self.db.task_counts()}

    def run_until_idle(
        self,
        roles: tuple[str, ...],
        what: str,
        started: float,
        during: Callable[[dict[tuple[str, str], int]], bool] | None = None,
        timeout: float = 120,
    ) -> float:
        """Show progress until no task of `roles` is pending, claimed or running; the seconds
        since `started` (time.monotonic()). `during(counts)` runs at each check; True asks for a
        progress line at once (something worth seeing happened)."""
        last = started
        done_before = sum(n for (_, s), n in self.counts().items() if s == "completed")
        done_last = done_before
        while True:
            time.sleep(IDLE_CHECK_SECONDS)
            self.check_processes()
            counts = self.counts()
            now = time.monotonic()
            now_worth_a_line = during is not None and during(counts)
            active = sum(counts.get((role, s), 0) for role in roles for s in ACTIVE)
            if active and now - last < PROGRESS_SECONDS and not now_worth_a_line:
                continue
            done = sum(n for (_, s), n in counts.items() if s == "completed")
            parts = []
            for role in roles:
                total = sum(n for (r, _), n in counts.items() if r == role)
                if not total:
                    continue
                finished = counts.get((role, "completed"), 0)
                failed = counts.get((role, "failed"), 0)
                to_go = sum(counts.get((role, s), 0) for s in ACTIVE)
                parts.append(
                    f"{role} {finished}/{total}"
                    + (f" ({failed} failed)" if failed else "")
                    + (f" [{to_go} to go]" if to_go else "")
                )
            rate = (done - done_last) / (now - last)
            say(f"  {now - started:5.1f}s  " + "  ".join(parts) + f"  | {rate:5.1f} tasks/s")
            if active:
                self.explain_waits(roles)
            self.sample_capacity(f"{what}, {now - started:.1f} s in")
            last, done_last = now, done
            if not active:
                elapsed = now - started
                say(
                    f"  {what}: {plural(done - done_before, 'task')} completed in {elapsed:.1f} s"
                    f" ({(done - done_before) / elapsed:.1f} tasks/s)"
                )
                return elapsed
            if now - started > timeout:
                raise RuntimeError(f"{what} did not finish within {timeout:.0f} s: see {self.logs}")

    def explain_waits(self, roles: tuple[str, ...]) -> None:
        """Say what the tasks still to go wait for: each one when they are few."""
        tasks = self.db.waiting_tasks(roles)
        if not tasks:
            say(f"{INDENT}waiting: nothing now (the last task finished just after the count)")
        elif len(tasks) <= FEW_TASKS:
            for task in tasks:
                say(f"{INDENT}waiting: {describe_wait(task)}")
        else:
            say(f"{INDENT}waiting: {summarize_waits(tasks)}")

    def sample_capacity(self, moment: str) -> None:
        """Keep the capacity view if the crawler has more tasks pending or running than ever."""
        rows = [r for r in self.db.worker_capacity_rows() if r["role"] in CRAWLER_ROLES]
        in_flight = sum(r["pending_tasks"] + r["running_tasks"] for r in rows)
        if self.busiest is None or in_flight > self.busiest[0]:
            self.busiest = (in_flight, moment, rows)

    def discovery(self) -> float:
        heading("discovery -> first crawls -> refreshes")
        started = time.monotonic()
        self.db.trigger_schedule("store_discovery")
        say(
            "triggered the store_discovery schedule (the tasks chain: product_discovery per new store,"
            " product_refresh per crawl)"
        )
        return self.run_until_idle(
            ("store_discovery", "product_discovery", "product_refresh", IMAGE_ROLE),
            "discovery",
            started,
        )

    def resync_round(self) -> float:
        heading("a resync round, 4 hours of drift later")
        started = time.monotonic()
        clock = self.admin("/admin/clock", {"advance_hours": 4})["clock_hours"]
        stores = self.db.active_store_ids()
        # An outage as the round starts: dutchie answers 500 until its circuit opens.
        self.admin("/admin/faults", {"platform": OUTAGE_PLATFORM, "down": True})
        down_since = time.monotonic()
        self.db.enqueue_tasks([{"role": "product_resync", "dispensary_id": i} for i in stores])
        say(
            f"simulator clock at {clock:g} h; queued a product_resync for each of {len(stores)} stores"
        )
        say(f"  ** {OUTAGE_PLATFORM} is down (every request answers 500) until its circuit opens")
        outage = {"over": False}

        def end_the_outage(_counts: dict[tuple[str, str], int]) -> bool:
            """Once the circuit opened (or 10 s passed), end the outage; True then, so that a
            progress line shows the platform's tasks held back while its circuit is open (on a
            busy machine the next regular line could come after the cooldown)."""
            if outage["over"]:
                return False
            opened = any(
                e["platform"] == OUTAGE_PLATFORM and e["event"] == "opened"
                for e in self.db.platform_events()
            )
            if opened or time.monotonic() - down_since > 10:
                self.admin("/admin/faults", {"platform": OUTAGE_PLATFORM, "down": False})
                outage["over"] = True
                say(
                    f"  ** {OUTAGE_PLATFORM} is back"
                    + (
                        f"; its circuit opened: its tasks wait out the {COOLDOWN} cooldown, the"
                        " other platform's run on"
                        if opened
                        else ""
                    )
                )
                return True
            return False

        return self.run_until_idle(
            ("product_resync", "product_refresh", IMAGE_ROLE), "resync round", started, end_the_outage
        )

    def analytics(self) -> float:
        heading("analytics")
        started = time.monotonic()
        self.db.trigger_schedule("analytics_refresh")
        elapsed = self.run_until_idle(("analytics_refresh",), "analytics", started)
        (task,) = self.db.list_tasks(role="analytics_refresh", limit=1)
        result = self.db.get_task(task["id"])["result"]
        say(f"  refresh_analytics(): {json.dumps(result)}")
        return elapsed

    def summary(self, crawl_seconds: float) -> None:
        heading("summary")
        say("tasks by role and status:")
        say(
            render_table(
                self.db.task_counts(), [("role", "role"), ("status", "status"), ("count", "tasks")]
            )
        )
        completed = sum(r["tasks"] for r in self.db.task_counts() if r["status"] == "completed")
        say()
        say(
            f"throughput: {completed} tasks completed in {crawl_seconds:.1f} s of crawling (the three"
            f" rounds above), {completed / crawl_seconds:.1f} tasks per second with"
            f" {self.worker_processes} worker processes"
        )
        say(
            "worker processes, each role at the concurrency of its Kubernetes manifest: "
            + "; ".join(command.describe() for command in WORKER_COMMANDS)
        )
        causes: dict[str, int] = {}
        for row in self.db.attempt_errors():
            kind = cause(row["error_message"]) or "other"
            causes[kind] = causes.get(kind, 0) + row["attempts"]
        if causes:
            say(
                "failed attempts, by cause (retried with backoff; a spent task ends failed): "
                + ", ".join(
                    f"{kind} {n}" for kind, n in sorted(causes.items(), key=lambda c: -c[1])
                )
            )
        payloads = self.db.payload_counts()
        say("payloads: " + ", ".join(f"{r['payloads']} {r['status']}" for r in payloads))
        self.show_object_store()
        self.show_images()
        self.show_hashed_products()
        self.show_busiest_capacity()
        self.show_a_diff()
        say()
        say("circuit-breaker events (platform_events):")
        events = self.db.platform_events()
        say(
            render_table(
                events,
                [
                    ("platform", "platform"),
                    ("event", "event"),
                    ("at", "at"),
                    ("failures", "consecutive_failures"),
                    ("error", "error_message"),
                ],
            )
            if events
            else "none"
        )
        self.show_proxies()

    def show_images(self) -> None:
        """What the image downloads gave: each content stored once, however many URLs show it."""
        images = self.db.image_counts()
        say(
            f"images: {images['downloaded']} downloaded ({images['failed']} failed),"
            f" {images['unique_images']} unique images stored ({images['stored_bytes']} bytes,"
            f" in s3://{DEMO_BUCKET}/images) for {images['urls']} image URLs shown by"
            f" {images['linked_products']} products"
        )

    def show_hashed_products(self) -> None:
        """How many of the stores' products the platform gave no id, known by their hashed ids."""
        counts = self.db.product_id_counts()
        say(
            f"products: {counts['products']} in store_products, {counts['hashed']} of them without a"
            f" platform id (hashed ids); {counts['duplicates']} id-less listings left out as duplicates"
            " of one hashing the same"
        )

    def show_busiest_capacity(self) -> None:
        """The capacity view as it was with the most work in flight (at the end it is all 0)."""
        if self.busiest is None:
            return
        in_flight, moment, rows = self.busiest
        say()
        say(
            f"capacity (v_worker_capacity) at the busiest progress line ({moment}:"
            f" {plural(in_flight, 'task')} pending or running):"
        )
        say(render_table(rows, CAPACITY_COLUMNS[:10]))
        fullest = max(rows, key=lambda r: r["pending_tasks"])
        rate, slots = fullest["tasks_per_slot_hour"], fullest["active_slots"]
        if fullest["pending_tasks"] and rate and slots:
            seconds = fullest["pending_tasks"] / (slots * float(rate)) * 3600
            say(
                f"at the pace of the last hour, the {slots} {fullest['role']} task slots would drain"
                f" its {fullest['pending_tasks']} pending in {seconds:.1f} s of work"
                f" (hours_to_drain {fullest['estimated_hours_to_drain']}: it counts in hours)"
            )

    def show_a_diff(self) -> None:
        """The diff summary of the store whose menu changed most in the resync round (of the first
        40), and how to see all of it."""
        say()
        best: tuple[int, int, dict[str, Any]] | None = None
        for store_id in self.db.stores_with_applied_payloads(at_least=2, limit=40):
            diff = self.db.diff_latest_payloads(store_id)
            changes = sum(diff["diff"].values())
            if best is None or changes > best[0]:
                best = (changes, store_id, diff)
        if best is None:
            say("payload diff: no store has two applied payloads")
            return
        _, store_id, diff = best
        store = self.db.get_dispensary(store_id)
        (resync,) = self.db.list_tasks(role="product_resync", store=store_id, limit=1)
        self.featured = {"store": store_id, "payload": diff["to"]["id"], "task": resync["id"]}
        say(
            f"payload diff of store {store_id} ({store['name']}, {store['city']} {store['state_code']}),"
            " the menu that changed most, before and after the resync round:"
        )
        say(describe_diff(diff))
        say(
            f"(every product that changed: `pyworker payloads diff --store {store_id}`, with the"
            " environment given at the end)"
        )

    def stop(self) -> None:
        """SIGTERM everything started (workers hand back or finish their tasks), then SIGKILL."""
        heading("stopping")
        self.keep_the_bucket()
        registered = self.registered_workers()
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for name, process in self.processes.items():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                say(f"{name} did not stop within {STOP_GRACE_SECONDS:.0f} s: killing it")
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        names = {command.name for command in WORKER_COMMANDS}
        commands = [name for name in self.processes if name in names]
        others = [name for name in self.processes if name not in names]
        left = self.registered_workers()
        if commands and None in (registered, left):
            say(f"stopped the {len(commands)} `pyworker --role R=N ... --processes P` commands")
        elif commands:
            say(
                f"stopped the {len(commands)} `pyworker --role R=N ... --processes P` commands: of their"
                f" {registered} worker processes, {registered - left} deregistered"
                + (f", {left} did not (killed: the tick takes their tasks back)" if left else "")
            )
        if others:
            say("stopped the " + " and the ".join(others))
        self.stop_proxies()
        if self.cron_installed:
            try:
                uninstall_cron(self.db)
                say("removed the demo's pg_cron job")
            except TaskpoolError as error:
                say(f"could not remove the demo's pg_cron job: {error}")
        self.db.close()

    def worker_count(self) -> int:
        """The worker processes registered (v_workers has a row per role a process serves)."""
        return len({worker["worker_id"] for worker in self.db.workers()})

    def registered_workers(self) -> int | None:
        """How many workers the registry holds (task_workers); None when it cannot be read (the
        demo may be stopping because the database went away)."""
        try:
            return self.worker_count()
        except TaskpoolError:
            return None

    def closing_commands(self) -> list[str]:
        """Shell lines that look at what the run left, pasted as they are."""
        script = Path(sys.executable).parent / "pyworker"
        pyworker = (
            shlex.quote(str(script))
            if script.exists()
            else f"{shlex.quote(sys.executable)} -m pyworker"
        )
        lines = [
            f"export DATABASE_URL={shlex.quote(self.database_url)}",
            f"export TASKPOOL_STORAGE={shlex.quote(str(self.storage))}",
            f"{pyworker} counts",
        ]
        if self.featured:
            store, payload, task = (self.featured[k] for k in ("store", "payload", "task"))
            lines += [
                f"{pyworker} payloads list --store {store}",
                f"{pyworker} payloads show {payload} --products",
                f"{pyworker} payloads diff --store {store}",
                f"{pyworker} show {task}",
            ]
        return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m taskpool_crawler.demo", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL") or default_database_url(),
        help="the demo's database, deployed and disposable (default: $DATABASE_URL)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(".demo"),
        help="payload files and logs go here (default: .demo)",
    )
    parser.add_argument(
        "--stores", type=int, default=300, help="stores in the simulator (default 300)"
    )
    parser.add_argument("--seed", type=int, default=42, help="the simulator's seed (default 42)")
    parser.add_argument("--error-rate", type=float, default=0.03, help="share of failing requests")
    parser.add_argument("--corrupt-rate", type=float, default=0.01, help="share of corrupt menus")
    parser.add_argument(
        "--started-at",
        type=float,
        metavar="UNIX_TIME",
        help="when the run began, for its wall time (scripts/demo passes the time it started, so"
        " that its deploy counts; default: when this program starts)",
    )
    args = parser.parse_args(argv)

    demo = Demo(
        args.database_url,
        args.workdir.resolve(),
        args.stores,
        args.seed,
        args.error_rate,
        args.corrupt_rate,
    )
    watch = Stopwatch(time.time() if args.started_at is None else args.started_at)
    if args.started_at is not None:
        database = conninfo_to_dict(args.database_url).get("dbname")
        watch.lap(f"scripts/demo: a fresh database {database}, deployed")
    try:
        heading("setting up")
        demo.prepare()
        demo.start_simulator()
        demo.start_proxies()
        demo.start_object_store()
        demo.start_workers()
        watch.lap(f"setting up: the simulator and {demo.worker_processes} worker processes")
        rounds = {
            "discovery": demo.discovery(),
            "resync round": demo.resync_round(),
            "analytics": demo.analytics(),
        }
        crawl_seconds = watch.lap(
            "crawling: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in rounds.items())
        )
        demo.summary(crawl_seconds)
        watch.lap("the summary")
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except (RuntimeError, TaskpoolError, OSError) as error:
        say(f"demo failed: {error}")
        return 1
    finally:
        demo.stop()
    watch.lap("stopping")
    heading(
        f"done in {watch.elapsed():.1f} s of wall time since "
        + ("this program" if args.started_at is None else "scripts/demo")
        + " began:"
    )
    for label, seconds in watch.laps:
        say(f"  {seconds:5.1f} s  {label}")
    heading("what the run left")
    say("Its database, payload files and logs stay until the next run. To look, paste into a shell:")
    for line in demo.closing_commands():
        say(f"  {line}")
    say(
        "(the exports point that shell's pyworker and make at the demo's database and files;"
        " `unset DATABASE_URL TASKPOOL_STORAGE` undoes them)"
    )
    say(f"logs: {demo.logs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
