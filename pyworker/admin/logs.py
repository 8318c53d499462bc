"""Logging for every long-running process the command line starts (a worker, the supervisor of
--processes, the scheduler): one handler on the root logger, writing text or JSON lines to
stderr. The process sets it up, not the worker: a drain() in a test's process logs as that
process does. The lines pyworker writes, and their tags, are pyworker.logs'. A process run as
PID 1 is warned that it reaps no orphans (warn_if_pid_1).

Everything that logs goes through it: pyworker itself, the handlers, the libraries they use,
warnings (logging.captureWarnings) and exceptions that end a thread. Each record is tagged
with the process's name in the logs (`worker_id`), its `role`, the task whose attempt runs in
the current context (`task_id`: handlers.current_task, a contextvar the worker sets around each
attempt, so a handler's own lines carry its task), and, for pyworker's own lines, an `event`
name, the attempt's `outcome` and its `duration` in seconds: null where they do not apply.

Kept apart from the worker loop, which it outlives: any runtime that sets the task's context
var gets the same lines.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any

from pythonjsonlogger.json import JsonFormatter

from pyworker import handlers
from pyworker.logs import event, log

TAGS = ("worker_id", "role", "task_id", "event", "outcome", "duration")
TEXT_FORMAT = "%(asctime)s %(levelname)s [%(worker_id)s] %(message)s"

class _Tags(logging.Filter):
    """Tags every record that reaches the handler, whichever logger it came from."""

    def __init__(self, worker_id: str, role: str | None) -> None:
        super().__init__()
        self.worker_id = worker_id
        self.role = role

    def filter(self, record: logging.LogRecord) -> bool:
        task = handlers.current_task.get()
        record.worker_id = self.worker_id
        record.role = task.role if task is not None else self.role
        if getattr(record, "task_id", None) is None:
            record.task_id = task.id if task is not None else None
        for tag in ("event", "outcome", "duration"):
            if not hasattr(record, tag):
                setattr(record, tag, None)
        return True


class _JsonFormatter(JsonFormatter):
    """One JSON object a line: ts, level, logger, message, the tags, then whatever else the
    record carries (a handler's `extra=` fields, a `traceback`)."""

    def __init__(self) -> None:
        super().__init__(
            " ".join(f"%({field})s" for field in ("levelname", "name", "message", *TAGS)),
            rename_fields={"levelname": "level", "name": "logger", "exc_info": "traceback", "stack_info": "stack"},
            timestamp="ts",
        )

    def process_log_record(self, log_data: dict[str, Any]) -> dict[str, Any]:
        log_data["level"] = log_data["level"].lower()
        return {"ts": log_data.pop("ts"), **log_data}


def setup(log_format: str, log_level: str, worker_id: str, role: str | None = None) -> None:
    """Send every record of the process at `log_level` and above to stderr, as text or JSON
    lines, tagged with `worker_id` (the process's name in the logs) and `role` (None outside a
    worker) unless a task in context names its own."""
    stream = logging.StreamHandler(sys.stderr)
    stream.addFilter(_Tags(worker_id, role))
    stream.setFormatter(_JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [stream]
    root.setLevel(log_level.upper())
    logging.captureWarnings(True)
    threading.excepthook = _log_thread_exception


def warn_if_pid_1() -> None:
    """Warn when this process is PID 1 (a container's first process): the orphans of the
    commands the workers run are re-parented to it, and pyworker does not reap them (reaping
    any child could take the exit status a handler's own subprocess waits for). The image runs
    pyworker under tini, which does (docs/kubernetes.md)."""
    if os.getpid() == 1:
        log.warning(
            "pyworker runs as PID 1: orphaned children of its handlers' commands are never reaped"
            " and stay zombies; run it under an init (tini -- pyworker ..., as the image does)",
            extra=event("running_as_pid_1"),
        )


def _log_thread_exception(args: threading.ExceptHookArgs) -> None:
    """A thread's uncaught exception as a log line, not bare text on stderr."""
    if issubclass(args.exc_type, SystemExit):
        return
    name = args.thread.name if args.thread is not None else "unknown"
    log.error(
        "Thread %s died: %s",
        name,
        args.exc_value,
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
        extra=event("thread_died"),
    )
