"""An app for `agentstream serve --app tests.resumable._gated_app:mastra` in the cross-process tests.

Its model streams ``FIRST``, waits until the file named by ``AGENTSTREAM_TEST_GATE`` exists, then
streams ``REST``: the test decides when the answer goes on, without timing."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agentstream._mastra import Mastra
from agentstream.agent import Agent

FIRST = ["Sunny ", "in "]
REST = ["Berlin ", "today."]
USAGE = {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}


class FileGatedModel:
    specification_version = "v2"
    provider = "test"
    model_id = "file-gated"

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        return self._play(Path(os.environ["AGENTSTREAM_TEST_GATE"]))

    async def _play(self, gate: Path) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        for delta in FIRST:
            yield {"type": "text-delta", "id": "t1", "delta": delta}
        while not gate.exists():
            await asyncio.sleep(0.02)
        for delta in REST:
            yield {"type": "text-delta", "id": "t1", "delta": delta}
        yield {"type": "text-end", "id": "t1"}
        yield {"type": "finish", "finishReason": "stop", "usage": USAGE}


mastra = Mastra(agents={"weather": Agent(id="weather", instructions="Be brief.", model=FileGatedModel())})
