"""Retention from the CLI: `pyworker prune` applies the policies (retention_policies) and prints
what went per policy, `--dry-run` what would go; `pyworker retention list|set` shows and changes
the policies; the tick applies them by itself. (SQL behaviour: sql_tests/retention.sql; the
crawler's payload files: crawler/tests/test_crawler_retention.py.)"""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest
from core_fixtures import real_clock
from worker_support import Run, run_json

from pyworker.admin.scheduler import log_report


def finished_task(conn: psycopg.Connection, status: str) -> int:
    """A store_discovery task that ended `status`, through the worker's own calls."""
    (task_id,) = conn.execute(
        "SELECT id FROM enqueue_task('store_discovery')"
    ).fetchone()
    if status == "cancelled":
        conn.execute("SELECT cancel_task(%s)", (task_id,))
        return task_id
    conn.execute("SELECT claim_task('store_discovery', 'w-ret')")
    if status == "completed":
        conn.execute("SELECT complete_task(id, 'w-ret', 1, claim_token) FROM worker_tasks WHERE id = %s", (task_id,))
    else:
        conn.execute(
            "SELECT fail_task(id, 'w-ret', 1, claim_token, 'HTTP 404', retryable := false) FROM worker_tasks WHERE id = %s",
            (task_id,),
        )
    return task_id


def kept(conn: psycopg.Connection, task_ids: list[int]) -> list[int]:
    """The tasks still there, in worker_tasks or (moved by the tick) in its history."""
    rows = conn.execute(
        "SELECT id FROM worker_tasks_with_history WHERE id = ANY(%s) ORDER BY id", (task_ids,)
    )
    return [row[0] for row in rows]


def pruned_by_policy(shown: dict) -> dict[str, int]:
    return {row["policy"]: row["pruned"] for row in shown["policies"]}


@pytest.fixture
def history(
    conn: psycopg.Connection, in_the_past: Callable[[str], None]
) -> dict[str, list[int]]:
    """Finished 40 days ago: 3 completed, 1 failed, 1 cancelled; 10 days ago: 2 completed, 1
    failed; just now: 1 completed; and one pending task."""
    in_the_past("40 days")
    old = [finished_task(conn, "completed") for _ in range(3)]
    old_failed = [finished_task(conn, "failed"), finished_task(conn, "cancelled")]
    in_the_past("10 days")
    ten_days = [finished_task(conn, "completed") for _ in range(2)]
    ten_days_failed = [finished_task(conn, "failed")]
    real_clock(conn)
    recent = [finished_task(conn, "completed")]
    (pending,) = conn.execute(
        "SELECT id FROM enqueue_task('store_discovery')"
    ).fetchone()
    return {
        "old_completed": old,
        "old_failed": old_failed,
        "ten_days_completed": ten_days,
        "ten_days_failed": ten_days_failed,
        "kept": [*ten_days_failed, *recent, pending],
    }


def all_ids(history: dict[str, list[int]]) -> list[int]:
    return sorted(task_id for ids in history.values() for task_id in ids)


def test_prune_applies_every_policy_and_prints_what_went_per_policy(
    run: Run, conn: psycopg.Connection, history: dict[str, list[int]]
) -> None:
    result = run("prune")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["policy", "pruned", "error"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:-1]}
    assert rows["completed_tasks"] == ["5"]
    assert rows["failed_tasks"] == ["2"]
    assert all(
        pruned == ["0"]
        for name, pruned in rows.items()
        if name not in ("completed_tasks", "failed_tasks")
    )
    assert lines[-1] == "pruned 7 rows"
    # Completed after 7 days, failed and cancelled after 30: the rest stays.
    assert kept(conn, all_ids(history)) == sorted(history["kept"])
    again = pruned_by_policy(run_json(run, "prune"))
    assert set(again.values()) == {0}


def test_prune_dry_run_counts_per_policy_and_deletes_nothing(
    run: Run, conn: psycopg.Connection, history: dict[str, list[int]]
) -> None:
    before = conn.execute("SELECT * FROM worker_tasks ORDER BY id").fetchall()
    result = run("prune", "--dry-run")
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:-1]}
    assert rows["completed_tasks"] == ["completed_tasks", "true", "7", "days", "5"]
    assert rows["failed_tasks"] == ["failed_tasks", "true", "30", "days", "2"]
    assert (
        result.stdout.splitlines()[-1]
        == "would prune 7 rows (dry run: nothing deleted)"
    )
    shown = run_json(run, "prune", "--dry-run")
    assert shown["dry_run"] is True
    counts = {row["policy"]: row["would_prune"] for row in shown["policies"]}
    assert (
        counts["completed_tasks"],
        counts["failed_tasks"],
        counts["silent_workers"],
    ) == (5, 2, 0)
    assert conn.execute("SELECT * FROM worker_tasks ORDER BY id").fetchall() == before


def test_prune_goes_a_committed_round_at_a_time_until_nothing_is_left(
    run: Run, conn: psycopg.Connection, history: dict[str, list[int]]
) -> None:
    assert (
        run("retention", "set", "completed_tasks", "--batch-size", "2").exit_code == 0
    )
    # One round: a batch per policy.
    shown = run_json(run, "prune", "--max-batches", "1")
    assert pruned_by_policy(shown)["completed_tasks"] == 2
    # Then the rest, in rounds that commit in between (a CALL outside a transaction only).
    shown = run_json(run, "prune", "--pause-ratio", "0")
    assert pruned_by_policy(shown)["completed_tasks"] == 3
    assert kept(conn, history["old_completed"] + history["ten_days_completed"]) == []
    (total,) = conn.execute(
        "SELECT pruned_total FROM retention_policies WHERE name = 'completed_tasks'"
    ).fetchone()
    assert total == 5


