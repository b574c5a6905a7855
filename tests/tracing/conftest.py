"""An SDK tracer provider with an in-memory exporter per test, and a span-tree reader."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentstream.tracing import InstrumentationSettings, instrument


class Spans:
    """The finished spans of one test, read as a tree."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def settings(self, include_content: bool = False) -> InstrumentationSettings:
        return InstrumentationSettings(tracer_provider=self.provider, include_content=include_content)

    @property
    def finished(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> ReadableSpan:
        matches = [s for s in self.finished if s.name == name]
        assert len(matches) == 1, f"{len(matches)} spans named {name!r}: {[s.name for s in self.finished]}"
        return matches[0]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        assert parent.context is not None
        kids = [
            s for s in self.finished if s.parent is not None and s.parent.span_id == parent.context.span_id
        ]
        return sorted(kids, key=lambda s: s.start_time or 0)

    def tree(self, root: ReadableSpan | None = None) -> Any:
        """``(name, [children...])`` from ``root`` (default: the one span without a parent)."""
        if root is None:
            roots = [s for s in self.finished if s.parent is None]
            assert len(roots) == 1, [s.name for s in roots]
            root = roots[0]
        return (root.name, [self.tree(c) for c in self.children(root)])


@pytest.fixture
def spans() -> Iterator[Spans]:
    recorded = Spans()
    yield recorded
    instrument(enabled=False)
    recorded.provider.shutdown()
