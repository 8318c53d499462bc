"""The wheel a user installs (taskpool-pg): it holds the core and the schema, and its
`pyworker schema apply | upgrade | status` keep Sqitch's registry exactly as `sqitch deploy` does.

The wheel is built from a copy of the checkout and installed into an empty venv in a temporary
directory, once per run (tests/package_fixtures.py); the installed `pyworker` runs there with
only the venv on the PATH (no Sqitch, no psql, no checkout on sys.path). Sqitch itself, from the
checkout, is the reference the registry rows and the upgrade paths are checked against.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from core_fixtures import (
    COPY_PREFIX,
    REPO_ROOT,
    admin_connect,
    database_url,
    drop_database,
    libpq_env,
    sqitch_target,
    url_for_database,
)
from package_fixtures import build_wheel
from psycopg import sql
from pyworker.admin.schema import Deployer, Plan, SchemaRefused

# The tests that share the module's databases (applied, sqitch_deployed: a deploy each) run on one
# pytest-xdist worker (make test-py: --dist loadgroup), so that each is made once; the others
# spread over the workers.
shares_the_deployed_databases = pytest.mark.xdist_group("package_registry")
ROLE = "package_check"
# The registry columns that must agree with Sqitch's: all but when and by whom.
REGISTRY_ROWS = {
    "changes": "change_id, script_hash, change, project, note, planned_at, planner_name, planner_email",
    "tags": "tag_id, tag, project, change_id, note, planned_at, planner_name, planner_email",
    "dependencies": "change_id, type, dependency, dependency_id",
    "events": "event, change_id, change, project, note, requires, conflicts, tags, planned_at,"
    " planner_name, planner_email",
    "projects": "project, uri",
    "releases": "version",
}


def run_installed(home: Path, url: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """The installed `pyworker ARGS` against `url`, from `home`, with only the venv on the PATH."""
    result = subprocess.run(
        [str(home / "venv" / "bin" / "pyworker"), *args],
        cwd=home, env=installed_env(home, url), capture_output=True, text=True, timeout=120,
    )
    if check:
        assert result.returncode == 0, f"pyworker {' '.join(args)}:\n{result.stdout}{result.stderr}"
    return result


def installed_env(home: Path, url: str) -> dict[str, str]:
    return {"PATH": str(home / "venv" / "bin"), "HOME": str(home), "LANG": "C.UTF-8", "DATABASE_URL": url}


def sqitch(
    url: str, *args: str, check: bool = True, top: Path = REPO_ROOT
) -> subprocess.CompletedProcess[str]:
    """`sqitch ARGS` from the checkout (or the Sqitch project in `top`) against `url`'s database."""
    if shutil.which("sqitch") is None:
        pytest.fail("sqitch is not installed: run `make deps`", pytrace=False)
    dbname = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
    result = subprocess.run(
        ["sqitch", *args, sqitch_target(database_url(), dbname)],
        cwd=top, env=libpq_env(database_url(), dbname), capture_output=True, text=True,
    )
    if check:
        assert result.returncode == 0, f"sqitch {' '.join(args)}:\n{result.stdout}{result.stderr}"
    return result


def new_database(label: str) -> str:
    name = f"{COPY_PREFIX}pkg_{label}_{secrets.token_hex(3)}"
    with admin_connect() as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return url_for_database(database_url(), name)


def drop(url: str) -> None:
    with admin_connect() as admin:
        drop_database(admin, psycopg.conninfo.conninfo_to_dict(url)["dbname"])


@pytest.fixture
def empty_database() -> Iterator[str]:
    url = new_database("empty")
    yield url
    drop(url)


@pytest.fixture(scope="module")
def sqitch_deployed() -> Iterator[str]:
    """An empty database into which `sqitch deploy --verify` put the core's plan."""
    url = new_database("sqitch")
    sqitch(url, "deploy", "--verify")
    yield url
    drop(url)


@pytest.fixture(scope="module")
def applied(wheel_home: Path) -> Iterator[str]:
    """An empty database into which the installed `pyworker schema apply` put the schema."""
    url = new_database("applied")
    result = run_installed(wheel_home, url, "schema", "apply")
    assert "+ taskpool_worker" in result.stdout
    yield url
    drop(url)


