"""The server under test, its databases' URLs, and the libpq environment for subprocesses."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

from pyworker.admin.schema import database_url_for
from pyworker.testing.database import LIBPQ_ENV, libpq_env

REPO_ROOT = Path(__file__).resolve().parent.parent

__all__ = ["LIBPQ_ENV", "REPO_ROOT", "libpq", "project_cluster_url", "server_url", "sqitch_target", "url_for"]


def project_cluster_url(environ: Mapping[str, str] = os.environ) -> str:
    """The cluster `make db` starts (scripts/cluster), postgresql://postgres@127.0.0.1:55432/taskpool,
    less each part that the libpq environment sets (PGUSER, PGHOST or PGHOSTADDR, PGPORT,
    PGDATABASE; PGSERVICE sets them all): after `export PGPORT=55433` the tests, the bench and
    make talk to the same server. The development default only: the installed pyworker leaves
    it all to libpq (pyworker.config.default_database_url)."""
    if environ.get("PGSERVICE"):
        return "postgresql://"
    user = "" if environ.get("PGUSER") else "postgres@"
    host = "" if environ.get("PGHOST") or environ.get("PGHOSTADDR") else "127.0.0.1"
    port = "" if environ.get("PGPORT") else ":55432"
    dbname = "" if environ.get("PGDATABASE") else "/taskpool"
    return f"postgresql://{user}{host}{port}{dbname}"


def server_url() -> str:
    """The server to test against: $DATABASE_URL, else the project cluster."""
    return os.environ.get("DATABASE_URL") or project_cluster_url()


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
