"""Transform protocol and the chunk stream handle returned by ``ModelOutput.full_stream``."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from ..chunks import Chunk

__all__ = ["ChunkStream", "Transform", "TransformFactory", "apply_transforms"]

Transform: TypeAlias = "Callable[[AsyncIterable[Chunk]], AsyncIterator[Chunk]]"
"""Takes an async iterable of chunks, returns an async iterator of chunks. Single use."""

TransformFactory: TypeAlias = "Callable[[], Transform]"
"""Makes a fresh ``Transform`` per call (Mastra's ``experimental_transform``)."""


class ChunkStream:
    """An async iterator of chunks with ``pipe_through``: what ``full_stream`` returns.

    ``async for`` runs directly on the underlying iterator, so the handle costs nothing per chunk.
    """

    __slots__ = ("_iterator",)

    def __init__(self, iterator: AsyncIterator[Chunk]) -> None:
        self._iterator = iterator

    def __aiter__(self) -> AsyncIterator[Chunk]:
        return self._iterator

    async def __anext__(self) -> Chunk:
        return await self._iterator.__anext__()

    def pipe_through(self, transform: Transform) -> ChunkStream:
        """Feed this stream through ``transform`` and return the transformed stream."""
        return ChunkStream(transform(self._iterator))

    async def aclose(self) -> None:
        """Detach this consumer only; the run and other consumers go on."""
        aclose: Any = getattr(self._iterator, "aclose", None)
        if aclose is not None:
            await aclose()


def apply_transforms(
    stream: AsyncIterator[Chunk], factories: TransformFactory | Sequence[TransformFactory] | None
) -> AsyncIterator[Chunk]:
    """Pipe ``stream`` through a fresh transform from each factory, in order."""
    if factories is None:
        return stream
    if callable(factories):
        factories = [factories]
    for factory in factories:
        stream = factory()(stream)
    return stream
