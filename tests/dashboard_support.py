"""The dashboard's test plumbing, for tests/test_dashboard.py and the crawler's pages: the real
command (`pyworker dashboard`, uvicorn) in a subprocess on a free port, Debian's chromium driven
by selenium, and HTTP calls without a browser (urllib) for what a browser will not send."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worker_support import fail

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
STARTED = re.compile(r"Uvicorn running on (http://\S+)")


@dataclass
class Dashboard:
    url: str
    process: subprocess.Popen
    log: list[str] = field(default_factory=list)


@contextmanager
def dashboard_server(
    db_url: str, token: str | None, *options: str, timeout: float = 120.0, env: dict[str, str] | None = None
) -> Iterator[Dashboard]:
    """`pyworker dashboard --port 0 OPTIONS` on `db_url` (actions on with `token`), stopped after;
    `env` adds to its environment (the crawler's TASKPOOL_STORAGE). `timeout` bounds a hang, not
    the start's speed: on a machine busy with the parallel suite's workers the start has taken
    over 30 s."""
    env = {**os.environ, **(env or {}), "DATABASE_URL": db_url}
    env.pop("TASKPOOL_DASHBOARD_TOKEN", None)
    if token is not None:
        env["TASKPOOL_DASHBOARD_TOKEN"] = token
    process = subprocess.Popen(
        [sys.executable, "-m", "pyworker", "dashboard", "--port", "0", *options],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    log: list[str] = []
    found = threading.Event()

    def read() -> None:
        # Read to the end, or the server blocks on a full pipe.
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line)
            if STARTED.search(line):
                found.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not found.wait(timeout):
            fail(f"pyworker dashboard did not start in {timeout} s:\n{''.join(log)}")
        match = next(STARTED.search(line) for line in log if STARTED.search(line))
        assert match is not None
        yield Dashboard(url=match.group(1), process=process, log=log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=5)


# Where the dashboard's live.js keeps the operator's Pause.
LIVE_PAUSED_KEY = "taskpool.live.paused"


@contextmanager
def chromium(*, javascript: bool = True, live: bool = False) -> Iterator[Any]:
    """A headless chromium under selenium (as root: no sandbox), closed after; with
    `javascript=False`, one that runs no script, as a browser with JavaScript off. Its pages hold
    still (the live refresh paused, as the footer's Pause does) unless `live`: an element a test
    found must not be swapped for a fresh copy before it clicks it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            fail(f"{path} is missing: `make deps` installs Debian's chromium and chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    if javascript and not live:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {
            "source": f"try {{ localStorage.setItem('{LIVE_PAUSED_KEY}', '1') }} catch (error) {{}}",
        })
    try:
        yield driver
    finally:
        driver.quit()


@dataclass
class Answer:
    status: int
    body: str
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.body)


def http(url: str, *, method: str = "GET", data: dict[str, str] | None = None,
         headers: dict[str, str] | None = None, body: str | None = None) -> Answer:
    """One request with no cookies, whatever its status: `data` sent as a form, or `body` as it is."""
    sent = urllib.parse.urlencode(data).encode() if data is not None else body.encode() if body is not None else None
    request = urllib.request.Request(url, data=sent, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return Answer(response.status, response.read().decode(), dict(response.headers))
    except urllib.error.HTTPError as error:
        return Answer(error.code, error.read().decode(), dict(error.headers))
