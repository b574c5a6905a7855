"""``ModelOutput``: the object ``agent.stream()`` returns (Mastra's ``MastraModelOutput``, spec §3).

One producer task drains the run's chunk source into an append-only log, doing Mastra's
per-chunk accounting on the way. Every ``full_stream`` access is a new iterator over that one log:
it replays from the first chunk and then follows live ones, so consumers never take chunks from
each other, a slow consumer never slows the producer, and memory is the log, not a copy per reader.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeVar

import msgspec

from .._secrets import loggable
from ..chunks import (
    Abort,
    Chunk,
    ChunkFrom,
    Error,
    ErrorPayload,
    File,
    Finish,
    Goal,
    ObjectResult,
    Raw,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    Source,
    StepFinish,
    StepStart,
    TextDelta,
    ToolCall,
    ToolCallApproval,
    ToolCallDelta,
    ToolCallInputStreamingEnd,
    ToolCallInputStreamingStart,
    ToolCallPayload,
    ToolCallSuspended,
    ToolResult,
    Tripwire,
    chunk_from_dict,
    chunk_to_dict,
    to_jsonable,
)
from ..chunks import Object as ObjectChunk
from ._log import ChunkLog
from ._promise import Delayed
from ._results import (
    AbortEvent,
    ErrorEvent,
    FinishEvent,
    FullOutput,
    StepResult,
    TripwireInfo,
    Usage,
    add_usage,
    final_usage,
    total_usage,
)
from ._smooth import check_transform_factories
from ._types import ChunkStream, TransformFactory, apply_transforms

__all__ = ["ModelOutput", "RunStatus", "UnresolvedResultError"]

logger = logging.getLogger("agentstream")

RunStatus = str
"""``"running"``, ``"success"``, ``"failed"``, ``"canceled"`` or ``"suspended"``."""

T = TypeVar("T")
Callback = Callable[[T], Awaitable[None] | None]

_RESULT_NAMES = (
    "text",
    "reasoning",
    "reasoning_text",
    "sources",
    "files",
    "tool_calls",
    "tool_results",
    "steps",
    "usage",
    "total_usage",
    "finish_reason",
    "warnings",
    "provider_metadata",
    "response",
    "request",
    "object",
    "suspend_payload",
    "resume_schema",
)


class UnresolvedResultError(RuntimeError):
    """A result was still pending when the stream ended (the run produced no ``finish``)."""


class _StepBuffers:
    """What the in-flight step has produced so far."""

    __slots__ = ("files", "reasoning", "sources", "tool_calls", "tool_results")

    def __init__(self) -> None:
        self.reasoning: dict[str, dict[str, Any]] = {}
        self.sources: list[Source] = []
        self.files: list[File] = []
        self.tool_calls: list[ToolCall] = []
        self.tool_results: list[ToolResult] = []


class ModelOutput(ChunkLog):
    """The streaming result of one agent run.

    **Streams** (each access is a new consumer that replays from the start): ``full_stream``,
    ``text_stream``, ``object_stream``.

    **Results** (awaitable; awaiting starts the run): ``await output.text``, ``usage``,
    ``total_usage``, ``finish_reason``, ``tool_calls``, ``tool_results``, ``steps``, ``object``, ...
    An ``error`` chunk rejects every pending result with the run's error.

    **Parameters** (the agent builds these; tests may build one over any chunk source):

    * ``source`` - the run's chunks in loop order.
    * ``run_id`` - the run's id. ``message_id`` - the response message id.
    * ``include_raw_chunks`` - keep ``raw`` chunks (dropped by default, as in Mastra).
    * ``on_step_finish``, ``on_finish``, ``on_error``, ``on_abort`` - callbacks (sync or async).
    * ``experimental_transform`` - a transform factory, or a list of them, applied to every
      ``full_stream`` access (not to ``text_stream``, ``object_stream`` or the results).
    * ``has_structured_output`` - whether ``object`` can resolve to a value.
    * ``on_cancel`` - called once when ``aclose`` stops a run that has not ended.
    * ``result_tripwire`` - asked at ``finish``: a tripwire (Mastra JSON) an output-result
      processor raised; the results then read ``text ""``, finish reason ``other``.
    * ``on_suspended`` - awaited with `serialize_state()` when the run suspends
      (``tool-call-approval`` / ``tool-call-suspended``), before that chunk is delivered: the agent
      keeps the run there so that a later leg can resume it. If it raises, the run fails.

    A suspended run ends without ``step-finish`` / ``finish``: ``status`` and ``await
    finish_reason`` are ``"suspended"``, ``await suspend_payload`` is the suspension chunk's
    payload and ``await resume_schema`` its ``resumeSchema``; ``on_finish`` is not called (the
    leg that resumes the run calls it).
    """

    def __init__(
        self,
        source: AsyncIterable[Chunk],
        *,
        run_id: str,
        message_id: str | None = None,
        include_raw_chunks: bool = False,
        on_step_finish: Callback[StepResult] | None = None,
        on_finish: Callback[FinishEvent] | None = None,
        on_error: Callback[ErrorEvent] | None = None,
        on_abort: Callback[AbortEvent] | None = None,
        experimental_transform: TransformFactory | Sequence[TransformFactory] | None = None,
        has_structured_output: bool = False,
        on_cancel: Callable[[], object] | None = None,
        result_tripwire: Callable[[], dict[str, Any] | None] | None = None,
        on_suspended: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
    ) -> None:
        self.run_id = run_id
        self.message_id = message_id
        self._source = source
        self._include_raw = include_raw_chunks
        self._cb_step_finish = on_step_finish
        self._cb_finish = on_finish
        self._cb_error = on_error
        self._cb_abort = on_abort
        self._on_cancel = on_cancel
        self._result_tripwire = result_tripwire
        check_transform_factories(experimental_transform, "experimental_transform")
        self._transforms = experimental_transform

        super().__init__()  # the log; `_replay_start` moves forward when a goal restarts the run
        self._truncate_at_step_finish = False
        self._task: asyncio.Task[None] | None = None
        self._finished = asyncio.Event()

        self._status: RunStatus = "running"
        self._error: BaseException | None = None
        self._tripwire: TripwireInfo | None = None
        self._dropped: list[tuple[int, int]] = []
        """Log ranges of steps a processor rejected: their text is no part of the answer."""
        self._used_fallback_value = False
        self._finish_callback_sent = False
        self._was_suspended = False
        self._results: dict[str, Delayed[Any]] = {
            name: Delayed(self._ensure_started) for name in _RESULT_NAMES
        }
        self._has_structured_output = has_structured_output

        self._step = _StepBuffers()
        self._step_start = 0
        """Index in the log where the step in flight began; its text is read from there."""
        self._steps: list[StepResult] = []
        self._reasoning: dict[str, dict[str, Any]] = {}
        self._sources: list[Source] = []
        self._files: list[File] = []
        self._tool_calls: list[ToolCall] = []
        self._tool_results: list[ToolResult] = []
        self._tool_meta: dict[str, ToolCallInputStreamingStart] = {}
        self._tool_args: dict[str, list[str]] = {}
        self._synthetic_calls: dict[str, int] = {}
        self._warnings: list[Any] = []
        self._request: dict[str, Any] = {}
        self._usage: Usage = {}
        self._object: Any = None
        self._has_object = False
        self._provider_metadata: dict[str, Any] | None = None
        self._response: dict[str, Any] = {}
        self._on_suspended = on_suspended
        self._prior_text = ""
        """Text of the earlier legs of a resumed run (`restore_state`)."""
        self._prior_step_text = ""
        """Text the suspended step streamed in the earlier leg (until its ``step-finish``)."""

    # ---------------------------------------------------------------- synchronous state

    @property
    def status(self) -> RunStatus:
        """Where the run is: `"running"`, `"success"`, `"failed"`, `"canceled"` or `"suspended"`."""
        return self._status

    @property
    def error(self) -> BaseException | None:
        """The error that ended the run, once it has ended with one (else `None`)."""
        return self._error

    @property
    def tripwire(self) -> TripwireInfo | None:
        """Why a processor blocked the run (``reason``, ``retry``, ``metadata``, ``processor_id``), once it did."""
        return self._tripwire

    @property
    def used_fallback_value(self) -> bool:
        """Whether structured output fell back to the configured `fallback_value`."""
        return self._used_fallback_value

    @property
    def turns(self) -> list[ModelOutput]:
        """The turns of this stream: this one (an until-idle stream adds one per continuation)."""
        return [self]

    # ---------------------------------------------------------------- streams

    @property
    def full_stream(self) -> ChunkStream:
        """Every chunk of the run, replayed from the first, then live; a new consumer per access."""
        # The replay point is fixed at access, as a JS ReadableStream's start() runs at construction.
        return ChunkStream(apply_transforms(self._follow(self._replay_start), self._transforms))

    @property
    def text_stream(self) -> AsyncIterator[str]:
        """The text of every ``text-delta`` (no ``experimental_transform``)."""
        return self._texts()

    @property
    def object_stream(self) -> AsyncIterator[Any]:
        """Each partial structured-output value (``object`` chunks)."""
        return self._objects()

    async def _texts(self) -> AsyncIterator[str]:
        async for chunk in self._follow():
            if type(chunk) is TextDelta:
                yield chunk.payload.text

    async def _objects(self) -> AsyncIterator[Any]:
        async for chunk in self._follow():
            if type(chunk) is ObjectChunk:
                yield chunk.object

    # ---------------------------------------------------------------- results

    @property
    def text(self) -> Delayed[str]:
        """Awaitable: the run's text (spec §3.4 rules)."""
        return self._results["text"]

    @property
    def reasoning(self) -> Delayed[list[dict[str, Any]]]:
        """Awaitable: reasoning details."""
        return self._results["reasoning"]

    @property
    def reasoning_text(self) -> Delayed[str | None]:
        """Awaitable: all reasoning text, or ``None``."""
        return self._results["reasoning_text"]

    @property
    def sources(self) -> Delayed[list[Source]]:
        """Awaitable: the ``source`` chunks."""
        return self._results["sources"]

    @property
    def files(self) -> Delayed[list[File]]:
        """Awaitable: the ``file`` chunks."""
        return self._results["files"]

    @property
    def tool_calls(self) -> Delayed[list[ToolCall]]:
        """Awaitable: the ``tool-call`` chunks."""
        return self._results["tool_calls"]

    @property
    def tool_results(self) -> Delayed[list[ToolResult]]:
        """Awaitable: the ``tool-result`` chunks."""
        return self._results["tool_results"]

    @property
    def steps(self) -> Delayed[list[StepResult]]:
        """Awaitable: one `StepResult` per step."""
        return self._results["steps"]

    @property
    def usage(self) -> Delayed[Usage]:
        """Awaitable: usage summed over the steps."""
        return self._results["usage"]

    @property
    def total_usage(self) -> Delayed[Usage]:
        """Awaitable: total usage."""
        return self._results["total_usage"]

    @property
    def finish_reason(self) -> Delayed[str | None]:
        """Awaitable: the run's finish reason."""
        return self._results["finish_reason"]

    @property
    def warnings(self) -> Delayed[list[Any]]:
        """Awaitable: provider warnings."""
        return self._results["warnings"]

    @property
    def provider_metadata(self) -> Delayed[dict[str, Any] | None]:
        """Awaitable: the last step's provider metadata."""
        return self._results["provider_metadata"]

    @property
    def response(self) -> Delayed[dict[str, Any]]:
        """Awaitable: response metadata."""
        return self._results["response"]

    @property
    def request(self) -> Delayed[dict[str, Any]]:
        """Awaitable: the last request."""
        return self._results["request"]

    @property
    def object(self) -> Delayed[Any]:
        """Awaitable: the structured output; ``None`` at once when the run has no schema (and no error)."""
        delayed = self._results["object"]
        if not self._has_structured_output and self._error is None:
            delayed.resolve(None)
        return delayed

    @property
    def suspend_payload(self) -> Delayed[Any]:
        """Awaitable: the payload of the chunk that suspended the run (Mastra's ``suspendPayload``): a
        `ToolCallApprovalPayload` or `ToolCallSuspendedPayload` (``tool_call_id``, ``tool_name``,
        ``args``, ``suspend_payload``, ``resume_schema``); ``None`` when the run did not suspend."""
        return self._results["suspend_payload"]

    @property
    def resume_schema(self) -> Delayed[Any]:
        """Awaitable: the JSON Schema (a JSON string) of the data that resumes the run (``None`` when
        it did not suspend, or the suspended tool declares no ``resume_schema``)."""
        return self._results["resume_schema"]

    async def consume_stream(self, on_error: Callable[[BaseException], Any] | None = None) -> None:
        """Run to the end without reading; a run error goes to ``on_error`` instead of raising."""
        self._ensure_started()
        await self._finished.wait()
        if self._error is not None and on_error is not None:
            on_error(self._error)

    async def get_full_output(self) -> FullOutput:
        """Every result at once; raises the run's error if it failed."""
        await self.consume_stream()
        if self._error is not None:
            raise self._error
        return FullOutput(
            text="".join(step.text for step in self._steps),
            usage=self._results["usage"].peek(dict(self._usage)),
            total_usage=total_usage(self._usage),
            steps=list(self._steps),
            finish_reason=self._results["finish_reason"].peek(),
            warnings=list(self._warnings),
            provider_metadata=self._provider_metadata,
            request=self._request,
            response=self._response,
            reasoning=self._reasoning_details(self._reasoning),
            reasoning_text=self._reasoning_text(self._reasoning),
            tool_calls=list(self._tool_calls),
            tool_results=list(self._tool_results),
            sources=list(self._sources),
            files=list(self._files),
            object=self._object if self._has_object else None,
            used_fallback_value=self._used_fallback_value,
            error=self._error,
            tripwire=self._tripwire,
            run_id=self.run_id,
            suspend_payload=self._results["suspend_payload"].peek(),
            resume_schema=self._results["resume_schema"].peek(),
        )

    async def aclose(self) -> None:
        """Stop the run if it is still going; consumers see the stream end."""
        task = self._task
        if task is not None and not task.done():
            if self._on_cancel is not None:
                self._on_cancel()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        elif task is None:
            self._close_log()
            await _aclose(self._source)

    # ---------------------------------------------------------------- the producer

    def _ensure_started(self) -> None:
        if self._task is None and not self._done:
            self._task = asyncio.get_running_loop().create_task(
                self._produce(), name=f"agentstream-run-{self.run_id}"
            )

    def _emit(self, chunk: Chunk) -> None:
        self._log.append(chunk)
        if self._changed is not None:
            self._wake()

    def _close_log(self) -> None:
        self._done = True
        self._finished.set()
        self._wake()

    async def _produce(self) -> None:
        source = self._source
        append = self._log.append
        try:
            async for chunk in source:
                kind = type(chunk)
                if kind is TextDelta:  # the hot path, one chunk per token: text is read back from the log
                    append(chunk)
                    if self._changed is not None:
                        self._wake()
                    continue
                handler = _HANDLERS.get(kind)
                if handler is None:
                    self._emit(chunk)
                elif await handler(self, chunk) is _STOP:
                    break
            await self._flush()
        except asyncio.CancelledError:
            self._status = "canceled" if self._status == "running" else self._status
            self._reject_pending(UnresolvedResultError("the run was cancelled before this result was known"))
            raise
        except Exception as exc:  # the loop itself failed: surface it as Mastra does, as an error chunk
            await self._on_error_chunk(
                Error(run_id=self.run_id, from_=ChunkFrom.AGENT, payload=_error_payload(exc))
            )
            await self._flush()
        finally:
            self._close_log()
            await _aclose(source)

    # ---------------------------------------------------------------- accounting (spec §3.4)

    async def _on_suspend(self, chunk: ToolCallApproval | ToolCallSuspended) -> Any:
        # The recorded runs win over spec §3.4 here: Mastra does not call onFinish for the
        # suspended leg; the leg that resumes the run calls it when the run finishes.
        self._status = "suspended"
        self._was_suspended = True
        if self._on_suspended is not None:
            try:  # the run is kept before anyone can see the chunk (and try to resume it)
                await self._on_suspended(self.serialize_state())
            except Exception as exc:
                await self._on_error_chunk(
                    Error(run_id=self.run_id, from_=ChunkFrom.AGENT, payload=_error_payload(exc))
                )
                return _STOP
        self._results["suspend_payload"].resolve(chunk.payload)
        self._results["resume_schema"].resolve(chunk.payload.resume_schema)
        self._emit(chunk)
        return None

    # ---------------------------------------------------------------- suspend / resume (spec §3.7)

    def serialize_state(self) -> dict[str, Any]:
        """The accounting so far as JSON data (Mastra's ``serializeState``): what a later leg of the
        same run needs so that its steps, usage, tool calls and text cover the whole run."""
        step = self._step
        return {
            "steps": [_step_to_json(s) for s in self._steps],
            "text": self._all_text(),
            "stepText": self._step_text(),
            "reasoning": _reasoning_to_json(self._reasoning),
            "sources": [chunk_to_dict(c) for c in self._sources],
            "files": [chunk_to_dict(c) for c in self._files],
            "toolCalls": [chunk_to_dict(c) for c in self._tool_calls],
            "toolResults": [chunk_to_dict(c) for c in self._tool_results],
            "step": {
                "reasoning": _reasoning_to_json(step.reasoning),
                "sources": [chunk_to_dict(c) for c in step.sources],
                "files": [chunk_to_dict(c) for c in step.files],
                "toolCalls": [chunk_to_dict(c) for c in step.tool_calls],
                "toolResults": [chunk_to_dict(c) for c in step.tool_results],
            },
            "warnings": to_jsonable(self._warnings),
            "request": to_jsonable(self._request),
            "response": to_jsonable(self._response),
            "usage": dict(self._usage),
            "providerMetadata": to_jsonable(self._provider_metadata),
            "wasSuspended": self._was_suspended,
        }

    def restore_state(self, state: dict[str, Any]) -> None:
        """Continue the accounting of `serialize_state` (before the first chunk of a resumed leg)."""
        if self._log or self._steps:
            raise RuntimeError("restore_state() must be called before the output has seen any chunk")
        self._steps = [_step_from_json(s) for s in state.get("steps", [])]
        self._prior_text = str(state.get("text", ""))
        self._prior_step_text = str(state.get("stepText", ""))
        self._reasoning = _reasoning_from_json(state.get("reasoning", []))
        self._sources = [_chunk(d, Source) for d in state.get("sources", [])]
        self._files = [_chunk(d, File) for d in state.get("files", [])]
        self._tool_calls = [_chunk(d, ToolCall) for d in state.get("toolCalls", [])]
        self._tool_results = [_chunk(d, ToolResult) for d in state.get("toolResults", [])]
        step = state.get("step", {})
        self._step.reasoning = _reasoning_from_json(step.get("reasoning", []))
        self._step.sources = [_chunk(d, Source) for d in step.get("sources", [])]
        self._step.files = [_chunk(d, File) for d in step.get("files", [])]
        self._step.tool_calls = [_chunk(d, ToolCall) for d in step.get("toolCalls", [])]
        self._step.tool_results = [_chunk(d, ToolResult) for d in step.get("toolResults", [])]
        self._warnings = list(state.get("warnings") or [])
        self._request = dict(state.get("request") or {})
        self._response = dict(state.get("response") or {})
        self._usage = dict(state.get("usage") or {})
        self._provider_metadata = state.get("providerMetadata")
        self._was_suspended = bool(state.get("wasSuspended", True))

    async def _on_abort_chunk(self, chunk: Abort) -> None:
        # The recorded runs show Mastra calls onAbort here and never onFinish for an aborted run.
        self._status = "canceled"
        self._finish_callback_sent = True
        await self._call(self._cb_abort, AbortEvent(steps=list(self._steps), text=self._step_text()))
        self._emit(chunk)

    async def _on_raw(self, chunk: Raw) -> None:
        if self._include_raw:
            self._emit(chunk)

    async def _on_object_result(self, chunk: ObjectResult) -> None:
        self._object, self._has_object = chunk.object, True
        self._used_fallback_value = bool(chunk.metadata and chunk.metadata.get("fallback") is True)
        self._results["object"].resolve(chunk.object)
        self._emit(chunk)

    async def _on_source(self, chunk: Source) -> None:
        self._sources.append(chunk)
        self._step.sources.append(chunk)
        self._emit(chunk)

    async def _on_file(self, chunk: File) -> None:
        self._files.append(chunk)
        self._step.files.append(chunk)
        self._emit(chunk)

    async def _on_tool_input_start(self, chunk: ToolCallInputStreamingStart) -> None:
        self._tool_meta[chunk.payload.tool_call_id] = chunk
        self._tool_args[chunk.payload.tool_call_id] = []
        self._emit(chunk)

    async def _on_tool_delta(self, chunk: ToolCallDelta) -> None:
        payload = chunk.payload
        self._tool_args.setdefault(payload.tool_call_id, []).append(payload.args_text_delta)
        meta = self._tool_meta.get(payload.tool_call_id)
        if not payload.tool_name and meta is not None:
            # Mastra back-fills the name by mutating the chunk; ours are immutable, so copy.
            chunk = msgspec.structs.replace(
                chunk, payload=msgspec.structs.replace(payload, tool_name=meta.payload.tool_name)
            )
        self._emit(chunk)

    async def _on_tool_input_end(self, chunk: ToolCallInputStreamingEnd) -> None:
        call_id = chunk.payload.tool_call_id
        meta = self._tool_meta.get(call_id)
        self._emit(chunk)
        if meta is None:
            return
        text = "".join(self._tool_args.get(call_id, ()))
        try:
            args = json.loads(text) if text else {}
        except ValueError:
            args = {}
        start = meta.payload
        synthetic = ToolCall(
            run_id=chunk.run_id,
            from_=chunk.from_,
            payload=ToolCallPayload(
                tool_call_id=call_id,
                tool_name=start.tool_name,
                args=args,
                provider_executed=start.provider_executed,
                provider_metadata=start.provider_metadata,
                dynamic=start.dynamic,
                title=start.title,
                observability=start.observability,
            ),
        )
        self._synthetic_calls[call_id] = len(self._tool_calls)
        self._tool_calls.append(synthetic)
        self._step.tool_calls.append(synthetic)
        self._emit(synthetic)

    async def _on_tool_call(self, chunk: ToolCall) -> None:
        payload = chunk.payload
        index = self._synthetic_calls.pop(payload.tool_call_id, None)
        if index is not None:
            # The provider's own tool-call repeats a call already emitted from the streamed
            # input: fold what it adds into the recorded call and emit nothing.
            merged = self._merge_call(self._tool_calls[index], payload)
            self._tool_calls[index] = merged
            self._step.tool_calls = [
                merged if c.payload.tool_call_id == payload.tool_call_id else c for c in self._step.tool_calls
            ]
            return
        output = payload.output
        if isinstance(output, dict) and output.get("from") == "AGENT" and output.get("type") == "finish":
            add_usage(self._usage, (output.get("payload") or {}).get("usage"))
        self._tool_calls.append(chunk)
        self._step.tool_calls.append(chunk)
        self._emit(chunk)

    @staticmethod
    def _merge_call(recorded: ToolCall, provider: ToolCallPayload) -> ToolCall:
        current = recorded.payload
        changes: dict[str, Any] = {}
        if not current.args and provider.args is not msgspec.UNSET:
            changes["args"] = provider.args
        if current.provider_metadata is None and provider.provider_metadata is not None:
            changes["provider_metadata"] = provider.provider_metadata
        if current.dynamic is None and provider.dynamic is not None:
            changes["dynamic"] = provider.dynamic
        if current.observability is None and provider.observability is not None:
            changes["observability"] = provider.observability
        if not changes:
            return recorded
        return msgspec.structs.replace(recorded, payload=msgspec.structs.replace(current, **changes))

    async def _on_tool_result(self, chunk: ToolResult) -> None:
        self._tool_results.append(chunk)
        self._step.tool_results.append(chunk)
        self._emit(chunk)

    def _all_text(self, *, dropped: bool = False) -> str:
        """The text of the run; with ``dropped`` also that of steps a processor rejected."""
        if dropped or not self._dropped:
            return self._prior_text + _joined_text(self._log, self._replay_start)
        parts, start = [], self._replay_start
        for begin, end in self._dropped:
            if end > start:
                parts.append(_joined_text(self._log[:begin], start) if begin > start else "")
                start = end
        parts.append(_joined_text(self._log, start))
        return self._prior_text + "".join(parts)

    def _step_text(self) -> str:
        return self._prior_step_text + _joined_text(self._log, self._step_start)

    def _reasoning_entry(self, details: dict[str, dict[str, Any]], chunk: Any) -> dict[str, Any]:
        entry = details.get(chunk.payload.id)
        if entry is None:
            entry = details[chunk.payload.id] = {
                "id": chunk.payload.id,
                "text": [],
                "provider_metadata": None,
            }
        if chunk.payload.provider_metadata is not None:
            entry["provider_metadata"] = chunk.payload.provider_metadata
        return entry

    async def _on_reasoning(self, chunk: ReasoningStart | ReasoningDelta | ReasoningEnd) -> None:
        for details in (self._reasoning, self._step.reasoning):
            entry = self._reasoning_entry(details, chunk)
            if isinstance(chunk, ReasoningDelta):
                entry["text"].append(chunk.payload.text)
        self._emit(chunk)

    def _reasoning_details(self, details: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for entry in details.values():
            payload: dict[str, Any] = {"id": entry["id"], "text": "".join(entry["text"])}
            if entry["provider_metadata"] is not None:
                payload["providerMetadata"] = entry["provider_metadata"]
            out.append({"type": "reasoning", "runId": self.run_id, "from": "AGENT", "payload": payload})
        return out

    @staticmethod
    def _reasoning_text(details: dict[str, dict[str, Any]]) -> str | None:
        if not details:
            return None
        return "".join("".join(entry["text"]) for entry in details.values())

    async def _on_step_start(self, chunk: StepStart) -> None:
        self._request = chunk.payload.request
        self._emit(chunk)

    async def _on_step_finish(self, chunk: StepFinish) -> None:
        payload = chunk.payload
        usage = payload.output.get("usage") or {}
        add_usage(self._usage, usage)
        warnings = payload.step_result.get("warnings") or []
        self._warnings = list(warnings)
        request = payload.metadata.get("request")
        if isinstance(request, dict):
            self._request = request
        step = self._step
        steps_meta = payload.output.get("steps") or []
        last_meta = steps_meta[-1] if steps_meta else None
        trip_data = last_meta.get("tripwire") if isinstance(last_meta, dict) else None
        tripwire = TripwireInfo.from_data(trip_data) if isinstance(trip_data, dict) else None
        if tripwire is not None:
            self._dropped.append((self._step_start, len(self._log)))
        metadata = payload.metadata
        response = {
            "id": payload.id or metadata.get("id") or "",
            "timestamp": metadata.get("timestamp"),
            "modelId": metadata.get("modelId") or metadata.get("model") or "",
            "messages": (payload.messages or {}).get("nonUser", []),
        }
        if metadata.get("headers") is not None:
            response["headers"] = metadata["headers"]
        self._response = response
        self._provider_metadata = payload.provider_metadata
        text = "" if tripwire else self._step_text()
        result = StepResult(
            step_type="initial" if not self._steps else "tool-result",
            text=text,
            reasoning=self._reasoning_details(step.reasoning),
            reasoning_text=self._reasoning_text(step.reasoning) or "",
            sources=step.sources,
            files=step.files,
            tool_calls=step.tool_calls,
            tool_results=step.tool_results,
            finish_reason=payload.reason,
            usage=dict(usage),
            warnings=list(warnings),
            request=request if isinstance(request, dict) else {},
            response=response,
            provider_metadata=payload.provider_metadata,
            tripwire=tripwire,
            content=_step_content(step, text),
        )
        await self._call(self._cb_step_finish, result)
        self._steps.append(result)
        self._step = _StepBuffers()
        self._prior_step_text = ""
        self._emit(chunk)
        self._step_start = len(self._log)
        if self._truncate_at_step_finish:
            self._truncate_at_step_finish = False
            self._truncate()

    async def _on_goal(self, chunk: Goal) -> None:
        self._emit(chunk)
        if chunk.payload.should_continue is True:
            # The goal judge sent the run round again: what came before is no longer the answer.
            # New consumers replay from here; the step in flight is dropped when it finishes.
            self._truncate()
            self._truncate_at_step_finish = True

    def _truncate(self) -> None:
        """Forget the run so far for replay and results (Mastra keeps usage, per-step state, object)."""
        self._replay_start = len(self._log)
        self._prior_text = ""
        self._steps.clear()
        self._reasoning.clear()
        self._sources.clear()
        self._files.clear()
        self._tool_calls.clear()
        self._tool_results.clear()
        self._synthetic_calls.clear()

    async def _on_tripwire(self, chunk: Tripwire) -> Any:
        p = chunk.payload
        self._tripwire = TripwireInfo(
            reason=p.reason or "Content blocked",
            retry=p.retry,
            metadata=None if p.metadata is msgspec.UNSET else p.metadata,
            processor_id=p.processor_id,
        )
        # Recorded: the tool calls and results are those of the step the tripwire cut short.
        self._results["tool_calls"].resolve(list(self._step.tool_calls))
        self._results["tool_results"].resolve(list(self._step.tool_results))
        self._resolve_all(text=self._all_text(), finish_reason="other")
        self._emit(chunk)
        return _STOP  # Mastra terminates the stream here: nothing after a tripwire is delivered.

    async def _on_finish(self, chunk: Finish) -> None:
        payload = chunk.payload
        if self._status not in ("failed", "canceled"):
            self._status = "success"
        reason = "aborted" if self._status == "canceled" else payload.reason
        self._provider_metadata = payload.provider_metadata or self._provider_metadata
        aggregate = final_usage(self._usage)
        output = dict(payload.output)
        output["usage"] = aggregate
        chunk = msgspec.structs.replace(chunk, payload=msgspec.structs.replace(payload, output=output))
        used_tools = any(step.tool_calls or step.tool_results for step in self._steps)
        if used_tools and not self._was_suspended and self._steps:
            text = self._steps[-1].text
        else:
            text = self._all_text()
        if self._steps and self._steps[-1].tripwire is not None and reason == "tripwire":
            self._tripwire = self._steps[-1].tripwire  # an output-step processor stopped the run
            # Mastra's text is then its last response message's (the rejected answer stays in
            # the list; after a tool call that message is the tool result: no text)
            text = _message_text(((payload.messages or {}).get("nonUser") or [{}])[-1])
        # the on_finish event shows the run as streamed; the results what the processors let through
        event_reason, event_text = reason, self._all_text(dropped=True)
        blocked = self._result_tripwire() if self._result_tripwire is not None else None
        if blocked is not None:
            self._tripwire = TripwireInfo.from_data(blocked)
            text, reason = "", "other"
        self._resolve_all(text=text, finish_reason=reason)
        if self._steps and not self._finish_callback_sent:
            self._finish_callback_sent = True
            event = self._finish_event(text=event_text, finish_reason=event_reason, usage=aggregate)
            await self._call(self._cb_finish, event)
        self._emit(chunk)

    async def _on_error_chunk(self, chunk: Error) -> None:
        # Recorded Mastra runs: after an error the loop still closes the step and the run
        # (step-finish, finish), the results then resolve from them, ``object`` stays rejected and
        # on_finish is never called. If no finish follows, every pending result rejects at the end.
        error = chunk.payload.error
        logging.getLogger("agentstream.runs").error("run %s failed: %s", self.run_id, loggable(error))
        self._error = error if isinstance(error, BaseException) else _RunError(error)
        self._status = "failed"
        self._finish_callback_sent = True
        self._results["object"].reject(self._error)
        self._emit(chunk)
        await self._call(self._cb_error, ErrorEvent(error=self._error))

    # ---------------------------------------------------------------- settling

    def _resolve_all(self, *, text: str, finish_reason: str | None) -> None:
        r = self._results
        r["text"].resolve(text)
        r["finish_reason"].resolve(finish_reason)
        r["usage"].resolve(dict(self._usage))
        r["total_usage"].resolve(total_usage(self._usage))
        r["warnings"].resolve(list(self._warnings))
        r["provider_metadata"].resolve(self._provider_metadata)
        r["response"].resolve(self._response)
        r["request"].resolve(self._request)
        r["reasoning"].resolve(self._reasoning_details(self._reasoning))
        r["reasoning_text"].resolve(self._reasoning_text(self._reasoning))
        r["sources"].resolve(list(self._sources))
        r["files"].resolve(list(self._files))
        r["tool_calls"].resolve(list(self._tool_calls))
        r["tool_results"].resolve(list(self._tool_results))
        r["steps"].resolve(list(self._steps))
        r["suspend_payload"].resolve(None)
        r["resume_schema"].resolve(None)
        r["object"].resolve(self._object if self._has_object else None)

    def _reject_pending(self, error: BaseException) -> None:
        for delayed in self._results.values():
            delayed.reject(error)

    async def _flush(self) -> None:
        self._results["object"].resolve(self._object if self._has_object else None)
        if self._status == "suspended":
            self._resolve_all(text=self._all_text(), finish_reason="suspended")
        if self._error is not None:  # failed and never finished: the run's error is the answer
            self._reject_pending(self._error)
        for name, delayed in self._results.items():
            delayed.reject(
                UnresolvedResultError(f"result '{name}' was not resolved or rejected when stream finished")
            )

    def _finish_event(
        self,
        *,
        text: str,
        finish_reason: str | None,
        usage: Usage | None = None,
        empty: bool = False,
        suspend_reason: str | None = None,
        tool_name: str | None = None,
        tool_call_id: str | None = None,
    ) -> FinishEvent:
        return FinishEvent(
            text=text,
            finish_reason=finish_reason,
            usage=usage if usage is not None else ({} if empty else dict(self._usage)),
            total_usage=total_usage(self._usage),
            steps=list(self._steps),
            tool_calls=[] if empty else list(self._tool_calls),
            tool_results=[] if empty else list(self._tool_results),
            reasoning=[] if empty else self._reasoning_details(self._reasoning),
            reasoning_text=None if empty else self._reasoning_text(self._reasoning),
            sources=[] if empty else list(self._sources),
            files=[] if empty else list(self._files),
            warnings=list(self._warnings),
            provider_metadata=self._provider_metadata,
            response=self._response,
            request=self._request,
            object=self._object if self._has_object else None,
            error=self._error,
            used_fallback_value=self._used_fallback_value,
            suspend_reason=suspend_reason,
            tool_name=tool_name,
            tool_call_id=tool_call_id,
        )

    async def _call(self, callback: Callable[[Any], Any] | None, event: Any) -> None:
        """Run a user callback; if it raises, log it and go on so no chunk of the run is lost."""
        if callback is None:
            return
        try:
            result = callback(event)
            if inspect.isawaitable(result):
                await result
        except Exception:
            logger.exception(
                "agentstream: %s callback raised; the stream goes on", getattr(callback, "__name__", "a")
            )


def _chunk(data: dict[str, Any], cls: type[T]) -> T:
    chunk = chunk_from_dict(data)
    if not isinstance(chunk, cls):
        raise ValueError(f"restore_state: expected a {cls.__name__} chunk, got {data.get('type')!r}")
    return chunk


def _reasoning_to_json(details: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"id": e["id"], "text": "".join(e["text"]), "providerMetadata": to_jsonable(e["provider_metadata"])}
        for e in details.values()
    ]


