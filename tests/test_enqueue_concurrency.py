"""Enqueues against other sessions: producers, waiting workers, store deletions.

An enqueue never waits on another producer's open transaction nor on a waiting worker's, and a
waiting worker's mark never waits on an open enqueue: the wake-up protocol's role lock is taken
at commit only, for the instant of the commit (see task_wake_requests). No wake-up is lost for
it: a worker that marks itself waiting while an enqueue is in flight is woken by that enqueue's
commit, or its one extra claim sees the task. Each blocking call runs under a statement_timeout,
so a regression fails fast instead of hanging the suite.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import psycopg
from worker_support import listen, received, register

BOUND_SECONDS = 3.0


def bounded(db_url: str, **kwargs: object) -> psycopg.Connection:
    """A connection whose statements give up (57014 or 55P03) rather than wait past the bound."""
    options = f"-c statement_timeout={int(BOUND_SECONDS * 1000)} -c lock_timeout={int(BOUND_SECONDS * 1000)}"
    return psycopg.connect(db_url, options=options, **kwargs)


def timed(call: Callable[[], object]) -> float:
    started = time.monotonic()
    call()
    return time.monotonic() - started


# Item 6: an open enqueueing transaction freezes nobody


def test_an_open_enqueue_blocks_neither_a_mark_nor_another_enqueue(conn: psycopg.Connection, db_url: str) -> None:
    register(conn, "w1", "analytics_refresh")
    with psycopg.connect(db_url) as producer_a, bounded(db_url, autocommit=True) as worker, bounded(db_url) as producer_b:
        producer_a.execute("SELECT enqueue_task('analytics_refresh')")  # left open

        assert timed(lambda: worker.execute("SELECT mark_worker_waiting('w1')")) < BOUND_SECONDS
        assert timed(lambda: (producer_b.execute("SELECT enqueue_task('analytics_refresh')"), producer_b.commit())) < BOUND_SECONDS
        # And with a worker already waiting, B's enqueue wakes it without waiting on A either.
        assert timed(lambda: (producer_b.execute("SELECT enqueue_task('analytics_refresh')"), producer_b.commit())) < BOUND_SECONDS
        producer_a.rollback()
    assert conn.execute("SELECT count(*) FROM worker_tasks WHERE role = 'analytics_refresh'").fetchone() == (2,)


def test_an_open_mark_blocks_no_enqueue(conn: psycopg.Connection, db_url: str) -> None:
    register(conn, "w1", "analytics_refresh")
    with psycopg.connect(db_url) as marker, bounded(db_url) as producer:
        marker.execute("SELECT mark_worker_waiting('w1')")  # left open
        assert timed(lambda: (producer.execute("SELECT enqueue_task('analytics_refresh')"), producer.commit())) < BOUND_SECONDS
        marker.rollback()


def test_a_woken_worker_claims_while_an_open_enqueue_holds_its_wake_up(conn: psycopg.Connection, db_url: str) -> None:
    # An open enqueue that found the worker waiting used to hold the worker's mark row until it
    # ended, so the worker's next successful claim (which unmarks it) waited on that producer.
    conn.execute("SELECT enqueue_task('analytics_refresh')")
    register(conn, "w1", "analytics_refresh")
    conn.execute("SELECT mark_worker_waiting('w1')")
    with psycopg.connect(db_url) as producer, bounded(db_url, autocommit=True) as worker:
        producer.execute("SELECT enqueue_task('analytics_refresh')")  # left open
        assert worker.execute("SELECT count(*) FROM claim_and_start_tasks('analytics_refresh', 'w1')").fetchone() == (1,)
        producer.rollback()


def test_a_mark_made_while_an_enqueue_is_in_flight_is_woken_by_its_commit(conn: psycopg.Connection, db_url: str) -> None:
    channel = register(conn, "w1", "store_discovery")
    with psycopg.connect(db_url) as producer, bounded(db_url, autocommit=True) as worker, listen(db_url, channel) as listener:
        # The enqueue's statement has run and found no one waiting; its commit has not.
        producer.execute("SELECT enqueue_task('store_discovery')")
        assert worker.execute("SELECT count(*) FROM claim_and_start_tasks('store_discovery', 'w1')").fetchone() == (0,)
        assert worker.execute("SELECT mark_worker_waiting('w1')").fetchone() == (True,)
        assert worker.execute("SELECT count(*) FROM claim_and_start_tasks('store_discovery', 'w1')").fetchone() == (0,)
        assert received(listener, timeout=0.3, expect=1) == []
        producer.commit()
        assert received(listener, timeout=BOUND_SECONDS, expect=1) == ["store_discovery"]
    assert conn.execute("SELECT count(*) FROM task_worker_waits").fetchone() == (0,)


def test_no_wake_up_is_lost_when_enqueues_race_marks(conn: psycopg.Connection, db_url: str) -> None:
    """The worker's loop against commits landing anywhere in it: each task is found either by
    the claim after the mark or by the notification its commit sends."""
    channel = register(conn, "w1", "store_discovery")
    rounds = 60
    lost: list[int] = []
    with psycopg.connect(db_url, autocommit=True) as producer, bounded(db_url, autocommit=True) as worker, listen(db_url, channel) as listener:
        for round_number in range(rounds):
            barrier = threading.Barrier(2)

            def enqueue() -> None:
                barrier.wait()
                time.sleep((round_number % 6) * 0.0005)
                producer.execute("SELECT enqueue_task('store_discovery')")

            enqueuer = threading.Thread(target=enqueue)
            enqueuer.start()
            barrier.wait()
            claim = "SELECT count(*) FROM claim_and_start_tasks('store_discovery', 'w1')"
            found = worker.execute(claim).fetchone()[0]
            if not found and worker.execute("SELECT mark_worker_waiting('w1')").fetchone()[0]:
                found = worker.execute(claim).fetchone()[0]
            enqueuer.join()
            if not found:
                if not received(listener, timeout=2.0, expect=1):
                    lost.append(round_number)
                found = worker.execute(claim).fetchone()[0]
            assert found == 1, f"round {round_number}: the task was not there after its commit"
            worker.execute("SELECT complete_task(id, 'w1', attempt, claim_token) FROM worker_tasks WHERE worker_id = 'w1' AND status = 'running'")
            # A notification left over from a round where the claim won the race must not count next round.
            list(listener.notifies(timeout=0.01))
    assert lost == []


def test_a_producer_that_sets_constraints_immediate_holds_others_only_briefly(conn: psycopg.Connection, db_url: str) -> None:
    # SET CONSTRAINTS ALL IMMEDIATE runs the commit-time wake-up at once, so this producer takes
    # the role lock inside its open transaction; others then wait a bounded time, never for it.
    register(conn, "w1", "analytics_refresh")
    with psycopg.connect(db_url) as hostile, bounded(db_url, autocommit=True) as worker, bounded(db_url) as producer:
        hostile.execute("SET CONSTRAINTS ALL IMMEDIATE")
        hostile.execute("SELECT enqueue_task('analytics_refresh')")  # left open, role lock held
        assert timed(lambda: worker.execute("SELECT mark_worker_waiting('w1')")) < BOUND_SECONDS
        assert timed(lambda: (producer.execute("SELECT enqueue_task('analytics_refresh')"), producer.commit())) < BOUND_SECONDS
        hostile.rollback()


# Item 10: batches that share dedupe keys


def test_batches_with_the_same_dedupe_keys_in_opposite_orders_do_not_deadlock(conn: psycopg.Connection, db_url: str) -> None:
    keys = [f"dedupe:{n}" for n in range(500)]
    rounds = 10
    forward = psycopg.types.json.Jsonb([{"role": "analytics_refresh", "dedupe_key": k} for k in keys])
    backward = psycopg.types.json.Jsonb([{"role": "analytics_refresh", "dedupe_key": k} for k in reversed(keys)])
    errors: list[BaseException] = []
    returned: list[set[str]] = []

    def producer(specs: psycopg.types.json.Jsonb, barrier: threading.Barrier) -> None:
        with bounded(db_url) as session:
            for _ in range(rounds):
                barrier.wait()
                try:
                    rows = session.execute("SELECT dedupe_key FROM enqueue_tasks(%s)", (specs,)).fetchall()
                    session.commit()
                    returned.append({row[0] for row in rows})
                except psycopg.Error as error:
                    session.rollback()
                    errors.append(error)
                barrier.wait()

    cleaner_barrier = threading.Barrier(3)
    threads = [threading.Thread(target=producer, args=(specs, cleaner_barrier)) for specs in (forward, backward)]
    for thread in threads:
        thread.start()
    for _ in range(rounds):
        cleaner_barrier.wait()  # both batches go
        cleaner_barrier.wait()  # both batches are done
        conn.execute("DELETE FROM worker_tasks")
    for thread in threads:
        thread.join()
    assert [type(error).__name__ + ": " + str(error) for error in errors] == []
    # Each batch gets a task for every key, its own or the other batch's.
    assert returned == [set(keys)] * (2 * rounds)


def test_a_batch_keeps_its_spec_order_in_ids_whatever_its_dedupe_keys(conn: psycopg.Connection) -> None:
    specs = psycopg.types.json.Jsonb(
        [{"role": "analytics_refresh", "dedupe_key": "z"}, {"role": "analytics_refresh"},
         {"role": "analytics_refresh", "dedupe_key": "a"}, {"role": "analytics_refresh", "dedupe_key": "m"}]
    )
    rows = conn.execute("SELECT coalesce(dedupe_key, '-') FROM enqueue_tasks(%s) ORDER BY id", (specs,)).fetchall()
    assert [row[0] for row in rows] == ["z", "-", "a", "m"]


# Item 17: an enqueue racing the deletion of its store


def test_an_enqueue_racing_the_deletion_of_its_store_names_the_store(conn: psycopg.Connection, db_url: str) -> None:
    store_id = conn.execute("INSERT INTO dispensaries (name) VALUES ('Doomed') RETURNING id").fetchone()[0]
    with psycopg.connect(db_url) as deleter, bounded(db_url, autocommit=True) as producer:
        deleter.execute("DELETE FROM dispensaries WHERE id = %s", (store_id,))  # not committed yet
        outcome: list[BaseException | None] = []

        def enqueue() -> None:
            try:
                producer.execute("SELECT enqueue_task('product_refresh', dispensary_id := %s)", (store_id,))
                outcome.append(None)
            except psycopg.Error as error:
                outcome.append(error)

        racer = threading.Thread(target=enqueue)
        racer.start()
        time.sleep(0.3)  # the enqueue now waits for the deletion's outcome
        deleter.commit()
        racer.join(BOUND_SECONDS + 1)
    assert len(outcome) == 1 and isinstance(outcome[0], psycopg.errors.ForeignKeyViolation), outcome
    assert outcome[0].diag.message_primary == f"dispensary {store_id} does not exist"
    assert conn.execute("SELECT count(*) FROM worker_tasks").fetchone() == (0,)


def test_a_store_deleted_after_an_enqueue_cancels_its_task(conn: psycopg.Connection, db_url: str) -> None:
    # The other order: the enqueue holds the store, the deletion waits and then cancels its task.
    store_id = conn.execute("INSERT INTO dispensaries (name) VALUES ('Doomed') RETURNING id").fetchone()[0]
    with psycopg.connect(db_url) as producer, bounded(db_url) as deleter:
        producer.execute("SELECT enqueue_task('product_refresh', dispensary_id := %s)", (store_id,))
        racer = threading.Thread(target=lambda: (deleter.execute("DELETE FROM dispensaries WHERE id = %s", (store_id,)), deleter.commit()))
        racer.start()
        time.sleep(0.3)
        producer.commit()
        racer.join(BOUND_SECONDS + 1)
    assert conn.execute("SELECT status, dispensary_id FROM worker_tasks").fetchall() == [("cancelled", None)]


# Issue 17, item 8: dedupe keys with a window, and keys made of the task's content

SESSIONS = 12
RACES = 5


def noon_today(conn: psycopg.Connection) -> None:
    """Put taskpool's clock at noon (UTC) of today and let it run: a day's window has half a day
    left, whatever the hour the test runs at."""
    conn.execute("SELECT set_taskpool_clock_offset(date_trunc('day', now(), 'UTC') + interval '12 hours' - now())")


def race(db_url: str, statement: str, params: tuple[object, ...]) -> list[int]:
    """SESSIONS sessions run `statement` (an enqueue answering id) at once, each in its own
    transaction, committed; the ids they were answered, or the first error."""
    barrier = threading.Barrier(SESSIONS)
    ids: list[int] = []
    errors: list[BaseException] = []

    def session() -> None:
        with bounded(db_url) as producer:
            barrier.wait()
            try:
                ids.append(producer.execute(statement, params).fetchone()[0])
                producer.commit()
            except psycopg.Error as error:
                errors.append(error)

    threads = [threading.Thread(target=session) for _ in range(SESSIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [f"{type(error).__name__}: {error}" for error in errors] == []
    return ids


def test_sessions_enqueueing_one_windowed_key_at_once_get_one_task(conn: psycopg.Connection, db_url: str) -> None:
    noon_today(conn)
    enqueue = "SELECT id FROM enqueue_task('analytics_refresh', dedupe_key := %s, dedupe_window := interval '1 day')"
    for n in range(RACES):
        key = f"daily:{n}"
        fresh = race(db_url, enqueue, (key,))
        assert len(fresh) == SESSIONS and len(set(fresh)) == 1, fresh
        # Finished, the task still holds the key for the day: the next race is answered with it.
        conn.execute("SELECT cancel_task(%s)", (fresh[0],))
        again = race(db_url, enqueue, (key,))
        assert set(again) == set(fresh)
        assert conn.execute("SELECT count(*) FROM worker_tasks WHERE dedupe_key = %s", (key,)).fetchone() == (1,)


def test_sessions_enqueueing_one_content_at_once_get_one_task(conn: psycopg.Connection, db_url: str) -> None:
    noon_today(conn)
    enqueue = (
        "SELECT id FROM enqueue_tasks(jsonb_build_array(jsonb_build_object("
        "'role', 'analytics_refresh', 'payload', jsonb_build_object('day', %s::integer),"
        " 'dedupe_by_content', true, 'dedupe_window', '1 day')))"
    )
    for n in range(RACES):
        ids = race(db_url, enqueue, (n,))
        assert len(ids) == SESSIONS and len(set(ids)) == 1, ids
        assert conn.execute(
            "SELECT dedupe_key = task_spec_hash('analytics_refresh', NULL, jsonb_build_object('day', %s::integer))"
            " FROM worker_tasks WHERE id = %s",
            (n, ids[0]),
        ).fetchone() == (True,)
    assert conn.execute("SELECT count(*) FROM worker_tasks").fetchone() == (RACES,)


def test_an_enqueue_waits_for_an_open_one_of_its_period_and_answers_its_task(conn: psycopg.Connection, db_url: str) -> None:
    noon_today(conn)
    enqueue = "SELECT id FROM enqueue_task('analytics_refresh', dedupe_key := 'held', dedupe_window := interval '1 day')"
    with psycopg.connect(db_url) as first, bounded(db_url, autocommit=True) as second:
        (first_id,) = first.execute(enqueue).fetchone()  # left open
        (first_id,) = first.execute("SELECT id FROM cancel_task(%s)", (first_id,)).fetchone()  # finished, uncommitted
        answered: list[object] = []

        def enqueue_second() -> None:
            try:
                answered.append(second.execute(enqueue).fetchone()[0])
            except psycopg.Error as error:
                answered.append(error)

        racer = threading.Thread(target=enqueue_second)
        racer.start()
        backend = second.info.backend_pid
        # The second enqueue is waiting on the first's transaction once it holds no lock yet granted.
        while not conn.execute(
            "SELECT EXISTS (SELECT FROM pg_locks WHERE pid = %s AND NOT granted)", (backend,)
        ).fetchone()[0]:
            assert racer.is_alive() and not answered, answered
            time.sleep(0.01)
        first.commit()
        racer.join(BOUND_SECONDS + 1)
    assert answered == [first_id]


def test_a_repeatable_read_enqueue_that_missed_a_finished_task_of_its_period_fails_to_serialize(
    conn: psycopg.Connection, db_url: str
) -> None:
    noon_today(conn)
    enqueue = "SELECT id FROM enqueue_task('analytics_refresh', dedupe_key := 'rr', dedupe_window := interval '1 day')"
    with psycopg.connect(db_url) as late:
        late.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        late.execute("SELECT 1")  # its snapshot, taken before the other task exists
        (done,) = conn.execute(enqueue).fetchone()
        conn.execute("SELECT cancel_task(%s)", (done,))
        # Its snapshot cannot see the task that holds the period, and it must not add a second one.
        try:
            late.execute(enqueue)
            raised: BaseException | None = None
        except psycopg.errors.SerializationFailure as error:
            raised = error
        late.rollback()
    assert raised is not None
    assert conn.execute("SELECT count(*) FROM worker_tasks WHERE dedupe_key = 'rr'").fetchone() == (1,)
