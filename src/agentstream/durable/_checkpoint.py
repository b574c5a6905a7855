"""Checkpointed agent runs: inside a DBOS workflow, each model call and each tool call is a step.

A model call streams live (its step runs the provider and hands each part to the loop as it
arrives) and records the parts; a tool call records its result and the chunks it wrote. After a
crash the workflow runs again: completed steps return their records (the provider is not called,
the tool not run), so the run emits the same chunks up to the step that was in flight, which runs
again. Installed as the agent package's `CheckpointSeam` by `install_checkpoints()` (a
`DurableWorker` calls it when it launches); outside a workflow (or inside a step: a sub-agent
inside a tool step) a run is not touched.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from dbos import DBOS, StepReservation

from ..agent import ChainedHooks, LoopHooks, PendingToolCall, set_checkpoint_seam
from ..chunks import Chunk, chunk_from_dict, chunk_to_dict
from ..tools import Tool, ToolContext, ToolWriter
from ._first_run import current_first_run
from ._record import decode, decode_error, encode, encode_error

if TYPE_CHECKING:
    from ..models import CallOptions, LanguageModel, StreamPart

__all__ = ["CheckpointHooks", "CheckpointedModel", "DBOSCheckpoints", "RunSteps", "install_checkpoints"]

_log = logging.getLogger("agentstream.durable")
_IDS = uuid.UUID("5b0c3f52-8d4e-4a43-9c59-0c7f3f1f5e21")
"""Namespace of the run and message ids made inside a workflow (uuid5 of workflow id and step id)."""
_END = object()


def install_checkpoints() -> None:
    """Checkpoint, from now on, every agent run this process starts in DBOS workflow code (each model
    call and each tool call a step; docs/decisions/durable.md, "Checkpointed agent runs"). Outside
    a workflow a run then costs one context lookup. `DurableWorker.launch` calls it."""
    set_checkpoint_seam(DBOSCheckpoints())


class DBOSCheckpoints:
    """The agent package's `CheckpointSeam` on DBOS: a run that starts in workflow code is
    checkpointed; anywhere else (no workflow, or inside a step) it is not."""

    def begin_run(self) -> RunSteps | None:
        if DBOS.workflow_id is None or DBOS.step_id is not None:
            return None
        return RunSteps()


class RunSteps:
    """One checkpointed run: its model wrapper and hooks link share the tool calls' step ids.

    DBOS numbers a workflow's steps in the order they are *started* and a replay must start them
    in the same order. The loop is sequential except for a step's tool calls, which run
    concurrently (and may wait on a semaphore or an approval check first): so each tool call's step
    id is drawn when the model call that asked for it ends, in the order of its ``tool-call`` parts.
    """

    def __init__(self) -> None:
        self.tool_steps: dict[str, StepReservation] = {}
        self.first = current_first_run()
        """Set in a chat turn's first execution: model calls skip DBOS's check, records wait."""

    async def before_step(self) -> None:
        """Write the model call record kept back (first execution) before another step starts."""
        if self.first is not None:
            await self.first.flush()

    def new_id(self) -> str:
        reserved = DBOS.reserve_step()  # a step id never run: the same number on every replay
        return str(uuid.uuid5(_IDS, f"{DBOS.workflow_id}/{reserved.step_id}"))

    def model(self, model: LanguageModel) -> LanguageModel:
        return CheckpointedModel(model, self)

    def hooks(self, inner: LoopHooks) -> LoopHooks:
        return CheckpointHooks(inner, self)

    def reserve_tool_steps(self, parts: list[Any]) -> None:
        for part in parts:
            if part.get("type") == "tool-call" and not part.get("providerExecuted"):
                self.tool_steps[str(part.get("toolCallId"))] = DBOS.reserve_step()

    def tool_step(self, call_id: str) -> StepReservation:
        # A call of a resumed step (its model call was in the leg that suspended) draws its id now.
        return self.tool_steps.pop(call_id, None) or DBOS.reserve_step()


class _Handoff:
    """The parts from the step's task to the loop: a deque and at most one waiting reader (an
    ``asyncio.Queue`` costs twice as much per part)."""

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: deque[Any] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: Any) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> Any:
        while not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.popleft()


class CheckpointedModel:
    """A `LanguageModel` whose every ``do_stream`` call is one step of the current workflow."""

    def __init__(self, model: LanguageModel, run: RunSteps) -> None:
        self.wrapped = model
        self.run = run
        self.specification_version = getattr(model, "specification_version", "v2")
        self.provider = model.provider
        self.model_id = model.model_id

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)

    def do_stream(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        # The step id is drawn here, in the loop's own order; the step starts at the first read.
        return ModelStep(self.wrapped, options, DBOS.reserve_step(), self.run)


class ModelStep:
    """One model call as a step. Live, the step's task reads the provider and puts each part in a
    queue the loop reads (no batching); the step's result is every part, plus the request and
    response the stream reported, plus the error it ended with. Replayed, the recorded parts are
    put in the queue at once and the provider is not called.

    A provider error does not fail the step (DBOS would pickle the exception and lose the parts
    streamed before it, and provider errors are not picklable): it is recorded and raised to the
    loop after the parts, the provider's own exception live, a rebuilt one on a replay. No
    retries: the loop's error handling (``on_model_error``) decides, as without a workflow.

    A call whose provider reports no response id or timestamp gets them (a ``response-metadata``
    part before ``finish``), so that the step's metadata is the same on a replay.
    """

    __slots__ = (
        "_closing",
        "_error",
        "_inner",
        "_live",
        "_model",
        "_options",
        "_queue",
        "_record",
        "_run",
        "_step",
        "_task",
    )

    def __init__(
        self, model: LanguageModel, options: CallOptions, step: StepReservation, run: RunSteps
    ) -> None:
        self._model = model
        self._options = options
        self._step = step
        self._run = run
        self._queue = _Handoff()
        self._task: asyncio.Task[None] | None = None
        self._inner: AsyncIterator[StreamPart] | None = None
        """The provider's stream, once the step runs it (live)."""
        self._record: dict[str, Any] | None = None
        self._error: BaseException | None = None
        self._closing = False
        self._live = False
        """The step ran here (else its record was replayed)."""

    @property
    def request(self) -> Any:
        """The provider stream's ``request`` (live) or the recorded one (replay)."""
        if self._inner is not None:
            return getattr(self._inner, "request", None)
        return self._record["request"] if self._record is not None else None

    @property
    def response(self) -> Any:
        """The provider stream's ``response`` (live) or the recorded one (replay)."""
        if self._inner is not None:
            return getattr(self._inner, "response", None)
        return self._record["response"] if self._record is not None else None

    def __aiter__(self) -> ModelStep:
        return self

    async def __anext__(self) -> StreamPart:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._drive())
        item = await self._queue.get()
        if item.__class__ is dict:
            return cast("StreamPart", item)
        self._queue.put_nowait(_END)  # reading again after the end ends again
        if item is _END:
            raise StopAsyncIteration
        raise item

    async def _drive(self) -> None:
        name = f"agentstream.model:{self._model.provider}:{self._model.model_id}"
        first = self._run.first
        try:
            if first is None:
                record = await self._step.run_async({"name": name, "retries_allowed": False}, self._call)
            else:  # nothing recorded to replay; recorded once a later step exists (`FirstRun`)
                await first.flush()
                record = await self._call()
                first.defer(self._step, name, record)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            # The step could not be run or recorded (the system database), or this execution no
            # longer owns its workflow (DBOS raises a `BaseException` then, so that no handler of
            # the loop takes it for a model error): the loop reading the queue gets it either way,
            # instead of waiting for an end that never comes.
            self._queue.put_nowait(exc)
            return
        self._run.reserve_tool_steps(record["parts"])
        error = self._error
        if not self._live:  # replayed: the provider is not called
            self._record = {"request": decode(record["request"]), "response": decode(record["response"])}
            for part in record["parts"]:
                self._queue.put_nowait(decode(part))
            error = decode_error(record["error"]) if record["error"] is not None else None
        self._queue.put_nowait(_END if error is None else error)

    async def _call(self) -> dict[str, Any]:
        """The step itself: the real provider call, each part forwarded as it arrives."""
        self._live = True
        parts: list[Any] = []
        put = self._queue.put_nowait
        closed = False
        metadata: Any = None
        try:
            self._inner = stream = self._model.do_stream(self._options)
            async for part in stream:
                kind = part["type"]
                if kind == "response-metadata":
                    metadata = part
                elif kind == "finish" and not _complete(metadata):
                    metadata = _filled_metadata(metadata, self._step.step_id)
                    parts.append(metadata)
                    put(metadata)
                parts.append(part)
                put(part)
        except asyncio.CancelledError:
            if not self._closing:
                raise  # the workflow is cancelled or the worker stops: not recorded, runs again
            closed = True  # the loop stopped reading (a processor, a fatal part): record what it had
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        except Exception as exc:
            self._error = exc
            if len(parts) > 1 and not _complete(metadata):  # failed mid-answer: the step still ends
                metadata = _filled_metadata(metadata, self._step.step_id)
                parts.append(metadata)
                put(metadata)
        finally:
            await _close(self._inner)
        error = self._error
        return {
            "parts": encode(parts),
            "request": encode(getattr(self._inner, "request", None)),
            "response": encode(getattr(self._inner, "response", None)),
            "error": encode_error(error) if error is not None else None,
            "closed": closed,
        }

    async def aclose(self) -> None:
        """Stop the step: the loop closed the stream early. Its parts so far are recorded, unless
        the run is aborted or cancelled (then the call is not recorded and a replay makes it again)."""
        task = self._task
        if task is None or task.done():
            return
        current = asyncio.current_task()
        signal = self._options.get("abort_signal")
        cancelled = current is not None and current.cancelling() > 0
        self._closing = not cancelled and not (signal is not None and signal.aborted)
        task.cancel()
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            task.cancel()
            raise


