"""Stored spans in Mastra's shapes: the span record (``spanRecordSchema``), a trace's root with its
computed ``status`` (``traceSpanSchema``) and the light record trace lists and timelines render
(``lightSpanRecordSchema``: no input, output, attributes or links; an ``inputPreview``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from ..storage import SpanRecord

__all__ = ["light_span", "span_json", "trace_span"]

_PREVIEW = 100


def _iso(value: datetime | None) -> str | None:
    return (
        None
        if value is None
        else value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def _status(span: SpanRecord) -> str:
    if span.error is not None:
        return "error"
    return "running" if span.ended_at is None else "success"


def _base(span: SpanRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "parentSpanId": span.parent_span_id,
        "name": span.name,
        "spanType": span.span_type,
        "isEvent": False,
        "startedAt": _iso(span.started_at),
        "endedAt": _iso(span.ended_at),
    }
    for key, value in (
        ("entityType", span.entity_type),
        ("entityId", span.entity_id),
        ("entityName", span.entity_name),
    ):
        if value is not None:
            out[key] = value
    return out


def _stamps(span: SpanRecord) -> dict[str, Any]:
    # saved when the span ended: that is when the record was made
    return {"createdAt": _iso(span.ended_at or span.started_at), "updatedAt": _iso(span.ended_at)}


def span_json(span: SpanRecord) -> dict[str, Any]:
    """Mastra's span record."""
    data: dict[str, Any] = span.data if isinstance(span.data, dict) else {}
    out = _base(span)
    if span.resource_id is not None:
        out["resourceId"] = span.resource_id
    for key in ("runId", "threadId"):
        if key in data:
            out[key] = data[key]
    out["attributes"] = data.get("attributes") or {}
    out["links"] = data.get("links") or []
    for key in ("input", "output"):
        if key in data:
            out[key] = data[key]
    if span.error is not None:
        out["error"] = span.error
    out.update(_stamps(span))
    return out


def trace_span(span: SpanRecord) -> dict[str, Any]:
    """A span with its trace ``status`` (a trace's list row, and each span of a trace)."""
    return {**span_json(span), "status": _status(span)}


def _preview(value: Any) -> str | None:
    if value is None:
        return None
    messages = (
        value if isinstance(value, list) else value.get("messages") if isinstance(value, dict) else None
    )
    if isinstance(messages, list):
        texts = []
        for message in messages:
            if isinstance(message, dict) and message.get("role") == "user":
                texts.append(_content_text(message.get("content")))
        text = " | ".join(t for t in texts if t)
    else:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if not text:
        return None
    return text if len(text) <= _PREVIEW else text[:_PREVIEW] + "…"


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            p
            if isinstance(p, str)
            else str(p.get("text", ""))
            if isinstance(p, dict) and p.get("type") == "text"
            else ""
            for p in content
        ).strip()
    return ""


def light_span(span: SpanRecord) -> dict[str, Any]:
    """Mastra's light span record."""
    data: dict[str, Any] = span.data if isinstance(span.data, dict) else {}
    out = _base(span)
    if span.error is not None:
        out["error"] = span.error
    out["status"] = _status(span)
    preview = _preview(data.get("input"))
    if preview is not None:
        out["inputPreview"] = preview
    out.update(_stamps(span))
    return out
