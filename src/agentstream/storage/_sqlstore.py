"""`SQLStore`: the storage primitives SQLite and PostgreSQL share, written once.

A backend supplies its `Codec` (placeholders, JSON and datetime encoding), its `Tables` and three
statement runners (`_fetchone`, `_fetchall`, `_rowcount`); what needs a transaction or a dialect of
its own (deleting a thread, saving messages, clearing everything, migrations) stays in the backend.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ._base import BaseStore, Page, TaskCondition, TaskQuery
from ._records import (
    BackgroundTask,
    ConflictError,
    JSONValue,
    MessageRecord,
    NotFoundError,
    ThreadRecord,
    utc_now,
)
from ._sql import MESSAGE_COLUMNS, TASK_COLUMNS, THREAD_COLUMNS, Codec, Tables, limit_clause
from ._sqlobserved import SQLObserved

__all__ = ["SQLStore"]

Row = Sequence[Any]


class SQLStore(SQLObserved, BaseStore):
    """Single-statement storage operations over a `Codec` and `Tables` (see the module docstring)."""

    def __init__(self, codec: Codec, tables: Tables) -> None:
        super().__init__()
        self._codec = codec
        self._t = tables
        self._thread_select = f"SELECT {', '.join(THREAD_COLUMNS)} FROM {tables.threads}"
        self._message_select = f"SELECT {', '.join(MESSAGE_COLUMNS)} FROM {tables.messages}"
        self._task_select = f"SELECT {', '.join(TASK_COLUMNS)} FROM {tables.tasks}"

    # ------------------------------------------------------------------------ statement runners

    @abstractmethod
    async def _fetchone(self, op: str, sql: str, params: Sequence[Any] = ()) -> Row | None: ...
    @abstractmethod
    async def _fetchall(self, op: str, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...
    @abstractmethod
    async def _rowcount(self, op: str, sql: str, params: Sequence[Any] = ()) -> int: ...
    @abstractmethod
    def _is_unique_violation(self, exc: Exception) -> bool: ...

    async def _count(self, op: str, sql: str, params: Sequence[Any] = ()) -> int:
        row = await self._fetchone(op, sql, params)
        return int(row[0]) if row else 0

    # ---------------------------------------------------------------------- threads & messages

    async def _save_thread(self, thread: ThreadRecord) -> None:
        c = self._codec
        await self._rowcount(
            "save_thread",
            f"INSERT INTO {self._t.threads} ({', '.join(THREAD_COLUMNS)}) VALUES ({c.placeholders(6)}) "
            "ON CONFLICT (id) DO UPDATE SET resource_id = excluded.resource_id, title = excluded.title, "
            "metadata = excluded.metadata, created_at = excluded.created_at, updated_at = excluded.updated_at",
            c.thread_params(thread),
        )

    async def _find_thread(self, thread_id: str) -> ThreadRecord | None:
        row = await self._fetchone(
            "find_thread", f"{self._thread_select} WHERE id = {self._codec.ph}", (thread_id,)
        )
        return None if row is None else self._codec.thread_from_row(row)

    async def _list_threads(self, resource_id: str | None) -> list[ThreadRecord]:
        if resource_id is None:
            rows = await self._fetchall("list_threads", f"{self._thread_select} ORDER BY created_at, id")
        else:
            rows = await self._fetchall(
                "list_threads",
                f"{self._thread_select} WHERE resource_id = {self._codec.ph} ORDER BY created_at, id",
                (resource_id,),
            )
        return [self._codec.thread_from_row(r) for r in rows]

    def _message_upsert_sql(self) -> str:
        return (
            f"INSERT INTO {self._t.messages} ({', '.join(MESSAGE_COLUMNS)}) "
            f"VALUES ({self._codec.placeholders(len(MESSAGE_COLUMNS))}) "
            "ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id, resource_id = excluded.resource_id, "
            "role = excluded.role, type = excluded.type, content = excluded.content, "
            "created_at = excluded.created_at"
        )

    async def _list_messages(
        self, thread_id: str, last: int | None, pg: Page
    ) -> tuple[list[MessageRecord], int]:
        ph = self._codec.ph
        total = await self._count(
            "list_messages", f"SELECT count(*) FROM {self._t.messages} WHERE thread_id = {ph}", (thread_id,)
        )
        if last is not None:
            rows = await self._fetchall(
                "list_messages",
                f"{self._message_select} WHERE thread_id = {ph} ORDER BY created_at DESC, seq DESC LIMIT {ph}",
                (thread_id, last),
            )
            rows = rows[::-1]
        else:
            limit, extra = limit_clause(ph, pg)
            rows = await self._fetchall(
                "list_messages",
                f"{self._message_select} WHERE thread_id = {ph} ORDER BY created_at, seq{limit}",
                (thread_id, *extra),
            )
        return [self._codec.message_from_row(r) for r in rows], total

    async def _delete_messages(self, message_ids: list[str]) -> int:
        sql = f"DELETE FROM {self._t.messages} WHERE id IN ({self._codec.placeholders(len(message_ids))})"
        return await self._rowcount("delete_messages", sql, message_ids)

    # --------------------------------------------------------------------------- background tasks

    async def _create_task(self, task: BackgroundTask) -> None:
        c = self._codec
        sql = f"INSERT INTO {self._t.tasks} ({', '.join(TASK_COLUMNS)}) VALUES ({c.placeholders(len(TASK_COLUMNS))})"
        try:
            await self._rowcount("create_task", sql, c.task_params(task))
        except Exception as exc:
            if self._is_unique_violation(exc):
                raise ConflictError("background task", task.id) from None
            raise

    async def _find_task(self, task_id: str) -> BackgroundTask | None:
        row = await self._fetchone(
            "find_task", f"{self._task_select} WHERE id = {self._codec.ph}", (task_id,)
        )
        return None if row is None else self._codec.task_from_row(row)

    async def _update_task(self, task_id: str, changes: dict[str, Any], condition: TaskCondition) -> bool:
        sql, params = self._codec.task_update_sql(self._t.tasks, task_id, changes, condition)
        # One statement: the condition test and the write are atomic against every other writer (SQLite's
        # write lock; PostgreSQL re-checks the condition on the committed row after a row-lock wait).
        if await self._rowcount("update_task", sql, params) > 0:
            return True
        exists = f"SELECT 1 FROM {self._t.tasks} WHERE id = {self._codec.ph}"
        if await self._fetchone("update_task", exists, (task_id,)) is None:
            raise NotFoundError("background task", task_id)
        return False

    async def _list_tasks(self, query: TaskQuery, desc: bool, pg: Page) -> tuple[list[BackgroundTask], int]:
        where, params = self._codec.task_where(query)
        direction = "DESC" if desc else "ASC"
        limit, extra = limit_clause(self._codec.ph, pg)
        total = await self._count("list_tasks", f"SELECT count(*) FROM {self._t.tasks}{where}", params)
        rows = await self._fetchall(
            "list_tasks",
            f"{self._task_select}{where} ORDER BY created_at {direction}, seq {direction}{limit}",
            [*params, *extra],
        )
        return [self._codec.task_from_row(r) for r in rows], total

    async def _count_tasks(self, query: TaskQuery) -> int:
        where, params = self._codec.task_where(query)
        return await self._count("count_tasks", f"SELECT count(*) FROM {self._t.tasks}{where}", params)

    async def _renew_leases(self, owner_id: str, lease_expires_at: datetime) -> list[str]:
        ph = self._codec.ph
        rows = await self._fetchall(
            "renew_task_leases",
            f"UPDATE {self._t.tasks} SET lease_expires_at = {ph} WHERE owner_id = {ph} RETURNING id",
            (self._codec.enc_dt(lease_expires_at), owner_id),
        )
        return [r[0] for r in rows]

    async def _delete_task(self, task_id: str) -> bool:
        sql = f"DELETE FROM {self._t.tasks} WHERE id = {self._codec.ph}"
        return await self._rowcount("delete_task", sql, (task_id,)) > 0

    async def _delete_tasks(self, query: TaskQuery) -> int:
        where, params = self._codec.task_where(query)
        return await self._rowcount("delete_tasks_older_than", f"DELETE FROM {self._t.tasks}{where}", params)

    # ------------------------------------------------------------------------- workflow snapshots

    async def _persist_snapshot(
        self, workflow_name: str, run_id: str, snapshot: JSONValue, resource_id: str | None
    ) -> None:
        c = self._codec
        now = c.enc_dt(utc_now())
        await self._rowcount(
            "persist_workflow_snapshot",
            f"INSERT INTO {self._t.snapshots} (workflow_name, run_id, resource_id, snapshot, created_at, "
            f"updated_at) VALUES ({c.placeholders(6)}) ON CONFLICT (workflow_name, run_id) DO UPDATE SET "
            "resource_id = excluded.resource_id, snapshot = excluded.snapshot, updated_at = excluded.updated_at",
            (workflow_name, run_id, resource_id, c.enc_json(snapshot), now, now),
        )

    async def _load_snapshot(self, workflow_name: str, run_id: str) -> JSONValue | None:
        ph = self._codec.ph
        row = await self._fetchone(
            "load_workflow_snapshot",
            f"SELECT snapshot FROM {self._t.snapshots} WHERE workflow_name = {ph} AND run_id = {ph}",
            (workflow_name, run_id),
        )
        return None if row is None else self._codec.dec_json(row[0])

    async def _delete_snapshot(self, workflow_name: str, run_id: str) -> bool:
        ph = self._codec.ph
        sql = f"DELETE FROM {self._t.snapshots} WHERE workflow_name = {ph} AND run_id = {ph}"
        return await self._rowcount("delete_workflow_snapshot", sql, (workflow_name, run_id)) > 0

    _snapshot_status: str = ""
    """The backend's SQL for the stored snapshot's top-level ``status`` (a JSON text value)."""

    async def _cas_snapshot(
        self, workflow_name: str, run_id: str, snapshot: JSONValue, expected_status: str
    ) -> bool:
        c = self._codec
        ph = c.ph
        # One statement: the status test and the write are atomic against every other writer.
        sql = (
            f"UPDATE {self._t.snapshots} SET snapshot = {ph}, updated_at = {ph} "
            f"WHERE workflow_name = {ph} AND run_id = {ph} AND {self._snapshot_status} = {ph}"
        )
        params = (c.enc_json(snapshot), c.enc_dt(utc_now()), workflow_name, run_id, expected_status)
        return await self._rowcount("compare_and_set_workflow_snapshot", sql, params) > 0

    # ------------------------------------------------------------------------------- thread state

    async def _get_state(self, thread_id: str, key: str) -> JSONValue | None:
        ph = self._codec.ph
        sql = f"SELECT value FROM {self._t.state} WHERE thread_id = {ph} AND state_key = {ph}"
        row = await self._fetchone("get_thread_state", sql, (thread_id, key))
        return None if row is None else self._codec.dec_json(row[0])

    async def _set_state(self, thread_id: str, key: str, value: JSONValue) -> None:
        c = self._codec
        await self._rowcount(
            "set_thread_state",
            f"INSERT INTO {self._t.state} (thread_id, state_key, value, updated_at) VALUES ({c.placeholders(4)}) "
            "ON CONFLICT (thread_id, state_key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            (thread_id, key, c.enc_json(value), c.enc_dt(utc_now())),
        )

    async def _delete_state(self, thread_id: str, key: str) -> bool:
        ph = self._codec.ph
        sql = f"DELETE FROM {self._t.state} WHERE thread_id = {ph} AND state_key = {ph}"
        return await self._rowcount("delete_thread_state", sql, (thread_id, key)) > 0

    async def _list_state(self, thread_id: str) -> dict[str, JSONValue]:
        ph = self._codec.ph
        sql = f"SELECT state_key, value FROM {self._t.state} WHERE thread_id = {ph} ORDER BY state_key"
        rows = await self._fetchall("list_thread_state", sql, (thread_id,))
        return {r[0]: self._codec.dec_json(r[1]) for r in rows}
