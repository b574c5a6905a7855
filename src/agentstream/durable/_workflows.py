"""Workflow runs on workers: `DurableWorkflows` (a server's `WorkflowRunner`), the worker's DBOS
workflow, and `DBOSCheckpoint`, which makes every workflow step a DBOS step.

One DBOS workflow per leg of a run (its start, each resume), its id the leg's stream id, on the
``agentstream-workflows`` queue. The worker runs the leg with `run_workflow_job` and a
`DBOSCheckpoint`: each step's outcome (output, suspension, bail or error, with the chunks it wrote
and the state it left) is recorded as a DBOS step, and so are the run's snapshot load and resume
claim. After a crash the lease takeover re-enqueues the leg; it runs again from the start on
another worker, every recorded step returns its record instead of running, and the stream store
skips the chunk numbers already written. Jobs and records are JSON (DBOS's portable format).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from dbos import DBOS, SetWorkflowID, WorkflowSerializationFormat
from dbos import error as dbos_error

from .._abort import AbortError
from ..ai_sdk import run_workflow_job
from ..resumable import StreamStore, WorkflowJob
from ..workflows import Slot
from ._cancel import is_cancelled, watched
from ._queued import QueuedRunner

__all__ = [
    "WORKFLOW_QUEUE_NAME",
    "WORKFLOW_RUN_NAME",
    "DBOSCheckpoint",
    "DurableWorkflows",
    "WorkflowSetup",
    "enqueue_workflow_leg",
    "start_workflow_leg",
    "workflow_setup",
]

_log = logging.getLogger("agentstream.durable")

WORKFLOW_RUN_NAME = "agentstream.workflow_run"
WORKFLOW_QUEUE_NAME = "agentstream-workflows"
_PORTABLE = WorkflowSerializationFormat.PORTABLE


class DurableWorkflows(QueuedRunner):
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

    async def dispatch(self, job: WorkflowJob) -> None:
        """Enqueue the leg (a leg already enqueued is not enqueued again)."""
        await self._enqueue(job)


class DBOSCheckpoint:
    """A workflow `Checkpoint` on DBOS steps, for runs executed inside a DBOS workflow: slots are
    DBOS step ids reserved in the walk's order, sleeps are DBOS's durable sleeps.

    DBOS refuses to start or record a step of a cancelled workflow (`DBOSWorkflowCancelledError`,
    or `DBOSWorkflowConflictIDError` as the execution lost its claim; neither is stopped by an
    ``except Exception``, so the run would die mid-stream): ``cancelled`` is called
    then (the worker aborts the run with it) and the step fails with an `AbortError`, so the run
    ends ``canceled`` as a cancel in one process ends it."""

    def __init__(self, cancelled: Callable[[], object] | None = None) -> None:
        self._cancelled = cancelled

    def reserve(self, name: str) -> Slot:
        """Reserve the next DBOS step id now; the slot runs its body as that step."""
        reservation = DBOS.reserve_step()

        async def run(body: Callable[[], Awaitable[Any]]) -> Any:
            async def step() -> Any:  # a coroutine function, so DBOS awaits it on this loop
                return await body()

            try:
                return await reservation.run_async({"name": name}, step)
            except dbos_error.DBOSWorkflowCancelledError:
                raise self._abort() from None
            except dbos_error.DBOSWorkflowConflictIDError:
                # Cancelling also takes the workflow from its execution; a takeover does too, and
                # then this (stale) execution must stop without writing anything.
                if not await is_cancelled(DBOS.workflow_id):
                    raise
                raise self._abort() from None

        return run

    async def sleep(self, seconds: float) -> None:
        """Sleep durably: the wake-up time is recorded, so a re-run sleeps only what is left."""
        # Always a step id, even for no wait: a re-run (later on the clock) must take the same ids.
        try:
            await DBOS.sleep_async(max(seconds, 0.001))
        except dbos_error.DBOSWorkflowCancelledError:
            raise self._abort() from None

    def _abort(self) -> AbortError:
        if self._cancelled is not None:
            self._cancelled()
        return AbortError("the workflow was cancelled")


@dataclass
class WorkflowSetup:
    """What a worker runs workflow legs with: its workflows and the shared stream store."""

    mastra: Any
    store: StreamStore
    on_error: Callable[[BaseException], str] | None = None
    finished: Callable[[str], None] | None = None
    """Called with the stream id when a leg ends on this worker (the inbox gives its slot back)."""


_setup: list[WorkflowSetup] = []


def workflow_setup(
    mastra: Any, store: StreamStore, on_error: Callable[[BaseException], str] | None = None
) -> WorkflowSetup:
    """Make this process run workflow legs with ``mastra``'s workflows into ``store``."""
    if not callable(getattr(mastra, "get_workflow", None)):
        raise TypeError(f"mastra: expected a Mastra (with get_workflow), got {type(mastra).__name__}")
    setup = WorkflowSetup(mastra, store, on_error)
    _setup[:] = [setup]
    return setup


@DBOS.workflow(name=WORKFLOW_RUN_NAME, serialization_type=_PORTABLE)
async def _workflow_run(job: WorkflowJob) -> None:
    if not _setup:
        raise RuntimeError("this worker was started without a Mastra and stream store for workflow runs")
    setup = _setup[0]
    try:
        async with watched(job["stream_id"]) as controller:
            await run_workflow_job(
                setup.mastra,
                setup.store,
                job,
                on_error=setup.on_error,
                abort_signal=controller.signal,
                checkpoint=DBOSCheckpoint(cancelled=controller.abort),
            )
    finally:
        if setup.finished is not None:
            setup.finished(job["stream_id"])


def start_workflow_leg(stream_id: str, job: dict[str, Any]) -> None:
    """Start a claimed leg's workflow here now (its id the stream id: a second start attaches)."""
    with SetWorkflowID(stream_id):
        DBOS.start_workflow(_workflow_run, job)  # type: ignore[arg-type]


def enqueue_workflow_leg(stream_id: str, job: dict[str, Any]) -> None:
    """Put a claimed leg on the workflow queue, whose limit holds across all workers."""
    with SetWorkflowID(stream_id):
        DBOS.enqueue_workflow(WORKFLOW_QUEUE_NAME, _workflow_run, job)  # type: ignore[arg-type]
