"""The `StreamStore` protocol every backend implements, and its errors."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "ActiveStream",
    "StreamExpiredError",
    "StreamLostError",
    "StreamOwnerError",
    "StreamStore",
    "StreamStoreUnavailableError",
    "check_at",
    "check_ttl",
]


@dataclass(frozen=True)
class ActiveStream:
    """The response a chat is streaming now: its stream id and owner key (``None``: no auth)."""

    stream_id: str
    owner: str | None


class StreamOwnerError(PermissionError):
    """A chat id that has an active stream owned by someone else (a new response is refused)."""


class StreamExpiredError(LookupError):
    """Writing to a stream that is not there any more (its TTL passed, or the store was cleared),
    or that has finished."""


class StreamLostError(StreamExpiredError):
    """Reading a stream that ended without being finished: its writer died (its process was killed,
    or it stopped on an error), or the stream expired, or the store lost it (a restart without
    persistence). The chunks before were delivered; the rest of the answer never will be."""


class StreamStoreUnavailableError(RuntimeError):
    """The stream store cannot be reached (after its retries): the request can be tried again later."""


def check_at(at: int | None, length: int, stream_id: str) -> int:
    """The position an append starts at: ``length`` when ``at`` is ``None``; a gap is refused."""
    if at is None:
        return length
    if isinstance(at, bool) or not isinstance(at, int) or at < 0:
        raise ValueError(f"at: expected a chunk number (an int >= 0), got {at!r}")
    if at > length:
        raise ValueError(f"at={at} would leave a gap in stream {stream_id!r}, which has {length} chunks")
    return at


def check_ttl(ttl_s: float) -> float:
    """``ttl_s`` must be a finite number of seconds > 0; returns it as a float."""
    if isinstance(ttl_s, bool) or not isinstance(ttl_s, (int, float)):
        raise TypeError(f"ttl_s must be a number of seconds, got {type(ttl_s).__name__}")
    if not math.isfinite(ttl_s) or ttl_s <= 0:
        raise ValueError(f"ttl_s must be a finite number of seconds > 0, got {ttl_s!r}")
    return float(ttl_s)


@runtime_checkable
class StreamStore(Protocol):
    """Where active responses' chunks live while they stream.

    One writer per stream at a time: `start`, `append` (one or more chunks), then `finish`. The
    writer may be another process than the one that called `start` (a server claims the chat, a
    worker writes the answer); positional appends (``at=``) let a re-run after a crash write
    nothing twice. Any number of readers, in any process sharing the backend: `active` finds a chat's
    running stream, `read` yields its chunks from index ``after`` on and follows it until it
    finishes. A stream and its chunks expire ``ttl_s`` after its last write.
    """

    async def start(self, chat_id: str, *, owner: str | None) -> str:
        """Begin a new stream for ``chat_id`` and make it the chat's active one; returns its id.

        Raises `StreamOwnerError` when the chat has an active stream of another owner."""
        ...

    async def append(self, stream_id: str, *chunks: bytes, at: int | None = None) -> None:
        """Add chunks (JSON bytes each), in order, in one write.

        With ``at``, chunk *i* is the stream's chunk number ``at + i`` (from 0): a number already
        written is skipped, so writing an overlapping range again (a re-run) changes nothing;
        ``at`` past the end (a gap) raises ``ValueError``. Without it, the chunks go at the end.
        Raises `StreamExpiredError` if the stream is gone or finished."""
        ...

    async def length(self, stream_id: str) -> int:
        """How many chunks the stream holds; raises `StreamExpiredError` if it is gone."""
        ...

    async def finish(self, stream_id: str) -> None:
        """Mark the stream complete: readers end after its last chunk, `active` no longer finds it."""
        ...

    async def active(self, chat_id: str) -> ActiveStream | None:
        """The chat's unfinished stream, or ``None``."""
        ...

    def read(self, stream_id: str, *, after: int = 0) -> AsyncIterator[bytes]:
        """The stream's chunks after the first ``after``, following it until it finishes (or expires)."""
        ...

    async def aclose(self) -> None:
        """Release connections (the stored streams stay until they expire)."""
        ...
