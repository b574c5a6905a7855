"""Serving stored UI chunks: the resume route's per-chunk path, against decoding and encoding again.

A response recorded in a stream store is served (the ``resume`` route, and the live answer that
follows the record) as SSE frames. Since issue 29 each stored chunk's bytes are framed as they
are (`agentstream.ai_sdk.Jobs.follow` yields `StoredUIChunk`); the reference, timed in the same
run on the same store, is what was done before: decode each chunk to a dict, encode it again.

For each store (``memory``; ``redis`` when ``$AGENTSTREAM_BENCH_REDIS_URL`` or the test server
of ``scripts/redis.sh`` answers) one finished stream of ``N`` chunks (a chat answer: start, text
deltas, a tool call, finish) is read from the start, framed, and dropped; CPU time per chunk
(``time.process_time``: the Redis server's own work is not in it), best of 5 or, with
``--cold``, one pass of each before anything else ran. Run:
``.venv/bin/python bench/bench_store_serve.py [--cold] [--chunks N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import msgspec

from agentstream.ai_sdk import Jobs, encode_sse, encode_ui_chunk
from agentstream.resumable import MemoryStreamStore, RedisStreamStore, StreamStore

REDIS_URL = os.environ.get("AGENTSTREAM_BENCH_REDIS_URL", "redis://127.0.0.1:56379/0")
_decode = msgspec.json.Decoder().decode


def ui_chunks(n: int) -> list[dict[str, Any]]:
    """A chat answer's UI chunks: mostly text deltas, with a step, a tool call and the finish."""
    head: list[dict[str, Any]] = [
        {"type": "start", "messageId": "m1"},
        {"type": "start-step"},
        {
            "type": "tool-input-available",
            "toolCallId": "c1",
            "toolName": "weather",
            "input": {"city": "Paris"},
        },
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"t": 21, "ok": True}},
        {"type": "text-start", "id": "t1"},
    ]
    tail: list[dict[str, Any]] = [
        {"type": "text-end", "id": "t1"},
        {"type": "finish-step"},
        {"type": "finish"},
    ]
    deltas = [
        {"type": "text-delta", "id": "t1", "delta": f"word{i % 97} "}
        for i in range(n - len(head) - len(tail))
    ]
    return head + deltas + tail


async def _stored_bytes(store: StreamStore, stream_id: str) -> AsyncIterator[Any]:
    async for frame in encode_sse(Jobs(store).follow(stream_id)):
        yield frame


async def _decoded_again(store: StreamStore, stream_id: str) -> AsyncIterator[Any]:
    async def decoded() -> AsyncIterator[Any]:
        async for raw in store.read(stream_id):
            yield _decode(raw)

    async for frame in encode_sse(decoded()):
        yield frame


async def _drain(frames: AsyncIterator[Any]) -> int:
    size = 0
    async for frame in frames:
        size += len(frame)
    return size


async def _record(store: StreamStore, chunks: list[dict[str, Any]]) -> str:
    stream_id = await store.start(f"chat:bench-{uuid.uuid4().hex}", owner=None)
    encoded = [encode_ui_chunk(c) for c in chunks]
    for i in range(0, len(encoded), 500):
        await store.append(stream_id, *encoded[i : i + 500])
    await store.finish(stream_id)
    return stream_id


async def _time(fn: Callable[[], Awaitable[int]], repeat: int) -> tuple[float, int]:
    best, size = float("inf"), 0
    for _ in range(repeat):
        start = time.process_time()
        size = await fn()
        best = min(best, time.process_time() - start)
    return best, size


async def _serve(
    make_store: Callable[[], StreamStore],
    chunks: list[dict[str, Any]],
    repeat: int,
    frames: Callable[[StreamStore, str], AsyncIterator[Any]],
) -> tuple[float, int]:
    """CPU seconds to serve a recorded stream with ``frames``, on a store client of its own (each
    path pays its own connection set-up in a cold pass)."""
    store = make_store()
    try:
        stream_id = await _record(store, chunks)
        return await _time(lambda: _drain(frames(store, stream_id)), repeat)
    finally:
        await store.aclose()


async def bench(
    name: str, make_store: Callable[[], StreamStore], chunks: list[dict[str, Any]], repeat: int
) -> None:
    ours, size = await _serve(make_store, chunks, repeat, _stored_bytes)
    ref, ref_size = await _serve(make_store, chunks, repeat, _decoded_again)
    assert size == ref_size, "the stored bytes and the re-encoded chunks differ"
    n = len(chunks)
    print(f"{name:<7} decode + encode again [reference] {ref / n * 1e6:7.2f} us/chunk")
    print(
        f"{name:<7} stored bytes, framed as they are   {ours / n * 1e6:7.2f} us/chunk   {ref / ours:5.2f}x reference"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold", action="store_true", help="one pass each, no warm-up")
    parser.add_argument("--chunks", type=int, default=20_000)
    args = parser.parse_args()
    repeat = 1 if args.cold else 5
    chunks = ui_chunks(args.chunks)
    how = "one cold pass" if args.cold else "best of 5"
    print(f"serving a recorded answer of {len(chunks):,} UI chunks as SSE ({how}, CPU time)")
    await bench("memory", MemoryStreamStore, chunks, repeat)

    def redis_store() -> StreamStore:
        return RedisStreamStore.from_url(REDIS_URL, prefix=f"bench-serve-{uuid.uuid4().hex}")

    probe = RedisStreamStore.from_url(REDIS_URL)
    try:
        await probe.redis.ping()
    except Exception as exc:  # any failure to connect means "no Redis here"
        print(f"note: redis at {REDIS_URL} unreachable ({exc.__class__.__name__}): redis figures skipped")
        return
    finally:
        await probe.aclose()
    await bench("redis", redis_store, chunks, repeat)


if __name__ == "__main__":
    asyncio.run(main())
