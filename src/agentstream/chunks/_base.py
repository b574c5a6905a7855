"""Base shapes shared by every chunk: ``ChunkFrom``, the struct configuration and wire helpers."""

from __future__ import annotations

import enum
from typing import Any, ClassVar

import msgspec

__all__ = ["UNSET", "BaseChunk", "ChunkFrom", "Payload", "ProviderMetadata", "UnsetType"]

UNSET = msgspec.UNSET
UnsetType = msgspec.UnsetType

ProviderMetadata = dict[str, dict[str, Any]]
"""``{provider: {key: JSON}}`` as the AI SDK defines it."""


class ChunkFrom(enum.StrEnum):
    """Who produced a chunk (Mastra's ``ChunkFrom``)."""

    AGENT = "AGENT"
    USER = "USER"
    SYSTEM = "SYSTEM"
    WORKFLOW = "WORKFLOW"
    NETWORK = "NETWORK"


class Payload(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    omit_defaults=True,
    rename="camel",
    repr_omit_defaults=True,
    forbid_unknown_fields=True,
):
    """Base of every payload class.

    Optional typed fields default to ``None`` and are *absent* on the wire (Mastra never sends
    ``null`` for them). Fields typed ``Any`` default to ``UNSET`` so that an explicit JSON ``null``
    (a tool returning ``None``) survives a round trip. Keys the spec does not name (Mastra's
    ``[k: string]: unknown`` payloads, or fields added by a newer Mastra) are kept in ``extra`` and
    written back unchanged, so decode → encode is lossless.

    Unknown fields are refused by msgspec itself (``forbid_unknown_fields``): the one-pass typed
    decoder (`decode_chunk` on JSON) then falls back to the dict path, which moves them to ``extra``.
    """

    extra: dict[str, Any] = msgspec.field(default_factory=dict, name="~extra")
    """Wire keys not modelled by this class, kept for lossless re-encoding."""

    _date_fields: ClassVar[tuple[str, ...]] = ()


class BaseChunk(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    omit_defaults=True,
    rename="camel",
    tag_field="type",
    repr_omit_defaults=True,
    forbid_unknown_fields=True,
):
    """``BaseChunkType``: ``{type, runId, from, metadata?}``.

    ``run_id`` and ``from_`` are required by Mastra's types but absent at runtime on chunks made by
    processors (``tripwire``) and by the background-task manager's own stream, so they are optional.
    """

    run_id: str | None = None
    from_: ChunkFrom | None = msgspec.field(default=None, name="from")
    metadata: dict[str, Any] | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict, name="~extra")
    """Top-level wire keys not modelled by this class, kept for lossless re-encoding."""

    @property
    def type(self) -> str:
        """The chunk's wire `type` (`"text-delta"`, `"finish"`, ...)."""
        tag = self.__struct_config__.tag
        assert isinstance(tag, str)
        return tag
