"""What the built-in processors share: the text of prompt messages, and a per-text-part buffer that
holds streamed text back until it can be judged whole (a match or a character may span deltas)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from ..chunks import Chunk, ReasoningDelta, ReasoningEnd, TextDelta, TextEnd

__all__ = ["HoldBack", "map_message_text", "message_text", "with_text"]

Split = Callable[[str, bool, Any], Awaitable[tuple[str, str]]]
"""``(buffer, final, abort) -> (text to stream now, text to hold)``; ``final``: the part ended."""


def message_text(message: dict[str, Any]) -> str:
    """The text of a prompt message (a string, or its ``text`` parts joined)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


async def map_message_text(message: dict[str, Any], fn: Callable[[str], Awaitable[str]]) -> dict[str, Any]:
    """``message`` with ``fn`` applied to every text (a new message; the original is left alone)."""
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": await fn(content)}
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                part = {**part, "text": await fn(part["text"])}
            parts.append(part)
        return {**message, "content": parts}
    return message


Delta = TextDelta | ReasoningDelta


def with_text(part: Delta, text: str) -> Delta:
    """``part`` with another text (and nothing else changed)."""
    return msgspec.structs.replace(part, payload=msgspec.structs.replace(part.payload, text=text))


class HoldBack:
    """Streams each text part (and with ``reasoning`` each reasoning part) through ``split``,
    holding back what cannot be decided yet; what is held when the part ends is written
    (``writer.custom``) just before its ``text-end`` (the loop shows processors a ``text-end`` for a
    part the model never ended)."""

    def __init__(self, split: Split, *, reasoning: bool = False) -> None:
        self.split = split
        self.kinds: dict[type, type] = {TextDelta: TextEnd}
        if reasoning:
            self.kinds[ReasoningDelta] = ReasoningEnd

    async def __call__(
        self, part: Chunk, state: dict[str, Any], writer: Any, abort: Any = None
    ) -> Chunk | None:
        held: dict[tuple[type, str], tuple[str, Delta]] = state.setdefault("held", {})
        kind = type(part)
        if kind in self.kinds:
            delta: Delta = part  # type: ignore[assignment]
            key = (kind, delta.payload.id)
            pending, _ = held.pop(key, ("", delta))
            now, keep = await self.split(pending + delta.payload.text, False, abort)
            if keep:
                held[key] = (keep, delta)
            if not now and delta.payload.provider_metadata is None:
                return None
            return with_text(delta, now)
        if kind is TextEnd or kind is ReasoningEnd:
            delta_kind = TextDelta if kind is TextEnd else ReasoningDelta
            entry = held.pop((delta_kind, part.payload.id), None)  # type: ignore[union-attr]
            if entry is not None:
                await self._release(entry, writer, abort)
        return part

    async def _release(self, entry: tuple[str, Delta], writer: Any, abort: Any) -> None:
        text, template = entry
        now, _ = await self.split(text, True, abort)
        if now:
            writer.custom(with_text(template, now))
