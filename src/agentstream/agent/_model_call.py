"""One model call of a step, as `_Run` makes it (a base class of it): the call's options, opening
the call (and calling again when an error processor says so), the output seam each converted
chunk passes (`route` / `_aroute`), text a processor held back (`drain`), the step's closing
errors (`settle`) and its response metadata.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .._abort import AbortSignal
from ..chunks import (
    UNSET,
    Chunk,
    ChunkFrom,
    Error,
    ErrorPayload,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningEndPayload,
    StepStart,
    StepStartPayload,
    TextDelta,
    TextEnd,
    TextEndPayload,
    format_date,
)
from ..models import CallOptions, StreamPart
from ._deadlines import StepDeadline
from ._hooks import StepInfo
from ._parts import FATAL, ON_CHUNK_TYPES, RAW, STANDARD, finish_structured_output
from ._state import StepState
from ._tripwire import Tripwire

if TYPE_CHECKING:
    from ._loop import RunConfig

__all__ = ["AgentStreamError", "ModelCall", "normalize_tool_choice", "rate_limited", "response_headers"]

log = logging.getLogger("agentstream.agent")

AGENT = ChunkFrom.AGENT
RATE_LIMIT_HEADER = "x-ratelimit-remaining-tokens"
RATE_LIMIT_THRESHOLD = 2000
_LEADING_INT = re.compile(r"\s*([+-]?\d+)")


class AgentStreamError(Exception):
    """A synthetic loop error (``AGENT_STREAM_ERROR``, empty ``other`` step, timeouts)."""

    def __init__(self, message: str, code: str = "AGENT_STREAM_ERROR") -> None:
        super().__init__(message)
        self.code = code
        self.details = {"id": code, "domain": "AGENT", "category": "THIRD_PARTY"}


class ModelCall:
    """The model-call half of `_Run` (see the module docstring)."""

    cfg: RunConfig
    messages: list[dict[str, Any]]
    tool_defs: list[dict[str, Any]]
    call_settings: CallOptions
    process: Callable[[Chunk], Any] | None
    aroute: Callable[[StepState, Chunk], Awaitable[Chunk | None]] | None
    on_chunk: Callable[[Chunk], Any] | None
    notify_raw: bool
    deadline: StepDeadline | None

    async def _call_options(self, st: StepState, signal: AbortSignal) -> CallOptions:
        cfg = self.cfg
        options: CallOptions = {
            **self.call_settings,
            "prompt": list(self.messages),
            "include_raw_chunks": cfg.include_raw_chunks,
            "abort_signal": signal,
        }
        if self.tool_defs:
            options["tools"] = self.tool_defs
            options["tool_choice"] = normalize_tool_choice(cfg.tool_choice) or {"type": "auto"}
        if cfg.structured_output is not None:
            options["response_format"] = {"type": "json", "schema": cfg.structured_output.json_schema}
        return await cfg.hooks.prepare_step(st.number, options)

    async def _open(self, st: StepState, deadline: StepDeadline) -> StreamPart | None:
        """Start the model call and wait for its first part; a call that fails before any content
        is made again while ``on_model_error`` says so (error processors)."""
        while True:
            first = await self._open_once(st, deadline)
            error = st.error
            if error is UNSET and first is not None and first["type"] == "error":
                error = first["error"]
            if error is UNSET or st.tripwire is not None:
                return first
            info = StepInfo(st.number, "", "error", False, [], [], {}, errored=True)
            if not await self.cfg.hooks.on_model_error(info, error):
                return first
            await self.close_model(st)
            st.stream, st.error, st.warnings = None, UNSET, []

    async def _open_once(self, st: StepState, deadline: StepDeadline) -> StreamPart | None:
        """Start the model call and wait for its first part (``stream-start`` is read here)."""
        first: StreamPart | None = None
        try:
            st.stream = self.cfg.model.do_stream(await self._call_options(st, deadline.signal))
            first = await st.stream.__anext__()
        except StopAsyncIteration:
            first = None
        except Tripwire as trip:  # an input-step / LLM-request processor blocked this call
            st.tripwire = trip
            return None
        except Exception as exc:
            st.aborted, st.timed_out, st.error = deadline.classify(exc)
        deadline.first_chunk_arrived()
        if first is not None and first["type"] == "stream-start":
            st.warnings = list(first["warnings"] or [])
            first = None
        st.request = _sent_request(st.stream)
        return first

    async def open(self, st: StepState, deadline: StepDeadline) -> list[Chunk]:
        """Start the model call: ``step-start`` (and the error if the call failed at once)."""
        cfg = self.cfg
        if st.resumed is not None:
            return []  # the suspended step's model call happened in the leg that suspended
        st.first = await self._open(st, deadline)
        if st.tripwire is not None:
            return []  # the tripwire ends the run (`end`)
        payload = StepStartPayload(
            request=st.request, warnings=st.warnings, message_id=cfg.message_id, started_at=st.created_at
        )
        out: list[Chunk] = [StepStart(run_id=cfg.run_id, from_=AGENT, payload=payload)]
        if st.error is not UNSET:
            out.append(
                Error(
                    run_id=cfg.run_id,
                    from_=AGENT,
                    payload=ErrorPayload(error=st.error, extra={"type": "error"}),
                )
            )
        return out

    def parts(self, st: StepState) -> AsyncIterator[StreamPart] | None:
        """The rest of the model's parts (``None``: the step already ended)."""
        if st.stream is None or st.ended:
            return None
        first, st.first = st.first, None
        return st.stream if first is None else _prepend(first, st.stream)

    def route(self, st: StepState, chunk: Chunk) -> Chunk | None:
        """A converted chunk through the output seam, queued for ``on_chunk`` by its route
        (`_parts`); ``None`` when a processor dropped it. Only called when a run processes
        chunks or has ``on_chunk``: otherwise every chunk is streamed as converted."""
        route, st.route = st.route, STANDARD
        if route == RAW:
            if self.notify_raw:
                st.notify.append(chunk)
                st.pending = True
            return chunk
        if self.process is not None:
            processed = self.process(chunk)
            if processed is None and route != FATAL:
                return None
            chunk = processed or chunk
        if route == STANDARD and self.on_chunk is not None and chunk.type in ON_CHUNK_TYPES:
            st.notify.append(chunk)
            st.pending = True
        return chunk

    async def _aroute(self, st: StepState, chunk: Chunk) -> Chunk | None:
        """`route` for async output processing (processors): awaits it, keeps the step's text in
        step with the processed deltas, and turns a `Tripwire` into the chunk that ends the stream."""
        if st.route == RAW:
            return self.route(st, chunk)
        route, st.route = st.route, STANDARD
        assert self.process is not None
        if type(chunk) is TextEnd or type(chunk) is ReasoningEnd:
            st.text_closed.add(chunk.payload.id)
        try:
            processed = await self.process(chunk)
        except Tripwire as trip:  # the part is dropped; `end` streams the tripwire
            st.tripwire, st.fatal = trip, True
            _retext(st, chunk, None)
            return None
        if type(processed) is list:
            *written, processed = processed
            st.early.extend(written)
            st.pending = True
            _account_written(st, chunk, written)
        _retext(st, chunk, processed)
        if processed is None and route != FATAL:
            return None
        chunk = processed or chunk
        if route == STANDARD and self.on_chunk is not None and chunk.type in ON_CHUNK_TYPES:
            st.notify.append(chunk)
            st.pending = True
        return chunk

    async def drain(self, st: StepState) -> list[Chunk]:
        """Text parts the model left open (no ``text-end``: the stream ended or broke): processors
        that hold text back release it now. What they write is streamed; the ``text-end`` they are
        shown is not (the model never sent one)."""
        if self.aroute is None or st.tripwire is not None:
            return []
        assert self.process is not None
        out: list[Chunk] = []
        probes: list[Chunk] = [
            ReasoningEnd(run_id=self.cfg.run_id, from_=AGENT, payload=ReasoningEndPayload(id=rid))
            for rid in st.reasoning_acc
            if rid not in st.text_closed
        ]
        probes += [
            TextEnd(run_id=self.cfg.run_id, from_=AGENT, payload=TextEndPayload(id=tid))
            for tid in st.text_part
            if tid not in st.text_closed
        ]
        for probe in probes:
            try:
                processed = await self.process(probe)
            except Tripwire as trip:
                st.tripwire = trip
                break
            if type(processed) is list:
                written = processed[:-1]
                _account_written(st, probe, written)
                out.extend(written)
        return out

    @staticmethod
    def flush(st: StepState) -> tuple[list[Chunk], list[Chunk]]:
        """What the last part queued: the chunks to show ``on_chunk``, and those to stream before
        its own (`run_loop` calls ``on_chunk`` with `notify_on_chunk`: no coroutine per token)."""
        notify, st.notify, early, st.early, st.pending = st.notify, [], st.early, [], False
        return notify, early

    def failed(self, st: StepState, exc: Exception) -> list[Chunk]:
        """The model stream raised: an abort, a timeout, or a step error (streamed as ``error``)."""
        assert self.deadline is not None
        st.aborted, st.timed_out, st.error = self.deadline.classify(exc)
        if st.error is UNSET:
            return []
        return [
            Error(
                run_id=self.cfg.run_id, from_=AGENT, payload=ErrorPayload(error=exc, extra={"type": "error"})
            )
        ]

    @staticmethod
    async def close_model(st: StepState) -> None:
        aclose = getattr(st.stream, "aclose", None)
        if aclose is not None:
            try:
                await aclose()
            except Exception:
                log.debug("closing the model stream failed", exc_info=True)

    def step_metadata(self, st: StepState) -> dict[str, Any]:
        if st.resumed is not None:
            return dict(st.resumed["metadata"])
        response = st.response
        # the model that answered: a fallback list's entry, or the step's model (`prepare_step`)
        model = getattr(st.stream, "model", None) or self.cfg.model
        metadata: dict[str, Any] = {
            "id": response.get("id") or str(uuid.uuid4()),
            "timestamp": _timestamp(response.get("timestamp"), self.cfg.now_ms()),
            "modelId": response.get("modelId") or model.model_id,
        }
        headers = response_headers(st.stream)
        if headers is not None:
            metadata["headers"] = headers
        metadata["modelMetadata"] = {
            "modelId": model.model_id,
            "modelVersion": getattr(model, "specification_version", "v2"),
            "modelProvider": model.provider,
        }
        metadata["request"] = st.request
        if st.provider_metadata is not None:
            metadata["providerMetadata"] = st.provider_metadata
        return metadata

    def settle(self, st: StepState) -> list[Chunk]:
        """The step's closing errors: structured output never validated, ``error`` / empty ``other``."""
        if st.error is UNSET and st.finish_reason is None and st.stream is not None:
            st.finish_reason = "other"
        if st.error is UNSET and st.so is not None and not st.client_calls():
            finish_structured_output(st, st.finish_reason or "other")  # stream ended without a finish part
        out, st.early = st.early, []
        message = None
        if st.error is UNSET and st.finish_reason == "error":
            message = 'Agent stream finished with finishReason "error" but no error part was received from the model'
        elif st.error is UNSET and st.finish_reason == "other" and not st.has_content:
            message = 'The model finished with finishReason "other" without producing any content; stopping the loop'
        if message is not None:
            st.error = AgentStreamError(message)
            out.append(Error(run_id=self.cfg.run_id, from_=AGENT, payload=ErrorPayload(error=st.error)))
        return out


