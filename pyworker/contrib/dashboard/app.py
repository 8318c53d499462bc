"""The dashboard's Starlette application: pages, their JSON under /api/, log-in and actions.

Each request opens its own `Database` (open_database) and closes it: the endpoints are plain
functions that Starlette runs in its thread pool, and no connection is shared between threads.

Input is checked before it reaches the database: an unknown or malformed query parameter, path
segment or action field is a 400 that names it, never a 500. Names in paths are quoted
(`path_segment`), so a name holding `/`, `?` or `#` stays one segment. Whatever is shown, page or
JSON, passes through `masked`: no URL's credentials reach a browser.

A destructive action (ACTIONS with a `confirm`) answers a GET on its own path with a page that
asks (the count and the first tasks of a bulk action), whose form POSTs to that path: it works
without JavaScript. The New task form re-renders with what was typed when it is refused.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import re
import secrets
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from pyworker import __version__
from pyworker.contrib.dashboard.masking import masked
from pyworker.contrib.dashboard.plugins import load_plugins
from pyworker.contrib.dashboard.plumbing import ACTIONS_OFF, api_authorized, check_params, json_response, open_database
from pyworker.contrib.dashboard.write_api import write_routes
from pyworker.contrib.dashboard.sessions import (
    SESSION_SECONDS,
    LoginRequired,
    OperatorSessions,
    is_operator,
    new_cookie_key,
)
from pyworker.admin.queries import BULK_ACTION_STATUSES, SCHEDULE_FIELDS, AdminDatabase
from pyworker.db import Database
from pyworker.admin.metrics import database_metrics
from pyworker.admin.probes import call_within
from pyworker.deadlines import PROBE_CONNECT_TIMEOUT, PROBE_TIMEOUT_SECONDS
from pyworker.errors import (
    DatabaseUnavailable,
    InvalidInput,
    NotFound,
    Refused,
    SchemaMismatch,
    SchemaMissing,
    TaskpoolError,
)
from pyworker.admin.output import counted, json_text, shown
from pyworker.admin.task_changes import TaskChangeHub

HERE = Path(__file__).resolve().parent
TASK_STATUSES = ("pending", "claimed", "running", "completed", "failed", "cancelled")
TASKS_PER_PAGE = 50
# The CLI's `list --limit` range.
MAX_TASKS_PER_PAGE = 1000
# The ranges of the database's integer and bigint (ids).
MAX_INTEGER = 2**31 - 1
MAX_BIGINT = 2**63 - 1
# A text parameter longer than this is not a filter anyone means.
MAX_TEXT_PARAM = 1000
# A whole number as typed (ASCII digits: int() would take others).
WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")
# The overview's chart: this many hours, the current one last.
CHART_HOURS = 12
# The live refresh: htmx (vendored, its version in the file name, so it may be cached for good)
# polls each page's #live region this often.
HTMX_FILE = "htmx-2.0.11.min.js"
LIVE_SECONDS = 5
# With the stream of task changes (/api/task-changes) a page refreshes when a task changes, at
# most once a second (live.js), and polls this seldom only as a fallback.
LIVE_FALLBACK_SECONDS = 30
# A comment line this often keeps an idle stream's connection (and any proxy on the way) open.
TASK_CHANGES_KEEPALIVE_SECONDS = 15
IMMUTABLE_CACHE = "public, max-age=31536000, immutable"
# Tasks a transaction in a bulk cancel or retry (the CLI's --batch-size default).
BULK_BATCH_SIZE = 1000
PLATFORM_EVENTS_SHOWN = 50
CORE_MENU = [
    ("Overview", "/"),
    ("Tasks", "/tasks"),
    ("Workers", "/workers"),
    ("Schedules", "/schedules"),
    ("Platforms", "/platforms"),
    ("Health", "/health"),
]
# The HTTP status of each refusal the database gives.
STATUS_OF_ERROR: list[tuple[type[TaskpoolError], int]] = [
    (NotFound, 404),
    (InvalidInput, 400),
    (Refused, 409),
    (DatabaseUnavailable, 503),
    (SchemaMissing, 503),
    (SchemaMismatch, 503),
    (TaskpoolError, 500),
]


def http_status(error: TaskpoolError) -> int:
    return next(status for kind, status in STATUS_OF_ERROR if isinstance(error, kind))


# Requests and responses


def wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def csrf_token(request: Request) -> str:
    """The session's CSRF token, made on first use: every form that POSTs carries it."""
    token = request.session.get("csrf")
    if token is None:
        token = request.session["csrf"] = secrets.token_urlsafe(32)
    return token


def flash(request: Request, kind: str, message: str) -> None:
    """A message for the next page this session sees (kind: ok or error)."""
    request.session.setdefault("flash", []).append([kind, message])


def render(request: Request, template: str, context: dict[str, Any], status_code: int = 200) -> Response:
    """A page: `template` (extending base.html) with the menu, the log-in state, the CSRF token
    and the messages waiting for this session. Plug-ins render theirs with it too. A page read
    with GET refreshes itself (`live`) unless its context says `"live": False` (a form, a
    confirmation: nothing there to keep up with)."""
    state = request.app.state
    page = {
        "live": request.method == "GET" and status_code < 400,
        "live_seconds": LIVE_SECONDS if state.task_changes is None else LIVE_FALLBACK_SECONDS,
        "task_changes": state.task_changes is not None,
        "htmx_file": HTMX_FILE,
        "request": request,
        "menu": state.menu,
        "broken_plugins": state.broken_plugins,
        "actions_enabled": state.token is not None,
        "operator": is_operator(request),
        "csrf": csrf_token(request),
        "messages": request.session.pop("flash", []),
        "version": __version__,
        **context,
    }
    return state.templates.TemplateResponse(request, template, page, status_code=status_code)


def respond(request: Request, data: Any, template: str, context: dict[str, Any]) -> Response:
    """`data` as JSON under /api/, else the page: `template` with `context`."""
    if wants_json(request):
        return json_response(data)
    return render(request, template, context)


def whole_number(name: str, text: str, *, minimum: int, maximum: int) -> int:
    """`text` as a whole number from `minimum` to `maximum`, else a 400 naming `name`."""
    if not WHOLE_NUMBER.fullmatch(text):
        raise HTTPException(400, f"{name} must be a whole number, not {text[:100]!r}")
    # Past 40 digits it is out of any range: not worth converting.
    if len(text) > 40 or not minimum <= int(text) <= maximum:
        raise HTTPException(400, f"{name} must be from {minimum} to {maximum}, not {text[:100]}")
    return int(text)


