"""The dashboard's Starlette application: pages, their JSON under /api/, log-in and actions.

Each request opens its own `Database` (open_database) and closes it: the endpoints are plain
functions that Starlette runs in its thread pool, and no connection is shared between threads.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from pyworker import __version__
from pyworker.dashboard.plugins import load_plugins
from pyworker.db import SCHEDULE_FIELDS, Database
from pyworker.metrics import database_metrics
from pyworker.errors import (
    DatabaseUnavailable,
    InvalidInput,
    NotFound,
    Refused,
    SchemaMismatch,
    SchemaMissing,
    TaskpoolError,
)
from pyworker.output import json_text, shown

HERE = Path(__file__).resolve().parent
TASK_STATUSES = ("pending", "claimed", "running", "completed", "failed", "cancelled")
TASKS_PER_PAGE = 50
# The overview's chart: this many hours, the current one last.
CHART_HOURS = 12
PLATFORM_EVENTS_SHOWN = 50
CORE_MENU = [
    ("Overview", "/"),
    ("Tasks", "/tasks"),
    ("Workers", "/workers"),
    ("Schedules", "/schedules"),
    ("Platforms", "/platforms"),
    ("Health", "/health"),
]
ACTIONS_OFF = "actions are off: start the dashboard with --token (or TASKPOOL_DASHBOARD_TOKEN) to enable them"
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


@contextmanager
def open_database(request: Request, kind: type[Database] = Database) -> Iterator[Any]:
    """A connection for this request (a `kind`: a plug-in passes its Database subclass), closed
    after it. JSON numbers keep every digit, as the CLI shows them."""
    db = kind(
        request.app.state.database_url,
        application_name="pyworker-dashboard",
        exact_numbers=True,
        pooled=request.app.state.pooled,
    )
    try:
        yield db
    finally:
        db.close()


def wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def json_response(data: Any, status_code: int = 200) -> Response:
    """`data` as the CLI's --json prints it: every digit kept, intervals in seconds."""
    return Response(json_text(data), status_code=status_code, media_type="application/json")


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
    and the messages waiting for this session. Plug-ins render theirs with it too."""
    state = request.app.state
    page = {
        "request": request,
        "menu": state.menu,
        "broken_plugins": state.broken_plugins,
        "actions_enabled": state.token is not None,
        "operator": bool(request.session.get("operator")),
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


def int_param(request: Request, name: str, *, minimum: int = 1) -> int | None:
    """A whole-number query parameter, None when absent or empty; 400 when it is not one."""
    text = request.query_params.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise HTTPException(400, f"{name} must be a whole number, not {text!r}")
    if value < minimum:
        raise HTTPException(400, f"{name} must be {minimum} or more, not {value}")
    return value


def text_param(request: Request, name: str) -> str | None:
    return request.query_params.get(name, "").strip() or None


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


def overview_data(db: Database) -> dict[str, Any]:
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
    with open_database(request) as db:
        data = overview_data(db)
    return respond(request, data, "overview.html", {**data, "chart": throughput_chart(data["throughput"])})


# Tasks


def task_list(request: Request) -> Response:
    filters = {
        "role": text_param(request, "role"),
        "status": text_param(request, "status"),
        "store": int_param(request, "store", minimum=-(2**31)),
        "error": text_param(request, "error"),
    }
    if filters["status"] is not None and filters["status"] not in TASK_STATUSES:
        raise HTTPException(400, f"status must be one of {', '.join(TASK_STATUSES)}, not {filters['status']!r}")
    page = int_param(request, "page") or 1
    with open_database(request) as db:
        roles = db.roles()
        if filters["role"] is not None and filters["role"] not in roles:
            raise InvalidInput(f"unknown role {filters['role']!r}", hint=f"Known roles: {', '.join(roles)}.")
        tasks = db.list_tasks(**filters, limit=TASKS_PER_PAGE, offset=(page - 1) * TASKS_PER_PAGE)
        total = db.count_tasks(**filters)
    paged = paging(filters, total=total, page=page, limit=TASKS_PER_PAGE)
    return respond(request, {"tasks": tasks, **paged.as_json()}, "tasks.html", {
        "tasks": tasks, "paging": paged, "filters": filters, "roles": roles, "statuses": TASK_STATUSES,
    })


def task_page(request: Request) -> Response:
    task_id = request.path_params["task_id"]
    with open_database(request) as db:
        task = db.get_task(task_id)
        if task is None:
            raise NotFound(f"task {task_id} does not exist")
        attempts = db.task_attempts(task_id)
        chain = db.task_chain(task_id)
    found = {"task": task, "chain": chain, "attempts": attempts}
    return respond(request, found, "task.html", found)


def task_counts(request: Request) -> Response:
    with open_database(request) as db:
        return json_response(db.counts())


def metrics(request: Request) -> Response:
    """The pool's metrics in the Prometheus text format (docs/metrics.md), read at scrape time."""
    with open_database(request) as db:
        body, content_type = database_metrics(db)
    return Response(body, headers={"Content-Type": content_type})


