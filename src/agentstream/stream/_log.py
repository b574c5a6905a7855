"""`ChunkLog`: the append-only log of a run's chunks that every consumer replays, then follows.

Shared by ``ModelOutput`` and ``WorkflowRunOutput``. Each follower is the consumer's generator
itself with its own index into the one log (no generator in between on the per-token path, no
per-consumer queue), and it reads everything that arrived since it last ran as one slice. A writer
wakes the followers only when one is waiting, once for the whole batch that lands before they run:
the first append after a follower parks resolves the parked followers' futures, later appends see
nobody parked.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from ..chunks import Chunk

__all__ = ["ChunkLog"]


class ChunkLog:
    """The log (``_log``), whether it has ended (``_done``), and the followers parked until it
    changes (``_changed``: ``None`` when none is, so that a writer checks one attribute per chunk)."""

    def __init__(self, log: list[Chunk] | None = None) -> None:
        self._log: list[Chunk] = log if log is not None else []
        self._replay_start = 0
        """Where a new consumer starts replaying."""
        self._done = False
        self._changed: list[asyncio.Future[None]] | None = None

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
            # A future of its own (not one shared by every follower): cancelling this consumer's
            # task cancels its own wait only.
            parked = asyncio.get_running_loop().create_future()
            if self._changed is None:
                self._changed = [parked]
            else:
                self._changed.append(parked)
            await parked

    def _wake(self) -> None:
        """Wake the followers parked for a new chunk (or the end)."""
        parked = self._changed
        if parked is not None:
            self._changed = None
            for future in parked:
                if not future.done():  # a cancelled consumer's
                    future.set_result(None)
