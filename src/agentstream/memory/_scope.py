"""The ``memory=`` option of ``stream``/``generate``: thread, resource and per-call options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MemoryScope", "resolve_memory_option"]

_CALL_OPTIONS = {"read_only", "last_messages"}


@dataclass(frozen=True)
class MemoryScope:
    """The ``memory=`` option of ``stream``/``generate``, resolved.

    ``options``: per-call overrides of the memory's configuration (Mastra ``memory.options``):
    ``read_only`` (working memory shown read-only, no tool, nothing saved), ``last_messages``.
    """

    thread_id: str
    resource_id: str
    title: str | None = None
    metadata: dict[str, Any] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def read_only(self) -> bool:
        """Whether this call's working memory is read-only (``options={"read_only": True}``)."""
        return bool(self.options.get("read_only", False))


def resolve_memory_option(value: Any) -> MemoryScope:
    """``{"thread": id | {"id", "title"?, "metadata"?}, "resource": id, "options"?: {...}}`` →
    ``MemoryScope``."""
    if not isinstance(value, Mapping):
        raise TypeError(f'memory= must be a dict {{"thread": ..., "resource": ...}}, got {value!r}')
    unknown = set(value) - {"thread", "resource", "options"}
    if unknown:
        raise TypeError(
            f"unknown memory option(s): {', '.join(sorted(unknown))} (known: options, resource, thread)"
        )
    thread = value.get("thread")
    resource = value.get("resource")
    title: str | None = None
    metadata: dict[str, Any] | None = None
    if isinstance(thread, Mapping):
        title = thread.get("title")
        metadata = dict(thread["metadata"]) if thread.get("metadata") is not None else None
        thread = thread.get("id")
    if not isinstance(thread, str) or not thread:
        raise ValueError('memory= needs a thread id: {"thread": "<id>" | {"id": "<id>"}, "resource": ...}')
    if not isinstance(resource, str) or not resource:
        raise ValueError('memory= needs a resource id: {"thread": ..., "resource": "<id>"}')
    options = value.get("options") or {}
    if not isinstance(options, Mapping):
        raise TypeError(f"memory options must be a dict, got {options!r}")
    bad = set(options) - _CALL_OPTIONS
    if bad:
        raise TypeError(
            f"unknown memory.options key(s): {', '.join(sorted(bad))} (known: {', '.join(sorted(_CALL_OPTIONS))})"
        )
    return MemoryScope(thread, resource, title, metadata, dict(options))
