"""Worker settings, from the command line or the environment (the CLI resolves which)."""

from __future__ import annotations

import os
import re
import secrets
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pyworker import logs
from pyworker.deadlines import DEFAULT_CALL_TIMEOUT


def default_database_url() -> str:
    """The database to use when no DATABASE_URL is given: libpq's own choice, as psql makes it
    (PGHOST, PGPORT, PGUSER, PGDATABASE, PGSERVICE, ..., else the local socket and the login
    name). An empty URL: the environment is read when connecting, never here."""
    return "postgresql://"


def hosts_without_session_attrs(url: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """The hosts `url` names (with the libpq environment) when there are several and it sets no
    target_session_attrs (nor PGTARGETSESSIONATTRS): libpq then takes the first that answers,
    a standby included. None otherwise, or when `url` cannot be read (connecting will say why)."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return None
    if params.get("target_session_attrs") or environ.get("PGTARGETSESSIONATTRS"):
        return None
    hosts = params.get("host") or params.get("hostaddr") or environ.get("PGHOST") or environ.get("PGHOSTADDR") or ""
    return hosts if "," in str(hosts) else None


def read_write_by_default(url: str, environ: Mapping[str, str] = os.environ) -> str:
    """`url` with target_session_attrs=read-write when it names several hosts and sets none:
    a worker's own connections must land on the primary (the user's own setting wins)."""
    if hosts_without_session_attrs(url, environ) is None:
        return url
    return make_conninfo(url, target_session_attrs="read-write")


# The environment variable of `--pooled`; a worker sets it ("1") for its handlers' own connections.
POOLED_ENVVAR = "TASKPOOL_POOLED"


# The worker's id, which a worker also sets for its handlers (and, for those written before 0.7,
# under the old name, WORKER_ID).
WORKER_ID_ENVVAR = "TASKPOOL_WORKER_ID"


def default_worker_id() -> str:
    """host-pid-random: unique across restarts and hosts, readable in logs."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


MAX_CONCURRENCY = 1000
DEFAULT_LOOP_BLOCK_LIMIT = 5.0
DEFAULT_MAX_ABANDONED_THREADS = 32


@dataclass(frozen=True)
class RoleShare:
    """A role a worker serves, and how many of the worker's slots its tasks may take at once
    (None: any free slot)."""

    role: str
    concurrency: int | None = None

    def __str__(self) -> str:
        return self.role if self.concurrency is None else f"{self.role}={self.concurrency}"


def parse_roles(values: Iterable[str]) -> tuple[RoleShare, ...]:
    """The roles of `--role a --role b=4` (or WORKER_ROLE="a b=4", or "a,b=4"): each ROLE or
    ROLE=N, N the most tasks of the role that run at once. ValueError says what is wrong."""
    shares: list[RoleShare] = []
    for value in values:
        for item in re.split(r"[,\s]+", value.strip()):
            if not item:
                continue
            name, equals, number = item.partition("=")
            if not name:
                raise ValueError(f"{item!r} names no role: give ROLE or ROLE=N")
            concurrency = None
            if equals:
                if not number.isdigit() or not 1 <= int(number) <= MAX_CONCURRENCY:
                    raise ValueError(
                        f"the share of role {name!r} must be 1 to {MAX_CONCURRENCY} tasks, not {number!r}"
                    )
                concurrency = int(number)
            if any(share.role == name for share in shares):
                raise ValueError(f"role {name!r} is given more than once")
            shares.append(RoleShare(name, concurrency))
    if not shares:
        raise ValueError("a worker needs at least one role")
    return tuple(shares)


def default_concurrency(roles: Iterable[RoleShare]) -> int:
    """The concurrency of a worker given none: its roles' shares added up, 1 for a role without."""
    return sum(share.concurrency or 1 for share in roles)