# Workers, schedules, platforms, health


def workers(request: Request) -> Response:
    with open_database(request) as db:
        rows = db.workers()
    return respond(request, rows, "workers.html", {"workers": rows})


def schedules(request: Request) -> Response:
    with open_database(request) as db:
        rows = db.schedules()
        roles = db.roles()
    return respond(request, rows, "schedules.html", {"schedules": rows, "roles": roles})


def platforms(request: Request) -> Response:
    with open_database(request) as db:
        data = {"platforms": db.platforms(), "events": db.platform_events(PLATFORM_EVENTS_SHOWN)}
    return respond(request, data, "platforms.html", data)


def health(request: Request) -> Response:
    """The document of `pyworker health --json`, and v_xmin_horizon."""
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
    role = request.path_params.get("role")
    with open_database(request) as db:
        return json_response(db.worker_capacity_rows() if role is None else db.worker_capacity(role))


# Log-in and actions


def login_form(request: Request) -> Response:
    if request.app.state.token is None:
        raise HTTPException(403, ACTIONS_OFF)
    return render(request, "login.html", {"next": request.query_params.get("next", "/")})


async def form_of(request: Request) -> dict[str, str]:
    form = await request.form()
    return {key: value for key, value in form.items() if isinstance(value, str)}


def check_csrf(request: Request, form: dict[str, str]) -> None:
    expected = request.session.get("csrf")
    if expected is None or not hmac.compare_digest(form.get("csrf", ""), expected):
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
    if not hmac.compare_digest(form.get("token", "").encode(), token.encode()):
        flash(request, "error", "wrong token")
        return RedirectResponse(f"/login?{urlencode({'next': local_path(form.get('next'))})}", status_code=303)
    request.session["operator"] = True
    # A new CSRF token with the new privilege: one read before the log-in is worth nothing now.
    request.session["csrf"] = secrets.token_urlsafe(32)
    flash(request, "ok", "logged in: actions are on")
    return RedirectResponse(local_path(form.get("next")), status_code=303)


async def logout(request: Request) -> Response:
    form = await form_of(request)
    check_csrf(request, form)
    request.session.clear()
    return RedirectResponse("/", status_code=303)


