"""The dashboard follows the stream of task changes: a page open in Debian's chromium shows a task
completed from SQL without a reload, long before its fallback poll (30 s) would, and holds still
while paused; the task page completes and deletes a task by hand through confirmed buttons, and
the JSON API does with the bearer token (mark_task_completed, delete_task).

With TASKPOOL_DASHBOARD_SCREENSHOTS=FOLDER, the task page with its buttons and the question the
completion asks are saved there at 1280 px (docs/images/console-task-by-hand*.png were made so).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from dashboard_support import Dashboard, chromium, dashboard_server, http
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from worker_support import enqueue, fetch_one, wait_for

TOKEN = "dashboard-changes-" + secrets.token_hex(8)
# Well under the fallback poll (LIVE_FALLBACK_SECONDS = 30): only the stream refreshes this soon.
BEFORE_THE_POLL_SECONDS = 20


@pytest.fixture
def dashboard(db_url: str) -> Iterator[Dashboard]:
    with dashboard_server(db_url, TOKEN) as server:
        yield server


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium(live=True) as driver:
        yield driver


def status_of(browser: Any) -> str:
    """Read in the page: a refresh may swap the element between a find and a read."""
    return browser.execute_script("return document.getElementById('task-status').textContent")


def following(pool: psycopg.Connection) -> int:
    return fetch_one(pool, "SELECT count(*) FROM task_change_followers WHERE expires_at > now()")[0]


def test_an_open_page_shows_a_change_made_in_sql_without_a_reload(
    dashboard: Dashboard, browser: Any, pool: psycopg.Connection
) -> None:
    task_id = enqueue(pool, "test_outcome", {"raise": "nothing"})
    browser.get(dashboard.url + f"/tasks/{task_id}")
    assert status_of(browser) == "pending"
    assert "refreshes itself as tasks change" in browser.find_element(By.CSS_SELECTOR, "#live-note").text
    wait_for(lambda: following(pool), 30, "the dashboard to follow the stream of task changes")
    browser.execute_script("window.sameDocument = true")

    pool.execute("SELECT mark_task_completed(%s, '{\"by\": \"sql\"}')", (task_id,))
    WebDriverWait(browser, BEFORE_THE_POLL_SECONDS).until(lambda b: status_of(b) == "completed")
    assert browser.execute_script("return window.sameDocument") is True
    assert json.loads(browser.find_element(By.CSS_SELECTOR, "#result").text) == {"by": "sql"}

    # Paused: the stream is closed and the page holds still, whatever changes.
    browser.find_element(By.CSS_SELECTOR, "#live-pause").click()
    assert browser.execute_script("return changeStream === null")
    other = enqueue(pool, "test_outcome", {"raise": "nothing"})
    browser.get(dashboard.url + f"/tasks/{other}")
    assert browser.execute_script("return changeStream === null")
    pool.execute("SELECT mark_task_completed(%s)", (other,))
    wait_for(lambda: fetch_one(pool, "SELECT status FROM worker_tasks WHERE id = %s", (other,))[0] == "completed",
             10, "the completion")
    browser.execute_script("return new Promise((done) => setTimeout(done, 3000))")
    assert status_of(browser) == "pending"
    # Resumed: the stream opens again and the next change shows.
    browser.find_element(By.CSS_SELECTOR, "#live-pause").click()
    assert browser.execute_script("return changeStream !== null")
    WebDriverWait(browser, 30).until(lambda b: b.execute_script("return changeStream.readyState === EventSource.OPEN"))
    wait_for(lambda: following(pool), 30, "the dashboard to follow the stream again")
    pool.execute("SELECT delete_task(%s)", (enqueue(pool, "test_outcome", {"raise": "nothing"}),))
    WebDriverWait(browser, BEFORE_THE_POLL_SECONDS).until(lambda b: status_of(b) == "completed")


def test_a_page_left_behind_closes_its_stream(dashboard: Dashboard, browser: Any, pool: psycopg.Connection) -> None:
    # An open stream holds one of the browser's six connections to the dashboard: pages left with
    # theirs open (the back-forward cache keeps them) made every fifth page wait about a minute.
    task_id = enqueue(pool, "test_outcome", {"raise": "nothing"})
    browser.get(dashboard.url + f"/tasks/{task_id}")
    WebDriverWait(browser, 30).until(lambda b: b.execute_script("return changeStream !== null && changeStream.readyState === EventSource.OPEN"))
    wait_for(lambda: following(pool), 30, "the dashboard to follow the stream of task changes")
    browser.get("about:blank")
    wait_for(lambda: not following(pool), 30, "the dashboard to stop following once no page is open")
    browser.back()
    WebDriverWait(browser, 30).until(lambda b: b.execute_script("return changeStream !== null && changeStream.readyState === EventSource.OPEN"))
    wait_for(lambda: following(pool), 30, "the page back from the cache to follow the stream again")


def log_in(browser: Any, dashboard: Dashboard) -> None:
    browser.get(dashboard.url + "/login?next=/")
    browser.find_element(By.CSS_SELECTOR, "#token").send_keys(TOKEN)
    browser.find_element(By.CSS_SELECTOR, "#log-in").click()
    WebDriverWait(browser, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, "form[action='/logout']"))


def messages(browser: Any) -> list[str]:
    return [element.text for element in browser.find_elements(By.CSS_SELECTOR, ".message")]


def test_the_task_page_completes_and_deletes_a_task_by_hand_after_asking(
    dashboard: Dashboard, browser: Any, pool: psycopg.Connection
) -> None:
    log_in(browser, dashboard)
    # Paused, so that the buttons found are the ones clicked.
    browser.find_element(By.CSS_SELECTOR, "#live-pause").click()
    task_id = enqueue(pool, "test_outcome", {"raise": "nothing"})
    folder = os.environ.get("TASKPOOL_DASHBOARD_SCREENSHOTS")
    if folder:
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False,
        })
    browser.get(dashboard.url + f"/tasks/{task_id}")
    if folder:
        browser.save_screenshot(str(Path(folder) / "console-task-by-hand.png"))
    browser.find_element(By.CSS_SELECTOR, "#complete").click()
    assert browser.find_element(By.CSS_SELECTOR, "#question").text == f"Complete task {task_id} (test_outcome, pending) by hand?"
    browser.find_element(By.CSS_SELECTOR, "input[name=result]").send_keys('{"done_by": "hand"}')
    if folder:
        browser.save_screenshot(str(Path(folder) / "console-task-by-hand-confirm.png"))
    browser.find_element(By.CSS_SELECTOR, "#confirm").click()
    WebDriverWait(browser, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, "#task-status"))
    assert messages(browser) == [f"task {task_id} completed by hand"]
    assert status_of(browser) == "completed"
    assert fetch_one(pool, "SELECT result FROM worker_tasks WHERE id = %s", (task_id,))[0] == {"done_by": "hand"}
    assert not browser.find_elements(By.CSS_SELECTOR, "#complete")

    browser.find_element(By.CSS_SELECTOR, "#delete").click()
    assert browser.find_element(By.CSS_SELECTOR, "#question").text == f"Delete task {task_id} (test_outcome, completed)?"
    browser.find_element(By.CSS_SELECTOR, "#back").click()
    assert fetch_one(pool, "SELECT count(*) FROM worker_tasks WHERE id = %s", (task_id,))[0] == 1
    browser.get(dashboard.url + f"/tasks/{task_id}")
    browser.find_element(By.CSS_SELECTOR, "#delete").click()
    browser.find_element(By.CSS_SELECTOR, "#confirm").click()
    WebDriverWait(browser, 30).until(lambda b: b.current_url.endswith("/tasks"))
    assert messages(browser) == [f"task {task_id} deleted (it was completed, role test_outcome)"]
    assert fetch_one(pool, "SELECT count(*) FROM worker_tasks WHERE id = %s", (task_id,))[0] == 0


def test_the_api_completes_and_deletes_with_the_bearer_token(dashboard: Dashboard, pool: psycopg.Connection) -> None:
    bearer = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    task_id = enqueue(pool, "test_outcome", {"raise": "nothing"})
    bad = http(dashboard.url + f"/api/tasks/{task_id}/complete", method="POST", headers=bearer, body='{"result": "{oops"}')
    assert bad.status == 400 and bad.json()["error"].startswith("result is not JSON")
    unknown = http(dashboard.url + f"/api/tasks/{task_id}/complete", method="POST", headers=bearer, body='{"reslt": "1"}')
    assert unknown.status == 400 and "unknown field 'reslt'" in unknown.json()["error"]
    assert fetch_one(pool, "SELECT status FROM worker_tasks WHERE id = %s", (task_id,))[0] == "pending"

    done = http(dashboard.url + f"/api/tasks/{task_id}/complete", method="POST", headers=bearer,
                body='{"result": {"by": "api"}}')
    assert done.status == 200 and (done.json()["status"], done.json()["result"]) == ("completed", {"by": "api"})
    again = http(dashboard.url + f"/api/tasks/{task_id}/complete", method="POST", headers=bearer)
    assert again.status == 409 and "cannot be marked completed" in again.json()["error"]

    without = http(dashboard.url + f"/api/tasks/{task_id}/delete", method="POST")
    assert without.status in (401, 403)
    deleted = http(dashboard.url + f"/api/tasks/{task_id}/delete", method="POST", headers=bearer)
    assert deleted.status == 200 and deleted.json()["id"] == task_id
    gone = http(dashboard.url + f"/api/tasks/{task_id}/delete", method="POST", headers=bearer)
    assert gone.status == 404
