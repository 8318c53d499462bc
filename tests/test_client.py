"""pyworker.Client and AsyncClient against a real database: enqueue in the application's
transaction, read back, cancel, retry, wait (on a notification sent only to waiters), chains,
headers; and the example of docs/client.md, run as it stands."""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import errors as pg_errors
from pyworker import AsyncClient, Client, ClientError, TaskCancelled, TaskFailed, TaskNotFound, WaitTimeout
from pyworker import client as client_module
from pyworker.db import Database
from worker_support import wait_for

DOC = Path(__file__).resolve().parent.parent / "docs" / "client.md"


def count(conn: psycopg.Connection, where: str = "true") -> int:
    return conn.execute(f"SELECT count(*) FROM worker_tasks WHERE {where}").fetchone()[0]


def claim(url: str, role: str, worker: str = "tw") -> tuple[int, int]:
    """Claim a task of `role`, trying for a few seconds: a waiter registering (register_task_waits)
    holds the task's row a moment, and the claim's SKIP LOCKED passes over it meanwhile."""
    with psycopg.connect(url, autocommit=True) as w:
        return wait_for(
            lambda: w.execute("SELECT id, attempt FROM claim_and_start_tasks(%s, %s, 1)", (role, worker)).fetchone(),
            10,
            f"a {role} task to claim",
        )


def complete(url: str, task_id: int, attempt: int, result: str | None = None, follow_ups: str | None = None,
             worker: str = "tw") -> None:
    with psycopg.connect(url, autocommit=True) as w:
        w.execute("SELECT complete_task(id, %s, %s, claim_token, %s::jsonb, %s::jsonb) FROM worker_tasks WHERE id = %s",
                  (worker, attempt, result, follow_ups, task_id))


def fail(url: str, task_id: int, attempt: int, message: str, worker: str = "tw") -> None:
    with psycopg.connect(url, autocommit=True) as w:
        w.execute("SELECT fail_task(id, %s, %s, claim_token, %s, false) FROM worker_tasks WHERE id = %s",
                  (worker, attempt, message, task_id))


def later(delay: float, fn: Any, *args: Any) -> threading.Thread:
    def run() -> None:
        time.sleep(delay)
        fn(*args)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def app(db_url: str) -> Iterator[psycopg.Connection]:
    """The application's connection: not autocommit, so it has transactions of its own."""
    with psycopg.connect(db_url) as conn:
        yield conn


def test_enqueue_is_part_of_the_application_transaction(db_url: str, app: psycopg.Connection, conn) -> None:
    client = Client(app)
    app.execute("CREATE TABLE orders (id serial PRIMARY KEY, item text)")
    app.commit()
    app.execute("INSERT INTO orders (item) VALUES ('tea')")
    task = client.enqueue("analytics_refresh", {"order": 1}, priority=5, headers={"traceparent": "00-a"})
    assert task.status == "pending" and task.priority == 5 and task.headers == {"traceparent": "00-a"}
    # the client neither committed nor opened a transaction of its own
    assert app.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
    assert count(conn, f"id = {task.id}") == 0, "visible before the application committed"
    app.commit()
    assert count(conn, f"id = {task.id}") == 1
    assert conn.execute("SELECT count(*) FROM orders").fetchone()[0] == 1

    app.execute("INSERT INTO orders (item) VALUES ('coffee')")
    gone = client.enqueue_many([{"role": "analytics_refresh", "payload": {"n": 1}},
                                {"role": "analytics_refresh", "delay": 60}])
    assert len(gone) == 2
    app.rollback()
    assert count(conn, f"id IN ({gone[0].id}, {gone[1].id})") == 0, "a rolled back enqueue left a task"
    assert conn.execute("SELECT count(*) FROM orders").fetchone()[0] == 1


