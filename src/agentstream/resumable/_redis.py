"""`RedisStreamStore`: active streams in Redis Streams, readable from every server process.

Layout under ``prefix`` (``agentstream``): ``<prefix>:chat:<chat id>`` is a hash
``{stream, owner}`` naming the chat's active stream (deleted when it finishes);
``<prefix>:stream:<stream id>`` is a Redis Stream whose entry ``0-1`` opens it, entries
``0-2``, ``0-3``… hold the chunks (field ``c``) and a last entry with field ``end`` closes it.
Explicit ids make "after the first N chunks" one ``XREAD`` from ``0-<N+1>``; ``<prefix>:writer:<stream
id>`` holds the Redis-clock time (ms) until which the stream's writer is alive (`WriterLiveness`).
The keys expire ``ttl_s`` after the last write. Every write is positional or idempotent, so the
client retries them on a connection error (`._redis_pool`): a write whose answer was lost changes
nothing when it is sent again. Connection errors that outlast the retries raise
`StreamStoreUnavailableError`. Readers replay with ``XREAD`` and then follow rather than
subscribe, so nothing is lost between the two; the followers of a store share one blocking
``XREAD`` over all their streams (`._redis_follow`), so they hold no connection each (see
docs/decisions/serving.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from ._base import (
    ActiveStream,
    StreamExpiredError,
    StreamLostError,
    StreamOwnerError,
    StreamStore,
    StreamStoreUnavailableError,
    check_at,
    check_ttl,
)
from ._liveness import Beats
from ._memory import MemoryStreamStore
from ._redis_follow import Follow
from ._redis_pool import DEFAULT_MAX_CONNECTIONS, redis_client
from ._redis_writes import APPEND_MANY, RedisStreamSink, Writes

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["MAX_CONNECTIONS", "RedisStreamStore", "batched_sink", "stream_store_from_url"]

MAX_CONNECTIONS = DEFAULT_MAX_CONNECTIONS
"""Connections one `RedisStreamStore.from_url` client may open by default (``max_connections``).
The pool waits for a free one past it (it used to refuse, hence a ceiling of 5,000 before issue 28)."""

# Claim the chat for a new stream unless another owner's stream is active (atomic). The open
# entry names the chat, so a process that did not start the stream (a worker) can refresh and
# clear the chat's pointer.
_START = """
if redis.call('exists', KEYS[2]) == 1 then return 1 end
local current = redis.call('hmget', KEYS[1], 'stream', 'owner')
if current[1] and current[2] ~= ARGV[2] then return 0 end
redis.call('hset', KEYS[1], 'stream', ARGV[1], 'owner', ARGV[2])
redis.call('pexpire', KEYS[1], ARGV[3])
redis.call('xadd', KEYS[2], '0-1', 'open', '', 'chat', ARGV[4])
redis.call('pexpire', KEYS[2], ARGV[3])
return 1
"""
# Close the stream (once: a retried finish adds no second end); the chat forgets it only if it is
# still the chat's active one.
_FINISH = """
local top = redis.call('xrevrange', KEYS[2], '+', '-', 'COUNT', 1)
if #top == 0 then return 0 end
if top[1][2][1] ~= 'end' then redis.call('xadd', KEYS[2], '*', 'end', '') end
redis.call('pexpire', KEYS[2], ARGV[2])
if redis.call('hget', KEYS[1], 'stream') == ARGV[1] then redis.call('del', KEYS[1]) end
return 1
"""
# How many chunks the stream holds: the top entry is 0-<chunks + 1>, or the end marker after it.
# Returns {status, chunks}: status 0 = gone, 1 = open, 2 = finished.
_STATE = """
local top = redis.call('xrevrange', KEYS[1], '+', '-', 'COUNT', 1)
if #top == 0 then return {0, 0} end
if top[1][2][1] == 'end' then return {2, redis.call('xlen', KEYS[1]) - 2} end
return {1, tonumber(string.sub(top[1][1], 3)) - 1}
"""
# The writers of streams KEYS are alive until ARGV[1] ms from now on Redis's clock (one clock for
# every process); ARGV[1] = 0 marks them dead now. The keys live as long as the streams (ARGV[2]).
_BEAT = """
local t = redis.call('time')
local deadline = 0
if tonumber(ARGV[1]) > 0 then deadline = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1]) end
for _, key in ipairs(KEYS) do redis.call('set', key, deadline, 'PX', ARGV[2]) end
return 1
"""


@contextlib.contextmanager
def _reachable() -> Iterator[None]:
    """Redis connection errors that outlasted the client's retries, as `StreamStoreUnavailableError`."""
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    try:
        yield
    except (RedisConnectionError, RedisTimeoutError) as exc:
        raise StreamStoreUnavailableError(f"the stream store (Redis) is unreachable: {exc}") from exc


