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
from faults.harness import REPO_ROOT, Context, worker_url
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


@contextmanager
def as_worker(ctx: Context, url: str) -> Iterator[psycopg.Connection]:
    """A session of the login granted taskpool_worker (WORKER_LOGIN, what the workers run as);
    closed at the end, whatever state the scenario left it in."""
    conn = psycopg.connect(worker_url(url), autocommit=True,
                           application_name="fault taskpool_worker", connect_timeout=10)
    try:
        yield conn
    finally:
        conn.close()


@scenario(15, "Privileges of taskpool_worker")
def privileges(ctx: Context, result: Result) -> None:
    ctx.prepare()
    [task_id] = ctx.enqueue([{"role": "fault_work", "payload": {}}])
    attempts = 0
    with as_worker(ctx, ctx.url) as conn:
        for what, query in FORBIDDEN:
            state = refused(conn, query)
            attempts += 1
            result.check(f"refused: {what}", state == "42501", f"{query}: {state or 'it ran'}")
        # Shadowing through search_path: the granted functions pin theirs (public, pg_temp).
        conn.execute(SHADOWS)
        row = conn.execute(
            "SELECT id, claimed_at > now() - interval '1 minute', claim_token FROM claim_task('fault_work', 'intruder')"
        ).fetchone()
        result.check("shadow functions first in search_path are not called by claim_task", row[:2] == (task_id, True), str(row))
        token = row[2]
        state = refused(conn, f"SELECT complete_task({task_id}, 'someone else', 1, '{token}')")
        result.check("another worker's completion is refused (fenced)", state == "55000", str(state))
        done = conn.execute(f"SELECT status FROM complete_task({task_id}, 'intruder', 1, '{token}', '{{}}')").fetchone()
        result.check("the owner's completion works from the same session", done == ("completed",), str(done))
        attempts += 3
    cron_db = ctx.scalar("SELECT nullif(current_setting('cron.database_name', true), '')")
    has_cron = False
    if cron_db:
        from pyworker.admin.schema import database_url_for

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
    # Listening as a waiting worker of the role: enqueues notify waiting workers only.
    listener = ctx.connect("fault listener", autocommit=True)
    listener.execute("SELECT register_worker('secret-listener', 'fault_work', 'fault-host', 1)")
    channel = listener.execute("SELECT worker_wake_channel('secret-listener')").fetchone()[0]
    listener.execute(psycopg.sql.SQL("LISTEN {}").format(psycopg.sql.Identifier(channel)))
    listener.execute("SELECT mark_worker_waiting('secret-listener')")
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
        task = conn.execute("SELECT id, attempt, claim_token FROM claim_task('fault_work', 'secret-keeper')").fetchone()
        error_of("SELECT complete_task(%s, 'secret-keeper', %s, %s, '{}', %s::jsonb)",
                 (task[0], task[1], task[2], json.dumps([{"role": "fault_work", "payload": payload, "priority": "high"}])))
        error_of("SELECT complete_task(%s, 'secret-keeper', %s, %s, '{}', %s::jsonb)",
                 (task[0], task[1], task[2], json.dumps([{"role": "fault_work", "payload": secret}])))
        conn.execute("SELECT fail_task(%s, 'secret-keeper', %s, %s, 'gave up', retryable => false)", task)
    # The CLI, refusing a bad enqueue.
    cli = subprocess.run(
        [sys.executable, "-m", "pyworker", "enqueue", "fault_work", "--payload", json.dumps(payload), "--priority", "1000"],
        env={**ctx.base_env()}, capture_output=True, text=True, cwd=REPO_ROOT,
    )
    result.check("the CLI refused the bad enqueue", cli.returncode != 0, f"exit {cli.returncode}")
    notifications = [n.payload for n in listener.notifies(timeout=0.5, stop_after=1000)]
    listener.execute("SELECT deregister_worker('secret-listener')")
    listener.close()
    places = {
        "database errors": "\n".join(errors),
        "CLI output": cli.stdout + cli.stderr,
        "notifications": "\n".join(notifications),
        "worker logs": "\n".join(fleet.logs().values()),
        "task errors and attempt history": "\n".join(
            row[0] or "" for row in ctx.conn.execute(
                "SELECT error_message FROM worker_tasks UNION ALL SELECT error_message FROM worker_task_attempts"
                " UNION ALL SELECT error_details FROM worker_task_attempts")
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


# Rejections the SQL functions may answer with; anything else (an internal error, a syntax
# error that would betray injection) is a finding.
DOCUMENTED_SQLSTATES = {
    "22P02": "invalid JSON or text representation",
    "22P05": "untranslatable character (a NUL in JSON)",
    "22021": "invalid byte sequence",
    "22023": "invalid parameter value",
    "22003": "numeric value out of range",
    "22004": "null value not allowed",
    "54000": "program limit exceeded (payload too large)",
    "54001": "statement too complex (nesting too deep)",
    "23503": "foreign key violation",
}
CLIENT_SIDE = "client: refused before sending"


def hostile_strings() -> list[str]:
    """Identifiers that break naive code: quotes, semicolons, format directives, UTF-8 at the
    63/64/65-byte edge (NAMEDATALEN), emoji, NUL, lone surrogates, lengths at the limits."""
    e = "é"  # two bytes in UTF-8
    return [
        "'", '"', "''; DROP TABLE worker_tasks; --", "%s", "%(role)s", "{}", "\\", "$1", "$$", "a;b",
        "x" * 63, "x" * 64, "x" * 65, e * 31 + "x", e * 32, e * 32 + "x",  # 63, 64, 65 bytes
        "\U0001F600" * 16, "\U0001F600" * 17, "tab\there", "new\nline", " ", "",
        "nul\x00byte", "lone\ud800surrogate", "x" * 199, "x" * 200, "x" * 201, "x" * 255, "x" * 256,
    ]


def hostile_payloads() -> list[str]:
    """Payload texts as a client might send them (the JSON is parsed by the database)."""
    near = 65536 - len('{"p": ""}')
    return [
        "", "{", "not json", "{'single': 'quotes'}", "[1, 2]", '"a string"', "null", "1e999999999",
        '{"n": 1e400}', '{"n": -1e400}', '{"n": 123456789012345678901234567890}', '{"n": 1.000000000000000000001}',
        '{"nul": "\\u0000"}', '{"lone": "\\ud800"}', '{"pair": "\\ud83d\\ude00"}', '{"k": "\x00"}',
        '{"a": 1, "a": 2}', "{" + '"d": {' * 10000 + "}" * 10001, "[" * 10000 + "]" * 10000,
        '{"p": "' + "x" * (near - 1) + '"}', '{"p": "' + "x" * near + '"}', '{"p": "' + "x" * (near + 1) + '"}',
    ]


def json_values():
    """A hypothesis strategy of JSON objects with hostile leaves."""
    from hypothesis import strategies as st

    leaves = st.one_of(
        st.none(), st.booleans(), st.integers(min_value=-(10**40), max_value=10**40),
        st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=40),
    )
    values = st.recursive(leaves, lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=10), inner, max_size=5)), max_leaves=30)
    return st.dictionaries(st.text(max_size=12), values, max_size=6)