def bearer_token(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def api_authorized(request: Request) -> None:
    """The API's actions: the server's token as a bearer token (no cookie, so no CSRF)."""
    token = request.app.state.token
    if token is None:
        raise HTTPException(403, ACTIONS_OFF)
    given = bearer_token(request)
    if given is None or not hmac.compare_digest(given.encode(), token.encode()):
        raise HTTPException(401, "give the dashboard's token as Authorization: Bearer TOKEN", headers={"WWW-Authenticate": "Bearer"})


@dataclass(frozen=True)
class Action:
    """An operator action: the SQL call it makes (through the CLI's Database method), given the
    path's parameters and the fields submitted with it; the page it goes back to; what it says
    when done, given the fields and the row."""

    run: Callable[[Database, dict[str, Any]], dict[str, Any]]
    back: Callable[[dict[str, Any]], str]
    said: Callable[[dict[str, Any], dict[str, Any]], str]


def cancelled(params: dict[str, Any], row: dict[str, Any]) -> str:
    if row["status"] == "cancelled":
        return f"task {params['task_id']} cancelled"
    return f"task {params['task_id']} is {row['status']}: cancel requested; its worker stops it at its next heartbeat"


def given_text(fields: dict[str, Any], name: str) -> str | None:
    """A submitted text field, None when absent or blank (a form sends every input, empty or not)."""
    value = fields.get(name)
    return value.strip() or None if isinstance(value, str) else value


def schedule_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """The create_schedule / update_schedule fields among those submitted: blank ones left out
    (update_schedule keeps them), payload read as JSON, the rest as text the database casts and
    checks (a bad value is refused with its own message)."""
    chosen: dict[str, Any] = {}
    for name in SCHEDULE_FIELDS:
        value = given_text(fields, name)
        if value is None:
            continue
        if name == "payload" and isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as error:
                raise InvalidInput(f"payload is not JSON: {error}") from error
        chosen[name] = value
    return chosen


def created_schedule(db: Database, fields: dict[str, Any]) -> dict[str, Any]:
    name, role = given_text(fields, "name"), given_text(fields, "role")
    if name is None or role is None:
        raise InvalidInput("a new schedule needs a name and a role")
    return db.create_schedule(name, role, **schedule_fields(fields))


def updated_schedule(db: Database, fields: dict[str, Any]) -> dict[str, Any]:
    changes = schedule_fields(fields)
    if not changes:
        raise InvalidInput("give at least one field to change")
    return db.update_schedule(fields["name"], **changes)


def since_text(moment: Any) -> str:
    return f" since {shown(moment)}" if moment is not None else ""


# Each action by its path (its page's; the API's is /api + path): POST only.
ACTIONS: dict[str, Action] = {
    "/tasks/{task_id:int}/cancel": Action(
        run=lambda db, p: db.cancel_task(p["task_id"]),
        back=lambda p: f"/tasks/{p['task_id']}",
        said=cancelled,
    ),
    "/tasks/{task_id:int}/retry": Action(
        run=lambda db, p: db.retry_task(p["task_id"]),
        back=lambda p: f"/tasks/{p['task_id']}",
        said=lambda p, row: f"task {p['task_id']} is {row['status']} again, retries reset to 0/{row['max_retries']}",
    ),
    "/schedules/create": Action(
        run=created_schedule,
        back=lambda p: "/schedules",
        said=lambda p, row: f"schedule {row['name']} created, next run at {shown(row['next_run_at'])}",
    ),
    "/schedules/{name}/update": Action(
        run=updated_schedule,
        back=lambda p: "/schedules",
        said=lambda p, row: f"schedule {row['name']} updated, next run at {shown(row['next_run_at'])}",
    ),
    "/schedules/{name}/delete": Action(
        run=lambda db, p: db.delete_schedule(p["name"]),
        back=lambda p: "/schedules",
        said=lambda p, row: f"schedule {row['name']} deleted; the tasks it made stay",
    ),
    "/schedules/{name}/trigger": Action(
        run=lambda db, p: db.trigger_schedule(p["name"]),
        back=lambda p: "/schedules",
        said=lambda p, row: f"schedule {row['name']} ran: {row['last_task_count']} task(s) created",
    ),
    "/schedules/{name}/enable": Action(
        run=lambda db, p: db.update_schedule(p["name"], enabled=True),
        back=lambda p: "/schedules",
        said=lambda p, row: f"schedule {row['name']} enabled, next run at {shown(row['next_run_at'])}",
    ),
    "/schedules/{name}/disable": Action(
        run=lambda db, p: db.update_schedule(p["name"], enabled=False),
        back=lambda p: "/schedules",
        said=lambda p, row: f"schedule {row['name']} disabled",
    ),
    "/roles/{role}/pause": Action(
        run=lambda db, p: db.pause_role(p["role"], given_text(p, "reason")),
        back=lambda p: "/",
        said=lambda p, row: f"role {row['role']} paused{since_text(row['paused_at'])}: no worker is handed its tasks",
    ),
    "/roles/{role}/resume": Action(
        run=lambda db, p: db.resume_role(p["role"]),
        back=lambda p: "/",
        said=lambda p, row: f"role {row['role']} is not paused: its ready tasks are handed out",
    ),
    "/platforms/{platform}/disable": Action(
        run=lambda db, p: db.disable_platform(p["platform"], given_text(p, "reason")),
        back=lambda p: "/platforms",
        said=lambda p, row: f"platform {row['platform']} disabled{since_text(row['disabled_at'])}: none of its tasks is handed out",
    ),
    "/platforms/{platform}/enable": Action(
        run=lambda db, p: db.enable_platform(p["platform"]),
        back=lambda p: "/platforms",
        said=lambda p, row: f"platform {row['platform']} is enabled: its tasks are handed out",
    ),
}


def performed(request: Request, action: Action, fields: dict[str, Any]) -> dict[str, Any]:
    """The action done on this request's connection: the row its SQL function returns."""
    with open_database(request) as db:
        return action.run(db, fields)


def action_endpoint(action: Action) -> Callable[[Request], Any]:
    """The page's action: checked, done, and its outcome (or the database's refusal) shown on the
    page it goes back to."""

    async def page_action(request: Request) -> Response:
        if request.app.state.token is None:
            raise HTTPException(403, ACTIONS_OFF)
        form = await form_of(request)
        check_csrf(request, form)
        if not request.session.get("operator"):
            raise HTTPException(403, "log in with the dashboard's token first")
        # The path names what is acted on; a form field cannot stand in for it.
        fields = {**{key: value for key, value in form.items() if key != "csrf"}, **request.path_params}
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
        fields = {**await submitted(request), **request.path_params}
        return json_response(await run_in_threadpool(performed, request, action, fields))

    return api_action


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


def core_routes() -> list[Route]:
    routes = [
        Route("/", overview),
        Route("/api/overview", overview),
        Route("/tasks", task_list),
        Route("/api/tasks", task_list),
        Route("/api/tasks/counts", task_counts),
        Route("/tasks/{task_id:int}", task_page),
        Route("/api/tasks/{task_id:int}", task_page),
        Route("/workers", workers),
        Route("/api/workers", workers),
        Route("/schedules", schedules),
        Route("/api/schedules", schedules),
        Route("/platforms", platforms),
        Route("/api/platforms", platforms),
        Route("/health", health),
        Route("/api/health", health),
        Route("/api/capacity", capacity),
        Route("/api/capacity/{role}", capacity),
        Route("/metrics", metrics),
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
    ]
    for path, action in ACTIONS.items():
        routes.append(Route(path, action_endpoint(action), methods=["POST"]))
        routes.append(Route(f"/api{path}", api_action_endpoint(action), methods=["POST"]))
    return routes


def session_secret(token: str | None) -> str:
    """The key that signs session cookies: from the token, so that every replica of the dashboard
    accepts the others' and a new token ends every session; without a token, this process's own
    (a session then holds only its CSRF token)."""
    if token is None:
        return secrets.token_urlsafe(32)
    return hashlib.sha256(b"taskpool dashboard session\0" + token.encode()).hexdigest()


def create_app(database_url: str, token: str | None = None, *, pooled: bool = False) -> Starlette:
    """The dashboard of the database at `database_url`; actions on when `token` is given."""
    if token is not None and not token.strip():
        raise ValueError("the dashboard's token must not be empty or blank")
    routes = core_routes()
    plugins = load_plugins(routes)
    template_folders = [HERE / "templates"] + [pages.templates for pages in plugins.pages if pages.templates]
    templates = Jinja2Templates(
        env=jinja2.Environment(
            loader=jinja2.FileSystemLoader([str(folder) for folder in template_folders]),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
    )
    templates.env.filters["shown"] = shown
    templates.env.filters["pretty_json"] = json_text
    app = Starlette(
        routes=[
            *routes,
            *(route for pages in plugins.pages for route in pages.routes),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        middleware=[
            Middleware(
                SessionMiddleware,
                secret_key=session_secret(token),
                session_cookie="taskpool_dashboard",
                same_site="strict",
            )
        ],
        exception_handlers={TaskpoolError: taskpool_error, HTTPException: http_error},
    )
    app.state.database_url = database_url
    app.state.pooled = pooled
    app.state.token = token
    app.state.templates = templates
    app.state.menu = CORE_MENU + [link for pages in plugins.pages for link in pages.menu]
    app.state.broken_plugins = list(plugins.broken.values())
    return app
