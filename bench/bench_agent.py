"""Per-token cost of the agent path: ScriptedModel → agent.stream → full_stream → consumer.

Run: ``.venv/bin/python bench/bench_agent.py [N]`` (default 200,000 one-token deltas). Prints µs per token
and the ratio to passing the same parts through a bare async generator, measured in the same run.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from agentstream.agent import Agent
from agentstream.testing import ScriptedModel


def parts(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"type": "stream-start", "warnings": []}, {"type": "text-start", "id": "t"}]
    out += [{"type": "text-delta", "id": "t", "delta": "tok "} for _ in range(n)]
    out += [
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1}},
    ]
    return out


async def bare(step: list[dict[str, Any]]) -> float:
    async def gen() -> Any:
        for p in step:
            yield p

    start = time.perf_counter()
    count = 0
    async for _ in gen():
        count += 1
    return time.perf_counter() - start


async def agent_path(step: list[dict[str, Any]]) -> float:
    agent = Agent(id="bench", model=ScriptedModel([step]))
    start = time.perf_counter()
    count = 0
    async for _ in agent.stream("go").full_stream:
        count += 1
    return time.perf_counter() - start


async def main(n: int) -> None:
    step = parts(n)
    await agent_path(parts(1000))  # warm up
    base = min([await bare(step) for _ in range(3)])
    full = min([await agent_path(step) for _ in range(3)])
    print(f"tokens: {n}")
    print(f"bare async generator: {base / n * 1e6:.3f} µs/token")
    print(f"agent.stream → full_stream: {full / n * 1e6:.3f} µs/token  (ratio {full / base:.1f}x)")
    print(f"goal < 5 µs/token: {'met' if full / n * 1e6 < 5 else 'NOT met'}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000))
