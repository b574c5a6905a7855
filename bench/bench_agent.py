"""Per-token cost of the agent path: ScriptedModel → agent.stream → full_stream → consumer.

Run: ``.venv/bin/python bench/bench_agent.py [--cold] [--compare SRC]`` (see ``bench/_compare.py``).
Two answers: 200,000 one-token deltas (the long answer of issue 29) and 2,000 (a usual one, run
many times). Each prints µs per token (CPU time) and the ratio to passing the same parts through a
bare async generator, measured in the same run. The model's script is built before the clock starts:
the scripted model's own set-up is no part of the agent path. Goal: ≤ 1.5 µs/token on the long answer.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _compare import Figures, cpu_time, main

from agentstream.agent import Agent
from agentstream.testing import ScriptedModel

LONG, SHORT, SHORT_RUNS = 200_000, 2_000, 40
GOAL_US = 1.5


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

    start = cpu_time()
    count = 0
    async for _ in gen():
        count += 1
    return cpu_time() - start


class PassThrough:
    """An output-stream processor that keeps every part (the processors' per-token path)."""

    id = "pass-through"

    async def process_output_stream(self, *, part: Any, **_: Any) -> Any:
        return part


def _seen(chunk: Any) -> None:
    """An ``on_chunk`` callback that does nothing (the callback's per-token path)."""


async def agent_path(step: list[dict[str, Any]], *, processor: bool = False, on_chunk: bool = False) -> float:
    processors = [PassThrough()] if processor else None
    agent = Agent(id="bench", model=ScriptedModel([step]), output_processors=processors)
    options: dict[str, Any] = {"on_chunk": _seen} if on_chunk else {}
    start = cpu_time()
    count = 0
    async for _ in agent.stream("go", **options).full_stream:
        count += 1
    elapsed = cpu_time() - start
    assert count > len(step) - 4, count  # every delta reached the consumer
    return elapsed


async def _measure(cold: bool) -> Figures:
    long, short = parts(LONG), parts(SHORT)
    passes = 1 if cold else 3
    if not cold:
        await agent_path(parts(1000))  # warm up
    figures: Figures = {}
    figures["bare generator, long answer (µs/token)"] = min([await bare(long) for _ in range(passes)]) / LONG
    figures["agent.stream → full_stream, long answer (µs/token)"] = (
        min([await agent_path(long) for _ in range(passes)]) / LONG
    )
    runs = 1 if cold else SHORT_RUNS
    figures["bare generator, 2,000-token answer (µs/token)"] = (
        min([await bare(short) for _ in range(runs)]) / SHORT
    )
    figures["agent.stream → full_stream, 2,000-token answer (µs/token)"] = (
        min([await agent_path(short) for _ in range(runs)]) / SHORT
    )
    runs = 1 if cold else SHORT_RUNS // 4
    figures["… with a pass-through output-stream processor, 2,000 tokens (µs/token)"] = (
        min([await agent_path(short, processor=True) for _ in range(runs)]) / SHORT
    )
    figures["… with an on_chunk callback, 2,000 tokens (µs/token)"] = (
        min([await agent_path(short, on_chunk=True) for _ in range(runs)]) / SHORT
    )
    return {k: v * 1e6 for k, v in figures.items()}


def measure(cold: bool) -> Figures:
    return asyncio.run(_measure(cold))


def report(f: Figures) -> list[str]:
    keys = list(f)
    long_bare, long_agent, short_bare, short_agent, with_processor, with_on_chunk = (f[k] for k in keys)
    return [
        f"{keys[0]}: {long_bare:.3f}",
        f"{keys[1]}: {long_agent:.3f}  ({long_agent / long_bare:.1f}x the bare generator)",
        f"{keys[2]}: {short_bare:.3f}",
        f"{keys[3]}: {short_agent:.3f}  ({short_agent / short_bare:.1f}x the bare generator)",
        f"{keys[4]}: {with_processor:.3f}  ({with_processor / short_bare:.1f}x the bare generator)",
        f"{keys[5]}: {with_on_chunk:.3f}  ({with_on_chunk / short_bare:.1f}x the bare generator)",
        f"goal ≤ {GOAL_US} µs/token (long answer): {'met' if long_agent <= GOAL_US else 'NOT met'}",
    ]


if __name__ == "__main__":
    main(__file__, measure, report)
