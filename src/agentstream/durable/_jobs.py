"""Chat turns and workflow legs on workers: the servers' runners (`DurableChat`, `DurableWorkflows`)
and the one DBOS workflow body both kinds run on a worker (`WorkerJobs`).

One DBOS workflow per job, its id the job's stream id (so enqueueing twice runs it once), on its
kind's queue (``agentstream-chat``, ``agentstream-workflows``). The worker runs the kind's producer
through the job service's ``write_job`` (``run_chat_turn``, ``run_workflow_job``), which writes the
UI chunks to the stream store positionally from chunk 0: after a crash the lease takeover
re-enqueues the workflow, it runs again from the start on another worker, and the store skips
every chunk number already written (a workflow leg's steps are DBOS steps too, `DBOSCheckpoint`,
so completed ones return their records). Jobs and results are JSON (DBOS's portable format).

Nothing is registered at import: `WorkerJobs.install` registers the DBOS workflows when a worker
launches, bound to that worker's agents, workflows, tools and store (DBOS finds workflow functions
by name in its process-wide registry and runs one launched instance per process: the binding is
that instance's worker, replaced by the next launch, released by its shutdown).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dbos import DBOS, SetWorkflowID, WorkflowSerializationFormat
from dbos import error as dbos_error

from ..ai_sdk import run_chat_turn, run_workflow_job
from ..resumable import ChatTurn, StreamStore, WorkflowJob
from ._cancel import watched
from ._first_run import first_run
from ._queued import QueuedRunner
from ._step_checkpoint import DBOSCheckpoint

__all__ = [
    "CHAT_OPTIONS",
    "CHAT_QUEUE_NAME",
    "CHAT_WORKFLOW_NAME",
    "KINDS",
    "WORKFLOW_QUEUE_NAME",
    "WORKFLOW_RUN_NAME",
    "DurableChat",
    "DurableWorkflows",
    "WorkerJobs",
    "bound_jobs",
]

_log = logging.getLogger("agentstream.durable")

CHAT_WORKFLOW_NAME = "agentstream.chat_turn"
CHAT_QUEUE_NAME = "agentstream-chat"
WORKFLOW_RUN_NAME = "agentstream.workflow_run"
WORKFLOW_QUEUE_NAME = "agentstream-workflows"
CHAT_OPTIONS = frozenset({"default_options", "experimental_transform", "on_error", "message_metadata"})
"""The `handle_chat_stream` settings a worker may set for the turns it runs (callables stay here)."""

_PORTABLE = WorkflowSerializationFormat.PORTABLE


class DurableChat(QueuedRunner[ChatTurn]):
    """A `ChatRunner` running each chat turn on an `agentstream worker` sharing ``database_url``.

        runner = DurableChat("postgresql://postgres@127.0.0.1:54329/postgres")
        create_app(mastra, stream_store=RedisStreamStore.from_url("redis://…"), runner=runner)

    ``dispatch`` enqueues the turn (idempotently: the workflow id is the stream id) and returns;
    the workers write the answer to the stream store the route follows. ``cancel`` stops a turn,
    queued or running (a running one stops within about half a second and ends its stream).
    """

    kind = "chat"
    queue_name = CHAT_QUEUE_NAME
    workflow_name = CHAT_WORKFLOW_NAME
    what = "this chat turn"


class DurableWorkflows(QueuedRunner[WorkflowJob]):
    """A `WorkflowRunner` running each workflow leg on an `agentstream worker` sharing ``database_url``.

        runner = DurableWorkflows("postgresql://postgres@127.0.0.1:54329/postgres")
        workflow_route(mastra, stream_store=RedisStreamStore.from_url("redis://…"), runner=runner)

    ``dispatch`` enqueues the leg (idempotently: the workflow id is the stream id) and returns; the
    workers write its UI chunks to the stream store the route follows. ``cancel`` stops a leg.
    """

    kind = "workflow"
    queue_name = WORKFLOW_QUEUE_NAME
    workflow_name = WORKFLOW_RUN_NAME
    what = "this workflow run"


@dataclass(frozen=True)
class _Kind:
    """One kind of job on a worker: its DBOS workflow and queue."""

    workflow_name: str
    queue_name: str


KINDS = {
    "chat": _Kind(CHAT_WORKFLOW_NAME, CHAT_QUEUE_NAME),
    "workflow": _Kind(WORKFLOW_RUN_NAME, WORKFLOW_QUEUE_NAME),
}
"""The job kinds a worker runs from servers' runners, by the inbox's kind name."""


@dataclass
class WorkerJobs:
    """What one worker runs its jobs with, handed to it explicitly: its ``mastra`` (agents for chat
    turns, workflows for legs), the ``store`` the servers follow, its chat settings (keys of
    `CHAT_OPTIONS`; ``on_error`` serves workflow legs too) and its background ``tools``."""

    mastra: Any
    store: StreamStore | None
    options: Mapping[str, Any] = field(default_factory=dict)
    tools: Mapping[str, Any] = field(default_factory=dict)
    finished: Callable[[str, str], None] | None = None
    """Called with ``(kind, stream id)`` when a job ends on this worker (the inbox gives its slot back)."""

    def __post_init__(self) -> None:
        unknown = set(self.options) - CHAT_OPTIONS
        if unknown:
            raise ValueError(
                f"chat_options: unknown key(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(CHAT_OPTIONS))})"
            )
        if self.mastra is not None and not callable(getattr(self.mastra, "get_agent", None)):
            raise TypeError(f"mastra: expected a Mastra (with get_agent), got {type(self.mastra).__name__}")

    def install(self) -> None:
        """Register the DBOS workflows (once per process) and bind them to this worker's jobs."""
        global _bound
        _register()
        _bound = self

    def uninstall(self) -> None:
        """Unbind (the worker shut down): a workflow DBOS still starts here fails, naming why."""
        global _bound
        if _bound is self:
            _bound = None

    async def run(self, kind: str, job: Mapping[str, Any]) -> None:
        """Run one job of ``kind`` (its stream id names it) with this worker's producer for the
        kind; a cancel (``watched``) aborts it; the inbox is told when it ends."""
        stream_id: str = job["stream_id"]
        store = self.store
        if self.mastra is None or store is None:
            raise RuntimeError(f"this worker was started without a Mastra and stream store for {kind} jobs")
        first = _first_here.pop(DBOS.workflow_id or stream_id, None) is not None
        try:
            async with watched(stream_id) as controller:
                if kind == "chat":
                    turn: Any = job
                    with first_run() if first else contextlib.nullcontext():
                        await run_chat_turn(
                            self.mastra,
                            store,
                            turn,
                            abort_signal=controller.signal,
                            chat_options=self.options,
                        )
                else:
                    leg: Any = job
                    await run_workflow_job(
                        self.mastra,
                        store,
                        leg,
                        on_error=self.options.get("on_error"),
                        abort_signal=controller.signal,
                        checkpoint=DBOSCheckpoint(cancelled=controller.abort),
                    )
        finally:
            if self.finished is not None:
                self.finished(kind, stream_id)

    @staticmethod
    def start(kind: str, stream_id: str, job: dict[str, Any]) -> None:
        """Start a claimed job's workflow here now (its id the stream id). A workflow that exists
        already (claimed again after a claim that did not commit) is not started again: it runs
        where it runs, or the takeover re-runs it. One this call created is on its first
        execution, which a chat turn knows (`first_run`: no step to replay, fewer records)."""
        _first_here[stream_id] = kind
        try:
            with SetWorkflowID(stream_id, workflow_id_reuse_policy="reject"):
                DBOS.start_workflow(_workflows[kind], job)
        except dbos_error.DBOSWorkflowIDInUseError:
            _first_here.pop(stream_id, None)
            _log.info("%s job %s was started before; not started again", kind, stream_id)
            if _bound is not None and _bound.finished is not None:
                _bound.finished(kind, stream_id)
        except BaseException:
            _first_here.pop(stream_id, None)
            raise

    @staticmethod
    def enqueue(kind: str, stream_id: str, job: dict[str, Any]) -> None:
        """Put a claimed job on its kind's queue, whose limits hold across all workers."""
        with SetWorkflowID(stream_id):
            DBOS.enqueue_workflow(KINDS[kind].queue_name, _workflows[kind], job)


