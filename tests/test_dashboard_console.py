"""The dashboard as an operator's console, over HTTP in process (Starlette's TestClient, no
JavaScript): pages that refresh themselves with the vendored htmx, bulk cancel and retry on the
task list's filters, the New task form, recover-stale, destructive actions confirmed on a page
of their own before the POST, and empty states that say what to do.

Each test has its own copy of the deployed schema (the `conn` and `db_url` fixtures). The layout
at 1280 px and the live refresh in a browser are tests/test_dashboard_layout.py.
"""

from __future__ import annotations

import hashlib
import html
import re
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from psycopg.types.json import Jsonb
from starlette.testclient import TestClient

import pyworker.contrib.dashboard
from pyworker.contrib.dashboard.app import HTMX_FILE, create_app

TOKEN = "dashboard-console-" + secrets.token_hex(8)
BEARER = {"Authorization": f"Bearer {TOKEN}"}
VENDOR = Path(pyworker.contrib.dashboard.__file__).parent / "static" / "vendor"
# htmx.min.js 2.0.11 as the npm package htmx.org ships it.
HTMX_SHA256 = "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717"


def client(db_url: str, token: str | None = TOKEN) -> TestClient:
    return TestClient(create_app(db_url, token), follow_redirects=False)


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, page[:500]
    return found.group(1)


def operator(db_url: str) -> TestClient:
    browser = client(db_url)
    form = browser.get("/login")
    answer = browser.post("/login", data={"csrf": csrf_of(form.text), "token": TOKEN, "next": "/"})
    assert answer.status_code == 303
    return browser


def form_fields(page: str, form_id: str) -> dict[str, str]:
    """The hidden inputs of the page's form `form_id`: what a browser would POST unchanged."""
    form = re.search(rf'<form [^>]*id="{form_id}".*?</form>', page, re.S)
    assert form, page[:2000]
    return {
        name: html.unescape(value)
        for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form.group(0))
    }


def messages(page: str) -> list[str]:
    return [html.unescape(text) for text in re.findall(r'<p class="message \w+"[^>]*>(.*?)</p>', page, re.S)]


def enqueue_many(conn: psycopg.Connection, role: str, count: int, **fields: Any) -> list[int]:
    specs = [{"role": role, **fields} for _ in range(count)]
    return [row[0] for row in conn.execute("SELECT id FROM enqueue_tasks(%s)", (Jsonb(specs),))]


def statuses(conn: psycopg.Connection, ids: list[int]) -> set[str]:
    return {row[0] for row in conn.execute("SELECT status FROM worker_tasks WHERE id = ANY(%s)", (ids,))}


def fail_tasks(conn: psycopg.Connection, role: str, errors: list[str]) -> list[int]:
    """A failed task of `role` for each error, claimed and failed for good through the SQL functions."""
    ids = []
    for error in errors:
        (task_id,) = enqueue_many(conn, role, 1, max_retries=0)
        attempt, token = conn.execute(
            "SELECT attempt, claim_token FROM claim_and_start_tasks(%s, 'console-w1', 1)", (role,)
        ).fetchone()
        conn.execute("SELECT fail_task(%s, 'console-w1', %s, %s, %s)", (task_id, attempt, token, error))
        ids.append(task_id)
    return ids


def database_message(conn: psycopg.Connection, query: str, params: Any = None) -> str:
    with pytest.raises(psycopg.Error) as refused:
        conn.execute(query, params)
    return refused.value.diag.message_primary


# Live refresh


def test_pages_refresh_themselves_with_the_vendored_htmx_and_work_without_it(db_url: str, conn: psycopg.Connection) -> None:
    (task_id,) = enqueue_many(conn, "analytics_refresh", 1)
    browser = operator(db_url)
    for path in ("/", "/tasks?role=analytics_refresh", f"/tasks/{task_id}", "/workers", "/schedules", "/platforms", "/health"):
        page = browser.get(path)
        assert page.status_code == 200, path
        # The region htmx polls is the page's own URL, and the page is whole without it.
        # On a task change (the stream, live.js), and every 30 s as a fallback.
        live = re.search(
            r'<div id="live" hx-get="([^"]+)" hx-trigger="every 30s \[liveRefreshAllowed\(\)\], tasks-changed'
            r' \[liveRefreshAllowed\(\)\]" hx-select="#live" hx-swap="outerHTML" data-changes="/api/task-changes"',
            page.text,
        )
        assert live and html.unescape(live.group(1)) == path, path
        assert f'<script src="/static/vendor/{HTMX_FILE}" defer></script>' in page.text
    # A form or a question is not refreshed under the operator's hands.
    for path in ("/tasks/new", f"/tasks/{task_id}/cancel", "/tasks/recover-stale"):
        page = browser.get(path)
        assert page.status_code == 200 and 'id="live"' not in page.text and "htmx" not in page.text, path

    script = browser.get(f"/static/vendor/{HTMX_FILE}")
    assert script.status_code == 200 and script.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert hashlib.sha256(script.content).hexdigest() == HTMX_SHA256
    assert "Zero-Clause BSD" in (VENDOR / "htmx-LICENSE.txt").read_text()
    # Not the pages: they change.
    assert "immutable" not in browser.get("/").headers.get("cache-control", "")
    assert browser.get("/static/live.js").status_code == 200


