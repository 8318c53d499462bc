"""The seeds' write API: enqueue one task (`POST /api/tasks`) or many (`POST /api/tasks/batch`)
from a JSON body, behind the dashboard's bearer token.

The body goes to `enqueue_tasks` as it came, numbers exact (load_exact_json): the database checks
every field and names the bad one ("priority must be an integer", "unknown role 'x'", "unknown
field 'colour'"), so the API says what the SQL function says, and a batch with one bad task
enqueues none. Python checks only what the database never sees: that the body is JSON of the
right shape and size, and `delay`, which becomes the task's scheduled_for on the database's
clock in the enqueuing statement. The seed's own paths (/api/job-queue/enqueue, enqueue-batch)
take the same bodies.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pyworker.contrib.dashboard.plumbing import api_authorized, check_params, json_response, open_database
from pyworker.db import NotJson, dump_json, load_exact_json
from pyworker.errors import TaskpoolError

# A body past this is refused unread: a batch of the most tasks, each with a payload of the
# default task_roles.max_payload_bytes (64 KiB), fits well under it.
MAX_BODY_BYTES = 16 * 1024 * 1024
# Tasks a batch may hold: one request, one statement, one transaction.
MAX_BATCH_TASKS = 1000
# The longest delay, as for a snooze: further ahead, give scheduled_for.
MAX_DELAY_SECONDS = 366 * 24 * 3600
# enqueue_tasks names a bad spec by its index: "tasks[0]: unknown role 'x'". One task needs no index.
SPEC_INDEX = re.compile(r"^tasks\[\d+\]: ")

# A spec's "delay" (seconds) becomes its scheduled_for on the database's clock, in the statement
# that enqueues it; `deduplicated`: a task the statement did not make (its dedupe key's holder).
ENQUEUE_SPECS = (
    "SELECT t.*, t.created_at < taskpool_now() AS deduplicated"
    " FROM enqueue_tasks((SELECT coalesce(jsonb_agg("
    "   CASE WHEN jsonb_typeof(s.spec) = 'object' AND s.spec ? 'delay'"
    "   THEN (s.spec - 'delay') || jsonb_build_object('scheduled_for',"
    "        taskpool_now() + make_interval(secs => (s.spec ->> 'delay')::double precision))"
    "   ELSE s.spec END ORDER BY s.n), '[]')"
    " FROM jsonb_array_elements(%(specs)s::jsonb) WITH ORDINALITY AS s(spec, n))) AS t"
    " ORDER BY t.id"
)


async def json_body(request: Request, max_bytes: int = MAX_BODY_BYTES) -> Any:
    """The request's body as JSON, numbers exact; a 400 saying what is wrong with it (empty, past
    `max_bytes`, not UTF-8, not JSON), read no further than `max_bytes`."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise HTTPException(400, f"the body is {int(declared):,} bytes; at most {max_bytes:,} are taken")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise HTTPException(400, f"the body is over {max_bytes:,} bytes, the most taken")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        raise HTTPException(400, "the body is empty: send a JSON object (Content-Type: application/json)")
    try:
        return load_exact_json(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise HTTPException(400, f"the body is not JSON: it is not UTF-8 ({error.reason} at byte {error.start})") from error
    except RecursionError as error:
        raise HTTPException(400, "the body is not JSON that can be read: it is nested too deeply") from error
    except ValueError as error:
        raise HTTPException(400, f"the body is not JSON: {str(error).split(';')[0]}") from error


def checked_delay(spec: Any, where: str) -> None:
    """A spec's `delay`: seconds from 0 to MAX_DELAY_SECONDS, not beside a scheduled_for; else a
    400 naming it (`where`: "tasks[3]." in a batch)."""
    if not isinstance(spec, dict) or spec.get("delay") is None:
        return
    delay = spec["delay"]
    if spec.get("scheduled_for") is not None:
        raise HTTPException(400, f"{where}delay: give scheduled_for or delay, not both")
    if isinstance(delay, bool) or not isinstance(delay, (int, Decimal)) or not 0 <= delay <= MAX_DELAY_SECONDS:
        shown = str(delay) if isinstance(delay, Decimal) else json.dumps(delay)
        raise HTTPException(
            400, f"{where}delay must be a number of seconds from 0 to {MAX_DELAY_SECONDS}, not {shown[:100]}"
        )


def json_of(value: Any, name: str) -> str:
    """`value` (a spec, or the batch's) as the JSON text enqueue_tasks reads; a 400 naming the
    place of a value JSON or PostgreSQL cannot hold (a NaN, a NUL: `task['payload']['note']`)."""
    try:
        return dump_json(value, name=name)
    except NotJson as error:
        raise HTTPException(400, str(error)) from error


def enqueued(request: Request, specs: str) -> list[dict[str, Any]]:
    """enqueue_tasks for `specs` (a JSON array), all or none: the tasks made and those a dedupe
    key matched."""
    with open_database(request) as db:
        return db.query(ENQUEUE_SPECS, {"specs": specs})


async def enqueue_task(request: Request) -> Response:
    """POST /api/tasks: one task from a JSON object of enqueue_task's fields (and delay); 201 and
    the task, or 200 and the task that holds its dedupe key."""
    api_authorized(request)
    check_params(request)
    spec = await json_body(request)
    if not isinstance(spec, dict):
        raise HTTPException(400, "the body must be a JSON object of the task's fields (role, payload, ...)")
    checked_delay(spec, "")
    specs = f"[{json_of(spec, 'task')}]"
    try:
        (task,) = await run_in_threadpool(enqueued, request, specs)
    except TaskpoolError as error:
        message = error.args[0] if error.args else str(error)
        raise type(error)(SPEC_INDEX.sub("", message), hint=error.hint) from error
    return json_response(task, 200 if task["deduplicated"] else 201)


async def enqueue_batch(request: Request) -> Response:
    """POST /api/tasks/batch: {"tasks": [...]} (or the array alone), at most MAX_BATCH_TASKS, in
    one statement: every task, or none and a 400 naming the first bad one (tasks[3]: ...)."""
    api_authorized(request)
    check_params(request)
    body = await json_body(request)
    if isinstance(body, dict):
        unknown = sorted(set(body) - {"tasks"})
        if unknown:
            raise HTTPException(400, f"unknown field {unknown[0]!r}: the body takes tasks, an array of task objects")
        if "tasks" not in body:
            raise HTTPException(400, "tasks is required: an array of task objects")
        body = body["tasks"]
    if not isinstance(body, list):
        raise HTTPException(400, "tasks must be an array of task objects")
    if len(body) > MAX_BATCH_TASKS:
        raise HTTPException(400, f"tasks holds {len(body):,} tasks; at most {MAX_BATCH_TASKS:,} go in one request")
    for index, spec in enumerate(body):
        checked_delay(spec, f"tasks[{index}].")
    tasks = await run_in_threadpool(enqueued, request, json_of(body, "tasks"))
    made = sum(1 for task in tasks if not task["deduplicated"])
    return json_response(
        {"tasks": tasks, "created": made, "deduplicated": len(tasks) - made}, 201 if made else 200
    )


def write_routes() -> list[Route]:
    """The write API's routes; the seed's /api/job-queue/ paths do the same."""
    return [
        Route("/api/tasks", enqueue_task, methods=["POST"]),
        Route("/api/tasks/batch", enqueue_batch, methods=["POST"]),
        Route("/api/job-queue/enqueue", enqueue_task, methods=["POST"]),
        Route("/api/job-queue/enqueue-batch", enqueue_batch, methods=["POST"]),
    ]
