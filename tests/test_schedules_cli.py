"""`pyworker schedules`, `capacity` and `health`, with click's CliRunner against a real deployed
database (a fresh copy per test). `resync generate` is the crawler's: crawler/tests/test_crawler_resync.py.

Exit codes as everywhere in the CLI: 0 done, 1 refused, 2 bad usage or input (a value out of
range, an unknown schedule, role or time zone, a malformed day).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner, Result

from core_fixtures import real_clock
from worker_support import Run, make_stores, run_json

from pyworker.admin import cli


DEFAULT_SCHEDULES = [
    "analytics_refresh", "daily_resync_plan", "payload_storage_sweep", "resync_every_4_hours", "store_discovery"
]


def schedule_row(conn: psycopg.Connection, name: str) -> dict[str, Any]:
    cursor = conn.execute("SELECT * FROM task_schedules WHERE name = %s", (name,))
    names = [column.name for column in cursor.description]
    return dict(zip(names, cursor.fetchone(), strict=True))


def tasks_by_role(conn: psycopg.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT role, count(*) FROM worker_tasks GROUP BY role").fetchall())


def table(result: Result) -> list[list[str]]:
    """The output's lines, split on runs of spaces."""
    assert result.exit_code == 0, result.output
    return [line.split() for line in result.stdout.splitlines()]