def test_a_refresh_after_the_log_in_ended_sends_the_whole_page_to_log_in(db_url: str) -> None:
    behind_login = TestClient(create_app(db_url, TOKEN, require_login=True), follow_redirects=False)
    refreshed = behind_login.get("/tasks?status=failed", headers={"HX-Request": "true"})
    assert refreshed.status_code == 200 and refreshed.text == ""
    assert refreshed.headers["hx-redirect"] == "/login?next=%2Ftasks%3Fstatus%3Dfailed"
    # A browser's own request is redirected as before.
    assert behind_login.get("/tasks?status=failed").status_code == 303


# Bulk actions


def test_an_operator_cancels_every_task_matching_a_filter_once_the_count_is_confirmed(
    db_url: str, conn: psycopg.Connection
) -> None:
    chosen = enqueue_many(conn, "analytics_refresh", 1234)
    other_role = enqueue_many(conn, "store_discovery", 2)
    browser = operator(db_url)
    listed = browser.get("/tasks?role=analytics_refresh&status=pending")
    assert 'href="/tasks/bulk-cancel?role=analytics_refresh&amp;status=pending"' in listed.text
    # Cancel is offered, retry is not: a pending task cannot be retried.
    assert 'id="bulk-retry"' not in listed.text

    asked = browser.get("/tasks/bulk-cancel?role=analytics_refresh&status=pending")
    assert asked.status_code == 200
    assert "Cancel 1,234 tasks matching role=analytics_refresh status=pending?" in html.unescape(asked.text)
    assert len(re.findall(r'<tr data-id="\d+">', asked.text)) == 10
    assert statuses(conn, chosen) == {"pending"}

    fields = form_fields(asked.text, "confirm-form")
    assert fields.keys() == {"csrf", "role", "status"}
    done = browser.post("/tasks/bulk-cancel", data=fields)
    assert done.status_code == 303 and done.headers["location"] == "/tasks?role=analytics_refresh&status=pending"
    back = browser.get(done.headers["location"])
    assert "cancelled 1,234 tasks matching role=analytics_refresh status=pending" in messages(back.text)
    assert statuses(conn, chosen) == {"cancelled"} and statuses(conn, other_role) == {"pending"}


def test_bulk_retry_takes_the_error_filter_literally_and_the_api_takes_it_too(
    db_url: str, conn: psycopg.Connection
) -> None:
    matching = fail_tasks(conn, "store_discovery", ["HTTP 503 from 100%_proxy", "http 503 FROM 100%_proxy again"])
    # `%` and `_` are not wildcards: "100%_proxy" is only the text itself.
    unmatched = fail_tasks(conn, "store_discovery", ["HTTP 503 from 100 proxies"])
    browser = operator(db_url)
    asked = browser.get("/tasks/bulk-retry", params={"status": "failed", "error": "503 from 100%_proxy"})
    assert "Retry 2 tasks matching status=failed error contains '503 from 100%_proxy'?" in html.unescape(asked.text)
    done = browser.post("/tasks/bulk-retry", data=form_fields(asked.text, "confirm-form"))
    assert done.status_code == 303
    assert statuses(conn, matching) == {"pending"} and statuses(conn, unmatched) == {"failed"}

    by_api = browser.post("/api/tasks/bulk-retry", json={"status": "failed", "error": "100 proxies"}, headers=BEARER)
    assert by_api.status_code == 200 and by_api.json() == {"tasks": 1}
    assert statuses(conn, unmatched) == {"pending"}
    cancelled = browser.post("/api/tasks/bulk-cancel", json={"role": "store_discovery", "store": None}, headers=BEARER)
    assert cancelled.status_code == 200 and cancelled.json() == {"tasks": 3}
    # Nothing left to retry of another role: the question says so, and offers no button.
    none_left = browser.get("/tasks/bulk-retry?role=analytics_refresh")
    assert "No task matching role=analytics_refresh can be retried" in none_left.text
    assert 'id="confirm"' not in none_left.text


