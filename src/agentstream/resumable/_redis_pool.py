"""The Redis client `RedisStreamStore.from_url` makes: a bounded, waiting pool that shrinks back to
a floor after a burst, health-checked connections, and commands retried with backoff.

redis-py's ``Redis.from_url`` gives a pool that refuses (rather than waits for) a connection past
its limit, keeps every connection it ever opened, and retries nothing: the first command on a
pooled connection that a Redis restart closed fails (issue 28). Here:

* `ShrinkingPool` (a ``BlockingConnectionPool``): at most ``max_connections`` open, a command past
  them waits up to ``pool_timeout_s`` for one to be released; once more than ``min_idle``
  connections have been idle for ``idle_s``, the extra ones are closed.
* every command (and every connect) is retried on ``ConnectionError`` / ``TimeoutError`` with an
  exponential backoff (``0.05 s · 2^n``, capped at 1 s) ``retries`` times, ~5.5 s of trying by
  default: a Redis restart of a second or two is not seen by the callers. Retrying is safe for the
  store's commands: its writes are positional or idempotent (see ``_redis``).
* a connection idle for more than ``health_check_interval_s`` is PINGed before it is used;
* commands are packed by hiredis when it is installed (`_hiredis_packing`).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = [
    "DEFAULT_IDLE_S",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MIN_IDLE",
    "DEFAULT_POOL_TIMEOUT_S",
    "DEFAULT_RETRIES",
    "pool_connections",
    "redis_client",
]

DEFAULT_MAX_CONNECTIONS = 64
"""Connections one store's client may hold at once. Followers share one blocking ``XREAD`` plus at
most ``PULLS`` (16) short reads; writers batch their chunks (one command per batch in flight per
answer); past the limit a command waits for a connection instead of failing."""

DEFAULT_MIN_IDLE = 2
"""Idle connections kept open after a burst (the floor the pool shrinks back to)."""

DEFAULT_IDLE_S = 5.0
"""How long an idle connection above the floor stays open before it is closed."""

DEFAULT_POOL_TIMEOUT_S = 10.0
"""How long a command waits for a pooled connection before failing with ``ConnectionError``."""

DEFAULT_RETRIES = 8
"""Retries of a command that failed on a connection error: 0.1, 0.2, 0.4, 0.8, then 1 s each."""

HEALTH_CHECK_INTERVAL_S = 10
"""A connection idle longer than this is PINGed (and reconnected if dead) before a command."""


def _pool_class() -> type[Any]:
    from redis.asyncio import BlockingConnectionPool

    class ShrinkingPool(BlockingConnectionPool):
        """A ``BlockingConnectionPool`` that closes idle connections above ``min_idle`` after ``idle_s``."""

        def __init__(self, *, min_idle: int, idle_s: float, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.min_idle = min_idle
            self.idle_s = idle_s
            self._idle_since: dict[int, float] = {}
            self._sweep: asyncio.TimerHandle | None = None
            self._shrinking: set[asyncio.Task[None]] = set()

        async def release(self, connection: Any) -> None:
            await super().release(connection)
            self._idle_since[id(connection)] = time.monotonic()
            if self._sweep is None and self._connected_idle() > self.min_idle:
                self._sweep = asyncio.get_running_loop().call_later(self.idle_s, self._start_shrink)

        def _connected_idle(self) -> int:
            return sum(1 for connection in self._available_connections if connection.is_connected)

        def _start_shrink(self) -> None:
            self._sweep = None
            task = asyncio.get_running_loop().create_task(
                self._shrink(), name="agentstream redis pool shrink"
            )
            self._shrinking.add(task)
            task.add_done_callback(self._shrinking.discard)

        async def _shrink(self) -> None:
            now = time.monotonic()
            async with self._condition:
                # The pool hands out its most recently released connection first: the front of the
                # list has been idle longest.
                connected = [c for c in self._available_connections if c.is_connected]
                excess = connected[: max(0, len(connected) - self.min_idle)]
                stale = [c for c in excess if now - self._idle_since.get(id(c), now) >= self.idle_s]
                for connection in stale:
                    self._available_connections.remove(connection)
                    self._idle_since.pop(id(connection), None)
            for connection in stale:
                await connection.disconnect()
            if self._sweep is None and self._connected_idle() > self.min_idle:
                self._sweep = asyncio.get_running_loop().call_later(self.idle_s, self._start_shrink)

        async def disconnect(self, inuse_connections: bool = True) -> None:
            if self._sweep is not None:
                self._sweep.cancel()
                self._sweep = None
            await super().disconnect(inuse_connections)

    return ShrinkingPool


def _hiredis_packing(base: type[Any]) -> type[Any]:
    """``base`` (the pool's connection class) packing its commands with hiredis's C packer, as
    redis-py's synchronous client does when hiredis is installed; its asyncio client packs in
    Python, one bytes join per argument over a buffer of up to 6 KB: the shared reader's ``XREAD``
    names every followed stream and the batched appends carry every stream's chunks, hundreds of
    arguments each (issue 29). The arguments are encoded by the connection's own encoder first
    (the same bytes, the same errors for values it refuses); the wire bytes are the same."""
    try:
        from hiredis import pack_command
    except ImportError:  # hiredis is optional (the redis extra installs it)
        return base

    class HiredisPacking(base):  # type: ignore[misc]
        def pack_command(self, *args: Any) -> list[bytes]:
            head = args[0]
            # A command name with literal arguments in it ("CONFIG GET") is sent split, as redis-py does.
            if isinstance(head, str):
                args = (*head.encode().split(), *args[1:])
            elif b" " in head:
                args = (*head.split(), *args[1:])
            encode = self.encoder.encode
            encoded: Any = tuple(a if a.__class__ is bytes else bytes(encode(a)) for a in args)
            return [pack_command(encoded)]  # (hiredis's stub types a 1-tuple)

    HiredisPacking.__name__ = HiredisPacking.__qualname__ = f"HiredisPacking{base.__name__}"
    return HiredisPacking


def _driver_info() -> dict[str, Any]:
    """One ``driver_info`` for every connection of the pool (redis-py >= 7): without it, each new
    connection looks redis-py's version up in the installed packages' metadata (``importlib.metadata``,
    a scan of ``sys.path``), milliseconds each, which a burst of chats opening the pool's connections
    paid 64 times (issue 29). The same name and version are sent (``CLIENT SETINFO``)."""
    try:
        from redis.driver_info import DriverInfo
    except ImportError:  # redis-py 5 and 6 look the version up once, at import
        return {}
    return {"driver_info": DriverInfo()}


def _positive(name: str, value: Any, *, allow_zero: bool = False) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or value < 0
        or (value == 0 and not allow_zero)
    ):
        expected = "a number >= 0" if allow_zero else "a number > 0"
        raise ValueError(f"{name}: expected {expected}, got {value!r}")


def redis_client(
    url: str,
    *,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    min_idle: int = DEFAULT_MIN_IDLE,
    idle_s: float = DEFAULT_IDLE_S,
    pool_timeout_s: float = DEFAULT_POOL_TIMEOUT_S,
    retries: int = DEFAULT_RETRIES,
) -> Redis:
    """A ``redis.asyncio.Redis`` for ``url`` on a `ShrinkingPool`, its commands retried (see the module).

    Its connections are named ``agentstream-<pid>`` (``CLIENT LIST`` shows which process holds them)."""
    from redis.asyncio import Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff

    if isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < 4:
        # The multiplexer holds one for as long as anyone follows; writers and readers need more.
        raise ValueError(f"max_connections: expected an int >= 4, got {max_connections!r}")
    if isinstance(min_idle, bool) or not isinstance(min_idle, int) or not 0 <= min_idle <= max_connections:
        raise ValueError(f"min_idle: expected an int from 0 to max_connections, got {min_idle!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries: expected an int >= 0, got {retries!r}")
    _positive("idle_s", idle_s)
    _positive("pool_timeout_s", pool_timeout_s)
    pool = _pool_class().from_url(
        url,
        **_driver_info(),
        max_connections=max_connections,
        timeout=pool_timeout_s,
        min_idle=min_idle,
        idle_s=float(idle_s),
        retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), retries),
        health_check_interval=HEALTH_CHECK_INTERVAL_S,
        socket_timeout=5,
        socket_connect_timeout=2,
        socket_keepalive=True,
        client_name=f"agentstream-{os.getpid()}",
    )
    pool.connection_class = _hiredis_packing(pool.connection_class)
    return Redis.from_pool(pool)


def pool_connections(redis: Redis) -> int:
    """How many connections ``redis``'s pool holds open now (in use or idle)."""
    pool: Any = redis.connection_pool
    idle = sum(1 for connection in pool._available_connections if connection.is_connected)
    return idle + len(pool._in_use_connections)