def test_enqueue_arguments_and_read_back(db_url: str, conn) -> None:
    store = conn.execute("SELECT id FROM add_store('C1', platform := 'dutchie', state_code := 'CA')").fetchone()[0]
    with Client.connect(db_url) as client:
        task = client.enqueue("product_resync", {"r": 1}, store=store, delay=3600, dedupe_key="k1", max_retries=2)
        assert (task.dispensary_id, task.platform, task.max_retries, task.dedupe_key) == (store, "dutchie", 2, "k1")
        ahead = conn.execute("SELECT %s::timestamptz - taskpool_now() > interval '59 min'",
                             (task.scheduled_for,)).fetchone()[0]
        assert ahead
        assert client.enqueue("product_resync", store=store, dedupe_key="k1").id == task.id
        many = client.enqueue_many([{"role": "analytics_refresh", "headers": {"a": "b"}},
                                    {"role": "product_resync", "store": store, "delay": 60}])
        assert [t.headers for t in many] == [{"a": "b"}, {}]
        got = client.get(task.id)
        assert got is not None and got.status == "pending" and got.attempts == 0 and got.payload == {"r": 1}
        assert client.get(10**12) is None
        assert client.cancel(task.id).status == "cancelled"
        assert client.retry(task.id).status == "pending"


def test_a_task_gets_its_own_retry_backoff(db_url: str, conn) -> None:
    with Client.connect(db_url) as client:
        one = client.enqueue("analytics_refresh", backoff_base=timedelta(seconds=5), backoff_cap=120)
        many = client.enqueue_many([{"role": "analytics_refresh", "backoff_base": 1.5},
                                    {"role": "analytics_refresh"}])
        with pytest.raises(pg_errors.InvalidParameterValue, match="backoff_cap 1 is below backoff_base 5"):
            client.enqueue("analytics_refresh", backoff_base=5, backoff_cap=1)
        with pytest.raises(ValueError, match="backoff_base must not be negative"):
            client.enqueue("analytics_refresh", backoff_base=-1)
    rows = conn.execute(
        "SELECT backoff_base, backoff_cap FROM worker_tasks WHERE id = ANY (%s) ORDER BY id",
        ([one.id, *(task.id for task in many)],),
    ).fetchall()
    assert rows == [
        (timedelta(seconds=5), timedelta(minutes=2)),
        (timedelta(seconds=1.5), None),
        (None, None),
    ]
    # What the client reads back says the same.
    assert [(task.backoff_base, task.backoff_cap) for task in (one, *many)] == rows
    with Client.connect(db_url) as client:
        assert (client.get(one.id).backoff_base, client.get(one.id).backoff_cap) == rows[0]


def test_enqueue_dedupe_window_and_content(db_url: str, conn) -> None:
    # Noon (UTC) of today on taskpool's clock: the day's period has half a day left.
    conn.execute("SELECT set_taskpool_clock_offset(date_trunc('day', now(), 'UTC') + interval '12 hours' - now())")
    with Client.connect(db_url) as client:
        daily = client.enqueue("analytics_refresh", dedupe_key="daily", dedupe_window=timedelta(days=1))
        assert conn.execute("SELECT dedupe_window FROM worker_tasks WHERE id = %s", (daily.id,)).fetchone() == (
            timedelta(days=1),
        )
        client.cancel(daily)
        # Finished, the task holds its key for the day; the window may be given in seconds too.
        assert client.enqueue("analytics_refresh", dedupe_key="daily", dedupe_window=86400).id == daily.id
        [again] = client.enqueue_many([{"role": "analytics_refresh", "dedupe_key": "daily", "dedupe_window": 86400}])
        assert again.id == daily.id

        by_content = client.enqueue("analytics_refresh", {"b": 1, "a": 2}, dedupe_by_content=True)
        assert by_content.dedupe_key == conn.execute(
            "SELECT task_spec_hash('analytics_refresh', NULL, '{\"a\": 2, \"b\": 1}')"
        ).fetchone()[0]
        assert client.enqueue("analytics_refresh", {"a": 2, "b": 1}, dedupe_by_content=True).id == by_content.id
        [same] = client.enqueue_many([{"role": "analytics_refresh", "payload": {"a": 2, "b": 1}, "dedupe_by_content": True}])
        assert same.id == by_content.id
        assert client.enqueue("analytics_refresh", {"a": 2, "b": 1}).id != by_content.id


