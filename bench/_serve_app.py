"""The app `bench/bench_serve.py` serves with ``agentstream serve --app _serve_app:mastra``: one agent
``bench`` whose model streams the same `TOKENS` text-deltas on every call (as the Mastra side's
``bench/reference/mastra-chat-server.mjs``)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

from agentstream import Agent, Mastra

N_TOKENS = int(os.environ.get("BENCH_SERVE_TOKENS", "300"))
TOKENS = [f"tok{i} " for i in range(N_TOKENS)]
USAGE = {"inputTokens": 8, "outputTokens": N_TOKENS, "totalTokens": 8 + N_TOKENS}


class TokenModel:
    """A ``LanguageModel`` streaming ``N_TOKENS`` text-deltas on every call."""

    specification_version = "v2"
    provider = "bench"
    model_id = f"tokens-{N_TOKENS}"

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        return self._play()

    async def _play(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        for token in TOKENS:
            yield {"type": "text-delta", "id": "t1", "delta": token}
        yield {"type": "text-end", "id": "t1"}
        yield {"type": "finish", "finishReason": "stop", "usage": USAGE}


mastra = Mastra(agents={"bench": Agent(id="bench", instructions="Be brief.", model=TokenModel())})
