"""Writer liveness: the readers of a stream whose writer died end within seconds, told so.

A stream's writer (the server task answering in-process, or a worker's `run_chat_turn`) holds
`WriterLiveness.writing` while it writes: the store knows the writer is alive until a lease it
refreshes (`Beats`: one refresh per store and lease for all of a process's writers, every third of
the lease). A writer that stops without finishing the stream (it raised, it was cancelled) says so
at once; a writer whose process died stops refreshing, and its lease runs out. Either way the
stream's readers that use `WriterLiveness.read_checked` get its chunks and then `StreamLostError`
instead of waiting for the stream's TTL. A stream no writer has claimed yet (a turn still queued
for a worker) is not dead: its readers wait, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol, runtime_checkable

from ._base import StreamStore

__all__ = ["IN_PROCESS_LEASE_S", "WORKER_LEASE_S", "Beats", "WriterLiveness", "read_checked", "writing"]

logger = logging.getLogger("agentstream.resumable")

IN_PROCESS_LEASE_S = 5.0
"""The writer lease of an answer a server runs itself: nothing re-runs it if the server dies, so its
readers end ~5 s after (plus the store's check interval)."""

WORKER_LEASE_S = 30.0
"""The writer lease of a turn on a worker: long enough for the durable runner to hand a dead
worker's turn to another worker (its lease must expire, the other worker must notice and start the
re-run, which writes the lease again) before the readers give up. On this project's loaded 2-core
test machine a takeover that boots the other worker took over 15 s at times."""


@runtime_checkable
class WriterLiveness(Protocol):
    """A `StreamStore` that tracks its streams' writers (both built-in stores do)."""

    def writing(
        self, stream_id: str, *, lease_s: float, dead_on_error: bool = True
    ) -> AbstractAsyncContextManager[None]:
        """Held by the stream's writer while it writes: alive until ``lease_s`` after its last
        refresh. Leaving it by an exception (or cancellation) marks the writer dead at once when
        ``dead_on_error``; otherwise its lease just runs out (a durable runner may hand the work
        to another writer meanwhile)."""
        ...

    def read_checked(self, stream_id: str, *, after: int = 0) -> AsyncIterator[bytes]:
        """As `StreamStore.read`; a stream that ends without being finished (its writer died, it
        expired, the store lost it) raises `StreamLostError` after its last chunk."""
        ...


def writing(
    store: StreamStore, stream_id: str, *, lease_s: float, dead_on_error: bool = True
) -> AbstractAsyncContextManager[None]:
    """``store.writing(...)`` when the store tracks writers, else nothing."""
    if isinstance(store, WriterLiveness):
        return store.writing(stream_id, lease_s=lease_s, dead_on_error=dead_on_error)
    return contextlib.nullcontext()


def read_checked(store: StreamStore, stream_id: str, *, after: int = 0) -> AsyncIterator[bytes]:
    """``store.read_checked(...)`` when the store tracks writers, else ``store.read(...)``."""
    if isinstance(store, WriterLiveness):
        return store.read_checked(stream_id, after=after)
    return store.read(stream_id, after=after)


class Beats:
    """The lease refreshes of one store's writers in one event loop, for one lease length.

    ``beat(stream ids)`` refreshes the leases of those streams' writers (one round trip for all).
    The first refresh of a writer is awaited by `hold` (its readers see a live writer from its first
    chunk on; a failure is logged, not raised); then one task refreshes every held stream each third of the lease, and exits when
    none is held. A failed refresh is logged and tried again at the next one: a store blip shorter
    than two thirds of the lease is not seen by the readers."""

    def __init__(self, beat: Callable[[list[str]], Awaitable[None]], lease_s: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.lease_s = lease_s
        self._beat = beat
        self._held: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def hold(self, stream_id: str) -> AsyncIterator[None]:
        try:
            await self._beat([stream_id])
        except Exception as exc:  # the writer goes on: its own writes meet the store's failure
            logger.warning("taking the writer lease of stream %s failed (%s); retrying", stream_id, exc)
        self._held[stream_id] = self._held.get(stream_id, 0) + 1
        if self._task is None:
            self._task = self.loop.create_task(self._run(), name=f"agentstream writer beats {self.lease_s}s")
        try:
            yield
        finally:
            count = self._held.pop(stream_id, 1) - 1
            if count:
                self._held[stream_id] = count

    async def _run(self) -> None:
        failed = 0
        try:
            while self._held:
                await asyncio.sleep(self.lease_s / 3)
                if not self._held:
                    break
                try:
                    await self._beat(list(self._held))
                    failed = 0
                except Exception as exc:
                    failed += 1
                    if failed == 1:
                        logger.warning(
                            "refreshing %d writer lease(s) failed (%s); retrying", len(self._held), exc
                        )
        finally:
            self._task = None
