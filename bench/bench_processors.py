"""Per-token cost of output-stream processors: ScriptedModel → agent.stream → full_stream with no
processors, with a chain of three pass-through processors, and with the three deterministic
built-ins (UnicodeNormalizer, TokenLimiter, SecretRedactor), measured in the same run.

Run: ``.venv/bin/python bench/bench_processors.py [N]`` (default 100,000 one-token deltas). Prints µs
per token and each chain's ratio to the run without processors.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from agentstream.agent import Agent
from agentstream.chunks import Chunk
from agentstream.processors import SecretRedactor, TokenLimiter, UnicodeNormalizer
from agentstream.testing import ScriptedModel

WORDS = ("The ", "quick ", "brown ", "fox ", "mails ", "bob@", "example", ".com ", "and ", "jumps. ")


def parts(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"type": "stream-start", "warnings": []}, {"type": "text-start", "id": "t"}]
    out += [{"type": "text-delta", "id": "t", "delta": WORDS[i % len(WORDS)]} for i in range(n)]
    out += [
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1}},
    ]
    return out


class PassThrough:
    """The cheapest useful processor: looks at the part's type and returns it."""

    def __init__(self, n: int) -> None:
        self.id = f"pass-{n}"

    async def process_output_stream(self, *, part: Chunk, **_: Any) -> Chunk:
        return None if part.type == "never" else part


def chains() -> dict[str, Any]:
    return {
        "no processors": list,
        "3 pass-through": lambda: [PassThrough(i) for i in range(3)],
        "3 built-ins": lambda: [UnicodeNormalizer(), TokenLimiter(10**9), SecretRedactor()],
    }


async def run(step: list[dict[str, Any]], processors: list[Any]) -> float:
    agent = Agent(id="bench", model=ScriptedModel([step]), output_processors=processors)
    start = time.perf_counter()
    async for _ in agent.stream("go").full_stream:
        pass
    return time.perf_counter() - start


async def main(n: int) -> None:
    step = parts(n)
    for make in chains().values():
        await run(parts(1000), make())  # warm up
    best: dict[str, float] = dict.fromkeys(chains(), float("inf"))
    for _ in range(3):  # interleaved, so a busy moment on the shared machine hits every chain
        for name, make in chains().items():
            best[name] = min(best[name], await run(step, make()))
    base = best["no processors"]
    print(f"tokens: {n}")
    for name, seconds in best.items():
        print(f"{name:>16}: {seconds / n * 1e6:6.2f} µs/token  (ratio {seconds / base:.2f}x)")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000))
