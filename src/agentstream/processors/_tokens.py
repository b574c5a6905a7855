"""`TokenLimiter`: cap the tokens of the streamed answer (Mastra's ``TokenLimiterProcessor``)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, Literal

from .._tokens import approximate_tokens
from ..chunks import Chunk, TextDelta

__all__ = ["TokenLimiter", "approximate_tokens"]

log = logging.getLogger("agentstream.processors")

_LAST_SPACE = re.compile(r"\s(?=\S*\Z)")


class TokenLimiter:
    """Stops the streamed text once it holds more than ``max_tokens`` tokens.

    ``counter(text) -> int`` counts tokens (default `approximate_tokens`). Counting is cumulative
    over the run's text and never splits a word at a delta boundary: text up to the last
    whitespace is counted once, the unfinished word again with each delta, so a word cut across
    deltas counts as the whole word. ``strategy``: ``"truncate"`` drops every text delta from the
    one that crosses the limit on (the rest of the stream goes on), ``"abort"`` raises the tripwire.
    """

    id = "token-limiter"
    name = "Token Limiter"

    def __init__(
        self,
        max_tokens: int,
        *,
        counter: Callable[[str], int] | None = None,
        strategy: Literal["truncate", "abort"] = "truncate",
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
            raise ValueError(f"TokenLimiter max_tokens must be an int >= 0, got {max_tokens!r}")
        if strategy not in ("truncate", "abort"):
            raise ValueError(f"TokenLimiter strategy must be 'truncate' or 'abort', got {strategy!r}")
        self.max_tokens = max_tokens
        self.counter = counter or approximate_tokens
        self.strategy = strategy

    def _count(self, state: dict[str, Any], text: str) -> int:
        tail = state.get("tail", "") + text
        cut = _LAST_SPACE.search(tail)
        if cut is not None:  # the words before the last space are complete: count them once
            state["counted"] = state.get("counted", 0) + self.counter(tail[: cut.start()])
            tail = tail[cut.start() :]
        state["tail"] = tail
        return int(state.get("counted", 0)) + self.counter(tail)

    async def process_output_stream(
        self, *, part: Chunk, state: dict[str, Any], abort: Any, **_: Any
    ) -> Chunk | None:
        """The part, or ``None`` once the limit is crossed (``truncate``)."""
        if type(part) is not TextDelta:
            return part
        if state.get("over"):
            return None
        tokens = self._count(state, part.payload.text)
        if tokens <= self.max_tokens:
            return part
        state["over"] = True
        if self.strategy == "abort":
            abort(f"Token limit of {self.max_tokens} exceeded ({tokens} tokens)", metadata={"tokens": tokens})
        log.info(
            "token limiter: %d tokens exceed the limit of %d; the rest of the text is dropped",
            tokens,
            self.max_tokens,
        )
        return None
