"""Many connections claiming at once: each task claimed exactly once, never two active per store.

The claimers run in threads, one connection each, against a real server. A claimer records the
interval in which it knew it held a task: from the return of the claim's commit to the call of
complete_task. That interval lies inside the task's true active interval in the database, so two
overlapping intervals for one store prove a broken store rule (no false alarms).
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict

import psycopg
import pytest

CLAIMERS = 8
TASKS_WITHOUT_STORE = 1000
TASKS_WITH_STORE = 4000
STORES = 100
ROLE = "concurrency_test"


def seed(conn: psycopg.Connection) -> set[int]:
    """5,000 ready tasks of a test role: 1,000 without a store, 4,000 over 100 stores."""
    conn.execute(
        "INSERT INTO task_roles (role, requires_store) VALUES (%s, false)", (ROLE,)
    )
    store_ids = [
        row[0]
        for row in conn.execute(
            "INSERT INTO dispensaries (name) SELECT 'store ' || n FROM generate_series(1, %s) n"
            " RETURNING id",
            (STORES,),
        )
    ]
    specs = [{"role": ROLE, "payload": {"n": n}} for n in range(TASKS_WITHOUT_STORE)]
    specs += [
        {"role": ROLE, "dispensary_id": store_ids[n % STORES], "payload": {"n": n}}
        for n in range(TASKS_WITH_STORE)
    ]
    ids: set[int] = set()
    for start in range(0, len(specs), 1000):
        rows = conn.execute(
            "SELECT id FROM enqueue_tasks(%s::jsonb)",
            (psycopg.types.json.Jsonb(specs[start : start + 1000]),),
        )
        ids.update(row[0] for row in rows)
    assert len(ids) == TASKS_WITHOUT_STORE + TASKS_WITH_STORE
    return ids


def run_claimers(db_url: str, batch_size: int) -> tuple[list[tuple], list[BaseException]]:
    """Drain the role with CLAIMERS threads; returns (task, store, held_from, held_to) records."""
    records: list[tuple] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def claimer(worker_id: str) -> None:
        try:
            # Durability is not under test here; skipping the fsync keeps the suite quick.
            with psycopg.connect(
                db_url, autocommit=True, options="-c synchronous_commit=off"
            ) as conn:
                idle_rounds = 0
                while True:
                    tasks = conn.execute(
                        "SELECT id, dispensary_id, attempt, claim_token FROM claim_tasks(%s, %s, %s)",
                        (ROLE, worker_id, batch_size),
                    ).fetchall()
                    held_from = time.perf_counter()
                    if not tasks:
                        # Ready tasks may all sit behind busy stores for a moment: stop only
                        # once nothing is pending anywhere.
                        pending = conn.execute(
                            "SELECT count(*) FROM worker_tasks WHERE role = %s AND status = 'pending'",
                            (ROLE,),
                        ).fetchone()[0]
                        if pending == 0:
                            return
                        idle_rounds += 1
                        time.sleep(0.001 * min(idle_rounds, 10))
                        continue
                    idle_rounds = 0
                    for task_id, store_id, attempt, token in tasks:
                        held_to = time.perf_counter()
                        conn.execute(
                            "SELECT complete_task(%s, %s, %s, %s, '{}'::jsonb)",
                            (task_id, worker_id, attempt, token),
                        )
                        with lock:
                            records.append((task_id, store_id, held_from, held_to))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [
        threading.Thread(target=claimer, args=(f"w{n}",), daemon=True) for n in range(CLAIMERS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "claimers did not finish in 300 s"
    return records, errors


def overlapping_stores(records: list[tuple]) -> list[int]:
    """Stores for which two held intervals overlap."""
    by_store: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for _task, store, held_from, held_to in records:
        if store is not None:
            by_store[store].append((held_from, held_to))
    bad = []
    for store, intervals in by_store.items():
        intervals.sort()
        for (_, end), (start, _) in zip(intervals, intervals[1:]):
            if start < end:
                bad.append(store)
                break
    return bad


@pytest.mark.parametrize("batch_size", [1, 10], ids=["claim_one", "claim_batch_of_10"])
def test_every_task_claimed_exactly_once_and_stores_never_overlap(
    conn: psycopg.Connection, db_url: str, batch_size: int
) -> None:
    ids = seed(conn)

    records, errors = run_claimers(db_url, batch_size)

    assert errors == []
    claims = Counter(task for task, *_ in records)
    assert set(claims) == ids
    assert [task for task, count in claims.items() if count > 1] == []
    assert overlapping_stores(records) == []
    by_status = dict(
        conn.execute(
            "SELECT status, count(*) FROM worker_tasks WHERE role = %s GROUP BY status", (ROLE,)
        ).fetchall()
    )
    assert by_status == {"completed": len(ids)}
    assert conn.execute(
        "SELECT max(attempt) FROM worker_tasks WHERE role = %s", (ROLE,)
    ).fetchone()[0] == 1