_bound: WorkerJobs | None = None
_first_here: dict[str, str] = {}
"""Workflows `WorkerJobs.start` has just created here, until their execution begins."""
_workflows: dict[str, Callable[[dict[str, Any]], Awaitable[None]]] = {}


def bound_jobs() -> WorkerJobs:
    """The launched worker's jobs (what the DBOS workflows of this process run with)."""
    if _bound is None:
        raise RuntimeError("no agentstream worker is launched in this process (DurableWorker.launch)")
    return _bound


def _register() -> None:
    """The DBOS workflows of the job kinds, registered once per process (DBOS refuses none, but a
    second registration of a name is logged as a duplicate)."""
    if _workflows:
        return
    for kind, spec in KINDS.items():
        _workflows[kind] = _workflow_of(kind, spec.workflow_name)


def _workflow_of(kind: str, name: str) -> Callable[[dict[str, Any]], Awaitable[None]]:
    async def job_workflow(job: dict[str, Any]) -> None:
        await bound_jobs().run(kind, job)

    job_workflow.__name__ = job_workflow.__qualname__ = f"agentstream_{kind}_job"
    registered: Callable[[dict[str, Any]], Awaitable[None]] = DBOS.workflow(
        name=name, serialization_type=_PORTABLE
    )(job_workflow)
    return registered
