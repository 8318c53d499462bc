"""scripts/pgenv: DATABASE_URL read by libpq itself (psycopg's conninfo_to_dict) into the PG*
variables psql, Sqitch and the Makefile's other tools read; a URL libpq refuses stops it, saying
why without the password, and runs nothing."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict

from core_fixtures import REPO_ROOT
from testkit.ports import free_port

PGENV = REPO_ROOT / "scripts" / "pgenv"


def pgenv(url: str, *args: str, password: str | None = None) -> subprocess.CompletedProcess[str]:
    """pgenv run with DATABASE_URL `url` and no PG* variable inherited (but PGPASSWORD, if given)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    if password is not None:
        environment["PGPASSWORD"] = password
    return subprocess.run(
        [str(PGENV), *args],
        env={**environment, "DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=60,
    )


def printed(url: str, *args: str) -> dict[str, str]:
    """The variables `pgenv --print` exports, read back as a shell reads them."""
    result = pgenv(url, *args, "--print")
    assert result.returncode == 0, result.stderr
    variables = {}
    for line in result.stdout.splitlines():
        export, assignment = line.split(" ", 1)
        assert export == "export"
        name, _, quoted = assignment.partition("=")
        (variables[name],) = shlex.split(quoted) or [""]
    return variables


def test_a_password_with_at_and_percent_signs_is_percent_decoded() -> None:
    url = "postgresql://app%40ops:p%40ss%25w0rd@db.example.test:6432/app%20db"
    assert printed(url) == {
        "PGUSER": "app@ops",
        "PGPASSWORD": "p@ss%w0rd",
        "PGHOST": "db.example.test",
        "PGPORT": "6432",
        "PGDATABASE": "app db",
        "DATABASE_URL": url,
        "SQITCH_TARGET": "db:pg://app%40ops:p%40ss%25w0rd@db.example.test:6432/app%20db",
    }


def test_a_unix_socket_directory_as_host_or_as_query_option() -> None:
    assert printed("postgresql://%2Fvar%2Frun%2Fpostgresql/app")["PGHOST"] == "/var/run/postgresql"
    assert printed("postgresql:///app?host=/tmp/pg&port=5433") == {
        "PGHOST": "/tmp/pg",
        "PGPORT": "5433",
        "PGDATABASE": "app",
        "DATABASE_URL": "postgresql:///app?host=/tmp/pg&port=5433",
        "SQITCH_TARGET": "db:pg:///app?host=/tmp/pg&port=5433",
    }


def test_a_multi_host_url_keeps_hosts_and_ports_in_step() -> None:
    variables = printed("postgres://[::1]:5433,replica.example.test,10.0.0.3:5435/app")
    assert (variables["PGHOST"], variables["PGPORT"]) == ("::1,replica.example.test,10.0.0.3", "5433,,5435")


def test_query_options_become_their_libpq_variables() -> None:
    variables = printed(
        "postgresql://h/app?sslmode=require&application_name=mig%20job&options=-c%20statement_timeout%3D5s"
    )
    assert variables["PGSSLMODE"] == "require"
    assert variables["PGAPPNAME"] == "mig job"
    assert variables["PGOPTIONS"] == "-c statement_timeout=5s"


def test_the_command_reaches_the_server_past_a_dead_first_host_with_the_url_s_options(db_url: str) -> None:
    params = conninfo_to_dict(db_url)
    host, port = params.get("host", "127.0.0.1"), params.get("port", "5432")
    authority = f"{params['user']}@" if params.get("user") else ""
    url = (
        f"postgresql://{authority}127.0.0.1:{free_port()},{host}:{port}/{params['dbname']}"
        "?options=-c%20statement_timeout%3D4321&connect_timeout=5"
    )
    query = "SELECT current_database() || ' ' || current_setting('statement_timeout')"
    result = pgenv(url, "psql", "-XAtc", query, password=params.get("password"))
    assert (result.returncode, result.stdout.strip()) == (0, f"{params['dbname']} 4321ms"), result.stderr


def test_d_names_another_database_everywhere() -> None:
    variables = printed("postgresql://u@h:5/app?sslmode=prefer", "-d", "other db")
    assert variables["PGDATABASE"] == "other db"
    assert variables["DATABASE_URL"] == "postgresql://u@h:5/other%20db?sslmode=prefer"
    assert variables["SQITCH_TARGET"] == "db:pg://u@h:5/other%20db?sslmode=prefer"


def test_a_url_libpq_refuses_runs_nothing_and_keeps_the_password_out_of_its_message(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    for url, problem in (
        ("postgresql://u:s3cr%zzet@h/app", "invalid percent-encoded token"),
        ("postgresql://u:s3cret@[::1/app", "IPv6 host address"),
        ("postgresql://u:s3cret@h/app?colour=blue", 'invalid URI query parameter: "colour"'),
        ("postgresql://u:s3cret@h/app?keepalives=1", "'keepalives', which no libpq environment variable carries"),
        ("mysql://u:s3cret@h/app", "is not a postgresql://"),
    ):
        result = pgenv(url, "touch", str(ran))
        assert result.returncode == 2, (url, result)
        assert result.stderr.startswith("pgenv: ") and problem in result.stderr, (url, result.stderr)
        assert "s3cr" not in result.stderr, result.stderr
        assert not ran.exists()
