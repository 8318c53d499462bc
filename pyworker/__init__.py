"""pyworker: the thin Python worker of taskpool.

It claims tasks through the SQL functions that the Sqitch plan deploys, runs the role's handler,
heartbeats while it runs and records the result; the queue's logic stays in PL/pgSQL.
"""

# The one statement of the package's version: pyproject.toml reads it (dynamic = ["version"]).
__version__ = "0.6.0"

# What an application imports, from one place, each loaded on first use (the worker and the CLI
# need none of the client):
#   from pyworker import handler, Backoff, Completion, PermanentError, Snooze  (a handler module)
#   from pyworker import Client, AsyncClient, TaskFailed, WaitTimeout    (enqueueing and waiting)
_EXPORTS = {
    "pyworker.handlers": (
        "handler", "middleware", "command", "Completion", "Aborted", "Registry", "registry", "Backoff",
    ),
    "pyworker.errors": ("PermanentError", "Snooze", "TaskpoolError", "DatabaseUnavailable", "DatabaseReadOnly"),
    "pyworker.client": (
        "Client", "AsyncClient", "TaskInfo", "ChainMember", "ClientError", "TaskFailed", "TaskCancelled",
        "TaskNotFound", "WaitTimeout", "enqueue_hooks",
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = ["__version__", *_MODULE_OF]


def __getattr__(name: str):  # noqa: ANN202 - PEP 562 module attribute hook
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'pyworker' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