def _complete(metadata: Any) -> bool:
    return bool(metadata and metadata.get("id") and metadata.get("timestamp"))


def _filled_metadata(metadata: Any, step_id: int) -> dict[str, Any]:
    """The call's response metadata with the id and time the loop would otherwise make up (a
    random id, the clock), made here once so that a replay reports the same ones."""
    filled = dict(metadata or {"type": "response-metadata"})
    if not filled.get("id"):
        filled["id"] = str(uuid.uuid5(_IDS, f"{DBOS.workflow_id}/{step_id}/response"))
    if not filled.get("timestamp"):
        filled["timestamp"] = datetime.now(UTC)
    return filled


async def _close(stream: Any) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        try:
            await aclose()
        except Exception:
            _log.debug("closing the model stream failed", exc_info=True)


class CheckpointHooks(ChainedHooks):
    """``execute_tool`` as a step of the current workflow: live, the inner chain runs the tool
    (background dispatch, tool-result processors and the tool itself are inside the step) and its
    result, the chunks it wrote and its error or suspension are recorded; replayed, the chunks are
    written again and the recorded outcome is returned or raised without running the tool."""

    def __init__(self, inner: LoopHooks, run: RunSteps) -> None:
        super().__init__(inner)
        self.run = run

    async def execute_tool(
        self,
        call: PendingToolCall,
        tool: Tool,
        context: ToolContext,
        default: Callable[[], Awaitable[Any]],
    ) -> Any:
        step = self.run.tool_step(call.call_id)
        await self.run.before_step()
        live: list[Any] = []

        async def run_tool() -> dict[str, Any]:
            writer, written = context.writer, []

            def emit(chunk: Chunk) -> None:
                written.append(chunk_to_dict(chunk))
                writer.emit(chunk)

            context.writer = ToolWriter(
                emit, run_id=context.run_id, tool_call_id=context.tool_call_id, tool_name=context.tool_name
            )
            try:
                result = await self.inner.execute_tool(call, tool, context, default)
            except Exception as exc:
                live.append(exc)
                return {"error": encode_error(exc), "chunks": written, "run_id": context.run_id}
            finally:
                context.writer = writer
            live.append(result)
            return {
                "error": None,
                "result": encode(result),
                "model_output": call.model_output,
                "chunks": written,
                "run_id": context.run_id,
            }

        record = await step.run_async({"name": f"agentstream.tool:{call.name}"}, run_tool)
        if live:  # ran here: the tool's own result or exception, as without a workflow
            if record["error"] is not None:
                raise live[0]
            return live[0]
        for chunk in record["chunks"]:
            if chunk.get("runId") == record["run_id"]:  # this run's chunk: its id (a fork's differs)
                chunk["runId"] = context.run_id
            context.writer.emit(chunk_from_dict(chunk, unknown="keep"))
        if record["error"] is not None:
            raise decode_error(record["error"])
        call.model_output = record["model_output"]
        return decode(record["result"])
