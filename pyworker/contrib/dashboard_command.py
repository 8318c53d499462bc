"""`pyworker dashboard`: the command that serves the dashboard, added to `pyworker` through the
`pyworker.commands` entry point (pyproject.toml) like any package's command, so that the CLI never
imports the dashboard; the dashboard extra's modules load only when the command runs.
"""

from __future__ import annotations

import importlib
import ipaddress

import click

from pyworker.admin import Settings, pass_settings


def is_loopback(host: str) -> bool:
    """Whether listening on `host` reaches only this machine (localhost, 127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        # A host name: it may resolve to any interface.
        return False


# The modules of the `dashboard` extra (pyproject.toml): a missing one is named with the extra.
DASHBOARD_MODULES = {"starlette", "uvicorn", "jinja2", "python_multipart", "itsdangerous"}


@click.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Listen on this address (0.0.0.0: every interface).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8080,
    show_default=True,
    help="Listen on this port (0: any free one; the log line says which).",
)
@click.option(
    "--token",
    envvar="TASKPOOL_DASHBOARD_TOKEN",
    show_envvar=True,
    metavar="SECRET",
    help="Turn the actions on (cancel, retry, run or switch a schedule) for whoever logs in with"
    " this secret, and for API calls that give it as a bearer token. Without it: read-only.",
)
@click.option(
    "--require-login/--no-require-login",
    default=None,
    envvar="TASKPOOL_DASHBOARD_REQUIRE_LOGIN",
    show_envvar=True,
    help="Reading needs a log-in too (pages; the API and /metrics take the token as a bearer"
    " token), and so a --token. Default: on when --host is not a loopback address.",
)
@pass_settings
def dashboard(
    settings: Settings, host: str, port: int, token: str | None, require_login: bool | None
) -> None:
    """Serve the dashboard: the pool per role, tasks, workers, schedules, platforms, health.

    Every page is also JSON under /api/ (docs/dashboard.md). Needs the dashboard extra:
    pip install 'taskpool-pg[dashboard]' (`make deps` installs it). Stops on SIGINT or SIGTERM.
    """
    if token is not None and not token.strip():
        raise click.BadParameter("the token must not be empty or blank", param_hint="'--token'")
    if require_login is None:
        require_login = not is_loopback(host)
    if require_login and token is None:
        raise click.UsageError(
            "reading requires a log-in (--require-login, the default when --host is not a loopback"
            " address) and there is no token to log in with: give --token (or TASKPOOL_DASHBOARD_TOKEN),"
            " or --no-require-login to let whoever reaches the port read every page"
        )
    try:
        server = importlib.import_module("pyworker.contrib.dashboard.server")
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] not in DASHBOARD_MODULES:
            raise
        raise click.ClickException(
            f"the dashboard needs the dashboard extra, and {error.name} is not installed:"
            " pip install 'taskpool-pg[dashboard]' (in a taskpool checkout: make deps)"
        ) from error
    # Refuse to serve a database pyworker cannot read, as a worker does.
    settings.db.check_schema()
    settings.close()
    server.serve(settings.database_url, host, port, token, pooled=settings.pooled, require_login=require_login)