def _reasoning_from_json(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        str(e["id"]): {
            "id": e["id"],
            "text": [e.get("text", "")],
            "provider_metadata": e.get("providerMetadata"),
        }
        for e in items
    }


def _step_to_json(step: StepResult) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in StepResult.__dataclass_fields__:
        value = getattr(step, name)
        if name in _STEP_CHUNK_FIELDS:
            out[name] = [chunk_to_dict(c) for c in value]
        else:
            out[name] = to_jsonable(value)
    return out


def _step_from_json(data: dict[str, Any]) -> StepResult:
    fields: dict[str, Any] = {}
    for name in StepResult.__dataclass_fields__:
        if name not in data:
            continue
        cls = _STEP_CHUNK_FIELDS.get(name)
        fields[name] = [_chunk(d, cls) for d in data[name]] if cls is not None else data[name]
    return StepResult(**fields)


_STEP_CHUNK_FIELDS: dict[str, type[Any]] = {
    "sources": Source,
    "files": File,
    "tool_calls": ToolCall,
    "tool_results": ToolResult,
}


def _joined_text(log: list[Chunk], start: int) -> str:
    return "".join([c.payload.text for c in log[start:] if type(c) is TextDelta])


class _RunError(Exception):
    """An ``error`` chunk whose error was a plain value rather than an exception."""

    def __init__(self, value: Any) -> None:
        if isinstance(value, dict) and isinstance(value.get("message"), str):
            message = value["message"]
            self.name = value.get("name") if isinstance(value.get("name"), str) else "Error"
        else:
            message = value if isinstance(value, str) else json.dumps(value, default=str)
        super().__init__(message)
        self.value = value


