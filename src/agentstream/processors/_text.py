"""What the built-in processors share: the text of prompt messages, and a per-text-part buffer that
holds streamed text back until it can be judged whole (a match or a character may span deltas)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from ..chunks import Chunk, TextDelta, TextDeltaPayload, TextEnd

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


async def map_message_text(
    message: dict[str, Any], fn: Callable[[str], Awaitable[str]]
) -> dict[str, Any]:
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


def with_text(part: TextDelta, text: str) -> TextDelta:
    return msgspec.structs.replace(part, payload=msgspec.structs.replace(part.payload, text=text))


class HoldBack:
    """Streams each text part through ``split``, holding back what cannot be decided yet; what is
    held when the part ends is written (``writer.custom``) just before its ``text-end`` (or before
    any ``step-finish`` / ``finish`` if the model never ended the part)."""

    def __init__(self, split: Split) -> None:
        self.split = split

    async def __call__(self, part: Chunk, state: dict[str, Any], writer: Any, abort: Any = None) -> Chunk | None:
        held: dict[str, tuple[str, TextDelta]] = state.setdefault("held", {})
        if type(part) is TextDelta:
            pending, _ = held.pop(part.payload.id, ("", part))
            now, keep = await self.split(pending + part.payload.text, False, abort)
            if keep:
                held[part.payload.id] = (keep, part)
            if not now and part.payload.provider_metadata is None:
                return None
            return with_text(part, now)
        if type(part) is TextEnd:
            entry = held.pop(part.payload.id, None)
            if entry is not None:
                await self._release(entry, writer, abort)
        elif part.type in ("step-finish", "finish", "tripwire", "error", "abort"):
            for key in list(held):
                await self._release(held.pop(key), writer, abort)
        return part

    async def _release(self, entry: tuple[str, TextDelta], writer: Any, abort: Any) -> None:
        text, template = entry
        now, _ = await self.split(text, True, abort)
        if now:
            payload = TextDeltaPayload(id=template.payload.id, text=now)
            writer.custom(TextDelta(run_id=template.run_id, from_=template.from_, payload=payload))
