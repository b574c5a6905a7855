"""The resume route serves each stored UI chunk as the bytes that were stored (issue 29).

A chunk is encoded once, when it is written; readers frame those bytes as they are. Stored JSON
that a decode and encode would change (spacing, a lone surrogate's escape, key order, a number's
spelling) therefore comes out byte for byte, on Redis as in memory.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.applications import Starlette

from agentstream.ai_sdk import DONE_FRAME, StoredUIChunk, encode_sse_frame, encode_ui_chunk
from agentstream.resumable import (
    ActiveStream,
    MemoryStreamStore,
    RedisStreamStore,
    StreamStore,
    chat_stream_key,
)
from agentstream.server import resume_route

STORED = [
    b'{"type":"start"}',
    b'{ "type": "text-delta", "id": "t1", "delta": "\\ud83d" }',
    b'{"delta":"1.50e2","type":"text-delta","id":"t1","n":1.50e2}',
    b'{"type":"finish"}',
]


class FinishingOnRead:
    """``store`` for the resume route, finishing the stream once its reader starts: the response
    ends after the stored chunks (httpx's ASGI transport hands over a response only when it ended)."""

    def __init__(self, store: StreamStore) -> None:
        self.store = store

    async def active(self, chat_id: str) -> ActiveStream | None:
        return await self.store.active(chat_id)

    async def read(self, stream_id: str, *, after: int = 0) -> AsyncIterator[bytes]:
        await self.store.finish(stream_id)
        async for raw in self.store.read(stream_id, after=after):
            yield raw


async def _resume_body(store: StreamStore, chat_id: str, after: int = 0) -> bytes:
    app = Starlette(routes=[resume_route(store, "/chat/{chat_id}/stream", heartbeat_ms=0)])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        response = await client.get(f"/chat/{chat_id}/stream", params={"after": after})
    assert response.status_code == 200
    return response.content


def _frames(chunks: list[bytes]) -> bytes:
    return b"".join(b"data: " + raw + b"\n\n" for raw in chunks) + DONE_FRAME


async def _served(store: StreamStore, chat_id: str, after: int = 0) -> bytes:
    stream_id = await store.start(chat_stream_key(chat_id), owner=None)
    await store.append(stream_id, *STORED)
    return await _resume_body(FinishingOnRead(store), chat_id, after)  # type: ignore[arg-type]


async def test_memory_store_chunks_are_served_as_stored() -> None:
    assert await _served(MemoryStreamStore(), "c1") == _frames(STORED)


async def test_after_skips_stored_chunks_byte_for_byte() -> None:
    assert await _served(MemoryStreamStore(), "c2", after=2) == _frames(STORED[2:])


@pytest.mark.services("redis")
async def test_redis_store_chunks_are_served_as_stored(redis_url: str) -> None:
    store = RedisStreamStore.from_url(redis_url, prefix=f"test-bytes-{uuid.uuid4().hex}")
    try:
        assert await _served(store, f"c-{uuid.uuid4().hex}") == _frames(STORED)
    finally:
        await store.aclose()


@pytest.mark.parametrize("chunk", [{"type": "text-delta", "id": "t", "delta": "é😀"}, {"type": "finish"}])
def test_a_stored_chunk_frames_like_the_chunk_it_was(chunk: dict[str, object]) -> None:
    assert encode_sse_frame(StoredUIChunk(encode_ui_chunk(chunk))) == encode_sse_frame(chunk)
    assert encode_ui_chunk(StoredUIChunk(encode_ui_chunk(chunk))) == encode_ui_chunk(chunk)
