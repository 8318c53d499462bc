"""Deadlines: no connect and no call waits on the database longer than it should.

A server that is frozen (SIGSTOP, a hung host, a network that drops everything) answers neither
a query nor a cancel, and the kernel of a frozen server's host still acknowledges what is sent to
it: statement_timeout, TCP keepalives and tcp_user_timeout do not end a call blocked on it. So:

- every connection pyworker opens gets libpq's `connect_timeout`, TCP keepalives and
  `tcp_user_timeout` (connection_options), unless its URL sets them: a peer that vanished (a lost
  node, a cut network) is noticed by the kernel within about 25 s;
- every call on it has a client-side deadline (CallDeadline): a process-wide watchdog thread
  looks at the armed deadlines a few times a second and, past one, asks the server to cancel
  the statement (briefly: a frozen server never answers) and shuts the call's socket down from
  outside (the blocked call fails at once, as on a lost connection). The caller turns that into DatabaseUnavailable and connects again with
  backoff, as for any lost connection;
- a cut makes the process's other connections to the same server suspect (CallDeadline.suspect)
  until they answer again: a Database connects again before its next call rather than wait out
  a deadline of its own on a server that is likely frozen for all of them (a worker's recorder,
  idle through the freeze, would otherwise find out one deadline after its dispatcher did);
- a cut also puts that server last in the host list of a multi-host URL for the process's next
  connects (connection_options rewrites the host, hostaddr and port lists), for
  SUSPECT_SERVER_SECONDS: libpq tries the hosts in order, each for connect_timeout, so a reconnect
  would otherwise wait out the frozen primary before reaching the one promoted in its place. The
  frozen server is still tried, last, when the others fail;
- a call that has waited LEAD_CHECK_AFTER_SECONDS on a server named in a multi-host URL makes the
  watchdog ask, in a thread of its own, whether another server of that URL takes writes: once one
  does (the HA manager promoted it in place of a frozen primary), the calls still waiting on the
  old server are cut at once, without waiting out their deadline. A slow primary is not cut: its
  replicas refuse a read-write session. So a frozen primary costs the fleet the failover's time
  plus about a second, whatever the deadline.

Arming a deadline costs a clock read and a few attribute accesses per call, no round trip and no
lock: the watchdog, not the caller, does the looking.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from pyworker.environment import lookup

# The environment variable of a call's deadline, in seconds (the worker's --call-timeout-seconds).
CALL_TIMEOUT_ENVVAR = "TASKPOOL_CALL_TIMEOUT_SECONDS"
# A call's deadline: longer than any call the worker, the scheduler, the dashboard or the client
# makes on a healthy server, short enough that a frozen primary costs the fleet the HA manager's
# failover time plus this (Patroni's default TTL is 30 s; a promotion takes about 20 s).
DEFAULT_CALL_TIMEOUT = 20.0
# libpq's connect_timeout (per host of a multi-host URL; libpq takes 2 s at least).
DEFAULT_CONNECT_TIMEOUT = 10
# TCP keepalives on an idle connection: the first probe after 10 s of silence, then one every 5 s,
# the peer declared dead after 3 unanswered; tcp_user_timeout bounds how long data sent may stay
# unacknowledged before the kernel drops the connection.
KEEPALIVES_IDLE = 10
KEEPALIVES_INTERVAL = 5
KEEPALIVES_COUNT = 3
TCP_USER_TIMEOUT_MS = 20_000
# A readiness probe's check (/readyz of a worker, of the dashboard) answers within this many
# seconds, connecting with libpq's shortest connect_timeout: Kubernetes' probes here time out at 5 s.
PROBE_TIMEOUT_SECONDS = 3.0
PROBE_CONNECT_TIMEOUT = 2
# How long a server a call was cut on stays last in a multi-host URL's host list: longer than an
# HA manager's failover (Patroni's TTL is 30 s), short enough that a server that thawed and took
# the lead back is soon tried first again (it is tried anyway when the others fail).
SUSPECT_SERVER_SECONDS = 120.0
# How long a call waits on a server of a multi-host URL before the watchdog asks whether another
# server of the URL takes writes (a healthy call ends well within it), and how often it asks
# again while calls wait; the question connects with libpq's shortest connect_timeout.
LEAD_CHECK_AFTER_SECONDS = 3.0
LEAD_CHECK_INTERVAL_SECONDS = 1.0
LEAD_CHECK_CONNECT_TIMEOUT = 2
# How often the watchdog looks at the armed deadlines.
WATCHDOG_TICK_SECONDS = 0.25
# How long the watchdog waits for the server to take the cancel of a call past its deadline: a
# live server takes it in a few milliseconds, a frozen one never (and delays the cut this long).
CANCEL_TIMEOUT_SECONDS = 0.5


# When a call on a connection to each server (host, port) was last cut at its deadline
# (time.monotonic()): written by the watchdog, read by the callers, one atomic dict access each.
_last_cut: dict[tuple[str, str], float] = {}
# For each server named in a multi-host URL this process connects with, that URL (conninfo
# parameters): where the watchdog looks for the server that took the lead from it.
_multi_host_urls: dict[tuple[str, str], dict[str, Any]] = {}
# When another server of its URL was found taking writes while calls waited on a server, and
# which one: the watchdog cuts the calls armed on the server before that time.
_lead_taken: dict[tuple[str, str], tuple[float, tuple[str, str]]] = {}


def default_call_timeout(environ: Mapping[str, str] = os.environ) -> float | None:
    """A call's deadline in seconds: TASKPOOL_CALL_TIMEOUT_SECONDS, else DEFAULT_CALL_TIMEOUT; 0
    there means none. ValueError naming the variable for a value that is no number of seconds."""
    text = (lookup(CALL_TIMEOUT_ENVVAR, environ) or "").strip()
    if not text:
        return DEFAULT_CALL_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        raise ValueError(f"{CALL_TIMEOUT_ENVVAR} must be a number of seconds, not {text!r}") from None
    if not 0 <= seconds < float("inf"):
        raise ValueError(f"{CALL_TIMEOUT_ENVVAR} must be 0 (no deadline) or more seconds, not {text!r}")
    return seconds or None


def connection_options(url: str, *, connect_timeout: int = DEFAULT_CONNECT_TIMEOUT) -> dict[str, Any]:
    """psycopg.connect's keyword arguments for connect_timeout, TCP keepalives and
    tcp_user_timeout, leaving out each that `url` (a URL or key=value string) sets itself, and
    connect_timeout when PGCONNECT_TIMEOUT does: the user's word wins."""
    given = conninfo_to_dict(url)
    options: dict[str, Any] = {
        "connect_timeout": max(2, connect_timeout),
        "keepalives": 1,
        "keepalives_idle": KEEPALIVES_IDLE,
        "keepalives_interval": KEEPALIVES_INTERVAL,
        "keepalives_count": KEEPALIVES_COUNT,
        "tcp_user_timeout": TCP_USER_TIMEOUT_MS,
    }
    if os.environ.get("PGCONNECT_TIMEOUT"):
        options.pop("connect_timeout")
    columns = _server_columns(given)
    if columns:
        for server in _servers(columns):
            _multi_host_urls[server] = given
    return {name: value for name, value in options.items() if name not in given} | suspect_servers_last(given)


