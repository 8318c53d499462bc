"""pyworker.contrib.otel: a span per attempt, a child of the trace that enqueued the task, with the role,
task id, attempt and outcome; follow-ups carry the attempt's trace. In-process, through a
Registry and the OpenTelemetry SDK's in-memory exporter.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from pyworker import Client, testing
from pyworker.contrib import otel
from pyworker import client as client_module
from pyworker import Task
from pyworker.errors import PermanentError, Snooze
from pyworker.handlers import Completion, Registry
from worker_support import Workers, fetch_one, wait_for, wait_for_status


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


@pytest.fixture
def registry(provider: TracerProvider) -> Registry:
    registry = Registry()
    otel.instrument(registry, tracer_provider=provider)
    return registry


def make_task(role: str = "traced", *, headers: dict[str, str] | None = None, retry_count: int = 0) -> Task:
    return testing.make_task(
        role, id=42, worker_id="w-otel", attempt=retry_count + 1, retry_count=retry_count, headers=headers
    )


def enqueued_in_a_span(provider: TracerProvider) -> tuple[dict[str, str], Any]:
    """The headers an enqueue inside a span stores, and that span's context."""
    tracer = provider.get_tracer("the-app")
    with tracer.start_as_current_span("enqueue a resync") as span:
        headers = otel.add_trace_headers(None)
    return headers, span.get_span_context()


