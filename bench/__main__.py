"""`python -m bench`: run the figures of issue 6, print the table, write results/bench-<time>.{json,md}.

Every figure is set beside a ceiling pgbench measured on the same server in the same run, so
the ratios mean something on a noisy shared machine. A figure that cannot be measured (a worker
option not there yet, a drained queue) is reported as n/a and fails its target; the run goes on.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import subprocess
import time
import traceback
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

import click
from psycopg.conninfo import conninfo_to_dict

from bench import figures
from bench.figures import FULL, QUICK, Plan, progress
from bench.report import Row, Stat, Target, notes, text_table, write_results
from bench.server import BenchError, Server
from testkit.pgbouncer import PgBouncer, PgBouncerError
from testkit.env import server_url
from testkit.pgbouncer import version as pgbouncer_version

REPO_ROOT = Path(__file__).resolve().parent.parent
GROUPS = ("ceilings", "cycle", "drain", "drain-batched", "drain-batch-runtime", "wakeup", "enqueue", "depth", "history", "io-bound",
          "retention")
GROUP_LABELS = {
    "ceilings": "1 ceilings", "cycle": "9 SQL cycle", "drain": "2 drain, --concurrency 8",
    "drain-batched": "3 drain, --prefetch", "drain-batch-runtime": "3b drain, --batch-runtime",
    "wakeup": "4 wake-up latency", "enqueue": "5 enqueue", "depth": "6 depth", "history": "7 history",
    "io-bound": "10 I/O-bound drain", "retention": "11 drain while pruning",
}
# The ceilings each group compares with: asking for the group measures them too.
NEEDS_CEILINGS = {"cycle", "drain", "drain-batched", "drain-batch-runtime", "enqueue"}


@dataclasses.dataclass
class Run:
    server: Server
    plan: Plan
    prefetch: int
    log_dir: Path
    ceilings: dict[str, float] = dataclasses.field(default_factory=dict)
    rss: dict[str, Stat] = dataclasses.field(default_factory=dict)

    def repeat(self, what: str, measure: Callable[[], float]) -> Stat:
        samples = []
        for n in range(1, self.plan.reps + 1):
            progress(f"{what}, repetition {n} of {self.plan.reps}")
            samples.append(measure())
        return Stat(samples)


def ceiling_rows(run: Run) -> list[Row]:
    plan, server = run.plan, run.server
    rows = []
    for key, figure, measure in (
        ("a", "1a ceiling: 1-row PK UPDATE per transaction", lambda: figures.ceiling_commit(server, plan)),
        ("b", "1b ceiling: claim (SKIP LOCKED) + done, one task", lambda: figures.ceiling_queue(server, plan, 1)),
        ("c", f"1c ceiling: same, batches of {figures.QUEUE_BATCH}",
         lambda: figures.ceiling_queue(server, plan, figures.QUEUE_BATCH)),
    ):
        try:
            stat = run.repeat(f"ceiling ({key})", measure)
        except BenchError as error:
            rows.append(Row(f"ceiling_{key}", figure, "tasks/s", error=str(error)))
            continue
        run.ceilings[key] = stat.median
        rows.append(Row(f"ceiling_{key}", figure, "tx/s" if key == "a" else "tasks/s", stat,
                        note=f"pgbench, {plan.clients} clients, {plan.ceiling_seconds:g} s, plain tables"))
    return rows


def cycle_rows(run: Run) -> list[Row]:
    plan, server = run.plan, run.server
    stat = run.repeat("SQL cycle", lambda: figures.sql_cycle(server, plan))
    return [Row("sql_cycle", "9 SQL cycle: claim_and_start_tasks + complete_task", "tasks/s", stat,
                ceiling_name="(b)", ceiling=run.ceilings.get("b"), target=Target(">=", 0.7, "ratio"),
                note=f"pgbench, {plan.clients} clients, {plan.ceiling_seconds:g} s: "
                     "claim_and_start_tasks(role, w, 1) then complete_task, two transactions a task "
                     "as in 1b, the functions alone (no worker process)")]


def drain_rows(run: Run, batched: bool) -> list[Row]:
    plan = run.plan
    prefetch = run.prefetch if batched else None
    label = f"--concurrency {plan.workers}" + (f" --prefetch {run.prefetch}" if batched else "")
    key = "drain_batched" if batched else "drain"
    samples = [figures.drain(run.server, plan, run.log_dir, prefetch) for _ in _reps(run, f"drain, {label}")]
    rate = Stat([s.rate for s in samples])
    ceiling = ("(c)", run.ceilings.get("c"), Target(">=", 0.6, "ratio")) if batched \
        else ("(b)", run.ceilings.get("b"), Target(">=", 0.9, "ratio"))
    rows = [Row(key, f"{'3' if batched else '2'} drain, {label}", "tasks/s", rate,
                ceiling_name=ceiling[0], ceiling=ceiling[1], target=ceiling[2],
                note=f"{plan.drain_tasks:,} tasks, ONE pyworker process, no-op handler; "
                     "first claimed_at to last completed_at")]
    rows.append(_rss_row(f"rss_{key}", f"8 worker peak RSS, drain {label}", samples, 60))
    return rows


def drain_batch_runtime_rows(run: Run) -> list[Row]:
    label = f"--batch-runtime --concurrency {figures.BATCH_RUNTIME_CONCURRENCY}"
    samples = [figures.drain_batch_runtime(run.server, run.plan, run.log_dir) for _ in _reps(run, f"drain, {label}")]
    return [
        Row("drain_batch_runtime", f"3b drain, {label}", "tasks/s", Stat([s.rate for s in samples]),
            ceiling_name="(c)", ceiling=run.ceilings.get("c"), target=Target(">=", 0.6, "ratio"),
            note=f"{run.plan.drain_tasks:,} tasks, ONE pyworker process, no-op async handler; "
                 "first claimed_at to last completed_at"),
        _rss_row("rss_drain_batch_runtime", f"8 worker peak RSS, drain {label}", samples, 60),
    ]


def _rss_row(key: str, figure: str, samples: list[figures.DrainSample], bound: float) -> Row:
    rss = [s.peak_rss_mb for s in samples if s.peak_rss_mb is not None]
    return Row(key, figure, "MB", Stat(rss) if rss else None, target=Target("<=", bound, "value"),
               error=None if rss else "no RSS read", note="the worker process's VmHWM, read before SIGTERM")


def io_bound_rows(run: Run) -> list[Row]:
    plan = run.plan
    label = f"--concurrency {plan.io_concurrency}"
    samples = [figures.drain_io_bound(run.server, plan, run.log_dir)
               for _ in _reps(run, f"I/O-bound drain, {label}")]
    return [
        Row("io_drain", f"10 I/O-bound drain, {label}", "tasks/s", Stat([s.rate for s in samples]),
            target=Target(">=", 1600, "value"),
            note=f"{plan.io_tasks:,} tasks whose handler sleeps {plan.io_sleep_ms} ms, ONE pyworker process "
                 f"(ideal {plan.io_concurrency * 1000 // plan.io_sleep_ms:,}/s)"),
        _rss_row("rss_io_drain", f"10 worker peak RSS, {label}", samples, 120),
        Row("io_connections", f"10 worker connections, {label}", "connections",
            Stat([s.connections for s in samples]), target=Target("<=", 4, "value"),
            note="the most pg_stat_activity rows of the worker process seen while it drained"),
        *_io_two_roles_rows(run, label),
    ]


def _io_two_roles_rows(run: Run, label: str) -> list[Row]:
    """The same drain, the tasks split over two roles that one worker process serves."""
    plan = run.plan
    roles = ("bench_sleep", "bench_sleep_other")
    samples, error = [], None
    if "RoleShare" not in (run.server.checkout / "pyworker" / "config.py").read_text():
        error = "this checkout's pyworker serves one role per process"
    else:
        try:
            samples = [figures.drain_io_bound(run.server, plan, run.log_dir, roles)
                       for _ in _reps(run, f"I/O-bound drain, two roles, {label}")]
        except BenchError as failed:
            error = str(failed)
    return [
        Row("io_drain_two_roles", f"10 I/O-bound drain, two roles, {label}", "tasks/s",
            Stat([s.rate for s in samples]) if samples else None, target=Target(">=", 1600, "value"), error=error,
            note=f"as above, half the tasks of each role, ONE process: --role {roles[0]} --role {roles[1]}"),
        Row("io_connections_two_roles", f"10 worker connections, two roles, {label}", "connections",
            Stat([s.connections for s in samples]) if samples else None, target=Target("<=", 4, "value"),
            error=error, note="the most pg_stat_activity rows of the two-role worker process seen while it drained"),
    ]


def _reps(run: Run, what: str) -> Iterator[int]:
    """plan.reps repetitions, each announced."""
    for n in range(1, run.plan.reps + 1):
        progress(f"{what}, repetition {n} of {run.plan.reps}")
        yield n


def wakeup_rows(run: Run) -> list[Row]:
    plan = run.plan
    per_rep = [figures.latency_percentiles(figures.wakeup_latencies(run.server, plan, run.log_dir, n))
               for n in _reps(run, "wake-up latency")]
    note = (f"{plan.wakeup_tasks} tasks enqueued one per transaction at {plan.wakeup_rate:g}/s, "
            f"{plan.workers} idle workers (poll 5 s): commit returned → handler start")
    rows = []
    for p in ("p50", "p95", "p99"):
        target = Target("<=", 3, "value") if p == "p99" else None
        rows.append(Row(f"wakeup_{p}", f"4 wake-up latency {p}", "ms", Stat([r[p] for r in per_rep]),
                        target=target, note=note if p == "p99" else ""))
    return rows


def enqueue_rows(run: Run) -> list[Row]:
    plan, server = run.plan, run.server
    single = run.repeat("enqueue, one per transaction", lambda: figures.enqueue_single(server, plan))
    batch = run.repeat("enqueue, 1000 per call", lambda: figures.enqueue_batch(server, plan))
    return [
        Row("enqueue_single", "5 enqueue_task, 1 per transaction", "tasks/s", single,
            ceiling_name="(a)", ceiling=run.ceilings.get("a"), target=Target(">=", 0.6, "ratio"),
            note=f"pgbench, {plan.clients} clients, {plan.enqueue_seconds:g} s"),
        Row("enqueue_batch", "5 enqueue_tasks, 1,000 per call", "tasks/s", batch,
            target=Target(">=", 50_000, "value"),
            note=f"{plan.batch_enqueue_tasks:,} tasks, one connection, each call its own transaction"),
    ]


def depth_rows(run: Run) -> list[Row]:
    plan = run.plan
    progress(f"depth: claim_task at {plan.depth_small:,} then {plan.depth_large:,} pending, "
             f"{plan.reps} runs each (loading takes a while)")
    small, large = figures.claim_rates(run.server, plan)
    claims = plan.depth_claims_per_client * plan.clients
    note = (f"pgbench claim_task, {plan.clients} clients, {claims:,} claims a run, queue topped up "
            f"to depth + {claims // 2:,} before each")
    return [
        Row("claim_small", f"6 claim_task calls/s, {plan.depth_small:,} pending", "claims/s", Stat(small)),
        Row("claim_large", f"6 claim_task calls/s, {plan.depth_large:,} pending", "claims/s", Stat(large)),
        Row("depth_ratio", f"6 depth ratio {_short(plan.depth_small)}/{_short(plan.depth_large)}", "×",
            Stat([s / l for s, l in zip(small, large)]), target=Target("<=", 1.2, "value"), note=note),
    ]


def history_rows(run: Run) -> list[Row]:
    plan = run.plan
    progress(f"history: cycle rate fresh, then with {plan.history_rows:,} finished tasks")
    fresh, loaded = figures.history_rates(run.server, plan)
    note = (f"pgbench claim_task → complete_task cycle, {plan.clients} clients, "
            f"{plan.history_seconds:g} s; history = {plan.history_rows:,} finished (cancelled) tasks"
            + ("" if plan.history_rows >= 5_000_000 else " (the issue asks 5,000,000: --history-rows)"))
    return [
        Row("cycle_fresh", "7 drain cycle, fresh table", "tasks/s", Stat(fresh)),
        Row("cycle_history", f"7 drain cycle, {_short(plan.history_rows)} finished in table", "tasks/s",
            Stat(loaded)),
        Row("history_ratio", "7 history ratio loaded/fresh", "×",
            Stat([h / f for h, f in zip(loaded, fresh)]), target=Target(">=", 0.9, "value"), note=note),
    ]


def retention_rows(run: Run) -> list[Row]:
    plan = run.plan
    progress(f"retention: loading {plan.prune_rows:,} finished tasks 40 days old (a while)")
    figures.load_prunable(run.server, plan)
    plain, pruning, pruned = [], [], []
    for _ in _reps(run, "drain without pruning, then while pruning"):
        plain.append(figures.drain_while_pruning(run.server, plan, run.log_dir, pruning=False)[0].rate)
        sample, rows = figures.drain_while_pruning(run.server, plan, run.log_dir, pruning=True)
        pruning.append(sample.rate)
        pruned.append(rows)
    label = f"--concurrency {plan.workers}"
    note = (f"{plan.drain_tasks:,} tasks as in 2, ONE pyworker process, beside {_short(plan.prune_rows)} "
            "finished (cancelled) tasks 40 days old; while pruning, another connection runs "
            "apply_retention_in_batches as `pyworker prune` does (rounds of a batch of 1000 per policy, each "
            f"committed, paused three times as long as it took) for the whole drain: {min(pruned):,}–{max(pruned):,} rows went during it")
    return [
        Row("drain_no_prune", f"11 drain, {label}, {_short(plan.prune_rows)} prunable, not pruning", "tasks/s",
            Stat(plain)),
        Row("drain_pruning", f"11 drain, {label}, while retention prunes them", "tasks/s", Stat(pruning)),
        Row("prune_ratio", "11 pruning ratio while/without", "×",
            Stat([p / n for p, n in zip(pruning, plain)]), target=Target(">=", 0.8, "value"), note=note),
    ]


def _short(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)


def run_group(name: str, run: Run) -> list[Row]:
    """A group's rows; a failure becomes one n/a row that fails, and the run goes on."""
    try:
        if name == "ceilings":
            return ceiling_rows(run)
        if name in ("drain", "drain-batched"):
            return drain_rows(run, batched=name == "drain-batched")
        if name == "drain-batch-runtime":
            return drain_batch_runtime_rows(run)
        return {"cycle": cycle_rows, "wakeup": wakeup_rows, "enqueue": enqueue_rows, "depth": depth_rows,
                "history": history_rows, "io-bound": io_bound_rows, "retention": retention_rows}[name](run)
    except Exception as error:  # noqa: BLE001 - reported in the table, with the traceback on stderr
        progress(f"{name} failed:\n{traceback.format_exc()}")
        message = " ".join(str(error).split())[:160]
        row = Row(name, GROUP_LABELS[name], "", error=f"{type(error).__name__}: {message}")
        row.passed = False
        return [row]


