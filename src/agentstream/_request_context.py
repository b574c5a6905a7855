"""`RequestContext`: what one request knows about its caller (Mastra's ``RequestContext``).

A mapping given to ``agent.stream(..., request_context=...)`` (or built by ``chat_route`` from the
HTTP request) and handed to everything the run calls: the agent's dynamic ``instructions``,
``model``, ``tools``, ``default_options`` and ``memory`` (each may be a function of it), and the
tools (``context.request_context``). One per run: what a tool ``set``s is seen by the tools after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["RequestContext", "as_request_context"]


class RequestContext(dict[str, Any]):
    """A ``dict`` with Mastra's ``get`` / ``set`` / ``has`` (``request_context.get("tenant")``)."""

    def set(self, key: str, value: Any) -> None:
        """``request_context.set(key, value)`` (Mastra's spelling of ``request_context[key] = value``)."""
        self[key] = value

    def has(self, key: str) -> bool:
        """Whether ``key`` is set (Mastra's ``has``)."""
        return key in self

    def __repr__(self) -> str:
        return f"RequestContext({dict.__repr__(self)})"


def as_request_context(value: Any) -> RequestContext:
    """The run's `RequestContext`: the one given, a mapping's copy, or an empty one for ``None``."""
    if value is None:
        return RequestContext()
    if isinstance(value, RequestContext):
        return value
    if isinstance(value, Mapping):
        return RequestContext(value)
    raise TypeError(f"request_context must be a mapping or a RequestContext, got {type(value).__name__}")
