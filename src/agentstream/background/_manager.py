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
import logging
import uuid
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import msgspec

from ..chunks import (
    BackgroundTaskResumed,
    BackgroundTaskResumedPayload,
)
from ..storage import (
    TERMINAL_TASK_STATUSES,
    BackgroundTask,
    Storage,
    TaskPage,
    TaskUpdate,
    utc_now,
)
from ..tracing import dispatch_parent
from ._config import BackgroundTaskManagerConfig
from ._errors import (
    BackgroundTasksDisabledError,
    ConcurrencyLimitError,
    InvalidTaskStateError,
    TaskNotFoundError,
    TaskReleased,
)
from ._remote import RemoteTasks
from ._shared import TaskStreams

if TYPE_CHECKING:
    from ..resumable import StreamStore
from ._events import _ObservedRunner
from ._records import (
    STALE_TASK_MESSAGE,
    WORKFLOW_NAME,
    BackgroundTaskChunk,
    EnqueueResult,
    Executor,
    TaskHooks,
    _check_remote,
    _check_stream_store,
    _Resume,
    new_owner_id,
)

__all__ = [
    "STALE_TASK_MESSAGE",
    "BackgroundTaskChunk",
    "BackgroundTaskManager",
    "EnqueueResult",
    "Executor",
    "TaskHooks",
]

log = logging.getLogger("agentstream.background")


class BackgroundTaskManager(_ObservedRunner):
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
        self.remote = _check_remote(remote if remote is not None else cfg.remote)
        """Where tasks execute when not here (``None``: always in this process)."""
        shared = stream_store if stream_store is not None else cfg.stream_store
        self._shared = TaskStreams(_check_stream_store(shared)) if shared is not None else None
        self._followers = {}
        self._followed = {}
        """Task id -> ``started_at`` of the segment followed (not followed again once it ended)."""
        self._stale_followers = set()
        self._follow_task = None
        self._registry = dict(tools or {})
        self._clock = clock
        self._sleep = sleep
        self.owner_id = owner_id or new_owner_id()
        """Written into every task this manager holds; leases are renewed under it."""
        self._owned = set()
        self._orphans = False
        """A worker crashed: the store may hold tasks under our owner id that nothing here runs."""
        self._lease_task = None
        self._runs = {}
        self._workers = set()
        self._global_used = 0
        self._agent_used = Counter()
        self._pending = deque()
        self._hooks = {}
        self._trace_parents = {}
        """Per traced task: the dispatching tool call's span, parent of each attempt's span."""
        self._subscribers = []
        self._terminal_event = asyncio.Event()
        self._start_lock = asyncio.Lock()
        self._started = False
        self._closing = False
        self._cleanup_task = None

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
