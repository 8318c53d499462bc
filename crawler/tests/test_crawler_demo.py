"""The demo `make demo` runs, on a small simulator (20 stores), in a test database, once for the
module: every step runs, nothing is left running, and its story matches what happened: the
closing commands work pasted as they are, the process counts agree, the wall time adds up, every
progress line says what its tasks wait for, the capacity table shows work in flight, and the
payload diff is a summary that says how to see all of it."""

from __future__ import annotations

import os
import re
import secrets
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from core_fixtures import (
    COPY_PREFIX,
    REPO_ROOT,
    admin_connect,
    database_url,
    drop_database,
    url_for_database,
)
from kustomize_build import build
from psycopg import sql

from taskpool_crawler.demo import CRAWLER_ROLES, ROLE_CONCURRENCY, WORKER_COMMANDS, WORKER_PROCESSES
KUBERNETES_CRAWLER = REPO_ROOT / "kubernetes" / "crawler"
PROGRESS_LINE = re.compile(r"^ +\d+\.\ds  ")
WAITING_LINE = re.compile(
    r"^ {10}waiting: (?:"
    # one task ...
    r"task \d+ \([a-z_]+(?:, store \d+)?\) (?:is running|failed \(.+\) and retries in|is held back while"
    r"|was snoozed|is scheduled|waits for another task|is ready)"
    # ... or a count per reason
    r"|\d+ (?:running|ready|waiting for another task|held back while|retrying|snoozed|scheduled)"
    r"|nothing now)"
)

# One pytest-xdist worker runs the whole module (make test-py: --dist loadgroup), so that the
# demo (a module fixture) runs once.
pytestmark = pytest.mark.xdist_group("crawler_demo")


@dataclass
class DemoRun:
    output: str
    returncode: int
    db_url: str
    workdir: Path
    seconds: float  # measured from just before --started-at to the demo's exit

    def lines(self) -> list[str]:
        return self.output.splitlines()

    def number(self, pattern: str) -> float:
        """The number the first group of `pattern` captures in the output (it must occur)."""
        found = re.search(pattern, self.output, re.MULTILINE)
        assert found, f"{pattern!r} is not in the demo's output:\n{self.output}"
        return float(found.group(1))

    def section(self, heading: str) -> list[str]:
        """The lines after `== heading` up to the next heading."""
        lines = self.lines()
        start = next(i for i, line in enumerate(lines) if line.startswith(f"== {heading}"))
        rest = lines[start + 1 :]
        end = next((i for i, line in enumerate(rest) if line.startswith("== ")), len(rest))
        return rest[:end]


