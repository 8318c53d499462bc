"""`pyworker dashboard` in a real browser: the command (uvicorn) in a subprocess on a database with
tasks in every state, a worker, schedules and an open circuit; Debian's chromium under selenium
loads the pages, logs in and clicks the actions; plain HTTP calls (no cookie, no CSRF token, a
bearer token or none) check what a browser would not send.

One database, one server and one browser for the module: the tests act on tasks of their own.
The overview's screenshot goes to the test's tmp_path (its path printed); with
TASKPOOL_DASHBOARD_SCREENSHOT=PATH, to PATH too (docs/images/dashboard.png was made so).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from dashboard_support import Dashboard, chromium, dashboard_server, http
from prometheus_client.parser import text_string_to_metric_families
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from testkit import databases
from worker_support import make_stores, task_row

from core_fixtures import COPY_PREFIX, database_url

# One pytest-xdist worker runs the whole module (make test-py: --dist loadgroup), so that its
# module fixtures (the seeded database, the dashboard server, chromium) are made once.
pytestmark = pytest.mark.xdist_group("dashboard")

TOKEN = "dashboard-test-" + secrets.token_hex(8)
WORKER = "dash-w1"


def scalar(conn: psycopg.Connection, query: str, params: Any = None) -> Any:
    return conn.execute(query, params).fetchone()[0]


def enqueue(conn: psycopg.Connection, role: str, payload: dict[str, Any], **options: Any) -> int:
    named = "".join(f", {key} => %({key})s" for key in options)
    return scalar(conn, f"SELECT id FROM enqueue_task(%(role)s, %(payload)s{named})",
                     {"role": role, "payload": Jsonb(payload), **options})


def claim(conn: psycopg.Connection, role: str, started: bool = True) -> dict[str, Any]:
    function = "claim_and_start_tasks" if started else "claim_tasks"
    with conn.cursor(row_factory=dict_row) as cursor:
        return cursor.execute(f"SELECT * FROM {function}(%s, %s, 1)", (role, WORKER)).fetchone()


def seed(conn: psycopg.Connection) -> dict[str, int]:
    """Tasks in every state through the SQL functions, completions and failures over the last
    hours (the clock moved back, never waited for), a worker, two schedules, an open circuit."""
    ids: dict[str, int] = {}
    for hours_ago, done, failed in [(6, 2, 0), (4, 5, 1), (3, 3, 0), (2, 7, 2), (1, 4, 1), (0, 6, 1)]:
        conn.execute("SELECT set_taskpool_clock_offset(make_interval(hours => %s))", (-hours_ago,))
        conn.execute("SELECT register_worker(%s, ARRAY['analytics_refresh', 'store_discovery'], 'dash-host', 4242)", (WORKER,))
        for number in range(done + failed):
            task_id = enqueue(conn, "analytics_refresh", {"hour": -hours_ago, "n": number})
            task = claim(conn, "analytics_refresh")
            assert task["id"] == task_id
            if number < failed:
                conn.execute("SELECT fail_task(%s, %s, %s, %s, 'HTTP 503 from the platform', retry_at => taskpool_now())",
                             (task_id, WORKER, task["attempt"], task["claim_token"]))
                task = claim(conn, "analytics_refresh")
            conn.execute("SELECT complete_task(%s, %s, %s, %s, %s)",
                         (task_id, WORKER, task["attempt"], task["claim_token"], Jsonb({"rows": number})))
    conn.execute("SELECT set_taskpool_clock_offset('0')")
    conn.execute("SELECT register_worker(%s, ARRAY['analytics_refresh', 'store_discovery'], 'dash-host', 4242)", (WORKER,))

    # A chain: a completed store_discovery whose follow-up waits.
    ids["parent"] = enqueue(conn, "store_discovery", {"platform": "simulated"})
    task = claim(conn, "store_discovery")
    conn.execute("SELECT complete_task(%s, %s, %s, %s, %s, %s)", (
        ids["parent"], WORKER, task["attempt"], task["claim_token"], Jsonb({"newStoreIds": []}),
        Jsonb([{"role": "analytics_refresh", "payload": {"after": "discovery"}}]),
    ))
    ids["child"] = scalar(conn, "SELECT id FROM worker_tasks WHERE parent_id = %s", (ids["parent"],))
    # Failed for good after a retry: two attempts in its history.
    ids["failed"] = enqueue(conn, "store_discovery", {"platform": "broken"}, max_retries=1)
    task = claim(conn, "store_discovery")
    conn.execute("SELECT fail_task(%s, %s, %s, %s, 'HTTP 503: first try', retry_at => taskpool_now())",
                 (ids["failed"], WORKER, task["attempt"], task["claim_token"]))
    task = claim(conn, "store_discovery")
    conn.execute("SELECT fail_task(%s, %s, %s, %s, 'HTTP 503: gave up')",
                 (ids["failed"], WORKER, task["attempt"], task["claim_token"]))
    ids["other_failed"] = enqueue(conn, "store_discovery", {"platform": "flaky"}, max_retries=0)
    task = claim(conn, "store_discovery")
    conn.execute("SELECT fail_task(%s, %s, %s, %s, 'parse error in the menu')",
                 (ids["other_failed"], WORKER, task["attempt"], task["claim_token"]))
    ids["running"] = enqueue(conn, "store_discovery", {"state": "running"})
    claim(conn, "store_discovery", started=True)
    ids["claimed"] = enqueue(conn, "store_discovery", {"state": "claimed"})
    claim(conn, "store_discovery", started=False)
    # product_discovery tasks act on a store each.
    stores = iter(make_stores(conn, 6))
    ids["cancelled"] = enqueue(conn, "product_discovery", {"state": "cancelled"}, dispensary_id=next(stores))
    conn.execute("SELECT cancel_task(%s)", (ids["cancelled"],))
    # Pending tasks for the actions, each test its own.
    for name in ("to_cancel", "raced", "guarded", "by_api", "later"):
        ids[name] = enqueue(conn, "product_discovery", {"for": name}, dispensary_id=next(stores))
    # Ready for 10 minutes, and no worker of its role: the unserved_roles check.
    conn.execute("SELECT set_taskpool_clock_offset('-10 minutes')")
    ids["unserved"] = enqueue(conn, "image_download", {"image_url": "http://img.example/p-1.png"})
    conn.execute("SELECT set_taskpool_clock_offset('0')")

    conn.execute("""
        INSERT INTO task_schedules (name, role, kind, interval_hours, priority, next_run_at, enabled)
        VALUES ('dash_nightly', 'analytics_refresh', 'single', 24, 0, taskpool_now() + interval '3 hours', false),
               ('dash_hourly', 'analytics_refresh', 'single', 1, 0, taskpool_now() + interval '1 hour', true)
    """)
    # A day's cooldown: the circuit stays open for every test of the module.
    conn.execute("INSERT INTO platform_governance (platform, failure_threshold, cooldown)"
                 " VALUES ('simulated', 2, '1 day'), ('calm', 2, '1 day')")
    for _ in range(2):
        conn.execute("SELECT record_platform_result('simulated', false, 'HTTP 503 Service Unavailable')")
    conn.execute("SELECT record_platform_result('calm', true)")
    return ids


@pytest.fixture(scope="module")
def seeded(template_database: str) -> Iterator[tuple[str, dict[str, int]]]:
    name = COPY_PREFIX + "dashboard_" + secrets.token_hex(4)
    with databases.copy(database_url(), template_database, name) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            ids = seed(conn)
        yield url, ids


@pytest.fixture(scope="module")
def db(seeded: tuple[str, dict[str, int]]) -> Iterator[psycopg.Connection]:
    with psycopg.connect(seeded[0], autocommit=True) as conn:
        yield conn


@pytest.fixture(scope="module")
def ids(seeded: tuple[str, dict[str, int]]) -> dict[str, int]:
    return seeded[1]


@pytest.fixture(scope="module")
def dashboard(seeded: tuple[str, dict[str, int]]) -> Iterator[Dashboard]:
    with dashboard_server(seeded[0], TOKEN) as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def page(browser: Any, dashboard: Dashboard, path: str) -> Any:
    browser.get(dashboard.url + path)
    return browser


def text_of(browser: Any, selector: str) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, selector).text


def all_of(browser: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return browser.find_elements(By.CSS_SELECTOR, selector)


def click(browser: Any, selector: str) -> None:
    """Click the element and wait for the page it leads to (a form's POST, then its redirect):
    the old page gone and the new one loaded whole, so that what the test finds next on it is
    not a node of a document still being parsed."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    # A mark on the old page's window, not a node of it: asked whether a node of a document being
    # replaced is stale, chromium may answer "Node with given id does not belong to the document"
    # instead. A script run while the page changes may fail the same way: the wait asks again.
    browser.execute_script("window.taskpoolOldPage = true")
    all_of(browser, selector)[0].click()
    WebDriverWait(browser, 30, ignored_exceptions=(WebDriverException,)).until(
        lambda b: b.execute_script("return window.taskpoolOldPage === undefined && document.readyState === 'complete'")
    )


def log_in(browser: Any, dashboard: Dashboard, token: str = TOKEN, next_path: str = "/") -> None:
    page(browser, dashboard, f"/login?next={next_path}")
    all_of(browser, "#token")[0].send_keys(token)
    click(browser, "#log-in")


def messages(browser: Any) -> list[str]:
    return [element.text for element in all_of(browser, ".message")]


# Reading


def test_the_overview_shows_each_role_its_states_workers_and_hours(
    browser: Any, dashboard: Dashboard, db: psycopg.Connection, tmp_path: Path
) -> None:
    page(browser, dashboard, "/")
    counts = dict(db.execute(
        "SELECT status, count(*) FROM worker_tasks WHERE role = 'store_discovery' GROUP BY status"
    ).fetchall())
    cells = [cell.text for cell in all_of(browser, "tr[data-role=store_discovery] td")]
    # role, pending, ready, running (claimed or running), failed, cancelled, oldest ready,
    # active processes (their slots), processes needed, slots needed
    assert cells[:6] == ["store_discovery", "0", "0", str(counts["claimed"] + counts["running"]), str(counts["failed"]), "0"]
    assert cells[7] == "1 (1)"
    discovery = [cell.text for cell in all_of(browser, "tr[data-role=product_discovery] td")]
    assert discovery[1:3] == ["5", "5"] and discovery[5] == "1"
    analytics = [cell.text for cell in all_of(browser, "tr[data-role=analytics_refresh] td")]
    # completed in the last hour: the 7 of this hour (6 + 1 that failed once), failure rate 1 / (1 + 7)
    completed_now = scalar(db, "SELECT completed_last_hour FROM v_worker_capacity WHERE role = 'analytics_refresh'")
    assert analytics[10] == str(completed_now) and analytics[11].endswith("%")
    # The chart: one bar pair per hour, 12 hours, the busiest hour's completions named in its title.
    bars = all_of(browser, "figure.chart svg g title")
    assert len(bars) == 12
    assert any("completed" in bar.get_attribute("textContent") for bar in bars)
    assert any(check.text == "open_circuits: attention" for check in all_of(browser, ".checks .check"))
    assert any(check.text == "unserved_roles: attention" for check in all_of(browser, ".checks .check"))
    unserved = all_of(browser, "tr[data-role=image_download] td.processes")[0]
    assert unserved.text == "0 (0)" and "bad" in unserved.get_attribute("class").split()
    served = all_of(browser, "tr[data-role=store_discovery] td.processes")[0]
    assert "bad" not in served.get_attribute("class").split()

    screenshot = tmp_path / "dashboard-overview.png"
    browser.save_screenshot(str(screenshot))
    print(f"the overview's screenshot: {screenshot}")
    if os.environ.get("TASKPOOL_DASHBOARD_SCREENSHOT"):
        browser.save_screenshot(os.environ["TASKPOOL_DASHBOARD_SCREENSHOT"])
    assert screenshot.stat().st_size > 10_000


def test_the_task_list_filters_and_links_to_a_task_with_its_history_and_chain(
    browser: Any, dashboard: Dashboard, ids: dict[str, int]
) -> None:
    from selenium.webdriver.support.ui import Select

    page(browser, dashboard, "/tasks")
    Select(all_of(browser, "select[name=status]")[0]).select_by_visible_text("failed")
    all_of(browser, "input[name=error]")[0].send_keys("503")
    click(browser, ".filters button")
    rows = all_of(browser, "#tasks tbody tr")
    assert [int(row.get_attribute("data-id")) for row in rows] == [ids["failed"]]
    assert "1–1 of 1" in text_of(browser, ".pages")

    click(browser, f"#tasks a[href='/tasks/{ids['failed']}']")
    assert browser.current_url.endswith(f"/tasks/{ids['failed']}")
    assert text_of(browser, "#task-status") == "failed"
    assert '"platform": "broken"' in text_of(browser, "#payload")
    attempts = [[cell.text for cell in row.find_elements("css selector", "td")] for row in all_of(browser, "#attempts tbody tr")]
    assert [(row[0], row[6], row[7]) for row in attempts] == [
        ("1", "retried", "HTTP 503: first try"), ("2", "failed", "HTTP 503: gave up")
    ]

    page(browser, dashboard, f"/tasks/{ids['child']}")
    chain = text_of(browser, "#chain")
    assert f"{ids['parent']} store_discovery completed" in chain
    assert f"{ids['child']} analytics_refresh pending" in chain

    page(browser, dashboard, "/tasks?status=pending&role=product_discovery")
    assert len(all_of(browser, "#tasks tbody tr")) == 5
    page(browser, dashboard, "/tasks?error=no+such+error")
    assert "No tasks match" in text_of(browser, "#no-tasks")


def test_workers_schedules_platforms_and_health_have_their_pages(
    browser: Any, dashboard: Dashboard, ids: dict[str, int]
) -> None:
    page(browser, dashboard, "/workers")
    assert "analytics_refresh, store_discovery" in text_of(browser, "#workers")
    assert "live" in text_of(browser, "#workers")
    page(browser, dashboard, "/schedules")
    assert text_of(browser, "tr[data-name=dash_nightly] .enabled") == "no"
    page(browser, dashboard, "/platforms")
    assert "open" == text_of(browser, "tr[data-platform=simulated] .circuit")
    assert "closed" == text_of(browser, "tr[data-platform=calm] .circuit")
    assert "opened" in text_of(browser, "#events") and "HTTP 503 Service Unavailable" in text_of(browser, "#events")
    page(browser, dashboard, "/health")
    assert text_of(browser, "#health-status") == "attention"
    assert "1 platform circuit(s) open: simulated" in text_of(browser, "tr[data-check=open_circuits]")
    assert all_of(browser, "#xmin-horizon")


def test_every_page_is_json_under_api(dashboard: Dashboard, ids: dict[str, int]) -> None:
    overview = http(dashboard.url + "/api/overview").json()
    assert {row["role"] for row in overview["roles"]} >= {"store_discovery", "analytics_refresh"}
    assert len(overview["throughput"]) == 12 * len(overview["roles"])
    assert overview["unserved"] == ["image_download"]
    listed = http(dashboard.url + "/api/tasks?status=failed&error=PARSE").json()
    assert [task["id"] for task in listed["tasks"]] == [ids["other_failed"]] and listed["total"] == 1
    task = http(dashboard.url + f"/api/tasks/{ids['failed']}").json()
    assert task["task"]["status"] == "failed" and [a["outcome"] for a in task["attempts"]] == ["retried", "failed"]
    capacity = http(dashboard.url + "/api/capacity/product_discovery").json()
    assert capacity["pending_tasks"] == 5 and set(capacity["workers_needed"]) == {"for_1_hour", "for_4_hours", "for_8_hours"}
    platforms = http(dashboard.url + "/api/platforms").json()
    assert {row["platform"]: row["circuit"] for row in platforms["platforms"]} == {"calm": "closed", "simulated": "open"}
    health = http(dashboard.url + "/api/health").json()
    assert health["status"] == "attention" and "xmin_horizon" in health
    assert {row["name"] for row in http(dashboard.url + "/api/schedules").json()} >= {"dash_nightly", "dash_hourly"}
    assert [row["worker_id"] for row in http(dashboard.url + "/api/workers").json()] == [WORKER]

    missing = http(dashboard.url + "/api/tasks/999999")
    assert (missing.status, missing.json()) == (404, {"error": "task 999999 does not exist"})
    unknown = http(dashboard.url + "/api/tasks?role=nope")
    assert unknown.status == 400 and unknown.json()["error"].startswith("unknown role 'nope'")
    assert http(dashboard.url + "/api/capacity/nope").status == 400
    assert http(dashboard.url + "/api/tasks?page=zero").status == 400


def test_the_dashboard_serves_the_pools_prometheus_metrics(dashboard: Dashboard, db: psycopg.Connection) -> None:
    answer = http(dashboard.url + "/metrics")
    assert answer.status == 200 and answer.headers["content-type"].startswith("text/plain")
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.body)
        for sample in family.samples
    }
    (failed,) = db.execute("SELECT count(*) FROM worker_tasks WHERE role = 'product_refresh' AND status = 'failed'").fetchone()
    assert samples[("taskpool_tasks", (("role", "product_refresh"), ("status", "failed")))] == failed
    assert any(name == "taskpool_tasks_completed_total" for name, _ in samples)


