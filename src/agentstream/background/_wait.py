"""The in-loop wait for running background tasks (Mastra ``background-task-check-step.ts``).

When ``wait_timeout_ms`` is set (the agent's ``background`` config first, then the manager's) and a
step ends while tasks of the run's scope are running, the step waits up to that long for the next
of them to end, streaming ``background-task-progress`` (``{taskIds, runningCount, elapsedMs}``,
``runId``, ``from: AGENT``): one at ``elapsedMs: 0``, then one every `PROGRESS_INTERVAL_MS`. A task
that ends in time makes the loop continue (its record chunk is streamed, and the next model call
sees its real result in place of the placeholder); a timeout lets the loop end as it would have
(the task keeps running). Until-idle turns never wait here (Mastra's ``_skipBgTaskWait``): their
stream waits between turns instead.

Mastra reaches its waiting branch only when the workflow step's ``retryCount`` is above 0, which
its default engine never gives on a first attempt (so ``waitTimeoutMs`` has no visible effect
there); here the branch is taken whenever ``wait_timeout_ms`` is set, which is what the option says
it does (docs/decisions/issue-22-background-progress.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import msgspec

from ..chunks import BackgroundTaskProgress, BackgroundTaskProgressPayload, Chunk, ChunkFrom
from ..storage import BackgroundTask
from ._errors import TaskWaitTimeoutError
from ._records import _record_chunk

if TYPE_CHECKING:
    from ..agent import StepDecision
    from ._manager import BackgroundTaskManager

__all__ = ["PROGRESS_INTERVAL_MS", "tool_output", "wait_for_next_task_chunks"]

PROGRESS_INTERVAL_MS = 3000
"""Mastra's ``progressIntervalMs`` for the in-loop wait."""


def _progress(run_id: str | None, task_ids: list[str], elapsed_ms: float) -> BackgroundTaskProgress:
    return BackgroundTaskProgress(
        run_id=run_id,
        from_=ChunkFrom.AGENT,
        payload=BackgroundTaskProgressPayload(
            task_ids=list(task_ids), running_count=len(task_ids), elapsed_ms=int(elapsed_ms)
        ),
    )


async def wait_for_next_task_chunks(
    manager: BackgroundTaskManager,
    running: list[BackgroundTask],
    *,
    run_id: str | None,
    wait_timeout_ms: int,
    decision: StepDecision,
    ended: dict[str, BackgroundTask],
) -> AsyncIterator[Chunk]:
    """Stream the wait's chunks; a task that ends in time goes into ``ended`` (by tool call id) and
    sets ``decision.continue_``; after a timeout ``decision`` is left as it was."""
    task_ids = [task.id for task in running]
    progress: asyncio.Queue[BackgroundTaskProgress] = asyncio.Queue()
    yield _progress(run_id, task_ids, 0)

    def on_progress(elapsed_ms: float) -> None:
        progress.put_nowait(_progress(run_id, task_ids, elapsed_ms))

    waiter = asyncio.ensure_future(
        manager.wait_for_next_task(
            task_ids,
            timeout_ms=wait_timeout_ms,
            on_progress=on_progress,
            progress_interval_ms=PROGRESS_INTERVAL_MS,
        )
    )
    try:
        while not waiter.done():
            getter = asyncio.ensure_future(progress.get())
            await asyncio.wait({waiter, getter}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                yield getter.result()
            else:
                getter.cancel()
        while not progress.empty():
            yield progress.get_nowait()
        try:
            task = waiter.result()
        except TaskWaitTimeoutError:
            return  # none ended in time: the loop ends as it would have, the tasks run on
    finally:
        if not waiter.done():
            waiter.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await waiter
    ended[task.tool_call_id] = task
    chunk: Any = _record_chunk(task)
    if chunk is not None:  # as the task's own hooks stream it into the run in Mastra
        yield msgspec.structs.replace(chunk, run_id=run_id, from_=ChunkFrom.AGENT)
    decision.continue_ = True


def tool_output(task: BackgroundTask) -> dict[str, Any]:
    """The ``tool-result`` output the model sees for a task that ended (instead of the placeholder)."""
    if task.status == "completed":
        result = task.result
        return (
            {"type": "text", "value": result}
            if isinstance(result, str)
            else {"type": "json", "value": result}
        )
    message = task.error.message if task.error is not None else task.status
    return {"type": "error-text", "value": f"Background task {task.status}: {message}"}
