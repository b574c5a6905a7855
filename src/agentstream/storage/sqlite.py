"""`SQLiteStore`: the embedded default (stdlib `sqlite3`), one connection driven by one worker thread."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

from .._wellformed import dumps_wellformed, loads_wellformed
from ._records import (
    MessageRecord,
    NotFoundError,
    StorageBusyError,
    utc_now,
)
from ._sql import (
    SQLITE_MIGRATIONS,
    Codec,
    Migration,
    Tables,
    check_migrations,
)
from ._sqlstore import Row, SQLStore

__all__ = ["SQLiteStore"]

_T = TypeVar("_T")


def _enc_dt(value: datetime) -> str:
    # Fixed width, UTC, so text comparison in SQL is chronological comparison.
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _dec_dt(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _json_text(value: Any) -> str:
    return dumps_wellformed(value).decode()


# A lone surrogate (SQLite's UTF-8 text cannot hold one) is stored as its JSON escape.
_codec = Codec(ph="?", enc_json=_json_text, dec_json=loads_wellformed, enc_dt=_enc_dt, dec_dt=_dec_dt)
_T_ = Tables.prefixed("")


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """`BEGIN IMMEDIATE` (take the write lock up front, waiting up to busy_timeout) ... `COMMIT`."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _enable_wal(conn: sqlite3.Connection, busy_timeout_ms: float) -> None:
    """Switch the file to WAL, retrying while other connections race to do the same.

    The switch needs an exclusive lock, and SQLite answers "database is locked" at once instead of
    calling the busy handler when another connection holds any lock, so several processes opening a
    new file together would fail without this loop. A file already in WAL is left alone.
    """
    deadline = time.monotonic() + busy_timeout_ms / 1000
    pause = 0.005
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                return
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)  # pragma: no cover - Python < 3.11 has no error codes