def server_label(url: str) -> str:
    """host:port/dbname of the URL, never its password."""
    params = conninfo_to_dict(url)
    return f"{params.get('host', 'local')}:{params.get('port', '5432')}/{params.get('dbname', '')}"


def git_revision(checkout: Path) -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=checkout, capture_output=True, text=True).stdout.strip()
    revision = git("rev-parse", "--short", "HEAD") or "unknown"
    return revision + (" (working tree modified)" if git("status", "--porcelain", "--untracked-files=no") else "")


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--quick", is_flag=True, help="Smaller counts and one repetition: about a minute.")
@click.option("--prefetch", type=click.IntRange(min=1), default=100, show_default=True,
              help="The batched drain's `pyworker --prefetch N`.")
@click.option("--only", "only", multiple=True, type=click.Choice(GROUPS),
              help="Run only these figures (repeatable); ceilings come along when compared with.")
@click.option("--reps", type=click.IntRange(min=1), help="Repetitions per figure (full: 3, quick: 1).")
@click.option("--history-rows", type=click.IntRange(min=10_000),
              help="Finished tasks for the history figure (full: 1,000,000, quick: 50,000).")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path),
              default=REPO_ROOT / "results", show_default=True, help="Where the JSON and Markdown go.")
@click.option("--checkout", type=click.Path(file_okay=False, exists=True, path_type=Path),
              default=REPO_ROOT, show_default=True,
              help="The taskpool source to measure: its Sqitch plan is deployed, its pyworker runs.")