# Actions


def test_actions_are_refused_without_a_session_or_its_csrf_token(
    browser: Any, dashboard: Dashboard, db: psycopg.Connection, ids: dict[str, int]
) -> None:
    guarded = ids["guarded"]
    # No session at all: no CSRF token either.
    answer = http(dashboard.url + f"/tasks/{guarded}/cancel", method="POST", data={"csrf": "forged"})
    assert answer.status == 403 and "CSRF" in answer.body
    # A browser that has not logged in sees no button.
    browser.delete_all_cookies()
    page(browser, dashboard, f"/tasks/{guarded}")
    assert not all_of(browser, "#cancel")
    # Logged in, a form whose CSRF token is not the session's.
    log_in(browser, dashboard, next_path=f"/tasks/{guarded}")
    click(browser, "#cancel")
    browser.execute_script("document.querySelector('#confirm-form input[name=csrf]').value = 'forged'")
    click(browser, "#confirm")
    assert "403" in text_of(browser, "h1")
    assert "CSRF token does not match" in text_of(browser, "#error")
    # The API: no token, a wrong one.
    assert http(dashboard.url + f"/api/tasks/{guarded}/cancel", method="POST").status == 401
    wrong = http(dashboard.url + f"/api/tasks/{guarded}/cancel", method="POST", headers={"Authorization": "Bearer nope"})
    assert wrong.status == 401
    assert task_row(db, guarded)["status"] == "pending"


