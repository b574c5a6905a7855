"""Typed storage records, errors and validation shared by every backend."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias, get_args

import msgspec
from msgspec import UNSET, UnsetType

__all__ = [
    "TASK_DATE_FIELDS",
    "TASK_STATUSES",
    "TERMINAL_TASK_STATUSES",
    "BackgroundTask",
    "ConflictError",
    "JSONValue",
    "MessagePage",
    "MessageRecord",
    "MessageRole",
    "NotFoundError",
    "SpanRecord",
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
    "utc_now",
]

JSONValue: TypeAlias = Any
"""Any value msgspec/json can encode: dict, list, str, int, float, bool, None."""

TaskStatus = Literal["pending", "running", "suspended", "completed", "failed", "cancelled", "timed_out"]
TASK_STATUSES: tuple[TaskStatus, ...] = get_args(TaskStatus)
TERMINAL_TASK_STATUSES: frozenset[TaskStatus] = frozenset({"completed", "failed", "cancelled", "timed_out"})

TaskDateField = Literal["created_at", "started_at", "suspended_at", "completed_at"]
TASK_DATE_FIELDS: tuple[TaskDateField, ...] = get_args(TaskDateField)

MessageRole = Literal["user", "assistant", "system", "tool"]
MESSAGE_ROLES: tuple[MessageRole, ...] = get_args(MessageRole)


# --------------------------------------------------------------------------------------------- errors


class StorageError(Exception):
    """Base class of the storage layer's own errors."""


class NotFoundError(StorageError, LookupError):
    """A record addressed by id does not exist."""

    def __init__(self, kind: str, ident: str) -> None:
        super().__init__(f"{kind} not found: {ident!r}")
        self.kind = kind
        self.ident = ident


class ConflictError(StorageError):
    """Creating a record whose id already exists."""

    def __init__(self, kind: str, ident: str) -> None:
        super().__init__(f"{kind} already exists: {ident!r}")
        self.kind = kind
        self.ident = ident


class StorageBusyError(StorageError):
    """The database stayed locked by another connection or process for longer than the store waits.

    SQLite allows one writer at a time per file; `busy_timeout_ms` is how long a write waits for the lock.
    """

    def __init__(self, operation: str, database: str, detail: str, remedy: str) -> None:
        super().__init__(f"{operation} on {database}: {detail}; {remedy}")
        self.operation = operation
        self.database = database


# ----------------------------------------------------------------------------------------- validation


def utc_now() -> datetime:
    """The current time as a timezone-aware UTC `datetime` (what records expect)."""
    return datetime.now(UTC)


def check_choice(field: str, value: object, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f"invalid {field} {value!r}: expected one of {', '.join(allowed)}")


def check_statuses(field: str, value: str | Iterable[str]) -> tuple[TaskStatus, ...]:
    """Normalise a status filter (one status or several) and validate every entry."""
    items: tuple[str, ...] = (value,) if isinstance(value, str) else tuple(value)
    for item in items:
        check_choice(field, item, TASK_STATUSES)
    return items  # type: ignore[return-value]


def check_aware(field: str, value: datetime | None) -> None:
    if value is not None and (value.tzinfo is None or value.utcoffset() is None):
        raise ValueError(f"{field} must be a timezone-aware datetime, got naive {value.isoformat()}")


def to_utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


def opt_utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


# ------------------------------------------------------------------------------------------- records


class ThreadRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A memory thread (Mastra `StorageThreadType`)."""

    id: str
    resource_id: str
    title: str | None = None
    metadata: dict[str, JSONValue] | None = None
    created_at: datetime = msgspec.field(default_factory=utc_now)
    updated_at: datetime = msgspec.field(default_factory=utc_now)

    def __post_init__(self) -> None:
        check_aware("created_at", self.created_at)
        check_aware("updated_at", self.updated_at)

    def normalized(self) -> ThreadRecord:
        """A copy with the dates converted to UTC (what stores return)."""
        return msgspec.structs.replace(
            self, created_at=to_utc(self.created_at), updated_at=to_utc(self.updated_at)
        )


class MessageRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A stored message (Mastra `MastraDBMessage`); `content` is format 2: `{format: 2, parts: [...], metadata?}`."""

    id: str
    thread_id: str
    role: MessageRole
    content: dict[str, JSONValue]
    resource_id: str | None = None
    type: str = "v2"
    created_at: datetime = msgspec.field(default_factory=utc_now)

    def __post_init__(self) -> None:
        check_choice("role", self.role, MESSAGE_ROLES)
        check_aware("created_at", self.created_at)
        content = self.content
        if not isinstance(content, dict) or content.get("format") != 2:
            raise ValueError(
                f"message {self.id!r}: content must be a format-2 object {{'format': 2, 'parts': [...]}}"
            )
        if not isinstance(content.get("parts"), list):
            raise ValueError(f"message {self.id!r}: content.parts must be a list")

    def normalized(self) -> MessageRecord:
        """A copy with `created_at` converted to UTC (what stores return)."""
        return msgspec.structs.replace(self, created_at=to_utc(self.created_at))


