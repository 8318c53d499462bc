"""`python -m bench.history` (`make bench-history`): the queue with a large history of finished
tasks (issue 31, item 4).

It loads N finished tasks (10 million by default) straight into worker_task_history with
generate_series, spread over whole UTC days (a load through the functions would take hours and
measure the enqueue, not the history), and reports:

- the SQL cost per task of a claim (claim_and_start_tasks, 100 a call) and of a completion
  (complete_tasks, 100 a call) with an empty history and with N tasks in it;
- the query times of a /metrics scrape (taskpool_metrics()), v_task_counts and the dashboard's
  overview (its queries, as pyworker.contrib.dashboard runs them);
- the dead tuples and the size of the hot table, worker_tasks, sampled through a churn of enqueues,
  claims and completions at a steady rate, with the tick (fold, move to the history, retention)
  every --tick-seconds;
- the time to drop a day of history: retention's _drop_task_history_partitions on the oldest day.

It prints a table and writes results/bench-history-<time>.{json,md} (bench-history-latest.*).
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click
import psycopg

from bench.__main__ import git_revision, server_label
from bench.figures import progress
from pyworker.admin.queries import AdminDatabase
from pyworker.contrib.dashboard.app import overview_data
from testkit import databases
from testkit.env import REPO_ROOT, server_url

TEMPLATE = "taskpool_bench_history_template"
BENCH_DB = "taskpool_bench_history"
ROLE = "bench_history"
WORKER = "bench-history-worker"
BATCH = 100
ENQUEUE_BATCH = 10_000  # enqueue_tasks takes at most this many a call
# The statuses of the loaded history, per thousand tasks: what a busy pool's history looks like.
STATUS_MIX = (("completed", 900), ("failed", 70), ("cancelled", 30))


class HistoryBenchError(Exception):
    """A step of the history bench failed; the message says which."""


def timed(action: Any) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def median_seconds(action: Any, repeat: int) -> float:
    return statistics.median(timed(action) for _ in range(repeat))


def set_up(conn: psycopg.Connection) -> None:
    conn.execute(
        "INSERT INTO task_roles (role, description, max_retries) VALUES (%s, 'make bench-history', 0)"
        " ON CONFLICT DO NOTHING", (ROLE,),
    )
    # the tick moves what finished a minute ago (the fold's own floor), not five
    conn.execute("SELECT set_task_history(history_after := interval '1 minute')")
    # the loaded days stay until the bench drops one itself: the churn's ticks retain nothing
    conn.execute("SELECT set_retention_policy(p.name, enabled := false) FROM retention_policies p")


def cycle_costs(db: AdminDatabase, conn: psycopg.Connection, tasks: int) -> dict[str, float]:
    """Enqueue `tasks`, then claim and complete them BATCH at a time; µs per task of each call."""
    for first in range(1, tasks + 1, ENQUEUE_BATCH):
        conn.execute(
            "SELECT count(*) FROM enqueue_tasks((SELECT jsonb_agg(jsonb_build_object('role', %s::text,"
            " 'payload', jsonb_build_object('n', g))) FROM generate_series(%s::integer, %s::integer) g))",
            (ROLE, first, min(tasks, first + ENQUEUE_BATCH - 1)),
        )
    claim = complete = 0.0
    done = 0
    while done < tasks:
        started = time.perf_counter()
        claimed = db.claim_and_start_tasks(ROLE, WORKER, BATCH)
        claim += time.perf_counter() - started
        if not claimed:
            raise HistoryBenchError(f"claimed nothing after {done} of {tasks} tasks")
        completions = [
            {"task_id": t.id, "attempt": t.attempt, "claim_token": t.claim_token, "result": None, "follow_ups": None}
            for t in claimed
        ]
        started = time.perf_counter()
        answers = db.complete_tasks(WORKER, completions)
        complete += time.perf_counter() - started
        if set(answers.values()) != {"completed"}:
            raise HistoryBenchError(f"completions answered {set(answers.values())}")
        done += len(claimed)
    return {"claim_us_per_task": round(claim / done * 1e6, 1), "complete_us_per_task": round(complete / done * 1e6, 1)}


def load_history(conn: psycopg.Connection, tasks: int, days: int) -> dict[str, Any]:
    """`tasks` finished tasks straight into the history, over the `days` whole UTC days before
    today, with their counts; ids taken from worker_tasks' sequence so that none is reused."""
    started = time.perf_counter()
    first_day = conn.execute("SELECT (now() AT TIME ZONE 'UTC')::date - %s", (days,)).fetchone()[0]
    conn.execute(
        "SELECT _create_task_history_partitions(ARRAY(SELECT %s::date + d FROM generate_series(0, %s - 1) d))",
        (first_day, days),
    )
    first_id = conn.execute(
        "SELECT setval(pg_get_serial_sequence('worker_tasks', 'id'),"
        " nextval(pg_get_serial_sequence('worker_tasks', 'id')) + %s)", (tasks,),
    ).fetchone()[0] - tasks
    status_case = "CASE " + " ".join(
        f"WHEN g %% 1000 < {sum(share for _, share in STATUS_MIX[:i + 1])} THEN '{name}'"
        for i, (name, _) in enumerate(STATUS_MIX)
    ) + " END"
    per_chunk = 1_000_000
    for chunk_start in range(0, tasks, per_chunk):
        chunk_end = min(tasks, chunk_start + per_chunk)
        conn.execute(
            f"""
            INSERT INTO worker_task_history
            SELECT %(first_id)s + g, %(role)s, NULL, NULL, s.status, 0, f.finished - interval '2 seconds',
                   jsonb_build_object('n', g %% 100000), NULL, 'bench-history-load', 1,
                   f.finished - interval '1 second', f.finished - interval '1 second', f.finished - interval '1 second',
                   NULL, f.finished, NULL, CASE WHEN s.status = 'failed' THEN 'bench failure' END, 0, 0,
                   f.finished - interval '3 seconds', f.finished, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                   'sha256:' || encode(sha256(convert_to(jsonb_build_array(%(role)s::text, NULL::integer,
                       jsonb_build_object('n', g %% 100000))::text, 'UTF8')), 'hex')
            FROM generate_series(%(from)s, %(to)s - 1) g
            CROSS JOIN LATERAL (SELECT {status_case} AS status) s
            CROSS JOIN LATERAL (SELECT (%(first_day)s::date::timestamp AT TIME ZONE 'UTC')
                                       + (g::double precision / %(tasks)s * %(days)s) * interval '1 day' AS finished) f
            """,
            {"first_id": first_id, "role": ROLE, "from": chunk_start, "to": chunk_end, "first_day": first_day,
             "tasks": tasks, "days": days},
        )
        progress(f"history: loaded {chunk_end:,} of {tasks:,}")
    conn.execute(
        "INSERT INTO task_history_counts (day, status, role, tasks)"
        " SELECT (h.completed_at AT TIME ZONE 'UTC')::date, h.status, h.role, count(*)"
        " FROM worker_task_history h WHERE h.role = %s GROUP BY 1, 2, 3"
        " ON CONFLICT (day, status, role) DO UPDATE SET tasks = task_history_counts.tasks + excluded.tasks",
        (ROLE,),
    )
    conn.execute("ANALYZE worker_task_history")
    conn.execute("ANALYZE task_history_counts")
    size = conn.execute("SELECT sum(pg_total_relation_size(c.oid))::bigint FROM pg_partition_tree('worker_task_history') t"
                        " JOIN pg_class c ON c.oid = t.relid").fetchone()[0]
    return {"tasks": tasks, "days": days, "seconds": round(time.perf_counter() - started, 1), "size_bytes": size,
            "method": "generate_series INSERT into worker_task_history, then its counts"}