def test_a_wrong_token_does_not_log_in(browser: Any, dashboard: Dashboard) -> None:
    browser.delete_all_cookies()
    log_in(browser, dashboard, token="not-the-token")
    assert "wrong token" in messages(browser)
    page(browser, dashboard, "/schedules")
    assert not all_of(browser, "button.enable")


def test_logging_in_goes_back_only_to_a_page_of_the_dashboard(browser: Any, dashboard: Dashboard) -> None:
    for elsewhere in ("//example.invalid/", "/\\example.invalid/", "https://example.invalid/"):
        browser.delete_all_cookies()
        log_in(browser, dashboard, next_path=urllib.parse.quote(elsewhere, safe=""))
        assert browser.current_url == dashboard.url + "/"


def test_an_operator_cancels_a_task_and_enables_and_runs_a_schedule(
    browser: Any, dashboard: Dashboard, db: psycopg.Connection, ids: dict[str, int]
) -> None:
    browser.delete_all_cookies()
    log_in(browser, dashboard, next_path=f"/tasks/{ids['to_cancel']}")
    assert "logged in: actions are on" in messages(browser)
    click(browser, "#cancel")
    assert text_of(browser, "#question") == f"Cancel task {ids['to_cancel']} (product_discovery, pending)?"
    assert task_row(db, ids["to_cancel"])["status"] == "pending"
    click(browser, "#confirm")
    assert f"task {ids['to_cancel']} cancelled" in messages(browser)
    assert text_of(browser, "#task-status") == "cancelled"
    assert task_row(db, ids["to_cancel"])["status"] == "cancelled"
    click(browser, "#retry")
    assert text_of(browser, "#task-status") == "pending"

    page(browser, dashboard, "/schedules")
    click(browser, "tr[data-name=dash_nightly] button.enable")
    assert text_of(browser, "tr[data-name=dash_nightly] .enabled") == "yes"
    assert scalar(db, "SELECT enabled FROM task_schedules WHERE name = 'dash_nightly'") is True
    click(browser, "tr[data-name=dash_nightly] button.trigger")
    assert "schedule dash_nightly ran: 1 task(s) created" in messages(browser)
    click(browser, "tr[data-name=dash_nightly] a.disable")
    click(browser, "#confirm")
    assert text_of(browser, "tr[data-name=dash_nightly] .enabled") == "no"