def test_bad_input_is_refused_and_changes_nothing(db_url: str, app: psycopg.Connection, conn) -> None:
    client = Client(app)
    before = count(conn)
    with pytest.raises(pg_errors.InvalidParameterValue, match="unknown role 'no_such_role'"):
        client.enqueue("no_such_role")
    app.rollback()
    with pytest.raises(pg_errors.InvalidParameterValue, match='header "n" must be a string, not number'):
        client.enqueue("analytics_refresh", headers={"n": 1})
    app.rollback()
    with pytest.raises(pg_errors.InvalidParameterValue, match=r"tasks\[1\]: headers must be a JSON object"):
        client.enqueue_many([{"role": "analytics_refresh"}, {"role": "analytics_refresh", "headers": ["x"]}])
    app.rollback()
    with pytest.raises(ValueError, match="delay must not be negative"):
        client.enqueue("analytics_refresh", delay=-1)
    with pytest.raises(pg_errors.InvalidParameterValue, match="dedupe_window needs a dedupe_key or dedupe_by_content"):
        client.enqueue("analytics_refresh", dedupe_window=60)
    app.rollback()
    with pytest.raises(pg_errors.InvalidParameterValue, match="give a dedupe_key or dedupe_by_content, not both"):
        client.enqueue("analytics_refresh", dedupe_key="k", dedupe_by_content=True)
    app.rollback()
    with pytest.raises(ValueError, match="dedupe_window must not be negative"):
        client.enqueue("analytics_refresh", dedupe_key="k", dedupe_window=-1)
    with pytest.raises(ValueError, match="unknown enqueue option"):
        client.enqueue_many([{"role": "analytics_refresh", "colour": "red"}])
    with pytest.raises(ValueError, match="timeout must not be negative"):
        client.wait(1, timeout=-1)
    app.rollback()
    assert count(conn) == before


def test_a_batch_makes_the_tasks_one_by_one_enqueues_make(db_url: str, conn) -> None:
    """enqueue_many binds typed arrays (enqueue_specs); each of its tasks is the task enqueue
    makes from the same arguments, every field given."""
    store = conn.execute("SELECT id FROM add_store('B1', platform := 'dutchie', state_code := 'CA')").fetchone()[0]
    at = datetime(2031, 2, 3, 4, 5, 6, 789012, tzinfo=timezone.utc)
    specs: list[dict[str, Any]] = [
        {"role": "analytics_refresh"},
        {"role": "product_resync", "payload": {"a": [1, 2.5]}, "store": store, "priority": -7, "max_retries": 0,
         "platform": "jane", "headers": {"traceparent": "00-b"}, "backoff_base": 1.5, "backoff_cap": 90},
        {"role": "analytics_refresh", "scheduled_for": at, "dedupe_key": "batch:one"},
        {"role": "analytics_refresh", "scheduled_for": "2031-02-03T04:05:06+00:00", "dedupe_key": "batch:day",
         "dedupe_window": timedelta(days=1)},
        {"role": "analytics_refresh", "payload": {"by": "content"}, "dedupe_by_content": True},
    ]
    compared = ("role", "payload", "dispensary_id", "platform", "priority", "scheduled_for", "dedupe_key",
                "max_retries", "headers")
    with Client.connect(db_url) as client:
        with client.conn.transaction(force_rollback=True):
            batch = client.enqueue_many(specs)
        with client.conn.transaction(force_rollback=True):
            alone = [client.enqueue(spec["role"], spec.get("payload"),
                                    **{k: v for k, v in spec.items() if k not in ("role", "payload")})
                     for spec in specs]

        def fields(task: Any, spec: dict[str, Any]) -> list[Any]:
            # scheduled_for defaults to each transaction's now: compared where a spec gives it
            return [getattr(task, k) for k in compared if k != "scheduled_for" or "scheduled_for" in spec]

        assert [fields(t, spec) for t, spec in zip(batch, specs)] == [fields(t, spec) for t, spec in zip(alone, specs)]
        assert batch[2].scheduled_for == at and batch[1].dispensary_id == store

        delayed = client.enqueue_many([{"role": "analytics_refresh", "delay": 3600}])[0]
        ahead = conn.execute("SELECT %s::timestamptz - taskpool_now() > interval '59 min'",
                             (delayed.scheduled_for,)).fetchone()[0]
        assert ahead, "a batch's delay is on the database's clock"
        assert client.enqueue_many([]) == []


