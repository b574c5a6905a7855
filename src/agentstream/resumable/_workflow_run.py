"""Workflow runs elsewhere: the `WorkflowJob` a server hands to a `WorkflowRunner` (a worker runs
it into the stream store with ``agentstream.ai_sdk.run_workflow_job``).

The server checks the request (``check_workflow_request``), claims the run's stream
(`workflow_stream_key`), dispatches the job and answers by following the stream; the worker
writes the UI chunks positionally from chunk 0 (a re-run after a crash writes none twice), then
finishes the stream. A job is JSON only; ``on_error`` is the worker's own configuration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypedDict, runtime_checkable

if TYPE_CHECKING:
    from ..ai_sdk import WorkflowRunSpec

__all__ = ["WorkflowJob", "WorkflowRunner"]


class WorkflowJob(TypedDict):
    """One leg of a workflow run (its start, or a resume) to run elsewhere, and the stream it
    writes to."""

    spec: WorkflowRunSpec
    stream_id: str


@runtime_checkable
class WorkflowRunner(Protocol):
    """Runs workflow legs somewhere else (`workflow_route(..., runner=...)`); their chunks arrive
    through the shared stream store under ``job["stream_id"]``."""

    async def dispatch(self, job: WorkflowJob) -> None:
        """Have the leg run (it may start later); returns once it is durably handed over."""
        ...

    async def cancel(self, stream_id: str) -> bool:
        """Stop the leg writing ``stream_id`` (its run ends ``canceled``); idempotent. Returns
        whether the leg had started: one that had ends its own stream; one that had not never
        will run, and the caller ends the stream."""
        ...
