"""An incoming request's trace context (W3C ``traceparent``) as the parent of the runs it starts."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

__all__ = ["incoming_trace"]


@contextmanager
def incoming_trace(headers: Mapping[str, str]) -> Iterator[None]:
    """Inside the block, the trace context the request's headers carry (``traceparent``,
    ``tracestate``, baggage: OpenTelemetry's configured propagators) is the current one, so an agent
    run created there is a child of the caller's span.

    Free when nothing uses OpenTelemetry (it is not loaded) or the request carries no
    ``traceparent``: the block then runs as it is.
    """
    if "traceparent" not in headers or "opentelemetry.trace" not in sys.modules:
        yield
        return
    from opentelemetry import context, propagate

    token = context.attach(propagate.extract(headers))
    try:
        yield
    finally:
        context.detach(token)
