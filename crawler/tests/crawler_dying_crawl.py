"""The crawler's handlers, with a crawl whose first attempt dies between storing its payload and
recording it.

Load it with `--handlers crawler_dying_crawl` (its test puts crawler/tests/ on the workers'
PYTHONPATH). On a product_discovery or product_resync's first attempt the payload is stored
(a file or an object), then the process exits at once (os._exit) where record_crawl_payload
would be called: the storage holds a payload no row will ever name. Later attempts run as usual.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import taskpool_crawler.handlers  # noqa: F401  (registers the crawler's handlers, if not yet)
from pyworker import Task
from pyworker.handlers import middleware
from taskpool_crawler.db import CrawlerDatabase

EXIT_CODE = 17
_record_crawl_payload = CrawlerDatabase.record_crawl_payload
_first_attempt = False


@middleware
def note_the_attempt(task: Task, call_next: Callable[[Task], Any]) -> Any:
    global _first_attempt
    _first_attempt = task.attempt == 1
    return call_next(task)


def die_on_the_first_attempt(self: CrawlerDatabase, *args: Any) -> int:
    if _first_attempt:
        os._exit(EXIT_CODE)
    return _record_crawl_payload(self, *args)


CrawlerDatabase.record_crawl_payload = die_on_the_first_attempt
