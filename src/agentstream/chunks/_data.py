"""Chunks whose ``type`` is open-ended: ``data-*``, network event wrappers, and unknown types."""

from __future__ import annotations

from typing import Any

import msgspec

from ._base import UNSET, ChunkFrom

__all__ = ["DataChunk", "NetworkEventChunk", "UnknownChunk"]


class DataChunk(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, repr_omit_defaults=True):
    """``data-*`` chunk: ``{type: 'data-<name>', data, id?, transient?}``, no runId/from/payload.

    ``transient=True`` means "stream it to the client, don't persist it".
    """

    type: str
    data: Any = UNSET
    id: str | None = None
    transient: bool | None = None
    metadata: dict[str, Any] | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict, name="~extra")

    def __post_init__(self) -> None:
        if not self.type.startswith("data-"):
            raise ValueError(f"DataChunk.type must start with 'data-', got {self.type!r}")


class NetworkEventChunk(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, rename="camel", repr_omit_defaults=True
):
    """``agent-execution-event-*`` / ``workflow-execution-event-*``: a nested chunk re-emitted by a network."""

    type: str
    payload: Any
    run_id: str | None = None
    from_: ChunkFrom | None = msgspec.field(default=None, name="from")
    metadata: dict[str, Any] | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict, name="~extra")

    def __post_init__(self) -> None:
        if not self.type.startswith(("agent-execution-event-", "workflow-execution-event-")):
            raise ValueError(f"NetworkEventChunk.type has an unexpected prefix: {self.type!r}")


class UnknownChunk:
    """A chunk of a type this version does not know, kept verbatim (``decode_chunk(..., unknown="keep")``).

    It re-encodes to exactly the JSON it was read from, so newer producers don't break older
    consumers that only pass chunks along.
    """

    __slots__ = ("_raw",)

    def __init__(self, raw: dict[str, Any]) -> None:
        self._raw = raw

    @property
    def type(self) -> str:
        """The wire `type` of the unknown chunk (`""` if it had none)."""
        value = self._raw.get("type")
        return value if isinstance(value, str) else ""

    @property
    def raw(self) -> dict[str, Any]:
        """The wire dict (a copy: the chunk stays immutable)."""
        return dict(self._raw)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnknownChunk) and other._raw == self._raw

    def __hash__(self) -> int:
        return hash(self.type)

    def __repr__(self) -> str:
        return f"UnknownChunk({self._raw!r})"