def test_a_refused_action_shows_the_databases_own_error(
    browser: Any, dashboard: Dashboard, db: psycopg.Connection, ids: dict[str, int]
) -> None:
    raced = ids["raced"]
    browser.delete_all_cookies()
    log_in(browser, dashboard, next_path=f"/tasks/{raced}")
    # Another operator cancels it while the page is open, then the click comes.
    click(browser, "#cancel")
    db.execute("SELECT cancel_task(%s)", (raced,))
    with pytest.raises(psycopg.Error) as refused:
        db.execute("SELECT cancel_task(%s)", (raced,))
    click(browser, "#confirm")
    assert refused.value.diag.message_primary in messages(browser)[0]
    assert text_of(browser, "#task-status") == "cancelled"


def test_the_api_acts_with_the_bearer_token_and_says_why_it_was_refused(
    dashboard: Dashboard, db: psycopg.Connection, ids: dict[str, int]
) -> None:
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    done = http(dashboard.url + f"/api/tasks/{ids['by_api']}/cancel", method="POST", headers=bearer)
    assert done.status == 200 and done.json()["status"] == "cancelled"
    again = http(dashboard.url + f"/api/tasks/{ids['by_api']}/cancel", method="POST", headers=bearer)
    with pytest.raises(psycopg.Error) as refused:
        db.execute("SELECT cancel_task(%s)", (ids["by_api"],))
    assert again.status == 409 and again.json()["error"].startswith(refused.value.diag.message_primary)
    assert http(dashboard.url + "/api/schedules/no_such/trigger", method="POST", headers=bearer).status == 404
    ran = http(dashboard.url + "/api/schedules/dash_hourly/trigger", method="POST", headers=bearer)
    assert ran.status == 200 and ran.json()["last_task_count"] == 1


