"""What a worker refuses at start-up before it takes any task: a schema it was not written for,
a version it cannot read, a heartbeat too slow for its role's stale threshold. Real `python -m
pyworker` processes against a real database.
"""

from __future__ import annotations

import psycopg
import pytest
from worker_support import Workers, fetch_one, report_schema_version


def test_a_schema_of_a_newer_major_version_is_refused_naming_it(
    pool: psycopg.Connection, workers: Workers
) -> None:
    report_schema_version(pool, "1.0.0")
    code, stderr = workers.run_to_exit("test_work", "major-a")
    assert code == 1, stderr
    assert "version 1.0.0, a newer major version" in stderr
    assert "upgrade pyworker" in stderr
    assert fetch_one(pool, "SELECT count(*) FROM task_workers")[0] == 0


@pytest.mark.parametrize("version", ["0.3.x", "0.3", "", "v0.3.0"])
def test_a_malformed_schema_version_is_refused_naming_the_text(
    pool: psycopg.Connection, workers: Workers, version: str
) -> None:
    report_schema_version(pool, version)
    code, stderr = workers.run_to_exit("test_work", "malformed-a")
    assert code == 1, stderr
    assert f"reports version {version!r}, which is not MAJOR.MINOR.PATCH" in stderr
    assert "unexpected" not in stderr


def test_a_schema_of_a_newer_minor_version_is_accepted(
    pool: psycopg.Connection, workers: Workers
) -> None:
    report_schema_version(pool, "0.99.0")
    worker = workers.start("test_work", "minor-a")
    assert worker.process.poll() is None


def test_a_heartbeat_no_faster_than_the_stale_threshold_is_refused_naming_both(
    pool: psycopg.Connection, workers: Workers
) -> None:
    # test_work's stale_threshold is 2 s.
    code, stderr = workers.run_to_exit("test_work", "slow-beat-a", heartbeat_ms=2000)
    assert code == 2, stderr
    assert (
        "heartbeat interval (2 s) must be shorter than the stale_threshold of role 'test_work' (2 s)"
    ) in stderr
    assert fetch_one(pool, "SELECT count(*) FROM task_workers")[0] == 0


def test_a_heartbeat_slower_than_half_the_stale_threshold_is_warned_about(
    pool: psycopg.Connection, workers: Workers
) -> None:
    worker = workers.start("test_work", "slow-beat-b", heartbeat_ms=1500)
    assert (
        "The heartbeat interval (1.5 s) is more than half the stale_threshold of role 'test_work' (2 s)"
        in worker.log()
    )


def test_a_heartbeat_of_exactly_half_the_stale_threshold_is_not_warned_about(
    pool: psycopg.Connection, workers: Workers
) -> None:
    # Seed 002's rule: more than half the threshold is risky; half is the rule's own limit.
    worker = workers.start("test_work", "half-beat", heartbeat_ms=1000)
    assert "more than half the stale_threshold" not in worker.log()
    assert " WARNING " not in worker.log()
