"""Abuse: fuzzed payloads and identifiers (11), privileges of taskpool_worker (15), a secret
in a payload (16)."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from faults.checker import measure
from faults.harness import REPO_ROOT, Context, wait_until
from faults.report import Result
from faults.scenarios import scenario

# What taskpool_worker must not do, each with the SQLSTATE of the refusal.
FORBIDDEN = [
    ("read the pool", "SELECT count(*) FROM worker_tasks"),
    ("insert a task", "INSERT INTO worker_tasks (role) VALUES ('fault_work')"),
    ("update tasks", "UPDATE worker_tasks SET status = 'completed'"),
    ("delete tasks", "DELETE FROM worker_tasks"),
    ("read the attempt history", "SELECT count(*) FROM worker_task_attempts"),
    ("change a role", "UPDATE task_roles SET max_retries = 1000"),
    ("change a schedule", "UPDATE task_schedules SET enabled = true"),
    ("read the registry", "SELECT count(*) FROM task_workers"),
    ("truncate the pool", "TRUNCATE worker_tasks"),
    ("enqueue_task", "SELECT enqueue_task('fault_work')"),
    ("enqueue_tasks", "SELECT enqueue_tasks('[]')"),
    ("cancel_task", "SELECT cancel_task(1)"),
    ("retry_task", "SELECT retry_task(1)"),
    ("recover_stale_tasks", "SELECT recover_stale_tasks(1)"),
    ("prune_tasks", "SELECT prune_tasks('1 day')"),
    ("tick_schedules", "SELECT tick_schedules()"),
    ("trigger_schedule", "SELECT trigger_schedule('store_discovery')"),
    ("update_schedule", "SELECT update_schedule('store_discovery', enabled => true)"),
    ("generate_resync_tasks", "SELECT generate_resync_tasks(6, current_date)"),
    ("the capacity view", "SELECT * FROM v_worker_capacity"),
    ("an internal helper", "SELECT _retry_delay('fault_work', 1)"),
    ("create a function in public", "CREATE FUNCTION public.taskpool_now() RETURNS timestamptz LANGUAGE sql AS 'SELECT now()'"),
    ("create a schema", "CREATE SCHEMA shadow"),
    ("grant itself more", "GRANT ALL ON worker_tasks TO taskpool_worker"),
    ("become the owner", "SET ROLE postgres"),
]
FORBIDDEN_IN_CRON = [
    ("insert into cron.job", "INSERT INTO cron.job (schedule, command, nodename, nodeport, database, username)"
     " VALUES ('* * * * *', 'SELECT 1', 'localhost', 5432, current_database(), 'postgres')"),
    ("update cron.job", "UPDATE cron.job SET command = 'SELECT 1'"),
    ("delete from cron.job", "DELETE FROM cron.job"),
]
# Shadows a worker could plant in its own temporary schema and put first in its search_path.
SHADOWS = """
CREATE FUNCTION pg_temp.taskpool_now() RETURNS timestamptz LANGUAGE sql AS $$ SELECT timestamptz '2000-01-01' $$;
CREATE FUNCTION pg_temp.claim_tasks(role text, worker_id text, max_tasks integer)
    RETURNS SETOF worker_tasks LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadow claim_tasks ran'; END $$;
CREATE FUNCTION pg_temp._check_repeated_call(bigint, text, integer, text)
    RETURNS worker_tasks LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadow _check_repeated_call ran'; END $$;
