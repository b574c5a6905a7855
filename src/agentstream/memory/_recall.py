"""Semantic recall (Mastra ``semanticRecall``): configuration, and how recalled messages from
other threads are shown to the model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..storage import MessageRecord

__all__ = ["SemanticRecallConfig", "index_name", "message_text", "remembered_block"]


@dataclass(frozen=True)
class SemanticRecallConfig:
    """``Memory(semantic_recall=...)``: ``True`` (Mastra's defaults) or ``{"top_k", "message_range",
    "scope"}``; ``message_range`` is an int (before = after) or ``{"before", "after"}``."""

    enabled: bool = False
    top_k: int = 4
    before: int = 1
    after: int = 1
    scope: Literal["thread", "resource"] = "resource"

    @classmethod
    def from_option(cls, value: Any) -> SemanticRecallConfig:
        """The config from ``Memory(semantic_recall=...)`` (checked)."""
        if value is None or value is False:
            return cls()
        if value is True:
            return cls(enabled=True)
        if isinstance(value, SemanticRecallConfig):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(f"semantic_recall must be True/False or a dict, got {value!r}")
        unknown = set(value) - {"top_k", "message_range", "scope"}
        if unknown:
            raise TypeError(
                f"unknown semantic_recall option(s): {', '.join(sorted(unknown))} (known: message_range, scope, top_k)"
            )
        top_k = value.get("top_k", 4)
        if not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"semantic_recall top_k must be an int >= 1, got {top_k!r}")
        rng = value.get("message_range", 1)
        if isinstance(rng, Mapping):
            before, after = rng.get("before", 0), rng.get("after", 0)
        else:
            before = after = rng
        for label, n in (("before", before), ("after", after)):
            if not isinstance(n, int) or n < 0:
                raise ValueError(f"semantic_recall message_range {label} must be an int >= 0, got {n!r}")
        scope = value.get("scope", "resource")
        if scope not in ("thread", "resource"):
            raise ValueError(f"semantic_recall scope must be 'thread' or 'resource', got {scope!r}")
        return cls(enabled=True, top_k=top_k, before=before, after=after, scope=scope)


def index_name(dimension: int) -> str:
    """Mastra's index name for message embeddings of one dimension."""
    return f"memory_messages_{dimension}"


def message_text(record: MessageRecord) -> str:
    """The text of a stored message that is embedded (its text parts)."""
    parts = record.content.get("parts")
    texts = [
        str(p.get("text", ""))
        for p in (parts if isinstance(parts, list) else [])
        if isinstance(p, dict) and p.get("type") == "text"
    ]
    return " ".join(t for t in texts if t)


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _clock(record: MessageRecord) -> str:
    at = record.created_at
    hour = at.hour % 12 or 12
    return f"{hour}:{at.minute:02d} {'AM' if at.hour < 12 else 'PM'}"


def remembered_block(records: Sequence[MessageRecord]) -> str:
    """Matches from other threads as Mastra's one system message: grouped by date, each line
    ``Message from previous conversation at <h:mm AM>: <Role>: <text>`` (no separator between
    messages, as Mastra writes them)."""
    text = ""
    day: tuple[int, int, int] | None = None
    for record in sorted(records, key=lambda r: r.created_at):
        at = record.created_at
        key = (at.year, at.month, at.day)
        if key != day:
            day = key
            text += f"\nthe following messages are from {at.year}, {_MONTHS[at.month - 1]}, {at.day}\n"
        role = "User" if record.role == "user" else "Assistant"
        text += f"Message from previous conversation at {_clock(record)}: {role}: {message_text(record)}"
    return (
        "The following messages were remembered from a different conversation:\n"
        "<remembered_from_other_conversation>\n" + text + "\n<end_remembered_from_other_conversation>"
    )
