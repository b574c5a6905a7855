"""The app of the fault tests (`agentstream serve --app tests.faults._app:mastra`, and the workers'
`--app`): agent ``counter`` calls its ``count`` tool once (each execution appends a line to the
file ``AGENTSTREAM_TEST_COUNTER`` names), then answers ``FIRST``, waits until the file
``AGENTSTREAM_TEST_GATE`` names exists (the test breaks something meanwhile), then ``REST``."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agentstream._abort import AbortSignal, until_aborted
from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.tools import tool

FIRST = ["The count ", "is "]
REST = ["one, ", "exactly."]
USAGE = {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7}


@tool
async def count(label: str) -> dict[str, str]:
    """Counts its own executions (a side effect that must happen once per answer)."""
    with open(os.environ["AGENTSTREAM_TEST_COUNTER"], "a") as f:
        f.write(f"{label} {os.getpid()}\n")
    return {"counted": label}


class CountingModel:
    """A tool call first; once the prompt holds the tool's result, the gated answer."""

    specification_version = "v2"
    provider = "test"
    model_id = "counting"

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        if any(m.get("role") == "tool" for m in options.get("prompt", [])):
            return self._answer(Path(os.environ["AGENTSTREAM_TEST_GATE"]), options.get("abort_signal"))
        return self._call()

    async def _call(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "tool-call", "toolCallId": "call-1", "toolName": "count", "input": '{"label": "once"}'}
        yield {"type": "finish", "finishReason": "tool-calls", "usage": USAGE}

    async def _answer(self, gate: Path, signal: AbortSignal | None) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        for delta in FIRST:
            yield {"type": "text-delta", "id": "t1", "delta": delta}
        await until_aborted(_exists(gate), signal)
        for delta in REST:
            yield {"type": "text-delta", "id": "t1", "delta": delta}
        yield {"type": "text-end", "id": "t1"}
        yield {"type": "finish", "finishReason": "stop", "usage": USAGE}


async def _exists(path: Path) -> None:
    while not path.exists():
        await asyncio.sleep(0.02)


def mastra() -> Mastra:
    agent = Agent(id="counter", instructions="Count once.", model=CountingModel(), tools=[count])
    return Mastra(agents={"counter": agent})