class Fuzz:
    """Counts outcomes: accepted (and read back equal) or rejected (SQLSTATE, twice the same,
    nothing changed); any other outcome is a violation."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.accepted = 0
        self.rejected: dict[str, int] = {}
        self.violations: list[str] = []

    def tasks(self) -> int:
        return self.ctx.scalar("SELECT count(*) FROM worker_tasks")

    def call(self, query: str, params: tuple) -> tuple[str | None, Any]:
        """(None, first row) or (SQLSTATE, None); a NUL in a text parameter never leaves the client."""
        try:
            with self.ctx.connect("fault fuzz", autocommit=True) as conn:
                return None, conn.execute(query, params).fetchone()
        except psycopg.DataError as error:
            if error.sqlstate is None:
                return CLIENT_SIDE, None
            return error.sqlstate, None
        except psycopg.Error as error:
            return error.sqlstate or CLIENT_SIDE, None
        except UnicodeEncodeError:
            # A lone surrogate is not UTF-8: the driver cannot even send it.
            return CLIENT_SIDE, None

    def reject_or_store(self, what: str, query: str, params: tuple, read_back: str, expected: Any) -> None:
        """`read_back` selects the stored value of the task the call returned (%(id)s), `expected`
        is what it must equal (compared in Python; read_back may compare in SQL and select true)."""
        before = self.tasks()
        state, row = self.call(query, params)
        if state is None:
            stored = self.ctx.scalar(read_back, {"id": row[0], "sent": params[0]})
            if stored != expected:
                self.violations.append(f"{what}: stored {str(stored)[:80]!r}, sent {str(expected)[:80]!r}")
            else:
                self.accepted += 1
            return
        again, _ = self.call(query, params)
        changed = self.tasks() - before
        if again != state:
            self.violations.append(f"{what}: SQLSTATE {state} then {again}")
        elif state not in DOCUMENTED_SQLSTATES and state != CLIENT_SIDE:
            self.violations.append(f"{what}: undocumented SQLSTATE {state}")
        elif changed:
            self.violations.append(f"{what}: rejected ({state}) but {changed} tasks appeared")
        else:
            self.rejected[state] = self.rejected.get(state, 0) + 1


ENQUEUE_TEXT = "SELECT id FROM enqueue_task('fault_work', %s::text::jsonb)"
ENQUEUE_KEY = "SELECT id FROM enqueue_task('fault_work', '{}', dedupe_key := %s)"
ENQUEUE_ROLE = "SELECT id FROM enqueue_task(%s, '{}')"
CLAIM_AS = "SELECT id FROM claim_task('fault_work', %s)"


def parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


# Compared in the database, as JSON values: deep nesting is beyond Python's json module, and a
# number is a decimal there, not a float. A JSON null is a field left out (the default, {}), as
# everywhere in enqueue.
PAYLOAD_EQUAL = (
    "SELECT payload = coalesce(nullif(%(sent)s::text::jsonb, 'null'), '{}') FROM worker_tasks WHERE id = %(id)s"
)


@scenario(11, "Fuzzing payloads and identifiers")
def fuzzing(ctx: Context, result: Result) -> None:
    from click.testing import CliRunner
    from hypothesis import HealthCheck, given, settings

    from pyworker.admin.cli import main as cli

    ctx.prepare()
    fuzz = Fuzz(ctx)
    for n, text in enumerate(hostile_payloads()):
        fuzz.reject_or_store(f"payload #{n}", ENQUEUE_TEXT, (text,), PAYLOAD_EQUAL, True)
    for n, text in enumerate(hostile_strings()):
        fuzz.reject_or_store(f"dedupe key #{n}", ENQUEUE_KEY, (text,), "SELECT dedupe_key FROM worker_tasks WHERE id = %(id)s", text)
        fuzz.reject_or_store(f"role #{n}", ENQUEUE_ROLE, (text,), "SELECT role FROM worker_tasks WHERE id = %(id)s", text)
        [task_id] = ctx.enqueue([{"role": "fault_work", "payload": {"for": "claim"}}])
        fuzz.reject_or_store(f"worker id #{n}", CLAIM_AS, (text,), "SELECT worker_id FROM worker_tasks WHERE id = %(id)s", text)
        ctx.scalar("SELECT cancel_task(id) FROM worker_tasks WHERE id = %s AND status = 'pending'", (task_id,))

    @settings(max_examples=ctx.scale(60, 600), deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(json_values())
    def payloads(value: dict) -> None:
        text = json.dumps(value)
        fuzz.reject_or_store("generated payload", ENQUEUE_TEXT, (text,), PAYLOAD_EQUAL, True)

    payloads()
    # The CLI: exit 0 and the task stored as given, or exit 2 (bad input) and nothing changed.
    runner = CliRunner()
    # Keys of their own: the ones above are held by tasks still active (dedupe would answer those).
    cli_outcomes: dict[str, int] = {}
    cli_keys = ["cli:" + key for key in hostile_strings()[:20]]
    for n, (payload, key) in enumerate(zip(hostile_payloads()[:12] + ['{"ok": 1}'] * 8, cli_keys)):
        before = fuzz.tasks()
        run = runner.invoke(cli, ["--database-url", ctx.url, "enqueue", "fault_work", "--payload", payload,
                                  "--dedupe-key", key, "--json"])
        changed = fuzz.tasks() - before
        outcome = f"exit {run.exit_code}"
        cli_outcomes[outcome] = cli_outcomes.get(outcome, 0) + 1
        if run.exit_code == 0:
            task_id = json.loads(run.output)[0]["id"] if run.output.strip().startswith("[") else json.loads(run.output)["id"]
            stored = (ctx.scalar(PAYLOAD_EQUAL, {"id": task_id, "sent": payload}),
                      ctx.scalar("SELECT dedupe_key FROM worker_tasks WHERE id = %s", (task_id,)))
            if stored != (True, key):
                fuzz.violations.append(f"CLI #{n}: stored {str(stored)[:80]}")
        elif run.exit_code != 2 or changed:
            fuzz.violations.append(f"CLI #{n}: exit {run.exit_code}, {changed} tasks appeared: {run.output[-200:]}")
    result.check("every input was rejected with a stable, documented SQLSTATE and nothing changed, or stored and read back equal",
                 not fuzz.violations, "; ".join(fuzz.violations[:6]))
    result.faults = f"{fuzz.accepted + sum(fuzz.rejected.values()) + len(fuzz.violations)} fuzzed calls + CLI"
    result.figure("stored and read back equal", fuzz.accepted)
    result.figure("rejected by SQLSTATE", dict(sorted(fuzz.rejected.items())))
    result.figure("CLI", cli_outcomes)
    result.figure("violations", len(fuzz.violations))
    # The tasks it left (cancelled or pending) are nobody's work: cancel what is still pending.
    ctx.conn.execute("SELECT count(cancel_task(id)) FROM worker_tasks WHERE status = 'pending'")
    result.hold(measure(ctx.conn, []))