def clean_environment() -> dict[str, str]:
    """The environment without the settings the demo and its closing commands must set."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TASKPOOL_", "WORKER_", "PYWORKER_")) and k != "DATABASE_URL"
    }


@pytest.fixture(scope="module")
def demo(template_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoRun]:
    """The demo, run once in a fresh copy of the deployed template."""
    name = COPY_PREFIX + "demo_" + secrets.token_hex(4)
    with admin_connect() as admin:
        admin.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template_database)
            )
        )
    url = url_for_database(database_url(), name)
    workdir = tmp_path_factory.mktemp("demo")
    started_at = time.time()
    try:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "taskpool_crawler.demo",
                "--database-url",
                url,
                "--workdir",
                str(workdir),
                "--stores",
                "20",
                "--started-at",
                repr(started_at),
            ],
            env=clean_environment(),
            capture_output=True,
            text=True,
            timeout=150,
        )
        yield DemoRun(
            result.stdout + result.stderr, result.returncode, url, workdir, time.time() - started_at
        )
    finally:
        with admin_connect() as admin:
            drop_database(admin, name)


def test_the_demo_crawls_summarizes_and_stops_everything(demo: DemoRun) -> None:
    assert demo.returncode == 0, demo.output
    for text in (
        "== discovery -> first crawls -> refreshes",
        "== a resync round, 4 hours of drift later",
        "** dutchie is down",
        "** dutchie is back; its circuit opened",
        "== analytics",
        "tasks by role and status:",
        "capacity (v_worker_capacity) at the busiest progress line",
        "circuit-breaker events (platform_events):",
        "stopped the simulator and the object-store",
    ):
        assert text in demo.output, f"{text!r} is not in the demo's output:\n{demo.output}"

    with psycopg.connect(demo.db_url, autocommit=True) as conn:
        active = conn.execute(
            "SELECT count(*) FROM worker_tasks WHERE status IN ('pending', 'claimed', 'running')"
        )
        assert active.fetchone()[0] == 0
        # Opened by the outage, closed at the end. A failure on the first try after a cooldown
        # reopens the circuit without a close in between (opened, opened, closed), but a close
        # always follows an opening.
        events = [
            e
            for (e,) in conn.execute(
                "SELECT event FROM platform_events WHERE platform = 'dutchie' ORDER BY at, id"
            )
        ]
        # Every worker deregistered on its way out.
        registered = conn.execute("SELECT count(*) FROM task_workers").fetchone()[0]
    assert events and events[0] == "opened" and events[-1] == "closed", events
    assert all(
        earlier == "opened" for earlier, later in zip(events, events[1:]) if later == "closed"
    ), events
    assert registered == 0
    assert sorted(p.name for p in (demo.workdir / "logs").iterdir()) == sorted(
        f"{name}.log" for name in (*(command.name for command in WORKER_COMMANDS), "simulator", "object-store")
    )


def test_the_closing_commands_work_pasted_as_they_are(demo: DemoRun, tmp_path: Path) -> None:
    """Pasted into a shell elsewhere, with nothing set: they find the demo's database, its
    payload files (`payloads show --products` reads them) and ids of this run."""
    closing = demo.section("what the run left")
    start = closing.index(
        "Its database, payload files and logs stay until the next run. To look, paste into a shell:"
    )
    commands = []
    for line in closing[start + 1 :]:
        if not line.startswith("  "):
            break
        commands.append(line.strip())
    store = demo.number(r"^payload diff of store (\d+) ")
    assert commands[:2] == [
        f"export DATABASE_URL={shlex.quote(demo.db_url)}",
        f"export TASKPOOL_STORAGE={shlex.quote(str(demo.workdir / 'storage'))}",
    ]
    pyworker = str(Path(sys.executable).parent / "pyworker")
    assert [c.split(" ")[:3] for c in commands[2:]] == [
        [pyworker, "counts"],
        [pyworker, "payloads", "list"],
        [pyworker, "payloads", "show"],
        [pyworker, "payloads", "diff"],
        [pyworker, "show", commands[-1].split(" ")[2]],
    ], commands
    assert commands[3].endswith(f" --store {store:.0f}") and commands[5].endswith(f" --store {store:.0f}")

    outputs = []
    for command in commands[2:]:
        # Each in a new shell after the exports, away from the repository, nothing set before.
        shell = subprocess.run(
            ["bash", "-c", "\n".join([*commands[:2], command])],
            cwd=tmp_path,
            env=clean_environment(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert shell.returncode == 0, f"{command} failed:\n{shell.stdout}{shell.stderr}"
        outputs.append(shell.stdout)
    _, listed, shown, diffed, task = outputs
    assert re.search(rf"^\d+ +{store:.0f} ", listed, re.MULTILINE), listed
    assert re.search(r"^products \(\d+\), from ", shown, re.MULTILINE), shown
    assert " price changes" in diffed, diffed
    assert re.search(r"^role: +product_resync$", task, re.MULTILINE), task


def test_the_payloads_went_to_the_bucket_and_its_figures_are_the_rows(demo: DemoRun) -> None:
    """The workers stored every payload in moto's bucket: the summary's figures, listed from the
    bucket, are those the rows record; the copy kept for the closing commands holds them all."""
    objects = demo.number(r"^object store: (\d+) objects?, \d+ bytes in s3://taskpool-demo ")
    stored_bytes = demo.number(r"^object store: \d+ objects?, (\d+) bytes in s3://")
    with psycopg.connect(demo.db_url, autocommit=True) as conn:
        rows, recorded_bytes = conn.execute(
            "SELECT count(*), coalesce(sum(size_bytes), 0) FROM raw_crawl_payloads"
        ).fetchone()
        images = conn.execute("SELECT count(*) FROM product_images").fetchone()[0]
    assert (objects, stored_bytes) == (rows, recorded_bytes) and rows > 0
    assert f"the payload rows record {rows} objects, {recorded_bytes} bytes" in demo.output
    # The copy holds the images too, so that `payloads show` and a look at an image work after the run.
    assert demo.number(r"^copied the bucket's (\d+) objects? \(payloads and images\) to ") == rows + images
    kept = [p for p in (demo.workdir / "storage" / "payloads").rglob("*") if p.is_file()]
    assert len(kept) == rows
    kept_images = [p for p in (demo.workdir / "storage" / "images").rglob("*") if p.is_file()]
    assert len(kept_images) == images > 0


def test_the_process_counts_agree(demo: DemoRun) -> None:
    """Started, registered, counted in the throughput and stopped: the same worker processes,
    from the same commands."""
    assert demo.number(r"^workers: (\d+) worker processes, registered") == WORKER_PROCESSES
    assert demo.number(r"from (\d+) commands `pyworker --role R=N") == len(WORKER_COMMANDS)
    assert demo.number(r"per second with (\d+) worker processes$") == WORKER_PROCESSES
    assert demo.number(r"^stopped the (\d+) `pyworker --role R=N") == len(WORKER_COMMANDS)
    assert demo.number(r"of their (\d+) worker processes") == WORKER_PROCESSES
    assert demo.number(r"worker processes, (\d+) deregistered$") == WORKER_PROCESSES
    assert demo.number(r"setting up: the simulator and (\d+) worker processes") == WORKER_PROCESSES


def test_each_role_runs_at_its_kubernetes_manifest_s_concurrency() -> None:
    """The demo's concurrency of each role is the TASKPOOL_CONCURRENCY its manifest gives a pod."""
    resources = build(KUBERNETES_CRAWLER)
    manifests = {}
    for deployment in (r for r in resources if r["kind"] == "Deployment"):
        role = deployment["metadata"]["labels"].get("taskpool.dev/role")
        if role in ROLE_CONCURRENCY:
            (container,) = deployment["spec"]["template"]["spec"]["containers"]
            (value,) = [e["value"] for e in container["env"] if e["name"] == "TASKPOOL_CONCURRENCY"]
            manifests[role] = int(value)
    assert manifests == ROLE_CONCURRENCY
    # Every role the demo crawls with is served, by one command only.
    served = [role for command in WORKER_COMMANDS for role in command.roles]
    assert sorted(served) == sorted(CRAWLER_ROLES)