def query_times(db: AdminDatabase, conn: psycopg.Connection, repeat: int) -> dict[str, float]:
    """Median milliseconds of each read that must stay fast whatever the history holds, once
    the hot table's statistics are fresh (as autovacuum's analyze keeps them)."""
    conn.execute("ANALYZE worker_tasks")
    return {
        "taskpool_metrics_ms": round(median_seconds(lambda: conn.execute("SELECT * FROM taskpool_metrics()").fetchall(), repeat) * 1e3, 1),
        "v_task_counts_ms": round(median_seconds(lambda: conn.execute("SELECT * FROM v_task_counts").fetchall(), repeat) * 1e3, 1),
        "dashboard_overview_ms": round(median_seconds(lambda: overview_data(db), repeat) * 1e3, 1),
    }


class Churn:
    """Enqueue, claim and complete `rate` tasks a second for `seconds`, tick every `tick_seconds`,
    and sample the hot table's dead tuples and size every second."""

    def __init__(self, url: str, rate: int, seconds: float, tick_seconds: float) -> None:
        self.url, self.rate, self.seconds, self.tick_seconds = url, rate, seconds, tick_seconds
        self.samples: list[dict[str, Any]] = []
        self.ticks: list[dict[str, Any]] = []
        self.completed = 0
        self.behind_seconds = 0.0

    def run(self) -> dict[str, Any]:
        stop = threading.Event()
        sampler = threading.Thread(target=self._sample, args=(stop,), daemon=True)
        sampler.start()
        try:
            self._work()
        finally:
            stop.set()
            sampler.join(10)
        dead = [s["dead_tuples"] for s in self.samples]
        size = [s["size_bytes"] for s in self.samples]
        rows = [s["rows"] for s in self.samples]
        half = len(self.samples) // 2
        return {
            "rate_per_second": self.rate, "seconds": self.seconds, "tick_seconds": self.tick_seconds,
            "completed": self.completed, "behind_seconds": round(self.behind_seconds, 1),
            "moved_to_history": sum(t.get("moved_to_history", 0) for t in self.ticks),
            "ticks": len(self.ticks),
            "hot_dead_tuples": {"max": max(dead, default=0), "end": dead[-1] if dead else 0,
                                "max_second_half": max(dead[half:], default=0)},
            "hot_size_bytes": {"start": size[0] if size else 0, "max": max(size, default=0), "end": size[-1] if size else 0},
            "hot_rows": {"max": max(rows, default=0), "end": rows[-1] if rows else 0},
            "samples": len(self.samples),
        }

    def _work(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            db = AdminDatabase(self.url, application_name="bench-history-churn")
            started = time.monotonic()
            next_tick = started + self.tick_seconds
            second = 0
            while time.monotonic() - started < self.seconds:
                cycle_costs(db, conn, self.rate)
                self.completed += self.rate
                now = time.monotonic()
                if now >= next_tick:
                    self.ticks.append(conn.execute("SELECT tick_schedules()").fetchone()[0])
                    next_tick += self.tick_seconds
                second += 1
                wait = started + second - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                else:
                    self.behind_seconds -= wait
            db.close()

    def _sample(self, stop: threading.Event) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not stop.is_set():
                row = conn.execute(
                    "SELECT s.n_dead_tup, s.n_live_tup, pg_total_relation_size('worker_tasks')"
                    " FROM pg_stat_user_tables s WHERE s.relid = 'worker_tasks'::regclass"
                ).fetchone()
                self.samples.append({"dead_tuples": row[0], "rows": row[1], "size_bytes": row[2]})
                stop.wait(1.0)


def drop_a_day(conn: psycopg.Connection) -> dict[str, Any]:
    """Retention's drop of the oldest whole day of the history, every status, timed."""
    oldest = conn.execute("SELECT min(day) FROM task_history_counts").fetchone()[0]
    if oldest is None:
        raise HistoryBenchError("the history holds no day to drop")
    started = time.perf_counter()
    dropped = conn.execute(
        "SELECT _drop_task_history_partitions(ARRAY['completed', 'failed', 'cancelled'],"
        " ((%s::date + 1)::timestamp AT TIME ZONE 'UTC'))", (oldest,),
    ).fetchone()[0]
    return {"day": oldest.isoformat(), "tasks": dropped, "seconds": round(time.perf_counter() - started, 3)}


def run(database_url: str, settings: dict[str, Any], in_database: str | None, keep_db: bool) -> dict[str, Any]:
    started = datetime.now(timezone.utc)
    if in_database is None:
        progress(f"history: deploying the plan into {TEMPLATE} on {server_label(database_url)}")
        try:
            databases.template(database_url, TEMPLATE)
            url = databases.create(database_url, BENCH_DB, TEMPLATE)
        except databases.DatabaseError as error:
            raise HistoryBenchError(f"deploying the bench's database: {error}") from error
    else:
        url = in_database
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            set_up(conn)
            db = AdminDatabase(url, application_name="bench-history")
            db.register_worker(WORKER, [ROLE], "bench", os.getpid(), BATCH)
            progress("history: claim and completion with an empty history")
            cycle_costs(db, conn, settings["cycle_tasks"] // 4)  # warm the caches and plans
            empty = cycle_costs(db, conn, settings["cycle_tasks"])
            empty_queries = query_times(db, conn, settings["repeat"])
            # Both sides start from a hot table without finished tasks: the empty side's go now
            # (the history is empty yet, so the prune touches nothing else).
            conn.execute("SELECT prune_tasks(interval '0')")
            progress(f"history: loading {settings['tasks']:,} finished tasks")
            load = load_history(conn, settings["tasks"], settings["days"])
            progress(f"history: claim and completion with {settings['tasks']:,} tasks in the history")
            cycle_costs(db, conn, settings["cycle_tasks"] // 4)
            loaded = cycle_costs(db, conn, settings["cycle_tasks"])
            loaded_queries = query_times(db, conn, settings["repeat"])
            db.close()
            progress(f"history: churn at {settings['churn_rate']}/s for {settings['churn_seconds']:g} s")
            churn = Churn(url, settings["churn_rate"], settings["churn_seconds"], settings["tick_seconds"]).run()
            progress("history: dropping the oldest day")
            drop = drop_a_day(conn)
            database_size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    finally:
        if in_database is None and not keep_db:
            databases.drop(database_url, BENCH_DB)
            databases.drop(database_url, TEMPLATE)
    ratio = {key: round(loaded[key] / empty[key], 2) if empty[key] else None for key in empty}
    return {
        "meta": {"started_at": started.strftime("%Y-%m-%dT%H:%M:%S+0000"), "revision": git_revision(REPO_ROOT),
                 "server": server_label(url), "settings": settings, "database_size_bytes": database_size},
        "load": load,
        "cycle": {"empty_history": empty, "loaded_history": loaded, "loaded_over_empty": ratio},
        "queries": {"empty_history": empty_queries, "loaded_history": loaded_queries},
        "churn": churn,
        "drop_a_day": drop,
    }


def text_report(report: dict[str, Any]) -> str:
    cycle, queries, churn, drop = report["cycle"], report["queries"], report["churn"], report["drop_a_day"]
    tasks = report["load"]["tasks"]
    lines = [
        f"{'figure':<34} {'empty history':>14} {f'{tasks:,} in history':>20} {'ratio':>7}",
        f"{'-' * 34} {'-' * 14} {'-' * 20} {'-' * 7}",
    ]
    for key, label in (("claim_us_per_task", "claim, µs a task (100 a call)"),
                       ("complete_us_per_task", "completion, µs a task (100 a call)")):
        lines.append(f"{label:<34} {cycle['empty_history'][key]:>14} {cycle['loaded_history'][key]:>20}"
                     f" {cycle['loaded_over_empty'][key]:>7}")
    for key, label in (("taskpool_metrics_ms", "/metrics (taskpool_metrics), ms"),
                       ("v_task_counts_ms", "v_task_counts, ms"),
                       ("dashboard_overview_ms", "dashboard overview, ms")):
        lines.append(f"{label:<34} {queries['empty_history'][key]:>14} {queries['loaded_history'][key]:>20}")
    lines += [
        "",
        f"load: {tasks:,} tasks over {report['load']['days']} days in {report['load']['seconds']} s "
        f"({report['load']['size_bytes'] / 2**20:,.0f} MiB, {report['load']['method']})",
        f"churn: {churn['rate_per_second']}/s for {churn['seconds']:g} s, tick every {churn['tick_seconds']:g} s: "
        f"{churn['completed']:,} completed, {churn['moved_to_history']:,} moved to the history, "
        f"{churn['behind_seconds']} s behind the rate",
        f"hot table: dead tuples max {churn['hot_dead_tuples']['max']:,} (second half {churn['hot_dead_tuples']['max_second_half']:,},"
        f" end {churn['hot_dead_tuples']['end']:,}); size {churn['hot_size_bytes']['start'] / 2**20:.1f} MiB at start,"
        f" max {churn['hot_size_bytes']['max'] / 2**20:.1f}, end {churn['hot_size_bytes']['end'] / 2**20:.1f};"
        f" rows max {churn['hot_rows']['max']:,}",
        f"drop a day: {drop['tasks']:,} tasks of {drop['day']} in {drop['seconds']} s",
    ]
    return "\n".join(lines)


def write(results_dir: Path, report: dict[str, Any]) -> tuple[Path, Path]:
    results_dir.mkdir(parents=True, exist_ok=True)
    stamp = report["meta"]["started_at"].replace("-", "").replace(":", "").replace("+0000", "Z")
    json_path = results_dir / f"bench-history-{stamp}.json"
    md_path = results_dir / f"bench-history-{stamp}.md"
    json_path.write_text(json.dumps(report, indent=2) + "\n")
    md_path.write_text(f"# make bench-history\n\n{report['meta']['started_at']}, revision "
                       f"{report['meta']['revision']}, {report['meta']['server']}\n\n```\n{text_report(report)}\n```\n")
    for path, latest in ((json_path, "bench-history-latest.json"), (md_path, "bench-history-latest.md")):
        (results_dir / latest).write_text(path.read_text())
    return json_path, md_path


FULL = {"tasks": 10_000_000, "days": 10, "cycle_tasks": 20_000, "churn_rate": 200, "churn_seconds": 1800.0,
        "tick_seconds": 60.0, "repeat": 5}
QUICK = {"tasks": 100_000, "days": 3, "cycle_tasks": 2_000, "churn_rate": 100, "churn_seconds": 20.0,
         "tick_seconds": 5.0, "repeat": 3}


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--quick", is_flag=True, help=f"{QUICK['tasks']:,} tasks and a {QUICK['churn_seconds']:g} s churn.")
@click.option("--tasks", type=click.IntRange(min=1000), help=f"Finished tasks loaded (default {FULL['tasks']:,}).")
@click.option("--days", type=click.IntRange(min=2, max=400), help=f"Whole days they span (default {FULL['days']}).")
@click.option("--churn-seconds", type=click.FloatRange(min=1), help=f"Seconds of churn (default {FULL['churn_seconds']:g}).")
@click.option("--churn-rate", type=click.IntRange(min=1), help=f"Tasks a second in the churn (default {FULL['churn_rate']}).")
@click.option("--tick-seconds", type=click.FloatRange(min=1), help=f"Seconds between ticks in the churn (default {FULL['tick_seconds']:g}).")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path),
              default=REPO_ROOT / "results", show_default=True, help="Where the JSON and Markdown go.")
@click.option("--database-url", envvar="DATABASE_URL", default=server_url, show_envvar=True,
              metavar="URL", help="The server; the bench makes its own databases there.")
@click.option("--keep-db", is_flag=True, help=f"Leave the database {BENCH_DB} for a look afterwards.")
@click.option("--in-database", metavar="URL",
              help="Run in this database, deployed already, instead of making one: it gets a role and the load, "
                   "its retention policies are disabled and its finished tasks pruned before the load.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON instead of the table.")
def main(quick: bool, tasks: int | None, days: int | None, churn_seconds: float | None, churn_rate: int | None,
         tick_seconds: float | None, results_dir: Path, database_url: str, keep_db: bool,
         in_database: str | None, as_json: bool) -> None:
    """Load a history of finished tasks; report the queue's costs and reads with it, the hot
    table through a churn, and the drop of a day."""
    given = {"tasks": tasks, "days": days, "churn_seconds": churn_seconds, "churn_rate": churn_rate,
             "tick_seconds": tick_seconds}
    settings = {**(QUICK if quick else FULL), **{k: v for k, v in given.items() if v is not None}}
    try:
        report = run(database_url, settings, in_database, keep_db)
    except HistoryBenchError as error:
        raise click.ClickException(str(error)) from error
    json_path, md_path = write(results_dir, report)
    click.echo(json.dumps(report, indent=2) if as_json else text_report(report))
    click.echo(f"\nWritten: {json_path}, {md_path}", err=as_json)


if __name__ == "__main__":
    main()