def fields(result: Result) -> dict[str, str]:
    """The `key: value` lines of echo_fields output."""
    assert result.exit_code == 0, result.output
    pairs = (line.split(":", 1) for line in result.stdout.splitlines() if ":" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def test_the_new_commands_are_listed_with_help() -> None:
    result = CliRunner().invoke(cli.main, ["--help"])
    assert result.exit_code == 0
    for command in ("capacity", "health", "schedules", "cron", "scheduler"):
        assert command in result.stdout
    for group in ("schedules", "cron"):
        for name, command in cli.main.commands[group].commands.items():
            assert command.help, f"{group} {name} has no help text"


# schedules list


def test_schedules_list_shows_the_default_schedules(run: Run) -> None:
    header, *rows = table(run("schedules", "list"))
    assert header == ["name", "role", "kind", "enabled", "every", "time_zone", "priority", "next_run_at",
                      "last_run_at", "last_tasks", "last_error"]
    by_name = {row[0]: row for row in rows}
    assert sorted(by_name) == DEFAULT_SCHEDULES
    assert by_name["store_discovery"][1:8] == ["store_discovery", "single", "true", "1", "day", "UTC", "5"]
    assert by_name["daily_resync_plan"][1:4] == ["product_resync", "day_plan", "false"]
    assert by_name["resync_every_4_hours"][1:8] == ["product_resync", "per_store", "true", "4", "h", "UTC", "0"]
    assert by_name["analytics_refresh"][4:6] == ["6", "h"]
    assert by_name["payload_storage_sweep"][1:6] == ["payload_storage_sweep", "single", "true", "6", "h"]


def test_schedules_list_json(run: Run, conn: psycopg.Connection) -> None:
    schedules = run_json(run, "schedules", "list")
    assert [s["name"] for s in schedules] == DEFAULT_SCHEDULES
    store_discovery = schedules[4]
    assert store_discovery["enabled"] is True
    assert (store_discovery["interval_hours"], store_discovery["priority"]) == (24, 5)
    assert store_discovery["last_run_at"] is None and store_discovery["last_task_count"] is None
    assert datetime.fromisoformat(store_discovery["next_run_at"]) == schedule_row(
        conn, "store_discovery"
    )["next_run_at"]


# schedules update


def test_schedules_update_disables_and_enables(run: Run, conn: psycopg.Connection) -> None:
    result = run("schedules", "update", "store_discovery", "--disable")
    assert fields(result)["enabled"] == "false"
    assert schedule_row(conn, "store_discovery")["enabled"] is False
    assert run_json(run, "schedules", "update", "store_discovery", "--enable")["enabled"] is True
    assert schedule_row(conn, "store_discovery")["enabled"] is True


def test_schedules_update_interval_and_priority(run: Run, conn: psycopg.Connection) -> None:
    before = schedule_row(conn, "analytics_refresh")
    updated = run_json(
        run, "schedules", "update", "analytics_refresh", "--interval-hours", "12", "--priority", "-7"
    )
    assert (updated["name"], updated["interval_hours"], updated["priority"]) == (
        "analytics_refresh", 12, -7
    )
    assert updated["enabled"] is True
    row = schedule_row(conn, "analytics_refresh")
    assert (row["interval_hours"], row["priority"], row["enabled"]) == (12, -7, True)
    # It never ran: the new interval counts from now.
    assert row["next_run_at"] > before["next_run_at"]
    assert run_json(run, "schedules", "update", "analytics_refresh", "--priority", "3")[
        "interval_hours"
    ] == 12


def test_schedules_update_an_unknown_schedule_exits_2_naming_the_schedules(run: Run) -> None:
    result = run("schedules", "update", "nope", "--disable")
    assert result.exit_code == 2
    assert "schedule 'nope' does not exist" in result.stderr
    assert "Schedules: analytics_refresh, daily_resync_plan, payload_storage_sweep, resync_every_4_hours, store_discovery." in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--interval-hours", "0"], "interval_hours 0 is out of range"),
        (["--interval-hours", "8761"], "interval_hours 8761 is out of range"),
        (["--priority", "101"], "priority 101 is out of range"),
        (["--interval-hours", "six"], "is not a valid integer"),
        ([], "give at least one field to change"),
        (["--every", "1 month"], "every 1 mon is out of range"),
        (["--cron", "61 * * * *"], "cron minute field '61' is out of range"),
        (["--cron", "* * * * *", "--every", "1 hour"], "give every, interval_hours or cron, not several"),
        (["--time-zone", "Mars/Olympus"], 'time zone "Mars/Olympus" not recognized'),
        (["--kind", "day_plan"], "a day_plan schedule needs a planner"),
        (["--state", "arizona"], "state code 'arizona' is not two capital letters"),
        (["--payload", "[1]"], "a schedule's payload must be a JSON object"),
        (["--enable", "--disable"], "give --enable or --disable, not both"),
        (["--disable", "--priority", "3", "--enable"], "give --enable or --disable, not both"),
    ],
)
def test_schedules_update_bad_input_exits_2(
    run: Run, conn: psycopg.Connection, args: list[str], message: str
) -> None:
    before = schedule_row(conn, "analytics_refresh")
    result = run("schedules", "update", "analytics_refresh", *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert schedule_row(conn, "analytics_refresh") == before


# schedules create and delete


def test_schedules_create_every_fifteen_minutes_due_at_once(run: Run, conn: psycopg.Connection) -> None:
    created = run_json(
        run, "schedules", "create", "quarter_hourly", "--role", "analytics_refresh",
        "--every", "15 minutes", "--payload", '{"report": "q"}', "--priority", "4",
    )
    assert (created["every"], created["cron"], created["interval_hours"]) == (900, None, None)
    row = schedule_row(conn, "quarter_hourly")
    assert (row["role"], row["payload"], row["priority"], row["enabled"]) == (
        "analytics_refresh", {"report": "q"}, 4, True
    )
    assert row["next_run_at"] <= conn.execute("SELECT now()").fetchone()[0]  # due at once
    header, *rows = table(run("schedules", "list"))
    assert ["quarter_hourly", "analytics_refresh", "single", "true", "15", "min", "UTC", "4"] in [
        row[:8] for row in rows
    ]


def test_schedules_create_cron_in_a_time_zone_then_update_and_delete(run: Run, conn: psycopg.Connection) -> None:
    created = run_json(
        run, "schedules", "create", "weekday_digest", "--role", "analytics_refresh",
        "--cron", "0 7 * * mon-fri", "--time-zone", "Europe/Berlin", "--disable",
    )
    (expected,) = conn.execute(
        "SELECT cron_next_run('0 7 * * mon-fri', now(), 'Europe/Berlin')"
    ).fetchone()
    assert datetime.fromisoformat(created["next_run_at"]) == expected
    assert (created["cron"], created["every"], created["enabled"]) == ("0 7 * * mon-fri", None, False)

    updated = run_json(run, "schedules", "update", "weekday_digest", "--every", "2h", "--enable")
    assert (updated["every"], updated["cron"], updated["interval_hours"], updated["enabled"]) == (
        7200, None, 2, True
    )
    assert run("schedules", "delete", "weekday_digest").stdout.strip() == "schedule weekday_digest deleted"
    assert conn.execute("SELECT count(*) FROM task_schedules WHERE name = 'weekday_digest'").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("args", "exit_code", "message"),
    [
        (["fresh", "--role", "analytics_refresh"], 2, "a schedule runs on one cadence"),
        (["fresh", "--role", "nope", "--every", "1h"], 2, "role 'nope' does not exist"),
        (["fresh", "--role", "analytics_refresh", "--cron", "0 0 31 2 *"], 2, "never fires"),
        (["fresh", "--role", "analytics_refresh", "--every", "1h", "--kind", "day_plan", "--planner", "nope"], 2,
         "planner nope(task_schedules, date) returning integer does not exist"),
        (["store_discovery", "--role", "store_discovery", "--every", "1h"], 1, "schedule 'store_discovery' already exists"),
        (["fresh", "--every", "1h"], 2, "Missing option '--role'"),
    ],
)
def test_schedules_create_bad_input_writes_nothing(
    run: Run, conn: psycopg.Connection, args: list[str], exit_code: int, message: str
) -> None:
    before = conn.execute("SELECT * FROM task_schedules ORDER BY id").fetchall()
    result = run("schedules", "create", *args)
    assert result.exit_code == exit_code, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert conn.execute("SELECT * FROM task_schedules ORDER BY id").fetchall() == before