def test_without_a_token_the_dashboard_is_read_only(
    browser: Any, seeded: tuple[str, dict[str, int]], db: psycopg.Connection
) -> None:
    url, ids = seeded
    with dashboard_server(url, token=None) as read_only:
        page(browser, read_only, f"/tasks/{ids['later']}")
        assert text_of(browser, ".session") == "read-only"
        assert not all_of(browser, "#cancel")
        refused = http(read_only.url + f"/tasks/{ids['later']}/cancel", method="POST", data={"csrf": "x"})
        assert refused.status == 403 and "actions are off" in refused.body
        assert http(read_only.url + "/login").status == 403
        api = http(read_only.url + f"/api/tasks/{ids['later']}/cancel", method="POST", headers={"Authorization": "Bearer x"})
        assert api.status == 403
    assert task_row(db, ids["later"])["status"] == "pending"


def test_a_blank_token_is_refused(seeded: tuple[str, dict[str, int]]) -> None:
    blank = subprocess.run([sys.executable, "-m", "pyworker", "dashboard", "--token", " "],
                           capture_output=True, text=True, env={**os.environ, "DATABASE_URL": seeded[0]}, timeout=60)
    assert blank.returncode == 2 and "the token must not be empty or blank" in blank.stderr


def fill(browser: Any, form: str, values: dict[str, str]) -> None:
    """Type each value into the form's input of that name (a select: choose the option shown)."""
    from selenium.webdriver.support.ui import Select

    for name, value in values.items():
        [element] = all_of(browser, f"{form} [name={name}]")
        if element.tag_name == "select":
            Select(element).select_by_visible_text(value)
        else:
            element.clear()
            element.send_keys(value)


