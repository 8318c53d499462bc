"""Handlers for tests/test_otel.py's worker process: an OpenTelemetry SDK whose spans go, one JSON
line each, to the file OTEL_SPANS_FILE names, and pyworker.contrib.otel instrumenting the registry."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from pyworker.contrib import otel
from pyworker import Task
from pyworker.handlers import Completion, handler


class JsonLinesExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a") as out:
            for span in spans:
                out.write(json.dumps({
                    "name": span.name,
                    "trace_id": f"{span.context.trace_id:032x}",
                    "span_id": f"{span.context.span_id:016x}",
                    "parent_span_id": None if span.parent is None else f"{span.parent.span_id:016x}",
                    "attributes": dict(span.attributes),
                }) + "\n")
        return SpanExportResult.SUCCESS


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(os.environ["OTEL_SPANS_FILE"])))
trace.set_tracer_provider(provider)
otel.instrument()


@handler("test_traced")
def traced(task: Task) -> Completion:
    follow_ups = [{"role": "test_traced", "payload": {"last": True}}] if not task.payload.get("last") else []
    return Completion(result={"headers": task.headers}, follow_ups=follow_ups)
