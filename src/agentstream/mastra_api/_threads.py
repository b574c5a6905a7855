"""``POST /api/agents/:agentId/threads/subscribe`` (Mastra's ``subscribeToThread``): the chunks of
every run of the agent on a memory thread, as they are produced, to whoever follows the thread (a
second Studio tab sees the first one's answer).

`ThreadHub` fans the runs of the agents routes out in this process; a subscriber gets the runs
that start or go on after it subscribed, and the stream stays open until the client goes away.
A subscriber whose queue is full (``MAX_PENDING`` chunks unread) loses the oldest chunks rather
than holding the run back. It also keeps the runs started for a thread by ``send-message`` (one
at a time per thread, in order), so that ``threads/abort`` can stop the active one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .._abort import AbortController

__all__ = ["MAX_PENDING", "ThreadHub"]

MAX_PENDING = 10_000
log = logging.getLogger("agentstream.mastra_api")


@dataclass
class _ThreadRun:
    run_id: str
    controller: AbortController
    task: asyncio.Task[None]


class ThreadHub:
    """Subscribers by ``(agent id, thread id)``; `publish` hands each a run's chunk."""

    def __init__(self) -> None:
        self._subscribers: dict[tuple[str, str], set[asyncio.Queue[Any]]] = {}
        self._runs: dict[tuple[str, str], list[_ThreadRun]] = {}

    def start(
        self, key: tuple[str, str], run_id: str, body: Callable[[AbortController], Awaitable[None]]
    ) -> None:
        """Run ``body(controller)`` for the thread ``key`` once the thread's earlier runs ended."""
        earlier = [run.task for run in self._runs.get(key, [])]
        controller = AbortController()

        async def run() -> None:
            for task in earlier:
                with contextlib.suppress(BaseException):
                    await task
            if not controller.signal.aborted:
                await body(controller)

        task = asyncio.get_running_loop().create_task(run(), name=f"mastra-api thread run {run_id}")
        entry = _ThreadRun(run_id, controller, task)
        self._runs.setdefault(key, []).append(entry)

        def done(finished: asyncio.Task[None]) -> None:
            runs = self._runs.get(key, [])
            if entry in runs:
                runs.remove(entry)
            if not runs:
                self._runs.pop(key, None)
            if not finished.cancelled() and finished.exception() is not None:
                log.error("thread run %s failed", run_id, exc_info=finished.exception())

        task.add_done_callback(done)

    def abort(self, key: tuple[str, str], expected_run_id: str | None = None) -> bool:
        """Abort the thread's active run (``expected_run_id``: only if it is that run)."""
        runs = self._runs.get(key, [])
        if not runs or (expected_run_id is not None and runs[0].run_id != expected_run_id):
            return False
        runs[0].controller.abort()
        return True

    def publish(self, agent_id: str, thread_id: str, chunk: Any) -> None:
        for queue in self._subscribers.get((agent_id, thread_id), ()):
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(chunk)

    @contextlib.contextmanager
    def _subscribed(self, key: tuple[str, str]) -> Iterator[asyncio.Queue[Any]]:
        queue: asyncio.Queue[Any] = asyncio.Queue(MAX_PENDING)
        self._subscribers.setdefault(key, set()).add(queue)
        try:
            yield queue
        finally:
            subscribers = self._subscribers.get(key, set())
            subscribers.discard(queue)
            if not subscribers:
                self._subscribers.pop(key, None)

    async def follow(self, agent_id: str, thread_id: str) -> AsyncIterator[Any]:
        """The thread's chunks from now on, until the reader stops."""
        with self._subscribed((agent_id, thread_id)) as queue:
            while True:
                yield await queue.get()
