"""The checks `Agent` makes of its identity and model when it is built, Mastra's habits included:
an agent given only a ``name`` takes it as its id (Mastra's ``this.id = config.id ?? config.name``),
and a list of models (Mastra's fallbacks, not supported yet) is refused here rather than failing
at the first run."""

from __future__ import annotations

from typing import Any

__all__ = ["check_identity"]


def check_identity(id: Any, name: Any, model: Any) -> str:
    """The agent's id: ``id``, else ``name`` as given; a missing id or a list ``model`` raises."""
    for field, value in (("id", id), ("name", name)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"an agent's {field} must be a string, got {type(value).__name__}")
    agent_id: str | None = id or name
    if not agent_id:
        raise ValueError("an agent needs a non-empty id (or a name, which then is its id, as in Mastra)")
    if isinstance(model, (list, tuple)):
        raise TypeError(
            f"agent {agent_id!r}: model must be one model (a LanguageModel or a string such as "
            f"'openai/gpt-4o-mini'), got a {type(model).__name__} of {len(model)}: a list of fallback "
            "models (Mastra's model=[{model, maxRetries}, ...]) is not supported yet"
        )
    return agent_id
