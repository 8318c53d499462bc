"""The handlers' connections: a pool per worker process, one connection per attempt.

A handler that uses the database asks its task (`task.database()`, `task.connection()`): the
attempt borrows a connection from its worker's pool at first use and keeps it for the rest of the
attempt, and gives it back when the attempt ends, rolled back if the handler left a transaction
open. No two attempts ever hold one connection at once, so a transaction holds the statements of
one handler only, whatever else runs in the process. The pool is psycopg's own (psycopg_pool):
it checks a connection before lending it (within BORROW_TIMEOUT_SECONDS: pyworker/deadlines.py), discards one that broke (never lending it again), and
opens the replacements; it holds as many connections as the worker runs tasks at once
(--concurrency), opened when first needed. What a handler leaves in its session (settings,
advisory locks, temporary tables) is discarded as its connection comes back (as DISCARD ALL
does; not through a transaction pooler, where the session is not the connection's).

An attempt abandoned while its handler runs on (past its run timeout and wind-down, or at the end
of the shutdown grace) keeps its connection until the handler returns, its running statement
cancelled, and the pool grows by one meanwhile so that the next attempts never wait for it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
import threading
import weakref
from typing import Any, cast

import psycopg
from psycopg import pq
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool

from pyworker.db import Database, DatabaseT, configure_connection, pooled_connection_options, require_writable
from pyworker.deadlines import CallDeadline, bounded, connection_options, shut_down_socket
from pyworker.errors import TaskpoolError, translate
from pyworker.logs import event

log = logging.getLogger("pyworker")

# How long an attempt waits for a connection (the pool opening one, the database coming back)
# before its call fails with DatabaseUnavailable, which fails the attempt, to be retried.
BORROW_TIMEOUT_SECONDS = 10.0
# How long the dispatcher waits for the server to take the cancel of an abandoned attempt's statement.
CANCEL_TIMEOUT_SECONDS = 1.0
_OPEN_TRANSACTION = (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR)


class AttemptEnded(TaskpoolError):
    """The attempt is over (ended, or abandoned by its worker): its connection is no longer the
    handler's to use."""


class HandlerConnections:
    """A worker process's pool of handler connections (psycopg_pool.ConnectionPool), `size` of
    them at most, each autocommit, with rows as dicts; `pooled`: the URL goes through a
    transaction pooler, so nothing is prepared."""

    def __init__(self, url: str, *, size: int, application_name: str, pooled: bool = False) -> None:
        self.url = url
        self.pooled = pooled
        self.size = size
        self._lock = threading.Lock()
        self._opened = False
        self._closed = False
        # Connections held by abandoned attempts: the pool holds this many more meanwhile.
        self._abandoned = 0
        self._pool = ConnectionPool(
            url,
            min_size=0,
            max_size=size,
            open=False,
            name=application_name,
            timeout=BORROW_TIMEOUT_SECONDS,
            check=_check,
            configure=_configure,
            # Through a transaction pooler a session is not the connection's: nothing to reset.
            reset=None if pooled else _reset,
            # Taken anew at each connect: a server a call was cut on goes last in a multi-host URL.
            kwargs=lambda: {
                "autocommit": True,
                "row_factory": dict_row,
                "application_name": application_name,
                **connection_options(url),
                **pooled_connection_options(pooled),
            },
        )

    def database(
        self, kind: type[DatabaseT] | None, connection: Callable[[], psycopg.Connection[DictRow]]
    ) -> DatabaseT:
        """A Database (or `kind`, a subclass of it) whose every call runs on `connection`, an
        attempt's own (Task.database)."""
        database_class = Database if kind is None else kind
        return cast(DatabaseT, database_class(self.url, pooled=self.pooled, connection=connection))

    def lease(self) -> AttemptConnection:
        """A new attempt's lease: nothing is borrowed until the handler asks."""
        return AttemptConnection(self)

    def borrow(self) -> psycopg.Connection[DictRow]:
        with self._lock:
            if self._closed:
                raise AttemptEnded("the worker is stopping: its handlers' connection pool is closed")
            if not self._opened:
                self._pool.open(wait=False)
                self._opened = True
        try:
            # Rows as dicts: the pool's kwargs give every connection dict_row.
            return cast("psycopg.Connection[DictRow]", self._pool.getconn())
        except psycopg.Error as error:
            raise translate(error) from error

    def give_back(self, conn: psycopg.Connection[Any], *, abandoned: bool = False) -> None:
        """Return a connection to the pool (which discards it if it broke); `abandoned`: it comes
        from an abandoned attempt, so the pool shrinks back by one."""
        with self._lock:
            if abandoned:
                self._abandoned -= 1
                self._resize()
        # A closed pool closes what comes back.
        self._pool.putconn(conn)

    def held_by_abandoned(self) -> None:
        """An abandoned attempt keeps its connection: one more for the others meanwhile."""
        with self._lock:
            self._abandoned += 1
            self._resize()

    def _resize(self) -> None:
        if self._opened and not self._closed:
            # An abandoned attempt may give its connection back before it is counted.
            self._pool.resize(0, self.size + max(0, self._abandoned))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            opened = self._opened
        if opened:
            self._pool.close()


