"""``SqliteVecStore``: the embedded vector store, sqlite-vec's ``vec0`` KNN index in a SQLite file
(``pip install agentstream[vector]``).

Python's own ``sqlite3`` module is often built without extension loading (it is here), so the
store talks to SQLite through ``apsw``, which bundles a SQLite that loads extensions; calls run in
a worker thread, one at a time. ``resource_id`` is the vec0 *partition key* (a query of one
resource scans only its rows) and ``thread_id`` a metadata column, so a scoped query is filtered
inside the KNN search rather than after it
(docs/decisions/issue-27-vector.md).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._vector import VectorMatch

__all__ = ["SqliteVecStore"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_FILTERABLE = ("thread_id", "resource_id")


def _check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f"vector index name must match {_NAME.pattern}, got {name!r}")
    return name


class SqliteVecStore:
    """Vector indexes in the SQLite file ``path`` (``":memory:"`` for a process-local one)."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        self._conn: Any = None
        self._lock = asyncio.Lock()
        self._dimensions: dict[str, int] = {}

    def _open(self) -> Any:
        if self._conn is None:
            try:
                import apsw
                import sqlite_vec  # type: ignore[import-untyped]
            except ImportError as exc:  # pragma: no cover - depends on the installed extras
                raise ImportError(
                    "SqliteVecStore needs the vector extra: pip install 'agentstream[vector]'"
                ) from exc
            conn = apsw.Connection(self.path)
            conn.enable_load_extension(True)
            conn.load_extension(sqlite_vec.loadable_path())
            conn.enable_load_extension(False)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS agentstream_vector_indexes (name TEXT PRIMARY KEY, dimension INTEGER NOT NULL)"
            )
            self._conn = conn
        return self._conn

    async def _run(self, fn: Any, *args: Any) -> Any:
        async with self._lock:
            return await asyncio.to_thread(fn, *args)

    def _dimension(self, name: str) -> int:
        found = self._dimensions.get(name)
        if found is None:
            rows = list(
                self._open().execute(
                    "SELECT dimension FROM agentstream_vector_indexes WHERE name = ?", (name,)
                )
            )
            if not rows:
                raise KeyError(f"no vector index {name!r} (create_index first)")
            found = self._dimensions[name] = int(rows[0][0])
        return found

    def _create(self, name: str, dimension: int) -> None:
        conn = self._open()
        rows = list(conn.execute("SELECT dimension FROM agentstream_vector_indexes WHERE name = ?", (name,)))
        if rows:
            if int(rows[0][0]) != dimension:
                raise ValueError(f"index {name!r} exists with dimension {rows[0][0]}, not {dimension}")
            return
        with conn:
            conn.execute(
                f"CREATE VIRTUAL TABLE {name} USING vec0(embedding float[{dimension}] distance_metric=cosine, "
                "resource_id text partition key, thread_id text, +id text, +metadata text)"
            )
            conn.execute(f"CREATE TABLE {name}_ids (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE)")
            conn.execute(
                "INSERT INTO agentstream_vector_indexes (name, dimension) VALUES (?, ?)", (name, dimension)
            )
        self._dimensions[name] = dimension

    async def create_index(self, name: str, dimension: int) -> None:
        if not isinstance(dimension, int) or dimension < 1:
            raise ValueError(f"vector index dimension must be an int >= 1, got {dimension!r}")
        await self._run(self._create, _check_name(name), dimension)

    def _upsert(self, name: str, rows: list[tuple[str, list[float], dict[str, Any]]]) -> None:
        import sqlite_vec

        dimension = self._dimension(name)
        conn = self._open()
        with conn:
            for id_, vector, meta in rows:
                if len(vector) != dimension:
                    raise ValueError(
                        f"index {name!r} has dimension {dimension}, got a vector of dimension {len(vector)}"
                    )
                found = list(conn.execute(f"SELECT rowid FROM {name}_ids WHERE id = ?", (id_,)))
                if found:
                    rowid = int(found[0][0])
                    conn.execute(f"DELETE FROM {name} WHERE rowid = ?", (rowid,))
                else:
                    conn.execute(f"INSERT INTO {name}_ids (id) VALUES (?)", (id_,))
                    rowid = int(conn.last_insert_rowid())
                conn.execute(
                    f"INSERT INTO {name} (rowid, embedding, thread_id, resource_id, id, metadata) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        rowid,
                        sqlite_vec.serialize_float32(vector),
                        str(meta.get("thread_id", "")),
                        str(meta.get("resource_id", "")),
                        id_,
                        json.dumps(meta, ensure_ascii=False),
                    ),
                )

    async def upsert(
        self,
        name: str,
        ids: Sequence[str],
        vectors: Sequence[Sequence[float]],
        metadata: Sequence[Mapping[str, Any]],
    ) -> None:
        rows = [(i, [float(x) for x in v], dict(m)) for i, v, m in zip(ids, vectors, metadata, strict=True)]
        await self._run(self._upsert, _check_name(name), rows)

    def _query(self, name: str, vector: list[float], top_k: int, where: dict[str, Any]) -> list[VectorMatch]:
        import sqlite_vec

        dimension = self._dimension(name)
        if len(vector) != dimension:
            raise ValueError(
                f"index {name!r} has dimension {dimension}, got a vector of dimension {len(vector)}"
            )
        clauses = "".join(f" AND {key} = ?" for key in where)
        sql = (
            f"SELECT id, metadata, distance FROM {name} WHERE embedding MATCH ? AND k = ?{clauses} "
            "ORDER BY distance"
        )
        params = (sqlite_vec.serialize_float32(vector), top_k, *(str(v) for v in where.values()))
        return [
            VectorMatch(str(id_), 1.0 - float(distance), json.loads(meta))
            for id_, meta, distance in self._open().execute(sql, params)
        ]

    async def query(
        self, name: str, vector: Sequence[float], *, top_k: int, filter: Mapping[str, Any] | None = None
    ) -> list[VectorMatch]:
        where = dict(filter or {})
        bad = set(where) - set(_FILTERABLE)
        if bad:
            raise ValueError(f"SqliteVecStore filters on {', '.join(_FILTERABLE)} only, got {sorted(bad)}")
        return list(await self._run(self._query, _check_name(name), [float(x) for x in vector], top_k, where))

    def _delete(self, name: str, where: dict[str, Any]) -> int:
        conn = self._open()
        if not list(conn.execute("SELECT 1 FROM agentstream_vector_indexes WHERE name = ?", (name,))):
            return 0
        clauses = " AND ".join(f"{key} = ?" for key in where) or "1"
        with conn:
            rowids = [
                int(r[0])
                for r in conn.execute(f"SELECT rowid FROM {name} WHERE {clauses}", tuple(where.values()))
            ]
            for rowid in rowids:
                conn.execute(f"DELETE FROM {name} WHERE rowid = ?", (rowid,))
                conn.execute(f"DELETE FROM {name}_ids WHERE rowid = ?", (rowid,))
        return len(rowids)

    async def delete(self, name: str, *, filter: Mapping[str, Any]) -> int:
        where = dict(filter)
        bad = set(where) - set(_FILTERABLE)
        if bad:
            raise ValueError(f"SqliteVecStore filters on {', '.join(_FILTERABLE)} only, got {sorted(bad)}")
        return int(await self._run(self._delete, _check_name(name), where))

    def _describe(self, name: str) -> dict[str, Any]:
        dimension = self._dimension(name)
        (count,) = next(iter(self._open().execute(f"SELECT count(*) FROM {name}_ids")))
        return {"dimension": dimension, "count": int(count), "metric": "cosine"}

    async def describe_index(self, name: str) -> dict[str, Any]:
        return dict(await self._run(self._describe, _check_name(name)))

    async def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await self._run(conn.close)
