"""Writer liveness (`agentstream.resumable._liveness`): the readers of a stream whose writer stopped
(an error, a cancellation, a lease that ran out) end after its chunks, told so by `read_checked`."""

from __future__ import annotations

import asyncio

import pytest

from agentstream.resumable import (
    RedisStreamStore,
    StreamLostError,
    StreamStore,
    WriterLiveness,
    read_checked,
    writing,
)


def chunk(n: int) -> bytes:
    return f'{{"type":"text-delta","id":"t","delta":"{n}"}}'.encode()


async def _collect(store: StreamStore, stream_id: str) -> list[bytes]:
    return [c async for c in read_checked(store, stream_id)]


async def test_both_stores_track_writers(store: StreamStore) -> None:
    assert isinstance(store, WriterLiveness)


async def test_a_writer_that_fails_ends_its_readers_with_stream_lost(store: StreamStore) -> None:
    stream_id = await store.start("chat-a", owner=None)
    reader = asyncio.ensure_future(_collect(store, stream_id))
    quiet = asyncio.ensure_future(_quiet(store, stream_id))
    with pytest.raises(RuntimeError, match="the model failed"):
        async with writing(store, stream_id, lease_s=30):
            await store.append(stream_id, chunk(0), at=0)
            raise RuntimeError("the model failed")
    with pytest.raises(StreamLostError):
        await asyncio.wait_for(reader, 30)
    assert await asyncio.wait_for(quiet, 30) == [chunk(0)]  # `read` ends quietly, as before


async def _quiet(store: StreamStore, stream_id: str) -> list[bytes]:
    return [c async for c in store.read(stream_id)]


async def test_a_finished_stream_reads_to_its_end(store: StreamStore) -> None:
    stream_id = await store.start("chat-a", owner=None)
    async with writing(store, stream_id, lease_s=30):
        await store.append(stream_id, chunk(0), chunk(1), at=0)
        await store.finish(stream_id)
    assert await _collect(store, stream_id) == [chunk(0), chunk(1)]


async def test_a_cancelled_writer_with_dead_on_error_false_leaves_its_readers_waiting_for_the_lease(
    store: StreamStore,
) -> None:
    # A worker's turn cancelled at shutdown: another worker may take it over within the lease.
    stream_id = await store.start("chat-a", owner=None)
    held = asyncio.Event()

    async def write() -> None:
        async with writing(store, stream_id, lease_s=30, dead_on_error=False):
            await store.append(stream_id, chunk(0), at=0)
            held.set()
            await asyncio.Event().wait()

    task = asyncio.ensure_future(write())
    await asyncio.wait_for(held.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The next writer (a re-run) goes on where the stream is; its readers get everything.
    reader = asyncio.ensure_future(_collect(store, stream_id))
    async with writing(store, stream_id, lease_s=30):
        await store.append(stream_id, chunk(0), chunk(1), at=0)
        await store.finish(stream_id)
    assert await asyncio.wait_for(reader, 30) == [chunk(0), chunk(1)]


@pytest.mark.services("redis")
async def test_a_redis_writer_whose_lease_runs_out_ends_its_readers(redis_url: str) -> None:
    # A killed process stops refreshing its lease: modelled by a writer whose task is cancelled
    # without marking itself dead, on a lease of 0.3 s.
    store = RedisStreamStore.from_url(redis_url, prefix="lease-test", block_ms=20)
    try:
        stream_id = await store.start("chat-a", owner=None)
        held = asyncio.Event()

        async def write() -> None:
            async with store.writing(stream_id, lease_s=0.3, dead_on_error=False):
                await store.append(stream_id, chunk(0), at=0)
                held.set()
                await asyncio.Event().wait()

        task = asyncio.ensure_future(write())
        await asyncio.wait_for(held.wait(), 30)
        reader = asyncio.ensure_future(_collect(store, stream_id))
        task.cancel()
        with pytest.raises(StreamLostError):
            await asyncio.wait_for(reader, 30)
    finally:
        await store.aclose()


@pytest.mark.services("redis")
async def test_a_redis_stream_no_writer_has_claimed_yet_is_not_dead(redis_url: str) -> None:
    # A turn still queued for a worker: its readers wait (through many liveness checks) and then
    # get the answer once a writer writes it.
    store = RedisStreamStore.from_url(redis_url, prefix="queued-test", block_ms=20)
    try:
        stream_id = await store.start("chat-a", owner=None)
        reader = asyncio.ensure_future(_collect(store, stream_id))
        await asyncio.sleep(0.3)  # ~15 checks of the multiplexer
        assert not reader.done()
        async with store.writing(stream_id, lease_s=30):
            await store.append(stream_id, chunk(0), at=0)
            await store.finish(stream_id)
        assert await asyncio.wait_for(reader, 30) == [chunk(0)]
    finally:
        await store.aclose()


@pytest.mark.services("redis")
async def test_a_redis_writer_that_appends_refreshes_its_lease_without_the_beat(redis_url: str) -> None:
    # Under load (300 chats on one server) the periodic beat ran late and readers took live
    # writers for dead: every append of a writer holding the lease moves its deadline too.
    store = RedisStreamStore.from_url(redis_url, prefix="append-lease-test", block_ms=20)
    key = "append-lease-test:writer:{}"
    try:
        stream_id = await store.start("chat-a", owner=None)
        async with store.writing(stream_id, lease_s=30):
            first = int(await store.redis.get(key.format(stream_id)))
            await asyncio.sleep(0.05)  # Redis's clock moves on (ms resolution)
            await store.append(stream_id, chunk(0), at=0)
            refreshed = int(await store.redis.get(key.format(stream_id)))
            assert refreshed > first
        other = await store.start("chat-b", owner=None)
        with pytest.raises(RuntimeError):
            async with store.writing(other, lease_s=30):
                raise RuntimeError("the writer failed")
        await store.append(other, chunk(0), at=0)  # a late append after the writer left
        assert int(await store.redis.get(key.format(other))) == 0  # still dead
    finally:
        await store.aclose()
