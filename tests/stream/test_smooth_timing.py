"""Pacing in virtual time: the producer is never throttled, ``max_lag_ms`` catches up, ``hold_back`` waits.

The tests run on looptime's fake loop clock (``@pytest.mark.looptime``): it only moves when every task
waits for a timer, so ``asyncio.sleep``, ``pace`` (the default ``sleep`` of ``smooth_stream``) and ``loop.time()``
are exact and instant.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

import looptime
import pytest

from agentstream.chunks import ChunkFrom, TextDelta, TextDeltaPayload
from agentstream.stream import Segmenter, smooth_stream
from tests import _services

pytestmark = pytest.mark.looptime(noop_cycles=0)


def td(text: str, id: str = "t1") -> TextDelta:
    return TextDelta(run_id="r", from_=ChunkFrom.AGENT, payload=TextDeltaPayload(id=id, text=text))


class Producer:
    """Yields ``deltas`` one every ``interval`` seconds and records when it finished."""

    def __init__(self, deltas: list[str], interval: float) -> None:
        self.deltas = deltas
        self.interval = interval
        self.done_at: float | None = None

    async def __call__(self) -> AsyncIterator[TextDelta]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        for text in self.deltas:
            yield td(text)
            await asyncio.sleep(self.interval)
        self.done_at = loop.time() - start


async def consume(transform: Any, producer: Producer) -> list[tuple[float, str]]:
    """``(seconds since the first pull, text)`` of every piece the transform emits."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    return [(loop.time() - start, c.payload.text) async for c in transform(producer())]


async def test_the_loop_clock_is_virtual() -> None:
    loop = asyncio.get_running_loop()
    assert isinstance(loop, looptime.LoopTimeEventLoop) and loop.looptime_on
    start = loop.time()
    await asyncio.sleep(5)
    assert loop.time() - start == 5


async def test_delay_paces_the_consumer_but_not_the_producer() -> None:
    producer = Producer([f"w{i} " for i in range(100)], 0.001)
    seen = await consume(smooth_stream(delay_in_ms=10), producer)
    assert producer.done_at == pytest.approx(0.1)  # the producer ran at its own pace
    assert "".join(t for _, t in seen) == "".join(producer.deltas)
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(seen)]
    assert min(gaps) >= 0.01 - 1e-9  # the consumer is paced
    assert seen[-1][0] == pytest.approx(0.99)  # 99 delays after the first piece


async def test_max_lag_catches_up_with_larger_pieces() -> None:
    producer = Producer([f"w{i} " for i in range(500)], 0.001)
    seen = await consume(smooth_stream(delay_in_ms=10, max_lag_ms=50), producer)
    assert producer.done_at is not None
    assert "".join(t for _, t in seen) == "".join(producer.deltas)
    # Without max_lag the view would end ~5 s after the model; with it, within the allowed lag.
    assert seen[-1][0] <= producer.done_at + 0.05 + 0.011
    assert len(seen) < 500  # larger pieces while catching up
    # Every piece still ends on a word boundary.
    assert all(t.endswith(" ") for _, t in seen)
    # While the producer is slower than the delay, no catching up happens: one word per piece.
    slow = Producer([f"w{i} " for i in range(20)], 0.05)
    seen = await consume(smooth_stream(delay_in_ms=10, max_lag_ms=50), slow)
    assert [t for _, t in seen] == slow.deltas


async def test_max_lag_without_delay_and_long_answer() -> None:
    # A burst of 2,000 words arrives at once; at 10 ms each that would be 20 s of pacing.
    producer = Producer(["".join(f"w{i} " for i in range(j, j + 100)) for j in range(0, 2000, 100)], 0.0)
    seen = await consume(smooth_stream(delay_in_ms=10, max_lag_ms=200), producer)
    assert "".join(t for _, t in seen) == "".join(producer.deltas)
    assert seen[-1][0] <= 0.2 + 0.011


async def test_hold_back_keeps_the_last_segment() -> None:
    _services.require("icu4py")

    async def main(hold_back: bool) -> list[str]:
        src = Producer(["こんに", "ちは", "世界"], 0.01)
        seen = await consume(
            smooth_stream(delay_in_ms=None, chunking=Segmenter("ja", "word"), hold_back=hold_back), src
        )
        return [t for _, t in seen]

    assert await main(False) == ["こん", "に", "ち", "は", "世界"]  # Mastra: never waits
    assert await main(True) == ["こんにちは", "世界"]


async def test_hold_back_grapheme_keeps_emoji_sequences_whole() -> None:
    async def main(hold_back: bool) -> list[str]:
        src = Producer(["a👨\u200d", "👩\u200d", "👧b"], 0.01)
        seen = await consume(smooth_stream(delay_in_ms=None, chunking="grapheme", hold_back=hold_back), src)
        return [t for _, t in seen]

    assert await main(False) == ["a", "👨\u200d", "👩\u200d", "👧", "b"]
    assert await main(True) == ["a", "👨\u200d👩\u200d👧", "b"]


async def test_hold_back_flushes_held_text_before_other_chunks() -> None:
    async def main() -> list[Any]:
        async def src() -> AsyncIterator[Any]:
            yield td("ab")
            yield td("c", id="t2")

        return [
            c.payload.text
            async for c in smooth_stream(delay_in_ms=None, chunking="grapheme", hold_back=True)(src())
        ]

    assert await main() == ["a", "b", "c"]


async def test_a_chunker_failing_while_catching_up_emits_what_it_caught_up_then_raises() -> None:
    # The detector fails once the buffer reaches "boom": while lagging, the pieces before it and
    # the queued deltas are joined into one piece; that piece goes out, then the error.
    def detect(buffer: str) -> str | None:
        if buffer.startswith("boom"):
            raise ValueError("detector broke")
        end = buffer.find(" ")
        return buffer[: end + 1] if end >= 0 else None

    words = [f"w{i} " for i in range(30)] + ["boom "] + [f"x{i} " for i in range(5)]
    producer = Producer(words, 0.0)
    seen: list[str] = []
    with pytest.raises(ValueError, match="detector broke"):
        async for chunk in smooth_stream(delay_in_ms=10, max_lag_ms=15, chunking=detect)(producer()):
            seen.append(chunk.payload.text)
    assert "".join(seen) == "".join(words[:30])  # nothing lost before the failure
    assert len(seen) < 30  # and the last of it went out as one caught-up piece
