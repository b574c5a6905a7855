"""`MemoryStreamStore`: active streams in this process (the default; one server process)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field

from ._base import ActiveStream, StreamExpiredError, StreamLostError, StreamOwnerError, check_at, check_ttl

__all__ = ["DEFAULT_MAX_BYTES", "MemoryStreamStore", "in_process_appender"]

logger = logging.getLogger("agentstream.resumable")

DEFAULT_MAX_BYTES = 128 * 1024 * 1024
"""What a `MemoryStreamStore` keeps of streams' chunks, in total, before it evicts finished ones."""


@dataclass
class _Stream:
    chat_id: str
    owner: str | None
    expires: float
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    done: bool = False
    writer_lost: bool = False  # its writer stopped without finishing it
    # The futures of the readers that caught up, one each (a reader cancelled while it waits
    # cancels only its own); every change resolves and forgets them. Cheaper per write than
    # replacing an ``asyncio.Event``: a write with nobody waiting costs one truth test.
    waiters: list[asyncio.Future[None]] = field(default_factory=list)

    def wake(self) -> None:
        waiters = self.waiters
        if waiters:
            self.waiters = []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def changed(self) -> asyncio.Future[None]:
        """A future resolved by the next change (a bare future: no coroutine per wait)."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        return waiter


class MemoryStreamStore:
    """A `StreamStore` in this process's memory: readers in the same process only.

    Streams expire ``ttl_s`` (600) seconds after their last write; expired ones are dropped on the
    next `start`. ``clock`` (``time.monotonic``) is the time source, replaceable in tests.

    ``max_bytes`` (128 MiB) bounds the chunks kept, in total: past it the finished streams are
    evicted, the longest finished first, until the total fits (a reader already following one
    reads it to its end; a resume finds nothing). A running stream is never evicted: when running
    streams alone hold more than ``max_bytes``, every finished one is gone, the total exceeds the
    bound until they finish (a warning is logged), and each is evicted as it finishes.
    """

    def __init__(
        self,
        *,
        ttl_s: float = 600,
        clock: Callable[[], float] = time.monotonic,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            raise ValueError(f"max_bytes must be a positive number of bytes, got {max_bytes!r}")
        self.ttl_s = check_ttl(ttl_s)
        self.max_bytes = max_bytes
        self._clock = clock
        self._streams: dict[str, _Stream] = {}
        self._active: dict[str, str] = {}
        # Finished streams, the longest finished first (dicts keep insertion order).
        self._finished: dict[str, None] = {}
        self._bytes = 0
        self._over_warned = False

    @property
    def size(self) -> int:
        """The bytes of chunks kept now, over all streams."""
        return self._bytes

    def _evict(self) -> None:
        """Drop finished streams, the longest finished first, until the total fits ``max_bytes``."""
        while self._bytes > self.max_bytes and self._finished:
            stream_id = next(iter(self._finished))
            self._drop(stream_id, self._streams[stream_id])
        if self._bytes > self.max_bytes and not self._over_warned:
            self._over_warned = True
            logger.warning(
                "running answers hold %d bytes, more than the stream store's max_bytes (%d): "
                "they are kept whole until they finish",
                self._bytes,
                self.max_bytes,
            )
        elif self._bytes <= self.max_bytes:
            self._over_warned = False

    def _live(self, stream_id: str) -> _Stream | None:
        stream = self._streams.get(stream_id)
        if stream is not None and stream.expires <= self._clock():
            self._drop(stream_id, stream)
            return None
        return stream

    def _drop(self, stream_id: str, stream: _Stream) -> None:
        del self._streams[stream_id]
        self._finished.pop(stream_id, None)
        self._bytes -= stream.size
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

    async def append(self, stream_id: str, *chunks: bytes, at: int | None = None) -> None:
        """Add chunks in order, or at chunk number ``at`` skipping those already written (see
        `StreamStore.append`); `StreamExpiredError` if the stream is gone or finished."""
        self.append_now(stream_id, *chunks, at=at)

    def append_now(self, stream_id: str, *chunks: bytes, at: int | None = None) -> None:
        """`append`, done before it returns (the store is in this process): what a writer in this
        process calls per chunk without a task switch (see `in_process_appender`)."""
        stream = self._streams.get(stream_id)
        now = self._clock()
        if stream is not None and stream.expires <= now:
            self._drop(stream_id, stream)
            stream = None
        if stream is None or stream.done:
            raise StreamExpiredError(f"stream {stream_id!r} has finished, expired or was never started")
        start = check_at(at, len(stream.chunks), stream_id)
        if len(chunks) == 1 and start == len(stream.chunks):  # one new chunk: no list to build
            data = bytes(chunks[0])
            stream.chunks.append(data)
            grown = len(data)
        else:
            added = [bytes(chunk) for chunk in chunks[len(stream.chunks) - start :]]
            stream.chunks.extend(added)
            grown = sum(len(chunk) for chunk in added)
        stream.size += grown
        self._bytes += grown
        stream.expires = now + self.ttl_s
        stream.wake()
        if self._bytes > self.max_bytes:
            self._evict()

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
        if stream.done:
            return
        stream.done = True
        stream.expires = self._clock() + self.ttl_s
        if self._active.get(stream.chat_id) == stream_id:
            del self._active[stream.chat_id]
        self._finished[stream_id] = None
        stream.wake()
        self._evict()

    async def active(self, chat_id: str) -> ActiveStream | None:
        """The chat's unfinished stream, or ``None``."""
        stream_id = self._active.get(chat_id)
        stream = None if stream_id is None else self._live(stream_id)
        if stream_id is None or stream is None or stream.done:
            return None
        return ActiveStream(stream_id, stream.owner)

    async def read(self, stream_id: str, *, after: int = 0) -> AsyncIterator[bytes]:
        """The chunks after the first ``after``, following the stream until it finishes, expires or
        its writer stops without finishing it."""
        chunks = self._chunks(stream_id, after)
        with contextlib.suppress(StreamLostError):
            async for chunk in chunks:
                yield chunk

    def read_checked(self, stream_id: str, *, after: int = 0) -> AsyncIterator[bytes]:
        """As `read`; a stream that ends unfinished (expired, or its writer stopped) raises
        `StreamLostError` after its last chunk (see `WriterLiveness`)."""
        return self._chunks(stream_id, after)

    async def _chunks(self, stream_id: str, after: int) -> AsyncIterator[bytes]:
        index = max(after, 0)
        # Held from here on: a finished stream evicted meanwhile is still read to its end.
        stream = self._live(stream_id)
        if stream is None:
            raise StreamLostError(f"stream {stream_id!r} has expired or was never started")
        while True:
            while index < len(stream.chunks):
                yield stream.chunks[index]
                index += 1
            if stream.done:
                return
            if stream.writer_lost:
                raise StreamLostError(f"the writer of stream {stream_id!r} stopped before finishing it")
            if self._live(stream_id) is not stream:
                raise StreamLostError(f"stream {stream_id!r} expired before it was finished")
            await stream.changed()

    def writing(
        self, stream_id: str, *, lease_s: float, dead_on_error: bool = True
    ) -> AbstractAsyncContextManager[None]:
        """Held by the stream's writer task (see `WriterLiveness`; ``lease_s`` does not apply: the
        writer is in this process). Left by an exception, the stream's readers end at once (with
        ``dead_on_error``)."""
        return self._writing(stream_id, dead_on_error)

    @contextlib.asynccontextmanager
    async def _writing(self, stream_id: str, dead_on_error: bool) -> AsyncIterator[None]:
        try:
            yield
        except BaseException:
            stream = self._streams.get(stream_id)
            if dead_on_error and stream is not None and not stream.done:
                stream.writer_lost = True
                stream.wake()
            raise

    async def aclose(self) -> None:
        """Nothing to release (the streams live as long as this store)."""
        return None


def in_process_appender(store: object) -> Callable[..., None] | None:
    """``store.append_now`` when ``store`` is a `MemoryStreamStore` whose ``append`` is its own
    (a subclass that changes ``append`` keeps it called), else ``None``: a writer in this process
    appends each chunk as it is produced, with no task between it and the readers."""
    if isinstance(store, MemoryStreamStore) and type(store).append is MemoryStreamStore.append:
        return store.append_now
    return None
