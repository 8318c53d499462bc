"""`pyworker resync generate` (the crawler's command), with click's CliRunner against a real
deployed database (a fresh copy per test): a day of product_resync tasks, one per active store.

Exit codes as everywhere in the CLI: 0 done, 1 refused, 2 bad usage or input (a value out of
range, an unknown time zone, a malformed day).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import psycopg
import pytest
from click.testing import CliRunner
from worker_support import Run, make_stores, run_json

from pyworker.admin import cli


def tasks_by_role(conn: psycopg.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT role, count(*) FROM worker_tasks GROUP BY role").fetchall())


def test_resync_is_listed_with_help() -> None:
    result = CliRunner().invoke(cli.main, ["--help"])
    assert result.exit_code == 0
    assert "resync" in result.stdout
    for name, command in cli.main.commands["resync"].commands.items():
        assert command.help, f"resync {name} has no help text"


# resync generate


def db_today(conn: psycopg.Connection, time_zone: str | None = None) -> date:
    """Today in `time_zone` (default: the session's), by the database clock."""
    return conn.execute(
        "SELECT (taskpool_now() AT TIME ZONE coalesce(%s, current_setting('TimeZone')))::date",
        (time_zone,),
    ).fetchone()[0]


def test_resync_generate_plans_today_by_default(run: Run, conn: psycopg.Connection) -> None:
    stores = make_stores(conn, 4)
    make_stores(conn, 1, active=False)
    result = run("resync", "generate")
    assert result.exit_code == 0, result.output
    time_zone = conn.execute("SHOW TimeZone").fetchone()[0]
    today = db_today(conn)
    assert result.stdout.strip() == (
        f"planned 4 product_resync tasks for {today.isoformat()} (6 batches, time zone {time_zone})"
    )
    planned = conn.execute(
        "SELECT dispensary_id, priority, payload FROM worker_tasks ORDER BY dispensary_id"
    ).fetchall()
    assert [row[0] for row in planned] == stores
    assert {row[1] for row in planned} == {0}
    assert planned[0][2] == {"plan_day": today.isoformat(), "slot": 0}
    # Idempotent for the day.
    assert run("resync", "generate").stdout.startswith("planned 0 product_resync tasks for")


def test_resync_generate_says_why_it_planned_nothing(run: Run, conn: psycopg.Connection) -> None:
    make_stores(conn, 3)
    run_json(run, "resync", "generate", "--day", "2030-01-01")
    again = run("resync", "generate", "--day", "2030-01-01", "--time-zone", "UTC")
    assert again.stdout == (
        "planned 0 product_resync tasks for 2030-01-01 (6 batches, time zone UTC);"
        " skipped 3 stores already planned for that day\n"
    )
    make_stores(conn, 1)
    next_day = run("resync", "generate", "--day", "2030-01-02", "--time-zone", "UTC",
                   "--batches", "1")
    assert next_day.stdout == (
        "planned 1 product_resync task for 2030-01-02 (1 batch, time zone UTC);"
        " skipped 3 stores with a product_resync pending, claimed or running\n"
    )
    both = run_json(run, "resync", "generate", "--day", "2030-01-02")
    assert (both["created"], both["already_planned"], both["resync_under_way"]) == (0, 1, 3)
    assert run("resync", "generate", "--day", "2030-01-02").stdout.endswith(
        "skipped 1 store already planned for that day and 3 stores with a product_resync"
        " pending, claimed or running\n"
    )


def test_resync_generate_with_no_active_store_says_so(run: Run, conn: psycopg.Connection) -> None:
    make_stores(conn, 2, active=False)
    result = run("resync", "generate", "--day", "2030-01-01", "--time-zone", "UTC")
    assert result.stdout == (
        "planned 0 product_resync tasks for 2030-01-01 (6 batches, time zone UTC):"
        " there is no active store\n"
    )


def test_resync_generate_json_with_a_day_a_time_zone_and_batches(
    run: Run, conn: psycopg.Connection
) -> None:
    make_stores(conn, 3)
    plan = run_json(
        run, "resync", "generate", "--batches", "2", "--day", "2030-03-10",
        "--time-zone", "America/New_York", "--priority", "7",
    )
    assert plan == {"day": "2030-03-10", "time_zone": "America/New_York", "created": 3,
                    "already_planned": 0, "resync_under_way": 0, "batches": 2, "priority": 7}
    rows = conn.execute(
        "SELECT scheduled_for, priority FROM worker_tasks ORDER BY dispensary_id"
    ).fetchall()
    zone = ZoneInfo("America/New_York")
    # Three stores in two slots: the first slot takes the extra one. 2030-03-10 springs forward
    # at 02:00 local, so the 12:00 slot is 11 hours after midnight.
    midnight = datetime(2030, 3, 10, tzinfo=zone)
    noon = datetime(2030, 3, 10, 12, tzinfo=zone)
    assert [row[0] for row in rows] == [midnight, midnight, noon]
    assert noon.astimezone(timezone.utc) - midnight.astimezone(timezone.utc) == timedelta(hours=11)
    assert {row[1] for row in rows} == {7}


def test_resync_generate_defaults_the_day_to_today_in_its_time_zone(
    run: Run, conn: psycopg.Connection
) -> None:
    make_stores(conn, 1)
    plan = run_json(run, "resync", "generate", "--time-zone", "Pacific/Kiritimati")
    assert plan["day"] == db_today(conn, "Pacific/Kiritimati").isoformat()
    assert plan["time_zone"] == "Pacific/Kiritimati"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--day", "2026-13-01"], "'--day'"),
        (["--day", "tomorrow"], "'--day'"),
        (["--time-zone", "Mars/Olympus_Mons"], "Mars/Olympus_Mons"),
        (["--time-zone", "Mars/Olympus_Mons", "--day", "2030-01-01"],
         "unknown time zone 'Mars/Olympus_Mons'"),
        (["--batches", "0"], "batches 0 is out of range"),
        (["--batches", "1441"], "batches 1441 is out of range"),
        (["--priority", "-101"], "priority -101 is out of range"),
    ],
)
def test_resync_generate_bad_input_exits_2(
    run: Run, conn: psycopg.Connection, args: list[str], message: str
) -> None:
    make_stores(conn, 2)
    result = run("resync", "generate", *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert tasks_by_role(conn) == {}