def test_a_policy_that_fails_is_shown_with_its_error_and_exits_1(
    run: Run, conn: psycopg.Connection, history: dict[str, list[int]]
) -> None:
    conn.execute(
        "INSERT INTO retention_policies (name, pruner, keep, description)"
        " VALUES ('broken', 'no_such_pruner', '1 day', 'a pruner that does not exist')"
    )
    result = run("prune", "--wide")
    assert result.exit_code == 1, result.output
    assert (
        "pruner no_such_pruner(retention_policies, integer, boolean) returning bigint does not exist"
        in (result.stdout)
    )
    assert "1 of" in result.stderr and "policies failed" in result.stderr
    # The others ran regardless.
    assert kept(conn, all_ids(history)) == sorted(history["kept"])


def test_a_policy_another_session_holds_is_skipped_not_waited_for(
    run: Run,
    conn: psycopg.Connection,
    db_url: str,
    history: dict[str, list[int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A wait would end in a lock timeout error, not a hang.
    monkeypatch.setenv("PGOPTIONS", "-c lock_timeout=20s")
    with psycopg.connect(db_url) as holder:
        holder.execute(
            "SELECT * FROM retention_policies WHERE name = 'completed_tasks' FOR UPDATE"
        )
        shown = run_json(run, "prune")
        assert "completed_tasks" not in pruned_by_policy(shown)
        assert pruned_by_policy(shown)["failed_tasks"] == 2
        holder.rollback()
    assert pruned_by_policy(run_json(run, "prune"))["completed_tasks"] == 5


def test_the_tick_applies_the_policies_by_itself(
    run: Run, conn: psycopg.Connection, history: dict[str, list[int]]
) -> None:
    result = run("scheduler", "--once")
    assert result.exit_code == 0, result.output
    (report,) = conn.execute("SELECT tick_schedules()").fetchone()
    assert "retention" not in report, "the first tick took everything there was"
    assert kept(conn, all_ids(history)) == sorted(history["kept"])


def test_the_scheduler_logs_the_retention_of_a_tick(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("INFO", logger="pyworker")
    log_report(
        {
            "recovered": 0,
            "schedules": [],
            "retention": {
                "completed_tasks": {"pruned": 1000, "error": None},
                "broken": {"pruned": 0, "error": "disk on fire"},
            },
        }
    )
    messages = [record.getMessage() for record in caplog.records]
    assert messages == [
        "Retention: pruned 1000 rows (completed_tasks: 1000, broken: 0)",
        "Retention policy broken failed: disk on fire",
    ]
    caplog.clear()
    log_report({"recovered": 0, "schedules": []})
    assert caplog.records == []


def test_retention_list_and_set(run: Run, conn: psycopg.Connection) -> None:
    result = run("retention", "list")
    assert result.exit_code == 0, result.output
    names = [line.split()[0] for line in result.stdout.splitlines()[1:]]
    assert names == sorted(names) and {
        "completed_tasks",
        "failed_tasks",
        "silent_workers",
        "task_attempts",
    } <= set(names)
    changed = run_json(
        run,
        "retention",
        "set",
        "failed_tasks",
        "--keep",
        "14 days",
        "--statuses",
        "failed",
        "--disable",
    )
    assert (changed["keep"], changed["statuses"], changed["enabled"]) == (
        14 * 86400,
        ["failed"],
        False,
    )
    listed = {row["name"]: row for row in run_json(run, "retention", "list")}
    assert listed["failed_tasks"]["keep"] == 14 * 86400
    assert listed["completed_tasks"]["keep"] == 7 * 86400
    assert (
        run_json(run, "retention", "set", "failed_tasks", "--enable")["enabled"] is True
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["retention", "set", "nope", "--keep", "1 day"],
            "unknown retention policy 'nope'",
        ),
        (
            ["retention", "set", "completed_tasks", "--keep", "-1 day"],
            "keep must be a positive interval",
        ),
        (
            ["retention", "set", "completed_tasks", "--keep", "a while"],
            "invalid input syntax for type interval",
        ),
        (
            ["retention", "set", "completed_tasks", "--batch-size", "0"],
            "batch_size must be from 1 to 100000",
        ),
        (
            ["retention", "set", "completed_tasks", "--statuses", "pending"],
            "statuses must be some of",
        ),
        (
            ["retention", "set", "silent_workers", "--statuses", "failed"],
            "it takes no statuses",
        ),
        (["retention", "set", "completed_tasks"], "give at least one of"),
        (
            ["prune", "--batch-size", "10"],
            "--max-tasks and --batch-size go with --older-than",
        ),
        (
            ["prune", "--older-than", "1 day", "--max-batches", "1"],
            "go with the policies",
        ),
        (["prune", "--max-batches", "0"], "--max-batches"),
        (["prune", "--max-seconds", "0"], "--max-seconds"),
        (["prune", "--pause-ratio", "-1"], "--pause-ratio"),
        (
            ["prune", "--older-than", "1 day", "--pause-ratio", "0"],
            "go with the policies",
        ),
    ],
)
def test_bad_input_exits_2_and_changes_nothing(
    run: Run, conn: psycopg.Connection, args: list[str], message: str
) -> None:
    before = conn.execute("SELECT * FROM retention_policies ORDER BY name").fetchall()
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert (
        conn.execute("SELECT * FROM retention_policies ORDER BY name").fetchall()
        == before
    )
