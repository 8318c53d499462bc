"""A multi-host URL after a frozen primary: a server a call was cut on goes last in the host list,
so reconnects reach the other hosts without waiting out connect_timeout on the frozen one.

Two relays (testkit/relay.py) in front of the test server stand for two hosts; freezing one makes
it a frozen primary (its kernel takes the connection, nothing answers).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pyworker.connections import HandlerConnections
from pyworker.db import Database
from pyworker.deadlines import connection_options
from pyworker.errors import DatabaseUnavailable
from testkit.relay import Relay

# libpq's connect_timeout here: a reconnect that tried the frozen host first would take this long.
CONNECT_TIMEOUT = 30
# Well under CONNECT_TIMEOUT, well over a connect to a live server on loopback.
WITHOUT_WAITING = CONNECT_TIMEOUT / 2


@pytest.fixture
def relays(db_url: str) -> Iterator[tuple[Relay, Relay]]:
    params = conninfo_to_dict(db_url)
    target = (params.get("host") or "127.0.0.1", int(params.get("port") or 5432))
    with Relay(*target) as first, Relay(*target) as second:
        try:
            yield first, second
        finally:
            first.thaw()


def both(db_url: str, first: Relay, second: Relay) -> str:
    """db_url's database as a multi-host URL: through the first relay, else the second."""
    return make_conninfo(db_url, host="127.0.0.1,127.0.0.1", hostaddr="", port=f"{first.port},{second.port}")


def port_of(db: Database) -> int:
    return int(db.connect().pgconn.port.decode())


def test_a_reconnect_after_a_cut_call_goes_to_the_next_host_without_waiting_for_the_frozen_one(
    db_url: str, relays: tuple[Relay, Relay]
) -> None:
    first, second = relays
    url = both(db_url, first, second)
    assert "port" not in connection_options(url), "no server is suspect yet: the URL's order holds"
    db = Database(url, call_timeout=2, connect_timeout=CONNECT_TIMEOUT)
    try:
        assert db.schema_version()
        assert port_of(db) == first.port
        first.freeze()
        with pytest.raises(DatabaseUnavailable, match="did not answer within 2 s"):
            db.schema_version()
        assert connection_options(url)["port"] == f"{second.port},{first.port}"
        began = time.monotonic()
        assert db.schema_version()
        assert time.monotonic() - began < WITHOUT_WAITING
        assert port_of(db) == second.port
    finally:
        db.close()


def test_the_handler_pool_reconnects_to_the_next_host_after_a_cut_call(
    db_url: str, relays: tuple[Relay, Relay]
) -> None:
    first, second = relays
    url = both(db_url, first, second)
    pool = HandlerConnections(url, size=1, application_name="test frozen host last")
    cut = Database(url, call_timeout=2, connect_timeout=CONNECT_TIMEOUT)
    try:
        conn = pool.borrow()
        assert int(conn.pgconn.port.decode()) == first.port
        pool.give_back(conn)
        assert cut.schema_version()
        first.freeze()
        with pytest.raises(DatabaseUnavailable):
            cut.schema_version()
        conn = pool.borrow()
        assert int(conn.pgconn.port.decode()) == second.port
        pool.give_back(conn)
    finally:
        cut.close()
        pool.close()


def test_the_frozen_host_is_still_tried_last_when_the_others_fail(
    db_url: str, relays: tuple[Relay, Relay]
) -> None:
    first, second = relays
    url = both(db_url, first, second)
    db = Database(url, call_timeout=2, connect_timeout=CONNECT_TIMEOUT)
    try:
        assert db.schema_version()
        first.freeze()
        with pytest.raises(DatabaseUnavailable):
            db.schema_version()
        second.close()
        first.thaw()
        assert db.schema_version()
        assert port_of(db) == first.port
    finally:
        db.close()
