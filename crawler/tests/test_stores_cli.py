"""`pyworker stores add`: the CLI's way to add a store by hand (add_store()), so that the
per-store tasks the README enqueues have a store to name. CliRunner on a real deployed database."""

from __future__ import annotations

import json

import psycopg
from click.testing import CliRunner, Result

from pyworker.admin import cli


def pyworker(db_url: str, *args: str) -> Result:
    return CliRunner().invoke(cli.main, ["--database-url", db_url, *args])


def store_rows(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute(
        "SELECT id, name, platform, state_code, city, menu_url, active FROM dispensaries ORDER BY id"
    ).fetchall()


def test_a_store_added_by_hand_is_one_tasks_can_name(conn: psycopg.Connection, db_url: str) -> None:
    added = pyworker(
        db_url, "stores", "add", "Green Leaf", "--platform", "dutchie", "--state-code", "CA",
        "--city", "Oakland", "--menu-url", "https://menus.example/green-leaf", "--json",
    )
    assert added.exit_code == 0, added.output
    store = json.loads(added.stdout)
    assert store_rows(conn) == [
        (store["id"], "Green Leaf", "dutchie", "CA", "Oakland", "https://menus.example/green-leaf", True)
    ]

    enqueued = pyworker(db_url, "enqueue", "product_resync", "--store", str(store["id"]), "--json")
    assert enqueued.exit_code == 0, enqueued.output
    assert [task["platform"] for task in json.loads(enqueued.stdout)] == ["dutchie"]


def test_the_table_shows_the_new_store_id(conn: psycopg.Connection, db_url: str) -> None:
    result = pyworker(db_url, "stores", "add", "Blue Sky")
    assert result.exit_code == 0, result.output
    (store_id,) = conn.execute("SELECT id FROM dispensaries WHERE name = 'Blue Sky'").fetchone()
    assert result.stdout.splitlines()[0].split() == ["id:", str(store_id)]


def test_a_bad_state_code_exits_2_naming_it_and_adds_nothing(conn: psycopg.Connection, db_url: str) -> None:
    result = pyworker(db_url, "stores", "add", "Green Leaf", "--state-code", "ca")
    assert result.exit_code == 2, result.output
    assert "state_code must be two capital letters, not 'ca'" in result.stderr
    assert store_rows(conn) == []


def test_a_menu_url_another_store_has_exits_1_naming_that_store(
    conn: psycopg.Connection, db_url: str
) -> None:
    first = pyworker(db_url, "stores", "add", "Green Leaf", "--menu-url", "https://menus.example/a", "--json")
    assert first.exit_code == 0, first.output
    first_id = json.loads(first.stdout)["id"]

    second = pyworker(db_url, "stores", "add", "Green Leaf again", "--menu-url", "https://menus.example/a")
    assert second.exit_code == 1, second.output
    assert f"menu_url 'https://menus.example/a' is dispensary {first_id} already" in second.stderr
    assert [row[0] for row in store_rows(conn)] == [first_id]
