"""Whose request a span belongs to: the resource (user) a server route acts for, kept with each
span a recorder stores, so that a trace is shown to its owner only. Imports no OpenTelemetry."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["TRACE_RESOURCE", "current_trace_resource", "traced_for"]

TRACE_RESOURCE: ContextVar[str | None] = ContextVar("agentstream_trace_resource", default=None)
"""The resource the spans started here belong to (``None``: no one's, e.g. no auth)."""


@contextmanager
def traced_for(resource_id: str | None) -> Iterator[None]:
    """``with traced_for(owner):`` spans started inside (and in tasks started inside) belong to
    ``owner``: a `SpanRecorder` stores it, and the observability routes show them to it alone."""
    token = TRACE_RESOURCE.set(resource_id)
    try:
        yield
    finally:
        TRACE_RESOURCE.reset(token)


def current_trace_resource() -> str | None:
    """The resource spans started here belong to."""
    return TRACE_RESOURCE.get()
