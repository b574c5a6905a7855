"""The app of the load test's servers and workers (``--app tests.cluster._app:mastra``).

Its model answers each question with a text that depends only on the question (`answer`), in
`PIECES` deltas. It streams the first half, then waits until the file named by
``AGENTSTREAM_TEST_GATE`` exists: the test kills processes while every turn is mid-answer, without
timing. Each turn it starts appends ``<question> <pid>`` to ``AGENTSTREAM_TEST_TURNS``, so the test
sees which process ran which turn (and which ran twice).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agentstream import Agent, Mastra

PIECES = 12
USAGE = {"inputTokens": 8, "outputTokens": 24, "totalTokens": 32}


def answer(question: str) -> str:
    """The text the model answers ``question`` with (the test's expected text)."""
    digest = hashlib.sha256(question.encode()).hexdigest()
    words = [digest[i : i + 5] for i in range(0, 40, 5)]
    return f"On {question!r}: " + " ".join(f"{w}-{n}" for n, w in enumerate(words)) + "."


def _pieces(text: str) -> list[str]:
    size = -(-len(text) // PIECES)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _question(prompt: list[dict[str, Any]]) -> str:
    for message in reversed(prompt):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(p.get("text", "") for p in content or [] if p.get("type") == "text")
    return ""


class GatedModel:
    specification_version = "v2"
    provider = "test"
    model_id = "gated-script"

    def do_stream(self, options: Any) -> AsyncIterator[Any]:
        return self._play(_question(list(options.get("prompt", []))))

    async def _play(self, question: str) -> AsyncIterator[dict[str, Any]]:
        with open(os.environ["AGENTSTREAM_TEST_TURNS"], "a") as log:
            log.write(f"{question} {os.getpid()}\n")
        gate = Path(os.environ["AGENTSTREAM_TEST_GATE"])
        pieces = _pieces(answer(question))
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        for n, piece in enumerate(pieces):
            if n == len(pieces) // 2:
                while not gate.exists():
                    await asyncio.sleep(0.05)
            await asyncio.sleep(0.002)  # turns overlap, and a worker's stream writes interleave
            yield {"type": "text-delta", "id": "t1", "delta": piece}
        yield {"type": "text-end", "id": "t1"}
        yield {"type": "finish", "finishReason": "stop", "usage": USAGE}


mastra = Mastra(agents={"chat": Agent(id="chat", instructions="Answer.", model=GatedModel())})
