"""``ModelOutput``: the object ``agent.stream()`` returns (Mastra's ``MastraModelOutput``, spec §3).

Three parts, one concept each: the chunk log (`ChunkLog`: every ``full_stream`` access replays it
from the first chunk, then follows live ones), the pure fold of the chunks into results
(`RunAccumulator`, serialisable as it is) and this facade, which runs one producer task draining the
source into the log, calls the user's callbacks and settles the awaitable results (`PendingResults`).
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
    ToolCallSuspended,
    ToolResult,
    Tripwire,
)
from ..chunks import Object as ObjectChunk
from ._accumulator import RunAccumulator, decode_state, encode_state
from ._log import ChunkLog
from ._pending import AwaitableResults, PendingResults, UnresolvedResultError, resume_schema_dict
from ._results import (
    AbortEvent,
    ErrorEvent,
    FinishEvent,
    FullOutput,
    StepResult,
    TripwireInfo,
    final_usage,
)
from ._smooth import check_transform_factories
from ._types import ChunkStream, TransformFactory, apply_transforms
from ._usage import Usage

__all__ = ["ModelOutput", "RunStatus", "UnresolvedResultError"]

logger = logging.getLogger("agentstream")

RunStatus = str
"""``"running"``, ``"success"``, ``"failed"``, ``"canceled"`` or ``"suspended"``."""

T = TypeVar("T")
Callback = Callable[[T], Awaitable[None] | None]


class ModelOutput(AwaitableResults, ChunkLog):
    """The streaming result of one agent run.

    **Streams** (each access is a new consumer that replays from the start): ``full_stream``,
    ``text_stream``, ``object_stream``.

    **Results** (awaitable; awaiting starts the run): ``await output.text``, ``usage`` (a `Usage`),
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
    payload and ``await resume_schema`` its ``resumeSchema`` as a dict; ``on_finish`` is not called
    (the leg that resumes the run calls it).

    ``accumulator`` is what the run has produced so far (`RunAccumulator`: the step's text, tool
    calls and results, the usage so far), for the loop to read instead of keeping a copy.
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
        self._on_suspended = on_suspended
        check_transform_factories(experimental_transform, "experimental_transform")
        self._transforms = experimental_transform

        super().__init__()  # the log; `_replay_start` moves forward when a goal restarts the run
        self._acc = RunAccumulator(run_id=run_id)
        self._acc.text.log = self._log
        self._task: asyncio.Task[None] | None = None
        self._finished = asyncio.Event()
        self._status: RunStatus = "running"
        self._error: BaseException | None = None
        self._tripwire: TripwireInfo | None = None
        self._finish_callback_sent = False
        self._results = PendingResults(self._ensure_started)
        self._has_structured_output = has_structured_output

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
        return self._acc.used_fallback_value

    @property
    def accumulator(self) -> RunAccumulator:
        """The results so far, folded from the chunks seen (read it; do not change it)."""
        return self._acc

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
        acc, results = self._acc, self._results
        return FullOutput(
            text="".join(step.text for step in acc.steps),
            usage=results.usage.peek(acc.usage),
            total_usage=acc.usage.with_total(),
            steps=list(acc.steps),
            finish_reason=results.finish_reason.peek(),
            warnings=list(acc.warnings),
            provider_metadata=acc.provider_metadata,
            request=acc.request,
            response=acc.response,
            reasoning=acc.reasoning_details(),
            reasoning_text=acc.reasoning_text(),
            tool_calls=list(acc.tool_calls),
            tool_results=list(acc.tool_results),
            sources=list(acc.sources),
            files=list(acc.files),
            object=acc.object_value,
            used_fallback_value=acc.used_fallback_value,
            error=self._error,
            tripwire=self._tripwire,
            run_id=self.run_id,
            suspend_payload=results.suspend_payload.peek(),
            resume_schema=results.resume_schema.peek(),
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

    # ---------------------------------------------------------------- suspend / resume (spec §3.7)

    def serialize_state(self) -> dict[str, Any]:
        """The accumulator as JSON data (Mastra's ``serializeState``): what a later leg of the same
        run needs so that its steps, usage, tool calls and text cover the whole run."""
        return encode_state(self._acc)

    def restore_state(self, state: dict[str, Any]) -> None:
        """Continue the accounting of `serialize_state` (before the first chunk of a resumed leg)."""
        if self._log or self._acc.steps:
            raise RuntimeError("restore_state() must be called before the output has seen any chunk")
        acc = decode_state(state)
        acc.run_id = self.run_id
        acc.text.log = self._log
        self._acc = acc

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
                fold = _FOLDS.get(kind)
                if fold is not None:  # folded with no side effect: no coroutine per chunk
                    append(fold(self._acc, chunk))
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
            self._results.reject_all(
                UnresolvedResultError("the run was cancelled before this result was known")
            )
            raise
        except Exception as exc:  # the loop itself failed: surface it as Mastra does, as an error chunk
            await self._on_error_chunk(
                Error(run_id=self.run_id, from_=ChunkFrom.AGENT, payload=ErrorPayload(error=exc))
            )
            await self._flush()
        finally:
            self._close_log()
            await _aclose(source)

    # ---------------------------------------------------------------- chunks with no side effect

    async def _on_raw(self, chunk: Raw) -> None:
        if self._include_raw:
            self._emit(chunk)

    async def _on_object_result(self, chunk: ObjectResult) -> None:
        self._acc.fold_object_result(chunk)
        self._results.object.resolve(chunk.object)
        self._emit(chunk)

    async def _on_tool_input_end(self, chunk: ToolCallInputStreamingEnd) -> None:
        self._emit(chunk)
        synthetic = self._acc.fold_tool_input_end(chunk)
        if synthetic is not None:
            self._emit(synthetic)

    async def _on_tool_call(self, chunk: ToolCall) -> None:
        if self._acc.fold_tool_call(chunk):
            self._emit(chunk)

    async def _on_step_start(self, chunk: StepStart) -> None:
        self._acc.fold_step_start(chunk.payload.request)
        self._emit(chunk)

    async def _on_goal(self, chunk: Goal) -> None:
        self._emit(chunk)
        if self._acc.fold_goal(chunk, len(self._log)):
            # The goal judge sent the run round again: new consumers replay from here.
            self._replay_start = len(self._log)

    # ---------------------------------------------------------------- chunks with callbacks or endings

    async def _on_suspend(self, chunk: ToolCallApproval | ToolCallSuspended) -> Any:
        # The recorded runs win over spec §3.4 here: Mastra does not call onFinish for the
        # suspended leg; the leg that resumes the run calls it when the run finishes.
        self._status = "suspended"
        self._acc.was_suspended = True
        if self._on_suspended is not None:
            try:  # the run is kept before anyone can see the chunk (and try to resume it)
                await self._on_suspended(self.serialize_state())
            except Exception as exc:
                await self._on_error_chunk(
                    Error(run_id=self.run_id, from_=ChunkFrom.AGENT, payload=ErrorPayload(error=exc))
                )
                return _STOP
        self._results.suspend_payload.resolve(chunk.payload)
        self._results.resume_schema.resolve(resume_schema_dict(chunk.payload.resume_schema))
        self._emit(chunk)
        return None

    async def _on_abort_chunk(self, chunk: Abort) -> None:
        # The recorded runs show Mastra calls onAbort here and never onFinish for an aborted run.
        self._status = "canceled"
        self._finish_callback_sent = True
        event = AbortEvent(steps=list(self._acc.steps), text=self._acc.step_text)
        await self._call(self._cb_abort, event)
        self._emit(chunk)

    async def _on_step_finish(self, chunk: StepFinish) -> None:
        acc = self._acc
        result = acc.fold_step_finish(chunk)
        await self._call(self._cb_step_finish, result)
        self._emit(chunk)
        if acc.close_step(result, len(self._log)):
            self._replay_start = len(self._log)

    async def _on_tripwire(self, chunk: Tripwire) -> Any:
        p = chunk.payload
        self._tripwire = TripwireInfo(
            reason=p.reason or "Content blocked",
            retry=p.retry,
            metadata=None if p.metadata is msgspec.UNSET else p.metadata,
            processor_id=p.processor_id,
        )
        # Recorded: the tool calls and results are those of the step the tripwire cut short.
        self._results.tool_calls.resolve(self._acc.step_tool_calls)
        self._results.tool_results.resolve(self._acc.step_tool_results)
        self._results.resolve_all(self._acc, text=self._acc.run_text(), finish_reason="other")
        self._emit(chunk)
        return _STOP  # Mastra terminates the stream here: nothing after a tripwire is delivered.

    async def _on_finish(self, chunk: Finish) -> None:
        acc, payload = self._acc, chunk.payload
        if self._status not in ("failed", "canceled"):
            self._status = "success"
        reason = "aborted" if self._status == "canceled" else payload.reason
        acc.provider_metadata = payload.provider_metadata or acc.provider_metadata
        aggregate = final_usage(acc.usage)
        output = dict(payload.output)
        output["usage"] = aggregate
        chunk = msgspec.structs.replace(chunk, payload=msgspec.structs.replace(payload, output=output))
        steps = acc.steps
        used_tools = any(step.tool_calls or step.tool_results for step in steps)
        text = steps[-1].text if used_tools and not acc.was_suspended and steps else acc.run_text()
        if steps and steps[-1].tripwire is not None and reason == "tripwire":
            self._tripwire = steps[-1].tripwire  # an output-step processor stopped the run
            # Mastra's text is then its last response message's (the rejected answer stays in
            # the list; after a tool call that message is the tool result: no text)
            text = _message_text(((payload.messages or {}).get("nonUser") or [{}])[-1])
        # the on_finish event shows the run as streamed; the results what the processors let through
        event_reason, event_text = reason, acc.run_text(dropped=True)
        blocked = self._result_tripwire() if self._result_tripwire is not None else None
        if blocked is not None:
            self._tripwire = TripwireInfo.from_data(blocked)
            text, reason = "", "other"
        self._results.resolve_all(acc, text=text, finish_reason=reason)
        if steps and not self._finish_callback_sent:
            self._finish_callback_sent = True
            event = self._finish_event(
                text=event_text, finish_reason=event_reason, usage=Usage.from_wire(aggregate)
            )
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
        self._results.object.reject(self._error)
        self._emit(chunk)
        await self._call(self._cb_error, ErrorEvent(error=self._error))

    # ---------------------------------------------------------------- settling

    async def _flush(self) -> None:
        self._results.object.resolve(self._acc.object_value)
        if self._status == "suspended":
            self._results.resolve_all(self._acc, text=self._acc.run_text(), finish_reason="suspended")
        if self._error is not None:  # failed and never finished: the run's error is the answer
            self._results.reject_all(self._error)
        self._results.reject_unresolved()

    def _finish_event(self, *, text: str, finish_reason: str | None, usage: Usage) -> FinishEvent:
        acc = self._acc
        return FinishEvent(
            text=text,
            finish_reason=finish_reason,
            usage=usage,
            total_usage=acc.usage.with_total(),
            steps=list(acc.steps),
            tool_calls=list(acc.tool_calls),
            tool_results=list(acc.tool_results),
            reasoning=acc.reasoning_details(),
            reasoning_text=acc.reasoning_text(),
            sources=list(acc.sources),
            files=list(acc.files),
            warnings=list(acc.warnings),
            provider_metadata=acc.provider_metadata,
            response=acc.response,
            request=acc.request,
            object=acc.object_value,
            error=self._error,
            used_fallback_value=acc.used_fallback_value,
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


async def _aclose(source: object) -> None:
    aclose = getattr(source, "aclose", None)
    if aclose is not None:
        try:
            await aclose()
        except Exception:
            logger.debug("agentstream: closing the chunk source raised", exc_info=True)


_STOP = object()

_FOLDS: dict[type[Any], Callable[[RunAccumulator, Any], Chunk]] = {
    Source: RunAccumulator.fold_source,
    File: RunAccumulator.fold_file,
    ToolCallInputStreamingStart: RunAccumulator.fold_tool_input_start,
    ToolResult: RunAccumulator.fold_tool_result,
    ReasoningStart: RunAccumulator.fold_reasoning,
    ReasoningDelta: RunAccumulator.fold_reasoning,
    ReasoningEnd: RunAccumulator.fold_reasoning,
    ToolCallDelta: RunAccumulator.fold_tool_delta,
}
"""Chunks the accumulator folds with no callback or ending: the facade emits what the fold returns."""

_HANDLERS: dict[type[Any], Callable[[ModelOutput, Any], Awaitable[object]]] = {
    ToolCallSuspended: ModelOutput._on_suspend,
    ToolCallApproval: ModelOutput._on_suspend,
    Abort: ModelOutput._on_abort_chunk,
    Raw: ModelOutput._on_raw,
    ObjectResult: ModelOutput._on_object_result,
    ToolCallInputStreamingEnd: ModelOutput._on_tool_input_end,
    ToolCall: ModelOutput._on_tool_call,
    StepStart: ModelOutput._on_step_start,
    StepFinish: ModelOutput._on_step_finish,
    Tripwire: ModelOutput._on_tripwire,
    Goal: ModelOutput._on_goal,
    Finish: ModelOutput._on_finish,
    Error: ModelOutput._on_error_chunk,
}
