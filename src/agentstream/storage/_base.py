"""The `Storage` protocol every backend implements, plus the task query shared by the backends."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import ClassVar, Literal, Protocol, Self, runtime_checkable

from msgspec import UNSET, UnsetType

from ._observed import ObservedStore
from ._records import (
    TASK_DATE_FIELDS,
    BackgroundTask,
    JSONValue,
    MessagePage,
    MessageRecord,
    NotFoundError,
    SpanRecord,
    TaskDateField,
    TaskPage,
    TaskStatus,
    TaskUpdate,
    ThreadRecord,
    TraceQuery,
    WorkflowRunQuery,
    WorkflowSnapshotRecord,
    check_aware,
    check_choice,
    check_statuses,
    to_utc,
)

__all__ = ["BaseStore", "OrderDirection", "Storage", "TaskCondition", "TaskQuery"]

OrderDirection = Literal["asc", "desc"]


@dataclass(frozen=True, slots=True)
class TaskQuery:
    """A validated background-task filter (all given conditions must hold)."""

    statuses: tuple[TaskStatus, ...] | None = None
    agent_id: str | None = None
    thread_id: str | None = None
    resource_id: str | None = None
    run_id: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    from_date: datetime | None = None
    """Inclusive lower bound on `date_field`."""
    to_date: datetime | None = None
    """Exclusive upper bound on `date_field`."""
    date_field: TaskDateField = "created_at"
    lease_expired_by: datetime | None = None
    """Only tasks without a lease or whose lease expired at or before this instant."""

    EQ_FIELDS: ClassVar[tuple[str, ...]] = (
        "agent_id",
        "thread_id",
        "resource_id",
        "run_id",
        "tool_call_id",
        "tool_name",
    )

    @classmethod
    def build(
        cls,
        *,
        status: TaskStatus | Iterable[TaskStatus] | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        resource_id: str | None = None,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
        from_date: datetime | None = None,
        to_date: datetime | None = None,
        date_field: TaskDateField = "created_at",
        lease_expired_by: datetime | None = None,
    ) -> TaskQuery:
        check_choice("date_field", date_field, TASK_DATE_FIELDS)
        check_aware("from_date", from_date)
        check_aware("to_date", to_date)
        check_aware("lease_expired_by", lease_expired_by)
        return cls(
            statuses=None if status is None else check_statuses("status", status),
            agent_id=agent_id,
            thread_id=thread_id,
            resource_id=resource_id,
            run_id=run_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            from_date=from_date,
            to_date=to_date,
            date_field=date_field,
            lease_expired_by=None if lease_expired_by is None else to_utc(lease_expired_by),
        )

    def matches(self, task: BackgroundTask) -> bool:
        if self.statuses is not None and task.status not in self.statuses:
            return False
        for name in self.EQ_FIELDS:
            want = getattr(self, name)
            if want is not None and getattr(task, name) != want:
                return False
        if self.from_date is not None or self.to_date is not None:
            value: datetime | None = getattr(task, self.date_field)
            if value is None:
                return False
            if self.from_date is not None and value < self.from_date:
                return False
            if self.to_date is not None and value >= self.to_date:
                return False
        lease = task.lease_expires_at
        return self.lease_expired_by is None or lease is None or lease <= self.lease_expired_by


@dataclass(frozen=True, slots=True)
class TaskCondition:
    """What must hold of the stored task for a compare-and-set `update_task` to apply."""

    status: TaskStatus | None = None
    owner: str | UnsetType | None = UNSET
    """`UNSET`: any owner; `None`: no owner; a string: exactly that owner."""
    lease_expired_by: datetime | None = None
    """Only if the task has no lease or its lease expired at or before this instant."""

    def matches(self, task: BackgroundTask) -> bool:
        if self.status is not None and task.status != self.status:
            return False
        if self.owner is not UNSET and task.owner_id != self.owner:
            return False
        if self.lease_expired_by is not None:
            lease = task.lease_expires_at
            if lease is not None and lease > self.lease_expired_by:
                return False
        return True


def check_page(page: int | None, per_page: int | None) -> tuple[int, int] | None:
    """Validate pagination; `None` means "everything". `per_page` without `page` is the first page."""
    if page is None and per_page is None:
        return None
    if per_page is None:
        raise ValueError("page requires per_page")
    if not isinstance(per_page, int) or per_page < 1:
        raise ValueError(f"per_page must be a positive int, got {per_page!r}")
    page = 0 if page is None else page
    if not isinstance(page, int) or page < 0:
        raise ValueError(f"page must be a non-negative int (0-based), got {page!r}")
    return page, per_page


def check_direction(direction: str) -> None:
    check_choice("order_direction", direction, ("asc", "desc"))


@runtime_checkable
class Storage(Protocol):
    """Storage domains used by memory, workflows and the background-task manager.

    Conventions: lookups by id (`get_thread`, `get_task`, `update_task`) raise `NotFoundError` naming the
    id; `find_*`/`load_*` return `None` for a missing record; `delete_*` return whether something was
    deleted. Datetimes are timezone-aware UTC on the way out (inputs must be aware; any zone). Pages are
    0-based. Stores open (and migrate) lazily on first use, or explicitly with `await store.init()`.
    """

    # lifecycle
    async def init(self) -> None:
        """Open the store and apply pending schema migrations (idempotent; also done lazily on first use)."""

    async def close(self) -> None:
        """Close the store (connections, pool). Idempotent."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    # threads & messages
    async def save_thread(self, thread: ThreadRecord) -> ThreadRecord:
        """Insert or replace a thread (upsert by id); returns it with normalised (UTC) dates."""

    async def get_thread(self, thread_id: str) -> ThreadRecord:
        """The thread with this id; `NotFoundError` naming the id if there is none."""

    async def find_thread(self, thread_id: str) -> ThreadRecord | None:
        """The thread with this id, or `None`."""

    async def list_threads(self, *, resource_id: str | None = None) -> list[ThreadRecord]:
        """Threads of one resource (or all threads), oldest first."""

    async def delete_thread(self, thread_id: str) -> bool:
        """Delete a thread with its messages and thread state; `False` if there was no such thread."""

    async def save_messages(self, messages: Sequence[MessageRecord]) -> list[MessageRecord]:
        """Upsert messages by id, all or nothing; every message's thread must exist. Bumps the threads'
        `updated_at`.
        """

    async def list_messages(
        self,
        thread_id: str,
        *,
        last: int | None = None,
        page: int | None = None,
        per_page: int | None = None,
    ) -> MessagePage:
        """A thread's messages in chronological order.

        - `last`: only the newest `last` messages (still oldest first);
        - `page` / `per_page`: a 0-based page; `MessagePage.has_more` says whether another follows.
        """

    async def delete_messages(self, message_ids: Sequence[str]) -> int:
        """Delete messages by id; returns how many existed."""

    # background tasks
    async def create_task(self, task: BackgroundTask) -> BackgroundTask:
        """Insert a new background task; `ConflictError` if the id exists."""

    async def get_task(self, task_id: str) -> BackgroundTask:
        """The background task with this id; `NotFoundError` naming the id if there is none."""

    async def find_task(self, task_id: str) -> BackgroundTask | None:
        """The background task with this id, or `None`."""

    async def update_task(
        self,
        task_id: str,
        update: TaskUpdate,
        *,
        expected_status: TaskStatus | None = None,
        expected_owner: str | UnsetType | None = UNSET,
        lease_expired_by: datetime | None = None,
    ) -> bool:
        """Apply `update` to a task; returns whether it was applied.

        The update is atomic and applies only if every given condition holds (a compare-and-set: two
        workers never both claim a task): `expected_status` (the current status), `expected_owner`
        (the current `owner_id`; `None`: no owner), `lease_expired_by` (no lease, or one that expired at
        or before this instant). `NotFoundError` if there is no such task.
        """

    async def list_tasks(
        self,
        *,
        status: TaskStatus | Iterable[TaskStatus] | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        resource_id: str | None = None,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
        from_date: datetime | None = None,
        to_date: datetime | None = None,
        date_field: TaskDateField = "created_at",
        lease_expired_by: datetime | None = None,
        order_direction: OrderDirection = "asc",
        page: int | None = None,
        per_page: int | None = None,
    ) -> TaskPage:
        """Tasks matching every given filter, ordered by `created_at` (then insertion order).

        - `status`: one status or several;
        - `from_date` (inclusive) / `to_date` (exclusive) bound `date_field`;
        - `lease_expired_by`: only tasks with no lease or a lease that expired at or before it;
        - `page` / `per_page`: a 0-based page; `TaskPage.total` counts the matches before paging.
        """

    async def count_tasks(
        self,
        *,
        status: TaskStatus | Iterable[TaskStatus] | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        resource_id: str | None = None,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
    ) -> int:
        """Number of tasks matching every given filter (e.g. `count_tasks(status="running", agent_id=a)`)."""

    async def renew_task_leases(self, owner_id: str, lease_expires_at: datetime) -> list[str]:
        """Extend every lease `owner_id` holds to `lease_expires_at`; returns the ids it still holds."""

    async def delete_task(self, task_id: str) -> bool:
        """Delete a background task; `False` if there was no such task."""

    async def delete_tasks_older_than(
        self,
        cutoff: datetime,
        *,
        status: TaskStatus | Iterable[TaskStatus],
        date_field: TaskDateField = "completed_at",
    ) -> int:
        """Delete tasks in `status` whose `date_field` is set and earlier than `cutoff`; returns how many
        (cleanup TTLs).
        """

    # workflow snapshots
    async def persist_workflow_snapshot(
        self, workflow_name: str, run_id: str, snapshot: JSONValue, *, resource_id: str | None = None
    ) -> None:
        """Insert or replace the snapshot of run `(workflow_name, run_id)`."""

    async def load_workflow_snapshot(self, workflow_name: str, run_id: str) -> JSONValue | None:
        """The snapshot of run `(workflow_name, run_id)`, or `None`."""

    async def delete_workflow_snapshot(self, workflow_name: str, run_id: str) -> bool:
        """Delete the snapshot of run `(workflow_name, run_id)`; `False` if there was none."""

    async def compare_and_set_workflow_snapshot(
        self, workflow_name: str, run_id: str, snapshot: JSONValue, *, expected_status: str
    ) -> bool:
        """Replace the snapshot of run `(workflow_name, run_id)` only if the stored one is a JSON
        object whose `"status"` is `expected_status`; `True` if it was replaced, `False` if there is
        no such snapshot or its status differs. Atomic against every other writer (one statement),
        so of several callers racing to claim one snapshot exactly one wins."""

    # thread state
    async def get_thread_state(self, thread_id: str, key: str) -> JSONValue | None:
        """The JSON value stored under `(thread_id, key)`, or `None`."""

    async def set_thread_state(self, thread_id: str, key: str, value: JSONValue) -> None:
        """Replace the JSON value stored under `(thread_id, key)`."""

    async def delete_thread_state(self, thread_id: str, key: str) -> bool:
        """Delete the value under `(thread_id, key)`; `False` if there was none."""

    async def list_thread_state(self, thread_id: str) -> dict[str, JSONValue]:
        """Every `key: value` stored for a thread."""

    # workflow run listings and tracing spans (the Mastra server API's runs and traces)
    async def list_workflow_runs(self, query: WorkflowRunQuery) -> tuple[list[WorkflowSnapshotRecord], int]:
        """The stored runs of a workflow matching `query`, newest first, and how many match."""

    async def find_workflow_run(self, workflow_name: str, run_id: str) -> WorkflowSnapshotRecord | None:
        """The stored run with its owner and timestamps, or `None`."""

    async def save_spans(self, spans: Sequence[SpanRecord]) -> None:
        """Insert or replace finished tracing spans."""

    async def list_traces(self, query: TraceQuery) -> tuple[list[SpanRecord], int]:
        """Root spans matching `query`, one page, and the total."""

    async def get_trace(self, trace_id: str) -> list[SpanRecord]:
        """Every span of a trace, by start time."""

    async def dangerously_clear_all(self) -> None:
        """Delete every record of every domain (tests, development resets); the schema stays."""


