"""`SQLiteStore`: the embedded default (stdlib `sqlite3`), one connection driven by one worker thread."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec

from ._base import BaseStore, Page, TaskCondition, TaskQuery
from ._records import (
    BackgroundTask,
    ConflictError,
    JSONValue,
    MessageRecord,
    NotFoundError,
    StorageBusyError,
    ThreadRecord,
    utc_now,
)
from ._sql import (
    MESSAGE_COLUMNS,
    SQLITE_MIGRATIONS,
    TASK_COLUMNS,
    THREAD_COLUMNS,
    Codec,
    Migration,
    Tables,
    check_migrations,
    json_text,
    limit_clause,
)

__all__ = ["SQLiteStore"]

_T = TypeVar("_T")


def _enc_dt(value: datetime) -> str:
    # Fixed width, UTC, so text comparison in SQL is chronological comparison.
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _dec_dt(value: str) -> datetime:
    return datetime.fromisoformat(value)


_codec = Codec(ph="?", enc_json=json_text, dec_json=msgspec.json.decode, enc_dt=_enc_dt, dec_dt=_dec_dt)
_T_ = Tables.prefixed("")
_THREAD_SELECT = f"SELECT {', '.join(THREAD_COLUMNS)} FROM {_T_.threads}"
_MESSAGE_SELECT = f"SELECT {', '.join(MESSAGE_COLUMNS)} FROM {_T_.messages}"
_TASK_SELECT = f"SELECT {', '.join(TASK_COLUMNS)} FROM {_T_.tasks}"


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


class SQLiteStore(BaseStore):
    """All storage domains in one SQLite database (a file, or `":memory:"`).

    Blocking sqlite3 calls run on a dedicated single worker thread that owns the connection, so the
    event loop never blocks and calls on one store are serialised. Files use WAL; several stores (or
    processes) may open the same file: writes take SQLite's write lock (`busy_timeout` waits for it),
    and compare-and-set updates are single `UPDATE ... WHERE status = ?` statements.
    """

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, busy_timeout_ms: int = 10_000) -> None:
        super().__init__()
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
                        # Switching to WAL needs an exclusive lock; a file already in WAL is left alone.
                        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                            conn.execute("PRAGMA journal_mode = WAL")
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

    async def _save_thread(self, thread: ThreadRecord) -> None:
        params = _codec.thread_params(thread)
        sql = (
            f"INSERT INTO {_T_.threads} ({', '.join(THREAD_COLUMNS)}) VALUES ({_codec.placeholders(6)}) "
            "ON CONFLICT (id) DO UPDATE SET resource_id = excluded.resource_id, title = excluded.title, "
            "metadata = excluded.metadata, created_at = excluded.created_at, updated_at = excluded.updated_at"
        )
        await self._call("save_thread", lambda c: c.execute(sql, params))

    async def _find_thread(self, thread_id: str) -> ThreadRecord | None:
        row = await self._call(
            "find_thread", lambda c: c.execute(f"{_THREAD_SELECT} WHERE id = ?", (thread_id,)).fetchone()
        )
        return None if row is None else _codec.thread_from_row(row)

    async def _list_threads(self, resource_id: str | None) -> list[ThreadRecord]:
        params: tuple[str, ...] = ()
        if resource_id is None:
            sql = f"{_THREAD_SELECT} ORDER BY created_at, id"
        else:
            sql, params = f"{_THREAD_SELECT} WHERE resource_id = ? ORDER BY created_at, id", (resource_id,)
        rows = await self._call("list_threads", lambda c: c.execute(sql, params).fetchall())
        return [_codec.thread_from_row(r) for r in rows]

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
        upsert = (
            f"INSERT INTO {_T_.messages} ({', '.join(MESSAGE_COLUMNS)}) VALUES ({_codec.placeholders(7)}) "
            "ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id, resource_id = excluded.resource_id, "
            "role = excluded.role, type = excluded.type, content = excluded.content, "
            "created_at = excluded.created_at"
        )

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

    async def _list_messages(
        self, thread_id: str, last: int | None, pg: Page
    ) -> tuple[list[MessageRecord], int]:
        def run(c: sqlite3.Connection) -> tuple[list[Any], int]:
            total = c.execute(
                f"SELECT count(*) FROM {_T_.messages} WHERE thread_id = ?", (thread_id,)
            ).fetchone()[0]
            if last is not None:
                rows = c.execute(
                    f"{_MESSAGE_SELECT} WHERE thread_id = ? ORDER BY created_at DESC, seq DESC LIMIT ?",
                    (thread_id, last),
                ).fetchall()
                rows.reverse()
            else:
                limit, extra = limit_clause("?", pg)
                rows = c.execute(
                    f"{_MESSAGE_SELECT} WHERE thread_id = ? ORDER BY created_at, seq{limit}",
                    (thread_id, *extra),
                ).fetchall()
            return rows, total

        rows, total = await self._call("list_messages", run)
        return [_codec.message_from_row(r) for r in rows], total

    async def _delete_messages(self, message_ids: list[str]) -> int:
        sql = f"DELETE FROM {_T_.messages} WHERE id IN ({_codec.placeholders(len(message_ids))})"
        return await self._call("delete_messages", lambda c: c.execute(sql, message_ids).rowcount)

    # --------------------------------------------------------------------------- background tasks

    async def _create_task(self, task: BackgroundTask) -> None:
        params = _codec.task_params(task)
        sql = f"INSERT INTO {_T_.tasks} ({', '.join(TASK_COLUMNS)}) VALUES ({_codec.placeholders(len(TASK_COLUMNS))})"

        def run(c: sqlite3.Connection) -> None:
            try:
                c.execute(sql, params)
            except sqlite3.IntegrityError as exc:
                if "UNIQUE" in str(exc):
                    raise ConflictError("background task", task.id) from None
                raise

        await self._call("create_task", run)

    async def _find_task(self, task_id: str) -> BackgroundTask | None:
        row = await self._call(
            "find_task", lambda c: c.execute(f"{_TASK_SELECT} WHERE id = ?", (task_id,)).fetchone()
        )
        return None if row is None else _codec.task_from_row(row)

    async def _update_task(self, task_id: str, changes: dict[str, Any], condition: TaskCondition) -> bool:
        sql, params = _codec.task_update_sql(_T_.tasks, task_id, changes, condition)

        def run(c: sqlite3.Connection) -> bool:
            # One statement = one atomic write transaction: the status test and the write cannot interleave
            # with another writer, on this connection or any other.
            if c.execute(sql, params).rowcount > 0:
                return True
            if c.execute(f"SELECT 1 FROM {_T_.tasks} WHERE id = ?", (task_id,)).fetchone() is None:
                raise NotFoundError("background task", task_id)
            return False

        return await self._call("update_task", run)

    async def _list_tasks(self, query: TaskQuery, desc: bool, pg: Page) -> tuple[list[BackgroundTask], int]:
        where, params = _codec.task_where(query)
        direction = "DESC" if desc else "ASC"
        limit, extra = limit_clause("?", pg)

        def run(c: sqlite3.Connection) -> tuple[list[Any], int]:
            total = c.execute(f"SELECT count(*) FROM {_T_.tasks}{where}", params).fetchone()[0]
            rows = c.execute(
                f"{_TASK_SELECT}{where} ORDER BY created_at {direction}, seq {direction}{limit}",
                [*params, *extra],
            ).fetchall()
            return rows, total

        rows, total = await self._call("list_tasks", run)
        return [_codec.task_from_row(r) for r in rows], total

    async def _count_tasks(self, query: TaskQuery) -> int:
        where, params = _codec.task_where(query)
        return int(
            await self._call(
                "count_tasks",
                lambda c: c.execute(f"SELECT count(*) FROM {_T_.tasks}{where}", params).fetchone()[0],
            )
        )

    async def _renew_leases(self, owner_id: str, lease_expires_at: datetime) -> list[str]:
        sql = f"UPDATE {_T_.tasks} SET lease_expires_at = ? WHERE owner_id = ? RETURNING id"
        params = (_enc_dt(lease_expires_at), owner_id)
        rows = await self._call("renew_task_leases", lambda c: c.execute(sql, params).fetchall())
        return [r[0] for r in rows]

    async def _delete_task(self, task_id: str) -> bool:
        return await self._call(
            "delete_task",
            lambda c: c.execute(f"DELETE FROM {_T_.tasks} WHERE id = ?", (task_id,)).rowcount > 0,
        )

    async def _delete_tasks(self, query: TaskQuery) -> int:
        where, params = _codec.task_where(query)
        return int(
            await self._call(
                "delete_tasks_older_than",
                lambda c: c.execute(f"DELETE FROM {_T_.tasks}{where}", params).rowcount,
            )
        )

    # ------------------------------------------------------------------------- workflow snapshots

    async def _persist_snapshot(
        self, workflow_name: str, run_id: str, snapshot: JSONValue, resource_id: str | None
    ) -> None:
        now = _enc_dt(utc_now())
        params = (workflow_name, run_id, resource_id, json_text(snapshot), now, now)
        sql = (
            f"INSERT INTO {_T_.snapshots} (workflow_name, run_id, resource_id, snapshot, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (workflow_name, run_id) DO UPDATE SET "
            "resource_id = excluded.resource_id, snapshot = excluded.snapshot, updated_at = excluded.updated_at"
        )
        await self._call("persist_workflow_snapshot", lambda c: c.execute(sql, params))

    async def _load_snapshot(self, workflow_name: str, run_id: str) -> JSONValue | None:
        row = await self._call(
            "load_workflow_snapshot",
            lambda c: c.execute(
                f"SELECT snapshot FROM {_T_.snapshots} WHERE workflow_name = ? AND run_id = ?",
                (workflow_name, run_id),
            ).fetchone(),
        )
        return None if row is None else msgspec.json.decode(row[0])

    async def _delete_snapshot(self, workflow_name: str, run_id: str) -> bool:
        sql = f"DELETE FROM {_T_.snapshots} WHERE workflow_name = ? AND run_id = ?"
        return await self._call(
            "delete_workflow_snapshot", lambda c: c.execute(sql, (workflow_name, run_id)).rowcount > 0
        )

    # ------------------------------------------------------------------------------- thread state

    async def _get_state(self, thread_id: str, key: str) -> JSONValue | None:
        sql = f"SELECT value FROM {_T_.state} WHERE thread_id = ? AND state_key = ?"
        row = await self._call("get_thread_state", lambda c: c.execute(sql, (thread_id, key)).fetchone())
        return None if row is None else msgspec.json.decode(row[0])

    async def _set_state(self, thread_id: str, key: str, value: JSONValue) -> None:
        params = (thread_id, key, json_text(value), _enc_dt(utc_now()))
        sql = (
            f"INSERT INTO {_T_.state} (thread_id, state_key, value, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (thread_id, state_key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
        )
        await self._call("set_thread_state", lambda c: c.execute(sql, params))

    async def _delete_state(self, thread_id: str, key: str) -> bool:
        sql = f"DELETE FROM {_T_.state} WHERE thread_id = ? AND state_key = ?"
        return await self._call(
            "delete_thread_state", lambda c: c.execute(sql, (thread_id, key)).rowcount > 0
        )

    async def _list_state(self, thread_id: str) -> dict[str, JSONValue]:
        sql = f"SELECT state_key, value FROM {_T_.state} WHERE thread_id = ? ORDER BY state_key"
        rows = await self._call("list_thread_state", lambda c: c.execute(sql, (thread_id,)).fetchall())
        return {k: msgspec.json.decode(v) for k, v in rows}

    async def _clear_all(self) -> None:
        def run(c: sqlite3.Connection) -> None:
            with _transaction(c):
                for table in (_T_.messages, _T_.state, _T_.threads, _T_.tasks, _T_.snapshots):
                    c.execute(f"DELETE FROM {table}")

        await self._call("dangerously_clear_all", run)
