"""What every endpoint of the dashboard builds on, the core's and the write API's
(write_api.py) alike: the request's connection, JSON answers, the query parameters it takes, and
the API's bearer token."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from pyworker.admin.queries import AdminDatabase
from pyworker.contrib.dashboard.masking import masked
from pyworker.contrib.dashboard.sessions import has_token
from pyworker.db import Database
from pyworker.admin.output import json_text

ACTIONS_OFF = "actions are off: start the dashboard with --token (or TASKPOOL_DASHBOARD_TOKEN) to enable them"


@contextmanager
def open_database(request: Request, kind: type[Database] = AdminDatabase) -> Iterator[Any]:
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


def json_response(data: Any, status_code: int = 200) -> Response:
    """`data` as the CLI's --json prints it: every digit kept, intervals in seconds; the
    credentials of any URL in it masked."""
    return Response(json_text(masked(data)), status_code=status_code, media_type="application/json")


def check_params(request: Request, *names: str) -> None:
    """400 naming the first query parameter the page does not take (`names` are those it does)."""
    for given in request.query_params:
        if given not in names:
            takes = f"takes {', '.join(names)}" if names else "takes no parameter"
            raise HTTPException(400, f"unknown parameter {given!r}: {request.url.path} {takes}")


def api_authorized(request: Request) -> None:
    """The API's actions: the server's token as a bearer token (no cookie, so no CSRF)."""
    if request.app.state.token is None:
        raise HTTPException(403, ACTIONS_OFF)
    if not has_token(request):
        raise HTTPException(401, "give the dashboard's token as Authorization: Bearer TOKEN", headers={"WWW-Authenticate": "Bearer"})
