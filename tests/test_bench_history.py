"""The history bench (bench/history, `make bench-history`) in its quick form, smaller still: its
report must have its shape and hold together. No timing is asserted: the bench measures speed,
the test only that what it reports is coherent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg

REPO_ROOT = Path(__file__).resolve().parent.parent


def test_the_quick_history_bench_reports_costs_reads_churn_and_a_dropped_day(db_url: str, tmp_path: Path) -> None:
    command = [
        sys.executable, "-m", "bench.history", "--quick", "--in-database", db_url, "--tasks", "20000",
        "--churn-seconds", "6", "--churn-rate", "50", "--tick-seconds", "2",
        "--results-dir", str(tmp_path / "results"), "--json",
    ]
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout)

    assert set(report) == {"meta", "load", "cycle", "queries", "churn", "drop_a_day"}
    assert report["load"]["tasks"] == 20000 and report["load"]["days"] == 3
    for state in ("empty_history", "loaded_history"):
        assert set(report["cycle"][state]) == {"claim_us_per_task", "complete_us_per_task"}
        assert all(value > 0 for value in report["cycle"][state].values())
        assert set(report["queries"][state]) == {"taskpool_metrics_ms", "v_task_counts_ms", "dashboard_overview_ms"}
        assert all(value > 0 for value in report["queries"][state].values())
    churn = report["churn"]
    assert churn["completed"] >= 50 and churn["ticks"] >= 1 and churn["samples"] >= 1
    assert churn["hot_dead_tuples"]["max"] >= churn["hot_dead_tuples"]["end"] >= 0
    assert churn["hot_size_bytes"]["max"] >= churn["hot_size_bytes"]["start"] > 0

    # The oldest of the three loaded days went whole: a third of the load, as the counts had it.
    drop = report["drop_a_day"]
    assert abs(drop["tasks"] - 20000 / 3) <= 2 and drop["seconds"] >= 0
    with psycopg.connect(db_url) as conn:
        left = conn.execute("SELECT count(*) FROM worker_task_history WHERE role = 'bench_history'").fetchone()[0]
        counted = conn.execute("SELECT sum(tasks) FROM task_history_counts WHERE role = 'bench_history'").fetchone()[0]
    assert left == counted == 20000 - drop["tasks"] + churn["moved_to_history"]

    written = json.loads((tmp_path / "results" / "bench-history-latest.json").read_text())
    assert written == report
    assert (tmp_path / "results" / "bench-history-latest.md").read_text().startswith("# make bench-history")
