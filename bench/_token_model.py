"""The model the serving benches give their agent: the same ``n`` text-deltas on every call, as the
Mastra side's ``bench/reference/mastra-chat-server.mjs`` streams them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any


def tokens(n: int) -> list[str]:
    return [f"tok{i} " for i in range(n)]


class TokenModel:
    """A ``LanguageModel`` streaming ``n_tokens`` text-deltas on every call."""

    specification_version = "v2"
    provider = "bench"

    def __init__(self, n_tokens: int) -> None:
        self.model_id = f"tokens-{n_tokens}"
        self._tokens = tokens(n_tokens)
        self._usage = {"inputTokens": 8, "outputTokens": n_tokens, "totalTokens": 8 + n_tokens}

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        return self._play()

    async def _play(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        for token in self._tokens:
            yield {"type": "text-delta", "id": "t1", "delta": token}
        yield {"type": "text-end", "id": "t1"}
        yield {"type": "finish", "finishReason": "stop", "usage": self._usage}
