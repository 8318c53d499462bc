"""scripts/check-sql-homes (make check-sql, a step of make test): every function's live body in
the deploy file of its name, and no deployed function unused. A deployed database passes; a
trigger function no trigger fires, a private function nothing names, and a body replaced outside
its file each fail it, named."""

from __future__ import annotations

import subprocess
import sys

import psycopg
from core_fixtures import REPO_ROOT

CHECK = REPO_ROOT / "scripts" / "check-sql-homes"


def check(db_url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHECK), db_url], capture_output=True, text=True, timeout=120)


def test_a_deployed_database_passes(db_url: str) -> None:
    result = check(db_url)
    assert result.returncode == 0, result.stderr
    assert "each in the deploy file of its name, none unused" in result.stdout


def test_unused_functions_and_a_body_from_elsewhere_fail_it_named(db_url: str, conn: psycopg.Connection) -> None:
    conn.execute("CREATE FUNCTION tg_worker_tasks__fired_by_nothing() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END'")
    conn.execute("CREATE FUNCTION _named_by_nothing() RETURNS integer LANGUAGE sql AS 'SELECT 1'")
    conn.execute("CREATE OR REPLACE FUNCTION taskpool_schema_version() RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT '9.9.9'::text $$")
    result = check(db_url)
    assert result.returncode == 1
    problems = [line for line in result.stderr.splitlines() if not line.endswith("docs/development.md (where a function lives)")]
    assert sorted(problems) == [
        "check-sql-homes: _named_by_nothing(): deployed, but no deploy script of the plans creates it",
        "check-sql-homes: _named_by_nothing(): private, and nothing names it (no function, view, trigger, default, check, pruner, planner or Python file)",
        "check-sql-homes: taskpool_schema_version(): its live body is not in deploy/taskpool_schema_version.sql",
        "check-sql-homes: tg_worker_tasks__fired_by_nothing(): a trigger function that no trigger fires (drop it)",
        "check-sql-homes: tg_worker_tasks__fired_by_nothing(): deployed, but no deploy script of the plans creates it",
    ]
