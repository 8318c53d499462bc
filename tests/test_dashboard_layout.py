"""The dashboard in Debian's chromium (selenium, as tests/test_dashboard.py drives it): no page
scrolls sideways at 1280 px (or 1920), every action button is on screen, a page refreshes
itself in place when the pool changes, and with JavaScript off a bulk cancel still asks and acts.

The database holds what widens a page: a long role name, a long error with no space in it, a
long schedule name, a paused role (its Resume) and a disabled platform beside an enabled one (its
Disable), the buttons issue 28 found off-screen at 1920 px. (docs/images/console-*.png are
`make screenshots`'s: scripts/screenshots.)
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from dashboard_support import Dashboard, chromium, dashboard_server
from psycopg.types.json import Jsonb
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from testkit import databases

from core_fixtures import COPY_PREFIX, database_url

TOKEN = "dashboard-layout-" + secrets.token_hex(8)
LONG_ROLE = "menu_refresh_for_every_store_of_every_platform_in_every_state"
LONG_ERROR = "could not fetch https://platform.example/api/v2/menus/" + "0123456789abcdef" * 20
WIDTHS = (1280, 1920)


@pytest.fixture(scope="module")
def seeded(template_database: str) -> Iterator[tuple[str, dict[str, Any]]]:
    name = COPY_PREFIX + "dashboard_layout_" + secrets.token_hex(4)
    with databases.copy(database_url(), template_database, name) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("INSERT INTO task_roles (role) VALUES (%s)", (LONG_ROLE,))
            failed = conn.execute("SELECT id FROM enqueue_task(%s, %s, max_retries => 0)", (LONG_ROLE, Jsonb({"url": LONG_ERROR}))).fetchone()[0]
            attempt, token = conn.execute(
                "SELECT attempt, claim_token FROM claim_and_start_tasks(%s, %s, 1)", (LONG_ROLE, "worker-" + "x" * 60)
            ).fetchone()
            conn.execute("SELECT fail_task(%s, %s, %s, %s, %s)", (failed, "worker-" + "x" * 60, attempt, token, LONG_ERROR))
            pending = conn.execute("SELECT id FROM enqueue_task('analytics_refresh', '{}')").fetchone()[0]
            conn.execute("SELECT pause_role('product_refresh', 'maintenance')")
            conn.execute("SELECT create_schedule(%s, %s, every => '1 hour')", ("every_hour_for_" + LONG_ROLE, LONG_ROLE))
            conn.execute("INSERT INTO platform_governance (platform) VALUES ('calm'), (%s)", ("platform_" + LONG_ROLE,))
            conn.execute("SELECT disable_platform('calm', 'a long reason ' || repeat('why ', 50))")
            conn.execute("SELECT record_platform_result(%s, false, %s)", ("platform_" + LONG_ROLE, LONG_ERROR))
        yield url, {"failed": failed, "pending": pending}


@pytest.fixture(scope="module")
def dashboard(seeded: tuple[str, dict[str, Any]]) -> Iterator[Dashboard]:
    with dashboard_server(seeded[0], TOKEN) as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium(live=True) as driver:
        yield driver


def at_width(browser: Any, width: int) -> None:
    """The viewport exactly `width` CSS pixels wide, whatever the window's frame takes."""
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False,
    })


def log_in(browser: Any, dashboard: Dashboard) -> None:
    browser.get(dashboard.url + "/login?next=/")
    browser.find_element(By.CSS_SELECTOR, "#token").send_keys(TOKEN)
    browser.find_element(By.CSS_SELECTOR, "#log-in").click()
    WebDriverWait(browser, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, "form[action='/logout']"))


def overflow(browser: Any) -> dict[str, Any]:
    """How wide the page is against its viewport, and the buttons that end past its right edge."""
    return browser.execute_script("""
        const root = document.documentElement;
        const off = Array.from(document.querySelectorAll('main button, main a.button'))
            .filter((b) => b.getBoundingClientRect().right > root.clientWidth)
            .map((b) => b.textContent.trim());
        return {scrollWidth: root.scrollWidth, clientWidth: root.clientWidth, offScreen: off};
    """)


