"""One version, stated once: pyworker.__version__, which pyproject.toml reads and pip records;
`pyworker --version` prints it, `pyworker version` adds the schema version pyworker needs and
the database's."""

from __future__ import annotations

import importlib.metadata
import json
import tomllib

import psycopg
from click.testing import CliRunner
from core_fixtures import REPO_ROOT

from pyworker import __version__
from pyworker.admin import cli
from pyworker.db import REQUIRED_SCHEMA_VERSION

REQUIRED = ".".join(map(str, REQUIRED_SCHEMA_VERSION))


def test_pyproject_takes_its_version_from_pyworker() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "pyworker.__version__"}
    assert importlib.metadata.version("taskpool-pg") == __version__, "reinstall: make deps"


def test_version_option_prints_the_package_version_without_a_database() -> None:
    result = CliRunner().invoke(
        cli.main, ["--database-url", "postgresql://postgres@127.0.0.1:1/nowhere", "--version"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == f"pyworker {__version__}\n"


def test_version_shows_the_schema_required_and_the_database_schema(
    conn: psycopg.Connection, db_url: str
) -> None:
    (schema,) = conn.execute("SELECT taskpool_schema_version()").fetchone()
    (dbname,) = conn.execute("SELECT current_database()").fetchone()

    text = CliRunner().invoke(cli.main, ["--database-url", db_url, "version"])
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert lines[0] == f"pyworker {__version__}"
    assert lines[1] == f"schema required: {REQUIRED} or a later {REQUIRED_SCHEMA_VERSION[0]}.x"
    assert lines[2].startswith(f"database: {dbname} on ") and lines[2].endswith(f", schema {schema}")

    as_json = CliRunner().invoke(cli.main, ["--database-url", db_url, "version", "--json"])
    assert as_json.exit_code == 0, as_json.output
    report = json.loads(as_json.stdout)
    assert report["database"].startswith(f"{dbname} on ")
    assert {k: v for k, v in report.items() if k != "database"} == {
        "pyworker": __version__,
        "required_schema": REQUIRED,
        "database_schema": schema,
        "problem": None,
    }


def test_version_says_what_to_run_against_a_database_without_the_schema(empty_db_url: str) -> None:
    result = CliRunner().invoke(cli.main, ["--database-url", empty_db_url, "version"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == f"pyworker {__version__}"
    assert "no taskpool schema: install it with `pyworker schema apply`" in result.stdout


def test_version_says_when_the_database_does_not_answer() -> None:
    result = CliRunner().invoke(
        cli.main, ["--database-url", "postgresql://postgres@127.0.0.1:1/nowhere", "version"]
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:2] == [
        f"pyworker {__version__}",
        f"schema required: {REQUIRED} or a later {REQUIRED_SCHEMA_VERSION[0]}.x",
    ]
    assert lines[2].startswith("database: not reachable: database connection failed:"), lines
