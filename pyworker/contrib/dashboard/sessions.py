"""Who may read and act: operator sessions held by the server, and the log-in that reading may need.

The session cookie is signed with a random key of this process (`new_cookie_key`), never one made
from the token: a cookie, even an anonymous one, tells nothing about the token, so nobody can
test guesses of it offline. Logging in puts a random session id in the cookie and in this
process's `OperatorSessions`; logging out forgets it, so a copy of the cookie taken before is
worth nothing after. Both live in the process: a restart ends every session, and replicas behind
one address need sticky sessions (or the API's bearer token).
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

# How long a log-in lasts (the cookie's max age too).
SESSION_SECONDS = 12 * 3600
# What reading never needs: the log-in itself, the style sheet, the readiness probe.
OPEN_PATHS = ("/login", "/logout", "/readyz")
OPEN_PREFIXES = ("/static/",)


def new_cookie_key() -> str:
    return secrets.token_urlsafe(32)


class OperatorSessions:
    """The logged-in sessions of this process, by id, each until it logs out or expires."""

    def __init__(self, lifetime: float = SESSION_SECONDS) -> None:
        self.lifetime = lifetime
        self._expiry: dict[str, float] = {}
        self._lock = threading.Lock()

    def open(self) -> str:
        session_id = secrets.token_urlsafe(32)
        now = time.monotonic()
        with self._lock:
            # Forget the expired ones as new ones come, so the table stays as small as the logged-in.
            for expired in [key for key, until in self._expiry.items() if until <= now]:
                del self._expiry[expired]
            self._expiry[session_id] = now + self.lifetime
        return session_id

    def is_open(self, session_id: object) -> bool:
        if not isinstance(session_id, str):
            return False
        with self._lock:
            until = self._expiry.get(session_id)
        return until is not None and until > time.monotonic()

    def close(self, session_id: object) -> None:
        if isinstance(session_id, str):
            with self._lock:
                self._expiry.pop(session_id, None)


def is_operator(request: Request) -> bool:
    """Whether this request's session logged in, and has not logged out since."""
    return request.app.state.sessions.is_open(request.session.get("operator"))


def bearer_token(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def has_token(request: Request) -> bool:
    """Whether the request gives the server's token as `Authorization: Bearer TOKEN`."""
    token = request.app.state.token
    given = bearer_token(request)
    return token is not None and given is not None and hmac.compare_digest(given.encode(), token.encode())


def is_open_path(path: str) -> bool:
    return path in OPEN_PATHS or path.startswith(OPEN_PREFIXES)


class LoginRequired:
    """With `require_login`, every path but the log-in's answers only a logged-in session or the
    bearer token: a page sends the browser to log in, the API and /metrics answer 401."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["app"].state.require_login and not is_open_path(scope["path"]):
            request = Request(scope)
            if not (is_operator(request) or has_token(request)):
                await refusal(request)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def refusal(request: Request) -> Response:
    path = request.url.path
    if path.startswith("/api/") or path == "/metrics" or request.method != "GET":
        return JSONResponse(
            {"error": "this dashboard requires a log-in to read: give its token as Authorization: Bearer TOKEN"},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
    wanted = path + (f"?{request.url.query}" if request.url.query else "")
    login = f"/login?{urlencode({'next': wanted})}"
    if request.headers.get("hx-request") == "true":
        # The live refresh (htmx) of a page whose log-in has ended: the whole page goes to log in,
        # rather than the log-in form being swapped into the page's region.
        return Response(status_code=200, headers={"HX-Redirect": login})
    return RedirectResponse(login, status_code=303)
