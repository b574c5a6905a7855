"""Property tests: whatever the deltas and the chunking, smoothing only re-cuts text.

* the text of every buffer (type, id) comes out complete and in order (compared as UTF-16, since a
  surrogate pair split over two deltas comes out joined into one character);
* buffers come out in the order they went in;
* no other chunk overtakes text that came before it, and other chunks come out as the same objects.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentstream.chunks import (
    ChunkFrom,
    ReasoningDelta,
    ReasoningDeltaPayload,
    TextDelta,
    TextDeltaPayload,
    decode_chunk,
)
from agentstream.stream import js_regex, smooth_stream

ALPHABET = st.sampled_from(
    [
        *"ab xy,.\n\t",
        "\u3000",
        "\ufeff",
        "\x85",
        "漢",
        "こ",
        "ん",
        "😀",
        "\u200d",
        "\u0301",
        "\ud83d",
        "\ude00",
        "é",
    ]
)


def _sentence(buffer: str) -> str | None:
    i = buffer.find(".")
    return None if i < 0 else buffer[: i + 1]


def _chunkings() -> list[Any]:
    modes: list[Any] = [
        "word",
        "line",
        "grapheme",
        js_regex(r"[^,]*,\s*"),
        js_regex(r"\S+\s+", "y"),
        _sentence,
    ]
    try:
        from agentstream.stream import Segmenter

        modes += [Segmenter("ja", "word"), Segmenter("en", "grapheme"), Segmenter("en", "sentence")]
    except ImportError:  # pragma: no cover - without the icu extra
        pass
    return modes


CHUNKINGS = _chunkings()

TOOL = decode_chunk(
    {
        "type": "tool-call",
        "runId": "r",
        "from": "AGENT",
        "payload": {"toolCallId": "c", "toolName": "t", "args": {}},
    }
)


@st.composite
def events(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return decode_chunk({"type": "text-start", "runId": "r", "from": "AGENT", "payload": {"id": "a"}})
    kind = draw(st.sampled_from(["text", "text", "text", "reasoning"]))
    pid = draw(st.sampled_from(["a", "a", "b"]))
    text = draw(st.text(ALPHABET, max_size=12))
    if kind == "text":
        return TextDelta(run_id="r", from_=ChunkFrom.AGENT, payload=TextDeltaPayload(id=pid, text=text))
    return ReasoningDelta(run_id="r", from_=ChunkFrom.AGENT, payload=ReasoningDeltaPayload(id=pid, text=text))


def utf16(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass")


def normalise(chunks: list[Any]) -> list[tuple[Any, ...]]:
    """Text merged per consecutive buffer (empty text dropped); other chunks by identity."""
    out: list[tuple[Any, ...]] = []
    for chunk in chunks:
        if chunk.type in ("text-delta", "reasoning-delta"):
            if not chunk.payload.text:
                continue
            key = (chunk.type, chunk.payload.id)
            if out and out[-1][0] == "text" and out[-1][1] == key:
                out[-1] = ("text", key, out[-1][2] + utf16(chunk.payload.text))
            else:
                out.append(("text", key, utf16(chunk.payload.text)))
        else:
            out.append(("chunk", id(chunk)))
    return out


async def smooth(
    inputs: list[Any], chunking: Any, hold_back: bool, delay: float | None, max_lag: float | None
) -> list[Any]:
    async def src() -> AsyncIterator[Any]:
        for item in inputs:
            yield item

    async def no_sleep(_: float) -> None:
        await asyncio.sleep(0)

    transform = smooth_stream(
        delay_in_ms=delay, chunking=chunking, hold_back=hold_back, sleep=no_sleep, max_lag_ms=max_lag
    )
    return [c async for c in transform(src())]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    inputs=st.lists(st.one_of(events(), st.just(TOOL)), max_size=25),
    mode=st.integers(0, len(CHUNKINGS) - 1),
    hold_back=st.booleans(),
    timing=st.sampled_from([(None, None), (0, None), (0, 0), (5, 1000)]),
)
def test_smoothing_only_recuts_text(
    inputs: list[Any], mode: int, hold_back: bool, timing: tuple[Any, Any]
) -> None:
    out = asyncio.run(smooth(inputs, CHUNKINGS[mode], hold_back, *timing))
    assert normalise(out) == normalise(inputs)
    for chunk in out:
        assert chunk.type in ("text-delta", "reasoning-delta") or any(chunk is c for c in inputs)
