"""What the background task manager's parts share: the chunk and executor types, the per-task
records kept in memory, and the small helpers that read tools, records and options.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast, get_args

from .._abort import AbortController
from ..chunks import (
    BackgroundTaskCancelled,
    BackgroundTaskCancelledPayload,
    BackgroundTaskCompleted,
    BackgroundTaskCompletedPayload,
    BackgroundTaskFailed,
    BackgroundTaskFailedPayload,
    BackgroundTaskOutput,
    BackgroundTaskResumed,
    BackgroundTaskRunning,
    BackgroundTaskSuspended,
)
from ..storage import (
    BackgroundTask,
    TaskError,
    TaskStatus,
)
from ._context import BackgroundTaskContext
from ._remote import RemoteTasks

if TYPE_CHECKING:
    from ..resumable import StreamStore

__all__ = [
    "BackgroundTaskChunk",
    "EnqueueResult",
    "Executor",
    "TaskHooks",
]

log = logging.getLogger("agentstream.background")

Executor: TypeAlias = Callable[[dict[str, Any], BackgroundTaskContext], Any]
"""``execute(args, context)`` (sync or async). A `agentstream.tools.Tool` is accepted too."""

BackgroundTaskChunk: TypeAlias = (
    BackgroundTaskRunning
    | BackgroundTaskOutput
    | BackgroundTaskCompleted
    | BackgroundTaskFailed
    | BackgroundTaskSuspended
    | BackgroundTaskResumed
    | BackgroundTaskCancelled
)

_TASK_CHUNKS: tuple[type[Any], ...] = get_args(BackgroundTaskChunk)

WORKFLOW_NAME = "__background-task"
STALE_TASK_MESSAGE = "Worker process terminated before task completed"
ABANDONED_THREAD_NOTE = (
    "its synchronous executor runs in a thread that Python cannot stop: the thread may still be running"
)
STREAM_OUTPUT_BUFFER = 1000
"""Default bound on progress chunks buffered per `BackgroundTaskManager.stream` consumer."""
_WAIT_POLL_S = 0.05
_ACTIVE: tuple[TaskStatus, ...] = ("pending", "running", "suspended")

Callback: TypeAlias = Callable[[Any], object]


@dataclass
class TaskHooks:
    """Per-task in-process closures (Mastra ``TaskContext``); never stored, lost on restart."""

    executor: Any = None
    """Overrides the registry for this task: an `Executor` or a ``Tool``."""
    on_chunk: Callback | None = None
    """Called with the task's lifecycle chunk when it completes / fails / is cancelled."""
    on_result: Callback | None = None
    """Called with the final task record (completed or failed) — the result injector."""
    on_complete: Callback | None = None
    on_failed: Callback | None = None


@dataclass(frozen=True, slots=True)
class EnqueueResult:
    """What `BackgroundTaskManager.enqueue` did with a task: stored and admitted, queued, or handed back to
    run inline.
    """

    task: BackgroundTask
    fallback_to_sync: bool = False
    """``backpressure='fallback-sync'`` and no slot: the task was not kept; run the tool inline."""
    admitted: bool = True
    """Got a slot at once (``False``: queued until one frees)."""


@dataclass(eq=False)
class _LocalRun:
    task_id: str
    agent_id: str
    controller: AbortController | None = None
    inner: asyncio.Future[Any] | None = None
    cancelled: bool = False
    finishing: bool = False
    """The terminal record is being written: the lease is released on purpose, not lost."""
    finished: bool = False
    last_output: float = float("-inf")
    resumed: bool = False
    output_seq: int = 0
    """``background-task-output`` chunks the current attempt produced (published or not)."""
    skip_outputs: int = 0
    """Outputs of this attempt a previous owner already published (a takeover re-relays them)."""
    in_thread: bool = False
    """The executor is synchronous and runs in a thread (which cannot be stopped)."""

    def thread_running(self) -> bool:
        return self.in_thread and self.inner is not None and not self.inner.done()


@dataclass(eq=False)
class _Subscriber:
    listener: Callable[[BackgroundTaskChunk], None]
    agent_id: str | None = None
    run_id: str | None = None
    thread_id: str | None = None
    resource_id: str | None = None
    task_id: str | None = None

    def wants(self, task: BackgroundTask) -> bool:
        return (
            (self.agent_id is None or task.agent_id == self.agent_id)
            and (self.run_id is None or task.run_id == self.run_id)
            and (self.thread_id is None or task.thread_id == self.thread_id)
            and (self.resource_id is None or task.resource_id == self.resource_id)
            and (self.task_id is None or task.id == self.task_id)
        )


@dataclass
class _Suspended:
    payload: Any


@dataclass
class _Outcome:
    kind: Literal["success", "suspended", "cancelled", "timed_out", "failed", "retry"]
    result: Any = None
    error: TaskError | None = None
    is_error: bool | None = None
    suspend_payload: Any = None
    abandoned_thread: bool = False


def _is_tool(obj: Any) -> bool:
    return hasattr(obj, "run") and hasattr(obj, "validation_error")


def _is_async_callable(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    )


def _runs_in_thread(executor: Any) -> bool:
    """Sync executors (and sync ``Tool.execute``) run in a worker thread."""
    return not _is_async_callable(executor.execute if _is_tool(executor) else executor)


def _record_chunk(task: BackgroundTask) -> BackgroundTaskChunk | None:
    """The lifecycle chunk a finished task's record stands for (``None``: it has not finished)."""
    done = task.completed_at or task.created_at
    if task.status == "completed":
        return BackgroundTaskCompleted(
            payload=BackgroundTaskCompletedPayload(
                task_id=task.id,
                tool_name=task.tool_name,
                tool_call_id=task.tool_call_id,
                agent_id=task.agent_id,
                run_id=task.run_id,
                completed_at=done,
                result=task.result,
            )
        )
    if task.status in ("failed", "timed_out"):
        return BackgroundTaskFailed(
            payload=BackgroundTaskFailedPayload(
                task_id=task.id,
                tool_name=task.tool_name,
                tool_call_id=task.tool_call_id,
                run_id=task.run_id,
                agent_id=task.agent_id,
                error={"message": task.error.message if task.error is not None else task.status},
                completed_at=done,
            )
        )
    if task.status == "cancelled":
        return BackgroundTaskCancelled(
            payload=BackgroundTaskCancelledPayload(
                task_id=task.id,
                tool_name=task.tool_name,
                tool_call_id=task.tool_call_id,
                run_id=task.run_id,
                agent_id=task.agent_id,
                completed_at=done,
            )
        )
    return None


def _check_remote(remote: Any) -> RemoteTasks | None:
    if remote is None or isinstance(remote, RemoteTasks):
        return remote
    raise TypeError(
        f"remote must have runs_remotely(tool_name, agent_id) and run(tool_name, args, context) "
        f"(e.g. agentstream.durable.DurableBackground(url)), got {type(remote).__name__}"
    )


def _check_stream_store(store: Any) -> StreamStore:
    needed = ("start", "append", "finish", "active", "read")
    missing = [name for name in needed if not callable(getattr(store, name, None))]
    if missing:
        raise TypeError(
            f"stream_store must be a StreamStore (MemoryStreamStore, RedisStreamStore), got "
            f"{type(store).__name__} without {', '.join(missing)}"
        )
    return cast("StreamStore", store)


def new_owner_id() -> str:
    """``host:pid:random``: unique per manager, readable in the task record."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


@dataclass
class _Resume:
    data: Any
    already_running: bool = field(default=False)
    attach: bool = field(default=False)
    """A remote task taken over from a dead manager: attach to its attempt, do not restart it."""
