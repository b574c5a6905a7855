"""`QueuedRunner`: what `DurableChat` and `DurableWorkflows` share, a DBOS client that enqueues one
JSON job per stream (its workflow id is the stream id) and cancels it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from dbos import DBOS, DBOSClient, EnqueueOptions
from dbos._serialization import WorkflowSerializationFormat

from ._cancel import cancel_workflow

__all__ = ["QueuedRunner"]


class QueuedRunner:
    """Enqueues jobs for `agentstream worker` processes sharing ``database_url``."""

    queue_name: ClassVar[str]
    workflow_name: ClassVar[str]

    def __init__(self, database_url: str) -> None:
        # A server may start before any worker: create (or upgrade) DBOS's tables; idempotent.
        DBOS.migrate(database_url)
        self._client = DBOSClient(system_database_url=database_url, application_name="agentstream")

    async def _enqueue(self, job: Mapping[str, Any]) -> None:
        # The workflow id is the stream id, so enqueueing a job twice runs it once; JSON (DBOS's
        # portable serialization), not pickle, so the queue holds no code.
        options: EnqueueOptions = {
            "queue_name": self.queue_name,
            "workflow_name": self.workflow_name,
            "workflow_id": job["stream_id"],
            "serialization_type": WorkflowSerializationFormat.PORTABLE,
        }
        await self._client.enqueue_async(options, job)

    async def cancel(self, stream_id: str) -> bool:
        """Cancel the job writing ``stream_id`` (a finished one is left as it is); whether it had
        started. A started job's worker stops its run within about half a second and ends the
        stream; a job that had not never will start: the caller ends its stream."""
        return await cancel_workflow(self._client, stream_id)

    def close(self) -> None:
        """Close the engine client's connections (jobs keep running on the workers)."""
        self._client.destroy()
