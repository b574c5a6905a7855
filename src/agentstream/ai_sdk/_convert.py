"""Mastra agent chunks → AI SDK UI message chunks (``toAISdkStream`` of ``@mastra/ai-sdk``, spec §9.2-9.3).

Every UI chunk is a JSON-ready dict exactly as it goes on the wire: camelCase keys, in the order
Mastra writes them, optional keys absent (never ``None``) except for the "any JSON" fields
(``input``, ``output``, ``data``) whose key is required.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from agentstream.chunks import (
    UNSET,
    Abort,
    Chunk,
    DataChunk,
    Error,
    File,
    Finish,
    Goal,
    ObjectResult,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    Source,
    Start,
    StepFinish,
    StepStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCall,
    ToolCallApproval,
    ToolCallDelta,
    ToolCallInputStreamingStart,
    ToolCallSuspended,
    ToolError,
    ToolOutput,
    ToolOutputDenied,
    ToolResult,
    Tripwire,
    UnknownChunk,
    chunk_to_dict,
    format_date,
    to_jsonable,
)
from agentstream.stream import TransformFactory, apply_transforms

from ._convert_tools import DATA_MISSING, ToolChunks, compact, data_part
from ._errors import UIMessageStreamError, default_error_text
from ._sub_agent import AgentRunTracker

if TYPE_CHECKING:
    from ._workflow import WorkflowUIChunkConverter

__all__ = [
    "MessageMetadataFn",
    "OnErrorFn",
    "UIChunk",
    "UIChunkConverter",
    "Version",
    "to_ai_sdk_stream",
]

Version: TypeAlias = Literal["v5", "v6", "v7"]
UIChunk: TypeAlias = dict[str, Any]
"""One UI message chunk as its wire dict."""

MessageMetadataFn: TypeAlias = Callable[[dict[str, Any]], Any]
"""``message_metadata(part)``: ``part`` is the AI SDK stream part (``{"type": "finish", "finishReason",
"totalUsage", ...}``); a non-``None`` result is attached to ``start`` and ``finish``."""

OnErrorFn: TypeAlias = Callable[[Any], str]
"""``on_error(error) -> errorText`` for ``error`` and ``tool-error`` chunks."""


class _HasFullStream(Protocol):
    @property
    def full_stream(self) -> Any: ...


_V6_REASONS = frozenset({"stop", "length", "content-filter", "tool-calls", "error", "other"})


def _now() -> datetime:
    """Clock for sub-agent snapshots (patched in tests)."""
    return datetime.now(UTC)


def _finish_reason(reason: Any, version: Version) -> Any:
    if version == "v5":
        return "other" if reason in ("tripwire", "retry") else reason
    if reason is None:
        return None
    return reason if reason in _V6_REASONS else "other"


def _v6_usage(usage: Any) -> dict[str, Any]:
    u = usage if isinstance(usage, Mapping) else {}
    return compact(
        {
            "inputTokens": u.get("inputTokens"),
            "inputTokenDetails": compact(
                {
                    "noCacheTokens": u.get("inputTokens"),
                    "cacheReadTokens": u.get("cachedInputTokens"),
                    "cacheWriteTokens": None,
                }
            ),
            "outputTokens": u.get("outputTokens"),
            "outputTokenDetails": compact(
                {"textTokens": u.get("outputTokens"), "reasoningTokens": u.get("reasoningTokens")}
            ),
            "totalTokens": u.get("totalTokens"),
            "reasoningTokens": u.get("reasoningTokens"),
            "cachedInputTokens": u.get("cachedInputTokens"),
        }
    )


def _strip_openai_item_id(pm: dict[str, Any]) -> dict[str, Any] | None:
    openai = pm.get("openai")
    if not isinstance(openai, Mapping) or "itemId" not in openai:
        return pm
    out = dict(pm)
    rest = {k: v for k, v in openai.items() if k != "itemId"}
    if rest:
        out["openai"] = rest
    else:
        del out["openai"]
    return out or None


class UIChunkConverter(ToolChunks):
    """The stateful Mastra → UI chunk conversion of one stream (``AgentStreamToAISDKTransformer``).

    Feed chunks to ``convert`` (each returns the UI chunks it produced, possibly none) and call
    ``flush`` at the end of the stream.
    """

    def __init__(
        self,
        *,
        version: Version = "v5",
        send_start: bool = True,
        send_finish: bool = True,
        send_reasoning: bool = False,
        send_sources: bool = False,
        last_message_id: str | None = None,
        message_metadata: MessageMetadataFn | None = None,
        on_error: OnErrorFn | None = None,
        include_sub_agent_metadata: bool = False,
        send_goals: bool = False,
    ) -> None:
        if version not in ("v5", "v6", "v7"):
            raise ValueError(f"version: expected one of 'v5', 'v6', 'v7', got {version!r}")
        self.version: Version = version
        self.send_start = send_start
        self.send_finish = send_finish
        self.send_reasoning = send_reasoning
        self.send_sources = send_sources
        self.last_message_id = last_message_id
        self.message_metadata = message_metadata
        self.on_error: OnErrorFn = on_error or default_error_text
        self.include_sub_agent_metadata = include_sub_agent_metadata
        self.send_goals = send_goals
        self._held_start: UIChunk | None = None
        self._start_seen = False
        self._held_start_message_id: str | None = None
        self._held: list[UIChunk] = []
        self._tripwire = False
        self._finish_seen = False
        self._open_parts: dict[tuple[str, str], None] = {}
        """The text (and sent reasoning) parts started and not ended yet, in order: ``(kind, id)``."""
        self._agent_runs = AgentRunTracker(lambda: _now())
        self._workflow_runs: WorkflowUIChunkConverter | None = None
        self._dispatch: dict[type[Any], Callable[[Any], Any]] = {
            TextDelta: self._text_delta,
            TextStart: self._text_start,
            TextEnd: self._text_end,
            ReasoningDelta: self._reasoning,
            ReasoningStart: self._reasoning,
            ReasoningEnd: self._reasoning,
            ToolCallDelta: self._tool_call_delta,
            ToolCallInputStreamingStart: self._tool_input_start,
            ToolCall: self._tool_call,
            ToolResult: self._tool_result,
            ToolError: self._tool_error,
            ToolOutputDenied: self._tool_output_denied,
            ToolOutput: self._tool_output,
            ToolCallApproval: self._tool_call_approval,
            ToolCallSuspended: self._tool_call_suspended,
            StepStart: self._step_start,
            StepFinish: self._step_finish,
            Start: self._start,
            Finish: self._finish,
            Error: self._error,
            Abort: self._abort,
            Source: self._source,
            File: self._file,
            Tripwire: self._tripwire_chunk,
            Goal: self._goal,
            ObjectResult: self._object_result,
            DataChunk: self._data,
        }

    # --- driver -------------------------------------------------------------------------------

    def convert(self, chunk: Chunk) -> list[UIChunk]:
        """The UI chunks for one Mastra chunk (in order)."""
        handler = self._dispatch.get(type(chunk))
        if handler is None:
            out = self._other(chunk)
        else:
            out = handler(chunk)
        if self._held_start is None:
            if out is None:
                return []
            return out if isinstance(out, list) else [out]
        # A start is being held until the first non-data chunk.
        parts = [] if out is None else out if isinstance(out, list) else [out]
        if isinstance(chunk, (DataChunk, Start)):
            self._held.extend(parts)
            return []
        if isinstance(chunk, StepStart) and self.last_message_id is None:
            step_id = chunk.payload.message_id
            if step_id and step_id != self._held_start_message_id:
                self._held_start["messageId"] = step_id
        released = [self._held_start, *self._held, *parts]
        self._held_start = None
        self._held = []
        return released

    def flush(self) -> list[UIChunk]:
        """UI chunks due at the end of the stream (a held ``start``; the ``finish`` after a tripwire)."""
        out: list[UIChunk] = []
        if self._held_start is not None:
            out.append(self._held_start)
            out.extend(self._held)
            self._held_start = None
            self._held = []
        if self._tripwire and not self._finish_seen and self.send_finish:
            out.append({"type": "finish", "finishReason": "other"})
        return out

    def _metadata(self, part: dict[str, Any]) -> Any:
        if self.message_metadata is None:
            return None
        return self.message_metadata(part)

    def _observe(self, chunk: Any, part_type: str | None = None) -> None:
        """Evaluate ``message_metadata`` for a part that is not start/finish (its value is unused)."""
        if self.message_metadata is not None:
            self.message_metadata(self._part(chunk, part_type))

    def _part(self, chunk: Any, part_type: str | None = None) -> dict[str, Any]:
        raw = chunk_to_dict(chunk) if not isinstance(chunk, dict) else chunk
        payload = raw.get("payload")
        part: dict[str, Any] = {"type": part_type or raw.get("type")}
        if isinstance(payload, Mapping):
            part.update(payload)
        return part

    # --- framing ------------------------------------------------------------------------------

    def _start(self, chunk: Start) -> None:
        # A second ``start`` comes from a continuation turn of an until-idle stream. Mastra forwards
        # it, and the client then re-files everything streamed so far under the new message id (the
        # user sees the first turn twice); one response is one assistant message, so it is dropped.
        if not self.send_start or self._start_seen:
            self._observe(chunk)
            return
        self._start_seen = True
        message_id = chunk.payload.message_id
        part: dict[str, Any] = {"type": "start"}
        if message_id:
            part["messageId"] = message_id
        meta = self._metadata(part)
        out: UIChunk = {"type": "start"}
        if meta is not None:
            out["messageMetadata"] = meta
        mid = self.last_message_id or message_id
        if mid is not None:
            out["messageId"] = mid
        self._held_start = out
        self._held_start_message_id = message_id
        self._held = []

    def _step_start(self, chunk: StepStart) -> UIChunk:
        if self.message_metadata is not None:
            p = chunk.payload
            self.message_metadata({"type": "start-step", "request": p.request, "warnings": p.warnings or []})
        return {"type": "start-step"}

    def _step_finish(self, chunk: StepFinish) -> UIChunk:
        if self.message_metadata is not None:
            p = chunk.payload
            rest = {k: v for k, v in p.metadata.items() if k not in ("request", "providerMetadata")}
            reason = p.step_result.get("reason")
            part: dict[str, Any] = {
                "type": "finish-step",
                "response": {"id": p.id or "", "timestamp": format_date(_now()), "modelId": "", **rest},
                "usage": _v6_usage(p.output.get("usage")) if self.version != "v5" else p.output.get("usage"),
                "finishReason": _finish_reason(reason, self.version),
            }
            if self.version != "v5":
                part["rawFinishReason"] = reason
            part["providerMetadata"] = p.metadata.get("providerMetadata")
            self.message_metadata(part)
        return {"type": "finish-step"}

    def _finish(self, chunk: Finish) -> UIChunk | None:
        self._finish_seen = True
        reason = chunk.payload.step_result.get("reason")
        finish_reason = _finish_reason(reason, self.version)
        meta = None
        if self.message_metadata is not None:
            usage = chunk.payload.output.get("usage")
            part: dict[str, Any] = {"type": "finish", "finishReason": finish_reason}
            if self.version != "v5":
                part["rawFinishReason"] = reason
                part["totalUsage"] = _v6_usage(usage)
            else:
                part["totalUsage"] = usage
            meta = self.message_metadata(part)
        if not self.send_finish:
            return None
        out: UIChunk = {"type": "finish"}
        if finish_reason is not None:
            out["finishReason"] = finish_reason
        if meta is not None:
            out["messageMetadata"] = meta
        return out

    def _error(self, chunk: Error) -> UIChunk:
        self._observe(chunk)
        return {"type": "error", "errorText": self.on_error(chunk.payload.error)}

    def _abort(self, chunk: Abort) -> list[UIChunk]:
        self._observe(chunk)
        return [*self._close_open_parts(), {"type": "abort"}]

    def _close_open_parts(self) -> list[UIChunk]:
        """The ``text-end`` / ``reasoning-end`` of every part the run left open: a blocked or aborted
        answer is over, and a client must not show its text as still streaming (a deliberate
        divergence from Mastra, docs/decisions/issue-21-endings-over-http.md)."""
        closing: list[UIChunk] = [{"type": f"{kind}-end", "id": pid} for kind, pid in self._open_parts]
        self._open_parts.clear()
        return closing

    def _tripwire_chunk(self, chunk: Tripwire) -> list[UIChunk]:
        self._tripwire = True
        p = chunk.payload
        data: dict[str, Any] = {"reason": p.reason}
        if p.retry is not None:
            data["retry"] = p.retry
        if p.metadata is not UNSET and p.metadata is not None:
            data["metadata"] = to_jsonable(p.metadata)
        if p.processor_id is not None:
            data["processorId"] = p.processor_id
        out: UIChunk = {"type": "data-tripwire", "data": data}
        if self.message_metadata is not None:
            self.message_metadata(dict(out))
        return [*self._close_open_parts(), out]

    # --- text and reasoning -------------------------------------------------------------------

    def _text_pm(self, pm: dict[str, Any] | None) -> dict[str, Any] | None:
        if pm is None or self.send_reasoning:
            return pm
        return _strip_openai_item_id(pm)

    def _text_start(self, chunk: TextStart) -> UIChunk:
        self._observe(chunk)
        self._open_parts["text", chunk.payload.id] = None
        out: UIChunk = {"type": "text-start", "id": chunk.payload.id}
        pm = self._text_pm(chunk.payload.provider_metadata)
        if pm is not None:
            out["providerMetadata"] = pm
        return out

    def _text_delta(self, chunk: TextDelta) -> UIChunk:
        p = chunk.payload
        if self.message_metadata is not None:
            self._observe(chunk)
        if p.provider_metadata is None:
            return {"type": "text-delta", "id": p.id, "delta": p.text}
        out: UIChunk = {"type": "text-delta", "id": p.id, "delta": p.text}
        pm = self._text_pm(p.provider_metadata)
        if pm is not None:
            out["providerMetadata"] = pm
        return out

    def _text_end(self, chunk: TextEnd) -> UIChunk:
        self._observe(chunk)
        self._open_parts.pop(("text", chunk.payload.id), None)
        out: UIChunk = {"type": "text-end", "id": chunk.payload.id}
        pm = self._text_pm(chunk.payload.provider_metadata)
        if pm is not None:
            out["providerMetadata"] = pm
        return out

    def _reasoning(self, chunk: ReasoningStart | ReasoningDelta | ReasoningEnd) -> UIChunk | None:
        self._observe(chunk)
        if not self.send_reasoning:
            return None
        p = chunk.payload
        if type(chunk) is ReasoningStart:
            self._open_parts["reasoning", p.id] = None
        elif type(chunk) is ReasoningEnd:
            self._open_parts.pop(("reasoning", p.id), None)
        out: UIChunk = {"type": chunk.type, "id": p.id}
        if isinstance(chunk, ReasoningDelta):
            out["delta"] = chunk.payload.text
        if p.provider_metadata is not None:
            out["providerMetadata"] = p.provider_metadata
        return out

    # --- sources and files --------------------------------------------------------------------

    def _source(self, chunk: Source) -> UIChunk | None:
        self._observe(chunk)
        if not self.send_sources:
            return None
        p = chunk.payload
        out: UIChunk
        if p.source_type == "url":
            out = {"type": "source-url", "sourceId": p.id}
            if p.url is not None:
                out["url"] = p.url
            if p.title is not None:
                out["title"] = p.title
        else:
            out = {"type": "source-document", "sourceId": p.id}
            if p.mime_type is not None:
                out["mediaType"] = p.mime_type
            if p.title is not None:
                out["title"] = p.title
            if p.filename is not None:
                out["filename"] = p.filename
        if p.provider_metadata is not None:
            out["providerMetadata"] = p.provider_metadata
        return out

    def _file(self, chunk: File) -> UIChunk:
        self._observe(chunk)
        p = chunk.payload
        data = p.data
        if isinstance(data, (bytes, bytearray, memoryview)):
            b64 = base64.b64encode(bytes(data)).decode("ascii")
        elif p.base64 is not None:
            b64 = p.base64
        else:
            b64 = str(data)
        return {"type": "file", "mediaType": p.mime_type, "url": f"data:{p.mime_type};base64,{b64}"}

    # --- data and the rest --------------------------------------------------------------------

    def _object_result(self, chunk: ObjectResult) -> UIChunk:
        self._observe(chunk)
        return {"type": "data-structured-output", "data": {"object": to_jsonable(chunk.object)}}

    def _data(self, chunk: DataChunk) -> UIChunk:
        if chunk.data is UNSET:
            raise UIMessageStreamError(
                DATA_MISSING + json.dumps(chunk_to_dict(chunk), separators=(",", ":"), ensure_ascii=False)
            )
        if self.message_metadata is not None:
            self.message_metadata(chunk_to_dict(chunk))
        out: UIChunk = {"type": chunk.type, "data": to_jsonable(chunk.data)}
        if chunk.id is not None:
            out["id"] = chunk.id
        if chunk.transient:
            out["transient"] = True  # the client shows it but keeps it out of the message
        return out

    def _goal(self, chunk: Goal) -> UIChunk | None:
        """``send_goals``: one ``data-goal`` part per judged attempt (the same id from pending to
        verdict, so the client updates it in place). Mastra drops goal chunks."""
        if not self.send_goals:
            return None
        data = chunk_to_dict(chunk)["payload"]
        self._observe(chunk)
        return {"type": "data-goal", "id": f"goal-{chunk.run_id}-{data.get('iteration')}", "data": data}

    def _other(self, chunk: Any) -> UIChunk | None:
        kind = getattr(chunk, "type", None)
        if isinstance(kind, str) and kind.startswith("background-task-"):
            self._observe(chunk)
            raw_payload = chunk_to_dict(chunk).get("payload")
            data: dict[str, Any] = dict(raw_payload) if isinstance(raw_payload, Mapping) else {}
            data["state"] = f"data-{kind}"
            run_id = getattr(chunk, "run_id", None) or data.get("runId")
            if run_id is None:
                data.pop("runId", None)
            else:
                data["runId"] = run_id
            out: UIChunk = {"type": f"data-{kind}", "data": data}
            task_id = data.get("taskId") or data.get("toolCallId")
            if task_id is not None:
                out["id"] = task_id
            return out
        if isinstance(chunk, UnknownChunk):
            raw = chunk.raw
            if isinstance(raw.get("type"), str) and raw["type"].startswith("data-"):
                return data_part(raw, raw)
        return None


async def _aiter(source: Any) -> AsyncIterator[Any]:
    if isinstance(source, AsyncIterable):
        async for item in source:
            yield item
    elif isinstance(source, Iterable):
        for item in source:
            yield item
    else:
        raise TypeError(
            f"expected a ModelOutput or an (async) iterable of chunks, got {type(source).__name__}"
        )


def _source_stream(stream: Any) -> Any:
    full = getattr(stream, "full_stream", None)
    if full is not None:
        if callable(full) and not isinstance(full, (AsyncIterable, Iterable)):
            full = full()
        return full
    return stream


async def to_ai_sdk_stream(
    stream: Any,
    *,
    version: Version = "v5",
    send_start: bool = True,
    send_finish: bool = True,
    send_reasoning: bool = False,
    send_sources: bool = False,
    last_message_id: str | None = None,
    message_metadata: MessageMetadataFn | None = None,
    on_error: OnErrorFn | None = None,
    experimental_transform: TransformFactory | Sequence[TransformFactory] | None = None,
    include_sub_agent_metadata: bool = False,
    from_: Literal["agent", "workflow"] = "agent",
    include_text_stream_parts: bool = True,
    send_goals: bool = False,
) -> AsyncIterator[UIChunk]:
    """AI SDK UI message chunks (wire dicts) for a Mastra agent stream (``toAISdkStream``).

    ``from_="workflow"`` converts a workflow stream (a ``WorkflowRunOutput`` or its chunks) instead:
    ``data-workflow`` / ``data-workflow-step`` parts, and the text parts of agent steps unless
    ``include_text_stream_parts=False`` (spec §9.4).

    ``stream`` is a ``ModelOutput`` (its ``full_stream`` is read) or any (async) iterable of chunks.
    ``version`` ``"v6"``/``"v7"`` map finish reasons/usage as AI SDK 6 and add the native
    ``tool-approval-request``. Reasoning and sources are off by default, as in Mastra.
    ``experimental_transform`` factories (e.g. ``smooth_stream``) are applied before conversion.
    An exception from the source (or a ``data-*`` chunk without ``data``) propagates after the
    chunks produced so far. ``send_goals`` (beyond Mastra, which drops them) forwards goal progress
    as ``data-goal`` parts: one per judged attempt, updated from pending to the verdict.
    """
    converter = UIChunkConverter(
        version=version,
        send_start=send_start,
        send_finish=send_finish,
        send_reasoning=send_reasoning,
        send_sources=send_sources,
        last_message_id=last_message_id,
        message_metadata=message_metadata,
        on_error=on_error,
        include_sub_agent_metadata=include_sub_agent_metadata,
        send_goals=send_goals,
    )
    if from_ == "workflow":
        from ._workflow import workflow_ui_stream

        async for part in workflow_ui_stream(
            _aiter(_source_stream(stream)),
            version=version,
            include_text_stream_parts=include_text_stream_parts,
            send_reasoning=send_reasoning,
            send_sources=send_sources,
            on_error=on_error,
        ):
            yield part
        return
    if from_ != "agent":
        raise ValueError(f"from_: expected 'agent' or 'workflow', got {from_!r}")
    iterator = apply_transforms(_aiter(_source_stream(stream)), experimental_transform)
    try:
        async for chunk in iterator:
            for part in converter.convert(chunk):
                yield part
        for part in converter.flush():
            yield part
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()
