"""pyworker: the thin Python worker of taskpool.

It claims tasks through the SQL functions that the Sqitch plan deploys, runs the role's handler,
heartbeats while it runs and records the result; the queue's logic stays in PL/pgSQL.
"""

# The one statement of the package's version: pyproject.toml reads it (dynamic = ["version"]).
__version__ = "0.6.0"

# The application-side client (pyworker/client.py), importable from the package:
#   from pyworker import Client, AsyncClient, TaskFailed, TaskCancelled, WaitTimeout
# Loaded on first use, so that the worker and the CLI do not import it.
_CLIENT_NAMES = frozenset(
    {"Client", "AsyncClient", "TaskInfo", "ChainMember", "ClientError", "TaskFailed", "TaskCancelled",
     "TaskNotFound", "WaitTimeout", "enqueue_hooks"}
)


def __getattr__(name: str):  # noqa: ANN202 - PEP 562 module attribute hook
    if name in _CLIENT_NAMES:
        from pyworker import client

        return getattr(client, name)
    raise AttributeError(f"module 'pyworker' has no attribute {name!r}")
