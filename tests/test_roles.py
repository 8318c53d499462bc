"""Roles declared in code: `@handler(role, max_retries=..., ...)` applied by `pyworker roles sync
--handlers MODULE` (its dry run, the roles no handler declares, --remove-missing), `pyworker roles
list|show`, and a starting worker that refuses a declared role the database lacks and warns about
one whose settings differ, each time naming the command to run. Every CLI here runs as its own
`python -m pyworker` process, as an operator runs it: a handler module registers into the
process's one registry. (SQL behaviour: sql_tests/roles.sql.)"""

from __future__ import annotations

import json
import secrets
import subprocess
import textwrap
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pyworker.errors import ConfigurationError
from pyworker.handlers import Backoff, Registry
from testkit.fleet import pyworker_argv, worker_env
from worker_support import Workers, fetch_one

WELCOME = """
from datetime import timedelta

from pyworker import Backoff, handler


@handler("send_welcome", max_retries={max_retries}, stale_threshold="5 min", run_timeout=timedelta(minutes=1),
         backoff=Backoff(base="10 s", cap="10 min", jitter="equal"), requires_store=False,
         description="the welcome mail")
def send_welcome(task):
    return {{"sent": True}}
"""


def handler_module(directory: Path, source: str) -> str:
    """A handler module written into `directory` under a name of its own; its name."""
    name = f"decl_tasks_{secrets.token_hex(4)}"
    (directory / f"{name}.py").write_text(textwrap.dedent(source))
    return name