def test_no_page_scrolls_sideways_and_every_button_is_on_screen(
    browser: Any, dashboard: Dashboard, seeded: tuple[str, dict[str, Any]]
) -> None:
    ids = seeded[1]
    browser.delete_all_cookies()
    at_width(browser, 1280)
    browser.get(dashboard.url + "/login")
    login_page = overflow(browser)
    assert login_page["scrollWidth"] <= login_page["clientWidth"], login_page
    log_in(browser, dashboard)
    # Every page of the menu (the crawler's too, when it is installed), and the operator's pages.
    menu = [link.get_attribute("pathname") for link in browser.find_elements(By.CSS_SELECTOR, "header nav a")]
    assert {"/", "/tasks", "/workers", "/schedules", "/platforms", "/health"} <= set(menu)
    pages = [
        *menu,
        f"/tasks?role={LONG_ROLE}", f"/tasks/{ids['failed']}", f"/tasks/{ids['pending']}", "/tasks/new",
        f"/tasks/{ids['pending']}/cancel", f"/tasks/bulk-retry?role={LONG_ROLE}", "/tasks/bulk-cancel?status=pending",
        "/tasks/recover-stale", f"/roles/{LONG_ROLE}/pause", "/platforms/calm/disable",
        f"/schedules/every_hour_for_{LONG_ROLE}/delete",
    ]
    for width in WIDTHS:
        at_width(browser, width)
        for path in pages:
            browser.get(dashboard.url + path)
            assert browser.find_elements(By.CSS_SELECTOR, "main h1"), (path, browser.page_source[:500])
            measured = overflow(browser)
            assert measured["scrollWidth"] <= measured["clientWidth"], (width, path, measured)
            assert not measured["offScreen"], (width, path, measured)
    # The buttons issue 28 found off-screen are there to be seen.
    at_width(browser, 1280)
    browser.get(dashboard.url + "/")
    assert browser.find_element(By.CSS_SELECTOR, "tr[data-role=product_refresh] .resume").is_displayed()
    browser.get(dashboard.url + "/platforms")
    assert browser.find_element(By.CSS_SELECTOR, "tr[data-platform=calm] .enable").is_displayed()
    assert browser.find_element(By.CSS_SELECTOR, f"tr[data-platform=platform_{LONG_ROLE}] .disable").is_displayed()


def test_a_page_refreshes_itself_in_place_when_the_pool_changes(
    browser: Any, dashboard: Dashboard, seeded: tuple[str, dict[str, Any]]
) -> None:
    url, ids = seeded
    browser.delete_all_cookies()
    with psycopg.connect(url, autocommit=True) as conn:
        task_id = conn.execute("SELECT id FROM enqueue_task('store_discovery', '{}')").fetchone()[0]
        browser.get(dashboard.url + f"/tasks/{task_id}")
        assert browser.find_element(By.CSS_SELECTOR, "#task-status").text == "pending"
        # A mark on this page's window: a reload would drop it.
        browser.execute_script("window.taskpoolSamePage = true")
        conn.execute("SELECT cancel_task(%s)", (task_id,))
    WebDriverWait(browser, 60).until(lambda b: b.find_element(By.CSS_SELECTOR, "#task-status").text == "cancelled")
    assert browser.execute_script("return window.taskpoolSamePage") is True
    assert browser.current_url == dashboard.url + f"/tasks/{task_id}"
    # htmx runs the region (the mark the JavaScript-off test looks for).
    assert browser.execute_script("return document.getElementById('live')['htmx-internal-data'] !== undefined")


