"""The Mastra of the PostgreSQL fault tests (servers and workers load it): agent ``payer`` calls the
tool ``pay`` once, then answers ``Paid.``.

``pay`` counts each of its executions (a line ``<pid> <idempotency key>`` in ``runs``), makes its
side effect once per idempotency key (a line in ``effects``, the pattern docs/serving.md shows),
then waits until the file ``gate`` exists: the test decides when the tool call ends, without
timing. The files live in ``$AGENTSTREAM_TEST_DIR``. The model answers from the prompt (a tool
result in it: the text; else: the call), so a re-run on another worker asks the same."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.tools import Tool, ToolContext

USAGE = {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}
ANSWER = "Paid."


def _dir() -> Path:
    return Path(os.environ["AGENTSTREAM_TEST_DIR"])


class PayingModel:
    specification_version = "v2"
    provider = "test"
    model_id = "paying"

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        answered = any(message.get("role") == "tool" for message in options.get("prompt", []))
        return self._answer() if answered else self._call()

    async def _call(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {
            "type": "tool-call",
            "toolCallId": "call-1",
            "toolName": "pay",
            "input": json.dumps({"cents": 500}),
        }
        yield {"type": "finish", "finishReason": "tool-calls", "usage": USAGE}

    async def _answer(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        yield {"type": "text-delta", "id": "t1", "delta": ANSWER}
        yield {"type": "text-end", "id": "t1"}
        yield {"type": "finish", "finishReason": "stop", "usage": USAGE}


def _charge_once(key: str, cents: int) -> bool:
    """The side effect, made once per key (a stand-in for a payment API given the key)."""
    effects = _dir() / "effects"
    done = effects.read_text().split("\n") if effects.exists() else []
    if any(line.startswith(f"{key} ") for line in done):
        return False
    with effects.open("a") as out:
        out.write(f"{key} {cents}\n")
    return True


async def pay(args: dict[str, Any], context: ToolContext) -> dict[str, Any]:
    with (_dir() / "runs").open("a") as out:
        out.write(f"{os.getpid()} {context.idempotency_key}\n")
    charged = _charge_once(context.idempotency_key, int(args["cents"]))
    while not (_dir() / "gate").exists():
        await asyncio.sleep(0.02)
    return {"charged": charged}


def mastra() -> Mastra:
    tool = Tool(
        id="pay",
        description="Charge the card.",
        input_schema={"type": "object", "properties": {"cents": {"type": "integer"}}, "required": ["cents"]},
        execute=pay,
    )
    return Mastra(agents={"payer": Agent(id="payer", instructions="Pay.", model=PayingModel(), tools=[tool])})