def int_param(request: Request, name: str, *, minimum: int = 1, maximum: int = MAX_INTEGER) -> int | None:
    """A whole-number query parameter, None when absent or empty; 400 naming it when it is not
    one from `minimum` to `maximum`."""
    text = request.query_params.get(name, "").strip()
    if not text:
        return None
    return whole_number(name, text, minimum=minimum, maximum=maximum)


def checked_text(name: str, value: str) -> str:
    """A text the database can take (no NUL byte, at most MAX_TEXT_PARAM characters), else a 400
    naming `name`."""
    if "\x00" in value:
        raise HTTPException(400, f"{name} must not contain a NUL byte")
    if len(value) > MAX_TEXT_PARAM:
        raise HTTPException(400, f"{name} must be at most {MAX_TEXT_PARAM} characters, not {len(value)}")
    return value


def text_param(request: Request, name: str) -> str | None:
    return checked_text(name, request.query_params.get(name, "").strip()) or None


def path_id(request: Request, name: str, *, maximum: int = MAX_BIGINT) -> int:
    """The path's `name` segment as an id (1 to `maximum`, a bigint's by default), else a 400
    naming it."""
    return whole_number(name, str(request.path_params[name]), minimum=1, maximum=maximum)


def path_name(request: Request, name: str) -> str:
    """The path's `name` segment (a role, schedule or platform, quoted in the URL), checked."""
    return checked_text(name, request.path_params[name])


def path_segment(value: Any) -> str:
    """`value` quoted as one segment of a path: a `/`, `?` or `#` in a name cannot make it another
    path (the routes take the quoted name back whole)."""
    return quote(str(value), safe="")


@dataclass
class Paging:
    """Where a page sits in a filtered list: its number, the total, the links to its neighbours
    (keeping the filters)."""

    total: int
    page: int
    pages: int
    limit: int
    first: int
    previous_link: str | None
    next_link: str | None

    def as_json(self) -> dict[str, int]:
        return {"total": self.total, "page": self.page, "pages": self.pages, "limit": self.limit}


