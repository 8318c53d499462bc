"""Without DATABASE_URL, pyworker uses the project cluster, except where the libpq environment
(PGHOST, PGPORT, PGUSER, PGDATABASE, PGSERVICE) says otherwise: after `export PGPORT=55433`,
make and pyworker talk to the same server."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from core_fixtures import database_url, libpq_env
from psycopg.conninfo import conninfo_to_dict

from pyworker import cli
from pyworker.config import default_database_url

PROJECT_CLUSTER = {"host": "127.0.0.1", "port": "55432", "user": "postgres", "dbname": "taskpool"}


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
def test_each_part_the_libpq_environment_sets_is_left_to_it(
    environ: dict[str, str], left_to_libpq: set[str]
) -> None:
    assert conninfo_to_dict(default_database_url(environ)) == {
        key: value for key, value in PROJECT_CLUSTER.items() if key not in left_to_libpq
    }


def test_pyworker_without_database_url_follows_pgport_and_the_other_variables(db_url: str) -> None:
    dbname = conninfo_to_dict(db_url)["dbname"]
    env = {**libpq_env(database_url(), dbname), "DATABASE_URL": None}
    result = CliRunner().invoke(cli.main, ["version"], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[2].startswith(f"database: {dbname} on "), result.stdout
