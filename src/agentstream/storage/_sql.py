"""What the SQL backends share: versioned migrations, column lists, query builders, row codecs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from ._base import Page, TaskCondition, TaskQuery
from ._records import (
    TASK_STATUSES,
    BackgroundTask,
    MessageRecord,
    TaskError,
    ThreadRecord,
)

__all__ = [
    "MIGRATIONS_TABLE",
    "POSTGRES_MIGRATIONS",
    "SQLITE_MIGRATIONS",
    "Codec",
    "Migration",
    "Tables",
]


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema version: its statements run in one transaction, then `version` is recorded."""

    version: int
    name: str
    statements: tuple[str, ...]


MIGRATIONS_TABLE = "schema_migrations"

_STATUS_CHECK = "status IN (" + ", ".join(f"'{s}'" for s in TASK_STATUSES) + ")"

SQLITE_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "initial schema: threads, messages, background tasks, workflow snapshots, thread state",
        (
            """CREATE TABLE mastra_threads (
                id TEXT PRIMARY KEY,
                resource_id TEXT NOT NULL,
                title TEXT,
                metadata TEXT,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL)""",
            "CREATE INDEX mastra_threads_resource_idx ON mastra_threads (resource_id, created_at)",
            """CREATE TABLE mastra_messages (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                thread_id TEXT NOT NULL REFERENCES mastra_threads (id) ON DELETE CASCADE,
                resource_id TEXT,
                role TEXT NOT NULL,
                type TEXT NOT NULL,
                content TEXT NOT NULL,
                created_at TEXT NOT NULL)""",
            "CREATE INDEX mastra_messages_thread_idx ON mastra_messages (thread_id, created_at, seq)",
            f"""CREATE TABLE mastra_background_tasks (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                status TEXT NOT NULL CHECK ({_STATUS_CHECK}),
                tool_name TEXT NOT NULL,
                tool_call_id TEXT NOT NULL,
                agent_id TEXT NOT NULL,
                run_id TEXT NOT NULL,
                thread_id TEXT,
                resource_id TEXT,
                args TEXT NOT NULL,
                result TEXT,
                error TEXT,
                suspend_payload TEXT,
                retry_count INTEGER NOT NULL,
                max_retries INTEGER NOT NULL,
                timeout_ms INTEGER NOT NULL,
                created_at TEXT NOT NULL,
                started_at TEXT,
                suspended_at TEXT,
                completed_at TEXT)""",
            "CREATE INDEX mastra_bg_status_idx ON mastra_background_tasks (status, created_at)",
            "CREATE INDEX mastra_bg_agent_idx ON mastra_background_tasks (agent_id, status)",
            "CREATE INDEX mastra_bg_run_idx ON mastra_background_tasks (run_id)",
            "CREATE INDEX mastra_bg_thread_idx ON mastra_background_tasks (thread_id)",
            "CREATE INDEX mastra_bg_tool_call_idx ON mastra_background_tasks (tool_call_id)",
            """CREATE TABLE mastra_workflow_snapshot (
                workflow_name TEXT NOT NULL,
                run_id TEXT NOT NULL,
                resource_id TEXT,
                snapshot TEXT NOT NULL,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                PRIMARY KEY (workflow_name, run_id))""",
            """CREATE TABLE mastra_thread_state (
                thread_id TEXT NOT NULL,
                state_key TEXT NOT NULL,
                value TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                PRIMARY KEY (thread_id, state_key))""",
        ),
    ),
    Migration(
        2,
        "background task leases (owner, lease expiry) and abandoned threads",
        (
            "ALTER TABLE mastra_background_tasks ADD COLUMN owner_id TEXT",
            "ALTER TABLE mastra_background_tasks ADD COLUMN lease_expires_at TEXT",
            "ALTER TABLE mastra_background_tasks ADD COLUMN abandoned_thread INTEGER NOT NULL DEFAULT 0",
            "CREATE INDEX mastra_bg_lease_idx ON mastra_background_tasks (status, lease_expires_at)",
            "CREATE INDEX mastra_bg_owner_idx ON mastra_background_tasks (owner_id)",
        ),
    ),
    Migration(
        3,
        "tracing spans (the Mastra API's traces) and the workflow runs' listing index",
        (
            """CREATE TABLE mastra_ai_spans (
                trace_id TEXT NOT NULL,
                span_id TEXT NOT NULL,
                parent_span_id TEXT,
                name TEXT NOT NULL,
                span_type TEXT NOT NULL,
                started_at TEXT NOT NULL,
                ended_at TEXT,
                resource_id TEXT,
                entity_type TEXT,
                entity_id TEXT,
                entity_name TEXT,
                error TEXT,
                data TEXT NOT NULL,
                PRIMARY KEY (trace_id, span_id))""",
            "CREATE INDEX mastra_ai_spans_roots_idx ON mastra_ai_spans (started_at) "
            "WHERE parent_span_id IS NULL",
            "CREATE INDEX mastra_workflow_snapshot_listing_idx ON mastra_workflow_snapshot "
            "(workflow_name, created_at)",
        ),
    ),
)