def test_a_refresh_waits_while_the_operator_is_typing(
    browser: Any, dashboard: Dashboard, seeded: tuple[str, dict[str, Any]]
) -> None:
    url, _ids = seeded
    browser.delete_all_cookies()
    browser.get(dashboard.url + "/tasks")
    typed = browser.find_element(By.CSS_SELECTOR, "input[name=error]")
    typed.send_keys("half-typed filter")
    with psycopg.connect(url, autocommit=True) as conn:
        newest = conn.execute("SELECT id FROM enqueue_task('store_discovery', '{}')").fetchone()[0]
    # Once typing stops (the field left as it was), the list catches up with the new task.
    browser.execute_script("window.taskpoolSamePage = true")
    assert not browser.execute_script("return liveRefreshAllowed()")
    typed.clear()
    browser.execute_script("document.activeElement.blur()")
    assert browser.execute_script("return liveRefreshAllowed()")
    WebDriverWait(browser, 60).until(lambda b: b.find_elements(By.CSS_SELECTOR, f"#tasks tr[data-id='{newest}']"))
    assert browser.execute_script("return window.taskpoolSamePage") is True


def test_with_javascript_off_a_bulk_cancel_asks_then_acts(
    dashboard: Dashboard, seeded: tuple[str, dict[str, Any]]
) -> None:
    url, _ids = seeded
    with psycopg.connect(url, autocommit=True) as conn:
        chosen = [row[0] for row in conn.execute(
            "SELECT id FROM enqueue_tasks((SELECT jsonb_agg(jsonb_build_object('role', 'image_download'))"
            " FROM generate_series(1, 3)))"
        )]
        with chromium(javascript=False) as browser:
            log_in(browser, dashboard)
            browser.get(dashboard.url + "/tasks?role=image_download&status=pending")
            # htmx did not run: it marks each element it takes over.
            assert browser.execute_script("return document.getElementById('live')['htmx-internal-data'] === undefined")
            browser.find_element(By.CSS_SELECTOR, "#bulk-cancel").click()
            question = browser.find_element(By.CSS_SELECTOR, "#question").text
            assert question == "Cancel 3 tasks matching role=image_download status=pending?"
            assert conn.execute("SELECT count(*) FROM worker_tasks WHERE id = ANY(%s) AND status = 'pending'", (chosen,)).fetchone() == (3,)
            browser.find_element(By.CSS_SELECTOR, "#confirm").click()
            WebDriverWait(browser, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, ".message.ok"))
            said = browser.find_element(By.CSS_SELECTOR, ".message.ok").text
            assert said == "cancelled 3 tasks matching role=image_download status=pending"
        assert conn.execute("SELECT count(*) FROM worker_tasks WHERE id = ANY(%s) AND status = 'cancelled'", (chosen,)).fetchone() == (3,)


def test_pause_holds_every_page_still_until_resume(
    browser: Any, dashboard: Dashboard, seeded: tuple[str, dict[str, Any]]
) -> None:
    url, _ids = seeded
    browser.delete_all_cookies()
    with psycopg.connect(url, autocommit=True) as conn:
        task_id = conn.execute("SELECT id FROM enqueue_task('store_discovery', '{}')").fetchone()[0]
        browser.get(dashboard.url + f"/tasks/{task_id}")
        pause = browser.find_element(By.CSS_SELECTOR, "#live-pause")
        assert pause.text == "Pause"
        pause.click()
        assert browser.find_element(By.CSS_SELECTOR, "#live-pause").text == "Resume"
        assert browser.find_element(By.CSS_SELECTOR, "#live-note").text == "live refresh paused"
        assert not browser.execute_script("return liveRefreshAllowed()")
        conn.execute("SELECT cancel_task(%s)", (task_id,))
    # Paused in this browser: another page (a new load) holds still too, until Resume.
    browser.get(dashboard.url + f"/tasks/{task_id}")
    assert browser.find_element(By.CSS_SELECTOR, "#live-pause").text == "Resume"
    assert not browser.execute_script("return liveRefreshAllowed()")
    browser.find_element(By.CSS_SELECTOR, "#live-pause").click()
    assert browser.execute_script("return liveRefreshAllowed()")
    assert browser.find_element(By.CSS_SELECTOR, "#live-note").text.startswith("refreshes itself as tasks change")
