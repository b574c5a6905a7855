"""``agentstream run --trace``: trace the run with OpenTelemetry and print its span tree on stderr."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from ._errors import CLIError

__all__ = ["TraceRecorder"]


class TraceRecorder:
    """Spans of this process kept in memory (the OpenTelemetry SDK), for `print_tree` at the end."""

    def __init__(self) -> None:
        try:
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        except ImportError as exc:
            raise CLIError(
                "--trace needs the OpenTelemetry SDK: pip install 'agentstream[otel]' opentelemetry-sdk"
            ) from exc
        from agentstream import instrument

        self.exporter: Any = InMemorySpanExporter()
        self.provider: Any = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        instrument(self.provider)

    def print_tree(self, out: TextIO | None = None) -> None:
        """Stop tracing and write the span tree of everything traced so far."""
        from agentstream import instrument
        from agentstream.tracing import format_span_tree

        instrument(enabled=False)
        self.provider.shutdown()
        out = out or sys.stderr
        out.write("[trace]\n" + format_span_tree(self.exporter.get_finished_spans()))
        out.flush()
