"""Provider stream part → chunk (Mastra's ``convertFullStreamChunkToMastra``), as a table by part type.

Each handler updates the `StepState` and returns the chunk or
``None`` (nothing to stream); a chunk that does not take the ``STANDARD`` route sets ``state.route``.
The route says what the loop does with the chunk:

* ``STANDARD`` — output processing (``LoopHooks.process_chunk``), ``on_chunk`` for the types Mastra
  shows it (`ON_CHUNK_TYPES`), then streamed;
* ``QUIET`` — output processing, streamed; ``on_chunk`` does not see it (provider-executed results,
  a tool-call whose synthetic twin ``on_chunk`` already saw);
* ``RAW`` — not processed; ``on_chunk`` sees it only with ``include_raw_chunks``;
* ``FATAL`` — processed (a dropped error is kept), streamed, and the step's stream ends.

Handlers may also queue ``state.early`` (streamed first, unprocessed) and ``state.notify`` (shown to
``on_chunk`` first).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from ..chunks import (
    UNSET,
    Chunk,
    ChunkFrom,
    Custom,
    CustomPayload,
    Error,
    ErrorPayload,
    File,
    FilePayload,
    Raw,
    RawPayload,
    ReasoningDelta,
    ReasoningDeltaPayload,
    ReasoningEnd,
    ReasoningEndPayload,
    ReasoningFile,
    ReasoningFilePayload,
    ReasoningStart,
    ReasoningStartPayload,
    Source,
    SourcePayload,
    TextDelta,
    TextDeltaPayload,
    TextEnd,
    TextEndPayload,
    TextStart,
    TextStartPayload,
    ToolCall,
    ToolCallDelta,
    ToolCallDeltaPayload,
    ToolCallInputStreamingEnd,
    ToolCallInputStreamingEndPayload,
    ToolCallInputStreamingStart,
    ToolCallInputStreamingStartPayload,
    ToolCallPayload,
    ToolResult,
    ToolResultPayload,
)
from ..models import (
    CustomPart,
    ErrorPart,
    FilePart,
    FinishPart,
    ProviderMetadata,
    RawPart,
    ReasoningDeltaPart,
    ReasoningEndPart,
    ReasoningFilePart,
    ReasoningStartPart,
    ResponseMetadataPart,
    SourcePart,
    StreamStartPart,
    TextDeltaPart,
    TextEndPart,
    TextStartPart,
    ToolCallPart,
    ToolInputDeltaPart,
    ToolInputEndPart,
    ToolInputStartPart,
    ToolResultPart,
)
from ._convert import (
    normalize_finish_reason,
    normalize_usage,
    parse_streamed_args,
    parse_tool_input,
    try_parse_streamed_args,
)
from ._hooks import PendingToolCall
from ._state import StepState, model_output

__all__ = [
    "FATAL",
    "HANDLERS",
    "ON_CHUNK_TYPES",
    "QUIET",
    "RAW",
    "STANDARD",
    "Handled",
    "Handler",
    "convert_unknown",
]

log = logging.getLogger("agentstream.agent")

AGENT = ChunkFrom.AGENT
STANDARD: Final = 0
QUIET: Final = 1
RAW: Final = 2
FATAL: Final = 3

ON_CHUNK_TYPES = frozenset(
    {
        "text-delta",
        "reasoning-delta",
        "source",
        "tool-call",
        "tool-call-input-streaming-start",
        "tool-call-delta",
        "tool-call-input-streaming-end",
        "tool-result",
        "tool-error",
        "tool-output-denied",
        "background-task-started",
    }
)

Handled = Chunk | None
Handler = Callable[[StepState, Any], Handled]
"""Takes the part ``TypedDict`` of its key in `HANDLERS` (``tests/agent/test_parts.py`` checks the pairing)."""


def _text_delta(st: StepState, part: TextDeltaPart) -> Handled:
    delta = part["delta"]
    pm = part.get("providerMetadata")
    if not delta and pm is None:
        return None
    tid = part["id"]
    if tid not in st.text_part:  # a delta without its text-start: the part starts here
        st.text_entry(tid, None)
    if pm is not None:
        st.text_part[tid]["providerOptions"] = pm
    st.has_content = True
    if st.so is not None:
        obj = st.so.feed(delta)
        if obj is not None:
            st.early.append(obj)
            st.pending = True
    return TextDelta(
        run_id=st.run_id, from_=AGENT, payload=TextDeltaPayload(id=tid, text=delta, provider_metadata=pm)
    )


def _reasoning_delta(st: StepState, part: ReasoningDeltaPart) -> Handled:
    rid = part["id"]
    delta = part["delta"]
    pm = part.get("providerMetadata")
    acc = st.reasoning_acc.get(rid)
    if acc is None:
        acc = st.reasoning_entry(rid, None)
    acc.append(delta)
    if pm is not None:
        st.reasoning_part[rid]["providerOptions"] = pm
    st.has_content = True
    return ReasoningDelta(
        run_id=st.run_id, from_=AGENT, payload=ReasoningDeltaPayload(id=rid, text=delta, provider_metadata=pm)
    )


def _tool_input_delta(st: StepState, part: ToolInputDeltaPart) -> Handled:
    delta = part["delta"]
    if not delta:
        return None
    cid = part["id"]
    st.streamed.setdefault(cid, []).append(delta)
    st.has_content = True
    meta = st.stream_meta.get(cid)
    return ToolCallDelta(
        run_id=st.run_id,
        from_=AGENT,
        payload=ToolCallDeltaPayload(
            args_text_delta=delta,
            tool_call_id=cid,
            provider_metadata=part.get("providerMetadata"),
            tool_name=meta["toolName"] if meta else None,
        ),
    )


def _text_start(st: StepState, part: TextStartPart) -> Handled:
    tid = part["id"]
    pm = part.get("providerMetadata")
    if tid not in st.text_part:
        st.text_entry(tid, pm)
    return TextStart(run_id=st.run_id, from_=AGENT, payload=TextStartPayload(id=tid, provider_metadata=pm))


def _text_end(st: StepState, part: TextEndPart) -> Handled:
    tid = part["id"]
    pm = part.get("providerMetadata")
    if pm is not None and tid in st.text_part:
        st.text_part[tid]["providerOptions"] = pm
    extra = {k: v for k, v in part.items() if k not in ("id", "providerMetadata")}
    return TextEnd(
        run_id=st.run_id, from_=AGENT, payload=TextEndPayload(id=tid, provider_metadata=pm, extra=extra)
    )


def _reasoning_bound(
    st: StepState, part: ReasoningStartPart | ReasoningEndPart
) -> tuple[str, ProviderMetadata | None]:
    rid = part["id"]
    pm = part.get("providerMetadata")
    if rid not in st.reasoning_acc:
        st.reasoning_entry(rid, pm)
    elif pm is not None:
        st.reasoning_part[rid]["providerOptions"] = pm
    return rid, pm


def _reasoning_start(st: StepState, part: ReasoningStartPart) -> Handled:
    rid, pm = _reasoning_bound(st, part)
    payload = ReasoningStartPayload(id=rid, provider_metadata=pm)
    return ReasoningStart(run_id=st.run_id, from_=AGENT, payload=payload)


def _reasoning_end(st: StepState, part: ReasoningEndPart) -> Handled:
    rid, pm = _reasoning_bound(st, part)
    return ReasoningEnd(
        run_id=st.run_id, from_=AGENT, payload=ReasoningEndPayload(id=rid, provider_metadata=pm)
    )


def _tool_input_start(st: StepState, part: ToolInputStartPart) -> Handled:
    cid = part["id"]
    st.stream_meta[cid] = part
    st.streamed.setdefault(cid, [])
    return ToolCallInputStreamingStart(
        run_id=st.run_id,
        from_=AGENT,
        payload=ToolCallInputStreamingStartPayload(
            tool_call_id=cid,
            tool_name=part["toolName"],
            provider_executed=part.get("providerExecuted"),
            provider_metadata=part.get("providerMetadata"),
            dynamic=part.get("dynamic"),
        ),
    )


def _tool_input_end(st: StepState, part: ToolInputEndPart) -> Handled:
    cid = part["id"]
    chunk = ToolCallInputStreamingEnd(
        run_id=st.run_id,
        from_=AGENT,
        payload=ToolCallInputStreamingEndPayload(
            tool_call_id=cid, provider_metadata=part.get("providerMetadata")
        ),
    )
    meta = st.stream_meta.get(cid)
    if meta is None:
        return chunk
    # What Mastra's onChunk sees: the end chunk, then the synthetic tool-call from the streamed JSON.
    synthetic = ToolCall(
        run_id=st.run_id,
        from_=AGENT,
        payload=ToolCallPayload(
            tool_call_id=cid,
            tool_name=meta["toolName"],
            args=parse_streamed_args("".join(st.streamed.get(cid, []))),
            provider_executed=meta.get("providerExecuted"),
            provider_metadata=meta.get("providerMetadata"),
            dynamic=meta.get("dynamic"),
        ),
    )
    st.notify += (chunk, synthetic)
    st.pending = True
    st.route = QUIET
    return chunk


def _tool_call(st: StepState, part: ToolCallPart) -> Handled:
    cid = part["toolCallId"]
    name = part["toolName"]
    ok, args = parse_tool_input(part["input"])
    if not ok:
        log.error("could not parse tool-call input for %s: %r", name, part["input"])
    pexec = part.get("providerExecuted")
    exec_args = args if ok else {}
    if cid in st.streamed:
        # Mastra runs the tool with {} when the streamed JSON does not parse; we run it with the
        # provider's repaired input (docs/decisions/agent-loop.md).
        parsed_ok, streamed_args = try_parse_streamed_args("".join(st.streamed[cid]))
        if parsed_ok or not ok:
            exec_args = streamed_args
    st.calls.append(PendingToolCall(cid, name, exec_args, args if ok else {}, pexec))
    call_part: dict[str, Any] = {
        "type": "tool-call",
        "toolCallId": cid,
        "toolName": name,
        "input": args if ok else {},
    }
    if pexec:
        call_part["providerExecuted"] = True
    if part.get("providerMetadata"):
        # Sent back on the next call as the AI SDK does (`toResponseMessages`): Gemini 3 refuses a
        # function call replayed without its thought signature.
        call_part["providerOptions"] = part["providerMetadata"]
    st.content.append(call_part)
    st.has_content = True
    chunk = ToolCall(
        run_id=st.run_id,
        from_=AGENT,
        payload=ToolCallPayload(
            tool_call_id=cid,
            tool_name=name,
            args=args if ok else UNSET,
            provider_executed=pexec,
            provider_metadata=part.get("providerMetadata"),
            dynamic=part.get("dynamic"),
        ),
    )
    if cid in st.stream_meta:
        st.route = QUIET  # on_chunk saw the synthetic call
    return chunk


def _finish(st: StepState, part: FinishPart) -> Handled:
    st.finish_reason, st.raw_reason = normalize_finish_reason(part["finishReason"])
    st.provider_metadata = part.get("providerMetadata")
    st.usage = normalize_usage(part["usage"], st.provider_metadata)
    if st.so is not None and not st.client_calls():
        finish_structured_output(st, st.finish_reason)
    return None


def finish_structured_output(st: StepState, finish_reason: str) -> None:
    """Validate the structured output at the end of the step: queue ``object-result`` or the error."""
    assert st.so is not None
    result, so_error = st.so.finish(finish_reason)
    if result is not None:
        st.has_content = True
        st.early.append(result)
    if so_error is not None:
        st.error = so_error
        st.early.append(Error(run_id=st.run_id, from_=AGENT, payload=ErrorPayload(error=so_error)))
    st.pending = bool(st.early or st.notify)


def _response_metadata(st: StepState, part: ResponseMetadataPart) -> Handled:
    st.response = dict(part)
    return None


def _ignore(st: StepState, part: StreamStartPart) -> Handled:
    return None


def _error(st: StepState, part: ErrorPart) -> Handled:
    st.error = part["error"]
    st.fatal = True
    extra = {k: v for k, v in part.items() if k != "error"}
    st.route = FATAL
    return Error(run_id=st.run_id, from_=AGENT, payload=ErrorPayload(error=st.error, extra=extra))


def _raw(st: StepState, part: RawPart) -> Handled:
    raw_value = part["rawValue"]
    payload = RawPayload(extra=raw_value if isinstance(raw_value, dict) else {"value": raw_value})
    st.route = RAW
    return Raw(run_id=st.run_id, from_=AGENT, payload=payload)


def convert_unknown(st: StepState, part: Mapping[str, Any]) -> Handled:
    """Part types this table does not know travel as ``raw``."""
    st.route = RAW
    return Raw(run_id=st.run_id, from_=AGENT, payload=RawPayload(extra=dict(part)))


def _source(st: StepState, part: SourcePart) -> Handled:
    st.has_content = True
    is_url = part["sourceType"] == "url"
    return Source(
        run_id=st.run_id,
        from_=AGENT,
        payload=SourcePayload(
            id=part["id"],
            source_type="url" if is_url else "document",
            title=part.get("title") or "",
            mime_type=None if is_url else part.get("mediaType"),
            filename=None if is_url else part.get("filename"),
            url=part.get("url") if is_url else None,
            provider_metadata=part.get("providerMetadata"),
        ),
    )


def _file(st: StepState, part: FilePart) -> Handled:
    st.has_content = True
    data = part["data"]
    media_type = part["mediaType"]
    st.content.append({"type": "file", "data": data, "mediaType": media_type})
    return File(
        run_id=st.run_id,
        from_=AGENT,
        payload=FilePayload(
            data=data,
            mime_type=media_type,
            provider_metadata=part.get("providerMetadata"),
            extra={"base64": data} if isinstance(data, str) and "://" not in data else {},
        ),
    )


def _reasoning_file(st: StepState, part: ReasoningFilePart) -> Handled:
    st.has_content = True
    payload = ReasoningFilePayload(
        data=part["data"],
        mime_type=part["mediaType"],
        provider_metadata=part.get("providerMetadata"),
    )
    return ReasoningFile(run_id=st.run_id, from_=AGENT, payload=payload)


def _tool_result(st: StepState, part: ToolResultPart) -> Handled:
    st.has_content = True
    cid = part["toolCallId"]
    st.content.append(
        {
            "type": "tool-result",
            "toolCallId": cid,
            "toolName": part["toolName"],
            "output": model_output(part["result"]),
            "providerExecuted": True,
        }
    )
    chunk = ToolResult(
        run_id=st.run_id,
        from_=AGENT,
        payload=ToolResultPayload(
            tool_call_id=cid,
            tool_name=part["toolName"],
            result=part["result"],
            is_error=part.get("isError"),
            provider_executed=part.get("providerExecuted"),
            provider_metadata=part.get("providerMetadata"),
        ),
    )
    st.route = QUIET  # provider-executed results do not reach onChunk (Mastra)
    return chunk


def _custom(st: StepState, part: CustomPart) -> Handled:
    payload = CustomPayload(kind=part["kind"], provider_metadata=part.get("providerMetadata"))
    return Custom(run_id=st.run_id, from_=AGENT, payload=payload)


HANDLERS: dict[str, Handler] = {
    "text-delta": _text_delta,
    "reasoning-delta": _reasoning_delta,
    "tool-input-delta": _tool_input_delta,
    "text-start": _text_start,
    "text-end": _text_end,
    "reasoning-start": _reasoning_start,
    "reasoning-end": _reasoning_end,
    "tool-input-start": _tool_input_start,
    "tool-input-end": _tool_input_end,
    "tool-call": _tool_call,
    "finish": _finish,
    "response-metadata": _response_metadata,
    "stream-start": _ignore,
    "error": _error,
    "raw": _raw,
    "source": _source,
    "file": _file,
    "reasoning-file": _reasoning_file,
    "tool-result": _tool_result,
    "custom": _custom,
}
"""Part type → handler; anything else goes to `convert_unknown`."""