def _unreachable(exc: BaseException) -> BaseException:
    """What `_reachable` makes of ``exc``, as the exception to raise."""
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    if isinstance(exc, (RedisConnectionError, RedisTimeoutError)):
        error = StreamStoreUnavailableError(f"the stream store (Redis) is unreachable: {exc}")
        error.__cause__ = exc
        return error
    return exc


class RedisStreamStore:
    """A `StreamStore` in Redis (redis-py asyncio): every process sharing the server sees the streams.

    ``redis`` is a ``redis.asyncio.Redis`` client (or use `from_url`, whose client waits for pooled
    connections, shrinks its pool after a burst and retries commands on connection errors). Streams
    expire ``ttl_s`` (600) seconds after their last write. The followers of a store share one
    blocking ``XREAD`` (``block_ms``, 1000, at a time), which checks every ``block_ms`` that their
    streams still exist and that their writers are alive (`WriterLiveness`): a reader of an expired
    stream, or of a stream whose writer died, ends. Needs the ``redis`` extra.
    """

    def __init__(
        self, redis: Redis, *, ttl_s: float = 600, prefix: str = "agentstream", block_ms: int = 1000
    ) -> None:
        if isinstance(block_ms, bool) or not isinstance(block_ms, int) or block_ms < 1:
            raise ValueError(f"block_ms must be a positive integer, got {block_ms!r}")
        self.ttl_s = check_ttl(ttl_s)
        self.redis = redis
        self.prefix = prefix
        self.block_ms = block_ms
        self._ttl_ms = max(1, round(self.ttl_s * 1000))
        self._start = redis.register_script(_START)
        self._finish = redis.register_script(_FINISH)
        self._append = redis.register_script(APPEND_MANY)
        self._state = redis.register_script(_STATE)
        self._beat = redis.register_script(_BEAT)
        self._chats: dict[str, str] = {}  # stream id -> chat id, for the streams this process writes
        self._follow: Follow | None = None  # the shared reader of the current event loop
        self._writes: Writes | None = None  # the batched appends of the current event loop
        self._beats: dict[float, Beats] = {}  # writer lease refreshes, by lease, of the current loop
        self._leases: dict[str, int] = {}  # stream id -> lease (ms) of its writer in this process
        # stream key -> the live sink writing it here: its followers here read it from the sink
        self._sinks: dict[str, RedisStreamSink] = {}

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        max_connections: int = MAX_CONNECTIONS,
        min_idle: int | None = None,
        idle_s: float | None = None,
        pool_timeout_s: float | None = None,
        retries: int | None = None,
        **options: Any,
    ) -> RedisStreamStore:
        """A store on a new client for ``redis://host:port/db`` (``rediss://`` for TLS).

        The client's pool holds at most ``max_connections`` (`MAX_CONNECTIONS`, 64); a command past
        them waits up to ``pool_timeout_s`` (10) for one. After a burst, idle connections above
        ``min_idle`` (2) are closed once idle for ``idle_s`` (5). A command failing on a connection
        error is retried ``retries`` (8) times with backoff, ~5.5 s (see ``_redis_pool``).
        ``options`` are the store's own (``ttl_s``, ``prefix``, ``block_ms``)."""
        try:
            import redis.asyncio  # noqa: F401
        except ImportError as exc:
            raise ImportError("RedisStreamStore needs redis-py: pip install 'agentstream[redis]'") from exc
        given = {"min_idle": min_idle, "idle_s": idle_s, "pool_timeout_s": pool_timeout_s, "retries": retries}
        pool: dict[str, Any] = {name: value for name, value in given.items() if value is not None}
        return cls(redis_client(url, max_connections=max_connections, **pool), **options)

    def _chat_key(self, chat_id: str) -> str:
        return f"{self.prefix}:chat:{chat_id}"

    def _stream_key(self, stream_id: str) -> str:
        return f"{self.prefix}:stream:{stream_id}"

    def _writer_key(self, stream_id: str) -> str:
        return f"{self.prefix}:writer:{stream_id}"

    async def start(self, chat_id: str, *, owner: str | None) -> str:
        """Begin the chat's new stream (see `StreamStore.start`); `StreamOwnerError` if another owner's is active."""
        stream_id = uuid.uuid4().hex
        keys = [self._chat_key(chat_id), self._stream_key(stream_id)]
        with _reachable():
            started = await self._start(keys=keys, args=[stream_id, owner or "", self._ttl_ms, chat_id])
        if not started:
            raise StreamOwnerError(f"chat {chat_id!r} has an active stream of another user")
        self._chats[stream_id] = chat_id
        return stream_id

    async def _chat_of(self, stream_id: str) -> str:
        """The chat a stream belongs to (named by its open entry; "" when it is gone)."""
        chat_id = self._chats.get(stream_id)
        if chat_id is None:
            opened: Any = await self.redis.xrange(self._stream_key(stream_id), "0-1", "0-1")
            fields = opened[0][1] if opened else {}
            chat_id = self._chats[stream_id] = fields.get(b"chat", b"").decode()
        return chat_id

    async def append(self, stream_id: str, *chunks: bytes, at: int | None = None) -> None:
        """Add chunks in order, or at chunk number ``at`` skipping those already written (see
        `StreamStore.append`); `StreamExpiredError` if the stream is gone or finished.

        A positional append (``at``) is safe to retry after a connection error; one at the end
        (no ``at``) may land twice if Redis applied it but its answer was lost. The appends of
        every stream made in one loop iteration go to Redis in one call (`._redis_writes`)."""
        check_at(at, at or 0, stream_id)  # the type and sign; the gap is checked in the script
        with _reachable():
            keys = [
                self._stream_key(stream_id),
                self._chat_key(await self._chat_of(stream_id)),
                self._writer_key(stream_id),
            ]
            lease_ms = self._leases.get(stream_id, 0)
            call = (keys, -1 if at is None else at, lease_ms, chunks)
            status, length = await self._writes_here().append(call)
        if status == 0:
            self._chats.pop(stream_id, None)
            raise StreamExpiredError(f"stream {stream_id!r} has finished, expired or was never started")
        if status < 0:
            check_at(at, int(length), stream_id)

    def _writes_here(self) -> Writes:
        writes = self._writes
        if writes is None or writes.loop is not asyncio.get_running_loop():
            writes = self._writes = Writes(self._append, self._ttl_ms)
        return writes

    async def sink(self, stream_id: str, *, at: int) -> RedisStreamSink:
        """The stream as a `RedisStreamSink` from chunk number ``at``: the writer adds each chunk without
        waiting, and the chunks of every stream added in one loop iteration go to Redis in one call
        (see `._redis_writes`); what `append` would raise, the sink raises (`StreamExpiredError`,
        `StreamStoreUnavailableError`, ``ValueError`` for a gap)."""
        check_at(at, at, stream_id)
        with _reachable():
            keys = [
                self._stream_key(stream_id),
                self._chat_key(await self._chat_of(stream_id)),
                self._writer_key(stream_id),
            ]

        def refused(status: int, length: int, written: int, exc: BaseException | None) -> BaseException:
            if exc is not None:
                return _unreachable(exc)
            if status == 0:
                self._chats.pop(stream_id, None)
                return StreamExpiredError(f"stream {stream_id!r} has finished, expired or was never started")
            try:
                check_at(written, length, stream_id)
            except ValueError as gap:
                return gap
            return RuntimeError(f"stream {stream_id!r}: unexpected append status {status}")

        encoded = [key.encode() for key in keys]  # once per sink, not per call (see Writes._call)
        sink = RedisStreamSink(
            self._writes_here(), encoded, at, lambda: self._leases.get(stream_id, 0), refused
        )
        key = keys[0]

        def ended() -> None:
            if self._sinks.get(key) is sink:
                del self._sinks[key]

        sink.on_end = ended
        self._sinks[key] = sink
        return sink

    async def length(self, stream_id: str) -> int:
        """How many chunks the stream holds; `StreamExpiredError` if it is gone."""
        with _reachable():
            status, length = await self._state(keys=[self._stream_key(stream_id)])
        if status == 0:
            raise StreamExpiredError(f"stream {stream_id!r} has expired or was never started")
        return int(length)

    async def finish(self, stream_id: str) -> None:
        """Mark the stream complete; its readers end after the last chunk."""
        with _reachable():
            keys = [self._chat_key(await self._chat_of(stream_id)), self._stream_key(stream_id)]
            await self._finish(keys=keys, args=[stream_id, self._ttl_ms])
        self._chats.pop(stream_id, None)

    async def active(self, chat_id: str) -> ActiveStream | None:
        """The chat's unfinished stream, or ``None``."""
        with _reachable():
            found: list[Any] = await self.redis.hmget(self._chat_key(chat_id), ["stream", "owner"])
        stream_id, owner = found
        if stream_id is None:
            return None
        return ActiveStream(stream_id.decode(), (owner.decode() or None) if owner is not None else None)

    def _follower(self) -> Follow:
        """The shared reader of the running event loop (a new one if it failed or the loop changed)."""
        follow = self._follow
        if follow is None or follow.dead or follow.loop is not asyncio.get_running_loop():
            follow = self._follow = Follow(
                self.redis, prefix=self.prefix, block_ms=self.block_ms, ttl_ms=self._ttl_ms, sinks=self._sinks
            )
        return follow

    async def read(self, stream_id: str, *, after: int = 0) -> AsyncIterator[bytes]:
        """The chunks after the first ``after``, following the stream until it finishes, expires or
        its writer dies."""
        with contextlib.suppress(StreamLostError):
            async for chunk in self.read_checked(stream_id, after=after):
                yield chunk

    async def read_checked(self, stream_id: str, *, after: int = 0) -> AsyncIterator[bytes]:
        """As `read`; a stream that ends unfinished (it expired or was lost, or its writer died)
        raises `StreamLostError` after its last chunk (see `WriterLiveness`)."""
        entries = self._follower().read(self._stream_key(stream_id), f"0-{max(after, 0) + 1}".encode())
        try:
            with _reachable():
                async for _, fields in entries:
                    if b"end" in fields:
                        return
                    if b"c" in fields:
                        yield fields[b"c"]
        finally:
            await entries.aclose()  # unwatch the key now, not when the generator is collected
        raise StreamLostError(
            f"stream {stream_id!r} ended unfinished: its writer died, or it expired or was lost"
        )

    def writing(
        self, stream_id: str, *, lease_s: float, dead_on_error: bool = True
    ) -> AbstractAsyncContextManager[None]:
        """Held by the stream's writer (see `WriterLiveness`): its lease is refreshed every
        ``lease_s / 3`` seconds; leaving by an exception marks the writer dead at once (with
        ``dead_on_error``)."""
        return self._writing(stream_id, check_ttl(lease_s), dead_on_error)

    @contextlib.asynccontextmanager
    async def _writing(self, stream_id: str, lease_s: float, dead_on_error: bool) -> AsyncIterator[None]:
        beats = self._beats.get(lease_s)
        if beats is None or beats.loop is not asyncio.get_running_loop():
            lease_ms = max(1, round(lease_s * 1000))
            beats = self._beats[lease_s] = Beats(lambda ids: self._beat_writers(ids, lease_ms), lease_s)
        outer = self._leases.get(stream_id)
        async with beats.hold(stream_id):
            self._leases[stream_id] = max(1, round(lease_s * 1000))
            try:
                yield
            except BaseException:
                self._forget_lease(stream_id, outer)
                if dead_on_error:
                    with contextlib.suppress(Exception):
                        await asyncio.shield(self._beat_writers([stream_id], 0))
                raise
            finally:
                self._forget_lease(stream_id, outer)

    def _forget_lease(self, stream_id: str, outer: int | None) -> None:
        # an append after the writer left must not mark it alive again
        if outer is None:
            self._leases.pop(stream_id, None)
        else:
            self._leases[stream_id] = outer

    async def _beat_writers(self, stream_ids: list[str], lease_ms: int) -> None:
        keys = [self._writer_key(stream_id) for stream_id in stream_ids]
        with _reachable():
            await self._beat(keys=keys, args=[lease_ms, self._ttl_ms])

    async def aclose(self) -> None:
        """Stop following (readers still waiting raise) and close the client's connections (the
        streams stay in Redis until they expire)."""
        follow, self._follow = self._follow, None
        if follow is not None:
            await follow.aclose()
        writes, self._writes = self._writes, None
        if writes is not None and writes.loop is asyncio.get_running_loop():
            await writes.aclose()
        await self.redis.aclose()


def batched_sink(store: object) -> Callable[..., Awaitable[RedisStreamSink]] | None:
    """``store.sink`` when ``store`` is a `RedisStreamStore` whose ``append`` is its own (a subclass
    that changes ``append``, for fault injection or metering, keeps every write going through it),
    else ``None``."""
    if isinstance(store, RedisStreamStore) and type(store).append is RedisStreamStore.append:
        return store.sink
    return None


def stream_store_from_url(url: str, *, ttl_s: float = 600) -> StreamStore:
    """``memory`` → `MemoryStreamStore`, ``redis://…`` / ``rediss://…`` / ``unix://…`` → `RedisStreamStore`.

    Raises ``ValueError`` naming the accepted forms for anything else."""
    if url == "memory":
        return MemoryStreamStore(ttl_s=ttl_s)
    if url.startswith(("redis://", "rediss://", "unix://")):
        return RedisStreamStore.from_url(url, ttl_s=ttl_s)
    raise ValueError(f"expected 'memory' or a redis://host:port/db URL, got {url!r}")
