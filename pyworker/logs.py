"""pyworker's own log lines: on the `pyworker` logger, each with the `extra` of event(): an
`event` name, and when an attempt ends its `outcome` and its `duration` in seconds. Whoever runs
the process sets up where the lines go (pyworker.admin.logs, for what the command line starts),
tagging each with the process's name, its role and the task whose attempt runs in the context.
"""

from __future__ import annotations

import logging
from typing import Any

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("text", "json")

log = logging.getLogger("pyworker")


def event(name: str, *, task_id: int | None = None, outcome: str | None = None,
          duration: float | None = None) -> dict[str, Any]:
    """The `extra` of one of pyworker's own lines: what happened and, when an attempt ends, its
    outcome and how long it ran. `task_id` names a task that is not the context's."""
    tags: dict[str, Any] = {"event": name, "outcome": outcome}
    tags["duration"] = None if duration is None else round(duration, 6)
    if task_id is not None:
        tags["task_id"] = task_id
    return tags
