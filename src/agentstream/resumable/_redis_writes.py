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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redis.commands.core import AsyncScript

__all__ = ["APPEND_MANY", "BATCH_CHUNKS", "Writes"]

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


class _Append:
    __slots__ = ("at", "chunks", "future", "keys", "lease_ms")

    def __init__(
        self, keys: list[str], at: int, lease_ms: int, chunks: tuple[bytes, ...], future: asyncio.Future[Any]
    ) -> None:
        self.keys = keys
        self.at = at
        self.lease_ms = lease_ms
        self.chunks = chunks
        self.future = future


class Writes:
    """The appends of one `RedisStreamStore` in one event loop, batched (see the module)."""

    def __init__(self, script: AsyncScript, ttl_ms: int) -> None:
        self.loop = asyncio.get_running_loop()
        self._script = script
        self._ttl_ms = ttl_ms
        self._queue: list[_Append] = []
        self._task: asyncio.Task[None] | None = None

    def append(
        self, keys: list[str], at: int, lease_ms: int, chunks: tuple[bytes, ...]
    ) -> asyncio.Future[Any]:
        """Queue one append (``keys``: the stream's, its chat's and its writer's; ``at`` -1: at the
        end); the future is its ``(status, chunks before)``, or the error of its call."""
        future: asyncio.Future[Any] = self.loop.create_future()
        self._queue.append(_Append(keys, at, lease_ms, chunks, future))
        if self._task is None:
            # Started now, it runs after the loop's other ready callbacks: the appends made in this
            # loop iteration are queued by then.
            self._task = self.loop.create_task(self._run(), name="agentstream redis writes")
        return future

    async def _run(self) -> None:
        try:
            while self._queue:
                await self._send(self._take())
        finally:
            self._task = None
            # Cancelled (the loop is shutting down): nobody will send what is still queued.
            queued, self._queue = self._queue, []
            for entry in queued:
                entry.future.cancel()

    def _take(self) -> list[_Append]:
        queue = self._queue
        count = 0
        for i, entry in enumerate(queue):
            count += len(entry.chunks)
            if count > BATCH_CHUNKS and i:
                self._queue = queue[i:]
                return [e for e in queue[:i] if not e.future.done()]
        self._queue = []
        return [e for e in queue if not e.future.done()]  # a cancelled caller's append is not sent

    async def _call(self, batch: list[_Append]) -> list[Any]:
        keys: list[str] = []
        args: list[Any] = [self._ttl_ms]
        for entry in batch:
            keys += entry.keys
            args += (entry.at, entry.lease_ms, len(entry.chunks), *entry.chunks)
        found: list[Any] = await self._script(keys=keys, args=args)
        return found

    async def _send(self, batch: list[_Append]) -> None:
        from redis.exceptions import ResponseError

        if not batch:
            return
        try:
            found = await self._call(batch)
        except ResponseError as exc:
            if len(batch) == 1:
                _fail(batch, exc)
                return
            for entry in batch:  # only the append the script refused fails
                await self._send([entry])
            return
        except BaseException as exc:
            _fail(batch, exc)
            if not isinstance(exc, Exception):
                raise
            return  # each caller raises it; the appends queued since go in the next call
        for i, entry in enumerate(batch):
            if not entry.future.done():
                entry.future.set_result((found[2 * i], found[2 * i + 1]))

    async def aclose(self) -> None:
        """Wait for what is queued to be sent (its callers get their answers)."""
        task = self._task
        if task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(task)


def _fail(batch: list[_Append], exc: BaseException) -> None:
    for entry in batch:
        if entry.future.done():
            continue
        if isinstance(exc, asyncio.CancelledError):
            entry.future.cancel()
        else:
            entry.future.set_exception(exc)
