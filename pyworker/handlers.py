"""Handlers: what runs a task of each role, and the middlewares around every attempt.

A handler is a plain function `handle(task) -> dict | None`, registered for a role:

    from pyworker.handlers import handler

    @handler("product_resync")
    def resync(task):
        ...
        return {"products": 118}

It lives in the user's own module, loaded with `--handlers myapp.tasks`, or in any installed
package that names it in the `pyworker.handlers` entry-point group.

The decorator also declares the role: its settings (those of task_roles) beside its handler, and
the type of its payload, which the handler then receives as a second argument:

    @handler("send_welcome", max_retries=5, stale_threshold="5 min", run_timeout=timedelta(minutes=1),
             backoff=Backoff(base="10 s", cap="10 min"), requires_store=False, payload_type=Welcome)
    def send_welcome(task, welcome: Welcome):
        ...

`pyworker roles sync --handlers myapp.tasks` applies the declarations to the database (a setting
not named is not declared: a new role takes its default, an existing one keeps its value), and a
starting worker compares them with the database's (pyworker/admin/declarations.py, docs/worker.md). Raise PermanentError to fail
the task now, Snooze(seconds) to put it back without spending a retry; any other exception is
retried with the role's backoff. `task.abort` fires when the attempt must stop (cancelled, lost,
timed out, shutdown): a long handler should poll it (`task.abort.fired`) or wait on it.

A role can instead be bound to an external command (`command(role, argv)`, or `--command`):
pyworker/contrib/commands.py runs it, as docs/commands.md describes. This module never imports
the protocol (which imports this one): it finds the protocol's handler class through the
`pyworker.command_protocol` entry point, so that the dependency goes one way only.
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from importlib.metadata import entry_points
from typing import Any, Literal, TypeVar

from pyworker.task import Task
from pyworker.errors import ConfigurationError, PermanentError

Handler = Callable[[Task], Any]
Middleware = Callable[[Task, Callable[[Task], Any]], Any]
CommandHandlerFactory = Callable[[Sequence[str]], Handler]
# What a decorator registers, of its own type: the decorated function keeps its signature (its
# return type, sync or async) for the type checker. A handler takes the task, and with a declared
# payload type the payload after it.
HandlerT = TypeVar("HandlerT", bound=Handler | Callable[[Task, Any], Any])
MiddlewareT = TypeVar("MiddlewareT", bound=Middleware)
# An interval as PostgreSQL reads it ('5 min', '1 hour 30 minutes') or a timedelta.
Interval = str | timedelta
Jitter = Literal["full", "equal", "none"]
# Where the decorator leaves a handler's declaration, for Client.enqueue(handler, payload).
DECLARATION_ATTRIBUTE = "__taskpool_declaration__"

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


@dataclass(frozen=True)
class Backoff:
    """How a role's failed attempts wait for their retry: `base` before the first, times
    `multiplier` for each further one, up to `cap`, spread by `jitter` (full, equal or none):
    task_roles' backoff_* columns. A field left None is not declared."""

    base: Interval | None = None
    cap: Interval | None = None
    multiplier: float | None = None
    jitter: Jitter | None = None


@dataclass(frozen=True)
class RoleDeclaration:
    """What a handler declares about its role: the settings it names (None: not declared) and
    the type of its payload; `module`, where it was declared (the module of `pyworker roles sync
    --handlers`)."""

    role: str
    module: str
    description: str | None = None
    max_retries: int | None = None
    stale_threshold: Interval | None = None
    run_timeout: Interval | None = None
    backoff: Backoff | None = None
    max_payload_bytes: int | None = None
    requires_store: bool | None = None
    payload_type: type | None = None

    def __post_init__(self) -> None:
        where = f"@handler({self.role!r})"
        if not isinstance(self.role, str):
            raise ConfigurationError(f"@handler: the role must be a string, not {self.role!r}")
        backoff = self.backoff if self.backoff is not None else Backoff()
        if not isinstance(backoff, Backoff):
            raise ConfigurationError(f"{where}: backoff must be a pyworker.handlers.Backoff, not {backoff!r}")
        expected: list[tuple[str, Any, tuple[type, ...], str]] = [
            ("description", self.description, (str,), "a string"),
            ("max_retries", self.max_retries, (int,), "an integer"),
            ("max_payload_bytes", self.max_payload_bytes, (int,), "an integer"),
            ("requires_store", self.requires_store, (bool,), "True or False"),
            ("stale_threshold", self.stale_threshold, (str, timedelta), "an interval (a string or a timedelta)"),
            ("run_timeout", self.run_timeout, (str, timedelta), "an interval (a string or a timedelta)"),
            ("backoff.base", backoff.base, (str, timedelta), "an interval (a string or a timedelta)"),
            ("backoff.cap", backoff.cap, (str, timedelta), "an interval (a string or a timedelta)"),
            ("backoff.multiplier", backoff.multiplier, (int, float), "a number"),
        ]
        for name, value, types, what in expected:
            if value is None:
                continue
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                raise ConfigurationError(f"{where}: {name} must be {what}, not {value!r}")
        if backoff.jitter is not None and backoff.jitter not in ("full", "equal", "none"):
            raise ConfigurationError(f"{where}: backoff.jitter must be 'full', 'equal' or 'none', not {backoff.jitter!r}")
        if self.payload_type is not None:
            # Typed payloads (and dacite) load only for a handler that declares one.
            from pyworker import payloads

            payloads.check_payload_type(self.payload_type, self.role)


