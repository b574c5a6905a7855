"""The tool runner: a step's client tool calls, run concurrently, streamed as chunks.

Chunks the tools write while running (``tool-output``, ``background-task-started`` …) are streamed
live, in the order they are written; the ``tool-result`` / ``tool-error`` chunks follow once every
call finished, in call order (Mastra). An abort cancels the running tools and ends the step.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any

from .._abort import AbortableQueue, AbortSignal
from .._request_context import RequestContext
from ..chunks import (
    Chunk,
    ChunkFrom,
    ToolError,
    ToolErrorPayload,
    ToolOutputDenied,
    ToolOutputDeniedPayload,
    ToolResult,
    ToolResultPayload,
    to_jsonable,
)
from ..tools import Tool, ToolContext, ToolErrorMask, ToolSuspended, ToolWriter, reported_tool_error
from ._hooks import LoopHooks, PendingToolCall
from ._parts import ON_CHUNK_TYPES
from ._suspension import DECLINED_REASON, ResumeDecision, Suspension
from ._tripwire import Tripwire

__all__ = [
    "ToolNotFoundError",
    "ToolRunner",
    "call_on_chunk",
    "notify_on_chunk",
    "tool_error",
    "tool_error_payload",
]

log = logging.getLogger("agentstream.agent")

AGENT = ChunkFrom.AGENT

ToolOutcome = tuple[PendingToolCall, bool, Any]
"""``(call, failed, value)``: the tool's result, or (``failed``) the error it raised."""

ApprovalCheck = Callable[[PendingToolCall, Tool], Awaitable[bool]]
"""Whether a validated call must wait for approval before it runs."""

_NOT_RUN: tuple[bool, Any] = (False, object())
"""The slot of a call that did not run because the step suspended first."""


class ToolNotFoundError(Exception):
    """The model called a tool the agent does not have (the message lists the available ones)."""

    name = "ToolNotFoundError"


def _tool_not_found(name: str, tools: dict[str, Tool]) -> ToolNotFoundError:
    available = ", ".join(tools) or "none"
    return ToolNotFoundError(
        f'Tool "{name}" not found. Available tools: {available}. Call tools by their exact name only '
        "\u2014 never add prefixes, namespaces, or colons."
    )


def tool_error(
    error: Exception, *, run_id: str, call: PendingToolCall, mask: ToolErrorMask | None
) -> BaseException:
    """A tool's exception as the client and the model see it (secrets redacted, ``on_tool_error``
    applied): the one place a raised exception becomes the tool's error."""
    return reported_tool_error(error, run_id=run_id, tool_name=call.name, mask=mask)


def tool_error_payload(error: BaseException, call: PendingToolCall) -> ToolErrorPayload:
    """The ``tool-error`` payload for a tool call that raised ``error`` (the one place it is built)."""
    return ToolErrorPayload(error=error, args=call.exec_args, tool_call_id=call.call_id, tool_name=call.name)


def _outcome_chunk(run_id: str, call: PendingToolCall, failed: bool, value: Any, denied: bool) -> Chunk:
    if denied:
        approval = {"id": call.call_id, "approved": False, "reason": value}
        return ToolOutputDenied(
            run_id=run_id,
            from_=AGENT,
            payload=ToolOutputDeniedPayload(
                tool_call_id=call.call_id, tool_name=call.name, args=call.exec_args, approval=approval
            ),
        )
    if failed:
        return ToolError(run_id=run_id, from_=AGENT, payload=tool_error_payload(value, call))
    metadata = None if call.model_output is None else {"mastra": {"modelOutput": call.model_output}}
    payload = ToolResultPayload(
        args=call.exec_args,
        tool_call_id=call.call_id,
        tool_name=call.name,
        result=value,
        provider_metadata=metadata,
    )
    return ToolResult(run_id=run_id, from_=AGENT, payload=payload)


async def call_on_chunk(on_chunk: Callable[[Chunk], Any], chunk: Chunk) -> None:
    """Call the user's ``on_chunk``; a callback that raises is logged and the run goes on."""
    try:
        result = on_chunk(chunk)
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("on_chunk callback failed")