def test_an_attempt_is_a_span_in_the_trace_of_its_enqueue(
    registry: Registry, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    registry.register("traced", lambda task: {"ok": True})
    headers, enqueue = enqueued_in_a_span(provider)
    assert set(headers) == {"traceparent"}

    assert registry.run(make_task(headers=headers)) == {"ok": True}

    attempt = next(span for span in exporter.get_finished_spans() if span.name == "traced process")
    assert attempt.kind == SpanKind.CONSUMER
    assert attempt.context.trace_id == enqueue.trace_id
    assert attempt.parent.span_id == enqueue.span_id
    assert dict(attempt.attributes) == {
        "messaging.system": "taskpool",
        "messaging.operation.type": "process",
        "messaging.destination.name": "traced",
        "messaging.message.id": "42",
        "taskpool.role": "traced",
        "taskpool.task_id": 42,
        "taskpool.attempt": 1,
        "taskpool.worker_id": "w-otel",
        "taskpool.outcome": "completed",
    }
    assert attempt.status.status_code == StatusCode.UNSET


def test_a_task_enqueued_outside_any_trace_starts_its_own(
    registry: Registry, exporter: InMemorySpanExporter
) -> None:
    assert otel.trace_headers() == {}
    registry.register("traced", lambda task: None)
    registry.run(make_task())
    (attempt,) = exporter.get_finished_spans()
    assert attempt.parent is None


@pytest.mark.parametrize(
    ("error", "retry_count", "outcome", "status"),
    [
        (ValueError("the platform answered 503"), 0, "retried", StatusCode.ERROR),
        (ValueError("the platform answered 503"), 3, "failed", StatusCode.ERROR),
        (PermanentError("the store is closed"), 0, "failed", StatusCode.ERROR),
        (Snooze(30), 0, "snoozed", StatusCode.UNSET),
    ],
)
def test_the_span_says_how_the_attempt_ended(
    registry: Registry,
    exporter: InMemorySpanExporter,
    error: BaseException,
    retry_count: int,
    outcome: str,
    status: StatusCode,
) -> None:
    def handler(task: Task) -> None:
        raise error

    registry.register("traced", handler)
    with pytest.raises(type(error)):
        registry.run(make_task(retry_count=retry_count))
    (attempt,) = exporter.get_finished_spans()
    assert attempt.attributes["taskpool.outcome"] == outcome
    assert attempt.status.status_code == status
    assert [event.name for event in attempt.events] == (["exception"] if status == StatusCode.ERROR else [])


def test_an_aborted_attempt_is_marked_aborted(registry: Registry, exporter: InMemorySpanExporter) -> None:
    from pyworker.handlers import Aborted

    def handler(task: Task) -> None:
        task.abort.fire("cancelled")
        raise Aborted(task.abort.reason)

    registry.register("traced", handler)
    with pytest.raises(Aborted):
        registry.run(make_task())
    (attempt,) = exporter.get_finished_spans()
    assert attempt.attributes["taskpool.outcome"] == "aborted"


def test_an_async_handler_is_traced_until_it_is_awaited(
    registry: Registry, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    seen: list[int] = []

    async def handler(task: Task) -> dict[str, Any]:
        await asyncio.sleep(0)
        # The attempt's span is current while the coroutine runs: the handler's own spans nest.
        with provider.get_tracer("the-app").start_as_current_span("fetch the menu") as inner:
            seen.append(inner.parent.span_id)
        return {"async": True}

    registry.register("traced", handler)
    headers, enqueue = enqueued_in_a_span(provider)
    pending = registry.run(make_task(headers=headers))
    assert not [span for span in exporter.get_finished_spans() if span.name == "traced process"]
    assert asyncio.run(pending) == {"async": True}
    attempt = next(span for span in exporter.get_finished_spans() if span.name == "traced process")
    assert attempt.parent.span_id == enqueue.span_id
    assert seen == [attempt.context.span_id]
    assert attempt.attributes["taskpool.outcome"] == "completed"


def test_follow_ups_carry_the_attempt_trace(registry: Registry, exporter: InMemorySpanExporter) -> None:
    registry.register(
        "traced",
        lambda task: Completion(
            result={"ok": True},
            follow_ups=[{"role": "next"}, {"role": "other", "headers": {"tenant": "a"}}],
        ),
    )
    completion = registry.run(make_task())
    (attempt,) = exporter.get_finished_spans()
    context = attempt.context
    traceparent = f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
    assert completion.follow_ups == [
        {"role": "next", "headers": {"traceparent": traceparent}},
        {"role": "other", "headers": {"tenant": "a", "traceparent": traceparent}},
    ]


def test_instrument_twice_traces_once(registry: Registry, provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    again = otel.instrument(registry, tracer_provider=provider)
    assert registry.middlewares.count(again) == 1 and len(registry.middlewares) == 1
    registry.register("traced", lambda task: None)
    registry.run(make_task())
    assert len(exporter.get_finished_spans()) == 1


def test_a_real_worker_continues_the_trace_of_an_enqueue_made_in_a_span(
    pool: psycopg.Connection, workers: Workers, db_url: str, tmp_path: Path, provider: TracerProvider
) -> None:
    """The trace goes from the application's span, through the task's headers in the database, to
    the attempt's span in another process, and on to the follow-up the handler returned."""
    otel.instrument(Registry(), tracer_provider=provider)
    try:
        spans_file = tmp_path / "spans.jsonl"
        with psycopg.connect(db_url) as app, provider.get_tracer("the-app").start_as_current_span("sign-up") as span:
            task_id = Client(app).enqueue("test_traced", {"first": True}).id
            app.commit()
        enqueue = span.get_span_context()
    finally:
        client_module.enqueue_hooks.remove(otel.trace_enqueue)

    stored = fetch_one(pool, "SELECT headers FROM worker_tasks WHERE id = %s", (task_id,))[0]
    assert stored == {"traceparent": f"00-{enqueue.trace_id:032x}-{enqueue.span_id:016x}-{int(enqueue.trace_flags):02x}"}

    workers.start("test_traced", "traced", handlers="otel_handlers", extra_env={"OTEL_SPANS_FILE": str(spans_file)})
    wait_for_status(pool, task_id, "completed", timeout=30)
    follow_up = wait_for(
        lambda: fetch_one(pool, "SELECT id FROM worker_tasks WHERE parent_id = %s AND status = 'completed'", (task_id,)),
        30,
        "the follow-up completed",
    )[0]
    spans = wait_for(
        lambda: spans_file.exists() and [json.loads(line) for line in spans_file.read_text().splitlines()][:2],
        10,
        "two spans exported",
    )
    by_task = {span["attributes"]["taskpool.task_id"]: span for span in spans}
    first, second = by_task[task_id], by_task[follow_up]
    assert first["name"] == "test_traced process"
    assert first["trace_id"] == f"{enqueue.trace_id:032x}"
    assert first["parent_span_id"] == f"{enqueue.span_id:016x}"
    assert first["attributes"]["taskpool.outcome"] == "completed"
    assert first["attributes"]["taskpool.worker_id"] == "traced"
    # The follow-up's attempt: the same trace, a child of the attempt that returned it.
    assert second["trace_id"] == first["trace_id"]
    assert second["parent_span_id"] == first["span_id"]