def _retext(st: StepState, original: Chunk, processed: Chunk | None) -> None:
    """A processor changed or dropped a reasoning delta: the history the model is sent next follows
    what was streamed. (Text needs nothing: the step's text is read from the output's fold, which
    holds the deltas as streamed.)"""
    if processed is original or type(original) is not ReasoningDelta:
        return
    text = processed.payload.text if isinstance(processed, ReasoningDelta) else ""
    if text == original.payload.text:
        return
    acc = st.reasoning_acc.get(original.payload.id)
    if acc:
        acc[-1] = text


def _account_written(st: StepState, original: Chunk, written: list[Chunk]) -> None:
    """Text and reasoning deltas a processor wrote (held-back text released when its part ends)
    are step text, before the part that made them."""
    for chunk in written:
        if not isinstance(chunk, (TextDelta, ReasoningDelta)):
            continue
        text, pid = chunk.payload.text, chunk.payload.id
        # the handler already appended the original delta's text: insert before it
        same = isinstance(original, type(chunk)) and original.payload.id == pid
        if isinstance(chunk, ReasoningDelta):
            acc = st.reasoning_acc.get(pid)
            acc = st.reasoning_entry(pid, None) if acc is None else acc
            acc.insert(len(acc) - same, text)
        else:  # its text is in the output's fold once streamed; the part needs its place
            if pid not in st.text_part:
                st.text_entry(pid, None)
            st.has_content = True


async def _prepend(first: StreamPart, rest: AsyncIterator[StreamPart]) -> AsyncIterator[StreamPart]:
    """``first``, then ``rest`` (only when the model's first part was not ``stream-start``)."""
    yield first
    async for part in rest:
        yield part


def normalize_tool_choice(choice: Any) -> dict[str, Any] | None:
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


def _sent_request(stream: Any) -> dict[str, Any]:
    """``{"body": ...}`` a `ModelStream` reports; ``{}`` for other streams."""
    request = getattr(stream, "request", None)
    return dict(request) if isinstance(request, Mapping) else {}


def response_headers(stream: Any) -> dict[str, str] | None:
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


def _timestamp(value: Any, now_ms: float) -> str:
    if isinstance(value, datetime):
        return format_date(value)
    if isinstance(value, str):
        return value
    return format_date(datetime.fromtimestamp(now_ms / 1000, tz=UTC))
