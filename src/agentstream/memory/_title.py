"""Thread titles (Mastra ``generateTitle``): after the first answered turn, a model call with
Mastra's title instructions and the exchange as ``User: ...\\nAssistant: ...``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..storage import MessageRecord
from ._recall import message_text

__all__ = ["DEFAULT_TITLE_INSTRUCTIONS", "TitleConfig", "generate_title"]

DEFAULT_TITLE_INSTRUCTIONS = (
    "\n      - you will generate a short title based on a conversation transcript between a user and an assistant"
    '\n      - the transcript lines are prefixed with "User:" and "Assistant:" \u2014 never reply to, answer, '
    "or continue the transcript"
    "\n      - always produce a title, even when the transcript is only a greeting or trivial exchange"
    "\n      - ensure it is not more than 80 characters long"
    "\n      - the title should be a summary of the user's message"
    "\n      - do not use quotes or colons"
    "\n      - the entire text you return will be used as the title"
)


@dataclass(frozen=True)
class TitleConfig:
    """``generate_title``: ``True`` (the agent's model), or ``{"model", "instructions"}``."""

    enabled: bool = False
    model: Any = None
    instructions: str = DEFAULT_TITLE_INSTRUCTIONS

    @classmethod
    def from_option(cls, value: Any) -> TitleConfig:
        """The config from ``Memory(generate_title=...)`` (checked)."""
        if value is None or value is False:
            return cls()
        if value is True:
            return cls(enabled=True)
        if isinstance(value, Mapping):
            unknown = set(value) - {"model", "instructions"}
            if unknown:
                raise TypeError(
                    f"unknown generate_title option(s): {', '.join(sorted(unknown))} (known: instructions, model)"
                )
            return cls(
                enabled=True,
                model=value.get("model"),
                instructions=str(value.get("instructions") or DEFAULT_TITLE_INSTRUCTIONS),
            )
        raise TypeError(f"generate_title must be True/False or {{'model', 'instructions'}}, got {value!r}")


async def generate_title(
    model: Any, config: TitleConfig, records: Sequence[MessageRecord], *, now_ms: int
) -> str:
    """The title the model gives the exchange (its text, stripped); ``""`` if it gave none."""
    if isinstance(model, str):
        from ..models import resolve_model

        model = resolve_model(model)
    lines = [
        f"{'User' if r.role == 'user' else 'Assistant'}: {message_text(r)}"
        for r in records
        if r.role in ("user", "assistant") and message_text(r)
    ]
    prompt = [
        {"role": "system", "content": config.instructions},
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "\n".join(lines),
                    "providerOptions": {"mastra": {"createdAt": now_ms}},
                }
            ],
        },
    ]
    text = ""
    async for part in model.do_stream({"prompt": prompt}):
        kind = part.get("type") if isinstance(part, Mapping) else getattr(part, "type", None)
        if kind == "text-delta":
            text += part.get("delta", "") if isinstance(part, Mapping) else getattr(part, "delta", "")
    # A title is a text column (SQLite and PostgreSQL text hold no lone surrogate): a half the
    # model's deltas left becomes U+FFFD, as JavaScript's String.prototype.toWellFormed() does.
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return joined.strip()
