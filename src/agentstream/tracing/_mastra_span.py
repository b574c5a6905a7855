"""An ended OpenTelemetry span of ours as Mastra's AI span record (what Studio's traces page
reads): its ``spanType`` and entity from the GenAI operation, a name as Mastra writes it, the
recorded content as ``input`` / ``output``, the other attributes, the error.

Ours → Mastra's: ``invoke_agent`` → ``agent_run`` (entity ``agent``), ``chat`` →
``model_generation``, ``execute_tool`` → ``tool_call`` (entity ``tool``), ``background_task`` →
``tool_call``, ``workflow_run`` → ``workflow_run`` (entity ``workflow_run``), ``workflow_step``
→ ``workflow_step`` (entity ``workflow_step``), anything else → ``generic``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..storage import SpanRecord

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["span_record"]

_CONTENT = {
    "gen_ai.input.messages": "input",
    "gen_ai.tool.call.arguments": "input",
    "gen_ai.output.messages": "output",
    "gen_ai.tool.call.result": "output",
}


def _json(value: Any) -> Any:
    """A content attribute (JSON text) as its value; text that is not JSON stays text."""
    if isinstance(value, str) and value[:1] in _JSON_STARTS:
        try:
            return json.loads(value)
        except ValueError:
            return value
    return list(value) if isinstance(value, tuple) else value


# Only text starting like JSON is parsed: a failed ``json.loads`` raises, and most text fails.
_JSON_STARTS = frozenset('{["-0123456789tfn')


def _plain(value: Any) -> Any:
    """An attribute that is not content: OpenTelemetry's tuples as lists, the rest as it is."""
    return list(value) if isinstance(value, tuple) else value


def _when(nanos: int | None) -> datetime | None:
    return None if nanos is None else datetime.fromtimestamp(nanos / 1e9, UTC)


def _kind(name: str, attributes: dict[str, Any]) -> tuple[str, str | None, str | None, str | None, str]:
    """``(spanType, entityType, entityId, entityName, name)`` of a span."""
    operation = attributes.get("gen_ai.operation.name")
    subject = name.split(" ", 1)[1] if " " in name else name
    if operation == "invoke_agent":
        agent_id = str(attributes.get("gen_ai.agent.id") or subject)
        agent_name = str(attributes.get("gen_ai.agent.name") or agent_id)
        return "agent_run", "agent", agent_id, agent_name, f"agent run: '{agent_id}'"
    if operation == "chat":
        model = str(attributes.get("gen_ai.request.model") or subject)
        return "model_generation", None, None, None, f"llm: '{model}'"
    if operation == "execute_tool" or name.startswith("background_task "):
        tool = str(attributes.get("gen_ai.tool.name") or subject)
        return "tool_call", "tool", tool, tool, f"tool: '{tool}'"
    if name.startswith("workflow_run "):
        workflow = str(attributes.get("agentstream.workflow.id") or subject)
        return "workflow_run", "workflow_run", workflow, workflow, f"workflow run: '{workflow}'"
    if name.startswith("workflow_step "):
        step = str(attributes.get("agentstream.workflow.step.id") or subject)
        return "workflow_step", "workflow_step", step, step, f"workflow step: '{step}'"
    return "generic", None, None, None, name


def _answer(messages: Any) -> Any:
    """GenAI output messages as Mastra's run output ``{text, toolCalls?}`` (other values as they are)."""
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return messages
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for message in messages:
        for part in message.get("parts") or []:
            if isinstance(part, dict) and part.get("type") == "text":
                texts.append(str(part.get("content", "")))
            elif isinstance(part, dict) and part.get("type") == "tool_call":
                calls.append(
                    {
                        "toolCallId": part.get("id"),
                        "toolName": part.get("name"),
                        "args": _json(part.get("arguments")),
                    }
                )
    out: dict[str, Any] = {"text": "".join(texts)}
    if calls:
        out["toolCalls"] = calls
    return out


def _mastra_attributes(span_type: str, attributes: dict[str, Any]) -> dict[str, Any]:
    """The attributes Studio shows for a span of this type, named as Mastra names them."""
    if span_type == "model_generation":
        out: dict[str, Any] = {
            "model": attributes.get("gen_ai.request.model"),
            "provider": attributes.get("gen_ai.provider.name"),
        }
        usage = {
            "inputTokens": attributes.get("gen_ai.usage.input_tokens"),
            "outputTokens": attributes.get("gen_ai.usage.output_tokens"),
        }
        if any(v is not None for v in usage.values()):
            out["usage"] = {k: v for k, v in usage.items() if v is not None}
        reasons = attributes.get("gen_ai.response.finish_reasons")
        if isinstance(reasons, list) and reasons:
            out["finishReason"] = reasons[0]
        return {k: v for k, v in out.items() if v is not None}
    if span_type == "tool_call":
        out = {
            "toolType": attributes.get("gen_ai.tool.type"),
            "toolDescription": attributes.get("gen_ai.tool.description"),
        }
        return {k: v for k, v in out.items() if v is not None}
    return {}


def _error(span: ReadableSpan, attributes: dict[str, Any]) -> dict[str, Any] | None:
    from opentelemetry.trace import StatusCode

    if span.status.status_code is not StatusCode.ERROR:
        return None
    error: dict[str, Any] = {"message": span.status.description or "error"}
    kind = attributes.get("error.type")
    if kind:
        error["name"] = str(kind)
    return error


def span_record(span: ReadableSpan, resource_id: str | None) -> SpanRecord:
    """``span`` (ended) as the record the observability routes serve."""
    context = span.context
    assert context is not None
    # Only the content attributes hold JSON text (`tracing._spans.to_json`): parsing every string
    # attribute cost up to 7 % of a serving process's CPU (docs/decisions/issue-29-send-path.md).
    attributes = {k: _json(v) if k in _CONTENT else _plain(v) for k, v in (span.attributes or {}).items()}
    span_type, entity_type, entity_id, entity_name, name = _kind(span.name, attributes)
    data: dict[str, Any] = {"isEvent": False}
    for key, where in _CONTENT.items():
        if key in attributes:
            data[where] = attributes.pop(key)
    if span_type in ("agent_run", "model_generation") and "output" in data:
        data["output"] = _answer(data["output"])
    for key, field in (
        ("agentstream.run_id", "runId"),
        ("agentstream.workflow.run_id", "runId"),
        ("gen_ai.conversation.id", "threadId"),
    ):
        if key in attributes and field not in data:
            data[field] = attributes[key]
    data["attributes"] = {**_mastra_attributes(span_type, attributes), **attributes}
    data["links"] = [
        {"traceId": format(link.context.trace_id, "032x"), "spanId": format(link.context.span_id, "016x")}
        for link in span.links
    ]
    parent = span.parent
    started = _when(span.start_time)
    assert started is not None
    return SpanRecord(
        trace_id=format(context.trace_id, "032x"),
        span_id=format(context.span_id, "016x"),
        # a parent in another process (an incoming traceparent) is not stored: this is the root here
        parent_span_id=None if parent is None or parent.is_remote else format(parent.span_id, "016x"),
        name=name,
        span_type=span_type,
        started_at=started,
        ended_at=_when(span.end_time),
        resource_id=resource_id,
        entity_type=entity_type,
        entity_id=entity_id,
        entity_name=entity_name,
        error=_error(span, attributes),
        data=data,
    )
