"""A task's chunks in a shared stream store, so a manager in any process can follow it.

The manager running a task writes every chunk it publishes for it to the stream store (Redis in a
cluster) under the key ``task:<task id>``: one stream per *segment*, from the task's start (or
resume) to its end (or suspension). A manager that takes a task over from a dead one opens its own
segment: it first copies the dead one's stream into it, so a late reader still gets the task from
its start, and closes the old one, so its readers move on. Entries are JSON ``{"c": <chunk>}``;
``background-task-output`` entries also carry ``"r"`` (the attempt's retry count) and ``"n"`` (the
output's number in that attempt) so the new owner re-relaying an attempt's outputs skips the ones
already written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..chunks import dumps_wellformed, loads_wellformed

if TYPE_CHECKING:
    from ..resumable import StreamStore

__all__ = ["SEGMENT_END", "TaskStreams", "task_stream_key"]

log = logging.getLogger("agentstream.background")

SEGMENT_END = frozenset(
    {
        "background-task-completed",
        "background-task-failed",
        "background-task-cancelled",
        "background-task-suspended",
    }
)
"""Chunks after which the task's current segment ends (a resume opens a new one)."""


STREAM_OWNER = "agentstream:background-task"
"""The owner of every task stream: no chat's owner (``None`` or a principal's hex digest) is this, so a
chat request naming a chat ``task:<id>`` can neither take a task's stream over nor resume it."""


def task_stream_key(task_id: str) -> str:
    """The stream store's "chat id" under which a task's segments are recorded."""
    return f"task:{task_id}"


@dataclass(eq=False)
class _Segment:
    stream_id: str
    pending: list[bytes] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    closing: bool = False
    touch: bool = False
    """Refresh the stream's expiry (a task may be silent for longer than the store's TTL)."""
    finish: bool = True
    """At close: end the stream (``False``: leave it open for the successor to copy)."""
    writer: asyncio.Task[None] | None = None


class TaskStreams:
    """This manager's segments (writes) and followers (reads) of tasks' shared streams."""

    def __init__(self, store: StreamStore) -> None:
        self.store = store
        self._segments: dict[str, _Segment] = {}
        self._failed_writes = 0

    async def open(self, task_id: str, *, retry_count: int) -> int:
        """Start this process's segment of the task: copy an unfinished one (a dead owner's), close it.

        Returns how many outputs of attempt ``retry_count`` are already written (to be skipped)."""
        previous = self._segments.pop(task_id, None)
        if previous is not None:  # a segment of ours not yet drained: its writes go first
            previous.closing = True
            previous.wake.set()
            if previous.writer is not None:
                await asyncio.gather(previous.writer, return_exceptions=True)
        key = task_stream_key(task_id)
        old = await self.store.active(key)
        if old is not None and old.owner != STREAM_OWNER:
            old = None  # not a task stream: start() refuses it
        # The new segment is the task's active stream before the old one ends: a reader of the
        # old one that reaches its end finds the new one at once.
        stream_id = await self.store.start(key, owner=STREAM_OWNER)
        prefix: list[bytes] = []
        if old is not None:
            await self.store.finish(old.stream_id)
            prefix = [entry async for entry in self.store.read(old.stream_id)]
        if prefix:
            await self.store.append(stream_id, *prefix)
        segment = _Segment(stream_id)
        segment.writer = asyncio.create_task(self._write(segment), name=f"agentstream-task-stream:{task_id}")
        self._segments[task_id] = segment
        return _written_outputs(prefix, retry_count)

    def write(self, task_id: str, chunk: dict[str, Any], *, output: tuple[int, int] | None = None) -> None:
        """Queue ``chunk`` (its wire dict) for the task's open segment, if this process has one.

        ``output``: ``(retry count, number)`` of a ``background-task-output``. A segment-ending
        chunk closes the segment after it is written."""
        segment = self._segments.get(task_id)
        if segment is None or segment.closing:
            return
        entry: dict[str, Any] = {"c": chunk}
        if output is not None:
            entry["r"], entry["n"] = output
        segment.pending.append(dumps_wellformed(entry))
        if chunk.get("type") in SEGMENT_END:
            segment.closing = True
            del self._segments[task_id]
        segment.wake.set()

    def release(self, task_id: str) -> None:
        """Stop writing the task (another manager took it over and continues its stream)."""
        segment = self._segments.pop(task_id, None)
        if segment is not None:
            segment.closing, segment.finish = True, False
            segment.wake.set()

    def keep_alive(self) -> None:
        """Refresh every open segment's expiry (called at each lease heartbeat)."""
        for segment in self._segments.values():
            segment.touch = True
            segment.wake.set()

    def has_segment(self, task_id: str) -> bool:
        """Whether this process writes the task's shared stream now."""
        return task_id in self._segments

    async def _write(self, segment: _Segment) -> None:
        # One append per batch: chunks produced while a write is in flight go in the next one.
        while True:
            if segment.pending:
                batch, segment.pending = segment.pending, []
                try:
                    await self.store.append(segment.stream_id, *batch)
                except Exception as exc:  # fenced (taken over) or the store is down: followers use the record
                    self._failed_writes += 1
                    if self._failed_writes == 1 or self._failed_writes % 1000 == 0:
                        log.warning("task stream %s: write failed (%s)", segment.stream_id, exc)
                continue
            if segment.touch:
                segment.touch = False
                with contextlib.suppress(Exception):
                    await self.store.append(segment.stream_id)
                continue
            if segment.closing:
                if segment.finish:
                    with contextlib.suppress(Exception):
                        await self.store.finish(segment.stream_id)
                return
            segment.wake.clear()
            await segment.wake.wait()

    async def aclose(self) -> None:
        """Write what is queued and stop, leaving the segments open: the task goes on elsewhere
        (a successor copies them)."""
        segments = list(self._segments.values())
        self._segments.clear()
        for segment in segments:
            segment.closing, segment.finish = True, False
            segment.wake.set()
        writers = [s.writer for s in segments if s.writer is not None]
        if writers:
            _, late = await asyncio.wait(writers, timeout=5)
            for writer in late:
                writer.cancel()

    async def follow(
        self, task_id: str, deliver: Callable[[dict[str, Any]], None], owned_here: Callable[[], bool]
    ) -> bool:
        """Deliver the task's chunks from its current segment's start until the segment ends.

        Follows a takeover (the old segment ends without an ending chunk; the new owner's starts
        with a copy of it) unless this process is the new owner. Returns whether an ending chunk
        was delivered."""
        key = task_stream_key(task_id)
        active = await self.store.active(key)
        if active is not None and active.owner != STREAM_OWNER:
            return False
        delivered = 0
        while active is not None:
            async for raw in self.store.read(active.stream_id, after=delivered):
                delivered += 1
                chunk = loads_wellformed(raw).get("c")
                if isinstance(chunk, dict):
                    deliver(chunk)
                    if chunk.get("type") in SEGMENT_END:
                        return True
            if owned_here():
                return False
            following = await self.store.active(key)
            if (
                following is None
                or following.stream_id == active.stream_id
                or following.owner != STREAM_OWNER
            ):
                return False
            active = following
        return False


def _written_outputs(entries: list[bytes], retry_count: int) -> int:
    written = 0
    for raw in entries:
        entry = loads_wellformed(raw)
        if entry.get("r") == retry_count and isinstance(entry.get("n"), int):
            written = max(written, entry["n"] + 1)
    return written
