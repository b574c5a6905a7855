"""Vector stores for semantic recall: the ``VectorStore`` protocol and ``InMemoryVectorStore``
(an exact cosine scan, the reference the other stores are measured against)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["InMemoryVectorStore", "VectorMatch", "VectorStore", "cosine"]


@dataclass(frozen=True)
class VectorMatch:
    """One nearest entry: its id, cosine similarity and metadata."""

    id: str
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class VectorStore(Protocol):
    """Named indexes of fixed-dimension vectors with metadata (Mastra's ``MastraVector``).

    ``create_index`` is idempotent and raises ``ValueError`` if the index exists with another
    dimension; ``upsert`` checks each vector's dimension; ``query`` returns the ``top_k`` most
    similar entries (cosine) whose metadata equals every ``filter`` item.
    """

    async def create_index(self, name: str, dimension: int) -> None:
        """Create the index (idempotent; `ValueError` if it exists with another dimension)."""
        ...

    async def upsert(
        self,
        name: str,
        ids: Sequence[str],
        vectors: Sequence[Sequence[float]],
        metadata: Sequence[Mapping[str, Any]],
    ) -> None:
        """Insert or replace entries by id (each vector of the index's dimension)."""
        ...

    async def query(
        self, name: str, vector: Sequence[float], *, top_k: int, filter: Mapping[str, Any] | None = None
    ) -> list[VectorMatch]:
        """The ``top_k`` entries most similar to ``vector`` (cosine) matching ``filter``."""
        ...

    async def delete(self, name: str, *, filter: Mapping[str, Any]) -> int:
        """Delete the entries whose metadata matches ``filter``; how many."""
        ...

    async def describe_index(self, name: str) -> dict[str, Any]:
        """``{"dimension", "count", "metric"}`` of the index."""
        ...


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def _check_dimension(name: str, dimension: int, vector: Sequence[float]) -> None:
    if len(vector) != dimension:
        raise ValueError(f"index {name!r} has dimension {dimension}, got a vector of dimension {len(vector)}")


class InMemoryVectorStore:
    """Process-local, exact (every query scans the index)."""

    def __init__(self) -> None:
        self._indexes: dict[str, tuple[int, dict[str, tuple[list[float], dict[str, Any]]]]] = {}

    def _index(self, name: str) -> tuple[int, dict[str, tuple[list[float], dict[str, Any]]]]:
        found = self._indexes.get(name)
        if found is None:
            raise KeyError(f"no vector index {name!r} (create_index first)")
        return found

    async def create_index(self, name: str, dimension: int) -> None:
        """Create the index (idempotent; `ValueError` if it exists with another dimension)."""
        found = self._indexes.get(name)
        if found is not None:
            if found[0] != dimension:
                raise ValueError(f"index {name!r} exists with dimension {found[0]}, not {dimension}")
            return
        self._indexes[name] = (dimension, {})

    async def upsert(
        self,
        name: str,
        ids: Sequence[str],
        vectors: Sequence[Sequence[float]],
        metadata: Sequence[Mapping[str, Any]],
    ) -> None:
        """Insert or replace entries by id (each vector of the index's dimension)."""
        dimension, rows = self._index(name)
        for id_, vector, meta in zip(ids, vectors, metadata, strict=True):
            _check_dimension(name, dimension, vector)
            rows[id_] = ([float(x) for x in vector], dict(meta))

    async def query(
        self, name: str, vector: Sequence[float], *, top_k: int, filter: Mapping[str, Any] | None = None
    ) -> list[VectorMatch]:
        """The ``top_k`` entries most similar to ``vector`` (cosine) matching ``filter``."""
        dimension, rows = self._index(name)
        _check_dimension(name, dimension, vector)
        scored = [
            VectorMatch(id_, cosine(vector, v), dict(meta))
            for id_, (v, meta) in rows.items()
            if not filter or all(meta.get(k) == want for k, want in filter.items())
        ]
        # ties: insertion order (stable sort), as a scan of the table would return them
        scored.sort(key=lambda m: -m.score)
        return scored[:top_k]

    async def delete(self, name: str, *, filter: Mapping[str, Any]) -> int:
        """Delete the entries whose metadata matches ``filter``; how many."""
        if name not in self._indexes:
            return 0
        _, rows = self._indexes[name]
        gone = [k for k, (_, meta) in rows.items() if all(meta.get(f) == v for f, v in filter.items())]
        for key in gone:
            del rows[key]
        return len(gone)

    async def describe_index(self, name: str) -> dict[str, Any]:
        """``{"dimension", "count", "metric"}`` of the index."""
        dimension, rows = self._index(name)
        return {"dimension": dimension, "count": len(rows), "metric": "cosine"}
