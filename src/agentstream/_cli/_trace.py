"""``--trace`` of the CLI: trace with OpenTelemetry and print span trees on stderr.

``agentstream run --trace`` prints the run's tree at the end (`TraceRecorder`); ``agentstream serve
--trace`` prints each run's (each request's) tree as it ends (`trace_each_run`), in the same format.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from ._errors import CLIError

__all__ = ["TraceRecorder", "trace_each_run"]

_NEEDS_SDK = "--trace needs the OpenTelemetry SDK: pip install 'agentstream[otel]' opentelemetry-sdk"


def _provider() -> Any:
    try:
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError as exc:
        raise CLIError(_NEEDS_SDK) from exc
    return TracerProvider()


class TraceRecorder:
    """Spans of this process kept in memory (the OpenTelemetry SDK), for `print_tree` at the end."""

    def __init__(self) -> None:
        self.provider: Any = _provider()
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from agentstream import instrument

        self.exporter: Any = InMemorySpanExporter()
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


def trace_each_run(out: TextIO | None = None, *, include_content: bool = False) -> Any:
    """Trace every agent of this process; each finished tree is written to ``out`` (stderr). Returns
    the tracer provider (``shutdown()`` writes what is still unfinished). ``include_content``: the
    spans carry prompts and answers (for the app's recorder on the same provider; the tree shows
    names only)."""
    provider = _provider()
    from agentstream import instrument

    from ._trace_printer import TreePrinter

    provider.add_span_processor(TreePrinter(out))
    instrument(provider, include_content=include_content)
    return provider
