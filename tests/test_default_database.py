"""Without DATABASE_URL, the installed pyworker leaves the database to libpq, as psql does
(PGHOST, PGPORT, PGUSER, PGDATABASE, PGSERVICE, ..., else the local socket): it never assumes
the development cluster. The checkout's tools (make, the tests, the bench) default to that
cluster instead, amended by the same libpq variables: after `export PGPORT=55433`, make and
the tests talk to the same server."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from core_fixtures import database_url, libpq_env
from psycopg.conninfo import conninfo_to_dict
from testkit.env import project_cluster_url

from pyworker.admin import cli
from pyworker.config import default_database_url

PROJECT_CLUSTER = {"host": "127.0.0.1", "port": "55432", "user": "postgres", "dbname": "taskpool"}


def test_the_installed_default_names_no_server_and_leaves_everything_to_libpq() -> None:
    assert conninfo_to_dict(default_database_url()) == {}


def test_the_cli_help_names_libpq_as_the_default_not_the_project_cluster() -> None:
    result = CliRunner().invoke(cli.main, ["--help"], env={"DATABASE_URL": None}, terminal_width=200)
    assert "libpq's" in result.stdout
    assert "55432" not in result.stdout


def test_the_installed_command_without_database_url_connects_where_pghost_pgport_pgdatabase_say(
    db_url: str,
) -> None:
    dbname = conninfo_to_dict(db_url)["dbname"]
    env = {name: value for name, value in libpq_env(database_url(), dbname).items() if name != "DATABASE_URL"}
    pyworker = os.path.join(os.path.dirname(sys.executable), "pyworker")
    result = subprocess.run(
        [pyworker, "version"], env=env, cwd="/", capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2].startswith(f"database: {dbname} on "), result.stdout


@pytest.mark.parametrize(
    ("environ", "left_to_libpq"),
    [
        ({}, set()),
        ({"PGPORT": "55433"}, {"port"}),
        ({"PGHOST": "/var/run/postgresql"}, {"host"}),
        ({"PGHOSTADDR": "127.0.0.2"}, {"host"}),
        ({"PGUSER": "me", "PGDATABASE": "pool"}, {"user", "dbname"}),
        ({"PGHOST": "db", "PGPORT": "5432", "PGUSER": "me", "PGDATABASE": "pool"}, set(PROJECT_CLUSTER)),
        ({"PGSERVICE": "taskpool"}, set(PROJECT_CLUSTER)),
        ({"PGPORT": ""}, set()),
    ],
)
def test_the_checkouts_tools_default_to_the_project_cluster_less_what_libpq_variables_set(
    environ: dict[str, str], left_to_libpq: set[str]
) -> None:
    assert conninfo_to_dict(project_cluster_url(environ)) == {
        key: value for key, value in PROJECT_CLUSTER.items() if key not in left_to_libpq
    }
