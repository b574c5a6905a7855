"""The `StreamStore` contract, run against every backend (memory, Redis)."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from agentstream.resumable import (
    MemoryStreamStore,
    RedisStreamStore,
    StreamExpiredError,
    StreamOwnerError,
    StreamStore,
    in_process_appender,
    stream_store_from_url,
)


def chunk(i: int) -> bytes:
    return json.dumps({"type": "text-delta", "id": "t1", "delta": f"w{i} "}).encode()


async def collect(store: StreamStore, stream_id: str, after: int = 0) -> list[bytes]:
    return [c async for c in store.read(stream_id, after=after)]


async def test_chunks_come_back_in_order_and_a_finished_stream_is_not_active(store: StreamStore) -> None:
    stream_id = await store.start("chat-a", owner="alice")
    assert await store.active("chat-a") is not None
    for i in range(600):  # more than one XREAD batch
        await store.append(stream_id, chunk(i))
    await store.finish(stream_id)
    assert await store.active("chat-a") is None
    # A reader that found the stream just before it finished still gets all of it.
    assert await collect(store, stream_id) == [chunk(i) for i in range(600)]
    assert await collect(store, stream_id, after=598) == [chunk(598), chunk(599)]
    assert await collect(store, stream_id, after=600) == []


async def test_active_names_the_stream_and_its_owner(store: StreamStore) -> None:
    assert await store.active("chat-a") is None
    stream_id = await store.start("chat-a", owner="alice")
    found = await store.active("chat-a")
    assert found is not None and (found.stream_id, found.owner) == (stream_id, "alice")
    anonymous = await store.start("chat-b", owner=None)
    found = await store.active("chat-b")
    assert found is not None and (found.stream_id, found.owner) == (anonymous, None)


async def test_a_follower_sees_the_rest_as_it_is_written(store: StreamStore) -> None:
    stream_id = await store.start("chat-a", owner=None)
    await store.append(stream_id, chunk(0))
    got: list[bytes] = []
    caught_up = asyncio.Event()

    async def follow() -> None:
        async for c in store.read(stream_id):
            got.append(c)
            if len(got) == 1:
                caught_up.set()

    async with asyncio.TaskGroup() as group:
        group.create_task(follow())
        await caught_up.wait()  # the reader has replayed what existed and now waits for more
        for i in range(1, 5):
            await store.append(stream_id, chunk(i))
        await store.finish(stream_id)
    assert got == [chunk(i) for i in range(5)]


async def test_a_new_response_replaces_the_chats_active_stream(store: StreamStore) -> None:
    first = await store.start("chat-a", owner="alice")
    second = await store.start("chat-a", owner="alice")
    found = await store.active("chat-a")
    assert found is not None and found.stream_id == second
    await store.finish(first)  # the old one finishing must not hide the new one
    found = await store.active("chat-a")
    assert found is not None and found.stream_id == second


async def test_another_owner_cannot_take_over_an_active_chat(store: StreamStore) -> None:
    stream_id = await store.start("chat-a", owner="alice")
    with pytest.raises(StreamOwnerError, match="chat-a"):
        await store.start("chat-a", owner="mallory")
    with pytest.raises(StreamOwnerError):
        await store.start("chat-a", owner=None)
    await store.finish(stream_id)
    await store.start("chat-a", owner="mallory")  # once finished, the id is free


async def test_appending_to_an_unknown_stream_is_an_error(store: StreamStore) -> None:
    with pytest.raises(StreamExpiredError, match="nope"):
        await store.append("nope", chunk(0))
    assert await collect(store, "nope") == []


async def test_memory_streams_expire_ttl_after_their_last_write() -> None:
    now = [0.0]
    store = MemoryStreamStore(ttl_s=10, clock=lambda: now[0])
    stream_id = await store.start("chat-a", owner=None)
    now[0] = 9.0
    await store.append(stream_id, chunk(0))  # refreshes the TTL
    now[0] = 18.0
    assert await store.active("chat-a") is not None
    now[0] = 19.0
    assert await store.active("chat-a") is None
    assert await collect(store, stream_id) == []
    with pytest.raises(StreamExpiredError):
        await store.append(stream_id, chunk(1))


async def test_memory_reader_of_an_expiring_stream_ends() -> None:
    now = [0.0]
    store = MemoryStreamStore(ttl_s=10, clock=lambda: now[0])
    stream_id = await store.start("chat-a", owner=None)
    await store.append(stream_id, chunk(0))
    reader = store.read(stream_id)
    assert await anext(reader) == chunk(0)
    waiting = asyncio.ensure_future(anext(reader))
    await asyncio.sleep(0)
    now[0] = 11.0
    await store.start("other", owner=None)  # drops expired streams, waking their readers
    with pytest.raises(StopAsyncIteration):
        await waiting


async def test_redis_keys_carry_the_ttl(redis_url: str) -> None:
    store = RedisStreamStore.from_url(redis_url, prefix="ttl-test", ttl_s=30)
    try:
        stream_id = await store.start("chat-a", owner=None)
        await store.append(stream_id, chunk(0))
        for key in ("ttl-test:chat:chat-a", f"ttl-test:stream:{stream_id}"):
            assert 0 < await store.redis.pttl(key) <= 30_000
        await store.finish(stream_id)
        assert await store.redis.exists("ttl-test:chat:chat-a") == 0
        assert 0 < await store.redis.pttl(f"ttl-test:stream:{stream_id}") <= 30_000
    finally:
        await store.redis.delete(f"ttl-test:stream:{stream_id}")
        await store.aclose()


async def test_redis_reader_of_an_expired_stream_ends(redis_url: str) -> None:
    # The writer died without finishing: once the key expires, a follower stops waiting.
    store = RedisStreamStore.from_url(redis_url, prefix="expire-test", ttl_s=60, block_ms=20)
    try:
        stream_id = await store.start("chat-a", owner=None)
        await store.append(stream_id, chunk(0))
        reader = store.read(stream_id)
        assert await anext(reader) == chunk(0)
        await store.redis.delete(f"expire-test:stream:{stream_id}", "expire-test:chat:chat-a")
        with pytest.raises(StopAsyncIteration):
            await anext(reader)
        with pytest.raises(StreamExpiredError):
            await store.append(stream_id, chunk(1))  # not silently recreated
    finally:
        await store.aclose()


def test_store_from_url() -> None:
    assert isinstance(stream_store_from_url("memory"), MemoryStreamStore)
    assert isinstance(stream_store_from_url("redis://127.0.0.1:1/0"), RedisStreamStore)
    with pytest.raises(ValueError, match="expected 'memory' or a redis://"):
        stream_store_from_url("postgres://x")
    with pytest.raises(ValueError, match="ttl_s"):
        MemoryStreamStore(ttl_s=0)


async def test_one_append_may_carry_several_chunks(store: StreamStore) -> None:
    stream_id = await store.start("chat-a", owner=None)
    await store.append(stream_id, chunk(0), chunk(1), chunk(2))
    await store.append(stream_id, chunk(3))
    await store.finish(stream_id)
    assert await collect(store, stream_id) == [chunk(i) for i in range(4)]
    assert await collect(store, stream_id, after=1) == [chunk(i) for i in range(1, 4)]


async def test_positional_appends_skip_chunks_already_written(store: StreamStore) -> None:
    stream_id = await store.start("chat-a", owner=None)
    assert await store.length(stream_id) == 0
    await store.append(stream_id, chunk(0), chunk(1), chunk(2), at=0)
    # A re-run (a worker took the turn over) writes 0..4 again: only 3 and 4 are new.
    await store.append(stream_id, chunk(0), chunk(1), at=0)
    await store.append(stream_id, *[chunk(i) for i in range(5)], at=0)
    await store.append(stream_id, chunk(4), chunk(5), at=4)
    assert await store.length(stream_id) == 6
    await store.append(stream_id, chunk(6))  # without `at`: at the end, as before
    await store.finish(stream_id)
    assert await store.length(stream_id) == 7
    assert await collect(store, stream_id) == [chunk(i) for i in range(7)]


async def test_a_positional_append_may_not_leave_a_gap(store: StreamStore) -> None:
    stream_id = await store.start("chat-a", owner=None)
    await store.append(stream_id, chunk(0), at=0)
    with pytest.raises(ValueError, match=r"at=3 would leave a gap .* which has 1 chunks"):
        await store.append(stream_id, chunk(3), at=3)
    with pytest.raises(ValueError, match="at: expected a chunk number"):
        await store.append(stream_id, chunk(1), at=-1)
    assert await store.length(stream_id) == 1


async def test_a_finished_or_unknown_stream_takes_no_more_chunks(store: StreamStore) -> None:
    stream_id = await store.start("chat-a", owner=None)
    await store.append(stream_id, chunk(0), at=0)
    await store.finish(stream_id)
    # A worker that re-runs a turn another already finished writes nothing (and learns it).
    with pytest.raises(StreamExpiredError, match="finished"):
        await store.append(stream_id, chunk(0), chunk(1), at=0)
    with pytest.raises(StreamExpiredError):
        await store.append(stream_id, chunk(1))
    with pytest.raises(StreamExpiredError):
        await store.length("nope")
    assert await collect(store, stream_id) == [chunk(0)]


async def test_redis_a_stream_is_written_and_finished_by_another_process(redis_url: str) -> None:
    """The server claims the chat; a worker (its own client, no shared state) writes and finishes."""
    prefix = f"test-{uuid.uuid4().hex}"
    server = RedisStreamStore.from_url(redis_url, prefix=prefix, block_ms=20)
    worker = RedisStreamStore.from_url(redis_url, prefix=prefix, block_ms=20)
    try:
        stream_id = await server.start("chat-a", owner="alice")
        await worker.append(stream_id, chunk(0), chunk(1), at=0)
        assert 0 < await server.redis.pttl(f"{prefix}:chat:chat-a")
        await worker.finish(stream_id)
        assert await server.active("chat-a") is None  # the worker cleared the chat's pointer
        assert await collect(server, stream_id) == [chunk(0), chunk(1)]
    finally:
        await server.aclose()
        await worker.aclose()


async def test_memory_a_reader_cancelled_while_it_waits_leaves_the_others_waiting() -> None:
    # Readers wait on futures of their own: cancelling one must not wake or cancel another.
    store = MemoryStreamStore()
    stream_id = await store.start("chat-a", owner=None)
    got: list[bytes] = []

    async def follow() -> None:
        async for c in store.read(stream_id):
            got.append(c)

    cancelled, kept = asyncio.create_task(follow()), asyncio.create_task(follow())
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.gather(cancelled, return_exceptions=True)
    await store.append(stream_id, chunk(0))
    await store.finish(stream_id)
    await asyncio.wait_for(kept, 5)
    assert got == [chunk(0)]


async def test_memory_append_now_writes_before_it_returns_and_only_for_the_stores_own_append() -> None:
    store = MemoryStreamStore()
    stream_id = await store.start("chat-a", owner=None)
    append_now = in_process_appender(store)
    assert append_now is not None
    append_now(stream_id, chunk(0), at=0)
    append_now(stream_id, chunk(0), chunk(1), at=0)  # positional: chunk 0 is skipped
    assert await store.length(stream_id) == 2

    class Counting(MemoryStreamStore):
        async def append(self, stream_id: str, *chunks: bytes, at: int | None = None) -> None:
            await super().append(stream_id, *chunks, at=at)

    # A subclass that changes append (fault injection, metering) keeps every write going through it.
    assert in_process_appender(Counting()) is None
    assert in_process_appender(object()) is None
