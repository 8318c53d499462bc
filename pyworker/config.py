"""Worker settings, from the command line or the environment (the CLI resolves which)."""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from psycopg.conninfo import make_conninfo

from pyworker import logs


def default_database_url(environ: Mapping[str, str] = os.environ) -> str:
    """The database to use when no DATABASE_URL is given: the project cluster's
    (postgresql://postgres@127.0.0.1:55432/taskpool), less each part that the libpq environment
    sets (PGUSER, PGHOST or PGHOSTADDR, PGPORT, PGDATABASE; PGSERVICE sets them all), so that
    libpq takes that part from the environment as every PostgreSQL tool does."""
    if environ.get("PGSERVICE"):
        return "postgresql://"
    user = "" if environ.get("PGUSER") else "postgres@"
    host = "" if environ.get("PGHOST") or environ.get("PGHOSTADDR") else "127.0.0.1"
    port = "" if environ.get("PGPORT") else ":55432"
    dbname = "" if environ.get("PGDATABASE") else "/taskpool"
    return f"postgresql://{user}{host}{port}{dbname}"


def database_url_for(url: str, dbname: str) -> str:
    """The same server, user and options as `url` (a URL or a key=value string), another database."""
    if "://" in url:
        # Not urlunsplit(): it drops the "//" of an empty host (postgresql:///db?host=/socket).
        parts = urlsplit(url)
        # A dbname query parameter would override the path: drop it.
        params = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "dbname"]
        query = f"?{urlencode(params, safe='/', quote_via=quote)}" if params else ""
        return f"{parts.scheme}://{parts.netloc}/{quote(dbname, safe='')}{query}"
    return make_conninfo(url, dbname=dbname)


def default_worker_id() -> str:
    """host-pid-random: unique across restarts and hosts, readable in logs."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


@dataclass(frozen=True)
class WorkerConfig:
    database_url: str
    role: str
    worker_id: str = field(default_factory=default_worker_id)
    poll_interval: float = 5.0
    heartbeat_interval: float = 30.0
    handler_modules: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    log_format: str = "text"
    log_level: str = "info"
    shutdown_grace: float = 30.0
    prefetch: int = 1
    concurrency: int = 1

    def __post_init__(self) -> None:
        if self.poll_interval <= 0:
            raise ValueError(f"the poll interval must be positive, not {self.poll_interval} s")
        if self.heartbeat_interval <= 0:
            raise ValueError(
                f"the heartbeat interval must be positive, not {self.heartbeat_interval} s"
            )
        if self.shutdown_grace < 0:
            raise ValueError(f"the shutdown grace must be 0 or more, not {self.shutdown_grace} s")
        if not 1 <= self.prefetch <= 1000:
            raise ValueError(f"the prefetch must be 1 to 1000 tasks, not {self.prefetch}")
        if not 1 <= self.concurrency <= 1000:
            raise ValueError(f"the concurrency must be 1 to 1000 tasks, not {self.concurrency}")
        if self.log_format not in logs.FORMATS:
            raise ValueError(f"the log format must be one of {', '.join(logs.FORMATS)}, not {self.log_format!r}")
        if self.log_level not in logs.LEVELS:
            raise ValueError(f"the log level must be one of {', '.join(logs.LEVELS)}, not {self.log_level!r}")