def pyworker(db_url: str, directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m pyworker ARGS` against the test's database, from `directory`."""
    return subprocess.run(
        pyworker_argv(*args), cwd=directory, env=worker_env(db_url), capture_output=True, text=True, timeout=120
    )


def role_row(conn: psycopg.Connection, role: str) -> tuple[Any, ...] | None:
    return conn.execute(
        "SELECT max_retries, stale_threshold, run_timeout, backoff_base, backoff_cap, backoff_jitter,"
        " requires_store, description FROM task_roles WHERE role = %s",
        (role,),
    ).fetchone()


def test_sync_creates_a_declared_role_and_its_dry_run_writes_nothing(
    db_url: str, conn: psycopg.Connection, tmp_path: Path
) -> None:
    conn.execute("SELECT create_role('old_role')")
    module = handler_module(tmp_path, WELCOME.format(max_retries=5))

    dry = pyworker(db_url, tmp_path, "roles", "sync", "--handlers", module, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"created    send_welcome ({module})" in dry.stdout
    assert "    max_retries: 5\n" in dry.stdout and "    stale_threshold: 5 min\n" in dry.stdout
    assert dry.stdout.rstrip().endswith("dry run: nothing was written")
    assert role_row(conn, "send_welcome") is None

    synced = pyworker(db_url, tmp_path, "roles", "sync", "--handlers", module)
    assert synced.returncode == 0, synced.stderr
    assert f"created    send_welcome ({module})" in synced.stdout
    assert "undeclared old_role: no handler declares it (kept; --remove-missing removes it)" in synced.stdout
    assert role_row(conn, "send_welcome") == (
        5, timedelta(minutes=5), timedelta(minutes=1), timedelta(seconds=10), timedelta(minutes=10), "equal",
        False, "the welcome mail",
    )

    again = json.loads(pyworker(db_url, tmp_path, "roles", "sync", "--handlers", module, "--json").stdout)
    assert {change["role"]: change["action"] for change in again}["send_welcome"] == "unchanged"


def test_sync_shows_each_changed_field_old_and_new_and_changes_only_those(
    db_url: str, conn: psycopg.Connection, tmp_path: Path
) -> None:
    conn.execute("SELECT create_role('send_welcome', max_retries := 5, stale_threshold := '300 s', max_payload_bytes := 999)")
    module = handler_module(tmp_path, WELCOME.format(max_retries=7))

    dry = pyworker(db_url, tmp_path, "roles", "sync", "--handlers", module, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    [change] = [change for change in json.loads(dry.stdout) if change["role"] == "send_welcome"]
    assert change["action"] == "changed"
    # 300 s is 5 min: only the settings that differ, as PostgreSQL compares them
    assert [row["field"] for row in change["fields"]] == [
        "description", "max_retries", "run_timeout", "backoff_base", "backoff_cap", "backoff_jitter",
    ]
    assert {"field": "max_retries", "in_database": "5", "declared": "7"} in change["fields"]
    assert role_row(conn, "send_welcome")[0] == 5

    synced = pyworker(db_url, tmp_path, "roles", "sync", "--handlers", module)
    assert synced.returncode == 0, synced.stderr
    assert "    max_retries: 5 → 7\n" in synced.stdout
    assert role_row(conn, "send_welcome")[0] == 7
    # a setting the handler does not name keeps the database's value
    assert fetch_one(conn, "SELECT max_payload_bytes FROM task_roles WHERE role = 'send_welcome'")[0] == 999


def test_a_refused_value_names_the_role_and_field_and_changes_nothing(
    db_url: str, conn: psycopg.Connection, tmp_path: Path
) -> None:
    good = handler_module(tmp_path, WELCOME.format(max_retries=5))
    # applied in the order of their names: send_welcome is created before zzz_last is refused
    bad = handler_module(tmp_path, """
        from pyworker import handler

        @handler("zzz_last", max_retries=2000)
        def last(task):
            return None
    """)
    result = pyworker(db_url, tmp_path, "roles", "sync", "--handlers", good, "--handlers", bad)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"role 'zzz_last' (declared in {bad}): max_retries must be 0 to 1000, not 2000" in result.stderr
    assert role_row(conn, "send_welcome") is None, "one transaction: nothing written"

    interval = handler_module(tmp_path, """
        from pyworker import handler

        @handler("bad_interval", stale_threshold="5 minz")
        def bad(task):
            return None
    """)
    result = pyworker(db_url, tmp_path, "roles", "sync", "--handlers", interval)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "role 'bad_interval'" in result.stderr and "stale_threshold '5 minz' is not an interval" in result.stderr


def test_remove_missing_removes_undeclared_roles_and_refuses_one_with_live_tasks(
    db_url: str, conn: psycopg.Connection, tmp_path: Path
) -> None:
    conn.execute("SELECT create_role('old_idle'), create_role('old_busy')")
    conn.execute("SELECT enqueue_task('old_busy')")
    module = handler_module(tmp_path, WELCOME.format(max_retries=5))

    refused = pyworker(db_url, tmp_path, "roles", "sync", "--handlers", module, "--remove-missing")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "role 'old_busy' has 1 live tasks and 0 live workers" in refused.stderr
    assert fetch_one(conn, "SELECT count(*) FROM task_roles WHERE role IN ('old_idle', 'send_welcome')")[0] == 1

    conn.execute("UPDATE worker_tasks SET status = 'cancelled', completed_at = now() WHERE role = 'old_busy'")
    removed = pyworker(db_url, tmp_path, "roles", "sync", "--handlers", module, "--remove-missing")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert "removed    old_busy" in removed.stdout and "removed    old_idle" in removed.stdout
    assert fetch_one(conn, "SELECT count(*) FROM task_roles WHERE role IN ('old_idle', 'old_busy')")[0] == 0


def test_force_goes_only_with_remove_missing(db_url: str, tmp_path: Path) -> None:
    module = handler_module(tmp_path, WELCOME.format(max_retries=5))
    result = pyworker(db_url, tmp_path, "roles", "sync", "--handlers", module, "--force")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--force goes with --remove-missing" in result.stderr


def test_roles_list_and_show(db_url: str, conn: psycopg.Connection, tmp_path: Path) -> None:
    conn.execute("SELECT create_role('send_welcome', max_retries := 5, description := 'the welcome mail')")
    listed = pyworker(db_url, tmp_path, "roles", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["role"]: row for row in json.loads(listed.stdout)}
    assert rows["send_welcome"]["max_retries"] == 5
    table = pyworker(db_url, tmp_path, "--wide", "roles", "list")
    assert any(line.startswith("send_welcome") for line in table.stdout.splitlines()), table.stdout

    shown = pyworker(db_url, tmp_path, "roles", "show", "send_welcome")
    assert shown.returncode == 0, shown.stderr
    assert "description:        the welcome mail" in shown.stdout
    unknown = pyworker(db_url, tmp_path, "roles", "show", "no_such_role")
    assert unknown.returncode == 2
    assert "unknown role 'no_such_role'" in unknown.stderr and "send_welcome" in unknown.stderr


def test_a_worker_refuses_a_declared_role_the_database_lacks_naming_the_command(
    workers: Workers, tmp_path: Path
) -> None:
    module = handler_module(tmp_path, WELCOME.format(max_retries=5))
    code, stderr = workers.run_to_exit("send_welcome", "decl-missing", handlers=module, cwd=tmp_path)
    assert code == 2, stderr
    assert (
        "unknown role 'send_welcome' (Known roles: "
    ) in stderr
    assert (
        f"the handlers declare it; create it with `pyworker roles sync --handlers {module}`, then start"
        " the worker again"
    ) in stderr


def test_a_worker_warns_about_a_role_that_differs_and_runs_by_the_database(
    workers: Workers, conn: psycopg.Connection, tmp_path: Path
) -> None:
    conn.execute("SELECT create_role('send_welcome', max_retries := 3, stale_threshold := '5 min')")
    module = handler_module(tmp_path, WELCOME.format(max_retries=5))
    worker = workers.start("send_welcome", "decl-differs", handlers=module, cwd=tmp_path)
    assert worker.process.poll() is None
    log = worker.log()
    assert "Role send_welcome differs from its declaration in" in log
    assert "max_retries is 3 in the database, 5 declared" in log
    assert f"apply the declaration with `pyworker roles sync --handlers {module}`" in log
    assert fetch_one(conn, "SELECT max_retries FROM task_roles WHERE role = 'send_welcome'")[0] == 3


def test_a_worker_login_compares_its_declarations(
    workers: Workers, conn: psycopg.Connection, worker_login_url: str, tmp_path: Path
) -> None:
    conn.execute("SELECT create_role('send_welcome', max_retries := 5, stale_threshold := '5 min',"
                 " run_timeout := '1 min', backoff_base := '10 s', backoff_cap := '10 min', backoff_jitter := 'equal',"
                 " description := 'the welcome mail')")
    module = handler_module(tmp_path, WELCOME.format(max_retries=5))
    worker = workers.start("send_welcome", "decl-login", handlers=module, cwd=tmp_path, database_url=worker_login_url)
    assert "differs from its declaration" not in worker.log()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"max_retries": "5"}, "@handler('r'): max_retries must be an integer, not '5'"),
        ({"max_retries": True}, "@handler('r'): max_retries must be an integer, not True"),
        ({"stale_threshold": 300}, "@handler('r'): stale_threshold must be an interval (a string or a timedelta), not 300"),
        ({"requires_store": "no"}, "@handler('r'): requires_store must be True or False, not 'no'"),
        ({"backoff": {"base": "1 s"}}, "@handler('r'): backoff must be a pyworker.handlers.Backoff"),
        ({"backoff": Backoff(jitter="some")}, "@handler('r'): backoff.jitter must be 'full', 'equal' or 'none', not 'some'"),
        ({"payload_type": dict}, "@handler('r'): payload_type must be a dataclass or a pydantic model class"),
    ],
)
def test_a_declaration_of_the_wrong_type_is_refused_at_import_naming_the_setting(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        Registry().handler("r", **settings)(lambda task: None)
    assert message in str(refused.value)


def test_one_role_declared_twice_is_refused_naming_both_places() -> None:
    registry = Registry()

    def handle(task: object) -> None:
        return None

    registry.handler("r", max_retries=1)(handle)
    registry.handler("r", max_retries=1)(handle)  # the same, again: nothing changes
    with pytest.raises(ConfigurationError, match=f"role 'r' is declared twice: in {__name__} and in {__name__}"):
        registry.handler("r", max_retries=2)(handle)
    with pytest.raises(ConfigurationError, match="role 'r' is declared twice"):
        registry.handler("r", max_retries=1)(lambda task: None)
