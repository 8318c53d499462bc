"""The crawler's handlers, with a store_discovery whose first attempt dies right after its upsert.

Load it with `--handlers crawler_dying_discovery` (its test puts crawler/tests/ on the workers'
PYTHONPATH). The handler upserts its stores and commits; then the process exits at once
(os._exit), before the worker can complete the task: the stores are in the database, the chain
of their first crawl is not. Later attempts run as usual.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import taskpool_crawler.handlers  # noqa: F401  (registers the crawler's handlers, if not yet)
from pyworker import Task
from pyworker.handlers import middleware

EXIT_CODE = 17


@middleware
def die_after_the_first_discovery(task: Task, call_next: Callable[[Task], Any]) -> Any:
    result = call_next(task)
    if task.role == "store_discovery" and task.attempt == 1:
        os._exit(EXIT_CODE)
    return result
