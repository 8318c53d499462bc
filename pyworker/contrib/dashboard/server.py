"""Serve the dashboard with uvicorn: what `pyworker dashboard` runs."""

from __future__ import annotations

# Starlette reads forms with python-multipart, imported only when a form arrives: imported here,
# its absence stops the command at start, naming the extra, not the first log-in.
import python_multipart  # noqa: F401
import uvicorn

from pyworker.contrib.dashboard.app import create_app


def serve(
    database_url: str, host: str, port: int, token: str | None, *, pooled: bool = False, require_login: bool = False
) -> None:
    """Serve until SIGINT or SIGTERM (uvicorn's handlers: requests under way finish first)."""
    uvicorn.run(
        create_app(database_url, token, pooled=pooled, require_login=require_login),
        host=host,
        port=port,
        log_level="info",
    )
