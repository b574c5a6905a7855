"""The Redis stream store alone: N paced writers (``write_chunks``, one chunk every 10 ms) and one
follower each, in one process, against Redis at ``$AGENTSTREAM_BENCH_REDIS_URL`` (default: the test
server, db 7). Prints the process's CPU µs per chunk written and read, and the followers' own pulls.

Run before/after on two trees with their own ``src``: ``PYTHONPATH=<tree>/src python bench/bench_redis_store.py``
(see docs/decisions/issue-29-redis-batching.md)."""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from agentstream.ai_sdk import write_chunks
from agentstream.resumable import RedisStreamStore, _redis_follow

REDIS_URL = os.environ.get("AGENTSTREAM_BENCH_REDIS_URL", "redis://127.0.0.1:56379/7")


async def run(streams: int, chunks: int) -> tuple[float, int]:
    pulls = 0
    original = _redis_follow.Follow._pull

    async def counted(self: Any, key: str, last: bytes) -> Any:
        nonlocal pulls
        pulls += 1
        return await original(self, key, last)

    _redis_follow.Follow._pull = counted  # type: ignore[method-assign]
    store = RedisStreamStore.from_url(REDIS_URL, prefix=f"bench-{uuid.uuid4().hex}")
    ids = [await store.start(f"chat-{i}", owner=None) for i in range(streams)]

    async def produce() -> AsyncIterator[dict[str, Any]]:
        for n in range(chunks):
            await asyncio.sleep(0.01)
            yield {"type": "text-delta", "id": "t", "delta": f"w{n} "}

    async def writer(stream_id: str) -> None:
        await write_chunks(store, stream_id, produce())
        await store.finish(stream_id)

    async def reader(stream_id: str) -> int:
        return sum([1 async for _ in store.read(stream_id)])

    start = time.process_time()
    results = await asyncio.gather(*(writer(s) for s in ids), *(reader(s) for s in ids))
    cpu = time.process_time() - start
    assert results[streams:] == [chunks] * streams, "a follower missed chunks"
    await store.aclose()
    _redis_follow.Follow._pull = original  # type: ignore[method-assign]
    return cpu / (streams * chunks), pulls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=300)
    parser.add_argument("--chunks", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    best = float("inf")
    for round_no in range(1, args.rounds + 1):
        per_chunk, pulls = asyncio.run(run(args.streams, args.chunks))
        best = min(best, per_chunk)
        print(f"round {round_no}: {per_chunk * 1e6:6.1f} µs CPU per chunk, {pulls} follower pulls")
    print(
        f"best of {args.rounds}: {best * 1e6:.1f} µs CPU per chunk ({args.streams} streams x {args.chunks} chunks)"
    )


if __name__ == "__main__":
    main()