def _applied_versions(conn: sqlite3.Connection) -> set[int]:
    """Versions recorded so far, read without taking the write lock (empty for a new database)."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_T_.migrations,)
    ).fetchone()
    if exists is None:
        return set()
    return {row[0] for row in conn.execute(f"SELECT version FROM {_T_.migrations}")}


def apply_migrations(conn: sqlite3.Connection, migrations: Sequence[Migration]) -> list[int]:
    """Apply the migrations not yet recorded in `schema_migrations`; returns the versions applied.

    When every version is already recorded this only reads: opening a migrated database never waits
    for (or blocks) another process's writes.
    """
    check_migrations(migrations)
    applied: list[int] = []
    done = _applied_versions(conn)
    if all(m.version in done for m in migrations):
        return applied
    with _transaction(conn):
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {_T_.migrations} ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
    for migration in migrations:
        with _transaction(conn):
            done = conn.execute(
                f"SELECT 1 FROM {_T_.migrations} WHERE version = ?", (migration.version,)
            ).fetchone()
            if done:
                continue
            for statement in migration.statements:
                conn.execute(statement)
            conn.execute(
                f"INSERT INTO {_T_.migrations} (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, _enc_dt(utc_now())),
            )
            applied.append(migration.version)
    return applied


class SQLiteStore(SQLStore):
    """All storage domains in one SQLite database (a file, or `":memory:"`).

    Blocking sqlite3 calls run on a dedicated single worker thread that owns the connection, so the
    event loop never blocks and calls on one store are serialised. Files use WAL; several stores (or
    processes) may open the same file: writes take SQLite's write lock (`busy_timeout` waits for it),
    and compare-and-set updates are single `UPDATE ... WHERE status = ?` statements.
    """

    _snapshot_status = "json_extract(snapshot, '$.status')"

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, busy_timeout_ms: int = 10_000) -> None:
        super().__init__(_codec, _T_)
        self.path = os.fspath(path)
        self.busy_timeout_ms = busy_timeout_ms
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None
        self._migrations: Sequence[Migration] = SQLITE_MIGRATIONS

    # ------------------------------------------------------------------------------ plumbing

    async def _call(self, op: str, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        executor = self._executor
        if executor is None:
            raise RuntimeError("SQLiteStore is not open")
        conn = self._conn

        def run() -> _T:
            assert conn is not None
            with self._busy_errors(op):
                return fn(conn)

        return await asyncio.get_running_loop().run_in_executor(executor, run)

    async def _fetchone(self, op: str, sql: str, params: Sequence[Any] = ()) -> Row | None:
        row: Row | None = await self._call(op, lambda c: c.execute(sql, params).fetchone())
        return row

    async def _fetchall(self, op: str, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        rows: list[Row] = await self._call(op, lambda c: c.execute(sql, params).fetchall())
        return rows

    async def _rowcount(self, op: str, sql: str, params: Sequence[Any] = ()) -> int:
        return int(await self._call(op, lambda c: c.execute(sql, params).rowcount))

    def _is_unique_violation(self, exc: Exception) -> bool:
        return isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in str(exc)

    @contextmanager
    def _busy_errors(self, op: str) -> Iterator[None]:
        """Turn SQLite's "database is locked" into a `StorageBusyError` that says what to do."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                raise
            raise StorageBusyError(
                f"SQLiteStore.{op}",
                f"SQLite database {self.path!r}",
                f"still locked by another connection or process after waiting busy_timeout_ms="
                f"{self.busy_timeout_ms} ({exc})",
                "raise SQLiteStore(path, busy_timeout_ms=...), shorten the other writer's transactions, "
                "or use PostgresStore for many concurrent writers",
            ) from exc

    async def _open(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentstream-sqlite")
        loop = asyncio.get_running_loop()

        def connect() -> sqlite3.Connection:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            try:
                with self._busy_errors("init"):
                    conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
                    conn.execute("PRAGMA foreign_keys = ON")
                    if self.path != ":memory:" and not self.path.startswith("file::memory:"):
                        _enable_wal(conn, self.busy_timeout_ms)
                        conn.execute("PRAGMA synchronous = NORMAL")
                    apply_migrations(conn, self._migrations)
            except BaseException:
                conn.close()
                raise
            return conn

        try:
            self._conn = await loop.run_in_executor(self._executor, connect)
        except BaseException:
            self._executor.shutdown(wait=False)
            self._executor = None
            raise

    async def _close(self) -> None:
        conn, executor = self._conn, self._executor
        if conn is not None and executor is not None:
            await asyncio.get_running_loop().run_in_executor(executor, conn.close)
        if executor is not None:
            executor.shutdown(wait=True)
        self._conn = None
        self._executor = None

    async def applied_migrations(self) -> list[int]:
        """Versions recorded in `schema_migrations`, ascending."""
        await self._ready()
        rows = await self._call(
            "applied_migrations",
            lambda c: c.execute(f"SELECT version FROM {_T_.migrations} ORDER BY version").fetchall(),
        )
        return [r[0] for r in rows]

    # ---------------------------------------------------------------------- threads & messages

    async def _delete_thread(self, thread_id: str) -> bool:
        def run(c: sqlite3.Connection) -> bool:
            with _transaction(c):
                c.execute(f"DELETE FROM {_T_.messages} WHERE thread_id = ?", (thread_id,))
                c.execute(f"DELETE FROM {_T_.state} WHERE thread_id = ?", (thread_id,))
                return c.execute(f"DELETE FROM {_T_.threads} WHERE id = ?", (thread_id,)).rowcount > 0

        return await self._call("delete_thread", run)

    async def _save_messages(self, messages: list[MessageRecord]) -> None:
        rows = [_codec.message_params(m) for m in messages]
        thread_ids = list(dict.fromkeys(m.thread_id for m in messages))
        now = _enc_dt(utc_now())
        upsert = self._message_upsert_sql()

        def run(c: sqlite3.Connection) -> None:
            with _transaction(c):
                for thread_id in thread_ids:
                    if (
                        c.execute(f"SELECT 1 FROM {_T_.threads} WHERE id = ?", (thread_id,)).fetchone()
                        is None
                    ):
                        raise NotFoundError("thread", thread_id)
                c.executemany(upsert, rows)
                c.executemany(
                    f"UPDATE {_T_.threads} SET updated_at = ? WHERE id = ?", [(now, t) for t in thread_ids]
                )

        await self._call("save_messages", run)

    async def _clear_all(self) -> None:
        def run(c: sqlite3.Connection) -> None:
            with _transaction(c):
                for table in (_T_.messages, _T_.state, _T_.threads, _T_.tasks, _T_.snapshots, _T_.spans):
                    c.execute(f"DELETE FROM {table}")

        await self._call("dangerously_clear_all", run)
