"""`pyworker dashboard`: the pool's state in a browser, and the operator's actions.

A Starlette application (`create_app`) served by uvicorn, its pages Jinja2 templates rendered on
the server (templates/, static/); each page's data is also JSON under /api/. Every number comes
from the same SQL the CLI reads (v_worker_capacity, v_task_counts, v_workers, taskpool_health(),
...), every action goes through the same SQL function as the CLI's (enqueue_tasks, cancel_task,
retry_task, cancel_tasks, retry_tasks, recover_stale_tasks, trigger_schedule, update_schedule, ...),
and a refusal shows the database's own message. A destructive action asks first, on a page of its
own (a GET on its path) whose form POSTs it. Pages refresh themselves: a vendored htmx polls each
page's #live region (static/vendor/, static/live.js); without JavaScript they are whole, only still.

Actions are off unless the server has a token (--token or TASKPOOL_DASHBOARD_TOKEN): an operator
logs in with it (a session the server holds, its id in a cookie signed with a random key of the
process), and each action is a POST whose form carries the session's CSRF token. The API takes
the token as `Authorization: Bearer TOKEN`. With --require-login (the default when listening
beyond loopback) reading needs the same log-in or token.

Other packages add pages through the `pyworker.dashboard` entry points (pyworker.contrib.dashboard.plugins):
the crawler's stores and payloads come that way. The dashboard needs the `dashboard` extra
(`pip install 'taskpool-pg[dashboard]'`); nothing else in pyworker imports it.
"""

# What a plug-in's pages build on.
from pyworker.contrib.dashboard.app import (
    api_authorized,
    check_params,
    create_app,
    int_param,
    json_response,
    open_database,
    paging,
    path_id,
    render,
    respond,
    text_param,
    wants_json,
)
from pyworker.contrib.dashboard.masking import masked_text
from pyworker.contrib.dashboard.plugins import DashboardPages
from pyworker.contrib.dashboard.write_api import json_body
from pyworker.db import load_exact_json

__all__ = [
    "DashboardPages",
    "api_authorized",
    "check_params",
    "create_app",
    "int_param",
    "json_body",
    "json_response",
    "load_exact_json",
    "masked_text",
    "open_database",
    "paging",
    "path_id",
    "render",
    "respond",
    "text_param",
    "wants_json",
]