def test_schedules_delete_an_unknown_schedule_exits_2(run: Run) -> None:
    result = run("schedules", "delete", "nope")
    assert result.exit_code == 2
    assert "schedule 'nope' does not exist" in result.stderr


# schedules trigger


def test_schedules_trigger_runs_a_schedule_now(run: Run, conn: psycopg.Connection) -> None:
    before = schedule_row(conn, "store_discovery")
    result = run("schedules", "trigger", "store_discovery")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "schedule store_discovery ran: 1 task created"
    assert tasks_by_role(conn) == {"store_discovery": 1}
    after = schedule_row(conn, "store_discovery")
    assert after["last_task_count"] == 1 and after["last_run_at"] is not None
    assert after["next_run_at"] == before["next_run_at"]


def test_schedules_trigger_json_runs_a_disabled_schedule(run: Run, conn: psycopg.Connection) -> None:
    make_stores(conn, 3)
    make_stores(conn, 1, active=False)
    conn.execute("SELECT update_schedule('daily_resync_plan', enabled := false)")
    schedule = run_json(run, "schedules", "trigger", "daily_resync_plan")
    assert (schedule["name"], schedule["enabled"], schedule["last_task_count"]) == (
        "daily_resync_plan", False, 3
    )
    assert tasks_by_role(conn) == {"product_resync": 3}
    # Planned already: a second run makes nothing.
    assert run("schedules", "trigger", "daily_resync_plan").stdout.strip() == (
        "schedule daily_resync_plan ran: 0 tasks created"
    )


def test_schedules_trigger_an_unknown_schedule_exits_2(run: Run, conn: psycopg.Connection) -> None:
    result = run("schedules", "trigger", "nope")
    assert result.exit_code == 2
    assert "schedule 'nope' does not exist" in result.stderr
    assert "Schedules: analytics_refresh, daily_resync_plan, payload_storage_sweep, resync_every_4_hours, store_discovery." in result.stderr
    assert tasks_by_role(conn) == {}


# capacity


def busy_pool(conn: psycopg.Connection, in_the_past: Callable[[str], None]) -> None:
    """product_resync: two tasks done in the last hour (10 minutes each), one running, two
    pending; one active worker."""
    stores = make_stores(conn, 5)
    conn.execute("SELECT register_worker('w1', 'product_resync', 'host-a', 1)")
    in_the_past("30 minutes")
    for worker, store in (("w1", stores[0]), ("w2", stores[1])):
        conn.execute("SELECT enqueue_task('product_resync', dispensary_id := %s)", (store,))
        (task_id,) = conn.execute("SELECT id FROM claim_task('product_resync', %s)", (worker,)).fetchone()
        in_the_past("20 minutes")
        conn.execute(
            "SELECT complete_task(id, %s, 1, claim_token, '{}') FROM worker_tasks WHERE id = %s", (worker, task_id)
        )
        in_the_past("30 minutes")
    real_clock(conn)
    for store in stores[2:]:
        conn.execute("SELECT enqueue_task('product_resync', dispensary_id := %s)", (store,))
    conn.execute("SELECT claim_task('product_resync', 'w1')")