def test_every_worker_process_ran_at_the_concurrency_the_summary_says(demo: DemoRun) -> None:
    """Several roles in one process, each at its manifest's concurrency: what the summary says of
    each command is what its processes logged as they started."""
    summary = "\n".join(demo.section("summary"))
    assert any(len(command.roles) > 1 for command in WORKER_COMMANDS)
    for command in WORKER_COMMANDS:
        assert command.describe() in summary, summary
        shares = ", ".join(f"{role}={ROLE_CONCURRENCY[role]}" for role in command.roles)
        log = (demo.workdir / "logs" / f"{command.name}.log").read_text()
        # One process runs under the command's id; several, under -1..P.
        ids = [f"demo-{command.name}"] if command.processes == 1 else [
            f"demo-{command.name}-{number}" for number in range(1, command.processes + 1)
        ]
        for worker_id in ids:
            if len(command.roles) == 1:
                started = f"Starting worker {worker_id} for role: {command.roles[0]}"
            else:
                started = f"Starting worker {worker_id} for roles: {shares} (up to {command.concurrency} tasks at once)"
            assert started in log, log[:4000]


def test_the_wall_time_adds_up_and_says_what_it_measures(demo: DemoRun) -> None:
    total = demo.number(r"^== done in (\d+\.\d) s of wall time since scripts/demo began:$")
    laps = {
        label: float(seconds)
        for seconds, label in re.findall(r"^ +(\d+\.\d) s  (.+)$", demo.output, re.MULTILINE)
    }
    assert [label.split(":")[0] for label in laps] == [
        "scripts/demo",
        "setting up",
        "crawling",
        "the summary",
        "stopping",
    ], laps
    # Each figure is rounded to 0.1 s.
    assert abs(sum(laps.values()) - total) <= 0.05 * (len(laps) + 1), laps
    assert total <= demo.seconds + 0.05
    crawling = next(seconds for label, seconds in laps.items() if label.startswith("crawling"))
    assert demo.number(r"tasks completed in (\d+\.\d) s of crawling") == crawling
    rounds = demo.number(r"crawling: discovery (\d+\.\d) s") + demo.number(
        r"resync round (\d+\.\d) s"
    ) + demo.number(r", analytics (\d+\.\d) s$")
    assert rounds <= crawling + 0.15