@dataclass(frozen=True)
class WorkerConfig:
    """A worker's settings. `roles`: the roles it serves, RoleShares or names (`"a"`, `"a=4"`,
    `("a", "b=4")`), turned into a tuple of RoleShare. `concurrency`: the most tasks that run at
    once, all roles together (None: the shares added up, see default_concurrency).

    `pooled`: database_url goes through a transaction-pooling PgBouncer (docs/pgbouncer.md): no
    prepared statements on it, and no LISTEN on it. `listen_database_url`: where the worker
    LISTENs for wake-ups instead, a session of its own (the server itself, or a session-pooled
    port); None: database_url, unless pooled, when the worker polls."""

    database_url: str
    roles: tuple[RoleShare, ...]
    worker_id: str = field(default_factory=default_worker_id)
    poll_interval: float = 5.0
    heartbeat_interval: float = 30.0
    handler_modules: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    log_format: str = "text"
    log_level: str = "info"
    shutdown_grace: float = 30.0
    prefetch: int = 1
    concurrency: int | None = None
    pooled: bool = False
    listen_database_url: str | None = None
    # Serve /metrics, /healthz and /readyz on this port (0: one the system picks); None: serve nothing.
    metrics_port: int | None = None
    # An async handler that holds the event loop longer than this fails its attempt, and the
    # loop is replaced (docs/worker.md, "A handler that blocks").
    loop_block_limit: float = DEFAULT_LOOP_BLOCK_LIMIT
    # Once this many handler threads are left behind still running, the worker stops claiming
    # and hands back the tasks it has not begun, until one of them returns.
    max_abandoned_threads: int = DEFAULT_MAX_ABANDONED_THREADS
    # Each call of the worker's own connections must end within this many seconds, or its
    # connection is cut and the call retried on a new one (pyworker/deadlines.py); 0: no deadline.
    call_timeout: float = DEFAULT_CALL_TIMEOUT

    def __post_init__(self) -> None:
        roles = self.roles
        if isinstance(roles, (str, RoleShare)):
            roles = (roles,)
        if not roles or not all(isinstance(role, RoleShare) for role in roles):
            roles = parse_roles(str(role) for role in roles)
        object.__setattr__(self, "roles", tuple(roles))
        if self.concurrency is None:
            object.__setattr__(self, "concurrency", default_concurrency(self.roles))
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
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise ValueError(f"the concurrency must be 1 to {MAX_CONCURRENCY} tasks, not {self.concurrency}")
        for share in self.roles:
            if share.concurrency is not None and share.concurrency > self.concurrency:
                raise ValueError(
                    f"the share of role {share.role!r} ({share.concurrency}) is more than the"
                    f" worker's concurrency ({self.concurrency})"
                )
        if self.loop_block_limit <= 0:
            raise ValueError(f"the event loop's block limit must be positive, not {self.loop_block_limit} s")
        if self.max_abandoned_threads < 1:
            raise ValueError(f"the most abandoned threads must be 1 or more, not {self.max_abandoned_threads}")
        if not 0 <= self.call_timeout < float("inf"):
            raise ValueError(f"the call timeout must be 0 (none) or more seconds, not {self.call_timeout}")
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise ValueError(f"the metrics port must be 0 to 65535, not {self.metrics_port}")
        if self.log_format not in logs.FORMATS:
            raise ValueError(f"the log format must be one of {', '.join(logs.FORMATS)}, not {self.log_format!r}")
        if self.log_level not in logs.LEVELS:
            raise ValueError(f"the log level must be one of {', '.join(logs.LEVELS)}, not {self.log_level!r}")

    @property
    def listen_url(self) -> str | None:
        """Where the listener LISTENs; None when the worker can only poll (pooled, no listen URL)."""
        if self.listen_database_url:
            return self.listen_database_url
        return None if self.pooled else self.database_url

    @property
    def role_names(self) -> tuple[str, ...]:
        return tuple(share.role for share in self.roles)

    def share(self, role: str) -> int:
        """How many tasks of the role may run at once."""
        for share in self.roles:
            if share.role == role:
                return share.concurrency or self.concurrency
        raise KeyError(role)
