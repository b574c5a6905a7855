"""``POST /api/agents/:agentId/threads/subscribe`` (Mastra's ``subscribeToThread``): the chunks of
every run of the agent on a memory thread, as they are produced, to whoever follows the thread (a
second Studio tab sees the first one's answer).

`ThreadHub` fans the runs of the agents routes out in this process; a subscriber gets the runs
that start or go on after it subscribed, and the stream stays open until the client goes away.
A subscriber whose queue is full (``MAX_PENDING`` chunks unread) loses the oldest chunks rather
than holding the run back.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

__all__ = ["MAX_PENDING", "ThreadHub"]

MAX_PENDING = 10_000


class ThreadHub:
    """Subscribers by ``(agent id, thread id)``; `publish` hands each a run's chunk."""

    def __init__(self) -> None:
        self._subscribers: dict[tuple[str, str], set[asyncio.Queue[Any]]] = {}

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
