"""The batched writes of a `RedisStreamStore` (`._redis_writes`): the appends of every stream made
in one loop iteration go in one script call, each with its own answer; a sink stops its writer as
soon as a write fails. Also the pool's hiredis packer (the same wire bytes) and the shared reader's
own reply parsing (RESP2 and RESP3)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.asyncio.connection import Connection
from redis.exceptions import DataError, ResponseError

from agentstream.ai_sdk import write_chunks
from agentstream.resumable import RedisStreamStore, StreamExpiredError, batched_sink
from agentstream.resumable._redis_pool import redis_client
from agentstream.resumable._redis_writes import Writes

pytestmark = pytest.mark.services("redis")


def chunk(n: int) -> bytes:
    return f'{{"type":"text-delta","id":"t","delta":"{n}"}}'.encode()


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[RedisStreamStore]:
    made = RedisStreamStore.from_url(redis_url, prefix=f"test-{uuid.uuid4().hex}", block_ms=50)
    try:
        yield made
    finally:
        await made.aclose()


def count_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The appends each script call of `Writes` carried, one entry per call."""
    calls: list[int] = []
    original = Writes._call

    async def call(self: Writes, batch: list[Any]) -> list[Any]:
        calls.append(len(batch))
        return await original(self, batch)

    monkeypatch.setattr(Writes, "_call", call)
    return calls


async def test_appends_of_many_streams_in_one_iteration_go_in_one_call(
    store: RedisStreamStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    streams = [await store.start(f"chat-{i}", owner=None) for i in range(20)]
    calls = count_calls(monkeypatch)
    await asyncio.gather(*(store.append(s, chunk(0), chunk(1), at=0) for s in streams))
    assert calls == [20]
    await asyncio.gather(*(store.append(s, chunk(1), chunk(2), at=1) for s in streams))  # 1 skipped
    assert calls == [20, 20]
    for s in streams:
        await store.finish(s)
        assert [c async for c in store.read(s)] == [chunk(0), chunk(1), chunk(2)]


async def test_appends_to_one_stream_are_applied_in_the_order_they_were_made(store: RedisStreamStore) -> None:
    stream_id = await store.start("chat-a", owner=None)
    await asyncio.gather(*(store.append(stream_id, chunk(n)) for n in range(10)))
    await store.finish(stream_id)
    assert [c async for c in store.read(stream_id)] == [chunk(n) for n in range(10)]


async def test_each_append_of_a_call_gets_its_own_answer(store: RedisStreamStore) -> None:
    good, finished, broken = [await store.start(f"chat-{i}", owner=None) for i in range(3)]
    await store.finish(finished)
    await store.redis.set(f"{store.prefix}:stream:{broken}", "not a stream")  # the script errs on it
    results = await asyncio.gather(
        store.append(good, chunk(0), at=0),
        store.append(finished, chunk(0), at=0),
        store.append(broken, chunk(0), at=0),
        store.append(good, chunk(2), at=2),  # a gap
        return_exceptions=True,
    )
    assert results[0] is None
    assert isinstance(results[1], StreamExpiredError)
    assert isinstance(results[2], ResponseError)
    assert isinstance(results[3], ValueError) and "gap" in str(results[3])
    assert await store.length(good) == 1


async def test_a_cancelled_append_that_was_not_sent_is_not_written(store: RedisStreamStore) -> None:
    stream_id = await store.start("chat-a", owner=None)
    append = asyncio.ensure_future(store.append(stream_id, chunk(0), at=0))
    await asyncio.sleep(0)  # queued, not sent: the writer's task has not run yet
    append.cancel()
    await asyncio.gather(append, return_exceptions=True)
    await store.append(stream_id, chunk(1), at=0)
    assert await store.length(stream_id) == 1


async def test_write_chunks_into_a_sink_writes_positionally(
    store: RedisStreamStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert batched_sink(store) is not None
    streams = [await store.start(f"chat-{i}", owner=None) for i in range(5)]
    calls = count_calls(monkeypatch)

    async def chunks(n: int) -> AsyncIterator[dict[str, Any]]:
        for i in range(n):
            await asyncio.sleep(0.001)
            yield {"type": "text-delta", "id": "t", "delta": str(i)}

    assert await asyncio.gather(*(write_chunks(store, s, chunks(20)) for s in streams)) == [20] * 5
    assert await write_chunks(store, streams[0], chunks(22), at=0) == 22  # 20 skipped, 2 written
    assert max(calls) > 1  # streams' chunks shared calls
    assert [await store.length(s) for s in streams] == [22, 20, 20, 20, 20]


async def test_a_failed_sink_write_cancels_a_waiting_producer(store: RedisStreamStore) -> None:
    stream_id = await store.start("chat-a", owner=None)
    await store.finish(stream_id)
    stopped = asyncio.Event()

    async def chunks() -> AsyncIterator[dict[str, Any]]:
        try:
            yield {"type": "start"}  # its write is refused while the producer waits below
            await asyncio.Event().wait()
            yield {"type": "finish"}
        finally:
            stopped.set()

    with pytest.raises(StreamExpiredError):
        await asyncio.wait_for(write_chunks(store, stream_id, chunks()), 10)
    assert stopped.is_set()


def test_the_pool_packs_commands_to_the_same_bytes_as_redis_py(redis_url: str) -> None:
    packing = redis_client(redis_url).connection_pool.make_connection()
    plain = Connection()
    commands: list[tuple[Any, ...]] = [
        ("SET", "k", b"v", 5, 1.5, "é", bytearray(b"ab"), memoryview(b"cd")),
        ("CONFIG GET", "maxmemory"),
        (b"CLIENT SETINFO", b"LIB-NAME", "x"),
        (
            "XREAD",
            "COUNT",
            512,
            "STREAMS",
            *(f"k{i}" for i in range(300)),
            *(b"0-%d" % i for i in range(300)),
        ),
    ]
    assert type(packing).__name__.startswith("HiredisPacking")
    for command in commands:
        assert b"".join(packing.pack_command(*command)) == b"".join(plain.pack_command(*command))
    for bad in (True, None, object()):
        with pytest.raises(DataError):
            packing.pack_command("SET", bad)


@pytest.mark.parametrize("protocol", [2, 3])
async def test_the_shared_reader_follows_on_either_protocol(redis_url: str, protocol: int) -> None:
    store = RedisStreamStore(
        Redis.from_url(redis_url, protocol=protocol), prefix=f"test-{uuid.uuid4().hex}", block_ms=50
    )
    try:
        stream_id = await store.start("chat-a", owner=None)

        async def write() -> None:
            for n in range(5):
                await asyncio.sleep(0.01)
                await store.append(stream_id, chunk(n), at=n)
            await store.finish(stream_id)

        writer = asyncio.ensure_future(write())
        assert [c async for c in store.read_checked(stream_id)] == [chunk(n) for n in range(5)]
        await writer
    finally:
        await store.aclose()