def registry_rows(url: str) -> dict[str, list[tuple]]:
    """The registry's rows, and its tables' shape: columns, constraints, comments."""
    with psycopg.connect(url) as conn:
        rows = {
            table: conn.execute(f"SELECT {columns} FROM sqitch.{table} ORDER BY {columns}").fetchall()
            for table, columns in REGISTRY_ROWS.items()
        }
        rows["shape"] = conn.execute(
            """
            SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                   pg_get_expr(d.adbin, d.adrelid), col_description(c.oid, a.attnum),
                   obj_description(c.oid, 'pg_class'),
                   ARRAY(SELECT pg_get_constraintdef(k.oid) FROM pg_constraint k
                          WHERE k.conrelid = c.oid ORDER BY 1)
              FROM pg_class c
              JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
              LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
             WHERE c.relnamespace = 'sqitch'::regnamespace AND c.relkind = 'r'
             ORDER BY 1, 2
            """
        ).fetchall()
    return rows


def failed_verifies(url: str, *args: str) -> list[str]:
    """The changes whose verify script `sqitch verify ARGS` reports failed."""
    result = sqitch(url, "verify", *args, check=False)
    return sorted(
        line.split("verify/", 1)[1].split('.sql"', 1)[0]
        for line in (result.stdout + result.stderr).splitlines()
        if line.startswith("# Verify script")
    )


def test_the_wheel_holds_the_core_its_schema_and_py_typed(checkout_wheel: Path):
    names = set(zipfile.ZipFile(checkout_wheel).namelist())
    assert checkout_wheel.name.startswith("taskpool_pg-")
    assert not [n for n in names if n.startswith(("pyworker/crawler", "pyworker/simulator", "taskpool_crawler"))]
    assert {"pyworker/py.typed", "pyworker/admin/schema.py", "pyworker/admin/sqitch_registry.sql",
            "pyworker/sqitch/sqitch.plan", "pyworker/sqitch/registry/split_crawler.sql"} <= names
    # Every script the checkout's plan has, the wheel has, byte for byte where it matters: the
    # deploy scripts' hashes are the registry's script_hash.
    for kind in ("deploy", "revert", "verify"):
        scripts = {f"pyworker/sqitch/{kind}/{p.name}" for p in (REPO_ROOT / kind).glob("*.sql")}
        assert scripts and scripts <= names, kind
    with zipfile.ZipFile(checkout_wheel) as archive:
        assert archive.read("pyworker/sqitch/sqitch.plan") == (REPO_ROOT / "sqitch.plan").read_bytes()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "Name: taskpool-pg" in metadata and "Classifier: Typing :: Typed" in metadata