@click.option("--database-url", envvar="DATABASE_URL", default=server_url, show_envvar=True,
              metavar="URL", help="The server; the bench makes its own databases there.")
@click.option("--worker-arg", "worker_args", multiple=True, metavar="ARG",
              help="Add ARG to every worker's command line (repeatable): --worker-arg=--metrics-port=0.")
@click.option("--pg-bindir", envvar="PG_BINDIR", default="/usr/lib/postgresql/15/bin",
              show_default=True, help="Where pgbench is.")
@click.option("--pgbouncer", is_flag=True,
              help="Start a PgBouncer (transaction pooling) in front of the server and run the worker"
                   " processes through it (--pooled, LISTENing direct); the rest stays direct.")
def main(quick: bool, prefetch: int, only: tuple[str, ...], reps: int | None,
         history_rows: int | None, results_dir: Path, checkout: Path, database_url: str,
         pg_bindir: str, pgbouncer: bool, worker_args: tuple[str, ...]) -> None:
    """Measure taskpool's drain, wake-up, enqueue, depth and history figures against pgbench ceilings."""
    plan = QUICK if quick else FULL
    if reps:
        plan = dataclasses.replace(plan, reps=reps)
    if history_rows:
        plan = dataclasses.replace(plan, history_rows=history_rows)
    if worker_args:
        plan = dataclasses.replace(plan, worker_args=worker_args)
    groups = [g for g in GROUPS if not only or g in only or (g == "ceilings" and NEEDS_CEILINGS & set(only))]
    started = datetime.now(timezone.utc)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    log_dir = results_dir / f"bench-{stamp}-logs"
    began = time.monotonic()
    try:
        server = Server(database_url, pg_bindir, checkout)
        settings = server.settings()
        progress(f"{plan.name} run on {server_label(database_url)}: deploying the plan into the template")
        server.deploy_template()
        server.create(figures.PGBENCH_DB)
        if pgbouncer:
            server.pgbouncer = PgBouncer(database_url).start()
    except (BenchError, PgBouncerError) as error:
        raise click.ClickException(str(error))
    run = Run(server, plan, prefetch, log_dir)
    rows: list[Row] = []
    try:
        for group in groups:
            rows += run_group(group, run)
    finally:
        if server.pgbouncer is not None:
            server.pgbouncer.stop()
        server.cleanup()
    meta = {
        "started_at": started.isoformat(timespec="seconds"),
        "mode": f"{plan.name} ({plan.reps} repetition{'s' if plan.reps > 1 else ''} per figure)",
        "server": f"{server_label(database_url)}, PostgreSQL {settings['server_version']}, "
                  f"synchronous_commit={settings['synchronous_commit']}, fsync={settings['fsync']}, "
                  f"shared_buffers={settings['shared_buffers']}",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load average at start "
                   f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        "revision": f"{checkout}: {git_revision(checkout)}",
        "prefetch": prefetch,
        "workers_through": (
            f"PgBouncer {'.'.join(map(str, pgbouncer_version()))}, transaction pooling"
            f" (pool_size {server.pgbouncer.pool_size}); LISTEN direct" if server.pgbouncer else "direct"
        ),
        "worker_args": " ".join(plan.worker_args) or "none",
        "duration_seconds": round(time.monotonic() - began),
    }
    json_path, md_path = write_results(results_dir, stamp, meta, rows)
    click.echo(text_table(rows))
    click.echo()
    for line in notes(rows):
        click.echo(f"  {line}")
    judged = [row for row in rows if row.passed is not None]
    click.echo(f"\n{sum(row.passed for row in judged)} of {len(judged)} targets met; "
               f"{meta['mode']}, {meta['duration_seconds']} s. Written: {json_path}, {md_path}")
    if log_dir.exists():
        click.echo(f"Worker logs: {log_dir}")


if __name__ == "__main__":
    main(prog_name="python -m bench")
