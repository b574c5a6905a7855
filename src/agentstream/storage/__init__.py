"""Storage domains (threads & messages, background tasks, workflow snapshots, thread state, tracing
spans) over
in-memory, SQLite (the embedded default) and PostgreSQL (`agentstream[postgres]`) backends.

    async with SQLiteStore(".cache/agentstream.db") as store:
        await store.create_task(BackgroundTask(id="t1", tool_name="search", tool_call_id="c1",
                                               agent_id="a", run_id="r1"))
        won = await store.update_task("t1", TaskUpdate(status="running", started_at=utc_now()),
                                      expected_status="pending")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import BaseStore, OrderDirection, Storage
from ._liveness import PROCESS_OWNER, RUN_LEASE_MS, RUN_RENEW_MS, run_lost_reason, run_owner_record
from ._records import (
    TASK_DATE_FIELDS,
    TASK_STATUSES,
    TERMINAL_TASK_STATUSES,
    BackgroundTask,
    ConflictError,
    JSONValue,
    MessagePage,
    MessageRecord,
    MessageRole,
    NotFoundError,
    SpanRecord,
    StorageBusyError,
    StorageError,
    TaskDateField,
    TaskError,
    TaskPage,
    TaskStatus,
    TaskUpdate,
    ThreadRecord,
    TraceQuery,
    WorkflowRunQuery,
    WorkflowSnapshotRecord,
    utc_now,
)
from ._sql import Migration
from .memory import InMemoryStore
from .sqlite import SQLiteStore

if TYPE_CHECKING:
    from .postgres import PostgresStore

__all__ = [
    "PROCESS_OWNER",
    "RUN_LEASE_MS",
    "RUN_RENEW_MS",
    "TASK_DATE_FIELDS",
    "TASK_STATUSES",
    "TERMINAL_TASK_STATUSES",
    "BackgroundTask",
    "BaseStore",
    "ConflictError",
    "InMemoryStore",
    "JSONValue",
    "MessagePage",
    "MessageRecord",
    "MessageRole",
    "Migration",
    "NotFoundError",
    "OrderDirection",
    "PostgresStore",
    "SQLiteStore",
    "SpanRecord",
    "Storage",
    "StorageBusyError",
    "StorageError",
    "TaskDateField",
    "TaskError",
    "TaskPage",
    "TaskStatus",
    "TaskUpdate",
    "ThreadRecord",
    "TraceQuery",
    "WorkflowRunQuery",
    "WorkflowSnapshotRecord",
    "run_lost_reason",
    "run_owner_record",
    "utc_now",
]


def __getattr__(name: str) -> Any:
    # PostgresStore imports psycopg, an optional extra: load it only when asked for.
    if name == "PostgresStore":
        from .postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
