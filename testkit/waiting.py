"""Waiting for a condition with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(Exception):
    """A condition did not hold within its deadline (the default failure of wait_until)."""


def wait_until(
    check: Callable[[], T],
    timeout: float,
    what: str,
    *,
    interval: float = 0.05,
    also: Callable[[], str] | None = None,
    error: Callable[[str], BaseException] = WaitTimeout,
) -> T:
    """Call `check` until it returns something truthy, and return that; after `timeout` seconds
    raise `error(message)` (the harness's own failure: pytest's, ScenarioError, BenchError).

    `also` adds diagnostics to the failure (e.g. a worker's log).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            extra = f"\n{also()}" if also is not None else ""
            raise error(f"timed out after {timeout:g} s waiting for {what}{extra}")
        time.sleep(interval)