def _server_columns(params: Mapping[str, Any]) -> dict[str, list[str]]:
    """The host, hostaddr and port lists of a multi-host conninfo (`params`, as conninfo_to_dict
    gives it), each as long as the list of servers; {} for one server, or lists libpq would refuse."""
    names = ("host", "hostaddr", "port")
    lists = {name: str(params[name]).split(",") for name in names if params.get(name)}
    count = max((len(values) for values in lists.values()), default=0)
    if count < 2:
        return {}
    # libpq's rule: one port (or hostaddr) for all the hosts, or one per host.
    columns = {name: values * count if len(values) == 1 else values for name, values in lists.items()}
    if any(len(values) != count for values in columns.values()):
        return {}
    return columns


def _servers(columns: Mapping[str, list[str]]) -> list[tuple[str, str]]:
    """The (host, port) of each server of _server_columns' lists, as server_of names them."""
    count = len(next(iter(columns.values())))
    hosts = [h or a for h, a in zip(columns.get("host", [""] * count), columns.get("hostaddr", [""] * count))]
    default_port = os.environ.get("PGPORT") or "5432"
    return [(host, port or default_port) for host, port in zip(hosts, columns.get("port", [""] * count))]


def suspect_servers_last(params: Mapping[str, Any]) -> dict[str, str]:
    """The host, hostaddr and port lists of a multi-host conninfo (`params`, as conninfo_to_dict
    gives it) with the servers a call was cut on in the last SUSPECT_SERVER_SECONDS moved last,
    the others in their order; {} when nothing moves (one host, or no suspect among them)."""
    columns = _server_columns(params)
    if not columns:
        return {}
    cut_since = time.monotonic() - SUSPECT_SERVER_SECONDS
    suspect = [_last_cut.get(server, 0.0) > cut_since for server in _servers(columns)]
    order = sorted(range(len(suspect)), key=suspect.__getitem__)
    if order == list(range(len(suspect))):
        return {}
    return {name: ",".join(values[index] for index in order) for name, values in columns.items()}