SET search_path = pg_temp, public;
"""


def refused(conn: psycopg.Connection, query: str) -> str | None:
    """The SQLSTATE that refused `query` (rolled back either way), or None when it ran."""
    try:
        with conn.transaction():
            conn.execute(query)
            raise _RolledBack
    except _RolledBack:
        return None
    except psycopg.Error as error:
        return error.sqlstate


class _RolledBack(Exception):
    pass


LOGIN_ROLE = "taskpool_fault_worker"


@contextmanager
def as_worker(ctx: Context, url: str) -> Iterator[psycopg.Connection]:
    """A session of a login role granted taskpool_worker (what a worker's deployment uses);
    closed at the end, whatever state the scenario left it in."""
    from psycopg.conninfo import make_conninfo

    conn = psycopg.connect(make_conninfo(url, user=LOGIN_ROLE), autocommit=True,
                           application_name="fault taskpool_worker", connect_timeout=10)
    try:
        yield conn
    finally:
        conn.close()


def ensure_login_role(ctx: Context) -> None:
    """The login role granted taskpool_worker. Roles are the server's: it is made if missing and
    left for the next run (it owns nothing)."""
    ctx.conn.execute(
        f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{LOGIN_ROLE}') THEN"
        f" CREATE ROLE {LOGIN_ROLE} LOGIN IN ROLE taskpool_worker; END IF; END $$"
    )


@scenario(15, "Privileges of taskpool_worker")
def privileges(ctx: Context, result: Result) -> None:
    ctx.prepare()
    [task_id] = ctx.enqueue([{"role": "fault_work", "payload": {}}])
    ensure_login_role(ctx)
    attempts = 0
    with as_worker(ctx, ctx.url) as conn:
        for what, query in FORBIDDEN:
            state = refused(conn, query)
            attempts += 1
            result.check(f"refused: {what}", state == "42501", f"{query}: {state or 'it ran'}")
        # Shadowing through search_path: the granted functions pin theirs (public, pg_temp).
        conn.execute(SHADOWS)
        row = conn.execute("SELECT id, claimed_at > now() - interval '1 minute' FROM claim_task('fault_work', 'intruder')").fetchone()
        result.check("shadow functions first in search_path are not called by claim_task", row == (task_id, True), str(row))
        state = refused(conn, "SELECT complete_task(%s, 'someone else', 1)" % task_id)
        result.check("another worker's completion is refused (fenced)", state == "55000", str(state))
        done = conn.execute("SELECT status FROM complete_task(%s, 'intruder', 1, '{}')" % task_id).fetchone()
        result.check("the owner's completion works from the same session", done == ("completed",), str(done))
        attempts += 3
    cron_db = ctx.scalar("SELECT nullif(current_setting('cron.database_name', true), '')")
    has_cron = False
    if cron_db:
        from pyworker.config import database_url_for

        with psycopg.connect(database_url_for(ctx.url, cron_db), autocommit=True) as admin:
            has_cron = admin.execute("SELECT to_regclass('cron.job') IS NOT NULL").fetchone()[0]
    if not has_cron:
        result.partial = "no pg_cron on this server: cron.job not tried"
    else:
        with as_worker(ctx, database_url_for(ctx.url, cron_db)) as cron:
            for what, query in FORBIDDEN_IN_CRON:
                state = refused(cron, query)
                attempts += 1
                result.check(f"refused: {what}", state == "42501", f"{state or 'it ran'}")
            # pg_cron grants cron.schedule to PUBLIC: a job would run as the worker's own
            # role, gaining nothing. Reported, not refused.
            state = refused(cron, "SELECT cron.schedule('fault-intruder', '* * * * *', 'SELECT 1')")
            result.figure("cron.schedule as a worker", f"refused {state}" if state else "allowed (as itself)")
    result.faults = f"{attempts} forbidden actions"
    result.hold(measure(ctx.conn, [task_id]))


def server_log() -> Path | None:
    """The project cluster's server log, when the suite runs on it (scripts/cluster info)."""
    info = subprocess.run([REPO_ROOT / "scripts" / "cluster", "info"], capture_output=True, text=True)
    fields = dict(line.split("=", 1) for line in info.stdout.splitlines() if "=" in line)
    path = Path(fields.get("dir", "")) / "postgresql.log"
    return path if fields.get("running") == "yes" and path.exists() else None


@scenario(16, "A secret in a payload")
def secret_in_payload(ctx: Context, result: Result) -> None:
    """The secret rides in payloads through enqueue, bad input, failing handlers, follow-ups and
    the CLI; it must not show up in worker logs, errors, attempt history, notifications or the
    server log."""
    secret = "SECRET-" + secrets.token_hex(8)
    log = server_log()
    log_start = log.stat().st_size if log else 0
    ctx.prepare(max_retries=1, backoff_base="1 second")
    listener = ctx.connect("fault listener", autocommit=True)
    listener.execute("LISTEN taskpool_task_enqueued")
    errors: list[str] = []

    def error_of(query: str, params: Any) -> None:
        try:
            with ctx.connect(autocommit=True) as conn:
                conn.execute(query, params)
        except psycopg.Error as error:
            diag = error.diag
            errors.append(" ".join(filter(None, [str(error), diag.message_detail, diag.message_hint, diag.context])))

    payload = {"api_key": secret, "nested": {"token": secret}}
    bad_inputs = [
        [{"role": "fault_work", "payload": payload, "priority": 1000}],
        [{"role": "fault_work", "payload": payload, "dispensary_id": 999999}],
        [{"role": "no_such_role", "payload": payload}],
        [{"role": "fault_work", "payload": {**payload, "pad": "x" * 70000}}],
        [{"role": "fault_work", "payload": payload, "surprise": 1}],
        [{"role": "fault_work", "payload": secret}],
    ]
    for specs in bad_inputs:
        error_of("SELECT enqueue_tasks(%s::jsonb)", (json.dumps(specs),))
    result.check("every bad enqueue was refused", len(errors) == len(bad_inputs), f"{len(errors)} of {len(bad_inputs)}")
    ids = ctx.enqueue([
        {"role": "fault_work", "payload": {**payload, "raise": "always"}},
        {"role": "fault_work", "payload": {**payload, "ms": 10}},
    ])
    fleet = ctx.fleet(1)
    ctx.drain(60)
    fleet.stop()
    # A completion whose follow-up is refused: the error names the problem, not the payload.
    claimed = ctx.enqueue([{"role": "fault_work", "payload": payload}])
    with ctx.connect(autocommit=True) as conn:
        task = conn.execute("SELECT id, attempt FROM claim_task('fault_work', 'secret-keeper')").fetchone()
        error_of("SELECT complete_task(%s, 'secret-keeper', %s, '{}', %s::jsonb)",
                 (task[0], task[1], json.dumps([{"role": "fault_work", "payload": payload, "priority": "high"}])))
        error_of("SELECT complete_task(%s, 'secret-keeper', %s, '{}', %s::jsonb)",
                 (task[0], task[1], json.dumps([{"role": "fault_work", "payload": secret}])))
        conn.execute("SELECT fail_task(%s, 'secret-keeper', %s, 'gave up', retryable => false)", task)
    # The CLI, refusing a bad enqueue.
    cli = subprocess.run(
        [sys.executable, "-m", "pyworker", "enqueue", "fault_work", "--payload", json.dumps(payload), "--priority", "1000"],
        env={**ctx.base_env()}, capture_output=True, text=True, cwd=REPO_ROOT,
    )
    result.check("the CLI refused the bad enqueue", cli.returncode != 0, f"exit {cli.returncode}")
    notifications = [n.payload for n in listener.notifies(timeout=0.5, stop_after=1000)]
    listener.close()
    places = {
        "database errors": "\n".join(errors),
        "CLI output": cli.stdout + cli.stderr,
        "notifications": "\n".join(notifications),
        "worker logs": "\n".join(fleet.logs().values()),
        "task errors and attempt history": "\n".join(
            row[0] or "" for row in ctx.conn.execute(
                "SELECT error_message FROM worker_tasks UNION ALL SELECT error_message FROM worker_task_attempts")
        ),
    }
    if log is not None:
        with open(log, "rb") as handle:
            handle.seek(log_start)
            places["server log"] = handle.read().decode(errors="replace")
    else:
        result.partial = "not on the project cluster: its server log was not read"
    for place, text in places.items():
        result.check(f"the secret is not in the {place}", secret not in text, f"found in: ...{_around(text, secret)}...")
    result.check("notifications were seen", notifications, "none")
    result.check("both bad completions were refused", len(errors) == len(bad_inputs) + 2, f"{len(errors) - len(bad_inputs)} of 2")
    result.faults = f"{len(bad_inputs) + 3} refusals, 2 handled tasks"
    result.hold(measure(ctx.conn, ids + claimed))
    result.figure("places read", len(places))


def _around(text: str, secret: str) -> str:
    at = text.find(secret)
    return text[max(0, at - 120) : at + 40] if at >= 0 else ""
