"""A handler module for tests/test_supervisor.py: the worker process whose TASKPOOL_WORKER_ID ends with
the suffix in CRASH_WORKER_SUFFIX dies (os._exit, CRASH_EXIT_CODE, default 3) while loading its
handlers, every time it starts; the others load worker_handlers and run normally."""

from __future__ import annotations

import os

if os.environ.get("CRASH_WORKER_SUFFIX") and os.environ.get("TASKPOOL_WORKER_ID", "").endswith(
    os.environ["CRASH_WORKER_SUFFIX"]
):
    os._exit(int(os.environ.get("CRASH_EXIT_CODE", "3")))

import worker_handlers  # noqa: E402,F401 - registers the test handlers
