"""``agentstream serve --trace``: an OpenTelemetry SDK span processor writing each finished run's
span tree (imported only with ``--trace``: the SDK is not loaded otherwise)."""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from typing import TextIO

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

__all__ = ["TreePrinter"]


class TreePrinter(SpanProcessor):
    """An SDK span processor writing one tree per finished local root: a span without a parent, or
    whose parent is remote (a caller's ``traceparent``, the leg a resumed run continues), so that
    two requests continuing one caller's trace still print apart. A span of a tree already written
    (a background task outliving its run) is written on its own when it ends. Memory is bounded:
    past `MAX_SPANS` waiting spans, the oldest tree is written unfinished."""

    MAX_SPANS = 10_000
    MAX_DONE = 1_000

    def __init__(self, out: TextIO | None) -> None:
        self.out = out
        self.lock = threading.Lock()
        self.root_of: dict[int, int] = {}
        """Open span id → the span id of its local root."""
        self.waiting: OrderedDict[int, list[ReadableSpan]] = OrderedDict()
        self.count = 0
        self.done: OrderedDict[int, None] = OrderedDict()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Remember which local root the span belongs to."""
        parent = span.parent
        own = span.get_span_context().span_id
        with self.lock:
            if parent is None or parent.is_remote:
                self.root_of[own] = own
            else:
                self.root_of[own] = self.root_of.get(parent.span_id, parent.span_id)

    def on_end(self, span: ReadableSpan) -> None:
        """Keep the span with its tree; write the tree if this span is its root."""
        if span.context is None:
            return
        own = span.context.span_id
        with self.lock:
            root = self.root_of.pop(own, own)
            if root in self.done:
                self._write([span])
                return
            self.waiting.setdefault(root, []).append(span)
            self.count += 1
            if root == own:
                self._flush(root)
            while self.count > self.MAX_SPANS:
                self._flush(next(iter(self.waiting)))

    def _flush(self, root: int) -> None:
        spans = self.waiting.pop(root, [])
        self.count -= len(spans)
        self.done[root] = None
        if len(self.done) > self.MAX_DONE:
            self.done.popitem(last=False)
        self._write(spans)

    def _write(self, spans: list[ReadableSpan]) -> None:
        from agentstream.tracing import format_span_tree

        out = self.out or sys.stderr
        out.write("[trace]\n" + format_span_tree(spans))
        out.flush()

    def shutdown(self) -> None:
        """Write the trees still waiting for their root (the server stopped mid-run)."""
        with self.lock:
            while self.waiting:
                self._flush(next(iter(self.waiting)))

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Nothing is buffered for export: always done."""
        return True
