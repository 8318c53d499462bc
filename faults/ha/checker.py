"""What a failover cost, from the records kept outside the database and what the new primary holds.

- lost enqueues: acknowledged enqueues (the producer's keys) the database does not hold finished;
  by key, not id: a promoted replica that never saw an enqueue hands its id out again;
- lost completions: completions a worker logged as acknowledged that the database does not hold:
  per task and worker, those acknowledged beyond the commits the completion trigger logged;
- ran twice: tasks the handler began more than once (faults/ha/handlers.py's records);
- completed twice: tasks whose completion was acknowledged more than once, or committed more than
  once (a claim forgotten by the failover, run and completed again);
- ids reused: task ids the records show under two keys (reported; their completions are not
  told apart).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from faults.checker import ACKED_COMPLETION

UNFINISHED_KEYS = """
SELECT count(*), (array_agg(k.key ORDER BY k.key))[1:10]
FROM unnest(%(keys)s::text[]) AS k(key)
WHERE NOT EXISTS (SELECT FROM worker_tasks t
                  WHERE t.role = 'fault_work' AND t.payload->>'key' = k.key
                    AND t.status IN ('completed', 'failed', 'cancelled'))
"""
COMMITTED_COMPLETIONS = "SELECT task_id, worker_id, count(*) FROM fault_completions GROUP BY task_id, worker_id"


@dataclass
class Cost:
    """What one failover cost, counted by the checker."""

    enqueued: int = 0
    lost_enqueues: int = 0
    lost_enqueue_sample: list[str] = field(default_factory=list)
    acked_completions: int = 0
    lost_completions: int = 0
    executions: int = 0
    ran_twice: int = 0
    completed_twice: int = 0
    ids_reused: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def executions(records: Path) -> list[dict[str, Any]]:
    """Every execution the handlers recorded under `records`."""
    return [json.loads(line) for path in sorted(records.glob("*.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]


def acknowledged_completions(logs: dict[str, str]) -> Counter[tuple[int, str]]:
    """(task id, worker) → how many times that worker logged the task's completion as recorded."""
    counts: Counter[tuple[int, str]] = Counter()
    for worker, text in logs.items():
        for alone, batch in ACKED_COMPLETION.findall(text):
            for task_id in (alone or batch).split(", "):
                counts[int(task_id), worker] += 1
    return counts


def measure(conn: psycopg.Connection, keys: list[str], logs: dict[str, str], records: Path) -> Cost:
    cost = Cost(enqueued=len(keys))
    cost.lost_enqueues, sample = conn.execute(UNFINISHED_KEYS, {"keys": keys}).fetchone()
    cost.lost_enqueue_sample = list(sample or [])

    runs = executions(records)
    cost.executions = len(runs)
    cost.ran_twice = sum(1 for count in Counter(run["key"] for run in runs).values() if count > 1)
    keys_of: dict[int, set[str]] = defaultdict(set)
    for run in runs:
        keys_of[run["task_id"]].add(run["key"])
    reused = {task_id for task_id, seen in keys_of.items() if len(seen) > 1}
    cost.ids_reused = len(reused)

    acked = acknowledged_completions(logs)
    committed = {(task_id, worker): count for task_id, worker, count in conn.execute(COMMITTED_COMPLETIONS)}
    cost.acked_completions = sum(acked.values())
    cost.lost_completions = sum(max(0, count - committed.get(pair, 0)) for pair, count in acked.items())
    acked_per_task: Counter[int] = Counter()
    for (task_id, _worker), count in acked.items():
        acked_per_task[task_id] += count
    committed_per_task: Counter[int] = Counter()
    for (task_id, _worker), count in committed.items():
        committed_per_task[task_id] += count
    twice = {task_id for task_id, count in acked_per_task.items() if count > 1}
    twice |= {task_id for task_id, count in committed_per_task.items() if count > 1}
    cost.completed_twice = len(twice - reused)
    return cost