def test_capacity_lists_every_role(
    run: Run, conn: psycopg.Connection, in_the_past: Callable[[str], None]
) -> None:
    busy_pool(conn, in_the_past)
    header, *rows = table(run("capacity"))
    assert header[:8] == ["role", "paused", "pending", "ready", "running", "processes", "slots", "per_slot_hour"]
    by_role = {row[0]: row for row in rows}
    roles = [row[0] for row in conn.execute("SELECT role FROM task_roles ORDER BY role")]
    assert list(by_role) == roles
    assert by_role["product_resync"][1:8] == ["false", "2", "2", "1", "1", "1", "6.0"]


def test_capacity_json_gives_the_view_rows(
    run: Run, conn: psycopg.Connection, in_the_past: Callable[[str], None]
) -> None:
    busy_pool(conn, in_the_past)
    rows = {row["role"]: row for row in run_json(run, "capacity")}
    resync = rows["product_resync"]
    assert (resync["pending_tasks"], resync["ready_tasks"], resync["running_tasks"]) == (2, 2, 1)
    assert resync["active_workers"] == 1
    # numeric columns are JSON numbers: 3600 s / 600 s a task
    assert resync["tasks_per_worker_hour"] == 6.0
    assert resync["workers_needed_for_1_hour"] == 1
    assert resync["completed_last_hour"] == 2
    assert rows["store_discovery"]["tasks_per_worker_hour"] is None


def test_capacity_counts_slots_and_processes_of_workers_of_concurrency_20(
    run: Run, conn: psycopg.Connection, in_the_past: Callable[[str], None]
) -> None:
    """Two pods of 20 slots: the drain estimate divides the per-slot rate by 40 slots, not by 2
    processes, and the processes needed are the slots needed over 20."""
    busy_pool(conn, in_the_past)
    conn.execute("SELECT * FROM register_worker('w1', ARRAY['product_resync'], 'pod-1', 1, 20)")
    conn.execute("SELECT * FROM register_worker('w2', ARRAY['product_resync'], 'pod-2', 2, 20)")
    conn.execute(
        "SELECT enqueue_task('product_resync', dispensary_id := s.id) FROM unnest(%s::integer[]) AS s(id)",
        (make_stores(conn, 228),),
    )
    (row,) = run_json(run, "capacity", "product_resync")
    assert (row["active_processes"], row["active_slots"], row["tasks_per_slot_hour"]) == (2, 40, 6.0)
    # 230 pending at 6.0 a slot-hour: 38.3 slot-hours, under an hour for 40 slots (not 19 hours
    # for 2)
    assert row["estimated_hours_to_drain"] == 0.96
    assert [row[f"slots_needed_for_{n}"] for n in ("1_hour", "4_hours", "8_hours")] == [39, 10, 5]
    assert [row[f"processes_needed_for_{n}"] for n in ("1_hour", "4_hours", "8_hours")] == [2, 1, 1]
    assert row["workers_needed_for_1_hour"] == row["processes_needed_for_1_hour"]
    header, *rows = table(run("capacity"))
    (shown,) = [dict(zip(header, line)) for line in rows if line[0] == "product_resync"]
    assert (shown["processes"], shown["slots"], shown["hours_to_drain"], shown["slots_1h"], shown["processes_1h"]) == (
        "2", "40", "0.96", "39", "2"
    )


def test_capacity_of_one_role_json_has_the_shape_of_every_role(
    run: Run, conn: psycopg.Connection, in_the_past: Callable[[str], None]
) -> None:
    busy_pool(conn, in_the_past)
    every_role = run_json(run, "capacity")
    one_role = run_json(run, "capacity", "product_resync")
    assert isinstance(one_role, list) and len(one_role) == 1
    (row,) = one_role
    assert list(row) == list(every_role[0])
    (same,) = [other for other in every_role if other["role"] == "product_resync"]
    # The oldest ready task ages between the two calls; the rest stands still.
    assert {**row, "oldest_ready_age": None} == {**same, "oldest_ready_age": None}
    assert (row["pending_tasks"], row["workers_needed_for_1_hour"]) == (2, 1)