def refusal(db: psycopg.Connection, query: str, params: Any = None) -> str:
    """The database's own message for a call it refuses."""
    with pytest.raises(psycopg.Error) as refused:
        db.execute(query, params)
    return refused.value.diag.message_primary


def test_an_operator_pauses_and_resumes_a_role_and_disables_a_platform(
    browser: Any, dashboard: Dashboard, db: psycopg.Connection
) -> None:
    browser.delete_all_cookies()
    page(browser, dashboard, "/")
    assert not all_of(browser, "tr[data-role=product_refresh] a.pause")
    log_in(browser, dashboard, next_path="/")
    click(browser, "tr[data-role=product_refresh] a.pause")
    fill(browser, "#confirm-form", {"reason": "menu API maintenance"})
    click(browser, "#confirm")
    assert any(m.startswith("role product_refresh paused since ") for m in messages(browser)), messages(browser)
    assert text_of(browser, "tr[data-role=product_refresh] .paused") == "paused"
    assert db.execute(
        "SELECT paused_at IS NOT NULL, pause_reason FROM task_roles WHERE role = 'product_refresh'"
    ).fetchone() == (True, "menu API maintenance")
    assert not all_of(browser, "tr[data-role=analytics_refresh] .paused")
    click(browser, "tr[data-role=product_refresh] button.resume")
    assert "role product_refresh is not paused: its ready tasks are handed out" in messages(browser)
    assert not all_of(browser, "tr[data-role=product_refresh] .paused")
    assert scalar(db, "SELECT paused_at FROM task_roles WHERE role = 'product_refresh'") is None

    page(browser, dashboard, "/platforms")
    click(browser, "tr[data-platform=calm] a.disable")
    assert text_of(browser, "#question") == "Disable platform calm?"
    click(browser, "#confirm")
    assert any(m.startswith("platform calm disabled since ") for m in messages(browser)), messages(browser)
    assert text_of(browser, "tr[data-platform=calm] .enabled").startswith("no, since ")
    assert scalar(db, "SELECT enabled FROM platform_governance WHERE platform = 'calm'") is False
    click(browser, "tr[data-platform=calm] button.enable")
    assert text_of(browser, "tr[data-platform=calm] .enabled") == "yes"

    bearer = {"Authorization": f"Bearer {TOKEN}"}
    paused = http(dashboard.url + "/api/roles/product_refresh/pause", method="POST", headers=bearer,
                  data={"reason": "by the API"})
    assert paused.status == 200 and paused.json()["pause_reason"] == "by the API"
    resumed = http(dashboard.url + "/api/roles/product_refresh/resume", method="POST", headers=bearer)
    assert resumed.status == 200 and resumed.json()["paused_at"] is None
    unknown = http(dashboard.url + "/api/roles/nope/pause", method="POST", headers=bearer)
    assert unknown.status == 400 and unknown.json()["error"].startswith(refusal(db, "SELECT pause_role('nope')"))
    assert http(dashboard.url + "/api/roles/product_refresh/pause", method="POST").status == 401


