"""The tight ``"word"``/``"line"`` loop (`_smooth_eager`) gives exactly the general loop's output.

The general loop with the RegExp chunkings ``/\\S+\\s+/`` and ``/\\n+/`` is Mastra's algorithm for
``"word"`` and ``"line"`` (Mastra's named chunkings are those patterns), so both must agree chunk
for chunk: text, ids, types, ``metadata`` and ``providerMetadata`` riding once, other chunks as
the same objects, and the flushed buffer before an upstream error.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
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
from agentstream.stream import smooth_stream

ALPHABET = st.sampled_from(
    [*"ab xy,.\n\t  \n", "\u3000", "\ufeff", "\x85", "\xa0", "漢", "😀", "\ud83d", "\ude00", "é"]
)
_PLAIN = st.text(st.sampled_from("ab c"), max_size=6)
TEXT = st.one_of(_PLAIN, _PLAIN, _PLAIN, st.text(ALPHABET, max_size=10))
"""Mostly printable text with spaces only (the loop's no-regex path), else anything."""
GENERAL = {"word": "/\\S+\\s+/", "line": "/\\n+/"}
TOOL = decode_chunk(
    {
        "type": "tool-call",
        "runId": "r",
        "from": "AGENT",
        "payload": {"toolCallId": "c", "toolName": "t", "args": {}},
    }
)


class Boom(Exception):
    pass


@st.composite
def events(draw: st.DrawFn) -> Any:
    roll = draw(st.integers(0, 29))
    if roll == 0:
        return TOOL
    if roll == 1:
        return "boom"
    cls, payload_cls = draw(
        st.sampled_from([(TextDelta, TextDeltaPayload)] * 3 + [(ReasoningDelta, ReasoningDeltaPayload)])
    )
    metadata = draw(st.sampled_from([None, None, None, {"m": 1}]))
    provider_metadata = draw(st.sampled_from([None, None, None, {"p": {"k": 2}}]))
    payload = payload_cls(
        id=draw(st.sampled_from(["a", "a", "a", "b"])),
        text=draw(TEXT),
        provider_metadata=provider_metadata,
    )
    return cls(run_id="r", from_=ChunkFrom.AGENT, payload=payload, metadata=metadata)


async def run(inputs: list[Any], chunking: str, delay: float | None) -> tuple[list[Any], str | None]:
    async def src() -> AsyncIterator[Any]:
        for item in inputs:
            if item == "boom":
                raise Boom("upstream failed")
            yield item

    async def no_sleep(_: float) -> None:
        await asyncio.sleep(0)

    out: list[Any] = []
    try:
        async for chunk in smooth_stream(delay_in_ms=delay, chunking=chunking, sleep=no_sleep)(src()):
            out.append(chunk)
    except Boom as exc:
        return out, str(exc)
    return out, None


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    inputs=st.lists(events(), max_size=30),
    kind=st.sampled_from(["word", "line"]),
    delay=st.sampled_from([None, 0]),
)
def test_eager_loop_matches_the_general_loop(inputs: list[Any], kind: str, delay: float | None) -> None:
    fast, fast_error = asyncio.run(run(inputs, kind, delay))
    general, general_error = asyncio.run(run(inputs, GENERAL[kind], delay))
    assert fast == general
    assert fast_error == general_error
    for a, b in zip(fast, general, strict=True):
        if a.type not in ("text-delta", "reasoning-delta"):
            assert a is b


@pytest.mark.parametrize("kind", ["word", "line"])
def test_long_text_in_small_deltas_comes_out_whole(kind: str) -> None:
    # A 200,000-character word (and line) spills into parts: still one piece, in order.
    text = "".join(chr(0x61 + i % 26) for i in range(200_000))
    inputs = [
        TextDelta(payload=TextDeltaPayload(id="t", text=text[i : i + 3])) for i in range(0, len(text), 3)
    ]
    inputs.append(TextDelta(payload=TextDeltaPayload(id="t", text=" \n")))
    out, error = asyncio.run(run(inputs, kind, None))
    assert error is None
    assert [c.payload.text for c in out] == [text + " \n"]


def test_a_space_after_a_cut_starts_the_next_piece() -> None:
    inputs = [TextDelta(payload=TextDeltaPayload(id="t", text=t)) for t in ["ab ", " x", "y "]]
    out, _ = asyncio.run(run(inputs, "word", None))
    assert [c.payload.text for c in out] == ["ab ", " xy "]


@pytest.mark.parametrize("tail", ["d e", "d ef", " e", "d  e", "de f g"])
def test_a_long_word_ends_in_a_delta_holding_two_spaces(tail: str) -> None:
    # The spilled parts of the long word lead the first piece of a delta cut without a regex.
    word = "w" * 5_000
    inputs = [
        TextDelta(payload=TextDeltaPayload(id="t", text=word[i : i + 7])) for i in range(0, len(word), 7)
    ]
    inputs.append(TextDelta(payload=TextDeltaPayload(id="t", text=tail)))
    fast, _ = asyncio.run(run(inputs, "word", None))
    general, _ = asyncio.run(run(inputs, GENERAL["word"], None))
    assert fast == general
    assert "".join(c.payload.text for c in fast) == word + tail
