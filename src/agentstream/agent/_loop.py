"""The agent loop: the run's chunk stream exactly as Mastra's loop produces it (before ``ModelOutput``).

Per step: ``step-start``, the provider parts converted to chunks (``convertFullStreamChunkToMastra``,
incl. ``raw`` and the provider's own ``tool-call``), tool execution (``tool-output`` live, then
``tool-result`` / ``tool-error`` in call order), ``step-finish`` with that step's usage. One ``start``
before and one ``finish`` after. ``ModelOutput`` does the accounting (synthetic tool-call, usage sums,
raw filtering, awaitables, callbacks), so none of that happens here.

Seams for later work (processors, goals, approvals, background tasks): :class:`LoopHooks`.

What the provider sent and got back (a :class:`~agentstream.models.ModelStream`'s ``request`` /
``response``) goes into ``step-start.request`` and the step's metadata (``request``, ``headers``);
after a step whose response header ``x-ratelimit-remaining-tokens`` is between 0 and 2000 (exclusive)
the loop pauses 10 s before the next model call (Mastra's ``model.loop.ts``; ``RunConfig.sleep``).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._abort import AbortController, AbortSignal
from ..chunks import (
    UNSET,
    Abort,
    ChunkFrom,
    Custom,
    CustomPayload,
    Error,
    ErrorPayload,
    File,
    FilePayload,
    Finish,
    FinishPayload,
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
    Start,
    StartPayload,
    StepFinish,
    StepFinishPayload,
    StepStart,
    StepStartPayload,
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
    ToolError,
    ToolErrorPayload,
    ToolResult,
    ToolResultPayload,
)
from ..chunks._codec import Chunk, format_date
from ..models._base import CallOptions, LanguageModel
from ..tools import Tool, ToolContext, ToolWriter
from ..tools._errors import ToolErrorMask, reported_tool_error
from ._convert import (
    normalize_finish_reason,
    normalize_usage,
    parse_streamed_args,
    parse_tool_input,
    try_parse_streamed_args,
)
from ._structured import StructuredOutputConfig, StructuredOutputState

__all__ = [
    "AgentStreamError",
    "LoopHooks",
    "PendingToolCall",
    "RunConfig",
    "StepInfo",
    "ToolNotFoundError",
    "run_loop",
]

log = logging.getLogger("agentstream.agent")

AGENT = ChunkFrom.AGENT
TERMINAL_FINISH_REASONS = frozenset({"stop", "error", "length", "content-filter"})
NO_TOOLS_REASONS = frozenset({"error", "length", "content-filter"})
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
CONTENT_TYPES = frozenset(
    {
        "text-delta",
        "reasoning-delta",
        "tool-call",
        "tool-call-delta",
        "tool-result",
        "object",
        "object-result",
        "file",
        "source",
    }
)


class ToolNotFoundError(Exception):
    name = "ToolNotFoundError"


class AgentStreamError(Exception):
    """A synthetic loop error (``AGENT_STREAM_ERROR``, empty ``other`` step, timeouts)."""

    def __init__(self, message: str, code: str = "AGENT_STREAM_ERROR") -> None:
        super().__init__(message)
        self.code = code
        self.details = {"id": code, "domain": "AGENT", "category": "THIRD_PARTY"}


class StepTimeoutError(TimeoutError):
    name = "TimeoutError"


@dataclass
class StepInfo:
    """What ``stop_when`` conditions and hooks see about one finished step."""

    number: int
    text: str
    finish_reason: str
    is_continued: bool
    tool_calls: list[dict[str, Any]]
    tool_results: list[dict[str, Any]]
    usage: dict[str, Any]
    errored: bool = False


@dataclass
class PendingToolCall:
    """One client-side tool call of a step, as the loop runs it."""

    call_id: str
    name: str
    exec_args: Any
    """The arguments the tool is run with (the streamed JSON, or the provider's repaired input)."""
    history_args: Any
    """The arguments recorded in the message history (the provider's ``tool-call`` input)."""
    provider_executed: bool | None
    args: Any = None
    """``exec_args`` validated against the tool's input schema (set just before the tool runs)."""


_Call = PendingToolCall


class LoopHooks:
    """Where processors, goals, approvals and background tasks plug into each step (no-ops here).

    * ``process_chunk(chunk)`` — per-chunk output processing; return the chunk, a replacement, or
      ``None`` to drop it (output processors / tripwire).
    * ``execute_tool(call, tool, context, default)`` — the tool-execution seam: called for every
      client tool call whose tool exists and whose input validated (``call.args``); the default
      awaits ``default()``, which runs the tool. An override may run it elsewhere instead (the
      background-task package dispatches eligible tools and returns a placeholder result). What it
      returns is the tool's result; what it raises becomes a ``tool-error``. It may stream chunks
      into the run with ``context.writer.emit(chunk)`` (e.g. ``background-task-started``, which
      also reaches ``on_chunk``); they appear before the step's ``tool-result`` chunks.
    * ``after_tools(step, results)`` — after the step's tools ran (approvals, background dispatch).
    * ``end_of_step(step)`` — before ``step-finish``; return ``True``/``False`` to force continuing or
      stopping, ``None`` to keep the loop's decision (goals, is-task-complete).
    """

    process_chunk: Callable[[Chunk], Chunk | None] | None = None

    async def execute_tool(
        self,
        call: PendingToolCall,
        tool: Tool,
        context: ToolContext,
        default: Callable[[], Awaitable[Any]],
    ) -> Any:
        return await default()

    async def after_tools(self, step: StepInfo, results: list[Any]) -> None:
        return None

    async def end_of_step(self, step: StepInfo) -> bool | None:
        return None


StopCondition = Callable[[list[StepInfo]], bool | Awaitable[bool]]


@dataclass
class RunConfig:
    agent_id: str
    run_id: str
    message_id: str
    model: LanguageModel
    prompt: list[dict[str, Any]]
    tools: dict[str, Tool]
    signal: AbortSignal
    """Fires on user abort or when the output is cancelled: ends the run with an ``abort`` chunk."""
    now_ms: Callable[[], float]
    max_steps: int = 5
    stop_when: list[StopCondition] = field(default_factory=list)
    on_chunk: Callable[[Chunk], Any] | None = None
    include_raw_chunks: bool = False
    structured_output: StructuredOutputConfig | None = None
    tool_choice: Any = None
    active_tools: list[str] | None = None
    model_settings: dict[str, Any] = field(default_factory=dict)
    tool_call_concurrency: int = 10
    hooks: LoopHooks = field(default_factory=LoopHooks)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    """Used for the rate-limit pause between steps (inject a virtual clock in tests)."""
    on_tool_error: ToolErrorMask | None = None


_DONE = object()
_ABORTED = object()
RATE_LIMIT_HEADER = "x-ratelimit-remaining-tokens"
RATE_LIMIT_THRESHOLD = 2000
RATE_LIMIT_PAUSE_S = 10.0
_LEADING_INT = re.compile(r"\s*([+-]?\d+)")


def _tool_choice(choice: Any) -> dict[str, Any] | None:
    if choice is None:
        return None
    if isinstance(choice, str):
        if choice in ("auto", "none", "required"):
            return {"type": choice}
        return {"type": "tool", "toolName": choice}
    if isinstance(choice, dict):
        if "toolName" in choice or "tool_name" in choice:
            return {"type": "tool", "toolName": choice.get("toolName", choice.get("tool_name"))}
        return dict(choice)
    raise TypeError(f"tool_choice must be 'auto', 'none', 'required', a tool name or a dict, got {choice!r}")


def _model_output(result: Any) -> dict[str, Any]:
    if isinstance(result, str):
        return {"type": "text", "value": result}
    return {"type": "json", "value": result}


async def _call_on_chunk(on_chunk: Callable[[Chunk], Any], chunk: Chunk) -> None:
    try:
        result = on_chunk(chunk)
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("on_chunk callback failed")


def _tool_not_found(name: str, tools: dict[str, Tool]) -> ToolNotFoundError:
    available = ", ".join(tools) or "none"
    return ToolNotFoundError(
        f'Tool "{name}" not found. Available tools: {available}. Call tools by their exact name only '
        "\u2014 never add prefixes, namespaces, or colons."
    )


async def run_loop(cfg: RunConfig) -> AsyncIterator[Chunk]:
    """The run's chunk stream (see the module docstring)."""
    run_id = cfg.run_id
    signal = cfg.signal
    settings = cfg.model_settings
    timeout = settings.get("timeout") or {}
    total_ms = timeout.get("total_ms", timeout.get("totalMs"))
    step_ms = timeout.get("step_ms", timeout.get("stepMs"))
    first_ms = timeout.get("first_chunk_ms", timeout.get("firstChunkMs"))
    loop = asyncio.get_running_loop()
    total_ctrl = AbortController()
    total_timer = (
        loop.call_later(
            total_ms / 1000, total_ctrl.abort, StepTimeoutError(f"total timeout of {total_ms} ms exceeded")
        )
        if total_ms
        else None
    )
    active = (
        cfg.tools
        if cfg.active_tools is None
        else {k: v for k, v in cfg.tools.items() if k in cfg.active_tools}
    )
    tool_defs = [t.definition() for t in active.values()]
    messages: list[dict[str, Any]] = list(cfg.prompt)
    first_non_system = next((i for i, m in enumerate(messages) if m.get("role") != "system"), len(messages))
    user_messages = messages[first_non_system:]
    on_chunk = cfg.on_chunk
    process = cfg.hooks.process_chunk
    include_raw = cfg.include_raw_chunks
    steps: list[StepInfo] = []
    model = cfg.model
    call_settings: CallOptions = _call_settings(settings)
    model_metadata = {
        "modelId": model.model_id,
        "modelVersion": getattr(model, "specification_version", "v2"),
        "modelProvider": model.provider,
    }

    yield Start(run_id=run_id, from_=AGENT, payload=StartPayload(id=cfg.agent_id, message_id=cfg.message_id))
    last_finish: dict[str, Any] | None = None
    try:
        step_no = 0
        while True:
            step_no += 1
            step_ctrl = AbortController()
            model_signal = AbortSignal.any([signal, total_ctrl.signal, step_ctrl.signal])
            timers: list[asyncio.TimerHandle] = []
            if step_ms:
                timers.append(
                    loop.call_later(
                        step_ms / 1000,
                        step_ctrl.abort,
                        StepTimeoutError(f"step timeout of {step_ms} ms exceeded"),
                    )
                )
            first_timer = (
                loop.call_later(
                    first_ms / 1000, step_ctrl.abort, StepTimeoutError(f"no first chunk within {first_ms} ms")
                )
                if first_ms
                else None
            )
            options: CallOptions = {
                **call_settings,
                "prompt": list(messages),
                "include_raw_chunks": include_raw,
                "abort_signal": model_signal,
            }
            if tool_defs:
                options["tools"] = tool_defs
                options["tool_choice"] = _tool_choice(cfg.tool_choice) or {"type": "auto"}
            so: StructuredOutputState | None = None
            if cfg.structured_output is not None:
                so = StructuredOutputState(cfg.structured_output, run_id)
                options["response_format"] = {"type": "json", "schema": cfg.structured_output.json_schema}

            # --- step state
            warnings: list[Any] = []
            response: dict[str, Any] = {}
            finish_reason: str | None = None
            raw_reason: str | None = None
            usage: dict[str, Any] = {}
            provider_metadata: Any = None
            error: Any = UNSET
            aborted = False
            timed_out: BaseException | None = None
            text_chunks: list[str] = []
            content: list[dict[str, Any]] = []
            text_acc: dict[str, list[str]] = {}
            text_part: dict[str, dict[str, Any]] = {}
            reasoning_acc: dict[str, list[str]] = {}
            reasoning_part: dict[str, dict[str, Any]] = {}
            calls: list[_Call] = []
            streamed: dict[str, list[str]] = {}
            stream_meta: dict[str, dict[str, Any]] = {}
            has_content = False
            created_at = int(cfg.now_ms())
            started_at = created_at

            stream: AsyncIterator[dict[str, Any]] | None = None
            first: dict[str, Any] | None = None
            try:
                stream = model.do_stream(options)
                first = await stream.__anext__()
            except StopAsyncIteration:
                first = None
            except Exception as exc:
                aborted, timed_out, error = _classify(exc, signal, step_ctrl, total_ctrl)
            if first_timer is not None:
                first_timer.cancel()
            if first is not None and first.get("type") == "stream-start":
                warnings = list(first.get("warnings") or [])
                first = None
            request: dict[str, Any] = _sent_request(stream)
            start_chunk = StepStart(
                run_id=run_id,
                from_=AGENT,
                payload=StepStartPayload(
                    request=request, warnings=warnings, message_id=cfg.message_id, started_at=started_at
                ),
            )
            yield start_chunk
            if error is not UNSET:
                yield Error(
                    run_id=run_id, from_=AGENT, payload=ErrorPayload(error=error, extra={"type": "error"})
                )

            if stream is not None and error is UNSET and not aborted and timed_out is None:
                pending_first = first
                try:
                    while True:
                        if pending_first is not None:
                            part = pending_first
                            pending_first = None
                        else:
                            try:
                                part = await stream.__anext__()
                            except StopAsyncIteration:
                                break
                        if signal.aborted:
                            aborted = True
                            break
                        t = part.get("type")
                        chunk: Any
                        if t == "text-delta":
                            delta = part.get("delta", "")
                            pm = part.get("providerMetadata")
                            if not delta and pm is None:
                                continue
                            tid = part.get("id", "")
                            acc = text_acc.get(tid)
                            if acc is None:
                                acc = text_acc[tid] = []
                                text_part[tid] = {"type": "text", "text": "", "providerOptions": None}
                                content.append(text_part[tid])
                            acc.append(delta)
                            text_chunks.append(delta)
                            if pm is not None:
                                text_part[tid]["providerOptions"] = pm
                            has_content = True
                            if so is not None:
                                obj = so.feed(delta)
                                if obj is not None:
                                    yield obj
                            chunk = TextDelta(
                                run_id=run_id,
                                from_=AGENT,
                                payload=TextDeltaPayload(id=tid, text=delta, provider_metadata=pm),
                            )
                        elif t == "reasoning-delta":
                            rid = part.get("id", "")
                            delta = part.get("delta", "")
                            pm = part.get("providerMetadata")
                            racc = reasoning_acc.get(rid)
                            if racc is None:
                                racc = reasoning_acc[rid] = []
                                reasoning_part[rid] = {
                                    "type": "reasoning",
                                    "text": "",
                                    "providerOptions": None,
                                }
                                content.append(reasoning_part[rid])
                            racc.append(delta)
                            if pm is not None:
                                reasoning_part[rid]["providerOptions"] = pm
                            has_content = True
                            chunk = ReasoningDelta(
                                run_id=run_id,
                                from_=AGENT,
                                payload=ReasoningDeltaPayload(id=rid, text=delta, provider_metadata=pm),
                            )
                        elif t == "tool-input-delta":
                            delta = part.get("delta", "")
                            if not delta:
                                continue
                            cid = part.get("id", "")
                            streamed.setdefault(cid, []).append(delta)
                            has_content = True
                            meta = stream_meta.get(cid)
                            chunk = ToolCallDelta(
                                run_id=run_id,
                                from_=AGENT,
                                payload=ToolCallDeltaPayload(
                                    args_text_delta=delta,
                                    tool_call_id=cid,
                                    provider_metadata=part.get("providerMetadata"),
                                    tool_name=meta["toolName"] if meta else None,
                                ),
                            )
                        elif t == "text-start":
                            tid = part.get("id", "")
                            pm = part.get("providerMetadata")
                            if tid not in text_acc:
                                text_acc[tid] = []
                                text_part[tid] = {"type": "text", "text": "", "providerOptions": pm}
                                content.append(text_part[tid])
                            chunk = TextStart(
                                run_id=run_id,
                                from_=AGENT,
                                payload=TextStartPayload(id=tid, provider_metadata=pm),
                            )
                        elif t == "text-end":
                            tid = part.get("id", "")
                            pm = part.get("providerMetadata")
                            if pm is not None and tid in text_part:
                                text_part[tid]["providerOptions"] = pm
                            extra = {k: v for k, v in part.items() if k not in ("id", "providerMetadata")}
                            chunk = TextEnd(
                                run_id=run_id,
                                from_=AGENT,
                                payload=TextEndPayload(id=tid, provider_metadata=pm, extra=extra),
                            )
                        elif t == "reasoning-start" or t == "reasoning-end":
                            rid = part.get("id", "")
                            pm = part.get("providerMetadata")
                            if rid not in reasoning_acc:
                                reasoning_acc[rid] = []
                                reasoning_part[rid] = {"type": "reasoning", "text": "", "providerOptions": pm}
                                content.append(reasoning_part[rid])
                            elif pm is not None:
                                reasoning_part[rid]["providerOptions"] = pm
                            if t == "reasoning-start":
                                chunk = ReasoningStart(
                                    run_id=run_id,
                                    from_=AGENT,
                                    payload=ReasoningStartPayload(id=rid, provider_metadata=pm),
                                )
                            else:
                                chunk = ReasoningEnd(
                                    run_id=run_id,
                                    from_=AGENT,
                                    payload=ReasoningEndPayload(id=rid, provider_metadata=pm),
                                )
                        elif t == "tool-input-start":
                            cid = part.get("id", "")
                            stream_meta[cid] = part
                            streamed.setdefault(cid, [])
                            chunk = ToolCallInputStreamingStart(
                                run_id=run_id,
                                from_=AGENT,
                                payload=ToolCallInputStreamingStartPayload(
                                    tool_call_id=cid,
                                    tool_name=part.get("toolName", ""),
                                    provider_executed=part.get("providerExecuted"),
                                    provider_metadata=part.get("providerMetadata"),
                                    dynamic=part.get("dynamic"),
                                ),
                            )
                        elif t == "tool-input-end":
                            cid = part.get("id", "")
                            chunk = ToolCallInputStreamingEnd(
                                run_id=run_id,
                                from_=AGENT,
                                payload=ToolCallInputStreamingEndPayload(
                                    tool_call_id=cid, provider_metadata=part.get("providerMetadata")
                                ),
                            )
                            if on_chunk is not None and cid in stream_meta:
                                # What Mastra's onChunk sees: the end chunk, then the synthetic tool-call.
                                meta = stream_meta[cid]
                                await _call_on_chunk(on_chunk, chunk)
                                await _call_on_chunk(
                                    on_chunk,
                                    ToolCall(
                                        run_id=run_id,
                                        from_=AGENT,
                                        payload=ToolCallPayload(
                                            tool_call_id=cid,
                                            tool_name=meta.get("toolName", ""),
                                            args=parse_streamed_args("".join(streamed.get(cid, []))),
                                            provider_executed=meta.get("providerExecuted"),
                                            provider_metadata=meta.get("providerMetadata"),
                                            dynamic=meta.get("dynamic"),
                                        ),
                                    ),
                                )
                                if process is None:
                                    yield chunk
                                    continue
                        elif t == "tool-call":
                            cid = part.get("toolCallId", "")
                            name = part.get("toolName", "")
                            ok, args = parse_tool_input(part.get("input"))
                            if not ok:
                                log.error(
                                    "could not parse tool-call input for %s: %r", name, part.get("input")
                                )
                            pexec = part.get("providerExecuted")
                            exec_args = args if ok else {}
                            if cid in streamed:
                                # Mastra runs the tool with {} when the streamed JSON does not parse;
                                # we run it with the provider's repaired input (docs/decisions.md).
                                parsed_ok, streamed_args = try_parse_streamed_args("".join(streamed[cid]))
                                if parsed_ok or not ok:
                                    exec_args = streamed_args
                            calls.append(_Call(cid, name, exec_args, args if ok else {}, pexec))
                            call_part: dict[str, Any] = {
                                "type": "tool-call",
                                "toolCallId": cid,
                                "toolName": name,
                                "input": args if ok else {},
                            }
                            if pexec:
                                call_part["providerExecuted"] = True
                            content.append(call_part)
                            has_content = True
                            chunk = ToolCall(
                                run_id=run_id,
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
                            if cid in stream_meta:  # onChunk already saw the synthetic call
                                if process is not None:
                                    chunk = process(chunk)
                                    if chunk is None:
                                        continue
                                yield chunk
                                continue
                        elif t == "finish":
                            finish_reason, raw_reason = normalize_finish_reason(part.get("finishReason"))
                            provider_metadata = part.get("providerMetadata")
                            usage = normalize_usage(part.get("usage"), provider_metadata)
                            if so is not None and not any(not c.provider_executed for c in calls):
                                result, so_error = so.finish(finish_reason)
                                if result is not None:
                                    has_content = True
                                    yield result
                                if so_error is not None:
                                    error = so_error
                                    yield Error(
                                        run_id=run_id, from_=AGENT, payload=ErrorPayload(error=so_error)
                                    )
                            continue
                        elif t == "response-metadata":
                            response = part
                            continue
                        elif t == "stream-start":
                            continue
                        elif t == "error":
                            error = part.get("error")
                            extra = {k: v for k, v in part.items() if k != "error"}
                            chunk = Error(
                                run_id=run_id, from_=AGENT, payload=ErrorPayload(error=error, extra=extra)
                            )
                            if process is not None:
                                chunk = process(chunk) or chunk
                            yield chunk
                            break
                        elif t == "raw":
                            raw_value = part.get("rawValue")
                            chunk = Raw(
                                run_id=run_id,
                                from_=AGENT,
                                payload=RawPayload(
                                    extra=raw_value if isinstance(raw_value, dict) else {"value": raw_value}
                                ),
                            )
                            if on_chunk is not None and include_raw:
                                await _call_on_chunk(on_chunk, chunk)
                            yield chunk
                            continue
                        elif t == "source":
                            has_content = True
                            is_url = part.get("sourceType") == "url"
                            chunk = Source(
                                run_id=run_id,
                                from_=AGENT,
                                payload=SourcePayload(
                                    id=part.get("id", ""),
                                    source_type="url" if is_url else "document",
                                    title=part.get("title") or "",
                                    mime_type=None if is_url else part.get("mediaType"),
                                    filename=None if is_url else part.get("filename"),
                                    url=part.get("url") if is_url else None,
                                    provider_metadata=part.get("providerMetadata"),
                                ),
                            )
                        elif t == "file" or t == "reasoning-file":
                            has_content = True
                            data = part.get("data")
                            media_type = part.get("mediaType", "application/octet-stream")
                            if t == "file":
                                content.append({"type": "file", "data": data, "mediaType": media_type})
                                chunk = File(
                                    run_id=run_id,
                                    from_=AGENT,
                                    payload=FilePayload(
                                        data=data,
                                        mime_type=media_type,
                                        provider_metadata=part.get("providerMetadata"),
                                        extra={"base64": data}
                                        if isinstance(data, str) and "://" not in data
                                        else {},
                                    ),
                                )
                            else:
                                chunk = ReasoningFile(
                                    run_id=run_id,
                                    from_=AGENT,
                                    payload=ReasoningFilePayload(
                                        data=data,
                                        mime_type=media_type,
                                        provider_metadata=part.get("providerMetadata"),
                                    ),
                                )
                        elif t == "tool-result":
                            has_content = True
                            cid = part.get("toolCallId", "")
                            content.append(
                                {
                                    "type": "tool-result",
                                    "toolCallId": cid,
                                    "toolName": part.get("toolName", ""),
                                    "output": _model_output(part.get("result")),
                                    "providerExecuted": True,
                                }
                            )
                            chunk = ToolResult(
                                run_id=run_id,
                                from_=AGENT,
                                payload=ToolResultPayload(
                                    tool_call_id=cid,
                                    tool_name=part.get("toolName", ""),
                                    result=part.get("result"),
                                    is_error=part.get("isError"),
                                    provider_executed=part.get("providerExecuted"),
                                    provider_metadata=part.get("providerMetadata"),
                                ),
                            )
                            if process is not None:
                                chunk = process(chunk)
                                if chunk is None:
                                    continue
                            yield chunk  # provider-executed results do not reach onChunk (Mastra)
                            continue
                        elif t == "custom":
                            chunk = Custom(
                                run_id=run_id,
                                from_=AGENT,
                                payload=CustomPayload(
                                    kind=part.get("kind", ""), provider_metadata=part.get("providerMetadata")
                                ),
                            )
                        else:  # unknown part types travel as raw
                            chunk = Raw(run_id=run_id, from_=AGENT, payload=RawPayload(extra=dict(part)))
                            if on_chunk is not None and include_raw:
                                await _call_on_chunk(on_chunk, chunk)
                            yield chunk
                            continue
                        if process is not None:
                            chunk = process(chunk)
                            if chunk is None:
                                continue
                        if on_chunk is not None and chunk.type in ON_CHUNK_TYPES:
                            await _call_on_chunk(on_chunk, chunk)
                        yield chunk
                except Exception as exc:
                    aborted, timed_out, error = _classify(exc, signal, step_ctrl, total_ctrl)
                    if error is not UNSET:
                        yield Error(
                            run_id=run_id,
                            from_=AGENT,
                            payload=ErrorPayload(error=exc, extra={"type": "error"}),
                        )
                finally:
                    for timer in timers:
                        timer.cancel()
                    aclose = getattr(stream, "aclose", None)
                    if aclose is not None:
                        try:
                            await aclose()
                        except Exception:
                            log.debug("closing the model stream failed", exc_info=True)
            else:
                for timer in timers:
                    timer.cancel()

            step_text = "".join(text_chunks)
            response_headers = _response_headers(stream)
            metadata: dict[str, Any] = {
                "id": response.get("id") or str(uuid.uuid4()),
                "timestamp": _timestamp(response.get("timestamp"), cfg.now_ms()),
                "modelId": response.get("modelId") or model.model_id,
            }
            if response_headers is not None:
                metadata["headers"] = response_headers
            metadata["modelMetadata"] = model_metadata
            metadata["request"] = request
            if provider_metadata is not None:
                metadata["providerMetadata"] = provider_metadata

            if aborted:
                yield Abort(run_id=run_id, from_=AGENT)
                last_finish = _aborted_finish(cfg.message_id, metadata, step_text)
                break
            if timed_out is not None:
                yield Error(run_id=run_id, from_=AGENT, payload=ErrorPayload(error=timed_out))
                if total_ctrl.signal.aborted:
                    return  # total timeout: the run fails without step-finish / finish (spec §4.6)
                error = timed_out

            if error is UNSET and finish_reason is None and stream is not None:
                finish_reason = "other"
            if error is UNSET and so is not None and not any(not c.provider_executed for c in calls):
                result, so_error = so.finish(finish_reason or "other")  # stream ended without a finish part
                if result is not None:
                    has_content = True
                    yield result
                if so_error is not None:
                    error = so_error
                    yield Error(run_id=run_id, from_=AGENT, payload=ErrorPayload(error=so_error))
            if error is UNSET and finish_reason == "error":
                error = AgentStreamError(
                    'Agent stream finished with finishReason "error" but no error part was received from the model'
                )
                yield Error(run_id=run_id, from_=AGENT, payload=ErrorPayload(error=error))
            if error is UNSET and finish_reason == "other" and not has_content:
                error = AgentStreamError(
                    'The model finished with finishReason "other" without producing any content; stopping the loop'
                )
                yield Error(run_id=run_id, from_=AGENT, payload=ErrorPayload(error=error))

            errored = error is not UNSET
            reason = "error" if errored else (finish_reason or "other")
            if errored:
                usage = usage if so is not None and finish_reason is not None else {}
            pending = [c for c in calls if not c.provider_executed] if reason not in NO_TOOLS_REASONS else []

            # --- tools
            results: list[tuple[_Call, bool, Any]] = []
            tool_errored = False
            if pending:
                queue: asyncio.Queue[Any] = asyncio.Queue()
                outcome: list[tuple[bool, Any]] = [(False, None)] * len(pending)
                semaphore = asyncio.Semaphore(max(1, cfg.tool_call_concurrency))

                put = queue.put_nowait
                tasks = [
                    asyncio.ensure_future(_run_limited(semaphore, outcome, i, cfg, active, c, messages, put))
                    for i, c in enumerate(pending)
                ]
                gathered = asyncio.gather(*tasks, return_exceptions=True)
                gathered.add_done_callback(lambda _f, put=put: put(_DONE))  # type: ignore[misc]
                remove = signal.add_listener(lambda _r, put=put: put(_ABORTED))  # type: ignore[misc]
                try:
                    while True:
                        item = await queue.get()
                        if item is _DONE:
                            break
                        if item is _ABORTED:
                            aborted = True
                            break
                        if process is not None:
                            item = process(item)
                            if item is None:
                                continue
                        if on_chunk is not None and item.type in ON_CHUNK_TYPES:
                            await _call_on_chunk(on_chunk, item)  # background-task-started
                        yield item
                finally:
                    remove()
                    for task in tasks:
                        task.cancel()
                if aborted:
                    yield Abort(run_id=run_id, from_=AGENT)
                    last_finish = _aborted_finish(cfg.message_id, metadata, step_text)
                    break
                for call, (failed, value) in zip(pending, outcome, strict=True):
                    results.append((call, failed, value))
                    tool_errored = tool_errored or failed
                    out_chunk: Any
                    if failed:
                        out_chunk = ToolError(
                            run_id=run_id,
                            from_=AGENT,
                            payload=ToolErrorPayload(
                                error=value,
                                args=call.exec_args,
                                tool_call_id=call.call_id,
                                tool_name=call.name,
                            ),
                        )
                    else:
                        out_chunk = ToolResult(
                            run_id=run_id,
                            from_=AGENT,
                            payload=ToolResultPayload(
                                args=call.exec_args,
                                tool_call_id=call.call_id,
                                tool_name=call.name,
                                result=value,
                            ),
                        )
                    if process is not None:
                        out_chunk = process(out_chunk)
                        if out_chunk is None:
                            continue
                    if on_chunk is not None:
                        await _call_on_chunk(on_chunk, out_chunk)
                    yield out_chunk

            is_continued = (not errored) and (
                bool(pending) or tool_errored or reason not in TERMINAL_FINISH_REASONS
            )
            if tool_errored:
                reason = "tool-calls"
            tool_call_dicts = [
                {"toolCallId": c.call_id, "toolName": c.name, "args": c.exec_args} for c in calls
            ]
            info = StepInfo(
                number=step_no,
                text=step_text,
                finish_reason=reason,
                is_continued=is_continued,
                tool_calls=tool_call_dicts,
                tool_results=[
                    {"toolCallId": c.call_id, "toolName": c.name, "result": v, "isError": f}
                    for c, f, v in results
                ],
                usage=usage,
                errored=errored,
            )
            await cfg.hooks.after_tools(info, results)
            forced = await cfg.hooks.end_of_step(info)
            if forced is not None:
                is_continued = info.is_continued = forced

            # --- history for the next call
            new_messages: list[dict[str, Any]] = []
            assistant = _assistant_content(
                content, text_acc, text_part, reasoning_acc, reasoning_part, created_at
            )
            if assistant:
                new_messages.append({"role": "assistant", "content": assistant})
            if results:
                new_messages.append(
                    {
                        "role": "tool",
                        "content": [
                            {
                                "type": "tool-result",
                                "toolCallId": c.call_id,
                                "toolName": c.name,
                                "output": {"type": "error-text", "value": str(v)} if f else _model_output(v),
                                "input": c.history_args,
                            }
                            for c, f, v in results
                        ],
                    }
                )
            messages.extend(new_messages)
            all_messages = messages[first_non_system:]
            step_result: dict[str, Any] = {
                "reason": reason,
                "isContinued": is_continued,
                "warnings": warnings,
            }
            if raw_reason is not None:
                step_result["rawReason"] = raw_reason
            output: dict[str, Any] = {"text": step_text, "toolCalls": tool_call_dicts, "usage": usage}
            message_sets = {
                "all": all_messages,
                "user": user_messages,
                "nonUser": all_messages[len(user_messages) :],
            }
            yield StepFinish(
                run_id=run_id,
                from_=AGENT,
                payload=StepFinishPayload(
                    message_id=cfg.message_id,
                    step_result=step_result,
                    metadata=metadata,
                    output=output,
                    messages=message_sets,
                ),
            )
            last_finish = {
                "messageId": cfg.message_id,
                "stepResult": step_result,
                "metadata": metadata,
                "output": output,
                "messages": message_sets,
            }
            steps.append(info)
            if not is_continued:
                break
            if step_no >= cfg.max_steps:
                break
            if cfg.stop_when and await _any_stop(cfg.stop_when, steps):
                break
            if rate_limited(response_headers):
                # model.loop.ts: few tokens left in the provider's window; wait before the next call
                await _pause(cfg.sleep, RATE_LIMIT_PAUSE_S, signal)
                if signal.aborted:
                    yield Abort(run_id=run_id, from_=AGENT)
                    last_finish = _aborted_finish(cfg.message_id, metadata, "")
                    break
    finally:
        if total_timer is not None:
            total_timer.cancel()
    if last_finish is not None:
        yield _finish(run_id, last_finish)


def _finish(run_id: str, data: dict[str, Any]) -> Finish:
    return Finish(
        run_id=run_id,
        from_=AGENT,
        payload=FinishPayload(
            step_result=dict(data["stepResult"]),
            output=dict(data["output"]),
            metadata=data["metadata"],
            messages=data.get("messages"),
            extra={"messageId": data["messageId"]},
        ),
    )


async def _any_stop(conditions: list[StopCondition], steps: list[StepInfo]) -> bool:
    for condition in conditions:
        result = condition(steps)
        if inspect.isawaitable(result):
            result = await result
        if result:
            return True
    return False


def _classify(
    exc: BaseException, signal: AbortSignal, step_ctrl: AbortController, total_ctrl: AbortController
) -> tuple[bool, BaseException | None, Any]:
    """``(aborted, timed_out, error)`` for an exception out of the model stream.

    The user's abort wins; a fired step / first-chunk / total timeout makes it a timeout (the
    exception itself if it is a ``TimeoutError``, else the timer's reason); anything else is a
    step error (``UNSET`` when there is none).
    """
    if signal.aborted:
        return True, None, UNSET
    if step_ctrl.signal.aborted or total_ctrl.signal.aborted:
        return False, exc if isinstance(exc, TimeoutError) else _timeout_reason(step_ctrl, total_ctrl), UNSET
    return False, None, exc


def _call_settings(settings: Mapping[str, Any]) -> CallOptions:
    """The ``model_settings`` that are call options, under their ``CallOptions`` names."""

    def get(*keys: str) -> Any:
        return next((settings[k] for k in keys if settings.get(k) is not None), None)

    out: CallOptions = {}
    if (value := get("temperature")) is not None:
        out["temperature"] = value
    if (value := get("top_p")) is not None:
        out["top_p"] = value
    if (value := get("top_k")) is not None:
        out["top_k"] = value
    if (value := get("max_output_tokens", "max_tokens")) is not None:
        out["max_output_tokens"] = value
    if (value := get("stop_sequences")) is not None:
        out["stop_sequences"] = value
    if (value := get("seed")) is not None:
        out["seed"] = value
    if (value := get("presence_penalty")) is not None:
        out["presence_penalty"] = value
    if (value := get("frequency_penalty")) is not None:
        out["frequency_penalty"] = value
    if (value := get("headers")) is not None:
        out["headers"] = value
    if (value := get("provider_options")) is not None:
        out["provider_options"] = value
    return out


def _sent_request(stream: Any) -> dict[str, Any]:
    """``{"body": ...}`` a :class:`~agentstream.models.ModelStream` reports; ``{}`` for other streams."""
    request = getattr(stream, "request", None)
    return dict(request) if isinstance(request, Mapping) else {}


def _response_headers(stream: Any) -> dict[str, str] | None:
    response = getattr(stream, "response", None)
    headers = response.get("headers") if isinstance(response, Mapping) else None
    return dict(headers) if isinstance(headers, Mapping) else None


def rate_limited(headers: Mapping[str, str] | None) -> bool:
    """``x-ratelimit-remaining-tokens`` parses (``parseInt``) to ``0 < n < 2000``."""
    if not headers:
        return False
    value = headers.get(RATE_LIMIT_HEADER)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == RATE_LIMIT_HEADER), None)
    match = _LEADING_INT.match(value) if isinstance(value, str) else None
    return match is not None and 0 < int(match.group(1)) < RATE_LIMIT_THRESHOLD


