"""The app of the fault tests (`agentstream serve --app tests.faults._app:mastra`, and the workers'
`--app`): agent ``counter`` calls its ``count`` tool once (each execution appends a line to the
file ``AGENTSTREAM_TEST_COUNTER`` names), then answers with the chat-turn tests' gated model
(`tests.durable._chat_app.GatedModel`: ``FIRST``, a wait until the file ``AGENTSTREAM_TEST_GATE``
names exists while the test breaks something, then ``REST``)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.tools import tool
from tests.durable._chat_app import GatedModel
from tests.resumable._gated_app import FIRST, REST, USAGE

__all__ = ["FIRST", "REST", "mastra"]


@tool
async def count(label: str) -> dict[str, str]:
    """Counts its own executions (a side effect that must happen once per answer)."""
    with open(os.environ["AGENTSTREAM_TEST_COUNTER"], "a") as f:
        f.write(f"{label} {os.getpid()}\n")
    return {"counted": label}


class CountingModel(GatedModel):
    """A tool call first; once the prompt holds the tool's result, the gated answer."""

    model_id = "counting"

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        if any(m.get("role") == "tool" for m in options.get("prompt", [])):
            return super().do_stream(options)
        return self._call()

    async def _call(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "tool-call", "toolCallId": "call-1", "toolName": "count", "input": '{"label": "once"}'}
        yield {"type": "finish", "finishReason": "tool-calls", "usage": USAGE}


def mastra() -> Mastra:
    agent = Agent(id="counter", instructions="Count once.", model=CountingModel(), tools=[count])
    return Mastra(agents={"counter": agent})