Page = tuple[int, int] | None


class BaseStore(ObservedStore, ABC):
    """Argument validation, normalisation and lifecycle shared by the backends (they implement `_prims`)."""

    def __init__(self) -> None:
        self._opened = False
        self._closed = False
        self._init_lock = asyncio.Lock()

    # ------------------------------------------------------------------------------------- lifecycle

    async def init(self) -> None:
        """Open the store and apply pending migrations (idempotent)."""
        if self._opened:
            return
        async with self._init_lock:
            if self._closed:
                raise RuntimeError(f"{type(self).__name__} is closed")
            if not self._opened:
                await self._open()
                self._opened = True

    async def close(self) -> None:
        """Close the store (connections, pool); further use raises. Idempotent."""
        async with self._init_lock:
            if self._opened:
                await self._close()
            self._opened = False
            self._closed = True

    async def __aenter__(self) -> Self:
        await self.init()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _ready(self) -> None:
        if not self._opened:
            await self.init()

    # ---------------------------------------------------------------------------- threads & messages

    async def save_thread(self, thread: ThreadRecord) -> ThreadRecord:
        """Insert or replace a thread (upsert by id)."""
        await self._ready()
        thread = thread.normalized()
        await self._save_thread(thread)
        return thread

    async def get_thread(self, thread_id: str) -> ThreadRecord:
        """The thread with this id; `NotFoundError` if there is none."""
        found = await self.find_thread(thread_id)
        if found is None:
            raise NotFoundError("thread", thread_id)
        return found

    async def find_thread(self, thread_id: str) -> ThreadRecord | None:
        """The thread with this id, or `None`."""
        await self._ready()
        return await self._find_thread(thread_id)

    async def list_threads(self, *, resource_id: str | None = None) -> list[ThreadRecord]:
        """Threads (of one resource, or all), oldest first."""
        await self._ready()
        return await self._list_threads(resource_id)

    async def delete_thread(self, thread_id: str) -> bool:
        """Delete a thread with its messages and thread state; False if there was no such thread."""
        await self._ready()
        return await self._delete_thread(thread_id)

    async def save_messages(self, messages: Sequence[MessageRecord]) -> list[MessageRecord]:
        """Upsert messages by id (all-or-nothing); every thread must exist. Bumps the threads' `updated_at`."""
        await self._ready()
        normalized = [m.normalized() for m in messages]
        if normalized:
            await self._save_messages(normalized)
        return normalized

    async def list_messages(
        self,
        thread_id: str,
        *,
        last: int | None = None,
        page: int | None = None,
        per_page: int | None = None,
    ) -> MessagePage:
        """Messages of a thread in chronological order (created_at, then insertion order).

        `last=N` returns the N most recent (still oldest first); otherwise `page`/`per_page` paginate
        (0-based); with neither, everything.
        """
        await self._ready()
        if last is not None:
            if page is not None or per_page is not None:
                raise ValueError("last cannot be combined with page/per_page")
            if not isinstance(last, int) or last < 0:
                raise ValueError(f"last must be a non-negative int, got {last!r}")
        pg = check_page(page, per_page)
        if await self._find_thread(thread_id) is None:
            raise NotFoundError("thread", thread_id)
        messages, total = await self._list_messages(thread_id, last, pg)
        if pg is not None:
            has_more = (pg[0] + 1) * pg[1] < total
            return MessagePage(messages=messages, total=total, page=pg[0], per_page=pg[1], has_more=has_more)
        return MessagePage(
            messages=messages, total=total, page=None, per_page=None, has_more=len(messages) < total
        )

    async def delete_messages(self, message_ids: Sequence[str]) -> int:
        """Delete messages by id; returns how many existed."""
        await self._ready()
        if not message_ids:
            return 0
        return await self._delete_messages(list(dict.fromkeys(message_ids)))

    # ---------------------------------------------------------------------------- background tasks

    async def create_task(self, task: BackgroundTask) -> BackgroundTask:
        """Insert a new task; `ConflictError` if the id exists."""
        await self._ready()
        task = task.normalized()
        await self._create_task(task)
        return task

    async def get_task(self, task_id: str) -> BackgroundTask:
        """The background task with this id; `NotFoundError` if there is none."""
        found = await self.find_task(task_id)
        if found is None:
            raise NotFoundError("background task", task_id)
        return found

    async def find_task(self, task_id: str) -> BackgroundTask | None:
        """The background task with this id, or `None`."""
        await self._ready()
        return await self._find_task(task_id)

    async def update_task(
        self,
        task_id: str,
        update: TaskUpdate,
        *,
        expected_status: TaskStatus | None = None,
        expected_owner: str | UnsetType | None = UNSET,
        lease_expired_by: datetime | None = None,
    ) -> bool:
        """Apply `update`, atomically and only if every given condition holds (compare-and-set).

        `expected_status`: the current status; `expected_owner`: the current `owner_id` (`None`: no
        owner); `lease_expired_by`: the task has no lease, or its lease expired at or before this time.
        Returns whether the update applied. Raises `NotFoundError` if there is no such task.
        """
        await self._ready()
        if expected_status is not None:
            check_statuses("expected_status", expected_status)
        if expected_owner is not UNSET and expected_owner is not None and not isinstance(expected_owner, str):
            raise ValueError(f"expected_owner must be a str or None, got {expected_owner!r}")
        check_aware("lease_expired_by", lease_expired_by)
        condition = TaskCondition(
            status=expected_status,
            owner=expected_owner,
            lease_expired_by=None if lease_expired_by is None else to_utc(lease_expired_by),
        )
        return await self._update_task(task_id, update.changes(), condition)

    async def list_tasks(
        self,
        *,
        status: TaskStatus | Iterable[TaskStatus] | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        resource_id: str | None = None,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
        from_date: datetime | None = None,
        to_date: datetime | None = None,
        date_field: TaskDateField = "created_at",
        lease_expired_by: datetime | None = None,
        order_direction: OrderDirection = "asc",
        page: int | None = None,
        per_page: int | None = None,
    ) -> TaskPage:
        """Matching tasks ordered by created_at (then insertion order); `total` counts before paging.

        `lease_expired_by=t` keeps only tasks with no lease or a lease that expired at or before `t`.
        """
        await self._ready()
        query = TaskQuery.build(
            status=status,
            agent_id=agent_id,
            thread_id=thread_id,
            resource_id=resource_id,
            run_id=run_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            from_date=from_date,
            to_date=to_date,
            date_field=date_field,
            lease_expired_by=lease_expired_by,
        )
        check_direction(order_direction)
        pg = check_page(page, per_page)
        tasks, total = await self._list_tasks(query, order_direction == "desc", pg)
        if pg is None:
            return TaskPage(tasks=tasks, total=total, page=None, per_page=None, has_more=False)
        return TaskPage(
            tasks=tasks, total=total, page=pg[0], per_page=pg[1], has_more=(pg[0] + 1) * pg[1] < total
        )

    async def count_tasks(
        self,
        *,
        status: TaskStatus | Iterable[TaskStatus] | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        resource_id: str | None = None,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
    ) -> int:
        """Number of matching tasks (e.g. `count_tasks(status="running", agent_id=a)`)."""
        await self._ready()
        query = TaskQuery.build(
            status=status,
            agent_id=agent_id,
            thread_id=thread_id,
            resource_id=resource_id,
            run_id=run_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
        )
        return await self._count_tasks(query)

    async def renew_task_leases(self, owner_id: str, lease_expires_at: datetime) -> list[str]:
        """Extend the lease of every task `owner_id` holds to `lease_expires_at` (one atomic statement).

        Returns the ids of the tasks it still holds: a task missing from the list was finished,
        cancelled or taken over elsewhere.
        """
        await self._ready()
        if not isinstance(owner_id, str) or not owner_id:
            raise ValueError(f"owner_id must be a non-empty str, got {owner_id!r}")
        check_aware("lease_expires_at", lease_expires_at)
        return sorted(await self._renew_leases(owner_id, to_utc(lease_expires_at)))

    async def delete_task(self, task_id: str) -> bool:
        """Delete a background task; `False` if there was no such task."""
        await self._ready()
        return await self._delete_task(task_id)

    async def delete_tasks_older_than(
        self,
        cutoff: datetime,
        *,
        status: TaskStatus | Iterable[TaskStatus],
        date_field: TaskDateField = "completed_at",
    ) -> int:
        """Delete tasks in `status` whose `date_field` is set and earlier than `cutoff` (cleanup TTL)."""
        await self._ready()
        if cutoff is None:
            raise ValueError("cutoff is required")
        query = TaskQuery.build(status=status, to_date=cutoff, date_field=date_field)
        return await self._delete_tasks(query)

    # ------------------------------------------------------------------------- workflow snapshots

    async def persist_workflow_snapshot(
        self, workflow_name: str, run_id: str, snapshot: JSONValue, *, resource_id: str | None = None
    ) -> None:
        """Insert or replace the snapshot of run `(workflow_name, run_id)`."""
        await self._ready()
        await self._persist_snapshot(workflow_name, run_id, snapshot, resource_id)

    async def load_workflow_snapshot(self, workflow_name: str, run_id: str) -> JSONValue | None:
        """The snapshot of run `(workflow_name, run_id)`, or `None`."""
        await self._ready()
        return await self._load_snapshot(workflow_name, run_id)

    async def delete_workflow_snapshot(self, workflow_name: str, run_id: str) -> bool:
        """Delete the snapshot of run `(workflow_name, run_id)`; `False` if there was none."""
        await self._ready()
        return await self._delete_snapshot(workflow_name, run_id)

    async def compare_and_set_workflow_snapshot(
        self, workflow_name: str, run_id: str, snapshot: JSONValue, *, expected_status: str
    ) -> bool:
        """Replace the snapshot of run `(workflow_name, run_id)` only if the stored one is a JSON
        object whose `"status"` is `expected_status`; `True` if it was replaced, `False` if there is
        no such snapshot or its status differs. Atomic against every other writer (one statement),
        so of several callers racing to claim one snapshot exactly one wins."""
        if not isinstance(expected_status, str):
            raise TypeError(f"expected_status must be a str, got {type(expected_status).__name__}")
        await self._ready()
        return await self._cas_snapshot(workflow_name, run_id, snapshot, expected_status)

    # ------------------------------------------------------------------------------- thread state

    async def get_thread_state(self, thread_id: str, key: str) -> JSONValue | None:
        """The value stored under `(thread_id, key)`, or `None`."""
        await self._ready()
        return await self._get_state(thread_id, key)

    async def set_thread_state(self, thread_id: str, key: str, value: JSONValue) -> None:
        """Replace the value stored under `(thread_id, key)`."""
        await self._ready()
        await self._set_state(thread_id, key, value)

    async def delete_thread_state(self, thread_id: str, key: str) -> bool:
        """Delete the value under `(thread_id, key)`; `False` if there was none."""
        await self._ready()
        return await self._delete_state(thread_id, key)

    async def list_thread_state(self, thread_id: str) -> dict[str, JSONValue]:
        """Every `key: value` stored for a thread."""
        await self._ready()
        return await self._list_state(thread_id)

    async def dangerously_clear_all(self) -> None:
        """Delete every record of every domain (tests, dev resets). Keeps the schema."""
        await self._ready()
        await self._clear_all()

    # ------------------------------------------------------------------------ backend primitives

    @abstractmethod
    async def _open(self) -> None: ...
    @abstractmethod
    async def _close(self) -> None: ...
    @abstractmethod
    async def _save_thread(self, thread: ThreadRecord) -> None: ...
    @abstractmethod
    async def _find_thread(self, thread_id: str) -> ThreadRecord | None: ...
    @abstractmethod
    async def _list_threads(self, resource_id: str | None) -> list[ThreadRecord]: ...
    @abstractmethod
    async def _delete_thread(self, thread_id: str) -> bool: ...
    @abstractmethod
    async def _save_messages(self, messages: list[MessageRecord]) -> None: ...
    @abstractmethod
    async def _list_messages(
        self, thread_id: str, last: int | None, pg: Page
    ) -> tuple[list[MessageRecord], int]: ...
    @abstractmethod
    async def _delete_messages(self, message_ids: list[str]) -> int: ...
    @abstractmethod
    async def _create_task(self, task: BackgroundTask) -> None: ...
    @abstractmethod
    async def _find_task(self, task_id: str) -> BackgroundTask | None: ...
    @abstractmethod
    async def _update_task(
        self, task_id: str, changes: dict[str, object], condition: TaskCondition
    ) -> bool: ...
    @abstractmethod
    async def _list_tasks(
        self, query: TaskQuery, desc: bool, pg: Page
    ) -> tuple[list[BackgroundTask], int]: ...
    @abstractmethod
    async def _count_tasks(self, query: TaskQuery) -> int: ...
    @abstractmethod
    async def _renew_leases(self, owner_id: str, lease_expires_at: datetime) -> list[str]: ...
    @abstractmethod
    async def _delete_task(self, task_id: str) -> bool: ...
    @abstractmethod
    async def _delete_tasks(self, query: TaskQuery) -> int: ...
    @abstractmethod
    async def _persist_snapshot(
        self, workflow_name: str, run_id: str, snapshot: JSONValue, resource_id: str | None
    ) -> None: ...
    @abstractmethod
    async def _load_snapshot(self, workflow_name: str, run_id: str) -> JSONValue | None: ...
    @abstractmethod
    async def _delete_snapshot(self, workflow_name: str, run_id: str) -> bool: ...
    @abstractmethod
    async def _cas_snapshot(
        self, workflow_name: str, run_id: str, snapshot: JSONValue, expected_status: str
    ) -> bool: ...
    @abstractmethod
    async def _get_state(self, thread_id: str, key: str) -> JSONValue | None: ...
    @abstractmethod
    async def _set_state(self, thread_id: str, key: str, value: JSONValue) -> None: ...
    @abstractmethod
    async def _delete_state(self, thread_id: str, key: str) -> bool: ...
    @abstractmethod
    async def _list_state(self, thread_id: str) -> dict[str, JSONValue]: ...
    @abstractmethod
    async def _clear_all(self) -> None: ...
