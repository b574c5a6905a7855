"""The shared reader of `RedisStreamStore`: one blocking ``XREAD`` per store for all its followers."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import socket
import subprocess
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from agentstream.resumable import RedisStreamStore
from agentstream.resumable._redis import MAX_CONNECTIONS
from agentstream.resumable._redis_follow import PULLS, Follow

HANG = 60  # seconds: only a guard against a hang, never what a test measures


def chunk(i: int) -> bytes:
    return json.dumps({"type": "text-delta", "id": "t1", "delta": f"w{i} "}).encode()


def make_store(
    url: str, *, block_ms: int = 50, name: str | None = None, **options: object
) -> RedisStreamStore:
    redis = Redis.from_url(url, max_connections=MAX_CONNECTIONS, client_name=name, **options)  # type: ignore[arg-type]
    return RedisStreamStore(redis, prefix=f"test-{uuid.uuid4().hex}", block_ms=block_ms)


@contextlib.asynccontextmanager
async def opened(
    url: str, *, block_ms: int = 50, name: str | None = None, **options: object
) -> AsyncIterator[RedisStreamStore]:
    """`make_store`, closed after the block."""
    store = make_store(url, block_ms=block_ms, name=name, **options)
    try:
        yield store
    finally:
        await store.aclose()


@pytest.fixture
async def admin(redis_url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_url)
    try:
        yield client
    finally:
        await client.aclose()


async def connections(admin: Redis, name: str) -> list[dict[str, str]]:
    """The server's view of the connections a store's client opened (by their client name)."""
    return [c for c in await admin.client_list() if c.get("name") == name]


async def until(condition: Callable[[], bool | Awaitable[bool]], what: str) -> None:
    """Wait for a condition the code under test reaches by itself (polled; guarded by HANG)."""

    async def poll() -> None:
        while True:
            met = condition()
            if await met if inspect.isawaitable(met) else met:
                return
            await asyncio.sleep(0.01)

    try:
        await asyncio.wait_for(poll(), HANG)
    except TimeoutError:
        pytest.fail(f"timed out waiting until {what}")


def follow_of(store: RedisStreamStore) -> Follow:
    assert store._follow is not None
    return store._follow


async def test_many_followers_of_many_streams_share_a_bounded_number_of_connections(
    redis_url: str, admin: Redis
) -> None:
    name = f"follow-{uuid.uuid4().hex[:12]}"
    async with opened(redis_url, name=name) as store:
        streams, per_stream, chunks = 50, 10, 20
        ids = [await store.start(f"chat-{s}", owner=None) for s in range(streams)]
        got: dict[int, list[bytes]] = {f: [] for f in range(streams * per_stream)}
        first = {f: asyncio.Event() for f in got}

        async def follow(f: int) -> None:
            async for c in store.read(ids[f % streams]):
                got[f].append(c)
                first[f].set()

        async with asyncio.TaskGroup() as group:
            for f in got:
                group.create_task(follow(f))
            for stream_id in ids:
                await store.append(stream_id, chunk(0))
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in first.values())), HANG)
            # 500 followers, all live: PULLS short reads, the multiplexer, and this test's writes.
            assert len(await connections(admin, name)) <= PULLS + 2
            for i in range(1, chunks):
                for stream_id in ids:
                    await store.append(stream_id, chunk(i))
            for stream_id in ids:
                await store.finish(stream_id)
        assert all(c == [chunk(i) for i in range(chunks)] for c in got.values())
        # The pool keeps every connection it ever opened: this is the most that were open at once.
        assert len(await connections(admin, name)) <= PULLS + 2


async def test_a_follower_joining_mid_stream_gets_the_rest_after_its_position(redis_url: str) -> None:
    async with opened(redis_url) as store:
        stream_id = await store.start("chat-a", owner=None)
        early = store.read(stream_id)
        await store.append(stream_id, chunk(0), chunk(1))
        assert [await anext(early), await anext(early)] == [chunk(0), chunk(1)]
        await store.append(stream_id, chunk(2), chunk(3), chunk(4))
        late = store.read(stream_id, after=3)
        assert await anext(late) == chunk(3)  # replayed from Redis, while `early` is live
        assert await anext(late) == chunk(4)
        await store.append(stream_id, chunk(5))
        await store.finish(stream_id)
        assert [c async for c in late] == [chunk(5)]
        assert [c async for c in early] == [chunk(i) for i in range(2, 6)]


async def test_a_follower_of_a_new_stream_wakes_the_blocked_multiplexer(redis_url: str, admin: Redis) -> None:
    # block_ms is ten minutes: the new follower is served within the HANG guard only because
    # registering its key interrupts the running XREAD (the wake key), not by its timeout.
    name = f"follow-{uuid.uuid4().hex[:12]}"
    async with opened(redis_url, block_ms=600_000, name=name, socket_timeout=None) as store:
        first, second = await store.start("chat-a", owner=None), await store.start("chat-b", owner=None)
        one = store.read(first)
        waiting = asyncio.ensure_future(anext(one))

        async def blocked() -> bool:
            return any(c["cmd"] == "xread" and "b" in c["flags"] for c in await connections(admin, name))

        await until(blocked, "the multiplexer blocks in XREAD over the first stream")
        two = store.read(second)
        reading = asyncio.ensure_future(anext(two))
        await until(lambda: follow_of(store).watched == 2, "the second stream is watched")
        await store.append(second, chunk(7))
        assert await asyncio.wait_for(reading, HANG) == chunk(7)
        await store.append(first, chunk(1))
        assert await asyncio.wait_for(waiting, HANG) == chunk(1)
        await one.aclose()
        await two.aclose()


async def test_closed_and_cancelled_readers_unwatch_their_streams_and_the_multiplexer_stops(
    redis_url: str,
) -> None:
    async with opened(redis_url) as store:
        a, b = await store.start("chat-a", owner=None), await store.start("chat-b", owner=None)
        await store.append(a, chunk(0))
        await store.append(b, chunk(0))
        closed, cancelled, other = store.read(a), store.read(b), store.read(b)
        for reader in (closed, cancelled, other):
            assert await anext(reader) == chunk(0)
        parked = [asyncio.ensure_future(anext(r)) for r in (closed, cancelled, other)]
        follow = follow_of(store)
        await until(lambda: follow.waiting == 3, "all three wait")
        assert follow.watched == 2
        parked[0].cancel()  # cancelled mid-wait, then closed
        with pytest.raises(asyncio.CancelledError):
            await parked[0]
        await closed.aclose()
        assert (follow.watched, follow.waiting) == (1, 2)  # stream a had one follower
        parked[1].cancel()
        with pytest.raises(asyncio.CancelledError):
            await parked[1]
        assert (follow.watched, follow.waiting) == (1, 1)  # stream b still has `other`
        parked[2].cancel()
        with pytest.raises(asyncio.CancelledError):
            await parked[2]
        assert (follow.watched, follow.waiting) == (0, 0)
        task = follow.task
        assert task is not None
        await asyncio.wait_for(task, HANG)  # idle for block_ms with nobody following: it stops
        assert follow.task is None and not follow.dead
        # The next follower starts it again.
        await store.append(b, chunk(1))
        again = store.read(b, after=1)
        assert await anext(again) == chunk(1)
        waiting = asyncio.ensure_future(anext(again))
        await until(lambda: follow.task is not None, "the multiplexer restarts")
        await store.append(b, chunk(2))
        assert await asyncio.wait_for(waiting, HANG) == chunk(2)
        await again.aclose()


async def test_followers_cancelled_while_replaying_all_end(redis_url: str) -> None:
    # Cancelled in the middle of their own reads (redis-py on Python 3.11 can drop such a
    # cancellation): every task still ends, and nothing stays watched.
    async with opened(redis_url) as store:
        stream_id = await store.start("chat-a", owner=None)
        for start in range(0, 3000, 500):
            await store.append(stream_id, *[chunk(i) for i in range(start, start + 500)])
        reading = asyncio.Event()
        counts = [0] * 200

        async def follow(f: int) -> None:
            async for _ in store.read(stream_id):
                counts[f] += 1
                if counts[f] == 100:
                    reading.set()

        tasks = [asyncio.create_task(follow(f)) for f in range(200)]
        await asyncio.wait_for(reading.wait(), HANG)
        for task in tasks:
            task.cancel()
        done, pending = await asyncio.wait(tasks, timeout=HANG)
        assert not pending and all(task.cancelled() for task in done)
        assert store._follow is None or store._follow.waiting == 0


async def test_an_expired_stream_ends_its_followers_and_only_them(redis_url: str) -> None:
    async with opened(redis_url, block_ms=20) as store:
        gone, alive = await store.start("chat-a", owner=None), await store.start("chat-b", owner=None)
        await store.append(gone, chunk(0))
        readers = [store.read(gone), store.read(gone)]
        survivor = store.read(alive)
        for reader in readers:
            assert await anext(reader) == chunk(0)
        ended = [asyncio.ensure_future(anext(r)) for r in readers]
        live = asyncio.ensure_future(anext(survivor))
        await store.redis.delete(store._stream_key(gone))  # its writer died: the key expired
        for waiting in ended:
            with pytest.raises(StopAsyncIteration):
                await asyncio.wait_for(waiting, HANG)
        assert not live.done()
        await store.append(alive, chunk(1))
        assert await asyncio.wait_for(live, HANG) == chunk(1)
        await survivor.aclose()


async def test_closing_the_store_stops_the_multiplexer_and_its_waiting_readers_raise(redis_url: str) -> None:
    store = make_store(redis_url, block_ms=600_000)
    stream_id = await store.start("chat-a", owner=None)
    reader = store.read(stream_id)
    waiting = asyncio.ensure_future(anext(reader))
    await until(lambda: store._follow is not None and store._follow.task is not None, "it follows")
    task = follow_of(store).task
    assert task is not None
    await store.aclose()
    assert task.done()
    with pytest.raises(RuntimeError, match="closed while its streams were followed"):
        await asyncio.wait_for(waiting, HANG)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def redis_server(port: int, directory: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A throwaway redis-server of this test's own, so it can be killed."""
    command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    process = subprocess.Popen([*command, "--dir", str(directory)], stdout=subprocess.DEVNULL)
    try:
        yield process
    finally:
        process.kill()
        process.wait(30)


