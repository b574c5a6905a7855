"""One blocking ``XREAD`` per store and event loop for every follower of a Redis stream.

A follower that has caught up with its stream waits on its own `asyncio.Event`; a single
multiplexer task (`_Follow`), on a dedicated connection, blocks in one ``XREAD`` over every
followed stream key plus a private *wake key*, and on each answer hands the new entries of a key
to that key's followers and sets their events. So the connections a process holds no longer grow
with its followers (see docs/decisions/serving.md, "One Redis reader per process").

Followers stay pull readers: each keeps its own position, replays from Redis on its own (a late
reader, or one that fell behind the multiplexer's last batch), and takes the multiplexer's batch
directly only when the batch starts exactly where it stands. Every wait is preceded by clearing the
follower's event and then looking at the state (batch, cursor, Redis), so a wake-up set in between
is never lost. The multiplexer also checks, every ``block_ms``, that the followed keys still exist
(a writer that died without finishing lets its stream expire) and that an unfinished stream's
writer lease (``<prefix>:writer:<stream id>``, see ``_liveness``) has not run out: the followers of
a gone stream, or of a dead writer, end.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from ._redis_writes import RedisStreamSink

__all__ = ["PULLS", "Follow"]

PULLS = 16
"""Concurrent commands (replays, catch-ups, wake entries) one `Follow` lets its followers run: they
borrow pool connections, so the followers of a store use at most this many plus the multiplexer's
one, however many they are."""

COUNT = 512
"""Entries per key per ``XREAD`` (a follower's replay, and the multiplexer's batch)."""

_CLOSED = "the RedisStreamStore was closed while its streams were followed"

Entry = tuple[bytes, dict[bytes, bytes]]
T = TypeVar("T")

# For each pair (stream key, its writer key) of KEYS, in one round trip: 0 the stream is gone,
# 2 it is unfinished and its writer's lease ran out (Redis's clock), 1 otherwise (a stream no
# writer has claimed yet, a turn still queued, is not dead).
_LIVE = """
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local found = {}
for i = 1, #KEYS, 2 do
  local state = 1
  if redis.call('exists', KEYS[i]) == 0 then
    state = 0
  else
    local deadline = redis.call('get', KEYS[i + 1])
    if deadline and tonumber(deadline) < now then
      local top = redis.call('xrevrange', KEYS[i], '+', '-', 'COUNT', 1)
      if top[1][2][1] ~= 'end' then state = 2 end
    end
  end
  found[#found + 1] = state
end
return found
"""


async def _uncancelled(awaitable: Awaitable[T]) -> T:
    """Await a redis-py call without losing a cancellation of the calling task.

    redis-py sends through ``asyncio.wait_for`` when a ``socket_timeout`` is set (the default),
    and Python 3.11's ``wait_for`` returns the result instead of raising when the cancellation
    arrives as the send completes: the task would go on waiting, cancelled but never told."""
    task = asyncio.current_task()
    before = task.cancelling() if task is not None else 0
    result = await awaitable
    if task is not None and task.cancelling() > before:
        raise asyncio.CancelledError
    return result


def _entries_by_key(response: Any, **_: Any) -> list[tuple[bytes, list[Entry]]]:
    """An ``XREAD`` answer as ``[(key, [(id, fields), …]), …]`` straight from hiredis's reply (a
    map under RESP3, a list of pairs under RESP2): what redis-py's own parsing makes of it, in one
    pass instead of three layers of calls per entry (the shared reader's answers name hundreds of
    streams, issue 29)."""
    if not response:
        return []
    items = response.items() if isinstance(response, dict) else response
    return [
        (key, [(entry[0], _pairs(entry[1])) for entry in entries if entry is not None])
        for key, entries in items
    ]


def _pairs(flat: list[bytes] | None) -> dict[bytes, bytes]:
    if not flat:
        return {}
    if len(flat) == 2:
        return {flat[0]: flat[1]}  # a chunk: the one field c
    fields = iter(flat)
    return dict(zip(fields, fields, strict=True))


class _Watch:
    """One followed key: the multiplexer's cursor, its last batch, and the followers' events."""

    __slots__ = ("batch", "batch_from", "cursor", "events", "gone", "name")

    def __init__(self, key: str, cursor: bytes) -> None:
        self.name = key.encode()  # as the XREAD names it
        self.cursor = cursor  # the last entry id the multiplexer has seen (or was told to start at)
        self.batch_from = b""  # the batch holds the entries right after this id
        self.batch: list[Entry] = []
        self.events: set[asyncio.Event] = set()
        self.gone = False  # the key no longer exists (expired), or its writer died: followers end


class Follow:
    """The shared reader of one `RedisStreamStore` in one event loop.

    Started by the store on the first follower; the multiplexer task runs while anyone follows (it
    exits ``block_ms`` after the last follower left) and stops on `aclose`. If it fails (Redis
    unreachable), every follower raises the error and this `Follow` is `dead`: the store starts a
    new one for the next follower."""

    def __init__(
        self,
        redis: Redis,
        *,
        prefix: str,
        block_ms: int,
        ttl_ms: int,
        sinks: dict[str, RedisStreamSink] | None = None,
    ) -> None:
        self.redis = redis
        self._sinks: dict[str, RedisStreamSink] = {} if sinks is None else sinks  # by stream key
        self._idle: set[asyncio.Event] = set()  # followers waiting on a local sink (see _tick)
        self._ticking = False
        self.block_ms = block_ms
        self.loop = asyncio.get_running_loop()
        self.error: BaseException | None = None
        self.task: asyncio.Task[None] | None = None
        self._ttl_ms = ttl_ms
        self._prefix = prefix
        self._wake_key = ""  # the running multiplexer's own (a new one per task, see _watch)
        self._watches: dict[str, _Watch] = {}
        self._in_flight = False  # the multiplexer's XREAD is out with a snapshot of the keys
        self._woken = False  # a wake entry was sent since that XREAD went out
        # The client gives up on a read after socket_timeout (redis-py 8: 5 s): block for less.
        timeout = redis.connection_pool.connection_kwargs.get("socket_timeout")
        self._block_ms = min(block_ms, max(1, int(timeout * 500))) if timeout else block_ms
        self._pulls = asyncio.Semaphore(PULLS)
        self._live = redis.register_script(_LIVE)

    @property
    def dead(self) -> bool:
        return self.error is not None

    @property
    def watched(self) -> int:
        """How many keys the multiplexer follows (for tests and stats)."""
        return len(self._watches)

    @property
    def waiting(self) -> int:
        """How many followers have caught up and are registered to be woken (for tests and stats)."""
        return sum(len(watch.events) for watch in self._watches.values())

    async def read(self, key: str, last: bytes) -> AsyncGenerator[Entry, None]:
        """The entries of ``key`` after id ``last``, following it until the caller stops (at the
        end marker) or the key is gone; raises the multiplexer's error if it fails."""
        event = asyncio.Event()
        watch: _Watch | None = None
        try:
            while True:
                event.clear()  # before looking, so a wake-up after the look is kept
                if self.error is not None:
                    raise self.error
                sink = self._sinks.get(key)
                if sink is not None and sink.writes_in(self.loop) and not sink.ended:
                    if watch is not None:  # the multiplexer need not read what is written here
                        self._unwatch(key, watch, event)
                        watch = None
                    found = await self._from_sink(sink, key, last, event)
                    if found is None:
                        return
                    for entry in found:
                        last = entry[0]
                        yield entry
                    continue
                caught_up = False  # a pull reached the stream's end as it stood
                if watch is not None and watch.batch_from == last and watch.batch:
                    entries = watch.batch
                elif watch is not None and watch.cursor == last:
                    entries = []  # nothing newer exists than what the multiplexer has seen
                else:
                    entries = await _uncancelled(self._pull(key, last))
                    caught_up = len(entries) < COUNT
                for entry in entries:
                    last = entry[0]
                    yield entry
                if watch is None:
                    if caught_up or not entries:
                        # Watch from here rather than pull again to see nothing new: the
                        # multiplexer reads from this id, so what comes meanwhile is not missed.
                        # Pulling until a pull found nothing kept the followers of a busy store
                        # pulling, each pull queued behind the others' (PULLS at a time) while
                        # their writers wrote more.
                        watch = await _uncancelled(self._watch(key, last, event))
                    continue  # look once more: entries may have come before the watch began
                if entries:
                    continue
                if watch.gone:
                    return
                await event.wait()
        finally:
            if watch is not None:
                self._unwatch(key, watch, event)

    async def _from_sink(
        self, sink: RedisStreamSink, key: str, last: bytes, event: asyncio.Event
    ) -> list[Entry] | None:
        """The entries after ``last`` of a stream written by a live sink in this process: its
        chunks as each call confirms them (what is in Redis, so what a resume replays), without an
        ``XREAD``; from Redis when behind the sink's last call. While the sink confirms nothing for
        ``block_ms``, Redis is looked at too: another process may have written (a stop's ending, a
        dead-writer error), which the sink itself only learns at its next write. ``[]``: look again;
        ``None``: the key is gone."""
        read = int(last[2:]) - 1
        entries = sink.entries_after(read)
        if entries is None:
            entries = await _uncancelled(self._pull(key, last))
            if entries or sink.ended:
                return entries
            # Nothing there (another process wrote past this sink, or the key is gone): wait as
            # for the sink's next call rather than pull again at once.
            entries = sink.entries_after(read)
        if entries:
            return entries
        sink.waiters.add(event)
        self._idle.add(event)
        if not self._ticking:
            self._ticking = True
            self.loop.call_later(self.block_ms / 1000, self._tick)
        try:
            await event.wait()
        finally:
            sink.waiters.discard(event)
            self._idle.discard(event)
        if self.loop.time() - sink.confirmed_at >= self.block_ms / 1000 and not sink.entries_after(read):
            entries = await _uncancelled(self._pull(key, last))
            if not entries and not await _uncancelled(self._exists(key)):
                return None  # expired while its writer was quiet, as the multiplexer's check finds
            return entries
        return []

    async def _exists(self, key: str) -> bool:
        async with self._pulls:
            found: int = await self.redis.exists(key)
        return found > 0

    def _tick(self) -> None:
        # One timer for every follower waiting on a local sink, not one per wait.
        for event in self._idle:
            event.set()
        if self._idle:
            self.loop.call_later(self.block_ms / 1000, self._tick)
        else:
            self._ticking = False

    async def _pull(self, key: str, last: bytes) -> list[Entry]:
        async with self._pulls:
            answer: Any = await self.redis.xread({key: last}, count=COUNT)
        return list(answer[0][1]) if answer else []

    async def _watch(self, key: str, last: bytes, event: asyncio.Event) -> _Watch:
        if self.error is not None:  # failed while this follower was pulling
            raise self.error
        watch = self._watches.get(key)
        new = watch is None
        if watch is None:
            watch = self._watches[key] = _Watch(key, last)
        watch.events.add(event)
        if self.task is None:
            # A fresh wake key per task: a stopping task deletes its own key, never the one a
            # task started meanwhile was woken through.
            self._wake_key = f"{self._prefix}:wake:{uuid.uuid4().hex}"
            self.task = self.loop.create_task(
                self._run(self._wake_key), name=f"agentstream follow {self._wake_key}"
            )
        elif new and self._in_flight and not self._woken:
            # The running XREAD does not name this key: make it return now rather than at its timeout.
            self._woken = True
            async with self._pulls, self.redis.pipeline(transaction=False) as pipe:
                pipe.xadd(self._wake_key, {"w": b""}, maxlen=1, approximate=False)
                pipe.pexpire(self._wake_key, self._ttl_ms)
                await pipe.execute()
        return watch

    def _unwatch(self, key: str, watch: _Watch, event: asyncio.Event) -> None:
        watch.events.discard(event)
        if not watch.events and self._watches.get(key) is watch:
            del self._watches[key]  # the running XREAD may still name it: its answer is ignored

    async def aclose(self) -> None:
        """Stop the multiplexer; followers still waiting raise."""
        task, self.task = self.task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._fail(RuntimeError(_CLOSED))

    def _fail(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
        for watch in self._watches.values():
            for event in watch.events:
                event.set()

    async def _run(self, wake_key: str) -> None:
        client = self.redis.client()  # one connection of the pool, held while the task runs
        try:
            await self._multiplex(client, wake_key)
        except asyncio.CancelledError:
            self._fail(RuntimeError(_CLOSED))
            raise
        except Exception as exc:
            self._fail(exc)
        finally:
            self.task = None if self.task is asyncio.current_task() else self.task
            self._in_flight = False
            with contextlib.suppress(Exception):
                await client.aclose(close_connection_pool=False)
            if self.error is None:
                with contextlib.suppress(Exception):
                    await self.redis.delete(wake_key)

    async def _multiplex(self, client: Redis, wake_key: str) -> None:
        # This connection's XREAD answers are taken as hiredis gives them (see _entries_by_key).
        client.set_response_callback("XREAD", _entries_by_key)
        execute: Any = client.execute_command  # (untyped in redis-py)
        wake_name = wake_key.encode()
        wake_cursor = b"0-0"
        checked = time.monotonic()
        while True:
            watches = {watch.name: (key, watch) for key, watch in self._watches.items()}
            cursors = [wake_cursor, *(watch.cursor for _, watch in watches.values())]
            command = (
                "XREAD",
                "COUNT",
                COUNT,
                "BLOCK",
                self._block_ms,
                "STREAMS",
                wake_name,
                *watches,
                *cursors,
            )
            self._in_flight, self._woken = True, False
            answer: list[tuple[bytes, list[Entry]]] = await _uncancelled(execute(*command))
            self._in_flight = False
            for name, entries in answer:
                if name == wake_name:
                    wake_cursor = entries[-1][0]
                    continue
                key, watch = watches[name]
                if self._watches.get(key) is watch and entries:
                    self._hand_over(watch, entries)
            if not self._watches:
                if not watches:
                    return  # a whole block_ms without followers: stop (the next one restarts us)
                continue
            if time.monotonic() - checked >= self.block_ms / 1000:
                checked = time.monotonic()
                await self._drop_expired(client)

    @staticmethod
    def _hand_over(watch: _Watch, entries: list[Entry]) -> None:
        watch.batch_from, watch.batch, watch.cursor = watch.cursor, entries, entries[-1][0]
        for event in watch.events:
            event.set()

    def _writer_key(self, key: str) -> str:
        return f"{self._prefix}:writer:{key.rpartition(':')[2]}"

    async def _drop_expired(self, client: Redis) -> None:
        keys = list(self._watches)
        pairs = [name for key in keys for name in (key, self._writer_key(key))]
        found = await _uncancelled(self._live(keys=pairs, client=client))
        for key, state in zip(keys, found, strict=True):
            watch = self._watches.get(key)
            if state != 1 and watch is not None:
                watch.gone = True
                for event in watch.events:
                    event.set()
