"""Handlers: what runs a task of each role, and the middlewares around every attempt.

A handler is a plain function `handle(task) -> dict | None`, registered for a role:

    from pyworker.handlers import handler

    @handler("product_resync")
    def resync(task):
        ...
        return {"products": 118}

It lives in the user's own module, loaded with `--handlers myapp.tasks`, or in any installed
package that names it in the `pyworker.handlers` entry-point group. Raise PermanentError to fail
the task now, Snooze(seconds) to put it back without spending a retry; any other exception is
retried with the role's backoff. `task.abort` fires when the attempt must stop (cancelled, lost,
timed out, shutdown): a long handler should poll it (`task.abort.fired`) or wait on it.

A role can instead be bound to an external command (`command(role, argv)`, or `--command`):
pyworker/command_protocol.py runs it, as docs/commands.md describes. This module never imports
the protocol (which imports this one): it finds the protocol's handler class through the
`pyworker.command_protocol` entry point, so that the dependency goes one way only.
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from pyworker.db import Task
from pyworker.errors import ConfigurationError

Handler = Callable[[Task], Any]
Middleware = Callable[[Task, Callable[[Task], Any]], Any]
CommandHandlerFactory = Callable[[Sequence[str]], Handler]

ENTRY_POINT_GROUP = "pyworker.handlers"

# The task whose attempt is running in this context; log records carry its id.
current_task: contextvars.ContextVar[Task | None] = contextvars.ContextVar(
    "current_task", default=None
)

# The hook through which the command protocol plugs in: the entry point `handler` of this group
# names what turns a command line into a handler (pyproject.toml: pyworker.command_protocol's
# CommandHandler).
COMMAND_PROTOCOL_ENTRY_POINT_GROUP = "pyworker.command_protocol"


@functools.cache
def command_handler_factory() -> CommandHandlerFactory:
    """The installed command protocol's handler factory; ConfigurationError when none is."""
    found = entry_points(group=COMMAND_PROTOCOL_ENTRY_POINT_GROUP, name="handler")
    if not found:
        raise ConfigurationError(
            "cannot bind a role to a command: no command protocol is installed (no entry point"
            f" 'handler' in group {COMMAND_PROTOCOL_ENTRY_POINT_GROUP}); reinstall taskpool-pg"
        )
    factory: CommandHandlerFactory = next(iter(found)).load()
    return factory


# What must not outlive a worker that exits at once (a second signal, then os._exit): each hook
# kills what a plugin started outside the process. The command protocol's children, for one.
_exit_now_hooks: list[Callable[[], None]] = []


def on_exit_now(hook: Callable[[], None]) -> Callable[[], None]:
    """Decorator: call `hook` when the worker exits at once."""
    _exit_now_hooks.append(hook)
    return hook


def exiting_now() -> None:
    """Call every exit-now hook (the worker does, right before os._exit)."""
    for hook in list(_exit_now_hooks):
        hook()


@dataclass
class Completion:
    """A handler's return value when the task should also enqueue follow-up tasks.

    follow_ups are specs as enqueue_tasks takes them; they are enqueued in the transaction that
    completes the task, so a chain link is never lost.
    """

    result: Any = None
    follow_ups: list[dict[str, Any]] = field(default_factory=list)


class Aborted(Exception):
    """The attempt was aborted before its handler finished."""

    def __init__(self, reason: str | None) -> None:
        super().__init__(f"aborted: {reason}")
        self.reason = reason


class Registry:
    """Handlers by role, and the middlewares that wrap every attempt (first added, outermost)."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}
        self._middlewares: list[Middleware] = []

    def handler(self, role: str) -> Callable[[Handler], Handler]:
        """Decorator: `fn` handles the tasks of `role`."""

        def register(fn: Handler) -> Handler:
            self.register(role, fn)
            return fn

        return register

    def register(self, role: str, fn: Handler) -> None:
        if role in self._handlers and self._handlers[role] is not fn:
            raise ConfigurationError(f"role {role!r} already has a handler: {self._handlers[role]!r}")
        self._handlers[role] = fn

    def command(self, role: str, argv: Sequence[str]) -> None:
        """Bind `role` to an external command, in place of any handler it had (--command is the
        worker's explicit choice: it wins over a handler an installed package registered)."""
        self._handlers[role] = command_handler_factory()(argv)

    def middleware(self, fn: Middleware, *, outermost: bool = False) -> Middleware:
        """Decorator: `fn(task, call_next)` wraps every attempt: inside those added before it,
        or with `outermost`, around all of them."""
        if outermost:
            self._middlewares.insert(0, fn)
        else:
            self._middlewares.append(fn)
        return fn

    @property
    def middlewares(self) -> tuple[Middleware, ...]:
        """The middlewares, outermost first."""
        return tuple(self._middlewares)

    def get(self, role: str) -> Handler | None:
        return self._handlers.get(role)

    @property
    def roles(self) -> list[str]:
        return sorted(self._handlers)

    def run(self, task: Task) -> Any:
        """Run the role's handler for `task` through the middlewares."""
        handler = self._handlers.get(task.role)
        if handler is None:
            raise ConfigurationError(f"no handler for role {task.role!r}")

        def call(index: int, task: Task) -> Any:
            if index == len(self._middlewares):
                return handler(task)
            return self._middlewares[index](task, lambda t: call(index + 1, t))

        return call(0, task)


registry = Registry()
handler = registry.handler
command = registry.command
middleware = registry.middleware


def load(modules: Iterable[str], target: Registry = registry) -> None:
    """Import the handler modules named, then those of the `pyworker.handlers` entry points.

    The working directory comes first on the import path, as it does for `python -m` (and for
    celery's and rq's workers): `pyworker --handlers tasks` run beside tasks.py finds it, though
    the console script's own directory is all Python puts there. An entry point may name a
    module (importing it registers its handlers) or a callable that takes the registry.
    """
    working_directory = os.getcwd()
    if working_directory not in sys.path and "" not in sys.path:
        sys.path.insert(0, working_directory)
    for name in modules:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name is not None and (name == error.name or name.startswith(f"{error.name}.")):
                raise ConfigurationError(_not_found(name, error.name)) from error
            raise ConfigurationError(f"cannot import handler module {name!r}: {error}") from error
        except ImportError as error:
            raise ConfigurationError(f"cannot import handler module {name!r}: {error}") from error
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = entry_point.load()
            if callable(loaded):
                loaded(target)
        except ConfigurationError:
            raise
        except Exception as error:
            dist = getattr(entry_point, "dist", None)
            package = f"{dist.name} {dist.version}" if dist is not None else "an installed package"
            raise ConfigurationError(
                f"cannot load the handlers of entry point {entry_point.name!r} ({entry_point.value},"
                f" from {package}, group {ENTRY_POINT_GROUP}): {type(error).__name__}: {error}"
            ) from error


def _not_found(name: str, missing: str) -> str:
    """Where Python looked for a handler module it did not find, and how to point it there."""
    searched = ", ".join(entry or os.getcwd() for entry in sys.path)
    return (
        f"cannot import handler module {name!r}: no module {missing!r} in the working directory"
        f" or on the import path (searched: {searched}); run the worker from the directory that"
        " holds it, or add that directory to PYTHONPATH"
    )
