"""The worker side: a DBOS process that dequeues background tasks and runs their tools durably."""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar, cast

from dbos import DBOS, DBOSConfig

from .._abort import AbortController
from ..background import BackgroundTaskContext, TaskSuspended
from ..chunks import Chunk, chunk_to_dict, to_jsonable
from ..resumable import StreamStore
from ..tools import Tool, ToolWriter
from ._cancel import CancelledIsNotAnError
from ._checkpoint import install_checkpoints
from ._inbox import InboxListener, Starter
from ._jobs import CHAT_QUEUE_NAME, KINDS, WORKFLOW_QUEUE_NAME, WorkerJobs, bound_jobs
from ._leases import ExecutorLeases
from ._protocol import CHUNKS_STREAM, QUEUE_NAME, WORKFLOW_NAME, Outcome, TaskSpec, to_sqlalchemy_url
from ._takeover import TakeoverQueues

__all__ = ["DurableWorker", "step"]

_log = logging.getLogger("agentstream.durable")
P = ParamSpec("P")
R = TypeVar("R")

# A partitioned queue needs a limit per partition; "no per-agent limit" is one no deployment reaches.
_UNLIMITED = 2**31 - 1
_QUEUE_OF = {
    **{kind.workflow_name: kind.queue_name for kind in KINDS.values()},
    WORKFLOW_NAME: QUEUE_NAME,
}
_pending: contextvars.ContextVar[list[Chunk]] = contextvars.ContextVar("agentstream_durable_pending")


async def _flush() -> None:
    """Write the chunks the tool emitted since the last flush to the workflow's stream.

    Flushed only at deterministic points (before each step, at the end) so a replay after a crash
    reaches the same DBOS operation ids and does not write them twice."""
    pending = _pending.get(None)
    while pending:
        await DBOS.write_stream_async(CHUNKS_STREAM, chunk_to_dict(pending.pop(0)))


async def step(func: Callable[P, Awaitable[R]] | Callable[P, R], *args: Any, name: str | None = None) -> R:
    """Run `func(*args)` as a checkpointed step of the durable task it is called from.

    A step that completed is never run again: after a worker crash, the task restarts on another
    worker and each completed step returns its recorded result. Code between steps runs again, so
    side effects belong in steps. Outside a durable task (an in-process manager) it just calls `func`.
    """
    if _pending.get(None) is None:
        result: Any = cast(Any, func)(*args)
        return cast(R, await result if isinstance(result, Awaitable) else result)
    await _flush()
    options: dict[str, Any] = {"name": name} if name else {}
    return cast(R, await DBOS.run_step_async(cast(Any, options), cast(Any, func), *args))


async def _execute(executor: Any, spec: TaskSpec, context: BackgroundTaskContext) -> Any:
    if isinstance(executor, Tool):
        parsed, error = executor.validation_error(spec["args"])
        if error is not None:
            return error
        return await executor.run(parsed, cast(Any, context))
    result = executor(spec["args"], context)
    return await result if isinstance(result, Awaitable) else result


async def _background_task(spec: TaskSpec) -> Outcome:
    pending: list[Chunk] = []
    _pending.set(pending)
    # The launched worker's tools; one agent's tool ("<agent id>:<tool>") before the tool of that
    # name for every agent.
    tools = bound_jobs().tools
    executor = tools.get(f"{spec['agent_id']}:{spec['tool_name']}") or tools.get(spec["tool_name"])
    if executor is None:
        known = ", ".join(sorted(tools)) or "none"
        error = f"tool {spec['tool_name']!r} is not registered on this worker (registered: {known})"
        return Outcome(status="failed", result=None, error=error, suspend_payload=None)
    writer = ToolWriter(
        pending.append, run_id=spec["run_id"], tool_call_id=spec["tool_call_id"], tool_name=spec["tool_name"]
    )
    context = BackgroundTaskContext(
        task_id=spec["task_id"],
        run_id=spec["run_id"],
        tool_call_id=spec["tool_call_id"],
        tool_name=spec["tool_name"],
        agent_id=spec["agent_id"],
        abort_signal=AbortController().signal,
        writer=writer,
        thread_id=spec["thread_id"],
        resource_id=spec["resource_id"],
        resume_data=spec["resume_data"],
        retry_count=spec["retry_count"],
    )
    try:
        outcome = Outcome(
            status="completed",
            result=to_jsonable(await _execute(executor, spec, context)),
            error=None,
            suspend_payload=None,
        )
    except TaskSuspended as suspended:
        outcome = Outcome(
            status="suspended", result=None, error=None, suspend_payload=to_jsonable(suspended.payload)
        )
    except Exception as exc:
        outcome = Outcome(
            status="failed", result=None, error=f"{type(exc).__name__}: {exc}", suspend_payload=None
        )
    await _flush()
    await DBOS.close_stream_async(CHUNKS_STREAM)
    return outcome


