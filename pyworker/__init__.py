"""pyworker: the thin Python worker of taskpool.

It claims tasks through the SQL functions that the Sqitch plan deploys, runs the role's handler,
heartbeats while it runs and records the result; the queue's logic stays in PL/pgSQL.
"""

from typing import TYPE_CHECKING

# The one statement of the package's version: pyproject.toml reads it (dynamic = ["version"]).
__version__ = "0.6.0"

# What an application imports, from one place, each loaded on first use (the worker and the CLI
# need none of the client):
#   from pyworker import handler, Backoff, Task, Completion, PermanentError, Snooze  (a handler module)
#   from pyworker import Client, AsyncClient, TaskFailed, WaitTimeout                (enqueueing and waiting)
#   from pyworker import Database            (a package's own SQL class, on a handler's connection)
_EXPORTS = {
    "pyworker.task": ("Task",),
    "pyworker.db": ("Database",),
    "pyworker.handlers": (
        "handler", "middleware", "command", "Completion", "Aborted", "Registry", "registry", "Backoff",
        "current_task",
    ),
    "pyworker.errors": (
        "PermanentError", "Snooze", "TaskpoolError", "DatabaseUnavailable", "DatabaseReadOnly", "NotFound", "Refused",
        "ConfigurationError",
    ),
    "pyworker.client": (
        "Client", "AsyncClient", "TaskInfo", "ChainMember", "ClientError", "TaskFailed", "TaskCancelled",
        "TaskNotFound", "WaitTimeout", "enqueue_hooks",
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = ["__version__", *_MODULE_OF]

# The same names for type checkers (py.typed), which do not run __getattr__: through it each
# would be Any. tests/test_public_api.py checks that this list and _EXPORTS agree.
if TYPE_CHECKING:
    # `import X as X`: an explicit re-export (a computed __all__ is opaque to type checkers).
    from pyworker.client import AsyncClient as AsyncClient
    from pyworker.client import ChainMember as ChainMember
    from pyworker.client import Client as Client
    from pyworker.client import ClientError as ClientError
    from pyworker.client import TaskCancelled as TaskCancelled
    from pyworker.client import TaskFailed as TaskFailed
    from pyworker.client import TaskInfo as TaskInfo
    from pyworker.client import TaskNotFound as TaskNotFound
    from pyworker.client import WaitTimeout as WaitTimeout
    from pyworker.client import enqueue_hooks as enqueue_hooks
    from pyworker.task import Task as Task
    from pyworker.db import Database as Database
    from pyworker.errors import ConfigurationError as ConfigurationError
    from pyworker.errors import DatabaseReadOnly as DatabaseReadOnly
    from pyworker.errors import DatabaseUnavailable as DatabaseUnavailable
    from pyworker.errors import NotFound as NotFound
    from pyworker.errors import PermanentError as PermanentError
    from pyworker.errors import Refused as Refused
    from pyworker.errors import Snooze as Snooze
    from pyworker.errors import TaskpoolError as TaskpoolError
    from pyworker.handlers import Aborted as Aborted
    from pyworker.handlers import Backoff as Backoff
    from pyworker.handlers import Completion as Completion
    from pyworker.handlers import Registry as Registry
    from pyworker.handlers import command as command
    from pyworker.handlers import current_task as current_task
    from pyworker.handlers import handler as handler
    from pyworker.handlers import middleware as middleware
    from pyworker.handlers import registry as registry


def __getattr__(name: str) -> object:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'pyworker' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
