"""Running tasks in this process: slots and the FIFO queue, one worker per task, each attempt
with its timeout, the terminal record (written only while this manager holds the task) and the
chunks that tell subscribers about it.
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, cast

import msgspec

from .._abort import AbortController
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
    BackgroundTaskRunning,
    BackgroundTaskRunningPayload,
    BackgroundTaskSuspended,
    BackgroundTaskSuspendedPayload,
    chunk_to_dict,
    to_jsonable,
)
from ..storage import (
    BackgroundTask,
    Storage,
    TaskError,
    TaskStatus,
    TaskUpdate,
)
from ..tracing import TaskParent, traced_task
from ._config import BackgroundTaskManagerConfig
from ._context import BackgroundTaskContext, BackgroundTaskWriter
from ._errors import (
    TaskSuspended,
)
from ._remote import RemoteTasks
from ._shared import TaskStreams
from ._threads import run_in_daemon_thread

if TYPE_CHECKING:
    pass

from ._records import (
    ABANDONED_THREAD_NOTE,
    WORKFLOW_NAME,
    BackgroundTaskChunk,
    Callback,
    Executor,
    TaskHooks,
    _is_async_callable,
    _is_tool,
    _LocalRun,
    _maybe_await,
    _Outcome,
    _Resume,
    _runs_in_thread,
    _Subscriber,
    _Suspended,
)

log = logging.getLogger("agentstream.background")


class _TaskRunner:
    """Slots, queue and workers of `BackgroundTaskManager` (its first base)."""

    # Set by `BackgroundTaskManager.__init__`; declared here for the parts that read them.
    storage: Storage
    config: BackgroundTaskManagerConfig
    remote: RemoteTasks | None
    owner_id: str
    _shared: TaskStreams | None
    _followers: dict[str, asyncio.Task[None]]
    _followed: dict[str, datetime | None]
    _stale_followers: set[str]
    _follow_task: asyncio.Task[None] | None
    _registry: dict[str, Any]
    _clock: Callable[[], datetime]
    _sleep: Callable[[float], Awaitable[object]]
    _owned: set[str]
    _orphans: bool
    _lease_task: asyncio.Task[None] | None
    _runs: dict[str, _LocalRun]
    _workers: set[asyncio.Task[None]]
    _global_used: int
    _agent_used: Counter[str]
    _pending: deque[tuple[str, str]]
    _hooks: dict[str, TaskHooks]
    _trace_parents: dict[str, TaskParent]
    _subscribers: list[_Subscriber]
    _terminal_event: asyncio.Event
    _start_lock: asyncio.Lock
    _started: bool
    _closing: bool
    _cleanup_task: asyncio.Task[None] | None

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

    def _lease_until(self) -> datetime:
        return self._clock() + timedelta(milliseconds=self.config.lease_ms)

    def _queue_full(self) -> bool:
        limit = self.config.max_queued
        return limit is not None and len(self._pending) >= limit

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

    def queue_position(self, task_id: str) -> int | None:
        """The 1-based place of a task in this manager's queue of tasks waiting for a slot (``None``:
        not queued here: running, ended, or queued by another manager)."""
        for place, (queued_id, _agent_id) in enumerate(self._pending, start=1):
            if queued_id == task_id:
                return place
        return None
