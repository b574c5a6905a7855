"""`PostgresStore`: the production store (psycopg 3 async + psycopg_pool; install `agentstream[postgres]`)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable, Sequence
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

from ._records import (
    MessageRecord,
    NotFoundError,
    utc_now,
)
from ._sql import (
    MIGRATIONS_TABLE,
    POSTGRES_MIGRATIONS,
    Codec,
    Migration,
    Tables,
    check_migrations,
    json_text,
)
from ._sqlstore import Row, SQLStore

__all__ = ["PostgresStore"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
Pool = AsyncConnectionPool[psycopg.AsyncConnection[tuple[Any, ...]]]


# jsonb cannot hold U+0000 ("\u0000 cannot be converted to text") and UTF-8 no lone surrogate, yet
# a model's tool arguments may hold either. Such strings (keys too) are stored escaped with a
# private-use character: _ESC itself as _ESC _ESC, NUL as _ESC "0", a surrogate as _ESC "u" and
# four hex digits; values that need none of it (nearly all) are stored as they are.
_ESC = "\ue000"
_ESCAPED = re.compile("[\ue000\x00\ud800-\udfff]")
_UNESCAPED = re.compile("\ue000(\ue000|0|u[0-9a-f]{4})")


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    if char == _ESC:
        return _ESC + _ESC
    return _ESC + "0" if char == "\x00" else f"{_ESC}u{ord(char):04x}"


def _unescape_char(match: re.Match[str]) -> str:
    code = match.group(1)
    if code == _ESC:
        return _ESC
    return "\x00" if code == "0" else chr(int(code[1:], 16))


def _walk(value: Any, text: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {text(k) if isinstance(k, str) else k: _walk(v, text) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_walk(v, text) for v in value]
    return value


def pg_json_text(value: Any) -> str:
    """``value`` as JSON PostgreSQL's jsonb accepts: strings holding NUL, a lone surrogate or
    `_ESC` escaped (see `pg_json_loads`, which restores them exactly)."""
    try:
        text = json_text(value)
    except UnicodeEncodeError:  # a lone surrogate somewhere
        text = None
    if text is not None and "\\u0000" not in text and _ESC not in text:
        return text
    return json_text(_walk(value, lambda s: _ESCAPED.sub(_escape_char, s)))


def pg_json_loads(data: bytes | str) -> Any:
    """A jsonb value read back: parsed, its escaped strings restored."""
    value = msgspec.json.decode(data)
    marker = _ESC if isinstance(data, str) else _ESC.encode()
    if marker not in data:  # type: ignore[operator]
        return value
    return _walk(value, lambda s: _UNESCAPED.sub(_unescape_char, s) if _ESC in s else s)


def _enc_json(value: Any) -> Jsonb:
    return Jsonb(value, dumps=pg_json_text)


def _dec_json(value: Any) -> Any:
    # jsonb columns arrive already parsed (by pg_json_loads: see _configure and _connection).
    return value


def _dec_dt(value: datetime) -> datetime:
    return value.astimezone(UTC)


def _enc_dt(value: datetime) -> datetime:
    return value


_codec = Codec(ph="%s", enc_json=_enc_json, dec_json=_dec_json, enc_dt=_enc_dt, dec_dt=_dec_dt)


async def _configure(conn: psycopg.AsyncConnection[Any]) -> None:
    set_json_loads(pg_json_loads, conn)


class PostgresStore(SQLStore):
    """All storage domains in PostgreSQL tables of one schema (default `public`).

    Give a `dsn` (the store opens and owns an `AsyncConnectionPool`) or an open `pool` you own.
    Migrations run on `init()` under a transaction-scoped advisory lock, so several processes may
    start at once. Compare-and-set updates are single `UPDATE ... WHERE id = $1 AND status = $2`
    statements: under concurrent writers exactly one sees the expected status.
    """

    _snapshot_status = "snapshot->>'status'"

    def __init__(
        self,
        dsn: str | None = None,
        *,
        pool: Pool | None = None,
        schema: str = "public",
        min_size: int = 1,
        max_size: int = 10,
    ) -> None:
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
        super().__init__(_codec, Tables.prefixed(f"{self._q}."))
        self._migrations: Sequence[Migration] = POSTGRES_MIGRATIONS

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[psycopg.AsyncConnection[tuple[Any, ...]]]:
        """A pooled connection reading jsonb with `pg_json_loads` (set here on a pool given by the
        caller, whose connections this store did not configure)."""
        async with self.pool.connection() as conn:
            if not self._owns_pool:
                set_json_loads(pg_json_loads, conn)
            yield conn

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
        done = await self._applied_versions()
        if all(m.version in done for m in migrations):
            # Nothing due: no advisory lock, no DDL, so a migrated schema opens with read access only.
            return applied
        async with self._connection() as conn:
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

    async def _applied_versions(self) -> set[int]:
        row = await self._fetchone("init", "SELECT to_regclass(%s)", (f"{self._q}.{MIGRATIONS_TABLE}",))
        if row is None or row[0] is None:
            return set()
        return {r[0] for r in await self._fetchall("init", f"SELECT version FROM {self._t.migrations}")}

    async def applied_migrations(self) -> list[int]:
        """Versions recorded in `schema_migrations`, ascending."""
        await self._ready()
        rows = await self._fetchall(
            "applied_migrations", f"SELECT version FROM {self._t.migrations} ORDER BY version"
        )
        return [r[0] for r in rows]

    # ------------------------------------------------------------------------------- helpers

    async def _fetchone(self, op: str, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        async with self._connection() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchone()

    async def _fetchall(self, op: str, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        async with self._connection() as conn:
            cur = await conn.execute(sql, params)
            return list(await cur.fetchall())

    async def _rowcount(self, op: str, sql: str, params: Sequence[Any] = ()) -> int:
        async with self._connection() as conn:
            cur = await conn.execute(sql, params)
            return cur.rowcount

    def _is_unique_violation(self, exc: Exception) -> bool:
        return isinstance(exc, pg_errors.UniqueViolation)

    # ---------------------------------------------------------------------- threads & messages

    async def _delete_thread(self, thread_id: str) -> bool:
        async with self._connection() as conn, conn.transaction():
            await conn.execute(f"DELETE FROM {self._t.messages} WHERE thread_id = %s", (thread_id,))
            await conn.execute(f"DELETE FROM {self._t.state} WHERE thread_id = %s", (thread_id,))
            cur = await conn.execute(f"DELETE FROM {self._t.threads} WHERE id = %s", (thread_id,))
            return cur.rowcount > 0

    async def _save_messages(self, messages: list[MessageRecord]) -> None:
        thread_ids = list(dict.fromkeys(m.thread_id for m in messages))
        upsert = self._message_upsert_sql()
        async with self._connection() as conn, conn.transaction():
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

    # ------------------------------------------------------------------------- workflow snapshots

    async def _clear_all(self) -> None:
        t = self._t
        await self._rowcount(
            "dangerously_clear_all",
            f"TRUNCATE {t.messages}, {t.state}, {t.threads}, {t.tasks}, {t.snapshots}, {t.spans}",
        )
