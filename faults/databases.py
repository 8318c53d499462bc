"""Scenario databases for `python -m faults`: the plan deployed once into a template, a copy each.

(Under pytest, tests/test_faults.py takes its copies from the suite's own template fixture.)
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql

from faults.harness import REPO_ROOT, ScenarioError
from pyworker.config import database_url_for

TEMPLATE = "taskpool_faults_template"
PREFIX = "taskpool_faults_"


def _admin(server: str) -> psycopg.Connection:
    return psycopg.connect(server, autocommit=True, connect_timeout=10)


def _drop(admin: psycopg.Connection, name: str) -> None:
    admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def deploy_template(server: str) -> str:
    """Deploy the core's and the crawler's Sqitch plans into a fresh TEMPLATE database; its name."""
    if not server.startswith(("postgresql://", "postgres://")):
        raise ScenarioError("python -m faults needs DATABASE_URL as a postgresql:// URL")
    sqitch = shutil.which("sqitch")
    if sqitch is None:
        raise ScenarioError("sqitch is not installed: run `make deps`")
    with _admin(server) as admin:
        _drop(admin, TEMPLATE)
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE)))
    target = "db:pg:" + database_url_for(server, TEMPLATE).split(":", 1)[1]
    env = {key: value for key, value in os.environ.items() if key != "SQITCH_TARGET"}
    # The core's project, then the crawler's: the scenarios run the crawler's default schedules.
    for project in (REPO_ROOT, REPO_ROOT / "crawler" / "sqitch"):
        done = subprocess.run(
            [sqitch, "deploy", "--verify", target], cwd=project, env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise ScenarioError(f"sqitch deploy of {project} into {TEMPLATE} failed:\n{done.stdout}{done.stderr}")
    with _admin(server) as admin:
        # Nobody may stay connected to a template (a pg_cron job scheduled into it would).
        admin.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(sql.Identifier(TEMPLATE)))
    return TEMPLATE


def drop_template(server: str) -> None:
    with _admin(server) as admin:
        _drop(admin, TEMPLATE)


@contextmanager
def scenario_database(server: str, number: int) -> Iterator[str]:
    """The URL of a fresh copy of the template for scenario `number`, dropped afterwards."""
    name = f"{PREFIX}{number}_{secrets.token_hex(3)}"
    with _admin(server) as admin:
        admin.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(TEMPLATE))
        )
    try:
        yield database_url_for(server, name)
    finally:
        with _admin(server) as admin:
            _drop(admin, name)