# `{s}` is replaced by the quoted schema name.
POSTGRES_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "initial schema: threads, messages, background tasks, workflow snapshots, thread state",
        (
            """CREATE TABLE {s}.mastra_threads (
                id TEXT PRIMARY KEY,
                resource_id TEXT NOT NULL,
                title TEXT,
                metadata JSONB,
                created_at TIMESTAMPTZ NOT NULL,
                updated_at TIMESTAMPTZ NOT NULL)""",
            "CREATE INDEX mastra_threads_resource_idx ON {s}.mastra_threads (resource_id, created_at)",
            """CREATE TABLE {s}.mastra_messages (
                seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
                id TEXT PRIMARY KEY,
                thread_id TEXT NOT NULL REFERENCES {s}.mastra_threads (id) ON DELETE CASCADE,
                resource_id TEXT,
                role TEXT NOT NULL,
                type TEXT NOT NULL,
                content JSONB NOT NULL,
                created_at TIMESTAMPTZ NOT NULL)""",
            "CREATE INDEX mastra_messages_thread_idx ON {s}.mastra_messages (thread_id, created_at, seq)",
            f"""CREATE TABLE {{s}}.mastra_background_tasks (
                seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
                id TEXT PRIMARY KEY,
                status TEXT NOT NULL CHECK ({_STATUS_CHECK}),
                tool_name TEXT NOT NULL,
                tool_call_id TEXT NOT NULL,
                agent_id TEXT NOT NULL,
                run_id TEXT NOT NULL,
                thread_id TEXT,
                resource_id TEXT,
                args JSONB NOT NULL,
                result JSONB,
                error JSONB,
                suspend_payload JSONB,
                retry_count INTEGER NOT NULL,
                max_retries INTEGER NOT NULL,
                timeout_ms BIGINT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL,
                started_at TIMESTAMPTZ,
                suspended_at TIMESTAMPTZ,
                completed_at TIMESTAMPTZ)""",
            "CREATE INDEX mastra_bg_status_idx ON {s}.mastra_background_tasks (status, created_at)",
            "CREATE INDEX mastra_bg_agent_idx ON {s}.mastra_background_tasks (agent_id, status)",
            "CREATE INDEX mastra_bg_run_idx ON {s}.mastra_background_tasks (run_id)",
            "CREATE INDEX mastra_bg_thread_idx ON {s}.mastra_background_tasks (thread_id)",
            "CREATE INDEX mastra_bg_tool_call_idx ON {s}.mastra_background_tasks (tool_call_id)",
            """CREATE TABLE {s}.mastra_workflow_snapshot (
                workflow_name TEXT NOT NULL,
                run_id TEXT NOT NULL,
                resource_id TEXT,
                snapshot JSONB NOT NULL,
                created_at TIMESTAMPTZ NOT NULL,
                updated_at TIMESTAMPTZ NOT NULL,
                PRIMARY KEY (workflow_name, run_id))""",
            """CREATE TABLE {s}.mastra_thread_state (
                thread_id TEXT NOT NULL,
                state_key TEXT NOT NULL,
                value JSONB NOT NULL,
                updated_at TIMESTAMPTZ NOT NULL,
                PRIMARY KEY (thread_id, state_key))""",
        ),
    ),
    Migration(
        2,
        "background task leases (owner, lease expiry) and abandoned threads",
        (
            "ALTER TABLE {s}.mastra_background_tasks ADD COLUMN owner_id TEXT",
            "ALTER TABLE {s}.mastra_background_tasks ADD COLUMN lease_expires_at TIMESTAMPTZ",
            "ALTER TABLE {s}.mastra_background_tasks ADD COLUMN abandoned_thread BOOLEAN NOT NULL DEFAULT false",
            "CREATE INDEX mastra_bg_lease_idx ON {s}.mastra_background_tasks (status, lease_expires_at)",
            "CREATE INDEX mastra_bg_owner_idx ON {s}.mastra_background_tasks (owner_id)",
        ),
    ),
    Migration(
        3,
        "tracing spans (the Mastra API's traces) and the workflow runs' listing index",
        (
            """CREATE TABLE {s}.mastra_ai_spans (
                trace_id TEXT NOT NULL,
                span_id TEXT NOT NULL,
                parent_span_id TEXT,
                name TEXT NOT NULL,
                span_type TEXT NOT NULL,
                started_at TIMESTAMPTZ NOT NULL,
                ended_at TIMESTAMPTZ,
                resource_id TEXT,
                entity_type TEXT,
                entity_id TEXT,
                entity_name TEXT,
                error JSONB,
                data JSONB NOT NULL,
                PRIMARY KEY (trace_id, span_id))""",
            "CREATE INDEX mastra_ai_spans_roots_idx ON {s}.mastra_ai_spans (started_at) "
            "WHERE parent_span_id IS NULL",
            "CREATE INDEX mastra_workflow_snapshot_listing_idx ON {s}.mastra_workflow_snapshot "
            "(workflow_name, created_at)",
        ),
    ),
)


