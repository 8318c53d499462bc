"""The schema version cannot fall behind its plan.

taskpool_schema_version() is what a worker checks at start (pyworker.db.REQUIRED_SCHEMA_VERSION).
It is set by the change taskpool_schema_version, which must be the LAST change of sqitch.plan:
Sqitch deploys in plan order, so a database that reports X.Y.Z has every change of the plan up
to it, and one deployed part way reports the version before and is refused by a worker that
needs X.Y.Z.

A change is added above that last line. After a release's tag, the first change is a rework of
taskpool_schema_version with the version raised (docs/development.md), and REQUIRED_SCHEMA_VERSION
is raised if pyworker calls what changed. Up to 0.7.0 the version was set by changes named
schema_version_X_Y_Z, which stay in the plan as shipped.
"""

from __future__ import annotations

import re

import psycopg
from core_fixtures import REPO_ROOT

from pyworker.db import REQUIRED_SCHEMA_VERSION

PLAN = REPO_ROOT / "sqitch.plan"
VERSION_CHANGE = "taskpool_schema_version"
# The changes that set the version up to 0.7.0, before it moved to the change of its name.
OLD_VERSION_CHANGE = re.compile(r"schema_version_\d+_\d+_\d+")
REPORTED = re.compile(r"SELECT '([0-9.]+)'::text;")


def plan_entries() -> list[str]:
    """The plan's changes and tags, in order (pragmas, comments and blanks left out)."""
    return [
        line.split()[0]
        for line in PLAN.read_text().splitlines()
        if line.strip() and not line.startswith(("%", "#"))
    ]


def plan_changes() -> list[str]:
    return [entry for entry in plan_entries() if not entry.startswith("@")]


def deploy_scripts_of_the_version() -> list[str]:
    """The deploy scripts that set the version, in plan order: each schema_version_X_Y_Z's, then
    each instance of taskpool_schema_version's that reports one (a reworked instance's script
    named after the first tag that follows it)."""
    entries, scripts = plan_entries(), []
    for index, entry in enumerate(entries):
        if OLD_VERSION_CHANGE.fullmatch(entry):
            scripts.append(f"{entry}.sql")
        elif entry == VERSION_CHANGE:
            later = entries[index + 1 :]
            reworked = VERSION_CHANGE in later
            tag = next(e for e in later if e.startswith("@")) if reworked else ""
            scripts.append(f"{VERSION_CHANGE}{tag}.sql")
    return [script for script in scripts if REPORTED.search((REPO_ROOT / "deploy" / script).read_text())]


def versions() -> list[tuple[int, ...]]:
    return [
        tuple(int(part) for part in REPORTED.findall((REPO_ROOT / "deploy" / script).read_text())[-1].split("."))
        for script in deploy_scripts_of_the_version()
    ]


def last_version() -> tuple[int, ...]:
    return versions()[-1]


def test_the_last_change_of_the_plan_sets_the_schema_version() -> None:
    changes = plan_changes()
    assert VERSION_CHANGE in changes, f"sqitch.plan has no {VERSION_CHANGE} change"
    after = changes[len(changes) - changes[::-1].index(VERSION_CHANGE) :]
    assert not after, (
        f"{', '.join(after)} follow(s) {VERSION_CHANGE} in sqitch.plan: a database deployed up to"
        f" the version change would report its version without them. Put them above the plan's"
        f" last line, {VERSION_CHANGE} (see this file's docstring and docs/development.md)."
    )
    assert deploy_scripts_of_the_version()[-1] == f"{VERSION_CHANGE}.sql"


def test_each_version_change_reports_one_version_and_verifies_it() -> None:
    deploy = (REPO_ROOT / "deploy" / f"{VERSION_CHANGE}.sql").read_text()
    verify = (REPO_ROOT / "verify" / f"{VERSION_CHANGE}.sql").read_text()
    (version,) = REPORTED.findall(deploy)
    assert f"taskpool_schema_version() = '{version}'" in verify
    for script in deploy_scripts_of_the_version():
        assert len(REPORTED.findall((REPO_ROOT / "deploy" / script).read_text())) == 1, script


def test_each_version_change_raises_the_version() -> None:
    assert versions() == sorted(set(versions())), versions()


def test_a_tag_comes_between_two_instances_of_the_version_change() -> None:
    """A second instance before a tag would be a rework Sqitch refuses: edit the last one."""
    entries = plan_entries()
    instances = [index for index, entry in enumerate(entries) if entry == VERSION_CHANGE]
    for earlier, later in zip(instances, instances[1:]):
        assert any(entry.startswith("@") for entry in entries[earlier:later]), entries[earlier:later]


def test_pyworker_requires_a_version_the_plan_reaches() -> None:
    assert REQUIRED_SCHEMA_VERSION <= last_version()
    assert REQUIRED_SCHEMA_VERSION[0] == last_version()[0]


def test_a_deployed_database_reports_the_version_of_the_whole_plan(conn: psycopg.Connection) -> None:
    (version,) = conn.execute("SELECT taskpool_schema_version()").fetchone()
    assert version == ".".join(map(str, last_version()))
