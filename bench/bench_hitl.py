"""What resuming a suspended run costs: ``approve_tool_call`` → first continued token.

Run: ``.venv/bin/python bench/bench_hitl.py [runs]`` (default 200). For each storage (in-memory,
SQLite file) it suspends runs on an approval (a prompt of 20 earlier messages, so the snapshot is
not trivial) and measures, per run, the time from ``agent.approve_tool_call(...)`` to the first
``text-delta`` of the continued step (load + check + claim of the snapshot, the approved tool, the
next model call). The reference, measured in the same run: a plain ``agent.stream(...)`` of the same
conversation to its first ``text-delta``. Prints medians, the ratio, and the snapshot size.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentstream import Agent, Tool
from agentstream.agent import SNAPSHOT_WORKFLOW
from agentstream.memory import Memory
from agentstream.storage import BaseStore, InMemoryStore, SQLiteStore
from agentstream.testing import ScriptedModel

USAGE = {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12}
CALL = [
    {"type": "tool-call", "toolCallId": "c1", "toolName": "transfer", "input": '{"amount": 5}'},
    {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
]
ANSWER = [
    {"type": "text-start", "id": "t"},
    {"type": "text-delta", "id": "t", "delta": "Sent."},
    {"type": "text-end", "id": "t"},
    {"type": "finish", "finishReason": "stop", "usage": USAGE},
]
HISTORY = [
    {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " + "lorem ipsum " * 20}
    for i in range(20)
]


async def transfer(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return {"sent": args["amount"]}


async def first_delta(output: Any) -> None:
    async for chunk in output.full_stream:
        if chunk.type == "text-delta":
            break
    await output.aclose()


async def measure(store: BaseStore, runs: int) -> tuple[list[float], list[float], int]:
    tool = Tool("transfer", "send", {"type": "object"}, transfer, require_approval=True)
    resumes: list[float] = []
    plains: list[float] = []
    size = 0
    for i in range(runs):
        agent = Agent(id="bench", model=ScriptedModel([CALL, ANSWER]), tools=[tool], memory=Memory(store))
        first = agent.stream([*HISTORY, {"role": "user", "content": "send 5"}], run_id=f"r{i}")
        await first.consume_stream()
        if i == 0:
            size = len(json.dumps(await store.load_workflow_snapshot(SNAPSHOT_WORKFLOW, "r0")))
        start = time.perf_counter()
        await first_delta(agent.approve_tool_call(run_id=f"r{i}"))
        resumes.append(time.perf_counter() - start)

        plain = Agent(id="bench", model=ScriptedModel([ANSWER]), tools=[tool], memory=Memory(store))
        start = time.perf_counter()
        await first_delta(plain.stream([*HISTORY, {"role": "user", "content": "send 5"}]))
        plains.append(time.perf_counter() - start)
    return resumes, plains, size


async def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stores: list[tuple[str, BaseStore]] = [
            ("in-memory", InMemoryStore()),
            ("sqlite file", SQLiteStore(Path(tmp) / "bench.db")),
        ]
        for name, store in stores:
            async with store:
                await measure(store, 5)  # warm up
                resumes, plains, size = await measure(store, runs)
            resume, plain = statistics.median(resumes), statistics.median(plains)
            print(
                f"{name:12s} approve → first token {resume * 1e3:7.3f} ms   plain stream → first token "
                f"{plain * 1e3:7.3f} ms   ratio {resume / plain:4.1f}x   snapshot {size / 1024:.1f} KiB"
            )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