def test_a_batch_refuses_a_value_of_the_wrong_type_naming_the_spec(db_url: str, conn) -> None:
    """What a typed array cannot bind is refused before the call, named as the database names a
    bad spec (tasks[N]); what it can bind is checked by the database, with its messages."""
    before = count(conn)
    with Client.connect(db_url) as client:
        for spec, message in [
            ({"role": "analytics_refresh", "priority": "high"}, r"tasks\[1\]: priority must be an integer, not 'high'"),
            ({"role": "analytics_refresh", "max_retries": True}, r"tasks\[1\]: max_retries must be an integer"),
            ({"role": "analytics_refresh", "priority": 2**31}, r"tasks\[1\]: priority must be an integer"),
            ({"role": "analytics_refresh", "dedupe_key": 7}, r"tasks\[1\]: dedupe_key must be a string, not 7"),
            ({"role": "analytics_refresh", "scheduled_for": "soon"},
             r"tasks\[1\]: scheduled_for must be a datetime or an ISO 8601 string, not 'soon'"),
        ]:
            with pytest.raises(ValueError, match=message):
                client.enqueue_many([{"role": "analytics_refresh"}, spec])
        with pytest.raises(pg_errors.NumericValueOutOfRange, match=r"tasks\[1\]: priority 101 is out of range"):
            client.enqueue_many([{"role": "analytics_refresh"}, {"role": "analytics_refresh", "priority": 101}])
        with pytest.raises(pg_errors.InvalidParameterValue, match=r"tasks\[0\]: unknown role 'no_such_role'"):
            client.enqueue_many([{"role": "no_such_role"}])

        def add_colour(spec: dict[str, Any]) -> None:
            spec["colour"] = "red"

        client.hooks.append(add_colour)
        with pytest.raises(ValueError, match=r"tasks\[0\]: unknown field 'colour'"):
            client.enqueue_many([{"role": "analytics_refresh"}])
    assert count(conn) == before


def test_wait_returns_the_result(db_url: str, conn) -> None:
    with Client.connect(db_url) as client:
        task = client.enqueue("analytics_refresh", {"n": 1})
        later(0.5, lambda: complete(db_url, *claim(db_url, "analytics_refresh"), '{"answer": 42}'))
        started = time.monotonic()
        assert client.wait(task.id, timeout=20) == {"answer": 42}
        # woken by the notification, not by the 5 s poll
        assert time.monotonic() - started < 4
        # finished already: at once, even with no time left
        assert client.wait(task.id, timeout=0) == {"answer": 42}
        assert conn.execute("SELECT count(*) FROM task_result_waits").fetchone()[0] == 0


def test_wait_raises_on_failure_cancel_timeout(db_url: str, app: psycopg.Connection) -> None:
    client = Client(app)
    failing = client.enqueue("analytics_refresh", {"n": 1})
    app.commit()
    later(0.3, lambda: fail(db_url, *claim(db_url, "analytics_refresh"), "HTTP 503"))
    with pytest.raises(TaskFailed) as failed:
        client.wait(failing.id, timeout=20)
    assert failed.value.error == "HTTP 503" and failed.value.task.status == "failed"

    cancelled = client.enqueue("analytics_refresh", {"n": 2})
    app.commit()
    later(0.3, lambda: Client.connect(db_url).cancel(cancelled.id))
    with pytest.raises(TaskCancelled):
        client.wait(cancelled.id, timeout=20)

    slow = client.enqueue("analytics_refresh", {"n": 3})
    app.commit()
    started = time.monotonic()
    with pytest.raises(WaitTimeout):
        client.wait(slow.id, timeout=0.5, poll_interval=0.2)
    assert 0.4 < time.monotonic() - started < 3
    with pytest.raises(TaskNotFound):
        client.wait(10**12, timeout=1)
    # inside an open transaction, waiting could only time out
    client.enqueue("analytics_refresh", {"n": 4})
    with pytest.raises(ClientError, match="outside a transaction"):
        client.wait(slow.id, timeout=1)
    app.rollback()
    assert app.execute("SELECT count(*) FROM task_result_waits").fetchone()[0] == 0


