"""`RedisStreamStore.from_url`'s client against a Redis of the test's own: retried across a restart
(the first command on a stale pooled connection included), unreachable past its retries as
`StreamStoreUnavailableError`, a bounded waiting pool that shrinks back to its floor after a burst."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from agentstream.resumable import RedisStreamStore, StreamStoreUnavailableError
from agentstream.resumable._redis_pool import pool_connections

from ._redis import redis_server

CONNECTION_NAME = f"agentstream-{os.getpid()}"


def chunk(n: int) -> bytes:
    return f'{{"type":"text-delta","id":"t","delta":"{n}"}}'.encode()


@pytest.mark.parametrize("aof", [True, False], ids=["aof", "no-aof"])
async def test_the_first_commands_after_a_restart_succeed_on_stale_pooled_connections(
    tmp_path: Path, aof: bool
) -> None:
    with redis_server(tmp_path, aof=aof) as redis:
        store = RedisStreamStore.from_url(redis.url, block_ms=50)
        try:
            stream_id = await store.start("chat-a", owner=None)
            await asyncio.gather(*(store.length(stream_id) for _ in range(5)))  # five pooled connections
            assert pool_connections(store.redis) >= 2
            await asyncio.to_thread(redis.restart, 1.0)
            # Every pooled connection was closed by the restart: each command is retried on a new one.
            pongs = await asyncio.gather(*(store.redis.ping() for _ in range(5)))
            assert pongs == [True] * 5
            second = await store.start("chat-b", owner=None)
            await store.append(second, chunk(0), at=0)
            await store.finish(second)
            assert [c async for c in store.read(second)] == [chunk(0)]
            if aof:
                assert await store.length(stream_id) == 0  # the first stream survived the restart
        finally:
            await store.aclose()


async def test_past_its_retries_an_unreachable_redis_is_stream_store_unavailable(tmp_path: Path) -> None:
    with redis_server(tmp_path, aof=False) as redis:
        store = RedisStreamStore.from_url(redis.url, block_ms=50, retries=1)
        try:
            stream_id = await store.start("chat-a", owner=None)
            reader = store.read_checked(stream_id)
            redis.stop()
            with pytest.raises(StreamStoreUnavailableError, match="unreachable"):
                await store.start("chat-b", owner=None)
            with pytest.raises(StreamStoreUnavailableError):
                await store.append(stream_id, chunk(0), at=0)
            with pytest.raises(StreamStoreUnavailableError):
                await store.active("chat-a")
            with pytest.raises(StreamStoreUnavailableError):
                await asyncio.wait_for(anext(reader), 60)
            # Taking the writer lease does not fail the writer: its own writes meet the failure.
            with pytest.raises(StreamStoreUnavailableError):
                async with store.writing(stream_id, lease_s=5):
                    await store.append(stream_id, chunk(0), at=0)
        finally:
            await store.aclose()


async def test_the_pool_is_bounded_waits_and_shrinks_back_to_its_floor(tmp_path: Path) -> None:
    with redis_server(tmp_path, aof=False) as redis:
        store = RedisStreamStore.from_url(redis.url, max_connections=8, min_idle=2, idle_s=0.2)
        try:
            stream_id = await store.start("chat-a", owner=None)
            peak = 0

            async def command(n: int) -> None:
                nonlocal peak
                await store.append(stream_id, chunk(n), at=n)  # positional: any order, each once
                peak = max(peak, pool_connections(store.redis))

            for _ in range(3):
                await asyncio.gather(*(store.length(stream_id) for _ in range(200)))
            await asyncio.gather(*(command(0) for _ in range(50)))  # 50 at once, 8 connections
            assert 2 < peak <= 8
            assert redis.client_connections(CONNECTION_NAME) <= 8
            deadline = time.monotonic() + 30
            while pool_connections(store.redis) > 2 or redis.client_connections(CONNECTION_NAME) > 2:
                assert time.monotonic() < deadline, "the pool did not shrink back to its floor"
                await asyncio.sleep(0.05)
            assert await store.length(stream_id) == 1  # and it still works
        finally:
            await store.aclose()


async def test_a_retried_finish_adds_no_second_end(tmp_path: Path) -> None:
    with redis_server(tmp_path, aof=False) as redis:
        store = RedisStreamStore.from_url(redis.url)
        try:
            stream_id = await store.start("chat-a", owner=None)
            await store.append(stream_id, chunk(0), at=0)
            await store.finish(stream_id)
            await store.finish(stream_id)  # as a retry after a lost answer sends it again
            entries = await store.redis.xrange(f"agentstream:stream:{stream_id}")
            assert [sorted(fields) for _, fields in entries] == [[b"chat", b"open"], [b"c"], [b"end"]]
            assert await store.length(stream_id) == 1
        finally:
            await store.aclose()
