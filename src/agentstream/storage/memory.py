"""`InMemoryStore`: every domain in process memory (Mastra's default store). Nothing survives the process."""

from __future__ import annotations

import itertools
import threading
from datetime import datetime
from typing import Any, TypeVar

import msgspec

from .._wellformed import copy_record, dumps_wellformed, loads_wellformed
from ._base import BaseStore, Page, TaskCondition, TaskQuery
from ._observed import page_of, run_matches, trace_matches
from ._records import (
    BackgroundTask,
    ConflictError,
    JSONValue,
    MessageRecord,
    NotFoundError,
    SpanRecord,
    ThreadRecord,
    TraceQuery,
    WorkflowRunQuery,
    WorkflowSnapshotRecord,
    utc_now,
)

__all__ = ["InMemoryStore"]

_S = TypeVar("_S", bound=msgspec.Struct)


def _copy(record: _S) -> _S:
    """An independent copy via JSON, so callers never share mutable values with the store and the store
    accepts exactly what the SQL backends accept."""
    return copy_record(record)


def _copy_json(value: JSONValue) -> JSONValue:
    copied: JSONValue = loads_wellformed(dumps_wellformed(value))
    return copied


class InMemoryStore(BaseStore):
    """All storage domains held in dicts. Safe for concurrent use from tasks and threads (one lock)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._seq = itertools.count()
        self._threads: dict[str, ThreadRecord] = {}
        self._messages: dict[str, tuple[int, MessageRecord]] = {}
        self._by_thread: dict[str, dict[str, None]] = {}
        self._tasks: dict[str, tuple[int, BackgroundTask]] = {}
        self._snapshots: dict[tuple[str, str], WorkflowSnapshotRecord] = {}
        self._state: dict[str, dict[str, JSONValue]] = {}
        self._spans: dict[tuple[str, str], SpanRecord] = {}

    async def _open(self) -> None:
        return None

    async def _close(self) -> None:
        return None

    # threads & messages

    async def _save_thread(self, thread: ThreadRecord) -> None:
        stored = _copy(thread)
        with self._lock:
            self._threads[thread.id] = stored

    async def _find_thread(self, thread_id: str) -> ThreadRecord | None:
        with self._lock:
            found = self._threads.get(thread_id)
        return None if found is None else _copy(found)

    async def _list_threads(self, resource_id: str | None) -> list[ThreadRecord]:
        with self._lock:
            found = [t for t in self._threads.values() if resource_id is None or t.resource_id == resource_id]
        found.sort(key=lambda t: t.created_at)
        return [_copy(t) for t in found]

    async def _delete_thread(self, thread_id: str) -> bool:
        with self._lock:
            if self._threads.pop(thread_id, None) is None:
                return False
            for message_id in self._by_thread.pop(thread_id, {}):
                self._messages.pop(message_id, None)
            self._state.pop(thread_id, None)
            return True

    async def _save_messages(self, messages: list[MessageRecord]) -> None:
        copies = [_copy(m) for m in messages]
        now = utc_now()
        with self._lock:
            for m in copies:
                if m.thread_id not in self._threads:
                    raise NotFoundError("thread", m.thread_id)
            for m in copies:
                previous = self._messages.get(m.id)
                if previous is not None:
                    seq = previous[0]
                    if previous[1].thread_id != m.thread_id:
                        self._by_thread.get(previous[1].thread_id, {}).pop(m.id, None)
                else:
                    seq = next(self._seq)
                self._messages[m.id] = (seq, m)
                self._by_thread.setdefault(m.thread_id, {})[m.id] = None
            for thread_id in {m.thread_id for m in copies}:
                thread = self._threads[thread_id]
                self._threads[thread_id] = msgspec.structs.replace(thread, updated_at=now)

    async def _list_messages(
        self, thread_id: str, last: int | None, pg: Page
    ) -> tuple[list[MessageRecord], int]:
        with self._lock:
            rows = [self._messages[mid] for mid in self._by_thread.get(thread_id, {})]
        rows.sort(key=lambda r: (r[1].created_at, r[0]))
        total = len(rows)
        if last is not None:
            rows = rows[total - last :] if last else []
        elif pg is not None:
            rows = rows[pg[0] * pg[1] : (pg[0] + 1) * pg[1]]
        return [_copy(r[1]) for r in rows], total

    async def _delete_messages(self, message_ids: list[str]) -> int:
        deleted = 0
        with self._lock:
            for message_id in message_ids:
                found = self._messages.pop(message_id, None)
                if found is not None:
                    deleted += 1
                    self._by_thread.get(found[1].thread_id, {}).pop(message_id, None)
        return deleted

    # background tasks

    async def _create_task(self, task: BackgroundTask) -> None:
        stored = _copy(task)
        with self._lock:
            if task.id in self._tasks:
                raise ConflictError("background task", task.id)
            self._tasks[task.id] = (next(self._seq), stored)

    async def _find_task(self, task_id: str) -> BackgroundTask | None:
        with self._lock:
            found = self._tasks.get(task_id)
        return None if found is None else _copy(found[1])

    async def _update_task(self, task_id: str, changes: dict[str, Any], condition: TaskCondition) -> bool:
        if "args" in changes or "result" in changes or "suspend_payload" in changes:
            changes = {
                k: (_copy_json(v) if k in ("args", "result", "suspend_payload") else v)
                for k, v in changes.items()
            }
        with self._lock:
            found = self._tasks.get(task_id)
            if found is None:
                raise NotFoundError("background task", task_id)
            seq, task = found
            if not condition.matches(task):
                return False
            if changes:
                self._tasks[task_id] = (seq, msgspec.structs.replace(task, **changes))
            return True

    def _select(self, query: TaskQuery) -> list[tuple[int, BackgroundTask]]:
        with self._lock:
            return [row for row in self._tasks.values() if query.matches(row[1])]

    async def _list_tasks(self, query: TaskQuery, desc: bool, pg: Page) -> tuple[list[BackgroundTask], int]:
        rows = self._select(query)
        rows.sort(key=lambda r: (r[1].created_at, r[0]), reverse=desc)
        total = len(rows)
        if pg is not None:
            rows = rows[pg[0] * pg[1] : (pg[0] + 1) * pg[1]]
        return [_copy(r[1]) for r in rows], total

    async def _count_tasks(self, query: TaskQuery) -> int:
        return len(self._select(query))

    async def _renew_leases(self, owner_id: str, lease_expires_at: datetime) -> list[str]:
        renewed: list[str] = []
        with self._lock:
            for task_id, (seq, task) in self._tasks.items():
                if task.owner_id == owner_id:
                    self._tasks[task_id] = (
                        seq,
                        msgspec.structs.replace(task, lease_expires_at=lease_expires_at),
                    )
                    renewed.append(task_id)
        return renewed

    async def _delete_task(self, task_id: str) -> bool:
        with self._lock:
            return self._tasks.pop(task_id, None) is not None

    async def _delete_tasks(self, query: TaskQuery) -> int:
        with self._lock:
            doomed = [task_id for task_id, (_, task) in self._tasks.items() if query.matches(task)]
            for task_id in doomed:
                del self._tasks[task_id]
        return len(doomed)

    # workflow snapshots

    async def _persist_snapshot(
        self, workflow_name: str, run_id: str, snapshot: JSONValue, resource_id: str | None
    ) -> None:
        value = _copy_json(snapshot)
        now = utc_now()
        key = (workflow_name, run_id)
        with self._lock:
            previous = self._snapshots.get(key)
            self._snapshots[key] = WorkflowSnapshotRecord(
                workflow_name=workflow_name,
                run_id=run_id,
                snapshot=value,
                resource_id=resource_id,
                created_at=now if previous is None else previous.created_at,
                updated_at=now,
            )

    async def _load_snapshot(self, workflow_name: str, run_id: str) -> JSONValue | None:
        with self._lock:
            found = self._snapshots.get((workflow_name, run_id))
        return None if found is None else _copy_json(found.snapshot)

    async def _delete_snapshot(self, workflow_name: str, run_id: str) -> bool:
        with self._lock:
            return self._snapshots.pop((workflow_name, run_id), None) is not None

    async def _cas_snapshot(
        self, workflow_name: str, run_id: str, snapshot: JSONValue, expected_status: str
    ) -> bool:
        value = _copy_json(snapshot)
        key = (workflow_name, run_id)
        with self._lock:
            found = self._snapshots.get(key)
            current = None if found is None else found.snapshot
            if not isinstance(current, dict) or current.get("status") != expected_status:
                return False
            assert found is not None
            self._snapshots[key] = msgspec.structs.replace(found, snapshot=value, updated_at=utc_now())
            return True

    # thread state

    async def _get_state(self, thread_id: str, key: str) -> JSONValue | None:
        with self._lock:
            found = self._state.get(thread_id, {}).get(key)
        return None if found is None else _copy_json(found)

    async def _set_state(self, thread_id: str, key: str, value: JSONValue) -> None:
        stored = _copy_json(value)
        with self._lock:
            self._state.setdefault(thread_id, {})[key] = stored

    async def _delete_state(self, thread_id: str, key: str) -> bool:
        with self._lock:
            entries = self._state.get(thread_id)
            if entries is None or key not in entries:
                return False
            del entries[key]
            if not entries:
                del self._state[thread_id]
            return True

    async def _list_state(self, thread_id: str) -> dict[str, JSONValue]:
        with self._lock:
            entries = dict(self._state.get(thread_id, {}))
        return {k: _copy_json(v) for k, v in sorted(entries.items())}

    async def _clear_all(self) -> None:
        with self._lock:
            self._threads.clear()
            self._messages.clear()
            self._by_thread.clear()
            self._tasks.clear()
            self._snapshots.clear()
            self._state.clear()
            self._spans.clear()

    # workflow run listings and tracing spans

    async def _list_runs(self, query: WorkflowRunQuery) -> tuple[list[WorkflowSnapshotRecord], int]:
        with self._lock:
            found = [r for r in self._snapshots.values() if run_matches(r, query)]
        found.sort(key=lambda r: (r.created_at, r.run_id), reverse=True)
        return [_copy(r) for r in page_of(found, query.page, query.per_page)], len(found)

    async def _find_run(self, workflow_name: str, run_id: str) -> WorkflowSnapshotRecord | None:
        with self._lock:
            found = self._snapshots.get((workflow_name, run_id))
        return None if found is None else _copy(found)

    async def _save_spans(self, spans: list[SpanRecord]) -> None:
        copies = [_copy(s) for s in spans]
        with self._lock:
            for span in copies:
                self._spans[(span.trace_id, span.span_id)] = span

    async def _list_traces(self, query: TraceQuery) -> tuple[list[SpanRecord], int]:
        with self._lock:
            roots = [s for s in self._spans.values() if trace_matches(s, query)]
        roots.sort(key=lambda s: (s.started_at, s.trace_id), reverse=query.descending)
        return [_copy(s) for s in page_of(roots, query.page, query.per_page)], len(roots)

    async def _trace(self, trace_id: str) -> list[SpanRecord]:
        with self._lock:
            spans = [s for (t, _), s in self._spans.items() if t == trace_id]
        spans.sort(key=lambda s: (s.started_at, s.span_id))
        return [_copy(s) for s in spans]
