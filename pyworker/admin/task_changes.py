"""Follow the stream of task changes: the channel taskpool_task_changes (docs/sql-reference.md).

The database publishes a statement's task changes only while some follower holds a lease
(follow_task_changes), since NOTIFY serializes the commits of every notifying transaction: a
follower takes its lease on the connection it LISTENs on, renews it every third of its length,
and ends it when it stops (unfollow_task_changes). A follower that dies stops the stream when its
lease runs out. `follow_task_changes` is the blocking form (`pyworker tasks watch`);
`TaskChangeHub` the asyncio one, a single connection shared by every subscriber (the dashboard's
live refresh).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import psycopg
from psycopg import sql

from pyworker.deadlines import connection_options
from pyworker.errors import translate

CHANNEL = "taskpool_task_changes"
LEASE_SECONDS = 60
FOLLOW = "SELECT follow_task_changes(%(follower)s::text, make_interval(secs => %(lease_seconds)s::integer))"
UNFOLLOW = "SELECT unfollow_task_changes(%(follower)s::text)"
LISTEN = sql.SQL("LISTEN {}").format(sql.Identifier(CHANNEL))
# A subscriber that reads no faster than this many messages behind misses the rest: the
# dashboard only needs to know that something changed.
SUBSCRIBER_BACKLOG = 100


def follower_name(kind: str) -> str:
    """A follower name unique to this process and call: `kind@host:pid:random`."""
    return f"{kind}@{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def follow_task_changes(
    url: str, follower: str, *, lease_seconds: int = LEASE_SECONDS, idle_seconds: float | None = None
) -> Iterator[dict[str, Any] | None]:
    """Each message of the stream as a dict, as it arrives; None after `idle_seconds` without
    one (never, when None). Blocks; stop by closing the generator."""
    params = {"follower": follower, "lease_seconds": lease_seconds}
    try:
        with psycopg.connect(url, autocommit=True, application_name="pyworker tasks watch", **connection_options(url)) as conn:
            conn.execute(LISTEN)
            try:
                while True:
                    conn.execute(FOLLOW, params)
                    renew_at = time.monotonic() + lease_seconds / 3
                    while (left := renew_at - time.monotonic()) > 0:
                        wait = left if idle_seconds is None else min(left, idle_seconds)
                        heard = False
                        for notify in conn.notifies(timeout=wait):
                            heard = True
                            yield json.loads(notify.payload)
                        if not heard and idle_seconds is not None:
                            yield None
            finally:
                if not conn.closed and not conn.broken:
                    with suppress(psycopg.Error):
                        conn.execute(UNFOLLOW, params)
    except psycopg.Error as error:
        raise translate(error) from error


class TaskChangeHub:
    """One LISTEN connection and one lease for every subscriber of this process, held only while
    one subscribes; each subscriber gets each message's payload (text) on its own queue. A lost
    connection is opened again after `retry_seconds`; meanwhile subscribers hear nothing and fall
    back on whatever polling they do."""

    def __init__(self, url: str, *, lease_seconds: int = LEASE_SECONDS, retry_seconds: float = 2.0) -> None:
        self.url = url
        self.lease_seconds = lease_seconds
        self.retry_seconds = retry_seconds
        self._queues: set[asyncio.Queue[str]] = set()
        self._listener: asyncio.Task[None] | None = None

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[asyncio.Queue[str]]:
        queue: asyncio.Queue[str] = asyncio.Queue(maxsize=SUBSCRIBER_BACKLOG)
        self._queues.add(queue)
        if self._listener is None or self._listener.done():
            self._listener = asyncio.create_task(self._listen())
        try:
            yield queue
        finally:
            self._queues.discard(queue)
            if not self._queues and self._listener is not None:
                self._listener.cancel()
                self._listener = None

    async def _listen(self) -> None:
        params = {"follower": follower_name("dashboard"), "lease_seconds": self.lease_seconds}
        while self._queues:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self.url, autocommit=True, application_name="pyworker dashboard: task changes",
                    **connection_options(self.url),
                )
            except psycopg.Error:
                await asyncio.sleep(self.retry_seconds)
                continue
            try:
                await conn.execute(LISTEN)
                while True:
                    await conn.execute(FOLLOW, params)
                    async for notify in conn.notifies(timeout=self.lease_seconds / 3):
                        for queue in list(self._queues):
                            with suppress(asyncio.QueueFull):
                                queue.put_nowait(notify.payload)
            except psycopg.Error:
                await asyncio.sleep(self.retry_seconds)
            finally:
                # Cancelled (the last subscriber left) or broken: end the lease if the
                # connection still can, shielded so that the cancel does not cut it short.
                if not conn.closed and not conn.broken:
                    with suppress(psycopg.Error, asyncio.CancelledError):
                        await asyncio.shield(conn.execute(UNFOLLOW, params))
                await conn.close()
