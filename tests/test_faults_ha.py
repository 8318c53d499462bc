"""The failover suite's own parts (faults/ha, testkit/patroni.py), without a Patroni pair.

A scenario needs a pair of its own (etcd, two PostgreSQL nodes, HAProxy: about 30 s to start on
this machine) and runs for more than a minute even in its quick form, so the scenarios are not in
`make test`: `make faults-ha` runs them (docs/reliability.md). Here: the command refuses bad input
before it starts anything, the checker counts what a failover cost from the records it is given
against a real database, and progress is timed from the right sample.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg.types.json import Jsonb

from faults.ha import checker
from faults.ha.__main__ import main
from faults.ha.scenarios import reachable_since
from faults.harness import Context
from testkit.patroni import Ports


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--only", "switchover,no-such-failover"], "no scenario no-such-failover"),
        (["--ports", "56399-56300"], "'56399-56300'"),
        (["--ports", "lots"], "LOW-HIGH"),
        (["--url", "dns"], "'dns'"),
    ],
)
def test_bad_input_is_refused_naming_it_before_anything_starts(args: list[str], named: str, tmp_path: Path) -> None:
    outcome = CliRunner().invoke(main, [*args, "--results", str(tmp_path / "results")])
    assert outcome.exit_code == 2, outcome.output
    assert named in outcome.output
    assert not (tmp_path / "results").exists()


def test_ports_come_from_the_range_each_once() -> None:
    ports = Ports.parse("56300-56399")
    taken = [ports.take() for _ in range(7)]
    assert len(set(taken)) == 7
    assert all(56300 <= port <= 56399 for port in taken)
    assert Ports.parse("").low is None


def test_progress_is_timed_from_the_last_unbroken_run_on_the_new_primary() -> None:
    old, new = 5432, 5433
    samples = [(1.0, old), (2.0, old), (3.0, None), (4.0, new), (5.0, None), (6.0, new), (7.0, new)]
    assert reachable_since(samples, 2.5) == 6.0
    # A switchover may leave no gap between the two servers.
    assert reachable_since([(1.0, old), (2.0, old), (3.0, new), (4.0, new)], 1.5) == 3.0
    assert reachable_since([(1.0, old), (2.0, None)], 0.0) is None
    # No break after the fault yet: the failover has not been seen.
    assert reachable_since([(1.0, old), (2.0, old), (3.0, old)], 1.5) is None


def test_the_checker_counts_each_cost_apart(db_url: str, tmp_path: Path) -> None:
    ctx = Context(db_url, tmp_path)
    try:
        ctx.prepare()
        specs = [{"role": "fault_work", "payload": {"key": key}} for key in ("done", "pending")]
        ids = dict((key, task_id) for task_id, key in ctx.execute(
            "SELECT id, payload->>'key' FROM enqueue_tasks(%s::jsonb)", (Jsonb(specs),)))
        ctx.execute("SELECT cancel_task(%s)", (ids["done"],))
        records = tmp_path / "records"
        records.mkdir()
        runs = [(ids["done"], "done"), (ids["done"], "done"), (ids["pending"], "pending")]
        (records / "w1.jsonl").write_text("".join(
            json.dumps({"task_id": task_id, "attempt": 1, "key": key}) + "\n" for task_id, key in runs))
        # Acknowledged twice (once by each worker), committed never: both completions lost.
        logs = {
            "w1": f"INFO [w1] Task {ids['done']} completed successfully\n",
            "w2": f"INFO [w2] Completed 2 tasks ({ids['done']}, 999999)\n",
        }
        with psycopg.connect(db_url, autocommit=True) as conn:
            cost = checker.measure(conn, ["done", "pending", "never enqueued"], logs, records)
    finally:
        ctx.close()
    assert cost.enqueued == 3
    assert (cost.lost_enqueues, sorted(cost.lost_enqueue_sample)) == (2, ["never enqueued", "pending"])
    assert (cost.acked_completions, cost.lost_completions) == (3, 3)
    assert (cost.executions, cost.ran_twice, cost.completed_twice) == (3, 1, 1)
    assert cost.ids_reused == 0
