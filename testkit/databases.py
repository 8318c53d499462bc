"""Databases on the server under test: the plan deployed once into a template, a copy each.

Built on pyworker.testing.database (the `taskpool` fixture's Template), which shipped first:
this adds fixed names, the harness's own setup of the template, and copies that drop themselves.
Its failures are pyworker.testing.database.TestDatabaseError (DatabaseError here).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from pyworker.testing.database import (
    Template,
    connect_admin,
    create_database,
    drop_database,
    insert_role,
)
from pyworker.testing.database import TestDatabaseError as DatabaseError
from testkit.env import REPO_ROOT

__all__ = [
    "DatabaseError",
    "Template",
    "admin",
    "copy",
    "create",
    "drop",
    "empty",
    "insert_role",
    "template",
]


def admin(server: str) -> psycopg.Connection:
    """An autocommit connection to `server`'s own database, for CREATE and DROP DATABASE."""
    return connect_admin(server)


def create(server: str, name: str, template: str | None = None) -> str:
    """(Re)create `name` on `server`, empty or as a copy of `template`; its URL."""
    drop(server, name)
    return create_database(server, name, template=template)


def drop(server: str, name: str) -> None:
    """Drop `name` if it exists, terminating its sessions first."""
    drop_database(server, name)


def template(
    server: str, name: str, setup: Callable[[str], None] | None = None, project: Path = REPO_ROOT
) -> Template:
    """The plan of `project` (this checkout) deployed (`sqitch deploy --verify`) into a fresh
    database `name` on `server`, `setup(url)` run in it, then closed to connections, ready to copy."""
    made = Template(server, project, name=name, verify=True)
    made.create(setup)
    return made


@contextmanager
def copy(server: str, template: str, name: str) -> Iterator[str]:
    """The URL of `name`, a fresh copy of the database `template` on `server`, dropped afterwards."""
    url = create(server, name, template)
    try:
        yield url
    finally:
        drop(server, name)


@contextmanager
def empty(server: str, name: str) -> Iterator[str]:
    """The URL of a new empty database `name` (no schema) on `server`, dropped afterwards."""
    url = create(server, name)
    try:
        yield url
    finally:
        drop(server, name)

