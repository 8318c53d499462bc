"""The fleet bench's worker side (`pyworker --handlers bench.fleet.handlers`): the crawler's real
handlers, with a platform client that answers in-process instead of over HTTP.

Every role runs the crawler's own handler (taskpool_crawler.handlers): product_resync takes its
turn of the platform's rate limit (await_turn: the token its claim took, task_roles.
claims_platform_token), fetches, saves the payload to TASKPOOL_STORAGE, records it and chains product_refresh;
product_refresh loads the file, normalizes it and applies it (apply_menu_payload, snapshots);
payload_file_removal removes what retention deleted. Only the transport is replaced:
FleetClient sleeps the platform's latency and returns a small menu built here, because
24,000 stores' worth of HTTP requests to the simulator and 20–60-product menus applied at the
compressed rate would take the 2 cores the database needs, and the figures measured (limits,
slots, freshness, claims, size) come from the SQL calls, which are the real ones.

Settings (environment, set by bench.fleet):
    BENCH_FLEET_LATENCY_MS   JSON {platform: milliseconds}: each menu request sleeps that long
    BENCH_FLEET_PRODUCTS     products per menu (their prices drift each crawl)
    BENCH_FLEET_ATTEMPTS_DIR where each process appends a line per attempt: "role platform
                             began ended waited", wall-clock seconds; waited is the time spent
                             in await_turn (a slot waiting for a platform's token)
"""

from __future__ import annotations

import json
import os
import time
from contextvars import ContextVar
from typing import Any

import taskpool_crawler.handlers as crawler
from pyworker import Task, middleware
from taskpool_crawler.client import PlatformError

LATENCY_ENV = "BENCH_FLEET_LATENCY_MS"
PRODUCTS_ENV = "BENCH_FLEET_PRODUCTS"
ATTEMPTS_DIR_ENV = "BENCH_FLEET_ATTEMPTS_DIR"
CATEGORIES = ("flower", "edible", "vape", "concentrate", "pre-roll")


class FleetClient:
    """A platform that answers every store's menu after the platform's latency."""

    def __init__(self, platform: str, latency_seconds: float, products: int) -> None:
        self.platform = platform
        self.latency_seconds = latency_seconds
        self.products = products

    def fetch_menu(self, platform_store_id: str) -> bytes:
        time.sleep(self.latency_seconds)
        # The price moves every crawl (a new step each second of bench time is enough to differ).
        step = int(time.time())
        menu = [
            {
                "id": f"{platform_store_id}-{n}",
                "name": f"Product {n} of {platform_store_id}",
                "brand": f"Brand {n % 7}",
                "category": CATEGORIES[n % len(CATEGORIES)],
                "size": "1g",
                "price": round(10 + n + (step + n) % 5 * 0.25, 2),
                "stock": (step + n) % 20,
                "image_url": None,
            }
            for n in range(self.products)
        ]
        return json.dumps({"platform": self.platform, "products": menu}).encode()

    def list_stores(self, state: str) -> list[dict[str, Any]]:
        raise PlatformError(f"the fleet bench's {self.platform} lists no stores", retryable=False)

    def resolve(self, menu_url: str) -> str | None:
        return None

    def fetch_image(self, url: str, max_bytes: int) -> tuple[bytes, str]:
        raise PlatformError(f"the fleet bench's {self.platform} serves no images", retryable=False)


def _client_factory() -> Any:
    latencies = json.loads(os.environ.get(LATENCY_ENV) or "{}")
    products = int(os.environ.get(PRODUCTS_ENV) or "8")
    return lambda platform: FleetClient(platform, latencies.get(platform, 0) / 1000, products)


class _AttemptLog:
    """Appends a line per attempt to this process's file in BENCH_FLEET_ATTEMPTS_DIR; one
    write(2) a line, so a reader sees whole lines."""

    def __init__(self, directory: str | None) -> None:
        self.fd = None
        if directory:
            path = os.path.join(directory, f"attempts-{os.getpid()}.log")
            self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def record(self, role: str, platform: str, began: float, ended: float, waited: float) -> None:
        if self.fd is not None:
            os.write(self.fd, f"{role} {platform} {began:.6f} {ended:.6f} {waited:.6f}\n".encode())


_attempt_log = _AttemptLog(os.environ.get(ATTEMPTS_DIR_ENV))
# The seconds each await_turn of the running attempt took.
_waits: ContextVar[list[float] | None] = ContextVar("bench_fleet_waits", default=None)
_await_turn = crawler.await_turn


@middleware
def record_attempt(task: Task, call_next: Any) -> Any:
    """Time every attempt (a slot busy) and the part of it spent waiting for a token."""
    waits: list[float] = []
    token = _waits.set(waits)
    began = time.time()
    try:
        return call_next(task)
    finally:
        _waits.reset(token)
        _attempt_log.record(task.role, task.platform or "-", began, time.time(), sum(waits))


def timed_await_turn(task: Task, platform: str) -> None:
    """The crawler's await_turn, its duration added to the attempt's waits."""
    began = time.monotonic()
    try:
        _await_turn(task, platform)
    finally:
        waits = _waits.get()
        if waits is not None:
            waits.append(time.monotonic() - began)


# fetch_and_save and platform_call look await_turn up in their module when they run.
crawler.await_turn = timed_await_turn
crawler.set_client_factory(_client_factory())