def check_migrations(migrations: Sequence[Migration]) -> None:
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise ValueError(f"migration versions must be 1..n in order, got {versions}")


@dataclass(frozen=True, slots=True)
class Tables:
    threads: str
    messages: str
    tasks: str
    snapshots: str
    state: str
    migrations: str
    spans: str

    @classmethod
    def prefixed(cls, prefix: str) -> Tables:
        return cls(
            threads=f"{prefix}mastra_threads",
            messages=f"{prefix}mastra_messages",
            tasks=f"{prefix}mastra_background_tasks",
            snapshots=f"{prefix}mastra_workflow_snapshot",
            state=f"{prefix}mastra_thread_state",
            migrations=f"{prefix}{MIGRATIONS_TABLE}",
            spans=f"{prefix}mastra_ai_spans",
        )


THREAD_COLUMNS = ("id", "resource_id", "title", "metadata", "created_at", "updated_at")
MESSAGE_COLUMNS = ("id", "thread_id", "resource_id", "role", "type", "content", "created_at")
TASK_COLUMNS = (
    "id",
    "status",
    "tool_name",
    "tool_call_id",
    "agent_id",
    "run_id",
    "thread_id",
    "resource_id",
    "args",
    "result",
    "error",
    "suspend_payload",
    "retry_count",
    "max_retries",
    "timeout_ms",
    "created_at",
    "started_at",
    "suspended_at",
    "completed_at",
    "owner_id",
    "lease_expires_at",
    "abandoned_thread",
)
TASK_JSON = frozenset({"args", "result", "error", "suspend_payload"})
TASK_DATES = frozenset({"created_at", "started_at", "suspended_at", "completed_at", "lease_expires_at"})

_json_encode = msgspec.json.Encoder().encode


def json_text(value: Any) -> str:
    return _json_encode(value).decode()