@shares_the_deployed_databases
def test_the_installed_wheel_applies_the_schema_and_runs_a_task(wheel_home: Path, applied: str, tmp_path: Path):
    status = json.loads(run_installed(wheel_home, applied, "schema", "status", "--json").stdout)
    assert status["up_to_date"] and status["pending"] == []
    # The plan the installed package read is its own copy, not the checkout's.
    assert Path(status["plan"]).is_relative_to(wheel_home / "venv")
    again = run_installed(wheel_home, applied, "schema", "apply")
    assert again.stdout.strip() == "Nothing to deploy (up-to-date)"

    with psycopg.connect(applied) as conn:
        conn.execute("INSERT INTO task_roles (role) VALUES (%s)", [ROLE])
    # The worker imports its handlers from its working directory: this test's own.
    (tmp_path / "package_handlers.py").write_text(
        "import pyworker\n"
        "from pyworker.handlers import handler\n\n\n"
        f"@handler({ROLE!r})\n"
        "def double(task):\n"
        "    return {'doubled': task.payload['n'] * 2, 'pyworker': pyworker.__file__}\n"
    )
    enqueued = run_installed(wheel_home, applied, "enqueue", ROLE, "--payload", '{"n": 21}', "--json")
    (task,) = json.loads(enqueued.stdout)
    task_id = task["id"]
    worker = subprocess.Popen(
        [str(wheel_home / "venv" / "bin" / "pyworker"), "--role", ROLE, "--handlers", "package_handlers",
         "--poll-interval-ms", "200"],
        cwd=tmp_path, env=installed_env(wheel_home, applied), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 30
        with psycopg.connect(applied, autocommit=True) as conn:
            while True:
                status, result = conn.execute(
                    "SELECT status, result FROM worker_tasks WHERE id = %s", [task_id]
                ).fetchone()
                if status == "completed" or time.monotonic() > deadline or worker.poll() is not None:
                    break
                time.sleep(0.1)
    finally:
        worker.send_signal(signal.SIGTERM)
        output = worker.communicate(timeout=30)[0]
    assert status == "completed", output
    assert result["doubled"] == 42
    assert Path(result["pyworker"]).is_relative_to(wheel_home / "venv"), result
    assert worker.returncode == 0, output


@shares_the_deployed_databases
def test_the_registry_is_the_one_sqitch_writes(applied: str, sqitch_deployed: str):
    by_pyworker, by_sqitch = registry_rows(applied), registry_rows(sqitch_deployed)
    assert by_sqitch["shape"] and len(by_sqitch["changes"]) == len(Plan.load(REPO_ROOT).changes)
    for table in [*REGISTRY_ROWS, "shape"]:
        assert by_pyworker[table] == by_sqitch[table], table
    # And the ids are Sqitch's algorithm, not copied from anywhere: the plan alone gives them.
    plan = Plan.load(REPO_ROOT)
    assert {(c.id, c.script_hash(plan)) for c in plan.changes} == {row[:2] for row in by_sqitch["changes"]}
    assert {t.id for t in plan.tags} == {row[0] for row in by_sqitch["tags"]}


@shares_the_deployed_databases
def test_upgrade_takes_over_from_sqitch_at_a_tag(wheel_home: Path, empty_database: str, sqitch_deployed: str):
    refused = run_installed(wheel_home, empty_database, "schema", "upgrade", check=False)
    assert refused.returncode == 1 and "pyworker schema apply" in refused.stderr, refused.stderr

    sqitch(empty_database, "deploy", "--no-verify", "--to", "@v0.5.0")
    status = json.loads(run_installed(wheel_home, empty_database, "schema", "status", "--json").stdout)
    assert status["last_tag"] == "@v0.5.0" and status["pending"] and not status["up_to_date"]
    upgraded = run_installed(wheel_home, empty_database, "schema", "upgrade")
    assert f"+ {Plan.load(REPO_ROOT).changes[-1].name}" in upgraded.stdout

    assert "Nothing to deploy (up-to-date)" in sqitch(empty_database, "status").stdout
    # `sqitch verify` of what the upgrade deployed. It runs each verify script against the head of
    # the plan, where a few fail on a database Sqitch alone deployed too (their objects were
    # replaced later): the same ones fail here, and no other.
    after_the_tag = ("--from", "@v0.5.0")
    assert failed_verifies(empty_database, *after_the_tag) == failed_verifies(sqitch_deployed, *after_the_tag)

    # A change the package's plan does not know (deployed from a newer plan): refused, untouched.
    with psycopg.connect(empty_database) as conn:
        conn.execute(
            "INSERT INTO sqitch.changes (change_id, change, project, committer_name, committer_email,"
            " planned_at, planner_name, planner_email) VALUES (repeat('f', 40), 'from_the_future',"
            " 'taskpool', 'x', 'x@x', now(), 'x', 'x@x')"
        )
    refused = run_installed(wheel_home, empty_database, "schema", "upgrade", check=False)
    assert refused.returncode == 1 and "does not know: from_the_future" in refused.stderr, refused.stderr


def combined_plan_checkout(into: Path) -> Path:
    """The one plan (and its scripts) of before the crawler had a Sqitch project of its own, from
    the repository's history: the revision before registry/combined.plan was added."""
    added = subprocess.run(
        ["git", "rev-list", "-1", "HEAD", "--", "registry/combined.plan"],
        cwd=REPO_ROOT, capture_output=True, text=True, check=True,
    ).stdout.strip()
    archive = subprocess.run(
        ["git", "archive", f"{added}^", "sqitch.plan", "sqitch.conf", "deploy", "revert", "verify"],
        cwd=REPO_ROOT, capture_output=True, check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    assert (into / "sqitch.plan").read_bytes() == (REPO_ROOT / "registry" / "combined.plan").read_bytes()
    return into


def test_upgrade_moves_a_database_of_the_combined_plan_in_place(
    wheel_home: Path, empty_database: str, tmp_path: Path
):
    combined = combined_plan_checkout(tmp_path)
    sqitch(empty_database, "deploy", "--no-verify", "--to", "@v0.5.0", top=combined)
    upgraded = run_installed(wheel_home, empty_database, "schema", "upgrade")
    assert f"+ {Plan.load(REPO_ROOT).changes[-1].name}" in upgraded.stdout
    # Sqitch agrees: the core is up to date, and the crawler's changes are its own project's now,
    # where `sqitch deploy` of the crawler's plan takes them on.
    assert "Nothing to deploy (up-to-date)" in sqitch(empty_database, "status").stdout
    crawler = REPO_ROOT / "crawler" / "sqitch"
    assert "# Project:  taskpool_crawler" in sqitch(empty_database, "status", top=crawler).stdout
    sqitch(empty_database, "deploy", "--verify", top=crawler)
    assert "Nothing to deploy (up-to-date)" in sqitch(empty_database, "status", top=crawler).stdout


def test_sqitch_deploys_and_reverts_what_apply_installed(wheel_home: Path, empty_database: str):
    run_installed(wheel_home, empty_database, "schema", "apply", "--to", "@v0.5.0")
    deployed = sqitch(empty_database, "deploy", "--verify").stdout
    assert "+ taskpool_schema_version @v0.5.0" not in deployed and "+ heartbeat_tasks" in deployed
    assert "Nothing to deploy (up-to-date)" in sqitch(empty_database, "status").stdout
    status = json.loads(run_installed(wheel_home, empty_database, "schema", "status", "--json").stdout)
    assert status["up_to_date"]

    sqitch(empty_database, "revert", "-y")
    with psycopg.connect(empty_database) as conn:
        assert conn.execute("SELECT count(*) FROM sqitch.changes").fetchone()[0] == 0
        assert conn.execute(
            "SELECT count(*) FROM pg_catalog.pg_proc WHERE pronamespace = 'public'::regnamespace"
        ).fetchone()[0] == 0
    status = json.loads(run_installed(wheel_home, empty_database, "schema", "status", "--json").stdout)
    assert status["deployed_changes"] == 0 and len(status["pending"]) == len(Plan.load(REPO_ROOT).changes)


EDGE_PLAN = """\
%syntax-version=1.0.0
%project=flipr
%uri=HTTPS://Example.COM:443

users 2026-01-01T00:00:00Z Marge N. O’Vera <marge@example.com> # Creates table to track our users.
widgets [users !gadgets other:thing] 2026-01-02T00:00:00Z Marge <m@x.org>   # A note: \\\\ and \\n in it
@alpha 2026-01-03T00:00:00Z Marge <m@x.org> # Tag it
# a comment line
users [users@alpha] 2026-01-04T00:00:00Z Marge <m@x.org>
plain 2026-01-05T00:00:00Z Marge <m@x.org>
@beta 2026-01-06T00:00:00Z Marge <m@x.org>
"""


def test_the_plan_reader_agrees_with_sqitch_on_a_plan_with_every_kind_of_line(tmp_path: Path):
    # A rework, a conflict, another project's change, a note with escapes, a non-ASCII planner, a
    # %uri Sqitch writes otherwise: the ids `sqitch plan` computes, the tag's info `sqitch show`
    # prints.
    if shutil.which("sqitch") is None:
        pytest.fail("sqitch is not installed: run `make deps`", pytrace=False)
    (tmp_path / "sqitch.plan").write_text(EDGE_PLAN, encoding="utf-8")
    (tmp_path / "sqitch.conf").write_text("[core]\n\tengine = pg\n")
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "users.sql").write_text("SELECT 2;\n")
    (tmp_path / "deploy" / "users@alpha.sql").write_text("SELECT 1;\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQITCH")}

    def sqitch_here(*args: str) -> str:
        result = subprocess.run(["sqitch", *args], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    plan = Plan.load(tmp_path)
    listed = sqitch_here("plan", "--no-headers", "--format", "format:%H %n").split()
    assert [(c.id, c.name) for c in plan.changes] == list(zip(listed[::2], listed[1::2]))
    assert plan.changes[1].note == "A note: \\ and \n in it"
    alpha = plan.tags[0]
    assert sqitch_here("show", "tag", "alpha").rstrip("\n") == alpha.info(plan)
    # The earlier instance of the reworked change runs the script named after the tag after it.
    assert [c.script(plan, "deploy").name for c in plan.changes] == [
        "users@alpha.sql", "widgets.sql", "users.sql", "plain.sql"
    ]
    assert plan.changes[0].script_hash(plan) == hashlib.sha1(b"SELECT 1;\n").hexdigest()


def test_a_change_that_fails_is_recorded_as_failed_and_the_ones_before_it_stay(
    tmp_path: Path, empty_database: str
):
    (tmp_path / "sqitch.plan").write_text(
        "%syntax-version=1.0.0\n%project=scratch\n\n"
        "first 2026-01-01T00:00:00Z A <a@example.com> # Add first_t\n"
        "second [first] 2026-01-02T00:00:00Z A <a@example.com> # Add second_t\n"
    )
    scripts = {
        "deploy/first.sql": "BEGIN; CREATE TABLE first_t (id int); COMMIT;",
        "verify/first.sql": "BEGIN; SELECT id FROM first_t WHERE FALSE; ROLLBACK;",
        "revert/first.sql": "BEGIN; DROP TABLE first_t; COMMIT;",
        "deploy/second.sql": "BEGIN; CREATE TABLE second_t (id int); COMMIT;",
        "verify/second.sql": "BEGIN; SELECT no_such_column FROM second_t WHERE FALSE; ROLLBACK;",
        "revert/second.sql": "BEGIN; DROP TABLE second_t; COMMIT;",
    }
    for name, text in scripts.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text + "\n")

    def deployed() -> tuple[list[str], list[tuple[str, str]], bool, bool]:
        with psycopg.connect(empty_database) as conn:
            return (
                [r[0] for r in conn.execute("SELECT change FROM sqitch.changes ORDER BY committed_at")],
                conn.execute("SELECT event, change FROM sqitch.events ORDER BY committed_at").fetchall(),
                conn.execute("SELECT to_regclass('first_t') IS NOT NULL").fetchone()[0],
                conn.execute("SELECT to_regclass('second_t') IS NOT NULL").fetchone()[0],
            )

    # second does not verify: its revert script runs, and it is recorded as a failure.
    with pytest.raises(SchemaRefused, match="second did not verify"):
        Deployer(empty_database, Plan.load(tmp_path)).deploy(install=True)
    assert deployed() == (["first"], [("deploy", "first"), ("fail", "second")], True, False)

    # second's deploy script fails: its transaction rolls back, and it is recorded as a failure.
    (tmp_path / "verify/second.sql").write_text("BEGIN; SELECT id FROM second_t WHERE FALSE; ROLLBACK;\n")
    (tmp_path / "deploy/second.sql").write_text(
        "BEGIN; CREATE TABLE second_t (id int); SELECT 1/0; COMMIT;\n"
    )
    with pytest.raises(SchemaRefused, match="deploy/second failed: division by zero"):
        Deployer(empty_database, Plan.load(tmp_path)).deploy(install=True)
    events = [("deploy", "first"), ("fail", "second"), ("fail", "second")]
    assert deployed() == (["first"], events, True, False)

    # Fixed, the next run deploys it.
    (tmp_path / "deploy/second.sql").write_text(scripts["deploy/second.sql"] + "\n")
    assert [c.name for c in Deployer(empty_database, Plan.load(tmp_path)).deploy(install=True)] == ["second"]
    assert deployed()[0] == ["first", "second"] and deployed()[3]


