"""Followers of a stream written by a live sink in the same process (`RedisStreamSink`) take the
chunks from the sink as each call confirms them, without the shared reader's ``XREAD``; once the
sink ends (or another writer wrote), they read Redis from where they are, so an ending written by
another process is still seen, and what they saw is what a replay reads."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from agentstream.resumable import RedisStreamStore

pytestmark = pytest.mark.services("redis")


def chunk(n: int) -> bytes:
    return f'{{"type":"text-delta","id":"t","delta":"{n}"}}'.encode()


@pytest.fixture
async def stores(redis_url: str) -> AsyncIterator[tuple[RedisStreamStore, RedisStreamStore]]:
    """Two stores on one prefix, each with its own client: two server processes."""
    prefix = f"test-{uuid.uuid4().hex}"
    here = RedisStreamStore.from_url(redis_url, prefix=prefix, block_ms=50)
    there = RedisStreamStore.from_url(redis_url, prefix=prefix, block_ms=50)
    try:
        yield here, there
    finally:
        await here.aclose()
        await there.aclose()


async def collect(store: RedisStreamStore, stream_id: str, after: int = 0) -> list[bytes]:
    return [c async for c in store.read(stream_id, after=after)]


async def test_a_local_follower_reads_the_sink_without_the_shared_reader(
    stores: tuple[RedisStreamStore, RedisStreamStore],
) -> None:
    here, _ = stores
    stream_id = await here.start("chat", owner=None)
    sink = await here.sink(stream_id, at=0)
    reader = asyncio.create_task(collect(here, stream_id))
    for n in range(20):
        sink.add(chunk(n))
        await asyncio.sleep(0.005)
        assert here._follower().watched == 0  # no XREAD names the stream while the sink writes it
    await sink.drain()
    sink.close()
    await here.finish(stream_id)
    assert await asyncio.wait_for(reader, 5) == [chunk(n) for n in range(20)]
    assert await collect(here, stream_id) == [chunk(n) for n in range(20)]  # a replay: the same


async def test_a_local_follower_sees_an_ending_another_process_wrote_while_the_sink_is_idle(
    stores: tuple[RedisStreamStore, RedisStreamStore],
) -> None:
    here, there = stores
    stream_id = await here.start("chat", owner=None)
    sink = await here.sink(stream_id, at=0)
    sink.add(chunk(0))
    await sink.drain()
    reader = asyncio.create_task(collect(here, stream_id))
    await asyncio.sleep(0.1)
    assert not sink.ended
    # Another server stops the answer (the writer here is idle: it learns it at its next write).
    await there.append(stream_id, chunk(99), at=1)
    await there.finish(stream_id)
    assert await asyncio.wait_for(reader, 5) == [chunk(0), chunk(99)]
    sink.add(chunk(1))
    with pytest.raises(Exception):  # noqa: B017 - the sink's refusal, whatever its kind
        await sink.drain()
    assert sink.ended


async def test_a_write_another_writer_made_first_ends_the_local_mirror(
    stores: tuple[RedisStreamStore, RedisStreamStore],
) -> None:
    here, there = stores
    stream_id = await here.start("chat", owner=None)
    sink = await here.sink(stream_id, at=0)
    reader = asyncio.create_task(collect(here, stream_id))
    sink.add(chunk(0))
    await sink.drain()
    await there.append(stream_id, b'{"type":"text-delta","id":"t","delta":"theirs"}', at=1)
    sink.add(chunk(1))  # number 1 is theirs: skipped, so the followers here read Redis from now on
    sink.add(chunk(2))
    await sink.drain()
    assert sink.ended
    sink.close()
    await here.finish(stream_id)
    expected = [chunk(0), b'{"type":"text-delta","id":"t","delta":"theirs"}', chunk(2)]
    assert await asyncio.wait_for(reader, 5) == expected
    assert await collect(here, stream_id) == expected


async def test_a_late_follower_replays_from_redis_then_takes_the_sink(
    stores: tuple[RedisStreamStore, RedisStreamStore],
) -> None:
    here, _ = stores
    stream_id = await here.start("chat", owner=None)
    sink = await here.sink(stream_id, at=0)
    for n in range(5):
        sink.add(chunk(n))
    await sink.drain()
    reader = asyncio.create_task(collect(here, stream_id, after=2))
    await asyncio.sleep(0.05)
    for n in range(5, 10):
        sink.add(chunk(n))
        await asyncio.sleep(0.005)
    await sink.drain()
    sink.close()
    await here.finish(stream_id)
    assert await asyncio.wait_for(reader, 5) == [chunk(n) for n in range(2, 10)]


async def test_a_local_follower_of_a_failed_sink_reads_the_error_ending(
    stores: tuple[RedisStreamStore, RedisStreamStore],
) -> None:
    here, there = stores
    stream_id = await here.start("chat", owner=None)
    sink = await here.sink(stream_id, at=0)
    sink.add(chunk(0))
    await sink.drain()
    reader = asyncio.create_task(collect(here, stream_id))
    await asyncio.sleep(0.02)
    await there.finish(stream_id)  # e.g. a dead-writer ending written elsewhere
    sink.add(chunk(1))
    with pytest.raises(Exception):  # noqa: B017
        await sink.drain()
    assert await asyncio.wait_for(reader, 5) == [chunk(0)]


async def test_a_local_follower_of_a_quiet_sink_ends_when_the_stream_expires(
    stores: tuple[RedisStreamStore, RedisStreamStore],
) -> None:
    here, _ = stores
    stream_id = await here.start("chat", owner=None)
    sink = await here.sink(stream_id, at=0)
    sink.add(chunk(0))
    await sink.drain()
    reader = asyncio.create_task(collect(here, stream_id))
    await asyncio.sleep(0.02)
    await here.redis.delete(f"{here.prefix}:stream:{stream_id}")  # as its TTL would
    assert await asyncio.wait_for(reader, 5) == [chunk(0)]
    assert not sink.ended  # the follower found out on its own, not from the sink