def declaration_of(fn: Any) -> RoleDeclaration | None:
    """The role declaration @handler attached to `fn`, or None."""
    return getattr(fn, DECLARATION_ATTRIBUTE, None)


def _with_typed_payload(fn: Callable[..., Any], payload_type: type) -> Handler:
    """`fn(task, payload)` as a handler of the task alone: the payload read as `payload_type`
    first, a payload that does not fit failing the attempt for good (PermanentError)."""
    from pyworker import payloads

    def typed(task: Task) -> Any:
        try:
            return payloads.load(payload_type, task.payload)
        except payloads.PayloadMismatch as error:
            raise PermanentError(str(error)) from None

    if inspect.iscoroutinefunction(fn):

        async def run_async(task: Task) -> Any:
            return await fn(task, typed(task))

        return functools.wraps(fn)(run_async)

    def run(task: Task) -> Any:
        return fn(task, typed(task))

    return functools.wraps(fn)(run)


class Aborted(Exception):
    """The attempt was aborted before its handler finished."""

    def __init__(self, reason: str | None) -> None:
        super().__init__(f"aborted: {reason}")
        self.reason = reason


class Registry:
    """Handlers by role, and the middlewares that wrap every attempt (first added, outermost)."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}
        self._declarations: dict[str, RoleDeclaration] = {}
        # The function each declaration came with (the handler, before any typed payload wrapper).
        self._declared: dict[str, Callable[..., Any]] = {}
        self._middlewares: list[Middleware] = []

    def handler(
        self,
        role: str,
        *,
        description: str | None = None,
        max_retries: int | None = None,
        stale_threshold: Interval | None = None,
        run_timeout: Interval | None = None,
        backoff: Backoff | None = None,
        max_payload_bytes: int | None = None,
        requires_store: bool | None = None,
        payload_type: type | None = None,
    ) -> Callable[[HandlerT], HandlerT]:
        """Decorator: `fn` handles the tasks of `role`, and declares the role with the settings
        given (RoleDeclaration). With `payload_type`, `fn(task, payload)` gets the payload as an
        instance of it. The function is returned unchanged."""

        def register(fn: HandlerT) -> HandlerT:
            declaration = RoleDeclaration(
                role,
                module=getattr(fn, "__module__", None) or "__main__",
                description=description,
                max_retries=max_retries,
                stale_threshold=stale_threshold,
                run_timeout=run_timeout,
                backoff=backoff,
                max_payload_bytes=max_payload_bytes,
                requires_store=requires_store,
                payload_type=payload_type,
            )
            self.declare(declaration, fn)
            try:
                setattr(fn, DECLARATION_ATTRIBUTE, declaration)
            except (AttributeError, TypeError):
                pass  # a callable that takes no attribute: it cannot be enqueued by, only by its role
            return fn

        return register

    def declare(self, declaration: RoleDeclaration, fn: Callable[..., Any]) -> None:
        """Register `fn` for the declaration's role, with the declaration (what @handler does).
        The same function declared the same way again changes nothing; anything else declaring
        the role again is refused, naming both places."""
        role = declaration.role
        known = self._declarations.get(role)
        if known is not None:
            if known == declaration and self._declared[role] is fn:
                return
            raise ConfigurationError(f"role {role!r} is declared twice: in {known.module} and in {declaration.module}")
        self.register(role, fn if declaration.payload_type is None else _with_typed_payload(fn, declaration.payload_type))
        self._declarations[role] = declaration
        self._declared[role] = fn

    def declaration(self, role: str) -> RoleDeclaration | None:
        """The role's declaration, when a handler declared it (@handler)."""
        return self._declarations.get(role)

    @property
    def declarations(self) -> list[RoleDeclaration]:
        """Every role declared, by name."""
        return [self._declarations[role] for role in sorted(self._declarations)]

    def register(self, role: str, fn: Handler) -> None:
        if role in self._handlers and self._handlers[role] is not fn:
            raise ConfigurationError(f"role {role!r} already has a handler: {self._handlers[role]!r}")
        self._handlers[role] = fn

    def command(self, role: str, argv: Sequence[str]) -> None:
        """Bind `role` to an external command, in place of any handler it had (--command is the
        worker's explicit choice: it wins over a handler an installed package registered)."""
        self._handlers[role] = command_handler_factory()(argv)

        self._declarations.pop(role, None)
        self._declared.pop(role, None)

    def middleware(self, fn: MiddlewareT, *, outermost: bool = False) -> MiddlewareT:
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