def test_the_wheel_carries_the_dashboard_which_names_its_extra_when_missing(
    checkout_wheel: Path, wheel_home: Path, empty_database: str
) -> None:
    names = zipfile.ZipFile(checkout_wheel).namelist()
    assert "pyworker/contrib/dashboard/templates/overview.html" in names
    assert "pyworker/contrib/dashboard/static/dashboard.css" in names
    # The live refresh: the vendored htmx with its license, and its guard.
    assert {"pyworker/contrib/dashboard/static/vendor/htmx-2.0.11.min.js", "pyworker/contrib/dashboard/static/vendor/htmx-LICENSE.txt",
            "pyworker/contrib/dashboard/static/live.js", "pyworker/contrib/dashboard/templates/confirm.html"} <= set(names)
    # Installed without the extra: the command says how to get it, and serves nothing.
    result = run_installed(wheel_home, empty_database, "dashboard", check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "pip install 'taskpool-pg[dashboard]'" in result.stderr


def wheel_metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))).decode()


def assert_carries_the_license(wheel: Path) -> None:
    metadata = wheel_metadata(wheel).splitlines()
    assert "License-Expression: MIT" in metadata
    assert "License-File: LICENSE" in metadata
    with zipfile.ZipFile(wheel) as archive:
        (license_path,) = [n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        assert archive.read(license_path) == (REPO_ROOT / "LICENSE").read_bytes()


def test_the_wheel_carries_the_license_file_and_names_the_license_in_its_metadata(checkout_wheel: Path) -> None:
    assert_carries_the_license(checkout_wheel)


def test_the_crawler_wheel_carries_the_same_license(tmp_path: Path) -> None:
    source = tmp_path / "crawler"
    shutil.copytree(REPO_ROOT / "crawler", source, ignore=shutil.ignore_patterns(
        "__pycache__", "*.pyc", "*.egg-info", "tests", "sql_tests", "sqitch"))
    assert_carries_the_license(build_wheel(source, tmp_path / "dist"))


# A user's module on the public surface: a handler, an enqueue through Client, a Task's fields.
TYPED_USE = """
    from datetime import datetime
    from typing import Any

    import psycopg

    from pyworker import Client, Completion, PermanentError, Task, TaskInfo, handler


    @handler("send_welcome")
    def send_welcome(task: Task) -> dict[str, Any]:
        if task.attempt > 3:
            raise PermanentError("gave up")
        created: datetime = task.created_at
        return {"to": task.payload["email"], "created": created.isoformat(), "store": task.dispensary_id}


    @handler("send_digest")
    async def send_digest(task: Task) -> Completion:
        return Completion(follow_ups=[{"role": "send_welcome", "payload": task.payload}])


    def signup(conn: psycopg.Connection[Any], email: str) -> int:
        client = Client(conn)
        info: TaskInfo = client.enqueue("send_welcome", {"email": email}, priority=5)
        client.wait(info, timeout=10.0)
        return info.id
"""

# Wrong uses, each on its own line, that mypy must catch: were the names Any, it would pass them.
WRONG_USES = {
    "enqueue_priority_not_an_int": 'Client.connect("postgresql://").enqueue("send_welcome", priority="high")',
    "task_field_of_another_type": "handled: str = Task.from_row({}).attempt",
    "decorated_function_keeps_its_return_type": "welcome: int = send_welcome(Task.from_row({}))",
    "a_handler_takes_a_task": 'handler("send_text")(str.upper)',
}


def run_mypy(wheel_home: Path, module: Path) -> subprocess.CompletedProcess[str]:
    """mypy --strict on `module`, against the packages of the installed wheel's venv."""
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(module.parent / ".mypy"),
         "--python-executable", str(wheel_home / "venv" / "bin" / "python"), str(module)],
        cwd=module.parent, capture_output=True, text=True, timeout=300,
    )


def test_a_user_module_on_the_public_names_passes_mypy_strict(wheel_home: Path, tmp_path: Path) -> None:
    module = tmp_path / "myapp_tasks.py"
    module.write_text(textwrap.dedent(TYPED_USE))
    result = run_mypy(wheel_home, module)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_catches_each_wrong_use_of_the_public_names(wheel_home: Path, tmp_path: Path) -> None:
    module = tmp_path / "myapp_wrong.py"
    lines = textwrap.dedent(TYPED_USE).splitlines()
    first = len(lines) + 1
    module.write_text("\n".join([*lines, *WRONG_USES.values()]) + "\n")
    result = run_mypy(wheel_home, module)
    assert result.returncode == 1, result.stdout + result.stderr
    flagged = {int(line.split(":")[1]) for line in result.stdout.splitlines() if ": error:" in line}
    missed = [name for line, name in enumerate(WRONG_USES, first) if line not in flagged]
    assert not missed, result.stdout
    assert flagged <= set(range(first, first + len(WRONG_USES))), result.stdout
