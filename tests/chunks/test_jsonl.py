from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator

import pytest

from agentstream.chunks import (
    ChunkDecodeError,
    TextDelta,
    aencode_jsonl,
    aiter_jsonl,
    decode_chunk,
    encode_jsonl,
    iter_jsonl,
    write_jsonl,
)

LINES = [
    b'{"type":"text-delta","runId":"r","from":"AGENT","payload":{"id":"t","text":"a"}}\n',
    b"\n",
    b'{"type":"data-progress","data":{"pct":5}}\n',
]


def test_round_trip_sync_skips_blank_lines() -> None:
    chunks = list(iter_jsonl(LINES))
    assert [c.type for c in chunks] == ["text-delta", "data-progress"]
    out = io.BytesIO()
    assert write_jsonl(chunks, out) == 2
    written = out.getvalue().splitlines(keepends=True)
    assert [json.loads(line) for line in written] == [json.loads(LINES[0]), json.loads(LINES[2])]
    assert all(line.endswith(b"\n") for line in written)
    assert b"".join(encode_jsonl(chunks)) == out.getvalue()


def test_bad_line_names_its_number_after_the_good_ones() -> None:
    bad = [*LINES, b'{"type":"text-delta","runId":"r","from":"AGENT","payload":{"id":"t","text":1}}\n']
    seen = []
    with pytest.raises(ChunkDecodeError, match=r"^line 4: payload\.text: expected str, got int") as info:
        for chunk in iter_jsonl(bad):
            seen.append(chunk)
    assert len(seen) == 2 and info.value.line == 4


async def test_async_round_trip() -> None:
    async def lines() -> AsyncIterator[bytes]:
        for line in LINES:
            yield line

    chunks = [c async for c in aiter_jsonl(lines())]
    assert isinstance(chunks[0], TextDelta)

    async def source() -> AsyncIterator[TextDelta]:
        yield decode_chunk(LINES[0])  # type: ignore[misc]

    assert [json.loads(line) async for line in aencode_jsonl(source())] == [json.loads(LINES[0])]
