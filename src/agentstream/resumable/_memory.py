"""`MemoryStreamStore`: active streams in this process (the default; one server process)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from ._base import ActiveStream, StreamExpiredError, StreamOwnerError, check_at, check_ttl

__all__ = ["MemoryStreamStore"]


@dataclass
class _Stream:
    chat_id: str
    owner: str | None
    expires: float
    chunks: list[bytes] = field(default_factory=list)
    done: bool = False
    # Replaced on every write: readers wait on the one current when they caught up.
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def wake(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()


class MemoryStreamStore:
    """A `StreamStore` in this process's memory: readers in the same process only.

    Streams expire ``ttl_s`` (600) seconds after their last write; expired ones are dropped on the
    next `start`. ``clock`` (``time.monotonic``) is the time source, replaceable in tests.
    """

    def __init__(self, *, ttl_s: float = 600, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = check_ttl(ttl_s)
        self._clock = clock
        self._streams: dict[str, _Stream] = {}
        self._active: dict[str, str] = {}

    def _live(self, stream_id: str) -> _Stream | None:
        stream = self._streams.get(stream_id)
        if stream is not None and stream.expires <= self._clock():
            self._drop(stream_id, stream)
            return None
        return stream

    def _drop(self, stream_id: str, stream: _Stream) -> None:
        del self._streams[stream_id]
        if self._active.get(stream.chat_id) == stream_id:
            del self._active[stream.chat_id]
        stream.wake()  # a reader waiting on it ends

    async def start(self, chat_id: str, *, owner: str | None) -> str:
        """Begin the chat's new stream (see `StreamStore.start`); `StreamOwnerError` if another owner's is active."""
        now = self._clock()
        for stream_id, stream in [(k, s) for k, s in self._streams.items() if s.expires <= now]:
            self._drop(stream_id, stream)
        current = await self.active(chat_id)
        if current is not None and current.owner != owner:
            raise StreamOwnerError(f"chat {chat_id!r} has an active stream of another user")
        stream_id = uuid.uuid4().hex
        self._streams[stream_id] = _Stream(chat_id, owner, now + self.ttl_s)
        self._active[chat_id] = stream_id
        return stream_id

    def _writable(self, stream_id: str) -> _Stream:
        stream = self._live(stream_id)
        if stream is None or stream.done:
            raise StreamExpiredError(f"stream {stream_id!r} has finished, expired or was never started")
        return stream

    async def append(self, stream_id: str, *chunks: bytes, at: int | None = None) -> None:
        """Add chunks in order, or at chunk number ``at`` skipping those already written (see
        `StreamStore.append`); `StreamExpiredError` if the stream is gone or finished."""
        stream = self._writable(stream_id)
        start = check_at(at, len(stream.chunks), stream_id)
        stream.chunks.extend(bytes(chunk) for chunk in chunks[len(stream.chunks) - start :])
        stream.expires = self._clock() + self.ttl_s
        stream.wake()

    async def length(self, stream_id: str) -> int:
        """How many chunks the stream holds; `StreamExpiredError` if it is gone."""
        stream = self._live(stream_id)
        if stream is None:
            raise StreamExpiredError(f"stream {stream_id!r} has expired or was never started")
        return len(stream.chunks)

    async def finish(self, stream_id: str) -> None:
        """Mark the stream complete; its readers end after the last chunk."""
        stream = self._live(stream_id)
        if stream is None:
            return
        stream.done = True
        stream.expires = self._clock() + self.ttl_s
        if self._active.get(stream.chat_id) == stream_id:
            del self._active[stream.chat_id]
        stream.wake()

    async def active(self, chat_id: str) -> ActiveStream | None:
        """The chat's unfinished stream, or ``None``."""
        stream_id = self._active.get(chat_id)
        stream = None if stream_id is None else self._live(stream_id)
        if stream_id is None or stream is None or stream.done:
            return None
        return ActiveStream(stream_id, stream.owner)

    async def read(self, stream_id: str, *, after: int = 0) -> AsyncIterator[bytes]:
        """The chunks after the first ``after``, following the stream until it finishes or expires."""
        index = max(after, 0)
        while True:
            stream = self._live(stream_id)
            if stream is None:
                return
            while index < len(stream.chunks):
                yield stream.chunks[index]
                index += 1
            if stream.done:
                return
            await stream.changed.wait()

    async def aclose(self) -> None:
        """Nothing to release (the streams live as long as this store)."""
        return None
