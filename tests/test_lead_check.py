"""A call waiting on a frozen primary named in a multi-host URL is cut as soon as another server
of the URL takes writes (pyworker/deadlines.py, the lead check): a frozen primary costs the fleet
the failover's time, not the call's deadline. A slow call on a healthy primary is not cut: its
standby refuses a read-write session. Nor is a call on a server the URL names twice.

A relay (testkit/relay.py) in front of a server stands for a host; freezing it makes a frozen
primary (its kernel takes the connection, nothing answers). Copies of the test server
(testkit/replica.py) stand for the server promoted in its place, and for a standby.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pyworker.db import Database
from pyworker.deadlines import LEAD_CHECK_AFTER_SECONDS, CallDeadline, bounded, connection_options
from pyworker.errors import DatabaseUnavailable
from testkit.relay import Relay
from testkit.replica import Replica

# Far longer than the lead check takes: a call cut this late was cut by its deadline.
LONG_DEADLINE = 120
# Longer than a call waits before the lead check asks.
SLOW_CALL_SECONDS = LEAD_CHECK_AFTER_SECONDS + 3


def server(url: str) -> tuple[str, int]:
    params = conninfo_to_dict(url)
    return params.get("host") or "127.0.0.1", int(params.get("port") or 5432)


def multi_host(db_url: str, *ports: int) -> str:
    """db_url's database and user on these loopback ports, as a worker's multi-host URL."""
    return make_conninfo(
        db_url,
        host=",".join("127.0.0.1" for _ in ports),
        hostaddr="",
        port=",".join(str(port) for port in ports),
        target_session_attrs="read-write",
    )


@pytest.fixture
def frozen_host(db_url: str) -> Iterator[Relay]:
    with Relay(*server(db_url)) as relay:
        try:
            yield relay
        finally:
            relay.thaw()


def test_a_call_on_a_frozen_primary_is_cut_once_another_server_of_the_url_takes_writes(
    db_url: str, frozen_host: Relay
) -> None:
    with Replica(db_url, standby=False) as promoted:
        db = Database(multi_host(db_url, frozen_host.port, promoted.port), call_timeout=LONG_DEADLINE)
        try:
            assert db.schema_version()
            frozen_host.freeze()
            taken = re.escape(f"another server of the URL (127.0.0.1:{promoted.port}) takes writes")
            with pytest.raises(DatabaseUnavailable, match=taken):
                db.schema_version()
            assert db.schema_version()
            assert int(db.connect().pgconn.port.decode()) == promoted.port
        finally:
            db.close()


def test_a_slow_call_on_a_healthy_primary_beside_its_standby_is_not_cut(db_url: str) -> None:
    with Replica(db_url) as standby, Relay("127.0.0.1", standby.port) as standby_host:
        url = multi_host(db_url, server(db_url)[1], standby_host.port)
        with psycopg.connect(url, autocommit=True, **connection_options(url)) as conn:
            deadline = CallDeadline(conn, LONG_DEADLINE)
            with bounded(deadline):
                conn.execute("SELECT pg_sleep(%s)", [SLOW_CALL_SECONDS])
            assert not deadline.passed
        assert standby_host.accepted, "the lead check asked the standby whether it takes writes"


def test_a_call_on_a_frozen_host_is_left_to_its_deadline_when_the_other_host_is_the_same_server(
    db_url: str, frozen_host: Relay
) -> None:
    db = Database(multi_host(db_url, frozen_host.port, server(db_url)[1]), call_timeout=SLOW_CALL_SECONDS)
    try:
        assert db.schema_version()
        frozen_host.freeze()
        with pytest.raises(DatabaseUnavailable, match=f"did not answer within {SLOW_CALL_SECONDS:g} s"):
            db.schema_version()
    finally:
        db.close()
