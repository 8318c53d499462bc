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


def plans_of(
    conn: psycopg.Connection, statement: str, params: tuple, times: int, analyze: bool = False
) -> list[dict]:
    """The JSON plans of every statement `statement` runs, `times` times over, via auto_explain
    (with `analyze`, each node's actual rows too)."""
    notices: list[str] = []
    conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
    conn.execute("LOAD 'auto_explain'")
    for setting, value in [
        ("auto_explain.log_min_duration", "0"),
        ("auto_explain.log_nested_statements", "on"),
        ("auto_explain.log_format", "json"),
        ("auto_explain.log_level", "notice"),
        ("auto_explain.log_analyze", "on" if analyze else "off"),
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


def test_a_capped_key_at_the_head_of_the_queue_is_not_read(conn: psycopg.Connection) -> None:
    """100,000 pending tasks of a key at its cap, first in claim order: the claim reads none of
    them (no walk of the key, which has no room), and takes the tasks behind them."""
    conn.execute("INSERT INTO task_roles (role) VALUES ('plan_capped')")
    conn.execute("SELECT set_concurrency_limit('key', 'plan_full', 1)")
    conn.execute(
        """
        INSERT INTO worker_tasks (role, priority, payload, headers, created_at)
        SELECT 'plan_capped', 9, '{}', '{"concurrency_key": "plan_full"}', now() - n * interval '1 second'
        FROM generate_series(1, %s) n
        """,
        (PENDING,),
    )
    conn.execute(
        "INSERT INTO worker_tasks (role, payload, headers) SELECT 'plan_capped', '{}', %s::jsonb"
        " FROM generate_series(1, 5)",
        ('{"concurrency_key": "plan_other"}',),
    )
    conn.execute("INSERT INTO worker_tasks (role, payload) SELECT 'plan_capped', '{}' FROM generate_series(1, 5)")
    conn.execute("ANALYZE worker_tasks")
    [(first_key,)] = conn.execute(
        "SELECT headers ->> 'concurrency_key' FROM claim_tasks('plan_capped', 'w0', 1)"
    ).fetchall()
    assert first_key == "plan_full"

    plans = plans_of(conn, "SELECT * FROM claim_tasks('plan_capped', 'w1', 4)", (), times=7, analyze=True)

    keys = [row[0] for row in conn.execute(
        "SELECT headers ->> 'concurrency_key' FROM worker_tasks WHERE role = 'plan_capped' AND status = 'claimed'"
    )]
    assert keys.count("plan_full") == 1 and len(keys) == 1 + 10
    all_nodes = [node for plan in plans for node in nodes(plan)]
    reads = [node for node in all_nodes if node.get("Relation Name") == "worker_tasks"]
    assert [node for node in reads if node["Node Type"] in ("Seq Scan", "Bitmap Heap Scan")] == []
    # Each walk reads at most a batch's rows; the full key's 100,000 are never walked.
    assert reads and all("Actual Rows" in node for node in reads)
    assert max(node["Actual Rows"] for node in reads) <= 4, sorted(
        (node["Actual Rows"], node.get("Index Name")) for node in reads)[-5:]
