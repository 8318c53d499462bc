"""`pyworker crawl --role R --state XX` (seed 001's enqueue-state): one task per active store of
the state through enqueue_state_crawl, none for a store with one under way. CliRunner on a real
deployed database."""

from __future__ import annotations

import json

import psycopg
from click.testing import CliRunner, Result

from pyworker.admin import cli


def pyworker(db_url: str, *args: str) -> Result:
    return CliRunner().invoke(cli.main, ["--database-url", db_url, *args])


def add_stores(conn: psycopg.Connection, *stores: tuple[str, str | None, bool]) -> dict[str, int]:
    """Stores (name, state, active) on the simulated platform; their ids by name."""
    ids = {}
    for name, state, active in stores:
        (ids[name],) = conn.execute(
            "INSERT INTO dispensaries (name, platform, state_code, active) VALUES (%s, 'simulated', %s, %s)"
            " RETURNING id",
            (name, state, active),
        ).fetchone()
    return ids


def queued(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute(
        "SELECT role, dispensary_id, status FROM worker_tasks ORDER BY role, dispensary_id, id"
    ).fetchall()


def test_it_queues_one_task_per_active_store_of_the_state_and_skips_them_the_second_time(
    conn: psycopg.Connection, db_url: str
) -> None:
    ids = add_stores(
        conn, ("a", "AZ", True), ("b", "AZ", True), ("closed", "AZ", False), ("elsewhere", "CA", True)
    )

    first = pyworker(db_url, "crawl", "--role", "product_resync", "--state", "AZ", "--json")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout) == {
        "role": "product_resync", "state": "AZ", "dry_run": False, "made": 2, "already_active": 0,
    }
    assert queued(conn) == [("product_resync", ids["a"], "pending"), ("product_resync", ids["b"], "pending")]

    again = pyworker(db_url, "crawl", "--role", "product_resync", "--state", "AZ")
    assert again.exit_code == 0, again.output
    assert again.stdout.strip() == (
        "queued 0 product_resync tasks for AZ; skipped 2 stores with a product_resync pending, claimed or running"
    )
    assert len(queued(conn)) == 2


def test_a_dry_run_counts_and_queues_nothing(conn: psycopg.Connection, db_url: str) -> None:
    ids = add_stores(conn, ("a", "AZ", True), ("b", "AZ", True))
    conn.execute(
        "INSERT INTO worker_tasks (role, dispensary_id, platform) VALUES ('product_discovery', %s, 'simulated')",
        (ids["a"],),
    )

    result = pyworker(db_url, "crawl", "--role", "product_discovery", "--state", "AZ", "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (
        "would queue 1 product_discovery task for AZ;"
        " skipped 1 store with a product_discovery pending, claimed or running"
    )
    assert queued(conn) == [("product_discovery", ids["a"], "pending")]


def test_a_state_without_stores_makes_nothing_and_says_so(conn: psycopg.Connection, db_url: str) -> None:
    add_stores(conn, ("a", "AZ", True))
    result = pyworker(db_url, "crawl", "--state", "NV")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "queued 0 product_resync tasks for NV: NV has no active store"
    assert queued(conn) == []


def test_bad_input_exits_2_naming_it_and_queues_nothing(conn: psycopg.Connection, db_url: str) -> None:
    add_stores(conn, ("a", "AZ", True))
    for args, message in [
        (("--state", "az"), "state 'az' is not a state code"),
        (("--state", "Arizona"), "state 'Arizona' is not a state code"),
        (("--role", "product_refresh", "--state", "AZ"), "role product_refresh is not a crawl of a store's menu"),
        (("--role", "no_such_role", "--state", "AZ"), "unknown role 'no_such_role'"),
    ]:
        result = pyworker(db_url, "crawl", *args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr, (args, result.stderr)
    assert queued(conn) == []