def test_an_operator_sets_and_clears_a_concurrency_limit(
    browser: Any, dashboard: Dashboard, db: psycopg.Connection
) -> None:
    browser.delete_all_cookies()
    page(browser, dashboard, "/platforms")
    assert text_of(browser, "tr[data-kind=store] .max-running") == "1"
    assert not all_of(browser, "#set-limit")
    log_in(browser, dashboard, next_path="/platforms")
    fill(browser, "#set-limit", {"kind": "platform", "key": "calm", "max_running": "3"})
    click(browser, "#set-limit button.set")
    assert "platform calm: at most 3 running at once" in messages(browser), messages(browser)
    assert text_of(browser, "tr[data-kind=platform][data-key=calm] .max-running") == "3"
    assert text_of(browser, "tr[data-kind=platform][data-key=calm] .running") == "0"
    assert scalar(db, "SELECT max_running FROM concurrency_limits WHERE kind = 'platform' AND key = 'calm'") == 3

    # Refused by the database: its own message, and nothing changed.
    fill(browser, "#set-limit", {"kind": "platform", "key": "calm", "max_running": "0"})
    click(browser, "#set-limit button.set")
    expected = refusal(db, "SELECT set_concurrency_limit('platform', 'calm', 0)")
    assert any(expected in m for m in messages(browser)), (expected, messages(browser))
    fill(browser, "#set-limit", {"kind": "key", "key": " ", "max_running": "2"})
    click(browser, "#set-limit button.set")
    expected = refusal(db, "SELECT set_concurrency_limit('key', NULL, 2)")
    assert any(expected in m for m in messages(browser)), (expected, messages(browser))
    assert db.execute("SELECT kind, key, max_running FROM concurrency_limits ORDER BY kind").fetchall() == [
        ("platform", "calm", 3), ("store", "*", 1)]
    assert not all_of(browser, "tr[data-kind=store] button.clear")

    click(browser, "tr[data-kind=platform][data-key=calm] button.clear")
    assert "platform calm: limit cleared" in messages(browser), messages(browser)
    assert not all_of(browser, "tr[data-kind=platform][data-key=calm]")
    assert scalar(db, "SELECT count(*) FROM concurrency_limits WHERE kind = 'platform'") == 0

    bearer = {"Authorization": f"Bearer {TOKEN}"}
    made = http(dashboard.url + "/api/limits/set", method="POST", headers=bearer,
                data={"kind": "role", "key": "image_download", "max_running": 2})
    assert made.status == 200 and made.json()["max_running"] == 2
    listed = http(dashboard.url + "/api/platforms").json()["limits"]
    assert {"kind": "role", "key": "image_download", "max_running": 2, "running": 0} in [
        {k: row[k] for k in ("kind", "key", "max_running", "running")} for row in listed]
    bad = http(dashboard.url + "/api/limits/set", method="POST", headers=bearer,
               data={"kind": "tenant", "key": "a", "max_running": 2})
    assert bad.status == 400 and bad.json()["error"].startswith("unknown concurrency kind 'tenant'")
    cleared = http(dashboard.url + "/api/limits/clear", method="POST", headers=bearer,
                   data={"kind": "role", "key": "image_download"})
    assert cleared.status == 200 and cleared.json()["cleared"] is True