def other_server_taking_writes(
    params: Mapping[str, Any], server: tuple[str, str], backend_pid: int
) -> tuple[str, str] | None:
    """The server of the multi-host conninfo `params`, other than `server`, that takes writes
    now (a read-write session there), or None: none answers as one within libpq's shortest
    connect_timeout each, or the one that does runs `backend_pid`, a backend of `server`'s (the
    URL names one server twice, by two names)."""
    columns = _server_columns(params)
    others = [index for index, each in enumerate(_servers(columns)) if each != server] if columns else []
    if not others:
        return None
    conninfo = {**params, **{name: ",".join(values[i] for i in others) for name, values in columns.items()}}
    conninfo |= {
        "target_session_attrs": "read-write",
        "connect_timeout": LEAD_CHECK_CONNECT_TIMEOUT,
        "application_name": "pyworker lead check",
    }
    try:
        with psycopg.connect(**conninfo, autocommit=True) as conn:
            found = server_of(conn)
            with bounded(CallDeadline(conn, LEAD_CHECK_CONNECT_TIMEOUT)):
                row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [backend_pid]).fetchone()
    except psycopg.Error:
        return None
    return found if found != server and row is not None and row[0] == 0 else None


class CallDeadline:
    """The deadline of the calls on one connection (sync or async): arm() before a call, disarm()
    after it. Past the deadline the watchdog cuts the connection (shuts its socket down, asks the
    server to cancel): the call fails, and `passed` says why."""

    def __init__(self, conn: psycopg.Connection | psycopg.AsyncConnection, seconds: float) -> None:
        self.seconds = seconds
        self._conn = weakref.ref(conn)
        # time.monotonic() of the armed call's deadline, None between calls: written by the
        # caller, read by the watchdog, each a single atomic attribute access.
        self._until: float | None = None
        self.passed = False
        # What ended the call when `passed`: another server of the URL took the lead, or None.
        self.replaced_by: tuple[str, str] | None = None
        self._server = server_of(conn)
        self._backend_pid = conn.pgconn.backend_pid
        # When the server last answered on this connection (it was opened just before).
        self._answered = time.monotonic()
        _watchdog.watch(self)

    @property
    def suspect(self) -> bool:
        """A call on another connection to this server was cut at its deadline since the server
        last answered on this one: this one most likely waits on the same frozen server."""
        return _last_cut.get(self._server, 0.0) > self._answered

    def arm(self) -> float | None:
        """A call begins: it must end within this deadline's seconds. Returns what disarm() takes:
        the deadline of an enclosing block (a transaction), if any, which holds again after."""
        enclosing = self._until
        self._until = time.monotonic() + self.seconds
        return enclosing

    def disarm(self, enclosing: float | None = None) -> None:
        """A call ended: with an answer, an error, or cut (then `passed` says so)."""
        self._until = enclosing
        self._answered = time.monotonic()

    @property
    def reason(self) -> str:
        """Why the watchdog cut the call (once `passed`), for the caller's error."""
        if self.replaced_by is not None:
            host, port = self.replaced_by
            return (
                f"the database stopped answering and another server of the URL ({host}:{port}) takes"
                " writes (a failover): the connection was cut"
            )
        return f"the database did not answer within {self.seconds:g} s (the call's deadline): its connection was cut"

    def _expired(self, now: float) -> bool:
        until = self._until
        return until is not None and now >= until and not self.passed

    def _waited(self, now: float) -> float:
        """How long the armed call (or block) has waited; 0 when none is armed."""
        until = self._until
        return 0.0 if until is None else now - (until - self.seconds)

    def _cut(self) -> None:
        """Past the deadline: ask the server to cancel the statement (it may be alive and merely
        slow, and would run it on; a frozen one costs the cancel's short timeout), then shut the
        socket down: the blocked call fails at once. The caller's error says so
        (DatabaseUnavailable naming the deadline), and is what gets logged."""
        # Before the cancel: the caller may wake on the cancel's error first.
        self.passed = True
        _last_cut[self._server] = time.monotonic()
        conn = self._conn()
        if conn is None or conn.closed:
            return
        if isinstance(conn, psycopg.Connection):
            try:
                conn.cancel_safe(timeout=CANCEL_TIMEOUT_SECONDS)
            except (psycopg.Error, OSError):
                pass
        shut_down_socket(conn)


