"""The schema version cannot fall behind its plan.

taskpool_schema_version() is what a worker checks at start (pyworker.db.REQUIRED_SCHEMA_VERSION).
It is set by a change named schema_version_X_Y_Z, which must be the LAST change of sqitch.plan:
Sqitch deploys in plan order, so a database that reports X.Y.Z has every change of the plan
up to it, and one deployed part way reports the version before and is refused by a worker
that needs X.Y.Z.

When a change is appended after it, the version change must move (or a new one follow):
- X.Y.Z not tagged yet (no @v line after it): move the schema_version_X_Y_Z line to the end of
  sqitch.plan, unchanged;
- X.Y.Z released: add schema_version_X_Y_(Z+1) at the end (deploy/revert/verify copied from
  the last one, the version in its SELECT and its verify raised), and raise
  REQUIRED_SCHEMA_VERSION if pyworker calls what changed.
"""

from __future__ import annotations

import re

import psycopg
from core_fixtures import REPO_ROOT

from pyworker.db import REQUIRED_SCHEMA_VERSION

PLAN = REPO_ROOT / "sqitch.plan"
VERSION_CHANGE = re.compile(r"schema_version_(\d+)_(\d+)_(\d+)")


def plan_changes() -> list[str]:
    """The names of the plan's changes, in order (pragmas, tags, comments and blanks left out)."""
    return [
        line.split()[0]
        for line in PLAN.read_text().splitlines()
        if line.strip() and not line.startswith(("%", "@", "#"))
    ]


def version_of(change: str) -> tuple[int, ...]:
    match = VERSION_CHANGE.fullmatch(change)
    assert match, change
    return tuple(int(part) for part in match.groups())


def last_version() -> tuple[int, ...]:
    return version_of(plan_changes()[-1])


def test_the_last_change_of_the_plan_sets_the_schema_version() -> None:
    changes = plan_changes()
    versions = [index for index, change in enumerate(changes) if VERSION_CHANGE.fullmatch(change)]
    assert versions, "sqitch.plan has no schema_version_X_Y_Z change"
    after = changes[versions[-1] + 1 :]
    assert not after, (
        f"{', '.join(after)} follow(s) {changes[versions[-1]]} in sqitch.plan: a database deployed"
        " up to the version change would report its version without them. Move the version change's"
        " line to the end of sqitch.plan (not released yet) or add the next schema_version_X_Y_Z"
        " change there (see this file's docstring)."
    )


def test_each_version_change_reports_the_version_it_is_named_for() -> None:
    for change in filter(VERSION_CHANGE.fullmatch, plan_changes()):
        version = ".".join(map(str, version_of(change)))
        deploy = (REPO_ROOT / "deploy" / f"{change}.sql").read_text()
        verify = (REPO_ROOT / "verify" / f"{change}.sql").read_text()
        assert re.findall(r"SELECT '([0-9.]+)'::text;", deploy) == [version], change
        assert f"taskpool_schema_version() = '{version}'" in verify, change


def test_each_version_change_raises_the_version() -> None:
    versions = [version_of(change) for change in filter(VERSION_CHANGE.fullmatch, plan_changes())]
    assert versions == sorted(set(versions)), versions


def test_pyworker_requires_a_version_the_plan_reaches() -> None:
    assert REQUIRED_SCHEMA_VERSION <= last_version()
    assert REQUIRED_SCHEMA_VERSION[0] == last_version()[0]


def test_a_deployed_database_reports_the_version_of_the_whole_plan(conn: psycopg.Connection) -> None:
    (version,) = conn.execute("SELECT taskpool_schema_version()").fetchone()
    assert version == ".".join(map(str, last_version()))
