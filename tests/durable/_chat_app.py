"""The Mastra of the chat-turn tests, loaded by the server (`agentstream serve --app`) and by the
workers (`agentstream worker --app`): the demo agent, and ``gated``, whose answer stops halfway
until the file named by ``AGENTSTREAM_TEST_GATE`` exists (the test decides, without timing)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agentstream._abort import AbortSignal, until_aborted
from agentstream._demo import demo_agent
from agentstream._mastra import Mastra
from agentstream.agent import Agent
from tests.resumable._gated_app import FIRST, REST, USAGE


class GatedModel:
    """Streams ``FIRST``, waits for the gate file, streams ``REST``; an abort stops the wait, as a
    provider's request stops."""

    specification_version = "v2"
    provider = "test"
    model_id = "file-gated"

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        return self._play(Path(os.environ["AGENTSTREAM_TEST_GATE"]), options.get("abort_signal"))

    async def _play(self, gate: Path, signal: AbortSignal | None) -> AsyncIterator[dict[str, Any]]:
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


class SystemEchoModel:
    """Answers with the call's system prompt: what the run's instructions were, on the worker."""

    specification_version = "v2"
    provider = "test"
    model_id = "system-echo"

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        system = " ".join(m["content"] for m in options["prompt"] if m["role"] == "system")
        return self._play(system)

    async def _play(self, text: str) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        yield {"type": "text-delta", "id": "t1", "delta": text}
        yield {"type": "text-end", "id": "t1"}
        yield {"type": "finish", "finishReason": "stop", "usage": USAGE}


def _tenant_instructions(request_context: Any) -> str:
    return f"You serve {request_context.get('tenant')} for {request_context.get('user')}."


def mastra() -> Mastra:
    gated = Agent(id="gated", instructions="Be brief.", model=GatedModel())
    # instructions from the request context the server built, which the turn carried here
    tenant = Agent(id="tenant", instructions=_tenant_instructions, model=SystemEchoModel())
    return Mastra(agents={"demo": demo_agent(), "gated": gated, "tenant": tenant})