def test_a_completion_nobody_waits_for_sends_no_notify(db_url: str, conn) -> None:
    waiter = Client.connect(db_url)
    try:
        waited = waiter.enqueue("analytics_refresh", {"w": 1})
        other = waiter.enqueue("analytics_refresh", {"w": 2})
        # listen as a waiter of `waited` does, and register for it only
        channel = waiter.conn.execute("SELECT task_wait_channel()").fetchone()[0]
        waiter.conn.execute(f'LISTEN "{channel}"')
        waiter.conn.execute("SELECT * FROM register_task_waits(%s)", ([waited.id],))
        # a listener on every session's channel would need a LISTEN each; the waited flag is the proof
        for task in (other, waited):
            row = claim(db_url, "analytics_refresh")
            assert row[0] in (other.id, waited.id)
        with psycopg.connect(db_url, autocommit=True) as w:
            other_attempt = w.execute("SELECT attempt FROM worker_tasks WHERE id = %s", (other.id,)).fetchone()[0]
        complete(db_url, other.id, other_attempt, None)
        heard = [n.payload for n in waiter.conn.notifies(timeout=1.0)]
        assert heard == [], "a completion nobody waits for notified"
        assert conn.execute("SELECT waited FROM worker_tasks WHERE id = %s", (other.id,)).fetchone()[0] is None
        complete(db_url, waited.id, 1, '{"ok": true}')
        heard = [n.payload for n in waiter.conn.notifies(timeout=3.0, stop_after=1)]
        assert heard == [str(waited.id)]
        assert conn.execute("SELECT count(*) FROM task_result_waits").fetchone()[0] == 0
    finally:
        waiter.close()


def test_a_dead_waiter_leaves_nothing_that_notifies(db_url: str, conn) -> None:
    task = conn.execute("SELECT id FROM enqueue_task('analytics_refresh')").fetchone()[0]
    dead = psycopg.connect(db_url, autocommit=True)
    dead.execute("SELECT * FROM register_task_waits(%s)", ([task],))
    pid = dead.info.backend_pid
    dead.close()
    deadline = time.monotonic() + 10
    while conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    other = conn.execute("SELECT id FROM enqueue_task('analytics_refresh')").fetchone()[0]
    conn.execute("SELECT * FROM register_task_waits(%s)", ([other],))
    assert conn.execute("SELECT count(*) FROM task_result_waits WHERE backend_pid = %s", (pid,)).fetchone()[0] == 0


def test_wait_for_a_chain(db_url: str, conn) -> None:
    with Client.connect(db_url) as client:
        root = client.enqueue("analytics_refresh", {"root": True})

        def run_chain() -> None:
            task_id, attempt = claim(db_url, "analytics_refresh")
            time.sleep(0.2)
            complete(db_url, task_id, attempt, '{"step": 1}',
                     '[{"role": "analytics_refresh", "payload": {"child": 1}, "headers": {"traceparent": "00-c"}}]')
            time.sleep(0.5)
            child, attempt = claim(db_url, "analytics_refresh")
            complete(db_url, child, attempt, '{"step": 2}')

        later(0.2, run_chain)
        members = client.wait_chain(root.id, timeout=20)
        assert [(m.status, m.parent_id) for m in members] == [("completed", None), ("completed", root.id)]
        assert members[1].headers == {"traceparent": "00-c"}, "a follow-up takes the headers its spec gives"
        assert client.wait(root.id, timeout=0, chain=True) == {"step": 1}
        chain = client.chain(members[1].id)
        assert [(m.id, m.depth) for m in chain] == [(root.id, -1), (members[1].id, 0)]

        # a failed follow-up fails the chain
        root2 = client.enqueue("analytics_refresh", {"root": 2})

        def run_failing_chain() -> None:
            task_id, attempt = claim(db_url, "analytics_refresh")
            complete(db_url, task_id, attempt, "{}", '[{"role": "analytics_refresh"}]')
            child, attempt = claim(db_url, "analytics_refresh")
            fail(db_url, child, attempt, "child broke")

        later(0.2, run_failing_chain)
        with pytest.raises(TaskFailed, match="child broke") as failed:
            client.wait(root2.id, timeout=20, chain=True)
        assert failed.value.task.parent_id == root2.id


