"""The pool's metrics for Prometheus (issue 16, item 2): `pyworker.admin.metrics.database_metrics`
renders taskpool_metrics() in the text format, parsed back here with prometheus_client's own
parser; the counters stay where they were across a tick's fold and a prune, each in a
transaction of its own as pg_cron and an operator run them."""

from __future__ import annotations

import re

import psycopg
import pytest
from core_fixtures import REPO_ROOT
from prometheus_client.parser import text_string_to_metric_families
from pyworker.db import Database
from pyworker.admin.metrics import database_metrics

METRICS_DOC = REPO_ROOT / "docs" / "metrics.md"


def scrape(url: str) -> tuple[dict[str, object], dict[tuple[str, tuple[tuple[str, str], ...]], float], str]:
    """The families by name, the samples by name and sorted labels, and the Content-Type."""
    database = Database(url)
    try:
        body, content_type = database_metrics(database)
    finally:
        database.close()
    families = {family.name: family for family in text_string_to_metric_families(body.decode())}
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in families.values()
        for sample in family.samples
    }
    return families, samples, content_type


def complete_one(conn: psycopg.Connection, role: str) -> int:
    task_id = conn.execute("SELECT id FROM enqueue_task(%s)", (role,)).fetchone()[0]
    conn.execute(
        "SELECT complete_task(c.id, c.worker_id, c.attempt, c.claim_token) FROM claim_and_start_tasks(%s, 'w1', 1) c", (role,)
    )
    return task_id


def test_the_pool_metrics_are_prometheus_text_with_a_type_and_help_for_each(pool: psycopg.Connection, db_url: str) -> None:
    pool.execute("SELECT enqueue_task('test_work')")
    families, samples, content_type = scrape(db_url)
    assert content_type.startswith("text/plain; version=")
    for name, family in families.items():
        assert name.startswith("taskpool_"), name
        assert family.type in ("counter", "gauge"), (name, family.type)
        assert family.documentation, name
    counters = {name for name, family in families.items() if family.type == "counter"}
    assert {"taskpool_tasks_completed", "taskpool_attempts_failed", "taskpool_stale_recoveries"} <= counters
    assert samples[("taskpool_tasks", (("role", "test_work"), ("status", "pending")))] == 1
    assert samples[("taskpool_tasks_ready", (("role", "test_work"),))] == 1
    assert samples[("taskpool_tasks_completed_total", (("role", "test_work"),))] == 0


def test_every_metric_is_documented_and_every_documented_metric_exists(pool: psycopg.Connection, db_url: str) -> None:
    # A platform and a tick, so that the metrics of platforms and of the tick have samples.
    pool.execute("SELECT acquire_platform_request('dutchie'), tick_schedules()")
    families, _samples, _content_type = scrape(db_url)
    served = {name + ("_total" if family.type == "counter" else "") for name, family in families.items()}
    documented = set(re.findall(r"^\| `(taskpool_[a-z_]+)`", METRICS_DOC.read_text(), flags=re.M))
    assert served == documented


def test_the_counters_survive_a_fold_and_a_prune(pool: psycopg.Connection, db_url: str) -> None:
    for _ in range(3):
        complete_one(pool, "test_work")
    _families, before, _content_type = scrape(db_url)
    completed = ("taskpool_tasks_completed_total", (("role", "test_work"),))
    in_pool = ("taskpool_tasks", (("role", "test_work"), ("status", "completed")))
    assert before[completed] == 3
    assert before[in_pool] == 3

    # Two of them finished two days ago: the tick folds them into the totals.
    pool.execute(
        "UPDATE worker_tasks SET completed_at = now() - interval '2 days'"
        " WHERE id IN (SELECT id FROM worker_tasks WHERE role = 'test_work' ORDER BY id LIMIT 2)"
    )
    pool.execute("SELECT tick_schedules()")
    assert pool.execute("SELECT total FROM task_metric_totals WHERE role = 'test_work' AND counter = 'completed'").fetchone()[0] == 2
    assert scrape(db_url)[1][completed] == 3

    # The prune deletes the two folded ones and the one the tick has not folded.
    assert pool.execute("SELECT prune_tasks(interval '0')").fetchone()[0] == 3
    _families, after, _content_type = scrape(db_url)
    assert after[completed] == 3
    assert after[in_pool] == 0


def test_a_monitoring_login_scrapes_with_pg_monitor_alone(pool: psycopg.Connection, monitor_login_url: str) -> None:
    pool.execute("SELECT enqueue_task('test_work')")
    with psycopg.connect(monitor_login_url) as monitor:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            monitor.execute("SELECT count(*) FROM worker_tasks")
    _families, samples, _content_type = scrape(monitor_login_url)
    assert samples[("taskpool_tasks", (("role", "test_work"), ("status", "pending")))] == 1


def test_a_role_whose_ready_work_no_worker_takes_is_unserved(pool: psycopg.Connection, db_url: str) -> None:
    """32 ready tasks, the oldest waiting 8 minutes, no worker of their role: taskpool_role_unserved
    is 1 until a worker of the role registers; workers count in processes and in slots."""
    pool.execute("SELECT set_taskpool_clock_offset('-8 minutes')")
    pool.execute("SELECT enqueue_task('test_work')")
    pool.execute("SELECT set_taskpool_clock_offset('0')")
    pool.execute("SELECT enqueue_task('test_work') FROM generate_series(1, 31)")
    _families, samples, _content_type = scrape(db_url)
    assert samples[("taskpool_role_unserved", (("role", "test_work"),))] == 1
    assert samples[("taskpool_tasks_ready", (("role", "test_work"),))] == 32

    pool.execute("SELECT * FROM register_worker('w-20', ARRAY['test_work'], 'pod', 1, 20)")
    _families, samples, _content_type = scrape(db_url)
    assert samples[("taskpool_role_unserved", (("role", "test_work"),))] == 0
    assert samples[("taskpool_workers_active", (("role", "test_work"),))] == 1
    assert samples[("taskpool_slots_active", (("role", "test_work"),))] == 20
