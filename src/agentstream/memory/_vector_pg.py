"""``PgVectorStore``: vector indexes in PostgreSQL with the pgvector extension
(``pip install agentstream[postgres]``; the server needs the pgvector extension installed).
Vectors travel in pgvector's text form, so no client-side adapter (numpy) is needed.

One table per index, ``(id, thread_id, resource_id, metadata jsonb, embedding vector(n))``, with
B-tree indexes on the scope columns: a scoped query is an exact cosine scan of that thread's or
resource's rows, which is what recall asks for (a chat's own messages, not the whole table).
``hnsw=True`` adds an HNSW index (``vector_cosine_ops``) for large unscoped queries; pgvector
filters HNSW results after the search, so a very selective scope may then return fewer than
``top_k`` rows (docs/decisions/issue-27-vector.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._vector import VectorMatch

__all__ = ["PgVectorStore"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_FILTERABLE = ("thread_id", "resource_id")


def _literal(vector: Sequence[float]) -> str:
    """pgvector's text form (``[1,2,3]``): no numpy or client adapter needed."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def _ident(name: str, what: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f"{what} must match {_NAME.pattern}, got {name!r}")
    return f'"{name}"'


class PgVectorStore:
    """pgvector indexes in ``schema`` of the database at ``dsn`` (or an open psycopg ``pool``)."""

    def __init__(
        self, dsn: str | None = None, *, pool: Any = None, schema: str = "public", hnsw: bool = False
    ):
        if dsn is None and pool is None:
            raise ValueError("PgVectorStore needs a dsn or a pool")
        self.dsn = dsn
        self.schema = _ident(schema, "schema")
        self.hnsw = hnsw
        self._pool = pool
        self._own_pool = pool is None
        self._dimensions: dict[str, int] = {}
        self._ready = False

    async def _connection(self) -> Any:
        if self._pool is None:
            try:
                from psycopg_pool import AsyncConnectionPool
            except ImportError as exc:  # pragma: no cover - depends on the installed extras
                raise ImportError("PgVectorStore needs: pip install 'agentstream[postgres]'") from exc

            self._pool = AsyncConnectionPool(self.dsn or "", min_size=1, max_size=4, open=False)
            await self._pool.open()
        if not self._ready:
            import psycopg

            async with self._pool.connection() as conn:
                try:
                    await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                except psycopg.errors.UniqueViolation:
                    await conn.rollback()  # another process created it at the same moment
                await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
                await conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {self.schema}.agentstream_vector_indexes "
                    "(name TEXT PRIMARY KEY, dimension INTEGER NOT NULL)"
                )
            self._ready = True
        return self._pool.connection()

    async def _dimension(self, conn: Any, name: str) -> int:
        found = self._dimensions.get(name)
        if found is None:
            cur = await conn.execute(
                f"SELECT dimension FROM {self.schema}.agentstream_vector_indexes WHERE name = %s", (name,)
            )
            row = await cur.fetchone()
            if row is None:
                raise KeyError(f"no vector index {name!r} (create_index first)")
            found = self._dimensions[name] = int(row[0])
        return found

    async def create_index(self, name: str, dimension: int) -> None:
        table = _ident(name, "vector index name")
        if not isinstance(dimension, int) or dimension < 1:
            raise ValueError(f"vector index dimension must be an int >= 1, got {dimension!r}")
        async with await self._connection() as conn:
            cur = await conn.execute(
                f"SELECT dimension FROM {self.schema}.agentstream_vector_indexes WHERE name = %s", (name,)
            )
            row = await cur.fetchone()
            if row is not None:
                if int(row[0]) != dimension:
                    raise ValueError(f"index {name!r} exists with dimension {row[0]}, not {dimension}")
                self._dimensions[name] = dimension
                return
            await conn.execute(
                f"CREATE TABLE {self.schema}.{table} (id TEXT PRIMARY KEY, thread_id TEXT, resource_id TEXT, "
                f"metadata JSONB NOT NULL, embedding vector({dimension}) NOT NULL)"
            )
            for column in _FILTERABLE:
                await conn.execute(f'CREATE INDEX "{name}_{column}" ON {self.schema}.{table} ({column})')
            if self.hnsw:
                await conn.execute(
                    f'CREATE INDEX "{name}_hnsw" ON {self.schema}.{table} USING hnsw (embedding vector_cosine_ops)'
                )
            await conn.execute(
                f"INSERT INTO {self.schema}.agentstream_vector_indexes (name, dimension) VALUES (%s, %s)",
                (name, dimension),
            )
        self._dimensions[name] = dimension

    async def upsert(
        self,
        name: str,
        ids: Sequence[str],
        vectors: Sequence[Sequence[float]],
        metadata: Sequence[Mapping[str, Any]],
    ) -> None:
        table = _ident(name, "vector index name")
        async with await self._connection() as conn:
            dimension = await self._dimension(conn, name)
            rows = []
            for id_, vector, meta in zip(ids, vectors, metadata, strict=True):
                if len(vector) != dimension:
                    raise ValueError(
                        f"index {name!r} has dimension {dimension}, got a vector of dimension {len(vector)}"
                    )
                rows.append(
                    (
                        id_,
                        meta.get("thread_id"),
                        meta.get("resource_id"),
                        json.dumps(dict(meta)),
                        _literal(vector),
                    )
                )
            async with conn.cursor() as cur:
                await cur.executemany(
                    f"INSERT INTO {self.schema}.{table} (id, thread_id, resource_id, metadata, embedding) "
                    "VALUES (%s, %s, %s, %s::jsonb, %s::vector) ON CONFLICT (id) DO UPDATE SET thread_id = EXCLUDED.thread_id, "
                    "resource_id = EXCLUDED.resource_id, metadata = EXCLUDED.metadata, embedding = EXCLUDED.embedding",
                    rows,
                )

    async def query(
        self, name: str, vector: Sequence[float], *, top_k: int, filter: Mapping[str, Any] | None = None
    ) -> list[VectorMatch]:
        table = _ident(name, "vector index name")
        where = dict(filter or {})
        bad = set(where) - set(_FILTERABLE)
        if bad:
            raise ValueError(f"PgVectorStore filters on {', '.join(_FILTERABLE)} only, got {sorted(bad)}")
        async with await self._connection() as conn:
            dimension = await self._dimension(conn, name)
            if len(vector) != dimension:
                raise ValueError(
                    f"index {name!r} has dimension {dimension}, got a vector of dimension {len(vector)}"
                )
            q = _literal(vector)
            clauses = " AND ".join(f"{k} = %s" for k in where) or "TRUE"
            cur = await conn.execute(
                f"SELECT id, metadata, 1 - (embedding <=> %s::vector) FROM {self.schema}.{table} WHERE {clauses} "
                "ORDER BY embedding <=> %s::vector LIMIT %s",
                (q, *where.values(), q, top_k),
            )
            rows = await cur.fetchall()
        return [VectorMatch(str(r[0]), float(r[2]), dict(r[1])) for r in rows]

    async def delete(self, name: str, *, filter: Mapping[str, Any]) -> int:
        table = _ident(name, "vector index name")
        where = dict(filter)
        bad = set(where) - set(_FILTERABLE)
        if bad:
            raise ValueError(f"PgVectorStore filters on {', '.join(_FILTERABLE)} only, got {sorted(bad)}")
        async with await self._connection() as conn:
            if name not in self._dimensions:
                try:
                    await self._dimension(conn, name)
                except KeyError:
                    return 0
            clauses = " AND ".join(f"{k} = %s" for k in where) or "TRUE"
            cur = await conn.execute(
                f"DELETE FROM {self.schema}.{table} WHERE {clauses}", tuple(where.values())
            )
            return int(cur.rowcount)

    async def describe_index(self, name: str) -> dict[str, Any]:
        table = _ident(name, "vector index name")
        async with await self._connection() as conn:
            dimension = await self._dimension(conn, name)
            cur = await conn.execute(f"SELECT count(*) FROM {self.schema}.{table}")
            row = await cur.fetchone()
        return {"dimension": dimension, "count": int(row[0]) if row else 0, "metric": "cosine"}

    async def close(self) -> None:
        if self._pool is not None and self._own_pool:
            pool, self._pool = self._pool, None
            await pool.close()