def _message_text(message: Any) -> str:
    """An assistant model message's text (``""`` for any other message)."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text")


def _error_payload(exc: BaseException) -> ErrorPayload:
    return ErrorPayload(error=exc)


def _step_content(step: _StepBuffers, text: str) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for entry in step.reasoning.values():
        content.append({"type": "reasoning", "text": "".join(entry["text"])})
    if text:
        content.append({"type": "text", "text": text})
    for call in step.tool_calls:
        content.append(
            {
                "type": "tool-call",
                "toolCallId": call.payload.tool_call_id,
                "toolName": call.payload.tool_name,
                "input": call.payload.args if call.payload.args is not msgspec.UNSET else None,
            }
        )
    for result in step.tool_results:
        content.append(
            {
                "type": "tool-result",
                "toolCallId": result.payload.tool_call_id,
                "toolName": result.payload.tool_name,
                "output": result.payload.result,
            }
        )
    return content


async def _aclose(source: object) -> None:
    aclose = getattr(source, "aclose", None)
    if aclose is not None:
        try:
            await aclose()
        except Exception:
            logger.debug("agentstream: closing the chunk source raised", exc_info=True)


_STOP = object()

_HANDLERS: dict[type[Any], Callable[[ModelOutput, Any], Awaitable[object]]] = {
    ToolCallSuspended: ModelOutput._on_suspend,
    ToolCallApproval: ModelOutput._on_suspend,
    Abort: ModelOutput._on_abort_chunk,
    Raw: ModelOutput._on_raw,
    ObjectResult: ModelOutput._on_object_result,
    Source: ModelOutput._on_source,
    File: ModelOutput._on_file,
    ToolCallInputStreamingStart: ModelOutput._on_tool_input_start,
    ToolCallDelta: ModelOutput._on_tool_delta,
    ToolCallInputStreamingEnd: ModelOutput._on_tool_input_end,
    ToolCall: ModelOutput._on_tool_call,
    ToolResult: ModelOutput._on_tool_result,
    ReasoningStart: ModelOutput._on_reasoning,
    ReasoningDelta: ModelOutput._on_reasoning,
    ReasoningEnd: ModelOutput._on_reasoning,
    StepStart: ModelOutput._on_step_start,
    StepFinish: ModelOutput._on_step_finish,
    Tripwire: ModelOutput._on_tripwire,
    Goal: ModelOutput._on_goal,
    Finish: ModelOutput._on_finish,
    Error: ModelOutput._on_error_chunk,
}