class _Watchdog:
    """One daemon thread per process that cuts the calls past their deadline, and those waiting
    on a server another server of its multi-host URL took the lead from."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._deadlines: weakref.WeakSet[CallDeadline] = weakref.WeakSet()
        self._thread: threading.Thread | None = None
        # When the lead of each server was last asked about; the servers being asked about now.
        self._lead_asked: dict[tuple[str, str], float] = {}
        self._lead_asking: set[tuple[str, str]] = set()

    def watch(self, deadline: CallDeadline) -> None:
        with self._lock:
            self._deadlines.add(deadline)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="deadline-watchdog", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(WATCHDOG_TICK_SECONDS)
            with self._lock:
                deadlines = list(self._deadlines)
            now = time.monotonic()
            waiting: dict[tuple[str, str], int] = {}
            for deadline in deadlines:
                taken = _lead_taken.get(deadline._server)
                if deadline._expired(now):
                    deadline._cut()
                elif taken is not None and deadline._waited(now) > max(0.0, now - taken[0]):
                    deadline.replaced_by = taken[1]
                    deadline._cut()
                elif deadline._waited(now) >= LEAD_CHECK_AFTER_SECONDS and deadline._server in _multi_host_urls:
                    waiting[deadline._server] = deadline._backend_pid
            del deadlines
            for server, backend_pid in waiting.items():
                self._ask_about_lead(server, backend_pid, now)

    def _ask_about_lead(self, server: tuple[str, str], backend_pid: int, now: float) -> None:
        """Ask, in a thread of its own (a connect may wait), whether another server of `server`'s
        URL takes writes, at most once a LEAD_CHECK_INTERVAL_SECONDS."""
        if server in self._lead_asking or now - self._lead_asked.get(server, 0.0) < LEAD_CHECK_INTERVAL_SECONDS:
            return
        self._lead_asked[server] = now
        self._lead_asking.add(server)

        def ask() -> None:
            try:
                asked_at = time.monotonic()
                found = other_server_taking_writes(_multi_host_urls[server], server, backend_pid)
                if found is not None:
                    _lead_taken[server] = (asked_at, found)
            finally:
                self._lead_asking.discard(server)

        threading.Thread(target=ask, name="deadline-lead-check", daemon=True).start()


_watchdog = _Watchdog()


@contextmanager
def bounded(deadline: CallDeadline | None) -> Iterator[None]:
    """The calls of the block, all together, end within `deadline` (None: no deadline)."""
    if deadline is None:
        yield
        return
    enclosing = deadline.arm()
    try:
        yield
    finally:
        deadline.disarm(enclosing)


def server_of(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> tuple[str, str]:
    """The host and port the connection reached (of a multi-host URL, the one that answered)."""
    pgconn = conn.pgconn
    return (pgconn.host or b"").decode(), (pgconn.port or b"").decode()


def shut_down_socket(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> None:
    """Shut the connection's socket down from outside: whatever call blocks on it fails at once,
    as on a lost connection, and the connection is broken for good."""
    try:
        dup = socket.socket(fileno=os.dup(conn.pgconn.socket))
    except (psycopg.Error, OSError):
        return
    try:
        dup.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        dup.close()