async def test_a_killed_redis_makes_waiting_followers_raise_and_the_next_follower_restarts(
    redis_url: str, tmp_path: Path
) -> None:
    port = _free_port()
    url = f"redis://127.0.0.1:{port}/0"
    with redis_server(port, tmp_path) as server:
        store = make_store(url, block_ms=600_000, retry=Retry(NoBackoff(), 1))

        async def up() -> bool:
            with contextlib.suppress(Exception):
                return bool(await store.redis.ping())
            return False

        await until(up, "the private redis-server answers")
        try:
            a, b = await store.start("chat-a", owner=None), await store.start("chat-b", owner=None)
            readers = [store.read(a), store.read(a), store.read(b)]
            waiting = [asyncio.ensure_future(anext(r)) for r in readers]
            await until(lambda: store._follow is not None and store._follow.waiting == 3, "all three wait")
            first = follow_of(store)
            server.kill()
            server.wait(30)
            for reader in waiting:
                with pytest.raises(Exception) as raised:
                    await asyncio.wait_for(reader, HANG)
                assert "Connection" in type(raised.value).__name__ or "connect" in str(raised.value).lower()
            assert first.dead and first.task is None
            with redis_server(port, tmp_path):
                await until(up, "the restarted redis-server answers")
                stream_id = await store.start("chat-c", owner=None)
                again = store.read(stream_id)
                live = asyncio.ensure_future(anext(again))
                await until(lambda: store._follow is not first, "a new shared reader")
                await store.append(stream_id, chunk(0))
                assert await asyncio.wait_for(live, HANG) == chunk(0)
                await again.aclose()
        finally:
            await store.aclose()