def test_bulk_actions_need_an_operator_a_filter_and_a_known_role(db_url: str, conn: psycopg.Connection) -> None:
    pending = enqueue_many(conn, "analytics_refresh", 3)
    # Not logged in: sent to log in (and back), then refused without the session's CSRF token.
    anonymous = client(db_url)
    asked = anonymous.get("/tasks/bulk-cancel?role=analytics_refresh")
    assert asked.status_code == 303
    assert parse_qs(urlsplit(asked.headers["location"]).query)["next"] == ["/tasks/bulk-cancel?role=analytics_refresh"]
    refused = anonymous.post("/tasks/bulk-cancel", data={"role": "analytics_refresh", "csrf": "forged"})
    assert refused.status_code == 403 and "CSRF" in refused.text
    assert 'id="bulk-cancel"' not in anonymous.get("/tasks?role=analytics_refresh").text
    # A session that did not log in has a CSRF token (the log-in form's), and still may not act.
    own_csrf = csrf_of(anonymous.get("/login").text)
    refused = anonymous.post("/tasks/bulk-cancel", data={"role": "analytics_refresh", "csrf": own_csrf})
    assert refused.status_code == 403 and "log in" in refused.text
    # The API: no bearer token, a wrong one.
    assert anonymous.post("/api/tasks/bulk-cancel", json={"role": "analytics_refresh"}).status_code == 401
    wrong = anonymous.post("/api/tasks/bulk-cancel", json={"role": "analytics_refresh"}, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    # A read-only dashboard (no token) has no actions at all.
    read_only = client(db_url, token=None)
    assert read_only.get("/tasks/bulk-cancel?role=analytics_refresh").status_code == 403
    assert read_only.post("/api/tasks/bulk-cancel", json={"role": "analytics_refresh"}, headers=BEARER).status_code == 403

    browser = operator(db_url)
    # No filter: the database's own refusal (it will not take every task), and nothing done.
    everything = browser.post("/api/tasks/bulk-cancel", json={}, headers=BEARER)
    expected = database_message(conn, "SELECT cancel_tasks()")
    assert everything.status_code == 400 and everything.json()["error"].startswith(expected)
    asked = browser.get("/tasks/bulk-cancel")
    assert asked.status_code == 400 and expected in html.unescape(asked.text)
    unknown = browser.get("/tasks/bulk-cancel?role=no_such_role")
    assert unknown.status_code == 400 and "unknown role 'no_such_role'" in html.unescape(unknown.text)
    bad_store = browser.post("/api/tasks/bulk-cancel", json={"store": "x"}, headers=BEARER)
    assert bad_store.status_code == 400 and "store must be a whole number" in bad_store.json()["error"]
    bad_status = browser.post("/api/tasks/bulk-cancel", json={"status": "done"}, headers=BEARER)
    assert bad_status.status_code == 400 and "status 'done' is not a task status" in bad_status.json()["error"]
    assert statuses(conn, pending) == {"pending"}


# The New task form


def test_the_new_task_form_enqueues_through_enqueue_tasks(db_url: str, conn: psycopg.Connection) -> None:
    browser = operator(db_url)
    form = browser.get("/tasks/new?role=store_discovery")
    assert form.status_code == 200 and "<option selected>store_discovery</option>" in form.text
    made = browser.post("/tasks/create", data={
        "csrf": csrf_of(form.text), "role": "analytics_refresh", "payload": '{"report": "daily", "n": 3}',
        "priority": "7", "scheduled_for": "2099-01-01 07:00+00", "dedupe_key": "console-daily", "max_retries": "2",
        "store": "",
    })
    assert made.status_code == 303
    task_id = int(made.headers["location"].rsplit("/", 1)[1])
    shown = browser.get(made.headers["location"])
    assert f"task {task_id} enqueued: analytics_refresh, pending" in messages(shown.text)
    row = conn.execute(
        "SELECT role, payload, priority, scheduled_for = '2099-01-01 07:00+00', dedupe_key, max_retries, status"
        " FROM worker_tasks WHERE id = %s", (task_id,)
    ).fetchone()
    assert row == ("analytics_refresh", {"report": "daily", "n": 3}, 7, True, "console-daily", 2, "pending")

    # The same dedupe key while that task is active: no second task, the first one shown.
    again = browser.post("/tasks/create", data={"csrf": csrf_of(form.text), "role": "analytics_refresh", "dedupe_key": "console-daily"})
    assert again.status_code == 303 and again.headers["location"] == f"/tasks/{task_id}"
    said = messages(browser.get(again.headers["location"]).text)
    assert f"nothing enqueued: task {task_id} (pending) holds dedupe key console-daily" in said
    assert conn.execute("SELECT count(*) FROM worker_tasks").fetchone() == (1,)

    by_api = browser.post("/api/tasks/create", json={"role": "store_discovery", "payload": {"from": "api"}, "priority": -5}, headers=BEARER)
    assert by_api.status_code == 200
    assert (by_api.json()["payload"], by_api.json()["priority"], by_api.json()["deduplicated"]) == ({"from": "api"}, -5, False)
    assert browser.post("/api/tasks/create", json={"role": "store_discovery"}).status_code == 401


@pytest.mark.parametrize(("fields", "says", "status"), [
    ({"role": "analytics_refresh", "payload": '{"report": '}, "payload is not JSON: ", 400),
    ({"role": "analytics_refresh", "priority": "high"}, "priority must be a whole number, not 'high'", 400),
    ({"role": "analytics_refresh", "scheduled_for": "next tuesday-ish"}, "scheduled_for must be a time as text", 400),
    ({"role": "analytics_refresh", "bogus": "1"}, "unknown field 'bogus'", 400),
    ({"role": ""}, "a new task needs a role", 400),
])
def test_a_refused_new_task_shows_why_keeps_what_was_typed_and_makes_nothing(
    db_url: str, conn: psycopg.Connection, fields: dict[str, str], says: str, status: int
) -> None:
    browser = operator(db_url)
    form = browser.get("/tasks/new")
    answer = browser.post("/tasks/create", data={"csrf": csrf_of(form.text), **fields})
    assert answer.status_code == status
    error = re.search(r'<p class="message error" id="error">(.*?)</p>', answer.text, re.S)
    assert error and says in html.unescape(error.group(1)), answer.text[:3000]
    if "payload" in fields:
        assert f">{fields['payload']}</textarea>" in html.unescape(answer.text)
    assert conn.execute("SELECT count(*) FROM worker_tasks").fetchone()[0] == 0


def test_a_new_task_the_database_refuses_shows_its_own_message(db_url: str, conn: psycopg.Connection) -> None:
    browser = operator(db_url)
    form = browser.get("/tasks/new")
    for fields, query in [
        ({"role": "no_such_role"}, "SELECT enqueue_task('no_such_role')"),
        ({"role": "analytics_refresh", "payload": "[1, 2]"}, "SELECT enqueue_task('analytics_refresh', '[1, 2]')"),
        ({"role": "analytics_refresh", "priority": "1000"}, "SELECT enqueue_task('analytics_refresh', priority => 1000)"),
    ]:
        answer = browser.post("/tasks/create", data={"csrf": csrf_of(form.text), **fields})
        expected = database_message(conn, query)
        assert answer.status_code == 400 and expected in html.unescape(answer.text), (fields, expected)
        assert "tasks[0]" not in answer.text
    assert conn.execute("SELECT count(*) FROM worker_tasks").fetchone()[0] == 0


# Recover stale


def test_an_operator_recovers_stale_tasks_after_seeing_them(db_url: str, conn: psycopg.Connection) -> None:
    # Enqueued and claimed two hours ago, and never heard from since.
    conn.execute("SELECT set_taskpool_clock_offset('-2 hours')")
    (stale,) = enqueue_many(conn, "analytics_refresh", 1)
    conn.execute("SELECT claim_and_start_tasks('analytics_refresh', 'console-gone', 1)")
    conn.execute("SELECT set_taskpool_clock_offset('0')")
    browser = operator(db_url)
    assert 'href="/tasks/recover-stale"' in browser.get("/health").text
    asked = browser.get("/tasks/recover-stale")
    assert "Recover 1 stale task?" in asked.text and f'<tr data-id="{stale}">' in asked.text
    assert statuses(conn, [stale]) == {"running"}
    done = browser.post("/tasks/recover-stale", data=form_fields(asked.text, "confirm-form") | {"threshold_minutes": ""})
    assert done.status_code == 303 and done.headers["location"] == "/health"
    assert "recovered 1 stale task" in messages(browser.get("/health").text)
    assert statuses(conn, [stale]) == {"pending"}

    by_api = browser.post("/api/tasks/recover-stale", json={"threshold_minutes": 1}, headers=BEARER)
    assert by_api.status_code == 200 and by_api.json() == {"recovered": 0}
    bad = browser.post("/api/tasks/recover-stale", json={"threshold_minutes": 0}, headers=BEARER)
    assert bad.status_code == 400 and "threshold_minutes" in bad.json()["error"]


# Destructive actions ask first


def test_destructive_actions_ask_on_a_page_of_their_own_then_post(db_url: str, conn: psycopg.Connection) -> None:
    (task_id,) = enqueue_many(conn, "analytics_refresh", 1)
    conn.execute("INSERT INTO platform_governance (platform) VALUES ('calm')")
    conn.execute("SELECT create_schedule('console_nightly', 'analytics_refresh', every => '1 day')")
    browser = operator(db_url)

    task_page = browser.get(f"/tasks/{task_id}")
    # A link to the question, not a form that acts.
    assert f'<a class="button danger" id="cancel" href="/tasks/{task_id}/cancel">' in task_page.text
    asked = browser.get(f"/tasks/{task_id}/cancel")
    assert f"Cancel task {task_id} (analytics_refresh, pending)?" in asked.text
    assert f'href="/tasks/{task_id}" id="back"' in asked.text
    assert statuses(conn, [task_id]) == {"pending"}
    assert browser.post(f"/tasks/{task_id}/cancel", data=form_fields(asked.text, "confirm-form")).status_code == 303
    assert statuses(conn, [task_id]) == {"cancelled"}
    finished = browser.get(f"/tasks/{task_id}/cancel")
    assert "Only a pending, claimed or running task can be cancelled." in finished.text and 'id="confirm"' not in finished.text

    overview = browser.get("/")
    assert 'href="/roles/analytics_refresh/pause"' in overview.text
    asked = browser.get("/roles/analytics_refresh/pause")
    assert "Pause role analytics_refresh?" in asked.text and 'name="reason"' in asked.text
    paused = browser.post("/roles/analytics_refresh/pause", data=form_fields(asked.text, "confirm-form") | {"reason": "maintenance"})
    assert paused.status_code == 303
    assert conn.execute("SELECT pause_reason FROM task_roles WHERE role = 'analytics_refresh'").fetchone() == ("maintenance",)
    assert browser.get("/roles/no_such_role/pause").status_code == 400

    assert 'href="/platforms/calm/disable"' in browser.get("/platforms").text
    asked = browser.get("/platforms/calm/disable")
    assert "Disable platform calm?" in asked.text
    assert conn.execute("SELECT enabled FROM platform_governance WHERE platform = 'calm'").fetchone() == (True,)
    browser.post("/platforms/calm/disable", data=form_fields(asked.text, "confirm-form"))
    assert conn.execute("SELECT enabled FROM platform_governance WHERE platform = 'calm'").fetchone() == (False,)

    schedules = browser.get("/schedules")
    assert 'href="/schedules/console_nightly/delete"' in schedules.text
    assert 'href="/schedules/console_nightly/disable"' in schedules.text
    asked = browser.get("/schedules/console_nightly/delete")
    assert "Delete schedule console_nightly (analytics_refresh)?" in asked.text
    assert conn.execute("SELECT count(*) FROM task_schedules WHERE name = 'console_nightly'").fetchone() == (1,)
    browser.post("/schedules/console_nightly/delete", data=form_fields(asked.text, "confirm-form"))
    assert conn.execute("SELECT count(*) FROM task_schedules WHERE name = 'console_nightly'").fetchone() == (0,)
    assert browser.get("/schedules/console_nightly/delete").status_code == 404


# Empty states


def test_an_empty_pool_says_what_to_do(db_url: str, conn: psycopg.Connection) -> None:
    # The deployed schema comes with the crawler's schedules.
    conn.execute("DELETE FROM task_schedules")
    reader = client(db_url)
    overview = html.unescape(reader.get("/").text)
    assert "No tasks yet: enqueue one with pyworker enqueue" in re.sub(r"<[^>]+>", "", overview)
    assert "The last 0 hours" not in overview and "The last 12 hours" in overview
    assert "No task completed or failed in the last 12 hours" in overview
    # Logged in, the form is a link away.
    assert 'the <a href="/tasks/new">New task</a> form' in operator(db_url).get("/").text
    tasks = re.sub(r"<[^>]+>", "", html.unescape(reader.get("/tasks").text))
    assert "No tasks yet: enqueue one with pyworker enqueue ROLE" in tasks
    filtered = reader.get("/tasks?status=failed").text
    assert "No tasks match on page 1 (0 in all)" in filtered and 'href="/tasks">clear the filters' in filtered
    assert "No workers registered: start one with" in reader.get("/workers").text
    assert "No schedules yet" in reader.get("/schedules").text

    conn.execute("DELETE FROM task_roles")
    overview = reader.get("/").text
    assert "No roles yet" in overview and 'id="roles"' not in overview
