"""Workflow runs elsewhere: the `WorkflowJob` a server hands to a `WorkflowRunner`, and
`run_workflow_job`, which a worker calls to run it into the stream store.

The server checks the request (``check_workflow_request``), claims the run's stream
(`workflow_stream_key`), dispatches the job and answers by following the stream; the worker
writes the UI chunks positionally from chunk 0 (a re-run after a crash writes none twice), then
finishes the stream. A job is JSON only; ``on_error`` is the worker's own configuration.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, runtime_checkable

from ._base import StreamExpiredError, StreamStore
from ._turn import write_chunks

if TYPE_CHECKING:
    from ..ai_sdk import OnErrorFn, WorkflowRunSpec

__all__ = ["WorkflowJob", "WorkflowRunner", "run_workflow_job", "workflow_stream_key"]

logger = logging.getLogger("agentstream.resumable")


def workflow_stream_key(workflow_id: str, run_id: str) -> str:
    """The key a workflow run's active stream is claimed under in a `StreamStore` (the store's
    ``chat_id``): prefixed, so a chat id can never name a run's stream."""
    return f"workflow-run\x1f{workflow_id}\x1f{run_id}"


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


async def run_workflow_job(
    mastra: Any,
    store: StreamStore,
    job: WorkflowJob,
    *,
    on_error: OnErrorFn | None = None,
    **run_options: Any,
) -> None:
    """Run ``job``'s leg with ``mastra``'s workflow into ``store`` (from chunk 0, positionally), then
    finish the stream. ``run_options`` go to ``create_run`` (``checkpoint=`` on a durable worker).
    A stream that finished or expired meanwhile stops the writing quietly."""
    from ..ai_sdk import run_workflow_spec

    stream_id = job["stream_id"]
    chunks = run_workflow_spec(mastra, job["spec"], on_error=on_error, **run_options)
    gone = False
    try:
        try:
            await write_chunks(store, stream_id, chunks)
        finally:
            await chunks.aclose()  # type: ignore[attr-defined]
    except* StreamExpiredError:
        gone = True
    if gone:
        logger.info("stream %s finished or expired before this workflow leg did; stopped", stream_id)
    else:
        await store.finish(stream_id)