@dataclass(frozen=True, slots=True)
class Codec:
    """How one backend spells parameters, JSON and datetimes."""

    ph: str
    enc_json: Callable[[Any], Any]
    dec_json: Callable[[Any], Any]
    enc_dt: Callable[[datetime], Any]
    dec_dt: Callable[[Any], datetime]

    def enc_opt_json(self, value: Any) -> Any:
        return None if value is None else self.enc_json(value)

    def dec_opt_json(self, value: Any) -> Any:
        return None if value is None else self.dec_json(value)

    def enc_opt_dt(self, value: datetime | None) -> Any:
        return None if value is None else self.enc_dt(value)

    def dec_opt_dt(self, value: Any) -> datetime | None:
        return None if value is None else self.dec_dt(value)

    def placeholders(self, n: int) -> str:
        return ", ".join([self.ph] * n)

    # ------------------------------------------------------------------------------- threads

    def thread_params(self, t: ThreadRecord) -> tuple[Any, ...]:
        return (
            t.id,
            t.resource_id,
            t.title,
            self.enc_opt_json(t.metadata),
            self.enc_dt(t.created_at),
            self.enc_dt(t.updated_at),
        )

    def thread_from_row(self, row: Sequence[Any]) -> ThreadRecord:
        return ThreadRecord(
            id=row[0],
            resource_id=row[1],
            title=row[2],
            metadata=self.dec_opt_json(row[3]),
            created_at=self.dec_dt(row[4]),
            updated_at=self.dec_dt(row[5]),
        )

    # ------------------------------------------------------------------------------ messages

    def message_params(self, m: MessageRecord) -> tuple[Any, ...]:
        return (
            m.id,
            m.thread_id,
            m.resource_id,
            m.role,
            m.type,
            self.enc_json(m.content),
            self.enc_dt(m.created_at),
        )

    def message_from_row(self, row: Sequence[Any]) -> MessageRecord:
        return MessageRecord(
            id=row[0],
            thread_id=row[1],
            resource_id=row[2],
            role=row[3],
            type=row[4],
            content=self.dec_json(row[5]),
            created_at=self.dec_dt(row[6]),
        )

    # --------------------------------------------------------------------------------- tasks

    def task_value(self, column: str, value: Any) -> Any:
        if column in TASK_JSON:
            if isinstance(value, TaskError):
                value = msgspec.to_builtins(value)
            return self.enc_opt_json(value)
        if column in TASK_DATES:
            return self.enc_opt_dt(value)
        return value

    def task_params(self, t: BackgroundTask) -> tuple[Any, ...]:
        return tuple(self.task_value(c, getattr(t, c)) for c in TASK_COLUMNS)

    def task_from_row(self, row: Sequence[Any]) -> BackgroundTask:
        error = self.dec_opt_json(row[10])
        return BackgroundTask(
            id=row[0],
            status=row[1],
            tool_name=row[2],
            tool_call_id=row[3],
            agent_id=row[4],
            run_id=row[5],
            thread_id=row[6],
            resource_id=row[7],
            args=self.dec_json(row[8]),
            result=self.dec_opt_json(row[9]),
            error=None if error is None else msgspec.convert(error, TaskError),
            suspend_payload=self.dec_opt_json(row[11]),
            retry_count=row[12],
            max_retries=row[13],
            timeout_ms=row[14],
            created_at=self.dec_dt(row[15]),
            started_at=self.dec_opt_dt(row[16]),
            suspended_at=self.dec_opt_dt(row[17]),
            completed_at=self.dec_opt_dt(row[18]),
            owner_id=row[19],
            lease_expires_at=self.dec_opt_dt(row[20]),
            abandoned_thread=bool(row[21]),
        )

    def task_where(self, q: TaskQuery) -> tuple[str, list[Any]]:
        """`WHERE ...` (or "") and its parameters."""
        clauses: list[str] = []
        params: list[Any] = []
        if q.statuses is not None:
            if not q.statuses:
                clauses.append("1 = 0")
            else:
                clauses.append(f"status IN ({self.placeholders(len(q.statuses))})")
                params.extend(q.statuses)
        for name in TaskQuery.EQ_FIELDS:
            value = getattr(q, name)
            if value is not None:
                clauses.append(f"{name} = {self.ph}")
                params.append(value)
        # q.date_field is validated against TASK_DATE_FIELDS, so it is safe to splice in.
        if q.from_date is not None:
            clauses.append(f"{q.date_field} >= {self.ph}")
            params.append(self.enc_dt(q.from_date))
        if q.to_date is not None:
            clauses.append(f"{q.date_field} < {self.ph}")
            params.append(self.enc_dt(q.to_date))
        if q.lease_expired_by is not None:
            clauses.append(f"(lease_expires_at IS NULL OR lease_expires_at <= {self.ph})")
            params.append(self.enc_dt(q.lease_expired_by))
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def task_update_sql(
        self, table: str, task_id: str, changes: dict[str, Any], condition: TaskCondition
    ) -> tuple[str, list[Any]]:
        """`UPDATE ... WHERE id = ? AND <condition>`: one statement, so the test and the write are atomic."""
        sets: list[str] = []
        params: list[Any] = []
        for column, value in changes.items():
            sets.append(f"{column} = {self.ph}")
            params.append(self.task_value(column, value))
        if not sets:
            sets.append("id = id")
        sql = f"UPDATE {table} SET {', '.join(sets)} WHERE id = {self.ph}"
        params.append(task_id)
        if condition.status is not None:
            sql += f" AND status = {self.ph}"
            params.append(condition.status)
        if condition.owner is None:
            sql += " AND owner_id IS NULL"
        elif isinstance(condition.owner, str):
            sql += f" AND owner_id = {self.ph}"
            params.append(condition.owner)
        if condition.lease_expired_by is not None:
            sql += f" AND (lease_expires_at IS NULL OR lease_expires_at <= {self.ph})"
            params.append(self.enc_dt(condition.lease_expired_by))
        return sql, params


def limit_clause(ph: str, pg: Page) -> tuple[str, list[Any]]:
    if pg is None:
        return "", []
    return f" LIMIT {ph} OFFSET {ph}", [pg[1], pg[0] * pg[1]]
