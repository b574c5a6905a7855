"""``BackgroundTaskManager``: durable tool calls that run beside the agent loop.

Mastra ``background-tasks/manager.ts`` + ``workflow.ts`` in one process (mode ``'full'``): the
record lives in the storage's background-task domain, every status transition is a
compare-and-set on the stored status (so a task is never run twice nor resurrected after a
cancel), concurrency is counted with local slot reservations against ``global_concurrency`` and
``per_agent_concurrency``, and the result topic is an in-process fan-out that `stream` and
`subscribe` read.

Several processes may share one store. Each manager has an ``owner_id``; every ``pending`` or
``running`` task it holds records that owner and a lease it renews every ``heartbeat_interval_ms``.
Another manager reclaims a task only after its lease expired (its owner stopped renewing), with a
compare-and-set on ``(status, owner, lease expiry)``, so a live process's tasks are never touched
and a dead process's tasks are taken over exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import socket
import time
import traceback
import uuid
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast, get_args

import msgspec

from .._abort import AbortableQueue, AbortController, AbortSignal
from .._secrets import redact
from ..chunks import (
    BackgroundTaskCancelled,
    BackgroundTaskCancelledPayload,
    BackgroundTaskCompleted,
    BackgroundTaskCompletedPayload,
    BackgroundTaskFailed,
    BackgroundTaskFailedPayload,
    BackgroundTaskOutput,
    BackgroundTaskOutputPayload,
    BackgroundTaskResumed,
    BackgroundTaskResumedPayload,
    BackgroundTaskRunning,
    BackgroundTaskRunningPayload,
    BackgroundTaskSuspended,
    BackgroundTaskSuspendedPayload,
    chunk_from_dict,
    chunk_to_dict,
    to_jsonable,
)
from ..storage import (
    TERMINAL_TASK_STATUSES,
    BackgroundTask,
    Storage,
    TaskError,
    TaskPage,
    TaskStatus,
    TaskUpdate,
    utc_now,
)
from ..tracing import TaskParent, dispatch_parent, traced_task
from ._config import BackgroundTaskManagerConfig
from ._context import BackgroundTaskContext, BackgroundTaskWriter
from ._errors import (
    BackgroundTasksDisabledError,
    ConcurrencyLimitError,
    InvalidTaskStateError,
    TaskNotFoundError,
    TaskReleased,
    TaskSuspended,
    TaskWaitTimeoutError,
)
from ._remote import RemoteTasks
from ._shared import SEGMENT_END, TaskStreams
from ._threads import run_in_daemon_thread

if TYPE_CHECKING:
    from ..resumable import StreamStore

__all__ = [
    "BackgroundTaskChunk",
    "BackgroundTaskManager",
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


class BackgroundTaskManager:
    """Runs tool calls as durable background tasks.

    ``tools`` is the executor registry used when a task carries no in-process executor (after a
    restart, or for tasks dispatched without one): keys ``"<agent_id>:<tool_name>"`` or
    ``"<tool_name>"``, values ``Tool`` objects or ``execute(args, context)`` callables.

        async with BackgroundTaskManager(store, {"global_concurrency": 4}, tools={"research": research}) as m:
            task = await m.dispatch("research", {"topic": "x"}, tool_call_id="c1", agent_id="a", run_id="r1")
            done = await m.wait_for_completion(task.id)

    ``clock`` (aware ``datetime``) and ``sleep`` are injectable so leases and cleanup run on fake time;
    ``owner_id`` defaults to ``host:pid:random``.

    ``remote`` (or the config's ``remote``): an engine such as
    ``agentstream.durable.DurableBackground(url)`` that executes every task whose tool it
    ``runs_remotely`` (agent-dispatched or not) on worker processes; this manager keeps the records,
    leases, retries and streams. A task it took over from a dead manager is attached to the work
    already running, not started again.

    ``stream_store`` (or the config's ``stream_store``): a `agentstream.resumable.StreamStore`
    shared by every manager (Redis for several processes). The chunks of each task this manager
    runs are written there under ``task:<task id>``, and `stream`, `subscribe` and until-idle
    streams here also follow matching tasks that other managers run (found by polling the storage
    every ``follow_interval_ms``).
    """

    def __init__(
        self,
        storage: Storage,
        config: BackgroundTaskManagerConfig | Mapping[str, Any] | None = None,
        *,
        tools: Mapping[str, Any] | None = None,
        clock: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        owner_id: str | None = None,
        remote: RemoteTasks | None = None,
        stream_store: StreamStore | None = None,
    ) -> None:
        cfg = BackgroundTaskManagerConfig.from_value(config)
        if config is None:
            cfg = BackgroundTaskManagerConfig(enabled=True)
        self.storage = storage
        self.config = cfg
        self.remote: RemoteTasks | None = _check_remote(remote if remote is not None else cfg.remote)
        """Where tasks execute when not here (``None``: always in this process)."""
        shared = stream_store if stream_store is not None else cfg.stream_store
        self._shared = TaskStreams(_check_stream_store(shared)) if shared is not None else None
        self._followers: dict[str, asyncio.Task[None]] = {}
        self._followed: dict[str, datetime | None] = {}
        """Task id -> ``started_at`` of the segment followed (not followed again once it ended)."""
        self._stale_followers: set[str] = set()
        self._follow_task: asyncio.Task[None] | None = None
        self._registry: dict[str, Any] = dict(tools or {})
        self._clock = clock
        self._sleep = sleep
        self.owner_id = owner_id or new_owner_id()
        """Written into every task this manager holds; leases are renewed under it."""
        self._owned: set[str] = set()
        self._orphans = False
        """A worker crashed: the store may hold tasks under our owner id that nothing here runs."""
        self._lease_task: asyncio.Task[None] | None = None
        self._runs: dict[str, _LocalRun] = {}
        self._workers: set[asyncio.Task[None]] = set()
        self._global_used = 0
        self._agent_used: Counter[str] = Counter()
        self._pending: deque[tuple[str, str]] = deque()
        self._hooks: dict[str, TaskHooks] = {}
        self._trace_parents: dict[str, TaskParent] = {}
        """Per traced task: the dispatching tool call's span, parent of each attempt's span."""
        self._subscribers: list[_Subscriber] = []
        self._terminal_event = asyncio.Event()
        self._start_lock = asyncio.Lock()
        self._started = False
        self._closing = False
        self._cleanup_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> BackgroundTaskManager:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    async def start(self) -> None:
        """Init storage, reclaim tasks whose lease expired, start lease renewal and periodic cleanup."""
        async with self._start_lock:
            if self._started:
                return
            await self.storage.init()
            self._started = True
            self._closing = False
            if self.config.recover_stale_tasks_on_start:
                await self.reclaim_expired()
            self._lease_task = asyncio.create_task(self._lease_loop(self.config.heartbeat_ms))
            if self._shared is not None:
                self._follow_task = asyncio.create_task(self._follow_loop(self.config.follow_interval_ms))
            if self.config.cleanup is not None:
                self._cleanup_task = asyncio.create_task(
                    self._cleanup_loop(self.config.cleanup.cleanup_interval_ms)
                )

    async def shutdown(self, grace_ms: int | None = None) -> None:
        """Stop: wait up to ``grace_ms`` (default ``shutdown_grace_ms``) for running tasks, then abandon them.

        Abandoned tasks stay ``running`` in storage with their lease expired at once, and queued ones
        are released: the next `start` (here or in another process) reclaims them.
        """
        self._closing = True
        for background in (
            self._cleanup_task,
            self._lease_task,
            self._follow_task,
            *self._followers.values(),
        ):
            if background is not None:
                background.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await background
        self._cleanup_task = self._lease_task = self._follow_task = None
        self._followers.clear()
        grace = self.config.shutdown_grace_ms if grace_ms is None else grace_ms
        workers = set(self._workers)
        if workers:
            _, still = await asyncio.wait(workers, timeout=grace / 1000)
            for run in list(self._runs.values()):
                run.finished = True
                if run.controller is not None:
                    run.controller.abort(TaskReleased("Background task manager shutting down"))
                if run.inner is not None:
                    run.inner.cancel()
            for worker in still:
                worker.cancel()
            if still:
                await asyncio.wait(still, timeout=1)
        if self._shared is not None:
            await self._shared.aclose()
        if self._started:
            await self._release_leases()
        self._pending.clear()
        self._started = False

    def register_tool(self, tool: Any, *, name: str | None = None, agent_id: str | None = None) -> None:
        """Add an executor to the registry (``name`` defaults to ``tool.id``)."""
        key = name or getattr(tool, "id", None)
        if not key:
            raise ValueError("register_tool needs name= for a plain callable")
        self._registry[f"{agent_id}:{key}" if agent_id else key] = tool

    # ------------------------------------------------------------------------------ dispatch

    async def enqueue(
        self,
        tool_name: str,
        args: Mapping[str, Any] | None = None,
        *,
        tool_call_id: str,
        agent_id: str,
        run_id: str,
        thread_id: str | None = None,
        resource_id: str | None = None,
        timeout_ms: int | None = None,
        max_retries: int | None = None,
        hooks: TaskHooks | None = None,
        task_id: str | None = None,
    ) -> EnqueueResult:
        """Create the ``pending`` record and admit it, queue it, reject it or hand it back (backpressure)."""
        if not self.config.enabled:
            raise BackgroundTasksDisabledError(
                "background tasks are not enabled (background_tasks={'enabled': True})"
            )
        if self._closing:
            raise BackgroundTasksDisabledError("background task manager is shut down")
        await self.start()
        task = BackgroundTask(
            id=task_id or str(uuid.uuid4()),
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            agent_id=agent_id,
            run_id=run_id,
            thread_id=thread_id,
            resource_id=resource_id,
            args=dict(args or {}),
            status="pending",
            max_retries=self.config.default_retries.max_retries if max_retries is None else max_retries,
            timeout_ms=self.config.default_timeout_ms if timeout_ms is None else timeout_ms,
            created_at=self._clock(),
            owner_id=self.owner_id,
            lease_expires_at=self._lease_until(),
        )
        self._owned.add(task.id)
        trace_parent = dispatch_parent()
        try:
            task = await self.storage.create_task(task)
        except BaseException:
            self._owned.discard(task.id)
            raise
        if trace_parent is not None and (self._has_slot(agent_id) or self.config.backpressure == "queue"):
            self._trace_parents[task.id] = trace_parent
        if self._has_slot(agent_id):
            if hooks is not None:
                self._hooks[task.id] = hooks
            self._reserve(agent_id)
            self._spawn(task, None)
            return EnqueueResult(task)
        if self.config.backpressure == "queue" and not self._queue_full():
            if hooks is not None:
                self._hooks[task.id] = hooks
            self._pending.append((task.id, agent_id))
            return EnqueueResult(task, admitted=False)
        self._owned.discard(task.id)
        self._trace_parents.pop(task.id, None)
        await self.storage.delete_task(task.id)
        if self.config.backpressure == "queue":
            raise ConcurrencyLimitError(
                f"Background task queue is full ({self.config.max_queued} tasks waiting for a slot), cannot "
                f'enqueue task for tool "{tool_name}"; raise background_tasks={{"max_queued": ...}} or '
                "global_concurrency",
                tool_name=tool_name,
            )
        if self.config.backpressure == "reject":
            raise ConcurrencyLimitError(
                f'Concurrency limit reached, cannot enqueue task for tool "{tool_name}"', tool_name=tool_name
            )
        return EnqueueResult(task, fallback_to_sync=True, admitted=False)

    async def dispatch(
        self, tool_name: str, args: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> BackgroundTask:
        """`enqueue` returning the task; with ``fallback-sync`` and no slot raises
        `ConcurrencyLimitError` (use `enqueue` to run the tool inline instead)."""
        result = await self.enqueue(tool_name, args, **kwargs)
        if result.fallback_to_sync:
            raise ConcurrencyLimitError(
                f'Concurrency limit reached for tool "{tool_name}" (backpressure fallback-sync): run it inline',
                tool_name=tool_name,
            )
        return result.task

    # ------------------------------------------------------------------------------ control

    async def get_task(self, task_id: str) -> BackgroundTask:
        """The stored task with this id; `TaskNotFoundError` if there is none."""
        task = await self.storage.find_task(task_id)
        if task is None:
            raise TaskNotFoundError(task_id)
        return task

    async def list_tasks(self, **filters: Any) -> TaskPage:
        """Storage listing with Mastra's ``TaskFilter`` (snake_case): status, agent_id, thread_id, ..."""
        return await self.storage.list_tasks(**filters)

    async def cancel(self, task_id: str) -> BackgroundTask:
        """Cancel a pending, running or suspended task. A finished task raises `InvalidTaskStateError`."""
        while True:
            task = await self.get_task(task_id)
            if task.status in TERMINAL_TASK_STATUSES:
                raise InvalidTaskStateError(
                    task_id,
                    task.status,
                    f"cannot cancel a task in status {task.status!r} (it has already finished)",
                )
            now = self._clock()
            run = self._runs.get(task_id)
            abandoned = run is not None and run.thread_running()
            update = TaskUpdate(
                status="cancelled",
                completed_at=now,
                owner_id=None,
                lease_expires_at=None,
                abandoned_thread=True if abandoned else msgspec.UNSET,
            )
            won = await self.storage.update_task(task_id, update, expected_status=task.status)
            if won:
                break
        cancelled = msgspec.structs.replace(
            task,
            status="cancelled",
            completed_at=now,
            owner_id=None,
            lease_expires_at=None,
            abandoned_thread=task.abandoned_thread or abandoned,
        )
        run = self._runs.get(task_id)
        if run is not None:
            self._stop_run(run, RuntimeError("Task cancelled"))
        await self._announce_cancelled(cancelled, now)
        if self.config.on_task_cancelled is not None:
            await self._call_hook(self.config.on_task_cancelled, cancelled)
        return cancelled

    def _stop_run(self, run: _LocalRun, reason: Exception) -> None:
        run.cancelled = True
        if run.controller is not None:
            run.controller.abort(reason)
        if run.inner is not None:
            run.inner.cancel()

    async def _announce_cancelled(self, task: BackgroundTask, now: datetime) -> None:
        """Local effects of a cancel (here or in another process): unqueue, hooks, subscribers."""
        task_id = task.id
        self._owned.discard(task_id)
        self._pending = deque(item for item in self._pending if item[0] != task_id)
        chunk = BackgroundTaskCancelled(
            payload=BackgroundTaskCancelledPayload(
                task_id=task.id,
                tool_name=task.tool_name,
                tool_call_id=task.tool_call_id,
                run_id=task.run_id,
                agent_id=task.agent_id,
                completed_at=now,
            )
        )
        hooks = self._hooks.pop(task_id, None)
        self._trace_parents.pop(task_id, None)
        if hooks is not None and hooks.on_chunk is not None:
            await self._call_hook(hooks.on_chunk, chunk)
        self._publish(task, chunk)
        self._notify_terminal()

    async def resume(self, task_id: str, resume_data: Any = None) -> BackgroundTask:
        """Resume a ``suspended`` task: its tool's ``execute`` runs again with ``context.resume_data``.

        Works from a new process (the executor comes from the registry). Raises
        `TaskNotFoundError`, `InvalidTaskStateError` (not suspended, or resumed
        concurrently) or `ConcurrencyLimitError` (no free slot).
        """
        await self.start()
        task = await self.get_task(task_id)
        if task.status != "suspended":
            raise InvalidTaskStateError(
                task_id, task.status, f"Cannot resume task in status '{task.status}' (expected 'suspended')"
            )
        if not self._has_slot(task.agent_id):
            raise ConcurrencyLimitError(
                f'Concurrency limit reached, cannot resume task {task_id!r} for tool "{task.tool_name}"',
                tool_name=task.tool_name,
                task_id=task_id,
            )
        self._reserve(task.agent_id)
        self._owned.add(task_id)
        try:
            if resume_data is not None:
                await self.storage.persist_workflow_snapshot(
                    WORKFLOW_NAME, task_id, {"resumeData": resume_data}, resource_id=task.resource_id
                )
            now = self._clock()
            won = await self.storage.update_task(
                task_id,
                TaskUpdate(
                    status="running",
                    suspend_payload=None,
                    suspended_at=None,
                    started_at=now,
                    owner_id=self.owner_id,
                    lease_expires_at=self._lease_until(),
                ),
                expected_status="suspended",
            )
        except BaseException:
            self._owned.discard(task_id)
            self._release(task.agent_id)
            raise
        if not won:
            self._owned.discard(task_id)
            self._release(task.agent_id)
            current = await self.get_task(task_id)
            raise InvalidTaskStateError(
                task_id,
                current.status,
                f"Cannot resume task in status '{current.status}' (expected 'suspended')",
            )
        running = msgspec.structs.replace(
            task, status="running", suspend_payload=None, suspended_at=None, started_at=now
        )
        await self._open_segment(running, None)
        self._publish(
            running,
            BackgroundTaskResumed(
                payload=BackgroundTaskResumedPayload(
                    task_id=task.id,
                    tool_name=task.tool_name,
                    tool_call_id=task.tool_call_id,
                    run_id=task.run_id,
                    agent_id=task.agent_id,
                    started_at=now,
                    args=task.args,
                )
            ),
        )
        self._spawn(running, _Resume(resume_data, already_running=True))
        return running

    async def wait_for_next_task(
        self,
        task_ids: Iterable[str],
        *,
        timeout_ms: float | None = None,
        on_progress: Callable[[float], object] | None = None,
        progress_interval_ms: float = 3000,
        abort_signal: AbortSignal | None = None,
    ) -> BackgroundTask:
        """The first of ``task_ids`` to reach completed / failed / cancelled / timed_out.

        Polls storage every 50 ms (so tasks run by another process are seen) and wakes at once on
        local completions. ``on_progress(elapsed_ms)`` every ``progress_interval_ms``.
        """
        ids = list(task_ids)
        if not ids:
            raise ValueError("wait_for_next_task needs at least one task id")
        start = time.monotonic()
        next_progress = progress_interval_ms / 1000
        while True:
            event = self._terminal_event
            for tid in ids:
                task = await self.storage.find_task(tid)
                if task is None:
                    raise TaskNotFoundError(tid)
                if task.status in TERMINAL_TASK_STATUSES:
                    return task
            elapsed = time.monotonic() - start
            if abort_signal is not None and abort_signal.aborted:
                abort_signal.throw_if_aborted()
            if timeout_ms is not None and elapsed * 1000 >= timeout_ms:
                raise TaskWaitTimeoutError()
            if on_progress is not None and elapsed >= next_progress:
                next_progress += progress_interval_ms / 1000
                await self._call_hook(on_progress, elapsed * 1000)
            wait_s = _WAIT_POLL_S
            if timeout_ms is not None:
                wait_s = max(0.0, min(wait_s, timeout_ms / 1000 - elapsed))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), wait_s)

    async def wait_until_started(self, task_id: str, *, timeout_ms: float = 1000) -> bool:
        """Wait until the task has left ``pending`` (or ``timeout_ms`` passed); returns whether it did."""
        event = asyncio.Event()
        unsubscribe = self.subscribe(lambda _c: event.set(), task_id=task_id)
        try:
            task = await self.storage.find_task(task_id)
            if task is None or task.status != "pending":
                return True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout_ms / 1000)
            return event.is_set()
        finally:
            unsubscribe()

    async def wait_for_completion(self, task_id: str, *, timeout_ms: float | None = None) -> BackgroundTask:
        """Wait until task `task_id` reaches a terminal status and return it (`TaskWaitTimeoutError` after
        `timeout_ms`).
        """
        return await self.wait_for_next_task([task_id], timeout_ms=timeout_ms)

    # ------------------------------------------------------------------------------ events

    def subscribe(
        self,
        listener: Callable[[BackgroundTaskChunk], None],
        *,
        agent_id: str | None = None,
        run_id: str | None = None,
        thread_id: str | None = None,
        resource_id: str | None = None,
        task_id: str | None = None,
    ) -> Callable[[], None]:
        """Call ``listener(chunk)`` synchronously for every matching lifecycle chunk; returns an unsubscriber."""
        sub = _Subscriber(listener, agent_id, run_id, thread_id, resource_id, task_id)
        self._subscribers.append(sub)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._subscribers.remove(sub)

        return unsubscribe

    async def stream(
        self,
        *,
        agent_id: str | None = None,
        run_id: str | None = None,
        thread_id: str | None = None,
        resource_id: str | None = None,
        task_id: str | None = None,
        abort_signal: AbortSignal | None = None,
        include_existing: bool = True,
        max_buffered_output: int = STREAM_OUTPUT_BUFFER,
    ) -> AsyncIterator[BackgroundTaskChunk]:
        """Lifecycle chunks (no ``runId``/``from``) until ``abort_signal`` fires or the consumer stops.

        With ``include_existing``, first a ``background-task-running`` for each task currently
        ``running`` (Mastra replays only running tasks, not suspended ones).

        Bounded: while more than ``max_buffered_output`` chunks wait for a slow consumer, further
        ``background-task-output`` (progress) chunks are dropped (and counted in a log warning);
        lifecycle chunks (running, completed, failed, suspended, resumed, cancelled) are always kept,
        so the buffer holds at most ``max_buffered_output`` plus a few chunks per task.
        """
        if isinstance(max_buffered_output, bool) or not isinstance(max_buffered_output, int):
            raise TypeError(f"max_buffered_output must be an int, got {max_buffered_output!r}")
        if max_buffered_output < 0:
            raise ValueError(f"max_buffered_output must be >= 0, got {max_buffered_output}")
        queue: AbortableQueue[BackgroundTaskChunk] = AbortableQueue(abort_signal)
        dropped = 0
        announced: set[str] = set()
        """Tasks whose running chunk came from the listing: a second one (the task's own publish
        racing the listing, or a followed stream's replay) is dropped."""

        def offer(chunk: BackgroundTaskChunk) -> None:
            nonlocal dropped
            if isinstance(chunk, BackgroundTaskOutput) and queue.qsize() >= max_buffered_output:
                dropped += 1
                if dropped == 1:
                    log.warning(
                        "background task stream: consumer is %d chunks behind; dropping progress chunks",
                        queue.qsize(),
                    )
                return
            queue.put(chunk)

        unsubscribe = self.subscribe(
            offer,
            agent_id=agent_id,
            run_id=run_id,
            thread_id=thread_id,
            resource_id=resource_id,
            task_id=task_id,
        )
        try:
            if include_existing:
                page = await self.storage.list_tasks(
                    status="running",
                    agent_id=agent_id,
                    run_id=run_id,
                    thread_id=thread_id,
                    resource_id=resource_id,
                )
                for task in page.tasks:
                    if task_id is None or task.id == task_id:
                        announced.add(task.id)
                        yield self._running_chunk(task)
            if abort_signal is not None and abort_signal.aborted:
                return
            async for chunk in queue:
                if isinstance(chunk, BackgroundTaskRunning) and chunk.payload.task_id in announced:
                    announced.discard(chunk.payload.task_id)
                    continue
                yield chunk
        finally:
            unsubscribe()
            queue.close()
            if dropped:
                log.warning("background task stream: dropped %d progress chunks for a slow consumer", dropped)

    # ------------------------------------------------------------------------------ other managers' tasks

    async def _follow_loop(self, interval_ms: int) -> None:
        while True:
            try:
                await self.follow_tasks()
            except Exception:  # pragma: no cover - logged, the loop keeps going (a store may be down)
                log.exception("background task manager: following other managers' tasks failed")
            await self._sleep(interval_ms / 1000)

    async def follow_tasks(self) -> None:
        """Start following the running tasks other managers hold that a subscriber here wants; end
        the following of tasks that ended without their stream saying so (their manager died).

        Runs every ``follow_interval_ms`` when a ``stream_store`` is set; call it directly in tests.
        """
        if self._shared is None or (not self._subscribers and not self._followers):
            return
        page = await self.storage.list_tasks(status=("running", "pending"))
        alive = {task.id: task for task in page.tasks}
        for task_id in list(self._followers):
            if task_id in alive:
                self._stale_followers.discard(task_id)
            elif task_id in self._stale_followers:  # ended a poll ago and the stream never said so
                await self._end_following(task_id)
            else:
                self._stale_followers.add(task_id)
        for task_id in [t for t in self._followed if t not in alive and t not in self._followers]:
            del self._followed[task_id]
        for task in alive.values():
            if (
                task.status != "running"
                or task.id in self._owned
                or task.id in self._followers
                or self._followed.get(task.id, False) == task.started_at
                or not any(sub.wants(task) for sub in self._subscribers)
            ):
                continue
            self._followed[task.id] = task.started_at
            follower = asyncio.create_task(self._follow(task), name=f"background-task-follow:{task.id}")
            self._followers[task.id] = follower

    async def _follow(self, task: BackgroundTask) -> None:
        def deliver(wire: dict[str, Any]) -> None:
            chunk = chunk_from_dict(wire, unknown="keep")
            if isinstance(chunk, _TASK_CHUNKS):
                self._fan_out(task, chunk)
                if wire.get("type") in SEGMENT_END:
                    self._notify_terminal()

        assert self._shared is not None
        ended = False
        try:
            ended = await self._shared.follow(task.id, deliver, lambda: task.id in self._owned)
        except Exception as exc:
            log.warning("background task %s: following its stream failed (%s)", task.id, exc)
        finally:
            # Without its ending chunk (its stream expired or failed), the entry stays: the next
            # polls tell the end from the record (`_end_following`).
            if (ended or task.id in self._owned) and self._followers.get(task.id) is asyncio.current_task():
                del self._followers[task.id]
                self._stale_followers.discard(task.id)

    async def _end_following(self, task_id: str) -> None:
        """The task ended but its manager died before its stream said so: tell from the record."""
        follower = self._followers.pop(task_id)
        self._stale_followers.discard(task_id)
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
        task = await self.storage.find_task(task_id)
        chunk = None if task is None else _record_chunk(task)
        if task is not None and chunk is not None:
            self._fan_out(task, chunk)
            self._notify_terminal()

    # ------------------------------------------------------------------------------ cleanup

    async def cleanup(self) -> int:
        """Delete completed tasks older than ``completed_ttl_ms`` and failed/cancelled/timed_out ones
        older than ``failed_ttl_ms`` (by ``completed_at``). Returns how many were deleted."""
        ttls = self.config.cleanup_ttls
        now = self._clock()
        n = await self.storage.delete_tasks_older_than(
            now - timedelta(milliseconds=ttls.completed_ttl_ms), status="completed"
        )
        n += await self.storage.delete_tasks_older_than(
            now - timedelta(milliseconds=ttls.failed_ttl_ms), status=("failed", "cancelled", "timed_out")
        )
        return n

    async def _cleanup_loop(self, interval_ms: int) -> None:
        while True:
            await self._sleep(interval_ms / 1000)
            try:
                await self.cleanup()
            except Exception:  # pragma: no cover - logged, the loop keeps going
                log.exception("background task cleanup failed")

    # ------------------------------------------------------------------------------ internals

    @property
    def running_count(self) -> int:
        """Slots reserved in this process."""
        return self._global_used

    def _has_slot(self, agent_id: str) -> bool:
        return (
            self._global_used < self.config.global_concurrency
            and self._agent_used[agent_id] < self.config.per_agent_concurrency
        )

    def _reserve(self, agent_id: str) -> None:
        self._global_used += 1
        self._agent_used[agent_id] += 1

    def _release(self, agent_id: str) -> None:
        self._global_used -= 1
        self._agent_used[agent_id] -= 1
        if self._agent_used[agent_id] <= 0:
            del self._agent_used[agent_id]
        self._drain()

    def _drain(self) -> None:
        """Start queued tasks in FIFO order while slots allow (skipping agents at their limit)."""
        if self._closing or not self._pending or self._global_used >= self.config.global_concurrency:
            return
        kept: deque[tuple[str, str]] = deque()
        while self._pending:
            task_id, agent_id = self._pending.popleft()
            if self._global_used >= self.config.global_concurrency:
                kept.append((task_id, agent_id))
                kept.extend(self._pending)
                self._pending.clear()
                break
            if self._agent_used[agent_id] >= self.config.per_agent_concurrency:
                kept.append((task_id, agent_id))
                continue
            self._reserve(agent_id)
            self._spawn_id(task_id, agent_id)
        self._pending = kept

    def _spawn(self, task: BackgroundTask, resume: _Resume | None) -> None:
        run = _LocalRun(
            task.id,
            task.agent_id,
            resumed=resume is not None and (not resume.attach or resume.data is not None),
        )
        self._start_worker(run, self._work(task, run, resume))

    def _spawn_id(self, task_id: str, agent_id: str) -> None:
        run = _LocalRun(task_id, agent_id)
        self._start_worker(run, self._work_by_id(task_id, run))

    def _start_worker(self, run: _LocalRun, work: Coroutine[Any, Any, None]) -> None:
        # Workers outlive the call that dispatched them: tracked here, cancelled by ``shutdown``.
        self._runs[run.task_id] = run
        worker = asyncio.create_task(work, name=f"background-task:{run.task_id}")
        self._workers.add(worker)
        worker.add_done_callback(self._workers.discard)

    async def _work_by_id(self, task_id: str, run: _LocalRun) -> None:
        try:
            task = await self.storage.find_task(task_id)
        except BaseException:
            self._runs.pop(task_id, None)
            self._release(run.agent_id)
            raise
        if task is None or task.status != "pending" or task.owner_id != self.owner_id:
            self._runs.pop(task_id, None)
            self._owned.discard(task_id)
            self._release(run.agent_id)
            return
        resume: _Resume | None = None
        snapshot = (
            await self.storage.load_workflow_snapshot(WORKFLOW_NAME, task_id) if task.retry_count else None
        )
        if isinstance(snapshot, dict) and "resumeData" in snapshot:
            resume = _Resume(snapshot["resumeData"], already_running=False)
            run.resumed = True
        await self._work(task, run, resume)

    async def _work(self, task: BackgroundTask, run: _LocalRun, resume: _Resume | None) -> None:
        try:
            if resume is None or not resume.already_running:
                now = self._clock()
                won = await self.storage.update_task(
                    task.id,
                    TaskUpdate(status="running", started_at=now, lease_expires_at=self._lease_until()),
                    expected_status="pending",
                    expected_owner=self.owner_id,
                )
                if not won:
                    return
                task = msgspec.structs.replace(task, status="running", started_at=now)
                await self._open_segment(task, run)
                self._publish(task, self._running_chunk(task))
            elif resume.attach:
                await self._open_segment(task, run)
            resume_data = resume.data if resume is not None else None
            while True:
                outcome = await self._attempt(task, run, resume_data)
                if outcome.kind == "retry":
                    run.skip_outputs = 0
                    task = msgspec.structs.replace(task, retry_count=task.retry_count + 1)
                    won = await self.storage.update_task(
                        task.id,
                        TaskUpdate(retry_count=task.retry_count),
                        expected_status="running",
                        expected_owner=self.owner_id,
                    )
                    if not won:
                        return
                    continue
                await self._finish(task, run, outcome)
                return
        except asyncio.CancelledError:
            if not self._closing:
                raise
        except Exception:  # pragma: no cover - storage failure: the lease lapses, the task is reclaimed
            log.exception("background task %s: worker failed", task.id)
            self._orphans = True
        finally:
            run.finished = True
            self._owned.discard(task.id)
            if self._runs.get(task.id) is run:
                del self._runs[task.id]
            self._release(run.agent_id)

    async def _attempt(self, task: BackgroundTask, run: _LocalRun, resume_data: Any) -> _Outcome:
        hooks = self._hooks.get(task.id)
        executor = hooks.executor if hooks is not None and hooks.executor is not None else None
        if executor is None:
            executor = self._registry.get(f"{task.agent_id}:{task.tool_name}") or self._registry.get(
                task.tool_name
            )
        is_tool = _is_tool(executor)
        if self.remote is not None and self.remote.runs_remotely(task.tool_name, task.agent_id):
            executor = self._remote_executor(task.tool_name)
        elif executor is None:
            return _Outcome(
                "failed", error=TaskError(message=f'No executor registered for tool "{task.tool_name}"')
            )
        controller = AbortController()
        run.controller = controller
        run.output_seq = 0
        if run.cancelled:
            return _Outcome("cancelled")

        def emit(chunk: Any) -> None:
            self._on_output(task, run, chunk)

        context = BackgroundTaskContext(
            task_id=task.id,
            run_id=task.run_id,
            tool_call_id=task.tool_call_id,
            tool_name=task.tool_name,
            agent_id=task.agent_id,
            abort_signal=controller.signal,
            writer=BackgroundTaskWriter(
                emit, run_id=task.run_id, tool_call_id=task.tool_call_id, tool_name=task.tool_name
            ),
            thread_id=task.thread_id,
            resource_id=task.resource_id,
            resume_data=resume_data,
            retry_count=task.retry_count,
        )
        run.in_thread = _runs_in_thread(executor)
        work = self._execute(executor, dict(task.args), context, f"agentstream-background-task:{task.id}")
        inner = asyncio.ensure_future(
            traced_task(
                self._trace_parents.get(task.id),
                work,
                task_id=task.id,
                tool_name=task.tool_name,
                agent_id=task.agent_id,
                run_id=task.run_id,
                attempt=task.retry_count + 1,
                args=task.args,
            )
        )
        run.inner = inner
        timeout = task.timeout_ms / 1000 if task.timeout_ms > 0 else None
        try:
            done, _ = await asyncio.wait({inner}, timeout=timeout)
        except asyncio.CancelledError:
            inner.cancel()
            raise
        if run.cancelled:
            return _Outcome("cancelled")
        if not done:
            message = f"Task timed out after {task.timeout_ms}ms"
            abandoned = run.thread_running()
            if abandoned:
                message = f"{message}; {ABANDONED_THREAD_NOTE}"
            controller.abort(TimeoutError(message))
            inner.cancel()
            return _Outcome("timed_out", error=TaskError(message=message), abandoned_thread=abandoned)
        if inner.cancelled():
            return _Outcome("cancelled")
        exc = inner.exception()
        if exc is None:
            value = inner.result()
            if isinstance(value, _Suspended):
                return _Outcome("suspended", suspend_payload=value.payload)
            is_error = True if isinstance(value, dict) and value.get("error") is True and is_tool else None
            return _Outcome("success", result=value, is_error=is_error)
        if controller.signal.aborted or isinstance(exc, TimeoutError):
            message = f"Task timed out after {task.timeout_ms}ms"
            return _Outcome("timed_out", error=TaskError(message=message))
        # The record's message reaches the client (background-task-failed) and the model (the
        # continuation turn): a secret in a tool's exception must reach neither.
        stack = redact("".join(traceback.format_exception(exc)))
        log.warning("background task %s (tool %s) failed:\n%s", task.id, task.tool_name, stack)
        error = TaskError(message=redact(str(exc) or type(exc).__name__), stack=stack)
        if task.retry_count < task.max_retries:
            return _Outcome("retry", error=error)
        return _Outcome("failed", error=error)

    def _remote_executor(self, tool_name: str) -> Executor:
        remote = self.remote
        assert remote is not None

        async def run_remotely(args: dict[str, Any], context: BackgroundTaskContext) -> Any:
            return await remote.run(tool_name, args, context)

        return run_remotely

    async def _open_segment(self, task: BackgroundTask, run: _LocalRun | None) -> None:
        """Start writing the task's chunks to the shared stream (when there is one)."""
        if self._shared is None:
            return
        try:
            skip = await self._shared.open(task.id, retry_count=task.retry_count)
        except Exception as exc:  # the store is down: the task runs on, only other servers miss its chunks
            log.warning("background task %s: cannot open its shared stream (%s)", task.id, exc)
            return
        if run is not None:
            run.skip_outputs = skip

    @staticmethod
    async def _execute(
        executor: Any, args: dict[str, Any], context: BackgroundTaskContext, thread_name: str
    ) -> Any:
        # Results are stored and streamed as JSON: converted here, so a value that is not JSON data
        # fails the task (with its type named) instead of the worker.
        try:
            if _is_tool(executor):
                parsed, error = executor.validation_error(args)
                if error is not None:
                    return error
                return to_jsonable(await executor.run(parsed, cast(Any, context)))
            if _is_async_callable(executor):
                return to_jsonable(await executor(args, context))
            result = await run_in_daemon_thread(executor, args, context, name=thread_name)
            return to_jsonable(await _maybe_await(result))
        except TaskSuspended as suspended:
            return _Suspended(to_jsonable(suspended.payload))

    async def _finish(self, task: BackgroundTask, run: _LocalRun, outcome: _Outcome) -> None:
        now = self._clock()
        if outcome.kind == "cancelled":
            return  # cancel() (here, or elsewhere and noticed by the heartbeat) wrote the record
        run.finishing = True
        if outcome.kind == "suspended":
            payload = outcome.suspend_payload
            suspended = await self._settle(
                task, status="suspended", suspend_payload=payload, suspended_at=now
            )
            if suspended is not None:
                chunk = BackgroundTaskSuspended(
                    payload=BackgroundTaskSuspendedPayload(
                        task_id=task.id,
                        tool_name=task.tool_name,
                        tool_call_id=task.tool_call_id,
                        run_id=task.run_id,
                        agent_id=task.agent_id,
                        args=task.args,
                        suspend_payload=payload,
                        suspended_at=now,
                    )
                )
                self._publish(suspended, chunk)
            return
        if outcome.kind == "success":
            result = outcome.result
            final = await self._settle(task, status="completed", result=result, completed_at=now)
            if final is not None:
                completed = BackgroundTaskCompleted(
                    payload=BackgroundTaskCompletedPayload(
                        task_id=task.id,
                        tool_name=task.tool_name,
                        tool_call_id=task.tool_call_id,
                        agent_id=task.agent_id,
                        run_id=task.run_id,
                        completed_at=now,
                        result=result,
                        is_error=outcome.is_error,
                    )
                )
                await self._deliver(final, completed, run, "on_complete", self.config.on_task_complete)
            return
        error = outcome.error or TaskError(message="unknown error")
        abandoned: dict[str, Any] = {"abandoned_thread": True} if outcome.abandoned_thread else {}
        status: TaskStatus = "timed_out" if outcome.kind == "timed_out" else "failed"
        final = await self._settle(task, status=status, error=error, completed_at=now, **abandoned)
        if final is not None:
            failed = BackgroundTaskFailed(
                payload=BackgroundTaskFailedPayload(
                    task_id=task.id,
                    tool_name=task.tool_name,
                    tool_call_id=task.tool_call_id,
                    run_id=task.run_id,
                    agent_id=task.agent_id,
                    error={"message": error.message},
                    completed_at=now,
                )
            )
            await self._deliver(final, failed, run, "on_failed", self.config.on_task_failed)

    async def _settle(self, task: BackgroundTask, **fields: Any) -> BackgroundTask | None:
        """Write the end of this run and release the lease, only while this manager holds the task
        (fencing: after a lost lease the new owner's record wins). The updated record, or ``None``."""
        fields.update(owner_id=None, lease_expires_at=None)
        won = await self.storage.update_task(
            task.id, TaskUpdate(**fields), expected_status="running", expected_owner=self.owner_id
        )
        return msgspec.structs.replace(task, **fields) if won else None

    async def _deliver(
        self,
        final: BackgroundTask,
        chunk: BackgroundTaskCompleted | BackgroundTaskFailed,
        run: _LocalRun,
        outcome_hook: Literal["on_complete", "on_failed"],
        config_hook: Callback | None,
    ) -> None:
        """Tell everyone a task ended: its hooks, this manager's subscribers and waiters, the config."""
        hooks = self._hooks.pop(final.id, None)
        self._trace_parents.pop(final.id, None)
        if run.resumed:
            await self.storage.delete_workflow_snapshot(WORKFLOW_NAME, final.id)
        if hooks is not None:
            if hooks.on_chunk is not None:
                await self._call_hook(hooks.on_chunk, chunk)
            for hook in (hooks.on_result, getattr(hooks, outcome_hook)):
                if hook is not None:
                    await self._call_hook(hook, final)
        self._publish(final, chunk)
        self._notify_terminal()
        if config_hook is not None:
            await self._call_hook(config_hook, final)

    def _on_output(self, task: BackgroundTask, run: _LocalRun, chunk: Any) -> None:
        number = run.output_seq
        run.output_seq += 1
        if number < run.skip_outputs:
            return  # published by the manager this task was taken over from
        if run.finished or run.cancelled or (run.controller is not None and run.controller.signal.aborted):
            return
        throttle = self.config.progress_throttle_ms
        if throttle:
            now = time.monotonic()
            if (now - run.last_output) * 1000 < throttle:
                return
            run.last_output = now
        self._publish(
            task,
            BackgroundTaskOutput(
                payload=BackgroundTaskOutputPayload(
                    task_id=task.id,
                    tool_name=task.tool_name,
                    tool_call_id=task.tool_call_id,
                    run_id=task.run_id,
                    agent_id=task.agent_id,
                    payload=chunk_to_dict(chunk),
                )
            ),
            output=(task.retry_count, number),
        )

    @staticmethod
    def _running_chunk(task: BackgroundTask) -> BackgroundTaskRunning:
        return BackgroundTaskRunning(
            payload=BackgroundTaskRunningPayload(
                task_id=task.id,
                tool_name=task.tool_name,
                tool_call_id=task.tool_call_id,
                run_id=task.run_id,
                agent_id=task.agent_id,
                started_at=task.started_at or task.created_at,
                args=task.args,
            )
        )

    def _publish(
        self, task: BackgroundTask, chunk: BackgroundTaskChunk, *, output: tuple[int, int] | None = None
    ) -> None:
        """To this manager's subscribers and, for a task it runs, to the task's shared stream."""
        if self._shared is not None:
            self._shared.write(task.id, chunk_to_dict(chunk), output=output)
        self._fan_out(task, chunk)

    def _fan_out(self, task: BackgroundTask, chunk: BackgroundTaskChunk) -> None:
        for sub in list(self._subscribers):
            if sub.wants(task):
                try:
                    sub.listener(chunk)
                except Exception:
                    log.exception("background task subscriber failed")

    def _notify_terminal(self) -> None:
        event, self._terminal_event = self._terminal_event, asyncio.Event()
        event.set()

    @staticmethod
    async def _call_hook(hook: Callable[[Any], object], value: Any) -> None:
        try:
            await _maybe_await(hook(value))
        except Exception:
            log.exception("background task callback failed")

    # ------------------------------------------------------------------------------ leases

    def _lease_until(self) -> datetime:
        return self._clock() + timedelta(milliseconds=self.config.lease_ms)

    def _queue_full(self) -> bool:
        limit = self.config.max_queued
        return limit is not None and len(self._pending) >= limit

    async def _lease_loop(self, interval_ms: int) -> None:
        while True:
            await self._sleep(interval_ms / 1000)
            try:
                await self.heartbeat()
            except Exception:  # pragma: no cover - logged, the loop keeps going (a store may be down)
                log.exception("background task lease renewal failed")

    async def heartbeat(self) -> None:
        """Renew this manager's leases, stop local work it no longer holds, reclaim expired tasks.

        Runs every ``heartbeat_interval_ms`` on its own; call it directly to drive leases on a fake
        clock (tests).
        """
        await self.renew_leases()
        if self._shared is not None:
            self._shared.keep_alive()
        if self.config.recover_stale_tasks_on_start:
            await self.reclaim_expired()

    async def renew_leases(self) -> None:
        """Extend every lease this manager holds, in one statement, and act on the ones it lost.

        A task it runs or queues whose lease it no longer holds was cancelled by another process
        (announced here as cancelled) or taken over after the lease lapsed (stopped here, the new
        owner runs it). A task it holds but no longer runs (a worker that crashed) is let go.
        """
        if not self._owned and not self._orphans:
            return  # holds nothing: no write (on SQLite even an UPDATE matching nothing takes the lock)
        expected = set(self._owned)
        held = set(await self.storage.renew_task_leases(self.owner_id, self._lease_until()))
        self._orphans = False
        for task_id in expected - held:
            if task_id in self._owned:
                await self._on_lease_lost(task_id)
        for task_id in held - self._owned:
            await self.storage.update_task(
                task_id, TaskUpdate(lease_expires_at=self._clock()), expected_owner=self.owner_id
            )

    async def _on_lease_lost(self, task_id: str) -> None:
        run = self._runs.get(task_id)
        if run is not None and (run.finishing or run.finished or run.cancelled):
            return
        task = await self.storage.find_task(task_id)
        if task_id not in self._owned or (run is not None and (run.finishing or run.finished)):
            return  # settled locally while we looked
        abandoned = run is not None and run.thread_running()
        cancelled = task is not None and task.status == "cancelled"
        if run is not None:
            self._stop_run(run, RuntimeError("Task cancelled") if cancelled else TaskReleased("Lease lost"))
        if self._shared is not None and not cancelled:
            self._shared.release(task_id)
        if task is not None and task.status == "cancelled":
            if abandoned:
                await self.storage.update_task(
                    task_id, TaskUpdate(abandoned_thread=True), expected_status="cancelled"
                )
                task = msgspec.structs.replace(task, abandoned_thread=True)
            await self._announce_cancelled(task, task.completed_at or self._clock())
            return
        self._owned.discard(task_id)
        self._pending = deque(item for item in self._pending if item[0] != task_id)
        log.warning(
            "background task %s: lease lost (now %s, owner %s); stopped in this process",
            task_id,
            None if task is None else task.status,
            None if task is None else task.owner_id,
        )

    async def reclaim_expired(self) -> None:
        """Take over ``pending``/``running`` tasks whose lease expired (Mastra's startup recovery, made
        safe for processes sharing a store).

        An expired ``running`` task goes back to ``pending`` with ``retry_count + 1`` when it has
        retries left, otherwise it fails with `STALE_TASK_MESSAGE`. Expired (or unowned)
        ``pending`` tasks are claimed into this process's queue, oldest first, while it has room.
        Every change is a compare-and-set on (status, owner, lease expired), so of several managers
        sweeping at once exactly one takes each task, and a renewed lease is never taken.
        """
        now = self._clock()
        page = await self.storage.list_tasks(status=("running", "pending"), lease_expired_by=now)
        for task in page.tasks:
            if task.id in self._owned:
                continue  # ours and alive here: the next renewal extends it
            claimable: BackgroundTask | None = task
            if task.status == "running" and self._runs_remotely(task):
                await self._attach(task, now)
                continue
            if task.status == "running":
                claimable = await self._reclaim_running(task, now)
            if claimable is not None:
                await self._claim_pending(claimable, now)
        self._drain()

    def _runs_remotely(self, task: BackgroundTask) -> bool:
        return self.remote is not None and self.remote.runs_remotely(task.tool_name, task.agent_id)

    async def _attach(self, task: BackgroundTask, now: datetime) -> None:
        """Take over an expired ``running`` task that executes remotely: its attempt may well be
        running on a worker still, so this manager follows it (same attempt) instead of retrying."""
        if not self._has_slot(task.agent_id):
            return  # a later sweep, here or in another manager
        self._owned.add(task.id)
        claim = TaskUpdate(owner_id=self.owner_id, lease_expires_at=self._lease_until())
        won = await self.storage.update_task(
            task.id, claim, expected_status="running", expected_owner=task.owner_id, lease_expired_by=now
        )
        if not won:
            self._owned.discard(task.id)
            return
        snapshot = await self.storage.load_workflow_snapshot(WORKFLOW_NAME, task.id)
        data = snapshot["resumeData"] if isinstance(snapshot, dict) and "resumeData" in snapshot else None
        log.warning(
            "background task %s: the lease of %s expired; attached to its remote attempt",
            task.id,
            task.owner_id,
        )
        self._reserve(task.agent_id)
        mine = msgspec.structs.replace(task, owner_id=self.owner_id)
        self._spawn(mine, _Resume(data, already_running=True, attach=True))

    async def _reclaim_running(self, task: BackgroundTask, now: datetime) -> BackgroundTask | None:
        """Expired ``running`` -> ``pending`` (unowned) or ``failed``; the pending one if we won it."""
        if_expired: dict[str, Any] = {
            "expected_status": "running",
            "expected_owner": task.owner_id,
            "lease_expired_by": now,
        }
        if task.max_retries > 0 and task.retry_count < task.max_retries:
            retry = TaskUpdate(
                status="pending", retry_count=task.retry_count + 1, owner_id=None, lease_expires_at=None
            )
            if await self.storage.update_task(task.id, retry, **if_expired):
                return msgspec.structs.replace(
                    task,
                    status="pending",
                    retry_count=task.retry_count + 1,
                    owner_id=None,
                    lease_expires_at=None,
                )
            return None
        stale = TaskUpdate(
            status="failed",
            error=TaskError(message=STALE_TASK_MESSAGE),
            completed_at=now,
            owner_id=None,
            lease_expires_at=None,
        )
        await self.storage.update_task(task.id, stale, **if_expired)
        return None

    async def _claim_pending(self, task: BackgroundTask, now: datetime) -> None:
        if self._queue_full() and not self._has_slot(task.agent_id):
            return  # left for another manager, or for a later sweep here
        self._owned.add(task.id)
        claim = TaskUpdate(owner_id=self.owner_id, lease_expires_at=self._lease_until())
        won = await self.storage.update_task(
            task.id, claim, expected_status="pending", expected_owner=task.owner_id, lease_expired_by=now
        )
        if won:
            self._pending.append((task.id, task.agent_id))
        else:
            self._owned.discard(task.id)

    async def _release_leases(self) -> None:
        """On shutdown: expire every lease this manager holds, so a successor reclaims at once."""
        try:
            await self.storage.renew_task_leases(self.owner_id, self._clock())
        except Exception:  # pragma: no cover - the leases then lapse on their own
            log.exception("background task manager: releasing leases failed")
        self._owned.clear()


@dataclass
class _Resume:
    data: Any
    already_running: bool = field(default=False)
    attach: bool = field(default=False)
    """A remote task taken over from a dead manager: attach to its attempt, do not restart it."""
