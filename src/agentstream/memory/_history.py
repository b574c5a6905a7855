"""History processors (Mastra's ``ToolCallFilter`` and ``TokenLimiter`` input processors): what of
the loaded history reaches the model. They change prompts only; stored messages stay whole."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from .._tokens import approximate_tokens

__all__ = ["HistoryTokenLimiter", "ToolCallFilter"]


def _current_turn_start(prompt: Sequence[dict[str, Any]]) -> int:
    """Index of the last user message: what follows it is the running turn's own work."""
    for i in range(len(prompt) - 1, -1, -1):
        if prompt[i].get("role") == "user":
            return i
    return len(prompt)


class ToolCallFilter:
    """Removes tool calls and their results of earlier turns from every model request
    (``exclude``: only these tool names; default all). The running turn's own calls stay, so the
    model still sees what it just did; an assistant message left empty is dropped."""

    id = "tool-call-filter"
    name = "ToolCallFilter"

    def __init__(self, *, exclude: Sequence[str] | None = None) -> None:
        if exclude is not None and (isinstance(exclude, str) or not all(isinstance(n, str) for n in exclude)):
            raise TypeError(f"ToolCallFilter exclude must be a list of tool names, got {exclude!r}")
        self.exclude = set(exclude) if exclude is not None else None

    def _drop(self, part: Any) -> bool:
        if not isinstance(part, dict) or part.get("type") not in ("tool-call", "tool-result"):
            return False
        return self.exclude is None or part.get("toolName") in self.exclude

    async def process_llm_request(self, *, prompt: list[dict[str, Any]], **_: Any) -> list[dict[str, Any]]:
        """This request's prompt without the earlier turns' tool calls and results."""
        cut = _current_turn_start(prompt)
        out: list[dict[str, Any]] = []
        for i, message in enumerate(prompt):
            content = message.get("content")
            if i >= cut or message.get("role") == "system" or not isinstance(content, list):
                out.append(message)
                continue
            kept = [p for p in content if not self._drop(p)]
            if kept:
                out.append({**message, "content": kept} if len(kept) != len(content) else message)
        return out


def _message_tokens(message: dict[str, Any], count: Callable[[str], int]) -> int:
    content = message.get("content")
    if isinstance(content, str):
        return count(content)
    total = 0
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") in ("text", "reasoning"):
            total += count(str(part.get("text", "")))
        else:
            total += count(json.dumps({k: v for k, v in part.items() if k != "providerOptions"}, default=str))
    return total


class HistoryTokenLimiter:
    """Drops the oldest history messages until the prompt's messages fit ``limit`` tokens (the
    system messages and the new input always stay). ``counter`` counts a text's tokens (default:
    an estimate, see `agentstream.processors.approximate_tokens`)."""

    id = "token-limiter"
    name = "TokenLimiter"

    def __init__(self, limit: int, *, counter: Callable[[str], int] | None = None) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"HistoryTokenLimiter limit must be an int >= 1, got {limit!r}")
        self.limit = limit
        self.counter = counter if counter is not None else approximate_tokens

    async def process_input(
        self, *, messages: list[dict[str, Any]], system_messages: list[dict[str, Any]], **_: Any
    ) -> list[dict[str, Any]]:
        """The input with the oldest history dropped until it fits the limit."""
        cut = _current_turn_start(messages)
        history, current = list(messages[:cut]), messages[cut:]
        budget = self.limit - sum(_message_tokens(m, self.counter) for m in [*system_messages, *current])
        sizes = [_message_tokens(m, self.counter) for m in history]
        while history and sum(sizes) > budget:
            history.pop(0)
            sizes.pop(0)
        # a history must not open with a tool result whose call was dropped
        while history and history[0].get("role") == "tool":
            history.pop(0)
        return [*history, *current]