def test_hooks_add_headers_and_the_claim_returns_them(db_url: str, conn) -> None:
    def trace(spec: dict[str, Any]) -> None:
        spec["headers"].setdefault("traceparent", "00-hook")

    def tenant(spec: dict[str, Any]) -> None:
        spec["headers"]["tenant"] = "t1"

    client_module.enqueue_hooks.append(trace)
    try:
        with Client.connect(db_url, hooks=[tenant]) as client:
            one = client.enqueue("analytics_refresh")
            many = client.enqueue_many([{"role": "analytics_refresh", "headers": {"traceparent": "00-own"}}])
        assert one.headers == {"traceparent": "00-hook", "tenant": "t1"}
        assert many[0].headers == {"traceparent": "00-own", "tenant": "t1"}
    finally:
        client_module.enqueue_hooks.remove(trace)
    db = Database(db_url)
    try:
        tasks = db.claim_and_start_tasks("analytics_refresh", "hw", 10)
    finally:
        db.close()
    assert {t.id: t.headers for t in tasks}[one.id] == {"traceparent": "00-hook", "tenant": "t1"}


def test_async_client(db_url: str, conn) -> None:
    async def main() -> None:
        async with await psycopg.AsyncConnection.connect(db_url) as aconn:
            client = AsyncClient(aconn)
            task = await client.enqueue("analytics_refresh", {"a": 1}, headers={"x": "y"})
            assert count(conn, f"id = {task.id}") == 0
            await aconn.commit()
            later(0.3, lambda: complete(db_url, *claim(db_url, "analytics_refresh"), '{"async": true}'))
            assert await client.wait(task.id, timeout=20) == {"async": True}
            assert (await client.get(task.id)).headers == {"x": "y"}
            slow = await client.enqueue("analytics_refresh")
            await aconn.commit()
            with pytest.raises(WaitTimeout):
                await client.wait(slow.id, timeout=0.3)
            assert (await client.cancel(slow.id)).status == "cancelled"
            await aconn.commit()
            with pytest.raises(TaskCancelled):
                await client.wait(slow.id, timeout=5)
            assert [m.id for m in await client.chain(task.id)] == [task.id]

    asyncio.run(main())


def test_the_docs_example_runs(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    example = next(b for b in blocks if "client.wait(task.id, timeout=30)" in b and "Client(conn)" in b)
    monkeypatch.setenv("DATABASE_URL", db_url)
    stop = threading.Event()

    def worker() -> None:
        # a stand-in worker through the SQL functions: the store_discovery queues one follow-up
        with psycopg.connect(db_url, autocommit=True) as w:
            while not stop.is_set():
                for role in ("store_discovery", "analytics_refresh"):
                    row = w.execute("SELECT id, attempt, claim_token FROM claim_and_start_tasks(%s, 'dw', 1)", (role,)).fetchone()
                    if row:
                        follow = '[{"role": "analytics_refresh"}]' if role == "store_discovery" else None
                        w.execute("SELECT complete_task(%s, 'dw', %s, %s, '{\"done\": true}', %s::jsonb)",
                                  (row[0], row[1], row[2], follow))
                time.sleep(0.05)

    thread = threading.Thread(target=worker, daemon=True)
    thread.start()
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(example, str(DOC), "exec"), {})
    finally:
        stop.set()
        thread.join(5)
    printed = out.getvalue().splitlines()
    assert printed[0] == "result: {'done': True}"
    assert printed[1] == "completed 1 00"
    assert [line.split()[-1] for line in printed[2:]] == ["completed", "completed"]

    async_block = next(b for b in blocks if "AsyncClient(conn)" in b)
    thread = threading.Thread(target=worker, daemon=True)
    stop.clear()
    thread.start()
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(async_block, str(DOC), "exec"), {})
    finally:
        stop.set()
        thread.join(5)
    assert out.getvalue().strip() == "{'done': True}"


def test_what_enqueue_returns_serves_as_the_task_id(db_url: str) -> None:
    with Client.connect(db_url) as client:
        task = client.enqueue("store_discovery", {"platform": "dutchie"})
        assert client.get(task).id == task.id == int(task.__index__())
        assert client.cancel(task).status == "cancelled"
        assert client.get(task).status == "cancelled"
        with pytest.raises(TypeError):
            client.get("not an id")
