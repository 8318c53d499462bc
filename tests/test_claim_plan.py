"""The claim's plan at 100,000 pending tasks: index walks only, never a scan of worker_tasks.

auto_explain logs the plan of every statement claim_task runs, nested ones included, and sends
it to this client as a NOTICE; the test reads those plans. It checks plan shape, not time.
"""

from __future__ import annotations

import json
import re

import psycopg

PENDING = 100_000
STORES = 1_000


def plans_of(conn: psycopg.Connection, statement: str, params: tuple, times: int) -> list[dict]:
    """The JSON plans of every statement `statement` runs, `times` times over, via auto_explain."""
    notices: list[str] = []
    conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
    conn.execute("LOAD 'auto_explain'")
    for setting, value in [
        ("auto_explain.log_min_duration", "0"),
        ("auto_explain.log_nested_statements", "on"),
        ("auto_explain.log_format", "json"),
        ("auto_explain.log_level", "notice"),
    ]:
        conn.execute("SELECT set_config(%s, %s, false)", (setting, value))
    for _ in range(times):
        conn.execute(statement, params).fetchall()
    conn.execute("SELECT set_config('auto_explain.log_min_duration', '-1', false)")
    plans = []
    for message in notices:
        start = message.find("{")
        if "plan:" in message and start >= 0:
            plans.append(json.loads(message[start:])["Plan"])
    return plans


def nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def test_claim_uses_indexes_not_scans_at_100k_pending(conn: psycopg.Connection) -> None:
    conn.execute(
        "INSERT INTO dispensaries (name) SELECT 'store ' || n FROM generate_series(1, %s) n",
        (STORES,),
    )
    # Fixture rows straight into the table: enqueue would take minutes for 100k.
    conn.execute(
        """
        INSERT INTO worker_tasks (role, dispensary_id, priority, payload, created_at)
        SELECT 'product_resync', d.id, (n %% 5), '{}', now() - n * interval '1 second'
        FROM generate_series(1, %s) n
        JOIN dispensaries d ON d.id = (SELECT min(id) FROM dispensaries) + n %% %s
        """,
        (PENDING, STORES),
    )
    conn.execute("ANALYZE worker_tasks")

    # Seven claims: PL/pgSQL switches to a generic plan after five, so both kinds are seen.
    plans = plans_of(conn, "SELECT * FROM claim_task('product_resync', 'w1')", (), times=7)

    claimed = conn.execute(
        "SELECT count(*) FROM worker_tasks WHERE status = 'claimed'"
    ).fetchone()[0]
    assert claimed == 7
    all_nodes = [node for plan in plans for node in nodes(plan)]
    scans_of_tasks = [
        node
        for node in all_nodes
        if node.get("Relation Name") == "worker_tasks"
        and node["Node Type"] in ("Seq Scan", "Bitmap Heap Scan")
    ]
    assert scans_of_tasks == []
    # The busy-store check probes the store's index entry: a hashed subplan would read every
    # active task at each claim (the generic plan's choice without OFFSET 0).
    hashed_names = {name for node in all_nodes for expr in (node.get("Filter"), node.get("Join Filter"))
                    for name in re.findall(r"hashed (SubPlan \d+)", expr or "")}
    hashed_over_tasks = [node["Subplan Name"] for node in all_nodes
                         if node.get("Subplan Name") in hashed_names
                         and any(n.get("Relation Name") == "worker_tasks" for n in nodes(node))]
    assert hashed_over_tasks == []
    used_indexes = {node.get("Index Name") for node in all_nodes}
    assert "worker_tasks_claim_order_idx" in used_indexes
    assert "worker_tasks_one_active_per_dispensary_idx" in used_indexes