def paging(filters: dict[str, Any], *, total: int, page: int, limit: int) -> Paging:
    given = {key: value for key, value in filters.items() if value is not None}
    pages = max(1, -(-total // limit))
    return Paging(
        total=total,
        page=page,
        pages=pages,
        limit=limit,
        first=(page - 1) * limit + 1,
        previous_link=f"?{urlencode({**given, 'page': page - 1})}" if page > 1 else None,
        next_link=f"?{urlencode({**given, 'page': page + 1})}" if page < pages else None,
    )


# The overview


def overview_data(db: AdminDatabase) -> dict[str, Any]:
    """Per role: the capacity view's row with its failed and cancelled counts; the chart's hours;
    the health checks."""
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    for row in db.task_counts():
        counts[row["role"]][row["status"]] = row["tasks"]
    roles = [
        {
            **row,
            "failed_tasks": counts[row["role"]].get("failed", 0),
            "cancelled_tasks": counts[row["role"]].get("cancelled", 0),
            "completed_tasks": counts[row["role"]].get("completed", 0),
        }
        for row in db.worker_capacity_rows()
    ]
    return {
        "roles": roles,
        "throughput": db.task_throughput(CHART_HOURS),
        "checks": db.health_checks(),
        "unserved": [row["role"] for row in db.unserved_roles()],
    }


def throughput_chart(rows: list[dict[str, Any]], width: int = 720, height: int = 160) -> dict[str, Any]:
    """Bars for an inline SVG: per hour, the completions of every role (and the failed attempts,
    stacked on them), scaled to the busiest hour."""
    hours: dict[Any, dict[str, int]] = {}
    for row in rows:
        hour = hours.setdefault(row["hour"], {"completed": 0, "failed": 0})
        hour["completed"] += row["completed"]
        hour["failed"] += row["failed_attempts"]
    top = max([hour["completed"] + hour["failed"] for hour in hours.values()] + [1])
    plot = height - 20
    step = width / max(len(hours), 1)
    bars = []
    for index, (when, hour) in enumerate(sorted(hours.items())):
        done = hour["completed"] * plot / top
        failed = hour["failed"] * plot / top
        bars.append({
            "x": round(index * step + 2, 1),
            "width": round(step - 4, 1),
            "done_y": round(plot - done, 1),
            "done_height": round(done, 1),
            "failed_y": round(plot - done - failed, 1),
            "failed_height": round(failed, 1),
            "label": when.strftime("%H:00"),
            "completed": hour["completed"],
            "failed": hour["failed"],
        })
    return {"width": width, "height": height, "plot": plot, "top": top, "bars": bars}


def overview(request: Request) -> Response:
    check_params(request)
    with open_database(request) as db:
        data = overview_data(db)
        total_tasks = sum(row["tasks"] for row in db.task_counts())
    return respond(request, data, "overview.html", {
        **data, "chart": throughput_chart(data["throughput"]), "chart_hours": CHART_HOURS, "total_tasks": total_tasks,
    })


# Tasks


def checked_role(role: str | None, roles: list[str]) -> None:
    if role is not None and role not in roles:
        known = ", ".join(roles) or "the roles, and there are none yet"
        raise HTTPException(400, f"unknown role {role!r}: role must be one of {known}")


def task_list(request: Request) -> Response:
    check_params(request, "role", "status", "store", "error", "page", "limit")
    filters = {
        "role": text_param(request, "role"),
        "status": text_param(request, "status"),
        "store": int_param(request, "store", minimum=-(2**31)),
        "error": text_param(request, "error"),
    }
    if filters["status"] is not None and filters["status"] not in TASK_STATUSES:
        raise HTTPException(400, f"status must be one of {', '.join(TASK_STATUSES)}, not {filters['status']!r}")
    limit = int_param(request, "limit", maximum=MAX_TASKS_PER_PAGE)
    per_page = limit or TASKS_PER_PAGE
    # The page's offset must fit the database's integer.
    page = int_param(request, "page", maximum=MAX_INTEGER // per_page) or 1
    with open_database(request) as db:
        roles = db.roles()
        checked_role(filters["role"], roles)
        tasks = db.list_tasks(**filters, limit=per_page, offset=(page - 1) * per_page)
        total = db.count_tasks(**filters)
    paged = paging({**filters, "limit": limit}, total=total, page=page, limit=per_page)
    given = {name: value for name, value in filters.items() if value is not None}
    return respond(request, {"tasks": tasks, **paged.as_json()}, "tasks.html", {
        "tasks": tasks, "paging": paged, "filters": filters, "roles": roles, "statuses": TASK_STATUSES,
        "bulk_query": urlencode(given),
    })


def task_page(request: Request) -> Response:
    check_params(request)
    task_id = path_id(request, "task_id")
    with open_database(request) as db:
        task = db.get_task(task_id)
        if task is None:
            raise NotFound(f"task {task_id} does not exist")
        attempts = db.task_attempts(task_id)
        chain = db.task_chain(task_id)
    found = {"task": task, "chain": chain, "attempts": attempts}
    return respond(request, found, "task.html", found)


def task_counts(request: Request) -> Response:
    check_params(request)
    with open_database(request) as db:
        return json_response(db.counts())


def metrics(request: Request) -> Response:
    """The pool's metrics in the Prometheus text format (docs/metrics.md), read at scrape time."""
    check_params(request)
    with open_database(request) as db:
        body, content_type = database_metrics(db)
    return Response(body, headers={"Content-Type": content_type})


# Workers, schedules, platforms, health


def workers(request: Request) -> Response:
    check_params(request)
    with open_database(request) as db:
        rows = db.workers()
    return respond(request, rows, "workers.html", {"workers": rows})


def schedules(request: Request) -> Response:
    check_params(request)
    with open_database(request) as db:
        rows = db.schedules()
        roles = db.roles()
    return respond(request, rows, "schedules.html", {"schedules": rows, "roles": roles})


def platforms(request: Request) -> Response:
    check_params(request)
    with open_database(request) as db:
        data = {
            "platforms": db.platforms(),
            "events": db.platform_events(PLATFORM_EVENTS_SHOWN),
            "limits": db.concurrency_limits(),
        }
    return respond(request, data, "platforms.html", {**data, "limit_kinds": LIMIT_KINDS})


def health(request: Request) -> Response:
    """The document of `pyworker health --json`, and v_xmin_horizon (each session by its
    application and state: the view shows no session's SQL)."""
    check_params(request)
    with open_database(request) as db:
        checks = db.health_checks()
        data = {
            "status": "attention" if any(check["status"] != "ok" for check in checks) else "ok",
            "checks": checks,
            "task_counts": db.task_counts(),
            "active_workers": db.active_workers(),
            "stuck_tasks": db.stuck_tasks(),
            "xmin_horizon": db.xmin_horizon(),
        }
    return respond(request, data, "health.html", data)


def capacity(request: Request) -> Response:
    """/api/capacity: v_worker_capacity; /api/capacity/ROLE: worker_capacity(ROLE)."""
    check_params(request)
    role = path_name(request, "role") if "role" in request.path_params else None
    with open_database(request) as db:
        if role is None:
            return json_response(db.worker_capacity_rows())
        checked_role(role, db.roles())
        return json_response(db.worker_capacity(role))


def ready(request: Request) -> Response:
    """/readyz: 200 while the database answers with the schema the dashboard needs (a probe's
    path: it shows nothing, so it needs no log-in), 503 once it has not within 3 s."""
    check_params(request)
    database_url, pooled = request.app.state.database_url, request.app.state.pooled

    def check_schema() -> None:
        # The connection is the probe thread's own, opened and closed there.
        db = AdminDatabase(
            database_url,
            application_name="pyworker-dashboard",
            pooled=pooled,
            call_timeout=PROBE_TIMEOUT_SECONDS,
            connect_timeout=PROBE_CONNECT_TIMEOUT,
        )
        try:
            db.check_schema()
        finally:
            db.close()

    call_within(PROBE_TIMEOUT_SECONDS, check_schema)
    return Response("ready\n", media_type="text/plain")


# Log-in and actions


def login_form(request: Request) -> Response:
    if request.app.state.token is None:
        raise HTTPException(403, ACTIONS_OFF)
    check_params(request, "next")
    return render(request, "login.html", {"next": local_path(text_param(request, "next"))})


async def form_of(request: Request) -> dict[str, str]:
    form = await request.form()
    return {key: value for key, value in form.items() if isinstance(value, str)}


def same_secret(given: str, expected: str) -> bool:
    """Compared in constant time (as bytes: compare_digest refuses a str that is not ASCII)."""
    return hmac.compare_digest(given.encode(), expected.encode())


def check_csrf(request: Request, form: dict[str, str]) -> None:
    expected = request.session.get("csrf")
    if not isinstance(expected, str) or not same_secret(form.get("csrf", ""), expected):
        raise HTTPException(
            403, "the form's CSRF token does not match this session's: reload the page and try again"
        )


def local_path(path: str | None) -> str:
    """Where to go after an action: a path of this site, never another site."""
    # "//host" and "/\\host" are other sites to a browser.
    return path if path and path.startswith("/") and not path.startswith(("//", "/\\")) else "/"


async def login(request: Request) -> Response:
    token = request.app.state.token
    if token is None:
        raise HTTPException(403, ACTIONS_OFF)
    form = await form_of(request)
    check_csrf(request, form)
    if not same_secret(form.get("token", ""), token):
        flash(request, "error", "wrong token")
        return RedirectResponse(f"/login?{urlencode({'next': local_path(form.get('next'))})}", status_code=303)
    sessions = request.app.state.sessions
    sessions.close(request.session.get("operator"))
    request.session["operator"] = sessions.open()
    # A new CSRF token with the new privilege: one read before the log-in is worth nothing now.
    request.session["csrf"] = secrets.token_urlsafe(32)
    flash(request, "ok", "logged in: actions are on")
    return RedirectResponse(local_path(form.get("next")), status_code=303)


async def logout(request: Request) -> Response:
    form = await form_of(request)
    check_csrf(request, form)
    # Forgotten by the server: a copy of this cookie no longer logs anyone in.
    request.app.state.sessions.close(request.session.get("operator"))
    request.session.clear()
    return RedirectResponse("/", status_code=303)


@dataclass(frozen=True)
class Action:
    """An operator action: the SQL call it makes (through the CLI's AdminDatabase method), given the
    path's parameters and the fields submitted with it; the page it goes back to; what it says
    when done, given the fields and the row."""

    run: Callable[[AdminDatabase, dict[str, Any]], dict[str, Any]]
    back: Callable[[dict[str, Any]], str]
    said: Callable[[dict[str, Any], dict[str, Any]], str]
    # The fields it takes besides the path's (and a form's csrf); any other is refused.
    fields: tuple[str, ...] = ()
    # A destructive action's question (GET on its path: a page that asks, then POSTs), given the
    # fields; None: the button acts at once.
    confirm: Callable[[AdminDatabase, dict[str, Any]], Confirmation] | None = None


@dataclass
class Confirmation:
    """What a confirmation page asks before a destructive action: the question, what follows, the
    tasks it would take (a sample of `count`), the fields its form carries on (`hidden`) and those
    it asks for (`inputs`: name, label, placeholder). Not `possible`: nothing to do, no button."""

    question: str
    consequence: str
    button: str
    possible: bool = True
    count: int = 0
    sample: list[dict[str, Any]] = field(default_factory=list)
    sample_time: str = "created"
    hidden: dict[str, Any] = field(default_factory=dict)
    inputs: tuple[tuple[str, str, str], ...] = ()


REASON_INPUT = (("reason", "reason (optional)", "why, for the other operators"),)


def cancelled(params: dict[str, Any], row: dict[str, Any]) -> str:
    if row["status"] == "cancelled":
        return f"task {params['task_id']} cancelled"
    return f"task {params['task_id']} is {row['status']}: cancel requested; its worker is notified and stops it"


def given_text(fields: dict[str, Any], name: str) -> str | None:
    """A submitted text field, None when absent or blank (a form sends every input, empty or not)."""
    value = fields.get(name)
    return value.strip() or None if isinstance(value, str) else value


BOOLEAN_WORDS = {"true", "false", "t", "f", "yes", "no", "on", "off", "1", "0"}
# The SQL type of each action field that is not text: a schedule's, a task's, the bulk filters'.
FIELD_KINDS = {
    "result": "jsonb",
    **SCHEDULE_FIELDS,
    "store": "integer",
    "max_retries": "integer",
    "scheduled_for": "timestamptz",
    "threshold_minutes": "integer",
    "max_running": "integer",
}
# What a field of each SCHEDULE_FIELDS type must be, in a refusal.
KIND_WORDS = {
    "integer": "a whole number",
    "boolean": "true or false",
    "interval": "an interval as text ('15 minutes')",
    "timestamptz": "a time as text ('2026-12-01 07:00+01')",
    "jsonb": "a JSON object",
    "text": "text",
}


def checked_field(name: str, value: Any) -> Any:
    """A submitted field (from a form: text; from JSON: any value) the database can take as its
    FIELD_KINDS type (text when it has none), else a 400 naming it."""
    kind = FIELD_KINDS.get(name, "text")
    if value is None or (kind == "jsonb" and isinstance(value, (dict, list))):
        return value
    if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
        return whole_number(name, str(value), minimum=-MAX_INTEGER - 1, maximum=MAX_INTEGER)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise HTTPException(400, f"{name} must be {KIND_WORDS[kind]}, not {json.dumps(value)[:100]}")
    # A payload is JSON text, read later; a NUL in it is refused then.
    text = value.strip() if kind == "jsonb" else checked_text(name, value.strip())
    if text and kind == "integer":
        return whole_number(name, text, minimum=-MAX_INTEGER - 1, maximum=MAX_INTEGER)
    if text and kind == "boolean" and text.lower() not in BOOLEAN_WORDS:
        raise HTTPException(400, f"{name} must be {KIND_WORDS[kind]}, not {text[:100]!r}")
    return value


def holds_nul(value: Any) -> bool:
    """Whether a JSON value holds a NUL character (jsonb cannot store one), key or string."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(holds_nul(key) or holds_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(holds_nul(item) for item in value)
    return False


def json_field(name: str, value: Any) -> Any:
    """A JSON field: text (a form's) read as JSON, else a 400 naming it; one holding a NUL, which
    jsonb cannot store, refused too."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as error:
            raise InvalidInput(f"{name} is not JSON: {error}") from error
    if holds_nul(value):
        raise HTTPException(400, f"{name} must not contain a NUL character")
    return value


def checked_cast(db: AdminDatabase, name: str, value: Any) -> None:
    """An interval or a time the database reads, else a 400 naming the field (the cast's own
    message does not)."""
    kind = FIELD_KINDS[name]
    if kind in ("interval", "timestamptz") and isinstance(value, str):
        try:
            # Whether it casts, not the value: one past Python's range would fail to load.
            db.query(f"SELECT %(value)s::{kind} IS NULL AS missing", {"value": value})
        except InvalidInput as error:
            raise InvalidInput(f"{name} must be {KIND_WORDS[kind]}: {error}") from error


def schedule_fields(db: AdminDatabase, fields: dict[str, Any]) -> dict[str, Any]:
    """The create_schedule / update_schedule fields among those submitted: blank ones left out
    (update_schedule keeps them), payload read as JSON, the rest as text the database casts and
    checks (a bad value is refused with its own message)."""
    chosen: dict[str, Any] = {}
    for name in SCHEDULE_FIELDS:
        value = given_text(fields, name)
        if value is None:
            continue
        if name == "payload":
            value = json_field(name, value)
        checked_cast(db, name, value)
        chosen[name] = value
    return chosen


def created_schedule(db: AdminDatabase, fields: dict[str, Any]) -> dict[str, Any]:
    name, role = given_text(fields, "name"), given_text(fields, "role")
    if name is None or role is None:
        raise InvalidInput("a new schedule needs a name and a role")
    return db.create_schedule(name, role, **schedule_fields(db, fields))


def updated_schedule(db: AdminDatabase, fields: dict[str, Any]) -> dict[str, Any]:
    changes = schedule_fields(db, fields)
    if not changes:
        raise InvalidInput("give at least one field to change")
    return db.update_schedule(fields["name"], **changes)


# The kinds of concurrency_limits, as the platforms page's form offers them.
LIMIT_KINDS = ("platform", "proxy", "role", "key", "store")


def set_limit(db: AdminDatabase, fields: dict[str, Any]) -> dict[str, Any]:
    # Blank inputs go as NULL: the database names what is missing.
    return db.set_concurrency_limit(given_text(fields, "kind"), given_text(fields, "key"), given_text(fields, "max_running"))


def cleared_limit(db: AdminDatabase, fields: dict[str, Any]) -> dict[str, Any]:
    kind, key = given_text(fields, "kind"), given_text(fields, "key")
    return {"kind": kind, "key": key, "cleared": db.clear_concurrency_limit(kind, key)}


def since_text(moment: Any) -> str:
    return f" since {shown(moment)}" if moment is not None else ""


# Confirmations: what each destructive action asks first


def confirm_cancel(db: AdminDatabase, fields: dict[str, Any]) -> Confirmation:
    task_id = fields["task_id"]
    task = db.get_task(task_id)
    if task is None:
        raise NotFound(f"task {task_id} does not exist")
    question = f"Cancel task {task_id} ({task['role']}, {task['status']})?"
    if task["status"] == "pending":
        return Confirmation(question, "It is cancelled now and never runs; Retry puts it back.", "Cancel the task")
    if task["status"] in ("claimed", "running"):
        return Confirmation(
            question,
            f"Worker {task['worker_id']} has it: the worker is told to stop it, and it ends cancelled.",
            "Cancel the task",
        )
    return Confirmation(
        question, "Only a pending, claimed or running task can be cancelled.", "Cancel the task", possible=False
    )


def result_field(fields: dict[str, Any]) -> Any:
    """The result an operator's completion records: the `result` field as JSON, None when blank."""
    value = fields.get("result")
    if isinstance(value, str):
        value = value.strip() or None
    return None if value is None else json_field("result", value)


def completed_by_hand(params: dict[str, Any], row: dict[str, Any]) -> str:
    held = f"; worker {row['worker_id']}, which held it, can no longer complete or fail it" if row["worker_id"] else ""
    return f"task {params['task_id']} completed by hand{held}"


def confirm_complete(db: AdminDatabase, fields: dict[str, Any]) -> Confirmation:
    task_id = fields["task_id"]
    task = db.get_task(task_id)
    if task is None:
        raise NotFound(f"task {task_id} does not exist")
    question = f"Complete task {task_id} ({task['role']}, {task['status']}) by hand?"
    if task["status"] == "pending":
        consequence = "It is completed now and never runs; its chain follows as after a worker's completion."
    elif task["status"] in ("claimed", "running"):
        consequence = (
            f"Worker {task['worker_id']} has it: the worker is told to stop, and whatever it reports"
            " afterwards is refused. Its chain follows as after a worker's completion."
        )
    else:
        return Confirmation(
            question, "Only a pending, claimed or running task can be completed by hand.", "Complete the task",
            possible=False,
        )
    return Confirmation(question, consequence, "Complete the task", inputs=(("result", "Result (JSON, optional)", '{"done_by": "hand"}'),))


def confirm_delete(db: AdminDatabase, fields: dict[str, Any]) -> Confirmation:
    task_id = fields["task_id"]
    task = db.get_task(task_id)
    if task is None:
        raise NotFound(f"task {task_id} does not exist")
    held = f" Worker {task['worker_id']} has it: the worker is told to stop." if task["status"] in ("claimed", "running") else ""
    return Confirmation(
        f"Delete task {task_id} ({task['role']}, {task['status']})?",
        f"The task and its attempt history are gone for good; the tasks it queued stay.{held}",
        "Delete the task",
    )


def confirm_pause(db: AdminDatabase, fields: dict[str, Any]) -> Confirmation:
    checked_role(fields["role"], db.roles())
    return Confirmation(
        f"Pause role {fields['role']}?",
        "Its tasks are still enqueued but handed to no worker until it is resumed; those running finish.",
        "Pause the role",
        inputs=REASON_INPUT,
    )


def confirm_disable_platform(db: AdminDatabase, fields: dict[str, Any]) -> Confirmation:
    return Confirmation(
        f"Disable platform {fields['platform']}?",
        "None of its tasks is handed out until it is enabled again; those running finish.",
        "Disable the platform",
        inputs=REASON_INPUT,
    )


def existing_schedule(db: AdminDatabase, name: str) -> dict[str, Any]:
    found = [row for row in db.schedules() if row["name"] == name]
    if not found:
        raise NotFound(f"schedule {name!r} does not exist")
    return found[0]


def confirm_disable_schedule(db: AdminDatabase, fields: dict[str, Any]) -> Confirmation:
    existing_schedule(db, fields["name"])
    return Confirmation(
        f"Disable schedule {fields['name']}?",
        "It makes no tasks until it is enabled again; the tasks it made stay.",
        "Disable the schedule",
    )


def confirm_delete_schedule(db: AdminDatabase, fields: dict[str, Any]) -> Confirmation:
    schedule = existing_schedule(db, fields["name"])
    return Confirmation(
        f"Delete schedule {fields['name']} ({schedule['role']})?",
        "It is gone for good (make it again to undo); the tasks it made stay.",
        "Delete the schedule",
    )


# Bulk actions: the task list's filters, through tasks_matching, cancel_tasks and retry_tasks.
BULK_FILTERS = ("role", "status", "store", "error")
BULK_WORDS = {
    "cancel": ("Cancel", "cancelled", "Pending ones are cancelled now, claimed or running ones as soon as their worker hears."),
    "retry": ("Retry", "retried", "Each goes back to pending now with a fresh retry budget, as Retry does for one."),
}


def like_pattern(text: str) -> str:
    """An ILIKE pattern matching what contains `text` (the task list's error filter), its `%`, `_`
    and `\\` taken literally."""
    return "%" + re.sub(r"([\\%_])", r"\\\1", text) + "%"


def described_filters(fields: dict[str, Any]) -> str:
    """The filters as the question shows them: role=x status=pending error contains '503'."""
    words = [f"{name}={fields[name]}" for name in ("role", "status", "store") if fields.get(name) is not None]
    if fields.get("error") is not None:
        words.append(f"error contains {fields['error']!r}")
    return " ".join(words)


def bulk_filters(db: AdminDatabase, fields: dict[str, Any]) -> dict[str, Any]:
    """tasks_matching's filters from the task list's (an unknown role named, as the list does)."""
    given = {name: given_text(fields, name) for name in BULK_FILTERS}
    checked_role(given["role"], db.roles())
    return {
        "role": given["role"],
        "status": given["status"],
        "store": int(given["store"]) if given["store"] is not None else None,
        "platform": None,
        "error_like": like_pattern(given["error"]) if given["error"] is not None else None,
        "created_before": None,
        "created_after": None,
    }


def bulk_confirmation(action: str) -> Callable[[AdminDatabase, dict[str, Any]], Confirmation]:
    verb, past, consequence = BULK_WORDS[action]

    def confirm(db: AdminDatabase, fields: dict[str, Any]) -> Confirmation:
        count, sample = db.tasks_matching(action, bulk_filters(db, fields))
        described = described_filters(fields)
        hidden = {name: fields[name] for name in BULK_FILTERS if fields.get(name) is not None}
        rows = [{**task, "at": task["created_at"]} for task in sample]
        if not count:
            return Confirmation(
                f"No task matching {described} can be {past}",
                f"{verb} takes {' or '.join(BULK_ACTION_STATUSES[action])} tasks only.",
                verb, possible=False,
            )
        return Confirmation(
            f"{verb} {count:,} {'task' if count == 1 else 'tasks'} matching {described}?",
            f"{consequence} Done {BULK_BATCH_SIZE:,} tasks a transaction, as pyworker {action} with these filters does.",
            f"{verb} {count:,} {'task' if count == 1 else 'tasks'}",
            count=count, sample=rows, hidden=hidden,
        )

    return confirm


def bulk_run(action: str) -> Callable[[AdminDatabase, dict[str, Any]], dict[str, Any]]:
    def run(db: AdminDatabase, fields: dict[str, Any]) -> dict[str, Any]:
        done = sum(db.bulk_task_action(action, bulk_filters(db, fields), BULK_BATCH_SIZE))
        return {"tasks": done}

    return run


def bulk_said(action: str) -> Callable[[dict[str, Any], dict[str, Any]], str]:
    def said(fields: dict[str, Any], row: dict[str, Any]) -> str:
        tasks = row["tasks"]
        return f"{BULK_WORDS[action][1]} {tasks:,} {'task' if tasks == 1 else 'tasks'} matching {described_filters(fields)}"

    return said


def bulk_back(fields: dict[str, Any]) -> str:
    given = {name: fields[name] for name in BULK_FILTERS if fields.get(name) is not None}
    return f"/tasks?{urlencode(given)}"


def confirm_recover_stale(db: AdminDatabase, fields: dict[str, Any]) -> Confirmation:
    stuck = db.stuck_tasks()
    rows = [{**task, "at": task["last_heartbeat_at"], "error_message": None} for task in stuck[:10]]
    return Confirmation(
        f"Recover {counted(len(stuck), 'stale task')}?" if stuck else "Recover stale tasks?",
        "A claimed or running task whose worker stopped heartbeating goes back to pending while it has"
        " retries left, else to failed (cancelled if a cancel was asked), as the tick and"
        " pyworker recover-stale do."
        + ("" if stuck else " None is silent past its role's stale threshold now; a shorter threshold below may find some."),
        "Recover them",
        count=len(stuck), sample=rows, sample_time="last heartbeat",
        inputs=(("threshold_minutes", "stale after N minutes without a heartbeat (blank: each role's threshold)", ""),),
    )


def recovered(db: AdminDatabase, fields: dict[str, Any]) -> dict[str, Any]:
    given = given_text(fields, "threshold_minutes")
    threshold = None if given is None else whole_number("threshold_minutes", str(given), minimum=1, maximum=MAX_INTEGER)
    return {"recovered": db.recover_stale_tasks(threshold)}


# A new task: enqueue_tasks with one spec, as `pyworker enqueue` makes it.
TASK_FIELDS = ("role", "payload", "store", "priority", "scheduled_for", "dedupe_key", "max_retries")
# enqueue_tasks names a bad spec by its index in the batch: "tasks[0]: unknown role 'x'".
SPEC_INDEX = re.compile(r"^tasks\[\d+\]: ")


def created_task(db: AdminDatabase, fields: dict[str, Any]) -> dict[str, Any]:
    role = given_text(fields, "role")
    if role is None:
        raise InvalidInput("a new task needs a role")
    spec: dict[str, Any] = {"role": role}
    for name in TASK_FIELDS[1:]:
        value = given_text(fields, name)
        if value is None:
            continue
        if name == "payload":
            value = json_field(name, value)
        elif name == "scheduled_for":
            checked_cast(db, name, value)
        elif FIELD_KINDS.get(name) == "integer":
            value = int(value)
        spec["dispensary_id" if name == "store" else name] = value
    try:
        with db.transaction():
            (task,) = db.enqueue_tasks([spec])
            # A task made now has the transaction's time; one that a dedupe key matched is older.
            clock = db.query_one("SELECT taskpool_now() AS now")
    except TaskpoolError as error:
        message = error.args[0] if error.args else str(error)
        raise type(error)(SPEC_INDEX.sub("", message), hint=error.hint) from error
    return {**task, "deduplicated": clock is not None and task["created_at"] < clock["now"]}


CREATE_TASK = Action(
    run=created_task,
    back=lambda p: "/tasks",
    said=lambda p, row: f"task {row['id']} enqueued",
    fields=TASK_FIELDS,
)

# Each action by its path (its page's; the API's is /api + path): POST only; a destructive one's
# GET is its confirmation page.
ACTIONS: dict[str, Action] = {
    "/tasks/bulk-cancel": Action(
        run=bulk_run("cancel"), back=bulk_back, said=bulk_said("cancel"), fields=BULK_FILTERS,
        confirm=bulk_confirmation("cancel"),
    ),
    "/tasks/bulk-retry": Action(
        run=bulk_run("retry"), back=bulk_back, said=bulk_said("retry"), fields=BULK_FILTERS,
        confirm=bulk_confirmation("retry"),
    ),
    "/tasks/recover-stale": Action(
        run=recovered,
        back=lambda p: "/health",
        said=lambda p, row: f"recovered {counted(row['recovered'], 'stale task')}",
        fields=("threshold_minutes",),
        confirm=confirm_recover_stale,
    ),
    "/tasks/{task_id}/cancel": Action(
        run=lambda db, p: db.cancel_task(p["task_id"]),
        back=lambda p: f"/tasks/{p['task_id']}",
        said=cancelled,
        confirm=confirm_cancel,
    ),
    "/tasks/{task_id}/retry": Action(
        run=lambda db, p: db.retry_task(p["task_id"]),
        back=lambda p: f"/tasks/{p['task_id']}",
        said=lambda p, row: f"task {p['task_id']} is {row['status']} again, retries reset to 0/{row['max_retries']}",
    ),
    # An operator's completion and deletion of one task (mark_task_completed, delete_task).
    "/tasks/{task_id}/complete": Action(
        run=lambda db, p: db.mark_task_completed(p["task_id"], result_field(p)),
        back=lambda p: f"/tasks/{p['task_id']}",
        said=completed_by_hand,
        fields=("result",),
        confirm=confirm_complete,
    ),
    "/tasks/{task_id}/delete": Action(
        run=lambda db, p: db.delete_task(p["task_id"]),
        back=lambda p: "/tasks",
        said=lambda p, row: f"task {p['task_id']} deleted (it was {row['status']}, role {row['role']})",
        confirm=confirm_delete,
    ),
    "/schedules/create": Action(
        run=created_schedule,
        back=lambda p: "/schedules",
        said=lambda p, row: f"schedule {row['name']} created, next run at {shown(row['next_run_at'])}",
        fields=("name", "role", *SCHEDULE_FIELDS),
    ),
    "/schedules/{name:path}/update": Action(
        run=updated_schedule,
        back=lambda p: "/schedules",
        said=lambda p, row: f"schedule {row['name']} updated, next run at {shown(row['next_run_at'])}",
        fields=tuple(SCHEDULE_FIELDS),
    ),
    "/schedules/{name:path}/delete": Action(
        run=lambda db, p: db.delete_schedule(p["name"]),
        back=lambda p: "/schedules",
        said=lambda p, row: f"schedule {row['name']} deleted; the tasks it made stay",
        confirm=confirm_delete_schedule,
    ),
    "/schedules/{name:path}/trigger": Action(
        run=lambda db, p: db.trigger_schedule(p["name"]),
        back=lambda p: "/schedules",
        said=lambda p, row: f"schedule {row['name']} ran: {row['last_task_count']} task(s) created",
    ),
    "/schedules/{name:path}/enable": Action(
        run=lambda db, p: db.update_schedule(p["name"], enabled=True),
        back=lambda p: "/schedules",
        said=lambda p, row: f"schedule {row['name']} enabled, next run at {shown(row['next_run_at'])}",
    ),
    "/schedules/{name:path}/disable": Action(
        run=lambda db, p: db.update_schedule(p["name"], enabled=False),
        back=lambda p: "/schedules",
        said=lambda p, row: f"schedule {row['name']} disabled",
        confirm=confirm_disable_schedule,
    ),
    "/roles/{role:path}/pause": Action(
        run=lambda db, p: db.pause_role(p["role"], given_text(p, "reason")),
        back=lambda p: "/",
        said=lambda p, row: f"role {row['role']} paused{since_text(row['paused_at'])}: no worker is handed its tasks",
        fields=("reason",),
        confirm=confirm_pause,
    ),
    "/roles/{role:path}/resume": Action(
        run=lambda db, p: db.resume_role(p["role"]),
        back=lambda p: "/",
        said=lambda p, row: f"role {row['role']} is not paused: its ready tasks are handed out",
    ),
    "/platforms/{platform:path}/disable": Action(
        run=lambda db, p: db.disable_platform(p["platform"], given_text(p, "reason")),
        back=lambda p: "/platforms",
        said=lambda p, row: f"platform {row['platform']} disabled{since_text(row['disabled_at'])}: none of its tasks is handed out",
        fields=("reason",),
        confirm=confirm_disable_platform,
    ),
    # Concurrency limits (set_concurrency_limit, clear_concurrency_limit), on the platforms page.
    "/limits/set": Action(
        run=set_limit,
        back=lambda p: "/platforms#limits",
        said=lambda p, row: f"{row['kind']} {row['key']}: at most {row['max_running']} running at once",
        fields=("kind", "key", "max_running"),
    ),
    "/limits/clear": Action(
        run=cleared_limit,
        back=lambda p: "/platforms#limits",
        said=lambda p, row: (f"{row['kind']} {row['key']}: limit cleared" if row["cleared"]
                             else f"{row['kind']} {row['key']} had no limit of its own"),
        fields=("kind", "key"),
    ),
    "/platforms/{platform:path}/enable": Action(
        run=lambda db, p: db.enable_platform(p["platform"]),
        back=lambda p: "/platforms",
        said=lambda p, row: f"platform {row['platform']} is enabled: its tasks are handed out",
    ),
}


def action_fields(request: Request, action: Action, submitted: dict[str, Any]) -> dict[str, Any]:
    """The action's fields: those submitted, each checked (one it does not take refused), and the
    path's parameters, which no field can stand in for."""
    fields = {}
    for name, value in submitted.items():
        if name not in action.fields:
            takes = f"takes {', '.join(action.fields)}" if action.fields else "takes no field"
            raise HTTPException(400, f"unknown field {name!r}: {request.url.path} {takes}")
        fields[name] = checked_field(name, value)
    for name in request.path_params:
        fields[name] = path_id(request, name) if name == "task_id" else path_name(request, name)
    return fields


def performed(request: Request, action: Action, fields: dict[str, Any]) -> dict[str, Any]:
    """The action done on this request's connection: the row its SQL function returns."""
    with open_database(request) as db:
        return action.run(db, fields)


async def operator_form(request: Request) -> dict[str, str]:
    """The fields of a page's POST, once it is known to come from a logged-in operator's page:
    actions on, the session's CSRF token (checked before anything else), no query parameter."""
    if request.app.state.token is None:
        raise HTTPException(403, ACTIONS_OFF)
    form = await form_of(request)
    check_csrf(request, form)
    if not is_operator(request):
        raise HTTPException(403, "log in with the dashboard's token first")
    check_params(request)
    return {key: value for key, value in form.items() if key != "csrf"}


def operator_page(request: Request, path: str) -> Response | None:
    """For a page only an operator sees (a confirmation, a form) at `path` (its names quoted):
    None when this is one; a browser that has not logged in is sent to log in, and back."""
    if request.app.state.token is None:
        raise HTTPException(403, ACTIONS_OFF)
    if is_operator(request):
        return None
    wanted = path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/login?{urlencode({'next': wanted})}", status_code=303)


def confirmation_endpoint(route_path: str, action: Action) -> Callable[[Request], Any]:
    """GET on a destructive action's path: the page that asks (how many, which), whose form POSTs
    to the same path. Works without JavaScript; changes nothing."""
    assert action.confirm is not None
    confirm = action.confirm

    def confirmation_page(request: Request) -> Response:
        fields = action_fields(request, action, dict(request.query_params))
        # Rebuilt with each name quoted: the request's path is decoded, and a name holding `/`
        # or `..` would make it another action's.
        path = re.sub(r"\{(\w+)(:\w+)?\}", lambda m: path_segment(request.path_params[m.group(1)]), route_path)
        login = operator_page(request, path)
        if login is not None:
            return login
        with open_database(request) as db:
            confirmation = confirm(db, fields)
        return render(request, "confirm.html", {
            "confirmation": confirmation, "action_path": path, "back": action.back(fields), "live": False,
        })

    return confirmation_page


def new_task_page(request: Request, values: dict[str, Any], error: str | None = None, status_code: int = 200) -> Response:
    with open_database(request) as db:
        roles = db.roles()
    return render(request, "task_new.html", {
        "roles": roles, "values": values, "error": error, "live": False,
    }, status_code=status_code)


def new_task_form(request: Request) -> Response:
    check_params(request, "role")
    role = text_param(request, "role")
    return operator_page(request, "/tasks/new") or new_task_page(request, {"role": role})


async def create_task(request: Request) -> Response:
    """The New task form's POST: the task, or the form again with what was typed and the reason
    it was refused (nothing made)."""
    values = await operator_form(request)
    try:
        fields = action_fields(request, CREATE_TASK, values)
        task = await run_in_threadpool(performed, request, CREATE_TASK, fields)
    except (TaskpoolError, HTTPException) as error:
        status_code = http_status(error) if isinstance(error, TaskpoolError) else error.status_code
        message = str(error) if isinstance(error, TaskpoolError) else error.detail
        return await run_in_threadpool(new_task_page, request, values, message, status_code)
    if task["deduplicated"]:
        flash(request, "ok", f"nothing enqueued: task {task['id']} ({task['status']}) holds dedupe key {task['dedupe_key']}")
    else:
        flash(request, "ok", f"task {task['id']} enqueued: {task['role']}, {task['status']}")
    return RedirectResponse(f"/tasks/{task['id']}", status_code=303)


def action_endpoint(action: Action) -> Callable[[Request], Any]:
    """The page's action: checked, done, and its outcome (or the database's refusal) shown on the
    page it goes back to."""

    async def page_action(request: Request) -> Response:
        fields = action_fields(request, action, await operator_form(request))
        try:
            # The form is read (async); the SQL call blocks, so it runs in the thread pool.
            row = await run_in_threadpool(performed, request, action, fields)
        except TaskpoolError as error:
            flash(request, "error", str(error))
        else:
            flash(request, "ok", action.said(fields, row))
        return RedirectResponse(action.back(fields), status_code=303)

    return page_action


async def submitted(request: Request) -> dict[str, Any]:
    """An API action's fields: a JSON object in the body, a form, or none (an empty body)."""
    if not await request.body():
        return {}
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            body = await request.json()
        except ValueError as error:
            raise HTTPException(400, f"the body is not JSON: {error}") from error
        if not isinstance(body, dict):
            raise HTTPException(400, "the body must be a JSON object of fields")
        return body
    return dict(await form_of(request))


def api_action_endpoint(action: Action) -> Callable[[Request], Any]:
    """The API's action: the row the SQL function returns, or its refusal as {"error": ...}."""

    async def api_action(request: Request) -> Response:
        api_authorized(request)
        check_params(request)
        fields = action_fields(request, action, await submitted(request))
        return json_response(await run_in_threadpool(performed, request, action, fields))

    return api_action


# The stream of task changes, as server-sent events: what live.js refreshes a page on


async def task_changes(request: Request) -> Response:
    """Each task change as an event `change` whose data is the channel's JSON message, from the
    app's one TaskChangeHub; a comment every TASK_CHANGES_KEEPALIVE_SECONDS. 204 (which tells an
    EventSource to stop trying) when there is no stream: through a transaction pooler, which
    cannot LISTEN."""
    check_params(request)
    hub = request.app.state.task_changes
    if hub is None:
        return Response(status_code=204)

    async def events() -> AsyncIterator[str]:
        async with hub.subscribe() as changes:
            yield f"retry: {TASK_CHANGES_KEEPALIVE_SECONDS * 1000}\n\n"
            while True:
                try:
                    message = await asyncio.wait_for(changes.get(), TASK_CHANGES_KEEPALIVE_SECONDS)
                except asyncio.TimeoutError:
                    yield ": still here\n\n"
                else:
                    yield f"event: change\ndata: {message}\n\n"

    return StreamingResponse(
        events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    )


# Errors


def error_response(request: Request, status_code: int, message: str) -> Response:
    if wants_json(request):
        return json_response({"error": message}, status_code=status_code)
    return render(request, "error.html", {"status_code": status_code, "message": message}, status_code=status_code)


async def taskpool_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, TaskpoolError)
    return error_response(request, http_status(error), str(error))


async def http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    response = error_response(request, error.status_code, error.detail)
    response.headers.update(error.headers or {})
    return response


# The application


class VersionedFiles(StaticFiles):
    """Vendored files, each name carrying its version (htmx-2.0.11.min.js): a browser may keep
    one for a year without asking again, since a new version comes under a new name."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers["Cache-Control"] = IMMUTABLE_CACHE
        return response


def core_routes() -> list[Route]:
    # Confirmations and the New task form first: /tasks/{task_id} would take their paths.
    routes = [
        *(Route(path, confirmation_endpoint(path, action), methods=["GET"]) for path, action in ACTIONS.items() if action.confirm),
        Route("/tasks/new", new_task_form, methods=["GET"]),
        Route("/tasks/create", create_task, methods=["POST"]),
        Route("/api/tasks/create", api_action_endpoint(CREATE_TASK), methods=["POST"]),
        *write_routes(),
        Route("/", overview),
        Route("/api/overview", overview),
        Route("/tasks", task_list),
        Route("/api/tasks", task_list),
        Route("/api/tasks/counts", task_counts),
        Route("/api/task-changes", task_changes),
        Route("/tasks/{task_id}", task_page),
        Route("/api/tasks/{task_id}", task_page),
        Route("/workers", workers),
        Route("/api/workers", workers),
        Route("/schedules", schedules),
        Route("/api/schedules", schedules),
        Route("/platforms", platforms),
        Route("/api/platforms", platforms),
        Route("/health", health),
        Route("/api/health", health),
        Route("/api/capacity", capacity),
        Route("/api/capacity/{role:path}", capacity),
        Route("/metrics", metrics),
        Route("/readyz", ready),
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
    ]
    for path, action in ACTIONS.items():
        routes.append(Route(path, action_endpoint(action), methods=["POST"]))
        routes.append(Route(f"/api{path}", api_action_endpoint(action), methods=["POST"]))
    return routes


def create_app(
    database_url: str, token: str | None = None, *, pooled: bool = False, require_login: bool = False
) -> Starlette:
    """The dashboard of the database at `database_url`; actions on when `token` is given; with
    `require_login`, reading too needs a log-in (or the token as a bearer token)."""
    if token is not None and not token.strip():
        raise ValueError("the dashboard's token must not be empty or blank")
    if require_login and token is None:
        raise ValueError("reading cannot require a log-in without a token to log in with")
    routes = core_routes()
    plugins = load_plugins(routes)
    template_folders = [HERE / "templates"] + [pages.templates for pages in plugins.pages if pages.templates]
    templates = Jinja2Templates(
        env=jinja2.Environment(
            loader=jinja2.FileSystemLoader([str(folder) for folder in template_folders]),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            # Whatever a page prints, a URL's credentials masked.
            finalize=masked,
        )
    )
    templates.env.filters["shown"] = shown
    templates.env.filters["pretty_json"] = json_text
    templates.env.filters["path_segment"] = path_segment
    app = Starlette(
        routes=[
            *routes,
            *(route for pages in plugins.pages for route in pages.routes),
            Mount("/static/vendor", VersionedFiles(directory=HERE / "static" / "vendor"), name="vendor"),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        middleware=[
            # A random key of this process, never one made from the token: see sessions.py.
            Middleware(
                SessionMiddleware,
                secret_key=new_cookie_key(),
                session_cookie="taskpool_dashboard",
                max_age=SESSION_SECONDS,
                same_site="strict",
            ),
            Middleware(LoginRequired),
        ],
        exception_handlers={TaskpoolError: taskpool_error, HTTPException: http_error},
    )
    app.state.database_url = database_url
    app.state.pooled = pooled
    app.state.token = token
    app.state.require_login = require_login
    # LISTEN needs a session of its own, which a transaction pooler does not keep.
    app.state.task_changes = None if pooled else TaskChangeHub(database_url)
    app.state.sessions = OperatorSessions()
    app.state.templates = templates
    app.state.menu = CORE_MENU + [link for pages in plugins.pages for link in pages.menu]
    app.state.broken_plugins = list(plugins.broken.values())
    return app