class TaskError(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`BackgroundTask.error`: `{message, stack?}`."""

    message: str
    stack: str | None = None


class BackgroundTask(msgspec.Struct, frozen=True, kw_only=True):
    """The background task record (Mastra `background-tasks/types.ts` `BackgroundTask`)."""

    id: str
    tool_name: str
    tool_call_id: str
    agent_id: str
    run_id: str
    args: dict[str, JSONValue] = msgspec.field(default_factory=dict)
    status: TaskStatus = "pending"
    thread_id: str | None = None
    resource_id: str | None = None
    result: JSONValue = None
    error: TaskError | None = None
    suspend_payload: JSONValue = None
    retry_count: int = 0
    max_retries: int = 0
    timeout_ms: int = 300_000
    created_at: datetime = msgspec.field(default_factory=utc_now)
    started_at: datetime | None = None
    suspended_at: datetime | None = None
    completed_at: datetime | None = None
    owner_id: str | None = None
    """The manager process holding this `pending`/`running` task's lease (`None`: nobody)."""
    lease_expires_at: datetime | None = None
    """When the owner's lease lapses unless renewed; after that another manager may reclaim the task."""
    abandoned_thread: bool = False
    """The task timed out or was cancelled while its synchronous executor ran in a thread. Python cannot
    stop a thread, so that thread may still be running (and doing its side effects); its return value
    is discarded."""

    def __post_init__(self) -> None:
        check_choice("status", self.status, TASK_STATUSES)
        for date_field in TASK_DATE_FIELDS:
            check_aware(date_field, getattr(self, date_field))
        check_aware("lease_expires_at", self.lease_expires_at)
        for name in ("retry_count", "max_retries", "timeout_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative int, got {value!r}")

    def normalized(self) -> BackgroundTask:
        """A copy with every date converted to UTC (what stores return)."""
        return msgspec.structs.replace(
            self,
            created_at=to_utc(self.created_at),
            started_at=opt_utc(self.started_at),
            suspended_at=opt_utc(self.suspended_at),
            completed_at=opt_utc(self.completed_at),
            lease_expires_at=opt_utc(self.lease_expires_at),
        )


class TaskUpdate(msgspec.Struct, frozen=True, kw_only=True):
    """A partial update of a `BackgroundTask`. Fields left `UNSET` are untouched; `None` clears a field."""

    status: TaskStatus | UnsetType = UNSET
    args: dict[str, JSONValue] | UnsetType = UNSET
    result: JSONValue | UnsetType = UNSET
    error: TaskError | UnsetType | None = UNSET
    suspend_payload: JSONValue | UnsetType = UNSET
    retry_count: int | UnsetType = UNSET
    max_retries: int | UnsetType = UNSET
    timeout_ms: int | UnsetType = UNSET
    started_at: datetime | UnsetType | None = UNSET
    suspended_at: datetime | UnsetType | None = UNSET
    completed_at: datetime | UnsetType | None = UNSET
    owner_id: str | UnsetType | None = UNSET
    lease_expires_at: datetime | UnsetType | None = UNSET
    abandoned_thread: bool | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.status is not UNSET:
            check_choice("status", self.status, TASK_STATUSES)
        for name in ("started_at", "suspended_at", "completed_at", "lease_expires_at"):
            value = getattr(self, name)
            if value is not UNSET:
                check_aware(name, value)
        for name in ("retry_count", "max_retries", "timeout_ms"):
            value = getattr(self, name)
            if value is not UNSET and (not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be a non-negative int, got {value!r}")

    def changes(self) -> dict[str, Any]:
        """The fields this update sets, datetimes normalised to UTC."""
        out: dict[str, Any] = {}
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if value is UNSET:
                continue
            if isinstance(value, datetime):
                value = to_utc(value)
            out[name] = value
        return out


class WorkflowSnapshotRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A persisted workflow run snapshot, keyed by `(workflow_name, run_id)`."""

    workflow_name: str
    run_id: str
    snapshot: JSONValue
    resource_id: str | None = None
    created_at: datetime
    updated_at: datetime


class WorkflowRunQuery(msgspec.Struct, frozen=True, kw_only=True):
    """Which stored runs of one workflow `Storage.list_workflow_runs` returns (newest first)."""

    workflow_name: str
    resource_id: str | None = None
    status: str | None = None
    from_date: datetime | None = None
    to_date: datetime | None = None
    page: int | None = None
    per_page: int | None = None


class SpanRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A finished tracing span (Mastra's AI span), keyed by `(trace_id, span_id)`.

    ``parent_span_id`` is ``None`` for a trace's root; ``error`` is ``None`` for a span that did
    not fail; ``data`` holds the rest of the span as JSON (attributes, input, output, links...).
    ``resource_id`` is the resource (user) whose request made the span, when one did.
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None = None
    name: str
    span_type: str
    started_at: datetime
    ended_at: datetime | None = None
    resource_id: str | None = None
    entity_type: str | None = None
    entity_id: str | None = None
    entity_name: str | None = None
    error: JSONValue | None = None
    data: JSONValue = None


class TraceQuery(msgspec.Struct, frozen=True, kw_only=True):
    """Which traces `Storage.list_traces` returns: root spans matching every field given."""

    resource_id: str | None = None
    """Only traces of this resource (``None``: every resource's)."""
    entity_type: str | None = None
    entity_id: str | None = None
    entity_name: str | None = None
    span_type: str | None = None
    status: str | None = None
    """``success`` (ended, no error), ``error`` or ``running`` (not ended)."""
    started_from: datetime | None = None
    started_to: datetime | None = None
    page: int = 0
    per_page: int = 10
    descending: bool = True


class MessagePage(msgspec.Struct, frozen=True, kw_only=True):
    """One page of a thread's messages (`Storage.list_messages`); `total` counts all of them."""

    messages: list[MessageRecord]
    total: int
    page: int | None
    per_page: int | None
    has_more: bool


class TaskPage(msgspec.Struct, frozen=True, kw_only=True):
    """One page of background tasks (`Storage.list_tasks`)."""

    tasks: list[BackgroundTask]
    total: int
    """Number of matching tasks before pagination."""
    page: int | None
    per_page: int | None
    has_more: bool
