"""The demo `make demo` runs, on a small simulator (20 stores), in a test database: every step
runs, the summary shows what it promises, and nothing is left running."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg


def test_the_demo_crawls_summarizes_and_stops_everything(
    conn: psycopg.Connection, db_url: str, tmp_path: Path
) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TASKPOOL_", "WORKER_", "PYWORKER_"))
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyworker.crawler.demo",
            "--database-url",
            db_url,
            "--workdir",
            str(tmp_path / "demo"),
            "--stores",
            "20",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    for text in (
        "== discovery -> first crawls -> refreshes",
        "== a resync round, 4 hours of drift later",
        "** dutchie is down",
        "** dutchie is back; its circuit opened",
        "== analytics",
        "tasks by role and status:",
        "tasks per second with 14 workers",
        "capacity (v_worker_capacity):",
        "as `pyworker payloads diff --store",
        "circuit-breaker events (platform_events):",
        "stopped 7 processes (workers, simulator)",
    ):
        assert text in output, f"{text!r} is not in the demo's output:\n{output}"

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
    assert events and events[0] == "opened" and events[-1] == "closed", events
    assert all(
        earlier == "opened" for earlier, later in zip(events, events[1:]) if later == "closed"
    ), events
    # Every worker deregistered on its way out.
    assert conn.execute("SELECT count(*) FROM task_workers").fetchone()[0] == 0
    assert sorted(p.name for p in (tmp_path / "demo" / "logs").iterdir()) == sorted(
        f"{name}.log"
        for name in (
            "analytics_refresh",
            "entry_point_discovery",
            "product_discovery",
            "product_refresh",
            "product_resync",
            "simulator",
            "store_discovery",
        )
    )
