"""CPU per token of an SSE chat response with the default 15 s heartbeat vs heartbeats off.

First the response alone (``SSEStreamResponse`` over pre-made UI chunks, garbage collector on as
in production), then the whole request as below.

50 concurrent ``useChat`` requests, each streaming 200 text-deltas from a model through the real
agent loop, ``handle_chat_stream`` and ``SSEStreamResponse`` (ASGI ``send`` is a no-op, so only the
server side is measured). CPU time is the process's (``time.process_time``; garbage collection is
paused during a burst, so collector pauses do not land on one mode by chance). The modes run back
to back in each of ``ROUNDS`` rounds (order swapped each round). The headline ratio is best round
vs best round (noise only adds CPU time, as in ``_util.best_of``); the median of the per-round
ratios is printed beside it. The heartbeat is one task per
response that writes only after a silent interval, so the per-token cost should be the same: goal
``on/off`` < 1.05. The previous design (a queue and ``asyncio.wait_for`` around every chunk) runs
in the same rounds for contrast. Run: ``.venv/bin/python bench/bench_heartbeat.py``.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from agentstream._abort import AbortController
from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.ai_sdk import encode_sse, handle_chat_stream
from agentstream.server import SSEStreamResponse

STREAMS = 50
TOKENS = 200
ROUNDS = 9
USAGE = {"inputTokens": 8, "outputTokens": TOKENS, "totalTokens": 8 + TOKENS}
BODY = {"id": "c", "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}


class TokenModel:
    """Streams ``TOKENS`` text-deltas, yielding to the loop between them as a network read would."""

    specification_version = "v2"
    provider = "bench"
    model_id = "tokens"

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        return self._play()

    async def _play(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        for i in range(TOKENS):
            await asyncio.sleep(0)
            yield {"type": "text-delta", "id": "t1", "delta": f"tok{i} "}
        yield {"type": "text-end", "id": "t1"}
        yield {"type": "finish", "finishReason": "stop", "usage": USAGE}


async def _per_chunk_wait_for(stream: AsyncIterator[Any], heartbeat_ms: float, send: Any) -> None:
    """The previous design, for contrast: a pump task, a queue and ``wait_for`` around every chunk."""
    queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=1)
    end = object()

    async def pump() -> None:
        async for frame in encode_sse(stream):
            await queue.put(frame)
        await queue.put(end)

    task = asyncio.ensure_future(pump())
    await send({"type": "http.response.start", "status": 200, "headers": []})
    while True:
        try:
            item = await asyncio.wait_for(queue.get(), heartbeat_ms / 1000)
        except TimeoutError:
            await send({"type": "http.response.body", "body": b": ping\n\n", "more_body": True})
            continue
        if item is end:
            break
        await send({"type": "http.response.body", "body": item, "more_body": True})
    await task


async def _one(mastra: Mastra, heartbeat_ms: float, legacy: bool = False) -> int:
    controller = AbortController()
    stream = await handle_chat_stream(
        mastra=mastra, agent_id="bench", params=BODY, abort_signal=controller.signal
    )
    frames = 0
    never = asyncio.Event()

    async def receive() -> Any:
        await never.wait()
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        nonlocal frames
        frames += 1

    await SSEStreamResponse(stream, controller=controller, heartbeat_ms=heartbeat_ms)(
        {"type": "http"}, receive, send
    )
    return frames


async def _burst(mastra: Mastra, heartbeat_ms: float, legacy: bool = False) -> float:
    # Collector pauses land at random points: collect between bursts, none during one.
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        frames = await asyncio.gather(*(_one(mastra, heartbeat_ms, legacy) for _ in range(STREAMS)))
        took = time.process_time() - start
    finally:
        gc.enable()
    assert min(frames) >= TOKENS, "a stream lost frames"
    return took / (STREAMS * TOKENS)


async def _chunks() -> AsyncIterator[dict[str, Any]]:
    for i in range(TOKENS):
        await asyncio.sleep(0)
        yield {"type": "text-delta", "id": "t1", "delta": f"tok{i} "}


async def _response_only(heartbeat_ms: float, legacy: bool) -> float:
    """CPU per chunk of the response alone (pre-made UI chunks, collector on as in production)."""

    async def one() -> None:
        never = asyncio.Event()

        async def receive() -> Any:
            await never.wait()
            return {"type": "http.disconnect"}

        async def send(message: Any) -> None:
            return None

        if legacy:
            await _per_chunk_wait_for(_chunks(), heartbeat_ms, send)
        else:
            await SSEStreamResponse(_chunks(), heartbeat_ms=heartbeat_ms)({"type": "http"}, receive, send)

    start = time.process_time()
    await asyncio.gather(*(one() for _ in range(STREAMS)))
    return (time.process_time() - start) / (STREAMS * TOKENS)


async def main() -> None:
    modes = [("off", 0.0), ("on", 15_000.0), ("legacy", 15_000.0)]
    alone = {mode: float("inf") for mode, _ in modes}
    for i in range(ROUNDS):
        for mode, heartbeat_ms in modes if i % 2 else modes[::-1]:
            alone[mode] = min(alone[mode], await _response_only(heartbeat_ms, mode == "legacy"))
    print(f"SSE response alone, {STREAMS} streams x {TOKENS} chunks, best of {ROUNDS}, process CPU:")
    print(f"  heartbeats off (reference)        {alone['off'] * 1e6:7.2f} us CPU/chunk")
    print(f"  heartbeats on (15 s, default)     {alone['on'] * 1e6:7.2f} us CPU/chunk")
    print(f"  previous design (wait_for/chunk)  {alone['legacy'] * 1e6:7.2f} us CPU/chunk")
    print(f"  on/off                            {alone['on'] / alone['off']:7.3f}  (goal < 1.05)")
    print(f"  previous/off                      {alone['legacy'] / alone['off']:7.3f}")

    mastra = Mastra(agents={"bench": Agent(id="bench", instructions="Bench.", model=TokenModel())})
    await _burst(mastra, 0)  # warm-up
    best = {"off": float("inf"), "on": float("inf"), "legacy": float("inf")}
    ratios: dict[str, list[float]] = {"on": [], "legacy": []}
    for i in range(ROUNDS):
        order = [("off", 0.0), ("on", 15_000.0), ("legacy", 15_000.0)]
        took: dict[str, float] = {}
        for mode, heartbeat_ms in order if i % 2 else order[::-1]:
            took[mode] = await _burst(mastra, heartbeat_ms, mode == "legacy")
            best[mode] = min(best[mode], took[mode])
        for mode in ratios:
            ratios[mode].append(took[mode] / took["off"])
    print(
        f"Whole chat request, {STREAMS} concurrent streams x {TOKENS} tokens, {ROUNDS} rounds, process CPU:"
    )
    print(f"  heartbeats off (reference)        {best['off'] * 1e6:7.2f} us CPU/token (best round)")
    print(f"  heartbeats on (15 s, default)     {best['on'] * 1e6:7.2f} us CPU/token")
    print(f"  previous design (wait_for/chunk)  {best['legacy'] * 1e6:7.2f} us CPU/token")
    print(f"  on/off, best rounds               {best['on'] / best['off']:7.3f}  (goal < 1.05)")
    print(f"  on/off, median of paired rounds   {statistics.median(ratios['on']):7.3f}")
    print(f"  previous/off, best rounds         {best['legacy'] / best['off']:7.3f}")


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
