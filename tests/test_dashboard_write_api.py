"""The seeds' write API on the real `pyworker dashboard` (uvicorn in a subprocess), over HTTP:
POST /api/tasks and /api/tasks/batch (and the seed's /api/job-queue/ paths), recover-stale.

Every bad field is a 400 whose message names it, and changes nothing: each refusal below is
followed by the count of tasks, unchanged; a batch with one bad task enqueues none. The crawler's
part (enqueue-state, a payload's body, a store's latest payload) is
crawler/tests/test_crawler_write_api.py.
"""

from __future__ import annotations

import json
import secrets
import urllib.parse
from collections.abc import Iterator
from http.client import HTTPConnection
from typing import Any

import psycopg
import pytest
from dashboard_support import Answer, Dashboard, dashboard_server, http
from testkit import databases

from core_fixtures import COPY_PREFIX, database_url

# One pytest-xdist worker runs the module (make test-py: --dist loadgroup): its database and
# server are made once.
pytestmark = pytest.mark.xdist_group("dashboard_write_api")

TOKEN = "write-api-" + secrets.token_hex(8)
ROLE = "api_report"
# A role whose tasks act on one store, with a small payload bound.
STORE_ROLE = "api_store_sync"
MAX_PAYLOAD = 1000


@pytest.fixture(scope="module")
def database(template_database: str) -> Iterator[str]:
    name = COPY_PREFIX + "write_api_" + secrets.token_hex(4)
    with databases.copy(database_url(), template_database, name) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SELECT create_role(%s, max_retries => 4)", (ROLE,))
            conn.execute(
                "SELECT create_role(%s, requires_store => true, max_payload_bytes => %s)", (STORE_ROLE, MAX_PAYLOAD)
            )
        yield url


@pytest.fixture(scope="module")
def dashboard(database: str) -> Iterator[Dashboard]:
    with dashboard_server(database, TOKEN) as server:
        yield server