class AttemptConnection:
    """One attempt's connection: borrowed at first use, the same for the rest of the attempt
    (borrowed anew if it broke), given back by end() in the handler's own thread when the handler
    returns. Any thread of the handler may ask for it; the handler owns what it does with it."""

    def __init__(self, connections: HandlerConnections) -> None:
        self.connections = connections
        # Held briefly, never while borrowing: the dispatcher takes it to abandon the attempt.
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[DictRow] | None = None
        self._abandoned = False
        self._ended = False

    def get(self) -> psycopg.Connection[DictRow]:
        with self._lock:
            self._refuse_when_over()
            conn, broken = self._conn, None
            if conn is not None and (conn.closed or conn.broken):
                conn, broken, self._conn = None, conn, None
        if broken is not None:
            # The pool discards it; the attempt borrows another.
            self.connections.give_back(broken)
        if conn is not None:
            return conn
        borrowed = self.connections.borrow()
        with self._lock:
            over = self._ended or self._abandoned
            if not over and self._conn is None:
                self._conn = borrowed
                return borrowed
            # Another thread of the handler borrowed meanwhile, or the attempt ended.
            conn = self._conn
        self.connections.give_back(borrowed)
        if over or conn is None:
            self._refuse_when_over()
        return conn

    def _refuse_when_over(self) -> None:
        if self._ended or self._abandoned:
            raise AttemptEnded("this attempt is over: its database connection went back to the pool")

    def end(self, task_id: int) -> None:
        """The handler returned (in its own thread): roll back what it left open, give the
        connection back."""
        with self._lock:
            conn, self._conn = self._conn, None
            self._ended = True
            abandoned = self._abandoned
        if conn is None:
            return
        if not conn.closed and not conn.broken and conn.info.transaction_status in _OPEN_TRANSACTION:
            log.warning(
                "Task %s: its handler left a transaction open: rolled back",
                task_id,
                extra=event("handler_transaction_rolled_back", task_id=task_id),
            )
            try:
                conn.rollback()
            except psycopg.Error:
                # Broken by the rollback: the pool discards it.
                pass
        self.connections.give_back(conn, abandoned=abandoned)

    def abandon(self) -> None:
        """The worker ended the attempt while its handler runs on: cancel its running statement;
        it keeps the connection until it returns (end()), and the pool lends one more meanwhile.
        Under the lock, so that the cancel can never reach the connection once it is back in the
        pool and lent to another attempt."""
        with self._lock:
            if self._ended or self._abandoned:
                return
            self._abandoned = True
            if self._conn is None:
                return
            self.connections.held_by_abandoned()
            try:
                self._conn.cancel_safe(timeout=CANCEL_TIMEOUT_SECONDS)
            except psycopg.Error:
                # A server out of reach (frozen, gone): the handler's call would wait for it as
                # long as it lasts. Cut, the connection is broken: the pool discards it later.
                shut_down_socket(self._conn)


# The deadline of each pooled connection's checks, made when the pool opens the connection.
_check_deadlines: weakref.WeakKeyDictionary[psycopg.Connection[Any], CallDeadline] = weakref.WeakKeyDictionary()


def _check(conn: psycopg.Connection[Any]) -> None:
    """The pool's check of a connection it lends, within the borrow's time: one that does not
    answer is cut, and the pool discards it; so is one to a server another connection's call was
    cut on since it last answered (likely frozen: its check would only wait out the borrow)."""
    deadline = _check_deadlines[conn]
    if deadline.suspect:
        # Closed, so that the pool discards it without a reset (which would wait on the server).
        conn.close()
        raise psycopg.OperationalError("a call to this connection's server was cut at its deadline")
    with bounded(deadline):
        ConnectionPool.check_connection(conn)


def _configure(conn: psycopg.Connection[Any]) -> None:
    _check_deadlines[conn] = CallDeadline(conn, BORROW_TIMEOUT_SECONDS)
    # A standby's connection is discarded (the pool connects again): handlers write too.
    require_writable(conn)
    configure_connection(conn, exact_numbers=False)


# DISCARD ALL but DEALLOCATE ALL: psycopg's own prepared statements stay, which it would go on
# using (it notices only the first DISCARD ALL of a connection).
DISCARD_SESSION = (
    "CLOSE ALL; RESET ALL; UNLISTEN *; SELECT pg_advisory_unlock_all(); DISCARD TEMP; DISCARD SEQUENCES"
)


def _reset(conn: psycopg.Connection[Any]) -> None:
    """What a handler left in its session (settings, advisory locks, cursors, temporary tables)
    goes with its attempt, as its connection comes back."""
    conn.execute(DISCARD_SESSION)

