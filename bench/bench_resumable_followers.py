"""Many followers of many streams: the shared reader of `RedisStreamStore` vs one ``XREAD`` each.

``N`` followers (default 500) follow ``S`` streams (default 50, so 10 each), all caught up and
waiting. Chunk 0 is appended to every stream; *first chunk* is the time from that append to a
follower holding the chunk (median and p90 over all followers). Then ``S`` writers append the
other ``D - 1`` chunks (default 40) one per call, as a model's deltas come, and finish;
*throughput* is chunks delivered to followers per second, from the first append to the last
follower done. Modes, interleaved over ``ROUNDS`` rounds in one run:

* ``per-follower`` (the reference): the reader before the shared one, kept here only as the
  reference: every follower blocks in its own ``XREAD`` and holds a pool connection;
* ``shared``: `RedisStreamStore.read`, one blocking ``XREAD`` per store fanned out in memory;
* ``memory``: `MemoryStreamStore` (no Redis at all), the floor.

Connections: what the Redis server lists for each mode's client at the end (the pool keeps every
connection it opened, so this is the most open at once). Redis: ``$AGENTSTREAM_BENCH_REDIS_URL``
(default the test server of ``scripts/redis.sh``). Run:
``.venv/bin/python bench/bench_resumable_followers.py [N] [S] [D]``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from redis.asyncio import Redis

from agentstream.resumable import MemoryStreamStore, RedisStreamStore, StreamStore
from agentstream.resumable._redis import MAX_CONNECTIONS

ROUNDS = 3
Reader = Callable[[str], AsyncIterator[bytes]]


async def per_follower_read(store: RedisStreamStore, stream_id: str) -> AsyncIterator[bytes]:
    """The follower of a stream as it was before the shared reader: its own blocking XREAD."""
    key = store._stream_key(stream_id)
    last: Any = "0-1"
    while True:
        answer: Any = await store.redis.xread({key: last}, count=512, block=store.block_ms)
        if not answer:
            if not await store.redis.exists(key):
                return
            continue
        for entry_id, fields in answer[0][1]:
            last = entry_id
            if b"end" in fields:
                return
            if b"c" in fields:
                yield fields[b"c"]


async def one_round(
    store: StreamStore, read: Reader, followers: int, streams: int, chunks: int
) -> dict[str, float]:
    ids = [await store.start(f"chat-{s}-{uuid.uuid4().hex}", owner=None) for s in range(streams)]
    appended: dict[str, float] = {}
    firsts: list[float] = []
    received = 0
    ready = asyncio.Event()
    started = 0

    async def follow(stream_id: str) -> None:
        nonlocal received, started
        reader = read(stream_id)
        step = asyncio.ensure_future(anext(reader))
        started += 1
        if started == followers:
            ready.set()
        first = True
        while True:
            try:
                await step
            except StopAsyncIteration:
                return
            if first:
                firsts.append(time.perf_counter() - appended[stream_id])
                first = False
            received += 1
            step = asyncio.ensure_future(anext(reader))

    async def write(stream_id: str) -> None:
        for i in range(1, chunks):
            await store.append(stream_id, b'{"type":"text-delta","id":"t","delta":"w%d "}' % i)
        await store.finish(stream_id)

    tasks = [asyncio.create_task(follow(ids[f % streams])) for f in range(followers)]
    await ready.wait()
    await asyncio.sleep(1)  # every follower has caught up (nothing to read yet) and waits
    start = time.perf_counter()
    for stream_id in ids:
        appended[stream_id] = time.perf_counter()
        await store.append(stream_id, b'{"type":"text-delta","id":"t","delta":"w0 "}')
    await asyncio.gather(*(write(stream_id) for stream_id in ids))
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - start
    assert received == followers * chunks, (received, followers * chunks)
    firsts.sort()
    return {
        "p50": statistics.median(firsts),
        "p90": firsts[int(len(firsts) * 0.9)],
        "throughput": received / elapsed,
    }


async def count_connections(admin: Redis, name: str) -> int:
    return sum(1 for c in await admin.client_list() if c.get("name") == name)


async def main() -> None:
    given = [int(a) for a in sys.argv[1:4]]
    followers, streams, chunks = given + [500, 50, 40][len(given) :]
    url = os.environ.get("AGENTSTREAM_BENCH_REDIS_URL", "redis://127.0.0.1:56379/0")
    admin = Redis.from_url(url)
    try:
        await admin.ping()
    except Exception as exc:
        sys.exit(f"bench_resumable_followers: Redis unreachable at {url} ({exc}); run scripts/redis.sh")
    names = {"per-follower": f"bench-pf-{uuid.uuid4().hex[:8]}", "shared": f"bench-sh-{uuid.uuid4().hex[:8]}"}
    redis_stores = {
        mode: RedisStreamStore(
            Redis.from_url(url, max_connections=MAX_CONNECTIONS, client_name=name),
            prefix=f"bench-{uuid.uuid4().hex}",
        )
        for mode, name in names.items()
    }
    memory = MemoryStreamStore()
    modes: dict[str, tuple[StreamStore, Reader]] = {
        "per-follower": (
            redis_stores["per-follower"],
            lambda s: per_follower_read(redis_stores["per-follower"], s),
        ),
        "shared": (redis_stores["shared"], lambda s: redis_stores["shared"].read(s)),
        "memory": (memory, lambda s: memory.read(s)),
    }
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    for store, read in modes.values():  # warm-up
        await one_round(store, read, min(followers, 50), min(streams, 5), 5)
    for _ in range(ROUNDS):
        for mode, (store, read) in modes.items():
            results[mode].append(await one_round(store, read, followers, streams, chunks))
    print(f"{followers} followers of {streams} streams, {chunks} chunks each; medians of {ROUNDS} rounds")
    print(
        f"{'mode':<13} {'first chunk p50':>16} {'p90':>10} {'vs ref':>7} {'chunks/s':>10} {'vs ref':>7} {'conns':>6}"
    )
    ref = {
        key: statistics.median(r[key] for r in results["per-follower"])
        for key in ("p50", "p90", "throughput")
    }
    for mode in modes:
        got = {key: statistics.median(r[key] for r in results[mode]) for key in ("p50", "p90", "throughput")}
        conns = str(await count_connections(admin, names[mode])) if mode in names else "-"
        print(
            f"{mode:<13} {got['p50'] * 1e3:13.2f} ms {got['p90'] * 1e3:7.2f} ms {got['p50'] / ref['p50']:6.2f}x"
            f" {got['throughput']:10.0f} {got['throughput'] / ref['throughput']:6.2f}x {conns:>6}"
        )
    for store in redis_stores.values():
        await store.aclose()
    await admin.aclose()


if __name__ == "__main__":
    asyncio.run(main())