_task_workflow: list[Any] = []


def _register_task_workflow() -> None:
    """Register the background task's DBOS workflow, once per process, when a worker launches
    (importing this package registers nothing)."""
    if not _task_workflow:
        _task_workflow.append(DBOS.workflow(name=WORKFLOW_NAME)(_background_task))


@dataclass
class DurableWorker:
    """One worker process: runs the tools in `tools` for tasks any server enqueued, and, with a
    `mastra` and a `stream_store`, the chat turns servers dispatch through `DurableChat`.

    Limits hold across every worker on the database: at most `global_concurrency` tasks run at once
    in all, and at most `per_agent_concurrency` of one agent (DBOS queue partitions, keyed by agent
    id); `worker_concurrency` bounds this process. Tasks are dequeued every `polling_interval_sec`.
    Chat turns and workflow legs are not polled for: on PostgreSQL a server's enqueue notifies the
    workers (``LISTEN/NOTIFY`` on an inbox table) and a free one starts the turn at once;
    `chat_worker_concurrency` bounds the turns on this one, and `chat_concurrency` (the turns on
    all workers) routes every turn through the DBOS chat queue, which enforces it (polled, so
    slower to start). `pool_size` bounds this process's DBOS connection pool.

    Each worker holds a lease (on the database's clock) renewed every `lease_sec / 3`; a worker
    whose lease expired (killed, partitioned) has its unfinished work re-enqueued by whichever live
    worker notices first, and it resumes after its last completed step. A worker that could not
    reach the database itself takes nobody over until it has renewed its own lease for a whole
    `lease_sec` (an outage of the database expires every lease at once). `executor_id` is DBOS's
    executor id: a worker restarted with the same id recovers its own unfinished work at launch.
    A chat turn writes its answer to `stream_store` (shared with the servers); after a takeover it
    runs again and the store skips the chunks already written. `chat_options` are
    `handle_chat_stream`'s callables for those turns (``experimental_transform``, ``on_error``,
    ``message_metadata``, ``default_options``). The same `mastra` and `stream_store` run the
    workflow legs servers dispatch through `DurableWorkflows` (each workflow step a DBOS step, so a
    takeover does not run completed steps again); `workflow_concurrency` bounds the legs running on
    all workers.
    """

    database_url: str
    tools: Mapping[str, Any] = field(default_factory=dict)
    global_concurrency: int | None = None
    per_agent_concurrency: int | None = None
    worker_concurrency: int | None = None
    polling_interval_sec: float = 1.0
    lease_sec: float = 30.0
    mastra: Any = None
    stream_store: StreamStore | None = None
    chat_options: Mapping[str, Any] | None = None
    chat_concurrency: int | None = None
    chat_worker_concurrency: int | None = None
    workflow_concurrency: int | None = None
    pool_size: int = 8
    executor_id: str = field(default_factory=lambda: default_executor_id())
    _leases: ExecutorLeases | None = field(default=None, init=False, repr=False)
    _inbox: InboxListener | None = field(default=None, init=False, repr=False)
    _jobs: WorkerJobs | None = field(default=None, init=False, repr=False)

    def launch(self) -> None:
        """Install this worker in the process (its DBOS workflows bound to its tools, agents,
        workflows and store; agent runs in workflow code checkpointed), connect, register the
        queues (their limits are stored; the last worker launched wins), start."""
        queues = self._queues()
        takeover = self._takeover_queues()
        assert self._jobs is not None
        _register_task_workflow()
        self._jobs.install()
        install_checkpoints()
        config: DBOSConfig = {
            "name": "agentstream",
            "system_database_url": self.database_url,
            "executor_id": self.executor_id,
            "application_version": "agentstream-durable-1",
            "sys_db_pool_size": self.pool_size,
            # No ping before every transaction (a round trip each): DBOS retries a connection
            # error itself, and SQLAlchemy then drops the pool's stale connections.
            "db_engine_kwargs": {"pool_pre_ping": False, "max_overflow": 0},
            # DBOS's notifier thread wakes this often; its default (0.01 s) is 100 wake-ups a second
            # of an idle worker, for stream and event notifications the chat path does not use.
            "notification_coalesce_sec": 0.05,
            # agentstream registers no DBOS schedules: its scheduler's look for new ones (every 30 s
            # after a fixed first minute of 1 s) finds none.
            "scheduler_polling_interval_sec": 300.0,
        }
        DBOS(config=config)
        if not any(isinstance(f, CancelledIsNotAnError) for f in logging.getLogger("dbos").filters):
            logging.getLogger("dbos").addFilter(CancelledIsNotAnError())
        try:
            DBOS.listen_queues(queues)
            DBOS.launch()
            if CHAT_QUEUE_NAME in queues and CHAT_QUEUE_NAME not in takeover:
                DBOS.register_queue(
                    CHAT_QUEUE_NAME,
                    global_concurrency=self.chat_concurrency,
                    worker_concurrency=self.chat_worker_concurrency,
                    polling_interval_sec=self.polling_interval_sec,
                    on_conflict="always_update",
                )
            if WORKFLOW_QUEUE_NAME in queues and WORKFLOW_QUEUE_NAME not in takeover:
                DBOS.register_queue(
                    WORKFLOW_QUEUE_NAME,
                    global_concurrency=self.workflow_concurrency,
                    polling_interval_sec=self.polling_interval_sec,
                    on_conflict="always_update",
                )
            if QUEUE_NAME in queues:  # a chat-only worker must not reset the tool workers' limits
                DBOS.register_queue(
                    QUEUE_NAME,
                    global_concurrency=self.global_concurrency,
                    worker_concurrency=self.worker_concurrency,
                    # DBOS requires partition <= global; no per-agent limit means "up to the global one".
                    partition_concurrency=self.per_agent_concurrency or self.global_concurrency or _UNLIMITED,
                    polling_interval_sec=self.polling_interval_sec,
                    on_conflict="always_update",
                )
        except BaseException:
            DBOS.destroy(workflow_completion_timeout_sec=0)
            raise
        recovery = TakeoverQueues(_QUEUE_OF, takeover)
        self._leases = ExecutorLeases(
            self.database_url, self.executor_id, self.lease_sec, recovery.recover, tidy=recovery.tidy
        )
        self._leases.start()
        if self._inbox is not None:
            self._inbox.start()
        _log.info(
            "worker %s started (tools: %s; chat turns: %s)",
            self.executor_id,
            ", ".join(sorted(self.tools)) or "none",
            "yes" if self.mastra is not None else "no",
        )

    def _queues(self) -> list[str]:
        """The queues this worker takes work from; sets up chat turns when it has a Mastra."""
        if self.mastra is None and self.stream_store is not None:
            raise ValueError("DurableWorker: stream_store is for chat turns, which need a mastra too")
        if self.mastra is not None and self.stream_store is None:
            raise ValueError(
                "DurableWorker: chat turns (mastra=...) need the stream_store the servers follow"
            )
        if self.mastra is None and self.chat_options:
            raise ValueError("DurableWorker: chat_options are for chat turns, which need a mastra")
        if not self.tools and self.mastra is None:
            raise ValueError("DurableWorker: nothing to run; give it tools, or a mastra and a stream_store")
        self._jobs = jobs = WorkerJobs(
            self.mastra, self.stream_store, dict(self.chat_options or {}), self.tools
        )
        queues = [QUEUE_NAME] if self.tools else []
        if self.mastra is None:
            return queues
        if not to_sqlalchemy_url(self.database_url).startswith("postgresql"):
            return [*queues, CHAT_QUEUE_NAME, WORKFLOW_QUEUE_NAME]  # no inbox without LISTEN/NOTIFY
        # Turns and legs come from the inbox; a kind with a limit across all workers goes from
        # there onto its DBOS queue, which enforces the limit (and is polled, not woken).
        across = {"chat": self.chat_concurrency, "workflow": self.workflow_concurrency}
        starters: dict[str, Starter] = {
            kind: functools.partial(WorkerJobs.enqueue if across[kind] else WorkerJobs.start, kind)
            for kind in KINDS
        }
        limits = {"chat": None if self.chat_concurrency else self.chat_worker_concurrency, "workflow": None}
        self._inbox = inbox = InboxListener(self.database_url, starters, limits)
        jobs.finished = inbox.finished
        return [*queues, CHAT_QUEUE_NAME, WORKFLOW_QUEUE_NAME]

    def _takeover_queues(self) -> set[str]:
        """The kinds' queues that exist only while a takeover put work on them (`TakeoverQueues`):
        on PostgreSQL the inbox carries a kind's jobs unless this worker limits it across workers
        (then its queue carries them all, registered here and polled). SQLite has no inbox: every
        kind's queue is registered and polled."""
        if not to_sqlalchemy_url(self.database_url).startswith("postgresql"):
            return set()
        limited = {CHAT_QUEUE_NAME: self.chat_concurrency, WORKFLOW_QUEUE_NAME: self.workflow_concurrency}
        return {queue for queue, limit in limited.items() if not limit}

    def shutdown(self) -> None:
        """Stop taking tasks and give up the lease, so the others take over this worker's tasks at once."""
        if self._inbox is not None:
            self._inbox.stop()
        if self._leases is not None:
            self._leases.stop(release=True)
        DBOS.destroy(workflow_completion_timeout_sec=0)
        if self._jobs is not None:
            self._jobs.uninstall()


def default_executor_id() -> str:
    """``$DBOS__VMID`` (DBOS's own setting: a worker restarted with the same id recovers its own
    unfinished workflows when it launches), else an id of this process alone."""
    return os.environ.get("DBOS__VMID") or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