def test_capacity_of_one_role_as_fields(run: Run, conn: psycopg.Connection) -> None:
    conn.execute("SELECT enqueue_task('store_discovery')")
    shown = fields(run("capacity", "store_discovery"))
    assert shown["role"] == "store_discovery"
    assert (shown["pending_tasks"], shown["ready_tasks"], shown["active_workers"]) == ("1", "1", "0")
    assert shown["tasks_per_worker_hour"] == ""
    assert shown["estimated_hours_to_drain"] == ""


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_capacity_of_an_unknown_role_exits_2(run: Run, json_flag: list[str]) -> None:
    result = run("capacity", "nope", *json_flag)
    assert result.exit_code == 2
    assert "unknown role 'nope'" in result.stderr
    assert "product_resync" in result.stderr
    assert result.stdout == ""


# health


def test_health_of_a_quiet_pool(run: Run, conn: psycopg.Connection) -> None:
    conn.execute("SELECT update_schedule(name, enabled => false) FROM task_schedules")
    result = run("health")
    assert result.exit_code == 0, result.output
    checks, *sections = result.stdout.split("\n\n")
    assert checks.splitlines()[0] == "health: ok, all 8 checks"
    assert sections == [
        "tasks by role and status:\nno tasks",
        "active workers (seen in the last 2 minutes):\nnone",
        "stuck tasks (silent past their role's stale threshold):\nnone\n",
    ]
    report = run_json(run, "health")
    assert report["status"] == "ok"
    assert report["task_counts"] == report["active_workers"] == report["stuck_tasks"] == []


def test_health_shows_counts_workers_and_stuck_tasks(
    run: Run, conn: psycopg.Connection, in_the_past: Callable[[str], None]
) -> None:
    in_the_past("2 hours")
    stuck = conn.execute("SELECT id FROM enqueue_task('store_discovery')").fetchone()[0]
    conn.execute("SELECT claim_task('store_discovery', 'gone')")
    conn.execute("SELECT register_worker('gone', 'store_discovery', 'host-old', 1)")
    real_clock(conn)
    conn.execute("SELECT enqueue_task('analytics_refresh')")
    conn.execute("SELECT enqueue_task('analytics_refresh')")
    conn.execute("SELECT register_worker('w1', 'analytics_refresh', 'host-a', 42)")
    conn.execute("SELECT claim_task('analytics_refresh', 'w1')")

    result = run("health", "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["checks"]["stuck_tasks"]["status"] == "attention"
    assert report["task_counts"] == [
        {"role": "analytics_refresh", "status": "claimed", "tasks": 1},
        {"role": "analytics_refresh", "status": "pending", "tasks": 1},
        {"role": "store_discovery", "status": "claimed", "tasks": 1},
    ]
    (worker,) = report["active_workers"]
    assert (worker["worker_id"], worker["host"], worker["task_status"]) == ("w1", "host-a", "claimed")
    (task,) = report["stuck_tasks"]
    assert (task["id"], task["worker_id"], task["status"]) == (stuck, "gone", "claimed")
    assert task["silent_for"] >= 7200 and task["stale_threshold"] == 1800

    text = run("health")
    assert text.exit_code == 1, text.output
    _checks, counts, workers, stuck_tasks = text.stdout.split("\n\n")
    assert counts.splitlines()[1:] == [
        "role               status   count",
        "analytics_refresh  claimed      1",
        "analytics_refresh  pending      1",
        "store_discovery    claimed      1",
    ]
    assert workers.splitlines()[2].split()[:4] == ["w1", "analytics_refresh", "host-a", "42"]
    header, line = stuck_tasks.splitlines()[1:]
    assert header.split() == ["id", "role", "store", "status", "worker", "attempt",
                              "last_heartbeat_at", "silent_for", "stale_after"]
    assert line.split()[:5] == [str(stuck), "store_discovery", "claimed", "gone", "1"]
    assert line.split()[-1] == "0:30:00"
