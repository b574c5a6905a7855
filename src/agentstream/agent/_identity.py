"""The checks `Agent` makes of its identity and model when it is built, Mastra's habits included:
an agent given only a ``name`` takes it as its id (Mastra's ``this.id = config.id ?? config.name``),
and a malformed list of fallback models is refused here rather than failing at the first run."""

from __future__ import annotations

from typing import Any

__all__ = ["check_identity"]


def check_identity(id: Any, name: Any, model: Any) -> str:
    """The agent's id: ``id``, else ``name`` as given; a missing id or a malformed model list raises."""
    for field, value in (("id", id), ("name", name)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"an agent's {field} must be a string, got {type(value).__name__}")
    agent_id: str | None = id or name
    if not agent_id:
        raise ValueError("an agent needs a non-empty id (or a name, which then is its id, as in Mastra)")
    if isinstance(model, list | tuple):
        from ..models import FallbackModel

        try:
            FallbackModel.check(model)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"agent {agent_id!r}: {exc}") from None
    return agent_id
