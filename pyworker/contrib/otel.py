"""OpenTelemetry tracing for taskpool (`pip install 'taskpool[otel]'`).

In the worker, a span per attempt: `instrument()` adds a middleware that runs every attempt in a
span named `<role> process`, with the role, the task's id, the attempt, the worker and, when the
handler is done, the outcome as attributes; an exception the handler raised is recorded on the
span. The span's parent is the trace that enqueued the task: an enqueue made inside a span
stores the W3C trace context (`traceparent`, `tracestate`) in the task's `headers`, and every
attempt of the task continues that trace. Follow-ups a handler returns (`Completion`) carry the
attempt's own context, so a chain reads as one trace.

    # myapp/tasks.py, loaded with --handlers myapp.tasks
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from pyworker.contrib import otel

    trace.set_tracer_provider(TracerProvider(...))   # the application's SDK and exporter
    otel.instrument()

On the enqueue side, `trace_headers()` is the current trace context as task headers;
`instrument()` also makes every `pyworker.Client` enqueue add them. Only the OpenTelemetry API is
needed here: with no SDK configured, the spans are no-ops.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from opentelemetry import context, propagate, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from pyworker import __version__, client, handlers
from pyworker.task import Task
from pyworker.errors import PermanentError, Snooze

TRACER_NAME = "pyworker"
# The headers a trace context travels in (W3C Trace Context); others in a task's headers are left alone.
TRACE_HEADERS = ("traceparent", "tracestate")


def trace_headers(ctx: context.Context | None = None) -> dict[str, str]:
    """The trace context (the current one by default) as task headers: {} outside any span."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=ctx)
    return {key: value for key, value in carrier.items() if key in TRACE_HEADERS}


def task_context(task: Task) -> context.Context:
    """The trace context the task's enqueue stored in its headers (an empty one if none)."""
    headers = getattr(task, "headers", None)
    if not isinstance(headers, Mapping):
        headers = {}
    return propagate.extract({key: value for key, value in headers.items() if isinstance(value, str)})


def attempt_outcome(task: Task, error: BaseException | None) -> str:
    """What the attempt's end will make of the task, as far as the handler's own outcome tells:
    completed, snoozed, aborted, retried (a retry is left) or failed."""
    if error is None:
        return "completed"
    if isinstance(error, Snooze):
        return "snoozed"
    if isinstance(error, handlers.Aborted) or task.abort.fired:
        return "aborted"
    if isinstance(error, PermanentError) or task.retry_count >= task.max_retries:
        return "failed"
    return "retried"


class TracingMiddleware:
    """The middleware `instrument()` adds: a span per attempt, a child of the enqueue's trace."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self.tracer = trace.get_tracer(TRACER_NAME, __version__, tracer_provider=tracer_provider)

    def __call__(self, task: Task, call_next: Callable[[Task], Any]) -> Any:
        span = self.tracer.start_span(
            f"{task.role} process",
            context=task_context(task),
            kind=SpanKind.CONSUMER,
            attributes={
                "messaging.system": "taskpool",
                "messaging.operation.type": "process",
                "messaging.destination.name": task.role,
                "messaging.message.id": str(task.id),
                "taskpool.role": task.role,
                "taskpool.task_id": task.id,
                "taskpool.attempt": task.attempt,
                "taskpool.worker_id": task.worker_id or "",
            },
        )
        ctx = trace.set_span_in_context(span)
        token = context.attach(ctx)
        try:
            result = call_next(task)
        except BaseException as error:
            _end(span, task, error)
            raise
        finally:
            context.detach(token)
        if inspect.isawaitable(result):
            return self._awaited(span, ctx, task, result)
        _end(span, task, None)
        return _with_trace(result, ctx)

    @staticmethod
    async def _awaited(span: Span, ctx: context.Context, task: Task, awaitable: Awaitable[Any]) -> Any:
        """An async handler's attempt: the span stays open, and current, until it is awaited."""
        token = context.attach(ctx)
        try:
            result = await awaitable
        except BaseException as error:
            _end(span, task, error)
            raise
        finally:
            context.detach(token)
        _end(span, task, None)
        return _with_trace(result, ctx)


def _end(span: Span, task: Task, error: BaseException | None) -> None:
    outcome = attempt_outcome(task, error)
    span.set_attribute("taskpool.outcome", outcome)
    if outcome in ("retried", "failed"):
        span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
    span.end()


def _with_trace(result: Any, ctx: context.Context) -> Any:
    """A Completion's follow-ups carry the attempt's trace (unless one carries a trace already)."""
    if not isinstance(result, handlers.Completion) or not isinstance(result.follow_ups, list):
        return result
    headers = trace_headers(ctx)
    if not headers:
        return result
    follow_ups = []
    for spec in result.follow_ups:
        if isinstance(spec, Mapping) and not _has_trace(spec.get("headers")):
            own = spec.get("headers") if isinstance(spec.get("headers"), Mapping) else {}
            spec = {**spec, "headers": {**own, **headers}}
        follow_ups.append(spec)
    return handlers.Completion(result=result.result, follow_ups=follow_ups)


def _has_trace(headers: Any) -> bool:
    return isinstance(headers, Mapping) and "traceparent" in headers


def add_trace_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """`headers` with the current trace context added, unless they carry one already: the
    enqueue hook `instrument()` installs on pyworker.Client."""
    headers = dict(headers or {})
    if not _has_trace(headers):
        headers.update(trace_headers())
    return headers


def trace_enqueue(spec: dict[str, Any]) -> None:
    """The pyworker.Client enqueue hook: the current trace context into the task's headers."""
    spec["headers"] = add_trace_headers(spec.get("headers"))


def instrument(
    registry: handlers.Registry = handlers.registry,
    tracer_provider: trace.TracerProvider | None = None,
) -> TracingMiddleware:
    """Trace every attempt the registry runs (once: a second call does nothing), and carry the
    current trace into every pyworker.Client enqueue. The middleware it added."""
    if trace_enqueue not in client.enqueue_hooks:
        client.enqueue_hooks.append(trace_enqueue)
    for existing in registry.middlewares:
        if isinstance(existing, TracingMiddleware):
            return existing
    middleware = TracingMiddleware(tracer_provider)
    # Outermost: the span covers the other middlewares' work too.
    registry.middleware(middleware, outermost=True)
    return middleware