async def _pause(sleep: Callable[[float], Awaitable[None]], seconds: float, signal: AbortSignal) -> None:
    """``await sleep(seconds)``, cut short when the run is aborted."""
    if signal.aborted:
        return
    sleeper = asyncio.ensure_future(sleep(seconds))
    waiter = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait((sleeper, waiter), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (sleeper, waiter):
            task.cancel()


def _aborted_finish(message_id: str, metadata: dict[str, Any], step_text: str) -> dict[str, Any]:
    return {
        "messageId": message_id,
        "stepResult": {"reason": "tripwire", "isContinued": False},
        "metadata": metadata,
        "output": {"text": step_text, "toolCalls": [], "usage": {}},
    }


def _timeout_reason(*controllers: AbortController) -> BaseException:
    for ctrl in controllers:
        if ctrl.signal.aborted and isinstance(ctrl.signal.reason, BaseException):
            return ctrl.signal.reason
    return StepTimeoutError("timed out")


def _timestamp(value: Any, now_ms: float) -> str:
    from datetime import UTC, datetime

    if isinstance(value, datetime):
        return format_date(value)
    if isinstance(value, str):
        return value
    return format_date(datetime.fromtimestamp(now_ms / 1000, tz=UTC))


def _assistant_content(
    content: list[dict[str, Any]],
    text_acc: dict[str, list[str]],
    text_part: dict[str, dict[str, Any]],
    reasoning_acc: dict[str, list[str]],
    reasoning_part: dict[str, dict[str, Any]],
    created_at: int,
) -> list[dict[str, Any]]:
    by_obj: dict[int, str] = {id(p): k for k, p in text_part.items()}
    by_reasoning: dict[int, str] = {id(p): k for k, p in reasoning_part.items()}
    out: list[dict[str, Any]] = []
    for part in content:
        kind = part["type"]
        if kind == "text" or kind == "reasoning":
            key = by_obj.get(id(part)) if kind == "text" else by_reasoning.get(id(part))
            acc = text_acc if kind == "text" else reasoning_acc
            text = "".join(acc.get(key or "", []))
            if not text and (kind == "text" or part.get("providerOptions") is None):
                continue
            options = dict(part.get("providerOptions") or {})
            options["mastra"] = {"createdAt": created_at}
            out.append({"type": kind, "text": text, "providerOptions": options})
        else:
            out.append(part)
    return out


async def _run_limited(
    semaphore: asyncio.Semaphore,
    outcome: list[tuple[bool, Any]],
    index: int,
    cfg: RunConfig,
    tools: dict[str, Tool],
    call: _Call,
    messages: list[dict[str, Any]],
    emit: Callable[[Chunk], None],
) -> None:
    async with semaphore:
        outcome[index] = await _execute(cfg, tools, call, messages, emit)


async def _execute(
    cfg: RunConfig,
    tools: dict[str, Tool],
    call: _Call,
    messages: list[dict[str, Any]],
    emit: Callable[[Chunk], None],
) -> tuple[bool, Any]:
    """Run one tool call: ``(False, result)`` or ``(True, error)``. Never raises."""
    tool_obj = tools.get(call.name)
    if tool_obj is None:
        return True, _tool_not_found(call.name, tools)
    parsed, invalid = tool_obj.validation_error(call.exec_args)
    if invalid is not None:
        log.warning("Tool input validation failed for %s: %s", call.name, invalid["message"])
        return False, invalid
    context = ToolContext(
        run_id=cfg.run_id,
        tool_call_id=call.call_id,
        tool_name=call.name,
        agent_id=cfg.agent_id,
        abort_signal=cfg.signal,
        writer=ToolWriter(emit, run_id=cfg.run_id, tool_call_id=call.call_id, tool_name=call.name),
        messages=list(messages),
    )
    call.args = parsed

    async def default() -> Any:
        return await tool_obj.run(parsed, context)

    try:
        return False, await cfg.hooks.execute_tool(call, tool_obj, context, default)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return True, reported_tool_error(exc, run_id=cfg.run_id, tool_name=call.name, mask=cfg.on_tool_error)
