"""Finished spans as an indented tree of text (``agentstream run --trace``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["format_span_tree"]


def _duration(span: Any) -> str:
    if span.start_time is None or span.end_time is None:
        return "open"
    ns = span.end_time - span.start_time
    if ns >= 1_000_000_000:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1_000_000:
        return f"{ns / 1e6:.1f} ms"
    return f"{ns / 1e3:.0f} µs"


def _details(span: Any) -> list[str]:
    attrs: Mapping[str, Any] = span.attributes or {}
    out: list[str] = []
    if attrs.get("gen_ai.operation.name") == "invoke_agent" and "gen_ai.request.model" in attrs:
        out.append(f"model={attrs['gen_ai.request.model']}")
    if "gen_ai.tool.call.id" in attrs:
        out.append(f"call={attrs['gen_ai.tool.call.id']}")
    if "agentstream.background_task.id" in attrs:
        out.append(f"task={str(attrs['agentstream.background_task.id'])[:8]}")
        if attrs.get("agentstream.background_task.attempt", 1) != 1:
            out.append(f"attempt={attrs['agentstream.background_task.attempt']}")
    if "gen_ai.usage.input_tokens" in attrs or "gen_ai.usage.output_tokens" in attrs:
        out.append(
            f"tokens in={attrs.get('gen_ai.usage.input_tokens', '?')} out={attrs.get('gen_ai.usage.output_tokens', '?')}"
        )
    reasons = attrs.get("gen_ai.response.finish_reasons")
    if reasons:
        out.append(f"finish={','.join(str(r) for r in reasons)}")
    if attrs.get("agentstream.aborted"):
        out.append("ABORTED")
    status = getattr(span, "status", None)
    if status is not None and getattr(status.status_code, "name", "") == "ERROR":
        out.append(f"ERROR {status.description or attrs.get('error.type', '')}".rstrip())
    return out


def format_span_tree(spans: Iterable[Any]) -> str:
    """The spans (OpenTelemetry SDK ``ReadableSpan`` objects, e.g. an ``InMemorySpanExporter``'s) as
    a tree: one line per span, children indented under their parent in start order, with the span's
    duration and its key attributes (model, tokens, finish reasons, tool call and task ids, errors,
    aborts). A span whose parent is not among ``spans`` (a remote caller's) is shown as a root.
    """
    spans = sorted(spans, key=lambda s: s.start_time or 0)
    ids = {s.context.span_id for s in spans if s.context is not None}
    children: dict[int, list[Any]] = {}
    roots: list[Any] = []
    for span in spans:
        parent = span.parent.span_id if span.parent is not None else None
        if parent is None or parent not in ids:
            roots.append(span)
        else:
            children.setdefault(parent, []).append(span)
    lines: list[str] = []

    def walk(span: Any, lead: str, branch: str) -> None:
        details = "  ".join([_duration(span), *_details(span)])
        lines.append(f"{lead}{branch}{span.name}  {details}")
        kids = children.get(span.context.span_id, []) if span.context is not None else []
        inner = lead + ("" if not branch else "│  " if branch == "├─ " else "   ")
        for i, kid in enumerate(kids):
            walk(kid, inner, "└─ " if i == len(kids) - 1 else "├─ ")

    for root in roots:
        walk(root, "", "")
    return "\n".join(lines) + ("\n" if lines else "")
