"""The app `bench/bench_cluster.py` serves and answers with: a model that answers at once.

Each answer is `DELTAS` text deltas with no pause, its text depending only on the question
(`answer`), so the bench measures the path a chunk takes, not a model.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any

from agentstream import Agent, Mastra

DELTAS = 30
USAGE = {"inputTokens": 8, "outputTokens": DELTAS, "totalTokens": 8 + DELTAS}


def _words(question: str) -> list[str]:
    digest = hashlib.sha256(question.encode()).hexdigest()
    return [f"{digest[i % 60 : i % 60 + 4]}{i} " for i in range(DELTAS)]


def answer(question: str) -> str:
    return "".join(_words(question))


def _question(prompt: list[dict[str, Any]]) -> str:
    for message in reversed(prompt):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(p.get("text", "") for p in content or [] if p.get("type") == "text")
    return ""


class InstantModel:
    specification_version = "v2"
    provider = "bench"
    model_id = "instant"

    def do_stream(self, options: Any) -> AsyncIterator[Any]:
        return self._play(_question(list(options.get("prompt", []))))

    async def _play(self, question: str) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        for word in _words(question):
            yield {"type": "text-delta", "id": "t1", "delta": word}
        yield {"type": "text-end", "id": "t1"}
        yield {"type": "finish", "finishReason": "stop", "usage": USAGE}


mastra = Mastra(agents={"chat": Agent(id="chat", instructions="Answer.", model=InstantModel())})
