"""One writer per store and event loop for every stream's appends: the appends made in one loop
iteration go to Redis in one script call.

A paced answer appends one word at a time, and a server streams hundreds of answers at once: one
``EVALSHA`` per word and stream made the Redis path pay redis-py's per-command cost (a pooled
connection, packing, a timeout, parsing) hundreds of times per pacing tick (issue 29). Here
`Writes.append` queues the append and returns a future; a task started by the first append of a
quiet spell sends everything queued as one `APPEND_MANY` call, then what was queued while that
call was out, and so on until the queue is empty. One call is out at a time, so the appends of one
stream are applied in the order they were made.

Each append stays what it was on its own: positional (or at the end), refused for a gone or
finished stream or a gap, the writer's lease refreshed with it, and retried by the client on a
connection error (the script is a batch of positional or idempotent writes, safe to send again).
Each caller gets its own answer. A script error (a key of the wrong type) would fail the whole
call, so a failed batch is sent again one append at a time: only the faulty append fails.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from redis.commands.core import AsyncScript

__all__ = ["APPEND_MANY", "BATCH_CHUNKS", "Call", "RedisStreamSink", "Source", "Writes"]

BATCH_CHUNKS = 4096
"""Chunks per script call at most (a call carries at least one append, however large): the rest
of the queue goes in the next call."""

# For each append i (KEYS[3i-2..3i]: stream, chat, writer; ARGV after ARGV[1] = ttl ms: at, lease
# ms, n, then its n chunks): chunks as numbers at, at+1, … (entries 0-<number + 2>), skipping
# numbers already written; at = -1 appends at the end. Refused when the stream expired or finished
# (XADD alone would silently recreate it) and for a gap. A writer holding the stream's lease
# (lease > 0 ms) refreshes it in the same call: a writer that writes is alive even when its loop is
# too busy for the periodic beat. Returns {status, chunks before} per append, flattened: 1 written,
# 0 gone, -1 gap.
APPEND_MANY = """
local ttl = ARGV[1]
local out = {}
local a = 2
local now = nil
for k = 1, #KEYS, 3 do
  local at = tonumber(ARGV[a])
  local lease = tonumber(ARGV[a + 1])
  local n = tonumber(ARGV[a + 2])
  local first = a + 3
  a = first + n
  local state = redis.call('xrevrange', KEYS[k], '+', '-', 'COUNT', 1)
  if #state == 0 or state[1][2][1] == 'end' then
    out[#out + 1] = 0
    out[#out + 1] = 0
  else
    local length = tonumber(string.sub(state[1][1], 3)) - 1
    if at < 0 then at = length end
    if at > length then
      out[#out + 1] = -1
      out[#out + 1] = length
    else
      for i = 0, n - 1 do
        local number = at + i
        if number >= length then redis.call('xadd', KEYS[k], '0-' .. (number + 2), 'c', ARGV[first + i]) end
      end
      redis.call('pexpire', KEYS[k], ttl)
      redis.call('pexpire', KEYS[k + 1], ttl)
      if lease > 0 then
        if now == nil then
          local t = redis.call('time')
          now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        end
        redis.call('set', KEYS[k + 2], now + lease, 'PX', ttl)
      end
      out[#out + 1] = 1
      out[#out + 1] = length
    end
  end
end
return out
"""


Call = tuple[list[str] | list[bytes], int, int, tuple[bytes, ...]]
"""One append as sent: keys (the stream's, its chat's, its writer's), at (-1: at the end), lease
ms, chunks."""


class _Append:
    """One `Writes.append`: sent once, answered through its future."""

    __slots__ = ("call", "future")

    def __init__(self, call: Call, future: asyncio.Future[Any]) -> None:
        self.call = call
        self.future = future

    def take(self) -> Call | None:
        return None if self.future.done() else self.call  # a cancelled caller's append is not sent

    def settle(self, status: int, length: int) -> None:
        if not self.future.done():
            self.future.set_result((status, length))

    def fail(self, exc: BaseException) -> None:
        if self.future.done():
            return
        if isinstance(exc, asyncio.CancelledError):
            self.future.cancel()
        else:
            self.future.set_exception(exc)


class Source(Protocol):
    """What the queue of `Writes` holds: something with an append to send (`RedisStreamSink`, `_Append`)."""

    def take(self) -> Call | None:
        """The append to send now (``None``: nothing any more)."""
        ...

    def settle(self, status: int, length: int) -> None:
        """Its answer: status 1 written, 0 gone, -1 a gap; the chunks the stream had before."""
        ...

    def fail(self, exc: BaseException) -> None:
        """Its call failed (after the client's retries), or was cancelled."""
        ...


class Writes:
    """The appends of one `RedisStreamStore` in one event loop, batched (see the module)."""

    def __init__(self, script: AsyncScript, ttl_ms: int) -> None:
        self.loop = asyncio.get_running_loop()
        self._script = script
        self._ttl_ms = ttl_ms
        self._queue: list[Source] = []
        self._task: asyncio.Task[None] | None = None

    def append(self, call: Call) -> asyncio.Future[Any]:
        """Queue one append; the future is its ``(status, chunks before)``, or the error of its call."""
        future: asyncio.Future[Any] = self.loop.create_future()
        self.enqueue(_Append(call, future))
        return future

    def enqueue(self, source: Source) -> None:
        """Have ``source``'s append sent with the next call (its ``take`` is called then)."""
        self._queue.append(source)
        if self._task is None:
            # Started now, it runs after the loop's other ready callbacks: the appends made in this
            # loop iteration are queued by then.
            self._task = self.loop.create_task(self._run(), name="agentstream redis writes")

    async def _run(self) -> None:
        try:
            while self._queue:
                await self._send(self._take())
        finally:
            self._task = None
            # Cancelled (the loop is shutting down): nobody will send what is still queued.
            queued, self._queue = self._queue, []
            for source in queued:
                source.fail(asyncio.CancelledError())

    def _take(self) -> list[tuple[Source, Call]]:
        queue = self._queue
        batch: list[tuple[Source, Call]] = []
        count = 0
        for i, source in enumerate(queue):
            if count >= BATCH_CHUNKS and batch:
                self._queue = queue[i:]
                return batch
            call = source.take()
            if call is not None:
                batch.append((source, call))
                count += len(call[3])
        self._queue = []
        return batch

    async def _call(self, batch: list[tuple[Source, Call]]) -> list[Any]:
        # Numbers as the bytes the client's encoder makes of them (``repr``): a call carries six
        # per append, and the encoder's type checks per argument were the writer's main cost.
        keys: list[str | bytes] = []
        args: list[Any] = [b"%d" % self._ttl_ms]
        for _, (call_keys, at, lease_ms, chunks) in batch:
            keys += call_keys
            args += (b"%d" % at, b"%d" % lease_ms, b"%d" % len(chunks), *chunks)
        found: list[Any] = await self._script(keys=keys, args=args)
        return found

    async def _send(self, batch: list[tuple[Source, Call]]) -> None:
        from redis.exceptions import ResponseError

        if not batch:
            return
        try:
            found = await self._call(batch)
        except ResponseError as exc:
            if len(batch) == 1:
                batch[0][0].fail(exc)
                return
            for one in batch:  # only the append the script refused fails
                await self._send([one])
            return
        except BaseException as exc:
            for source, _ in batch:
                source.fail(exc)
            if not isinstance(exc, Exception):
                raise
            return  # each caller raises it; the appends queued since go in the next call
        for i, (source, _) in enumerate(batch):
            source.settle(int(found[2 * i]), int(found[2 * i + 1]))

    async def aclose(self) -> None:
        """Wait for what is queued to be sent (its callers get their answers)."""
        task = self._task
        if task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(task)


class RedisStreamSink:
    """A writer's stream, appended chunk by chunk without a wait (`add`): what was added since the
    stream's last call goes in the next call of `Writes`, one call out per stream at a time, chunk
    *i* at number ``at + i``. `drain` waits for everything added to be written. A failed call
    (``refused``: the error for its status, or for the call's exception) fails the sink: `add`
    and `drain` raise that error, ``on_failure`` is called once (the writer stops producing)."""

    def __init__(
        self,
        writes: Writes,
        keys: list[str] | list[bytes],
        at: int,
        lease_ms: Callable[[], int],
        refused: Callable[[int, int, int, BaseException | None], BaseException],
    ) -> None:
        self.written = at  # chunks written, by number
        self.error: BaseException | None = None
        self.on_failure: Callable[[], object] | None = None
        self._writes = writes
        self._keys = keys
        self._lease_ms = lease_ms
        self._refused = refused
        self._pending: list[bytes] = []
        self._sending = 0  # chunks in the call out
        self._queued = False
        self._drained: asyncio.Future[None] | None = None
        # The local mirror (see `entries_after`): the last confirmed call's chunks, from number
        # ``_confirmed_from``, and the events of the followers in this process waiting for more.
        self.ended = False
        self.on_end: Callable[[], object] | None = None
        self.waiters: set[asyncio.Event] = set()
        self._sent: tuple[bytes, ...] = ()
        self._confirmed: tuple[bytes, ...] = ()
        self._confirmed_from = at
        self.confirmed_at = writes.loop.time()  # when a call last confirmed chunks (loop clock)

    def add(self, chunk: bytes) -> None:
        """Write ``chunk`` as the next chunk number, with the next call; raises the sink's error."""
        if self.error is not None:
            raise self.error
        self._pending.append(chunk)
        if not self._queued and not self._sending:
            self._queued = True
            self._writes.enqueue(self)

    async def drain(self) -> None:
        """Wait until every chunk added is written; raises the sink's error."""
        if self._queued or self._sending:
            self._drained = self._writes.loop.create_future()
            await self._drained
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        """Drop what was added and not sent yet (the writer stopped)."""
        self._pending.clear()
        self._end()

    def writes_in(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Whether this sink's writes go out on ``loop``: only a follower on the same loop may take
        chunks from it."""
        return self._writes.loop is loop

    def entries_after(self, read: int) -> list[tuple[bytes, dict[bytes, bytes]]] | None:
        """For a follower in this process that has read ``read`` chunks: the confirmed chunks after
        them that this sink still holds, as the stream's entries (``[]``: none written yet), or
        ``None`` when it must read Redis (behind the last call, or the sink ended)."""
        if self.ended:
            return None
        if read == self.written:
            return []
        start = read - self._confirmed_from
        if 0 <= start < len(self._confirmed):
            return [
                (b"0-%d" % (read + i + 2), {b"c": chunk})
                for i, chunk in enumerate(self._confirmed[start:], 0)
            ]
        return None

    def _end(self) -> None:
        # The followers here go back to Redis from where they are: an ending written by another
        # process (a stop, a dead-writer error) is read there.
        if self.ended:
            return
        self.ended = True
        self._confirmed = ()
        for event in self.waiters:
            event.set()
        if self.on_end is not None:
            self.on_end()

    def take(self) -> Call | None:
        """(`Source`, for `Writes`) the chunks added since the last call, as one append."""
        self._queued = False
        if not self._pending:
            self._settled()
            return None
        chunks = self._sent = tuple(self._pending)
        self._pending.clear()
        self._sending = len(chunks)
        return (self._keys, self.written, self._lease_ms(), chunks)

    def settle(self, status: int, length: int) -> None:
        """(`Source`) the call's answer: the chunks are written, or the sink fails."""
        if status != 1:
            self.fail(self._refused(status, length, self.written, None))
            return
        if length != self.written:
            # Another writer had written some of these numbers (skipped here): what Redis holds
            # may differ from what was sent, so the followers here read Redis from now on.
            self._end()
        elif not self.ended:
            self._confirmed_from, self._confirmed = self.written, self._sent
            self.confirmed_at = self._writes.loop.time()
            for event in self.waiters:
                event.set()
        self._sent = ()
        self.written += self._sending
        self._sending = 0
        if self._pending:
            self._queued = True
            self._writes.enqueue(self)
        else:
            self._settled()

    def fail(self, exc: BaseException) -> None:
        """(`Source`) the call failed: so does the sink, for good (what was added is dropped)."""
        self._sending = 0
        self._pending.clear()
        if self.error is None:
            self.error = exc if isinstance(exc, asyncio.CancelledError) else self._refused(0, 0, 0, exc)
            if self.on_failure is not None:
                self.on_failure()
        self._end()
        self._settled()

    def _settled(self) -> None:
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)
