"""Waiting for tasks and reading their chunks: `wait_for_next_task`, `subscribe`, `stream`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TYPE_CHECKING

from .._abort import AbortableQueue, AbortSignal
from ..chunks import (
    BackgroundTaskOutput,
    BackgroundTaskRunning,
)
from ..storage import (
    TERMINAL_TASK_STATUSES,
    BackgroundTask,
)
from ._errors import (
    TaskNotFoundError,
    TaskWaitTimeoutError,
)

if TYPE_CHECKING:
    pass

from ._following import _FollowingRunner
from ._records import _WAIT_POLL_S, STREAM_OUTPUT_BUFFER, BackgroundTaskChunk, _Subscriber

log = logging.getLogger("agentstream.background")


class _ObservedRunner(_FollowingRunner):
    """Waiting and subscribing, for `BackgroundTaskManager`."""

    async def wait_for_next_task(
        self,
        task_ids: Iterable[str],
        *,
        timeout_ms: float | None = None,
        on_progress: Callable[[float], object] | None = None,
        progress_interval_ms: float = 3000,
        abort_signal: AbortSignal | None = None,
    ) -> BackgroundTask:
        """The first of ``task_ids`` to reach completed / failed / cancelled / timed_out.

        Polls storage every 50 ms (so tasks run by another process are seen) and wakes at once on
        local completions. ``on_progress(elapsed_ms)`` every ``progress_interval_ms``.
        """
        ids = list(task_ids)
        if not ids:
            raise ValueError("wait_for_next_task needs at least one task id")
        start = time.monotonic()
        next_progress = progress_interval_ms / 1000
        while True:
            event = self._terminal_event
            for tid in ids:
                task = await self.storage.find_task(tid)
                if task is None:
                    raise TaskNotFoundError(tid)
                if task.status in TERMINAL_TASK_STATUSES:
                    return task
            elapsed = time.monotonic() - start
            if abort_signal is not None and abort_signal.aborted:
                abort_signal.throw_if_aborted()
            if timeout_ms is not None and elapsed * 1000 >= timeout_ms:
                raise TaskWaitTimeoutError()
            if on_progress is not None and elapsed >= next_progress:
                next_progress += progress_interval_ms / 1000
                await self._call_hook(on_progress, elapsed * 1000)
            wait_s = _WAIT_POLL_S
            if timeout_ms is not None:
                wait_s = max(0.0, min(wait_s, timeout_ms / 1000 - elapsed))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), wait_s)

    async def wait_until_started(self, task_id: str, *, timeout_ms: float = 1000) -> bool:
        """Wait until the task has left ``pending`` (or ``timeout_ms`` passed); returns whether it did."""
        event = asyncio.Event()
        unsubscribe = self.subscribe(lambda _c: event.set(), task_id=task_id)
        try:
            task = await self.storage.find_task(task_id)
            if task is None or task.status != "pending":
                return True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout_ms / 1000)
            return event.is_set()
        finally:
            unsubscribe()

    async def wait_for_completion(self, task_id: str, *, timeout_ms: float | None = None) -> BackgroundTask:
        """Wait until task `task_id` reaches a terminal status and return it (`TaskWaitTimeoutError` after
        `timeout_ms`).
        """
        return await self.wait_for_next_task([task_id], timeout_ms=timeout_ms)

    # ------------------------------------------------------------------------------ events

    def subscribe(
        self,
        listener: Callable[[BackgroundTaskChunk], None],
        *,
        agent_id: str | None = None,
        run_id: str | None = None,
        thread_id: str | None = None,
        resource_id: str | None = None,
        task_id: str | None = None,
    ) -> Callable[[], None]:
        """Call ``listener(chunk)`` synchronously for every matching lifecycle chunk; returns an unsubscriber."""
        sub = _Subscriber(listener, agent_id, run_id, thread_id, resource_id, task_id)
        self._subscribers.append(sub)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._subscribers.remove(sub)

        return unsubscribe

    async def stream(
        self,
        *,
        agent_id: str | None = None,
        run_id: str | None = None,
        thread_id: str | None = None,
        resource_id: str | None = None,
        task_id: str | None = None,
        abort_signal: AbortSignal | None = None,
        include_existing: bool = True,
        max_buffered_output: int = STREAM_OUTPUT_BUFFER,
    ) -> AsyncIterator[BackgroundTaskChunk]:
        """Lifecycle chunks (no ``runId``/``from``) until ``abort_signal`` fires or the consumer stops.

        With ``include_existing``, first a ``background-task-running`` for each task currently
        ``running`` (Mastra replays only running tasks, not suspended ones).

        Bounded: while more than ``max_buffered_output`` chunks wait for a slow consumer, further
        ``background-task-output`` (progress) chunks are dropped (and counted in a log warning);
        lifecycle chunks (running, completed, failed, suspended, resumed, cancelled) are always kept,
        so the buffer holds at most ``max_buffered_output`` plus a few chunks per task.
        """
        if isinstance(max_buffered_output, bool) or not isinstance(max_buffered_output, int):
            raise TypeError(f"max_buffered_output must be an int, got {max_buffered_output!r}")
        if max_buffered_output < 0:
            raise ValueError(f"max_buffered_output must be >= 0, got {max_buffered_output}")
        queue: AbortableQueue[BackgroundTaskChunk] = AbortableQueue(abort_signal)
        dropped = 0
        announced: set[str] = set()
        """Tasks whose running chunk came from the listing: a second one (the task's own publish
        racing the listing, or a followed stream's replay) is dropped."""

        def offer(chunk: BackgroundTaskChunk) -> None:
            nonlocal dropped
            if isinstance(chunk, BackgroundTaskOutput) and queue.qsize() >= max_buffered_output:
                dropped += 1
                if dropped == 1:
                    log.warning(
                        "background task stream: consumer is %d chunks behind; dropping progress chunks",
                        queue.qsize(),
                    )
                return
            queue.put(chunk)

        unsubscribe = self.subscribe(
            offer,
            agent_id=agent_id,
            run_id=run_id,
            thread_id=thread_id,
            resource_id=resource_id,
            task_id=task_id,
        )
        try:
            if include_existing:
                page = await self.storage.list_tasks(
                    status="running",
                    agent_id=agent_id,
                    run_id=run_id,
                    thread_id=thread_id,
                    resource_id=resource_id,
                )
                for task in page.tasks:
                    if task_id is None or task.id == task_id:
                        announced.add(task.id)
                        yield self._running_chunk(task)
            if abort_signal is not None and abort_signal.aborted:
                return
            async for chunk in queue:
                if isinstance(chunk, BackgroundTaskRunning) and chunk.payload.task_id in announced:
                    announced.discard(chunk.payload.task_id)
                    continue
                yield chunk
        finally:
            unsubscribe()
            queue.close()
            if dropped:
                log.warning("background task stream: dropped %d progress chunks for a slow consumer", dropped)