def test_an_operator_creates_updates_and_deletes_a_schedule(
    browser: Any, dashboard: Dashboard, db: psycopg.Connection
) -> None:
    browser.delete_all_cookies()
    page(browser, dashboard, "/schedules")
    assert not all_of(browser, "#create-schedule")
    log_in(browser, dashboard, next_path="/schedules")
    all_of(browser, "#new-schedule summary")[0].click()
    fill(browser, "#create-schedule", {
        "name": "dash_digest", "role": "analytics_refresh", "cron": "0 7 * * mon-fri",
        "time_zone": "Europe/Berlin", "priority": "3", "payload": '{"digest": true}', "enabled": "no",
    })
    click(browser, "#create-schedule button.create")
    assert any(m.startswith("schedule dash_digest created, next run at ") for m in messages(browser)), messages(browser)
    assert text_of(browser, "tr[data-name=dash_digest] .every") == "0 7 * * mon-fri (Europe/Berlin)"
    assert text_of(browser, "tr[data-name=dash_digest] .enabled") == "no"
    assert db.execute(
        "SELECT role, cron, time_zone, priority, payload, enabled FROM task_schedules WHERE name = 'dash_digest'"
    ).fetchone() == ("analytics_refresh", "0 7 * * mon-fri", "Europe/Berlin", 3, {"digest": True}, False)

    # Refused by the database: its own message, and nothing made.
    all_of(browser, "#new-schedule summary")[0].click()
    fill(browser, "#create-schedule", {"name": "dash_bad", "cron": "61 * * * *"})
    click(browser, "#create-schedule button.create")
    expected = refusal(db, "SELECT create_schedule('dash_bad', 'analytics_refresh', cron => '61 * * * *')")
    assert any(expected in m for m in messages(browser)), (expected, messages(browser))
    assert scalar(db, "SELECT count(*) FROM task_schedules WHERE name = 'dash_bad'") == 0

    all_of(browser, "tr[data-name=dash_digest] details.edit summary")[0].click()
    fill(browser, "tr[data-name=dash_digest] form.update", {"every": "30 minutes", "priority": "5"})
    click(browser, "tr[data-name=dash_digest] button.update")
    assert any(m.startswith("schedule dash_digest updated") for m in messages(browser)), messages(browser)
    assert text_of(browser, "tr[data-name=dash_digest] .every") == "30 min"
    assert text_of(browser, "tr[data-name=dash_digest] .priority") == "5"
    assert db.execute(
        "SELECT cron, every, priority FROM task_schedules WHERE name = 'dash_digest'"
    ).fetchone() == (None, timedelta(minutes=30), 5)

    all_of(browser, "tr[data-name=dash_digest] details.edit summary")[0].click()
    fill(browser, "tr[data-name=dash_digest] form.update", {"every": "-5 minutes"})
    click(browser, "tr[data-name=dash_digest] button.update")
    expected = refusal(db, "SELECT update_schedule('dash_digest', every => '-5 minutes')")
    assert any(expected in m for m in messages(browser)), (expected, messages(browser))
    assert text_of(browser, "tr[data-name=dash_digest] .every") == "30 min"

    click(browser, "tr[data-name=dash_digest] a.delete")
    click(browser, "#confirm")
    assert "schedule dash_digest deleted; the tasks it made stay" in messages(browser)
    assert not all_of(browser, "tr[data-name=dash_digest]")
    assert scalar(db, "SELECT count(*) FROM task_schedules WHERE name = 'dash_digest'") == 0

    bearer = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    made = http(dashboard.url + "/api/schedules/create", method="POST", headers=bearer,
                body=json.dumps({"name": "dash_api", "role": "analytics_refresh", "every": "2 hours",
                                 "payload": {"from": "api"}}))
    assert made.status == 200, made.body
    assert (made.json()["name"], made.json()["payload"]) == ("dash_api", {"from": "api"})
    gone = http(dashboard.url + "/api/schedules/dash_api/delete", method="POST", headers=bearer)
    assert gone.status == 200 and scalar(db, "SELECT count(*) FROM task_schedules WHERE name = 'dash_api'") == 0
    missing = http(dashboard.url + "/api/schedules/dash_api/delete", method="POST", headers=bearer)
    assert missing.status == 404
