"""The tool runner: a step's client tool calls, run concurrently, streamed as chunks.

Chunks the tools write while running (``tool-output``, ``background-task-started`` …) are streamed
live, in the order they are written; the ``tool-result`` / ``tool-error`` chunks follow once every
call finished, in call order (Mastra). An abort cancels the running tools and ends the step.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncGenerator, Callable
from typing import Any

from .._abort import AbortableQueue, AbortSignal
from ..chunks import Chunk, ChunkFrom, ToolError, ToolErrorPayload, ToolResult, ToolResultPayload, to_jsonable
from ..tools import Tool, ToolContext, ToolErrorMask, ToolWriter, reported_tool_error
from ._hooks import LoopHooks, PendingToolCall
from ._parts import ON_CHUNK_TYPES

__all__ = ["ToolNotFoundError", "ToolRunner", "call_on_chunk", "tool_error", "tool_error_payload"]

log = logging.getLogger("agentstream.agent")

AGENT = ChunkFrom.AGENT

ToolOutcome = tuple[PendingToolCall, bool, Any]
"""``(call, failed, value)``: the tool's result, or (``failed``) the error it raised."""


class ToolNotFoundError(Exception):
    """The model called a tool the agent does not have (the message lists the available ones)."""

    name = "ToolNotFoundError"


def _tool_not_found(name: str, tools: dict[str, Tool]) -> ToolNotFoundError:
    available = ", ".join(tools) or "none"
    return ToolNotFoundError(
        f'Tool "{name}" not found. Available tools: {available}. Call tools by their exact name only '
        "\u2014 never add prefixes, namespaces, or colons."
    )


def tool_error(error: Exception, *, run_id: str, call: PendingToolCall, mask: ToolErrorMask | None) -> BaseException:
    """A tool's exception as the client and the model see it (secrets redacted, ``on_tool_error``
    applied): the one place a raised exception becomes the tool's error."""
    return reported_tool_error(error, run_id=run_id, tool_name=call.name, mask=mask)


def tool_error_payload(error: BaseException, call: PendingToolCall) -> ToolErrorPayload:
    """The ``tool-error`` payload for a tool call that raised ``error`` (the one place it is built)."""
    return ToolErrorPayload(error=error, args=call.exec_args, tool_call_id=call.call_id, tool_name=call.name)


def _outcome_chunk(run_id: str, call: PendingToolCall, failed: bool, value: Any) -> Chunk:
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


class ToolRunner:
    """Runs one step's client tool calls; `stream` yields their chunks, then sets the outcome.

    After the stream: ``aborted`` (the run was aborted meanwhile: no results), ``results`` (one
    `ToolOutcome` per call kept by ``process_chunk``, in call order) and ``errored``.
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

    async def stream(
        self, calls: list[PendingToolCall], messages: list[dict[str, Any]]
    ) -> AsyncGenerator[Chunk, None]:
        process, on_chunk = self.hooks.process_chunk, self.on_chunk
        queue: AbortableQueue[Chunk] = AbortableQueue(self.signal)
        outcome: list[tuple[bool, Any]] = [(False, None)] * len(calls)
        semaphore = asyncio.Semaphore(self.concurrency)

        async def run(index: int, call: PendingToolCall) -> None:
            async with semaphore:
                outcome[index] = await self._execute(call, messages, queue.put)

        tasks = [asyncio.ensure_future(run(i, c)) for i, c in enumerate(calls)]
        gathered = asyncio.gather(*tasks, return_exceptions=True)
        gathered.add_done_callback(lambda _f: queue.close())
        try:
            async for item in queue:
                if process is not None and (item := process(item)) is None:  # type: ignore[assignment]
                    continue
                if on_chunk is not None and item.type in ON_CHUNK_TYPES:
                    await call_on_chunk(on_chunk, item)  # background-task-started
                yield item
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
        for call, (failed, value) in zip(calls, outcome, strict=True):
            self.results.append((call, failed, value))
            self.errored = self.errored or failed
            chunk: Chunk | None = _outcome_chunk(self.run_id, call, failed, value)
            if process is not None and (chunk := process(chunk)) is None:  # type: ignore[arg-type]
                continue
            assert chunk is not None
            if on_chunk is not None:
                await call_on_chunk(on_chunk, chunk)
            yield chunk

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
        context = ToolContext(
            run_id=self.run_id,
            tool_call_id=call.call_id,
            tool_name=call.name,
            agent_id=self.agent_id,
            abort_signal=self.signal,
            writer=ToolWriter(emit, run_id=self.run_id, tool_call_id=call.call_id, tool_name=call.name),
            messages=list(messages),
        )
        call.args = parsed

        async def default() -> Any:
            result = await tool_obj.run(parsed, context)
            if tool_obj.to_model_output is not None:
                call.model_output = to_jsonable(tool_obj.to_model_output(result))
            return result

        try:
            return False, await self.hooks.execute_tool(call, tool_obj, context, default)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return True, tool_error(exc, run_id=self.run_id, call=call, mask=self.on_tool_error)
