"""`ChunkLog`: the append-only log of a run's chunks that every consumer replays, then follows.

Shared by ``ModelOutput`` and ``WorkflowRunOutput``. The follower is the consumer's generator
itself (no generator in between on the per-token path), and a writer wakes the followers only
when one is waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from ..chunks import Chunk

__all__ = ["ChunkLog"]


class ChunkLog:
    """The log (``_log``), whether it has ended (``_done``), and the event its followers wait on
    (``_changed``, made by the first follower that waits, cleared by `_wake`)."""

    def __init__(self, log: list[Chunk] | None = None) -> None:
        self._log: list[Chunk] = log if log is not None else []
        self._replay_start = 0
        """Where a new consumer starts replaying."""
        self._done = False
        self._changed: asyncio.Event | None = None

    def _ensure_started(self) -> None:
        """Start the producer, if the log has one started by its first reader (none here)."""

    async def _follow(self, start: int | None = None) -> AsyncIterator[Chunk]:
        """Every chunk from ``start`` (default `_replay_start`), then each new one until the end."""
        self._ensure_started()
        log = self._log
        index = self._replay_start if start is None else start
        while True:
            if index < len(log):
                # Slice the new part: one C-level copy, then a tight loop over it.
                batch = log[index:]
                index += len(batch)
                for chunk in batch:
                    yield chunk
                continue
            if self._done:
                return
            if self._changed is None:
                self._changed = asyncio.Event()
            await self._changed.wait()

    def _wake(self) -> None:
        """Wake the followers waiting for a new chunk (or the end)."""
        changed = self._changed
        if changed is not None:
            self._changed = None
            changed.set()