def notify_on_chunk(on_chunk: Callable[[Chunk], Any], chunk: Chunk) -> Awaitable[None] | None:
    """`call_on_chunk` without a coroutine per call (the per-token path): a plain callback is
    called now; an async one's awaitable comes back, guarded, for the caller to await."""
    try:
        result = on_chunk(chunk)
    except Exception:
        log.exception("on_chunk callback failed")
        return None
    if result is None or not inspect.isawaitable(result):
        return None
    return _guarded(result)


async def _guarded(result: Awaitable[Any]) -> None:
    try:
        await result
    except Exception:
        log.exception("on_chunk callback failed")


class ToolRunner:
    """Runs one step's client tool calls; `stream` yields their chunks, then sets the outcome.

    After the stream: ``aborted`` (the run was aborted meanwhile: no results), ``suspended`` (a
    call waits for approval or suspended itself: no results; ``completed`` holds the outcomes of
    the calls that ran, by call id, for the leg that resumes the step), ``results`` (one
    `ToolOutcome` per call kept by ``process_chunk``, in call order) and ``errored``.

    Human in the loop: ``approval`` tells whether a call must wait for approval (not asked for
    the ids in ``approved``); ``decision`` answers the pending call of a resumed step (approve,
    decline: ``tool-output-denied`` and the model is told the reason, resume: the tool runs again
    with ``context.resume_data``); ``restored`` are the outcomes of calls that ran in an earlier leg.
    """

    def __init__(
        self,
        *,
        run_id: str,
        agent_id: str,
        signal: AbortSignal,
        tools: dict[str, Tool],
        hooks: LoopHooks,
        on_chunk: Callable[[Chunk], Any] | None,
        concurrency: int,
        on_tool_error: ToolErrorMask | None = None,
        approval: ApprovalCheck | None = None,
        request_context: RequestContext | None = None,
        approved: set[str] | None = None,
        decision: ResumeDecision | None = None,
        restored: Mapping[str, tuple[bool, Any]] | None = None,
    ) -> None:
        self.run_id = run_id
        self.agent_id = agent_id
        self.signal = signal
        self.tools = tools
        self.hooks = hooks
        self.on_chunk = on_chunk
        self.concurrency = max(1, concurrency)
        self.on_tool_error = on_tool_error
        self.aborted = False
        self.errored = False
        self.results: list[ToolOutcome] = []
        self.approval = approval
        self.request_context = request_context if request_context is not None else RequestContext()
        self.approved: set[str] = approved if approved is not None else set()
        self.decision = decision
        self.restored = dict(restored or {})
        self.suspended: Suspension | None = None
        self.completed: dict[str, tuple[bool, Any]] = {}
        self.denied: set[str] = set()
        self.tripwire: Tripwire | None = None
        """A processor blocked a tool result or chunk: the run ends with its ``tripwire`` chunk."""

    async def stream(
        self, calls: list[PendingToolCall], messages: list[dict[str, Any]]
    ) -> AsyncGenerator[Chunk, None]:
        process, on_chunk = self.hooks.process_chunk, self.on_chunk
        queue: AbortableQueue[Chunk] = AbortableQueue(self.signal)
        outcome: list[tuple[bool, Any]] = [(False, None)] * len(calls)
        semaphore = asyncio.Semaphore(self.concurrency)

        async def run(index: int, call: PendingToolCall) -> None:
            async with semaphore:
                restored = self.restored.get(call.call_id)
                if restored is not None:
                    outcome[index] = restored
                elif self.suspended is not None:
                    outcome[index] = _NOT_RUN  # runs when the step is resumed
                else:
                    outcome[index] = await self._execute(call, messages, queue.put)

        tasks = [asyncio.ensure_future(run(i, c)) for i, c in enumerate(calls)]
        gathered = asyncio.gather(*tasks, return_exceptions=True)
        gathered.add_done_callback(lambda _f: queue.close())
        try:
            async for item in queue:
                for out in await self._processed(process, item) if process is not None else (item,):
                    if on_chunk is not None and out.type in ON_CHUNK_TYPES:
                        await call_on_chunk(on_chunk, out)  # background-task-started
                    yield out
                if self.tripwire is not None:
                    return
            if queue.aborted:
                self.aborted = True
                return
        finally:
            queue.close()
            for task in tasks:
                task.cancel()
            # Structured concurrency: a cancelled tool (a sub-agent or workflow run) finishes its
            # cleanup before the step goes on, so no task outlives the run.
            await asyncio.gather(*tasks, return_exceptions=True)
        if self.suspended is not None:
            self.completed = {c.call_id: o for c, o in zip(calls, outcome, strict=True) if o is not _NOT_RUN}
            return
        for call, (failed, value) in zip(calls, outcome, strict=True):
            if isinstance(value, Tripwire):  # process_tool_result blocked it: not committed, the run ends
                self.tripwire = value  # the loop's ending streams its chunk
                return
            self.results.append((call, failed, value))
            self.errored = self.errored or failed
            denied = call.call_id in self.denied
            chunk: Chunk = _outcome_chunk(self.run_id, call, failed, value, denied)
            for out in await self._processed(process, chunk) if process is not None else (chunk,):
                if on_chunk is not None and out.type != "tripwire":
                    await call_on_chunk(on_chunk, out)
                yield out
            if self.tripwire is not None:
                return

    async def _processed(self, process: Callable[[Chunk], Any], chunk: Chunk) -> list[Chunk]:
        """``chunk`` through the output seam: what to stream (written chunks first; nothing if
        dropped or if a processor blocked it: ``tripwire`` is set and the loop's ending streams it)."""
        try:
            out = process(chunk)
            if inspect.isawaitable(out):
                out = await out
        except Tripwire as trip:
            self.tripwire = trip
            return []
        if type(out) is list:
            return [c for c in out if c is not None]
        return [] if out is None else [out]

    async def _execute(
        self, call: PendingToolCall, messages: list[dict[str, Any]], emit: Callable[[Chunk], None]
    ) -> tuple[bool, Any]:
        """Run one tool call: ``(False, result)`` or ``(True, error)``. Never raises."""
        tool_obj = self.tools.get(call.name)
        if tool_obj is None:
            return True, _tool_not_found(call.name, self.tools)
        parsed, invalid = tool_obj.validation_error(call.exec_args)
        if invalid is not None:
            log.warning("Tool input validation failed for %s: %s", call.name, invalid["message"])
            return False, invalid
        call.args = parsed
        decision = self.decision if self.decision and self.decision.tool_call_id == call.call_id else None
        if decision is not None and decision.action == "decline":
            self.denied.add(call.call_id)
            return False, decision.reason or DECLINED_REASON
        if decision is not None:
            self.approved.add(call.call_id)
        try:
            if call.call_id not in self.approved and self.approval is not None:
                if await self.approval(call, tool_obj):
                    return self._suspend(Suspension("approval", call))
                self.approved.add(call.call_id)
        except Exception as exc:
            return True, tool_error(exc, run_id=self.run_id, call=call, mask=self.on_tool_error)
        context = ToolContext(
            run_id=self.run_id,
            tool_call_id=call.call_id,
            tool_name=call.name,
            agent_id=self.agent_id,
            abort_signal=self.signal,
            writer=ToolWriter(emit, run_id=self.run_id, tool_call_id=call.call_id, tool_name=call.name),
            messages=list(messages),
            resume_data=decision.resume_data if decision is not None else None,
            request_context=self.request_context,
        )

        async def default() -> Any:
            result = await tool_obj.run(parsed, context)
            if tool_obj.to_model_output is not None:
                call.model_output = to_jsonable(tool_obj.to_model_output(result))
            return result

        try:
            return False, await self.hooks.execute_tool(call, tool_obj, context, default)
        except asyncio.CancelledError:
            raise
        except Tripwire as trip:
            return True, trip
        except ToolSuspended as suspended:
            payload = to_jsonable(suspended.payload)
            return self._suspend(Suspension("suspend", call, payload, tool_obj.resume_schema_json()))
        except Exception as exc:
            return True, tool_error(exc, run_id=self.run_id, call=call, mask=self.on_tool_error)

    def _suspend(self, suspension: Suspension) -> tuple[bool, Any]:
        """The first call to stop the step wins; a second one runs again when the step resumes."""
        if self.suspended is None:
            self.suspended = suspension
        return _NOT_RUN