def test_every_progress_line_says_what_its_tasks_wait_for(demo: DemoRun) -> None:
    """No unexplained wait: a line with tasks to go is followed by what they wait for, the
    outage's open circuit included."""
    lines = demo.lines()
    progress = [i for i, line in enumerate(lines) if PROGRESS_LINE.match(line)]
    assert progress
    for i in progress:
        if "to go]" in lines[i]:
            assert WAITING_LINE.match(lines[i + 1]), "\n".join(lines[i : i + 2])
        else:
            assert not lines[i + 1].lstrip().startswith("waiting:"), "\n".join(lines[i : i + 2])
    waits = [line for line in lines if line.lstrip().startswith("waiting:")]
    assert all(WAITING_LINE.match(line) for line in waits), waits
    assert any("dutchie's circuit is open" in line for line in waits), waits


def test_the_capacity_table_shows_work_in_flight(demo: DemoRun) -> None:
    in_flight = demo.number(r"at the busiest progress line \(.+: (\d+) tasks? pending or running\)")
    assert in_flight > 0
    lines = demo.lines()
    start = next(i for i, line in enumerate(lines) if "at the busiest progress line" in line)
    header = lines[start + 1].split()
    rows = [line.split() for line in lines[start + 2 : start + 2 + len(CRAWLER_ROLES)]]
    pending, running = header.index("pending"), header.index("running")
    assert sorted(row[0] for row in rows) == sorted(CRAWLER_ROLES)
    assert sum(int(row[pending]) + int(row[running]) for row in rows) == in_flight


def test_the_payload_diff_is_a_summary_with_the_way_to_all_of_it(demo: DemoRun) -> None:
    summary = demo.section("summary")
    start = next(i for i, line in enumerate(summary) if line.startswith("payload diff of store"))
    end = summary.index("circuit-breaker events (platform_events):")
    diff = [line for line in summary[start:end] if line]
    store = demo.number(r"^payload diff of store (\d+) ")
    assert len(diff) == 3, diff
    assert re.match(r"payload \d+ \(.+\) -> payload \d+ \(.+\): \d+ added, \d+ removed", diff[1])
    assert f"`pyworker payloads diff --store {store:.0f}`" in diff[2]
    assert demo.number(r"pyworker payloads diff --store (\d+)$") == store


def test_the_summary_counts_the_products_without_an_id(demo: DemoRun) -> None:
    products = demo.number(r"^products: (\d+) in store_products")
    hashed = demo.number(r"^products: .* (\d+) of them without a platform id")
    assert 0 < hashed < products
    with psycopg.connect(demo.db_url) as conn:
        assert conn.execute(
            "SELECT count(*) FROM store_products WHERE platform_product_id LIKE 'hash:%'"
        ).fetchone()[0] == hashed


def test_the_summary_counts_the_images_stored_once_per_content(demo: DemoRun) -> None:
    downloaded = demo.number(r"^images: (\d+) downloaded")
    unique = demo.number(r"^images: .* (\d+) unique images stored")
    stored_bytes = demo.number(r"^images: .* unique images stored \((\d+) bytes")
    urls = demo.number(r"^images: .* for (\d+) image URLs")
    assert 0 < unique < downloaded <= urls, "the platforms' URLs share contents"
    with psycopg.connect(demo.db_url) as conn:
        assert conn.execute(
            "SELECT count(*), sum(size_bytes) FROM product_images"
        ).fetchone() == (unique, stored_bytes)
        keys = [key for (key,) in conn.execute("SELECT storage_key FROM product_images")]
    assert all((demo.workdir / "storage" / key).is_file() for key in keys)
