"""Hostile handlers for tests/test_hostile_outcomes.py, imported by the worker processes.

Role test_hostile (the test inserts its task_roles row): the payload's `do` names the outcome,
each one a handler result or exception the worker once died on (issue 11, item 3).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any, NoReturn

from pyworker import Task
from pyworker.errors import Snooze
from pyworker.handlers import handler


class Unprintable(Exception):
    """An exception whose message cannot be read: str() raises."""

    def __str__(self) -> str:
        raise RuntimeError("__str__ is broken")


class ItemsRaise(dict):
    """A dict that raises when its items are read: the result's dump fails unexpectedly."""

    def items(self) -> Any:
        raise RuntimeError("items() is broken")


def snooze_then(seconds: float) -> NoReturn:
    """A Snooze made valid, then given a delay the database cannot store."""
    snooze = Snooze(1)
    snooze.seconds = seconds
    raise snooze


def raise_(error: BaseException) -> NoReturn:
    raise error


OUTCOMES: dict[str, Callable[[], Any]] = {
    "ok": lambda: {"ok": True},
    "datetime": lambda: {
        "at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
        "day": date(2026, 1, 2),
    },
    "decimal": lambda: {"price": Decimal("0.1000000000000000000001")},
    "uuid": lambda: {"id": uuid.UUID("12345678-1234-5678-1234-567812345678")},
    "set": lambda: {"tags": {"a"}},
    "nan": lambda: {"ratio": float("nan")},
    "items_raise": lambda: ItemsRaise(a=1),
    "snooze_inf": lambda: raise_(Snooze(float("inf"))),
    "snooze_nan": lambda: raise_(Snooze(float("nan"))),
    "snooze_1e12": lambda: raise_(Snooze(1e12)),
    "snooze_refused": lambda: snooze_then(1e300),
    "nul": lambda: raise_(ValueError("bad\x00byte")),
    "surrogate": lambda: raise_(ValueError("bad\udc80byte")),
    "unprintable": lambda: raise_(Unprintable()),
}


@handler("test_hostile")
def hostile(task: Task) -> Any:
    return OUTCOMES[task.payload["do"]]()
