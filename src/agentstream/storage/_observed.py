"""What the Mastra server API reads besides threads: the stored runs of a workflow (listed and
found with their timestamps) and tracing spans (saved when they end, read as traces)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TypeVar

from ._records import SpanRecord, TraceQuery, WorkflowRunQuery, WorkflowSnapshotRecord, check_aware

__all__ = [
    "TRACE_STATUSES",
    "ObservedStore",
    "page_of",
    "run_matches",
    "trace_matches",
    "trace_status",
]

_T = TypeVar("_T")

TRACE_STATUSES = ("success", "error", "running")


def _check_page(page: int | None, per_page: int | None) -> None:
    for name, value in (("page", page), ("per_page", per_page)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    if per_page == 0:
        raise ValueError("per_page must be at least 1")


class ObservedStore(ABC):
    """Workflow run listings and tracing spans, for every backend (`BaseStore` inherits it)."""

    async def _ready(self) -> None:
        raise NotImplementedError

    async def list_workflow_runs(self, query: WorkflowRunQuery) -> tuple[list[WorkflowSnapshotRecord], int]:
        """The stored runs of ``query.workflow_name`` matching it, newest first, one page of them
        (every one without ``per_page``), and how many match in all."""
        _check_page(query.page, query.per_page)
        for name in ("from_date", "to_date"):
            value = getattr(query, name)
            if value is not None:
                check_aware(name, value)
        await self._ready()
        return await self._list_runs(query)

    async def find_workflow_run(self, workflow_name: str, run_id: str) -> WorkflowSnapshotRecord | None:
        """The stored run ``(workflow_name, run_id)`` with its owner and timestamps, or ``None``."""
        await self._ready()
        return await self._find_run(workflow_name, run_id)

    async def save_spans(self, spans: Sequence[SpanRecord]) -> None:
        """Insert (or replace, by ``(trace_id, span_id)``) finished spans."""
        for span in spans:
            check_aware("started_at", span.started_at)
            if span.ended_at is not None:
                check_aware("ended_at", span.ended_at)
        if spans:
            await self._ready()
            await self._save_spans(list(spans))

    async def list_traces(self, query: TraceQuery) -> tuple[list[SpanRecord], int]:
        """Root spans (one per trace) matching ``query``, by start time, one page; and the total."""
        _check_page(query.page, query.per_page)
        if query.status is not None and query.status not in TRACE_STATUSES:
            raise ValueError(f"status must be one of {TRACE_STATUSES}, got {query.status!r}")
        await self._ready()
        return await self._list_traces(query)

    async def get_trace(self, trace_id: str) -> list[SpanRecord]:
        """Every stored span of trace ``trace_id``, by start time (empty: no such trace)."""
        await self._ready()
        return await self._trace(trace_id)

    @abstractmethod
    async def _list_runs(self, query: WorkflowRunQuery) -> tuple[list[WorkflowSnapshotRecord], int]: ...
    @abstractmethod
    async def _find_run(self, workflow_name: str, run_id: str) -> WorkflowSnapshotRecord | None: ...
    @abstractmethod
    async def _save_spans(self, spans: list[SpanRecord]) -> None: ...
    @abstractmethod
    async def _list_traces(self, query: TraceQuery) -> tuple[list[SpanRecord], int]: ...
    @abstractmethod
    async def _trace(self, trace_id: str) -> list[SpanRecord]: ...


def run_matches(record: WorkflowSnapshotRecord, query: WorkflowRunQuery) -> bool:
    """Whether a stored run is one ``query`` asks for (what the SQL backends' WHERE says)."""
    snapshot = record.snapshot
    status = snapshot.get("status") if isinstance(snapshot, dict) else None
    return (
        record.workflow_name == query.workflow_name
        and (query.resource_id is None or record.resource_id == query.resource_id)
        and (query.status is None or status == query.status)
        and (query.from_date is None or record.created_at >= query.from_date)
        and (query.to_date is None or record.created_at <= query.to_date)
    )


def trace_status(span: SpanRecord) -> str:
    """Mastra's trace status of a root span: ``error``, else ``running`` (not ended), else ``success``."""
    if span.error is not None:
        return "error"
    return "running" if span.ended_at is None else "success"


def trace_matches(span: SpanRecord, query: TraceQuery) -> bool:
    """Whether a root span is a trace ``query`` asks for (what the SQL backends' WHERE says)."""
    fields = ("resource_id", "entity_type", "entity_id", "entity_name", "span_type")
    return (
        span.parent_span_id is None
        and all(getattr(query, f) is None or getattr(span, f) == getattr(query, f) for f in fields)
        and (query.status is None or trace_status(span) == query.status)
        and (query.started_from is None or span.started_at >= query.started_from)
        and (query.started_to is None or span.started_at <= query.started_to)
    )


def page_of(items: list[_T], page: int | None, per_page: int | None) -> list[_T]:
    """One page of ``items`` (all of them without ``per_page``)."""
    if per_page is None:
        return items
    start = (page or 0) * per_page
    return items[start : start + per_page]
