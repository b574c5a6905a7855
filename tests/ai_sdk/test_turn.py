"""`write_chunks`: UI chunks written to a stream store, positionally."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from agentstream.ai_sdk import write_chunks
from agentstream.resumable import MemoryStreamStore


async def test_an_in_process_store_holds_each_chunk_before_the_next_is_produced() -> None:
    # Readers of a stream in this process see a chunk as soon as it is produced: no batch waits
    # for a second task to write it.
    store = MemoryStreamStore()
    stream_id = await store.start("chat-a", owner=None)
    lengths: list[int] = []

    async def chunks() -> AsyncIterator[Any]:
        for i in range(3):
            lengths.append(await store.length(stream_id))
            yield {"type": "text-delta", "id": "t1", "delta": f"w{i} "}

    assert await write_chunks(store, stream_id, chunks()) == 3
    assert lengths == [0, 1, 2]
    await store.finish(stream_id)
    stored = [json.loads(c) async for c in store.read(stream_id)]
    assert [c["delta"] for c in stored] == ["w0 ", "w1 ", "w2 "]


async def test_positions_follow_at_in_an_in_process_store() -> None:
    # A re-run from chunk 1 skips what is there (the chunk already written is not written twice).
    store = MemoryStreamStore()
    stream_id = await store.start("chat-a", owner=None)
    await store.append(stream_id, b'{"type":"start"}', b'{"type":"start-step"}')

    async def chunks() -> AsyncIterator[Any]:
        yield {"type": "start-step"}
        yield {"type": "finish-step"}

    assert await write_chunks(store, stream_id, chunks(), at=1) == 2
    assert await store.length(stream_id) == 3
