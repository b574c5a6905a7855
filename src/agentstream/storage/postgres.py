"""`PostgresStore`: the production store (psycopg 3 async + psycopg_pool; install `agentstream[postgres]`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg.types.json import Jsonb, set_json_loads
    from psycopg_pool import AsyncConnectionPool
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "PostgresStore needs psycopg 3 and psycopg_pool: pip install 'agentstream[postgres]'"
    ) from exc

from ._base import BaseStore, Page, TaskQuery
from ._records import (
    BackgroundTask,
    ConflictError,
    JSONValue,
    MessageRecord,
    NotFoundError,
    TaskStatus,
    ThreadRecord,
    utc_now,
)
from ._sql import (
    MESSAGE_COLUMNS,
    POSTGRES_MIGRATIONS,
    TASK_COLUMNS,
    THREAD_COLUMNS,
    Codec,
    Migration,
    Tables,
    check_migrations,
    json_text,
    limit_clause,
)

__all__ = ["PostgresStore"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
Pool = AsyncConnectionPool[psycopg.AsyncConnection[tuple[Any, ...]]]


def _enc_json(value: Any) -> Jsonb:
    return Jsonb(value, dumps=json_text)


def _dec_json(value: Any) -> Any:
    # jsonb columns arrive already parsed (by msgspec on our pool's connections, json.loads otherwise).
    return value


def _dec_dt(value: datetime) -> datetime:
    return value.astimezone(UTC)


def _enc_dt(value: datetime) -> datetime:
    return value


_codec = Codec(ph="%s", enc_json=_enc_json, dec_json=_dec_json, enc_dt=_enc_dt, dec_dt=_dec_dt)


async def _configure(conn: psycopg.AsyncConnection[Any]) -> None:
    set_json_loads(msgspec.json.decode, conn)


class PostgresStore(BaseStore):
    """All storage domains in PostgreSQL tables of one schema (default `public`).

    Give a `dsn` (the store opens and owns an `AsyncConnectionPool`) or an open `pool` you own.
    Migrations run on `init()` under a transaction-scoped advisory lock, so several processes may
    start at once. Compare-and-set updates are single `UPDATE ... WHERE id = $1 AND status = $2`
    statements: under concurrent writers exactly one sees the expected status.
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        pool: Pool | None = None,
        schema: str = "public",
        min_size: int = 1,
        max_size: int = 10,
    ) -> None:
        super().__init__()
        if (dsn is None) == (pool is None):
            raise ValueError("PostgresStore needs exactly one of dsn= or pool=")
        if not _IDENT.match(schema):
            raise ValueError(f"invalid schema {schema!r}: expected a plain SQL identifier")
        self.dsn = dsn
        self.schema = schema
        self._pool = pool
        self._owns_pool = pool is None
        self._min_size = min_size
        self._max_size = max_size
        self._q = f'"{schema}"'
        self._t = Tables.prefixed(f"{self._q}.")
        self._migrations: Sequence[Migration] = POSTGRES_MIGRATIONS
        t = self._t
        self._thread_select = f"SELECT {', '.join(THREAD_COLUMNS)} FROM {t.threads}"
        self._message_select = f"SELECT {', '.join(MESSAGE_COLUMNS)} FROM {t.messages}"
        self._task_select = f"SELECT {', '.join(TASK_COLUMNS)} FROM {t.tasks}"

    @property
    def pool(self) -> Pool:
        """The open psycopg connection pool; `RuntimeError` before `init()`."""
        if self._pool is None:
            raise RuntimeError("PostgresStore is not open")
        return self._pool

    async def _open(self) -> None:
        if self._owns_pool:
            assert self.dsn is not None
            pool: Pool = AsyncConnectionPool(
                self.dsn,
                min_size=self._min_size,
                max_size=self._max_size,
                kwargs={"autocommit": True},
                configure=_configure,
                open=False,
            )
            await pool.open(wait=True, timeout=10)
            self._pool = pool
        try:
            await self._apply_migrations(self._migrations)
        except BaseException:
            await self._close()
            raise

    async def _close(self) -> None:
        if self._owns_pool and self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def _apply_migrations(self, migrations: Sequence[Migration]) -> list[int]:
        check_migrations(migrations)
        lock_key = f"agentstream-migrations:{self.schema}"
        applied: list[int] = []
        async with self.pool.connection() as conn:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (lock_key,))
                await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self._q}")
                await conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {self._t.migrations} ("
                    "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
                )
            for migration in migrations:
                async with conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (lock_key,))
                    cur = await conn.execute(
                        f"SELECT 1 FROM {self._t.migrations} WHERE version = %s", (migration.version,)
                    )
                    if await cur.fetchone() is not None:
                        continue
                    for statement in migration.statements:
                        await conn.execute(statement.replace("{s}", self._q))
                    await conn.execute(
                        f"INSERT INTO {self._t.migrations} (version, name, applied_at) VALUES (%s, %s, %s)",
                        (migration.version, migration.name, utc_now()),
                    )
                    applied.append(migration.version)
        return applied

    async def applied_migrations(self) -> list[int]:
        """Versions recorded in `schema_migrations`, ascending."""
        await self._ready()
        rows = await self._fetchall(f"SELECT version FROM {self._t.migrations} ORDER BY version")
        return [r[0] for r in rows]

    # ------------------------------------------------------------------------------- helpers

    async def _fetchone(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchone()

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

    async def _rowcount(self, sql: str, params: Sequence[Any] = ()) -> int:
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return cur.rowcount

    # ---------------------------------------------------------------------- threads & messages

    async def _save_thread(self, thread: ThreadRecord) -> None:
        await self._rowcount(
            f"INSERT INTO {self._t.threads} ({', '.join(THREAD_COLUMNS)}) VALUES ({_codec.placeholders(6)}) "
            "ON CONFLICT (id) DO UPDATE SET resource_id = excluded.resource_id, title = excluded.title, "
            "metadata = excluded.metadata, created_at = excluded.created_at, updated_at = excluded.updated_at",
            _codec.thread_params(thread),
        )

    async def _find_thread(self, thread_id: str) -> ThreadRecord | None:
        row = await self._fetchone(f"{self._thread_select} WHERE id = %s", (thread_id,))
        return None if row is None else _codec.thread_from_row(row)

    async def _list_threads(self, resource_id: str | None) -> list[ThreadRecord]:
        if resource_id is None:
            rows = await self._fetchall(f"{self._thread_select} ORDER BY created_at, id")
        else:
            rows = await self._fetchall(
                f"{self._thread_select} WHERE resource_id = %s ORDER BY created_at, id", (resource_id,)
            )
        return [_codec.thread_from_row(r) for r in rows]

    async def _delete_thread(self, thread_id: str) -> bool:
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute(f"DELETE FROM {self._t.messages} WHERE thread_id = %s", (thread_id,))
            await conn.execute(f"DELETE FROM {self._t.state} WHERE thread_id = %s", (thread_id,))
            cur = await conn.execute(f"DELETE FROM {self._t.threads} WHERE id = %s", (thread_id,))
            return cur.rowcount > 0

    async def _save_messages(self, messages: list[MessageRecord]) -> None:
        thread_ids = list(dict.fromkeys(m.thread_id for m in messages))
        upsert = (
            f"INSERT INTO {self._t.messages} ({', '.join(MESSAGE_COLUMNS)}) VALUES ({_codec.placeholders(7)}) "
            "ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id, resource_id = excluded.resource_id, "
            "role = excluded.role, type = excluded.type, content = excluded.content, "
            "created_at = excluded.created_at"
        )
        async with self.pool.connection() as conn, conn.transaction():
            # Lock the threads (shared) so they cannot vanish between the check and the insert.
            cur = await conn.execute(
                f"SELECT id FROM {self._t.threads} WHERE id = ANY(%s) FOR KEY SHARE", (thread_ids,)
            )
            present = {r[0] for r in await cur.fetchall()}
            for thread_id in thread_ids:
                if thread_id not in present:
                    raise NotFoundError("thread", thread_id)
            async with conn.cursor() as c:
                await c.executemany(upsert, [_codec.message_params(m) for m in messages])
            await conn.execute(
                f"UPDATE {self._t.threads} SET updated_at = %s WHERE id = ANY(%s)", (utc_now(), thread_ids)
            )

    async def _list_messages(
        self, thread_id: str, last: int | None, pg: Page
    ) -> tuple[list[MessageRecord], int]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                f"SELECT count(*) FROM {self._t.messages} WHERE thread_id = %s", (thread_id,)
            )
            count_row = await cur.fetchone()
            total = int(count_row[0]) if count_row else 0
            if last is not None:
                cur = await conn.execute(
                    f"{self._message_select} WHERE thread_id = %s ORDER BY created_at DESC, seq DESC LIMIT %s",
                    (thread_id, last),
                )
                rows = await cur.fetchall()
                rows.reverse()
            else:
                limit, extra = limit_clause("%s", pg)
                cur = await conn.execute(
                    f"{self._message_select} WHERE thread_id = %s ORDER BY created_at, seq{limit}",
                    (thread_id, *extra),
                )
                rows = await cur.fetchall()
        return [_codec.message_from_row(r) for r in rows], total

    async def _delete_messages(self, message_ids: list[str]) -> int:
        return await self._rowcount(f"DELETE FROM {self._t.messages} WHERE id = ANY(%s)", (message_ids,))

    # --------------------------------------------------------------------------- background tasks

    async def _create_task(self, task: BackgroundTask) -> None:
        try:
            await self._rowcount(
                f"INSERT INTO {self._t.tasks} ({', '.join(TASK_COLUMNS)}) "
                f"VALUES ({_codec.placeholders(len(TASK_COLUMNS))})",
                _codec.task_params(task),
            )
        except pg_errors.UniqueViolation:
            raise ConflictError("background task", task.id) from None

    async def _find_task(self, task_id: str) -> BackgroundTask | None:
        row = await self._fetchone(f"{self._task_select} WHERE id = %s", (task_id,))
        return None if row is None else _codec.task_from_row(row)

    async def _update_task(self, task_id: str, changes: dict[str, Any], expected: TaskStatus | None) -> bool:
        sql, params = _codec.task_update_sql(self._t.tasks, task_id, changes, expected)
        async with self.pool.connection() as conn:
            # READ COMMITTED: a concurrent writer blocks on the row lock, then re-checks `status` against
            # the committed row, so exactly one of several pending->running CAS attempts applies.
            cur = await conn.execute(sql, params)
            if cur.rowcount > 0:
                return True
            cur = await conn.execute(f"SELECT 1 FROM {self._t.tasks} WHERE id = %s", (task_id,))
            if await cur.fetchone() is None:
                raise NotFoundError("background task", task_id)
            return False

    async def _list_tasks(self, query: TaskQuery, desc: bool, pg: Page) -> tuple[list[BackgroundTask], int]:
        where, params = _codec.task_where(query)
        direction = "DESC" if desc else "ASC"
        limit, extra = limit_clause("%s", pg)
        async with self.pool.connection() as conn:
            cur = await conn.execute(f"SELECT count(*) FROM {self._t.tasks}{where}", params)
            count_row = await cur.fetchone()
            total = int(count_row[0]) if count_row else 0
            cur = await conn.execute(
                f"{self._task_select}{where} ORDER BY created_at {direction}, seq {direction}{limit}",
                [*params, *extra],
            )
            rows = await cur.fetchall()
        return [_codec.task_from_row(r) for r in rows], total

    async def _count_tasks(self, query: TaskQuery) -> int:
        where, params = _codec.task_where(query)
        row = await self._fetchone(f"SELECT count(*) FROM {self._t.tasks}{where}", params)
        return int(row[0]) if row else 0

    async def _delete_task(self, task_id: str) -> bool:
        return await self._rowcount(f"DELETE FROM {self._t.tasks} WHERE id = %s", (task_id,)) > 0

    async def _delete_tasks(self, query: TaskQuery) -> int:
        where, params = _codec.task_where(query)
        return await self._rowcount(f"DELETE FROM {self._t.tasks}{where}", params)

    # ------------------------------------------------------------------------- workflow snapshots

    async def _persist_snapshot(
        self, workflow_name: str, run_id: str, snapshot: JSONValue, resource_id: str | None
    ) -> None:
        now = utc_now()
        await self._rowcount(
            f"INSERT INTO {self._t.snapshots} (workflow_name, run_id, resource_id, snapshot, created_at, updated_at) "
            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (workflow_name, run_id) DO UPDATE SET "
            "resource_id = excluded.resource_id, snapshot = excluded.snapshot, updated_at = excluded.updated_at",
            (workflow_name, run_id, resource_id, _enc_json(snapshot), now, now),
        )

    async def _load_snapshot(self, workflow_name: str, run_id: str) -> JSONValue | None:
        row = await self._fetchone(
            f"SELECT snapshot FROM {self._t.snapshots} WHERE workflow_name = %s AND run_id = %s",
            (workflow_name, run_id),
        )
        return None if row is None else row[0]

    async def _delete_snapshot(self, workflow_name: str, run_id: str) -> bool:
        n = await self._rowcount(
            f"DELETE FROM {self._t.snapshots} WHERE workflow_name = %s AND run_id = %s",
            (workflow_name, run_id),
        )
        return n > 0

    # ------------------------------------------------------------------------------- thread state

    async def _get_state(self, thread_id: str, key: str) -> JSONValue | None:
        row = await self._fetchone(
            f"SELECT value FROM {self._t.state} WHERE thread_id = %s AND state_key = %s", (thread_id, key)
        )
        return None if row is None else row[0]

    async def _set_state(self, thread_id: str, key: str, value: JSONValue) -> None:
        await self._rowcount(
            f"INSERT INTO {self._t.state} (thread_id, state_key, value, updated_at) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (thread_id, state_key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            (thread_id, key, _enc_json(value), utc_now()),
        )

    async def _delete_state(self, thread_id: str, key: str) -> bool:
        n = await self._rowcount(
            f"DELETE FROM {self._t.state} WHERE thread_id = %s AND state_key = %s", (thread_id, key)
        )
        return n > 0

    async def _list_state(self, thread_id: str) -> dict[str, JSONValue]:
        rows = await self._fetchall(
            f"SELECT state_key, value FROM {self._t.state} WHERE thread_id = %s ORDER BY state_key",
            (thread_id,),
        )
        return {r[0]: r[1] for r in rows}

    async def _clear_all(self) -> None:
        t = self._t
        await self._rowcount(f"TRUNCATE {t.messages}, {t.state}, {t.threads}, {t.tasks}, {t.snapshots}")