@pytest.fixture
def conn(database: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(database, autocommit=True) as connection:
        yield connection


@pytest.fixture(scope="module")
def store(database: str) -> int:
    with psycopg.connect(database, autocommit=True) as conn:
        return conn.execute(
            "INSERT INTO dispensaries (name, platform) VALUES ('API store', 'simulated') RETURNING id"
        ).fetchone()[0]


def post(dashboard: Dashboard, path: str, body: Any, token: str | None = TOKEN) -> Answer:
    """POST `body` (JSON-encoded unless it is text already) with the bearer token."""
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    text = body if isinstance(body, str) else json.dumps(body)
    return http(dashboard.url + path, method="POST", body=text, headers=headers)


def task_count(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT count(*) FROM worker_tasks").fetchone()[0]


def database_message(conn: psycopg.Connection, query: str) -> str:
    """The message the database itself gives for `query`."""
    with pytest.raises(psycopg.Error) as raised:
        conn.execute(query)
    return raised.value.diag.message_primary


# One task


def test_a_task_is_enqueued_with_every_field_it_gives(dashboard: Dashboard, conn: psycopg.Connection, store: int) -> None:
    answer = post(dashboard, "/api/tasks", (
        f'{{"role": "{STORE_ROLE}", "dispensary_id": {store}, "payload": {{"report": "daily", "price": 12.50}},'
        ' "priority": 7, "max_retries": 2, "scheduled_for": "2030-01-31T12:00:00Z", "headers": {"traceparent": "t-1"}}'
    ))
    assert answer.status == 201, answer.body
    task = answer.json()
    assert (task["role"], task["status"], task["dispensary_id"], task["deduplicated"]) == (STORE_ROLE, "pending", store, False)
    row = conn.execute(
        "SELECT role, dispensary_id, platform, payload::text, priority, max_retries, scheduled_for = '2030-01-31T12:00:00Z',"
        " headers FROM worker_tasks WHERE id = %s", (task["id"],),
    ).fetchone()
    # The payload as sent, its number's digits kept.
    assert row == (STORE_ROLE, store, "simulated", '{"price": 12.50, "report": "daily"}', 7, 2, True, {"traceparent": "t-1"})
    # The task list reads as before on the same path.
    listed = http(dashboard.url + f"/api/tasks?role={STORE_ROLE}")
    assert listed.status == 200 and task["id"] in [row["id"] for row in listed.json()["tasks"]]


def test_a_delay_runs_the_task_that_many_seconds_after_the_database_enqueued_it(
    dashboard: Dashboard, conn: psycopg.Connection
) -> None:
    answer = post(dashboard, "/api/tasks", {"role": ROLE, "delay": 90.5})
    assert answer.status == 201, answer.body
    waits = conn.execute(
        "SELECT extract(epoch FROM scheduled_for - created_at) FROM worker_tasks WHERE id = %s", (answer.json()["id"],)
    ).fetchone()[0]
    assert float(waits) == 90.5
    # The seed's path takes the same body.
    seed = post(dashboard, "/api/job-queue/enqueue", {"role": ROLE, "payload": {"from": "seed"}})
    assert seed.status == 201 and seed.json()["payload"] == {"from": "seed"}


def test_a_dedupe_key_held_answers_the_task_that_holds_it(dashboard: Dashboard, conn: psycopg.Connection) -> None:
    key = "report:" + secrets.token_hex(4)
    first = post(dashboard, "/api/tasks", {"role": ROLE, "dedupe_key": key})
    before = task_count(conn)
    again = post(dashboard, "/api/tasks", {"role": ROLE, "dedupe_key": key, "priority": 9})
    assert (first.status, again.status) == (201, 200)
    assert again.json()["id"] == first.json()["id"] and again.json()["deduplicated"] is True
    assert task_count(conn) == before


BAD_TASKS = [
    # (body, what the 400's message must say)
    ({"role": "no_such_role"}, "unknown role 'no_such_role'"),
    ({"payload": {}}, "role is required"),
    ({"role": ROLE, "priority": "high"}, 'priority must be an integer, not "high"'),
    ({"role": ROLE, "priority": 1000}, "priority 1000 is out of range"),
    ({"role": ROLE, "max_retries": 2.5}, "max_retries must be an integer"),
    ({"role": ROLE, "payload": [1, 2]}, "payload must be a JSON object, not array"),
    ({"role": ROLE, "scheduled_for": "next tuesday"}, 'scheduled_for "next tuesday" is not a timestamp'),
    ({"role": ROLE, "colour": "red"}, "unknown field 'colour'"),
    ({"role": ROLE, "dedupe_key": ""}, "dedupe_key"),
    ({"role": STORE_ROLE}, f"role {STORE_ROLE} needs a dispensary_id"),
    ({"role": STORE_ROLE, "dispensary_id": 2**31 - 1}, f"dispensary {2**31 - 1} does not exist"),
    ({"role": STORE_ROLE, "dispensary_id": "one"}, 'dispensary_id must be an integer, not "one"'),
    ({"role": ROLE, "delay": -5}, "delay must be a number of seconds from 0 to"),
    ({"role": ROLE, "delay": "5 minutes"}, "delay must be a number of seconds"),
    ({"role": ROLE, "delay": 5, "scheduled_for": "2030-01-01T00:00:00Z"}, "give scheduled_for or delay, not both"),
    ({"role": ROLE, "payload": {"note": "a\u0000b"}}, "task['payload']['note'] holds a NUL character"),
    ('{"role": "%s", "payload": {"n": NaN}}' % ROLE, "task['payload']['n'] is nan: JSON has no such number"),
    ("role=api_report", "the body is not JSON"),
    ('{"role": "api_report",', "the body is not JSON"),
    ("", "the body is empty"),
    ("[]", "the body must be a JSON object"),
    ('"api_report"', "the body must be a JSON object"),
    ("[" * 100_000, "nested too deeply"),
]


@pytest.mark.parametrize("body, said", BAD_TASKS, ids=[said for _, said in BAD_TASKS])
def test_a_bad_field_is_a_400_naming_it_and_enqueues_nothing(
    dashboard: Dashboard, conn: psycopg.Connection, body: Any, said: str
) -> None:
    before = task_count(conn)
    answer = post(dashboard, "/api/tasks", body)
    assert answer.status == 400, answer.body
    assert said in answer.json()["error"], answer.body
    # One task: its place in enqueue_tasks' batch is not named.
    assert "tasks[0]" not in answer.body
    assert task_count(conn) == before


def test_a_refusal_is_the_databases_own_message(dashboard: Dashboard, conn: psycopg.Connection) -> None:
    expected = database_message(conn, f"SELECT enqueue_task('{ROLE}', priority => 101)")
    assert post(dashboard, "/api/tasks", {"role": ROLE, "priority": 101}).json()["error"].startswith(expected)


def test_a_payload_or_a_body_too_large_is_refused(dashboard: Dashboard, conn: psycopg.Connection, store: int) -> None:
    before = task_count(conn)
    payload = {"blob": "x" * MAX_PAYLOAD}
    answer = post(dashboard, "/api/tasks", {"role": STORE_ROLE, "dispensary_id": store, "payload": payload})
    assert answer.status == 400 and f"role {STORE_ROLE} allows at most {MAX_PAYLOAD}" in answer.json()["error"]
    # Refused by its Content-Length, before the body is read.
    declared = sent_raw(dashboard, "/api/tasks", {"Content-Length": str(17 * 1024 * 1024)}, [b'{"role": "'])
    assert declared.status == 400 and "the body is 17,825,792 bytes; at most 16,777,216" in declared.json()["error"]
    # Without one (chunked), refused once it has read past the bound.
    blob = b"x" * (1024 * 1024)
    chunks = [b'{"role": "api_report", "payload": {"blob": "', *[blob] * 16, b'"}}']
    streamed = sent_raw(dashboard, "/api/tasks", {"Transfer-Encoding": "chunked"}, chunks)
    assert streamed.status == 400 and "the body is over 16,777,216 bytes" in streamed.json()["error"], streamed.body
    assert task_count(conn) == before


def sent_raw(dashboard: Dashboard, path: str, headers: dict[str, str], chunks: list[bytes]) -> Answer:
    """A POST whose headers are as given (a Content-Length the body need not have), its body
    the chunks (chunked when the headers say so)."""
    address = urllib.parse.urlsplit(dashboard.url)
    connection = HTTPConnection(address.hostname, address.port, timeout=30)
    try:
        connection.putrequest("POST", path)
        for name, value in {"Authorization": f"Bearer {TOKEN}", **headers}.items():
            connection.putheader(name, value)
        connection.endheaders()
        chunked = headers.get("Transfer-Encoding") == "chunked"
        for chunk in chunks:
            connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
        if chunked:
            connection.send(b"0\r\n\r\n")
        response = connection.getresponse()
        return Answer(response.status, response.read().decode(), dict(response.headers))
    finally:
        connection.close()


# Many tasks


def test_a_batch_enqueues_every_task_in_one_call(dashboard: Dashboard, conn: psycopg.Connection, store: int) -> None:
    key = "batch:" + secrets.token_hex(4)
    held = post(dashboard, "/api/tasks", {"role": ROLE, "dedupe_key": key}).json()
    specs = [
        {"role": ROLE, "payload": {"n": 1}},
        {"role": ROLE, "delay": 60},
        {"role": STORE_ROLE, "dispensary_id": store, "priority": -3},
        {"role": ROLE, "dedupe_key": key},
    ]
    answer = post(dashboard, "/api/tasks/batch", {"tasks": specs})
    assert answer.status == 201, answer.body
    document = answer.json()
    assert (document["created"], document["deduplicated"]) == (3, 1)
    tasks = document["tasks"]
    assert [task["role"] for task in tasks] == [ROLE, ROLE, ROLE, STORE_ROLE]
    assert [task["id"] for task in tasks if task["deduplicated"]] == [held["id"]]
    made = [task["id"] for task in tasks if not task["deduplicated"]]
    delays = conn.execute(
        "SELECT extract(epoch FROM scheduled_for - created_at)::integer FROM worker_tasks WHERE id = ANY(%s) ORDER BY id",
        (made,),
    ).fetchall()
    assert [delay for (delay,) in delays] == [0, 60, 0]
    # The array alone, and the seed's path.
    bare = post(dashboard, "/api/job-queue/enqueue-batch", [{"role": ROLE}])
    assert bare.status == 201 and bare.json()["created"] == 1


BAD_BATCHES = [
    ({"tasks": [{"role": ROLE}, {"role": ROLE}, {"role": ROLE, "priority": "x"}]}, 'tasks[2]: priority must be an integer'),
    ({"tasks": [{"role": ROLE}, {"role": "no_such_role"}]}, "tasks[1]: unknown role 'no_such_role'"),
    ({"tasks": [{"role": ROLE}, "api_report"]}, "tasks[1]: a task must be a JSON object, not string"),
    ({"tasks": [{"role": ROLE}, {"role": ROLE, "delay": True}]}, "tasks[1].delay must be a number of seconds"),
    ({"tasks": [{"role": ROLE, "payload": {"s": "\u0000"}}]}, "tasks[0]['payload']['s'] holds a NUL character"),
    ({"tasks": [{"role": ROLE}], "priority": 5}, "unknown field 'priority'"),
    ({"task": [{"role": ROLE}]}, "unknown field 'task'"),
    ({}, "tasks is required"),
    ({"tasks": {"role": ROLE}}, "tasks must be an array"),
    ({"tasks": [{"role": ROLE}] * 1001}, "tasks holds 1,001 tasks; at most 1,000 go in one request"),
    ("{tasks: []}", "the body is not JSON"),
]


@pytest.mark.parametrize("body, said", BAD_BATCHES, ids=[said for _, said in BAD_BATCHES])
def test_a_batch_with_one_bad_task_enqueues_none(
    dashboard: Dashboard, conn: psycopg.Connection, body: Any, said: str
) -> None:
    before = task_count(conn)
    answer = post(dashboard, "/api/tasks/batch", body)
    assert answer.status == 400, answer.body
    assert said in answer.json()["error"], answer.body
    assert task_count(conn) == before


# The token, as for every action of the API


@pytest.mark.parametrize("path", ["/api/tasks", "/api/tasks/batch", "/api/job-queue/enqueue", "/api/tasks/recover-stale"])
def test_the_write_api_needs_the_token(dashboard: Dashboard, conn: psycopg.Connection, path: str) -> None:
    before = task_count(conn)
    body = [{"role": ROLE}] if path.endswith("batch") else {"role": ROLE} if "recover" not in path else {}
    for token in (None, "not-" + TOKEN):
        answer = post(dashboard, path, body, token=token)
        headers = {name.lower(): value for name, value in answer.headers.items()}
        assert answer.status == 401 and headers["www-authenticate"] == "Bearer", answer.body
        assert "Authorization: Bearer TOKEN" in answer.json()["error"]
    assert task_count(conn) == before


def test_a_dashboard_without_a_token_takes_no_write(database: str, conn: psycopg.Connection) -> None:
    before = task_count(conn)
    with dashboard_server(database, None) as read_only:
        for path in ("/api/tasks", "/api/tasks/batch"):
            answer = post(read_only, path, {"role": ROLE}, token=TOKEN)
            assert answer.status == 403 and "actions are off" in answer.json()["error"]
    assert task_count(conn) == before


# Recover stale: the seed's POST /api/tasks/recover-stale


def test_recover_stale_takes_back_a_silent_workers_task(dashboard: Dashboard, conn: psycopg.Connection) -> None:
    # Enqueued and started two hours ago by a worker never heard from since.
    conn.execute("SELECT set_taskpool_clock_offset('-2 hours')")
    try:
        (stale,) = conn.execute("SELECT id FROM enqueue_task('analytics_refresh')").fetchone()
        conn.execute("SELECT claim_and_start_tasks('analytics_refresh', 'write-api-gone', 1)")
    finally:
        conn.execute("SELECT set_taskpool_clock_offset('0')")
    bad = post(dashboard, "/api/tasks/recover-stale", {"threshold_minutes": "soon"})
    assert bad.status == 400 and "threshold_minutes must be a whole number" in bad.json()["error"]
    assert conn.execute("SELECT status FROM worker_tasks WHERE id = %s", (stale,)).fetchone()[0] == "running"
    answer = post(dashboard, "/api/tasks/recover-stale", {"threshold_minutes": 60})
    assert answer.status == 200 and answer.json() == {"recovered": 1}, answer.body
    assert conn.execute("SELECT status, retry_count FROM worker_tasks WHERE id = %s", (stale,)).fetchone() == ("pending", 1)
    # No body: each role's own stale threshold.
    assert post(dashboard, "/api/tasks/recover-stale", "").json() == {"recovered": 0}
