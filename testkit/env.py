"""The server under test, its databases' URLs, and the libpq environment for subprocesses."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from pyworker.config import database_url_for, default_database_url
from pyworker.testing.database import LIBPQ_ENV, libpq_env

REPO_ROOT = Path(__file__).resolve().parent.parent

__all__ = ["LIBPQ_ENV", "REPO_ROOT", "libpq", "server_url", "sqitch_target", "url_for"]


def server_url() -> str:
    """The server to test against: $DATABASE_URL, else the project cluster as the libpq
    environment (PGPORT, ...) amends it."""
    return os.environ.get("DATABASE_URL") or default_database_url()


# The same server, user and options as a URL (or key=value string), another database; and
# os.environ plus the PG* variables that point libpq tools (sqitch, psql, pgbench) at a database.
url_for = database_url_for
libpq = libpq_env


def sqitch_target(url: str, dbname: str) -> str:
    """The db:pg: URI Sqitch wants for `dbname` on `url`'s server (with libpq(url, dbname) as its
    environment, where `url` is a key=value string that has no URI form)."""
    if url.startswith(("postgresql://", "postgres://")):
        return "db:pg:" + url_for(url, dbname).split(":", 1)[1]
    return "db:pg:///" + quote(dbname, safe="")
