"""The checker: what happened, read from the database and the worker logs, against the invariants.

- lost: an acknowledged enqueue (an id enqueue_tasks returned) that is missing or not terminal;
- duplicated completions: a task turned completed by more than one commit (fault_completions,
  written by a trigger in the completing transaction), or a completion a worker logged as
  acknowledged that the database does not hold; must be 0;
- duplicate executions: handler executions beyond one per task (allowed; reported);
- store overlaps: two executions of one store's tasks overlapping in time (an execution cut
  short by a kill ends at the kill); must be 0;
- recovery: for each task a kill orphaned, the time from the kill to its next claim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import psycopg

from faults.harness import percentile

LOST = """
SELECT count(*) FILTER (WHERE t.id IS NULL),
       count(*) FILTER (WHERE t.status IN ('pending', 'claimed', 'running')),
       array_agg(e.id ORDER BY e.id) FILTER (WHERE t.id IS NULL OR t.status IN ('pending', 'claimed', 'running'))
FROM unnest(%(ids)s::bigint[]) AS e(id)
LEFT JOIN worker_tasks t ON t.id = e.id
"""
DUPLICATED_COMPLETIONS = """
SELECT count(*), array_agg(task_id ORDER BY task_id)
FROM (SELECT task_id FROM fault_completions GROUP BY task_id HAVING count(*) > 1) twice
"""
DUPLICATE_EXECUTIONS = "SELECT count(*) - count(DISTINCT task_id) FROM fault_executions"
# An execution never closed ended when its process died (a kill or a death the harness saw),
# else it is still open now. A process stopped (SIGSTOP) executes nothing until it is continued:
# its execution is two spans, before the stop and after the continue. Sorted per store by start,
# a span overlaps when it starts before the latest end among the spans that started before it.
STORE_OVERLAPS = """
WITH closed AS (
    SELECT e.id, e.task_id, e.dispensary_id, e.pid, e.started_at,
           coalesce(e.ended_at,
                    (SELECT min(k.at) FROM fault_events k
                     WHERE k.kind IN ('kill', 'died') AND k.pid = e.pid AND k.at >= e.started_at),
                    clock_timestamp()) AS ended_at
    FROM fault_executions e
    WHERE e.dispensary_id IS NOT NULL
),
pauses AS (
    SELECT s.pid, s.at AS stopped_at,
           coalesce((SELECT min(c.at) FROM fault_events c
                     WHERE c.kind = 'sigcont' AND c.pid = s.pid AND c.at >= s.at), 'infinity') AS resumed_at
    FROM fault_events s
    WHERE s.kind = 'sigstop'
),
spans AS (
    SELECT c.id, c.task_id, c.dispensary_id, c.started_at, coalesce(p.stopped_at, c.ended_at) AS ended_at
    FROM closed c
    LEFT JOIN pauses p ON p.pid = c.pid AND p.stopped_at BETWEEN c.started_at AND c.ended_at
    UNION ALL
    SELECT c.id, c.task_id, c.dispensary_id, p.resumed_at, c.ended_at
    FROM closed c
    JOIN pauses p ON p.pid = c.pid AND p.stopped_at BETWEEN c.started_at AND c.ended_at
    WHERE p.resumed_at < c.ended_at
),
ordered AS (
    SELECT x.*, max(x.ended_at) OVER (PARTITION BY x.dispensary_id ORDER BY x.started_at, x.id
                                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous_end
    FROM spans x
)
SELECT count(*), array_agg(task_id ORDER BY task_id) FROM ordered WHERE previous_end > started_at
"""
# The next claim of an orphaned attempt: from the attempt history, or the task itself.
RECOVERY = """
SELECT o.task_id, extract(epoch FROM coalesce(a.claimed_at, n.claimed_at) - k.at)::float8 AS seconds, t.status
FROM fault_events k
CROSS JOIN LATERAL jsonb_to_recordset(
    (SELECT jsonb_agg(jsonb_build_object('task_id', p->0, 'attempt', p->1))
     FROM jsonb_array_elements(k.detail->'orphans') p)) AS o(task_id bigint, attempt integer)
JOIN worker_tasks t ON t.id = o.task_id
LEFT JOIN worker_task_attempts a ON a.task_id = o.task_id AND a.attempt = o.attempt + 1
LEFT JOIN worker_tasks n ON n.id = o.task_id AND n.attempt = o.attempt + 1
WHERE k.detail ? 'orphans'
"""
COMPLETED_IDS = "SELECT id FROM worker_tasks WHERE status = 'completed' AND id = ANY(%(ids)s::bigint[])"
# A completion the worker logged as recorded: alone, or in a batch (one line per complete_tasks
# call, as a worker running many tasks at once mostly records them).
ACKED_COMPLETION = re.compile(r"Task (\d+) completed successfully|Completed \d+ tasks \(([\d, ]+)\)")


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""


@dataclass
class Metrics:
    tasks: int = 0
    lost: int = 0
    lost_sample: list[int] = field(default_factory=list)
    duplicated_completions: int = 0
    duplicated_sample: list[int] = field(default_factory=list)
    acked_completions: int = 0
    acked_missing: list[int] = field(default_factory=list)
    duplicate_executions: int = 0
    store_overlaps: int = 0
    overlap_sample: list[int] = field(default_factory=list)
    recovery: list[float] = field(default_factory=list)
    unrecovered: list[int] = field(default_factory=list)

    def recovery_summary(self) -> dict[str, float | None]:
        return {
            "p50": percentile(self.recovery, 0.50),
            "p99": percentile(self.recovery, 0.99),
            "max": max(self.recovery) if self.recovery else None,
            "orphans": len(self.recovery) + len(self.unrecovered),
        }

    def invariants(self) -> list[Check]:
        """The invariants every scenario holds: nothing lost, nothing completed twice, no overlap."""
        return [
            Check("nothing lost", self.lost == 0, f"{self.lost} lost, e.g. {self.lost_sample[:10]}"),
            Check(
                "no task completed twice",
                self.duplicated_completions == 0,
                f"{self.duplicated_completions} completed twice, e.g. {self.duplicated_sample[:10]}",
            ),
            Check(
                "every acknowledged completion is in the database",
                not self.acked_missing,
                f"{len(self.acked_missing)} of {self.acked_completions} missing, e.g. {self.acked_missing[:10]}",
            ),
            Check(
                "no store overlaps",
                self.store_overlaps == 0,
                f"{self.store_overlaps} overlapping executions, e.g. tasks {self.overlap_sample[:10]}",
            ),
        ]


def measure(
    conn: psycopg.Connection, task_ids: list[int], logs: dict[str, str] | None = None
) -> Metrics:
    """The metrics of a scenario whose acknowledged enqueues are `task_ids`."""
    metrics = Metrics(tasks=len(task_ids))
    missing, unfinished, sample = conn.execute(LOST, {"ids": task_ids}).fetchone()
    metrics.lost = missing + unfinished
    metrics.lost_sample = list(sample or [])[:20]
    count, sample = conn.execute(DUPLICATED_COMPLETIONS).fetchone()
    metrics.duplicated_completions = count
    metrics.duplicated_sample = list(sample or [])[:20]
    metrics.duplicate_executions = conn.execute(DUPLICATE_EXECUTIONS).fetchone()[0]
    count, sample = conn.execute(STORE_OVERLAPS).fetchone()
    metrics.store_overlaps = count
    metrics.overlap_sample = list(sample or [])[:20]
    for task_id, seconds, status in conn.execute(RECOVERY).fetchall():
        if seconds is not None and seconds >= 0:
            metrics.recovery.append(seconds)
        elif status not in ("failed", "cancelled", "completed"):
            metrics.unrecovered.append(task_id)
    if logs:
        acked = sorted({
            int(task_id)
            for text in logs.values()
            for alone, batch in ACKED_COMPLETION.findall(text)
            for task_id in (alone or batch).split(", ")
        })
        metrics.acked_completions = len(acked)
        held = {row[0] for row in conn.execute(COMPLETED_IDS, {"ids": acked})}
        metrics.acked_missing = [task_id for task_id in acked if task_id not in held]
    return metrics


def as_dict(metrics: Metrics) -> dict[str, Any]:
    return {
        "tasks": metrics.tasks,
        "lost": metrics.lost,
        "duplicated_completions": metrics.duplicated_completions,
        "acked_completions": metrics.acked_completions,
        "acked_missing": len(metrics.acked_missing),
        "duplicate_executions": metrics.duplicate_executions,
        "store_overlaps": metrics.store_overlaps,
        "recovery": metrics.recovery_summary(),
        "unrecovered": metrics.unrecovered[:20],
    }
